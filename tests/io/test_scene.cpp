#include <weft/backend/scene_options.hpp>
#include <weft/io/scene.hpp>
#include <weft/io/scene_model.hpp>
#include <weft/io/triangle_scene.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>

using Catch::Matchers::Contains;
using json = nlohmann::json;

namespace {

// The example scene of the weft-run documentation, verbatim.
const char* const example_scene = R"({ "time_step": 0.001, "duration": 1.0, "gravity": [0,0,-9.81],
  "solver": {"newton_iterations": 1, "pcg_tolerance": 1e-5, "pcg_max_iterations": 2000},
  "cloth": [{ "type": "woven", "yarns": [40, 40], "spacing": 0.001, "radius": 0.00025,
      "density": 130, "center": [0,0,0], "plane": "xy",
      "stiffness": {"stretch": 500, "bending": 1e-5, "shear": 1e-4},
      "friction": {"coefficient": 0.3},
      "damping": {"model": "strain-rate", "stretch": 3e-7, "bending": 0, "shear": 0},
      "pins": ["top-edge"],
      "initial_velocity": {"linear": [0,0,0], "angular": [0,0,0]} }],
  "colliders": [{"type": "sphere", "center": [0,0,-0.03], "radius": 0.02}],
  "output": {"csv": "energy.csv", "frames": "frames", "every": 10} })";

json example()
{
    return json::parse(example_scene);
}

json minimal()
{
    return json::parse(R"({"time_step": 0.002, "duration": 0.5,
        "cloth": [{"type": "woven", "yarns": [10, 20], "spacing": 0.002, "radius": 0.0004, "density": 100,
                   "stiffness": {"stretch": 1000, "bending": 1e-4, "shear": 1e-3}}]})");
}

/// The message of the InvalidInput that parse_scene throws, or "" if none.
std::string error_of(const json& scene)
{
    try {
        weft::parse_scene(scene);
    } catch (const weft::InvalidInput& e) {
        return e.what();
    }
    return "";
}

std::string error_of_text(const std::string& text)
{
    try {
        weft::parse_scene_text(text, "test.json");
    } catch (const weft::InvalidInput& e) {
        return e.what();
    }
    return "";
}

/// A fresh directory under the system temp directory, removed at scope end.
struct TempDir {
    std::filesystem::path path;
    TempDir()
    {
        std::random_device rd;
        path =
            std::filesystem::temp_directory_path() / ("weft_test_scene_" + std::to_string(rd()) + std::to_string(rd()));
        std::filesystem::create_directories(path);
    }
    ~TempDir()
    {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

void write_text(const std::filesystem::path& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary);
    out << text;
    REQUIRE(out.good());
}

}  // namespace

TEST_CASE("scene: the documented example parses to the values it states", "[io][scene]")
{
    const weft::SceneDescription s = weft::parse_scene(example());
    CHECK(s.time_step == 0.001);
    CHECK(s.duration == 1.0);
    CHECK(s.gravity == std::array<double, 3>{0, 0, -9.81});
    CHECK(s.solver.newton_iterations == 1);
    CHECK(s.solver.pcg_tolerance == 1e-5);
    CHECK(s.solver.pcg_max_iterations == 2000);

    REQUIRE(s.cloth.size() == 1);
    const weft::ClothDescription& c = s.cloth[0];
    CHECK(c.type == "woven");
    CHECK(c.yarns == std::array<int, 2>{40, 40});
    CHECK(c.spacing == 0.001);
    CHECK(c.radius == 0.00025);
    CHECK(c.density == 130);
    CHECK(c.center == std::array<double, 3>{0, 0, 0});
    CHECK(c.plane == "xy");
    CHECK(c.stiffness.stretch == 500);
    CHECK(c.stiffness.bending == 1e-5);
    CHECK(c.stiffness.shear == 1e-4);
    CHECK(c.friction.coefficient == 0.3);
    CHECK(c.damping.model == "strain-rate");
    CHECK(c.damping.stretch == 3e-7);
    CHECK(c.damping.bending == 0);
    CHECK(c.damping.shear == 0);
    CHECK(c.pins.sets == std::vector<std::string>{"top-edge"});
    CHECK(c.pins.nodes.empty());
    CHECK(c.initial_velocity.linear == std::array<double, 3>{0, 0, 0});
    CHECK(c.initial_velocity.angular == std::array<double, 3>{0, 0, 0});

    REQUIRE(s.colliders.size() == 1);
    CHECK(s.colliders[0].type == "sphere");
    CHECK(s.colliders[0].center == std::array<double, 3>{0, 0, -0.03});
    CHECK(s.colliders[0].radius == 0.02);

    CHECK(s.output.csv == "energy.csv");
    CHECK(s.output.frames == "frames");
    CHECK(s.output.every == 10);
    CHECK(s.source.empty());
}

TEST_CASE("scene: omitted optional keys take the documented defaults", "[io][scene][defaults]")
{
    const weft::SceneDescription s = weft::parse_scene(minimal());
    CHECK(s.name.empty());
    CHECK(s.gravity == std::array<double, 3>{0, 0, -9.81});
    CHECK(s.solver.newton_iterations == 12);
    CHECK(s.solver.newton_tolerance == 1e-4);
    CHECK(s.solver.hessian_projection == "absolute");
    CHECK(s.solver.pcg_tolerance == 1e-5);
    CHECK(s.solver.pcg_max_iterations == 2000);
    CHECK(s.solver.adaptive_time_step);
    CHECK(s.solver.min_time_step == 0.002 / 1024);

    REQUIRE(s.cloth.size() == 1);
    const weft::ClothDescription& c = s.cloth[0];
    CHECK(c.pattern == "plain");
    CHECK(c.plane == "xy");
    CHECK(c.center == std::array<double, 3>{0, 0, 0});
    CHECK(c.damping.model == "none");
    CHECK(c.damping.stretch == 0);
    CHECK(c.damping.beta == 0);
    CHECK(c.friction.coefficient == 0.3);
    CHECK(c.friction.normal_force == Approx(0.01 * 1000));
    CHECK(c.friction.anchor_stiffness == Approx(1000 / 0.002));
    CHECK(c.contact.stiffness == Approx(1000 * 1000 / 0.002));
    CHECK(c.contact.min_distance == Approx(2 * 0.0004));
    CHECK(c.pins.empty());
    CHECK(c.moving_pins.empty());
    CHECK(c.initial_velocity.linear == std::array<double, 3>{0, 0, 0});
    CHECK(c.initial_velocity.angular == std::array<double, 3>{0, 0, 0});

    CHECK(s.colliders.empty());
    CHECK(s.output.csv.empty());
    CHECK(s.output.frames.empty());
    CHECK(s.output.every == 1);
    CHECK(s.output.csv_every == 1);
    CHECK(s.output.formats == std::vector<std::string>{"vtk", "vtp", "obj"});
    CHECK(s.output.vtp_encoding == "binary");
}

TEST_CASE("scene: collider stiffness defaults to 1000 x the stiffest cloth segment", "[io][scene][defaults]")
{
    json j = minimal();
    j["cloth"].push_back(j["cloth"][0]);
    j["cloth"][1]["stiffness"]["stretch"] = 3000;
    j["colliders"] = json::parse(R"([{"type": "plane", "point": [0, 0, -1], "normal": [0, 0, 2]},
                                     {"type": "sphere", "center": [1, 2, 3], "radius": 0.5,
                                      "stiffness": 7, "friction": 0.4}])");
    const weft::SceneDescription s = weft::parse_scene(j);
    REQUIRE(s.colliders.size() == 2);
    CHECK(s.colliders[0].stiffness == Approx(1000 * 3000 / 0.002));
    CHECK(s.colliders[0].friction == 0);
    CHECK(s.colliders[0].point == std::array<double, 3>{0, 0, -1});
    CHECK(s.colliders[0].normal == std::array<double, 3>{0, 0, 1});  // normalized
    CHECK(s.colliders[1].stiffness == 7);
    CHECK(s.colliders[1].friction == 0.4);
}

TEST_CASE("scene: optional keys that are given override the defaults", "[io][scene]")
{
    json j = minimal();
    j["name"] = "drop";
    j["solver"] = json::parse(R"({"newton_iterations": 4, "newton_tolerance": 1e-6, "adaptive_time_step": false,
                                  "min_time_step": 1e-5})");
    json& c = j["cloth"][0];
    c["pattern"] = "twill";
    c["plane"] = "xz";
    c["center"] = {1, 2, 3};
    c["friction"] = json::parse(R"({"coefficient": 1, "normal_force": 0.5, "anchor_stiffness": 20})");
    c["contact"] = json::parse(R"({"stiffness": 3, "min_distance": 0.001})");
    c["moving_pins"] = json::parse(R"([{"nodes": ["left-edge", 3], "velocity": [0.1, 0, 0]}])");
    c["initial_velocity"] = json::parse(R"({"linear": [1, 0, 0], "angular": [0, 0, 6.28]})");
    j["output"] = json::parse(
        R"({"csv": "e.csv", "csv_every": 5, "frames": "out", "formats": ["vtp", "bcc", "obj"], "vtp_encoding": "ascii"})");

    const weft::SceneDescription s = weft::parse_scene(j);
    CHECK(s.name == "drop");
    CHECK(s.solver.newton_iterations == 4);
    CHECK(s.solver.newton_tolerance == 1e-6);
    CHECK_FALSE(s.solver.adaptive_time_step);
    CHECK(s.solver.min_time_step == 1e-5);
    const weft::ClothDescription& d = s.cloth[0];
    CHECK(d.pattern == "twill");
    CHECK(d.plane == "xz");
    CHECK(d.center == std::array<double, 3>{1, 2, 3});
    CHECK(d.friction.coefficient == 1);
    CHECK(d.friction.normal_force == 0.5);
    CHECK(d.friction.anchor_stiffness == 20);
    CHECK(d.contact.stiffness == 3);
    CHECK(d.contact.min_distance == 0.001);
    REQUIRE(d.moving_pins.size() == 1);
    CHECK(d.moving_pins[0].nodes.sets == std::vector<std::string>{"left-edge"});
    CHECK(d.moving_pins[0].nodes.nodes == std::vector<int>{3});
    CHECK(d.moving_pins[0].velocity == std::array<double, 3>{0.1, 0, 0});
    CHECK(d.initial_velocity.linear == std::array<double, 3>{1, 0, 0});
    CHECK(d.initial_velocity.angular == std::array<double, 3>{0, 0, 6.28});
    CHECK(s.output.csv_every == 5);
    CHECK(s.output.formats == std::vector<std::string>{"vtp", "bcc", "obj"});
    CHECK(s.output.vtp_encoding == "ascii");
    j["output"]["vtp_encoding"] = "base64";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("output.vtp_encoding") && Catch::Contains("base64"));
    j["output"] = json::parse(R"({"vtp_encoding": "ascii"})");
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("output.vtp_encoding") && Catch::Contains("frames"));
}

