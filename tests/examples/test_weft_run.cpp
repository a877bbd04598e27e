// The scene runner behind weft-run: command line, CSV and frame outputs,
// relative paths, --duration, reported failures.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <Eigen/Core>

#include <weft/io/scene.hpp>

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

/// The values of the point scalar `name` of a legacy VTK frame.
std::vector<double> vtk_scalars(const fs::path& path, const std::string& name)
{
    const std::vector<std::string> lines = lines_of(path);
    std::size_t points = 0;
    for (std::size_t k = 0; k < lines.size(); ++k) {
        if (lines[k].rfind("POINT_DATA ", 0) == 0) points = std::stoul(lines[k].substr(11));
        if (lines[k] == "SCALARS " + name + " double 1") {
            REQUIRE(k + 1 + points < lines.size());
            REQUIRE(lines[k + 1] == "LOOKUP_TABLE default");
            std::vector<double> out;
            for (std::size_t i = 0; i < points; ++i) out.push_back(std::stod(lines[k + 2 + i]));
            return out;
        }
    }
    FAIL("no point scalar " << name << " in " << path);
    return {};
}

std::size_t count_of(const std::vector<double>& values, double value)
{
    return static_cast<std::size_t>(std::count(values.begin(), values.end(), value));
}

/// The repository root (this file is tests/examples/test_weft_run.cpp).
fs::path source_root()
{
    return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

/// The whole text of a file, which must open.
std::string text_of(const fs::path& path)
{
    std::ifstream in(path);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

/// `text` with its first `from` replaced by `to`; `from` must occur in it.
std::string replaced(std::string text, const std::string& from, const std::string& to)
{
    const std::size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
}

/// tablecloth.json with the one-step scheme. The shipped scene runs full
/// Newton (the default; 0.3–1 s per step on the 2-core VM); the tests of its
/// layers, EIL nodes and frames over 70–360 steps take the one-step scheme
/// (about 0.1 s per step), whose figures their comments give. The shipped
/// scene itself runs in "tablecloth.json stacks two layers …".
std::string tablecloth_one_step()
{
    return replaced(text_of(source_root() / "examples" / "scenes" / "tablecloth.json"), "\"solver\": {",
                    "\"solver\": {\"newton_iterations\": 1, ");
}

/// The CSV at `path` has its header and one row of finite numbers per step.
void require_finite_rows(const fs::path& path, long steps)
{
    const std::vector<std::string> csv = lines_of(path);
    REQUIRE(csv.size() == static_cast<std::size_t>(steps) + 1);
    for (std::size_t k = 1; k < csv.size(); ++k)
        for (double x : fields(csv[k])) REQUIRE(std::isfinite(x));
}

/// A finished run: the runner's summary and everything it logged.
struct RunOutput {
    RunSummary summary;
    std::string log;
};

/// Runs `scene` quietly with relative outputs under `output_dir`; a `duration`
/// > 0 overrides the scene's.
RunOutput run_quietly(const fs::path& scene, const fs::path& output_dir, double duration = -1)
{
    RunArguments args;
    args.scene = scene;
    args.output_dir = output_dir;
    args.duration = duration;
    args.quiet = true;
    std::ostringstream log;
    RunOutput out;
    out.summary = run_scene(args, log);
    out.log = log.str();
    return out;
}

/// The InvalidInput message of run_quietly ("" when it throws none).
std::string run_error_of(const fs::path& scene, const fs::path& output_dir, double duration = -1)
{
    try {
        run_quietly(scene, output_dir, duration);
    } catch (const weft::InvalidInput& e) {
        return e.what();
    }
    return "";
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
    CHECK_THAT(error_of({"s.json", "--duration", "-1"}), Catch::Contains("--duration") && Catch::Contains("\"-1\""));
    CHECK_THAT(error_of({"s.json", "--duration", "abc"}), Catch::Contains("--duration") && Catch::Contains("abc"));
    CHECK_THAT(error_of({"s.json", "--duration"}), Catch::Contains("--duration"));
    CHECK_THAT(error_of({"s.json", "--frobnicate"}), Catch::Contains("--frobnicate"));
    CHECK_THAT(error_of({"s.json", "t.json"}), Catch::Contains("t.json"));
    CHECK_THAT(error_of({"s.json", "--damping", "viscous"}),
               Catch::Contains("--damping") && Catch::Contains("viscous"));
    CHECK_THAT(error_of({"s.json", "--damping", "rayleigh"}), Catch::Contains("needs --beta"));
    CHECK_THAT(error_of({"s.json", "--other-linear-solver"}),
               Catch::Contains("--other-linear-solver") && Catch::Contains("only used with --resume"));
    // --help lists every option with its default; --version.
    const char* help[] = {"weft-run", "--help"};
    CHECK(parse_run_arguments(2, help).help);
    const char* version[] = {"weft-run", "--version"};
    CHECK(parse_run_arguments(2, version).version);
    const std::string usage = weft::examples::run_usage();
    for (const char* option : {"--duration", "--output-dir", "--quiet", "--damping", "--beta", "--version",
                               "--newton-trace", "--jacobian-check", "--other-linear-solver"})
        CHECK_THAT(usage, Catch::Contains(option));
    CHECK_THAT(usage, Catch::Contains("DIR=."));  // --output-dir's default
}

TEST_CASE("weft-run: a scene runs and writes the CSV and frames", "[examples][weft-run]")
{
    const fs::path dir = fresh_dir("ok");
    const double duration = 0.02;  // overrides the scene's 1 s
    const RunOutput run = run_quietly(write_scene(dir, small_scene()), dir / "results", duration);
    const RunSummary& s = run.summary;
    INFO(run.log);
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
        REQUIRE(row.size() == 11);  // the 9 columns, eil_nodes (EIL is on by default for yarns), max_speed
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
    const fs::path scene = write_scene(
        dir, small_scene(R"({"newton_iterations": 1, "pcg_max_iterations": 2, "adaptive_time_step": false})"));
    const RunOutput run = run_quietly(scene, dir, 0.01);
    const RunSummary& s = run.summary;
    CHECK_FALSE(s.ok);
    CHECK(s.steps == 0);
    CHECK_THAT(s.error, Catch::Contains("step 1 (t = 0.001 s) failed"));
    CHECK_THAT(s.error, Catch::Contains("relative residual"));
    CHECK_THAT(run.log, Catch::Contains("step 1"));
    // Only the initial frame exists; the CSV has its header and no row.
    CHECK(fs::exists(dir / "frames" / "frame_00000_warp.vtk"));
    CHECK_FALSE(fs::exists(dir / "frames" / "frame_00001_warp.vtk"));
    CHECK(lines_of(dir / "energy.csv").size() == 1);
}

namespace {

/// One row of a --newton-trace file.
struct TraceRow {
    long step = 0;
    int attempt = 0, halvings = 0, iterations = 0;
    double h = 0;
    bool converged = false, accepted = false;
    std::vector<double> residuals, fractions;
    std::vector<int> pcg;
    std::string message;
};

std::vector<double> semicolon_list(const std::string& text)
{
    std::vector<double> out;
    std::stringstream ss(text);
    for (std::string cell; std::getline(ss, cell, ';');) out.push_back(std::stod(cell));
    return out;
}

std::vector<TraceRow> trace_rows(const fs::path& path)
{
    const std::vector<std::string> lines = lines_of(path);
    REQUIRE(!lines.empty());
    REQUIRE(lines[0] == "step,time,attempt,h,halvings,converged,accepted,iterations,residuals,fractions,pcg,message");
    std::vector<TraceRow> rows;
    for (std::size_t k = 1; k < lines.size(); ++k) {
        const std::string& line = lines[k];
        const std::size_t quote = line.find(",\"");
        REQUIRE(quote != std::string::npos);
        REQUIRE(line.back() == '"');
        std::vector<std::string> cells;
        std::stringstream ss(line.substr(0, quote));
        for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
        if (line[quote - 1] == ',') cells.push_back("");  // no PCG list
        REQUIRE(cells.size() == 11);
        TraceRow r;
        r.step = std::stol(cells[0]);
        r.attempt = std::stoi(cells[2]);
        r.h = std::stod(cells[3]);
        r.halvings = std::stoi(cells[4]);
        r.converged = cells[5] == "1";
        r.accepted = cells[6] == "1";
        r.iterations = std::stoi(cells[7]);
        r.residuals = semicolon_list(cells[8]);
        r.fractions = semicolon_list(cells[9]);
        for (double p : semicolon_list(cells[10])) r.pcg.push_back(int(p));
        r.message = line.substr(quote + 2, line.size() - quote - 3);
        rows.push_back(r);
    }
    return rows;
}

RunSummary run_traced(const fs::path& scene, const fs::path& dir, double duration, const fs::path& trace,
                      long checkpoint_every = 0, const fs::path& resume = {}, const fs::path& jacobian_check = {},
                      const fs::path& jacobian_terms = {})
{
    RunArguments args;
    args.scene = scene;
    args.output_dir = dir;
    args.duration = duration;
    args.quiet = true;
    args.newton_trace = trace;
    args.jacobian_check = jacobian_check;
    args.jacobian_terms = jacobian_terms;
    args.checkpoint_every = checkpoint_every;
    args.resume = resume;
    std::ostringstream log;
    return run_scene(args, log);
}

}  // namespace

TEST_CASE("weft-run: --newton-trace writes every full-Newton attempt", "[examples][weft-run]")
{
    const fs::path dir = fresh_dir("newton_trace");
    const double tolerance = 1e-6;
    const fs::path scene = write_scene(dir, small_scene(R"({"newton_iterations": 8, "newton_tolerance": 1e-6})"));
    const RunSummary s = run_traced(scene, dir, 0.02, dir / "trace.csv");
    REQUIRE(s.ok);
    const std::vector<TraceRow> rows = trace_rows(dir / "trace.csv");
    const std::vector<std::string> csv = lines_of(dir / "energy.csv");
    REQUIRE(csv.size() == 21);
    // Every step has its attempts, numbered from 0, the last accepted; the
    // iterations of a step's attempts add up to the CSV's newton_iterations.
    std::vector<int> iterations(21, 0), pcg(21, 0);
    long expected_step = 1;
    int checked = 0;
    for (std::size_t k = 0; k < rows.size(); ++k) {
        const TraceRow& r = rows[k];
        INFO("row " << k + 1);
        if (r.step != expected_step) {
            REQUIRE(r.step == expected_step + 1);
            REQUIRE(rows[k - 1].accepted);
            expected_step = r.step;
        }
        CHECK(r.attempt == (k > 0 && rows[k - 1].step == r.step ? rows[k - 1].attempt + 1 : 0));
        CHECK(r.h == Approx(0.001 / std::pow(2.0, r.halvings)));
        iterations[std::size_t(r.step)] += r.iterations;
        CHECK(r.pcg.size() == std::size_t(r.iterations));
        for (int p : r.pcg) pcg[std::size_t(r.step)] += p;
        CHECK(r.residuals.size() == r.fractions.size());
        for (double f : r.fractions) CHECK((f > 0 && f <= 16));  // at most 4 expansions
        if (r.accepted) {
            CHECK(r.converged);
            CHECK(r.message.empty());
            // Converged at the tolerance, or ended by round-off after one more solve.
            if (r.iterations == int(r.residuals.size()))
                CHECK(r.residuals.back() <= tolerance);
            else
                CHECK(r.iterations == int(r.residuals.size()) + 1);
            ++checked;
        }
    }
    CHECK(expected_step == 20);
    CHECK(rows.back().accepted);
    CHECK(checked >= 20);
    for (std::size_t r = 1; r < csv.size(); ++r) {
        CHECK(iterations[r] == int(fields(csv[r])[6]));
        CHECK(pcg[r] == int(fields(csv[r])[3]));
    }

    // A failed step's attempts are in the trace, with the reason.
    fs::create_directories(dir / "fail");
    const fs::path failing = write_scene(
        dir / "fail", small_scene(R"({"newton_iterations": 4, "pcg_max_iterations": 2, "min_time_step": 0.0005})"));
    const RunSummary f = run_traced(failing, dir / "fail", 0.01, dir / "fail_trace.csv");
    CHECK_FALSE(f.ok);
    const std::vector<TraceRow> failed = trace_rows(dir / "fail_trace.csv");
    REQUIRE(failed.size() == 2);
    for (int a = 0; a < 2; ++a) {
        CHECK(failed[a].step == 1);
        CHECK(failed[a].attempt == a);
        CHECK(failed[a].halvings == a);
        CHECK_FALSE(failed[a].accepted);
        CHECK_THAT(failed[a].message, Catch::Contains("PCG"));
    }

    // Resumed from a checkpoint, the trace is that of an uninterrupted run:
    // the interrupted run's rows after its checkpoint are dropped.
    const RunSummary interrupted = run_traced(scene, dir / "a", 0.015, dir / "a.csv", 10);
    INFO(interrupted.error);
    REQUIRE(interrupted.ok);
    const RunSummary resumed = run_traced(scene, dir / "a", 0.02, dir / "a.csv", 0, dir / "a" / "scene.checkpoint");
    INFO(resumed.error);
    REQUIRE(resumed.ok);
    CHECK(lines_of(dir / "a.csv") == lines_of(dir / "trace.csv"));

    // The one-step scheme has nothing to trace: refused, naming the key.
    fs::create_directories(dir / "one");
    const fs::path one_step = write_scene(dir / "one", small_scene());
    try {
        run_traced(one_step, dir, 0.01, dir / "one.csv");
        FAIL("--newton-trace with the one-step scheme was not refused");
    } catch (const weft::InvalidInput& e) {
        CHECK_THAT(e.what(), Catch::Contains("--newton-trace") && Catch::Contains("newton_iterations is 1"));
    }
}

namespace {

/// One row of a --jacobian-check file.
struct JacobianRow {
    long step = 0;
    int attempt = 0, iteration = 0;
    bool exact = false;
    double update_norm = 0, mismatch_coarse = 0, mismatch_fine = 0, residual_norm = 0, top8_share = 0;
    long largest_node = -1;
};

std::vector<JacobianRow> jacobian_rows(const fs::path& path)
{
    const std::vector<std::string> lines = lines_of(path);
    REQUIRE(!lines.empty());
    REQUIRE(lines[0] ==
            "step,time,attempt,iteration,exact_hessians,update_norm,mismatch_1e-2,mismatch_1e-4,worst_node_1e-2,"
            "worst_component_1e-2,worst_node_1e-4,worst_component_1e-4,residual_norm,top8_share,largest_node,"
            "largest_component");
    std::vector<JacobianRow> rows;
    for (std::size_t k = 1; k < lines.size(); ++k) {
        const std::vector<double> f = fields(lines[k]);
        REQUIRE(f.size() == 16);
        JacobianRow r;
        r.step = long(f[0]);
        r.attempt = int(f[2]);
        r.iteration = int(f[3]);
        r.exact = f[4] == 1;
        r.update_norm = f[5];
        r.mismatch_coarse = f[6];
        r.mismatch_fine = f[7];
        r.residual_norm = f[12];
        r.top8_share = f[13];
        r.largest_node = long(f[14]);
        rows.push_back(r);
    }
    return rows;
}

/// The CSV without its wall-time column (the one its header names ms_per_step).
std::vector<std::string> without_wall_time(const fs::path& csv)
{
    const std::vector<std::string> lines = lines_of(csv);
    REQUIRE(!lines.empty());
    int wall = -1, column = 0;
    std::stringstream header(lines[0]);
    for (std::string name; std::getline(header, name, ','); ++column)
        if (name == "ms_per_step") wall = column;
    REQUIRE(wall >= 0);
    std::vector<std::string> out;
    for (const std::string& line : lines) {
        std::stringstream ss(line);
        std::string kept;
        column = 0;
        for (std::string cell; std::getline(ss, cell, ','); ++column)
            if (column != wall) kept += cell + ",";
        out.push_back(kept);
    }
    return out;
}

}  // namespace

TEST_CASE("weft-run: --jacobian-check checks full Newton's matrix at every solve and changes nothing",
          "[examples][weft-run]")
{
    const fs::path dir = fresh_dir("jacobian_check");
    const std::string solver = R"({"newton_iterations": 8, "newton_tolerance": 1e-6})";
    const fs::path scene = write_scene(dir, small_scene(solver));
    // The same run without the check, and with it (and the trace).
    fs::create_directories(dir / "plain");
    fs::create_directories(dir / "checked");
    const RunSummary plain = run_traced(scene, dir / "plain", 0.02, {});
    const RunSummary checked = run_traced(scene, dir / "checked", 0.02, dir / "trace.csv", 0, {}, dir / "check.csv");
    REQUIRE(plain.ok);
    REQUIRE(checked.ok);
    CHECK(without_wall_time(dir / "checked" / "energy.csv") == without_wall_time(dir / "plain" / "energy.csv"));
    CHECK(checked.newton_iterations == plain.newton_iterations);

    // One row per Newton solve: for every attempt of the trace, iterations 0, 1, … in order.
    const std::vector<JacobianRow> rows = jacobian_rows(dir / "check.csv");
    const std::vector<TraceRow> attempts = trace_rows(dir / "trace.csv");
    std::size_t next = 0;
    int first_solves = 0;
    double worst_first = 0;
    for (const TraceRow& a : attempts) {
        for (int k = 0; k < a.iterations; ++k, ++next) {
            REQUIRE(next < rows.size());
            const JacobianRow& r = rows[next];
            INFO("step " << a.step << ", attempt " << a.attempt << ", iteration " << k);
            CHECK(r.step == a.step);
            CHECK(r.attempt == a.attempt);
            CHECK(r.iteration == k);
            CHECK(r.exact);  // a hanging patch: the exact Hessians' A is positive definite
            CHECK(r.update_norm > 0);
            CHECK(r.residual_norm > 0);
            CHECK((r.top8_share > 0 && r.top8_share <= 1));
            CHECK(r.largest_node >= 0);
            // The first solve of each attempt, far from the round-off of a
            // converged iterate (there the update is the residual's rounding,
            // and both mismatches grow as 1/eps): A is the residual's
            // derivative at one eps or the other (measured: at most 4.5e-8).
            if (k == 0) {
                ++first_solves;
                worst_first = std::max(worst_first, std::min(r.mismatch_coarse, r.mismatch_fine));
            }
        }
    }
    CHECK(next == rows.size());
    CHECK(long(rows.size()) == checked.newton_iterations);
    INFO("largest mismatch of a first solve: " << worst_first);
    CHECK(first_solves >= 20);
    CHECK(worst_first < 1e-6);

    // A matrix that is not the derivative is seen: Gauss-Newton bending and
    // shear (the stiffness full Newton took before "auto"), whose dropped
    // moment times the curvature's second derivative shows in the run's first
    // solve, where the patch starts to sag (measured: 5.8e-3 against 4.4e-8).
    fs::create_directories(dir / "gn");
    const fs::path gauss_newton = write_scene(
        dir / "gn",
        small_scene(
            R"({"newton_iterations": 8, "newton_tolerance": 1e-6, "exact_hessians": false, "stiffness_approximation": "gauss-newton"})"));
    REQUIRE(run_traced(gauss_newton, dir / "gn", 0.02, {}, 0, {}, dir / "gn.csv", dir / "gn_terms.csv").ok);
    const std::vector<JacobianRow> gn = jacobian_rows(dir / "gn.csv");
    REQUIRE(!gn.empty());
    for (const JacobianRow& r : gn) CHECK_FALSE(r.exact);
    INFO("first solve: exact Hessians " << rows.front().mismatch_fine << ", Gauss-Newton " << gn.front().mismatch_fine);
    CHECK(gn.front().mismatch_fine > 1e-3);
    CHECK(gn.front().mismatch_coarse > 1e-3);
    CHECK(gn.front().mismatch_fine > 1000 * rows.front().mismatch_fine);
    // --jacobian-terms names the terms: per solve, the yarn kinds in
    // contribution order and "rest"; in the first solve the mismatch is the
    // bends' and shears' (the terms add up to the whole as vectors).
    const std::vector<std::string> kinds = {"segments",       "bends", "shears",   "eil_springs", "eil_pair_springs",
                                            "parallel_pairs", "nodes", "contacts", "rest"};
    const std::vector<std::string> term_lines = lines_of(dir / "gn_terms.csv");
    REQUIRE(term_lines.size() == 1 + kinds.size() * gn.size());
    CHECK(term_lines[0] ==
          "step,time,attempt,iteration,exact_hessians,term,product,mismatch_1e-2,mismatch_1e-4,worst_node_1e-2,"
          "worst_component_1e-2,worst_node_1e-4,worst_component_1e-4,worst_element_1e-2,element_mismatch_1e-2,"
          "element_nodes_1e-2,worst_element_1e-4,element_mismatch_1e-4,element_nodes_1e-4");
    // Nodes per element of each kind ("rest": none).
    const std::vector<std::size_t> element_nodes = {2, 3, 3, 5, 9, 2, 1, 4, 0};
    double sum = 0, bending = 0, largest_other = 0;
    int elements_checked = 0;
    for (std::size_t k = 1; k < term_lines.size(); ++k) {
        const std::string& line = term_lines[k];
        const std::size_t at = (k - 1) % kinds.size();
        const std::size_t begin = line.find(',' + kinds[at] + ',');
        INFO("row " << k << ": " << line);
        REQUIRE(begin != std::string::npos);
        if (k > kinds.size()) continue;  // the first solve's terms
        std::vector<std::string> cells;
        std::stringstream ss(line.substr(begin + kinds[at].size() + 2) + ',');
        for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
        REQUIRE(cells.size() == 13);
        std::vector<double> f;
        for (std::size_t c = 0; c < 7; ++c) f.push_back(std::stod(cells[c]));
        // Per ε, the worst element: its index, its own mismatch, its nodes
        // (as many as the kind's elements have; none for "rest" and for a
        // kind without elements). Its own rows are part of the term's, so a
        // node's (one node, rows of its own) is at most the term's.
        for (int e = 0; e < 2; ++e) {
            const long element = std::stol(cells[7 + 3 * e]);
            const double own = std::stod(cells[8 + 3 * e]);
            const std::vector<double> nodes =
                cells[9 + 3 * e].empty() ? std::vector<double>{} : semicolon_list(cells[9 + 3 * e]);
            if (element < 0) {
                CHECK((kinds[at] == "rest" || f[0] == 0));
                CHECK(nodes.empty());
                continue;
            }
            CHECK(nodes.size() == element_nodes[at]);
            CHECK(own >= 0);
            if (kinds[at] == "nodes") {  // element i is node i
                REQUIRE(nodes.size() == 1);
                CHECK(nodes[0] == double(element));
                CHECK(own <= f[1 + e] * (1 + 1e-9));
            }
            if (kinds[at] == "bends" && e == 1) CHECK(own > 0);  // the bends' mismatch is its elements'
            ++elements_checked;
        }
        sum += f[2];
        if (kinds[at] == "bends" || kinds[at] == "shears")
            bending = std::max(bending, f[2]);
        else
            largest_other = std::max(largest_other, f[2]);
        if (kinds[at] == "rest") CHECK(f[0] < 1e-12);
    }
    INFO("first solve's terms: bends or shears " << bending << ", the largest other " << largest_other);
    CHECK(bending > 1e-3);
    CHECK(bending > 100 * largest_other);
    CHECK(elements_checked >= 8);  // segments, bends, shears, nodes at both ε
    CHECK(gn.front().mismatch_fine <= sum * (1 + 1e-9));

    // The one-step scheme has no Newton matrix to check: refused, naming the key.
    fs::create_directories(dir / "one");
    const fs::path one_step = write_scene(dir / "one", small_scene());
    CHECK_THROWS_WITH(run_traced(one_step, dir / "one", 0.02, {}, 0, {}, dir / "one.csv"),
                      Catch::Contains("--jacobian-check") && Catch::Contains("newton_iterations is 1"));
}

namespace {
extern "C" void test_signal_handler(int) {}
}  // namespace

TEST_CASE("weft-run: the signal handlers in place before a run are back after it, also after a throw",
          "[examples][weft-run]")
{
    // A run that writes checkpoints catches SIGINT and SIGTERM for its time
    // loop; a program that embeds run_scene keeps its own handlers after it.
    using Handler = void (*)(int);
    const Handler int_before = std::signal(SIGINT, test_signal_handler);
    const Handler term_before = std::signal(SIGTERM, test_signal_handler);
    const fs::path dir = fresh_dir("signals");
    RunArguments args;
    args.scene = write_scene(dir, small_scene());
    args.output_dir = dir;
    args.duration = 0.003;
    args.quiet = true;
    args.checkpoint_every = 1;
    std::ostringstream log;
    const RunSummary done = run_scene(args, log);
    CHECK(done.ok);
    CHECK(fs::exists(dir / "scene.checkpoint"));
    CHECK(std::signal(SIGINT, test_signal_handler) == test_signal_handler);
    CHECK(std::signal(SIGTERM, test_signal_handler) == test_signal_handler);
    // The checkpoint's directory does not exist: writing the first one throws out of the loop.
    args.checkpoint = dir / "missing" / "run.checkpoint";
    CHECK_THROWS_WITH(run_scene(args, log), Catch::Contains("cannot write the checkpoint"));
    CHECK(std::signal(SIGINT, test_signal_handler) == test_signal_handler);
    CHECK(std::signal(SIGTERM, test_signal_handler) == test_signal_handler);
    std::signal(SIGINT, int_before == SIG_ERR ? SIG_DFL : int_before);
    std::signal(SIGTERM, term_before == SIG_ERR ? SIG_DFL : term_before);
}

TEST_CASE("weft-run: bad scenes are rejected with the key named", "[examples][weft-run]")
{
    const fs::path dir = fresh_dir("bad");
    CHECK_THAT(run_error_of(dir / "missing.json", dir), Catch::Contains("missing.json"));
    std::string text = small_scene();
    text.replace(text.find("\"radius\": 0.00025"), 17, "\"radius\": -1");
    CHECK_THAT(run_error_of(write_scene(dir, text), dir), Catch::Contains("cloth[0].radius"));
    // shorter than one step
    CHECK_THAT(run_error_of(write_scene(dir, small_scene()), dir, 1e-4), Catch::Contains("--duration"));
}

namespace {

std::string triangle_scene(const std::string& cloth_extra, const std::string& output)
{
    return R"({ "time_step": 0.002, "duration": 0.02, "gravity": [0, 0, -9.81],
      "cloth": [{ "type": "triangle", "resolution": [6, 5], "size": [0.5, 0.4], "plane": "xz",
          "center": [0, 0, 0.3],
          "material": {"model": "stvk", "lambda": 2e5, "mu": 2e5, "thickness": 0.001, "density": 200},
          "damping": {"model": "rayleigh-analogy", "beta": 0.15},
          "pins": ["top-edge"])" +
           cloth_extra + R"( }],
      "colliders": [{"type": "plane", "point": [0, 0, 0], "normal": [0, 0, 1]}],
      "output": )" +
           output + "}";
}

}  // namespace

TEST_CASE("weft-run: a triangle scene runs and writes the CSV and mesh frames", "[examples][weft-run][triangle]")
{
    const fs::path dir = fresh_dir("triangle");
    const fs::path scene = write_scene(
        dir, triangle_scene(
                 "", R"({"csv": "energy.csv", "frames": "frames", "every": 5, "formats": ["vtk", "vtp", "obj"]})"));
    const RunOutput run = run_quietly(scene, dir);
    const RunSummary& summary = run.summary;
    INFO(run.log << summary.error);
    REQUIRE(summary.ok);
    CHECK(summary.steps == 10);
    CHECK(summary.nodes == 30);
    CHECK(summary.frames == 3);
    const std::vector<std::string> csv = lines_of(dir / "energy.csv");
    REQUIRE(csv.size() == 11);
    CHECK(csv[0] ==
          "time,kinetic_energy,elastic_energy,pcg_iterations,gravity_energy,dissipation_potential,"
          "newton_iterations,substeps,ms_per_step,max_speed");
    const std::vector<double> last = fields(csv.back());
    REQUIRE(last.size() == 10);
    CHECK(last[0] == Approx(0.02));
    CHECK(last[1] > 0);                  // falling, so moving
    CHECK(last[4] < fields(csv[1])[4]);  // gravity energy drops
    for (const char* f : {"frame_00000_cloth.vtk", "frame_00002_cloth.vtp", "frame_00001_cloth.obj", "cloth.pvd"})
        CHECK(fs::exists(dir / "frames" / f));
    // 30 vertices, 40 triangles
    const std::vector<std::string> obj = lines_of(dir / "frames" / "frame_00001_cloth.obj");
    int v = 0, f = 0;
    for (const std::string& line : obj) {
        v += line.rfind("v ", 0) == 0;
        f += line.rfind("f ", 0) == 0;
    }
    CHECK(v == 30);
    CHECK(f == 40);
    bool polygons = false;
    for (const std::string& line : lines_of(dir / "frames" / "frame_00000_cloth.vtk"))
        polygons = polygons || line.rfind("POLYGONS 40 160", 0) == 0;
    CHECK(polygons);
}

TEST_CASE("weft-run: a triangle scene with a mesh file and a tabulated material", "[examples][weft-run][triangle]")
{
    const fs::path dir = fresh_dir("triangle_mesh");
    std::ofstream(dir / "square.obj") << "v -0.1 0 0.3\nv 0.1 0 0.3\nv 0.1 0 0.1\nv -0.1 0 0.1\nv 0 0 0.2\n"
                                         "f 1 2 5\nf 2 3 5\nf 3 4 5\nf 4 1 5\n";
    const fs::path material = source_root() / "examples" / "materials" / "gnatv_sample.json";
    REQUIRE(fs::exists(material));
    const std::string scene_text = R"({ "time_step": 0.002, "duration": 0.01, "gravity": [0, 0, -9.81],
      "cloth": [{ "type": "triangle", "mesh": "square.obj",
          "material": {"model": "tabulated", "file": ")" +
                                   material.string() + R"(", "thickness": 0.001, "density": 200, "bending": 1e-5},
          "bending": {"model": "dihedral"},
          "damping": {"model": "strain-rate", "lambda": 10, "mu": 10, "bending": 1e-6},
          "pins": [0, 1] }],
      "output": {"csv": "energy.csv"} })";
    // Five vertices are too few for plate bending's stencils: refused with the way out named.
    std::string plate = scene_text;
    plate.replace(plate.find(R"("bending": {"model": "dihedral"},)"), 33, "");
    CHECK_THAT(run_error_of(write_scene(dir, plate), dir),
               Catch::Contains("plate bending needs six vertices") && Catch::Contains("\"dihedral\""));
    const RunOutput run = run_quietly(write_scene(dir, scene_text), dir);
    const RunSummary& summary = run.summary;
    INFO(run.log << summary.error);
    REQUIRE(summary.ok);
    CHECK(summary.nodes == 5);
    CHECK(lines_of(dir / "energy.csv").size() == 6);
}

