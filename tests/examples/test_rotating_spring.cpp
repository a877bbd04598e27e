// The physics of the rotating-spring example (2018 Sec. 3.6, Fig. 2), checked
// against closed-form results. The spring system is the example's own header.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <weft/solver/damping_ratio_fit.hpp>

#include "../../examples/rotating_spring/rotating_spring.hpp"

namespace {

using weft::DenseIntegrator;
using weft::examples::RotatingSpringParameters;
using weft::examples::RotatingSpringRun;
using weft::examples::SpringDamping;

RotatingSpringParameters paper_spring(SpringDamping damping, double beta)
{
    RotatingSpringParameters p;  // L = 2, k_e = 100, m = 1, v₀ = 20
    p.damping = damping;
    p.beta = beta;
    return p;
}

RotatingSpringRun run(const RotatingSpringParameters& p, DenseIntegrator integrator, double dt, double duration)
{
    RotatingSpringRun r = weft::examples::simulate_rotating_spring(p, integrator, dt, duration);
    REQUIRE(r.summary.ok());
    REQUIRE(r.ok());
    REQUIRE(r.samples.size() == static_cast<std::size_t>(std::llround(duration / dt)) + 1);
    return r;
}

/// Radius of uniform circular motion with angular momentum h: the elastic
/// force k_e (r/L − 1) is the centripetal force h²/(m r³). Solved here by
/// bisection, independently of the example's own helper.
double circular_radius(double h, double mass, double stiffness, double rest_length)
{
    auto excess = [&](double r) { return h * h / (mass * r * r * r) - stiffness * (r / rest_length - 1.0); };
    double lo = rest_length, hi = 10.0 * rest_length;
    REQUIRE(excess(lo) > 0);
    REQUIRE(excess(hi) < 0);
    for (int i = 0; i < 200; ++i) {
        const double mid = 0.5 * (lo + hi);
        (excess(mid) > 0 ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

/// Largest relative deviation of the angular momentum from its initial value.
double angular_momentum_drift(const RotatingSpringRun& r)
{
    const double h0 = r.samples.front().angular_momentum;
    double worst = 0;
    for (const auto& s : r.samples) worst = std::max(worst, std::abs(s.angular_momentum - h0) / std::abs(h0));
    return worst;
}

/// Spread of the radius over the samples with time ≥ t.
double radius_spread_after(const RotatingSpringRun& r, double t)
{
    double lo = 1e300, hi = -1e300;
    int count = 0;
    for (const auto& s : r.samples) {
        if (s.time < t) continue;
        lo = std::min(lo, s.radius);
        hi = std::max(hi, s.radius);
        ++count;
    }
    REQUIRE(count > 10);
    return hi - lo;
}

double total_energy_drift(const RotatingSpringRun& r)
{
    const double e0 = r.samples.front().kinetic_energy + r.samples.front().elastic_energy;
    double worst = 0;
    for (const auto& s : r.samples) worst = std::max(worst, std::abs(s.kinetic_energy + s.elastic_energy - e0) / e0);
    return worst;
}

/// The message of the weft::InvalidInput that parsing `args` throws ("" if none).
std::string parse_error(const std::vector<std::string>& args)
{
    try {
        weft::examples::parse_rotating_spring_options(args);
    } catch (const weft::InvalidInput& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("rotating spring: strain-rate damping settles to uniform circular motion",
          "[examples][rotating_spring][strain_rate]")
{
    const RotatingSpringParameters p = paper_spring(SpringDamping::strain_rate, 0.1);
    const double h0 = p.mass * p.rest_length * p.tangential_speed;  // h = m L v₀ = 40
    const double r_star = circular_radius(h0, p.mass, p.stiffness, p.rest_length);
    REQUIRE(r_star == Approx(3.0873780).epsilon(1e-6));
    CHECK(weft::examples::circular_motion_radius(p) == Approx(r_star).epsilon(1e-12));

    SECTION("symplectic Euler: angular momentum exact, radius converges at first order")
    {
        const RotatingSpringRun fine = run(p, DenseIntegrator::symplectic_euler, 0.001, 20.0);
        const RotatingSpringRun coarse = run(p, DenseIntegrator::symplectic_euler, 0.002, 20.0);
        CHECK(fine.samples.front().angular_momentum == Approx(h0));
        CHECK(angular_momentum_drift(fine) < 1e-12);  // central force: exact up to round-off
        CHECK(angular_momentum_drift(coarse) < 1e-12);
        CHECK(radius_spread_after(fine, 18.0) < 1e-9 * r_star);  // settled: no radial oscillation left
        const double error_fine = std::abs(fine.samples.back().radius - r_star);
        const double error_coarse = std::abs(coarse.samples.back().radius - r_star);
        CHECK(error_fine < 1e-3 * r_star);
        CHECK(error_coarse / error_fine == Approx(2.0).epsilon(0.05));
        // Kinetic energy of the circular motion: ½ m (h / (m r))².
        const double v = h0 / (p.mass * r_star);
        CHECK(fine.samples.back().kinetic_energy == Approx(0.5 * p.mass * v * v).epsilon(2e-3));
    }
    SECTION("Newmark at the paper's dt = 0.01: angular momentum within 0.1 %")
    {
        const RotatingSpringRun r = run(p, DenseIntegrator::newmark, 0.01, 20.0);
        CHECK(angular_momentum_drift(r) < 1e-3);
        CHECK(radius_spread_after(r, 18.0) < 1e-6 * r_star);
        CHECK(r.samples.back().radius == Approx(r_star).epsilon(1e-3));
        CHECK(r.summary.max_newton_iterations <= 6);
    }
    SECTION("backward Euler: angular momentum lost at first order, circular motion for what is left")
    {
        const RotatingSpringRun coarse = run(p, DenseIntegrator::backward_euler, 2e-4, 2.0);
        const RotatingSpringRun fine = run(p, DenseIntegrator::backward_euler, 1e-4, 2.0);
        const double loss_fine = angular_momentum_drift(fine);
        CHECK(loss_fine < 0.02);
        CHECK(angular_momentum_drift(coarse) / loss_fine == Approx(2.0).epsilon(0.05));
        // Long run at a practical dt: numerical damping removes angular momentum
        // (2018 Sec. 3.6), yet the spring still settles to the circular motion
        // that matches the angular momentum it has left.
        const RotatingSpringRun longer = run(p, DenseIntegrator::backward_euler, 0.001, 20.0);
        const auto& last = longer.samples.back();
        CHECK(last.angular_momentum < 0.9 * h0);
        CHECK(last.radius ==
              Approx(circular_radius(last.angular_momentum, p.mass, p.stiffness, p.rest_length)).epsilon(2e-3));
    }
}

TEST_CASE("rotating spring: Rayleigh damping slows the rotation toward a stop", "[examples][rotating_spring][rayleigh]")
{
    const RotatingSpringRun rayleigh =
        run(paper_spring(SpringDamping::rayleigh, 0.1), DenseIntegrator::symplectic_euler, 0.01, 20.0);
    const RotatingSpringRun strain_rate =
        run(paper_spring(SpringDamping::strain_rate, 0.1), DenseIntegrator::symplectic_euler, 0.01, 20.0);
    const double ke0 = rayleigh.samples.front().kinetic_energy;
    REQUIRE(ke0 == Approx(200.0));
    CHECK(rayleigh.samples.back().kinetic_energy < 1e-2 * ke0);
    CHECK(rayleigh.samples.back().angular_momentum < 0.1 * rayleigh.samples.front().angular_momentum);
    // The tangential Rayleigh force always opposes the rotation: the angular
    // momentum never grows (symplectic Euler: ΔL = h x × f exactly).
    int growing = 0;
    for (std::size_t i = 1; i < rayleigh.samples.size(); ++i) {
        if (rayleigh.samples[i].angular_momentum > rayleigh.samples[i - 1].angular_momentum * (1 + 1e-14)) ++growing;
    }
    CHECK(growing == 0);
    CHECK(rayleigh.samples.size() == 2001);
    // Same β with strain-rate damping keeps the rotation (≈ 42 % of the energy).
    CHECK(strain_rate.samples.back().kinetic_energy > 0.4 * ke0);
    CHECK(rayleigh.samples.back().radius == Approx(2.0).epsilon(0.01));  // back near rest length
}

TEST_CASE("rotating spring: without damping the energy is conserved up to integrator error",
          "[examples][rotating_spring][energy]")
{
    const RotatingSpringParameters p = paper_spring(SpringDamping::none, 0.0);
    const RotatingSpringRun se = run(p, DenseIntegrator::symplectic_euler, 0.01, 10.0);
    const RotatingSpringRun se_half = run(p, DenseIntegrator::symplectic_euler, 0.005, 10.0);
    const RotatingSpringRun newmark = run(p, DenseIntegrator::newmark, 0.01, 10.0);
    const double drift_se = total_energy_drift(se), drift_half = total_energy_drift(se_half);
    INFO("symplectic Euler " << drift_se << ", half dt " << drift_half << ", Newmark " << total_energy_drift(newmark));
    REQUIRE(drift_half > 0);
    CHECK(drift_se < 0.05);
    CHECK(drift_se / drift_half == Approx(2.0).epsilon(0.15));  // first-order energy error, bounded
    CHECK(total_energy_drift(newmark) < 5e-3);
    CHECK(angular_momentum_drift(se) < 1e-12);
}

TEST_CASE("rotating spring: the 1-DoF oscillator has damping ratio beta omega_n / 2",
          "[examples][rotating_spring][damping_ratio]")
{
    int fitted = 0;
    struct Integration {
        DenseIntegrator integrator;
        double dt;
    };
    // Straight-line motion: the strain-rate and Rayleigh forces coincide (the
    // ∂²ε/∂x² term of 2018 Eq. 11 acts only across the spring).
    for (double beta : {0.02, 0.1}) {
        for (auto damping : {SpringDamping::strain_rate, SpringDamping::rayleigh}) {
            for (const Integration& integration :
                 {Integration{DenseIntegrator::symplectic_euler, 0.001}, Integration{DenseIntegrator::newmark, 0.01}}) {
                INFO("beta " << beta << ", damping " << weft::examples::to_string(damping) << ", "
                             << weft::to_string(integration.integrator));
                RotatingSpringParameters p = paper_spring(damping, beta);
                p.tangential_speed = 0.0;
                p.initial_strain = 0.1;
                const RotatingSpringRun r = run(p, integration.integrator, integration.dt, 10.0);
                std::vector<double> time, radius;
                for (const auto& s : r.samples) {
                    time.push_back(s.time);
                    radius.push_back(s.radius);
                    REQUIRE(s.angular_momentum == 0.0);  // straight-line motion
                }
                const auto fit = weft::fit_damped_oscillation(time, radius);
                const double omega_n = std::sqrt(p.stiffness / (p.mass * p.rest_length));
                CHECK(fit.damping_ratio == Approx(beta * omega_n / 2.0).epsilon(0.02));
                CHECK(fit.natural_frequency == Approx(omega_n).epsilon(0.005));
                CHECK(fit.offset == Approx(p.rest_length).epsilon(1e-4));
                // Released from rest at x₀: A = x₀ / √(1 − ζ²), φ = −atan(ζ / √(1 − ζ²)).
                const double zeta = beta * omega_n / 2.0;
                CHECK(fit.amplitude == Approx(0.1 * p.rest_length / std::sqrt(1 - zeta * zeta)).epsilon(0.01));
                CHECK(fit.phase == Approx(-std::atan(zeta / std::sqrt(1 - zeta * zeta))).margin(0.01));
                ++fitted;
            }
        }
    }
    REQUIRE(fitted == 8);
}

TEST_CASE("rotating spring: the command line parser reads every option", "[examples][rotating_spring][cli]")
{
    const auto o = weft::examples::parse_rotating_spring_options({"--rest-length",
                                                                  "1.5",
                                                                  "--stiffness",
                                                                  "250",
                                                                  "--mass",
                                                                  "0.5",
                                                                  "--tangential-speed",
                                                                  "-3",
                                                                  "--initial-strain",
                                                                  "0.2",
                                                                  "--damping",
                                                                  "rayleigh",
                                                                  "--beta",
                                                                  "0.05",
                                                                  "--integrator",
                                                                  "backward-euler",
                                                                  "--dt",
                                                                  "0.002",
                                                                  "--duration",
                                                                  "4",
                                                                  "--csv",
                                                                  "out.csv",
                                                                  "--plot",
                                                                  "fig.png"});
    CHECK(o.spring.rest_length == 1.5);
    CHECK(o.spring.stiffness == 250.0);
    CHECK(o.spring.mass == 0.5);
    CHECK(o.spring.tangential_speed == -3.0);
    CHECK(o.spring.initial_strain == 0.2);
    CHECK(o.spring.damping == SpringDamping::rayleigh);
    CHECK(o.spring.beta == 0.05);
    CHECK(o.integrator == DenseIntegrator::backward_euler);
    CHECK(o.dt == 0.002);
    CHECK(o.duration == 4.0);
    CHECK(o.csv_path == "out.csv");
    CHECK(o.plot_path == "fig.png");
    CHECK_FALSE(o.help);

    const auto defaults = weft::examples::parse_rotating_spring_options({});
    CHECK(defaults.spring.rest_length == 2.0);
    CHECK(defaults.spring.stiffness == 100.0);
    CHECK(defaults.spring.mass == 1.0);
    CHECK(defaults.spring.tangential_speed == 20.0);
    CHECK(defaults.dt == 0.01);
    CHECK(defaults.integrator == DenseIntegrator::symplectic_euler);
    CHECK(defaults.spring.damping == SpringDamping::none);
    CHECK(weft::examples::parse_rotating_spring_options({"--help"}).help);
    CHECK(weft::examples::parse_rotating_spring_options({"--version"}).version);
    CHECK_THAT(weft::examples::rotating_spring_usage(), Catch::Contains("--dt") && Catch::Contains("0.01"));
    CHECK(weft::examples::parse_rotating_spring_options({"--damping", "strain-rate"}).spring.damping ==
          SpringDamping::strain_rate);
    CHECK(weft::examples::parse_rotating_spring_options({"--integrator", "newmark"}).integrator ==
          DenseIntegrator::newmark);
}

TEST_CASE("rotating spring: the command line parser rejects bad input naming flag and value",
          "[examples][rotating_spring][cli]")
{
    using Catch::Matchers::Contains;
    struct Case {
        std::vector<std::string> args;
        std::vector<std::string> expected;  // substrings of the message
    };
    const std::vector<Case> cases = {
        {{"--stiffness", "-100"}, {"--stiffness", "-100", "> 0"}},
        {{"--mass", "-1"}, {"--mass", "-1"}},
        {{"--mass", "0"}, {"--mass", "0"}},
        {{"--rest-length", "0"}, {"--rest-length", "0"}},
        {{"--dt", "0"}, {"--dt", "0"}},
        {{"--dt", "-0.01"}, {"--dt", "-0.01"}},
        {{"--duration", "-5"}, {"--duration", "-5"}},
        {{"--beta", "-0.1"}, {"--beta", "-0.1"}},
        {{"--initial-strain", "-1"}, {"--initial-strain", "-1", "> -1"}},
        {{"--frobnicate", "3"}, {"--frobnicate"}},
        {{"--dt"}, {"--dt"}},
        {{"--damping"}, {"--damping"}},
        {{"--stiffness", "abc"}, {"--stiffness", "'abc'", "not a number"}},
        {{"--stiffness", "100x"}, {"--stiffness", "'100x'", "not a number"}},
        {{"--mass", ""}, {"--mass", "''", "not a number"}},
        {{"--tangential-speed", "nan"}, {"--tangential-speed", "'nan'", "finite"}},
        {{"--beta", "inf"}, {"--beta", "'inf'", "finite"}},
        {{"--damping", "viscous"}, {"--damping", "'viscous'", "none, strain-rate or rayleigh"}},
        {{"--integrator", "rk5"}, {"--integrator", "'rk5'", "symplectic-euler, newmark or backward-euler"}},
        {{"--dt", "1e-9", "--duration", "10"}, {"--duration / --dt", "1e8"}},
    };
    int rejected = 0;
    for (const Case& c : cases) {
        const std::string message = parse_error(c.args);
        INFO("args: " << c.args.front() << (c.args.size() > 1 ? " " + c.args[1] : std::string()) << " -> '" << message
                      << "'");
        REQUIRE_FALSE(message.empty());
        for (const std::string& part : c.expected) CHECK_THAT(message, Contains(part));
        CHECK_THAT(message, !Contains("nan") || Contains("'nan'"));  // never a NaN printed as a value
        ++rejected;
    }
    REQUIRE(rejected == static_cast<int>(cases.size()));
    REQUIRE(rejected == 20);
}
