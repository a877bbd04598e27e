#pragma once
/// @file yarn_model.hpp
/// Topology, rest state and material of yarn-level cloth in the
/// Eulerian-on-Lagrangian (EoL) discretization of 2017 Sec. 3 / Cirio et al.
/// 2014: every node carries 5 DoFs (x ∈ R³, u, v), u and v the arc-length
/// coordinates on the (at most two) yarns through the node. Fixed DoFs are
/// removed by a per-DoF filter, never by resizing (DESIGN.md).

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/types.hpp>
#include <weft/element/cloth_contact.hpp>
#include <weft/element/yarn_element_types.hpp>

namespace weft {

/// A whole yarn-level cloth (one or several patches).
/// A yarn's place in a stack of fabric layers (YarnModel::yarn_layer).
struct YarnLayerPlace {
    int stack = -1;  ///< the stack (−1: in none)
    int level = 0;   ///< 0 for the bottom layer, one more per layer above it
};

template <typename T>
struct YarnModel {
    std::vector<T> q;                     ///< 5 × #nodes generalized positions
    std::vector<T> v;                     ///< 5 × #nodes generalized velocities
    std::vector<unsigned char> free_dof;  ///< 5 × #nodes filter: 1 free, 0 fixed
    std::vector<YarnSegment> segments;
    std::vector<YarnBend> bends;
    std::vector<YarnShear> shears;
    std::vector<std::vector<int>> yarns;  ///< node lists, one per yarn
    std::vector<int> yarn_coordinate;     ///< 3 or 4 per yarn
    std::vector<T> anchors;               ///< 2 × #nodes: anchor of u and v
    std::vector<unsigned char> over;      ///< per node: 1 if the u-yarn lies on top (rendering only)
    /// Empty (default): every node's anchors use the material's Coulomb limit
    /// μF_n (`friction_coefficient` × `normal_force`), active when μ > 0.
    /// Otherwise #nodes values (N): the Coulomb limit μF_n of that node's two
    /// anchors, active where > 0 (e.g. inter-layer contacts with their own μ
    /// and F_n, model/layers.hpp). `anchor_stiffness` stays the material's.
    std::vector<T> friction_limit;
    /// Per node (empty: none; shorter than #nodes: the rest are 0): 1 for a
    /// contact with another fabric (model/layers.hpp). Such a node takes no
    /// part in parallel-yarn contact, so that contacts slide past the
    /// crossings of the yarns they lie on (thesis Sec. 4.3.2, rule (a); rule
    /// (b), the bending-vector test, is not implemented), while the fabric's
    /// own consecutive crossings on a yarn keep their parallel-yarn contact
    /// across it (YarnParallelPair).
    std::vector<unsigned char> external_contact;
    /// Per node (empty: none): for a contact with another fabric, the Coulomb
    /// coefficient μ ≥ 0 between the two layers, whose anchors' limit is then
    /// μ max(N, 0) with N the normal force the layers exert on each other
    /// there, evaluated from the node's balance at the start of every
    /// (sub)step (`layer_contact_normal_force`, thesis Sec. 4.4); the stepper
    /// writes it over `friction_limit`. Negative: the node's limit stays
    /// `friction_limit`'s. Such a node must be marked in `external_contact`,
    /// and `over` says which of its yarns is the top one.
    std::vector<T> layer_friction;
    /// Per yarn (empty, or shorter than #yarns: the rest are in no stack):
    /// its fabric's place in a stack of layers joined by `add_contact_layer`
    /// (model/layers.hpp). Yarn–yarn collision between two layers of one
    /// stack measures their distance with the upper one lifted by a
    /// thickness per level along the layers' normal, since the contact nodes
    /// put stacked layers in one plane (docs/collision.md, "Stacked layers").
    std::vector<YarnLayerPlace> yarn_layer;
    YarnMaterial<T> material;
    T radius = T(0);
    /// Yarn–yarn collision (off by default; docs/collision.md): segment
    /// pairs that are no neighbours in the fabric get the penalty contact of
    /// cloth_contact.hpp with `collision.thickness` as the contact distance
    /// (the yarn diameter 2 radius by default in scenes) and its friction.
    ClothCollision<T> collision;

