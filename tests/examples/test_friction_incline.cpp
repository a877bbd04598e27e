// The friction_incline example (thesis Fig. 4.3): command line, CSV, and the
// stick/slip summary of a short run (the physics is in backend/test_layers).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../../examples/friction_incline/friction_incline.hpp"

namespace fs = std::filesystem;
using weft::examples::InclineOptions;
using weft::examples::parse_incline_arguments;

namespace {

InclineOptions parse(std::vector<const char*> args)
{
    args.insert(args.begin(), "friction_incline");
    return parse_incline_arguments(static_cast<int>(args.size()), args.data());
}

}  // namespace

TEST_CASE("friction_incline: the command line", "[examples][friction_incline]")
{
    const InclineOptions o = parse({"--angle", "40", "--friction", "0.8", "--duration", "0.25", "--csv", "out.csv"});
    CHECK(o.angle_degrees == 40);
    CHECK(o.friction == 0.8);
    CHECK(o.duration == 0.25);
    CHECK(o.csv == "out.csv");
    CHECK_FALSE(o.quiet);
    const InclineOptions extra = parse({"--size", "6", "--bottom", "10", "--dt", "5e-4", "--quiet"});
    CHECK(extra.top_nodes == 6);
    CHECK(extra.bottom_nodes == 10);
    CHECK(extra.time_step == 5e-4);
    CHECK(extra.quiet);
    CHECK(extra.newton_iterations == 1);
    CHECK(parse({"--newton", "8"}).newton_iterations == 8);
    CHECK_THROWS_WITH(parse({"--newton", "0"}), Catch::Contains("--newton"));
    CHECK_THROWS_WITH(parse({"--newton", "2.5"}), Catch::Contains("--newton"));
    CHECK(parse({"--help"}).help);
    CHECK_THROWS_WITH(parse({"--angle", "90"}), Catch::Contains("--angle"));
    CHECK_THROWS_WITH(parse({"--angle", "x"}), Catch::Contains("--angle"));
    CHECK_THROWS_WITH(parse({"--friction", "-1"}), Catch::Contains("--friction"));
    CHECK_THROWS_WITH(parse({"--duration", "0"}), Catch::Contains("--duration"));
    CHECK_THROWS_WITH(parse({"--csv"}), Catch::Contains("--csv"));
    CHECK_THROWS_WITH(parse({"--size", "8", "--bottom", "9"}), Catch::Contains("--bottom"));
    CHECK_THROWS_WITH(parse({"--speed", "1"}), Catch::Contains("--speed"));
    CHECK(parse({"--version"}).version);
    CHECK_THAT(weft::examples::incline_usage(), Catch::Contains("--angle") && Catch::Contains("30"));
}

TEST_CASE("friction_incline: CSV and summary of a sticking and a sliding run", "[examples][friction_incline]")
{
    const fs::path dir = fs::temp_directory_path() / "weft_test_friction_incline";
    fs::remove_all(dir);
    fs::create_directories(dir);
    int runs = 0;
    for (const double angle : {40.0, 55.0}) {
        InclineOptions o = parse({"--angle", angle == 40 ? "40" : "55", "--friction", "1", "--duration", "0.05"});
        o.csv = (dir / "incline.csv").string();
        const weft::examples::InclineRun run = weft::examples::run_friction_incline(o);
        REQUIRE(run.ok);
        weft::examples::write_incline_csv(run, o.csv);
        std::ifstream in(o.csv);
        std::vector<std::string> lines;
        for (std::string line; std::getline(in, line);) lines.push_back(line);
        REQUIRE(lines.size() == run.samples.size() + 1);
        CHECK(lines.front() == "time,slide_distance,kinetic_energy");
        CHECK(lines[1] == "0,0,0");
        const std::string summary = weft::examples::incline_summary(o, run);
        if (angle == 40) {
            // Sticks for the whole run.
            CHECK(run.samples.size() == 51u);
            CHECK_FALSE(run.slid());
            CHECK(summary.find("stuck") != std::string::npos);
        } else {
            // a = g (sin 55° − cos 55°) = 2.4 m/s²: the top patch reaches the
            // fixed patch's edge (≈ 1.3 mm) after ≈ 35 ms and the run stops.
            CHECK(run.slid());
            CHECK(run.left_fixed_patch);
            CHECK(run.detached > 0);
            CHECK(run.slide_distance > 1e-3);
            CHECK(run.end_time < 0.05);
            CHECK(summary.find("slid") != std::string::npos);
        }
        ++runs;
    }
    REQUIRE(runs == 2);
    CHECK_THROWS_WITH(weft::examples::write_incline_csv({}, (dir / "missing" / "x.csv").string()),
                      Catch::Contains("cannot open"));
}

TEST_CASE("friction_incline: full Newton keeps the Coulomb threshold between layers", "[examples][friction_incline]")
{
    // μ = 0.5 (atan μ = 26.57°), full Newton to 1e-4: stuck 2.5° below the
    // threshold, sliding 2.5° above, as with the one-step scheme.
    int runs = 0;
    for (const double angle : {24.0, 29.0}) {
        InclineOptions o =
            parse({"--angle", angle == 24 ? "24" : "29", "--friction", "0.5", "--duration", "0.2", "--newton", "8"});
        const weft::examples::InclineRun run = weft::examples::run_friction_incline(o);
        INFO("angle " << angle << ": " << run.message << ", slid " << run.slide_distance << " m");
        REQUIRE(run.ok);
        if (angle == 24) {
            CHECK_FALSE(run.slid());
            CHECK(run.slide_distance < 1e-9);
            CHECK(run.end_time == Approx(0.2));
            // Coulomb's stick test after each step (settle_slipping_anchor):
            // every contact, loaded below its limit, is back on its spring
            // (the one-step scheme leaves half of them at the limit).
            CHECK(run.anchors_at_limit == 0);
        } else {
            CHECK(run.slid());
            CHECK(run.left_fixed_patch);
            CHECK(run.end_time < 0.1);
            CHECK(run.anchors_at_limit > 0);
        }
        ++runs;
    }
    REQUIRE(runs == 2);
}
