#pragma once
/// @file scene_schema.hpp
/// The keys of every object of the scene format, in one place: the section
/// parsers (scene_solver.hpp, scene_cloth.hpp, scene_collider.hpp,
/// scene_output.hpp) accept exactly these, and a test checks that each one
/// is documented in docs/scenes.md or docs/triangles.md, so the parser and
/// the documentation cannot drift apart. Host-only.

#include <string>
#include <vector>

namespace weft {
namespace scene_keys {

using Keys = std::vector<std::string>;

// clang-format off
inline const Keys& scene()            { static const Keys k{"name", "description", "time_step", "duration", "gravity", "solver", "cloth", "colliders", "collision", "output"}; return k; }
inline const Keys& solver()           { static const Keys k{"newton_iterations", "newton_tolerance", "pcg_tolerance", "pcg_max_iterations", "adaptive_time_step", "min_time_step", "preconditioner", "eil", "max_speed", "line_search_cuts", "line_search_expansions", "exact_hessians", "hessian_projection", "linear", "stiffness_approximation", "multilevel_refresh", "multilevel_refresh_tolerance", "multilevel_line_factor_tolerance", "multilevel_exact_ritz_bound", "multilevel_renew_modes", "multilevel_smoother", "multilevel_rebuild", "multilevel_coarse_space", "multilevel_square_side", "multilevel_square_join", "multilevel_cycle", "multilevel_pattern_change", "matrix_precision"}; return k; }
/// The solver keys that change only how each linear system is solved, not
/// the equations (weft-run --other-linear-solver lets a resumed run change them).
inline const Keys& solver_linear()    { static const Keys k{"pcg_tolerance", "pcg_max_iterations", "preconditioner", "linear", "multilevel_refresh", "multilevel_refresh_tolerance", "multilevel_line_factor_tolerance", "multilevel_exact_ritz_bound", "multilevel_renew_modes", "multilevel_smoother", "multilevel_rebuild", "multilevel_coarse_space", "multilevel_square_side", "multilevel_square_join", "multilevel_cycle", "multilevel_pattern_change", "matrix_precision"}; return k; }
inline const Keys& eil()              { static const Keys k{"enabled", "safety_factor", "contact_factor", "lookahead", "min_segment_factor", "reset_arc_length", "remove_pulling_contacts", "pull_threshold"}; return k; }
inline const Keys& woven()            { static const Keys k{"type", "pattern", "yarns", "spacing", "radius", "density", "center", "plane", "stiffness", "damping", "friction", "contact", "pins", "moving_pins", "initial_velocity", "on_top_of", "layer_friction", "layer_parallel_contact", "layer_normal_force", "rotation"}; return k; }
inline const Keys& stiffness()        { static const Keys k{"stretch", "bending", "shear"}; return k; }
inline const Keys& yarn_damping()     { static const Keys k{"model", "stretch", "bending", "shear", "beta"}; return k; }
inline const Keys& yarn_strain_rate() { static const Keys k{"model", "stretch", "bending", "shear"}; return k; }
inline const Keys& friction()         { static const Keys k{"coefficient", "normal_force", "anchor_stiffness"}; return k; }
inline const Keys& contact()          { static const Keys k{"stiffness", "min_distance"}; return k; }
inline const Keys& moving_pins()      { static const Keys k{"nodes", "velocity"}; return k; }
inline const Keys& initial_velocity() { static const Keys k{"linear", "angular"}; return k; }
inline const Keys& triangle()         { static const Keys k{"type", "resolution", "size", "diagonals", "mesh", "uv_scale", "material", "damping", "center", "plane", "pins", "moving_pins", "initial_velocity", "collision_offset", "bending", "rest_shape"}; return k; }
inline const Keys& triangle_bending() { static const Keys k{"model", "stiffness", "poisson"}; return k; }
inline const Keys& material()         { static const Keys k{"model", "lambda", "mu", "young", "poisson", "thickness", "density", "bending", "file"}; return k; }
inline const Keys& material_young()   { static const Keys k{"model", "young", "poisson", "thickness", "density", "bending"}; return k; }
inline const Keys& material_stvk()    { static const Keys k{"model", "lambda", "mu", "thickness", "density", "bending"}; return k; }
inline const Keys& material_tabulated() { static const Keys k{"model", "file", "thickness", "density", "bending"}; return k; }
inline const Keys& triangle_damping() { static const Keys k{"model", "lambda", "mu", "bending", "beta"}; return k; }
inline const Keys& triangle_strain_rate() { static const Keys k{"model", "lambda", "mu", "bending"}; return k; }
inline const Keys& rayleigh()         { static const Keys k{"model", "beta"}; return k; }
inline const Keys& no_damping()       { static const Keys k{"model"}; return k; }
inline const Keys& sliding_rods()     { static const Keys k{"type", "spacing", "radius", "density", "stiffness", "speed_b", "speed_c", "prestretch"}; return k; }
inline const Keys& collider()         { static const Keys k{"type", "center", "radius", "point", "normal", "size", "rounding", "friction", "stiffness"}; return k; }
inline const Keys& sphere()           { static const Keys k{"type", "center", "radius", "friction", "stiffness"}; return k; }
inline const Keys& box()              { static const Keys k{"type", "center", "size", "rounding", "friction", "stiffness"}; return k; }
inline const Keys& plane()            { static const Keys k{"type", "point", "normal", "friction", "stiffness"}; return k; }
inline const Keys& collision()        { static const Keys k{"enabled", "thickness", "friction", "stiffness", "create_contacts", "parallel_angle", "onset"}; return k; }
inline const Keys& output()           { static const Keys k{"csv", "csv_every", "frames", "every", "formats", "vtp_encoding"}; return k; }
// clang-format on

}  // namespace scene_keys

/// One object of the scene format and the keys it accepts.
struct SceneObjectKeys {
    std::string object;  ///< where it sits, e.g. "solver.eil" or "colliders[] (box)"
    const std::vector<std::string>* keys;
};

/// Every object of the scene format with the keys it accepts (for checks
/// and tools; the parsers read the same lists).
inline const std::vector<SceneObjectKeys>& scene_schema()
{
    using namespace scene_keys;
    static const std::vector<SceneObjectKeys> schema{
        {"scene", &scene()},
        {"solver", &solver()},
        {"solver.eil", &eil()},
        {"cloth[] (woven)", &woven()},
        {"cloth[].stiffness", &stiffness()},
        {"cloth[].damping (woven)", &yarn_damping()},
        {"cloth[].damping (woven, \"strain-rate\")", &yarn_strain_rate()},
        {"cloth[].damping (\"rayleigh\", \"rayleigh-analogy\")", &rayleigh()},
        {"cloth[].damping (\"none\")", &no_damping()},
        {"cloth[].friction", &friction()},
        {"cloth[].contact", &contact()},
        {"cloth[].moving_pins[]", &moving_pins()},
        {"cloth[].initial_velocity", &initial_velocity()},
        {"cloth[] (triangle)", &triangle()},
        {"cloth[].bending (triangle)", &triangle_bending()},
        {"cloth[].material (triangle)", &material()},
        {"cloth[].material (\"stvk\")", &material_stvk()},
        {"cloth[].material (\"stvk\", young and poisson)", &material_young()},
        {"cloth[].material (\"tabulated\")", &material_tabulated()},
        {"cloth[].damping (triangle)", &triangle_damping()},
        {"cloth[].damping (triangle, \"strain-rate\")", &triangle_strain_rate()},
        {"cloth[] (sliding-rods)", &sliding_rods()},
        {"colliders[]", &collider()},
        {"colliders[] (sphere)", &sphere()},
        {"colliders[] (box)", &box()},
        {"colliders[] (plane)", &plane()},
        {"collision", &collision()},
        {"output", &output()},
    };
    return schema;
}

}  // namespace weft
