#pragma once
/// @file scene_options.hpp
/// The stepper settings of a scene's "solver" block (docs/scenes.md, "Scene
/// keys"): the one mapping from scene keys to StepperOptions and EilOptions,
/// used by `weft-run` and by any program that loads a scene and builds its
/// own stepper. The defaults are the scene parser's (SolverDescription), so
/// a stepper built from a scene file, with or without a "solver" block,
/// behaves as `weft-run` does:
///
///   const SceneDescription scene = load_scene("tablecloth.json");
///   YarnScene<double> built = build_yarn_scene<double>(scene);
///   YarnStepper<double> stepper(built.model, built.colliders, built.gravity,
///                               stepper_options<double>(scene), eil_options<double>(scene));

#include <weft/backend/eil_tracker.hpp>
#include <weft/backend/implicit_stepper.hpp>
#include <weft/backend/pcg.hpp>
#include <weft/core/solver_words.hpp>
#include <weft/io/scene.hpp>
#include <weft/io/scene_model.hpp>
#include <weft/io/triangle_scene.hpp>

namespace weft {

/// Newton, halving, line-search and PCG settings of `scene.solver`
/// (`max_halvings` from time_step, min_time_step and adaptive_time_step).
template <typename T>
StepperOptions<T> stepper_options(const SceneDescription& scene)
{
    const SolverDescription& s = scene.solver;
    StepperOptions<T> options;
    options.newton_iterations = s.newton_iterations;
    options.newton_tolerance = T(s.newton_tolerance);
    options.max_halvings = max_halvings(scene);
    options.max_speed = T(s.max_speed);
    options.line_search_cuts = s.line_search_cuts;
    options.line_search_expansions = s.line_search_expansions;
    options.exact_hessians = s.exact_hessians;
    options.hessian_projection = static_cast<HessianProjection>(
        solver_words::index_of(s.hessian_projection, solver_words::hessian_projection(), "Hessian projection"));
    options.linear = s.linear == "cholmod" ? LinearSolver::cholmod : LinearSolver::pcg;
    options.pcg.tolerance = T(s.pcg_tolerance);
    options.pcg.max_iterations = s.pcg_max_iterations;
    options.pcg.preconditioner = s.preconditioner == "yarn-lines"   ? PcgPreconditioner::yarn_lines
                                 : s.preconditioner == "multilevel" ? PcgPreconditioner::multilevel
                                                                    : PcgPreconditioner::block_jacobi;
    options.pcg.single_precision_matrix =
        solver_words::index_of(s.matrix_precision, solver_words::matrix_precision(), "matrix precision") == 1;
    options.multilevel.single_precision_matrix = options.pcg.single_precision_matrix;
    options.multilevel.refresh = multilevel_refresh_named(s.multilevel_refresh);
    options.multilevel.refresh_tolerance = s.multilevel_refresh_tolerance;
    options.multilevel.line_factor_tolerance = s.multilevel_line_factor_tolerance;
    options.multilevel.exact_ritz_bound = s.multilevel_exact_ritz_bound;
    options.multilevel.renew_modes = s.multilevel_renew_modes;
    // "auto" (the default) by the scene's cloth: yarns or triangles.
    const bool yarns = !is_triangle_scene(scene);
    options.multilevel.smoother = multilevel_smoother_named(s.multilevel_smoother, yarns);
    options.multilevel.coarse_space = multilevel_coarse_space_named(s.multilevel_coarse_space, yarns);
    options.multilevel.square_side = s.multilevel_square_side;
    options.multilevel.square_join = s.multilevel_square_join;
    options.multilevel.cycle = multilevel_cycle_named(s.multilevel_cycle);
    options.multilevel.timed_rebuild = multilevel_timed_rebuild_named(s.multilevel_rebuild);
    options.multilevel.keep_across_patterns = multilevel_keep_across_patterns_named(s.multilevel_pattern_change);
    return options;
}

/// EIL settings of `scene.solver` ("eil" block; off for triangle scenes,
/// which the parser refuses EIL for).
template <typename T>
EilOptions<T> eil_options(const SceneDescription& scene)
{
    const SolverDescription& s = scene.solver;
    EilOptions<T> eil;
    eil.enabled = s.eil;
    eil.safety_factor = T(s.eil_safety_factor);
    eil.contact_factor = T(s.eil_contact_factor);
    eil.lookahead = s.eil_lookahead;
    eil.min_segment_factor = T(s.eil_min_segment_factor);
    eil.reset_on_eol = s.eil_reset_arc_length;
    eil.remove_pulling_contacts = s.eil_remove_pulling_contacts;
    eil.pull_threshold = T(s.eil_pull_threshold);
    return eil;
}

}  // namespace weft
