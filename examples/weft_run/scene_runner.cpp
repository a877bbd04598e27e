// run_scene (scene_runner.hpp): loads a scene, builds the yarn or triangle
// model, steps it with the Thrust backend and writes the CSV, frames and
// progress line. One translation unit for weft-run and its tests (CPU
// threads); scene_runner.cu compiles it for weft-run-cuda.
#include "scene_runner.hpp"

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

/// The yarn curves of one set (warp: u-yarns, weft: v-yarns) as polylines,
/// with the cloth entry of each.
struct YarnSets {
    CurveIndices warp;
    CurveIndices weft;
    std::vector<int> warp_cloth;
    std::vector<int> weft_cloth;
};

/// Which cloth entry each node's patch came from: node n of the patches
/// lies in cloth k where first_node[k] ≤ n < first_node[k + 1]; the
/// contact nodes between layers follow the patches (−1).
struct ClothRanges {
    std::vector<int> first_node;  ///< per cloth entry (empty: one cloth, every node)
    int end = 0;                  ///< one past the last patch node

    int cloth_of(int node) const
    {
        if (first_node.empty()) return 0;
        if (node >= end) return -1;
        return static_cast<int>(std::upper_bound(first_node.begin(), first_node.end(), node) - first_node.begin()) - 1;
    }
    /// A yarn's cloth: that of its first node that is not a contact node.
    int yarn_cloth(const std::vector<int>& yarn) const
    {
        for (const int n : yarn)
            if (cloth_of(n) >= 0) return cloth_of(n);
        return 0;
    }
};

inline YarnSets yarn_sets(const YarnModel<double>& model, const ClothRanges& ranges)
{
    YarnSets s;
    for (std::size_t k = 0; k < model.yarns.size(); ++k) {
        const bool warp = model.yarn_coordinate[k] == 3;
        (warp ? s.warp : s.weft).emplace_back(model.yarns[k].begin(), model.yarns[k].end());
        (warp ? s.warp_cloth : s.weft_cloth).push_back(ranges.yarn_cloth(model.yarns[k]));
    }
    return s;
}

inline VtpEncoding vtp_encoding_of(const OutputDescription& output)
{
    return output.vtp_encoding == "ascii" ? VtpEncoding::ascii : VtpEncoding::binary;
}

/// Writes frames in the scene's formats: per yarn set a legacy VTK file, a
/// VTK XML file listed in a .pvd series, an OBJ file; one BCC file of all
/// yarns. Point scalars (docs/scenes.md, "Frame files"): `arc_length`, the
/// `cloth` entry of the set's yarn through the point, and its `node_kind`.
class FrameOutput {
public:
    FrameOutput(std::filesystem::path dir, const OutputDescription& output, const YarnScene<double>& scene)
        : m_dir(std::move(dir)), m_formats(output.formats), m_encoding(vtp_encoding_of(output))
    {
        m_ranges.first_node = scene.first_node;
        m_ranges.end = scene.model.node_count();
        if (!scene.first_node.empty())
            m_ranges.end = scene.first_node.back() + scene.patches.back().nx * scene.patches.back().ny;
        m_sets = yarn_sets(scene.model, m_ranges);
        m_contact = scene.model.external_contact;
        std::filesystem::create_directories(m_dir);
        if (has("vtp")) {
            m_pvd.emplace("warp", std::make_unique<PvdWriter>(m_dir / "warp.pvd"));
            m_pvd.emplace("weft", std::make_unique<PvdWriter>(m_dir / "weft.pvd"));
        }
    }

    /// The yarn lists to draw from now on (a stepper that removed contacts
    /// runs on a new topology; the removed nodes are on no yarn).
    void set_yarns(const YarnModel<double>& model) { m_sets = yarn_sets(model, m_ranges); }

