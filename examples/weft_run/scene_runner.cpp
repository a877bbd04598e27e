// run_scene (scene_runner.hpp): loads a scene, builds the yarn or triangle
// model, steps it with the Thrust backend and writes the CSV, frames and
// progress line. One translation unit for weft-run and its tests (CPU
// threads); scene_runner.cu compiles it for weft-run-cuda.
#include "scene_runner.hpp"
#include "frame_output.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <type_traits>
#include <vector>

#include <weft/backend/scene_options.hpp>
#include <weft/backend/state_archive.hpp>
#include <weft/backend/triangle_stepper.hpp>
#include <weft/backend/yarn_stepper.hpp>
#include <weft/io/checkpoint.hpp>
#include <weft/io/frame_writers.hpp>
#include <weft/io/json_reader.hpp>
#include <weft/io/progress.hpp>
#include <weft/io/scene.hpp>
#include <weft/io/scene_model.hpp>
#include <weft/io/scene_schema.hpp>
#include <weft/io/triangle_scene.hpp>

namespace weft::examples {

namespace runner_detail {

/// A failed attempt's reason without its figures: the message up to its
/// first " (", digits taken out. Two attempts that failed for one reason
/// with other figures ("Newton did not converge in 8 iterations (…)")
/// have one kind.
inline std::string failure_kind(const std::string& message)
{
    std::string kind;
    for (const char c : message.substr(0, message.find(" (")))
        if (!std::isdigit(static_cast<unsigned char>(c))) kind += c;
    return kind;
}

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
inline int created_of(const YarnStepReport& r)
{
    return r.created_contacts;
}
inline int created_of(const BackendStepReport&)
{
    return 0;
}

/// Collision (triangle cloth or yarns with `collision` enabled): whether it
/// is on, the step's contact pairs, their smallest distance and the
/// primitives that interpenetrate now (intersecting triangles, yarn segment
/// pairs closer than one radius); nothing for other models.
template <class Stepper>
constexpr bool has_collision_v =
    std::is_same_v<Stepper, TriangleStepper<double>> || std::is_same_v<Stepper, YarnStepper<double>>;
template <class Stepper>
bool collision_of(const Stepper& s)
{
    if constexpr (has_collision_v<Stepper>)
        return s.collision().enabled;
    else
        return false;
}
template <class Stepper>
long contact_pairs_of(const Stepper& s)
{
    if constexpr (has_collision_v<Stepper>)
        return s.contact_pairs();
    else
        return 0;
}
template <class Stepper>
double min_contact_distance_of(const Stepper& s)
{
    if constexpr (has_collision_v<Stepper>)
        return s.min_contact_distance();
    else
        return std::numeric_limits<double>::infinity();
}
template <class Stepper>
double collision_seconds_of(const Stepper& s)
{
    if constexpr (has_collision_v<Stepper>)
        return s.collision_seconds();
    else
        return 0;
}
/// Yarn contacts made and taken off at once, their normal force pulling (create_contacts).
inline int declined_of(const YarnStepper<double>& s)
{
    return s.declined_contacts();
}
template <class Stepper>
int declined_of(const Stepper&)
{
    return 0;
}
template <class Stepper>
std::size_t intersections_of(const Stepper& s)
{
    if constexpr (std::is_same_v<Stepper, TriangleStepper<double>>)
        return s.intersecting_triangles().size();
    else if constexpr (std::is_same_v<Stepper, YarnStepper<double>>)
        return s.interpenetrating_pairs();
    else
        return 0;
}
/// What intersections_of counts, for messages.
template <class Stepper>
const char* intersection_kind()
{
    return std::is_same_v<Stepper, YarnStepper<double>> ? "yarn segment pair(s) closer than one radius"
                                                        : "triangle pair(s) intersect";
}

/// The stepper's current yarn lists for the frames, or null where the
/// stepper keeps none (EIL tracking off: topology() is then empty, and the
/// scene's yarns, which the frames were made with, never change).
inline const YarnModel<double>* tracked_topology(const YarnStepper<double>& stepper)
{
    return stepper.topology().yarns.empty() ? nullptr : &stepper.topology();
}

/// After a step that removed or made contacts, frames draw the stepper's new yarn lists.
inline void follow_topology(const std::unique_ptr<FrameOutput>& frames, const YarnStepper<double>& stepper,
                            const YarnStepReport& r)
{
    if (frames && r.detached_contacts + r.pulled_contacts + r.created_contacts > 0)
        if (const YarnModel<double>* topology = tracked_topology(stepper)) frames->set_yarns(*topology);
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

/// Set by SIGINT/SIGTERM while a run writes checkpoints: the loop writes one
/// after the step in progress and stops.
volatile std::sig_atomic_t interrupt_requested = 0;
extern "C" inline void request_interrupt(int)
{
    interrupt_requested = 1;
}

/// While a run writes checkpoints, SIGINT and SIGTERM call request_interrupt;
/// the handlers installed before are put back when the time loop ends,
/// whether it returns or throws (a checkpoint that cannot be written, a frame
/// file that cannot be opened), so that a program embedding run_scene keeps
/// its own handlers.
class InterruptHandlers {
public:
    explicit InterruptHandlers(bool install) : m_installed(install)
    {
        if (!install) return;
        interrupt_requested = 0;
        m_int = std::signal(SIGINT, request_interrupt);
        m_term = std::signal(SIGTERM, request_interrupt);
    }
    ~InterruptHandlers()
    {
        if (!m_installed) return;
        std::signal(SIGINT, m_int == SIG_ERR ? SIG_DFL : m_int);
        std::signal(SIGTERM, m_term == SIG_ERR ? SIG_DFL : m_term);
    }
    InterruptHandlers(const InterruptHandlers&) = delete;
    InterruptHandlers& operator=(const InterruptHandlers&) = delete;

private:
    using Handler = void (*)(int);
    bool m_installed;
    Handler m_int = SIG_DFL;
    Handler m_term = SIG_DFL;
};

/// What a checkpoint is checked against: the scene file's bytes and the
/// command-line options that change the physics.
inline std::uint64_t run_fingerprint(const RunArguments& args)
{
    std::uint64_t hash = file_fingerprint(args.scene);
    const std::string options = "damping=" + args.damping + ";beta=" + std::to_string(args.beta);
    return checkpoint_detail::fnv1a(reinterpret_cast<const unsigned char*>(options.data()), options.size(), hash);
}

/// run_fingerprint without the scene's solver keys that choose only how each
/// linear system is solved (scene_keys::solver_linear()): the scene parsed,
/// those keys dropped from its "solver" block, written back in one form
/// (sorted keys, no spaces), so a checkpoint can be resumed with another
/// linear solve (--other-linear-solver).
inline std::uint64_t equations_fingerprint(const RunArguments& args)
{
    json_reader::json scene = json_reader::read_json_file(args.scene, "scene");
    if (scene.is_object() && scene.contains("solver") && scene["solver"].is_object()) {
        for (const std::string& key : scene_keys::solver_linear()) scene["solver"].erase(key);
        if (scene["solver"].empty()) scene.erase("solver");  // a block of linear-solve keys only
    }
    const std::string text = scene.dump() + ";damping=" + args.damping + ";beta=" + std::to_string(args.beta);
    return checkpoint_detail::fnv1a(reinterpret_cast<const unsigned char*>(text.data()), text.size());
}

/// A CSV of rows that start with a step number, written as a run goes and
/// continued by --resume: there the rows of steps after the checkpoint's are
/// dropped first, so the file is that of an uninterrupted run (a file that
/// does not exist yet starts with the resumed run's rows). Numbers exact
/// (shortest round trip). `option` names the command-line option in errors.
class StepRowsFile {
public:
    StepRowsFile(const char* option, const char* header, const std::filesystem::path& path, long resumed_from)
        : m_where(std::string(option) + " \"" + path.string() + "\": ")
    {
        std::vector<std::string> kept;
        if (resumed_from > 0 && std::filesystem::exists(path)) {
            std::ifstream in(path);
            if (!in) throw InvalidInput(m_where + "cannot be read, so the run cannot continue its rows");
            std::string line;
            std::getline(in, line);
            if (line != header)
                throw InvalidInput(m_where + "its header \"" + line + "\" is not the expected \"" + header + "\"");
            for (long row = 1; std::getline(in, line); ++row) {
                const std::string step = line.substr(0, line.find(','));
                if (step.empty() || step.find_first_not_of("0123456789") != std::string::npos)
                    throw InvalidInput(m_where + "row " + std::to_string(row) + " does not start with a step number");
                if (std::stol(step) <= resumed_from) kept.push_back(line);
            }
        }
        m_out.open(path, std::ios::binary | std::ios::trunc);
        if (!m_out) throw InvalidInput(m_where + "cannot be opened for writing");
        m_out.precision(17);  // put_number's fallback without std::to_chars
        m_out << header << '\n';
        for (const std::string& line : kept) m_out << line << '\n';
        flush();
    }

protected:
    void flush()
    {
        m_out.flush();
        if (!m_out) throw std::runtime_error(m_where + "write failed (disk full?)");
    }
    std::ofstream m_out;

private:
    std::string m_where;
};

/// `--newton-trace FILE`: one CSV row per full-Newton attempt (see
/// NewtonAttempt), lists within a field separated by ';', the failure
/// message quoted.
class NewtonTraceWriter : StepRowsFile {
public:
    static constexpr const char* header =
        "step,time,attempt,h,halvings,converged,accepted,iterations,residuals,fractions,pcg,message";

    NewtonTraceWriter(const std::filesystem::path& path, long resumed_from)
        : StepRowsFile("--newton-trace", header, path, resumed_from)
    {
    }

    void write(long step, double time, const std::vector<NewtonAttempt>& attempts)
    {
        const auto list = [&](const std::vector<double>& xs) {
            for (std::size_t k = 0; k < xs.size(); ++k) {
                if (k) m_out << ';';
                io_detail::put_number(m_out, xs[k]);
            }
        };
        for (std::size_t a = 0; a < attempts.size(); ++a) {
            const NewtonAttempt& t = attempts[a];
            m_out << step << ',';
            io_detail::put_number(m_out, time);
            m_out << ',' << a << ',';
            io_detail::put_number(m_out, t.h);
            m_out << ',' << t.halvings << ',' << int(t.converged) << ',' << int(t.accepted) << ',' << t.iterations
                  << ',';
            list(t.residuals);
            m_out << ',';
            list(t.fractions);
            m_out << ',';
            for (std::size_t k = 0; k < t.pcg.size(); ++k) m_out << (k ? ";" : "") << t.pcg[k];
            m_out << ",\"";
            for (char c : t.message) m_out << (c == '"' ? "\"\"" : std::string(1, c));
            m_out << "\"\n";
        }
        flush();
    }
};

/// The mismatch columns of a Jacobian check's row, each after a comma: both
/// ε's mismatches, then per ε the worst node and component.
inline void put_mismatch(std::ostream& out, const double (&mismatch)[2], const long (&worst_node)[2],
                         const int (&worst_component)[2])
{
    for (double x : mismatch) {
        out << ',';
        io_detail::put_number(out, x);
    }
    for (int e = 0; e < 2; ++e) out << ',' << worst_node[e] << ',' << worst_component[e];
}

/// `--jacobian-check FILE`: one CSV row per full-Newton solve (see
/// JacobianCheck; `attempt` numbers the step's attempts as --newton-trace does).
class JacobianCheckWriter : StepRowsFile {
public:
    static constexpr const char* header =
        "step,time,attempt,iteration,exact_hessians,update_norm,mismatch_1e-2,mismatch_1e-4,worst_node_1e-2,"
        "worst_component_1e-2,worst_node_1e-4,worst_component_1e-4,residual_norm,top8_share,largest_node,"
        "largest_component";

    JacobianCheckWriter(const std::filesystem::path& path, long resumed_from)
        : StepRowsFile("--jacobian-check", header, path, resumed_from)
    {
    }

    void write(long step, double time, const std::vector<JacobianCheck>& checks)
    {
        for (const JacobianCheck& c : checks) {
            m_out << step << ',';
            io_detail::put_number(m_out, time);
            m_out << ',' << c.attempt << ',' << c.iteration << ',' << int(c.exact_hessians) << ',';
            io_detail::put_number(m_out, c.update_norm);
            put_mismatch(m_out, c.mismatch, c.worst_node, c.worst_component);
            m_out << ',';
            io_detail::put_number(m_out, c.residual_norm);
            m_out << ',';
            io_detail::put_number(m_out, c.top_share);
            m_out << ',' << c.largest_node << ',' << c.largest_component << '\n';
        }
        flush();
    }
};

/// `--jacobian-terms FILE`: one CSV row per full-Newton solve and kind of
/// element (JacobianCheck::terms).
class JacobianTermsWriter : StepRowsFile {
public:
    static constexpr const char* header =
        "step,time,attempt,iteration,exact_hessians,term,product,mismatch_1e-2,mismatch_1e-4,worst_node_1e-2,"
        "worst_component_1e-2,worst_node_1e-4,worst_component_1e-4,worst_element_1e-2,element_mismatch_1e-2,"
        "element_nodes_1e-2,worst_element_1e-4,element_mismatch_1e-4,element_nodes_1e-4";

    JacobianTermsWriter(const std::filesystem::path& path, long resumed_from)
        : StepRowsFile("--jacobian-terms", header, path, resumed_from)
    {
    }

    void write(long step, double time, const std::vector<JacobianCheck>& checks)
    {
        for (const JacobianCheck& c : checks)
            for (const JacobianCheck::Term& t : c.terms) {
                m_out << step << ',';
                io_detail::put_number(m_out, time);
                m_out << ',' << c.attempt << ',' << c.iteration << ',' << int(c.exact_hessians) << ',' << t.name << ',';
                io_detail::put_number(m_out, t.product);
                put_mismatch(m_out, t.mismatch, t.worst_node, t.worst_component);
                for (int e = 0; e < 2; ++e) {
                    m_out << ',' << t.worst_element[e] << ',';
                    io_detail::put_number(m_out, t.element_mismatch[e]);
                    m_out << ',';
                    for (std::size_t i = 0; i < t.element_nodes[e].size(); ++i)
                        m_out << (i ? ";" : "") << t.element_nodes[e][i];
                }
                m_out << '\n';
            }
        flush();
    }
};

/// The summary's counters, saved with a checkpoint (blocks "run.NAME",
/// through StateSaver and StateLoader) so that a resumed run's summary is
/// the uninterrupted run's. A counter added since checkpoints were first
/// written is `optional`: it stays 0 when an earlier build's checkpoint
/// lacks its block.
template <class Archive>
void summary_fields(Archive&& a, RunSummary& s)
{
    a("steps", s.steps);
    a("simulated_time", s.simulated_time);
    a("pcg_iterations", s.pcg_iterations);
    a("newton_iterations", s.newton_iterations);
    a("substeps", s.substeps);
    a("frames", s.frames);
    a("peak_eil_nodes", s.peak_eil_nodes);
    a("peak_speed", s.peak_speed);
    a("detached_contacts", s.detached_contacts);
    a("pulled_contacts", s.pulled_contacts);
    a.optional("created_contacts", s.created_contacts);  // added since checkpoints were first written
    a("retries", s.retries);
    a("halved_steps", s.halved_steps);
    a("line_search_cuts", s.line_search_cuts);
    a("line_search_expansions", s.line_search_expansions);
    a("projected_solves", s.projected_solves);
    a("multilevel_builds", s.multilevel_builds);
    a("feasibility_limits", s.feasibility_limits);
    a("min_contact_distance", s.min_contact_distance);
    a("peak_contact_pairs", s.peak_contact_pairs);
    a("intersecting_frames", s.intersecting_frames);
}

/// After a resume, frames draw the topology the stepper runs on.
inline void resume_topology(const std::unique_ptr<FrameOutput>& frames, const YarnStepper<double>& stepper)
{
    if (!frames) return;
    if (const YarnModel<double>* topology = tracked_topology(stepper)) frames->set_yarns(*topology);
}
template <class Frames, class Stepper>
void resume_topology(const Frames&, const Stepper&)
{
}

}  // namespace runner_detail

/// The time loop shared by both models: steps, CSV rows, frames, progress, summary.
template <class Stepper, class Frames>
RunSummary run_loop(const SceneDescription& scene, const RunArguments& args, Stepper& stepper,
                    std::unique_ptr<Frames>& frames, int nodes, std::ostream& log)
{
    using namespace runner_detail;
    RunSummary summary;
    summary.nodes = nodes;
    std::vector<double> frame_times;  // of the frames written so far (the .pvd series)
    std::uint64_t csv_rows = 0;
    long first_step = 1;
    const bool fingerprinted = !args.resume.empty() || args.checkpoint_every > 0;
    const std::uint64_t fingerprint = fingerprinted ? run_fingerprint(args) : 0;
    const std::uint64_t equations = fingerprinted ? equations_fingerprint(args) : 0;
    if (!args.resume.empty()) {
        const CheckpointReader in(args.resume);
        const std::uint64_t saved = in.get_value<std::uint64_t>("run.fingerprint");
        if (args.other_linear_solver) {
            if (!in.has("run.equations_fingerprint"))
                in.fail(
                    "has no block \"run.equations_fingerprint\" (written by an earlier build), so "
                    "--other-linear-solver cannot check it; resume it without that option");
            if (in.get_value<std::uint64_t>("run.equations_fingerprint") != equations)
                in.fail("was written for scene \"" + in.get_string("run.scene") +
                        "\" with its options, and this run's scene file or options differ (" + args.scene.string() +
                        ") in more than the solver keys of the linear solve (--other-linear-solver)");
            if (saved != fingerprint && !args.quiet)
                log << "weft-run: resumed with other linear-solve settings than the run that wrote \""
                    << args.resume.string() << "\" (--other-linear-solver)\n";
        } else if (saved != fingerprint) {
            in.fail("was written for scene \"" + in.get_string("run.scene") +
                    "\" with its options, and this run's scene file or options differ (" + args.scene.string() +
                    "): a checkpoint continues only the run it was written by (with --other-linear-solver, a run "
                    "whose scene differs only in the linear solve's solver keys)");
        }
        summary_fields(StateLoader<CheckpointReader>(in, "run."), summary);
        frame_times = in.get<double>("run.frame_times");
        csv_rows = in.get_value<std::uint64_t>("run.csv_rows");
        stepper.load_state(in);
        summary.resumed_from = summary.steps;
        first_step = summary.steps + 1;
    }
    const std::filesystem::path checkpoint_path =
        !args.checkpoint.empty() ? args.checkpoint : args.output_dir / (args.scene.stem().string() + ".checkpoint");
    const auto write_checkpoint = [&]() {
        CheckpointWriter out;
        out.put_value("run.fingerprint", fingerprint);
        out.put_value("run.equations_fingerprint", equations);
        out.put_string("run.scene", args.scene.string());
        summary_fields(StateSaver<CheckpointWriter>(out, "run."), summary);
        out.put("run.frame_times", frame_times);
        out.put_value("run.csv_rows", csv_rows);
        stepper.save_state(out);
        out.write(checkpoint_path);
    };
    std::optional<InterruptHandlers> handlers;
    handlers.emplace(args.checkpoint_every > 0);
    std::unique_ptr<CsvWriter> csv;
    if (!scene.output.csv.empty()) {
        std::vector<std::string> columns{
            "time",           "kinetic_energy",        "elastic_energy",    "pcg_iterations",
            "gravity_energy", "dissipation_potential", "newton_iterations", "substeps",
            "ms_per_step"};
        if (scene.solver.eil) columns.push_back("eil_nodes");  // EIL (yarn, node) pairs of the step
        columns.push_back("max_speed");                        // the step's largest |v| of a DoF (m/s)
        if (collision_of(stepper)) {
            columns.push_back("contact_pairs");         // collision: pairs within reach at the step's start
            columns.push_back("min_contact_distance");  // collision: their smallest distance at its end (m; -1: none)
        }
        if (collision_of(stepper) && scene.collision.create_contacts) {
            columns.push_back("created_contacts");  // contacts between layers made in the step
            columns.push_back("pulled_contacts");   // and removed in it, their normal force pulling
        }
        const std::filesystem::path path = resolve(args.output_dir, scene.output.csv);
        csv = args.resume.empty() ? std::make_unique<CsvWriter>(path, columns)
                                  : std::make_unique<CsvWriter>(path, columns, static_cast<std::size_t>(csv_rows));
    }
    std::unique_ptr<NewtonTraceWriter> trace;
    if (!args.newton_trace.empty()) {
        require_full_newton("--newton-trace", scene.solver.newton_iterations, "it traces full Newton");
        trace = std::make_unique<NewtonTraceWriter>(args.newton_trace, summary.resumed_from);
    }
    std::unique_ptr<JacobianCheckWriter> jacobian;
    if (!args.jacobian_check.empty()) {
        require_full_newton("--jacobian-check", scene.solver.newton_iterations, "it checks full Newton's matrix");
        jacobian = std::make_unique<JacobianCheckWriter>(args.jacobian_check, summary.resumed_from);
    }
    std::unique_ptr<JacobianTermsWriter> jacobian_terms;
    if (!args.jacobian_terms.empty()) {
        require_full_newton("--jacobian-terms", scene.solver.newton_iterations, "it checks full Newton's matrix");
        jacobian_terms = std::make_unique<JacobianTermsWriter>(args.jacobian_terms, summary.resumed_from);
    }
    if (jacobian || jacobian_terms) {
        auto options = stepper.options();
        options.jacobian_check = true;
        stepper.set_options(options);
    }
    const long steps = std::max(1L, std::lround(scene.duration / scene.time_step));
    ProgressOptions progress_options;
    progress_options.terminal = stderr_is_terminal();
    std::unique_ptr<ProgressReporter> progress;
    if (!args.quiet)
        progress = std::make_unique<ProgressReporter>(std::cerr, steps * scene.time_step, progress_options);

    const double start = steady_clock_seconds();
    const double collision_start = collision_seconds_of(stepper);
    if (!args.resume.empty()) {
        resume_topology(frames, stepper);
        if (frames)
            for (std::size_t f = 0; f < frame_times.size(); ++f) frames->register_frame(int(f), frame_times[f]);
    } else if (frames) {
        frames->write(summary.frames++, 0.0, stepper);
        frame_times.push_back(0.0);
    }
    // Collision's check at every frame: intersecting triangles, or yarn
    // segments closer than one radius, are reported.
    const auto check_frame = [&](double time) {
        if (!collision_of(stepper)) return;
        const std::size_t crossing = intersections_of(stepper);
        if (crossing == 0) return;
        summary.intersecting_frames += 1;
        std::ostringstream os;
        os << "frame at t = " << time << " s: " << crossing << " " << intersection_kind<Stepper>();
        if (progress)
            progress->message(os.str());
        else
            log << "weft-run: " << os.str() << "\n";
    };
    if (frames && args.resume.empty()) check_frame(0.0);
    for (long step = first_step; step <= steps; ++step) {
        const auto r = stepper.step(scene.time_step);
        const double time = step * scene.time_step;
        if (trace) trace->write(step, time, r.attempts);
        if (jacobian) jacobian->write(step, time, r.jacobian_checks);
        if (jacobian_terms) jacobian_terms->write(step, time, r.jacobian_checks);
        if (!r.ok) {
            summary.ok = false;
            std::ostringstream os;
            os << "step " << step << " (t = " << time << " s) failed: " << r.message;
            // The last attempt's reason; where the first attempt failed for
            // another, that one is why the step was retried or halved at all.
            if (!r.first_failure.empty() && failure_kind(r.first_failure) != failure_kind(r.message))
                os << "; its first attempt failed because: " << r.first_failure;
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
        summary.created_contacts += created_of(r);
        follow_topology(frames, stepper, r);
        summary.retries += r.retries;
        summary.halved_steps += r.halvings > 0 ? 1 : 0;
        summary.line_search_cuts += r.line_search_cuts;
        summary.line_search_expansions += r.line_search_expansions;
        summary.projected_solves += r.projected_solves;
        summary.multilevel_builds += r.multilevel_builds;
        summary.multilevel_refreshes += r.multilevel_refreshes;
        summary.multilevel_pattern_keeps += r.multilevel_pattern_keeps;
        summary.feasibility_limits += r.feasibility_limits;
        summary.rebrackets += r.rebrackets;
        summary.inexact_solves += r.inexact_solves;
        const double closest = min_contact_distance_of(stepper);
        summary.min_contact_distance = std::min(summary.min_contact_distance, closest);
        summary.peak_contact_pairs = std::max(summary.peak_contact_pairs, contact_pairs_of(stepper));
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
            if (collision_of(stepper)) {
                row.push_back(double(contact_pairs_of(stepper)));
                row.push_back(std::isfinite(closest) ? closest : -1.0);  // -1: no pair within reach
            }
            if (collision_of(stepper) && scene.collision.create_contacts) {
                row.push_back(double(created_of(r)));
                row.push_back(double(pulled_of(r)));
            }
            csv->write_row(row);
            csv_rows = csv->row_count();
        }
        if (frames && step % scene.output.every == 0) {
            frames->write(summary.frames++, time, stepper);
            frame_times.push_back(time);
            check_frame(time);
        }
        if (progress) progress->update(step, time, r.newton_iterations, r.pcg_iterations);
        if (args.checkpoint_every > 0 && (step % args.checkpoint_every == 0 || interrupt_requested)) {
            write_checkpoint();
            if (interrupt_requested) {
                summary.interrupted = true;
                if (progress)
                    progress->message("interrupted at step " + std::to_string(step) + ": checkpoint written to " +
                                      checkpoint_path.string());
                break;
            }
        }
    }
    handlers.reset();
    if (progress) progress->finish();
    summary.wall_seconds = steady_clock_seconds() - start;
    if (summary.interrupted)
        log << "weft-run: interrupted after step " << summary.steps << "; checkpoint written to "
            << checkpoint_path.string() << " (continue with --resume " << checkpoint_path.string() << ")\n";
    if (!args.quiet || !summary.ok) {
        if (!summary.ok) log << "weft-run: " << summary.error << "\n";
        log << "weft-run: " << summary.steps << " steps of " << scene.time_step << " s, " << summary.nodes << " nodes, "
            << summary.wall_seconds << " s wall ("
            << (summary.steps > summary.resumed_from
                    ? 1e3 * summary.wall_seconds / double(summary.steps - summary.resumed_from)
                    : 0.0)
            << " ms/step" << (summary.resumed_from > 0 ? " since the resume" : "") << "), "
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
        if (summary.multilevel_refreshes > 0)
            log << ", " << summary.multilevel_refreshes << " refreshes of their coarse values";
        if (summary.multilevel_pattern_keeps > 0)
            log << ", " << summary.multilevel_pattern_keeps << " new patterns taken without a build";
        if (summary.feasibility_limits > 0)
            log << ", " << summary.feasibility_limits << " Newton updates shortened by the feasibility bound";
        if (summary.inexact_solves > 0)
            log << ", " << summary.inexact_solves << " Newton updates from PCG solves stopped at their limit"
                << (summary.resumed_from > 0 ? " since the resume" : "");
        if (summary.rebrackets > 0)
            log << ", " << summary.rebrackets << " Newton iterates with EIL brackets moved"
                << (summary.resumed_from > 0 ? " since the resume" : "");
        if (collision_of(stepper))
            log << ", collision: at most " << summary.peak_contact_pairs << " contact pairs, closest "
                << summary.min_contact_distance << " m, " << summary.intersecting_frames << " frames with "
                << (std::is_same_v<Stepper, YarnStepper<double>> ? "interpenetrating yarns" : "intersecting triangles")
                << ", " << collision_seconds_of(stepper) - collision_start
                << " s finding pairs and checking intersections";
        if (scene.solver.eil)
            log << ", peak EIL nodes " << summary.peak_eil_nodes << ", " << summary.retries << " steps redone, "
                << summary.detached_contacts << " contacts detached, " << summary.pulled_contacts
                << " contacts removed (normal force pulled)";
        if (scene.collision.create_contacts)
            log << ", " << summary.created_contacts << " contacts made (" << declined_of(stepper)
                << " more taken off at once: they pulled)";
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
        if (scene.solver.multilevel_smoother == "yarn-lines")
            throw InvalidInput(
                "solver.multilevel_smoother: \"yarn-lines\" needs yarns; use \"chebyshev\" for "
                "triangle cloth");
        if (scene.solver.multilevel_coarse_space != "nodes" && scene.solver.multilevel_coarse_space != "auto")
            throw InvalidInput("solver.multilevel_coarse_space: \"" + scene.solver.multilevel_coarse_space +
                               "\" needs yarns; use \"nodes\" for triangle cloth");
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
