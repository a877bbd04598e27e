// EIL nodes in the yarn stepper (thesis Sec. 4.2–4.3): the degenerate
// sliding of thesis Fig. 4.2c/d run with and without EIL nodes, and the
// opt-in being transparent when no node is within the safety distance.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <weft/backend/yarn_stepper.hpp>

#include "support/random.hpp"
#include "support/sliding_rods.hpp"
#include "support/threads.hpp"
#include "support/yarn_patches.hpp"

using weft::YarnModel;
using weft::YarnStepper;
using Vec3 = weft::Vec3<double>;

namespace {

struct RunLog {
    int steps_ok = 0;
    bool failed = false;
    std::string message;
    int max_eil = 0;
    int steps_with_eil = 0;
    double max_speed = 0;  ///< largest |v| over the free DoFs
    double max_kinetic = 0;
    double max_elastic = 0;
    double u_b = 0, u_c = 0, x_b = 0, x_c = 0;  ///< final arc lengths on A and x of the contacts
    double min_gap = 1e9;                       ///< smallest |u_B − u_C| seen
    int max_pairs = 0;                          ///< largest number of EIL–EIL springs
    int assembly_builds = 0;
    std::string eil_series;     ///< EIL count per step, one digit each
    int resets = 0;             ///< arc lengths reset on EIL → EoL switches
    int newton_iterations = 0;  ///< summed over the steps
    int halved = 0;             ///< steps that were halved
    int rebrackets = 0;         ///< full-Newton iterates at which EIL brackets followed their nodes
};

/// `newton` > 1: full Newton to 1e-6 with that many iterations at most.
RunLog run(const weft_test::SlidingRods& rods, bool eil, int steps, double h, bool reset = false, int newton = 1)
{
    weft::YarnStepperOptions<double> options;
    options.pcg.max_iterations = 5000;
    options.pcg.tolerance = 1e-8;
    options.newton_iterations = newton;
    if (newton > 1) {
        options.newton_tolerance = 1e-6;
        options.pcg.tolerance = 1e-10;
    }
    weft::EilOptions<double> eil_options;
    eil_options.enabled = eil;
    eil_options.rest_segment_length = rods.spacing;
    eil_options.reset_on_eol = reset;
    YarnStepper<double> stepper(rods.model, {}, Vec3::Zero(), options, eil_options);
    RunLog log;
    const std::size_t b = 5 * static_cast<std::size_t>(rods.contact_b);
    const std::size_t c = 5 * static_cast<std::size_t>(rods.contact_c);
    for (int s = 0; s < steps; ++s) {
        const weft::YarnStepReport r = stepper.step(h);
        const std::vector<double> q = weft::to_host(stepper.positions());
        const std::vector<double> v = weft::to_host(stepper.velocities());
        if (!r.ok) {
            log.failed = true;
            log.message = r.message;
            break;
        }
        ++log.steps_ok;
        log.newton_iterations += r.newton_iterations;
        if (r.halvings > 0) ++log.halved;
        log.rebrackets += r.rebrackets;
        log.resets += r.arc_length_resets;
        log.eil_series += static_cast<char>('0' + std::min(r.eil_nodes, 9));
        log.max_pairs = std::max(log.max_pairs, static_cast<int>(stepper.eil_pair_springs().size()));
        log.max_eil = std::max(log.max_eil, r.eil_nodes);
        if (r.eil_nodes > 0) ++log.steps_with_eil;
        for (std::size_t i = 0; i < v.size(); ++i)
            if (rods.model.free_dof[i]) log.max_speed = std::max(log.max_speed, std::abs(v[i]));
        const weft::ElementEnergies<double> e = stepper.energies();
        log.max_kinetic = std::max(log.max_kinetic, e.kinetic);
        log.max_elastic = std::max(log.max_elastic, e.elastic);
        log.u_b = q[b + 3];
        log.u_c = q[c + 3];
        log.x_b = q[b];
        log.x_c = q[c];
        log.min_gap = std::min(log.min_gap, std::abs(q[b + 3] - q[c + 3]));
    }
    log.assembly_builds = stepper.assembly_builds();
    return log;
}

}  // namespace

// The setting of all sliding-rod tests: B's pins at +10 mm/s, C's at
// −6 mm/s (asymmetric, so the contacts do not meet on a step boundary), A
// pre-stretched by 1 % (its segments carry tension, so the EoL stretch
// stiffness k_s/Δu is not multiplied by a zero strain), h = 1 ms. The
// contacts start 1 mm apart in arc length and meet after ≈ 63 steps; after
// 100 steps they are ≈ 0.6 mm past each other. Safety distance 0.1 mm
// (0.1 × the 1 mm rest segment), spring k = 1000 k_s / 1 mm = 5·10⁸ N/m.
constexpr double speed_b = 0.01, speed_c = -0.006, prestretch = 1.01, h = 1e-3;
constexpr int steps = 100;