TEST_CASE("scene: solver.line_search_cuts is read, defaults to 8, and bad values are named", "[io][scene][newton]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.line_search_cuts == 8);
    j["solver"] = json::parse(R"({"newton_iterations": 5, "line_search_cuts": 3})");
    CHECK(weft::parse_scene(j).solver.line_search_cuts == 3);
    j["solver"]["line_search_cuts"] = 0;  // the boundary is allowed
    CHECK(weft::parse_scene(j).solver.line_search_cuts == 0);
    j["solver"]["line_search_cuts"] = -1;
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.line_search_cuts") && Catch::Contains("-1"));
    j["solver"]["line_search_cuts"] = 31;
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.line_search_cuts") && Catch::Contains("31"));
    j["solver"]["line_search_cuts"] = 2.5;
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.line_search_cuts"));
}

TEST_CASE("scene: solver.line_search_expansions and exact_hessians are read, with their defaults; bad values are named",
          "[io][scene][newton]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.line_search_expansions == 4);
    CHECK(weft::parse_scene(j).solver.exact_hessians);
    j["solver"] = json::parse(R"({"newton_iterations": 5, "line_search_expansions": 0, "exact_hessians": false})");
    CHECK(weft::parse_scene(j).solver.line_search_expansions == 0);
    CHECK_FALSE(weft::parse_scene(j).solver.exact_hessians);
    j["solver"]["line_search_expansions"] = 30;  // the boundary is allowed
    CHECK(weft::parse_scene(j).solver.line_search_expansions == 30);
    j["solver"]["line_search_expansions"] = 31;
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.line_search_expansions") && Catch::Contains("31"));
    j["solver"]["line_search_expansions"] = -2;
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.line_search_expansions") && Catch::Contains("-2"));
    j["solver"]["line_search_expansions"] = 1;
    j["solver"]["exact_hessians"] = "yes";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.exact_hessians") && Catch::Contains("yes"));
}

TEST_CASE("scene: solver.hessian_projection is read, \"absolute\" by default; an unknown value names the accepted ones",
          "[io][scene][newton]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.hessian_projection == "absolute");
    j["solver"] = json::parse(R"({"newton_iterations": 5, "hessian_projection": "clamp"})");
    CHECK(weft::parse_scene(j).solver.hessian_projection == "clamp");
    j["solver"]["hessian_projection"] = "adaptive";
    CHECK(weft::parse_scene(j).solver.hessian_projection == "adaptive");
    j["solver"]["hessian_projection"] = "abs";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.hessian_projection") && Catch::Contains("abs") &&
                                                Catch::Contains("clamp") && Catch::Contains("absolute") &&
                                                Catch::Contains("adaptive"));
    j["solver"]["hessian_projection"] = 1;
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.hessian_projection"));
}

TEST_CASE("scene: solver.linear is read, \"pcg\" by default; an unknown solver names the accepted ones",
          "[io][scene][linear]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.linear == "pcg");
    j["solver"] = json::parse(R"({"linear": "cholmod"})");
    CHECK(weft::parse_scene(j).solver.linear == "cholmod");
    j["solver"]["linear"] = "lu";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.linear") && Catch::Contains("\"lu\"") &&
                                                Catch::Contains("\"pcg\"") && Catch::Contains("\"cholmod\""));
    j["solver"]["linear"] = 3;
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.linear"));
}

TEST_CASE("scene: solver.preconditioner is read, \"block-jacobi\" by default; an unknown one names the accepted ones",
          "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.preconditioner == "block-jacobi");
    for (const char* name : {"yarn-lines", "multilevel", "block-jacobi"}) {
        j["solver"] = json::object();
        j["solver"]["preconditioner"] = name;
        CHECK(weft::parse_scene(j).solver.preconditioner == name);
    }
    j["solver"]["preconditioner"] = "amg";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.preconditioner") && Catch::Contains("\"amg\"") &&
                                                Catch::Contains("\"block-jacobi\"") &&
                                                Catch::Contains("\"yarn-lines\"") && Catch::Contains("\"multilevel\""));
}

TEST_CASE("scene: solver.multilevel_refresh is read, \"on-growth\" by default, into the stepper's multilevel options",
          "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.multilevel_refresh == "on-growth");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.refresh == weft::MultilevelRefresh::on_growth);
    const std::pair<const char*, weft::MultilevelRefresh> cases[] = {
        {"off", weft::MultilevelRefresh::off},
        {"every-prepare", weft::MultilevelRefresh::every_prepare},
        {"on-growth", weft::MultilevelRefresh::on_growth}};
    for (const auto& [name, refresh] : cases) {
        j["solver"] = json::object();
        j["solver"]["multilevel_refresh"] = name;
        CHECK(weft::parse_scene(j).solver.multilevel_refresh == name);
        CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.refresh == refresh);
    }
    j["solver"]["multilevel_refresh"] = "always";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_refresh") &&
                                                Catch::Contains("\"always\"") && Catch::Contains("\"off\"") &&
                                                Catch::Contains("\"on-growth\"") &&
                                                Catch::Contains("\"every-prepare\""));
}

TEST_CASE(
    "scene: solver.multilevel_smoother is read, \"auto\" by default (yarn lines for yarns on CPU threads, "
    "Chebyshev for triangle cloth), into the multilevel options",
    "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.multilevel_smoother == "auto");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.smoother ==
          (weft::backend_is_cuda() ? weft::MultilevelSmoother::chebyshev : weft::MultilevelSmoother::yarn_lines));
    weft::SceneDescription triangles = weft::parse_scene(j);
    triangles.cloth.front().type = "triangle";  // what stepper_options reads of the cloth
    CHECK(weft::stepper_options<double>(triangles).multilevel.smoother == weft::MultilevelSmoother::chebyshev);
    j["solver"]["multilevel_smoother"] = "chebyshev";
    CHECK(weft::parse_scene(j).solver.multilevel_smoother == "chebyshev");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.smoother ==
          weft::MultilevelSmoother::chebyshev);
    j["solver"]["multilevel_smoother"] = "yarn-lines";
    CHECK(weft::parse_scene(j).solver.multilevel_smoother == "yarn-lines");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.smoother ==
          weft::MultilevelSmoother::yarn_lines);
    j["solver"]["multilevel_smoother"] = "gauss-seidel";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_smoother") &&
                                                Catch::Contains("\"gauss-seidel\"") && Catch::Contains("\"auto\"") &&
                                                Catch::Contains("\"chebyshev\"") && Catch::Contains("\"yarn-lines\""));
    j["solver"]["multilevel_smoother"] = 2;
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_smoother"));
}

TEST_CASE(
    "scene: solver.multilevel_coarse_space is read, \"auto\" by default (squares for yarns on CPU threads, node "
    "aggregates for triangle cloth), into the multilevel options",
    "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.multilevel_coarse_space == "auto");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.coarse_space ==
          (weft::backend_is_cuda() ? weft::MultilevelCoarseSpace::nodes : weft::MultilevelCoarseSpace::squares));
    weft::SceneDescription triangles = weft::parse_scene(j);
    triangles.cloth.front().type = "triangle";
    CHECK(weft::stepper_options<double>(triangles).multilevel.coarse_space == weft::MultilevelCoarseSpace::nodes);
    j["solver"]["multilevel_coarse_space"] = "nodes";
    CHECK(weft::parse_scene(j).solver.multilevel_coarse_space == "nodes");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.coarse_space ==
          weft::MultilevelCoarseSpace::nodes);
    j["solver"]["multilevel_coarse_space"] = "yarns";
    CHECK(weft::parse_scene(j).solver.multilevel_coarse_space == "yarns");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.coarse_space ==
          weft::MultilevelCoarseSpace::yarns);
    j["solver"]["multilevel_coarse_space"] = "squares";
    CHECK(weft::parse_scene(j).solver.multilevel_coarse_space == "squares");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.coarse_space ==
          weft::MultilevelCoarseSpace::squares);
    j["solver"]["multilevel_coarse_space"] = "lines";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_coarse_space") &&
                                                Catch::Contains("\"lines\"") && Catch::Contains("\"auto\"") &&
                                                Catch::Contains("\"nodes\"") && Catch::Contains("\"yarns\"") &&
                                                Catch::Contains("\"squares\""));
    j["solver"]["multilevel_coarse_space"] = true;
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_coarse_space"));
}

TEST_CASE("scene: solver.multilevel_square_side is read, 3 by default, into the multilevel options",
          "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.multilevel_square_side == 3);
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.square_side == 3);
    j["solver"]["multilevel_coarse_space"] = "squares";
    j["solver"]["multilevel_square_side"] = 4;
    CHECK(weft::parse_scene(j).solver.multilevel_square_side == 4);
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.square_side == 4);
    j["solver"]["multilevel_square_side"] = 2;  // lines of squares of 2 would couple squares three apart
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_square_side") &&
                                                Catch::Contains(">= 3") && Catch::Contains("got 2"));
    j["solver"]["multilevel_square_side"] = 3.5;
    CHECK_THROWS_WITH(weft::parse_scene(j),
                      Catch::Contains("solver.multilevel_square_side") && Catch::Contains("expected an integer"));
    j["solver"]["multilevel_square_side"] = "4";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_square_side"));
}

TEST_CASE("scene: solver.multilevel_square_join is read, 2 by default, into the multilevel options",
          "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.multilevel_square_join == 2);
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.square_join == 2);
    j["solver"]["multilevel_coarse_space"] = "squares";
    j["solver"]["multilevel_square_join"] = 3;
    CHECK(weft::parse_scene(j).solver.multilevel_square_join == 3);
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.square_join == 3);
    j["solver"]["multilevel_square_join"] = 1;  // no coarsening below the first coarse level
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_square_join") &&
                                                Catch::Contains(">= 2") && Catch::Contains("got 1"));
    j["solver"]["multilevel_square_join"] = 2.5;
    CHECK_THROWS_WITH(weft::parse_scene(j),
                      Catch::Contains("solver.multilevel_square_join") && Catch::Contains("expected an integer"));
}