    int node_count() const { return static_cast<int>(q.size() / yarn_node_dofs); }
    Vec3<T> position(int node) const
    {
        return Vec3<T>(q[yarn_node_dofs * node], q[yarn_node_dofs * node + 1], q[yarn_node_dofs * node + 2]);
    }
};

/// Checks a yarn material built in code as the scene parser checks a scene's
/// (a cloth without mass, a negative stiffness or damping coefficient, a
/// negative friction coefficient are errors).
/// @throws InvalidInput naming the field and its value
template <typename T>
inline void validate_yarn_material(const YarnMaterial<T>& m)
{
    require_positive("YarnMaterial linear_density (kg/m)", m.linear_density);
    const std::pair<const char*, T> coefficients[] = {{"YarnMaterial stretch_stiffness", m.stretch_stiffness},
                                                      {"YarnMaterial bending_stiffness", m.bending_stiffness},
                                                      {"YarnMaterial shear_stiffness", m.shear_stiffness},
                                                      {"YarnMaterial stretch_damping", m.stretch_damping},
                                                      {"YarnMaterial bending_damping", m.bending_damping},
                                                      {"YarnMaterial shear_damping", m.shear_damping},
                                                      {"YarnMaterial rayleigh_beta", m.rayleigh_beta},
                                                      {"YarnMaterial contact_stiffness", m.contact_stiffness},
                                                      {"YarnMaterial contact_min_distance", m.contact_min_distance},
                                                      {"YarnMaterial friction_coefficient", m.friction_coefficient},
                                                      {"YarnMaterial anchor_stiffness", m.anchor_stiffness},
                                                      {"YarnMaterial normal_force", m.normal_force}};
    for (const auto& [field, value] : coefficients) require_non_negative(field, value);
}

/// Appends the parallel-yarn contact pairs of one yarn: consecutive nodes of
/// `nodes[0..count)` (the yarn's nodes in arc-length order) that are not
/// contacts with another fabric (external[n] != 0; an empty `external` means
/// none), so a pair spans the external contacts between two crossings.
inline void append_fabric_pairs(const int* nodes, int count, int coordinate, const std::vector<unsigned char>& external,
                                std::vector<YarnParallelPair>& out)
{
    int last = -1;
    for (int k = 0; k < count; ++k) {
        const int n = nodes[k];
        if (static_cast<std::size_t>(n) < external.size() && external[static_cast<std::size_t>(n)]) continue;
        if (last >= 0) out.push_back({last, n, coordinate});
        last = n;
    }
}

/// The parallel-yarn contact pairs of a model from its yarn lists (each in
/// arc-length order, as builders and `add_contact_layer` keep them), yarn by
/// yarn; empty when the model has no yarn lists.
template <typename T>
std::vector<YarnParallelPair> fabric_pairs(const YarnModel<T>& model)
{
    std::vector<YarnParallelPair> out;
    if (model.yarn_coordinate.size() != model.yarns.size()) return out;
    for (std::size_t y = 0; y < model.yarns.size(); ++y)
        append_fabric_pairs(model.yarns[y].data(), static_cast<int>(model.yarns[y].size()), model.yarn_coordinate[y],
                            model.external_contact, out);
    return out;
}

/// True when the pairs are the segments, element for element: parallel-yarn
/// contact can then be evaluated on the segments (no EIL node and no contact
/// with another fabric between two crossings).
inline bool pairs_are_segments(const std::vector<YarnParallelPair>& pairs, const std::vector<YarnSegment>& segments)
{
    if (pairs.size() != segments.size()) return false;
    for (std::size_t k = 0; k < pairs.size(); ++k)
        if (pairs[k].node0 != segments[k].node0 || pairs[k].node1 != segments[k].node1 ||
            pairs[k].coordinate != segments[k].coordinate)
            return false;
    return true;
}

/// The lengths of the model's segments between their nodes' positions:
/// the shortest and the mean.
template <typename T>
std::pair<T, T> yarn_segment_lengths(const YarnModel<T>& model)
{
    T shortest = std::numeric_limits<T>::infinity(), sum = T(0);
    for (const YarnSegment& s : model.segments) {
        const T length = (model.position(s.node1) - model.position(s.node0)).norm();
        shortest = std::min(shortest, length);
        sum += length;
    }
    return {shortest, model.segments.empty() ? T(0) : sum / T(model.segments.size())};
}

/// Checks a yarn model's collision settings (YarnModel::collision): the
/// values, and a thickness below the shortest segment of the initial shape
/// (thicker, a fabric's own yarns two crossings apart would touch at rest).
/// With contacts between stacked layers (`external_contact`), which split
/// each fabric's segments, the segments measured are those between a
/// fabric's consecutive crossings on a yarn (`fabric_pairs`).
/// @throws InvalidInput naming the key and its value
template <typename T>
inline void validate_yarn_collision(const YarnModel<T>& model)
{
    validate_cloth_collision(model.collision);
    if (!model.collision.enabled) return;
    T shortest = yarn_segment_lengths(model).first;
    const bool layered =
        std::any_of(model.external_contact.begin(), model.external_contact.end(), [](unsigned char c) { return c; });
    const std::vector<YarnParallelPair> fabric = layered ? fabric_pairs(model) : std::vector<YarnParallelPair>{};
    if (!fabric.empty()) {
        shortest = std::numeric_limits<T>::infinity();
        for (const YarnParallelPair& p : fabric)
            shortest = std::min(shortest, T((model.position(p.node1) - model.position(p.node0)).norm()));
    }
    if (!(model.collision.thickness < shortest)) {
        const std::string why =
            "must be below the shortest yarn segment (" + std::to_string(static_cast<double>(shortest)) + " m)";
        throw InvalidInput(detail::describe("collision.thickness", model.collision.thickness, why.c_str()));
    }
}

}  // namespace weft