TEST_CASE("eil stepper: two contacts sliding on a rod meet and cross smoothly with EIL nodes",
          "[backend][eil][sliding]")
{
    const weft_test::SlidingRods rods = weft_test::make_sliding_rods(speed_b, speed_c, prestretch);
    const double u_b0 = rods.model.q[5 * rods.contact_b + 3];
    const double u_c0 = rods.model.q[5 * rods.contact_c + 3];
    REQUIRE(u_b0 < u_c0);
    const RunLog log = run(rods, true, steps, h);
    INFO("EIL count per step: " << log.eil_series);
    INFO("message: " << log.message);
    REQUIRE(log.steps_ok == steps);
    // The contacts passed each other along A, each sliding with its rod.
    CHECK(log.u_b > log.u_c);
    CHECK(log.x_b > log.x_c);
    CHECK(log.u_b - u_b0 == Approx(steps * h * speed_b / prestretch).epsilon(1e-3));
    CHECK(log.u_c - u_c0 == Approx(steps * h * speed_c / prestretch).epsilon(1e-3));
    // Measured: one EIL node for 13 steps around the meeting (P_C on A, then
    // P_B once they have crossed), none before and after.
    CHECK(log.max_eil == 1);
    CHECK(log.steps_with_eil >= 10);
    CHECK(log.steps_with_eil <= 16);
    CHECK(log.eil_series.front() == '0');
    CHECK(log.eil_series.back() == '0');
    CHECK(log.min_gap < 1e-5);  // they really were (nearly) co-located on A
    // Smooth: no DoF ever moves faster than the pins (measured: exactly the
    // pin speed), the kinetic energy stays at its initial level and the
    // elastic energy at the pre-stretch energy ½ k_s (8 mm) (1 %)² = 2·10⁻⁴ J.
    const double kinetic0 = [&] {
        YarnStepper<double> s(rods.model, {}, Vec3::Zero());
        return s.energies().kinetic;
    }();
    REQUIRE(kinetic0 > 0);
    CHECK(log.max_speed <= 1.05 * speed_b);
    CHECK(log.max_kinetic <= 1.5 * kinetic0);
    CHECK(log.max_elastic <= 1.05 * 0.5 * 500 * 8e-3 * 1e-4);
    // The assembly map is rebuilt only when the element lists change: at the
    // construction, when P_C turns EIL, when P_B takes over at the crossing,
    // and when both are EoL again.
    CHECK(log.assembly_builds == 4);
}

TEST_CASE("eil stepper: full Newton carries an EIL node past an EoL node within a step",
          "[backend][eil][sliding][newton]")
{
    // Full Newton keeps every EIL weight inside the EoL segments its spring
    // interpolates on. With the step's bracket alone, P_C (EIL on A) could
    // not pass P_B (EoL on A) within a step: each update stopped short of P_B
    // by the feasibility bound, the residual stalled, and halving could not
    // help (the crossing has to happen in some substep). The spring goes on
    // interpolating on the neighbouring EoL segment (EilSpring::outer_before,
    // outer_after), so the crossing is an ordinary Newton step.
    const weft_test::SlidingRods rods = weft_test::make_sliding_rods(speed_b, speed_c, prestretch);
    const double u_b0 = rods.model.q[5 * rods.contact_b + 3];
    const double u_c0 = rods.model.q[5 * rods.contact_c + 3];
    const RunLog log = run(rods, true, steps, h, false, 8);
    INFO("EIL count per step: " << log.eil_series);
    INFO("message: " << log.message);
    REQUIRE(log.steps_ok == steps);
    CHECK(log.halved == 0);
    CHECK(log.u_b > log.u_c);
    CHECK(log.x_b > log.x_c);
    CHECK(log.u_b - u_b0 == Approx(steps * h * speed_b / prestretch).epsilon(1e-3));
    CHECK(log.u_c - u_c0 == Approx(steps * h * speed_c / prestretch).epsilon(1e-3));
    CHECK(log.max_eil == 1);
    CHECK(log.min_gap < 1e-5);
    CHECK(log.max_speed <= 1.05 * speed_b);
    // Measured: 2.0 Newton iterations per step.
    CHECK(log.newton_iterations <= 3 * steps);
}

TEST_CASE("eil stepper: full Newton's EIL bracket follows its node past several EoL nodes within a step",
          "[backend][eil][sliding][newton]")
{
    // C is dragged along A at 1.3 mm per step (B stands still), so within a
    // step its contact passes B and A's Lagrangian nodes, more than the one
    // neighbouring EoL segment its spring's stencil covers. Rod C translates
    // rigidly and A is straight and frictionless: the contact slides at
    // ẋ/p along A.
    const double fast = -1.3;
    const weft_test::SlidingRods rods = weft_test::make_sliding_rods(0.0, fast, prestretch);
    const double u_c0 = rods.model.q[5 * rods.contact_c + 3];
    const RunLog log = run(rods, true, 3, h, false, 8);
    INFO("EIL count per step: " << log.eil_series);
    INFO("message: " << log.message);
    REQUIRE(log.steps_ok == 3);
    CHECK(log.halved == 0);
    CHECK(log.rebrackets > 0);
    CHECK(log.newton_iterations <= 3 * 4);
    CHECK(log.u_c - u_c0 == Approx(3 * h * fast / prestretch).epsilon(1e-6));
}