TEST_CASE("weft-run: bad triangle scenes are rejected with the key named", "[examples][weft-run][triangle]")
{
    const fs::path dir = fresh_dir("triangle_bad");
    const auto error = [&](const std::string& text) { return run_error_of(write_scene(dir, text), dir); };
    using Catch::Contains;
    CHECK_THAT(error(triangle_scene(R"(, "mesh": "a.obj")", "{}")), Contains("cloth[0].mesh: give either"));
    std::string pins = triangle_scene("", "{}");
    pins.replace(pins.find("\"pins\": [\"top-edge\"]"), std::string("\"pins\": [\"top-edge\"]").size(),
                 "\"pins\": [99]");
    CHECK_THAT(error(pins), Contains("cloth[0].pins[0]"));
    CHECK_THAT(error(triangle_scene("", R"({"frames": "f", "formats": ["bcc"]})")), Contains("\"bcc\""));
    std::string no_file = triangle_scene("", "{}");
    no_file.replace(no_file.find("\"resolution\": [6, 5], \"size\": [0.5, 0.4]"),
                    std::string("\"resolution\": [6, 5], \"size\": [0.5, 0.4]").size(), "\"mesh\": \"missing.obj\"");
    no_file.replace(no_file.find("\"plane\": \"xz\","), std::string("\"plane\": \"xz\",").size(), "");
    CHECK_THAT(error(no_file), Contains("cloth[0].mesh: cannot open mesh file"));
    std::string tabulated = triangle_scene("", "{}");
    tabulated.replace(tabulated.find("\"model\": \"stvk\", \"lambda\": 2e5, \"mu\": 2e5,"),
                      std::string("\"model\": \"stvk\", \"lambda\": 2e5, \"mu\": 2e5,").size(),
                      "\"model\": \"tabulated\", \"file\": \"x.json\",");
    CHECK_THAT(error(tabulated), Contains("material.bending: is required for the tabulated model"));
    std::string lines = triangle_scene("", "{}");
    lines.replace(lines.find("\"cloth\""), 7, R"("solver": {"preconditioner": "yarn-lines"}, "cloth")");
    CHECK_THAT(error(lines), Contains("yarn-lines"));
    std::string smoother = triangle_scene("", "{}");
    smoother.replace(smoother.find("\"cloth\""), 7,
                     R"("solver": {"preconditioner": "multilevel", "multilevel_smoother": "yarn-lines"}, "cloth")");
    CHECK_THAT(error(smoother), Contains("solver.multilevel_smoother") && Contains("needs yarns"));
    std::string coarse = triangle_scene("", "{}");
    coarse.replace(coarse.find("\"cloth\""), 7,
                   R"("solver": {"preconditioner": "multilevel", "multilevel_coarse_space": "yarns"}, "cloth")");
    CHECK_THAT(error(coarse), Contains("solver.multilevel_coarse_space") && Contains("needs yarns"));
    // "auto" (the default) picks Chebyshev and node aggregates for triangle cloth, so it is not refused.
    std::string automatic = triangle_scene("", "{}");
    automatic.replace(automatic.find("\"cloth\""), 7,
                      R"("solver": {"preconditioner": "multilevel", "multilevel_smoother": "auto", )"
                      R"("multilevel_coarse_space": "auto"}, "cloth")");
    CHECK(run_error_of(write_scene(dir, automatic), dir, 0.004).empty());
    std::string approximation = triangle_scene("", "{}");
    approximation.replace(approximation.find("\"cloth\""), 7,
                          R"("solver": {"stiffness_approximation": "projected"}, "cloth")");
    CHECK_THAT(error(approximation),
               Contains("solver.stiffness_approximation \"projected\"") && Contains("not to triangle cloth"));
}