TEST_CASE("scene: solver.multilevel_refresh_tolerance is read, 0.01 by default, into the multilevel options",
          "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.multilevel_refresh_tolerance == 0.01);
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.refresh_tolerance == 0.01);
    CHECK(weft::MultilevelOptions{}.refresh_tolerance == 0.01);
    for (const double tau : {0.0, 0.1, -1.0}) {  // 0: every row that changed; negative: every row
        j["solver"]["multilevel_refresh_tolerance"] = tau;
        CHECK(weft::parse_scene(j).solver.multilevel_refresh_tolerance == tau);
        CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.refresh_tolerance == tau);
    }
    j["solver"]["multilevel_refresh_tolerance"] = "0.01";
    CHECK_THROWS_WITH(weft::parse_scene(j),
                      Catch::Contains("solver.multilevel_refresh_tolerance") && Catch::Contains("expected a number"));
}

TEST_CASE("scene: solver.multilevel_line_factor_tolerance is read, 0.001 by default, into the multilevel options",
          "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.multilevel_line_factor_tolerance == 0.001);
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.line_factor_tolerance == 0.001);
    CHECK(weft::MultilevelOptions{}.line_factor_tolerance == 0.001);
    for (const double tau : {0.0, 0.05, -1.0}) {  // 0 or negative: every line at every prepare
        j["solver"]["multilevel_line_factor_tolerance"] = tau;
        CHECK(weft::parse_scene(j).solver.multilevel_line_factor_tolerance == tau);
        CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.line_factor_tolerance == tau);
    }
    j["solver"]["multilevel_line_factor_tolerance"] = "0.001";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_line_factor_tolerance") &&
                                                Catch::Contains("expected a number"));
}

TEST_CASE("scene: solver.multilevel_exact_ritz_bound is read, 2 by default, into the multilevel options",
          "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.multilevel_exact_ritz_bound == 2.0);
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.exact_ritz_bound == 2.0);
    CHECK(weft::MultilevelOptions{}.exact_ritz_bound == 2.0);
    for (const double bound : {0.0, 1.5, -1.0}) {  // 0 or negative: never
        j["solver"]["multilevel_exact_ritz_bound"] = bound;
        CHECK(weft::parse_scene(j).solver.multilevel_exact_ritz_bound == bound);
        CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.exact_ritz_bound == bound);
    }
    j["solver"]["multilevel_exact_ritz_bound"] = "2";
    CHECK_THROWS_WITH(weft::parse_scene(j),
                      Catch::Contains("solver.multilevel_exact_ritz_bound") && Catch::Contains("expected a number"));
}

TEST_CASE("scene: solver.multilevel_renew_modes is read, true by default, into the multilevel options",
          "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.multilevel_renew_modes);
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.renew_modes);
    CHECK(weft::MultilevelOptions{}.renew_modes);
    j["solver"]["multilevel_renew_modes"] = false;
    CHECK_FALSE(weft::parse_scene(j).solver.multilevel_renew_modes);
    CHECK_FALSE(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.renew_modes);
    j["solver"]["multilevel_renew_modes"] = true;
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.renew_modes);
    j["solver"]["multilevel_renew_modes"] = "off";
    CHECK_THROWS_WITH(weft::parse_scene(j),
                      Catch::Contains("solver.multilevel_renew_modes") && Catch::Contains("expected a boolean"));
}

TEST_CASE("scene: solver.multilevel_cycle is read, \"v\" by default, into the multilevel options",
          "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.multilevel_cycle == "v");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.cycle == weft::MultilevelCycle::v);
    j["solver"]["multilevel_cycle"] = "w";
    CHECK(weft::parse_scene(j).solver.multilevel_cycle == "w");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.cycle == weft::MultilevelCycle::w);
    j["solver"]["multilevel_cycle"] = "k";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_cycle") && Catch::Contains("\"k\"") &&
                                                Catch::Contains("\"v\"") && Catch::Contains("\"w\""));
    j["solver"]["multilevel_cycle"] = 2;
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_cycle"));
}

TEST_CASE("scene: solver.matrix_precision is read, \"double\" by default, into the PCG and multilevel options",
          "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.matrix_precision == "double");
    CHECK_FALSE(weft::stepper_options<double>(weft::parse_scene(j)).pcg.single_precision_matrix);
    CHECK_FALSE(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.single_precision_matrix);
    j["solver"] = json::object();
    j["solver"]["matrix_precision"] = "single";
    CHECK(weft::parse_scene(j).solver.matrix_precision == "single");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).pcg.single_precision_matrix);
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.single_precision_matrix);
    j["solver"]["matrix_precision"] = "half";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.matrix_precision") && Catch::Contains("\"half\"") &&
                                                Catch::Contains("\"double\"") && Catch::Contains("\"single\""));
    j["solver"]["matrix_precision"] = 32;
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.matrix_precision"));
}

TEST_CASE("scene: solver.multilevel_rebuild is read, \"rent-or-buy\" by default, into the multilevel options",
          "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.multilevel_rebuild == "rent-or-buy");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.timed_rebuild);
    j["solver"] = json::object();
    j["solver"]["multilevel_rebuild"] = "growth";
    CHECK(weft::parse_scene(j).solver.multilevel_rebuild == "growth");
    CHECK_FALSE(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.timed_rebuild);
    j["solver"]["multilevel_rebuild"] = "rent-or-buy";
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.timed_rebuild);
    j["solver"]["multilevel_rebuild"] = "never";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_rebuild") &&
                                                Catch::Contains("\"never\"") && Catch::Contains("\"rent-or-buy\"") &&
                                                Catch::Contains("\"growth\""));
}

TEST_CASE("scene: solver.multilevel_pattern_change is read, \"rebuild\" by default, into the multilevel options",
          "[io][scene][preconditioner]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.multilevel_pattern_change == "rebuild");
    CHECK_FALSE(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.keep_across_patterns);
    j["solver"] = json::object();
    j["solver"]["multilevel_pattern_change"] = "keep";
    CHECK(weft::parse_scene(j).solver.multilevel_pattern_change == "keep");
    CHECK(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.keep_across_patterns);
    j["solver"]["multilevel_pattern_change"] = "rebuild";
    CHECK_FALSE(weft::stepper_options<double>(weft::parse_scene(j)).multilevel.keep_across_patterns);
    j["solver"]["multilevel_pattern_change"] = "refresh";
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.multilevel_pattern_change") &&
                                                Catch::Contains("\"refresh\"") && Catch::Contains("\"rebuild\"") &&
                                                Catch::Contains("\"keep\""));
}

TEST_CASE("scene: solver.stiffness_approximation is read into the yarn material, bad values are named",
          "[io][scene][newton]")
{
    json j = minimal();
    CHECK(weft::parse_scene(j).solver.stiffness_approximation == "auto");
    CHECK(weft::build_yarn_scene<double>(weft::parse_scene(j)).model.material.stiffness_approximation ==
          weft::StiffnessApproximation::automatic);
    int checked = 0;
    for (const auto& [key, expected] : {std::pair<std::string, weft::StiffnessApproximation>{
                                            "gauss-newton", weft::StiffnessApproximation::gauss_newton},
                                        {"projected", weft::StiffnessApproximation::projected},
                                        {"auto", weft::StiffnessApproximation::automatic}}) {
        j["solver"] = json{{"stiffness_approximation", key}};
        CHECK(weft::build_yarn_scene<double>(weft::parse_scene(j)).model.material.stiffness_approximation == expected);
        ++checked;
    }
    REQUIRE(checked == 3);
    j["solver"]["stiffness_approximation"] = "exact";
    CHECK_THROWS_WITH(weft::parse_scene(j),
                      Catch::Contains("solver.stiffness_approximation") && Catch::Contains("exact"));
    j["solver"]["stiffness_approximation"] = 1;
    CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("solver.stiffness_approximation"));
}

TEST_CASE("scene: EIL options and a rounded box are read and checked", "[io][scene][eil]")
{
    json j = minimal();
    j["solver"] = json::parse(R"({"eil": {"safety_factor": 0.2, "contact_factor": 500, "lookahead": false,
                                          "min_segment_factor": 0.5, "reset_arc_length": true,
                                          "remove_pulling_contacts": false, "pull_threshold": 0.01}})");
    j["colliders"] = json::parse(R"([{"type": "box", "center": [0, 0, -1], "size": [4, 4, 2], "rounding": 0.25}])");
    const weft::SceneDescription s = weft::parse_scene(j);
    CHECK(s.solver.eil);
    CHECK(s.solver.eil_safety_factor == 0.2);
    CHECK(s.solver.eil_contact_factor == 500);
    CHECK_FALSE(s.solver.eil_lookahead);
    CHECK(s.solver.eil_min_segment_factor == 0.5);
    CHECK(s.solver.eil_reset_arc_length);
    CHECK_FALSE(s.solver.eil_remove_pulling_contacts);
    CHECK(s.solver.eil_pull_threshold == 0.01);
    REQUIRE(s.colliders.size() == 1);
    CHECK(s.colliders[0].rounding == 0.25);
    // Defaults: the thesis keeps arc lengths on switching; boxes are sharp.
    json d = minimal();
    d["solver"] = json::parse(R"({"eil": {}})");
    d["colliders"] = json::parse(R"([{"type": "box", "center": [0, 0, -1], "size": [4, 4, 2]}])");
    const weft::SceneDescription t = weft::parse_scene(d);
    CHECK_FALSE(t.solver.eil_reset_arc_length);
    CHECK(t.solver.eil_remove_pulling_contacts);
    CHECK(t.solver.eil_pull_threshold == 1e-3);
    CHECK(t.colliders[0].rounding == 0);
    // Bad values are named.
    json bad = j;
    bad["solver"]["eil"]["reset_arc_length"] = 1;
    CHECK_THAT(error_of(bad), Catch::Contains("solver.eil.reset_arc_length"));
    bad = j;
    bad["solver"]["eil"]["pull_threshold"] = 1.0;
    CHECK_THAT(error_of(bad), Catch::Contains("solver.eil.pull_threshold: must be < 1"));
    bad["solver"]["eil"]["pull_threshold"] = -0.1;
    CHECK_THAT(error_of(bad), Catch::Contains("solver.eil.pull_threshold"));
    bad = j;
    bad["colliders"][0]["rounding"] = 1.0;  // half the shortest edge
    CHECK_THAT(error_of(bad), Catch::Contains("colliders[0].rounding: must be below half the shortest box edge (1 m)"));
    bad = j;
    bad["colliders"][0]["type"] = "sphere";
    bad["colliders"][0]["radius"] = 1.0;
    bad["colliders"][0].erase("size");
    CHECK_THAT(error_of(bad), Catch::Contains("rounding"));  // boxes only
}

