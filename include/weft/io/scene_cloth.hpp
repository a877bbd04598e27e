#pragma once
/// @file scene_cloth.hpp
/// The parsers of a scene's `cloth` entries: woven patches, triangle cloth
/// and the sliding-rods setup, with their node selectors, stiffness, damping,
/// friction, contact and placement (keys: scene_schema.hpp, docs/scenes.md,
/// docs/triangles.md). Host-only.

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <weft/io/json_reader.hpp>
#include <weft/io/scene_description.hpp>
#include <weft/io/scene_schema.hpp>

namespace weft {
namespace scene_detail {

using namespace json_reader;

inline const std::vector<std::string>& node_set_names()
{
    static const std::vector<std::string> names{"top-edge", "bottom-edge", "left-edge", "right-edge", "corners"};
    return names;
}

inline NodeSelection read_node_selection(const json& j, const std::string& path, int node_count)
{
    if (!j.is_array()) fail(path, "expected an array of node-set names and node indices, got " + describe_value(j));
    NodeSelection selection;
    for (std::size_t k = 0; k < j.size(); ++k) {
        const std::string item = element_path(path, k);
        if (j[k].is_string()) {
            selection.sets.push_back(read_choice(j[k], item, node_set_names(), "node set"));
        } else if (j[k].is_number_integer()) {
            const int node = read_integer(j[k], item, 0);
            if (node >= node_count)
                fail(item, "node index " + std::to_string(node) + " is out of range: the patch has " +
                               std::to_string(node_count) + " nodes (0.." + std::to_string(node_count - 1) + ")");
            selection.nodes.push_back(node);
        } else {
            fail(item, "expected a node-set name (" + quoted_list(node_set_names()) + ") or a node index, got " +
                           describe_value(j[k]));
        }
    }
    return selection;
}

inline StiffnessDescription parse_stiffness(const json& j, const std::string& path)
{
    const Object o(j, path);
    o.allow_only(scene_keys::stiffness());
    StiffnessDescription s;
    s.stretch = o.get("stretch", read_non_negative);
    s.bending = o.get("bending", read_non_negative);
    s.shear = o.get("shear", read_non_negative);
    return s;
}

inline DampingDescription parse_damping(const json& j, const std::string& path, const StiffnessDescription& stiffness)
{
    const Object o(j, path);
    static const std::vector<std::string> models{"strain-rate", "rayleigh", "rayleigh-analogy", "none"};
    if (!o.has("model")) o.allow_only(scene_keys::yarn_damping());
    DampingDescription d;
    d.model = read_choice(o.required("model"), o.path("model"), models, "damping model");
    const std::string context = " for damping model \"" + d.model + "\"";
    if (d.model == "strain-rate") {
        o.allow_only(scene_keys::yarn_strain_rate(), context);
        d.stretch = o.get_or("stretch", read_non_negative, 0.0);
        d.bending = o.get_or("bending", read_non_negative, 0.0);
        d.shear = o.get_or("shear", read_non_negative, 0.0);
    } else if (d.model == "rayleigh") {
        o.allow_only(scene_keys::rayleigh(), context);
        d.beta = o.get("beta", read_non_negative);
    } else if (d.model == "rayleigh-analogy") {
        o.allow_only(scene_keys::rayleigh(), context);
        d.beta = o.get("beta", read_non_negative);
        // 2018 Eq. (12): k_d = β k_e for each mode.
        d.stretch = d.beta * stiffness.stretch;
        d.bending = d.beta * stiffness.bending;
        d.shear = d.beta * stiffness.shear;
    } else {
        o.allow_only(scene_keys::no_damping(), context);
    }
    return d;
}

/// Shared by woven and triangle entries: `center` and `plane`.
inline void parse_center_and_plane(const Object& o, ClothDescription& c)
{
    c.center = o.get_or("center", read_vector3, c.center);
    c.plane = o.get_or(
        "plane",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, {"xy", "xz"}, "plane");
        },
        std::string("xy"));
}

