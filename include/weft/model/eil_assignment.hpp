#pragma once
/// @file eil_assignment.hpp
/// Per-step EoL/EIL node assignment of thesis Sec. 4.3.1 for every yarn of a
/// `YarnModel`, and the optional closed-form arc-length resets on switching
/// (thesis Eq. 4.4–4.7).
///
/// A node lies on up to two yarns (its u-yarn, coordinate 3, and its v-yarn,
/// coordinate 4) and is EoL or EIL separately on each: an EIL node keeps its
/// arc length on that yarn free, while its Lagrangian position *on that yarn*
/// is interpolated between the bracketing EoL nodes (thesis Eq. 4.3,
/// element/eil_terms.hpp). Stretch and bending are then defined between
/// consecutive EoL nodes only (thesis Sec. 4.3.2), and a stiff contact spring
/// ties the interpolated position to the partner yarn's position.
///
/// Layout (plain data, CSR over "slots"): yarn y owns the slots
/// [yarn_begin[y], yarn_begin[y+1]), one per entry of model.yarns[y]. Input
/// arrays (`node`, `arc_length`, `fixed`) are in the yarn's list order; output
/// arrays (`order`, `sorted_node`, `eil`, `eol_before`, `eol_after`, `weight`)
/// are in sorted order. The per-yarn routine `assign_eil_yarn` reads and
/// writes only its own slot range through raw pointers and allocates nothing,
/// so a backend can run it as one thrust::for_each over yarns.

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/types.hpp>
#include <weft/model/yarn_model.hpp>

