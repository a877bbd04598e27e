#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <weft/backend/scene_options.hpp>
#include <weft/backend/triangle_stepper.hpp>
#include <weft/backend/yarn_stepper.hpp>
#include <weft/io/checkpoint.hpp>
#include <weft/io/scene.hpp>
#include <weft/io/scene_model.hpp>
#include <weft/io/triangle_scene.hpp>

// Checkpoint files (io/checkpoint.hpp) and the steppers' complete state
// (ImplicitStepper::save_state / load_state): a stepper loaded from another's
// checkpoint takes the same next steps, bit for bit. weft-run's whole-run
// test is tests/examples/checkpoint.sh.

namespace {

std::filesystem::path temporary(const std::string& name)
{
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "weft_test_checkpoint";
    std::filesystem::create_directories(dir);
    return dir / name;
}

std::vector<unsigned char> bytes_of(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::vector<unsigned char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::filesystem::path& path, const std::vector<unsigned char>& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// Steps `a` `first` times, saves it, loads the state into `b` (built from
/// the same scene), steps both `second` times: positions and velocities
/// must be bit-identical after every step.
template <class Stepper>
int check_resume(Stepper& a, Stepper& b, double h, int first, int second, const std::string& file)
{
    for (int k = 0; k < first; ++k) REQUIRE(a.step(h).ok);
    weft::CheckpointWriter out;
    a.save_state(out);
    out.write(temporary(file));
    const weft::CheckpointReader in(temporary(file));
    b.load_state(in);
    int compared = 0;
    for (int k = 0; k < second; ++k) {
        REQUIRE(a.step(h).ok);
        REQUIRE(b.step(h).ok);
        const std::vector<double> qa = weft::to_host(a.positions()), qb = weft::to_host(b.positions());
        const std::vector<double> va = weft::to_host(a.velocities()), vb = weft::to_host(b.velocities());
        REQUIRE(qa.size() == qb.size());
        CHECK(std::memcmp(qa.data(), qb.data(), qa.size() * sizeof(double)) == 0);
        CHECK(std::memcmp(va.data(), vb.data(), va.size() * sizeof(double)) == 0);
        ++compared;
    }
    const auto ea = a.energies(), eb = b.energies();
    CHECK(ea.elastic == eb.elastic);
    CHECK(ea.dissipation == eb.dissipation);
    return compared;
}

}  // namespace

TEST_CASE("checkpoint file: blocks round trip; truncated, corrupted, other versions and foreign files refused",
          "[io][checkpoint]")
{
    const std::filesystem::path path = temporary("blocks.checkpoint");
    weft::CheckpointWriter out;
    const std::vector<double> values{1.5, -2.25, 1e-300, 3.0};
    out.put("values", values);
    out.put("empty", std::vector<int>{});
    out.put_value("count", std::int64_t(42));
    out.put_value("flag", true);
    out.put_string("name", "a scene \"quoted\"");
    out.write(path);
    CHECK_FALSE(std::filesystem::exists(path.string() + ".tmp"));  // renamed into place

    const weft::CheckpointReader in(path);
    CHECK(in.get<double>("values") == values);
    CHECK(in.get<double>("values", 4) == values);
    CHECK(in.get<int>("empty").empty());
    CHECK(in.get_value<std::int64_t>("count") == 42);
    CHECK(in.get_value<bool>("flag"));
    CHECK(in.get_string("name") == "a scene \"quoted\"");
    CHECK(in.has("values"));
    CHECK_FALSE(in.has("other"));
    CHECK_THROWS_WITH(in.get<double>("other"), Catch::Contains("has no block \"other\""));
    CHECK_THROWS_WITH(in.get<double>("values", 3), Catch::Contains("block \"values\" has 32 bytes, expected 24"));
    CHECK_THROWS_WITH(in.get_value<std::int32_t>("count"), Catch::Contains("block \"count\" has 8 bytes"));

    const std::vector<unsigned char> good = bytes_of(path);
    const std::filesystem::path bad = temporary("bad.checkpoint");
    int refused = 0;
    const auto refuses = [&](std::vector<unsigned char> bytes, const char* reason) {
        write_bytes(bad, bytes);
        CHECK_THROWS_WITH(weft::CheckpointReader(bad), Catch::Contains(reason) && Catch::Contains(bad.string()));
        ++refused;
    };
    for (const std::size_t keep : {std::size_t(0), std::size_t(5), std::size_t(10), good.size() / 2, good.size() - 1})
        refuses(std::vector<unsigned char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(keep)),
                keep < 8 ? "is not a weft checkpoint" : "is truncated");
    for (const std::size_t at : {std::size_t(20), good.size() / 2, good.size() - 20, good.size() - 3}) {
        std::vector<unsigned char> flipped = good;
        flipped[at] ^= 0x10;
        refuses(flipped, "is corrupted");
    }
    std::vector<unsigned char> version = good;
    version[8] = 7;
    refuses(version, "has checkpoint version 7; this build reads version 1");
    refuses(std::vector<unsigned char>{'{', '"', 'a', '"', ':', '1', '}'}, "is not a weft checkpoint");
    CHECK_THROWS_WITH(weft::CheckpointReader(temporary("missing.checkpoint")), Catch::Contains("cannot be read"));
    REQUIRE(refused == 11);
}

