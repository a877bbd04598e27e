#pragma once
/// @file cloth_collision.hpp
/// The contact pairs of triangle cloth on the backend (docs/collision.md):
/// every point–triangle and edge–edge pair of a mesh, not sharing a vertex,
/// whose distance is below a reach, found by the sorted-grid broad phase
/// (broad_phase.hpp) and the exact closest points (proximity.hpp), and the
/// triangle pairs that intersect (the safeguard's check). One source for
/// CUDA and CPU threads; the result is sorted, so it is the same on every
/// thread count and device.
///
/// Point–triangle: one box per vertex, grown by the reach, and one per
/// triangle, in one broad phase; a pair (vertex, triangle) whose boxes
/// overlap is a candidate. Edge–edge: one box per edge, grown by half the
/// reach. Every box is swept over the motion τ v, so a pair that can come
/// within the reach in that time has overlapping boxes, and nothing is
/// missed (tested against brute force). The pairs kept are those whose
/// distance is below the reach plus τ times their relative speed bound: a
/// sheet falling as a whole keeps no pairs with itself.

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include <weft/backend/assembly.hpp>
#include <weft/backend/broad_phase.hpp>
#include <weft/backend/vector_ops.hpp>
#include <weft/core/error.hpp>
#include <weft/element/cloth_contact.hpp>
#include <weft/element/proximity.hpp>

