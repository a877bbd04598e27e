#pragma once
/// @file curvature_stencils.hpp
/// Plate bending's rest data from a mesh (strain/shell_curvature.hpp): for
/// every triangle a six-vertex patch and its quadratic (`CurvaturePatch`,
/// `mesh_curvature_patches`), then the triangle's curvature stencil
/// (`CurvatureStencil`, `mesh_curvature_stencils`): the Morley quadratic of
/// its corner values and the normal slopes at its edge midpoints, each slope
/// the mean of the two adjacent patches' (so that neighbours share it). Host-
/// side topology only.
///
/// Patch rest coordinates. The triangle keeps its own (u, v). Triangles
/// around its corners are unfolded into that frame one by one across shared
/// edges, each new vertex placed at its rest distances (from that
/// triangle's own (u, v)) to the two vertices of the edge, on the far side.
/// On a flat sheet with one (u, v) chart (grids, OBJ files with `vt`) this
/// reproduces the chart.
///
/// Patch vertices. Where all three edges have a neighbour and the six points
/// determine a quadratic, the patch is the triangle and its three neighbours
/// (the vertices across its edges). Otherwise (an edge on the boundary, or
/// six points on a conic) the three extra vertices are the best-conditioned
/// triple among the vertices of the triangles around the corners: the one
/// whose weights amplify position noise least (`QuadraticPatchFit::
/// sum_squares`). Since the quadratic through any six points in general
/// position reproduces quadratics, boundary triangles measure the same
/// curvature as interior ones, and the free edge's moment-free condition
/// comes out of the energy (a natural boundary condition).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/model/triangle_mesh.hpp>
#include <weft/strain/shell_curvature.hpp>