TEST_CASE("eil stepper: the optional arc-length reset (thesis Eq. 4.4) on leaving EIL keeps the crossing exact",
          "[backend][eil][sliding][reset]")
{
    const weft_test::SlidingRods rods = weft_test::make_sliding_rods(speed_b, speed_c, prestretch);
    const double u_b0 = rods.model.q[5 * rods.contact_b + 3];
    const double u_c0 = rods.model.q[5 * rods.contact_c + 3];
    const RunLog kept = run(rods, true, steps, h, false);
    const RunLog reset = run(rods, true, steps, h, true);
    INFO("EIL count per step, reset: " << reset.eil_series << ", kept: " << kept.eil_series);
    REQUIRE(kept.steps_ok == steps);
    REQUIRE(reset.steps_ok == steps);
    // Off (the default, the thesis' practice): no reset. On: one per switch
    // back to EoL (P_C when P_B takes over at the crossing, then P_B).
    CHECK(kept.resets == 0);
    CHECK(reset.resets == 2);
    CHECK(reset.eil_series == kept.eil_series);
    // A uniformly stretched straight rod already has uniform stretch across
    // the switching node, so Eq. 4.4 moves it by rounding only: same slide.
    CHECK(reset.u_b - u_b0 == Approx(steps * h * speed_b / prestretch).epsilon(1e-3));
    CHECK(reset.u_c - u_c0 == Approx(steps * h * speed_c / prestretch).epsilon(1e-3));
    CHECK(std::abs(reset.u_b - kept.u_b) < 1e-9);
    CHECK(std::abs(reset.u_c - kept.u_c) < 1e-9);
    CHECK(reset.max_speed <= 1.05 * speed_b);
}

TEST_CASE("eil stepper: without EIL nodes the same crossing blows up", "[backend][eil][sliding][eol]")
{
    // The EoL-only discretization (thesis Sec. 4.2.2, Fig. 4.2c): the segment
    // (P_B, P_C) of rod A has Δu → 0 and then Δu < 0 when the contacts cross;
    // the segment mass ρΔs/6 (… w = Δx/Δs …) degenerates and, left alone, the
    // contacts are flung along A (velocities ~10¹⁵ m/s, elastic energy
    // ~10³⁶ J, every step converging). The stepper now reports that step as
    // failed: an inverted EoL segment rejects it, and halving cannot avoid
    // the crossing.
    const weft_test::SlidingRods rods = weft_test::make_sliding_rods(speed_b, speed_c, prestretch);
    const RunLog eol = run(rods, false, steps, h);
    INFO("steps " << eol.steps_ok << ", failed " << eol.failed << " (" << eol.message << "), max |v| " << eol.max_speed
                  << " m/s, max kinetic " << eol.max_kinetic << " J, max elastic " << eol.max_elastic << " J");
    CHECK(eol.max_eil == 0);
    REQUIRE(eol.failed);
    CHECK_THAT(eol.message, Catch::Matchers::Contains("inverted"));
    // The failure is reported before anything blew up.
    CHECK(eol.max_speed <= 1.05 * speed_b);
    CHECK(eol.max_elastic < 1.0);
    // Up to the meeting it is as good as the EIL run: the degeneracy, not the
    // setup, is what breaks it.
    const RunLog before = run(rods, false, 55, h);
    REQUIRE(before.steps_ok == 55);
    CHECK(before.max_speed <= 1.05 * speed_b);
}

TEST_CASE("eil stepper: a contact EIL on both rods gets the EIL-EIL spring and keeps sliding",
          "[backend][eil][sliding][pair]")
{
    // An extra Lagrangian node on B 0.05 mm from P_B (half the safety
    // distance) makes P_B EIL on B throughout; once the contacts have crossed
    // on A, P_B is EIL on A too: its x DoFs are filtered and the pair spring
    // ties its two interpolations (thesis Sec. 4.3.2). Leaving that state
    // (P_B EoL on A again), x is placed on B's interpolation (thesis Eq. 4.1).
    const weft_test::SlidingRods rods = weft_test::make_sliding_rods(speed_b, speed_c, prestretch, 5e-5);
    const RunLog log = run(rods, true, steps, h);
    INFO("EIL count per step: " << log.eil_series);
    INFO("message: " << log.message);
    REQUIRE(log.steps_ok == steps);
    CHECK(log.max_eil == 2);
    CHECK(log.max_pairs == 1);
    CHECK(log.eil_series.find('0') == std::string::npos);  // P_B is EIL on B at every step
    CHECK(log.u_b > log.u_c);
    CHECK(log.max_speed <= 1.05 * speed_b);
    CHECK(log.max_elastic <= 1.05 * 0.5 * 500 * 8e-3 * 1e-4);
}

