#pragma once
/// @file yarn_collision.hpp
/// Yarn–yarn contact pairs on the backend (docs/collision.md): the pairs of
/// a yarn model's current EoL segments that may come closer than a reach
/// within a step, found by the sorted-grid broad phase over the segments'
/// swept boxes (`near_edge_pairs`, cloth_collision.hpp, the same code as
/// triangle cloth's edge–edge pairs) on the x part of the 5-DoF nodes. One
/// source for CUDA and CPU threads; the result is sorted.
///
/// Which pairs are not contacts: a yarn's neighbouring segments, the two
/// yarns through a crossing or a persistent contact node, and the segments
/// of neighbouring yarns in a weave, which the fabric's own elements
/// (stretch, shear, parallel-yarn contact) keep apart. A pair is excluded
/// when one segment's end node equals or neighbours one of the other's: two
/// nodes are neighbours when a segment of the model's initial topology or
/// of the current one joins them, or an EIL spring ties one to the other's
/// segment (the EIL node and the ends of the segment it is interpolated
/// on; a segment through an EIL node keeps the exclusions of the two it
/// replaces). So the segments around a crossing (one node apart) and the
/// parallel yarns next to each other in a weave (joined by the crossing
/// yarn's segment) are excluded, and pairs two crossings apart or more, or
/// of different cloths, are contacts. With a thickness, segments closer
/// along their yarns than it are excluded too (`CloseAlongYarns`): sliding
/// contacts leave segments shorter than the thickness, which links that
/// count nodes do not cover.

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/remove.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include <weft/backend/cloth_collision.hpp>
#include <weft/core/error.hpp>
#include <weft/element/eil_elements.hpp>
#include <weft/element/yarn_element_types.hpp>
#include <weft/model/yarn_model.hpp>

