// Triangle meshes for cloth (model/triangle_mesh.hpp) and the model built from
// them (model/triangle_model.hpp): grid counts, diagonal patterns and
// orientation, hinges as the interior edges with their opposite vertices, flat
// hinges at zero angle, rest areas and lumped masses, the OBJ loader
// (positions, fan triangulation, texture and flattened rest coordinates,
// errors naming file and line, directories), non-manifold edges, triangles
// listed twice and degenerate rest triangles.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <weft/model/triangle_mesh.hpp>
#include <weft/model/triangle_model.hpp>
#include <weft/strain/dihedral.hpp>

using weft::DiagonalPattern;
using weft::Hinge;
using weft::TriangleMesh;
using Vec2 = weft::Vec2<double>;
using Vec3 = weft::Vec3<double>;

namespace {

constexpr DiagonalPattern both_patterns[] = {DiagonalPattern::regular, DiagonalPattern::alternating};

/// (nx, ny) resolutions: the smallest grid, odd and even, wider and taller.
const std::vector<std::pair<int, int>> grid_resolutions{{2, 2}, {3, 5}, {6, 4}, {7, 7}};

using Edge = std::pair<int, int>;

Edge edge_key(int a, int b)
{
    return {std::min(a, b), std::max(a, b)};
}

/// Triangles of every (min, max) edge.
std::map<Edge, std::vector<int>> edge_triangles(const TriangleMesh& mesh)
{
    std::map<Edge, std::vector<int>> edges;
    for (int t = 0; t < mesh.triangle_count(); ++t)
        for (int c = 0; c < 3; ++c) edges[edge_key(mesh.triangles[t][c], mesh.triangles[t][(c + 1) % 3])].push_back(t);
    return edges;
}

int interior_edge_count(int nx, int ny)
{
    const int all_edges = (nx - 1) * ny + nx * (ny - 1) + (nx - 1) * (ny - 1);
    const int boundary_edges = 2 * (nx - 1) + 2 * (ny - 1);
    return all_edges - boundary_edges;
}

double area_3d(const Vec3& a, const Vec3& b, const Vec3& c)
{
    return 0.5 * (b - a).cross(c - a).norm();
}

/// Signed area of a 2D triangle (> 0 counter-clockwise).
double signed_area_2d(const Vec2& a, const Vec2& b, const Vec2& c)
{
    const Vec2 e1 = b - a, e2 = c - a;
    return 0.5 * (e1(0) * e2(1) - e1(1) * e2(0));
}

Vec3 vertex(const TriangleMesh& mesh, int i)
{
    return mesh.positions[static_cast<std::size_t>(i)];
}

/// True when (a, b, c) is a cyclic rotation of the triangle's corners.
bool same_oriented_triangle(const std::array<int, 3>& tri, int a, int b, int c)
{
    for (int r = 0; r < 3; ++r)
        if (tri[r] == a && tri[(r + 1) % 3] == b && tri[(r + 2) % 3] == c) return true;
    return false;
}

Eigen::Matrix<double, 12, 1> hinge_positions(const std::vector<Vec3>& positions, const int (&nodes)[4])
{
    Eigen::Matrix<double, 12, 1> q;
    for (int k = 0; k < 4; ++k) q.segment<3>(3 * k) = positions[static_cast<std::size_t>(nodes[k])];
    return q;
}

/// Dihedral hinges: these tests are about the mesh's hinges and masses, on
/// grids down to 2 × 2 vertices, too small for plate bending's stencils.
weft::TriangleMaterial<double> sheet_material(weft::BendingModel bending = weft::BendingModel::dihedral)
{
    weft::TriangleMaterial<double> m;
    m.stvk = weft::StVKDensity<double>{2000.0, 1000.0};
    m.areal_density = 0.2;
    m.bending = bending;
    m.bending_stiffness = 1e-4;
    return m;
}

/// An OBJ file in the temporary directory, removed when it goes out of scope.
class TempObj {
public:
    explicit TempObj(const std::string& text)
    {
        static int counter = 0;
        std::random_device seed;
        m_path = (std::filesystem::temp_directory_path() /
                  ("weft_test_triangle_mesh_" + std::to_string(seed()) + "_" + std::to_string(counter++) + ".obj"))
                     .string();
        std::ofstream out(m_path);
        out << text;
        REQUIRE(out.good());
    }
    ~TempObj()
    {
        std::error_code ignored;
        std::filesystem::remove(m_path, ignored);
    }
    TempObj(const TempObj&) = delete;
    TempObj& operator=(const TempObj&) = delete;