TEST_CASE("scene: an unknown key is rejected naming its full path", "[io][scene][validation]")
{
    json j = example();
    SECTION("top level")
    {
        j["time_stpe"] = 0.1;
        CHECK_THAT(error_of(j), Contains("time_stpe: unknown key") && Contains("did you mean \"time_step\"?"));
    }
    SECTION("in a cloth entry")
    {
        j["cloth"][0]["stiffnes"] = j["cloth"][0]["stiffness"];
        j["cloth"][0].erase("stiffness");
        // Reported as a misspelling, not as the missing "stiffness".
        CHECK_THAT(error_of(j), Contains("cloth[0].stiffnes: unknown key") && Contains("did you mean \"stiffness\"?"));
    }
    SECTION("two levels down")
    {
        j["cloth"][0]["stiffness"]["strech"] = 1;
        CHECK_THAT(error_of(j), Contains("cloth[0].stiffness.strech: unknown key"));
    }
    SECTION("in solver, friction, initial velocity, collider and output")
    {
        json a = j, b = j, c = j, d = j, e = j;
        a["solver"]["pcg_tol"] = 1e-3;
        b["cloth"][0]["friction"]["mu"] = 0.1;
        c["cloth"][0]["initial_velocity"]["spin"] = {0, 0, 1};
        d["colliders"][0]["raduis"] = 1;
        e["output"]["fromats"] = {"vtk"};
        CHECK_THAT(error_of(a), Contains("solver.pcg_tol: unknown key"));
        CHECK_THAT(error_of(b), Contains("cloth[0].friction.mu: unknown key"));
        CHECK_THAT(error_of(c), Contains("cloth[0].initial_velocity.spin: unknown key"));
        CHECK_THAT(error_of(d), Contains("colliders[0].raduis: unknown key"));
        CHECK_THAT(error_of(e), Contains("output.fromats: unknown key"));
    }
    SECTION("a key that belongs to another damping model or collider type")
    {
        json a = j, b = j;
        a["cloth"][0]["damping"]["beta"] = 0.1;
        b["colliders"][0]["normal"] = {0, 0, 1};
        CHECK_THAT(error_of(a), Contains("cloth[0].damping.beta: unknown key for damping model \"strain-rate\""));
        CHECK_THAT(error_of(b), Contains("colliders[0].normal: unknown key for collider type \"sphere\""));
    }
    SECTION("every unknown key is listed")
    {
        j["aaa"] = 1;
        j["zzz"] = 2;
        const std::string message = error_of(j);
        CHECK_THAT(message, Contains("aaa: unknown key") && Contains("zzz: unknown key"));
    }
}

TEST_CASE("scene: a value of the wrong type is rejected naming the path and the expected type",
          "[io][scene][validation]")
{
    json j = example();
    SECTION("string for a number")
    {
        j["time_step"] = "fast";
        CHECK_THAT(error_of(j), Contains("time_step: expected a number, got string \"fast\""));
    }
    SECTION("boolean for a number")
    {
        j["cloth"][0]["density"] = true;
        CHECK_THAT(error_of(j), Contains("cloth[0].density: expected a number, got boolean true"));
    }
    SECTION("float for an integer")
    {
        j["solver"]["pcg_max_iterations"] = 2000.5;
        CHECK_THAT(error_of(j), Contains("solver.pcg_max_iterations: expected an integer, got number 2000.5"));
    }
    SECTION("wrong array length")
    {
        j["cloth"][0]["yarns"] = {40};
        j["gravity"] = {0, -9.81};
        CHECK_THAT(error_of(j), Contains("gravity: expected an array of 3 numbers, got array of 2 elements"));
        j["gravity"] = {0, 0, -9.81};
        CHECK_THAT(error_of(j), Contains("cloth[0].yarns: expected an array of 2 integers"));
    }
    SECTION("object for an array and array for an object")
    {
        json a = j, b = j;
        a["cloth"] = a["cloth"][0];
        b["solver"] = json::array();
        CHECK_THAT(error_of(a), Contains("cloth: expected an array of cloth objects, got object"));
        CHECK_THAT(error_of(b), Contains("solver: expected an object, got array of 0 elements"));
    }
    SECTION("number for a boolean")
    {
        j["solver"]["adaptive_time_step"] = 1;
        CHECK_THAT(error_of(j),
                   Contains("solver.adaptive_time_step: expected a boolean (true or false), got number 1"));
    }
    SECTION("a pin list that is a single string")
    {
        j["cloth"][0]["pins"] = "top-edge";
        CHECK_THAT(error_of(j), Contains("cloth[0].pins: expected an array"));
    }
    SECTION("the scene itself is not an object")
    {
        CHECK_THAT(error_of(json::array()), Contains("scene: expected an object"));
    }
}

TEST_CASE("scene: non-finite numbers are rejected whichever way they are written", "[io][scene][validation][nan]")
{
    SECTION("a number too large for a double, in text")
    {
        std::string text = example_scene;
        text.replace(text.find("\"time_step\": 0.001"), 18, "\"time_step\": 1e999");
        CHECK_THAT(error_of_text(text), Contains("test.json: time_step: must be a finite number"));
    }
    SECTION("a huge number inside an array, in text")
    {
        std::string text = example_scene;
        text.replace(text.find("[0,0,-9.81]"), 11, "[0,0,-1e400]");
        CHECK_THAT(error_of_text(text), Contains("test.json: gravity[2]: must be a finite number"));
    }
    SECTION("NaN and Infinity as strings")
    {
        json j = example();
        j["cloth"][0]["spacing"] = "NaN";
        CHECK_THAT(error_of(j), Contains("cloth[0].spacing: expected a number, got string \"NaN\""));
        j = example();
        j["duration"] = "Infinity";
        CHECK_THAT(error_of(j), Contains("duration: expected a number, got string \"Infinity\""));
    }
    SECTION("a bare NaN literal is a syntax error with its byte position")
    {
        std::string text = example_scene;
        const std::size_t at = text.find("0.00025");
        text.replace(at, 7, "NaN");
        CHECK_THAT(error_of_text(text), Contains("test.json: JSON syntax error at byte "));
    }
    SECTION("NaN and infinity built in C++")
    {
        json j = example();
        j["cloth"][0]["stiffness"]["bending"] = std::numeric_limits<double>::quiet_NaN();
        CHECK_THAT(error_of(j), Contains("cloth[0].stiffness.bending: must be a finite number, got nan"));
        j = example();
        j["colliders"][0]["center"][1] = -std::numeric_limits<double>::infinity();
        CHECK_THAT(error_of(j), Contains("colliders[0].center[1]: must be a finite number, got -inf"));
    }
}

TEST_CASE("scene: out-of-range values are rejected naming the path and the value", "[io][scene][validation]")
{
    json j = example();
    SECTION("negative spacing")
    {
        j["cloth"][0]["spacing"] = -0.001;
        CHECK_THAT(error_of(j), Contains("cloth[0].spacing: must be > 0, got -0.001"));
    }
    SECTION("zero time step, radius and density")
    {
        json a = j, b = j, c = j;
        a["time_step"] = 0;
        b["cloth"][0]["radius"] = 0;
        c["cloth"][0]["density"] = -130;
        CHECK_THAT(error_of(a), Contains("time_step: must be > 0, got 0"));
        CHECK_THAT(error_of(b), Contains("cloth[0].radius: must be > 0, got 0"));
        CHECK_THAT(error_of(c), Contains("cloth[0].density: must be > 0, got -130"));
    }
    SECTION("negative stiffness, zero allowed")
    {
        j["cloth"][0]["stiffness"]["shear"] = 0;
        CHECK(error_of(j).empty());
        j["cloth"][0]["stiffness"]["bending"] = -1e-5;
        CHECK_THAT(error_of(j), Contains("cloth[0].stiffness.bending: must be >= 0, got -1e-05"));
    }
    SECTION("solver tolerances and iteration counts")
    {
        json a = j, b = j, c = j, d = j;
        a["solver"]["pcg_tolerance"] = 0;
        b["solver"]["newton_iterations"] = 0;
        c["solver"]["pcg_tolerance"] = 1;
        d["solver"]["min_time_step"] = 0.01;
        CHECK_THAT(error_of(a), Contains("solver.pcg_tolerance: must be > 0, got 0"));
        CHECK_THAT(error_of(b), Contains("solver.newton_iterations: must be >= 1, got 0"));
        CHECK_THAT(error_of(c), Contains("solver.pcg_tolerance: must be < 1"));
        CHECK_THAT(error_of(d), Contains("solver.min_time_step: must be <= time_step"));
    }
    SECTION("too few yarns")
    {
        j["cloth"][0]["yarns"] = {40, 1};
        CHECK_THAT(error_of(j), Contains("cloth[0].yarns[1]: must be >= 2, got 1"));
    }
    SECTION("an empty cloth list")
    {
        j["cloth"] = json::array();
        CHECK_THAT(error_of(j), Contains("cloth: must list at least one cloth, got []"));
    }
    SECTION("a missing required key")
    {
        j["cloth"][0].erase("density");
        CHECK_THAT(error_of(j), Contains("cloth[0].density: required key is missing"));
    }
    SECTION("a time step longer than the run")
    {
        j["time_step"] = 2.0;
        CHECK_THAT(error_of(j), Contains("time_step: must be <= duration"));
    }
    SECTION("a contact distance that would push at rest")
    {
        json a = j;
        a["cloth"][0]["radius"] = 0.0006;  // default min_distance 2r = 1.2 mm > 1 mm spacing
        CHECK_THAT(error_of(a), Contains("cloth[0].contact.min_distance: the default 2 x radius"));
        j["cloth"][0]["contact"] = {{"min_distance", 0.001}};
        CHECK_THAT(error_of(j), Contains("cloth[0].contact.min_distance: got 0.001"));
    }
    SECTION("a contact distance that would push at rest, in a description edited in code")
    {
        // A benchmark refining the patch halves the spacing after parsing;
        // build_yarn_scene checks what the parser checked.
        weft::SceneDescription d = weft::parse_scene(j);
        REQUIRE(d.cloth.at(0).contact.min_distance < d.cloth[0].spacing);
        CHECK_NOTHROW(weft::build_yarn_scene<double>(d));
        d.cloth[0].spacing = d.cloth[0].contact.min_distance;
        REQUIRE_THROWS_WITH(weft::build_yarn_scene<double>(d),
                            Contains("cloth[0].contact.min_distance: ") && Contains("is not below spacing"));
    }
    SECTION("output counts and formats")
    {
        json a = j, b = j, c = j, d = j;
        a["output"]["every"] = 0;
        b["output"]["formats"] = {"vtk", "png"};
        c["output"]["formats"] = {"obj", "obj"};
        d["output"].erase("frames");
        CHECK_THAT(error_of(a), Contains("output.every: must be >= 1, got 0"));
        CHECK_THAT(error_of(b), Contains("output.formats[1]: unknown frame format \"png\""));
        CHECK_THAT(error_of(c), Contains("output.formats[1]: format \"obj\" is listed twice"));
        CHECK_THAT(error_of(d), Contains("output.every: given, but output.frames"));
    }
}