namespace weft {

namespace yarn_collision_detail {

/// Excludes segment pairs that share a node or whose end nodes are
/// neighbours (per node a sorted list, compressed rows).
struct NeighbourNodes {
    const int* offsets;  ///< #nodes + 1
    const int* nodes;
    WEFT_HD bool adjacent(int a, int b) const
    {
        int lo = offsets[a], hi = offsets[a + 1];
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (nodes[mid] < b)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo < offsets[a + 1] && nodes[lo] == b;
    }
    WEFT_HD bool operator()(int a0, int a1, int b0, int b1) const
    {
        return a0 == b0 || a0 == b1 || a1 == b0 || a1 == b1 || adjacent(a0, b0) || adjacent(a0, b1) ||
               adjacent(a1, b0) || adjacent(a1, b1);
    }
};

/// A segment pair as a contact element (`ClothContactKind::segment_pair`:
/// the closest points, blended with the middle of the overlap for nearly
/// parallel segments, so that parallel yarns lying on each other get a
/// force that is continuous in their positions). Two segments of different
/// levels of one stack of layers (`stack`, `level` per segment; null: no
/// stacks) get the offset thickness × (level_b − level_a) × n on the second
/// segment, with n the unit sum of the four end nodes' `normals`: measured
/// so, the upper layer lies a thickness per level above the lower one, as
/// the contact nodes that join them do not (docs/collision.md, "Stacked
/// layers"). Where n is undefined (no end node with a normal) the offset
/// stays zero. A pair whose segments' sin² at q lies below `parallel_sine2`
/// is a `parallel_segment_pair` (its end points' parts) instead.
template <typename T>
struct SegmentPairElement {
    const int* edges;
    const int* stack;
    const int* level;
    const T* normals;  ///< 3 per node (zero: none)
    T thickness;
    const T* q;        ///< yarn_node_dofs per node, positions first
    T parallel_sine2;  ///< 0: no pair is parallel
    WEFT_HD ClothContactElement<T> operator()(const CandidatePair& p) const
    {
        ClothContactElement<T> e{{edges[2 * p.a], edges[2 * p.a + 1], edges[2 * p.b], edges[2 * p.b + 1]},
                                 int(ClothContactKind::segment_pair),
                                 T(0)};
        if (parallel_sine2 > T(0)) {
            const Vec3<T> u = cloth_collision_detail::node_position(q, e.nodes[1], yarn_node_dofs) -
                              cloth_collision_detail::node_position(q, e.nodes[0], yarn_node_dofs);
            const Vec3<T> w = cloth_collision_detail::node_position(q, e.nodes[3], yarn_node_dofs) -
                              cloth_collision_detail::node_position(q, e.nodes[2], yarn_node_dofs);
            if (segment_sine2<T>(u, w) < parallel_sine2) e.kind = int(ClothContactKind::parallel_segment_pair);
        }
        if (!stack || stack[p.a] < 0 || stack[p.a] != stack[p.b] || level[p.a] == level[p.b]) return e;
        Vec3<T> n = Vec3<T>::Zero();
        for (int k = 0; k < 4; ++k)
            n += Vec3<T>(normals[3 * e.nodes[k]], normals[3 * e.nodes[k] + 1], normals[3 * e.nodes[k] + 2]);
        const T length = n.norm();
        if (!(length > T(0))) return e;
        const T scale = thickness * T(level[p.b] - level[p.a]) / length;
        for (int d = 0; d < 3; ++d) e.offset[d] = scale * n(d);
        return e;
    }
};

/// Excludes a candidate pair of segments whose fabric segments (the ends
/// of the segments of one fabric that contacts with another cut them from,
/// YarnContactFinder::set_segments) are excluded.
struct FabricExcluded {
    const int* parents;  ///< 2 per segment
    NeighbourNodes excluded;
    WEFT_HD bool operator()(const CandidatePair& p) const
    {
        return excluded(parents[2 * p.a], parents[2 * p.a + 1], parents[2 * p.b], parents[2 * p.b + 1]);
    }
};

/// Excludes a candidate pair of segments that lie closer than `limit`
/// along their yarns (arc length, the node's u or v): two segments of one
/// yarn with a gap below the limit between them, or segments of two yarns
/// through a common node (`junctions`: a crossing, or a contact joining
/// two layers), each within the limit of that node. Such segments touch
/// where the yarns' own elements (stretch, bending, the crossing) hold
/// them; the neighbour links above miss them once sliding contacts leave
/// segments shorter than the thickness.
template <typename T>
struct CloseAlongYarns {
    const T* q;
    const int* edges;       ///< 2 per segment
    const int* coordinate;  ///< per segment: 3 (u) or 4 (v)
    const int* yarn;        ///< per segment: its yarn (the connected segments of one coordinate)
    const int* junction_u;  ///< per junction, sorted by (u-yarn, v-yarn)
    const int* junction_v;
    const int* junction_node;
    int junctions;
    T limit;
    WEFT_HD static T outside(T s, T lo, T hi) { return s < lo ? lo - s : (s > hi ? s - hi : T(0)); }
    WEFT_HD bool operator()(const CandidatePair& p) const
    {
        const int ca = coordinate[p.a], cb = coordinate[p.b];
        const T a0 = q[yarn_node_dofs * edges[2 * p.a] + ca], a1 = q[yarn_node_dofs * edges[2 * p.a + 1] + ca];
        const T b0 = q[yarn_node_dofs * edges[2 * p.b] + cb], b1 = q[yarn_node_dofs * edges[2 * p.b + 1] + cb];
        const T lo_a = a0 < a1 ? a0 : a1, hi_a = a0 < a1 ? a1 : a0;
        const T lo_b = b0 < b1 ? b0 : b1, hi_b = b0 < b1 ? b1 : b0;
        if (yarn[p.a] == yarn[p.b]) return (lo_a > lo_b ? lo_a : lo_b) - (hi_a < hi_b ? hi_a : hi_b) < limit;
        if (ca == cb) return false;
        const int yu = ca == 3 ? yarn[p.a] : yarn[p.b], yv = ca == 3 ? yarn[p.b] : yarn[p.a];
        int lo = 0, hi = junctions;
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (junction_u[mid] < yu || (junction_u[mid] == yu && junction_v[mid] < yv))
                lo = mid + 1;
            else
                hi = mid;
        }
        for (int k = lo; k < junctions && junction_u[k] == yu && junction_v[k] == yv; ++k) {
            const int c = junction_node[k];
            if (outside(q[yarn_node_dofs * c + ca], lo_a, hi_a) < limit &&
                outside(q[yarn_node_dofs * c + cb], lo_b, hi_b) < limit)
                return true;
        }
        return false;
    }
};

/// Excludes a candidate pair of segments on two levels of one stack of
/// layers when one of them ends at a contact between those two layers, or
/// passes through one that is EIL on its yarn (`joined`: two per segment,
/// the levels its contacts join the segment's layer to, −1 none; see
/// YarnContactFinder::set_segment_layers): the persistent contacts keep the layers
/// apart where they join them (thesis Sec. 4.4), as the two yarns through
/// one contact are no pair. Collision between the layers acts where no
/// contact joins them: beyond a layer's edge, or where contacts were removed.
struct JoinedLayers {
    const int* stack;
    const int* level;
    const int* joined;
    WEFT_HD bool operator()(const CandidatePair& p) const
    {
        if (stack[p.a] < 0 || stack[p.a] != stack[p.b] || level[p.a] == level[p.b]) return false;
        return joined[2 * p.a] == level[p.b] || joined[2 * p.a + 1] == level[p.b] || joined[2 * p.b] == level[p.a] ||
               joined[2 * p.b + 1] == level[p.a];
    }
};

/// The yarn finder's exclusions of a pair of segments, each where it
/// applies: layers joined at a segment's end (JoinedLayers), fabric
/// segments excluded (FabricExcluded) and segments close along their yarns
/// (CloseAlongYarns). Each tests the pair alone, so one pass applies them
/// all, in any order; the cheapest go first.
template <typename T>
struct SegmentPairExcluded {
    bool fabric;
    FabricExcluded fabric_excluded;
    bool along;
    CloseAlongYarns<T> close_along;
    bool stacked;
    JoinedLayers joined;
    WEFT_HD bool operator()(const CandidatePair& p) const
    {
        return (stacked && joined(p)) || (fabric && fabric_excluded(p)) || (along && close_along(p));
    }
};

/// A node's unit normal to its fabric, t_u × t_v with t_u and t_v the sums
/// of its u- and v-chords (each from the node earlier in arc length to the
/// later one: the segments ending at the node, and where the node is EIL on
/// a yarn the segment between its spring's EoL nodes): for stacked patches
/// (model/layers.hpp) it points from the bottom layer to the top one, as in
/// `layer_contact_normal_force`. Zero where the node lies on one yarn only
/// or the tangents are parallel.
template <typename T>
struct NodeNormal {
    const T* q;
    const int* edges;       ///< 2 per chord
    const int* coordinate;  ///< per chord: 3 (u) or 4 (v)
    const int* incident;    ///< 4 per node: the chords it lies on (−1: none)
    T* normals;
    WEFT_HD void operator()(int node) const
    {
        using cloth_collision_detail::node_position;
        Vec3<T> t[2] = {Vec3<T>::Zero(), Vec3<T>::Zero()};
        for (int k = 0; k < 4; ++k) {
            const int s = incident[4 * node + k];
            if (s < 0) continue;
            t[coordinate[s] == 3 ? 0 : 1] +=
                node_position(q, edges[2 * s + 1], yarn_node_dofs) - node_position(q, edges[2 * s], yarn_node_dofs);
        }
        Vec3<T> n = t[0].cross(t[1]);
        const T length = n.norm();
        using std::sqrt;
        if (length > T(1e-12) * sqrt(t[0].squaredNorm() * t[1].squaredNorm()) && length > T(0))
            n /= length;
        else
            n.setZero();
        for (int d = 0; d < 3; ++d) normals[3 * node + d] = n(d);
    }
};

/// True for a pair whose (offset) segments stay farther apart than the
/// reach plus τ × the largest relative speed of their nodes: the broad
/// phase tested them, without their offset, against a larger reach.
template <typename T>
struct BeyondReach {
    cloth_collision_detail::Motion<T> motion;
    T reach;
    WEFT_HD bool operator()(const ClothContactElement<T>& e) const
    {
        using cloth_collision_detail::contact_node_position;
        const int n = motion.stride;
        const T limit = reach + motion.tau * cloth_collision_detail::relative_speed_bound<T>(motion.v, e.nodes, 2, n);
        return !(closest_segment_segment<T>(
                     contact_node_position(motion.q, e, 0, n), contact_node_position(motion.q, e, 1, n),
                     contact_node_position(motion.q, e, 2, n), contact_node_position(motion.q, e, 3, n))
                     .distance_squared < limit * limit);
    }
};

/// The closest points' difference of segments a0–a1 and b0–b1 at x
/// (`stride` DoFs per node), its square norm, and whether both closest
/// points lie inside their segments.
template <typename T>
WEFT_HD inline Vec3<T> closest_difference(const T* x, const ClothContactElement<T>& pair, int stride, T& squared,
                                          bool& interior)
{
    using cloth_collision_detail::contact_node_position;
    const Vec3<T> a0 = contact_node_position(x, pair, 0, stride), a1 = contact_node_position(x, pair, 1, stride),
                  b0 = contact_node_position(x, pair, 2, stride), b1 = contact_node_position(x, pair, 3, stride);
    const SegmentPairClosest<T> p = closest_segment_segment<T>(a0, a1, b0, b1);
    squared = p.distance_squared;
    interior = p.s > T(0) && p.s < T(1) && p.t > T(0) && p.t < T(1);
    return Vec3<T>(a0 + p.s * (a1 - a0) - b0 - p.t * (b1 - b0));
}

/// 1 for a contact pair that passed through each other within the step:
/// the closest points' difference reversed its direction (x_end · x_start
/// < 0) while one of the two distances was below the thickness, or while
/// the closest points lay inside both segments at the start and at the end
/// (a pass at any speed; a segment moving round another's end turns x with
/// its closest point at that end).
template <typename T>
struct PassedThrough {
    const T* q;
    const T* q_start;
    int stride;
    T thickness;
    WEFT_HD int operator()(const ClothContactElement<T>& c) const
    {
        T d0 = T(0), d1 = T(0);
        bool inside0 = false, inside1 = false;
        const Vec3<T> x0 = closest_difference<T>(q_start, c, stride, d0, inside0);
        const Vec3<T> x1 = closest_difference<T>(q, c, stride, d1, inside1);
        const T r2 = thickness * thickness;
        return x0.dot(x1) < T(0) && (d0 < r2 || d1 < r2 || (inside0 && inside1)) ? 1 : 0;
    }
};

}  // namespace yarn_collision_detail