TEST_CASE("eil stepper: full Newton with a contact EIL on both rods", "[backend][eil][sliding][pair][newton]")
{
    // The setting above with full Newton to 1e-6: the EIL-EIL spring on its
    // 9-node stencil (EilPairSpring with the EoL nodes beyond both brackets)
    // converges like the EIL-EoL one, with no step halved.
    const weft_test::SlidingRods rods = weft_test::make_sliding_rods(speed_b, speed_c, prestretch, 5e-5);
    const RunLog log = run(rods, true, steps, h, false, 8);
    INFO("EIL count per step: " << log.eil_series);
    INFO("message: " << log.message);
    REQUIRE(log.steps_ok == steps);
    CHECK(log.halved == 0);
    CHECK(log.max_pairs == 1);
    CHECK(log.u_b > log.u_c);
    CHECK(log.max_speed <= 1.05 * speed_b);
    CHECK(log.max_elastic <= 1.05 * 0.5 * 500 * 8e-3 * 1e-4);
    // Measured: 2.0 Newton iterations per step.
    CHECK(log.newton_iterations <= 3 * steps);
}

TEST_CASE("eil stepper: with no node within the safety distance, EIL on equals EIL off", "[backend][eil][woven]")
{
    // A perturbed, moving woven patch with friction, contact and gravity: arc
    // lengths are perturbed by ≤ 30 µm, far from the 0.1 mm safety distance.
    // With no EIL node the assignment gives back the builder's element lists,
    // so the map is not rebuilt and every step is the EIL-off step.
    weft_test::Random rng(31);
    YarnModel<double> model = weft_test::make_patch(7, 6, weft::DampingModel::strain_rate, 10.0);
    weft_test::enable_friction(model);
    weft_test::perturb(model, rng, 5e-5, 3e-5);
    for (std::size_t i = 0; i < model.v.size(); ++i) model.v[i] = model.free_dof[i] ? rng.uniform(-0.02, 0.02) : 0;
    weft::pin_nodes(model, {0, 6});
    for (std::size_t i = 0; i < model.v.size(); ++i)
        if (!model.free_dof[i]) model.v[i] = 0;
    const Vec3 g(0, 0, -9.81);
    weft::EilOptions<double> eil;
    eil.enabled = true;
    YarnStepper<double> off(model, {}, g);
    YarnStepper<double> on(model, {}, g, {}, eil);
    CHECK(on.eil_safety_distance() == Approx(1e-4));  // 0.1 × the mean rest segment (the 1 mm spacing)
    CHECK(on.eil_contact_stiffness() == Approx(1000 * 500 / 1e-3));
    double moved = 0, diff = 0;
    for (int s = 0; s < 5; ++s) {
        const weft::YarnStepReport a = off.step(1e-3);
        const weft::YarnStepReport b = on.step(1e-3);
        INFO("step " << s << ": EIL off: " << a.message << "; EIL on: " << b.message);
        REQUIRE(a.ok);
        REQUIRE(b.ok);
        CHECK(b.eil_nodes == 0);
        CHECK(a.pcg_iterations == b.pcg_iterations);
    }
    const std::vector<double> q_off = weft::to_host(off.positions()), q_on = weft::to_host(on.positions());
    const std::vector<double> v_off = weft::to_host(off.velocities()), v_on = weft::to_host(on.velocities());
    for (std::size_t i = 0; i < q_off.size(); ++i) {
        moved = std::max(moved, std::abs(q_off[i] - model.q[i]));
        diff = std::max({diff, std::abs(q_on[i] - q_off[i]), std::abs(v_on[i] - v_off[i])});
    }
    REQUIRE(moved > 1e-6);
    CHECK(diff == 0.0);
    CHECK(on.assembly_builds() == 1);
    CHECK(on.segments().size() == model.segments.size());
}

TEST_CASE("eil stepper: assembly with EIL springs is bit-identical for 1 and 2 threads", "[backend][eil][determinism]")
{
    const weft_test::SlidingRods rods = weft_test::make_sliding_rods(speed_b, speed_c, prestretch, 5e-5);
    weft::EilOptions<double> eil;
    eil.enabled = true;
    eil.rest_segment_length = rods.spacing;
    YarnStepper<double> stepper(rods.model, {}, Vec3::Zero(), {}, eil);
    // Step 60: two EIL–EoL springs (P_B on B, P_C on A); step 66: P_B EIL on
    // both rods, one EIL–EIL spring.
    int checks = 0;
    int done = 0;
    for (const int stop : {60, 66}) {
        for (; done < stop; ++done) REQUIRE(stepper.step(h).ok);
        const std::size_t springs = stepper.eil_springs().size(), pairs = stepper.eil_pair_springs().size();
        CHECK(springs == (stop == 60 ? 2u : 0u));
        CHECK(pairs == (stop == 60 ? 0u : 1u));
        const int saved = weft_test::max_threads();
        std::vector<double> values[2], rhs[2];
        for (int t = 0; t < 2; ++t) {
            weft_test::set_threads(t + 1);
            stepper.assemble(h);
            values[t] = weft::to_host(stepper.matrix().values());
            rhs[t] = weft::to_host(stepper.rhs());
        }
        weft_test::set_threads(saved);
        REQUIRE(!values[0].empty());
        CHECK(std::memcmp(values[0].data(), values[1].data(), values[0].size() * sizeof(double)) == 0);
        CHECK(std::memcmp(rhs[0].data(), rhs[1].data(), rhs[0].size() * sizeof(double)) == 0);
        ++checks;
    }
    REQUIRE(checks == 2);
}