namespace weft {

namespace cloth_collision_detail {

/// The position of `node` in q with `stride` DoFs per node (its first three).
template <typename T>
WEFT_HD inline Vec3<T> node_position(const T* q, int node, int stride = 3)
{
    return Vec3<T>(q[stride * node], q[stride * node + 1], q[stride * node + 2]);
}

/// Positions and velocities (`stride` DoFs per node, positions first: 3 for
/// triangle cloth, 5 for yarn nodes) and the time τ they move over.
template <typename T>
struct Motion {
    const T* q;
    const T* v;
    T tau;
    int stride;
};

/// The box of nodes `nodes` swept from q to q + τ v, grown by `pad`.
template <typename T, int N>
WEFT_HD inline Aabb<T> swept_box(const Motion<T>& m, const int (&nodes)[N], T pad)
{
    const T *q = m.q, *v = m.v;
    const T tau = m.tau;
    const int n = m.stride;
    Aabb<T> b;
    for (int k = 0; k < 3; ++k) {
        b.lo[k] = q[n * nodes[0] + k];
        b.hi[k] = b.lo[k];
    }
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < 3; ++k) {
            const T x0 = q[n * nodes[i] + k], x1 = x0 + tau * v[n * nodes[i] + k];
            const T lo = x0 < x1 ? x0 : x1, hi = x0 < x1 ? x1 : x0;
            b.lo[k] = lo < b.lo[k] ? lo : b.lo[k];
            b.hi[k] = hi > b.hi[k] ? hi : b.hi[k];
        }
    for (int k = 0; k < 3; ++k) {
        b.lo[k] -= pad;
        b.hi[k] += pad;
    }
    return b;
}

/// Boxes 0 … n−1: the vertices, grown by `reach`; n … n + #triangles − 1:
/// the triangles; each swept over τ v.
template <typename T>
struct VertexTriangleBox {
    Motion<T> motion;
    const int* triangles;
    int vertices;
    T reach;
    WEFT_HD Aabb<T> operator()(int i) const
    {
        if (i >= vertices) {
            const int* t = triangles + 3 * (i - vertices);
            const int nodes[3] = {t[0], t[1], t[2]};
            return swept_box<T, 3>(motion, nodes, T(0));
        }
        const int nodes[1] = {i};
        return swept_box<T, 1>(motion, nodes, reach);
    }
};

/// Edge boxes swept over τ v, grown by `pad`.
template <typename T>
struct EdgeBox {
    Motion<T> motion;
    const int* edges;  ///< 2 per edge
    T pad;
    WEFT_HD Aabb<T> operator()(int e) const
    {
        const int nodes[2] = {edges[2 * e], edges[2 * e + 1]};
        return swept_box<T, 2>(motion, nodes, pad);
    }
};

/// The largest relative speed of a node of one primitive against a node of
/// the other: a bound on the relative speed of any two of their points.
template <typename T>
WEFT_HD inline T relative_speed_bound(const T* v, const int (&nodes)[4], int first_count, int stride = 3)
{
    T largest = T(0);
    for (int i = 0; i < first_count; ++i)
        for (int j = first_count; j < 4; ++j) {
            T sum = T(0);
            for (int k = 0; k < 3; ++k) {
                const T d = v[stride * nodes[i] + k] - v[stride * nodes[j] + k];
                sum += d * d;
            }
            largest = sum > largest ? sum : largest;
        }
    using std::sqrt;
    return sqrt(largest);
}

/// A (vertex, triangle) candidate, the vertex not a corner, that may come
/// within the reach over τ: distance < reach + τ × relative speed bound.
template <typename T>
struct NearVertexTriangle {
    Motion<T> motion;
    const int* triangles;
    int vertices;
    T reach;
    WEFT_HD bool operator()(const CandidatePair& p) const
    {
        if (p.a >= vertices || p.b < vertices) return false;
        const int* t = triangles + 3 * (p.b - vertices);
        if (p.a == t[0] || p.a == t[1] || p.a == t[2]) return false;
        const int nodes[4] = {p.a, t[0], t[1], t[2]};
        const T* q = motion.q;  // (triangle cloth: 3 DoFs per node)
        const T limit = reach + motion.tau * relative_speed_bound<T>(motion.v, nodes, 1);
        return closest_point_triangle<T>(node_position(q, p.a), node_position(q, t[0]), node_position(q, t[1]),
                                         node_position(q, t[2]))
                   .distance_squared < limit * limit;
    }
};

/// Excludes the edge pairs that share a node (triangle cloth).
struct SharedNode {
    WEFT_HD bool operator()(int a0, int a1, int b0, int b1) const
    {
        return a0 == b0 || a0 == b1 || a1 == b0 || a1 == b1;
    }
};

/// Excludes no pair of edges by their indices (near_edge_pairs' default).
struct NoPairExclusion {
    WEFT_HD bool operator()(const CandidatePair&) const { return false; }
};

/// An edge pair, not excluded (by its nodes, then by the pair of edges),
/// that may come within the reach over τ.
template <typename T, class Exclusion = SharedNode, class PairExclusion = NoPairExclusion>
struct NearEdgeEdge {
    Motion<T> motion;
    const int* edges;
    T reach;
    Exclusion excluded;
    PairExclusion pair_excluded;
    WEFT_HD bool operator()(const CandidatePair& p) const
    {
        const int a0 = edges[2 * p.a], a1 = edges[2 * p.a + 1], b0 = edges[2 * p.b], b1 = edges[2 * p.b + 1];
        if (excluded(a0, a1, b0, b1) || pair_excluded(p)) return false;
        const int nodes[4] = {a0, a1, b0, b1};
        const T* q = motion.q;
        const int n = motion.stride;
        const T limit = reach + motion.tau * relative_speed_bound<T>(motion.v, nodes, 2, n);
        return closest_segment_segment<T>(node_position(q, a0, n), node_position(q, a1, n), node_position(q, b0, n),
                                          node_position(q, b1, n))
                   .distance_squared < limit * limit;
    }
};

/// The position of a contact pair's node k (0–3) as the pair measures it:
/// the second primitive's nodes (k ≥ 2) displaced by the pair's offset.
template <typename T>
WEFT_HD inline Vec3<T> contact_node_position(const T* q, const ClothContactElement<T>& pair, int k, int stride)
{
    const Vec3<T> p = node_position(q, pair.nodes[k], stride);
    return k < 2 ? p : Vec3<T>(p + Vec3<T>(pair.offset[0], pair.offset[1], pair.offset[2]));
}

/// The distance of a contact pair's primitives at q (`stride` DoFs per node).
template <typename T>
struct ContactDistance {
    const T* q;
    int stride;
    WEFT_HD T operator()(const ClothContactElement<T>& pair) const
    {
        const Vec3<T> p[4] = {contact_node_position(q, pair, 0, stride), contact_node_position(q, pair, 1, stride),
                              contact_node_position(q, pair, 2, stride), contact_node_position(q, pair, 3, stride)};
        T c[4];
        contact_point_weights<T>(p[0], p[1], p[2], p[3], pair.kind, false, c);
        return weighted_sum<T>(c, p[0], p[1], p[2], p[3]).norm();
    }
};

/// Whether a contact pair's primitives are closer than `limit` at q.
template <typename T>
struct CloserThan {
    ContactDistance<T> distance;
    T limit;
    WEFT_HD bool operator()(const ClothContactElement<T>& pair) const { return distance(pair) < limit; }
};

template <typename T>
struct SameContact {
    WEFT_HD bool operator()(const ClothContactElement<T>& a, const ClothContactElement<T>& b) const
    {
        return a.kind == b.kind && a.nodes[0] == b.nodes[0] && a.nodes[1] == b.nodes[1] && a.nodes[2] == b.nodes[2] &&
               a.nodes[3] == b.nodes[3];
    }
};

template <typename T>
struct SameOffset {
    WEFT_HD bool operator()(const ClothContactElement<T>& a, const ClothContactElement<T>& b) const
    {
        return a.offset[0] == b.offset[0] && a.offset[1] == b.offset[1] && a.offset[2] == b.offset[2];
    }
};

template <typename T>
struct VertexTriangleElement {
    const int* triangles;
    int vertices;
    WEFT_HD ClothContactElement<T> operator()(const CandidatePair& p) const
    {
        const int* t = triangles + 3 * (p.b - vertices);
        return ClothContactElement<T>{{p.a, t[0], t[1], t[2]}, int(ClothContactKind::point_triangle), T(0)};
    }
};

/// An edge pair, with the parallel mollifier's ε× = 10⁻³ |ū|² |w̄|² from the
/// edges' reference lengths (cloth_contact.hpp).
template <typename T>
struct EdgeEdgeElement {
    const int* edges;
    const T* length_squared;  ///< per edge, at the reference positions
    WEFT_HD ClothContactElement<T> operator()(const CandidatePair& p) const
    {
        return ClothContactElement<T>{{edges[2 * p.a], edges[2 * p.a + 1], edges[2 * p.b], edges[2 * p.b + 1]},
                                      int(ClothContactKind::edge_edge),
                                      T(1e-3) * length_squared[p.a] * length_squared[p.b]};
    }
};

/// Per contact pair: its four nodes and the Coulomb limits its friction
/// puts on them (`contact_friction_loads`), at slots 4 j … 4 j + 3.
template <typename T, int B>
struct FrictionLoads {
    const ClothContactElement<T>* pairs;
    const T* q;
    ClothCollision<T> collision;
    int* nodes;
    T* loads;
    WEFT_HD void operator()(Index j) const
    {
        const ClothContactElement<T>& pair = pairs[j];
        T load[4];
        contact_friction_loads<T, B>(q, pair, collision, load);
        for (int i = 0; i < 4; ++i) {
            nodes[4 * j + i] = pair.nodes[i];
            loads[4 * j + i] = load[i];
        }
    }
};

/// Per node: the sum of its loads (sorted by node, in the pairs' order
/// within a node, so the sum's order is fixed) over its mass; zero for a
/// node whose position is fixed (no free position DoF: friction cannot
/// change its velocity).
template <typename T, int B>
struct NodeFrictionRate {
    const T* loads;
    const Index* first;
    const Index* last;
    const T* mass;
    const std::uint8_t* free;  ///< B per node, or null: all free
    WEFT_HD T operator()(Index node) const
    {
        if (free && !(free[B * node] || free[B * node + 1] || free[B * node + 2])) return T(0);
        T sum = T(0);
        for (Index k = first[node]; k < last[node]; ++k) sum += loads[k];
        return mass[node] > T(0) ? sum / mass[node] : T(0);
    }
};

}  // namespace cloth_collision_detail