/// The broad phase's cell size for a yarn model: two mean segment lengths
/// (the sweet spot measured in docs/collision.md), at least the thickness.
template <typename T>
inline T yarn_collision_cell(const YarnModel<T>& model)
{
    const T mean = yarn_segment_lengths(model).second;
    const T cell = T(2) * mean;
    return cell > model.collision.thickness ? cell : model.collision.thickness;
}

/// Finds the yarn–yarn contact pairs of one yarn model.
template <typename T>
class YarnContactFinder {
public:
    YarnContactFinder() = default;

    /// @param[in] nodes  the model's node count
    /// @param[in] cell   the broad phase's cell size (about two segment lengths)
    /// @param[in] thickness  the collision thickness: the offset per level
    ///            between stacked layers (`set_layers`)
    /// @throws InvalidInput for a bad cell size or thickness
    YarnContactFinder(int nodes, T cell, T thickness = T(0)) : m_nodes(nodes), m_cell(cell), m_thickness(thickness)
    {
        if (!(cell > T(0))) throw InvalidInput(detail::describe("yarn collision cell size", cell, "must be positive"));
        if (!(thickness >= T(0)))
            throw InvalidInput(detail::describe("yarn collision thickness", thickness, "must be non-negative"));
    }

    /// Stacked layers (YarnModel::yarn_layer): each node's u- and v-yarn's
    /// place, from the model's yarn lists. Without stacks (or before this
    /// call) no pair gets an offset. Call before `set_segments`.
    /// @throws InvalidInput for yarn lists that do not match the model
    void set_layers(const YarnModel<T>& model)
    {
        m_node_place.clear();
        m_largest_offset = T(0);
        const bool stacked = std::any_of(model.yarn_layer.begin(), model.yarn_layer.end(),
                                         [](const YarnLayerPlace& p) { return p.stack >= 0; });
        if (!stacked) return;
        if (model.yarn_coordinate.size() != model.yarns.size())
            throw InvalidInput(
                detail::describe("yarn_coordinate.size()", model.yarn_coordinate.size(), "must equal yarns.size()"));
        m_node_place.assign(2 * static_cast<std::size_t>(m_nodes), YarnLayerPlace{});
        for (std::size_t y = 0; y < model.yarns.size() && y < model.yarn_layer.size(); ++y)
            for (int n : model.yarns[y]) {
                if (n < 0 || n >= m_nodes)
                    throw InvalidInput(detail::describe("yarn collision node", n, "out of range"));
                m_node_place[2 * static_cast<std::size_t>(n) + (model.yarn_coordinate[y] == 3 ? 0 : 1)] =
                    model.yarn_layer[y];
            }
        int lowest = 0, highest = 0;
        for (const YarnLayerPlace& p : model.yarn_layer)
            if (p.stack >= 0) {
                lowest = std::min(lowest, p.level);
                highest = std::max(highest, p.level);
            }
        m_largest_offset = m_thickness * T(highest - lowest);
    }