TEST_CASE("eil stepper: bad EIL options are rejected with the field named", "[backend][eil][errors]")
{
    const weft_test::SlidingRods rods = weft_test::make_sliding_rods(speed_b, speed_c);
    weft::EilOptions<double> eil;
    eil.enabled = true;
    eil.safety_factor = 0;
    CHECK_THROWS_WITH(YarnStepper<double>(rods.model, {}, Vec3::Zero(), {}, eil), Catch::Contains("safety"));
    eil.safety_factor = 0.1;
    eil.contact_factor = -1;
    CHECK_THROWS_WITH(YarnStepper<double>(rods.model, {}, Vec3::Zero(), {}, eil), Catch::Contains("contact"));
    eil.contact_factor = 1000;
    eil.rest_segment_length = -1e-3;
    CHECK_THROWS_WITH(YarnStepper<double>(rods.model, {}, Vec3::Zero(), {}, eil),
                      Catch::Contains("rest_segment_length"));
    // Off, the options are not even looked at.
    CHECK_NOTHROW(YarnStepper<double>(rods.model, {}, Vec3::Zero(), {}, weft::EilOptions<double>{false, 0, 0, -1}));
}

namespace {

/// Fast contacts (B's pins at +0.3 m/s, C's at −0.2 m/s): they close 0.5 mm
/// per 1 ms step, five safety distances, so they pass each other within the
/// third step unless something tags them before.
struct FastCrossing {
    std::vector<weft::YarnStepReport> reports;
    std::vector<std::vector<double>> q, v;  ///< state before the first step and after each step
    double u_b0 = 0, u_c0 = 0;
};

FastCrossing run_fast(bool eil, bool lookahead, int max_retries, int max_halvings, int steps)
{
    const weft_test::SlidingRods rods = weft_test::make_sliding_rods(0.3, -0.2, prestretch);
    weft::YarnStepperOptions<double> options;
    options.pcg.max_iterations = 5000;
    options.pcg.tolerance = 1e-8;
    options.newton_iterations = 1;  // the retry of a collapsed trial step is the one-step scheme's
    options.max_retries = max_retries;
    options.max_halvings = max_halvings;
    weft::EilOptions<double> eil_options;
    eil_options.enabled = eil;
    eil_options.lookahead = lookahead;
    eil_options.rest_segment_length = rods.spacing;
    YarnStepper<double> stepper(rods.model, {}, Vec3::Zero(), options, eil_options);
    FastCrossing out;
    out.u_b0 = rods.model.q[5 * rods.contact_b + 3];
    out.u_c0 = rods.model.q[5 * rods.contact_c + 3];
    out.q.push_back(weft::to_host(stepper.positions()));
    out.v.push_back(weft::to_host(stepper.velocities()));
    for (int s = 0; s < steps; ++s) {
        out.reports.push_back(stepper.step(h));
        out.q.push_back(weft::to_host(stepper.positions()));
        out.v.push_back(weft::to_host(stepper.velocities()));
        if (!out.reports.back().ok) break;
    }
    return out;
}

}  // namespace

