#pragma once
/// @file broad_phase.hpp
/// Broad phase of collision handling on the backend (CUDA or CPU threads):
/// every pair of axis-aligned boxes that overlap, from a sorted uniform grid.
///
/// Why a sorted grid. Cloth primitives (yarn segments, triangles) have about
/// one size, so one cell size (a small multiple of that size) bounds the
/// number of primitives per cell, and every step is a Thrust primitive
/// (scan, sort, reduce_by_key) with a deterministic result: no hash
/// collisions (cells are keyed by their packed integer coordinates), no
/// atomics, and the pairs come out sorted, the same on any thread count or
/// device. A bounding-volume hierarchy would adapt to mixed sizes but needs
/// a rebuild or refit with irregular memory access; measure before
/// switching.
///
/// Algorithm: (1) each box covers the cells from ⌊lo/c⌋ to ⌊hi/c⌋; count
/// them, scan; (2) write one (cell key, box) entry per covered cell; (3)
/// stable sort by key, so each cell's boxes are contiguous and ascending;
/// (4) per cell run of length L, test its L(L − 1)/2 candidate pairs and
/// keep those whose boxes overlap (closed intervals) and whose overlap's
/// lower corner lies in this cell, so that a pair sharing several cells is
/// reported once, without a de-duplication pass (counted, scanned, then
/// written); (5) radix-sort the pairs packed as a · n + b. Two boxes overlap
/// iff their intersection is not empty, and its lower corner's cell is
/// covered by both, so the result is exactly the set of overlapping pairs
/// (tested against brute force).

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/reduce.h>
#include <thrust/remove.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include <weft/backend/vector_ops.hpp>
#include <weft/core/error.hpp>
#include <weft/core/types.hpp>
#include <weft/element/proximity.hpp>

