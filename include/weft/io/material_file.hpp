#pragma once
/// @file material_file.hpp
/// Tabulated (GNATV, 2019 Sec. 3.1) membrane materials from JSON files.
/// Host-only. Strict like scene.hpp: every key is known, every value has the
/// expected type and range, duplicate keys are rejected, and every error
/// names the key path and the offending value (weft::InvalidInput).
///
/// ## Keys (`*` = required)
///
/// ```
/// model*        "tabulated"   the only model today; another value is an error naming it
/// name*         string, non-empty
/// description   string        "" free text: where the numbers come from
/// units*        "N/m"         stress unit: force per unit rest length, i.e. a
///                             3D stress already multiplied by the thickness
/// warp*         {strain*: [numbers], stress*: [numbers]}  material axis 1 (u)
/// weft*         {strain*: [numbers], stress*: [numbers]}  material axis 2 (v)
/// shear*        {strain*: [numbers], stress*: [numbers]}
/// ```
///
/// Each curve lists knots of the second Piola–Kirchhoff stress (N/m) against
/// the Green strain (dimensionless): warp against ε₁₁, weft against ε₂₂, and
/// shear against the engineering shear strain γ = 2ε₁₂ = f₁·f₂ (for yarns that
/// keep their length, the cosine of the angle between them; 2019 Eq. 3's ε_uv),
/// with S₁₂ as its stress (2019 Eq. 4's σ_uv). Measured tensile data (force
/// per unit width P at engineering strain e) convert as ε = e + e²/2,
/// S = P/(1 + e); a picture-frame shear angle φ away from 90° gives γ = sin φ.
/// Knots: at most 32 per curve (with (0, 0), which may be omitted), strains
/// strictly increasing, stresses non-decreasing, σ = 0 at strain 0. Without
/// negative strains a curve is extended to compression as an odd function;
/// beyond its ends, linearly with the end slope (potential/tabulated.hpp).
///
/// It is read with the strict JSON reader of the scene files
/// (json_reader.hpp): the same messages, duplicate keys rejected.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <weft/core/error.hpp>
#include <weft/io/json_reader.hpp>
#include <weft/potential/tabulated.hpp>

namespace weft {

/// A tabulated membrane material as read from a file.
struct TabulatedMaterial {
    std::string name;
    std::string description;
    std::string units;                         ///< "N/m"
    std::string source;                        ///< the file for load_tabulated_material, empty otherwise
    TabulatedMembraneDensity<double> density;  ///< warp, weft, shear curves (N/m)
};

namespace material_detail {

using json = nlohmann::json;
using json_reader::describe_value;
using json_reader::element_path;
using json_reader::fail;
using json_reader::Object;

inline std::vector<double> read_number_array(const json& j, const std::string& path)
{
    if (!j.is_array()) fail(path, "expected an array of numbers, got " + describe_value(j));
    std::vector<double> values;
    values.reserve(j.size());
    for (std::size_t k = 0; k < j.size(); ++k) values.push_back(json_reader::read_number(j[k], element_path(path, k)));
    return values;
}

/// One curve object; the curve factory's errors ("invalid warp.stress[3] = …")
/// already carry the key path, since the curve is named after its key.
inline TabulatedCurve<double> parse_curve(const json& j, const std::string& path)
{
    const Object o(j, path);
    o.allow_only({"strain", "stress"});
    const std::vector<double> strain = o.get("strain", read_number_array);
    const std::vector<double> stress = o.get("stress", read_number_array);
    if (strain.empty()) fail(o.path("strain"), "must list at least one knot besides (0, 0), got []");
    if (stress.size() != strain.size())
        fail(o.path("stress"), "must have as many entries as " + o.path("strain") + " (" +
                                   std::to_string(strain.size()) + "), got " + std::to_string(stress.size()));
    return make_tabulated_curve<double>(path, strain, stress);
}

}  // namespace material_detail

/// Parses and validates a tabulated material (see the file comment).
/// @throws InvalidInput naming the key path and the offending value.
inline TabulatedMaterial parse_tabulated_material(const nlohmann::json& material)
{
    using namespace material_detail;
    if (!material.is_object()) fail("material", "expected an object, got " + describe_value(material));
    const Object o(material, "");
    o.allow_only({"model", "name", "description", "units", "warp", "weft", "shear"});
    TabulatedMaterial m;
    o.get("model", [](const json& j, const std::string& p) {
        return json_reader::read_choice(j, p, {"tabulated"}, "material model");
    });
    m.name = o.get("name", json_reader::read_non_empty_string);
    m.description = o.get_or("description", json_reader::read_string, std::string());
    m.units = o.get("units", [](const json& j, const std::string& p) {
        return json_reader::read_choice(j, p, {"N/m"}, "stress unit (force per unit rest length)");
    });
    m.density.warp = parse_curve(o.required("warp"), "warp");
    m.density.weft = parse_curve(o.required("weft"), "weft");
    m.density.shear = parse_curve(o.required("shear"), "shear");
    return m;
}

/// Parses JSON text (duplicate keys rejected) and validates it as a material.
/// Errors read "<source>: <key path>: <problem>" or "<source>: invalid <key
/// path> = <value>: <problem>".
inline TabulatedMaterial parse_tabulated_material_text(const std::string& text,
                                                       const std::string& source = "<material text>")
{
    const json_reader::json material = json_reader::parse_json_text(text, source);
    return json_reader::validate_from(source, [&] { return parse_tabulated_material(material); });
}

/// Reads and validates a material file. Every error names the file.
inline TabulatedMaterial load_tabulated_material(const std::filesystem::path& path)
{
    const std::string name = path.string();
    const json_reader::json material = json_reader::read_json_file(path, "material");
    TabulatedMaterial m = json_reader::validate_from(name, [&] { return parse_tabulated_material(material); });
    m.source = name;
    return m;
}

}  // namespace weft