TEST_CASE("weft-run: sliding_rods.json crosses smoothly with EIL and blows up without", "[examples][weft-run][eil]")
{
    const std::string text = text_of(source_root() / "examples" / "scenes" / "sliding_rods.json");
    const auto run = [&](bool eil, double& peak_kinetic, int& peak_eil) {
        const fs::path dir = fresh_dir(eil ? "rods_eil" : "rods_eol");
        std::string scene = text;
        const std::string on = "\"eil\": {\"enabled\": true}";
        REQUIRE(scene.find(on) != std::string::npos);
        if (!eil) scene.replace(scene.find(on), on.size(), "\"eil\": {\"enabled\": false}");
        const RunSummary summary = run_quietly(write_scene(dir, scene), dir).summary;
        const std::vector<std::string> csv = lines_of(dir / "sliding_rods.csv");
        REQUIRE(csv.size() >= 2);
        peak_kinetic = 0;
        peak_eil = 0;
        for (std::size_t k = 1; k < csv.size(); ++k) {
            const std::vector<double> row = fields(csv[k]);
            peak_kinetic = std::max(peak_kinetic, std::isfinite(row[1]) ? row[1] : 1e300);
            if (eil) peak_eil = std::max(peak_eil, static_cast<int>(row.at(9)));
        }
        if (eil) CHECK(csv[0].find(",eil_nodes") != std::string::npos);
        return summary;
    };
    double ke_eil = 0, ke_eol = 0;
    int eil_eil = 0, eil_eol = 0;
    const RunSummary with = run(true, ke_eil, eil_eil);
    REQUIRE(with.ok);
    CHECK(with.steps == 100);
    CHECK(eil_eil >= 1);  // a contact turned EIL around the meeting
    CHECK(with.peak_eil_nodes == eil_eil);
    CHECK(ke_eil < 1e-9);  // the pins' own kinetic energy is ~1e-11 J
    const RunSummary without = run(false, ke_eol, eil_eol);
    INFO("peak KE with EIL " << ke_eil << " J, without " << ke_eol << " J; EoL-only run: " << without.error);
    // EoL only: the A segment between the contacts collapses; the solver may
    // still report success while the contacts are flung along A.
    CHECK((!without.ok || ke_eol > 1e3 * ke_eil));
}

