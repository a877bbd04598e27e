#pragma once
/// @file scene.hpp
/// The scene description read by the scene runner `weft-run`, and its strict
/// JSON parser. Host-only.
///
/// The parser is split by section: the strict JSON reader (json_reader.hpp),
/// the parsed structs (scene_description.hpp), the keys of every object
/// (scene_schema.hpp, checked against docs/ by a test) and one parser per
/// section (scene_solver.hpp, scene_cloth.hpp, scene_collider.hpp,
/// scene_output.hpp); this file parses the top level.
///
/// Strict means: every key is known, every value has the expected type and
/// range, and every error names the full key path and the offending value,
/// e.g. `cloth[0].stiffnes: unknown key (did you mean "stiffness"?)` or
/// `cloth[0].spacing: must be > 0, got -0.001`. Nothing is silently ignored
/// or clamped, and no NaN or infinity can get through (DESIGN.md,
/// "Non-negotiables"). Errors are weft::InvalidInput.
///
/// ## Keys (SI units). `*` = required; everything else has the default shown.
///
/// ```
/// name              string   ""            free text (JSON has no comments)
/// description       string   ""            free text
/// time_step*        number   > 0, ≤ duration (s)
/// duration*         number   > 0 (s)
/// gravity           [3]      [0, 0, -9.81] (m/s²)
/// solver            object   all defaults
///   newton_iterations   int    12     ≥ 1; > 1 = full Newton to newton_tolerance
///                                     (docs/scenes.md "Full Newton"); 1 = one
///                                     linearized step per time step (one-step)
///   newton_tolerance    number 1e-4   > 0; Newton stops once the residual
///                                     force norm has dropped by this factor
///   pcg_tolerance       number 1e-5   0 < tol < 1, relative PCG residual
///   pcg_max_iterations  int    2000   ≥ 1
///   adaptive_time_step  bool   true   redo a failed step as two of dt/2 (recursively)
///   min_time_step       number time_step / 1024 (10 halvings); 0 < min ≤ time_step
///   preconditioner      string "block-jacobi" | "yarn-lines" (banded solves along
///                              every warp and weft yarn, added) | "multilevel"
///                              (smoothed-aggregation AMG V-cycle, yarns and triangles)
///   multilevel_smoother string "auto" | "chebyshev" | "yarn-lines"; the multilevel
///                              V-cycle's finest smoother: Chebyshev on block
///                              Jacobi, or block Gauss-Seidel by yarns (yarns
///                              only); "auto" (default): "yarn-lines" for yarns
///                              on CPU threads, else "chebyshev"
///   multilevel_coarse_space string "auto" | "nodes" | "yarns" | "squares"; the
///                              multilevel V-cycle's coarse levels: node
///                              aggregates, runs along the yarns and squares of
///                              crossings, or squares of crossings with the
///                              rigid-body, arc-length and shear modes, smoothed
///                              by lines of squares (the last two yarns only);
///                              "auto" (default): "squares" for yarns on CPU
///                              threads, else "nodes"
///   multilevel_square_side int 3  >= 3; crossings a side of the first coarse
///                              level's squares ("squares" only)
///   multilevel_square_join int 2  >= 2; squares a side joined into each
///                              aggregate below the first coarse level
///                              ("squares" only)
///   multilevel_cycle    string "v" | "w"; the multilevel cycle: each coarse
///                              level visited once or twice per visit of the
///                              level above
///   multilevel_refresh_tolerance number 0.01; a refresh of the square levels
///                              recomputes the rows in which an entry moved by
///                              more than this times its diagonal's scale
///                              (0: every row that changed; negative: every row)
///   multilevel_line_factor_tolerance number 0.001; a prepare factors again
///                              the finest yarn lines with a row in which an
///                              entry moved by more than this times its
///                              diagonal's scale since the row was last taken
///                              (0 or negative: every line)
///   multilevel_exact_ritz_bound number 2; a solve whose largest Ritz value
///                              exceeds it makes the next prepare refresh every
///                              coarse row and factor every finest line; a
///                              Lanczos diagonal entry above it stops the
///                              solve and retakes it so at once
///                              (0 or negative: never)
///   multilevel_renew_modes bool true; the hierarchy's age first renews the
///                              squares' modes and prolongators on the kept
///                              patterns instead of a build ("squares" only)
///   matrix_precision    string "double" | "single"; "single": PCG's products use
///                              a float copy of the matrix (half the bytes per
///                              iteration), vectors and sums stay double
///   line_search_cuts    int    8      0..30; newton_iterations > 1 only: how often
///                                     the line search may halve a Newton update
///                                     before the attempt fails (then dt is halved)
///   line_search_expansions int 4      0..30; newton_iterations > 1 only: how often
///                                     a full update may be doubled where the
///                                     incremental potential is concave along it
///                                     (e.g. a yarn buckling within the step)
///   exact_hessians      bool   true   newton_iterations > 1 only: solve each
///                                     iteration with the exact element Hessians
///                                     first, the PSD-projected ones where that
///                                     system is not positive definite
///   hessian_projection  string "absolute" | "clamp" | "adaptive";
///                                     newton_iterations > 1 only: a
///                                     projected yarn element stiffness sets
///                                     its negative eigenvalues to their
///                                     absolute values, to zero (clamp), or
///                                     to |λ| after a cut update (adaptive)
///   linear              string "pcg" | "cholmod": the linear solver of each
///                                     Newton iteration; "cholmod" (direct,
///                                     SuiteSparse, host) needs a build with
///                                     CHOLMOD, else the stepper refuses it
///   stiffness_approximation string "auto" | "gauss-newton" | "projected": the
///                                     yarn bending and shear Jacobians
///                                     (StiffnessApproximation); "auto": projected
///                                     with newton_iterations > 1, else Gauss–Newton
/// cloth*            array of cloth objects, at least one
/// colliders         array of collider objects, default []
/// collision         object   off: self- and cloth–cloth collision (docs/collision.md)
///   enabled           bool   true   (when the object is given)
///   thickness         number 2 × the triangle cloth's collision_offset, or the yarn
///                            diameter (m), > 0
///   friction          number 0      Coulomb μ between cloth surfaces, ≥ 0
///   stiffness         number 100 × mean node mass / time_step² (N/m), > 0
///   create_contacts   bool   false  yarn layers only: removed contacts are made again where
///                                    layers touch for 3 steps (needs EIL and layer_friction)
///   parallel_angle    number 0      yarns only: degrees (< 90); a segment pair within it of
///                                    parallel at a step's start takes its end points' penalties
///   onset             number 0      the penalty's onset width, a fraction of the thickness in
///                                    [0, 1): its stiffness rises from 0 at d = r over it
/// output            object   nothing is written by default
/// ```
///
/// A cloth object has a `type`*; only "woven" exists today (a "triangle" type
/// is planned: it will add its own keys, so an unknown type is an error that
/// names it). Woven cloth (a rectangular patch of yarn crossings, see
/// model/woven.hpp):
///
/// ```
/// type*             "woven"
/// pattern           "plain" | "twill"      "plain"
/// yarns*            [int, int] ≥ 2 each: crossings along the first and the
///                   second in-plane axis (node (i, j) has index j·yarns[0] + i)
/// spacing*          number > 0   rest distance between crossings (m)
/// radius*           number > 0   yarn radius (m)
/// density*          number > 0   yarn material density (kg/m³)
/// center            [3]          [0, 0, 0] (m), centre of the patch
/// plane             "xy" | "xz"  "xy"; first axis is x, second y or z
/// stiffness*        {stretch*, bending*, shear*}, each ≥ 0: k_e per mode
///                   (2017 Table 1: stretch N, bending N m², shear N)
/// damping           {model*, ...}  default {"model": "none"}
///   "strain-rate"       stretch, bending, shear ≥ 0, default 0: k_d per mode (2017 Eq. 6)
///   "rayleigh"          beta* ≥ 0 (s): f = −β K v, the papers' baseline
///   "rayleigh-analogy"  beta* ≥ 0 (s): k_d = β k_e per mode (2018 Eq. 12); the
///                       parser fills stretch, bending, shear with β k_e
///   "none"              no other key
/// friction          object
///   coefficient       number ≥ 0   0.3 (Coulomb μ at crossings; 0 disables)
///   normal_force      number ≥ 0   0.01 × stiffness.stretch (N): the tension of
///                     a yarn at 1 % strain, a stand-in for the crossing
///                     pressure; calibrate with an incline test (2021 Fig. 4.3)
///   anchor_stiffness  number ≥ 0   stiffness.stretch / spacing (N/m): as stiff
///                     as one rest segment of yarn
/// contact           object (parallel-yarn contact: a penalty on Δs)
///   stiffness         number ≥ 0   1000 × stiffness.stretch / spacing (N/m),
///                     the 2021 thesis rule for soft constraints (Sec. 4.3)
///   min_distance      number ≥ 0, < spacing   2 × radius (m): crossings on one
///                     yarn cannot come closer than the crossing yarn's diameter
/// pins              array of node selectors, default []: fixed nodes
/// moving_pins       array of {nodes*: node selectors, velocity*: [3] (m/s)},
///                   default []: pins moved by a script at constant velocity
///                   (a node in both lists moves)
/// initial_velocity  {linear: [3] (m/s), angular: [3] (rad/s)}, default zeros;
///                   v(x) = linear + angular × (x − center): the patch spins
///                   about its centre
/// ```
///
/// A node selector is a node-set name — "top-edge", "bottom-edge" (the
/// extremes of the second axis), "left-edge", "right-edge" (of the first
/// axis), "corners" — or a node index local to this patch,
/// 0 ≤ index < yarns[0]·yarns[1]; names and indices may be mixed.
///
/// A collider object:
///
/// ```
/// type*        "sphere" | "plane" | "box"
/// center*, radius* (> 0)       sphere (m)
/// point*, normal* (non-zero)   plane; the normal is stored normalized and
///                              points to the free side
/// center*, size* ([3], > 0)    axis-aligned box (m), e.g. a table
/// friction     number ≥ 0      0 (Coulomb μ against the collider)
/// stiffness    number > 0      1000 × max over cloth of stiffness.stretch / spacing (N/m)
/// ```
///
/// Output (paths are used as written: relative paths are relative to the
/// working directory of the runner, not to the scene file):
///
/// ```
/// csv        string, non-empty       "" (none): energies, one row per csv_every steps
/// csv_every  int ≥ 1                 1
/// frames     string, non-empty       "" (none): directory for yarn-curve frames
/// every      int ≥ 1                 1: a frame every this many steps (needs frames)
/// formats    array of "vtk" | "vtp" | "obj" | "bcc", non-empty, no repeats
///            ["vtk", "vtp", "obj"] (needs frames): legacy VTK per yarn set and
///            frame; "vtp" adds the VTK XML files and their .pvd time series
///            (ParaView's .pvd collections can only list XML files).
/// ```