namespace weft {

/// An axis-aligned box (closed).
template <typename T>
struct Aabb {
    T lo[3];
    T hi[3];
};

/// Two box indices, a < b.
struct CandidatePair {
    int a;
    int b;
};

namespace broad_phase_detail {

constexpr int coordinate_bits = 21;
constexpr std::int64_t coordinate_offset = std::int64_t(1) << (coordinate_bits - 1);

/// The cell range [lo, hi] of a box along each axis.
template <typename T>
struct CellRange {
    std::int64_t lo[3];
    std::int64_t hi[3];
    WEFT_HD std::int64_t count() const { return (hi[0] - lo[0] + 1) * (hi[1] - lo[1] + 1) * (hi[2] - lo[2] + 1); }
};

template <typename T>
WEFT_HD inline CellRange<T> cell_range(const Aabb<T>& box, T inverse_cell)
{
    using std::floor;
    CellRange<T> r;
    for (int k = 0; k < 3; ++k) {
        r.lo[k] = static_cast<std::int64_t>(floor(box.lo[k] * inverse_cell));
        r.hi[k] = static_cast<std::int64_t>(floor(box.hi[k] * inverse_cell));
    }
    return r;
}

/// A cell's key: its three coordinates offset to non-negative and packed.
WEFT_HD inline std::uint64_t cell_key(std::int64_t x, std::int64_t y, std::int64_t z)
{
    return (static_cast<std::uint64_t>(x + coordinate_offset) << (2 * coordinate_bits)) |
           (static_cast<std::uint64_t>(y + coordinate_offset) << coordinate_bits) |
           static_cast<std::uint64_t>(z + coordinate_offset);
}

template <typename T>
struct CountCells {
    const Aabb<T>* boxes;
    T inverse_cell;
    WEFT_HD std::int64_t operator()(int i) const { return cell_range(boxes[i], inverse_cell).count(); }
};

/// The largest |cell coordinate| of a box (to check the key's range).
template <typename T>
struct ExtremeCell {
    const Aabb<T>* boxes;
    T inverse_cell;
    WEFT_HD std::int64_t operator()(int i) const
    {
        const CellRange<T> r = cell_range(boxes[i], inverse_cell);
        std::int64_t m = 0;
        for (int k = 0; k < 3; ++k) {
            const std::int64_t a = r.lo[k] < 0 ? -r.lo[k] : r.lo[k];
            const std::int64_t b = r.hi[k] < 0 ? -r.hi[k] : r.hi[k];
            m = a > m ? a : m;
            m = b > m ? b : m;
        }
        return m;
    }
};

template <typename T>
struct WriteCells {
    const Aabb<T>* boxes;
    T inverse_cell;
    const std::int64_t* offsets;
    std::uint64_t* keys;
    int* owners;
    WEFT_HD void operator()(int i) const
    {
        const CellRange<T> r = cell_range(boxes[i], inverse_cell);
        std::int64_t at = offsets[i];
        for (std::int64_t x = r.lo[0]; x <= r.hi[0]; ++x)
            for (std::int64_t y = r.lo[1]; y <= r.hi[1]; ++y)
                for (std::int64_t z = r.lo[2]; z <= r.hi[2]; ++z) {
                    keys[at] = cell_key(x, y, z);
                    owners[at] = i;
                    ++at;
                }
    }
};

/// A box's lower cell, ⌊lo/c⌋ on each axis (within ±2²⁰: ExtremeCell).
struct LowerCell {
    int at[3];
};

template <typename T>
struct LowerCellOf {
    const Aabb<T>* boxes;
    T inverse_cell;
    WEFT_HD LowerCell operator()(int i) const
    {
        const CellRange<T> r = cell_range(boxes[i], inverse_cell);
        return LowerCell{{static_cast<int>(r.lo[0]), static_cast<int>(r.lo[1]), static_cast<int>(r.lo[2])}};
    }
};

/// Whether boxes a and b overlap and this cell holds their intersection's
/// lower corner: each overlapping pair is then reported by exactly one cell.
/// The corner's cell is the larger of the two boxes' lower cells on each
/// axis (⌊max(x, y)/c⌋ = max(⌊x/c⌋, ⌊y/c⌋): rounding and ⌊·⌋ are monotone),
/// so no floor is taken per pair.
template <typename T>
WEFT_HD inline bool reported_here(const Aabb<T>& a, const Aabb<T>& b, const LowerCell& la, const LowerCell& lb,
                                  std::uint64_t key)
{
    int corner[3];
    for (int k = 0; k < 3; ++k) {
        if (a.hi[k] < b.lo[k] || b.hi[k] < a.lo[k]) return false;
        corner[k] = la.at[k] > lb.at[k] ? la.at[k] : lb.at[k];
    }
    return cell_key(corner[0], corner[1], corner[2]) == key;
}

/// The cell runs and what a run reports (reported_here).
template <typename T>
struct CellRuns {
    const Aabb<T>* boxes;
    const LowerCell* lower;  ///< per box
    const std::uint64_t* keys;
    const int* owners;
    const std::int64_t* run_first;
    const std::int64_t* run_length;