TEST_CASE("weft-run: tablecloth.json stacks two layers with contact nodes and runs", "[examples][weft-run][layers]")
{
    const fs::path dir = fresh_dir("tablecloth");
    const RunOutput run = run_quietly(source_root() / "examples" / "scenes" / "tablecloth.json", dir, 0.005);
    const RunSummary& summary = run.summary;
    INFO(run.log << summary.error);
    REQUIRE(summary.ok);
    CHECK(summary.steps == 5);
    // 40² + 39² crossings plus one contact per crossing of a top yarn with a
    // bottom yarn of the other direction where the cloths overlap: the 39 top
    // warps each cross the 18 bottom wefts under them (x from -23 to -6 mm),
    // and the 18 top wefts over the bottom cloth each cross 38 bottom warps.
    CHECK(summary.nodes == 1600 + 1521 + 39 * 18 + 18 * 38);
    const std::vector<std::string> csv = lines_of(dir / "tablecloth.csv");
    REQUIRE(csv.size() == 6);
    CHECK(csv[0].substr(csv[0].size() - 20) == ",eil_nodes,max_speed");
    const std::vector<double> last = fields(csv.back());
    CHECK(last[1] > 0);  // the overhang starts to fall
}

TEST_CASE("weft-run: yarn frames tell the cloths, contacts and EIL nodes apart", "[examples][weft-run][layers][eil]")
{
    // tablecloth.json writes frames every 10 steps (legacy VTK, readable
    // here); 60 ms, so that EIL nodes appear (the first at t ≈ 0.05 s).
    const fs::path dir = fresh_dir("tablecloth_frames");
    std::string scene = tablecloth_one_step();
    const std::string frames_key = R"("frames": "tablecloth_frames", "every": 20, "formats": ["vtk", "vtp", "obj"])";
    REQUIRE(scene.find(frames_key) != std::string::npos);
    scene.replace(scene.find(frames_key), frames_key.size(),
                  R"("frames": "frames", "every": 10, "formats": ["vtk", "vtp"])");
    const RunOutput run = run_quietly(write_scene(dir, scene), dir, 0.07);
    INFO(run.log << run.summary.error);
    REQUIRE(run.summary.ok);
    const fs::path frames = dir / "frames";
    // Every node lies on one warp yarn. The 18 top wefts cross the 38 bottom
    // warps: those contacts are on bottom (cloth 0) warps; the 39 top warps
    // cross 18 bottom wefts: contacts on top (cloth 1) warps.
    const std::vector<double> cloth = vtk_scalars(frames / "frame_00000_warp.vtk", "cloth");
    REQUIRE(cloth.size() == 1600 + 1521 + 39 * 18 + 18 * 38);
    CHECK(count_of(cloth, 0) == 1600 + 18 * 38);
    CHECK(count_of(cloth, 1) == 1521 + 39 * 18);
    const std::vector<double> kind = vtk_scalars(frames / "frame_00000_warp.vtk", "node_kind");
    CHECK(count_of(kind, 2) == 39 * 18 + 18 * 38);  // every contact, no EIL node at t = 0
    CHECK(count_of(kind, 0) == 1600 + 1521);
    // The EIL (yarn, node) pairs of a frame are the CSV's eil_nodes of its
    // step where the step took one attempt.
    const std::vector<std::string> csv = lines_of(dir / "tablecloth.csv");
    int compared = 0, with_eil = 0;
    for (int f = 1; f <= 7; ++f) {
        const std::vector<double> row = fields(csv[std::size_t(10 * f)]);
        if (row[7] != 1) continue;  // substeps
        char stem[32];
        std::snprintf(stem, sizeof stem, "frame_%05d", f);
        std::size_t eil = 0;
        for (const char* set : {"warp", "weft"}) {
            const std::vector<double> k = vtk_scalars(frames / (std::string(stem) + "_" + set + ".vtk"), "node_kind");
            eil += count_of(k, 1) + count_of(k, 3);
        }
        CHECK(eil == static_cast<std::size_t>(row[9]));
        ++compared;
        with_eil += eil > 0 ? 1 : 0;
    }
    CHECK(compared >= 4);
    CHECK(with_eil >= 1);
    // The binary .vtp frames carry the same arrays.
    const std::string vtp = text_of(frames / "frame_00007_warp.vtp");
    for (const char* name : {"arc_length", "cloth", "node_kind"})
        CHECK(vtp.find(std::string("Name=\"") + name + "\" format=\"appended\"") != std::string::npos);
}