namespace weft {

/// The pointers of one yarn's slot range (already offset to its first slot).
/// Inputs, list order (index k = position in model.yarns[y]):
///   node[k] node id, arc_length[k] its arc length on this yarn, fixed[k] 1
///   if that arc length is fixed (free_dof of the coordinate == 0).
/// In/out: order[i] a permutation of 0..count−1; on entry any permutation (the
///   previous step's order makes the sort O(count)), on exit sorted.
/// Outputs, sorted order (index i = position along the yarn):
///   sorted_node[i] = node[order[i]];
///   eil[i] 1 for an EIL node, 0 for EoL;
///   eol_before[i], eol_after[i] node ids of the nearest EoL nodes strictly
///   before / after slot i in sorted order (−1 if none): an EIL node's
///   brackets (a, b) of thesis Eq. (4.3); for an EoL node its neighbours in
///   the stretch/bending chain;
///   weight[i] t = (s − s_a)/(s_b − s_a) of thesis Eq. (4.3) for EIL nodes
///   (in [0, 1]), 0 for EoL nodes.
/// Optional inputs, list order (nullptr: none), for our additions to the
/// test in `assign_eil_yarn`: arc_rate[k] the node's ṡ on this yarn (for the
/// look-ahead); close[k] 1 to treat the node as closer than the safety
/// distance to the EoL node before it (a segment that collapsed in a trial
/// step, see yarn_stepper.hpp).
template <typename T>
struct EilYarnSlots {
    int count;
    const int* node;
    const T* arc_length;
    const unsigned char* fixed;
    int* order;
    int* sorted_node;
    unsigned char* eil;
    int* eol_before;
    int* eol_after;
    T* weight;
    const T* arc_rate = nullptr;
    const unsigned char* close = nullptr;
};

/// The sub-range [begin, end) of slots that span a whole model (count = all
/// slots): one yarn's view, as `assign_eil_yarn` takes it.
template <typename T>
WEFT_HD inline EilYarnSlots<T> slot_range(const EilYarnSlots<T>& all, int begin, int end)
{
    return {end - begin,
            all.node + begin,
            all.arc_length + begin,
            all.fixed + begin,
            all.order + begin,
            all.sorted_node + begin,
            all.eil + begin,
            all.eol_before + begin,
            all.eol_after + begin,
            all.weight + begin,
            all.arc_rate ? all.arc_rate + begin : nullptr,
            all.close ? all.close + begin : nullptr};
}

/// What the per-yarn assignment did.
struct EilYarnSummary {
    int eil_count;   ///< EIL nodes on this yarn
    int unresolved;  ///< consecutive EoL pairs left closer than the safety
                     ///< distance because neither node may become EIL (both
                     ///< fixed, or the yarn's first node against a fixed one)
};

/// EoL/EIL assignment of one yarn, thesis Sec. 4.3.1 (no allocation, no
/// exceptions; a plain function of node ids, arc lengths, fixed flags and the
/// safety distance).
///
/// 1. Sort by (arc length, node id): insertion sort of `order`, stable and
///    adaptive, O(count) when `order` holds the previous step's order; the
///    node-id tie-break makes the result independent of the initial order.
/// 2. Traverse: a node closer than `safety_distance` (in arc length) to the
///    last EoL node becomes EIL. A node whose arc length is fixed (a yarn end)
///    stays EoL and the last EoL node becomes EIL instead (thesis Sec. 4.3.1).
///    Our additions: the yarn's first and last nodes in sorted order are
///    always EoL, since an EIL node needs an EoL node on each side (the last
///    node is treated like a fixed one; the first can never be retired), and
///    a fixed node never becomes EIL. One retirement always suffices: if
///    s_last − s_prev ≥ d then s_i − s_prev > d.
/// Afterwards consecutive EoL nodes are ≥ safety_distance apart in arc length
/// except for the pairs counted in `unresolved`.
///
/// Our additions: with `lookahead` > 0 and `arc_rate` given, the gap between
/// two nodes is the smaller of the arc-length gap now and after `lookahead`
/// seconds at the current ṡ, so that a node closing in faster than d/h is
/// tagged before the step in which it would pass its neighbour; a node with
/// `close` set counts as closer than d.
template <typename T>
WEFT_HD inline EilYarnSummary assign_eil_yarn(const EilYarnSlots<T>& y, T safety_distance, T lookahead = T(0))
{
    EilYarnSummary summary{0, 0};
    const int n = y.count;
    auto precedes = [&](int a, int b) {
        const T sa = y.arc_length[a];
        const T sb = y.arc_length[b];
        return sa < sb || (sa == sb && y.node[a] < y.node[b]);
    };
    for (int i = 1; i < n; ++i) {
        const int key = y.order[i];
        int j = i - 1;
        while (j >= 0 && precedes(key, y.order[j])) {
            y.order[j + 1] = y.order[j];
            --j;
        }
        y.order[j + 1] = key;
    }
    for (int i = 0; i < n; ++i) {
        y.sorted_node[i] = y.node[y.order[i]];
        y.eil[i] = 0;
        y.weight[i] = T(0);
    }
    auto arc = [&](int i) { return y.arc_length[y.order[i]]; };
    const bool ahead = y.arc_rate != nullptr && lookahead > T(0);
    // Gap from sorted position j to i > j (thesis: the arc-length gap).
    auto gap = [&](int i, int j) {
        if (y.close != nullptr && y.close[y.order[i]]) return T(0);
        const T now = arc(i) - arc(j);
        if (!ahead) return now;
        const T later = now + lookahead * (y.arc_rate[y.order[i]] - y.arc_rate[y.order[j]]);
        return later < now ? later : now;
    };

    // thesis Sec. 4.3.1: traverse the sorted sequence, tagging EIL nodes.
    int last = 0;  // sorted position of the last EoL node
    for (int i = 1; i < n; ++i) {
        if (!(gap(i, last) < safety_distance)) {
            last = i;
            continue;
        }
        const bool keep_eol = y.fixed[y.order[i]] || i == n - 1;
        if (!keep_eol) {
            y.eil[i] = 1;
            continue;
        }
        if (last > 0 && !y.fixed[y.order[last]]) {
            y.eil[last] = 1;
            int prev = last - 1;
            while (y.eil[prev]) --prev;  // position 0 is always EoL
            last = prev;
        }
        if (gap(i, last) < safety_distance) ++summary.unresolved;
        last = i;
    }

    // Brackets and weights, thesis Eq. (4.3).
    int before = -1;
    for (int i = 0; i < n; ++i) {
        y.eol_before[i] = before >= 0 ? y.sorted_node[before] : -1;
        if (!y.eil[i]) before = i;
    }
    int after = -1;
    for (int i = n - 1; i >= 0; --i) {
        y.eol_after[i] = after >= 0 ? y.sorted_node[after] : -1;
        if (!y.eil[i]) {
            after = i;
            continue;
        }
        ++summary.eil_count;
        int a = i - 1;
        while (y.eil[a]) --a;
        const T span = arc(after) - arc(a);
        y.weight[i] = span > T(0) ? (arc(i) - arc(a)) / span : T(0);
    }
    return summary;
}

/// EoL/EIL assignment of a whole model (host side). The per-slot vectors are
/// the storage behind `EilYarnSlots`; see the file comment for the layout.
template <typename T>
struct EilAssignment {
    std::vector<int> yarn_begin;          ///< #yarns + 1 slot offsets
    std::vector<int> coordinate;          ///< per slot: 3 (u) or 4 (v), the yarn's coordinate
    std::vector<int> node;                ///< per slot, list order: model.yarns[y][k]
    std::vector<T> arc_length;            ///< per slot, list order: gathered from q by `assign_eil_nodes`
    std::vector<unsigned char> fixed;     ///< per slot, list order: free_dof of the coordinate == 0
    std::vector<T> arc_rate;              ///< per slot, list order: ṡ for the look-ahead (empty: none)
    std::vector<unsigned char> close;     ///< per slot, list order: counts as closer than d (empty: none)
    std::vector<int> order;               ///< per slot, sorted order: index k into the yarn's list
    std::vector<int> sorted_node;         ///< per slot, sorted order: node id
    std::vector<unsigned char> eil;       ///< per slot, sorted order: 1 EIL, 0 EoL
    std::vector<int> eol_before;          ///< per slot, sorted order: nearest EoL node before (−1)
    std::vector<int> eol_after;           ///< per slot, sorted order: nearest EoL node after (−1)
    std::vector<T> weight;                ///< per slot, sorted order: t of thesis Eq. (4.3), 0 for EoL
    std::vector<unsigned char> node_eil;  ///< 2 × #nodes: EIL on the u-yarn (2n), on the v-yarn (2n + 1)
    std::vector<EilYarnSummary> summary;  ///< per yarn