    /// The segments to test and the node links that exclude pairs
    /// (yarn_collision.hpp): the links of `initial` (the model's first
    /// segments), of `segments` (the current ones) and of the EIL springs.
    /// `fabric`: the segments between a fabric's consecutive crossings on a
    /// yarn across contacts with another fabric (`fabric_pairs`, the EIL
    /// lists' `fabric`). A segment that such contacts cut out of one of them
    /// keeps that fabric segment's exclusions too: a pair is also excluded
    /// when the fabric segments of its two segments are (joined as links).
    /// Without it, the halves of two fabric segments that meet at a crossing
    /// would be contacts, √½ spacing apart in a stack at rest. The two
    /// crossings of each fabric pair are linked as well, whether or not a
    /// chain of current segments joins them: a crossing EIL on a yarn ends
    /// no segment of it, so the chain from or through it breaks and its
    /// cut segments keep their own ends; without the link the yarns through
    /// two neighbouring crossings were no longer neighbours there. On
    /// tablecloth_three.json with collision such pairs of neighbouring
    /// parallel yarns of one fabric were most of the active pairs (438 of
    /// 717 at one attempt) in the steps before the one that took 8
    /// halvings (docs/collision.md, "Neighbouring yarns at EIL crossings").
    /// @throws InvalidInput for a node out of range
    void set_segments(const std::vector<YarnSegment>& initial, const std::vector<YarnSegment>& segments,
                      const std::vector<EilSpring>& springs, const std::vector<EilPairSpring>& pairs,
                      const std::vector<YarnParallelPair>& fabric = {})
    {
        std::vector<std::pair<int, int>> links;
        const auto link = [&](int a, int b) {
            if (a < 0 || b < 0) return;
            if (a >= m_nodes || b >= m_nodes)
                throw InvalidInput(detail::describe("yarn collision node", std::max(a, b), "out of range"));
            links.emplace_back(a, b);
            links.emplace_back(b, a);
        };
        for (const YarnSegment& s : initial) link(s.node0, s.node1);
        for (const YarnSegment& s : segments) link(s.node0, s.node1);
        for (const YarnParallelPair& f : fabric) link(f.node0, f.node1);
        // An EIL node X lies inside the segment of its EIL yarn between its
        // spring's EoL nodes, or past one of them in the neighbouring
        // segment (EilSpring::outer_before, outer_after). That segment takes
        // the exclusions of the two it would be split into at X: X and each
        // node linked to X so far (its neighbours on its yarns) are linked
        // to all four ends. Without it, a segment ending next to X on X's
        // other yarn would pair with the segment passing through X, closer
        // than the thickness in one fabric. A node EIL on both yarns (a pair
        // spring, or a spring on each) ends no segment: the segments of its
        // two yarns that pass through it cross there, as the two yarns
        // through any crossing do, and are no pair, so every node of its
        // u-yarn's side is linked to every one of its v-yarn's side as well.
        std::vector<std::vector<int>> adjacent(static_cast<std::size_t>(m_nodes));
        for (const auto& l : links) adjacent[static_cast<std::size_t>(l.first)].push_back(l.second);
        std::map<int, std::array<std::vector<int>, 2>> sides;
        const auto add_side = [&](int node, int coordinate, std::initializer_list<int> ends) {
            if (node < 0 || node >= m_nodes)
                throw InvalidInput(detail::describe("yarn collision node", node, "out of range"));
            std::vector<int>& side = sides[node][coordinate == 3 ? 0 : 1];
            for (int n : ends) {
                if (n < 0) continue;
                link(node, n);
                for (int m : adjacent[static_cast<std::size_t>(node)]) link(m, n);
                side.push_back(n);
            }
        };
        for (const EilSpring& s : springs)
            add_side(s.node, s.coordinate, {s.before, s.after, s.outer_before, s.outer_after});
        for (const EilPairSpring& p : pairs)
            for (int k = 0; k < 2; ++k)
                add_side(p.node, 3 + k, {p.before[k], p.after[k], p.outer_before[k], p.outer_after[k]});
        for (const auto& entry : sides)
            for (int a : entry.second[0])
                for (int b : entry.second[1]) link(a, b);
        // A segment's fabric segment is a fabric pair, whose ends are linked above.
        const std::vector<int> parents = fabric_segment_ends(segments, fabric);
        m_has_parents = false;
        for (std::size_t k = 0; k < segments.size() && !m_has_parents; ++k)
            m_has_parents = parents[2 * k] != segments[k].node0 || parents[2 * k + 1] != segments[k].node1;
        m_parent_edges.assign(parents.begin(), parents.end());
        std::sort(links.begin(), links.end());
        links.erase(std::unique(links.begin(), links.end()), links.end());
        std::vector<int> offsets(static_cast<std::size_t>(m_nodes) + 1, 0), neighbours;
        neighbours.reserve(links.size());
        for (const auto& l : links) {
            ++offsets[static_cast<std::size_t>(l.first) + 1];
            neighbours.push_back(l.second);
        }
        for (std::size_t n = 1; n < offsets.size(); ++n) offsets[n] += offsets[n - 1];
        m_offsets.assign(offsets.begin(), offsets.end());
        m_neighbours.assign(neighbours.begin(), neighbours.end());
        std::vector<int> edges;
        edges.reserve(2 * segments.size());
        for (const YarnSegment& s : segments) {
            edges.push_back(s.node0);
            edges.push_back(s.node1);
        }
        m_edges.assign(edges.begin(), edges.end());
        set_yarns(segments, springs, pairs);
        set_segment_layers(segments, springs, pairs);
    }

