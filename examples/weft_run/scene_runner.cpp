// run_scene (scene_runner.hpp): loads a scene, builds the yarn or triangle
// model, steps it with the Thrust backend and writes the CSV, frames and
// progress line. One translation unit for weft-run and its tests (CPU
// threads); scene_runner.cu compiles it for weft-run-cuda.
#include "scene_runner.hpp"
#include "frame_output.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include <weft/backend/scene_options.hpp>
#include <weft/backend/triangle_stepper.hpp>
#include <weft/backend/yarn_stepper.hpp>
#include <weft/io/frame_writers.hpp>
#include <weft/io/progress.hpp>
#include <weft/io/scene.hpp>
#include <weft/io/scene_model.hpp>
#include <weft/io/triangle_scene.hpp>

namespace weft::examples {

namespace runner_detail {

/// EIL count of a step report (yarn steppers); 0 for models without EIL.
inline int eil_nodes_of(const YarnStepReport& r)
{
    return r.eil_nodes;
}
inline int eil_nodes_of(const BackendStepReport&)
{
    return 0;
}
inline int detached_of(const YarnStepReport& r)
{
    return r.detached_contacts;
}
inline int detached_of(const BackendStepReport&)
{
    return 0;
}
inline int pulled_of(const YarnStepReport& r)
{
    return r.pulled_contacts;
}
inline int pulled_of(const BackendStepReport&)
{
    return 0;
}

/// After a step that removed contacts, frames draw the stepper's new yarn lists.
inline void follow_topology(const std::unique_ptr<FrameOutput>& frames, const YarnStepper<double>& stepper,
                            const YarnStepReport& r)
{
    if (frames && r.detached_contacts + r.pulled_contacts > 0) frames->set_yarns(stepper.topology());
}
template <class Frames, class Stepper, class Report>
void follow_topology(const Frames&, const Stepper&, const Report&)
{
}

inline std::filesystem::path resolve(const std::filesystem::path& dir, const std::string& path)
{
    const std::filesystem::path p(path);
    return p.is_absolute() ? p : dir / p;
}

}  // namespace runner_detail

/// The time loop shared by both models: steps, CSV rows, frames, progress, summary.
template <class Stepper, class Frames>
RunSummary run_loop(const SceneDescription& scene, const RunArguments& args, Stepper& stepper,
                    std::unique_ptr<Frames>& frames, int nodes, std::ostream& log)
{
    using namespace runner_detail;
    std::unique_ptr<CsvWriter> csv;
    if (!scene.output.csv.empty()) {
        std::vector<std::string> columns{
            "time",           "kinetic_energy",        "elastic_energy",    "pcg_iterations",
            "gravity_energy", "dissipation_potential", "newton_iterations", "substeps",
            "ms_per_step"};
        if (scene.solver.eil) columns.push_back("eil_nodes");  // EIL (yarn, node) pairs of the step
        columns.push_back("max_speed");                        // the step's largest |v| of a DoF (m/s)
        csv = std::make_unique<CsvWriter>(resolve(args.output_dir, scene.output.csv), columns);
    }
    RunSummary summary;
    summary.nodes = nodes;
    const long steps = std::max(1L, std::lround(scene.duration / scene.time_step));
    ProgressOptions progress_options;
    progress_options.terminal = stderr_is_terminal();
    std::unique_ptr<ProgressReporter> progress;
    if (!args.quiet)
        progress = std::make_unique<ProgressReporter>(std::cerr, steps * scene.time_step, progress_options);

    const double start = steady_clock_seconds();
    if (frames) frames->write(summary.frames++, 0.0, stepper);
    for (long step = 1; step <= steps; ++step) {
        const auto r = stepper.step(scene.time_step);
        const double time = step * scene.time_step;
        if (!r.ok) {
            summary.ok = false;
            std::ostringstream os;
            os << "step " << step << " (t = " << time << " s) failed: " << r.message;
            summary.error = os.str();
            break;
        }
        summary.steps = step;
        summary.simulated_time = time;
        summary.pcg_iterations += r.pcg_iterations;
        summary.newton_iterations += r.newton_iterations;
        summary.substeps += r.substeps;
        summary.peak_eil_nodes = std::max(summary.peak_eil_nodes, eil_nodes_of(r));
        summary.peak_speed = std::max(summary.peak_speed, r.max_speed);
        summary.detached_contacts += detached_of(r);
        summary.pulled_contacts += pulled_of(r);
        follow_topology(frames, stepper, r);
        summary.retries += r.retries;
        summary.halved_steps += r.halvings > 0 ? 1 : 0;
        summary.line_search_cuts += r.line_search_cuts;
        summary.line_search_expansions += r.line_search_expansions;
        summary.projected_solves += r.projected_solves;
        summary.multilevel_builds += r.multilevel_builds;
        summary.feasibility_limits += r.feasibility_limits;
        if (r.halvings > 0 && progress) {
            std::ostringstream os;
            os << "step " << step << ": time step halved " << r.halvings << " time(s) (" << r.substeps
               << " substeps): " << r.first_failure;
            progress->message(os.str());
        }
        if (csv && step % scene.output.csv_every == 0) {
            const ElementEnergies<double> e = stepper.energies();
            std::vector<double> row{time,
                                    e.kinetic,
                                    e.elastic,
                                    double(r.pcg_iterations),
                                    e.gravity,
                                    e.dissipation,
                                    double(r.newton_iterations),
                                    double(r.substeps),
                                    1e3 * r.total_seconds};
            if (scene.solver.eil) row.push_back(double(eil_nodes_of(r)));
            row.push_back(r.max_speed);
            csv->write_row(row);
        }
        if (frames && step % scene.output.every == 0) frames->write(summary.frames++, time, stepper);
        if (progress) progress->update(step, time, r.newton_iterations, r.pcg_iterations);
    }
    if (progress) progress->finish();
    summary.wall_seconds = steady_clock_seconds() - start;
    if (!args.quiet || !summary.ok) {
        if (!summary.ok) log << "weft-run: " << summary.error << "\n";
        log << "weft-run: " << summary.steps << " steps of " << scene.time_step << " s, " << summary.nodes << " nodes, "
            << summary.wall_seconds << " s wall ("
            << (summary.steps > 0 ? 1e3 * summary.wall_seconds / summary.steps : 0.0) << " ms/step), "
            << (summary.steps > 0 ? double(summary.pcg_iterations) / summary.steps : 0.0) << " PCG iterations/step, "
            << summary.frames << " frames, " << summary.halved_steps << " steps halved, "
            << (summary.steps > 0 ? double(summary.newton_iterations) / summary.steps : 0.0)
            << " Newton iterations/step, peak speed " << summary.peak_speed << " m/s";
        if (summary.line_search_cuts > 0) log << ", " << summary.line_search_cuts << " line-search cuts";
        if (summary.line_search_expansions > 0)
            log << ", " << summary.line_search_expansions << " line-search expansions";
        if (summary.projected_solves > 0)
            log << ", " << summary.projected_solves << " Newton solves redone with projected Hessians";
        if (summary.multilevel_builds > 0) log << ", " << summary.multilevel_builds << " multilevel hierarchies built";
        if (summary.feasibility_limits > 0)
            log << ", " << summary.feasibility_limits << " Newton updates shortened by the feasibility bound";
        if (scene.solver.eil)
            log << ", peak EIL nodes " << summary.peak_eil_nodes << ", " << summary.retries << " steps redone, "
                << summary.detached_contacts << " contacts detached, " << summary.pulled_contacts
                << " contacts removed (normal force pulled)";
        log << "\n";
    }
    return summary;
}

/// Runs a scene. Errors in the scene or the arguments throw InvalidInput; a
/// failed step is reported in the summary (ok = false, error names the step,
/// the time and the solver's message) and nothing is written after it.
RunSummary run_scene(const RunArguments& args, std::ostream& log)
{
    using namespace runner_detail;
    SceneDescription scene = load_scene(args.scene);
    if (args.duration > 0) scene.duration = args.duration;
    if (scene.time_step > scene.duration)
        throw InvalidInput("invalid --duration: " + std::to_string(scene.duration) +
                           " is shorter than time_step = " + std::to_string(scene.time_step));
    if (!args.damping.empty()) {
        for (ClothDescription& c : scene.cloth) {
            c.damping.model = args.damping;
            if (args.damping == "rayleigh") c.damping.beta = args.beta;
        }
    }
    const StepperOptions<double> options = stepper_options<double>(scene);
    if (is_triangle_scene(scene)) {
        if (scene.solver.preconditioner == "yarn-lines")
            throw InvalidInput(
                "solver.preconditioner: \"yarn-lines\" needs yarns; use \"block-jacobi\" for triangle cloth");
        if (scene.solver.eil) throw InvalidInput("solver.eil: EIL nodes apply to yarns, not to triangle cloth");
        if (scene.solver.stiffness_approximation != "auto")
            throw InvalidInput("solver.stiffness_approximation \"" + scene.solver.stiffness_approximation +
                               "\": applies to yarn bending and shear, not to triangle cloth");
        TriangleScene<double> built = build_triangle_scene<double>(scene);
        TriangleStepper<double> stepper(built.model, built.colliders, built.gravity, options);
        std::unique_ptr<TriangleFrameOutput> frames;
        if (!scene.output.frames.empty())
            frames = std::make_unique<TriangleFrameOutput>(resolve(args.output_dir, scene.output.frames), scene.output,
                                                           built.mesh);
        return run_loop(scene, args, stepper, frames, built.model.node_count(), log);
    }
    YarnScene<double> built = build_yarn_scene<double>(scene);
    YarnStepper<double> stepper(built.model, built.colliders, built.gravity, options, eil_options<double>(scene));
    std::unique_ptr<FrameOutput> frames;
    if (!scene.output.frames.empty())
        frames = std::make_unique<FrameOutput>(resolve(args.output_dir, scene.output.frames), scene.output, built);
    return run_loop(scene, args, stepper, frames, built.model.node_count(), log);
}

}  // namespace weft::examples