/// Shared by woven and triangle entries: pins, moving pins, initial velocity.
inline void parse_placement(const Object& o, ClothDescription& c, int node_count)
{
    if (o.has("pins")) c.pins = read_node_selection(o.required("pins"), o.path("pins"), node_count);
    if (o.has("moving_pins")) {
        const json& list = o.required("moving_pins");
        const std::string list_path = o.path("moving_pins");
        if (!list.is_array())
            fail(list_path, "expected an array of {nodes, velocity} objects, got " + describe_value(list));
        for (std::size_t k = 0; k < list.size(); ++k) {
            const Object m(list[k], element_path(list_path, k));
            m.allow_only(scene_keys::moving_pins());
            MovingPins pins;
            pins.nodes = read_node_selection(m.required("nodes"), m.path("nodes"), node_count);
            pins.velocity = m.get("velocity", read_vector3);
            c.moving_pins.push_back(pins);
        }
    }
    if (o.has("initial_velocity")) {
        const Object v(o.required("initial_velocity"), o.path("initial_velocity"));
        v.allow_only(scene_keys::initial_velocity());
        c.initial_velocity.linear = v.get_or("linear", read_vector3, c.initial_velocity.linear);
        c.initial_velocity.angular = v.get_or("angular", read_vector3, c.initial_velocity.angular);
    }
}

/// How a woven cloth's value came to be, for the words of an error.
enum class WovenValue { given, defaulted, edited };

/// A woven cloth's parallel-yarn contact must reach less far than the
/// spacing (contact.min_distance < spacing), or its penalty pushes every
/// crossing apart at rest. Throws InvalidInput at `path` (the min_distance
/// key) naming both values. The parser checks what it read (given or the
/// default 2 x radius); build_yarn_scene checks again what code may have
/// edited since (WovenValue::edited).
inline void check_contact_reach(const ClothDescription& c, const std::string& path, WovenValue how)
{
    if (c.contact.min_distance < c.spacing) return;
    const std::string value = format_number(c.contact.min_distance);
    const std::string words = how == WovenValue::given       ? "got " + value
                              : how == WovenValue::defaulted ? "the default 2 x radius = " + value
                                                             : value;
    fail(path, words + ", which is not below spacing = " + format_number(c.spacing) +
                   ": the parallel-yarn contact penalty would push at rest" +
                   (how == WovenValue::defaulted ? "; set it explicitly" : ""));
}