    /// Calls emit(a, b) for every pair run r reports (a < b: owners ascend
    /// within a run), in order, and returns how many.
    template <class Emit>
    WEFT_HD std::int64_t for_each_pair(std::int64_t r, Emit& emit) const
    {
        const std::int64_t first = run_first[r], n = run_length[r];
        const std::uint64_t key = keys[first];
        std::int64_t count = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const int a = owners[first + i];
            const Aabb<T> box = boxes[a];
            const LowerCell low = lower[a];
            for (std::int64_t j = i + 1; j < n; ++j) {
                const int b = owners[first + j];
                if (!reported_here(box, boxes[b], low, lower[b], key)) continue;
                emit(a, b);
                ++count;
            }
        }
        return count;
    }
};

struct IgnorePair {
    WEFT_HD void operator()(int, int) const {}
};

/// Packs pairs as a · n + b from a given position on.
struct PackPair {
    std::uint64_t* pairs;
    std::uint64_t box_count;
    std::int64_t at;
    WEFT_HD void operator()(int a, int b)
    {
        pairs[at++] = static_cast<std::uint64_t>(a) * box_count + static_cast<std::uint64_t>(b);
    }
};

/// The number of pairs run r reports.
template <typename T>
struct RunPairs {
    CellRuns<T> runs;
    WEFT_HD std::int64_t operator()(std::int64_t r) const
    {
        IgnorePair ignore;
        return runs.for_each_pair(r, ignore);
    }
};

/// Writes run r's pairs at its offset.
template <typename T>
struct WriteRunPairs {
    CellRuns<T> runs;
    const std::int64_t* pair_offsets;
    std::uint64_t box_count;
    std::uint64_t* pairs;
    WEFT_HD void operator()(std::int64_t r) const
    {
        PackPair pack{pairs, box_count, pair_offsets[r]};
        runs.for_each_pair(r, pack);
    }
};

struct PackedPair {
    std::uint64_t box_count;
    WEFT_HD std::uint64_t operator()(const CandidatePair& p) const
    {
        return static_cast<std::uint64_t>(p.a) * box_count + static_cast<std::uint64_t>(p.b);
    }
};

struct UnpackPair {
    std::uint64_t box_count;
    WEFT_HD CandidatePair operator()(std::uint64_t key) const
    {
        return CandidatePair{static_cast<int>(key / box_count), static_cast<int>(key % box_count)};
    }
};

/// Pairs sharing a cell run of a given length, L (L − 1) / 2.
struct PairsOfRun {
    WEFT_HD std::int64_t operator()(std::int64_t n) const { return n * (n - 1) / 2; }
};

struct MaxIndex {
    WEFT_HD std::int64_t operator()(std::int64_t a, std::int64_t b) const { return a > b ? a : b; }
};

struct IsSet {
    WEFT_HD bool operator()(std::int64_t x) const { return x != 0; }
};

/// 1 for a box that is not finite or inverted on some axis.
template <typename T>
struct InvalidBox {
    const Aabb<T>* boxes;
    WEFT_HD std::int64_t operator()(int i) const
    {
        for (int k = 0; k < 3; ++k) {
            const T lo = boxes[i].lo[k], hi = boxes[i].hi[k];
            if (!(lo - lo == T(0)) || !(hi - hi == T(0)) || !(lo <= hi)) return 1;
        }
        return 0;
    }
};

/// The length of cell run r from the first entries of the runs.
struct RunLength {
    const std::int64_t* run_first;
    std::int64_t runs;
    std::int64_t entries;
    WEFT_HD std::int64_t operator()(std::int64_t r) const
    {
        return (r + 1 < runs ? run_first[r + 1] : entries) - run_first[r];
    }
};

/// Marks the first entry of each run of equal keys.
struct RunStart {
    const std::uint64_t* keys;
    WEFT_HD std::int64_t operator()(std::int64_t i) const { return i == 0 || keys[i] != keys[i - 1] ? 1 : 0; }
};

/// The largest side of box i.
template <typename T>
struct LargestSide {
    const Aabb<T>* boxes;
    WEFT_HD T operator()(int i) const
    {
        T side = T(0);
        for (int k = 0; k < 3; ++k) {
            const T d = boxes[i].hi[k] - boxes[i].lo[k];
            side = d > side ? d : side;
        }
        return side;
    }
};

}  // namespace broad_phase_detail

/// The grid cell for `boxes`: `cell`, or the boxes' mean largest side
/// where that is larger. A cell smaller than the boxes reports each
/// overlapping pair from every cell the two share: boxes grown by a reach
/// beyond their primitives' size (the stacked layers' offsets) covered 25
/// cells each at two segment lengths, and the broad phase took 2.5 times as
/// long as with cells of about the boxes' size (benchmarks/RESULTS.md,
/// "The broad phase's cell at least the boxes' size"). The pairs found do
/// not depend on the cell.
template <typename T>
T grid_cell_for(const thrust::device_vector<Aabb<T>>& boxes, T cell)
{
    const int n = static_cast<int>(boxes.size());
    if (n == 0) return cell;
    const auto first = thrust::counting_iterator<int>(0);
    const T mean =
        thrust::transform_reduce(thrust::device, first, first + n,
                                 broad_phase_detail::LargestSide<T>{raw_pointer(boxes)}, T(0), thrust::plus<T>()) /
        static_cast<T>(n);
    // A box that is not finite leaves `cell`, so that find_overlapping_pairs names the box.
    return std::isfinite(static_cast<double>(mean)) && mean > cell ? mean : cell;
}