TEST_CASE("weft-run: in tablecloth.json contacts slide past crossings with EIL nodes; without EIL the run fails",
          "[examples][weft-run][layers][eil]")
{
    // Thesis rule (a) (the scene's default): the overhang pulls the top cloth
    // over the bottom one and its contacts slide past the crossings. Measured:
    // the first EIL node at t = 0.063 s, 154 EIL pairs at the peak of the
    // first 0.1 s (462 over the whole 0.3 s), EIL nodes in 14 of the first
    // 100 steps, and every one of the 300 steps succeeds. Here 0.1 s.
    const fs::path dir = fresh_dir("tablecloth_eil");
    const RunOutput with = run_quietly(write_scene(dir, tablecloth_one_step()), dir, 0.1);
    INFO(with.log << with.summary.error);
    REQUIRE(with.summary.ok);
    CHECK(with.summary.steps == 100);
    CHECK(with.summary.peak_eil_nodes >= 50);
    const std::vector<std::string> csv = lines_of(dir / "tablecloth.csv");
    REQUIRE(csv.size() == 101);
    int steps_with_eil = 0;
    for (std::size_t k = 1; k < csv.size(); ++k) steps_with_eil += fields(csv[k]).back() > 0 ? 1 : 0;
    CHECK(steps_with_eil >= 10);
    // The same scene with EIL off: the first contact that reaches a crossing
    // inverts its segment (t = 0.044 s), and the step fails with that reason,
    // as its last attempt's or as its first attempt's (at the last halvings
    // the collapsing segment's mass may first make the preconditioner
    // indefinite).
    std::string scene = tablecloth_one_step();
    const std::string on = "\"eil\": {\"enabled\": true}";
    REQUIRE(scene.find(on) != std::string::npos);
    scene.replace(scene.find(on), on.size(), "\"eil\": {\"enabled\": false}");
    const RunOutput without = run_quietly(write_scene(dir, scene), dir, 0.1);
    INFO(without.log);
    CHECK_FALSE(without.summary.ok);
    CHECK(without.summary.steps < 100);
    CHECK(without.summary.steps > 30);
    CHECK_THAT(without.summary.error, Catch::Contains("inverted"));
}

