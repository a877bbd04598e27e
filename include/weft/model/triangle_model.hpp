#pragma once
/// @file triangle_model.hpp
/// Triangle-mesh cloth as the steppers see it: 3-DoF nodes (x), membrane
/// triangles with their rest states, plate-bending triangles or hinges for
/// dihedral bending, lumped masses, the DoF filter, and the material.
///
/// Mass is lumped: each triangle gives a third of ρh·Ā to each corner, so M
/// is diagonal (the usual choice for cloth; a consistent mass would couple
/// neighbours without changing the damping behaviour studied here).
/// Rest shape (`TriangleRestShape`): flat (b̄ = 0, θ̄ = 0: cloth is woven
/// flat, whatever shape the mesh is placed in) or the mesh's own positions
/// (b̄ and θ̄ measured on them, so a curved garment or shell stays as it is
/// given). Lengths and areas always come from the rest (u, v).

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/element/cloth_contact.hpp>
#include <weft/element/triangle_elements.hpp>
#include <weft/model/curvature_stencils.hpp>
#include <weft/model/triangle_mesh.hpp>

namespace weft {

template <typename T>
struct TriangleModel {
    std::vector<T> q;                     ///< 3 × #nodes positions
    std::vector<T> v;                     ///< 3 × #nodes velocities
    std::vector<unsigned char> free_dof;  ///< 3 × #nodes filter: 1 free, 0 prescribed
    std::vector<T> mass;                  ///< #nodes lumped masses (kg)
    std::vector<TriangleElement<T>> triangles;
    std::vector<HingeElement<T>> hinges;  ///< material.bending == dihedral
    std::vector<PlateElement<T>> plates;  ///< material.bending == plate (one per triangle), with a stiffness or damping
    TriangleMaterial<T> material;
    /// The GNATV curves when material.membrane == MembraneModel::tabulated.
    std::optional<TabulatedMembraneDensity<T>> tabulated;
    /// Self- and cloth–cloth collision (off by default; cloth_contact.hpp).
    ClothCollision<T> collision;