/// Counters of the last `find_overlapping_pairs` (for benchmarks and tests).
struct BroadPhaseStats {
    std::int64_t cell_entries = 0;  ///< (cell, box) entries written
    std::int64_t occupied_cells = 0;
    std::int64_t candidates = 0;  ///< pairs sharing a cell (each counted once per cell), tested for overlap
    std::int64_t pairs = 0;       ///< overlapping pairs returned
};

/// Every pair (a < b) of boxes that overlap, in the grid's order (by cell,
/// then by a and b within the cell: the same on any thread count), from a
/// grid of cell size `cell`; find_overlapping_pairs sorts them. Callers
/// that filter the pairs sort only what they keep (sort_pairs).
/// @throws InvalidInput for a cell size that is not positive and finite, a
///         box that is not finite or inverted (naming its index), boxes
///         beyond ±2²⁰ cells of the origin, or more than `max_entries` cell
///         entries (a cell size far below the boxes' size).
template <typename T>
thrust::device_vector<CandidatePair> overlapping_pairs_in_grid_order(const thrust::device_vector<Aabb<T>>& boxes,
                                                                     T cell, BroadPhaseStats* stats = nullptr,
                                                                     std::int64_t max_entries = std::int64_t(1) << 31)
{
    using namespace broad_phase_detail;
    if (!(cell > T(0)) || !std::isfinite(static_cast<double>(cell)))
        throw InvalidInput(detail::describe("broad phase cell size", cell, "must be positive and finite"));
    const int n = static_cast<int>(boxes.size());
    thrust::device_vector<CandidatePair> pairs;
    BroadPhaseStats local;
    if (n < 2) {
        if (stats) *stats = local;
        return pairs;
    }
    const Aabb<T>* box = raw_pointer(boxes);
    const auto first = thrust::counting_iterator<int>(0);
    if (thrust::transform_reduce(thrust::device, first, first + n, InvalidBox<T>{box}, std::int64_t(0),
                                 thrust::plus<std::int64_t>()) > 0) {
        const std::vector<Aabb<T>> host = to_host(boxes);
        for (int i = 0; i < n; ++i)
            if (InvalidBox<T>{host.data()}(i))
                throw InvalidInput("broad phase box " + std::to_string(i) +
                                   ": bounds must be finite with lo <= hi on every axis");
    }
    const T inverse_cell = T(1) / cell;
    const std::int64_t extreme = thrust::transform_reduce(
        thrust::device, first, first + n, ExtremeCell<T>{box, inverse_cell}, std::int64_t(0), MaxIndex());
    if (extreme >= coordinate_offset)
        throw InvalidInput("broad phase: boxes reach " + std::to_string(extreme) + " cells from the origin (at most " +
                           std::to_string(coordinate_offset - 1) + "); use a larger cell size");
    thrust::device_vector<std::int64_t> offsets(static_cast<std::size_t>(n) + 1, 0);
    thrust::transform(thrust::device, first, first + n, offsets.begin(), CountCells<T>{box, inverse_cell});
    thrust::exclusive_scan(thrust::device, offsets.begin(), offsets.end(), offsets.begin());
    local.cell_entries = offsets.back();
    if (local.cell_entries > max_entries)
        throw InvalidInput("broad phase: " + std::to_string(local.cell_entries) + " cell entries (more than " +
                           std::to_string(max_entries) + "): the cell size " + std::to_string(double(cell)) +
                           " is far below the boxes' size");
    const std::size_t entries = static_cast<std::size_t>(local.cell_entries);
    thrust::device_vector<std::uint64_t> keys(entries);
    thrust::device_vector<int> owners(entries);
    thrust::for_each(thrust::device, first, first + n,
                     WriteCells<T>{box, inverse_cell, raw_pointer(offsets), raw_pointer(keys), raw_pointer(owners)});
    thrust::stable_sort_by_key(thrust::device, keys.begin(), keys.end(), owners.begin());

    // Cell runs: their first entries and lengths.
    const auto entry = thrust::counting_iterator<std::int64_t>(0);
    thrust::device_vector<std::int64_t> starts(entries);
    thrust::transform(thrust::device, entry, entry + static_cast<std::int64_t>(entries), starts.begin(),
                      RunStart{raw_pointer(keys)});
    const std::int64_t runs = thrust::reduce(thrust::device, starts.begin(), starts.end(), std::int64_t(0));
    local.occupied_cells = runs;
    thrust::device_vector<std::int64_t> run_first(static_cast<std::size_t>(runs));
    thrust::copy_if(thrust::device, entry, entry + static_cast<std::int64_t>(entries), starts.begin(),
                    run_first.begin(), IsSet());
    const auto run = thrust::counting_iterator<std::int64_t>(0);
    thrust::device_vector<std::int64_t> run_length(static_cast<std::size_t>(runs));
    thrust::transform(thrust::device, run, run + runs, run_length.begin(),
                      RunLength{raw_pointer(run_first), runs, static_cast<std::int64_t>(entries)});
    local.candidates = thrust::transform_reduce(thrust::device, run_length.begin(), run_length.end(), PairsOfRun(),
                                                std::int64_t(0), thrust::plus<std::int64_t>());
    thrust::device_vector<LowerCell> lower(static_cast<std::size_t>(n));
    thrust::transform(thrust::device, first, first + n, lower.begin(), LowerCellOf<T>{box, inverse_cell});
    const CellRuns<T> cell_runs{box,
                                raw_pointer(lower),
                                raw_pointer(keys),
                                raw_pointer(owners),
                                raw_pointer(run_first),
                                raw_pointer(run_length)};
    thrust::device_vector<std::int64_t> pair_offsets(static_cast<std::size_t>(runs) + 1, 0);
    thrust::transform(thrust::device, run, run + runs, pair_offsets.begin(), RunPairs<T>{cell_runs});
    thrust::exclusive_scan(thrust::device, pair_offsets.begin(), pair_offsets.end(), pair_offsets.begin());
    const std::int64_t found = pair_offsets.back();
    thrust::device_vector<std::uint64_t> packed(static_cast<std::size_t>(found));
    const auto count = static_cast<std::uint64_t>(n);
    thrust::for_each(thrust::device, run, run + runs,
                     WriteRunPairs<T>{cell_runs, raw_pointer(pair_offsets), count, raw_pointer(packed)});
    pairs.resize(static_cast<std::size_t>(found));
    thrust::transform(thrust::device, packed.begin(), packed.end(), pairs.begin(), UnpackPair{count});
    local.pairs = static_cast<std::int64_t>(pairs.size());
    if (stats) *stats = local;
    return pairs;
}

