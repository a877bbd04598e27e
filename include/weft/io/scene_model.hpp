#pragma once
/// @file scene_model.hpp
/// From a parsed scene (io/scene.hpp) to the yarn model, colliders and solver
/// settings that the steppers take. Host-only.
///
/// Several "woven" cloth entries become patches of one YarnModel; they must
/// share one material (stiffness, damping, friction, contact, radius,
/// density), since the model carries one YarnMaterial.

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/element/yarn_elements.hpp>
#include <weft/io/memory_estimate.hpp>
#include <weft/io/scene.hpp>
#include <weft/model/layers.hpp>
#include <weft/model/sliding_rods.hpp>
#include <weft/model/woven.hpp>

namespace weft {

template <typename T>
struct YarnScene {
    YarnModel<T> model;
    std::vector<Collider<T>> colliders;
    Vec3<T> gravity = Vec3<T>::Zero();
    std::vector<WovenPatch> patches;  ///< one per cloth entry
    std::vector<int> first_node;      ///< first node of each patch
};

namespace scene_model_detail {

template <typename T>
YarnMaterial<T> material_of(const ClothDescription& c)
{
    YarnMaterial<T> m;
    m.linear_density = T(c.density * Constants<double>::pi * c.radius * c.radius);
    m.stretch_stiffness = T(c.stiffness.stretch);
    m.bending_stiffness = T(c.stiffness.bending);
    m.shear_stiffness = T(c.stiffness.shear);
    const std::string& model = c.damping.model;
    if (model == "strain-rate" || model == "rayleigh-analogy") {
        m.damping = DampingModel::strain_rate;
        m.stretch_damping = T(c.damping.stretch);
        m.bending_damping = T(c.damping.bending);
        m.shear_damping = T(c.damping.shear);
    } else if (model == "rayleigh") {
        m.damping = DampingModel::rayleigh;
        m.rayleigh_beta = T(c.damping.beta);
    } else if (model == "none") {
        m.damping = DampingModel::none;
    } else {
        throw InvalidInput("invalid damping.model \"" + model + "\"");
    }
    m.contact_stiffness = T(c.contact.stiffness);
    m.contact_min_distance = T(c.contact.min_distance);
    m.friction_coefficient = T(c.friction.coefficient);
    m.anchor_stiffness = T(c.friction.anchor_stiffness);
    m.normal_force = T(c.friction.normal_force);
    return m;
}

/// The yarn material's StiffnessApproximation for `solver.stiffness_approximation`.
inline StiffnessApproximation stiffness_approximation_of(const SolverDescription& solver)
{
    if (solver.stiffness_approximation == "gauss-newton") return StiffnessApproximation::gauss_newton;
    if (solver.stiffness_approximation == "projected") return StiffnessApproximation::projected;
    if (solver.stiffness_approximation == "auto") return StiffnessApproximation::automatic;
    throw InvalidInput("invalid solver.stiffness_approximation \"" + solver.stiffness_approximation + "\"");
}

template <typename T>
bool same_material(const YarnMaterial<T>& a, const YarnMaterial<T>& b)
{
    return a.linear_density == b.linear_density && a.stretch_stiffness == b.stretch_stiffness &&
           a.bending_stiffness == b.bending_stiffness && a.shear_stiffness == b.shear_stiffness &&
           a.damping == b.damping && a.stretch_damping == b.stretch_damping && a.bending_damping == b.bending_damping &&
           a.shear_damping == b.shear_damping && a.rayleigh_beta == b.rayleigh_beta &&
           a.contact_stiffness == b.contact_stiffness && a.contact_min_distance == b.contact_min_distance &&
           a.friction_coefficient == b.friction_coefficient && a.anchor_stiffness == b.anchor_stiffness &&
           a.normal_force == b.normal_force;
}

inline std::vector<int> select_nodes(const NodeSelection& selection, const WovenPatch& patch, int first,
                                     const std::string& path)
{
    std::vector<int> nodes;
    for (const std::string& set : selection.sets) {
        const std::vector<int> named = woven_node_set(patch, first, set);
        nodes.insert(nodes.end(), named.begin(), named.end());
    }
    for (int local : selection.nodes) {
        if (local < 0 || local >= patch.nx * patch.ny)
            throw InvalidInput(detail::describe(path.c_str(), local, "node index out of range"));
        nodes.push_back(first + local);
    }
    return nodes;
}

}  // namespace scene_model_detail

/// The scene's colliders as the node kernels see them.
template <typename T>
std::vector<Collider<T>> colliders_of(const SceneDescription& scene)
{
    std::vector<Collider<T>> out;
    for (const ColliderDescription& d : scene.colliders) {
        const Vec3<T> center(T(d.center[0]), T(d.center[1]), T(d.center[2]));
        const T k = T(d.stiffness), mu = T(d.friction);
        if (d.type == "sphere") {
            out.push_back(sphere_collider<T>(center, T(d.radius), k, mu));
        } else if (d.type == "box") {
            const Vec3<T> half(T(d.size[0] / 2), T(d.size[1] / 2), T(d.size[2] / 2));
            out.push_back(box_collider<T>(center, half, T(d.rounding), k, mu));
        } else {
            const Vec3<T> point(T(d.point[0]), T(d.point[1]), T(d.point[2]));
            out.push_back(plane_collider<T>(point, Vec3<T>(T(d.normal[0]), T(d.normal[1]), T(d.normal[2])), k, mu));
        }
    }
    return out;
}

/// Builds the yarn model of every woven cloth entry, the colliders and gravity.
/// @throws InvalidInput when entries do not share one material, or for a
///         cloth type this model does not handle
template <typename T>
YarnScene<T> build_yarn_scene(const SceneDescription& scene)
{
    using namespace scene_model_detail;
    require_fits_in_memory(scene);
    if (scene.collision.enabled && scene.collision.create_contacts && !scene.solver.eil)
        throw InvalidInput(
            "invalid collision.create_contacts: true needs EIL nodes (solver.eil.enabled: true), which let the "
            "contacts made slide past the yarns' crossings");
    YarnScene<T> out;
    out.gravity = Vec3<T>(T(scene.gravity[0]), T(scene.gravity[1]), T(scene.gravity[2]));
    if (!scene.cloth.empty() && scene.cloth.front().type == "sliding-rods") {
        if (scene.collision.enabled)
            throw InvalidInput(
                "invalid collision.enabled: yarn-yarn collision applies to woven cloth, not to the "
                "sliding-rods model");
        if (scene.cloth.size() != 1)
            throw InvalidInput("invalid cloth: a \"sliding-rods\" scene takes exactly one cloth entry (got " +
                               std::to_string(scene.cloth.size()) + ")");
        const ClothDescription& c = scene.cloth.front();
        SlidingRodsParameters p;
        p.spacing = c.spacing;
        p.radius = c.radius;
        p.density = c.density;
        p.stretch_stiffness = c.stiffness.stretch;
        p.bending_stiffness = c.stiffness.bending;
        const SlidingRods rods = make_sliding_rods(c.rods.speed_b, c.rods.speed_c, c.rods.prestretch, 0.0, p);
        if constexpr (std::is_same_v<T, double>) {
            out.model = rods.model;
            out.model.material.stiffness_approximation = stiffness_approximation_of(scene.solver);
        } else {
            throw InvalidInput("the sliding-rods model is built in double precision only");
        }
        out.colliders = colliders_of<T>(scene);
        return out;
    }
    for (std::size_t k = 0; k < scene.cloth.size(); ++k) {
        const ClothDescription& c = scene.cloth[k];
        const std::string path = "cloth[" + std::to_string(k) + "]";
        if (c.type != "woven")
            throw InvalidInput("invalid " + path + ".type \"" + c.type + "\": the yarn model takes woven cloth only");
        // The parser checks this too; a description edited in code (a
        // benchmark that refines the spacing) is checked here.
        scene_detail::check_contact_reach(c, "invalid " + path + ".contact.min_distance",
                                          scene_detail::WovenValue::edited);
        YarnMaterial<T> material = material_of<T>(c);
        material.stiffness_approximation = stiffness_approximation_of(scene.solver);
        if (k == 0) {
            out.model.material = material;
        } else if (!same_material(material, out.model.material) || T(c.radius) != out.model.radius) {
            throw InvalidInput("invalid " + path +
                               ": every woven cloth of a scene must share the material of cloth[0] (stiffness, "
                               "damping, friction, contact, radius, density)");
        }
        WovenPatch p;
        p.nx = c.yarns[0];
        p.ny = c.yarns[1];
        p.spacing = c.spacing;
        p.radius = c.radius;
        p.density = c.density;
        p.center = c.center;
        p.plane = c.plane == "xz" ? ClothPlane::xz : ClothPlane::xy;
        p.pattern = c.pattern == "twill" ? WeavePattern::twill : WeavePattern::plain;
        p.rotation = c.rotation;
        const int first = add_woven_patch(out.model, p);
        const int count = p.nx * p.ny;
        const auto& iv = c.initial_velocity;
        set_rigid_velocity(out.model, first, count, Vec3<T>(T(iv.linear[0]), T(iv.linear[1]), T(iv.linear[2])),
                           Vec3<T>(T(iv.angular[0]), T(iv.angular[1]), T(iv.angular[2])));
        const std::vector<int> pins = select_nodes(c.pins, p, first, path + ".pins");
        pin_nodes(out.model, pins);
        for (int n : pins)
            for (int d = 0; d < 3; ++d) out.model.v[yarn_node_dofs * n + d] = T(0);
        for (std::size_t m = 0; m < c.moving_pins.size(); ++m) {
            const std::string mpath = path + ".moving_pins[" + std::to_string(m) + "].nodes";
            const std::vector<int> moving = select_nodes(c.moving_pins[m].nodes, p, first, mpath);
            pin_nodes(out.model, moving);
            for (int n : moving)
                for (int d = 0; d < 3; ++d) out.model.v[yarn_node_dofs * n + d] = T(c.moving_pins[m].velocity[d]);
        }
        out.patches.push_back(p);
        out.first_node.push_back(first);
    }
    // Stacked layers: contact nodes where the yarns of a layer cross those of
    // the layer below, with Coulomb limit μ F_n and slip-in-step anchors (a
    // light layer would otherwise never slide, see yarn_model.hpp). F_n is
    // each contact's normal force from the node's balance, evaluated by
    // the stepper every step (YarnModel::layer_friction), or with
    // layer_normal_force "weight" the weight of this layer and of every layer
    // resting on it / #contacts.
    for (std::size_t k = 0; k < scene.cloth.size(); ++k) {
        const ClothDescription& c = scene.cloth[k];
        if (c.on_top_of < 0) continue;
        const std::size_t below = static_cast<std::size_t>(c.on_top_of);
        std::vector<LayerContact> contacts;
        try {
            contacts = add_contact_layer(out.model, out.first_node[k], out.patches[k], out.first_node[below],
                                         out.patches[below], T(2.5 * c.radius));
        } catch (const InvalidInput& e) {
            throw InvalidInput("invalid cloth[" + std::to_string(k) + "].on_top_of: " + e.what());
        }
        if (contacts.empty())
            throw InvalidInput("invalid cloth[" + std::to_string(k) +
                               "].on_top_of: no yarn of this layer crosses a "
                               "yarn of cloth[" +
                               std::to_string(below) +
                               "] within 2.5 radii (place it flat on the "
                               "layer below, shifted by half a spacing)");
        if (c.layer_parallel_contact)
            for (const LayerContact& contact : contacts)
                out.model.external_contact[static_cast<std::size_t>(contact.node)] = 0;
        std::vector<int> nodes;
        for (const LayerContact& contact : contacts) nodes.push_back(contact.node);
        out.model.material.anchor_friction = AnchorFriction::slip_in_step;
        if (c.layer_normal_force == "elements") {
            out.model.layer_friction.resize(static_cast<std::size_t>(out.model.node_count()), T(-1));
            for (int n : nodes) out.model.layer_friction[static_cast<std::size_t>(n)] = T(c.layer_friction);
            set_friction_limit(out.model, nodes, T(0));  // the stepper sets μ max(N, 0)
            continue;
        }
        T mass = T(0);
        for (std::size_t m = 0; m < scene.cloth.size(); ++m) {
            // this layer and every layer stacked (directly or not) on it
            std::size_t at = m;
            bool above = at == k;
            while (!above && scene.cloth[at].on_top_of >= 0) {
                at = static_cast<std::size_t>(scene.cloth[at].on_top_of);
                above = at == k;
            }
            if (above) mass += layer_mass(out.model, out.first_node[m], out.patches[m].nx * out.patches[m].ny);
        }
        const T weight = mass * out.gravity.norm();
        set_friction_limit(out.model, nodes, T(c.layer_friction) * weight / T(contacts.size()));
    }
    if (!out.model.layer_friction.empty())
        out.model.layer_friction.resize(static_cast<std::size_t>(out.model.node_count()), T(-1));
    if (scene.collision.enabled) {
        // Yarn-yarn collision (docs/collision.md): thickness the yarn
        // diameter unless given; stiffness default_contact_stiffness (of the
        // mean node mass, as for triangle cloth) unless given.
        ClothCollision<T>& c = out.model.collision;
        c.enabled = true;
        c.thickness = T(scene.collision.thickness);
        c.friction = T(scene.collision.friction);
        c.create_contacts = scene.collision.create_contacts;
        c.parallel_angle = degrees_to_radians(T(scene.collision.parallel_angle));
        c.onset = T(scene.collision.onset);
        if (c.create_contacts && std::none_of(out.model.layer_friction.begin(), out.model.layer_friction.end(),
                                              [](T mu) { return mu >= T(0); }))
            throw InvalidInput(
                "invalid collision.create_contacts: true needs stacked cloths (on_top_of) with layer_friction: "
                "contacts are made by putting back those that were removed (docs/collision.md)");
        const T total_length = yarn_segment_lengths(out.model).second * T(out.model.segments.size());
        const T mean_mass = out.model.node_count() > 0
                                ? out.model.material.linear_density * total_length / T(out.model.node_count())
                                : T(0);
        c.stiffness = T(scene.collision.stiffness > 0 ? scene.collision.stiffness
                                                      : default_contact_stiffness(double(mean_mass), scene.time_step));
        validate_yarn_collision(out.model);
    }
    out.colliders = colliders_of<T>(scene);
    return out;
}

/// Number of halvings allowed by the scene's solver settings: as many as keep
/// the step at or above min_time_step (none without adaptive_time_step).
inline int max_halvings(const SceneDescription& scene)
{
    if (!scene.solver.adaptive_time_step || !(scene.solver.min_time_step > 0)) return 0;
    int halvings = 0;
    double h = scene.time_step;
    while (h / 2 >= scene.solver.min_time_step * (1 - 1e-12) && halvings < 30) {
        h /= 2;
        ++halvings;
    }
    return halvings;
}

}  // namespace weft