    int yarn_count() const { return static_cast<int>(yarn_begin.size()) - 1; }
    int slot_count() const { return static_cast<int>(node.size()); }

    /// The slot range of yarn y as the per-yarn routine sees it.
    EilYarnSlots<T> yarn_slots(int y)
    {
        const EilYarnSlots<T> all{slot_count(),
                                  node.data(),
                                  arc_length.data(),
                                  fixed.data(),
                                  order.data(),
                                  sorted_node.data(),
                                  eil.data(),
                                  eol_before.data(),
                                  eol_after.data(),
                                  weight.data(),
                                  arc_rate.empty() ? nullptr : arc_rate.data(),
                                  close.empty() ? nullptr : close.data()};
        return slot_range(all, yarn_begin[y], yarn_begin[y + 1]);
    }
};

/// Safety distance of thesis Sec. 4.3.1: `factor` (default 0.1) × the
/// rest-shape segment length. Host side, validated.
/// @throws InvalidInput naming the offending argument and its value
template <typename T>
inline T eil_safety_distance(T rest_segment_length, T factor = T(0.1))
{
    require_positive("rest_segment_length", rest_segment_length);
    require_positive("safety distance factor", factor);
    return factor * rest_segment_length;
}

/// Builds the slot layout of a model (host side, validated): every yarn's
/// coordinate is 3 or 4, node ids are in range, and no node appears twice
/// with the same coordinate. `order` starts as the identity (the woven
/// builder lists nodes in arc-length order). Run `assign_eil_nodes` next.
/// @throws InvalidInput naming the offending field and its value
template <typename T>
EilAssignment<T> make_eil_assignment(const YarnModel<T>& model)
{
    const int nodes = model.node_count();
    if (static_cast<int>(model.free_dof.size()) != yarn_node_dofs * nodes)
        throw InvalidInput(detail::describe("free_dof.size()", model.free_dof.size(), "must be 5 x #nodes"));
    if (model.yarn_coordinate.size() != model.yarns.size())
        throw InvalidInput(
            detail::describe("yarn_coordinate.size()", model.yarn_coordinate.size(), "must equal yarns.size()"));
    EilAssignment<T> a;
    a.yarn_begin.push_back(0);
    std::vector<unsigned char> seen(2 * static_cast<std::size_t>(nodes), 0);
    for (std::size_t y = 0; y < model.yarns.size(); ++y) {
        const int c = model.yarn_coordinate[y];
        if (c != 3 && c != 4) {
            const std::string field = "yarn_coordinate[" + std::to_string(y) + "]";
            throw InvalidInput(detail::describe(field.c_str(), c, "must be 3 (u) or 4 (v)"));
        }
        for (std::size_t k = 0; k < model.yarns[y].size(); ++k) {
            const int n = model.yarns[y][k];
            const std::string field = "yarns[" + std::to_string(y) + "][" + std::to_string(k) + "]";
            if (n < 0 || n >= nodes) throw InvalidInput(detail::describe(field.c_str(), n, "node index out of range"));
            unsigned char& s = seen[2 * static_cast<std::size_t>(n) + (c - 3)];
            if (s)
                throw InvalidInput(detail::describe(field.c_str(), n, "node already on a yarn with this coordinate"));
            s = 1;
            a.node.push_back(n);
            a.coordinate.push_back(c);
            a.order.push_back(static_cast<int>(k));
        }
        a.yarn_begin.push_back(static_cast<int>(a.node.size()));
    }
    const std::size_t slots = a.node.size();
    a.arc_length.assign(slots, T(0));
    a.fixed.assign(slots, 0);
    a.sorted_node.assign(a.node.begin(), a.node.end());
    a.eil.assign(slots, 0);
    a.eol_before.assign(slots, -1);
    a.eol_after.assign(slots, -1);
    a.weight.assign(slots, T(0));
    a.node_eil.assign(2 * static_cast<std::size_t>(nodes), 0);
    a.summary.assign(model.yarns.size(), EilYarnSummary{0, 0});
    return a;
}

/// One step's assignment for every yarn (host side): gathers arc lengths and
/// fixed flags from the model, runs `assign_eil_yarn` per yarn (warm-started
/// from the previous `order`), and scatters the per-node flags `node_eil`.
/// @param[in] model  the model `a` was made for (same yarns)
/// @param[in] safety_distance  d of thesis Sec. 4.3.1 (m), see `eil_safety_distance`
/// @param[in,out] a  from `make_eil_assignment`, or the previous step's assignment
/// @return the total number of EIL (yarn, node) slots
/// @throws InvalidInput for a bad safety distance, a non-finite arc length,
///         or an assignment made for another model
template <typename T>
int assign_eil_nodes(const YarnModel<T>& model, T safety_distance, EilAssignment<T>& a)
{
    require_positive("safety_distance", safety_distance);
    if (a.yarn_count() != static_cast<int>(model.yarns.size()) ||
        static_cast<int>(a.node_eil.size()) != 2 * model.node_count())
        throw InvalidInput(detail::describe("eil assignment yarn count", a.yarn_count(),
                                            "was made for another model (call make_eil_assignment)"));
    for (int slot = 0; slot < a.slot_count(); ++slot) {
        const int index = yarn_node_dofs * a.node[slot] + a.coordinate[slot];
        const T s = model.q[index];
        if (!std::isfinite(static_cast<double>(s))) {
            const std::string field =
                "q[" + std::to_string(index) + "] (arc length of node " + std::to_string(a.node[slot]) + ")";
            throw InvalidInput(detail::describe(field.c_str(), s, "must be a finite number"));
        }
        a.arc_length[slot] = s;
        a.fixed[slot] = model.free_dof[index] ? 0 : 1;
    }
    int total = 0;
    for (int y = 0; y < a.yarn_count(); ++y) {
        a.summary[y] = assign_eil_yarn<T>(a.yarn_slots(y), safety_distance);
        total += a.summary[y].eil_count;
    }
    std::fill(a.node_eil.begin(), a.node_eil.end(), static_cast<unsigned char>(0));
    for (int slot = 0; slot < a.slot_count(); ++slot)
        if (a.eil[slot]) a.node_eil[2 * static_cast<std::size_t>(a.sorted_node[slot]) + (a.coordinate[slot] - 3)] = 1;
    return total;
}

/// Stretch segments between consecutive EoL nodes (thesis Sec. 4.3.2), in
/// yarn order then sorted order. With no EIL node this is the woven
/// builder's `segments` list, element for element.
template <typename T>
std::vector<YarnSegment> eol_segments(const EilAssignment<T>& a)
{
    std::vector<YarnSegment> out;
    for (int slot = 0; slot < a.slot_count(); ++slot)
        if (!a.eil[slot] && a.eol_after[slot] >= 0)
            out.push_back({a.sorted_node[slot], a.eol_after[slot], a.coordinate[slot]});
    return out;
}

/// The EoL nodes one segment beyond an EIL slot's bracket on its yarn: the
/// nearest EoL node before eol_before[slot] and the nearest after
/// eol_after[slot] (−1 where the yarn's EoL chain ends), the outer nodes of
/// its `EilSpring` (element/eil_elements.hpp).
template <typename T>
std::pair<int, int> eol_beyond_bracket(const EilAssignment<T>& a, int slot)
{
    const auto upper = std::upper_bound(a.yarn_begin.begin(), a.yarn_begin.end(), slot);
    const int begin = *(upper - 1);
    const int end = *upper;
    std::pair<int, int> out{-1, -1};
    for (int k = slot - 1; k >= begin; --k)
        if (!a.eil[static_cast<std::size_t>(k)]) {
            out.first = a.eol_before[static_cast<std::size_t>(k)];
            break;
        }
    for (int k = slot + 1; k < end; ++k)
        if (!a.eil[static_cast<std::size_t>(k)]) {
            out.second = a.eol_after[static_cast<std::size_t>(k)];
            break;
        }
    return out;
}

/// Bending triples of consecutive EoL nodes (thesis Sec. 4.3.2); with no EIL
/// node this is the woven builder's `bends` list, element for element.
template <typename T>
std::vector<YarnBend> eol_bends(const EilAssignment<T>& a)
{
    std::vector<YarnBend> out;
    for (int slot = 0; slot < a.slot_count(); ++slot)
        if (!a.eil[slot] && a.eol_before[slot] >= 0 && a.eol_after[slot] >= 0)
            out.push_back({a.eol_before[slot], a.sorted_node[slot], a.eol_after[slot], a.coordinate[slot]});
    return out;
}

/// Arc length for a node switching from EIL to EoL, thesis Eq. (4.4): its
/// position jumps from x(s_b) to the partner's x_b, and the arc length that
/// makes stretch uniform across the new EoL node is
/// s_b = (|x_b − x_c| s_a + |x_a − x_b| s_c) / (|x_a − x_b| + |x_b − x_c|).
/// The thesis keeps x_b fixed and considers stretch only. Fallback when
/// x_a = x_b = x_c: `s_b` unchanged.
/// @param[in] x_a, s_a  the EoL node before; x_c, s_c the EoL node after
/// @param[in] x_b, s_b  the switching node's new position and current arc length
template <typename T>
WEFT_HD inline T eil_to_eol_arc_length(const Vec3<T>& x_a, T s_a, const Vec3<T>& x_b, T s_b, const Vec3<T>& x_c, T s_c)
{
    const T l_ab = (x_a - x_b).norm();
    const T l_bc = (x_b - x_c).norm();
    const T sum = l_ab + l_bc;
    if (!(sum > T(0))) return s_b;
    // thesis Eq. (4.4)
    return (l_bc * s_a + l_ab * s_c) / sum;
}

/// Arc length for a node switching from EoL to EIL, thesis Eq. (4.5): the
/// interpolated x(s_b) is placed at the point of segment [x_a, x_c] closest to
/// the partner x_b, which zeroes as much of the new contact spring as the
/// interpolation allows. The thesis prints max(·, u_c); read literally that
/// is always ≥ u_c, so we take the clamp to [s_a, s_c] the text describes
/// ("the closest point ... along the segment"). Fallback when x_a = x_c (every
/// s gives the same x): `s_b` unchanged.
template <typename T>
WEFT_HD inline T eol_to_eil_arc_length(const Vec3<T>& x_a, T s_a, const Vec3<T>& x_b, T s_b, const Vec3<T>& x_c, T s_c)
{
    const Vec3<T> ac = x_a - x_c;
    const T denominator = ac.squaredNorm();
    if (!(denominator > T(0))) return s_b;
    // thesis Eq. (4.5): ((x_a−x_c)ᵀ(x_b−x_c) s_a + (x_a−x_c)ᵀ(x_a−x_b) s_c) / |x_a−x_c|²
    const T s = (ac.dot(x_b - x_c) * s_a + ac.dot(x_a - x_b) * s_c) / denominator;
    const T lo = s_a < s_c ? s_a : s_c;
    const T hi = s_a < s_c ? s_c : s_a;
    return s < lo ? lo : (s > hi ? hi : s);
}

/// Eq. (4.5) under uniform stretch, thesis Eq. (4.6–4.7): a function of the
/// arc lengths and of the angle θ between (x_a − x_b) and (x_b − x_c) alone,
/// w_a = (s_b−s_c)² + (s_a−s_b)(s_b−s_c) cos θ,
/// w_c = (s_a−s_b)² + (s_a−s_b)(s_b−s_c) cos θ, s_b ← (w_a s_a + w_c s_c)/(w_a + w_c),
/// clamped to [s_a, s_c] as in `eol_to_eil_arc_length`. At θ = 0 (straight
/// yarn) it returns s_b unchanged, the choice the thesis made in practice.
/// Fallback when w_a + w_c = 0 (a fold, θ = π with equal halves): s_b.
template <typename T>
WEFT_HD inline T eol_to_eil_arc_length_uniform_stretch(T s_a, T s_b, T s_c, T cos_theta)
{
    const T p = s_a - s_b;
    const T q = s_b - s_c;
    // thesis Eq. (4.7)
    const T w_a = q * q + p * q * cos_theta;
    const T w_c = p * p + p * q * cos_theta;
    const T sum = w_a + w_c;
    if (!(sum > T(0))) return s_b;
    // thesis Eq. (4.6)
    const T s = (w_a * s_a + w_c * s_c) / sum;
    const T lo = s_a < s_c ? s_a : s_c;
    const T hi = s_a < s_c ? s_c : s_a;
    return s < lo ? lo : (s > hi ? hi : s);
}

}  // namespace weft