/// The working storage of `contact_friction_rates`: kept by a stepper
/// across its attempts, so that the per-attempt call allocates only when
/// the contact pairs or the nodes outgrow it (a device_vector keeps its
/// capacity when it shrinks).
template <typename T>
struct FrictionRateScratch {
    thrust::device_vector<int> nodes;          ///< per load slot: its node, sorted
    thrust::device_vector<T> loads;            ///< per load slot (contact_friction_loads)
    thrust::device_vector<Index> first, last;  ///< per node: its slots
};

/// The contact friction's load rates at positions q (`B` DoFs per node),
/// the attempt's start: per node i, a_i = Σ μλ |c_i| / m_i over every
/// contact part that touches at q (`contact_friction_loads`), zero where
/// `free` (B flags per node, or null) fixes the node's position; they size
/// each contact's slip velocity (`contact_slip_velocity`). Sums in a fixed
/// order (the same bits on any device and thread count). `rates` is left
/// empty (the friction's floor) without friction or contacts. `scratch`
/// holds the intermediate arrays (nothing in it is read).
template <typename T, int B>
inline void contact_friction_rates(const thrust::device_vector<ClothContactElement<T>>& pairs,
                                   const thrust::device_vector<T>& q, const T* mass, const std::uint8_t* free,
                                   const ClothCollision<T>& collision, Index nodes, thrust::device_vector<T>& rates,
                                   FrictionRateScratch<T>& scratch)
{
    if (pairs.empty() || !(collision.friction > T(0))) {
        rates.clear();
        return;
    }
    const std::size_t slots = 4 * pairs.size();
    thrust::device_vector<int>& at = scratch.nodes;
    thrust::device_vector<T>& loads = scratch.loads;
    at.resize(slots);
    loads.resize(slots);
    const auto first = thrust::counting_iterator<Index>(0);
    thrust::for_each(thrust::device, first, first + static_cast<Index>(pairs.size()),
                     cloth_collision_detail::FrictionLoads<T, B>{
                         thrust::raw_pointer_cast(pairs.data()), thrust::raw_pointer_cast(q.data()), collision,
                         thrust::raw_pointer_cast(at.data()), thrust::raw_pointer_cast(loads.data())});
    thrust::stable_sort_by_key(thrust::device, at.begin(), at.end(), loads.begin());
    thrust::device_vector<Index>& lo = scratch.first;
    thrust::device_vector<Index>& hi = scratch.last;
    lo.resize(static_cast<std::size_t>(nodes));
    hi.resize(static_cast<std::size_t>(nodes));
    thrust::lower_bound(thrust::device, at.begin(), at.end(), first, first + nodes, lo.begin());
    thrust::upper_bound(thrust::device, at.begin(), at.end(), first, first + nodes, hi.begin());
    rates.resize(static_cast<std::size_t>(nodes));
    thrust::transform(thrust::device, first, first + nodes, rates.begin(),
                      cloth_collision_detail::NodeFrictionRate<T, B>{thrust::raw_pointer_cast(loads.data()),
                                                                     thrust::raw_pointer_cast(lo.data()),
                                                                     thrust::raw_pointer_cast(hi.data()), mass, free});
}