inline ClothDescription parse_woven(const Object& o)
{
    o.allow_only(scene_keys::woven());
    ClothDescription c;
    c.type = "woven";
    c.pattern = o.get_or(
        "pattern",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, {"plain", "twill"}, "weave pattern");
        },
        std::string("plain"));

    const json& yarns = o.required("yarns");
    const std::string yarns_path = o.path("yarns");
    if (!yarns.is_array() || yarns.size() != 2)
        fail(yarns_path, "expected an array of 2 integers (crossings along the first and second axis), got " +
                             describe_value(yarns));
    for (std::size_t k = 0; k < 2; ++k) c.yarns[k] = read_integer(yarns[k], element_path(yarns_path, k), 2);
    if (std::int64_t(c.yarns[0]) * c.yarns[1] > std::numeric_limits<int>::max())
        fail(yarns_path, "too many nodes: " + std::to_string(c.yarns[0]) + " x " + std::to_string(c.yarns[1]));
    const int node_count = c.yarns[0] * c.yarns[1];

    c.spacing = o.get("spacing", read_positive);
    c.radius = o.get("radius", read_positive);
    c.density = o.get("density", read_positive);
    parse_center_and_plane(o, c);
    c.rotation = o.get_or("rotation", read_number, c.rotation);
    c.stiffness = o.get("stiffness", parse_stiffness);
    if (o.has("damping")) c.damping = parse_damping(o.required("damping"), o.path("damping"), c.stiffness);

    // Defaults derived from the stiffness and the geometry (see the file comment).
    const double segment_stiffness = c.stiffness.stretch / c.spacing;
    c.friction.normal_force = 0.01 * c.stiffness.stretch;
    c.friction.anchor_stiffness = segment_stiffness;
    if (o.has("friction")) {
        const Object f(o.required("friction"), o.path("friction"));
        f.allow_only(scene_keys::friction());
        c.friction.coefficient = f.get_or("coefficient", read_non_negative, c.friction.coefficient);
        c.friction.normal_force = f.get_or("normal_force", read_non_negative, c.friction.normal_force);
        c.friction.anchor_stiffness = f.get_or("anchor_stiffness", read_non_negative, c.friction.anchor_stiffness);
    }

    c.contact.stiffness = 1000 * segment_stiffness;
    c.contact.min_distance = 2 * c.radius;
    bool min_distance_given = false;
    if (o.has("contact")) {
        const Object k(o.required("contact"), o.path("contact"));
        k.allow_only(scene_keys::contact());
        c.contact.stiffness = k.get_or("stiffness", read_non_negative, c.contact.stiffness);
        min_distance_given = k.has("min_distance");
        c.contact.min_distance = k.get_or("min_distance", read_non_negative, c.contact.min_distance);
    }
    check_contact_reach(c, child_path(o.path("contact"), "min_distance"),
                        min_distance_given ? WovenValue::given : WovenValue::defaulted);

    parse_placement(o, c, node_count);
    if (o.has("on_top_of"))
        c.on_top_of = o.get("on_top_of", [](const json& v, const std::string& p) { return read_integer(v, p, 0); });
    if (o.has("layer_friction")) {
        if (c.on_top_of < 0) fail(o.path("layer_friction"), "needs \"on_top_of\" (the layer below)");
        c.layer_friction = o.get("layer_friction", read_non_negative);
    }
    if (o.has("layer_parallel_contact")) {
        if (c.on_top_of < 0) fail(o.path("layer_parallel_contact"), "needs \"on_top_of\" (the layer below)");
        c.layer_parallel_contact = o.get("layer_parallel_contact", read_bool);
    }
    if (o.has("layer_normal_force")) {
        if (c.on_top_of < 0) fail(o.path("layer_normal_force"), "needs \"on_top_of\" (the layer below)");
        c.layer_normal_force = o.get("layer_normal_force", [](const json& v, const std::string& p) {
            return read_choice(v, p, {"elements", "weight"}, "normal force rule");
        });
    }
    return c;
}