    /// Per segment, the ends of the fabric segment it lies in (2 each): the
    /// `fabric` pair whose chain of segments (same coordinate, each starting
    /// where the last ended) contains it; its own ends otherwise.
    static std::vector<int> fabric_segment_ends(const std::vector<YarnSegment>& segments,
                                                const std::vector<YarnParallelPair>& fabric)
    {
        std::vector<int> out;
        out.reserve(2 * segments.size());
        for (const YarnSegment& s : segments) {
            out.push_back(s.node0);
            out.push_back(s.node1);
        }
        if (fabric.empty()) return out;
        std::map<std::pair<int, int>, std::size_t> starting;  // (node0, coordinate) → segment
        for (std::size_t k = 0; k < segments.size(); ++k) starting[{segments[k].node0, segments[k].coordinate}] = k;
        std::vector<std::size_t> chain;
        for (const YarnParallelPair& f : fabric) {
            chain.clear();
            int at = f.node0;
            while (at != f.node1 && chain.size() <= segments.size()) {
                const auto it = starting.find({at, f.coordinate});
                if (it == starting.end()) break;
                chain.push_back(it->second);
                at = segments[it->second].node1;
            }
            if (at != f.node1 || chain.size() < 2) continue;
            for (std::size_t k : chain) {
                out[2 * k] = f.node0;
                out[2 * k + 1] = f.node1;
            }
        }
        return out;
    }