/// Sorts pairs of indices below `box_count` by (a, b): a radix sort of
/// the pairs packed as a · box_count + b.
inline void sort_pairs(thrust::device_vector<CandidatePair>& pairs, int box_count)
{
    using namespace broad_phase_detail;
    thrust::device_vector<std::uint64_t> packed(pairs.size());
    const auto count = static_cast<std::uint64_t>(box_count);
    thrust::transform(thrust::device, pairs.begin(), pairs.end(), packed.begin(), PackedPair{count});
    thrust::sort(thrust::device, packed.begin(), packed.end());
    thrust::transform(thrust::device, packed.begin(), packed.end(), pairs.begin(), UnpackPair{count});
}

/// Every pair (a < b) of boxes that overlap, sorted by (a, b), from a grid
/// of cell size `cell`. The cell size trades entries (small cells: a box
/// covers many) against candidates (large cells: many boxes share one);
/// about the primitives' size is the usual choice.
/// @throws as overlapping_pairs_in_grid_order
template <typename T>
thrust::device_vector<CandidatePair> find_overlapping_pairs(const thrust::device_vector<Aabb<T>>& boxes, T cell,
                                                            BroadPhaseStats* stats = nullptr,
                                                            std::int64_t max_entries = std::int64_t(1) << 31)
{
    thrust::device_vector<CandidatePair> pairs = overlapping_pairs_in_grid_order(boxes, cell, stats, max_entries);
    sort_pairs(pairs, static_cast<int>(boxes.size()));
    return pairs;
}

