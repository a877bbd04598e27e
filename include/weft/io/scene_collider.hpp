#pragma once
/// @file scene_collider.hpp
/// The parsers of a scene's `colliders` entries and of its `collision`
/// object (keys: scene_schema.hpp,
/// docs/scenes.md). Host-only.

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include <weft/io/json_reader.hpp>
#include <weft/io/scene_description.hpp>
#include <weft/io/scene_schema.hpp>

namespace weft {
namespace scene_detail {

using namespace json_reader;

/// One collider; `default_stiffness` is the scene-wide default of its `stiffness`.
inline ColliderDescription parse_collider(const json& j, const std::string& path, double default_stiffness)
{
    const Object o(j, path);
    static const std::vector<std::string> types{"sphere", "plane", "box"};
    if (!o.has("type")) o.allow_only(scene_keys::collider());
    ColliderDescription c;
    c.type = read_choice(o.required("type"), o.path("type"), types, "collider type");
    const std::string context = " for collider type \"" + c.type + "\"";
    if (c.type == "sphere") {
        o.allow_only(scene_keys::sphere(), context);
        c.center = o.get("center", read_vector3);
        c.radius = o.get("radius", read_positive);
    } else if (c.type == "box") {
        o.allow_only(scene_keys::box(), context);
        c.center = o.get("center", read_vector3);
        const json& size = o.required("size");
        const std::string size_path = o.path("size");
        if (!size.is_array() || size.size() != 3)
            fail(size_path, "expected an array of 3 positive numbers (edge lengths in m), got " + describe_value(size));
        for (std::size_t k = 0; k < 3; ++k) c.size[k] = read_positive(size[k], element_path(size_path, k));
        c.rounding = o.get_or("rounding", read_non_negative, 0.0);
        const double shortest = std::min(c.size[0], std::min(c.size[1], c.size[2]));
        if (!(c.rounding < 0.5 * shortest))
            fail(o.path("rounding"), "must be below half the shortest box edge (" + format_number(0.5 * shortest) +
                                         " m), got " + format_number(c.rounding));
    } else {
        o.allow_only(scene_keys::plane(), context);
        c.point = o.get("point", read_vector3);
        const std::array<double, 3> n = o.get("normal", read_vector3);
        const double length = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (!(length > 0) || !std::isfinite(length))
            fail(o.path("normal"), "must be a non-zero finite vector, got [" + format_number(n[0]) + ", " +
                                       format_number(n[1]) + ", " + format_number(n[2]) + "]");
        c.normal = {n[0] / length, n[1] / length, n[2] / length};
    }
    c.friction = o.get_or("friction", read_non_negative, 0.0);
    if (o.has("stiffness")) {
        c.stiffness = o.get("stiffness", read_positive);
    } else {
        if (!(default_stiffness > 0))
            fail(o.path("stiffness"),
                 "the default (1000 x stretch stiffness / spacing of the stiffest woven cloth, 1000 x (lambda + "
                 "2 mu) x thickness of the stiffest stvk cloth) is 0 here (zero stiffness, or only tabulated "
                 "materials); set it explicitly");
        c.stiffness = default_stiffness;
    }
    return c;
}

/// The scene's `collision` object. `default_thickness`: the thickness when
/// the key is absent (0: none, the key is then required when enabled). An
/// absent stiffness stays 0: the model builder resolves it from the node
/// masses and the time step.
inline CollisionDescription parse_collision(const json& j, const std::string& path, double default_thickness)
{
    const Object o(j, path);
    o.allow_only(scene_keys::collision());
    CollisionDescription c;
    c.enabled = o.get_or("enabled", read_bool, true);
    c.friction = o.get_or("friction", read_non_negative, 0.0);
    c.create_contacts = o.get_or("create_contacts", read_bool, false);
    if (o.has("thickness")) {
        c.thickness = o.get("thickness", read_positive);
    } else if (c.enabled) {
        if (!(default_thickness > 0))
            fail(o.path("thickness"), "has no default here (the cloth's collision_offset is 0); set it explicitly");
        c.thickness = default_thickness;
    }
    c.stiffness = o.get_or("stiffness", read_positive, 0.0);
    c.parallel_angle = o.get_or("parallel_angle", read_non_negative, 0.0);
    if (!(c.parallel_angle < 90))
        fail(o.path("parallel_angle"), "must be below 90 (degrees), got " + format_number(c.parallel_angle));
    c.onset = o.get_or("onset", read_non_negative, 0.0);
    if (!(c.onset < 1))
        fail(o.path("onset"), "must be below 1 (a fraction of the thickness), got " + format_number(c.onset));
    return c;
}

}  // namespace scene_detail
}  // namespace weft
