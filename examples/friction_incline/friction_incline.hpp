#pragma once
// The friction-incline validation of thesis Fig. 4.3: a free woven patch
// resting on a fixed, larger woven patch, gravity tilted by the incline
// angle θ, Coulomb friction μ between the layers. With μF_n per contact set
// from the top patch's weight (F_n = m g cos θ / #contacts) the top patch
// sticks for tan θ < μ and slides with a = g (sin θ − μ cos θ) above.
//
// Model (model/layers.hpp): the top patch is stacked with no normal offset
// and shifted by half a spacing, one contact node where a top yarn crosses a
// bottom yarn of the other direction; the bottom patch is fixed (x and arc
// lengths). The friction anchors use AnchorFriction::slip_in_step (an
// explicitly dragged anchor would hold the light patch still); the top
// patch's own crossings keep the material's friction (μ 0.3, F_n 0.01 k_s),
// far stronger than gravity, so it slides as one piece. EIL nodes on
// (contacts slide past the crossings of both patches).
//
// Downhill is +x (the top warp direction). Contacts on a top warp stay at
// their bottom weft while the warp slides through them; when one is about
// to leave its top warp (within 0.2 spacing of its end) it is detached
// (`detach_contact_node`), the stepper is rebuilt and F_n is shared by the
// remaining contacts. The run ends early, reported, when a contact reaches
// the edge of the fixed patch (the top patch slid off it).
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/model/layers.hpp>
#include <weft/model/woven.hpp>

#include "../cli_common.hpp"