TEST_CASE("eil stepper: fast contacts are tagged by the look-ahead, else a collapsed trial step is retried",
          "[backend][eil][sliding][retry]")
{
    const weft_test::SlidingRods rods = weft_test::make_sliding_rods(0.3, -0.2, prestretch);
    const std::size_t b = 5 * static_cast<std::size_t>(rods.contact_b) + 3;
    const std::size_t c = 5 * static_cast<std::size_t>(rods.contact_c) + 3;
    const int steps = 5;
    int checks = 0;
    // Both ways the contacts cross and keep the speed of their rods.
    const auto crossed = [&](const FastCrossing& run) {
        REQUIRE(run.reports.size() == static_cast<std::size_t>(steps));
        const std::vector<double>& q = run.q.back();
        CHECK(q[b] > q[c]);
        CHECK(q[b] - run.u_b0 == Approx(steps * h * 0.3 / prestretch).epsilon(1e-3));
        CHECK(q[c] - run.u_c0 == Approx(steps * h * -0.2 / prestretch).epsilon(1e-3));
    };
    {
        // Look-ahead on (the default): tagged EIL before the step in which they
        // would pass, no step is redone.
        const FastCrossing run = run_fast(true, true, 4, 0, steps);
        std::string series;
        for (const weft::YarnStepReport& r : run.reports) {
            INFO(r.message);
            CHECK(r.ok);
            CHECK(r.retries == 0);
            CHECK(r.substeps == 1);
            series += static_cast<char>('0' + std::min(r.eil_nodes, 9));
        }
        INFO("EIL count per step: " << series);
        CHECK(run.reports[0].eil_nodes == 0);  // 1 mm apart: 0.5 mm in one step is not below d = 0.1 mm
        CHECK(run.reports[1].eil_nodes == 1);  // 0.5 mm apart, closing 0.5 mm per step
        crossed(run);
        ++checks;
    }
    {
        // Look-ahead off: the second step collapses segment (B, C) on A; the
        // collapsed node is flagged `close` and the step redone at the same
        // size, now with an EIL node.
        const FastCrossing run = run_fast(true, false, 4, 0, steps);
        int retries = 0;
        for (const weft::YarnStepReport& r : run.reports) {
            INFO(r.message);
            CHECK(r.ok);
            CHECK(r.halvings == 0);
            retries += r.retries;
        }
        CHECK(run.reports[0].retries == 0);
        CHECK(run.reports[0].eil_nodes == 0);
        CHECK(run.reports[1].retries == 1);
        CHECK(run.reports[1].eil_nodes == 1);
        CHECK(retries >= 1);
        crossed(run);
        ++checks;
    }
    {
        // ... and with no retry allowed that step fails, reported and undone.
        const FastCrossing run = run_fast(true, false, 0, 0, steps);
        REQUIRE(run.reports.size() == 2u);
        CHECK(run.reports[0].ok);
        const weft::YarnStepReport& r = run.reports[1];
        CHECK_FALSE(r.ok);
        CHECK(r.retries == 0);
        CHECK(r.substeps == 0);
        CHECK_THAT(r.message, Catch::Matchers::Contains("collapsed"));
        CHECK_THAT(r.message, Catch::Matchers::Contains("EIL safety distance"));
        CHECK(run.q[2] == run.q[1]);
        CHECK(run.v[2] == run.v[1]);
        ++checks;
    }
    {
        // EIL off: the third step inverts segment (B, C) and is rejected
        // ("inverted"), undone, with or without halving.
        for (const int halvings : {0, 3}) {
            const FastCrossing run = run_fast(false, false, 4, halvings, steps);
            REQUIRE(run.reports.size() == 3u);
            CHECK(run.reports[0].ok);
            CHECK(run.reports[1].ok);
            const weft::YarnStepReport& r = run.reports[2];
            INFO(r.message);
            CHECK_FALSE(r.ok);
            CHECK(r.eil_nodes == 0);
            CHECK(r.retries == 0);
            CHECK(r.halvings == halvings);
            CHECK_THAT(r.message, Catch::Matchers::Contains("inverted"));
            CHECK_THAT(r.first_failure, Catch::Matchers::Contains("inverted"));  // why it was halved
            if (halvings == 0) {
                CHECK(r.substeps == 0);
                CHECK(run.q[3] == run.q[2]);
                CHECK(run.v[3] == run.v[2]);
            }
            // Never past each other: the rejection comes before the inversion.
            CHECK(run.q.back()[b] < run.q.back()[c]);
            ++checks;
        }
    }
    REQUIRE(checks == 5);
}

// ---------------------------------------------------------------------------
// EIL tracking on its own (cuda/weft/backend/eil_tracker.hpp), without a
// stepper: the assignment and the element lists it implies, what each call
// reports as changed, contacts that leave their yarn or are removed, and the
// look-ahead flags of collapsed segments. The setting is the sliding rods at
// rest (rod A with contacts P_B at u = 3.5 L and P_C at u = 4.5 L, A's
// Lagrangian nodes at u = 0 … 3 L and 5 L … 8 L).

using weft::EilChanges;
using weft::EilTracker;

namespace {

constexpr double spacing = 1e-3;  // L; safety distance 0.1 L

/// The sliding rods at rest (v = 0, so the look-ahead sees the gaps as they are).
weft::SlidingRods rods_at_rest()
{
    weft::SlidingRods rods = weft_test::make_sliding_rods(0.0, 0.0);
    std::fill(rods.model.v.begin(), rods.model.v.end(), 0.0);
    return rods;
}

weft::EilOptions<double> tracking_on()
{
    weft::EilOptions<double> options;
    options.enabled = true;
    options.rest_segment_length = spacing;
    return options;
}

/// A stepper's state on the device.
struct DeviceState {
    thrust::device_vector<double> q, v, anchors;
    explicit DeviceState(const weft::YarnModel<double>& m) : q(m.q), v(m.v), anchors(m.anchors) {}
    weft::EilState<double> view() { return {q, v, anchors}; }
    void set(int node, int component, double value)
    {
        q[5 * static_cast<std::size_t>(node) + static_cast<std::size_t>(component)] = value;
    }
};

/// The rods, their device state and a tracker after its first update.
struct Tracked {
    weft::SlidingRods rods;
    DeviceState state;
    EilTracker<double> tracker;
    explicit Tracked(const weft::SlidingRods& r = rods_at_rest())
        : rods(r), state(r.model), tracker(r.model, tracking_on(), r.model.material.stretch_stiffness)
    {
        tracker.update(state.view(), 1e-3);
    }
};

bool on_list(const std::vector<int>& list, int node)
{
    return std::find(list.begin(), list.end(), node) != list.end();
}

bool any_change(const EilChanges& c)
{
    return c.topology || c.lists || c.filter || c.state;
}

}  // namespace