namespace weft {

/// One triangle's patch: node indices (corners in the triangle's order, then
/// three more) and their rest coordinates in the triangle's rest frame.
struct CurvaturePatch {
    int nodes[curvature_patch_nodes];
    Vec2<double> rest[curvature_patch_nodes];
    bool natural;  ///< the three extra vertices are the neighbours across the edges
};

namespace detail {

inline std::uint64_t edge_key(int a, int b)
{
    const auto lo = static_cast<std::uint64_t>(static_cast<std::uint32_t>(std::min(a, b)));
    const auto hi = static_cast<std::uint64_t>(static_cast<std::uint32_t>(std::max(a, b)));
    return (hi << 32) | lo;
}

/// The point at distances (da, db) from a and b, on the side of the line ab
/// away from `away` (the triangle it is unfolded from).
inline Vec2<double> unfold_point(const Vec2<double>& a, const Vec2<double>& b, double da, double db,
                                 const Vec2<double>& away)
{
    const Vec2<double> e = b - a;
    const double length = e.norm();
    const Vec2<double> t = e / length;
    Vec2<double> normal(-t(1), t(0));
    if (normal.dot(away - a) > 0) normal = -normal;
    const double x = (da * da - db * db + length * length) / (2 * length);
    const double y = std::sqrt(std::max(da * da - x * x, 0.0));
    return a + x * t + y * normal;
}

}  // namespace detail

/// The patch of every triangle of `mesh` (same order as mesh.triangles).
/// @throws InvalidInput naming the triangle when no six vertices around it
///         determine a quadratic (e.g. a strip one triangle wide, or a mesh
///         of fewer than six vertices): plate bending cannot be measured
///         there; the dihedral model can.
inline std::vector<CurvaturePatch> mesh_curvature_patches(const TriangleMesh& mesh)
{
    const int n = mesh.vertex_count();
    const int m = mesh.triangle_count();
    std::unordered_map<std::uint64_t, std::array<int, 2>> edge_faces;
    edge_faces.reserve(static_cast<std::size_t>(3 * m));
    std::vector<std::vector<int>> vertex_faces(static_cast<std::size_t>(n));
    for (int t = 0; t < m; ++t) {
        const auto& tri = mesh.triangles[t];
        for (int c = 0; c < 3; ++c) {
            vertex_faces[tri[c]].push_back(t);
            auto [it, inserted] =
                edge_faces.try_emplace(detail::edge_key(tri[c], tri[(c + 1) % 3]), std::array<int, 2>{t, -1});
            if (!inserted) it->second[1] = t;
        }
    }
    const auto corner_of = [&](int t, int vertex) {
        for (int c = 0; c < 3; ++c)
            if (mesh.triangles[t][c] == vertex) return c;
        return -1;
    };
    const auto rest_distance = [&](int t, int a, int b) {
        return (mesh.rest_uv[t][corner_of(t, a)] - mesh.rest_uv[t][corner_of(t, b)]).norm();
    };

    std::vector<CurvaturePatch> patches(static_cast<std::size_t>(m));
    std::vector<int> local_faces;
    std::vector<int> placed_vertex;
    std::vector<Vec2<double>> placed_point;
    for (int t = 0; t < m; ++t) {
        const auto& tri = mesh.triangles[t];
        CurvaturePatch& patch = patches[static_cast<std::size_t>(t)];
        for (int c = 0; c < 3; ++c) {
            patch.nodes[c] = tri[c];
            patch.rest[c] = mesh.rest_uv[t][c];
        }
        // The natural patch first: each neighbour's far vertex unfolded across its edge.
        bool natural = true;
        for (int c = 0; c < 3 && natural; ++c) {
            const int a = tri[(c + 1) % 3], b = tri[(c + 2) % 3];
            const auto faces = edge_faces.at(detail::edge_key(a, b));
            const int f = faces[0] == t ? faces[1] : faces[0];
            if (f < 0) {
                natural = false;
                break;
            }
            const auto& g = mesh.triangles[f];
            const int far = g[0] != a && g[0] != b ? g[0] : (g[1] != a && g[1] != b ? g[1] : g[2]);
            patch.nodes[3 + c] = far;
            patch.rest[3 + c] = detail::unfold_point(patch.rest[(c + 1) % 3], patch.rest[(c + 2) % 3],
                                                     rest_distance(f, far, a), rest_distance(f, far, b), patch.rest[c]);
        }
        QuadraticPatchFit fit;
        if (natural && fit_quadratic_patch(patch.rest, fit)) {
            patch.natural = true;
            continue;
        }
        // Otherwise unfold all the triangles around the corners into t's rest frame.
        local_faces.clear();
        for (int c = 0; c < 3; ++c)
            for (const int f : vertex_faces[tri[c]])
                if (f != t && std::find(local_faces.begin(), local_faces.end(), f) == local_faces.end())
                    local_faces.push_back(f);
        placed_vertex.assign(tri.begin(), tri.end());
        placed_point.assign(mesh.rest_uv[t].begin(), mesh.rest_uv[t].end());
        const auto index_of = [&](int vertex) {
            const auto it = std::find(placed_vertex.begin(), placed_vertex.end(), vertex);
            return it == placed_vertex.end() ? -1 : static_cast<int>(it - placed_vertex.begin());
        };
        std::vector<char> done(local_faces.size(), 0);
        for (bool progress = true; progress;) {
            progress = false;
            for (std::size_t k = 0; k < local_faces.size(); ++k) {
                if (done[k]) continue;
                const int f = local_faces[k];
                const auto& g = mesh.triangles[f];
                int known = 0, unknown = -1;
                for (int c = 0; c < 3; ++c) {
                    if (index_of(g[c]) >= 0)
                        ++known;
                    else
                        unknown = c;
                }
                if (known == 3) {
                    done[k] = 1;
                    continue;
                }
                if (known != 2) continue;
                const int a = g[(unknown + 1) % 3], b = g[(unknown + 2) % 3];
                // Unfold away from a placed triangle on the other side of edge ab.
                const auto faces = edge_faces.at(detail::edge_key(a, b));
                const int other = faces[0] == f ? faces[1] : faces[0];
                int away = -1;
                if (other >= 0)
                    for (int c = 0; c < 3; ++c)
                        if (mesh.triangles[other][c] != a && mesh.triangles[other][c] != b)
                            away = index_of(mesh.triangles[other][c]);
                if (away < 0) continue;  // the face beyond ab is not placed yet
                const int ia = index_of(a), ib = index_of(b);
                placed_point.push_back(detail::unfold_point(placed_point[ia], placed_point[ib],
                                                            rest_distance(f, g[unknown], a),
                                                            rest_distance(f, g[unknown], b), placed_point[away]));
                placed_vertex.push_back(g[unknown]);
                done[k] = 1;
                progress = true;
            }
        }
        const auto fill = [&](const int(&extra)[3]) {
            for (int k = 0; k < 3; ++k) {
                patch.nodes[3 + k] = placed_vertex[extra[k]];
                patch.rest[3 + k] = placed_point[extra[k]];
            }
        };
        // Best-conditioned triple among the placed vertices beyond the corners.
        const int count = static_cast<int>(placed_vertex.size());
        double best = -1;
        int best_triple[3] = {-1, -1, -1};
        for (int i = 3; i < count; ++i)
            for (int j = i + 1; j < count; ++j)
                for (int k = j + 1; k < count; ++k) {
                    const int triple[3] = {i, j, k};
                    fill(triple);
                    if (!fit_quadratic_patch(patch.rest, fit)) continue;
                    if (best < 0 || fit.sum_squares < best) {
                        best = fit.sum_squares;
                        std::copy(triple, triple + 3, best_triple);
                    }
                }
        if (best < 0) {
            throw InvalidInput("triangle " + std::to_string(t) +
                               ": plate bending needs six vertices around it that determine a quadratic surface, "
                               "and its neighbourhood has none (" +
                               std::to_string(count) +
                               " vertices); use \"bending\": {\"model\": \"dihedral\"} for this mesh");
        }
        fill(best_triple);
        patch.natural = false;
    }
    return patches;
}

/// The curvature stencil of one triangle (strain/shell_curvature.hpp):
/// vertices (the triangle's corners in slots 0–2, unused slots repeat corner
/// 0 with zero weights) and the weights of b = n · Σ c_i x_i.
struct CurvatureStencil {
    int nodes[curvature_stencil_nodes];
    double coefficient[curvature_stencil_nodes][3];
    int count;         ///< slots in use
    double rest_area;  ///< the triangle's rest area (m²)
};

/// The stencils of every triangle of `mesh` (file comment of
/// strain/shell_curvature.hpp: a Morley quadratic per triangle whose edge
/// slopes are shared with the neighbour).
/// @throws InvalidInput naming the triangle when its patch cannot be built
///         (mesh_curvature_patches) or its stencil needs more than
///         curvature_stencil_nodes vertices.
inline std::vector<CurvatureStencil> mesh_curvature_stencils(const TriangleMesh& mesh)
{
    const std::vector<CurvaturePatch> patches = mesh_curvature_patches(mesh);
    const int m = mesh.triangle_count();
    std::vector<QuadraticPatchFit> fits(static_cast<std::size_t>(m));
    for (int t = 0; t < m; ++t)
        if (!fit_quadratic_patch(patches[t].rest, fits[t]))
            throw InvalidInput("triangle " + std::to_string(t) + ": its curvature patch admits no unique quadratic");
    std::unordered_map<std::uint64_t, std::array<int, 2>> edge_faces;
    edge_faces.reserve(static_cast<std::size_t>(3 * m));
    for (int t = 0; t < m; ++t)
        for (int c = 0; c < 3; ++c) {
            const auto& tri = mesh.triangles[t];
            auto [it, inserted] =
                edge_faces.try_emplace(detail::edge_key(tri[c], tri[(c + 1) % 3]), std::array<int, 2>{t, -1});
            if (!inserted) it->second[1] = t;
        }
    // ν of edge (a, b) in the frame of face f: the in-plane unit normal pointing
    // from the edge's first face into its second (outward on the boundary).
    const auto edge_normal = [&](int f, int a, int b, bool first) {
        const auto& tri = mesh.triangles[f];
        Vec2<double> pa = Vec2<double>::Zero(), pb = Vec2<double>::Zero(), pc = Vec2<double>::Zero();
        for (int c = 0; c < 3; ++c) {
            if (tri[c] == a)
                pa = patches[f].rest[c];
            else if (tri[c] == b)
                pb = patches[f].rest[c];
            else
                pc = patches[f].rest[c];
        }
        const Vec2<double> d = (pb - pa).normalized();
        Vec2<double> nu(d(1), -d(0));
        const bool towards_c = nu.dot(pc - pa) > 0;
        if (towards_c == first) nu = -nu;
        return std::pair<Vec2<double>, Vec2<double>>{nu, 0.5 * (pa + pb)};
    };
    // The shared slope ∂/∂ν at an edge's midpoint: the mean of its faces' patch gradients.
    std::unordered_map<std::uint64_t, std::vector<std::pair<int, double>>> slopes;
    const auto slope_of = [&](int a, int b) -> const std::vector<std::pair<int, double>>& {
        const std::uint64_t key = detail::edge_key(a, b);
        auto found = slopes.find(key);
        if (found != slopes.end()) return found->second;
        const std::array<int, 2> faces = edge_faces.at(key);
        const int face_count = faces[1] < 0 ? 1 : 2;
        std::vector<std::pair<int, double>> weights;
        for (int k = 0; k < face_count; ++k) {
            const auto [nu, mid] = edge_normal(faces[k], a, b, k == 0);
            double g[curvature_patch_nodes][2];
            quadratic_patch_gradient_weights(fits[faces[k]], mid, g);
            for (int j = 0; j < curvature_patch_nodes; ++j)
                weights.emplace_back(patches[faces[k]].nodes[j], (nu(0) * g[j][0] + nu(1) * g[j][1]) / face_count);
        }
        return slopes.emplace(key, std::move(weights)).first->second;
    };

    std::vector<CurvatureStencil> stencils(static_cast<std::size_t>(m));
    for (int t = 0; t < m; ++t) {
        const auto& tri = mesh.triangles[t];
        const CurvaturePatch& patch = patches[t];
        const Vec2<double> center = (patch.rest[0] + patch.rest[1] + patch.rest[2]) / 3;
        double scale = 0;
        for (int c = 0; c < 3; ++c) scale += (patch.rest[c] - center).squaredNorm() / 3;
        scale = std::sqrt(scale);
        // Morley's quadratic: values at the corners, slopes ∂/∂ν at the edge midpoints.
        double rows[6][6];
        for (int c = 0; c < 3; ++c) {
            const Vec2<double> s = (patch.rest[c] - center) / scale;
            const double row[6] = {1, s(0), s(1), s(0) * s(0), s(0) * s(1), s(1) * s(1)};
            std::copy(row, row + 6, rows[c]);
        }
        for (int k = 0; k < 3; ++k) {
            const int a = tri[(k + 1) % 3], b = tri[(k + 2) % 3];
            const bool first = edge_faces.at(detail::edge_key(a, b))[0] == t;
            const auto [nu, mid] = edge_normal(t, a, b, first);
            const Vec2<double> s = (mid - center) / scale;
            const double row[6] = {0, nu(0), nu(1), 2 * s(0) * nu(0), s(1) * nu(0) + s(0) * nu(1), 2 * s(1) * nu(1)};
            // d/dν of the monomials of s = (p − center)/scale, hence the 1/scale.
            for (int j = 0; j < 6; ++j) rows[3 + k][j] = row[j] / scale;
        }
        double inverse[6][6];
        if (!(detail::invert_6x6(rows, inverse) > 1e-12))
            throw InvalidInput("triangle " + std::to_string(t) + ": degenerate rest triangle for plate bending");
        // Hessian weights of the six Morley values, then the slopes expanded into vertices.
        std::vector<std::pair<int, Vec3<double>>> merged;
        const auto add = [&](int node, const Vec3<double>& w) {
            for (auto& entry : merged)
                if (entry.first == node) {
                    entry.second += w;
                    return;
                }
            merged.emplace_back(node, w);
        };
        const double s2 = scale * scale;
        for (int c = 0; c < 3; ++c) add(tri[c], Vec3<double>::Zero());
        for (int j = 0; j < 6; ++j) {
            const Vec3<double> h(2 * inverse[3][j] / s2, 2 * inverse[5][j] / s2, inverse[4][j] / s2);
            if (j < 3) {
                add(tri[j], h);
                continue;
            }
            const int k = j - 3;
            for (const auto& [node, w] : slope_of(tri[(k + 1) % 3], tri[(k + 2) % 3])) add(node, w * h);
        }
        double largest = 0;
        for (const auto& entry : merged) largest = std::max(largest, entry.second.cwiseAbs().maxCoeff());
        CurvatureStencil& stencil = stencils[static_cast<std::size_t>(t)];
        stencil.count = 0;
        for (std::size_t e = 0; e < merged.size(); ++e) {
            if (e >= 3 && !(merged[e].second.cwiseAbs().maxCoeff() > 1e-12 * largest)) continue;  // cancelled
            if (stencil.count == curvature_stencil_nodes) {
                throw InvalidInput("triangle " + std::to_string(t) + ": its plate-bending stencil needs more than " +
                                   std::to_string(curvature_stencil_nodes) +
                                   " vertices (an unusually irregular neighbourhood); use \"bending\": "
                                   "{\"model\": \"dihedral\"} for this mesh");
            }
            stencil.nodes[stencil.count] = merged[e].first;
            for (int k = 0; k < 3; ++k) stencil.coefficient[stencil.count][k] = merged[e].second(k);
            ++stencil.count;
        }
        for (int slot = stencil.count; slot < curvature_stencil_nodes; ++slot) {
            stencil.nodes[slot] = tri[0];
            for (int k = 0; k < 3; ++k) stencil.coefficient[slot][k] = 0;
        }
        const Vec2<double> e1 = patch.rest[1] - patch.rest[0], e2 = patch.rest[2] - patch.rest[0];
        stencil.rest_area = 0.5 * std::abs(e1(0) * e2(1) - e1(1) * e2(0));
    }
    return stencils;
}

}  // namespace weft