TEST_CASE("weft-run: every shipped scene loads, builds and takes a step", "[examples][weft-run][scenes]")
{
    int scenes = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(source_root() / "examples" / "scenes")) {
        if (entry.path().extension() != ".json") continue;
        const fs::path dir = fresh_dir("shipped_" + entry.path().stem().string());
        const double step = weft::load_scene(entry.path()).time_step;
        const RunOutput run = run_quietly(entry.path(), dir, step);
        INFO(entry.path().filename().string() << ": " << run.log << run.summary.error);
        CHECK(run.summary.ok);
        CHECK(run.summary.steps == 1);
        ++scenes;
    }
    CHECK(scenes >= 11);
}

TEST_CASE("weft-run: cantilever.json settles at the beam-theory tip deflection q L^4 / 8 D",
          "[examples][weft-run][triangle][plate]")
{
    const fs::path dir = fresh_dir("cantilever");
    const RunOutput run = run_quietly(source_root() / "examples" / "scenes" / "cantilever.json", dir);
    INFO(run.log << run.summary.error);
    REQUIRE(run.summary.ok);
    REQUIRE(run.summary.steps == 50);
    const auto vertices = [&](int frame) {
        std::vector<Eigen::Vector3d> v;
        char name[64];
        std::snprintf(name, sizeof name, "frame_%05d_cloth.obj", frame);
        for (const std::string& line : lines_of(dir / "cantilever_frames" / name)) {
            if (line.rfind("v ", 0) != 0) continue;
            std::istringstream in(line.substr(2));
            double x = 0, y = 0, z = 0;
            in >> x >> y >> z;
            v.emplace_back(x, y, z);
        }
        return v;
    };
    const auto start = vertices(0), before = vertices(4), end = vertices(5);
    REQUIRE(start.size() == 378);
    REQUIRE(end.size() == start.size());
    double tip = 0, settled = 0;
    int tip_count = 0;
    for (std::size_t i = 0; i < start.size(); ++i) {
        settled = std::max(settled, (end[i] - before[i]).norm());
        if (start[i](0) < 0.1 - 1e-9) continue;
        tip -= end[i](2) - start[i](2);
        ++tip_count;
    }
    REQUIRE(tip_count == 9);
    tip /= tip_count;
    // D = E h³ / 12 = 0.0125 N·m, q = ρ h g = 9.81 N/m², L = 0.1 m: 9.81 mm (measured 9.91 mm).
    const double expected = 9.81 * 1e-4 / (8 * 0.0125);
    INFO("tip deflection " << tip << " m, q L^4 / 8 D = " << expected << " m; last frame moved " << settled << " m");
    CHECK(std::abs(tip / expected - 1) < 0.05);
    CHECK(settled < 1e-6);
}

TEST_CASE("weft-run: sheet_fold.json drapes a sheet over a bar onto itself without an intersection",
          "[examples][weft-run][triangle][collision]")
{
    // The first 0.4 s: the sheet lands on the bar, its halves swing down,
    // meet under the bar and reach the floor (docs/collision.md).
    const fs::path dir = fresh_dir("sheet_fold");
    const RunOutput run = run_quietly(source_root() / "examples" / "scenes" / "sheet_fold.json", dir, 0.4);
    INFO(run.log << run.summary.error);
    REQUIRE(run.summary.ok);
    REQUIRE(run.summary.steps == 200);
    CHECK(run.summary.intersecting_frames == 0);
    CHECK(run.summary.peak_contact_pairs > 1000);
    const double thickness = 0.004;  // 2 x collision_offset
    INFO("closest contact pair " << run.summary.min_contact_distance << " m");
    CHECK(run.summary.min_contact_distance < thickness);  // contacts acted
    CHECK(run.summary.min_contact_distance > 0.9 * thickness);
    const std::vector<std::string> csv = lines_of(dir / "sheet_fold.csv");
    REQUIRE(csv.size() == 201);
    CHECK(csv.front().find(",max_speed,contact_pairs,min_contact_distance") != std::string::npos);
}

TEST_CASE("weft-run: sheet_drop.json rests one sheet one thickness above another", "[examples][weft-run][collision]")
{
    const fs::path dir = fresh_dir("sheet_drop");
    const RunOutput run = run_quietly(source_root() / "examples" / "scenes" / "sheet_drop.json", dir);
    INFO(run.log << run.summary.error);
    REQUIRE(run.summary.ok);
    REQUIRE(run.summary.steps == 200);
    CHECK(run.summary.intersecting_frames == 0);
    // The last frame: the lower sheet (21² vertices first) rests on the floor
    // at its collision_offset, 2 mm; the upper one a thickness, 4 mm, above it.
    double lower_top = -1, upper_low = 1, upper_high = -1;
    int vertex = 0;
    for (const std::string& line : lines_of(dir / "sheet_drop_frames" / "frame_00008_cloth.obj")) {
        if (line.rfind("v ", 0) != 0) continue;
        std::istringstream in(line.substr(2));
        double x = 0, y = 0, z = 0;
        in >> x >> y >> z;
        if (vertex++ < 21 * 21) {
            lower_top = std::max(lower_top, z);
        } else {
            upper_low = std::min(upper_low, z);
            upper_high = std::max(upper_high, z);
        }
    }
    REQUIRE(vertex == 21 * 21 + 16 * 16);
    INFO("lower sheet up to " << lower_top << " m, upper sheet " << upper_low << " to " << upper_high << " m");
    CHECK(lower_top < 0.002);
    CHECK(upper_low > 0.002 + 0.9 * 0.004);
    CHECK(upper_high < 0.002 + 0.004);
}

