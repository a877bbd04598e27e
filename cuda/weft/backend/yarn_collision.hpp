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
/// on). So the segments around a crossing (one node apart) and the parallel
/// yarns next to each other in a weave (joined by the crossing yarn's
/// segment) are excluded, and pairs two crossings apart or more, or of
/// different cloths, are contacts.

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
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
/// force that is continuous in their positions).
template <typename T>
struct SegmentPairElement {
    const int* edges;
    WEFT_HD ClothContactElement<T> operator()(const CandidatePair& p) const
    {
        return ClothContactElement<T>{{edges[2 * p.a], edges[2 * p.a + 1], edges[2 * p.b], edges[2 * p.b + 1]},
                                      int(ClothContactKind::segment_pair),
                                      T(0)};
    }
};

/// The closest points' difference of segments a0–a1 and b0–b1 at x
/// (`stride` DoFs per node), its square norm, and whether both closest
/// points lie inside their segments.
template <typename T>
WEFT_HD inline Vec3<T> closest_difference(const T* x, const int (&i)[4], int stride, T& squared, bool& interior)
{
    using cloth_collision_detail::node_position;
    const Vec3<T> a0 = node_position(x, i[0], stride), a1 = node_position(x, i[1], stride),
                  b0 = node_position(x, i[2], stride), b1 = node_position(x, i[3], stride);
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
        const Vec3<T> x0 = closest_difference<T>(q_start, c.nodes, stride, d0, inside0);
        const Vec3<T> x1 = closest_difference<T>(q, c.nodes, stride, d1, inside1);
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
    /// @throws InvalidInput for a bad cell size
    YarnContactFinder(int nodes, T cell) : m_nodes(nodes), m_cell(cell)
    {
        if (!(cell > T(0))) throw InvalidInput(detail::describe("yarn collision cell size", cell, "must be positive"));
    }

    /// The segments to test and the node links that exclude pairs
    /// (yarn_collision.hpp): the links of `initial` (the model's first
    /// segments), of `segments` (the current ones) and of the EIL springs.
    /// @throws InvalidInput for a node out of range
    void set_segments(const std::vector<YarnSegment>& initial, const std::vector<YarnSegment>& segments,
                      const std::vector<EilSpring>& springs, const std::vector<EilPairSpring>& pairs)
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
        for (const EilSpring& s : springs) {
            link(s.node, s.before);
            link(s.node, s.after);
        }
        for (const EilPairSpring& p : pairs)
            for (int k = 0; k < 2; ++k) {
                link(p.node, p.before[k]);
                link(p.node, p.after[k]);
            }
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
    }

    int segment_count() const { return static_cast<int>(m_edges.size() / 2); }
    T cell() const { return m_cell; }

    /// The segment pairs, not excluded, that may come closer than `reach`
    /// within a time τ from positions q moving at velocities v (5 DoFs per
    /// node, x first), sorted: as ClothContactFinder's edge–edge pairs.
    thrust::device_vector<ClothContactElement<T>> find(const thrust::device_vector<T>& q,
                                                       const thrust::device_vector<T>& v, T tau, T reach) const
    {
        const cloth_collision_detail::Motion<T> motion{raw_pointer(q), raw_pointer(v), tau, yarn_node_dofs};
        const thrust::device_vector<CandidatePair> near =
            near_edge_pairs<T>(motion, m_edges, reach, m_cell, exclusion());
        thrust::device_vector<ClothContactElement<T>> out(near.size());
        thrust::transform(thrust::device, near.begin(), near.end(), out.begin(),
                          yarn_collision_detail::SegmentPairElement<T>{raw_pointer(m_edges)});
        return out;
    }

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

    int m_nodes = 0;
    T m_cell = T(1);
    thrust::device_vector<int> m_offsets;     ///< #nodes + 1
    thrust::device_vector<int> m_neighbours;  ///< sorted per node
    thrust::device_vector<int> m_edges;       ///< the current segments' end nodes, 2 per segment
};

}  // namespace weft
