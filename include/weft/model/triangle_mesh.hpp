#pragma once
/// @file triangle_mesh.hpp
/// Triangle meshes for cloth: a rectangular grid generator (regular or
/// alternating diagonals), an OBJ loader for user garments, and the hinge
/// (interior edge) list that dihedral bending needs. Host-side topology only;
/// triangle_model.hpp turns a mesh into a simulation model.
///
/// Rest (material-space) coordinates: every triangle corner carries a 2D
/// (u, v) rest coordinate in metres — u along the warp, v along the weft, the
/// axes of anisotropic materials. Grids set (u, v) = (x, y) of the flat sheet.
/// OBJ files use their texture coordinates (`vt`, scaled by `uv_scale`) when
/// every face has them; otherwise each triangle is flattened isometrically
/// from its 3D rest shape with u along its first edge (fine for isotropic
/// StVK; an anisotropic material then needs `vt` to know its warp direction).

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/types.hpp>

namespace weft {

/// How the quads of a grid are split.
enum class DiagonalPattern {
    regular,      ///< every quad split along the same diagonal
    alternating,  ///< diagonals alternate in a checkerboard (no preferred shear direction)
};

/// A triangle mesh with per-corner rest coordinates.
struct TriangleMesh {
    std::vector<Vec3<double>> positions;               ///< #vertices rest/initial positions (m)
    std::vector<std::array<int, 3>> triangles;         ///< #triangles vertex indices
    std::vector<std::array<Vec2<double>, 3>> rest_uv;  ///< #triangles × 3 corner (u, v) rest coordinates (m)