TEST_CASE("eil tracker: off, no call changes anything", "[backend][eil][tracker]")
{
    const weft::SlidingRods rods = rods_at_rest();
    DeviceState state(rods.model);
    for (const EilTracker<double>& tracker : {EilTracker<double>(), EilTracker<double>(rods.model, {}, 500.0)}) {
        EilTracker<double> t = tracker;
        CHECK_FALSE(t.enabled());
        CHECK_FALSE(any_change(t.update(state.view(), 1e-3)));
        CHECK(t.count() == 0);
        CHECK(t.assignment().node.empty());
        CHECK(t.topology().node_count() == 0);
        CHECK(t.safety_distance() == 0.0);
        CHECK(t.contact_stiffness() == 0.0);
    }
    CHECK(weft::to_host(state.q) == rods.model.q);
}

TEST_CASE("eil tracker: the first update lists every segment; an unchanged state rebuilds nothing",
          "[backend][eil][tracker]")
{
    const weft::SlidingRods rods = rods_at_rest();
    DeviceState state(rods.model);
    EilTracker<double> tracker(rods.model, tracking_on(), rods.model.material.stretch_stiffness);
    REQUIRE(tracker.enabled());
    CHECK(tracker.safety_distance() == Approx(0.1 * spacing));
    CHECK(tracker.contact_stiffness() == Approx(1000 * 500.0 / spacing));

    const EilChanges first = tracker.update(state.view(), 1e-3);
    CHECK(first.lists);
    CHECK_FALSE(first.topology);
    CHECK_FALSE(first.filter);
    CHECK(tracker.count() == 0);
    CHECK(tracker.lists().segments.size() == rods.model.segments.size());  // 9 on A, 6 on B, 6 on C
    CHECK(tracker.lists().bends.size() == rods.model.bends.size());
    CHECK(tracker.lists().springs.empty());
    CHECK(tracker.lists().pairs.empty());
    CHECK(tracker.free() == rods.model.free_dof);

    // The same state again: one count on the device, no list rebuild.
    CHECK_FALSE(any_change(tracker.update(state.view(), 1e-3)));
}

TEST_CASE("eil tracker: a contact within the safety distance turns EIL and gets its spring", "[backend][eil][tracker]")
{
    Tracked tracked;
    auto& [rods, state, tracker] = tracked;

    // P_C to 0.05 L past P_B on A: closer than d = 0.1 L, so P_C (the later
    // node in sorted order) turns EIL on A, bracketed by P_B and A's node at 5 L.
    state.set(rods.contact_c, 3, 3.55 * spacing);
    const EilChanges changes = tracker.update(state.view(), 1e-3);
    CHECK(changes.lists);
    CHECK_FALSE(changes.topology);
    REQUIRE(tracker.count() == 1);
    REQUIRE(tracker.lists().springs.size() == 1);
    const weft::EilSpring& s = tracker.lists().springs[0];
    CHECK(s.node == rods.contact_c);
    CHECK(s.coordinate == 3);
    CHECK(s.before == rods.contact_b);
    const std::vector<int>& a = rods.model.yarns[static_cast<std::size_t>(rods.rod_a)];
    const int node_5l = a[static_cast<std::size_t>(std::find(a.begin(), a.end(), rods.contact_c) - a.begin()) + 1];
    CHECK(s.after == node_5l);
    CHECK(s.outer_before == a[3]);  // the EoL node one segment before the bracket (u = 3 L)
    // A loses one stretch segment (P_C carries none on A); B and C keep theirs.
    CHECK(tracker.lists().segments.size() == rods.model.segments.size() - 1);
    // Its interpolation weight (thesis Eq. 4.3) lies in its bracket.
    const weft::EilAssignment<double>& assignment = tracker.assignment();
    int eil_slots = 0;
    for (int slot = 0; slot < assignment.slot_count(); ++slot) {
        if (!assignment.eil[static_cast<std::size_t>(slot)]) continue;
        ++eil_slots;
        CHECK(assignment.sorted_node[static_cast<std::size_t>(slot)] == rods.contact_c);
        CHECK(assignment.weight[static_cast<std::size_t>(slot)] == Approx(0.05 / 1.5));
    }
    CHECK(eil_slots == 1);

    // Apart again: back to EoL, the spring gone.
    state.set(rods.contact_c, 3, 4.5 * spacing);
    CHECK(tracker.update(state.view(), 1e-3).lists);
    CHECK(tracker.count() == 0);
    CHECK(tracker.lists().springs.empty());
    CHECK(tracker.lists().segments.size() == rods.model.segments.size());
}