/// A "triangle" cloth entry (see docs/triangles.md). Moduli are 3D (Pa,
/// Pa·s) and are multiplied by the thickness when the model is built;
/// damping is stored in DampingDescription as stretch = λ_d, shear = μ_d
/// (Pa·s) and bending = k_d (N m s).
inline ClothDescription parse_triangle(const Object& o)
{
    o.allow_only(scene_keys::triangle());
    ClothDescription c;
    c.type = "triangle";
    TriangleClothDescription& t = c.triangle;
    const bool grid = o.has("resolution") || o.has("size");
    if (o.has("mesh") && grid) fail(o.path("mesh"), "give either \"mesh\" or \"resolution\" and \"size\", not both");
    int node_count = std::numeric_limits<int>::max();  // a mesh's vertex count is checked when it is loaded
    if (o.has("mesh")) {
        t.mesh = o.get("mesh", read_non_empty_string);
        t.uv_scale = o.get_or("uv_scale", read_positive, t.uv_scale);
        if (o.has("diagonals")) fail(o.path("diagonals"), "applies to grids (resolution, size), not to a mesh");
    } else {
        const json& res = o.required("resolution");
        const std::string res_path = o.path("resolution");
        if (!res.is_array() || res.size() != 2)
            fail(res_path, "expected an array of 2 integers (vertices along the first and second axis), got " +
                               describe_value(res));
        for (std::size_t k = 0; k < 2; ++k) t.resolution[k] = read_integer(res[k], element_path(res_path, k), 2);
        if (std::int64_t(t.resolution[0]) * t.resolution[1] > std::numeric_limits<int>::max() / 3)
            fail(res_path,
                 "too many vertices: " + std::to_string(t.resolution[0]) + " x " + std::to_string(t.resolution[1]));
        node_count = t.resolution[0] * t.resolution[1];
        const json& size = o.required("size");
        const std::string size_path = o.path("size");
        if (!size.is_array() || size.size() != 2)
            fail(size_path, "expected an array of 2 numbers (width, height in m), got " + describe_value(size));
        for (std::size_t k = 0; k < 2; ++k) t.size[k] = read_positive(size[k], element_path(size_path, k));
        t.diagonals = o.get_or(
            "diagonals",
            [](const json& v, const std::string& p) {
                return read_choice(v, p, {"alternating", "regular"}, "diagonal pattern");
            },
            t.diagonals);
        if (o.has("uv_scale")) fail(o.path("uv_scale"), "applies to a mesh, not to a grid");
    }
    parse_center_and_plane(o, c);

    const Object m(o.required("material"), o.path("material"));
    static const std::vector<std::string> models{"stvk", "tabulated"};
    if (!m.has("model")) m.allow_only(scene_keys::material());
    t.material_model = read_choice(m.required("model"), m.path("model"), models, "material model");
    const std::string context = " for material model \"" + t.material_model + "\"";
    t.thickness = m.get("thickness", read_positive);
    t.density = m.get("density", read_positive);
    if (t.material_model == "stvk" && (m.has("young") || m.has("poisson"))) {
        // The physical input: a thin sheet of a 3D StVK material in plane
        // stress, E and ν. The membrane law's Lamé parameters are
        // λ₂D = E ν / (1 − ν²) and μ = E / (2 (1 + ν)) (times h when the model
        // is built), and the plate's D = E h³ / (12 (1 − ν²)).
        for (const char* lame : {"lambda", "mu"})
            if (m.has(lame))
                fail(m.path(lame), "give either \"young\" and \"poisson\" or \"lambda\" and \"mu\", not both (got " +
                                       std::string(lame) + " = " + describe_value(m.required(lame)) + " with " +
                                       (m.has("young") ? "young = " + describe_value(m.required("young"))
                                                       : "poisson = " + describe_value(m.required("poisson"))) +
                                       ")");
        m.allow_only(scene_keys::material_young(), context + " with \"young\" and \"poisson\"");
        t.young = m.get("young", read_positive);
        t.poisson = m.get("poisson", read_number);
        if (!(t.poisson > -1 && t.poisson < 0.5))
            fail(m.path("poisson"),
                 "must be in (-1, 0.5) (a stable isotropic material), got " + format_number(t.poisson));
        t.lambda = t.young * t.poisson / (1 - t.poisson * t.poisson);
        t.mu = t.young / (2 * (1 + t.poisson));
        t.bending = t.young * t.thickness * t.thickness * t.thickness / (12 * (1 - t.poisson * t.poisson));
    } else if (t.material_model == "stvk") {
        m.allow_only(scene_keys::material_stvk(), context);
        t.lambda = m.get("lambda", read_number);
        t.mu = m.get("mu", read_non_negative);
        if (!(t.lambda + t.mu >= 0))
            fail(m.path("lambda"), "lambda + mu must be >= 0 (a convex StVK density), got lambda = " +
                                       format_number(t.lambda) + ", mu = " + format_number(t.mu));
        // λ h and μ h are the membrane law's (2-D) Lamé parameters as given:
        // nothing is converted to plane stress (docs/triangles.md). The
        // default plate bending stiffness D = E h³ / (12 (1 − ν²)) reads λ, μ
        // as 3D Lamé parameters.
        const double e = t.lambda + t.mu > 0 ? t.mu * (3 * t.lambda + 2 * t.mu) / (t.lambda + t.mu) : 0.0;
        const double nu = t.lambda + t.mu > 0 ? t.lambda / (2 * (t.lambda + t.mu)) : 0.0;
        t.bending = e * t.thickness * t.thickness * t.thickness / (12 * (1 - nu * nu));
    } else {
        m.allow_only(scene_keys::material_tabulated(), context);
        t.material_file = m.get("file", read_non_empty_string);
        t.bending = 0;
    }
    // ν of the plate's bending density: the one D was derived with.
    t.bending_poisson = 0;
    if (t.material_model == "stvk" && t.young > 0)
        t.bending_poisson = t.poisson;
    else if (t.material_model == "stvk" && t.lambda + t.mu > 0)
        t.bending_poisson = t.lambda / (2 * (t.lambda + t.mu));
    if (o.has("bending")) {
        const Object b(o.required("bending"), o.path("bending"));
        b.allow_only(scene_keys::triangle_bending());
        t.bending_model = b.get_or(
            "model",
            [](const json& v, const std::string& p) {
                return read_choice(v, p, {"plate", "dihedral"}, "bending model");
            },
            t.bending_model);
        if (b.has("stiffness")) {
            if (m.has("bending"))
                fail(b.path("stiffness"), "give the bending stiffness once: material.bending = " +
                                              describe_value(m.required("bending")) + " is also set");
            t.bending = b.get("stiffness", read_non_negative);
        } else if (t.material_model == "tabulated" && !m.has("bending")) {
            fail(b.path("stiffness"), "is required for the tabulated model (no Lamé parameters to derive it from)");
        }
        if (b.has("poisson")) {
            if (t.bending_model != "plate")
                fail(b.path("poisson"), "applies to the \"plate\" bending model, not to \"" + t.bending_model + "\"");
            t.bending_poisson = b.get("poisson", read_number);
            if (!(t.bending_poisson > -1 && t.bending_poisson < 1))
                fail(b.path("poisson"), "must be in (-1, 1) (a positive definite bending density), got " +
                                            format_number(t.bending_poisson));
        }
    } else if (t.material_model == "tabulated" && !m.has("bending")) {
        fail(m.path("bending"), "is required for the tabulated model (no Lamé parameters to derive it from)");
    }
    if (m.has("bending")) t.bending = m.get("bending", read_non_negative);
    t.rest_shape = o.get_or(
        "rest_shape",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, {"flat", "mesh"}, "rest shape");
        },
        t.rest_shape);
    t.collision_offset = o.get_or("collision_offset", read_non_negative, t.thickness / 2);

    if (o.has("damping")) {
        const Object d(o.required("damping"), o.path("damping"));
        static const std::vector<std::string> damping_models{"strain-rate", "rayleigh", "rayleigh-analogy", "none"};
        if (!d.has("model")) d.allow_only(scene_keys::triangle_damping());
        c.damping.model = read_choice(d.required("model"), d.path("model"), damping_models, "damping model");
        const std::string dcontext = " for damping model \"" + c.damping.model + "\"";
        if (c.damping.model == "strain-rate") {
            d.allow_only(scene_keys::triangle_strain_rate(), dcontext);
            c.damping.stretch = d.get_or("lambda", read_number, 0.0);
            c.damping.shear = d.get_or("mu", read_non_negative, 0.0);
            c.damping.bending = d.get_or("bending", read_non_negative, 0.0);
            if (!(c.damping.stretch + c.damping.shear >= 0))
                fail(d.path("lambda"), "lambda + mu must be >= 0 (a convex dissipation potential), got lambda = " +
                                           format_number(c.damping.stretch) +
                                           ", mu = " + format_number(c.damping.shear));
        } else if (c.damping.model == "rayleigh" || c.damping.model == "rayleigh-analogy") {
            d.allow_only(scene_keys::rayleigh(), dcontext);
            c.damping.beta = d.get("beta", read_non_negative);
            if (c.damping.model == "rayleigh-analogy") {
                if (t.material_model != "stvk")
                    fail(d.path("model"), "\"rayleigh-analogy\" needs an stvk material (its λ, μ), got \"" +
                                              t.material_model + "\"; use \"strain-rate\" with explicit values");
                // 2018 Eq. (12): (λ_d, μ_d) = β (λ, μ); membrane only, like the Rayleigh baseline
                c.damping.stretch = c.damping.beta * t.lambda;
                c.damping.shear = c.damping.beta * t.mu;
            }
        } else {
            d.allow_only(scene_keys::no_damping(), dcontext);
        }
    }
    parse_placement(o, c, node_count);
    return c;
}