TEST_CASE("stepper state: a yarn stepper with EIL nodes and contacts resumes bit for bit", "[io][checkpoint][yarn]")
{
    // sliding_rods: two rods slide through their contact; EIL nodes appear
    // from about step 60, so the state saved at step 70 holds them.
    const weft::SceneDescription scene = weft::load_scene(WEFT_SOURCE_DIR "/examples/scenes/sliding_rods.json");
    REQUIRE(scene.solver.eil);
    const weft::YarnScene<double> built = weft::build_yarn_scene<double>(scene);
    const auto options = weft::stepper_options<double>(scene);
    const auto eil = weft::eil_options<double>(scene);
    weft::YarnStepper<double> a(built.model, built.colliders, built.gravity, options, eil);
    weft::YarnStepper<double> b(built.model, built.colliders, built.gravity, options, eil);
    const int compared = check_resume(a, b, scene.time_step, 70, 30, "yarn.checkpoint");
    CHECK(a.eil_tracker().count() == b.eil_tracker().count());
    REQUIRE(compared == 30);

    // Another model's state is refused, naming the node counts.
    weft::SceneDescription other = weft::load_scene(WEFT_SOURCE_DIR "/tests/examples/scenes/determinism_yarn.json");
    const weft::YarnScene<double> other_built = weft::build_yarn_scene<double>(other);
    weft::YarnStepper<double> c(other_built.model, other_built.colliders, other_built.gravity,
                                weft::stepper_options<double>(other), weft::eil_options<double>(other));
    const weft::CheckpointReader in(temporary("yarn.checkpoint"));
    CHECK_THROWS_WITH(c.load_state(in), Catch::Contains("nodes with 5 DoFs each; this scene has"));
}

TEST_CASE("stepper state: a triangle stepper under full Newton resumes bit for bit", "[io][checkpoint][triangle]")
{
    weft::SceneDescription scene = weft::load_scene(WEFT_SOURCE_DIR "/tests/examples/scenes/determinism_triangle.json");
    REQUIRE(scene.solver.newton_iterations > 1);
    const weft::TriangleScene<double> built = weft::build_triangle_scene<double>(scene);
    const auto options = weft::stepper_options<double>(scene);
    weft::TriangleStepper<double> a(built.model, built.colliders, built.gravity, options);
    weft::TriangleStepper<double> b(built.model, built.colliders, built.gravity, options);
    REQUIRE(check_resume(a, b, scene.time_step, 6, 6, "triangle.checkpoint") == 6);
}