/// The same with storage of its own (a one-off call).
template <typename T, int B>
inline void contact_friction_rates(const thrust::device_vector<ClothContactElement<T>>& pairs,
                                   const thrust::device_vector<T>& q, const T* mass, const std::uint8_t* free,
                                   const ClothCollision<T>& collision, Index nodes, thrust::device_vector<T>& rates)
{
    FrictionRateScratch<T> scratch;
    contact_friction_rates<T, B>(pairs, q, mass, free, collision, nodes, rates, scratch);
}

/// How deep, as a fraction of the collision thickness r, one full-Newton
/// update may carry a contact pair that is out of contact
/// (ContactOnsetFraction).
constexpr double contact_onset_cap = 0.5;

/// Full Newton's step bound on the onset of a contact pair (as
/// `collider_step_fraction` for colliders): the largest α ≤ 1 for which the
/// update q + α h Δv carries a pair that is out of contact (d ≥ r) at most
/// `cap` into it, with d linearized along the pair's normal at its current
/// contact points (the closest points of a point–triangle or edge–edge
/// pair, `stable_segment_parameters` for a yarn segment pair, each end
/// point's part of a parallel one: `contact_point_weights`). An
/// out-of-contact pair has no stiffness in the Newton matrix, so one update
/// could otherwise carry two pieces of cloth that meet within the step deep
/// into each other, and the next iterations bounce on the penalty. Measured
/// on fold.json at 80 × 40 yarns (docs/collision.md, "The onset bound"):
/// without the bound 10.9 Newton iterations per step over 0.12 s; cap 0.1 r:
/// 17.8, 0.25 r: 7.8, 0.5 r: 4.9, 1.0 r: 4.3 but 11 of 120 steps halved.
/// B: the nodes' DoF count (positions first).
template <typename T, int B>
struct ContactOnsetFraction {
    const T* q;
    const T* dv;
    T h;
    T thickness;
    T cap;
    WEFT_HD T operator()(const ClothContactElement<T>& pair) const
    {
        const Vec<T, 12> ql = gather_contact_positions<T, B>(q, pair);
        const Vec<T, 12> dl = gather_nodes<T, 4, B>(dv, pair.nodes);
        const Vec3<T> p0 = ql.template segment<3>(0), p1 = ql.template segment<3>(3), p2 = ql.template segment<3>(6),
                      p3 = ql.template segment<3>(9);
        T fraction = T(1);
        for (int part = 0; part < contact_parts(pair); ++part) {
            T c[4];
            contact_point_weights<T>(p0, p1, p2, p3, pair.kind, true, c, part);
            const Vec3<T> x = weighted_sum<T>(c, p0, p1, p2, p3);
            const T ch[4] = {c[0] * h, c[1] * h, c[2] * h, c[3] * h};
            const Vec3<T> dx = weighted_sum<T>(ch, dl.template segment<3>(0), dl.template segment<3>(3),
                                               dl.template segment<3>(6), dl.template segment<3>(9));
            const T d = x.norm();
            if (!(d >= thickness) || !(d > T(0))) continue;
            const T closing = -x.dot(dx) / d;
            if (!(closing > T(0)) || d - closing >= thickness - cap) continue;
            const T reach = (d - thickness + cap) / closing;
            if (reach < fraction) fraction = reach;
        }
        return fraction;
    }
};