#include <algorithm>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include <weft/core/error.hpp>
#include <weft/io/json_reader.hpp>
#include <weft/io/scene_cloth.hpp>
#include <weft/io/scene_collider.hpp>
#include <weft/io/scene_description.hpp>
#include <weft/io/scene_output.hpp>
#include <weft/io/scene_schema.hpp>
#include <weft/io/scene_solver.hpp>

namespace weft {

/// Parses and validates a scene (see the file comment for keys and defaults).
/// @throws InvalidInput naming the key path and the offending value.
inline SceneDescription parse_scene(const nlohmann::json& scene)
{
    using namespace scene_detail;
    const Object o(scene, "");
    o.allow_only(scene_keys::scene());
    SceneDescription s;
    s.name = o.get_or("name", read_string, std::string());
    s.description = o.get_or("description", read_string, std::string());
    s.time_step = o.get("time_step", read_positive);
    s.duration = o.get("duration", read_positive);
    if (s.time_step > s.duration)
        fail("time_step", "must be <= duration = " + format_number(s.duration) + ", got " + format_number(s.time_step));
    s.gravity = o.get_or("gravity", read_vector3, s.gravity);
    s.solver = o.has("solver") ? parse_solver(o.required("solver"), "solver", s.time_step)
                               : parse_solver(json::object(), "solver", s.time_step);

    const json& cloth = o.required("cloth");
    if (!cloth.is_array()) fail("cloth", "expected an array of cloth objects, got " + describe_value(cloth));
    if (cloth.empty()) fail("cloth", "must list at least one cloth, got []");
    double stiffest_segment = 0;
    for (std::size_t k = 0; k < cloth.size(); ++k) {
        s.cloth.push_back(parse_cloth(cloth[k], element_path("cloth", k)));
        const int below = s.cloth.back().on_top_of;
        if (below >= 0 && (below >= static_cast<int>(k) || s.cloth[static_cast<std::size_t>(below)].type != "woven"))
            fail(element_path("cloth", k) + ".on_top_of",
                 "must name an earlier woven cloth entry (" +
                     (k == 0 ? std::string("none precedes cloth[0]") : "0.." + std::to_string(k - 1)) + "), got " +
                     std::to_string(below));
        const ClothDescription& c = s.cloth.back();
        if (c.type == "woven" || c.type == "sliding-rods") {
            stiffest_segment = std::max(stiffest_segment, c.stiffness.stretch / c.spacing);
        } else if (c.triangle.material_model == "stvk") {
            // (λ + 2μ) h: the membrane's stiffness per unit length, N/m
            stiffest_segment =
                std::max(stiffest_segment, (c.triangle.lambda + 2 * c.triangle.mu) * c.triangle.thickness);
        }
    }

    // Yarns slide at every crossing: EIL nodes (thesis Sec. 4.3) keep them
    // robust, for every yarn scene unless the scene says otherwise. A step
    // with no node near its neighbour costs the same with EIL on (no EIL node,
    // same system; measured in benchmarks/RESULTS.md).
    if (!s.solver.eil_given) s.solver.eil = s.cloth.front().type == "woven" || s.cloth.front().type == "sliding-rods";
    if (o.has("colliders")) {
        const json& colliders = o.required("colliders");
        if (!colliders.is_array())
            fail("colliders", "expected an array of collider objects, got " + describe_value(colliders));
        for (std::size_t k = 0; k < colliders.size(); ++k)
            s.colliders.push_back(parse_collider(colliders[k], element_path("colliders", k), 1000 * stiffest_segment));
    }
    if (o.has("collision")) {
        // Default contact distance: twice the distance a cloth surface keeps
        // from colliders, or a yarn's diameter.
        double thickness = 0;
        for (const ClothDescription& c : s.cloth)
            thickness = std::max(thickness, c.type == "triangle" ? 2 * c.triangle.collision_offset : 2 * c.radius);
        s.collision = parse_collision(o.required("collision"), "collision", thickness);
    }
    if (o.has("output")) s.output = parse_output(o.required("output"), "output");
    return s;
}

/// Parses JSON text (rejecting duplicate keys, which JSON libraries keep
/// silently) and validates it as a scene. `source` names the text in errors,
/// which read "<source>: <key path>: <problem>" or "<source>: JSON syntax
/// error at byte N: ...".
inline SceneDescription parse_scene_text(const std::string& text, const std::string& source = "<scene text>")
{
    const json_reader::json scene = json_reader::parse_json_text(text, source);
    return json_reader::validate_from(source, [&] { return parse_scene(scene); });
}

/// Reads and validates a scene file. Every error names the file.
inline SceneDescription load_scene(const std::filesystem::path& path)
{
    const std::string name = path.string();
    const json_reader::json scene = json_reader::read_json_file(path, "scene");
    SceneDescription s = json_reader::validate_from(name, [&] { return parse_scene(scene); });
    s.source = name;
    return s;
}

}  // namespace weft