TEST_CASE("scene: refine_woven gives the patch at another spacing as the parser would read it", "[io][scene][refine]")
{
    // minimal(): 10 x 20 crossings 2 mm apart, every spacing-based value by default.
    const weft::SceneDescription coarse = weft::parse_scene(minimal());
    weft::ClothDescription c = coarse.cloth.at(0);
    weft::refine_woven(c, {19, 39});  // 18 spaces of 1 mm over the same 18 mm
    json fine = minimal();
    fine["cloth"][0]["yarns"] = {19, 39};
    fine["cloth"][0]["spacing"] = 0.001;
    const weft::ClothDescription expected = weft::parse_scene(fine).cloth.at(0);
    CHECK(c.yarns == expected.yarns);
    CHECK(c.spacing == Approx(expected.spacing).epsilon(1e-14));
    CHECK(c.friction.anchor_stiffness == Approx(expected.friction.anchor_stiffness).epsilon(1e-14));
    CHECK(c.contact.stiffness == Approx(expected.contact.stiffness).epsilon(1e-14));
    CHECK(c.friction.normal_force == expected.friction.normal_force);  // stretch-based, not spacing-based
    // The reach keeps its share of the spacing (2r = 0.4 of 2 mm), where the
    // parser's default 2 x radius would stay 0.8 mm.
    CHECK(c.contact.min_distance == Approx(0.0004).epsilon(1e-14));
    CHECK(expected.contact.min_distance == Approx(0.0008));

    SECTION("values given in the scene keep their ratio to the default")
    {
        json given = minimal();
        given["cloth"][0]["friction"] = {{"anchor_stiffness", 14.0}};
        given["cloth"][0]["contact"] = {{"stiffness", 3.0e5}, {"min_distance", 0.0011}};
        weft::ClothDescription g = weft::parse_scene(given).cloth.at(0);
        weft::refine_woven(g, {37, 5});  // 0.5 mm
        CHECK(g.spacing == Approx(0.0005).epsilon(1e-14));
        CHECK(g.friction.anchor_stiffness == Approx(56.0).epsilon(1e-14));
        CHECK(g.contact.stiffness == Approx(1.2e6).epsilon(1e-14));
        CHECK(g.contact.min_distance == Approx(0.000275).epsilon(1e-14));
    }
    SECTION("what it refuses")
    {
        weft::ClothDescription by_index = coarse.cloth.at(0);
        by_index.pins.nodes = {3};
        CHECK_THROWS_WITH(weft::refine_woven(by_index, {19, 39}), Contains("pins nodes by index"));
        weft::ClothDescription moving = coarse.cloth.at(0);
        moving.moving_pins.push_back({});
        moving.moving_pins[0].nodes.nodes = {0};
        CHECK_THROWS_WITH(weft::refine_woven(moving, {19, 39}), Contains("pins nodes by index"));
        weft::ClothDescription one = coarse.cloth.at(0);
        CHECK_THROWS_WITH(weft::refine_woven(one, {1, 39}), Contains("yarns[0] = 1"));
        weft::ClothDescription triangle = coarse.cloth.at(0);
        triangle.type = "triangle";
        CHECK_THROWS_WITH(weft::refine_woven(triangle, {19, 39}), Contains("not woven"));
        weft::ClothDescription named = coarse.cloth.at(0);
        named.pins.sets = {"top-edge"};
        CHECK_NOTHROW(weft::refine_woven(named, {19, 39}));
    }
}

TEST_CASE("scene: damping models are strain-rate, rayleigh, rayleigh-analogy or none", "[io][scene][damping]")
{
    json j = example();
    SECTION("an unknown model is named")
    {
        j["cloth"][0]["damping"] = {{"model", "viscous"}};
        CHECK_THAT(error_of(j), Contains("cloth[0].damping.model: unknown damping model \"viscous\""));
    }
    SECTION("rayleigh takes beta")
    {
        j["cloth"][0]["damping"] = {{"model", "rayleigh"}, {"beta", 4e-3}};
        const weft::DampingDescription d = weft::parse_scene(j).cloth[0].damping;
        CHECK(d.model == "rayleigh");
        CHECK(d.beta == 4e-3);
        CHECK(d.stretch == 0);
    }
    SECTION("rayleigh-analogy sets k_d = beta k_e per mode (2018 Eq. 12)")
    {
        j["cloth"][0]["damping"] = {{"model", "rayleigh-analogy"}, {"beta", 0.01}};
        const weft::DampingDescription d = weft::parse_scene(j).cloth[0].damping;
        CHECK(d.model == "rayleigh-analogy");
        CHECK(d.stretch == Approx(0.01 * 500));
        CHECK(d.bending == Approx(0.01 * 1e-5));
        CHECK(d.shear == Approx(0.01 * 1e-4));
    }
    SECTION("beta is required by the rayleigh models")
    {
        j["cloth"][0]["damping"] = {{"model", "rayleigh"}};
        CHECK_THAT(error_of(j), Contains("cloth[0].damping.beta: required key is missing"));
    }
    SECTION("none takes no coefficients")
    {
        j["cloth"][0]["damping"] = {{"model", "none"}, {"stretch", 1}};
        CHECK_THAT(error_of(j), Contains("cloth[0].damping.stretch: unknown key for damping model \"none\""));
    }
    SECTION("negative coefficients are rejected")
    {
        j["cloth"][0]["damping"]["shear"] = -1;
        CHECK_THAT(error_of(j), Contains("cloth[0].damping.shear: must be >= 0, got -1"));
    }
}

TEST_CASE("scene: pins are node-set names or node indices, mixed", "[io][scene][pins]")
{
    json j = example();
    SECTION("names and indices mix")
    {
        j["cloth"][0]["pins"] = json::parse(R"(["corners", 0, "right-edge", 1599])");
        const weft::NodeSelection p = weft::parse_scene(j).cloth[0].pins;
        CHECK(p.sets == std::vector<std::string>{"corners", "right-edge"});
        CHECK(p.nodes == std::vector<int>{0, 1599});
    }
    SECTION("an unknown set name")
    {
        j["cloth"][0]["pins"] = {"top-edge", "top"};
        CHECK_THAT(error_of(j), Contains("cloth[0].pins[1]: unknown node set \"top\""));
    }
    SECTION("an index outside the patch")
    {
        j["cloth"][0]["pins"] = {1600};
        CHECK_THAT(error_of(j), Contains("cloth[0].pins[0]: node index 1600 is out of range"));
    }
    SECTION("a negative index")
    {
        j["cloth"][0]["pins"] = {-1};
        CHECK_THAT(error_of(j), Contains("cloth[0].pins[0]: must be >= 0, got -1"));
    }
    SECTION("neither a name nor an index")
    {
        j["cloth"][0]["pins"] = {2.5};
        CHECK_THAT(error_of(j), Contains("cloth[0].pins[0]: expected a node-set name"));
    }
    SECTION("moving pins use the same selectors")
    {
        j["cloth"][0]["moving_pins"] = json::parse(R"([{"nodes": ["bottom"], "velocity": [0, 0, 1]}])");
        CHECK_THAT(error_of(j), Contains("cloth[0].moving_pins[0].nodes[0]: unknown node set \"bottom\""));
    }
}

TEST_CASE("scene: plane, pattern, cloth type and collider type are checked by name", "[io][scene][validation]")
{
    json j = example();
    SECTION("plane")
    {
        j["cloth"][0]["plane"] = "yz";
        CHECK_THAT(error_of(j), Contains("cloth[0].plane: unknown plane \"yz\" (expected one of \"xy\", \"xz\")"));
    }
    SECTION("pattern")
    {
        j["cloth"][0]["pattern"] = "satin";
        CHECK_THAT(error_of(j), Contains("cloth[0].pattern: unknown weave pattern \"satin\""));
    }
    SECTION("cloth type")
    {
        j["cloth"][0]["type"] = "knit";
        CHECK_THAT(
            error_of(j),
            Contains(
                "cloth[0].type: unknown cloth type \"knit\" (supported: \"woven\", \"triangle\", \"sliding-rods\")"));
    }
    SECTION("a missing cloth type")
    {
        j["cloth"][0].erase("type");
        CHECK_THAT(error_of(j), Contains("cloth[0].type: required key is missing"));
    }
    SECTION("collider type")
    {
        j["colliders"][0]["type"] = "cone";
        CHECK_THAT(error_of(j), Contains("colliders[0].type: unknown collider type \"cone\""));
    }
    SECTION("a zero plane normal")
    {
        j["colliders"][0] = json::parse(R"({"type": "plane", "point": [0, 0, 0], "normal": [0, 0, 0]})");
        CHECK_THAT(error_of(j), Contains("colliders[0].normal: must be a non-zero finite vector"));
    }
}