/// The smallest ContactOnsetFraction over `pairs` (1 without pairs), with
/// the cap `contact_onset_cap` × the thickness.
template <typename T, int B>
T contact_onset_bound(const thrust::device_vector<T>& q, const thrust::device_vector<T>& dv, T h,
                      const thrust::device_vector<ClothContactElement<T>>& pairs, T thickness)
{
    if (pairs.empty()) return T(1);
    const ContactOnsetFraction<T, B> bound{thrust::raw_pointer_cast(q.data()), thrust::raw_pointer_cast(dv.data()), h,
                                           thickness, T(contact_onset_cap) * thickness};
    return thrust::transform_reduce(thrust::device, pairs.begin(), pairs.end(), bound, T(1), thrust::minimum<T>());
}

/// The pairs of edges (2 node indices each), not excluded, that may come
/// closer than `reach` within τ (`motion`): their boxes swept over τ v and
/// grown by half the reach overlap in the sorted-grid broad phase (cell
/// size `cell`, or the boxes' mean size where larger: grid_cell_for), and
/// their distance is below reach + τ × the largest relative speed of their
/// nodes. Sorted by (a, b). Triangle cloth's edge–edge pairs and yarn
/// segment pairs. `excluded` takes a pair's four nodes, `pair_excluded` the
/// pair of edge indices; both are tested before the distance, in the one
/// pass that filters the broad phase's pairs.
template <typename T, class Exclusion, class PairExclusion = cloth_collision_detail::NoPairExclusion>
thrust::device_vector<CandidatePair> near_edge_pairs(const cloth_collision_detail::Motion<T>& motion,
                                                     const thrust::device_vector<int>& edges, T reach, T cell,
                                                     const Exclusion& excluded,
                                                     const PairExclusion& pair_excluded = PairExclusion{})
{
    using namespace cloth_collision_detail;
    const int count = static_cast<int>(edges.size() / 2);
    thrust::device_vector<CandidatePair> out;
    if (count < 2) return out;
    const int* e = raw_pointer(edges);
    thrust::device_vector<Aabb<T>> boxes(static_cast<std::size_t>(count));
    const auto first = thrust::counting_iterator<int>(0);
    thrust::transform(thrust::device, first, first + count, boxes.begin(), EdgeBox<T>{motion, e, reach / T(2)});
    // Filtered in the grid's order; only what is kept is sorted.
    const thrust::device_vector<CandidatePair> candidates =
        overlapping_pairs_in_grid_order<T>(boxes, grid_cell_for(boxes, cell));
    out.resize(candidates.size());
    const auto end =
        thrust::copy_if(thrust::device, candidates.begin(), candidates.end(), out.begin(),
                        NearEdgeEdge<T, Exclusion, PairExclusion>{motion, e, reach, excluded, pair_excluded});
    out.resize(static_cast<std::size_t>(end - out.begin()));
    sort_pairs(out, count);
    return out;
}

