#pragma once
/// @file triangle_scene.hpp
/// From a parsed scene (io/scene.hpp) with a "triangle" cloth entry to the
/// triangle model, colliders and gravity that TriangleStepper takes.
/// Host-only. See docs/triangles.md for the keys.
///
/// Placement: a grid is built flat and centred, with its first axis along x
/// and its second along y ("plane": "xy") or z ("xz"), then moved to
/// `center`; a mesh keeps the coordinates of its file, translated by
/// `center`. Node sets ("top-edge", ...) are the vertices at the extremes of
/// the placed rest shape along the two axes (exact rows for a grid).
/// Relative `mesh` and `material.file` paths resolve against the scene
/// file's directory.

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/io/material_file.hpp>
#include <weft/io/memory_estimate.hpp>
#include <weft/io/scene.hpp>
#include <weft/io/scene_model.hpp>
#include <weft/model/triangle_model.hpp>

namespace weft {

template <typename T>
struct TriangleScene {
    TriangleModel<T> model;
    std::vector<Collider<T>> colliders;
    Vec3<T> gravity = Vec3<T>::Zero();
    TriangleMesh mesh;  ///< topology for output (positions as placed at t = 0)
};

namespace triangle_scene_detail {

inline std::filesystem::path resolve_input(const SceneDescription& scene, const std::string& path)
{
    const std::filesystem::path p(path);
    if (p.is_absolute() || scene.source.empty()) return p;
    return std::filesystem::path(scene.source).parent_path() / p;
}

/// Vertices at the extremes of the two in-plane axes (a, b) of the placed mesh.
inline std::vector<int> node_set(const std::vector<Vec3<double>>& x, int a, int b, const std::string& name)
{
    double lo[2] = {1e300, 1e300}, hi[2] = {-1e300, -1e300};
    const int axes[2] = {a, b};
    for (const auto& p : x)
        for (int k = 0; k < 2; ++k) {
            lo[k] = std::min(lo[k], p(axes[k]));
            hi[k] = std::max(hi[k], p(axes[k]));
        }
    const double tol[2] = {1e-9 * std::max(1.0, hi[0] - lo[0]), 1e-9 * std::max(1.0, hi[1] - lo[1])};
    std::vector<int> out;
    for (int i = 0; i < static_cast<int>(x.size()); ++i) {
        const double u = x[i](a), v = x[i](b);
        const bool top = v >= hi[1] - tol[1], bottom = v <= lo[1] + tol[1];
        const bool left = u <= lo[0] + tol[0], right = u >= hi[0] - tol[0];
        bool in = false;
        if (name == "top-edge")
            in = top;
        else if (name == "bottom-edge")
            in = bottom;
        else if (name == "left-edge")
            in = left;
        else if (name == "right-edge")
            in = right;
        else if (name == "corners")
            in = (top || bottom) && (left || right);
        else
            throw InvalidInput("unknown node set \"" + name + "\"");
        if (in) out.push_back(i);
    }
    return out;
}

inline std::vector<int> select(const NodeSelection& selection, const std::vector<Vec3<double>>& x, int a, int b,
                               const std::string& path)
{
    std::vector<int> nodes;
    for (const std::string& set : selection.sets) {
        const std::vector<int> named = node_set(x, a, b, set);
        nodes.insert(nodes.end(), named.begin(), named.end());
    }
    for (int n : selection.nodes) {
        if (n < 0 || n >= static_cast<int>(x.size())) {
            throw InvalidInput(path + ": node index " + std::to_string(n) + " is out of range: the mesh has " +
                               std::to_string(x.size()) + " vertices");
        }
        nodes.push_back(n);
    }
    return nodes;
}

}  // namespace triangle_scene_detail

/// The material of a triangle entry (moduli × thickness, ρ × thickness).
template <typename T>
TriangleMaterial<T> triangle_material_of(const ClothDescription& c)
{
    const TriangleClothDescription& t = c.triangle;
    TriangleMaterial<T> m;
    m.membrane = t.material_model == "tabulated" ? MembraneModel::tabulated : MembraneModel::stvk;
    m.stvk = StVKDensity<T>{T(t.lambda * t.thickness), T(t.mu * t.thickness)};
    m.areal_density = T(t.density * t.thickness);
    m.bending = t.bending_model == "dihedral" ? BendingModel::dihedral : BendingModel::plate;
    m.bending_stiffness = T(t.bending);
    m.bending_poisson = T(t.bending_poisson);
    m.contact_offset = T(t.collision_offset);
    const std::string& model = c.damping.model;
    if (model == "strain-rate" || model == "rayleigh-analogy") {
        m.damping = TriangleDamping::strain_rate;
        m.membrane_damping = StVKDensity<T>{T(c.damping.stretch * t.thickness), T(c.damping.shear * t.thickness)};
        m.bending_damping = T(c.damping.bending);
    } else if (model == "rayleigh") {
        m.damping = TriangleDamping::rayleigh;
        m.rayleigh_beta = T(c.damping.beta);
    } else if (model == "none") {
        m.damping = TriangleDamping::none;
    } else {
        throw InvalidInput("invalid damping.model \"" + model + "\"");
    }
    return m;
}

/// The default stiffness of cloth–cloth contact (default_contact_stiffness)
/// from the triangle cloth's node masses.
template <typename T>
T default_collision_stiffness(const std::vector<T>& mass, double time_step)
{
    double sum = 0;
    for (const T m : mass) sum += static_cast<double>(m);
    const double mean = mass.empty() ? 0.0 : sum / static_cast<double>(mass.size());
    return T(default_contact_stiffness(mean, time_step));
}

/// True when the scene's cloth entries are triangle meshes.
inline bool is_triangle_scene(const SceneDescription& scene)
{
    return !scene.cloth.empty() && scene.cloth.front().type == "triangle";
}

namespace triangle_scene_detail {

/// True when two entries' materials are the same (every field the model
/// takes from an entry, the tabulated curves' file and the rest shape).
template <typename T>
bool same_material(const ClothDescription& a, const ClothDescription& b)
{
    const TriangleMaterial<T> x = triangle_material_of<T>(a), y = triangle_material_of<T>(b);
    return x.membrane == y.membrane && x.stvk.lambda == y.stvk.lambda && x.stvk.mu == y.stvk.mu &&
           x.areal_density == y.areal_density && x.bending == y.bending && x.bending_stiffness == y.bending_stiffness &&
           x.bending_poisson == y.bending_poisson && x.contact_offset == y.contact_offset && x.damping == y.damping &&
           x.membrane_damping.lambda == y.membrane_damping.lambda && x.membrane_damping.mu == y.membrane_damping.mu &&
           x.bending_damping == y.bending_damping && x.rayleigh_beta == y.rayleigh_beta &&
           a.triangle.material_file == b.triangle.material_file && a.triangle.rest_shape == b.triangle.rest_shape;
}

/// One entry's mesh placed as the scene says, and its in-plane axes for node sets.
inline TriangleMesh placed_mesh(const SceneDescription& scene, std::size_t entry, int& a, int& b)
{
    const ClothDescription& c = scene.cloth[entry];
    const TriangleClothDescription& t = c.triangle;
    const std::string path = "cloth[" + std::to_string(entry) + "]";
    TriangleMesh mesh;
    a = 0;
    b = 1;
    if (t.mesh.empty()) {
        mesh = make_triangle_grid(t.resolution[0], t.resolution[1], t.size[0], t.size[1],
                                  t.diagonals == "regular" ? DiagonalPattern::regular : DiagonalPattern::alternating);
        if (c.plane == "xz") {
            for (auto& p : mesh.positions) p = Vec3<double>(p(0), 0.0, p(1));
            b = 2;
        }
    } else {
        try {
            mesh = load_obj_mesh(resolve_input(scene, t.mesh).string(), t.uv_scale);
        } catch (const InvalidInput& e) {
            throw InvalidInput(path + ".mesh: " + e.what());
        }
        // Node sets on a mesh: the two widest axes of its bounding box.
        Vec3<double> lo = mesh.positions.front(), hi = lo;
        for (const auto& p : mesh.positions) {
            lo = lo.cwiseMin(p);
            hi = hi.cwiseMax(p);
        }
        const Vec3<double> extent = hi - lo;
        int narrow = 0;
        for (int k = 1; k < 3; ++k)
            if (extent(k) < extent(narrow)) narrow = k;
        a = narrow == 0 ? 1 : 0;
        b = narrow == 2 ? 1 : 2;
    }
    const Vec3<double> center(c.center[0], c.center[1], c.center[2]);
    for (auto& p : mesh.positions) p += center;
    return mesh;
}

}  // namespace triangle_scene_detail

/// Builds the triangle model of the scene's triangle cloth entries: one
/// model whose mesh holds every entry's as a separate piece (vertex indices
/// in entry order), so that they meet through collision (docs/collision.md).
/// @throws InvalidInput for mixed types, entries whose materials differ,
///         unreadable mesh or material files, out-of-range pins, degenerate
///         triangles.
template <typename T>
TriangleScene<T> build_triangle_scene(const SceneDescription& scene)
{
    using namespace triangle_scene_detail;
    if (scene.cloth.empty()) throw InvalidInput("invalid cloth: a triangle scene needs a \"triangle\" entry");
    for (std::size_t k = 0; k < scene.cloth.size(); ++k) {
        if (scene.cloth[k].type != "triangle")
            throw InvalidInput("invalid cloth[" + std::to_string(k) + "].type \"" + scene.cloth[k].type +
                               "\": a triangle scene takes only \"triangle\" entries");
        if (k > 0 && !same_material<T>(scene.cloth[k], scene.cloth.front()))
            throw InvalidInput("invalid cloth[" + std::to_string(k) +
                               "]: the triangle entries of a scene share one material (material, damping, bending, "
                               "collision_offset, rest_shape), and it differs from cloth[0]'s");
    }
    require_fits_in_memory(scene);
    const ClothDescription& c = scene.cloth.front();
    const TriangleClothDescription& t = c.triangle;
    TriangleScene<T> out;
    out.gravity = Vec3<T>(T(scene.gravity[0]), T(scene.gravity[1]), T(scene.gravity[2]));
    std::vector<int> first_vertex, axis_a, axis_b;
    for (std::size_t k = 0; k < scene.cloth.size(); ++k) {
        int a = 0, b = 1;
        const TriangleMesh piece = placed_mesh(scene, k, a, b);
        first_vertex.push_back(out.mesh.vertex_count());
        axis_a.push_back(a);
        axis_b.push_back(b);
        append_mesh(out.mesh, piece);
    }

    std::optional<TabulatedMembraneDensity<T>> tabulated;
    if (t.material_model == "tabulated") {
        TabulatedMaterial material;
        try {
            material = load_tabulated_material(resolve_input(scene, t.material_file));
        } catch (const InvalidInput& e) {
            throw InvalidInput(std::string("cloth[0].material.file: ") + e.what());
        }
        if constexpr (std::is_same_v<T, double>) {
            tabulated = material.density;
        } else {
            throw InvalidInput("tabulated materials are loaded in double precision only");
        }
    }
    out.model = build_triangle_model<T>(out.mesh, triangle_material_of<T>(c), tabulated, {},
                                        t.rest_shape == "mesh" ? TriangleRestShape::mesh : TriangleRestShape::flat);

    // Per entry: rigid initial velocity about its centre, then pins (at rest)
    // and moving pins; node sets and indices are the entry's own.
    for (std::size_t k = 0; k < scene.cloth.size(); ++k) {
        const ClothDescription& e = scene.cloth[k];
        const int first = first_vertex[k];
        const int end = k + 1 < scene.cloth.size() ? first_vertex[k + 1] : out.mesh.vertex_count();
        const std::vector<Vec3<double>> x(out.mesh.positions.begin() + first, out.mesh.positions.begin() + end);
        const std::string path = "cloth[" + std::to_string(k) + "]";
        const Vec3<double> center(e.center[0], e.center[1], e.center[2]);
        const Vec3<double> lin(e.initial_velocity.linear[0], e.initial_velocity.linear[1],
                               e.initial_velocity.linear[2]);
        const Vec3<double> ang(e.initial_velocity.angular[0], e.initial_velocity.angular[1],
                               e.initial_velocity.angular[2]);
        for (int i = first; i < end; ++i) {
            const Vec3<double> v = lin + ang.cross(out.mesh.positions[i] - center);
            for (int d = 0; d < 3; ++d) out.model.v[3 * i + d] = T(v(d));
        }
        const auto fix = [&](const std::vector<int>& nodes, const Vec3<double>& velocity) {
            for (int n : nodes)
                for (int d = 0; d < 3; ++d) {
                    out.model.free_dof[3 * (first + n) + d] = 0;
                    out.model.v[3 * (first + n) + d] = T(velocity(d));
                }
        };
        fix(select(e.pins, x, axis_a[k], axis_b[k], path + ".pins"), Vec3<double>::Zero());
        for (std::size_t m = 0; m < e.moving_pins.size(); ++m) {
            const auto& mp = e.moving_pins[m];
            fix(select(mp.nodes, x, axis_a[k], axis_b[k], path + ".moving_pins[" + std::to_string(m) + "].nodes"),
                Vec3<double>(mp.velocity[0], mp.velocity[1], mp.velocity[2]));
        }
    }
    out.colliders = colliders_of<T>(scene);
    if (scene.collision.create_contacts)
        throw InvalidInput("invalid collision.create_contacts: applies to yarn layers, not to triangle cloth");
    if (scene.collision.parallel_angle > 0)
        throw InvalidInput(
            "invalid collision.parallel_angle: applies to yarn segment pairs, not to triangle cloth "
            "(whose parallel edges the mollifier hands to the point-triangle pairs)");
    out.model.collision.enabled = scene.collision.enabled;
    out.model.collision.thickness = T(scene.collision.thickness);
    out.model.collision.stiffness =
        T(scene.collision.stiffness > 0 ? scene.collision.stiffness
                                        : default_collision_stiffness(out.model.mass, scene.time_step));
    out.model.collision.friction = T(scene.collision.friction);
    out.model.collision.onset = T(scene.collision.onset);
    validate_triangle_collision(out.model);
    return out;
}

}  // namespace weft