    int node_count() const { return static_cast<int>(q.size() / triangle_node_dofs); }
    Vec3<T> position(int node) const
    {
        return Vec3<T>(q[triangle_node_dofs * node], q[triangle_node_dofs * node + 1],
                       q[triangle_node_dofs * node + 2]);
    }
};

/// The shape in which bending is at rest.
enum class TriangleRestShape {
    flat,  ///< b̄ = 0, θ̄ = 0 (cloth, woven flat)
    mesh,  ///< the mesh's positions (TriangleMesh::positions)
};

/// Validates a material; messages name the scene keys.
template <typename T>
inline void validate_triangle_material(const TriangleMaterial<T>& m, bool has_tabulated)
{
    if (m.membrane == MembraneModel::stvk) {
        require_finite("material.lambda x thickness", m.stvk.lambda);
        require_non_negative("material.mu x thickness", m.stvk.mu);
        require_non_negative("material.lambda + mu", m.stvk.lambda + m.stvk.mu);
    } else if (!has_tabulated) {
        throw InvalidInput("material.model 'tabulated' needs its curves (material.file)");
    }
    require_positive("material.density x thickness", m.areal_density);
    require_non_negative("material.bending", m.bending_stiffness);
    if (!(m.bending_poisson > T(-1) && m.bending_poisson < T(1)))
        throw InvalidInput(detail::describe("bending.poisson", m.bending_poisson,
                                            "must be in (-1, 1) (a positive definite plate bending density)"));
    require_finite("damping.lambda x thickness", m.membrane_damping.lambda);
    require_non_negative("damping.mu x thickness", m.membrane_damping.mu);
    require_non_negative("damping.lambda + mu", m.membrane_damping.lambda + m.membrane_damping.mu);
    require_non_negative("damping.bending", m.bending_damping);
    require_non_negative("damping.beta", m.rayleigh_beta);
    require_non_negative("contact offset", m.contact_offset);
}

namespace triangle_model_detail {

/// Calls f(altitude, edge length sum) per triangle at the model's positions.
template <typename T, class F>
void for_each_triangle_shape(const TriangleModel<T>& model, F&& f)
{
    for (const TriangleElement<T>& t : model.triangles) {
        const Vec3<T> a = model.position(t.nodes[0]), b = model.position(t.nodes[1]), c = model.position(t.nodes[2]);
        const T ab = (b - a).norm(), bc = (c - b).norm(), ca = (a - c).norm();
        const T longest = std::max(ab, std::max(bc, ca));
        const T twice_area = (b - a).cross(c - a).norm();
        f(longest > T(0) ? twice_area / longest : T(0), ab + bc + ca);
    }
}

}  // namespace triangle_model_detail

/// Checks the model's collision settings: the values, and a thickness below
/// the smallest triangle altitude at the model's positions (a thicker
/// cloth's own neighbouring triangles would push each other apart).
template <typename T>
inline void validate_triangle_collision(const TriangleModel<T>& model)
{
    validate_cloth_collision(model.collision);
    if (!model.collision.enabled) return;
    if (model.collision.parallel_angle > T(0))
        throw InvalidInput(detail::describe("collision.parallel_angle", model.collision.parallel_angle,
                                            "applies to yarn segment pairs, not to triangle cloth (leave it 0)"));
    T smallest = std::numeric_limits<T>::infinity();
    triangle_model_detail::for_each_triangle_shape(model,
                                                   [&](T altitude, T) { smallest = std::min(smallest, altitude); });
    if (!(model.collision.thickness < smallest))
        throw InvalidInput(
            detail::describe("collision.thickness", model.collision.thickness,
                             ("must be below the smallest triangle altitude of the mesh, " +
                              std::to_string(static_cast<double>(smallest)) + " (neighbouring triangles would collide)")
                                 .c_str()));
}

/// The collision broad phase's cell size: the mean edge length at the
/// model's positions (at least the collision thickness).
template <typename T>
inline T cloth_collision_cell(const TriangleModel<T>& model)
{
    T sum = T(0);
    triangle_model_detail::for_each_triangle_shape(model, [&](T, T edges) { sum += edges; });
    const T mean = model.triangles.empty() ? T(0) : sum / T(3 * model.triangles.size());
    return std::max(mean, model.collision.thickness);
}

/// Builds the model of a mesh placed at `positions` (3 × #vertices; the
/// mesh's own positions when empty). Every vertex starts free and at rest.
/// Plate bending builds one element per triangle (curvature_stencils.hpp) when
/// it has a stiffness or a damping, none otherwise; dihedral bending one
/// hinge per interior edge.
/// @throws InvalidInput for degenerate rest triangles (naming the triangle),
///         indices out of range, or bad material values.
template <typename T>
inline TriangleModel<T> build_triangle_model(const TriangleMesh& mesh, const TriangleMaterial<T>& material,
                                             std::optional<TabulatedMembraneDensity<T>> tabulated = std::nullopt,
                                             const std::vector<T>& positions = {},
                                             TriangleRestShape rest_shape = TriangleRestShape::flat)
{
    validate_triangle_material(material, tabulated.has_value());
    const int n = mesh.vertex_count();
    TriangleModel<T> model;
    model.material = material;
    model.tabulated = tabulated;
    if (!positions.empty() && positions.size() != static_cast<std::size_t>(3 * n))
        throw InvalidInput(detail::describe("positions.size()", positions.size(), "must be 3 x #vertices"));
    model.q.resize(3 * static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < 3; ++c)
            model.q[3 * i + c] = positions.empty() ? static_cast<T>(mesh.positions[i](c)) : positions[3 * i + c];
    for (const T x : model.q)
        if (!std::isfinite(static_cast<double>(x))) throw InvalidInput("invalid mesh positions: non-finite value");
    model.v.assign(model.q.size(), T(0));
    model.free_dof.assign(model.q.size(), 1);
    model.mass.assign(n, T(0));
    std::vector<double> areas(mesh.triangles.size());
    for (int t = 0; t < mesh.triangle_count(); ++t) {
        const auto& tri = mesh.triangles[t];
        for (int c = 0; c < 3; ++c) {
            if (tri[c] < 0 || tri[c] >= n) {
                throw InvalidInput("triangle " + std::to_string(t) + ": vertex index " + std::to_string(tri[c]) +
                                   " out of range (" + std::to_string(n) + " vertices)");
            }
        }
        TriangleElement<T> e;
        for (int c = 0; c < 3; ++c) e.nodes[c] = tri[c];
        try {
            const auto& uv = mesh.rest_uv[t];
            e.rest = make_triangle_rest<T>(uv[0].cast<T>(), uv[1].cast<T>(), uv[2].cast<T>());
        } catch (const InvalidInput& error) {
            throw InvalidInput("triangle " + std::to_string(t) + ": " + error.what());
        }
        areas[t] = static_cast<double>(e.rest.area);
        for (int c = 0; c < 3; ++c) model.mass[tri[c]] += material.areal_density * e.rest.area / T(3);
        model.triangles.push_back(e);
    }
    // Also validates the topology (duplicate triangles, non-manifold edges) for both models.
    const std::vector<Hinge> hinges = mesh_hinges(mesh);
    const auto rest_position = [&](int vertex) { return mesh.positions[vertex]; };
    if (material.bending == BendingModel::plate) {
        if (material.bending_stiffness == T(0) && material.bending_damping == T(0)) return model;
        const std::vector<CurvatureStencil> stencils = mesh_curvature_stencils(mesh);
        model.plates.reserve(stencils.size());
        for (std::size_t t = 0; t < stencils.size(); ++t) {
            PlateElement<T> e;
            Vec<double, 3 * curvature_stencil_nodes> rest_q;
            for (int k = 0; k < curvature_stencil_nodes; ++k) {
                e.nodes[k] = stencils[t].nodes[k];
                rest_q.segment<3>(3 * k) = rest_position(e.nodes[k]);
            }
            try {
                e.rest = make_shell_curvature_rest<T>(stencils[t].coefficient, stencils[t].rest_area,
                                                      rest_shape == TriangleRestShape::mesh ? &rest_q : nullptr);
            } catch (const InvalidInput& error) {
                throw InvalidInput("triangle " + std::to_string(t) + ": " + error.what());
            }
            model.plates.push_back(e);
        }
        return model;
    }
    // Triangle index of each (min, max) edge, to find a hinge's two areas.
    std::map<std::pair<int, int>, std::vector<int>> edge_triangles;
    for (int t = 0; t < mesh.triangle_count(); ++t) {
        const auto& tri = mesh.triangles[t];
        for (int c = 0; c < 3; ++c) {
            const int a = tri[c], b = tri[(c + 1) % 3];
            edge_triangles[{std::min(a, b), std::max(a, b)}].push_back(t);
        }
    }
    for (const Hinge& h : hinges) {
        const auto& faces = edge_triangles[{std::min(h.nodes[1], h.nodes[2]), std::max(h.nodes[1], h.nodes[2])}];
        // Rest edge length from the first triangle's (u, v) of the shared edge.
        const auto& tri = mesh.triangles[faces[0]];
        Vec2<double> p1 = Vec2<double>::Zero(), p2 = Vec2<double>::Zero();
        for (int c = 0; c < 3; ++c) {
            if (tri[c] == h.nodes[1]) p1 = mesh.rest_uv[faces[0]][c];
            if (tri[c] == h.nodes[2]) p2 = mesh.rest_uv[faces[0]][c];
        }
        HingeElement<T> e;
        for (int c = 0; c < 4; ++c) e.nodes[c] = h.nodes[c];
        T rest_angle = T(0);
        if (rest_shape == TriangleRestShape::mesh) {
            Vec<double, 12> rest_q;
            for (int c = 0; c < 4; ++c) rest_q.segment<3>(3 * c) = rest_position(h.nodes[c]);
            rest_angle = static_cast<T>(dihedral_angle_derivatives<double>(rest_q).angle);
        }
        e.rest = make_hinge_rest<T>(rest_angle, static_cast<T>((p2 - p1).norm()), static_cast<T>(areas[faces[0]]),
                                    static_cast<T>(areas[faces[1]]));
        model.hinges.push_back(e);
    }
    return model;
}

}  // namespace weft
