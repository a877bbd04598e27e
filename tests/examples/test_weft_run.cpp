// The scene runner behind weft-run: command line, CSV and frame outputs,
// relative paths, --duration, reported failures.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../../examples/weft_run/scene_runner.hpp"

namespace fs = std::filesystem;
using weft::examples::parse_run_arguments;
using weft::examples::run_scene;
using weft::examples::RunArguments;
using weft::examples::RunSummary;

namespace {

fs::path fresh_dir(const std::string& name)
{
    const fs::path dir = fs::temp_directory_path() / ("weft_test_weft_run_" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

std::string small_scene(const std::string& solver = R"({"newton_iterations": 1, "pcg_tolerance": 1e-6})")
{
    return R"({ "time_step": 0.001, "duration": 1.0, "gravity": [0, 0, -9.81],
      "solver": )" +
           solver + R"(,
      "cloth": [{ "type": "woven", "yarns": [6, 5], "spacing": 0.001, "radius": 0.00025,
          "density": 130, "center": [0, 0, 0], "plane": "xz",
          "stiffness": {"stretch": 500, "bending": 1e-5, "shear": 1e-4},
          "friction": {"coefficient": 0.3},
          "damping": {"model": "strain-rate", "stretch": 3e-7, "bending": 0, "shear": 0},
          "pins": ["top-edge"],
          "initial_velocity": {"linear": [0, 0.01, 0], "angular": [0, 0, 0]} }],
      "colliders": [{"type": "plane", "point": [0, 0, -0.004], "normal": [0, 0, 1]}],
      "output": {"csv": "energy.csv", "frames": "frames", "every": 5, "formats": ["vtk", "vtp", "obj", "bcc"]} })";
}

fs::path write_scene(const fs::path& dir, const std::string& text)
{
    const fs::path path = dir / "scene.json";
    std::ofstream(path) << text;
    return path;
}

std::vector<std::string> lines_of(const fs::path& path)
{
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::vector<double> fields(const std::string& line)
{
    std::vector<double> out;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) out.push_back(std::stod(cell));
    return out;
}