/// Appends the assembly entries of contact elements (4 × 4 node blocks and
/// 4 node vectors each, in element order) to an assembly's lists: both
/// steppers assemble their contact pairs after their other elements.
template <typename T>
inline void append_contact_blocks(const thrust::device_vector<ClothContactElement<T>>& contacts,
                                  std::vector<BlockCoordinate>& blocks, std::vector<Index>& vectors)
{
    for (const ClothContactElement<T>& c : to_host(contacts))
        for (int a = 0; a < 4; ++a) {
            for (int b = 0; b < 4; ++b) blocks.push_back({c.nodes[a], c.nodes[b]});
            vectors.push_back(c.nodes[a]);
        }
}

/// Whether two contact lists hold the same pairs in the same order.
template <typename T>
inline bool same_contacts(const thrust::device_vector<ClothContactElement<T>>& a,
                          const thrust::device_vector<ClothContactElement<T>>& b)
{
    return a.size() == b.size() &&
           thrust::equal(thrust::device, a.begin(), a.end(), b.begin(), cloth_collision_detail::SameContact<T>{});
}

/// Whether two contact lists of the same pairs (`same_contacts`) hold the
/// same offsets.
template <typename T>
inline bool same_contact_offsets(const thrust::device_vector<ClothContactElement<T>>& a,
                                 const thrust::device_vector<ClothContactElement<T>>& b)
{
    return thrust::equal(thrust::device, a.begin(), a.end(), b.begin(), cloth_collision_detail::SameOffset<T>{});
}

/// The unique edges of a triangle list (3 node indices per triangle), each
/// as (smaller, larger) node index, sorted.
inline std::vector<int> mesh_edge_list(const std::vector<int>& triangles)
{
    std::vector<std::pair<int, int>> edges;
    edges.reserve(triangles.size());
    for (std::size_t t = 0; t + 2 < triangles.size(); t += 3)
        for (int c = 0; c < 3; ++c) {
            const int a = triangles[t + c], b = triangles[t + (c + 1) % 3];
            edges.emplace_back(std::min(a, b), std::max(a, b));
        }
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    std::vector<int> out;
    out.reserve(2 * edges.size());
    for (const auto& e : edges) {
        out.push_back(e.first);
        out.push_back(e.second);
    }
    return out;
}

/// Finds the contact pairs and the intersecting triangles of one mesh.
template <typename T>
class ClothContactFinder {
public:
    ClothContactFinder() = default;

    /// @param[in] triangles  3 node indices per triangle
    /// @param[in] reference  3 positions per node at which the edges' reference
    ///                       lengths are taken (the rest or initial shape)
    /// @param[in] cell       the broad phase's cell size (about an edge length)
    /// @throws InvalidInput for an index out of range or a bad cell size
    ClothContactFinder(const std::vector<int>& triangles, const std::vector<T>& reference, T cell)
        : m_vertices(static_cast<int>(reference.size() / 3)), m_cell(cell)
    {
        const int vertices = m_vertices;
        if (triangles.size() % 3 != 0)
            throw InvalidInput(
                detail::describe("triangle index list size", triangles.size(), "must be a multiple of 3"));
        for (const int i : triangles)
            if (i < 0 || i >= vertices) throw InvalidInput(detail::describe("triangle node", i, "out of range"));
        if (!(cell > T(0))) throw InvalidInput(detail::describe("collision cell size", cell, "must be positive"));
        m_triangles.assign(triangles.begin(), triangles.end());
        const std::vector<int> edges = mesh_edge_list(triangles);
        m_edges.assign(edges.begin(), edges.end());
        std::vector<T> lengths(edges.size() / 2);
        for (std::size_t e = 0; e < lengths.size(); ++e) {
            T sum = T(0);
            for (int k = 0; k < 3; ++k) {
                const T d = reference[3 * edges[2 * e + 1] + k] - reference[3 * edges[2 * e] + k];
                sum += d * d;
            }
            lengths[e] = sum;
        }
        m_edge_length_squared.assign(lengths.begin(), lengths.end());
    }