/// A "sliding-rods" entry: the degenerate-sliding setup (model/sliding_rods.hpp).
inline ClothDescription parse_sliding_rods(const Object& o)
{
    o.allow_only(scene_keys::sliding_rods());
    ClothDescription c;
    c.type = "sliding-rods";
    c.spacing = o.get_or("spacing", read_positive, 1e-3);
    c.radius = o.get_or("radius", read_positive, 2.5e-4);
    c.density = o.get_or("density", read_positive, 130.0);
    c.stiffness = o.has("stiffness") ? parse_stiffness(o.required("stiffness"), o.path("stiffness"))
                                     : StiffnessDescription{500, 1e-5, 0};
    c.rods.speed_b = o.get_or("speed_b", read_number, c.rods.speed_b);
    c.rods.speed_c = o.get_or("speed_c", read_number, c.rods.speed_c);
    if (!(c.rods.speed_b > c.rods.speed_c))
        fail(o.path("speed_b"), "must exceed speed_c so that rods B and C approach each other, got speed_b = " +
                                    format_number(c.rods.speed_b) + ", speed_c = " + format_number(c.rods.speed_c));
    c.rods.prestretch = o.get_or("prestretch", read_positive, c.rods.prestretch);
    c.friction.coefficient = 0;
    return c;
}

