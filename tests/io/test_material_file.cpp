#include <weft/element/membrane_element.hpp>
#include <weft/io/material_file.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using Catch::Matchers::Contains;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// The shipped sample, found from this source file (tests/io/ → repository root).
fs::path sample_path()
{
    return fs::path(__FILE__).parent_path().parent_path().parent_path() / "examples" / "materials" /
           "gnatv_sample.json";
}

json sample_json()
{
    std::ifstream in(sample_path());
    REQUIRE(in.good());
    return json::parse(in);
}

json minimal()
{
    return json::parse(R"({"model": "tabulated", "name": "m", "units": "N/m",
        "warp": {"strain": [0.01, 0.02], "stress": [10, 30]},
        "weft": {"strain": [0.01, 0.02], "stress": [5, 15]},
        "shear": {"strain": [0.1], "stress": [1]}})");
}

std::string error_of(const json& material)
{
    try {
        weft::parse_tabulated_material(material);
    } catch (const weft::InvalidInput& e) {
        return e.what();
    }
    return "";
}

std::string error_of_text(const std::string& text)
{
    try {
        weft::parse_tabulated_material_text(text, "m.json");
    } catch (const weft::InvalidInput& e) {
        return e.what();
    }
    return "";
}

std::string load_error(const fs::path& path)
{
    try {
        weft::load_tabulated_material(path);
    } catch (const weft::InvalidInput& e) {
        return e.what();
    }
    return "";
}