    int segment_count() const { return static_cast<int>(m_edges.size() / 2); }
    T cell() const { return m_cell; }

    /// Pairs whose segments lie within `angle` (radians, below π/2) of
    /// parallel where `find` finds them become parallel segment pairs
    /// (ClothCollision::parallel_angle); 0: none.
    void set_parallel_angle(T angle)
    {
        using std::sin;
        const T sine = sin(angle);
        m_parallel_sine2 = angle > T(0) ? sine * sine : T(0);
    }

    /// The segment pairs, not excluded, that may come closer than `reach`
    /// within a time τ from positions q moving at velocities v (5 DoFs per
    /// node, x first), sorted: as ClothContactFinder's edge–edge pairs.
    thrust::device_vector<ClothContactElement<T>> find(const thrust::device_vector<T>& q,
                                                       const thrust::device_vector<T>& v, T tau, T reach) const
    {
        const cloth_collision_detail::Motion<T> motion{raw_pointer(q), raw_pointer(v), tau, yarn_node_dofs};
        // Between stacked layers the broad phase reaches as far as the
        // largest offset further; the offset pairs are then tested again.
        // The pair exclusions are tested in near_edge_pairs' own pass,
        // before the distance.
        const yarn_collision_detail::SegmentPairExcluded<T> pair_excluded{
            m_has_parents,
            yarn_collision_detail::FabricExcluded{raw_pointer(m_parent_edges), exclusion()},
            m_thickness > T(0) && !m_segment_yarn.empty(),
            yarn_collision_detail::CloseAlongYarns<T>{
                raw_pointer(q), raw_pointer(m_edges), raw_pointer(m_segment_coordinate), raw_pointer(m_segment_yarn),
                raw_pointer(m_junction_u), raw_pointer(m_junction_v), raw_pointer(m_junction_node),
                static_cast<int>(m_junction_node.size()), m_thickness},
            !m_segment_stack.empty(),
            yarn_collision_detail::JoinedLayers{raw_pointer(m_segment_stack), raw_pointer(m_segment_level),
                                                raw_pointer(m_segment_joined)}};
        thrust::device_vector<CandidatePair> near =
            near_edge_pairs<T>(motion, m_edges, reach + m_largest_offset, m_cell, exclusion(), pair_excluded);
        thrust::device_vector<ClothContactElement<T>> out(near.size());
        if (m_segment_stack.empty()) {
            thrust::transform(
                thrust::device, near.begin(), near.end(), out.begin(),
                yarn_collision_detail::SegmentPairElement<T>{raw_pointer(m_edges), nullptr, nullptr, nullptr, T(0),
                                                             raw_pointer(q), m_parallel_sine2});
            return out;
        }
        // Stacked layers: no pair between two layers that a contact at one
        // of its segments' ends joins (JoinedLayers, above); the others
        // between levels with their offsets, and only those within reach
        // once offset.
        m_normals.resize(3 * static_cast<std::size_t>(m_nodes));
        const auto first = thrust::counting_iterator<int>(0);
        thrust::for_each(
            thrust::device, first, first + m_nodes,
            yarn_collision_detail::NodeNormal<T>{raw_pointer(q), raw_pointer(m_chords), raw_pointer(m_coordinate),
                                                 raw_pointer(m_incident), raw_pointer(m_normals)});
        thrust::transform(thrust::device, near.begin(), near.end(), out.begin(),
                          yarn_collision_detail::SegmentPairElement<T>{
                              raw_pointer(m_edges), raw_pointer(m_segment_stack), raw_pointer(m_segment_level),
                              raw_pointer(m_normals), m_thickness, raw_pointer(q), m_parallel_sine2});
        const auto end = thrust::remove_if(thrust::device, out.begin(), out.end(),
                                           yarn_collision_detail::BeyondReach<T>{motion, reach});
        out.resize(static_cast<std::size_t>(end - out.begin()));
        return out;
    }

    /// The node normals of the last `find` among stacked layers (3 per node;
    /// empty without stacks).
    std::vector<T> normals() const { return to_host(m_normals); }

    /// Whether the segments of nodes a0–a1 and b0–b1 are excluded (tests).
    bool excluded(int a0, int a1, int b0, int b1) const
    {
        const std::vector<int> offsets = to_host(m_offsets), nodes = to_host(m_neighbours);
        return yarn_collision_detail::NeighbourNodes{offsets.data(), nodes.data()}(a0, a1, b0, b1);
    }

private:
    yarn_collision_detail::NeighbourNodes exclusion() const
    {
        return {raw_pointer(m_offsets), raw_pointer(m_neighbours)};
    }

