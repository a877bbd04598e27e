// run_friction_incline (friction_incline.hpp), compiled once for the
// friction_incline example and the tests that run it.
#include "friction_incline.hpp"

#include <chrono>
#include <memory>

#include <weft/backend/yarn_stepper.hpp>

namespace weft::examples {

/// Runs the incline; never throws for a failed step (reported in the result).
/// @throws InvalidInput for bad options
InclineRun run_friction_incline(const InclineOptions& o)
{
    using namespace incline_detail;
    const double g = 9.81, theta = o.angle_degrees * Constants<double>::pi / 180;
    const Vec3<double> gravity(g * std::sin(theta), 0, -g * std::cos(theta));
    Scene s = build_scene(o);
    InclineRun run;
    run.contacts = static_cast<int>(s.contacts.size());
    run.top_mass = layer_mass(s.model, s.top_first, o.top_nodes * o.top_nodes);
    share_normal_force(s, run.top_mass, g, theta, o.friction);

    YarnStepperOptions<double> options;
    options.pcg.max_iterations = 5000;
    options.pcg.tolerance = 1e-8;
    options.max_halvings = 4;
    options.newton_iterations = o.newton_iterations;  // this example's own default: the one-step scheme
    options.newton_tolerance = 1e-4;
    EilOptions<double> eil;
    eil.enabled = true;
    eil.rest_segment_length = s.bottom.spacing;
    const auto make_stepper = [&] {
        return std::make_unique<YarnStepper<double>>(s.model, std::vector<Collider<double>>{}, gravity, options, eil);
    };
    std::unique_ptr<YarnStepper<double>> stepper = make_stepper();
    const double margin = 0.2 * s.bottom.spacing;
    const int top_count = o.top_nodes * o.top_nodes;
    const auto slide_of = [&](const std::vector<double>& q) {
        double sum = 0;
        for (int k = 0; k < top_count; ++k)
            sum += q[5 * static_cast<std::size_t>(s.top_first + k)] - s.x0[static_cast<std::size_t>(k)];
        return sum / top_count;
    };
    const auto start = std::chrono::steady_clock::now();
    const int steps = static_cast<int>(std::ceil(o.duration / o.time_step - 1e-9));
    run.samples.push_back({0.0, 0.0, stepper->energies().kinetic});
    for (int step = 1; step <= steps; ++step) {
        const YarnStepReport r = stepper->step(o.time_step);
        if (!r.ok) {
            run.ok = false;
            run.message = r.message;
            break;
        }
        run.max_eil_nodes = std::max(run.max_eil_nodes, r.eil_nodes);
        const std::vector<double> q = to_host(stepper->positions());
        const double t = step * o.time_step;
        run.samples.push_back({t, slide_of(q), stepper->energies().kinetic});
        run.end_time = t;
        // Contacts leaving their top yarn are detached; one reaching the end
        // of its bottom yarn means the top patch slid off the fixed one.
        stepper->download(s.model);
        std::vector<LayerContact> kept;
        bool detached = false;
        for (const LayerContact& c : s.contacts) {
            const int bottom_coordinate = 7 - c.top_coordinate;
            const double top_arc = s.model.q[5 * static_cast<std::size_t>(c.node) + c.top_coordinate];
            const double bottom_arc = s.model.q[5 * static_cast<std::size_t>(c.node) + bottom_coordinate];
            double lo = 0, hi = 0;
            yarn_range(s.model, c.bottom_yarn, lo, hi);
            if (bottom_arc < lo + margin || bottom_arc > hi - margin) run.left_fixed_patch = true;
            yarn_range(s.model, c.top_yarn, lo, hi);
            if (top_arc < lo + margin || top_arc > hi - margin) {
                detach_contact_node(s.model, c.node, c.top_coordinate);
                detached = true;
                ++run.detached;
            } else {
                kept.push_back(c);
            }
        }
        if (run.left_fixed_patch || kept.empty()) break;
        if (detached) {
            // The weight is now shared by fewer contacts. Anchor deflections
            // scale with the limit, so that slipping contacts stay at it
            // (below it they would stick for a step, AnchorFriction::slip_in_step).
            const double ratio = static_cast<double>(s.contacts.size()) / static_cast<double>(kept.size());
            s.contacts = kept;
            share_normal_force(s, run.top_mass, g, theta, o.friction);
            for (const LayerContact& c : s.contacts)
                for (int k = 0; k < 2; ++k) {
                    const double arc = s.model.q[5 * static_cast<std::size_t>(c.node) + 3 + k];
                    double& anchor = s.model.anchors[2 * static_cast<std::size_t>(c.node) + k];
                    anchor = arc - (arc - anchor) * ratio;
                }
            stepper = make_stepper();
        }
    }
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The last state downloaded: which contacts slip at the end.
    const YarnModel<double>& m = s.model;
    for (const LayerContact& c : s.contacts) {
        double limit = 0;
        if (!node_friction<double>(m.material, m.friction_limit.empty() ? nullptr : m.friction_limit.data(), c.node,
                                   limit))
            continue;
        for (std::size_t k = 3; k < 5; ++k) {
            const std::size_t i = 5 * static_cast<std::size_t>(c.node) + k;
            if (m.free_dof[i] &&
                anchor_at_limit<double>(m.q[i], m.anchors[2 * static_cast<std::size_t>(c.node) + k - 3],
                                        m.material.anchor_stiffness, limit))
                ++run.anchors_at_limit;
        }
    }
    run.slide_distance = run.samples.back().slide_distance;
    return run;
}

}  // namespace weft::examples