TEST_CASE("scene: a duplicate key in scene text is rejected naming its path", "[io][scene][validation]")
{
    std::string text = example_scene;
    text.replace(text.find("\"spacing\": 0.001"), 16, "\"spacing\": 0.001, \"spacing\": 0.002");
    CHECK_THAT(error_of_text(text), Contains("test.json: cloth[0].spacing: duplicate key"));
    // Without the duplicate the same text is fine.
    CHECK(error_of_text(example_scene).empty());
}

TEST_CASE("scene: load_scene names the file in every error", "[io][scene][file]")
{
    TempDir dir;
    SECTION("a missing file")
    {
        const auto path = dir.path / "missing.json";
        CHECK_THROWS_WITH(weft::load_scene(path), Contains(path.string()) && Contains("no such file"));
    }
    SECTION("a directory")
    {
        CHECK_THROWS_WITH(weft::load_scene(dir.path), Contains(dir.path.string()) && Contains("is a directory"));
    }
    SECTION("a syntax error, with nlohmann's byte position")
    {
        const auto path = dir.path / "broken.json";
        write_text(path, "{\n  \"time_step\": 0.001,\n  \"duration\": }\n");
        // The stray '}' is the 39th byte (nlohmann counts from 1).
        CHECK_THROWS_WITH(weft::load_scene(path),
                          Contains(path.string() + ": JSON syntax error at byte 39") && Contains("line 3"));
    }
    SECTION("an empty file")
    {
        const auto path = dir.path / "empty.json";
        write_text(path, "");
        CHECK_THROWS_WITH(weft::load_scene(path), Contains(path.string() + ": JSON syntax error"));
    }
    SECTION("a validation error")
    {
        const auto path = dir.path / "typo.json";
        json j = example();
        j["cloth"][0]["stiffnes"] = 1;
        write_text(path, j.dump(2));
        CHECK_THROWS_AS(weft::load_scene(path), weft::InvalidInput);
        CHECK_THROWS_WITH(weft::load_scene(path), Contains(path.string() + ": cloth[0].stiffnes: unknown key"));
    }
    SECTION("a good file records its source")
    {
        const auto path = dir.path / "good.json";
        write_text(path, example_scene);
        const weft::SceneDescription s = weft::load_scene(path);
        CHECK(s.source == path.string());
        CHECK(s.cloth.size() == 1);
    }
}

TEST_CASE("scene: EIL solver options, sliding-rods and triangle entries", "[io][scene][eil][triangle]")
{
    using Catch::Contains;
    json j = minimal();
    j["solver"] = json::parse(R"({"eil": {"enabled": true, "safety_factor": 0.2, "contact_factor": 500}})");
    const weft::SceneDescription s = weft::parse_scene(j);
    CHECK(s.solver.eil);
    CHECK(s.solver.eil_safety_factor == 0.2);
    CHECK(s.solver.eil_contact_factor == 500);
    // EIL is the default of every yarn scene, off where the scene says so
    CHECK(weft::parse_scene(minimal()).solver.eil);
    json off = minimal();
    off["solver"] = json::parse(R"({"eil": {"enabled": false}})");
    CHECK_FALSE(weft::parse_scene(off).solver.eil);
    j["solver"]["eil"]["safety_factor"] = 1.5;
    CHECK_THAT(error_of(j), Contains("solver.eil.safety_factor: must be < 1"));
    j["solver"] = json::parse(R"({"eil": {"enable": true}})");
    CHECK_THAT(error_of(j), Contains("solver.eil.enable"));

    json rods = minimal();
    rods["cloth"] =
        json::parse(R"([{"type": "sliding-rods", "speed_b": 0.01, "speed_c": -0.006, "prestretch": 1.01}])");
    const weft::SceneDescription r = weft::parse_scene(rods);
    CHECK(r.cloth[0].type == "sliding-rods");
    CHECK(r.cloth[0].rods.speed_c == -0.006);
    CHECK(r.cloth[0].stiffness.stretch == 500);
    CHECK(r.solver.eil);
    rods["cloth"][0]["speed_b"] = -0.01;
    CHECK_THAT(error_of(rods), Contains("cloth[0].speed_b: must exceed speed_c"));

    json tri = minimal();
    tri["cloth"] = json::parse(R"([{"type": "triangle", "resolution": [4, 3], "size": [1, 0.5],
        "material": {"model": "stvk", "lambda": 1e5, "mu": 2e5, "thickness": 0.001, "density": 300},
        "damping": {"model": "rayleigh-analogy", "beta": 0.1}, "pins": ["corners", 5]}])");
    const weft::SceneDescription t = weft::parse_scene(tri);
    CHECK_FALSE(t.solver.eil);  // EIL nodes are a yarn discretization
    const weft::TriangleClothDescription& d = t.cloth[0].triangle;
    CHECK(d.resolution[0] == 4);
    CHECK(d.size[1] == 0.5);
    CHECK(d.collision_offset == Approx(0.0005));
    CHECK(t.cloth[0].damping.stretch == Approx(1e4));  // λ_d = β λ (2018 Eq. 12)
    CHECK(t.cloth[0].damping.shear == Approx(2e4));    // μ_d = β μ
    // plate D = E h³ / 12(1 − ν²) with E = μ(3λ + 2μ)/(λ + μ), ν = λ / 2(λ + μ)
    const double e = 2e5 * (3e5 + 4e5) / 3e5, nu = 1e5 / 6e5;
    CHECK(d.bending == Approx(e * 1e-9 / (12 * (1 - nu * nu))));
    CHECK(t.cloth[0].pins.nodes == std::vector<int>{5});
    tri["cloth"][0]["resolution"] = json::parse("[1, 3]");
    CHECK_THAT(error_of(tri), Contains("cloth[0].resolution[0]"));
    tri["cloth"][0]["resolution"] = json::parse("[4, 3]");
    tri["cloth"][0]["material"]["lambda"] = -3e5;
    CHECK_THAT(error_of(tri), Contains("cloth[0].material.lambda: lambda + mu must be >= 0"));
    tri["cloth"][0]["material"]["lambda"] = 1e5;
    tri["cloth"][0]["material"]["youngs"] = 1;
    CHECK_THAT(error_of(tri), Contains("cloth[0].material.youngs"));
    tri["cloth"][0]["material"].erase("youngs");

    // Bending: plate by default, ν the one D was derived with; the dihedral model, the stiffness given once.
    CHECK(d.bending_model == "plate");
    CHECK(d.bending_poisson == Approx(nu));
    CHECK(d.rest_shape == "flat");
    tri["cloth"][0]["bending"] = json::parse(R"({"model": "dihedral", "stiffness": 2e-3})");
    tri["cloth"][0]["rest_shape"] = "mesh";
    const weft::SceneDescription dihedral = weft::parse_scene(tri);
    CHECK(dihedral.cloth[0].triangle.bending_model == "dihedral");
    CHECK(dihedral.cloth[0].triangle.bending == 2e-3);
    CHECK(dihedral.cloth[0].triangle.rest_shape == "mesh");
    tri["cloth"][0]["bending"] = json::parse(R"({"model": "plate", "poisson": 0.45})");
    CHECK(weft::parse_scene(tri).cloth[0].triangle.bending_poisson == 0.45);
    tri["cloth"][0]["bending"] = json::parse(R"({"model": "shells"})");
    CHECK_THAT(error_of(tri), Contains("cloth[0].bending.model") && Contains("shells"));
    tri["cloth"][0]["bending"] = json::parse(R"({"poisson": 1.0})");
    CHECK_THAT(error_of(tri), Contains("cloth[0].bending.poisson: must be in (-1, 1)") && Contains("got 1"));
    tri["cloth"][0]["bending"] = json::parse(R"({"model": "dihedral", "poisson": 0.3})");
    CHECK_THAT(error_of(tri), Contains("cloth[0].bending.poisson: applies to the \"plate\" bending model"));
    tri["cloth"][0]["bending"] = json::parse(R"({"stiffness": 1e-3})");
    tri["cloth"][0]["material"]["bending"] = 2e-3;
    CHECK_THAT(error_of(tri), Contains("cloth[0].bending.stiffness: give the bending stiffness once"));
    tri["cloth"][0]["material"].erase("bending");
    tri["cloth"][0]["bending"] = json::parse(R"({"stiffnes": 1e-3})");
    CHECK_THAT(error_of(tri), Contains("cloth[0].bending.stiffnes: unknown key"));
    tri["cloth"][0].erase("bending");
    tri["cloth"][0]["rest_shape"] = "curved";
    CHECK_THAT(error_of(tri), Contains("cloth[0].rest_shape") && Contains("curved"));
}