struct TempDir {
    fs::path path;
    TempDir()
    {
        std::random_device rd;
        path = fs::temp_directory_path() / ("weft_test_material_" + std::to_string(rd()) + std::to_string(rd()));
        fs::create_directories(path);
    }
    ~TempDir()
    {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

/// Second Piola–Kirchhoff stress measured from the nodal forces of a two-triangle patch
/// [0, L] × [0, H] under x = F X (see tests/potential/test_tabulated.cpp for the derivation:
/// right-edge forces sum to −H F S e₁, top-edge forces to −L F S e₂).
Eigen::Matrix2d measured_stress(const weft::TabulatedMembraneDensity<double>& density, const Eigen::Matrix2d& f)
{
    const double length = 0.25, height = 0.4;
    const Eigen::Vector2d uv[4] = {{0, 0}, {length, 0}, {length, height}, {0, height}};
    const int tri[2][3] = {{0, 1, 2}, {0, 2, 3}};
    Eigen::Vector3d force[4] = {Eigen::Vector3d::Zero(), Eigen::Vector3d::Zero(), Eigen::Vector3d::Zero(),
                                Eigen::Vector3d::Zero()};
    for (const auto& t : tri) {
        const auto element = weft::make_membrane_element<double>(
            weft::make_triangle_rest<double>(uv[t[0]], uv[t[1]], uv[t[2]]), density, weft::StVKDensity<double>{0, 0});
        Eigen::Matrix<double, 9, 1> q;
        for (int a = 0; a < 3; ++a) q.segment<3>(3 * a) << f * uv[t[a]], 0.0;
        const Eigen::Matrix<double, 9, 1> fe = weft::membrane_elastic_force(element, q);
        for (int a = 0; a < 3; ++a) force[t[a]] += fe.segment<3>(3 * a);
    }
    Eigen::Matrix2d p;
    p.col(0) = -(force[1] + force[2]).head<2>() / height;
    p.col(1) = -(force[2] + force[3]).head<2>() / length;
    return f.inverse() * p;
}

}  // namespace

TEST_CASE("material file: the shipped sample loads and its curves pass through the file's knots",
          "[io][material_file][sample]")
{
    REQUIRE(fs::exists(sample_path()));
    const weft::TabulatedMaterial m = weft::load_tabulated_material(sample_path());
    CHECK(m.name == "gnatv-sample-woven-cotton");
    CHECK(m.units == "N/m");
    CHECK(m.source == sample_path().string());
    // Honest provenance: the description says these are not measurements.
    CHECK_THAT(m.description, Contains("NOT MEASURED DATA"));

    const json raw = sample_json();
    int checks = 0;
    for (const char* key : {"warp", "weft", "shear"}) {
        INFO(key);
        const weft::TabulatedCurve<double>& curve =
            std::string(key) == "warp" ? m.density.warp
                                       : (std::string(key) == "weft" ? m.density.weft : m.density.shear);
        const auto strain = raw[key]["strain"].get<std::vector<double>>();
        const auto stress = raw[key]["stress"].get<std::vector<double>>();
        REQUIRE(strain.size() >= 5);
        CHECK(curve.odd_extension);  // tension-only data
        for (std::size_t k = 0; k < strain.size(); ++k) {
            CHECK(curve.stress(strain[k]) == Approx(stress[k]).epsilon(1e-14).margin(1e-14));
            ++checks;
        }
    }
    REQUIRE(checks == 28);
}

TEST_CASE("material file: the sample has the documented shape (toe, stiffening, warp > weft >> shear)",
          "[io][material_file][sample]")
{
    const weft::TabulatedMaterial m = weft::load_tabulated_material(sample_path());
    const auto& d = m.density;
    int checks = 0;
    for (const auto* curve : {&d.warp, &d.weft}) {
        // Soft toe, then stiffening: the end slope is several times the slope at rest.
        CHECK(curve->knot_slope[curve->knot_count - 1] > 5 * curve->knot_slope[0]);
        ++checks;
    }
    for (const double e : {0.002, 0.01, 0.02, 0.04, 0.08}) {
        CHECK(d.warp.stress(e) > d.weft.stress(e));
        // Shear (against γ = 2ε₁₂ ≈ the shear angle) is much softer than tension.
        CHECK(d.shear.stress_derivative(e) < 0.1 * d.weft.stress_derivative(e));
        checks += 2;
    }
    REQUIRE(checks == 12);
}

TEST_CASE("material file (GNATV check): stretching a membrane patch reproduces the sample file's own curves",
          "[io][material_file][gnatv]")
{
    const weft::TabulatedMaterial m = weft::load_tabulated_material(sample_path());
    const json raw = sample_json();
    int checks = 0;
    for (int mode = 0; mode < 3; ++mode) {
        const char* key = mode == 0 ? "warp" : (mode == 1 ? "weft" : "shear");
        INFO(key);
        const auto strain = raw[key]["strain"].get<std::vector<double>>();
        const auto stress = raw[key]["stress"].get<std::vector<double>>();
        const double scale = *std::max_element(stress.begin(), stress.end());
        for (std::size_t k = 0; k < strain.size(); ++k) {
            const double x = strain[k];
            Eigen::Matrix2d f = Eigen::Matrix2d::Identity();
            if (mode == 0) f(0, 0) = std::sqrt(1 + 2 * x);  // Green strain ε₁₁ = x
            if (mode == 1) f(1, 1) = std::sqrt(1 + 2 * x);
            if (mode == 2) {  // picture frame: yarns keep their length, f₁·f₂ = sin 2a = γ
                const double a = 0.5 * std::asin(x);
                f << std::cos(a), std::sin(a), std::sin(a), std::cos(a);
            }
            const Eigen::Matrix2d s = measured_stress(m.density, f);
            const double measured = mode == 0 ? s(0, 0) : (mode == 1 ? s(1, 1) : s(0, 1));
            CHECK(measured == Approx(stress[k]).epsilon(1e-10).margin(1e-12 * scale));
            ++checks;
        }
    }
    REQUIRE(checks == 28);
}

TEST_CASE("material file: a minimal file parses, (0, 0) is implied, description is optional", "[io][material_file]")
{
    const weft::TabulatedMaterial m = weft::parse_tabulated_material(minimal());
    CHECK(m.name == "m");
    CHECK(m.description.empty());
    CHECK(m.source.empty());
    CHECK(m.density.warp.knot_count == 3);
    CHECK(m.density.warp.stress(0.02) == Approx(30).epsilon(1e-13));
    CHECK(m.density.shear.stress(0.05) == Approx(0.5).epsilon(1e-13));  // (0, 0)–(0.1, 1): a line
    CHECK(m.density.shear.stress(-0.05) == Approx(-0.5).epsilon(1e-13));
}

TEST_CASE("material file: bad files are rejected naming the key and the value", "[io][material_file][error]")
{
    int checks = 0;
    auto expect = [&](const std::string& message, const std::string& part) {
        INFO("message: " << message);
        CHECK_THAT(message, Contains(part));
        ++checks;
    };
    json j = minimal();
    j["modle"] = "tabulated";
    expect(error_of(j), "modle: unknown key (did you mean \"model\"?)");
    j = minimal();
    j["warp"]["strains"] = j["warp"]["strain"];
    expect(error_of(j), "warp.strains: unknown key");
    j = minimal();
    j["damping"] = 1;
    expect(error_of(j), "damping: unknown key (allowed: \"model\", \"name\"");
    j = minimal();
    j.erase("weft");
    expect(error_of(j), "weft: required key is missing");
    j = minimal();
    j["shear"].erase("stress");
    expect(error_of(j), "shear.stress: required key is missing");
    j = minimal();
    j.erase("model");
    expect(error_of(j), "model: required key is missing");
    j = minimal();
    j["model"] = "stvk";
    expect(error_of(j), "model: unknown material model \"stvk\" (expected one of \"tabulated\")");
    j = minimal();
    j["units"] = "MPa";
    expect(error_of(j), "units: unknown stress unit (force per unit rest length) \"MPa\" (expected one of \"N/m\")");
    j = minimal();
    j["name"] = "";
    expect(error_of(j), "name: must be a non-empty string");
    j = minimal();
    j["name"] = 3;
    expect(error_of(j), "name: expected a string, got number 3");
    j = minimal();
    j["warp"]["strain"] = {0.01, "0.02"};
    expect(error_of(j), "warp.strain[1]: expected a number, got string \"0.02\"");
    j = minimal();
    j["weft"]["stress"] = 5;
    expect(error_of(j), "weft.stress: expected an array of numbers, got number 5");
    j = minimal();
    j["weft"] = {1, 2};
    expect(error_of(j), "weft: expected an object, got array of 2 elements");
    j = minimal();
    j["warp"]["strain"] = {0.02, 0.01};
    expect(error_of(j), "invalid warp.strain[1] = 0.01: must be > warp.strain[0] = 0.02");
    j = minimal();
    j["shear"] = {{"strain", {0.1, 0.2, 0.3}}, {"stress", {1, 3, 2}}};
    expect(error_of(j), "invalid shear.stress[2] = 2: must be >= shear.stress[1] = 3");
    j = minimal();
    j["weft"]["stress"] = {5};
    expect(error_of(j), "weft.stress: must have as many entries as weft.strain (2), got 1");
    j = minimal();
    j["weft"] = {{"strain", json::array()}, {"stress", json::array()}};
    expect(error_of(j), "weft.strain: must list at least one knot besides (0, 0), got []");
    j = minimal();
    j["warp"] = {{"strain", {0.0, 0.01}}, {"stress", {0.3, 1}}};
    expect(error_of(j), "invalid warp.stress[0] = 0.3: must be 0 at strain 0");
    j = minimal();
    std::vector<double> strain, stress;
    for (int k = 1; k <= 40; ++k) strain.push_back(0.001 * k), stress.push_back(k);
    j["warp"] = {{"strain", strain}, {"stress", stress}};
    expect(error_of(j), "invalid warp.knot_count = 41: must be <= 32");
    expect(error_of(json::array()), "material: expected an object, got array of 0 elements");

    // Text: syntax, duplicates, overflow; every message names the source.
    expect(error_of_text("{\"model\": \"tabulated\","), "m.json: JSON syntax error at byte");
    expect(error_of_text(R"({"model": "tabulated", "model": "tabulated"})"),
           "m.json: model: duplicate key (JSON objects keep only one value per key)");
    expect(error_of_text(R"({"warp": {"strain": [0.01, 1e999]}})"), "m.json: warp.strain[1]: must be a finite number");
    expect(error_of_text(minimal().dump().replace(minimal().dump().find("N/m"), 3, "N/mm")),
           "m.json: units: unknown stress unit");
    CHECK(error_of_text(minimal().dump()).empty());
    ++checks;

    // Files.
    TempDir dir;
    expect(load_error(dir.path / "missing.json"), "missing.json\": no such file");
    expect(load_error(dir.path), "is a directory, not a file");
    {
        std::ofstream(dir.path / "bad.json") << R"({"model": "tabulated", "name": "x", "units": "N/m", "wrap": {}})";
    }
    expect(load_error(dir.path / "bad.json"), "bad.json: wrap: unknown key (did you mean \"warp\"?)");
    {
        std::ofstream(dir.path / "good.json") << minimal().dump(2);
    }
    const weft::TabulatedMaterial good = weft::load_tabulated_material(dir.path / "good.json");
    CHECK(good.source == (dir.path / "good.json").string());
    ++checks;
    REQUIRE(checks == 29);
}
