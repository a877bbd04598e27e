#pragma once
/// @file scene_runner.hpp
/// The scene runner behind `weft-run SCENE.json [--duration T]
/// [--output-dir DIR] [--quiet]`: loads a scene (io/scene.hpp), builds the
/// yarn or triangle model, steps it with the Thrust backend and writes the
/// CSV time series, frames and a progress line. The tests drive exactly what
/// the executable runs: run_scene, compiled in scene_runner.cpp.

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string>

#include <weft/core/error.hpp>
#include <weft/io/scene_schema.hpp>

#include "../cli_common.hpp"

namespace weft::examples {

struct RunArguments {
    std::filesystem::path scene;
    double duration = -1;                    ///< > 0 overrides the scene's duration
    std::filesystem::path output_dir = ".";  ///< relative output paths resolve against it
    bool quiet = false;                      ///< no progress line, no summary
    std::string damping;                     ///< non-empty: override every cloth's damping.model
    double beta = -1;                        ///< with --damping rayleigh: β
    long checkpoint_every = 0;               ///< > 0: write a checkpoint every so many steps and on SIGINT/SIGTERM
    std::filesystem::path checkpoint;        ///< the checkpoint file (default: OUTPUT_DIR/SCENE_STEM.checkpoint)
    std::filesystem::path resume;            ///< non-empty: continue the run saved in this checkpoint
    bool other_linear_solver = false;        ///< with resume: the scene's linear-solve keys may differ
    std::filesystem::path newton_trace;      ///< non-empty: write every full-Newton attempt to this CSV
    std::filesystem::path jacobian_check;    ///< non-empty: check full Newton's matrix at every solve, rows to this CSV
    std::filesystem::path jacobian_terms;    ///< non-empty: the same check per kind of element, rows to this CSV
    bool help = false;                       ///< --help: print run_usage() and exit
    bool version = false;                    ///< --version: print the version and exit
};

/// weft-run's command line (CLI11), bound to `a`.
inline void setup_run_app(CLI::App& app, RunArguments& a)
{
    setup_app(app);
    app.description(
        "Runs a yarn-level or triangle cloth scene (docs/scenes.md). Exit status: 0 done, 1 bad "
        "arguments or scene, 2 a step failed, 3 interrupted by SIGINT/SIGTERM after writing a checkpoint.");
    app.add_option("scene", a.scene, "the scene file (JSON)")->type_name("SCENE.json");
    app.add_option("--duration", a.duration, "simulated time (s); default: the scene's \"duration\"")
        ->check(positive_number())
        ->type_name("T")
        ->default_str("scene");
    app.add_option("--output-dir", a.output_dir, "where relative output paths of the scene resolve")->type_name("DIR");
    app.add_flag("--quiet", a.quiet, "no progress line and no summary");
    app.add_option("--damping", a.damping,
                   "override the damping model of every cloth (per-mode k_d stay as in the scene; none switches "
                   "damping off)")
        ->check(CLI::IsMember({"none", "strain-rate", "rayleigh"}))
        ->type_name("MODEL")
        ->default_str("scene");
    app.add_option("--beta", a.beta, "Rayleigh beta (s), with --damping rayleigh")
        ->check(positive_number())
        ->type_name("B")
        ->default_str("none");
    app.add_option("--checkpoint-every", a.checkpoint_every,
                   "write a checkpoint (the complete state) every N steps, and on SIGINT or SIGTERM before "
                   "stopping")
        ->check(CLI::PositiveNumber)
        ->type_name("N")
        ->default_str("none");
    app.add_option("--checkpoint", a.checkpoint, "the checkpoint file")
        ->type_name("FILE")
        ->default_str("OUTPUT_DIR/SCENE.checkpoint");
    app.add_option("--resume", a.resume,
                   "continue the run saved in FILE (same scene, same options): the CSV rows and frames that follow "
                   "are those of an uninterrupted run")
        ->type_name("FILE");
    std::string linear_keys;
    for (const std::string& key : scene_keys::solver_linear()) linear_keys += (linear_keys.empty() ? "" : ", ") + key;
    app.add_flag("--other-linear-solver", a.other_linear_solver,
                 "with --resume: accept a checkpoint of this scene written with other values of the solver keys "
                 "that choose only the linear solve (" +
                     linear_keys +
                     "), to compare linear solvers from one state; the run then differs from an uninterrupted one "
                     "by the other solves' rounding");
    app.add_option(
           "--newton-trace", a.newton_trace,
           "write every full-Newton attempt to FILE (CSV: step, time, attempt, h, halvings, converged, "
           "accepted, iterations, the relative residual after each iteration, the step fraction of each update, "
           "the PCG iterations of each solve); needs solver.newton_iterations > 1")
        ->type_name("FILE");
    app.add_option("--jacobian-check", a.jacobian_check,
                   "after every full-Newton solve, compare the matrix with central differences of the residual "
                   "along the update (eps 1e-2 and 1e-4) and write one CSV row per solve to FILE (a diagnostic: "
                   "four more evaluations per iteration, the run itself unchanged); needs "
                   "solver.newton_iterations > 1")
        ->type_name("FILE");
    app.add_option("--jacobian-terms", a.jacobian_terms,
                   "the same check per kind of element (yarns: segments, bends, shears, eil_springs, "
                   "eil_pair_springs, parallel_pairs, nodes, contacts; triangles: triangles, hinges, plates, nodes, "
                   "contacts; then rest), one CSV row per solve and kind to FILE, so the term that misstates the "
                   "matrix is named; needs solver.newton_iterations > 1")
        ->type_name("FILE");
}

inline std::string run_usage()
{
    RunArguments a;
    CLI::App app("weft-run", "weft-run");
    setup_run_app(app, a);
    return app.help();
}

/// @throws InvalidInput naming the option and the value
inline RunArguments parse_run_arguments(int argc, const char* const* argv)
{
    RunArguments a;
    CLI::App app("weft-run", "weft-run");
    setup_run_app(app, a);
    if (!parse_options(app, argc, argv, a)) return a;
    if (a.scene.empty()) throw InvalidInput("invalid command line: missing SCENE.json");
    if (a.damping == "rayleigh" && !(a.beta > 0)) throw InvalidInput("invalid --damping rayleigh: needs --beta B");
    if (a.beta > 0 && a.damping != "rayleigh") throw InvalidInput("invalid --beta: only used with --damping rayleigh");
    if (!a.checkpoint.empty() && a.checkpoint_every <= 0)
        throw InvalidInput("invalid --checkpoint: only used with --checkpoint-every N");
    if (a.other_linear_solver && a.resume.empty())
        throw InvalidInput("invalid --other-linear-solver: only used with --resume FILE");
    return a;
}

/// What a run did (also printed as the summary).
struct RunSummary {
    long steps = 0;
    double simulated_time = 0;
    double wall_seconds = 0;
    long pcg_iterations = 0;
    long newton_iterations = 0;
    long substeps = 0;
    int frames = 0;
    int nodes = 0;
    int peak_eil_nodes = 0;           ///< largest EIL count of a step (yarn scenes with solver.eil)
    double peak_speed = 0;            ///< largest max_speed of a step (m/s)
    int detached_contacts = 0;        ///< nodes taken off a yarn they left (yarn scenes with solver.eil)
    int pulled_contacts = 0;          ///< contacts between layers removed because their normal force pulled
    int created_contacts = 0;         ///< contacts between layers made where layers met (collision.create_contacts)
    long retries = 0;                 ///< steps redone at the same size (collapsed EoL segments)
    long halved_steps = 0;            ///< steps that needed at least one halving of dt
    long line_search_cuts = 0;        ///< halvings of Newton updates by the line search (newton_iterations > 1)
    long line_search_expansions = 0;  ///< doublings of Newton updates along negative curvature (newton_iterations > 1)
    long projected_solves = 0;        ///< Newton solves redone with projected Hessians (newton_iterations > 1)
    long multilevel_builds = 0;       ///< hierarchies built by the multilevel preconditioner
    long multilevel_refreshes = 0;    ///< refreshes of its coarse values, in this process (not checkpointed)
    long multilevel_pattern_keeps = 0;  ///< new patterns taken without a build, in this process (not checkpointed)
    long feasibility_limits = 0;  ///< Newton updates shortened by the model's feasibility bound (newton_iterations > 1)
    long inexact_solves = 0;      ///< full-Newton updates from PCG solves stopped at their limit (not in checkpoints)
    long rebrackets = 0;          ///< Newton iterates at which EIL brackets followed their nodes (not in checkpoints)
    /// collision: the smallest distance of a contact pair's primitives at the end of a step (m; +inf: none)
    double min_contact_distance = std::numeric_limits<double>::infinity();
    long peak_contact_pairs = 0;   ///< collision: the most contact pairs of a step
    long intersecting_frames = 0;  ///< collision: frames written with intersecting triangles or interpenetrating yarns
                                   ///< (reported, never hidden)
    bool ok = true;
    bool interrupted = false;  ///< stopped by SIGINT/SIGTERM after writing a checkpoint
    long resumed_from = 0;     ///< the step the run was resumed after (0: from the start)
    std::string error;
};

/// Runs a scene. Errors in the scene or the arguments throw InvalidInput; a
/// failed step is reported in the summary (ok = false, error names the step,
/// the time and the solver's message) and nothing is written after it.
/// Compiled once, in scene_runner.cpp (library weft_scene_runner, or with
/// weft-run-cuda's sources), for weft-run and its tests: it instantiates both
/// steppers.
RunSummary run_scene(const RunArguments& args, std::ostream& log);

}  // namespace weft::examples