inline ClothDescription parse_cloth(const json& j, const std::string& path)
{
    const Object o(j, path);
    // Without a type we cannot know the allowed keys; check against the woven
    // ones so that a misspelt "type" is reported as such.
    if (!o.has("type")) o.allow_only(scene_keys::woven());
    const std::string type = o.get("type", read_string);
    if (type == "woven") return parse_woven(o);
    if (type == "triangle") return parse_triangle(o);
    if (type == "sliding-rods") return parse_sliding_rods(o);
    fail(o.path("type"), "unknown cloth type \"" + type + "\" (supported: \"woven\", \"triangle\", \"sliding-rods\")");
}

}  // namespace scene_detail

/// The same woven patch with yarns[0] × yarns[1] crossings: the spacing set
/// so that the first axis keeps its width ((yarns[0] - 1) · spacing), and
/// each value that follows the spacing scaled with it as its default would
/// be (scene.hpp's file comment, docs/scenes.md): friction.anchor_stiffness
/// and contact.stiffness as 1 / spacing (their defaults are stretch /
/// spacing and 1000 · stretch / spacing), contact.min_distance as the
/// spacing (it keeps its share of the spacing; the default 2 x radius does
/// not follow it and would reach past a fine spacing, see
/// check_contact_reach). Values given in the scene keep their ratio to
/// the default. The radius, stiffness, damping, friction force, placement
/// and named node sets stay. Throws InvalidInput for a cloth that is not
/// woven, fewer than 2 crossings a side, or pins given by node index (they
/// name nodes of the old grid).
inline void refine_woven(ClothDescription& c, std::array<int, 2> yarns)
{
    if (c.type != "woven") throw InvalidInput("refine_woven: cloth type \"" + c.type + "\" is not woven");
    for (int k = 0; k < 2; ++k)
        if (yarns[k] < 2 || c.yarns[k] < 2)
            throw InvalidInput("refine_woven: yarns[" + std::to_string(k) + "] = " + std::to_string(yarns[k]) +
                               " (was " + std::to_string(c.yarns[k]) + "): need at least 2 crossings a side");
    bool by_index = !c.pins.nodes.empty();
    for (const MovingPins& m : c.moving_pins) by_index = by_index || !m.nodes.nodes.empty();
    if (by_index)
        throw InvalidInput("refine_woven: the cloth pins nodes by index, which name nodes of the " +
                           std::to_string(c.yarns[0]) + " x " + std::to_string(c.yarns[1]) +
                           " grid; pin named node sets instead");
    const double width = (c.yarns[0] - 1) * c.spacing;
    const double spacing = width / (yarns[0] - 1);
    const double ratio = spacing / c.spacing;
    c.yarns = yarns;
    c.spacing = spacing;
    c.friction.anchor_stiffness /= ratio;
    c.contact.stiffness /= ratio;
    c.contact.min_distance *= ratio;
}

}  // namespace weft