std::string error_of(std::vector<const char*> argv)
{
    argv.insert(argv.begin(), "weft-run");
    try {
        parse_run_arguments(static_cast<int>(argv.size()), argv.data());
    } catch (const weft::InvalidInput& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("weft-run: command line", "[examples][weft-run]")
{
    const char* argv[] = {"weft-run", "s.json", "--duration", "0.5", "--output-dir", "out", "--quiet"};
    const RunArguments a = parse_run_arguments(7, argv);
    CHECK(a.scene == "s.json");
    CHECK(a.duration == 0.5);
    CHECK(a.output_dir == "out");
    CHECK(a.quiet);
    CHECK_THAT(error_of({}), Catch::Contains("missing SCENE.json"));
    CHECK_THAT(error_of({"s.json", "--duration", "-1"}), Catch::Contains("--duration \"-1\""));
    CHECK_THAT(error_of({"s.json", "--duration"}), Catch::Contains("--duration: missing value"));
    CHECK_THAT(error_of({"s.json", "--frobnicate"}), Catch::Contains("\"--frobnicate\""));
    CHECK_THAT(error_of({"s.json", "t.json"}), Catch::Contains("\"t.json\""));
    CHECK_THAT(error_of({"s.json", "--damping", "viscous"}), Catch::Contains("--damping \"viscous\""));
    CHECK_THAT(error_of({"s.json", "--damping", "rayleigh"}), Catch::Contains("needs --beta"));
}

TEST_CASE("weft-run: a scene runs and writes the CSV and frames", "[examples][weft-run]")
{
    const fs::path dir = fresh_dir("ok");
    RunArguments args;
    args.scene = write_scene(dir, small_scene());
    args.output_dir = dir / "results";
    args.duration = 0.02;  // overrides the scene's 1 s
    args.quiet = true;
    std::ostringstream log;
    const RunSummary s = run_scene(args, log);
    INFO(log.str());
    REQUIRE(s.ok);
    CHECK(s.steps == 20);
    CHECK(s.simulated_time == Approx(0.02));
    CHECK(s.nodes == 30);

    const std::vector<std::string> csv = lines_of(dir / "results" / "energy.csv");
    REQUIRE(csv.size() == 21);
    CHECK(csv[0].rfind("time,kinetic_energy,elastic_energy,pcg_iterations", 0) == 0);
    double previous_time = 0;
    double kinetic_peak = 0;
    for (std::size_t r = 1; r < csv.size(); ++r) {
        const std::vector<double> row = fields(csv[r]);
        REQUIRE(row.size() == 9);
        for (double x : row) REQUIRE(std::isfinite(x));
        CHECK(row[0] > previous_time);
        CHECK(row[3] >= 1);  // PCG iterations of that step
        previous_time = row[0];
        kinetic_peak = std::max(kinetic_peak, row[1]);
    }
    CHECK(previous_time == Approx(0.02));
    CHECK(kinetic_peak > 0);

    // Frames 0, 5, 10, 15, 20 in every format; the .pvd series lists the .vtp files.
    const fs::path frames = dir / "results" / "frames";
    CHECK(s.frames == 5);
    for (int f = 0; f < 5; ++f) {
        char stem[32];
        std::snprintf(stem, sizeof stem, "frame_%05d", f);
        for (const char* set : {"warp", "weft"})
            for (const char* ext : {".vtk", ".vtp", ".obj"})
                CHECK(fs::exists(frames / (std::string(stem) + "_" + set + ext)));
        CHECK(fs::exists(frames / (std::string(stem) + ".bcc")));
    }
    const std::vector<std::string> pvd = lines_of(frames / "warp.pvd");
    int datasets = 0;
    for (const std::string& line : pvd)
        if (line.find("<DataSet") != std::string::npos) ++datasets;
    CHECK(datasets == 5);
    // A legacy VTK frame holds one polyline per warp yarn (5 u-yarns of 6 nodes).
    bool lines_found = false;
    for (const std::string& line : lines_of(frames / "frame_00004_warp.vtk"))
        if (line.rfind("LINES 5 35", 0) == 0) lines_found = true;
    CHECK(lines_found);
}

TEST_CASE("weft-run: a failed solve is reported with the step and residual", "[examples][weft-run]")
{
    const fs::path dir = fresh_dir("fail");
    RunArguments args;
    args.scene = write_scene(
        dir, small_scene(R"({"newton_iterations": 1, "pcg_max_iterations": 2, "adaptive_time_step": false})"));
    args.output_dir = dir;
    args.duration = 0.01;
    args.quiet = true;
    std::ostringstream log;
    const RunSummary s = run_scene(args, log);
    CHECK_FALSE(s.ok);
    CHECK(s.steps == 0);
    CHECK_THAT(s.error, Catch::Contains("step 1 (t = 0.001 s) failed"));
    CHECK_THAT(s.error, Catch::Contains("relative residual"));
    CHECK_THAT(log.str(), Catch::Contains("step 1"));
    // Only the initial frame exists; the CSV has its header and no row.
    CHECK(fs::exists(dir / "frames" / "frame_00000_warp.vtk"));
    CHECK_FALSE(fs::exists(dir / "frames" / "frame_00001_warp.vtk"));
    CHECK(lines_of(dir / "energy.csv").size() == 1);
}

TEST_CASE("weft-run: bad scenes are rejected with the key named", "[examples][weft-run]")
{
    const fs::path dir = fresh_dir("bad");
    RunArguments args;
    args.output_dir = dir;
    args.quiet = true;
    std::ostringstream log;
    args.scene = dir / "missing.json";
    CHECK_THROWS_WITH(run_scene(args, log), Catch::Contains("missing.json"));
    std::string text = small_scene();
    text.replace(text.find("\"radius\": 0.00025"), 17, "\"radius\": -1");
    args.scene = write_scene(dir, text);
    CHECK_THROWS_WITH(run_scene(args, log), Catch::Contains("cloth[0].radius"));
    args.scene = write_scene(dir, small_scene());
    args.duration = 1e-4;  // shorter than one step
    CHECK_THROWS_WITH(run_scene(args, log), Catch::Contains("--duration"));
}