namespace weft::examples {

struct InclineOptions {
    double angle_degrees = 30;
    double friction = 1;        ///< μ between the layers
    double duration = 0.5;      ///< s
    std::string csv;            ///< empty: no CSV
    int top_nodes = 8;          ///< top patch: top_nodes × top_nodes
    int bottom_nodes = 12;      ///< bottom patch: bottom_nodes × bottom_nodes
    double time_step = 1e-3;    ///< s
    int newton_iterations = 1;  ///< 1: the one-step scheme; > 1: full Newton (to 1e-4)
    bool quiet = false;
    bool help = false;
    bool version = false;  ///< --version
};

struct InclineSample {
    double time;
    double slide_distance;  ///< mean displacement of the top patch's nodes along the slope (m)
    double kinetic_energy;  ///< J
};

struct InclineRun {
    std::vector<InclineSample> samples;
    bool ok = true;                 ///< every step succeeded
    std::string message;            ///< the failure, if any
    bool left_fixed_patch = false;  ///< stopped early: a contact reached the fixed patch's edge
    double end_time = 0;
    double slide_distance = 0;  ///< at the end
    int contacts = 0;           ///< created
    int detached = 0;           ///< contacts taken off their top yarn
    int max_eil_nodes = 0;
    /// The attached contacts' arc-length coordinates whose anchor spring is at
    /// the Coulomb limit at the end (slipping); the others stick.
    int anchors_at_limit = 0;
    double top_mass = 0;  ///< kg
    double seconds = 0;   ///< wall time of the stepping
    /// Slid: beyond what sticking allows (elastic deformation, the creep of
    /// the anchor springs), 0.1 mm, a tenth of the spacing.
    bool slid() const { return slide_distance > 1e-4; }
};

/// friction_incline's command line (CLI11), bound to `o`.
inline void setup_incline_app(CLI::App& app, InclineOptions& o)
{
    setup_app(app);
    app.description(
        "The friction-incline validation of thesis Fig. 4.3: a small woven patch on a fixed one, "
        "tilted; it sticks below atan(mu) and slides above. Exit status: 0 done, 1 bad arguments or "
        "output, 2 a step failed.");
    app.add_option("--angle", o.angle_degrees, "incline angle in degrees, 0 <= DEG < 90")->type_name("DEG");
    app.add_option("--friction", o.friction, "Coulomb coefficient between the layers, >= 0")->type_name("MU");
    app.add_option("--duration", o.duration, "simulated time (s), > 0")->type_name("T");
    app.add_option("--csv", o.csv, "write time,slide_distance,kinetic_energy per step")
        ->type_name("FILE")
        ->default_str("none");
    app.add_option("--size", o.top_nodes, "top patch N x N nodes, >= 2")->type_name("N");
    app.add_option("--bottom", o.bottom_nodes, "fixed patch N x N nodes, >= size + 2")->type_name("N");
    app.add_option("--dt", o.time_step, "time step (s), > 0")->type_name("H");
    app.add_option("--newton", o.newton_iterations,
                   "Newton iterations per step, >= 1 (1: the one-step scheme; > 1: full Newton to a relative "
                   "residual of 1e-4)")
        ->type_name("N");
    app.add_flag("--quiet", o.quiet, "no summary line");
}

inline std::string incline_usage()
{
    InclineOptions o;
    CLI::App app("friction_incline", "friction_incline");
    setup_incline_app(app, o);
    return app.help();
}

/// @throws InvalidInput naming the offending option
inline InclineOptions parse_incline_arguments(int argc, const char* const* argv)
{
    InclineOptions o;
    CLI::App app("friction_incline", "friction_incline");
    setup_incline_app(app, o);
    if (!parse_options(app, argc, argv, o)) return o;
    for (const auto& [name, value] : {std::pair<const char*, double>{"--angle", o.angle_degrees},
                                      {"--friction", o.friction},
                                      {"--duration", o.duration},
                                      {"--dt", o.time_step}})
        if (!std::isfinite(value)) throw InvalidInput(detail::describe(name, value, "must be a finite number"));
    if (!(o.angle_degrees >= 0 && o.angle_degrees < 90))
        throw InvalidInput(detail::describe("--angle", o.angle_degrees, "must be in [0, 90)"));
    if (!(o.friction >= 0)) throw InvalidInput(detail::describe("--friction", o.friction, "must be >= 0"));
    require_positive("--duration", o.duration);
    require_positive("--dt", o.time_step);
    if (o.newton_iterations < 1) throw InvalidInput(detail::describe("--newton", o.newton_iterations, "must be >= 1"));
    if (o.top_nodes < 2) throw InvalidInput(detail::describe("--size", o.top_nodes, "must be >= 2"));
    if (o.bottom_nodes < o.top_nodes + 2)
        throw InvalidInput(detail::describe("--bottom", o.bottom_nodes, "must be >= size + 2"));
    return o;
}

namespace incline_detail {

struct Scene {
    YarnModel<double> model;
    WovenPatch top, bottom;
    int top_first = 0;
    std::vector<LayerContact> contacts;  ///< still attached to their top yarn
    std::vector<double> x0;              ///< initial positions of the top patch's own nodes
};

inline Scene build_scene(const InclineOptions& o)
{
    Scene s;
    s.bottom.nx = s.bottom.ny = o.bottom_nodes;
    s.bottom.spacing = 1e-3;
    s.top = stacked_patch(s.bottom, o.top_nodes, o.top_nodes);
    YarnMaterial<double>& m = s.model.material;
    m.linear_density = s.bottom.density * Constants<double>::pi * s.bottom.radius * s.bottom.radius;
    m.stretch_stiffness = 500;
    m.bending_stiffness = 1e-5;
    m.shear_stiffness = 1e-4;
    m.damping = DampingModel::strain_rate;
    m.stretch_damping = 3e-6;
    m.bending_damping = 1e-12;
    m.shear_damping = 1e-8;
    m.friction_coefficient = 0.3;
    m.normal_force = 0.01 * m.stretch_stiffness;
    m.anchor_stiffness = m.stretch_stiffness / s.bottom.spacing;
    m.anchor_friction = AnchorFriction::slip_in_step;
    const int bottom_first = add_woven_patch(s.model, s.bottom);
    s.top_first = add_woven_patch(s.model, s.top);
    // The fixed patch: positions and arc lengths.
    for (int n = bottom_first; n < bottom_first + o.bottom_nodes * o.bottom_nodes; ++n)
        for (int k = 0; k < yarn_node_dofs; ++k) s.model.free_dof[yarn_node_dofs * static_cast<std::size_t>(n) + k] = 0;
    s.contacts = add_contact_layer<double>(s.model, s.top_first, s.top, bottom_first, s.bottom, 2 * s.bottom.radius);
    for (int n = s.top_first; n < s.top_first + o.top_nodes * o.top_nodes; ++n) s.x0.push_back(s.model.q[5 * n]);
    return s;
}

/// F_n of each attached contact from the top patch's weight.
inline void share_normal_force(Scene& s, double top_mass, double g, double theta, double mu)
{
    std::vector<int> nodes;
    for (const LayerContact& c : s.contacts) nodes.push_back(c.node);
    const double normal_force = top_mass * g * std::cos(theta) / static_cast<double>(nodes.size());
    set_friction_limit<double>(s.model, nodes, mu * normal_force);
}

/// Arc-length range [lo, hi] of a yarn (its end nodes).
inline void yarn_range(const YarnModel<double>& m, int y, double& lo, double& hi)
{
    const std::vector<int>& list = m.yarns[static_cast<std::size_t>(y)];
    const int c = m.yarn_coordinate[static_cast<std::size_t>(y)];
    lo = m.q[5 * static_cast<std::size_t>(list.front()) + c];
    hi = m.q[5 * static_cast<std::size_t>(list.back()) + c];
}

}  // namespace incline_detail

/// Runs the incline; never throws for a failed step (reported in the result).
/// Compiled once, in run_friction_incline.cpp (library weft_friction_incline),
/// for the example and its tests: it instantiates the whole yarn stepper.
/// @throws InvalidInput for bad options
InclineRun run_friction_incline(const InclineOptions& o);

/// Writes the CSV (header `time,slide_distance,kinetic_energy`).
/// @throws InvalidInput when the file cannot be written
inline void write_incline_csv(const InclineRun& run, const std::string& path)
{
    std::ofstream out(path);
    if (!out) throw InvalidInput("cannot open --csv file '" + path + "' for writing");
    out << "time,slide_distance,kinetic_energy\n" << std::setprecision(12);
    for (const InclineSample& s : run.samples)
        out << s.time << ',' << s.slide_distance << ',' << s.kinetic_energy << '\n';
    out.close();
    if (!out) throw InvalidInput("writing --csv file '" + path + "' failed");
}

/// The one-line summary.
inline std::string incline_summary(const InclineOptions& o, const InclineRun& run)
{
    std::ostringstream s;
    s << "friction_incline: angle " << o.angle_degrees << " deg, mu " << o.friction << " (atan(mu) "
      << std::atan(o.friction) * 180 / Constants<double>::pi << " deg): slide distance " << run.slide_distance * 1e3
      << " mm at t = " << run.end_time << " s: " << (run.slid() ? "slid" : "stuck");
    if (run.left_fixed_patch) s << " (off the fixed patch's edge, stopped)";
    if (!run.ok) s << "; step failed: " << run.message;
    s << "; " << run.contacts << " contacts, " << run.detached << " detached, max EIL nodes " << run.max_eil_nodes
      << ", anchors at the limit " << run.anchors_at_limit << ", " << run.seconds << " s";
    return s.str();
}

}  // namespace weft::examples