    int vertex_count() const { return static_cast<int>(positions.size()); }
    int triangle_count() const { return static_cast<int>(triangles.size()); }
};

/// An interior edge (x1, x2) shared by two triangles with opposite vertices
/// x0 and x3: the stencil of a dihedral bending element.
struct Hinge {
    int nodes[4];  ///< x0, x1, x2, x3
};

/// A flat nx × ny-vertex grid of size width × height in the xy-plane,
/// centred at the origin; vertex (i, j) is index j·nx + i at
/// (−w/2 + i·w/(nx−1), −h/2 + j·h/(ny−1), 0), with (u, v) = (x + w/2, y + h/2).
/// @throws InvalidInput for nx or ny < 2 or non-positive sizes.
inline TriangleMesh make_triangle_grid(int nx, int ny, double width, double height,
                                       DiagonalPattern pattern = DiagonalPattern::alternating)
{
    if (nx < 2) throw InvalidInput(detail::describe("resolution[0] (nx)", nx, "must be >= 2"));
    if (ny < 2) throw InvalidInput(detail::describe("resolution[1] (ny)", ny, "must be >= 2"));
    require_positive("size[0] (width)", width);
    require_positive("size[1] (height)", height);
    TriangleMesh mesh;
    mesh.positions.reserve(static_cast<std::size_t>(nx) * ny);
    std::vector<Vec2<double>> uv;
    for (int j = 0; j < ny; ++j) {
        for (int i = 0; i < nx; ++i) {
            const double u = width * i / (nx - 1);
            const double v = height * j / (ny - 1);
            mesh.positions.emplace_back(u - 0.5 * width, v - 0.5 * height, 0.0);
            uv.emplace_back(u, v);
        }
    }
    const auto add = [&](int a, int b, int c) {
        mesh.triangles.push_back({a, b, c});
        mesh.rest_uv.push_back({uv[a], uv[b], uv[c]});
    };
    for (int j = 0; j + 1 < ny; ++j) {
        for (int i = 0; i + 1 < nx; ++i) {
            const int v00 = j * nx + i, v10 = v00 + 1, v01 = v00 + nx, v11 = v01 + 1;
            const bool flip = pattern == DiagonalPattern::alternating && ((i + j) % 2 == 1);
            if (!flip) {  // diagonal v00–v11
                add(v00, v10, v11);
                add(v00, v11, v01);
            } else {  // diagonal v10–v01
                add(v00, v10, v01);
                add(v10, v11, v01);
            }
        }
    }
    return mesh;
}

/// Appends `part` to `mesh` as a separate piece (its vertex indices shifted
/// past `mesh`'s vertices): several cloths in one model.
inline void append_mesh(TriangleMesh& mesh, const TriangleMesh& part)
{
    const int offset = mesh.vertex_count();
    mesh.positions.insert(mesh.positions.end(), part.positions.begin(), part.positions.end());
    for (const auto& t : part.triangles) mesh.triangles.push_back({t[0] + offset, t[1] + offset, t[2] + offset});
    mesh.rest_uv.insert(mesh.rest_uv.end(), part.rest_uv.begin(), part.rest_uv.end());
}

namespace mesh_detail {

inline int obj_index(const std::string& token, int count, const std::string& path, int line, const char* what)
{
    int index = 0;
    try {
        std::size_t used = 0;
        index = std::stoi(token, &used);
        if (used != token.size()) throw std::invalid_argument(token);
    } catch (const std::exception&) {
        throw InvalidInput(path + ":" + std::to_string(line) + ": invalid " + what + " index '" + token + "'");
    }
    const int resolved = index < 0 ? count + index : index - 1;  // OBJ: 1-based, negative = relative
    if (resolved < 0 || resolved >= count) {
        throw InvalidInput(path + ":" + std::to_string(line) + ": " + what + " index " + token + " out of range (" +
                           std::to_string(count) + " defined so far)");
    }
    return resolved;
}

/// Isometric flattening of a 3D triangle: u along edge 0→1.
inline std::array<Vec2<double>, 3> flatten(const Vec3<double>& a, const Vec3<double>& b, const Vec3<double>& c)
{
    const Vec3<double> e1 = b - a, e2 = c - a;
    const double l1 = e1.norm();
    const Vec3<double> t = l1 > 0 ? Vec3<double>(e1 / l1) : Vec3<double>(1, 0, 0);
    const Vec3<double> n = e1.cross(e2);
    const Vec3<double> s = n.cross(t).normalized();
    return {Vec2<double>(0, 0), Vec2<double>(l1, 0), Vec2<double>(e2.dot(t), s.allFinite() ? e2.dot(s) : 0.0)};
}

}  // namespace mesh_detail

/// Reads `v`, `vt` and `f` records of OBJ text from `in` (polygons are fan-
/// triangulated; `vn`, groups, materials and other records are ignored).
/// `path` names the text in errors.
/// @param[in] uv_scale  metres per texture-coordinate unit (used when every face has `vt`)
/// @throws InvalidInput naming the source, line and record for malformed
///         numbers, out-of-range indices, a read error or an empty mesh.
inline TriangleMesh parse_obj_mesh(std::istream& in, const std::string& path, double uv_scale = 1.0)
{
    require_positive("uv_scale", uv_scale);
    TriangleMesh mesh;
    std::vector<Vec2<double>> texcoords;
    std::vector<std::array<int, 3>> corner_uv;
    bool all_faces_textured = true;
    std::string line;
    int line_number = 0;
    while (std::getline(in, line)) {
        ++line_number;
        std::istringstream ls(line);
        std::string tag;
        if (!(ls >> tag) || tag[0] == '#') continue;
        const auto where = [&]() { return path + ":" + std::to_string(line_number) + ": "; };
        if (tag == "v" || tag == "vt") {
            double x[3] = {0, 0, 0};
            const int need = tag == "v" ? 3 : 2;
            for (int k = 0; k < need; ++k) {
                if (!(ls >> x[k]) || !std::isfinite(x[k]))
                    throw InvalidInput(where() + "invalid '" + tag + "' record: '" + line + "'");
            }
            if (tag == "v")
                mesh.positions.emplace_back(x[0], x[1], x[2]);
            else
                texcoords.emplace_back(x[0], x[1]);
        } else if (tag == "f") {
            std::vector<int> verts, uvs;
            std::string corner;
            while (ls >> corner) {
                const std::size_t slash = corner.find('/');
                verts.push_back(
                    mesh_detail::obj_index(corner.substr(0, slash), mesh.vertex_count(), path, line_number, "vertex"));
                int t = -1;
                if (slash != std::string::npos) {
                    const std::size_t slash2 = corner.find('/', slash + 1);
                    const std::string tt =
                        corner.substr(slash + 1, slash2 == std::string::npos ? std::string::npos : slash2 - slash - 1);
                    if (!tt.empty())
                        t = mesh_detail::obj_index(tt, static_cast<int>(texcoords.size()), path, line_number,
                                                   "texture");
                }
                uvs.push_back(t);
            }
            if (verts.size() < 3) throw InvalidInput(where() + "face with fewer than 3 vertices: '" + line + "'");
            for (std::size_t k = 1; k + 1 < verts.size(); ++k) {
                mesh.triangles.push_back({verts[0], verts[k], verts[k + 1]});
                corner_uv.push_back({uvs[0], uvs[k], uvs[k + 1]});
                if (uvs[0] < 0 || uvs[k] < 0 || uvs[k + 1] < 0) all_faces_textured = false;
            }
        }
    }
    if (in.bad()) throw InvalidInput("cannot read mesh file '" + path + "'");
    if (mesh.triangles.empty()) throw InvalidInput("mesh file '" + path + "' has no faces");
    mesh.rest_uv.resize(mesh.triangles.size());
    for (std::size_t t = 0; t < mesh.triangles.size(); ++t) {
        const auto& tri = mesh.triangles[t];
        if (all_faces_textured) {
            for (int c = 0; c < 3; ++c) mesh.rest_uv[t][c] = uv_scale * texcoords[corner_uv[t][c]];
        } else {
            mesh.rest_uv[t] =
                mesh_detail::flatten(mesh.positions[tri[0]], mesh.positions[tri[1]], mesh.positions[tri[2]]);
        }
    }
    return mesh;
}

/// Loads an OBJ file (parse_obj_mesh).
/// @throws InvalidInput naming the file, line and record for unreadable
///         files (a directory included), malformed numbers, out-of-range
///         indices or an empty mesh.
inline TriangleMesh load_obj_mesh(const std::string& path, double uv_scale = 1.0)
{
    std::error_code ec;
    // A directory opens as a stream on Linux but reads as empty: say so instead of "no faces".
    if (std::filesystem::is_directory(path, ec))
        throw InvalidInput("cannot open mesh file '" + path + "': is a directory, not a file");
    std::ifstream in(path);
    if (!in) throw InvalidInput("cannot open mesh file '" + path + "'");
    return parse_obj_mesh(in, path, uv_scale);
}

/// Every interior edge shared by exactly two triangles, as a hinge
/// (x0, x1, x2, x3) with (x1, x2) the shared edge in the orientation of the
/// first triangle, x0 its opposite vertex and x3 the second triangle's.
/// Boundary edges (one triangle) have no hinge.
/// @throws InvalidInput for a triangle listed twice (the same three vertices
///         in any order), naming both indices, and for a non-manifold edge
///         (three or more triangles).
inline std::vector<Hinge> mesh_hinges(const TriangleMesh& mesh)
{
    std::map<std::array<int, 3>, int> first_with_vertices;  // sorted vertices → first triangle
    for (int t = 0; t < mesh.triangle_count(); ++t) {
        std::array<int, 3> key = mesh.triangles[t];
        std::sort(key.begin(), key.end());
        const auto [it, inserted] = first_with_vertices.emplace(key, t);
        if (!inserted) {
            throw InvalidInput("duplicate triangle: triangles " + std::to_string(it->second) + " and " +
                               std::to_string(t) + " have the same vertices (" + std::to_string(key[0]) + ", " +
                               std::to_string(key[1]) + ", " + std::to_string(key[2]) + ")");
        }
    }
    std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> edges;  // (min, max) → (triangle, corner opposite)
    for (int t = 0; t < mesh.triangle_count(); ++t) {
        const auto& tri = mesh.triangles[t];
        for (int c = 0; c < 3; ++c) {
            const int a = tri[(c + 1) % 3], b = tri[(c + 2) % 3];
            edges[{std::min(a, b), std::max(a, b)}].push_back({t, c});
        }
    }
    std::vector<Hinge> hinges;
    for (const auto& [edge, faces] : edges) {
        if (faces.size() == 1) continue;
        if (faces.size() > 2) {
            throw InvalidInput("non-manifold mesh: edge (" + std::to_string(edge.first) + ", " +
                               std::to_string(edge.second) + ") is shared by " + std::to_string(faces.size()) +
                               " triangles");
        }
        const auto& t0 = mesh.triangles[faces[0].first];
        const auto& t1 = mesh.triangles[faces[1].first];
        const int c0 = faces[0].second;
        Hinge h;
        h.nodes[0] = t0[c0];
        h.nodes[1] = t0[(c0 + 1) % 3];
        h.nodes[2] = t0[(c0 + 2) % 3];
        h.nodes[3] = t1[faces[1].second];
        hinges.push_back(h);
    }
    return hinges;
}

}  // namespace weft