    int triangle_count() const { return static_cast<int>(m_triangles.size() / 3); }
    int edge_count() const { return static_cast<int>(m_edges.size() / 2); }
    T cell() const { return m_cell; }

    /// Every point–triangle pair, then every edge–edge pair, each part
    /// sorted, that may come closer than `reach` within a time τ from
    /// positions q moving at velocities v (3 per node): their boxes swept
    /// from q to q + τ v overlap (the point's grown by the reach, each edge's
    /// by half of it), and their distance at q is below reach + τ × the
    /// largest relative speed of a node of one primitive against a node of
    /// the other (a bound on the relative speed of any two of their points).
    /// With τ = 0, exactly the pairs closer than the reach.
    thrust::device_vector<ClothContactElement<T>> find(const thrust::device_vector<T>& q,
                                                       const thrust::device_vector<T>& v, T tau, T reach) const
    {
        using namespace cloth_collision_detail;
        thrust::device_vector<ClothContactElement<T>> out;
        if (m_triangles.empty()) return out;
        const Motion<T> motion{raw_pointer(q), raw_pointer(v), tau, 3};
        const int* tri = raw_pointer(m_triangles);
        const int* edges = raw_pointer(m_edges);
        const auto first = thrust::counting_iterator<int>(0);
        const int faces = triangle_count();
        thrust::device_vector<Aabb<T>> boxes(static_cast<std::size_t>(m_vertices + faces));
        thrust::transform(thrust::device, first, first + m_vertices + faces, boxes.begin(),
                          VertexTriangleBox<T>{motion, tri, m_vertices, reach});
        // Filtered in the grid's order; only what is kept is sorted.
        const thrust::device_vector<CandidatePair> vf =
            overlapping_pairs_in_grid_order<T>(boxes, grid_cell_for(boxes, m_cell));
        const thrust::device_vector<CandidatePair> ee =
            near_edge_pairs<T>(motion, m_edges, reach, m_cell, SharedNode{});
        thrust::device_vector<CandidatePair> near(vf.size());
        near.resize(static_cast<std::size_t>(thrust::copy_if(thrust::device, vf.begin(), vf.end(), near.begin(),
                                                             NearVertexTriangle<T>{motion, tri, m_vertices, reach}) -
                                             near.begin()));
        sort_pairs(near, m_vertices + faces);
        const auto vf_count = static_cast<std::ptrdiff_t>(near.size());
        out.resize(near.size() + ee.size());
        thrust::transform(thrust::device, near.begin(), near.end(), out.begin(),
                          VertexTriangleElement<T>{tri, m_vertices});
        thrust::transform(thrust::device, ee.begin(), ee.end(), out.begin() + vf_count,
                          EdgeEdgeElement<T>{edges, raw_pointer(m_edge_length_squared)});
        return out;
    }

    /// The triangle pairs (sharing no vertex) that intersect at q, sorted.
    thrust::device_vector<CandidatePair> intersections(const thrust::device_vector<T>& q) const
    {
        return find_intersecting_triangles<T>(q, m_triangles, m_cell);
    }

private:
    int m_vertices = 0;
    T m_cell = T(1);
    thrust::device_vector<int> m_triangles;  ///< 3 per triangle
    thrust::device_vector<int> m_edges;      ///< 2 per edge
    thrust::device_vector<T> m_edge_length_squared;
};

}  // namespace weft