TEST_CASE("scene schema: every key the parser accepts is documented in docs/", "[io][scene][schema][docs]")
{
    // The parsers read their allowed keys from scene_schema.hpp; each must
    // appear in docs/scenes.md or docs/triangles.md as a word of its own.
    std::string docs;
    for (const char* name : {"scenes.md", "triangles.md"}) {
        const std::filesystem::path path = std::filesystem::path(WEFT_DOCS_DIR) / name;
        std::ifstream in(path);
        REQUIRE(in.good());
        docs.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    REQUIRE(docs.size() > 10000);
    const auto is_word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    const auto documented = [&](const std::string& key) {
        for (std::size_t at = docs.find(key); at != std::string::npos; at = docs.find(key, at + 1)) {
            const bool starts = at == 0 || !is_word_char(docs[at - 1]);
            const bool ends = at + key.size() == docs.size() || !is_word_char(docs[at + key.size()]);
            if (starts && ends) return true;
        }
        return false;
    };
    int checked = 0;
    for (const weft::SceneObjectKeys& object : weft::scene_schema()) {
        REQUIRE(object.keys != nullptr);
        REQUIRE(!object.keys->empty());
        for (const std::string& key : *object.keys) {
            INFO(object.object << "." << key << " is accepted by the parser but appears nowhere in docs/");
            CHECK(documented(key));
            ++checked;
        }
    }
    // 28 objects, 190 keys (with repeats across objects, e.g. "type").
    REQUIRE(weft::scene_schema().size() == 28);
    REQUIRE(checked == 190);
    // The linear-solve keys (weft-run --other-linear-solver) are solver keys.
    const weft::scene_keys::Keys& solver = weft::scene_keys::solver();
    for (const std::string& key : weft::scene_keys::solver_linear()) {
        INFO("solver_linear() key " << key);
        CHECK(std::find(solver.begin(), solver.end(), key) != solver.end());
    }
    REQUIRE(weft::scene_keys::solver_linear().size() == 17);
    // docs/scenes.md ("Checkpoints") names them: the keys in backquotes, and
    // "every `multilevel_*` key", which must then be every multilevel key.
    const std::size_t from = docs.find("**Another linear solve from the same state");
    REQUIRE(from != std::string::npos);
    const std::string paragraph = docs.substr(from, docs.find("\n\n", from) - from);
    REQUIRE(paragraph.find("every `multilevel_*` key") != std::string::npos);
    const weft::scene_keys::Keys& linear = weft::scene_keys::solver_linear();
    int named = 0;
    for (const std::string& key : solver) {
        const bool multilevel = key.rfind("multilevel_", 0) == 0;
        const bool is_linear = std::find(linear.begin(), linear.end(), key) != linear.end();
        INFO("solver." << key);
        if (multilevel) CHECK(is_linear);
        if (is_linear && !multilevel) {
            CHECK(paragraph.find("`" + key + "`") != std::string::npos);
            ++named;
        }
    }
    REQUIRE(named == 5);
}

TEST_CASE("scene schema: a key outside an object's list is refused with that list's nearest key", "[io][scene][schema]")
{
    // The schema is what the parser enforces: one misspelt key per object kind.
    json scene = json::parse(example_scene);
    scene["solver"]["line_search_cut"] = 3;
    REQUIRE_THROWS_WITH(weft::parse_scene(scene), Contains("solver.line_search_cut: unknown key") &&
                                                      Contains("did you mean \"line_search_cuts\""));
    scene = json::parse(example_scene);
    scene["cloth"][0]["rotaton"] = 30;
    REQUIRE_THROWS_WITH(weft::parse_scene(scene),
                        Contains("cloth[0].rotaton: unknown key") && Contains("did you mean \"rotation\""));
    scene = json::parse(example_scene);
    scene["colliders"][0]["rounding"] = 0.001;
    REQUIRE_THROWS_WITH(weft::parse_scene(scene),
                        Contains("colliders[0].rounding: unknown key for collider type \"sphere\""));
    scene = json::parse(example_scene);
    scene["output"]["csv_evry"] = 2;
    REQUIRE_THROWS_WITH(weft::parse_scene(scene),
                        Contains("output.csv_evry: unknown key") && Contains("did you mean \"csv_every\""));
}

/// The InvalidInput message of building a triangle scene ("" when none).
static std::string error_of_build(const json& scene)
{
    try {
        weft::build_triangle_scene<double>(weft::parse_scene(scene));
    } catch (const weft::InvalidInput& e) {
        return e.what();
    }
    return "";
}

TEST_CASE("scene: the collision object, its defaults and its refusals", "[io][scene][collision]")
{
    json tri = minimal();
    tri["cloth"] = json::parse(R"([{"type": "triangle", "resolution": [6, 6], "size": [1, 1],
        "material": {"model": "stvk", "lambda": 1e5, "mu": 1e5, "thickness": 0.001, "density": 300}}])");
    CHECK_FALSE(weft::parse_scene(tri).collision.enabled);  // off unless asked for
    tri["collision"] = json::object();
    weft::SceneDescription s = weft::parse_scene(tri);
    CHECK(s.collision.enabled);
    CHECK(s.collision.thickness == Approx(0.001));  // 2 x collision_offset (thickness / 2)
    CHECK(s.collision.friction == 0);
    CHECK(s.collision.stiffness == 0);  // resolved by the model builder
    const weft::TriangleScene<double> built = weft::build_triangle_scene<double>(s);
    // 100 x mean node mass / h²: 0.3 kg/m² x 1 m² over 36 nodes, h = 2 ms.
    CHECK(built.model.collision.stiffness == Approx(100 * (0.3 / 36) / (0.002 * 0.002)));
    CHECK(built.model.collision.enabled);
    tri["collision"] = json::parse(R"({"thickness": 0.003, "friction": 0.4, "stiffness": 50, "enabled": false})");
    s = weft::parse_scene(tri);
    CHECK_FALSE(s.collision.enabled);
    CHECK(s.collision.thickness == 0.003);
    CHECK(s.collision.friction == 0.4);
    CHECK(s.collision.stiffness == 50);

    tri["collision"] = json::parse(R"({"thickness": -0.001})");
    CHECK_THAT(error_of(tri), Contains("collision.thickness: must be > 0") && Contains("-0.001"));
    tri["collision"] = json::parse(R"({"stiffnes": 10})");
    CHECK_THAT(error_of(tri), Contains("collision.stiffnes: unknown key") && Contains("did you mean \"stiffness\""));
    tri["collision"] = json::parse(R"({"friction": -1})");
    CHECK_THAT(error_of(tri), Contains("collision.friction"));
    tri["collision"] = json::parse(R"({"enabled": 1})");
    CHECK_THAT(error_of(tri), Contains("collision.enabled"));
    // A thickness the mesh's own neighbours would violate (altitudes 0.2 / sqrt 2 m).
    tri["collision"] = json::parse(R"({"thickness": 0.5})");
    REQUIRE_THROWS_WITH(weft::build_triangle_scene<double>(weft::parse_scene(tri)),
                        Contains("collision.thickness") && Contains("smallest triangle altitude"));
    tri["collision"] = json::parse(R"({"create_contacts": true})");
    REQUIRE_THROWS_WITH(weft::build_triangle_scene<double>(weft::parse_scene(tri)),
                        Contains("collision.create_contacts") && Contains("yarn"));
    tri["collision"] = json::parse(R"({"parallel_angle": 5})");
    REQUIRE_THROWS_WITH(weft::build_triangle_scene<double>(weft::parse_scene(tri)),
                        Contains("collision.parallel_angle") && Contains("yarn"));
    // Yarn scenes: the yarn diameter and 100 x mean node mass / h² by default.
    json yarn = example();
    yarn["collision"] = json::object();
    const weft::SceneDescription ys = weft::parse_scene(yarn);
    CHECK(ys.collision.thickness == Approx(2 * ys.cloth[0].radius));
    const weft::YarnScene<double> yb = weft::build_yarn_scene<double>(ys);
    CHECK(yb.model.collision.enabled);
    CHECK(yb.model.collision.thickness == Approx(2 * ys.cloth[0].radius));
    double length = 0;
    for (const weft::YarnSegment& seg : yb.model.segments)
        length += (yb.model.position(seg.node1) - yb.model.position(seg.node0)).norm();
    const double mean_mass = yb.model.material.linear_density * length / yb.model.node_count();
    CHECK(yb.model.collision.stiffness == Approx(100 * mean_mass / (ys.time_step * ys.time_step)));
    CHECK(yb.model.collision.parallel_angle == 0.0);
    // parallel_angle in degrees, to radians in the model; below 90, not negative.
    yarn["collision"] = json::parse(R"({"parallel_angle": 5})");
    CHECK(weft::build_yarn_scene<double>(weft::parse_scene(yarn)).model.collision.parallel_angle ==
          Approx(5 * 3.14159265358979323846 / 180));
    yarn["collision"] = json::parse(R"({"parallel_angle": -1})");
    CHECK_THAT(error_of(yarn), Contains("collision.parallel_angle") && Contains("-1"));
    yarn["collision"] = json::parse(R"({"parallel_angle": 90})");
    CHECK_THAT(error_of(yarn), Contains("collision.parallel_angle: must be below 90") && Contains("90"));
    yarn["collision"] = json::parse(R"({"parallel_angle": "5"})");
    CHECK_THAT(error_of(yarn), Contains("collision.parallel_angle"));
    // onset: a fraction of the thickness in [0, 1), into both models; 0 by default.
    CHECK(yb.model.collision.onset == 0.0);
    yarn["collision"] = json::parse(R"({"onset": 0.25})");
    CHECK(weft::build_yarn_scene<double>(weft::parse_scene(yarn)).model.collision.onset == 0.25);
    tri["collision"] = json::parse(R"({"onset": 0.25})");
    CHECK(weft::build_triangle_scene<double>(weft::parse_scene(tri)).model.collision.onset == 0.25);
    yarn["collision"] = json::parse(R"({"onset": -0.1})");
    CHECK_THAT(error_of(yarn), Contains("collision.onset") && Contains("-0.1"));
    yarn["collision"] = json::parse(R"({"onset": 1})");
    CHECK_THAT(error_of(yarn), Contains("collision.onset: must be below 1") && Contains("1"));
    yarn["collision"] = json::parse(R"({"onset": "0.2"})");
    CHECK_THAT(error_of(yarn), Contains("collision.onset"));
    // Refused: a thickness the fabric's own yarns would violate; contact
    // creation without stacked layers that can lose contacts, or without EIL.
    yarn["collision"] = json::parse(R"({"thickness": 0.5})");
    REQUIRE_THROWS_WITH(weft::build_yarn_scene<double>(weft::parse_scene(yarn)),
                        Contains("collision.thickness") && Contains("shortest yarn segment"));
    yarn["collision"] = json::parse(R"({"create_contacts": true})");
    REQUIRE_THROWS_WITH(weft::build_yarn_scene<double>(weft::parse_scene(yarn)),
                        Contains("collision.create_contacts") && Contains("on_top_of") && Contains("layer_friction"));
    {
        json no_eil = yarn;
        no_eil["solver"]["eil"] = json::parse(R"({"enabled": false})");
        REQUIRE_THROWS_WITH(weft::build_yarn_scene<double>(weft::parse_scene(no_eil)),
                            Contains("collision.create_contacts") && Contains("solver.eil.enabled"));
    }
    // Stacked layers with collision: the layers' places in the stack (the
    // bottom cloth's yarns at level 0, the top's at 1); the thickness is
    // checked against each fabric's own spacing, not the half segments the
    // contact nodes cut.
    weft::SceneDescription stacked = weft::load_scene(WEFT_DOCS_DIR "/../examples/scenes/tablecloth.json");
    stacked.collision.enabled = true;
    stacked.collision.thickness = 2 * stacked.cloth[0].radius;
    const weft::YarnScene<double> sb = weft::build_yarn_scene<double>(stacked);
    REQUIRE(sb.model.yarn_layer.size() == sb.model.yarns.size());
    const std::size_t bottom_yarns = static_cast<std::size_t>(stacked.cloth[0].yarns[0] + stacked.cloth[0].yarns[1]);
    for (std::size_t y = 0; y < sb.model.yarns.size(); ++y) {
        CHECK(sb.model.yarn_layer[y].stack == 0);
        CHECK(sb.model.yarn_layer[y].level == (y < bottom_yarns ? 0 : 1));
    }
    CHECK(weft::yarn_segment_lengths(sb.model).first < 0.75 * stacked.cloth[0].spacing);  // cut by the contacts
    CHECK_FALSE(sb.model.collision.create_contacts);
    stacked.collision.create_contacts = true;  // tablecloth.json's layers take friction from their normal force
    CHECK(weft::build_yarn_scene<double>(stacked).model.collision.create_contacts);
    stacked.collision.create_contacts = false;
    stacked.collision.thickness = 1.01 * stacked.cloth[0].spacing;
    REQUIRE_THROWS_WITH(weft::build_yarn_scene<double>(stacked),
                        Contains("collision.thickness") && Contains("shortest yarn segment"));
}