TEST_CASE("weft-run: drop_on_cloth.json rests a woven patch one yarn diameter above another",
          "[examples][weft-run][yarn][collision]")
{
    const fs::path dir = fresh_dir("drop_on_cloth");
    const RunOutput run = run_quietly(source_root() / "examples" / "scenes" / "drop_on_cloth.json", dir);
    INFO(run.log << run.summary.error);
    REQUIRE(run.summary.ok);
    REQUIRE(run.summary.steps == 300);
    CHECK(run.summary.intersecting_frames == 0);
    CHECK(run.summary.peak_contact_pairs > 1000);
    const double thickness = 0.0005;  // the yarn diameter
    INFO("closest contact pair " << run.summary.min_contact_distance << " m");
    CHECK(run.summary.min_contact_distance > 0.8 * thickness);  // measured: 0.866
    // At the end the top patch rests on the bottom one: the closest pair
    // within 1 % of a diameter, nothing moving.
    const std::vector<std::string> csv = lines_of(dir / "drop_on_cloth.csv");
    REQUIRE(csv.size() == 301);
    CHECK(csv.front().find(",max_speed,contact_pairs,min_contact_distance") != std::string::npos);
    std::vector<double> last;
    std::istringstream row(csv.back());
    for (std::string cell; std::getline(row, cell, ',');) last.push_back(std::stod(cell));
    REQUIRE(last.size() == 13);
    INFO("last row: max_speed " << last[10] << ", " << last[11] << " pairs, closest " << last[12] << " m");
    CHECK(last[10] < 1e-4);
    CHECK(last[11] > 1000);
    CHECK(last[12] > 0.99 * thickness);
    CHECK(last[12] < thickness);
}

TEST_CASE("weft-run: fold.json: the halves of a woven patch meet under a bar one yarn diameter apart",
          "[examples][weft-run][yarn][collision]")
{
    // The first 0.1 s: the patch lands on the bar, its halves swing down and
    // meet under it (docs/collision.md).
    const fs::path dir = fresh_dir("fold");
    const RunOutput run = run_quietly(source_root() / "examples" / "scenes" / "fold.json", dir, 0.1);
    INFO(run.log << run.summary.error);
    REQUIRE(run.summary.ok);
    REQUIRE(run.summary.steps == 100);
    CHECK(run.summary.intersecting_frames == 0);
    CHECK(run.summary.peak_contact_pairs > 1000);
    const double thickness = 0.0005;
    INFO("closest contact pair " << run.summary.min_contact_distance << " m");
    CHECK(run.summary.min_contact_distance < thickness);  // contacts acted
    CHECK(run.summary.min_contact_distance > 0.9 * thickness);
}

TEST_CASE("weft-run: tablecloth.json with mu = 0.2 and with no friction between the layers runs past its old failures",
          "[examples][weft-run][layers][eil]")
{
    // Both failed before each fabric kept parallel-yarn contact between its
    // own crossings across the other layer's contacts (docs/scenes.md, "Why
    // stacked layers blew up"): μ = 0.2 at t = 0.197 s, μ = 0 at t = 0.129 s.
    // Measured: the scene's whole 0.3 s of both ok, none halved
    // (benchmarks/RESULTS.md); here each runs past its old failure.
    const fs::path dir = fresh_dir("tablecloth_slide");
    const std::string text = tablecloth_one_step();
    const double frictionless_duration = 0.15;
    for (const char* value : {"0.2", "0"}) {
        const std::string scene =
            replaced(text, "\"layer_friction\": 0.3", std::string("\"layer_friction\": ") + value);
        const double duration = std::string(value) == "0" ? frictionless_duration : 0.21;
        const RunOutput run = run_quietly(write_scene(dir, scene), dir, duration);
        INFO("layer_friction " << value << ": " << run.log << run.summary.error);
        REQUIRE(run.summary.ok);
        CHECK(run.summary.steps == static_cast<int>(std::lround(duration / 0.001)));
        CHECK(run.summary.peak_eil_nodes > 200);  // measured 514 at μ 0.2, 962 at μ 0
        // the top cloth slides off the bottom one's edge (measured with the
        // normal forces from the elements: 77 at μ 0.2 in 0.21 s, 823 at μ 0 in 0.15 s)
        CHECK(run.summary.detached_contacts > 50);
        require_finite_rows(dir / "tablecloth.csv", run.summary.steps);
    }
    // The frames follow the removals: the last frame of the frictionless run
    // (one every 20 steps) draws the same polylines with fewer points
    // (removed contacts are on no yarn).
    const auto line_points = [&](const std::string& file) {
        long lines = -1, size = -1;
        for (const std::string& line : lines_of(dir / "tablecloth_frames" / file))
            if (line.rfind("LINES ", 0) == 0) std::sscanf(line.c_str(), "LINES %ld %ld", &lines, &size);
        return std::make_pair(lines, size - lines);
    };
    const long last_frame = std::lround(frictionless_duration / 0.001) / 20;
    char last_name[64];
    std::snprintf(last_name, sizeof last_name, "frame_%05ld_warp.vtk", last_frame);
    const std::pair<long, long> first = line_points("frame_00000_warp.vtk");
    const std::pair<long, long> last = line_points(last_name);
    REQUIRE(first.first > 0);
    CHECK(last.first == first.first);
    CHECK(last.second < first.second);
}

TEST_CASE("weft-run: collision.create_contacts adds the columns of contacts made and removed per step",
          "[examples][weft-run][layers][collision]")
{
    // tablecloth.json with collision and create_contacts, its first steps:
    // the two columns follow max_speed, contact_pairs and min_contact_distance,
    // and each sums to the summary's count of the run.
    const fs::path dir = fresh_dir("tablecloth_create");
    const std::string scene =
        replaced(text_of(source_root() / "examples" / "scenes" / "tablecloth.json"), "\"output\": {",
                 "\"collision\": {\"enabled\": true, \"create_contacts\": true}, \"output\": {");
    const RunOutput run = run_quietly(write_scene(dir, scene), dir, 0.005);
    INFO(run.log << run.summary.error);
    REQUIRE(run.summary.ok);
    REQUIRE(run.summary.steps == 5);
    const std::vector<std::string> csv = lines_of(dir / "tablecloth.csv");
    REQUIRE(csv.size() == 6);
    CHECK(csv.front().find(",max_speed,contact_pairs,min_contact_distance,created_contacts,pulled_contacts") !=
          std::string::npos);
    double created = 0, pulled = 0;
    for (std::size_t k = 1; k < csv.size(); ++k) {
        const std::vector<double> row = fields(csv[k]);
        REQUIRE(row.size() == 15);
        created += row[13];
        pulled += row[14];
    }
    CHECK(created == run.summary.created_contacts);
    CHECK(pulled == run.summary.pulled_contacts);
}

TEST_CASE("weft-run: the draped layout (both cloths over the rounded table edge) runs past its old failure",
          "[examples][weft-run][layers][eil]")
{
    // tablecloth.json with the bottom cloth moved to the top one's place:
    // both hang 15 mm over the edge and drape down together (the layout of
    // the scene's first version, which failed at t = 0.094 s). Measured: 0.3 s
    // (the scene's duration) all 300 steps ok, none halved, peak speed
    // 0.63 m/s, 359 EIL nodes at the peak, 2,501 contacts removed because
    // they pulled; here its first 0.12 s, past the old failure.
    const fs::path dir = fresh_dir("tablecloth_draped");
    const std::string scene =
        replaced(tablecloth_one_step(), "\"center\": [-0.0255, 0, 0.00025]", "\"center\": [-0.0045, 0, 0.00025]");
    const double duration = 0.12;
    const RunOutput run = run_quietly(write_scene(dir, scene), dir, duration);
    INFO(run.log << run.summary.error);
    REQUIRE(run.summary.ok);
    CHECK(run.summary.steps == static_cast<int>(std::lround(duration / 0.001)));
    CHECK(run.summary.peak_speed < 1.0);
    CHECK(run.summary.peak_eil_nodes > 100);  // measured 181
    CHECK(run.summary.pulled_contacts > 0);   // the layers part where they hang
    require_finite_rows(dir / "tablecloth.csv", run.summary.steps);
}