    /// Per segment its yarn (the segments of one coordinate that chain
    /// through shared end nodes; an EIL node ends none, so a yarn stays
    /// one chain), and the junctions: the nodes on a u-yarn and a v-yarn
    /// (as a segment end or EIL on it), sorted by (u-yarn, v-yarn), for
    /// CloseAlongYarns.
    void set_yarns(const std::vector<YarnSegment>& segments, const std::vector<EilSpring>& springs,
                   const std::vector<EilPairSpring>& pairs)
    {
        std::vector<int> root(2 * static_cast<std::size_t>(m_nodes));
        for (std::size_t i = 0; i < root.size(); ++i) root[i] = static_cast<int>(i);
        const auto root_of = [&](int i) {
            while (root[static_cast<std::size_t>(i)] != i) {
                root[static_cast<std::size_t>(i)] = root[static_cast<std::size_t>(root[static_cast<std::size_t>(i)])];
                i = root[static_cast<std::size_t>(i)];
            }
            return i;
        };
        const auto slot = [](int node, int coordinate) { return 2 * node + (coordinate == 3 ? 0 : 1); };
        for (const YarnSegment& s : segments) {
            const int a = root_of(slot(s.node0, s.coordinate)), b = root_of(slot(s.node1, s.coordinate));
            if (a != b) root[static_cast<std::size_t>(a)] = b;
        }
        std::vector<int> yarn, coordinate, on(2 * static_cast<std::size_t>(m_nodes), -1);
        for (const YarnSegment& s : segments) {
            yarn.push_back(root_of(slot(s.node0, s.coordinate)));
            coordinate.push_back(s.coordinate);
            for (int n : {s.node0, s.node1}) on[static_cast<std::size_t>(slot(n, s.coordinate))] = yarn.back();
        }
        for (const EilSpring& s : springs)
            on[static_cast<std::size_t>(slot(s.node, s.coordinate))] = root_of(slot(s.before, s.coordinate));
        for (const EilPairSpring& p : pairs)
            for (int k = 0; k < 2; ++k)
                on[static_cast<std::size_t>(slot(p.node, 3 + k))] = root_of(slot(p.before[k], 3 + k));
        std::vector<std::array<int, 3>> junctions;
        for (int n = 0; n < m_nodes; ++n) {
            const int u = on[static_cast<std::size_t>(slot(n, 3))], v = on[static_cast<std::size_t>(slot(n, 4))];
            if (u >= 0 && v >= 0) junctions.push_back({u, v, n});
        }
        std::sort(junctions.begin(), junctions.end());
        std::vector<int> ju, jv, jn;
        for (const auto& j : junctions) {
            ju.push_back(j[0]);
            jv.push_back(j[1]);
            jn.push_back(j[2]);
        }
        m_segment_yarn.assign(yarn.begin(), yarn.end());
        m_segment_coordinate.assign(coordinate.begin(), coordinate.end());
        m_junction_u.assign(ju.begin(), ju.end());
        m_junction_v.assign(jv.begin(), jv.end());
        m_junction_node.assign(jn.begin(), jn.end());
    }