TEST_CASE("scene: several triangle entries make one model of several pieces", "[io][scene][triangle]")
{
    json tri = minimal();
    tri["cloth"] = json::parse(R"([
        {"type": "triangle", "resolution": [3, 3], "size": [1, 1], "pins": ["corners"],
         "material": {"model": "stvk", "lambda": 1e5, "mu": 1e5, "thickness": 0.001, "density": 300}},
        {"type": "triangle", "resolution": [4, 3], "size": [1, 0.5], "center": [0, 0, 0.5], "pins": [1],
         "initial_velocity": {"linear": [0, 0, -2]},
         "material": {"model": "stvk", "lambda": 1e5, "mu": 1e5, "thickness": 0.001, "density": 300}}])");
    const weft::TriangleScene<double> built = weft::build_triangle_scene<double>(weft::parse_scene(tri));
    REQUIRE(built.model.node_count() == 9 + 12);
    CHECK(built.mesh.triangle_count() == 8 + 12);
    CHECK(built.model.q[3 * 9 + 2] == 0.5);  // the second piece's first vertex
    int pinned = 0;
    for (int i = 0; i < built.model.node_count(); ++i) pinned += built.model.free_dof[3 * i] == 0 ? 1 : 0;
    CHECK(pinned == 4 + 1);
    CHECK(built.model.free_dof[3 * (9 + 1)] == 0);  // cloth[1]'s vertex 1
    CHECK(built.model.v[3 * 10 + 2] == 0);          // pinned: at rest
    CHECK(built.model.v[3 * 9 + 2] == -2);
    CHECK(built.model.v[3 * 20 + 2] == -2);
    CHECK(built.model.v[2] == 0);  // the first piece keeps its own initial velocity
    // Materials must agree; types must not mix.
    tri["cloth"][1]["material"]["density"] = 400;
    CHECK_THAT(error_of_build(tri), Contains("cloth[1]") && Contains("share one material"));
    tri["cloth"][1] = example()["cloth"][0];
    CHECK_THAT(error_of_build(tri), Contains("cloth[1].type \"woven\"") && Contains("only \"triangle\" entries"));
}

TEST_CASE("scene memory: a scene larger than the machine is refused with the estimate before allocating",
          "[io][scene][memory]")
{
    json scene = json::parse(example_scene);
    scene["cloth"][0]["yarns"] = {40000, 40000};
    scene["cloth"][0]["pins"] = json::array();
    const weft::SceneDescription huge = weft::parse_scene(scene);
    // 1.6e9 nodes: at least 16,000 GB, more than any machine this runs on.
    REQUIRE(weft::physical_memory_bytes() > 1e9);
    REQUIRE(weft::physical_memory_bytes() < 16000e9);
    REQUIRE_THROWS_WITH(weft::build_yarn_scene<double>(huge),
                        Contains("1600000000 yarn nodes, which need at least 16000.0 GB of memory") &&
                            Contains("more than this machine's"));

    // Against a given amount of memory: 400 x 400 nodes need at least 1.6 GB.
    scene["cloth"][0]["yarns"] = {400, 400};
    const weft::SceneDescription large = weft::parse_scene(scene);
    CHECK(weft::estimate_memory(large).bytes == Approx(160000 * weft::yarn_node_bytes));
    REQUIRE_THROWS_WITH(weft::require_fits_in_memory(large, 1e9),
                        Contains("160000 yarn nodes, which need at least 1.6 GB") && Contains("machine's 1.0 GB"));
    REQUIRE_NOTHROW(weft::require_fits_in_memory(large, 2e9));

    // A triangle grid counts its vertices.
    json sheet = json::parse(R"({"time_step": 0.002, "duration": 0.1,
        "cloth": [{"type": "triangle", "resolution": [1000, 1000], "size": [1, 1],
                   "material": {"model": "stvk", "lambda": 1e5, "mu": 1e5, "thickness": 0.001, "density": 200}}]})");
    const weft::SceneDescription grid = weft::parse_scene(sheet);
    // Plate bending (the default) needs 15 KB per vertex, dihedral hinges 6 KB.
    REQUIRE_THROWS_WITH(weft::require_fits_in_memory(grid, 1e9),
                        Contains("1000000 triangle vertices, which need at least 15.0 GB"));
    sheet["cloth"][0]["bending"] = json::parse(R"({"model": "dihedral"})");
    REQUIRE_THROWS_WITH(weft::require_fits_in_memory(weft::parse_scene(sheet), 1e9),
                        Contains("1000000 triangle vertices, which need at least 6.0 GB"));
}

TEST_CASE("scene: a triangle material given by Young's modulus and Poisson's ratio is a plane-stress membrane",
          "[io][scene][triangle][material]")
{
    json scene = json::parse(R"({"time_step": 0.002, "duration": 0.1,
        "cloth": [{"type": "triangle", "resolution": [5, 5], "size": [1, 1],
                   "material": {"model": "stvk", "young": 3e6, "poisson": 0.3, "thickness": 0.002,
                                "density": 200}}]})");
    const double e = 3e6, nu = 0.3, h = 0.002;
    const weft::SceneDescription s = weft::parse_scene(scene);
    const weft::TriangleClothDescription& t = s.cloth[0].triangle;
    CHECK(t.young == e);
    CHECK(t.poisson == nu);
    CHECK(t.lambda == Approx(e * nu / (1 - nu * nu)).epsilon(1e-15));  // λ₂D, not the 3D λ = Eν/((1+ν)(1−2ν))
    CHECK(t.mu == Approx(e / (2 * (1 + nu))).epsilon(1e-15));
    CHECK(t.bending == Approx(e * h * h * h / (12 * (1 - nu * nu))).epsilon(1e-15));

    // Uniaxial stress with the model's membrane law (small strain): lateral
    // contraction ν and axial stress E h ε, the plane-stress response.
    const weft::TriangleScene<double> built = weft::build_triangle_scene<double>(s);
    const weft::StVKDensity<double>& law = built.model.material.stvk;
    const double strain = 1e-6;
    const Eigen::Vector3d green(strain, -nu * strain, 0);  // Voigt (e11, e22, e12)
    const Eigen::Vector3d stress = law.stress(green);
    CHECK(std::abs(stress(1)) <= 1e-12 * std::abs(stress(0)));  // no lateral stress
    CHECK(stress(0) == Approx(e * h * strain).epsilon(1e-12));
    CHECK(std::abs(stress(2)) == 0.0);

    // Bad input, each naming the key and the value.
    auto with = [&](const char* key, const json& value) {
        json j = scene;
        j["cloth"][0]["material"][key] = value;
        return j;
    };
    REQUIRE_THROWS_WITH(weft::parse_scene(with("poisson", 0.5)),
                        Contains("cloth[0].material.poisson: must be in (-1, 0.5)") && Contains("got 0.5"));
    REQUIRE_THROWS_WITH(weft::parse_scene(with("poisson", -1)), Contains("cloth[0].material.poisson"));
    REQUIRE_THROWS_WITH(weft::parse_scene(with("young", -2e6)),
                        Contains("cloth[0].material.young: must be > 0, got -2000000"));
    REQUIRE_THROWS_WITH(weft::parse_scene(with("lambda", 1e5)),
                        Contains("cloth[0].material.lambda: give either \"young\" and \"poisson\" or \"lambda\" "
                                 "and \"mu\", not both (got lambda = number 100000 with young = number 3000000)"));
    json no_poisson = scene;
    no_poisson["cloth"][0]["material"].erase("poisson");
    REQUIRE_THROWS_WITH(weft::parse_scene(no_poisson), Contains("cloth[0].material.poisson: required key is missing"));
    json thin = with("thickness", 0);
    REQUIRE_THROWS_WITH(weft::parse_scene(thin), Contains("cloth[0].material.thickness: must be > 0"));
}

TEST_CASE("scene: the solver words are one list each, in the order of the options they name", "[io][scene][words]")
{
    namespace words = weft::solver_words;
    CHECK(words::joined(words::multilevel_refresh()) == "off, on-growth, every-prepare");
    CHECK(words::index_of("every-prepare", words::multilevel_refresh(), "multilevel refresh") == 2);
    CHECK(words::index_of("adaptive", words::hessian_projection(), "Hessian projection") == 2);
    CHECK_THROWS_WITH(words::index_of("sometimes", words::multilevel_rebuild(), "multilevel rebuild rule"),
                      Catch::Contains("multilevel rebuild rule") && Catch::Contains("\"sometimes\"") &&
                          Catch::Contains("rent-or-buy, growth"));
    // The scene parser takes exactly these words, and names them when it refuses one.
    json j = minimal();
    for (const std::string& word : words::preconditioner()) {
        j["solver"] = json{{"preconditioner", word}};
        CHECK(weft::parse_scene(j).solver.preconditioner == word);
    }
    j["solver"] = json{{"multilevel_refresh", "sometimes"}};
    for (const std::string& word : words::multilevel_refresh())
        CHECK_THROWS_WITH(weft::parse_scene(j), Catch::Contains("\"" + word + "\""));
}