TEST_CASE("eil tracker: a contact whose arc length leaves its yarn is taken off it (thesis Sec. 4.4)",
          "[backend][eil][tracker][detach]")
{
    Tracked tracked;
    auto& [rods, state, tracker] = tracked;

    // P_B slides past A's fixed end at u = 0.
    state.set(rods.contact_b, 3, -0.5 * spacing);
    const EilChanges changes = tracker.update(state.view(), 1e-3);
    CHECK(changes.topology);
    CHECK(changes.lists);
    CHECK(changes.state);
    CHECK(changes.filter);  // its arc length on A is fixed now
    CHECK(tracker.detached() == 1);
    const weft::YarnModel<double>& topology = tracker.topology();
    CHECK_FALSE(on_list(topology.yarns[static_cast<std::size_t>(rods.rod_a)], rods.contact_b));
    CHECK(on_list(topology.yarns[1], rods.contact_b));  // still on rod B, as a Lagrangian node
    const std::size_t i = 5 * static_cast<std::size_t>(rods.contact_b);
    CHECK(topology.free_dof[i + 3] == 0);
    CHECK(topology.free_dof[i + 4] == 0);
    CHECK(tracker.free()[i + 3] == 0);
    CHECK(topology.anchors[2 * static_cast<std::size_t>(rods.contact_b)] == Approx(-0.5 * spacing));
    CHECK(weft::to_host(state.anchors)[2 * static_cast<std::size_t>(rods.contact_b)] == Approx(-0.5 * spacing));
    // A has 9 nodes left: 8 segments.
    CHECK(tracker.lists().segments.size() == rods.model.segments.size() - 1);
    for (const weft::YarnSegment& g : tracker.lists().segments)
        CHECK_FALSE((g.coordinate == 3 && (g.node0 == rods.contact_b || g.node1 == rods.contact_b)));

    // Nothing left to detach: the next update changes nothing.
    CHECK_FALSE(any_change(tracker.update(state.view(), 1e-3)));
    CHECK(tracker.detached() == 1);
}

TEST_CASE("eil tracker: remove takes a contact with another fabric off both its yarns",
          "[backend][eil][tracker][remove]")
{
    weft::SlidingRods rods = rods_at_rest();
    rods.model.external_contact.assign(static_cast<std::size_t>(rods.model.node_count()), 0);
    rods.model.external_contact[static_cast<std::size_t>(rods.contact_c)] = 1;
    rods.model.v[5 * static_cast<std::size_t>(rods.contact_c) + 3] = 0.02;
    Tracked tracked(rods);
    DeviceState& state = tracked.state;
    EilTracker<double>& tracker = tracked.tracker;

    EilChanges changes;
    CHECK(tracker.remove(state.view(), {{rods.contact_c, 3}}, changes) == 1);
    CHECK(changes.topology);
    CHECK(changes.state);
    CHECK(tracker.detached() == 0);  // a removal on request is no departure
    for (const std::vector<int>& yarn : tracker.topology().yarns) CHECK_FALSE(on_list(yarn, rods.contact_c));
    const std::size_t i = 5 * static_cast<std::size_t>(rods.contact_c);
    const std::vector<double> v = weft::to_host(state.v);
    for (std::size_t k = 0; k < 5; ++k) {
        CHECK(tracker.topology().free_dof[i + k] == 0);
        CHECK(v[i + k] == 0.0);
    }
    // The new layout is listed at the next update: A and C each lose a segment.
    const EilChanges next = tracker.update(state.view(), 1e-3);
    CHECK(next.lists);
    CHECK(next.filter);
    CHECK(tracker.lists().segments.size() == rods.model.segments.size() - 2);
    CHECK(tracker.assignment().slot_count() == static_cast<int>(rods.model.segments.size()) + 3 - 2);
}

TEST_CASE("eil tracker: a collapsed segment's later node is tagged EIL until the next step",
          "[backend][eil][tracker][lookahead]")
{
    Tracked tracked;
    auto& [rods, state, tracker] = tracked;
    REQUIRE(tracker.count() == 0);

    // The segment P_B–P_C on A counts as collapsed (far apart as they are).
    const auto collapsed = [b = rods.contact_b, c = rods.contact_c](const weft::YarnSegment& g) {
        return g.coordinate == 3 && g.node0 == b && g.node1 == c;
    };
    const std::vector<weft::YarnSegment> segments = tracker.lists().segments;
    CHECK(tracker.flag_collapsed(segments, collapsed));
    CHECK_FALSE(tracker.flag_collapsed(segments, collapsed));  // flagged already: a retry would not help
    CHECK(tracker.update(state.view(), 1e-3).lists);
    REQUIRE(tracker.count() == 1);
    CHECK(tracker.lists().springs[0].node == rods.contact_c);

    // A new step clears the flags.
    tracker.begin_step();
    CHECK(tracker.update(state.view(), 1e-3).lists);
    CHECK(tracker.count() == 0);
}

TEST_CASE("eil tracker: invalid options are rejected with the field named", "[backend][eil][tracker][errors]")
{
    const weft::SlidingRods rods = rods_at_rest();
    weft::EilOptions<double> options = tracking_on();
    options.min_segment_factor = 1.5;
    CHECK_THROWS_WITH((EilTracker<double>(rods.model, options, 500.0)),
                      Catch::Contains("min_segment_factor") && Catch::Contains("1.5"));
    options = tracking_on();
    options.safety_factor = -1;
    CHECK_THROWS_WITH((EilTracker<double>(rods.model, options, 500.0)), Catch::Contains("safety"));
    weft::YarnModel<double> empty = rods.model;
    empty.segments.clear();
    options = tracking_on();
    options.rest_segment_length = 0;
    CHECK_THROWS_WITH((EilTracker<double>(empty, options, 500.0)), Catch::Contains("no segments"));
}