    const std::string& path() const { return m_path; }

private:
    std::string m_path;
};

/// The message of the InvalidInput that `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f)
{
    try {
        f();
    } catch (const weft::InvalidInput& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("triangle grid: nx·ny vertices and 2(nx−1)(ny−1) triangles at the documented places",
          "[model][triangle_mesh][grid]")
{
    const double width = 1.5, height = 0.8;
    int checked = 0;
    for (const DiagonalPattern pattern : both_patterns) {
        for (const auto& [nx, ny] : grid_resolutions) {
            INFO("pattern " << static_cast<int>(pattern) << ", nx " << nx << ", ny " << ny);
            const TriangleMesh mesh = weft::make_triangle_grid(nx, ny, width, height, pattern);
            REQUIRE(mesh.vertex_count() == nx * ny);
            REQUIRE(mesh.triangle_count() == 2 * (nx - 1) * (ny - 1));
            REQUIRE(mesh.rest_uv.size() == mesh.triangles.size());
            for (int j = 0; j < ny; ++j) {
                for (int i = 0; i < nx; ++i) {
                    const Vec3 expected(-width / 2 + i * width / (nx - 1), -height / 2 + j * height / (ny - 1), 0.0);
                    CHECK((vertex(mesh, j * nx + i) - expected).norm() < 1e-15);
                }
            }
            std::set<std::array<int, 3>> distinct;
            for (int t = 0; t < mesh.triangle_count(); ++t) {
                const auto& tri = mesh.triangles[t];
                for (int c = 0; c < 3; ++c) {
                    REQUIRE(tri[c] >= 0);
                    REQUIRE(tri[c] < mesh.vertex_count());
                    // (u, v) = (x + w/2, y + h/2)
                    const Vec3 x = vertex(mesh, tri[c]);
                    CHECK((mesh.rest_uv[t][c] - Vec2(x(0) + width / 2, x(1) + height / 2)).norm() < 1e-15);
                }
                std::array<int, 3> sorted = tri;
                std::sort(sorted.begin(), sorted.end());
                distinct.insert(sorted);
                // One orientation for the whole sheet: counter-clockwise, normals +z.
                CHECK(signed_area_2d(mesh.rest_uv[t][0], mesh.rest_uv[t][1], mesh.rest_uv[t][2]) > 0);
                ++checked;
            }
            CHECK(distinct.size() == mesh.triangles.size());
        }
    }
    int expected = 0;
    for (const auto& [nx, ny] : grid_resolutions) expected += 2 * 2 * (nx - 1) * (ny - 1);
    REQUIRE(checked == expected);
}

TEST_CASE("triangle grid: bad resolutions and sizes are rejected with the key named",
          "[model][triangle_mesh][grid][errors]")
{
    CHECK_THROWS_WITH(weft::make_triangle_grid(1, 4, 1, 1), Catch::Contains("resolution[0]"));
    CHECK_THROWS_WITH(weft::make_triangle_grid(4, 1, 1, 1), Catch::Contains("resolution[1]"));
    CHECK_THROWS_WITH(weft::make_triangle_grid(4, 4, 0, 1), Catch::Contains("size[0]"));
    CHECK_THROWS_WITH(weft::make_triangle_grid(4, 4, 1, -1), Catch::Contains("size[1]"));
}

TEST_CASE("triangle grid: the alternating pattern alternates its diagonals like a checkerboard",
          "[model][triangle_mesh][grid]")
{
    for (const auto& [nx, ny] : grid_resolutions) {
        int checked = 0;
        for (const DiagonalPattern pattern : both_patterns) {
            INFO("pattern " << static_cast<int>(pattern) << ", nx " << nx << ", ny " << ny);
            const TriangleMesh mesh = weft::make_triangle_grid(nx, ny, 1.0, 1.0, pattern);
            const auto edges = edge_triangles(mesh);
            for (int j = 0; j + 1 < ny; ++j) {
                for (int i = 0; i + 1 < nx; ++i) {
                    const int v00 = j * nx + i, v10 = v00 + 1, v01 = v00 + nx, v11 = v01 + 1;
                    const bool rising = edges.count(edge_key(v00, v11)) == 1;   // diagonal v00–v11
                    const bool falling = edges.count(edge_key(v10, v01)) == 1;  // diagonal v10–v01
                    REQUIRE(rising != falling);                                 // exactly one per quad
                    const bool expect_rising = pattern == DiagonalPattern::regular || (i + j) % 2 == 0;
                    CHECK(rising == expect_rising);
                    ++checked;
                }
            }
        }
        REQUIRE(checked == 2 * (nx - 1) * (ny - 1));
    }
    // Neighbouring quads of the alternating grid never share a diagonal direction.
    const TriangleMesh mesh = weft::make_triangle_grid(5, 4, 1.0, 1.0, DiagonalPattern::alternating);
    const auto edges = edge_triangles(mesh);
    const auto rising = [&](int i, int j) { return edges.count(edge_key(j * 5 + i, (j + 1) * 5 + i + 1)) == 1; };
    int neighbours = 0;
    for (int j = 0; j < 3; ++j) {
        for (int i = 0; i < 4; ++i) {
            if (i + 1 < 4) {
                CHECK(rising(i, j) != rising(i + 1, j));
                ++neighbours;
            }
            if (j + 1 < 3) {
                CHECK(rising(i, j) != rising(i, j + 1));
                ++neighbours;
            }
        }
    }
    REQUIRE(neighbours == 3 * 3 + 4 * 2);
}

TEST_CASE("triangle grid: hinges are exactly the interior edges, with their opposite vertices",
          "[model][triangle_mesh][hinges]")
{
    int checked = 0;
    for (const DiagonalPattern pattern : both_patterns) {
        for (const auto& [nx, ny] : grid_resolutions) {
            INFO("pattern " << static_cast<int>(pattern) << ", nx " << nx << ", ny " << ny);
            const TriangleMesh mesh = weft::make_triangle_grid(nx, ny, 1.0, 2.0, pattern);
            const std::vector<Hinge> hinges = weft::mesh_hinges(mesh);
            REQUIRE(static_cast<int>(hinges.size()) == interior_edge_count(nx, ny));
            const auto edges = edge_triangles(mesh);
            int interior = 0;
            for (const auto& [edge, faces] : edges) {
                REQUIRE(faces.size() <= 2);
                if (faces.size() == 2) ++interior;
            }
            CHECK(interior == interior_edge_count(nx, ny));

            std::set<Edge> seen;
            for (const Hinge& h : hinges) {
                const int x0 = h.nodes[0], x1 = h.nodes[1], x2 = h.nodes[2], x3 = h.nodes[3];
                INFO("hinge (" << x0 << ", " << x1 << ", " << x2 << ", " << x3 << ")");
                CHECK(seen.insert(edge_key(x1, x2)).second);  // each interior edge once
                const auto found = edges.find(edge_key(x1, x2));
                REQUIRE(found != edges.end());
                const std::vector<int>& faces = found->second;
                REQUIRE(faces.size() == 2);
                // x0 completes one of the two triangles, x3 the other; (x0, x1, x2)
                // keeps that triangle's orientation (the dihedral angle's sign convention).
                const auto& ta = mesh.triangles[faces[0]];
                const auto& tb = mesh.triangles[faces[1]];
                const bool a_first = same_oriented_triangle(ta, x0, x1, x2);
                const bool b_first = same_oriented_triangle(tb, x0, x1, x2);
                REQUIRE(a_first != b_first);
                const auto& other = a_first ? tb : ta;
                CHECK(std::count(other.begin(), other.end(), x3) == 1);
                CHECK(std::count(other.begin(), other.end(), x1) == 1);
                CHECK(std::count(other.begin(), other.end(), x2) == 1);
                CHECK(x0 != x3);
                // A consistently oriented sheet runs the shared edge the other way in the second triangle.
                CHECK(same_oriented_triangle(other, x3, x2, x1));
                ++checked;
            }
        }
    }
    int expected = 0;
    for (const auto& [nx, ny] : grid_resolutions) expected += 2 * interior_edge_count(nx, ny);
    REQUIRE(checked == expected);
    REQUIRE(checked > 0);
}

TEST_CASE("triangle grid: a flat sheet's hinges have zero dihedral angle and zero bending strain",
          "[model][triangle_mesh][hinges][dihedral]")
{
    int checked = 0;
    for (const DiagonalPattern pattern : both_patterns) {
        const TriangleMesh mesh = weft::make_triangle_grid(6, 5, 1.0, 0.7, pattern);
        const weft::TriangleModel<double> model = weft::build_triangle_model<double>(mesh, sheet_material());
        REQUIRE(model.hinges.size() == static_cast<std::size_t>(interior_edge_count(6, 5)));
        for (const weft::HingeElement<double>& h : model.hinges) {
            const Eigen::Matrix<double, 12, 1> q = hinge_positions(mesh.positions, h.nodes);
            const double theta =
                weft::dihedral_angle<double>(q.segment<3>(0), q.segment<3>(3), q.segment<3>(6), q.segment<3>(9));
            CHECK(std::abs(theta) < 1e-14);
            CHECK(h.rest.rest_angle == 0.0);
            const weft::DihedralEval<double> e =
                weft::dihedral_bending_strain(h.rest, q, Eigen::Matrix<double, 12, 1>::Zero().eval());
            CHECK(std::abs(e.strain(0)) < 1e-12);
            ++checked;
        }
    }
    REQUIRE(checked == 2 * interior_edge_count(6, 5));
}

TEST_CASE("triangle grid: plate bending has one stencil per triangle, corners first, flat at rest",
          "[model][triangle_mesh][plate]")
{
    int checked = 0;
    for (const DiagonalPattern pattern : both_patterns) {
        const TriangleMesh mesh = weft::make_triangle_grid(6, 5, 1.0, 0.7, pattern);
        const weft::TriangleModel<double> model =
            weft::build_triangle_model<double>(mesh, sheet_material(weft::BendingModel::plate));
        REQUIRE(model.hinges.empty());
        REQUIRE(model.plates.size() == mesh.triangles.size());
        for (std::size_t t = 0; t < model.plates.size(); ++t) {
            const weft::PlateElement<double>& p = model.plates[t];
            for (int c = 0; c < 3; ++c) CHECK(p.nodes[c] == mesh.triangles[t][c]);
            CHECK(p.rest.rest_area == Approx(model.triangles[t].rest.area).epsilon(1e-13));
            Eigen::Matrix<double, 3 * weft::curvature_stencil_nodes, 1> q;
            for (int k = 0; k < weft::curvature_stencil_nodes; ++k) {
                CHECK(p.nodes[k] >= 0);
                CHECK(p.nodes[k] < model.node_count());
                q.segment<3>(3 * k) = mesh.positions[p.nodes[k]];
            }
            const auto e = weft::shell_curvature_first_order<double>(p.rest, q, decltype(q)::Zero().eval());
            CHECK(e.status == weft::StrainStatus::ok);
            CHECK(e.strain.norm() < 1e-12);
            ++checked;
        }
    }
    REQUIRE(checked == 2 * 2 * 5 * 4);
}

TEST_CASE("triangle grid: a domed sheet bends every hinge the same way", "[model][triangle_mesh][hinges][dihedral]")
{
    // z = −c (x² + y²) seen from +z (the grid's normals) is convex everywhere:
    // θ ≥ 0 at every hinge (θ > 0 at convex edges). The four corners of a
    // grid square are cocircular, so a square's diagonal stays flat (θ = 0 up
    // to rounding: the paraboloid's plane sections project to circles), while
    // the axis-aligned edges bend (θ > 0).
    int bent = 0, flat = 0;
    for (const DiagonalPattern pattern : both_patterns) {
        const TriangleMesh mesh = weft::make_triangle_grid(6, 6, 1.0, 1.0, pattern);
        std::vector<Vec3> domed = mesh.positions;
        for (Vec3& x : domed) x(2) = -0.5 * (x(0) * x(0) + x(1) * x(1));
        for (const Hinge& h : weft::mesh_hinges(mesh)) {
            const double theta = weft::dihedral_angle<double>(domed[h.nodes[0]], domed[h.nodes[1]], domed[h.nodes[2]],
                                                              domed[h.nodes[3]]);
            const Vec3 edge = mesh.positions[h.nodes[2]] - mesh.positions[h.nodes[1]];
            const bool diagonal = std::abs(edge(0)) > 1e-12 && std::abs(edge(1)) > 1e-12;
            if (diagonal) {
                CHECK(std::abs(theta) < 1e-12);
                ++flat;
            } else {
                CHECK(theta > 1e-3);
                ++bent;
            }
        }
    }
    REQUIRE(flat == 2 * 25);
    REQUIRE(bent == 2 * (interior_edge_count(6, 6) - 25));
}

TEST_CASE("triangle model: rest areas sum to w·h and lumped masses are a third of the adjacent areas × ρh",
          "[model][triangle_model][mass]")
{
    int checked = 0;
    for (const DiagonalPattern pattern : both_patterns) {
        for (const auto& [nx, ny] : grid_resolutions) {
            INFO("pattern " << static_cast<int>(pattern) << ", nx " << nx << ", ny " << ny);
            const double width = 1.3, height = 0.6;
            const weft::TriangleMaterial<double> material = sheet_material();
            const TriangleMesh mesh = weft::make_triangle_grid(nx, ny, width, height, pattern);
            const weft::TriangleModel<double> model = weft::build_triangle_model<double>(mesh, material);
            REQUIRE(model.node_count() == nx * ny);
            REQUIRE(model.triangles.size() == mesh.triangles.size());
            REQUIRE(model.mass.size() == static_cast<std::size_t>(nx * ny));

            double area = 0;
            std::vector<double> adjacent_area(static_cast<std::size_t>(nx * ny), 0.0);
            for (std::size_t t = 0; t < model.triangles.size(); ++t) {
                const auto& tri = mesh.triangles[t];
                const double a3 = area_3d(vertex(mesh, tri[0]), vertex(mesh, tri[1]), vertex(mesh, tri[2]));
                CHECK(model.triangles[t].rest.area == Approx(a3).epsilon(1e-13));
                area += model.triangles[t].rest.area;
                for (int c = 0; c < 3; ++c) adjacent_area[static_cast<std::size_t>(tri[c])] += a3;
            }
            CHECK(area == Approx(width * height).epsilon(1e-13));

            double total_mass = 0;
            for (int i = 0; i < model.node_count(); ++i) {
                CHECK(model.mass[i] == Approx(material.areal_density * adjacent_area[i] / 3).epsilon(1e-13));
                CHECK(model.mass[i] > 0);
                total_mass += model.mass[i];
                ++checked;
            }
            CHECK(total_mass == Approx(material.areal_density * width * height).epsilon(1e-13));

            // Hinge rest state: edge length from (u, v), area a third of the two triangles.
            const auto edges = edge_triangles(mesh);
            for (const weft::HingeElement<double>& h : model.hinges) {
                const std::vector<int>& faces = edges.at(edge_key(h.nodes[1], h.nodes[2]));
                REQUIRE(faces.size() == 2);
                CHECK(h.rest.rest_edge_length ==
                      Approx((vertex(mesh, h.nodes[2]) - vertex(mesh, h.nodes[1])).norm()).epsilon(1e-13));
                const double two_areas = model.triangles[static_cast<std::size_t>(faces[0])].rest.area +
                                         model.triangles[static_cast<std::size_t>(faces[1])].rest.area;
                CHECK(h.rest.rest_area == Approx(two_areas / 3).epsilon(1e-13));
            }
            // Everything free and at rest.
            CHECK(std::all_of(model.free_dof.begin(), model.free_dof.end(), [](unsigned char f) { return f == 1; }));
            CHECK(std::all_of(model.v.begin(), model.v.end(), [](double v) { return v == 0.0; }));
        }
    }
    int expected = 0;
    for (const auto& [nx, ny] : grid_resolutions) expected += 2 * nx * ny;
    REQUIRE(checked == expected);
}

TEST_CASE("triangle model: a degenerate rest triangle is rejected naming its index", "[model][triangle_model][errors]")
{
    TriangleMesh mesh = weft::make_triangle_grid(3, 3, 1.0, 1.0);
    REQUIRE(mesh.triangle_count() == 8);
    // Triangle 5's rest (u, v) collapsed onto a line; its 3D placement stays fine.
    mesh.rest_uv[5] = {Vec2(0, 0), Vec2(0.5, 0.5), Vec2(1, 1)};
    const std::string message = error_of([&] { weft::build_triangle_model<double>(mesh, sheet_material()); });
    INFO(message);
    CHECK_THAT(message, Catch::StartsWith("triangle 5: "));
    CHECK_THAT(message, Catch::Contains("rest area"));

    // A zero-area 3D triangle without texture coordinates flattens to zero rest area.
    const TempObj obj("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 2 2 0\nf 1 2 3\nf 1 3 4\n");
    const TriangleMesh loaded = weft::load_obj_mesh(obj.path());
    const std::string flat_message = error_of([&] { weft::build_triangle_model<double>(loaded, sheet_material()); });
    INFO(flat_message);
    CHECK_THAT(flat_message, Catch::StartsWith("triangle 1: "));
    CHECK_THAT(flat_message, Catch::Contains("rest area"));
}

TEST_CASE("triangle mesh: a non-manifold edge is rejected, boundary edges have no hinge",
          "[model][triangle_mesh][hinges][errors]")
{
    TriangleMesh fin;
    fin.positions = {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0.5, 1, 0), Vec3(0.5, -1, 0), Vec3(0.5, 0, 1)};
    fin.triangles = {{0, 1, 2}, {1, 0, 3}, {0, 1, 4}};
    const std::string message = error_of([&] { weft::mesh_hinges(fin); });
    INFO(message);
    CHECK_THAT(message, Catch::Contains("non-manifold"));
    CHECK_THAT(message, Catch::Contains("(0, 1)"));
    CHECK_THAT(message, Catch::Contains("3 triangles"));

    fin.triangles.pop_back();
    const std::vector<Hinge> hinges = weft::mesh_hinges(fin);
    REQUIRE(hinges.size() == 1);
    CHECK(hinges[0].nodes[0] == 2);
    CHECK(hinges[0].nodes[1] == 0);
    CHECK(hinges[0].nodes[2] == 1);
    CHECK(hinges[0].nodes[3] == 3);

    fin.triangles.pop_back();
    CHECK(weft::mesh_hinges(fin).empty());
}

TEST_CASE("triangle mesh: a triangle listed twice is rejected naming both indices",
          "[model][triangle_mesh][hinges][errors]")
{
    // Two copies of one triangle would otherwise give three hinges folding it onto itself.
    TriangleMesh pair;
    pair.positions = {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0)};
    pair.triangles = {{0, 1, 2}, {2, 1, 0}};
    const std::string pair_message = error_of([&] { weft::mesh_hinges(pair); });
    INFO(pair_message);
    CHECK_THAT(pair_message, Catch::Contains("duplicate triangle"));
    CHECK_THAT(pair_message, Catch::Contains("triangles 0 and 1"));

    // In a grid, a copy of an interior triangle in any corner order is named as
    // a duplicate, not as the non-manifold edges it also makes.
    const TriangleMesh grid = weft::make_triangle_grid(3, 3, 1.0, 1.0);
    REQUIRE(grid.triangle_count() == 8);
    const auto& t5 = grid.triangles[5];
    const std::array<std::array<int, 3>, 3> copies{
        {{t5[0], t5[1], t5[2]}, {t5[1], t5[2], t5[0]}, {t5[2], t5[1], t5[0]}}};
    int checked = 0;
    for (const auto& copy : copies) {
        TriangleMesh mesh = grid;
        mesh.triangles.push_back(copy);
        mesh.rest_uv.push_back(grid.rest_uv[5]);
        const std::string message = error_of([&] { weft::mesh_hinges(mesh); });
        INFO(message);
        CHECK_THAT(message, Catch::Contains("duplicate triangle"));
        CHECK_THAT(message, Catch::Contains("triangles 5 and 8"));
        CHECK_THAT(message, !Catch::Contains("non-manifold"));
        CHECK_THROWS_WITH(weft::build_triangle_model<double>(mesh, sheet_material()),
                          Catch::Contains("triangles 5 and 8"));
        ++checked;
    }
    REQUIRE(checked == 3);

    // Two triangles sharing an edge (two vertices) are no duplicate.
    CHECK(weft::mesh_hinges(grid).size() == static_cast<std::size_t>(interior_edge_count(3, 3)));
}

TEST_CASE("OBJ loader: positions, fan triangulation and scaled texture coordinates", "[model][triangle_mesh][obj]")
{
    // Two quads (the second with negative, relative indices and v/vt only)
    // and a triangle whose texture indices differ from its vertex indices,
    // with comments, normals, groups and blank lines around.
    const TempObj obj(R"(# a garment panel
mtllib panel.mtl
o panel
v 0 0 0
v 1 0 0
v 1 1 0.25
v 0 1 0.25

vt 0 0
vt 0.5 0
vt 0.5 0.5
vt 0 0.5
vn 0 0 1
g front
usemtl cotton
s off
f 1/1/1 2/2/1 3/3/1 4/4/1
v 2 0 0.5   # trailing comment
v 2 1 0.5
vt 1 0
vt 1 0.5
f -5/-5 -2/-2 -1/-1 -4/-4
  # indented comment
v 1 2 0.5
vt 0.5 1
f 3/4/1 6/1/1 7/7/1
)");
    const double uv_scale = 2.0;
    const TriangleMesh mesh = weft::load_obj_mesh(obj.path(), uv_scale);
    const std::vector<Vec3> positions{Vec3(0, 0, 0),   Vec3(1, 0, 0),   Vec3(1, 1, 0.25), Vec3(0, 1, 0.25),
                                      Vec3(2, 0, 0.5), Vec3(2, 1, 0.5), Vec3(1, 2, 0.5)};
    REQUIRE(mesh.vertex_count() == 7);
    for (int i = 0; i < 7; ++i) CHECK((vertex(mesh, i) - positions[static_cast<std::size_t>(i)]).norm() == 0.0);

    const std::vector<std::array<int, 3>> triangles{{0, 1, 2}, {0, 2, 3}, {1, 4, 5}, {1, 5, 2}, {2, 5, 6}};
    REQUIRE(mesh.triangles == triangles);

    const std::vector<Vec2> texcoords{Vec2(0, 0), Vec2(0.5, 0), Vec2(0.5, 0.5), Vec2(0, 0.5),
                                      Vec2(1, 0), Vec2(1, 0.5), Vec2(0.5, 1)};
    const std::vector<std::array<int, 3>> corner_texcoords{{0, 1, 2}, {0, 2, 3}, {1, 4, 5}, {1, 5, 2}, {3, 0, 6}};
    REQUIRE(mesh.rest_uv.size() == triangles.size());
    int checked = 0;
    for (std::size_t t = 0; t < triangles.size(); ++t) {
        for (int c = 0; c < 3; ++c) {
            const Vec2 expected = uv_scale * texcoords[static_cast<std::size_t>(corner_texcoords[t][c])];
            CHECK((mesh.rest_uv[t][c] - expected).norm() == 0.0);
            ++checked;
        }
    }
    REQUIRE(checked == 15);
}

TEST_CASE("OBJ loader: without texture coordinates every triangle is flattened isometrically",
          "[model][triangle_mesh][obj]")
{
    // A curved pentagon (fan-triangulated), a v//vn triangle and a textured
    // triangle: one face without `vt` makes the loader flatten all of them.
    const TempObj obj(R"(v 0 0 0
v 1 0 0.3
v 1.4 0.9 -0.2
v 0.5 1.5 0.4
v -0.4 0.8 0.1
v 2 0.5 0.6
vt 0 0
vt 1 0
vt 0 1
vn 0 0 1
f 1 2 3 4 5
f 2//1 6//1 3//1
f 1/1 5/2 4/3
)");
    const TriangleMesh mesh = weft::load_obj_mesh(obj.path(), 7.0);
    REQUIRE(mesh.triangle_count() == 3 + 1 + 1);
    const std::vector<std::array<int, 3>> triangles{{0, 1, 2}, {0, 2, 3}, {0, 3, 4}, {1, 5, 2}, {0, 4, 3}};
    REQUIRE(mesh.triangles == triangles);
    int checked = 0;
    for (int t = 0; t < mesh.triangle_count(); ++t) {
        const auto& tri = mesh.triangles[t];
        const auto& uv = mesh.rest_uv[t];
        INFO("triangle " << t);
        for (int c = 0; c < 3; ++c) {
            const double length_3d = (vertex(mesh, tri[(c + 1) % 3]) - vertex(mesh, tri[c])).norm();
            CHECK((uv[(c + 1) % 3] - uv[c]).norm() == Approx(length_3d).epsilon(1e-13));
            ++checked;
        }
        const double a3 = area_3d(vertex(mesh, tri[0]), vertex(mesh, tri[1]), vertex(mesh, tri[2]));
        // Orientation kept: the flattened triangle is counter-clockwise in (u, v).
        CHECK(signed_area_2d(uv[0], uv[1], uv[2]) == Approx(a3).epsilon(1e-13));
        // u along the first edge.
        CHECK(uv[0].norm() == 0.0);
        CHECK(uv[1](1) == 0.0);
        CHECK(uv[1](0) > 0.0);
        ++checked;
    }
    REQUIRE(checked == 4 * 5);
}

TEST_CASE("OBJ loader: a directory is reported as unreadable, naming it", "[model][triangle_mesh][obj][errors]")
{
    // A directory opens as a stream but reads as nothing: it must not pass for a mesh without faces.
    const TempObj placeholder("");
    const std::string path = placeholder.path() + ".d";
    REQUIRE(std::filesystem::create_directory(path));
    const std::string message = error_of([&] { weft::load_obj_mesh(path); });
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    INFO(message);
    CHECK_THAT(message, Catch::Contains("'" + path + "'"));
    CHECK_THAT(message, Catch::Contains("cannot open"));
    CHECK_THAT(message, Catch::Contains("is a directory"));
    CHECK_THAT(message, !Catch::Contains("no faces"));
}

TEST_CASE("OBJ loader: errors name the file and the line", "[model][triangle_mesh][obj][errors]")
{
    SECTION("missing file")
    {
        const std::string path =
            (std::filesystem::temp_directory_path() / "weft_test_triangle_mesh_does_not_exist.obj").string();
        CHECK_THROWS_WITH(weft::load_obj_mesh(path), Catch::Contains(path) && Catch::Contains("cannot open"));
    }
    SECTION("malformed records")
    {
        struct Case {
            const char* what;
            const char* text;
            int line;
            const char* says;
        };
        const Case cases[] = {
            {"non-numeric vertex index", "v 0 0 0\nv 1 0 0\nv 0 1 0\n# comment\nf 1 2 x\n", 5,
             "invalid vertex index 'x'"},
            {"trailing garbage in an index", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3a\n", 4, "invalid vertex index '3a'"},
            {"bad texture index", "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/1 2/y 3/1\n", 5, "invalid texture index 'y'"},
            {"vertex index past the end", "v 0 0 0\nv 1 0 0\nv 0 1 0\n\nf 1 2 4\n", 5, "vertex index 4 out of range"},
            {"vertex index zero", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", 4, "vertex index 0 out of range"},
            {"negative index before the start", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf -4 1 2\n", 4,
             "vertex index -4 out of range"},
            {"vertex defined after the face", "v 0 0 0\nv 1 0 0\nf 1 2 3\nv 0 1 0\n", 3, "vertex index 3 out of range"},
            {"texture index past the end", "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/1 2/2 3/1\n", 5,
             "texture index 2 out of range"},
            {"face with two vertices", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf 1 2\n", 5, "fewer than 3 vertices"},
            {"vertex with two coordinates", "v 0 0 0\nv 1 0\n", 2, "invalid 'v' record"},
            {"non-numeric coordinate", "v 0 0 0\nv 1 zero 0\n", 2, "invalid 'v' record"},
            {"texture with one coordinate", "v 0 0 0\nvt 0.5\n", 2, "invalid 'vt' record"},
        };
        int checked = 0;
        for (const Case& c : cases) {
            INFO(c.what);
            const TempObj obj(c.text);
            const std::string message = error_of([&] { weft::load_obj_mesh(obj.path()); });
            INFO(message);
            CHECK_THAT(message, Catch::StartsWith(obj.path() + ":" + std::to_string(c.line) + ": "));
            CHECK_THAT(message, Catch::Contains(c.says));
            ++checked;
        }
        REQUIRE(checked == 12);
    }
    SECTION("a file without faces")
    {
        const TempObj obj("# only vertices\nv 0 0 0\nv 1 0 0\nv 0 1 0\n");
        CHECK_THROWS_WITH(weft::load_obj_mesh(obj.path()), Catch::Contains(obj.path()) && Catch::Contains("no faces"));
        const TempObj empty("");
        CHECK_THROWS_WITH(weft::load_obj_mesh(empty.path()),
                          Catch::Contains(empty.path()) && Catch::Contains("no faces"));
    }
    SECTION("a non-positive uv_scale")
    {
        const TempObj obj("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
        CHECK_THROWS_WITH(weft::load_obj_mesh(obj.path(), 0.0), Catch::Contains("uv_scale"));
    }
    SECTION("a non-manifold OBJ loads, and mesh_hinges rejects it")
    {
        const TempObj obj("v 0 0 0\nv 1 0 0\nv 0.5 1 0\nv 0.5 -1 0\nv 0.5 0 1\nf 1 2 3\nf 2 1 4\nf 1 2 5\n");
        const TriangleMesh mesh = weft::load_obj_mesh(obj.path());
        CHECK_THROWS_WITH(weft::mesh_hinges(mesh), Catch::Contains("non-manifold") && Catch::Contains("(0, 1)"));
        CHECK_THROWS_WITH(weft::build_triangle_model<double>(mesh, sheet_material()), Catch::Contains("non-manifold"));
    }
}