    void write(int frame, double time, const YarnStepper<double>& stepper)
    {
        const std::vector<double> q = to_host(stepper.positions());
        const std::size_t nodes = q.size() / yarn_node_dofs;
        CurvePoints points(nodes);
        std::vector<double> u(nodes), v(nodes);
        for (std::size_t n = 0; n < nodes; ++n) {
            for (int k = 0; k < 3; ++k) points[n][k] = q[yarn_node_dofs * n + k];
            u[n] = q[yarn_node_dofs * n + 3];
            v[n] = q[yarn_node_dofs * n + 4];
        }
        const std::vector<unsigned char>& node_eil = stepper.eil_assignment().node_eil;
        char stem[32];
        std::snprintf(stem, sizeof stem, "frame_%05d", frame);
        for (const char* set : {"warp", "weft"}) {
            const bool warp = std::string(set) == "warp";
            const CurveIndices& lines = warp ? m_sets.warp : m_sets.weft;
            if (lines.empty()) continue;
            // Points off this set's yarns keep cloth −1 and kind 0.
            std::vector<double> cloth(nodes, -1.0), kind(nodes, 0.0);
            const std::vector<int>& line_cloth = warp ? m_sets.warp_cloth : m_sets.weft_cloth;
            for (std::size_t y = 0; y < lines.size(); ++y)
                for (const Index n : lines[y]) {
                    const std::size_t i = std::size_t(n);
                    cloth[i] = line_cloth[y];
                    const bool eil = 2 * i + 1 < node_eil.size() && node_eil[2 * i + (warp ? 0 : 1)] != 0;
                    const bool contact = i < m_contact.size() && m_contact[i] != 0;
                    kind[i] = (eil ? 1.0 : 0.0) + (contact ? 2.0 : 0.0);
                }
            const std::vector<PointScalars> scalars{
                {"arc_length", warp ? u : v}, {"cloth", cloth}, {"node_kind", kind}};
            const std::string base = std::string(stem) + "_" + set;
            if (has("vtk")) write_vtk_polylines(m_dir / (base + ".vtk"), points, lines, scalars);
            if (has("vtp")) {
                write_vtp_polylines(m_dir / (base + ".vtp"), points, lines, scalars, m_encoding);
                m_pvd.at(set)->add_frame(time, base + ".vtp");
            }
            if (has("obj")) write_obj_polylines(m_dir / (base + ".obj"), points, lines);
        }
        if (has("bcc")) {
            CurveIndices all = m_sets.warp;
            all.insert(all.end(), m_sets.weft.begin(), m_sets.weft.end());
            write_bcc(m_dir / (std::string(stem) + ".bcc"), points, all);
        }
    }

private:
    bool has(const std::string& f) const
    {
        for (const std::string& g : m_formats)
            if (g == f) return true;
        return false;
    }

    std::filesystem::path m_dir;
    std::vector<std::string> m_formats;
    VtpEncoding m_encoding;
    ClothRanges m_ranges;
    YarnSets m_sets;
    std::vector<unsigned char> m_contact;
    std::map<std::string, std::unique_ptr<PvdWriter>> m_pvd;
};

/// Frames of a triangle scene: frame_NNNNN_cloth.{vtk,vtp,obj} and cloth.pvd.
class TriangleFrameOutput {
public:
    TriangleFrameOutput(std::filesystem::path dir, const OutputDescription& output, const TriangleMesh& mesh)
        : m_dir(std::move(dir)), m_formats(output.formats), m_encoding(vtp_encoding_of(output))
    {
        for (const std::string& f : m_formats)
            if (f == "bcc")
                throw InvalidInput("output.formats: \"bcc\" stores yarn curves; a triangle scene cannot write it");
        for (const auto& t : mesh.triangles) m_faces.push_back({t[0], t[1], t[2]});
        std::filesystem::create_directories(m_dir);
        if (has("vtp")) m_pvd = std::make_unique<PvdWriter>(m_dir / "cloth.pvd");
    }

    void write(int frame, double time, const TriangleStepper<double>& stepper)
    {
        const std::vector<double> q = to_host(stepper.positions());
        CurvePoints points(q.size() / 3);
        for (std::size_t n = 0; n < points.size(); ++n)
            for (int k = 0; k < 3; ++k) points[n][k] = q[3 * n + k];
        char stem[40];
        std::snprintf(stem, sizeof stem, "frame_%05d_cloth", frame);
        const std::string base(stem);
        if (has("vtk")) write_vtk_triangles(m_dir / (base + ".vtk"), points, m_faces);
        if (has("vtp")) {
            write_vtp_triangles(m_dir / (base + ".vtp"), points, m_faces, {}, m_encoding);
            m_pvd->add_frame(time, base + ".vtp");
        }
        if (has("obj")) write_obj_triangles(m_dir / (base + ".obj"), points, m_faces);
    }

private:
    bool has(const std::string& f) const { return std::find(m_formats.begin(), m_formats.end(), f) != m_formats.end(); }

    std::filesystem::path m_dir;
    std::vector<std::string> m_formats;
    VtpEncoding m_encoding;
    CurveIndices m_faces;
    std::unique_ptr<PvdWriter> m_pvd;
};

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