    /// Stacked layers: per segment its yarn's stack and level, and the
    /// chords of the node normals (NodeNormal): each segment, and for an EIL
    /// node on each of its EIL yarns the segment between its spring's EoL
    /// nodes, with per node the chords it lies on (empty: no stack).
    void set_segment_layers(const std::vector<YarnSegment>& segments, const std::vector<EilSpring>& springs,
                            const std::vector<EilPairSpring>& pairs)
    {
        m_segment_stack.clear();
        m_segment_level.clear();
        m_segment_joined.clear();
        m_chords.clear();
        if (m_node_place.empty()) return;
        std::vector<int> stack, level, chords, coordinate, incident(4 * static_cast<std::size_t>(m_nodes), -1),
            count(static_cast<std::size_t>(m_nodes), 0);
        const auto add_chord = [&](int from, int to, int c, std::initializer_list<int> on) {
            const int index = int(coordinate.size());
            chords.push_back(from);
            chords.push_back(to);
            coordinate.push_back(c);
            for (int n : on) {
                int& k = count[static_cast<std::size_t>(n)];
                if (k < 4) incident[4 * static_cast<std::size_t>(n) + static_cast<std::size_t>(k++)] = index;
            }
        };
        for (std::size_t k = 0; k < segments.size(); ++k) {
            const YarnSegment& s = segments[k];
            const std::size_t slot = s.coordinate == 3 ? 0 : 1;
            // A node off this coordinate's yarn (−1 stack) takes the other end's place.
            YarnLayerPlace p = m_node_place[2 * static_cast<std::size_t>(s.node0) + slot];
            if (p.stack < 0) p = m_node_place[2 * static_cast<std::size_t>(s.node1) + slot];
            stack.push_back(p.stack);
            level.push_back(p.level);
            add_chord(s.node0, s.node1, s.coordinate, {s.node0, s.node1});
        }
        // An EIL node ends no segment of its EIL yarn; that yarn's tangent
        // there is the chord of its spring's EoL nodes (without it the
        // normal of a node EIL on a yarn would be zero).
        for (const EilSpring& s : springs) add_chord(s.before, s.after, s.coordinate, {s.node});
        for (const EilPairSpring& p : pairs)
            for (int k = 0; k < 2; ++k) add_chord(p.before[k], p.after[k], 3 + k, {p.node});
        // The level each segment's end joins it to: an end on both
        // coordinates (on current segments of that coordinate, or EIL on
        // it) whose two yarns lie on two levels of one stack is a contact
        // between those layers.
        std::vector<unsigned char> on(2 * static_cast<std::size_t>(m_nodes), 0);
        for (const YarnSegment& s : segments)
            for (int n : {s.node0, s.node1}) on[2 * static_cast<std::size_t>(n) + (s.coordinate == 3 ? 0 : 1)] = 1;
        for (const EilSpring& s : springs) on[2 * static_cast<std::size_t>(s.node) + (s.coordinate == 3 ? 0 : 1)] = 1;
        for (const EilPairSpring& p : pairs)
            on[2 * static_cast<std::size_t>(p.node)] = on[2 * static_cast<std::size_t>(p.node) + 1] = 1;
        // The level of the other layer that a contact at node n joins a
        // segment of (level, stack) to, −1 none.
        const auto joins = [&](std::size_t n, int coordinate, std::size_t k) {
            const YarnLayerPlace p = m_node_place[2 * n + (coordinate == 3 ? 1 : 0)];
            return on[2 * n] && on[2 * n + 1] && p.stack >= 0 && p.stack == stack[k] && p.level != level[k] ? p.level
                                                                                                            : -1;
        };
        std::vector<int> joined(2 * segments.size(), -1);
        std::map<std::pair<int, int>, std::size_t> segment_of;  // (node0, node1) → segment
        for (std::size_t k = 0; k < segments.size(); ++k) {
            segment_of[{segments[k].node0, segments[k].node1}] = k;
            for (int e = 0; e < 2; ++e)
                joined[2 * k + static_cast<std::size_t>(e)] =
                    joins(static_cast<std::size_t>(e == 0 ? segments[k].node0 : segments[k].node1),
                          segments[k].coordinate, k);
        }
        // A contact EIL on a yarn ends no segment of it: the segment that
        // passes through it is joined to the other layer too (in a free
        // slot; a segment joined to two other levels already keeps those).
        const auto join_through = [&](int node, int before, int after, int coordinate) {
            const auto it = segment_of.find({before, after});
            if (it == segment_of.end() || segments[it->second].coordinate != coordinate) return;
            const std::size_t k = it->second;
            const int level_joined = joins(static_cast<std::size_t>(node), coordinate, k);
            if (level_joined < 0 || joined[2 * k] == level_joined || joined[2 * k + 1] == level_joined) return;
            if (joined[2 * k] < 0)
                joined[2 * k] = level_joined;
            else if (joined[2 * k + 1] < 0)
                joined[2 * k + 1] = level_joined;
        };
        for (const EilSpring& s : springs) join_through(s.node, s.before, s.after, s.coordinate);
        for (const EilPairSpring& p : pairs)
            for (int k = 0; k < 2; ++k) join_through(p.node, p.before[k], p.after[k], 3 + k);
        m_segment_stack.assign(stack.begin(), stack.end());
        m_segment_level.assign(level.begin(), level.end());
        m_segment_joined.assign(joined.begin(), joined.end());
        m_chords.assign(chords.begin(), chords.end());
        m_coordinate.assign(coordinate.begin(), coordinate.end());
        m_incident.assign(incident.begin(), incident.end());
    }

    int m_nodes = 0;
    T m_cell = T(1);
    T m_thickness = T(0);
    T m_largest_offset = T(0);                 ///< stacked layers: thickness × the largest level difference
    T m_parallel_sine2 = T(0);                 ///< set_parallel_angle
    std::vector<YarnLayerPlace> m_node_place;  ///< stacked layers: 2 per node (u-yarn, v-yarn)
    thrust::device_vector<int> m_segment_stack, m_segment_level;
    /// Stacked layers: the node normals' chords, 2 nodes and a coordinate each, and 4 per node (set_segment_layers).
    thrust::device_vector<int> m_chords, m_coordinate, m_incident;
    thrust::device_vector<int> m_segment_joined;  ///< stacked layers: 2 per segment (JoinedLayers)
    mutable thrust::device_vector<T> m_normals;
    thrust::device_vector<int> m_offsets;     ///< #nodes + 1
    thrust::device_vector<int> m_neighbours;  ///< sorted per node
    thrust::device_vector<int> m_edges;       ///< the current segments' end nodes, 2 per segment
    thrust::device_vector<int> m_segment_yarn, m_segment_coordinate;         ///< per segment (set_yarns)
    thrust::device_vector<int> m_junction_u, m_junction_v, m_junction_node;  ///< nodes on two yarns (set_yarns)
    thrust::device_vector<int> m_parent_edges;  ///< the ends of each segment's fabric segment, 2 per segment
    bool m_has_parents = false;                 ///< some segment is a part of a fabric segment
};

}  // namespace weft