namespace broad_phase_detail {

/// The box of triangle i of a mesh (positions 3 per node).
template <typename T>
struct TriangleBox {
    const T* q;
    const int* triangles;  ///< 3 per triangle
    WEFT_HD Aabb<T> operator()(int i) const
    {
        Aabb<T> b;
        for (int k = 0; k < 3; ++k) {
            b.lo[k] = q[3 * triangles[3 * i] + k];
            b.hi[k] = b.lo[k];
        }
        for (int c = 1; c < 3; ++c)
            for (int k = 0; k < 3; ++k) {
                const T x = q[3 * triangles[3 * i + c] + k];
                b.lo[k] = x < b.lo[k] ? x : b.lo[k];
                b.hi[k] = x > b.hi[k] ? x : b.hi[k];
            }
        return b;
    }
};

/// True for a candidate pair that shares no vertex and intersects.
template <typename T>
struct Intersecting {
    const T* q;
    const int* triangles;
    WEFT_HD bool operator()(const CandidatePair& p) const
    {
        Vec3<T> a[3], b[3];
        for (int c = 0; c < 3; ++c) {
            const int va = triangles[3 * p.a + c], vb = triangles[3 * p.b + c];
            for (int e = 0; e < 3; ++e)
                if (va == triangles[3 * p.b + e]) return false;
            a[c] = Vec3<T>(q[3 * va], q[3 * va + 1], q[3 * va + 2]);
            b[c] = Vec3<T>(q[3 * vb], q[3 * vb + 1], q[3 * vb + 2]);
        }
        return triangles_intersect<T>(a, b);
    }
};

template <typename T>
struct NotIntersecting {
    Intersecting<T> test;
    WEFT_HD bool operator()(const CandidatePair& p) const { return !test(p); }
};

}  // namespace broad_phase_detail

/// The pairs of triangles of a mesh that intersect (sharing no vertex),
/// sorted: the broad phase over the triangles' boxes, then
/// `triangles_intersect`. `q` holds 3 positions per node, `triangles` 3
/// node indices per triangle. The check behind collision handling's
/// safeguard (docs/collision.md): a cloth state with no such pair has no
/// self-intersection.
/// @throws InvalidInput as find_overlapping_pairs, or for a triangle list
///         whose size is not a multiple of 3.
template <typename T>
thrust::device_vector<CandidatePair> find_intersecting_triangles(const thrust::device_vector<T>& q,
                                                                 const thrust::device_vector<int>& triangles, T cell)
{
    using namespace broad_phase_detail;
    if (triangles.size() % 3 != 0)
        throw InvalidInput(detail::describe("triangle index list size", triangles.size(), "must be a multiple of 3"));
    const int count = static_cast<int>(triangles.size() / 3);
    thrust::device_vector<Aabb<T>> boxes(static_cast<std::size_t>(count));
    const auto first = thrust::counting_iterator<int>(0);
    thrust::transform(thrust::device, first, first + count, boxes.begin(),
                      TriangleBox<T>{raw_pointer(q), raw_pointer(triangles)});
    thrust::device_vector<CandidatePair> pairs = find_overlapping_pairs<T>(boxes, cell);
    pairs.erase(thrust::remove_if(thrust::device, pairs.begin(), pairs.end(),
                                  NotIntersecting<T>{Intersecting<T>{raw_pointer(q), raw_pointer(triangles)}}),
                pairs.end());
    return pairs;
}

}  // namespace weft