TEST_CASE(
    "weft-run: frictionless hang.json runs to its end with full Newton, and with the one-step scheme's EIL "
    "nodes; one-step EoL-only it fails",
    "[examples][weft-run][eil]")
{
    // With friction 0 the yarns of the hanging patch slide freely at every
    // crossing.
    // - Full Newton (the default) runs it with no crossing ever near its
    //   neighbour (measured: 1,000 steps, 1.97 Newton iterations per step,
    //   1 step halved, peak speed 0.45 m/s, no EIL node; the same figures
    //   with EIL off).
    // - The one-step scheme needs the EIL nodes: with them the run ends
    //   (measured: 1,000 steps, 28 EIL nodes and 1.17 m/s at t = 0.075 s,
    //   2 steps halved: the peak, a yarn end whipping as it slides, depends
    //   on the last digits, so the bound below is 1.5 m/s). EoL-only,
    //   segments invert within the first 0.06 s (steps 50, 60 and 61 halved
    //   for collapsed segments) and the sliding yarns whip (7.6 m/s with 24
    //   steps halved in 0.2 s).
    const fs::path dir = fresh_dir("hang_frictionless");
    std::string scene = text_of(source_root() / "examples" / "scenes" / "hang.json");
    const std::string mu = "\"coefficient\": 0.3";
    REQUIRE(scene.find(mu) != std::string::npos);
    scene.replace(scene.find(mu), mu.size(), "\"coefficient\": 0");
    const std::string duration = "\"duration\": 1.0,";
    REQUIRE(scene.find(duration) != std::string::npos);
    const auto with_solver = [&](const std::string& solver) {
        std::string variant = scene;
        variant.replace(variant.find(duration), duration.size(), duration + " \"solver\": " + solver + ",");
        return variant;
    };
    // The CSV of a finished run: every value finite; the peaks of its
    // kinetic energy and max_speed columns.
    const auto check_csv = [&](const RunOutput& run, long steps) {
        const std::vector<std::string> csv = lines_of(dir / "hang.csv");
        REQUIRE(csv.size() == static_cast<std::size_t>(steps) + 1);
        REQUIRE(csv[0].substr(csv[0].size() - 20) == ",eil_nodes,max_speed");
        double peak_kinetic = 0, peak_speed = 0;
        for (std::size_t k = 1; k < csv.size(); ++k) {
            const std::vector<double> row = fields(csv[k]);
            for (double x : row) REQUIRE(std::isfinite(x));
            peak_kinetic = std::max(peak_kinetic, row.at(1));
            peak_speed = std::max(peak_speed, row.back());
        }
        // 400 nodes, 0.4 g of yarn falling at most a few cm: far below 1e-4 J
        CHECK(peak_kinetic < 1e-4);
        // The max_speed column: the summary's peak, and a speed the kinetic
        // energy allows (½ m_node v² ≤ KE for the fastest node, m_node ≥ 1e-7 kg).
        CHECK(peak_speed == Approx(run.summary.peak_speed).epsilon(1e-9));
        CHECK(peak_speed > 0);
        return peak_speed;
    };

    const RunOutput newton = run_quietly(write_scene(dir, scene), dir, 0.5);
    INFO(newton.log << newton.summary.error);
    REQUIRE(newton.summary.ok);
    CHECK(newton.summary.steps == 500);
    CHECK(newton.summary.newton_iterations < 3 * newton.summary.steps);
    CHECK(check_csv(newton, 500) < 0.75);

    const RunOutput with = run_quietly(write_scene(dir, with_solver("{\"newton_iterations\": 1}")), dir, 1.0);
    INFO(with.log << with.summary.error);
    REQUIRE(with.summary.ok);
    CHECK(with.summary.steps == 1000);
    CHECK(with.summary.peak_eil_nodes >= 10);
    CHECK(check_csv(with, 1000) < 1.5);

    const RunOutput without = run_quietly(
        write_scene(dir, with_solver("{\"newton_iterations\": 1, \"eil\": {\"enabled\": false}}")), dir, 0.2);
    INFO(without.log << without.summary.error);
    // Either the run fails, or it limps on with halved steps at speeds that
    // a hanging patch never reaches (measured since the backend's sums have a
    // fixed order, on any core count: 4 steps halved, 2.3 m/s in 0.2 s).
    // Which of the two depends on the last digits: before that, it failed at
    // step 58 on two cores and went on on one.
    CHECK((!without.summary.ok || (without.summary.halved_steps >= 3 && without.summary.peak_speed > 1.0)));
}

TEST_CASE("weft-run: layer and box-collider keys are validated", "[examples][weft-run][layers]")
{
    const fs::path dir = fresh_dir("layers_bad");
    const std::string text = text_of(source_root() / "examples" / "scenes" / "tablecloth.json");
    const auto error = [&](const std::string& from, const std::string& to) {
        std::string scene = text;
        REQUIRE(scene.find(from) != std::string::npos);
        scene.replace(scene.find(from), from.size(), to);
        return run_error_of(write_scene(dir, scene), dir, 0.001);
    };
    using Catch::Contains;
    CHECK_THAT(error("\"on_top_of\": 0", "\"on_top_of\": 1"),
               Contains("cloth[1].on_top_of: must name an earlier woven cloth entry (0..0), got 1"));  // itself
    CHECK_THAT(error("\"on_top_of\": 0", "\"on_top_of\": 2"),
               Contains("cloth[1].on_top_of: must name an earlier woven cloth entry (0..0), got 2"));  // later
    // a cycle: the first entry on the second, which is on the first
    CHECK_THAT(error("\"center\": [-0.0255, 0, 0.00025], \"plane\": \"xy\",",
                     "\"center\": [-0.0255, 0, 0.00025], \"plane\": \"xy\", \"on_top_of\": 1,"),
               Contains("cloth[0].on_top_of: must name an earlier woven cloth entry (none precedes cloth[0]), got 1"));
    // a layer beside the one below, overlapping it nowhere
    CHECK_THAT(error("\"center\": [-0.0045, 0, 0.00025]", "\"center\": [0.06, 0, 0.00025]"),
               Contains("cloth[1].on_top_of: no yarn of this layer crosses a yarn of cloth[0]"));
    CHECK_THAT(error("\"on_top_of\": 0", "\"rotation\": 1e999, \"on_top_of\": 0"),
               Contains("cloth[1].rotation: must be a finite number"));
    CHECK_THAT(error("\"on_top_of\": 0", "\"rotation\": \"30\", \"on_top_of\": 0"),
               Contains("cloth[1].rotation: expected a number"));
    CHECK_THAT(error("\"size\": [0.08, 0.1, 0.02]", "\"size\": [0.08, 0.1]"), Contains("colliders[0].size"));
    CHECK_THAT(error("\"size\": [0.08, 0.1, 0.02]", "\"size\": [0.08, 0.1, 0]"), Contains("colliders[0].size[2]"));
    CHECK_THAT(error("\"rounding\": 0.002", "\"rounding\": 0.01"),
               Contains("colliders[0].rounding: must be below half the shortest box edge"));
    CHECK_THAT(error("\"rounding\": 0.002", "\"rounding\": -0.001"), Contains("colliders[0].rounding"));
    // stacked exactly on the crossings: no contact can be placed between them
    CHECK_THAT(error("\"yarns\": [39, 39]", "\"yarns\": [40, 40]"), Contains("cloth[1].on_top_of: invalid contact"));
    CHECK_THAT(error("\"on_top_of\": 0", "\"on_top_of\": 0, \"layer_normal_force\": \"mass\""),
               Contains("cloth[1].layer_normal_force: unknown normal force rule \"mass\" (expected one of"));
    CHECK_THAT(error("\"on_top_of\": 0", "\"on_top_of\": 0, \"layer_normal_force\": 1"),
               Contains("cloth[1].layer_normal_force"));
    CHECK_THAT(error("\"center\": [-0.0255, 0, 0.00025], \"plane\": \"xy\",",
                     "\"center\": [-0.0255, 0, 0.00025], \"plane\": \"xy\", \"layer_normal_force\": \"weight\","),
               Contains("cloth[0].layer_normal_force: needs \"on_top_of\""));
    CHECK_THAT(error("\"eil\": {\"enabled\": true}", "\"eil\": {\"enabled\": true, \"remove_pulling_contacts\": 1}"),
               Contains("solver.eil.remove_pulling_contacts"));
}
