#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <weft/solver/dense_integrators.hpp>

namespace {

using VecX = Eigen::VectorXd;
using MatX = Eigen::MatrixXd;
using weft::DenseIntegrator;
using weft::DenseNewtonMode;
using weft::DenseStepStatus;

/// DoF 0 is an anchor (fixed), DoF 1 a mass m on a spring k and a dashpot c
/// to it: f₁ = −k (q₁ − q₀) − c (v₁ − v₀), f₀ = −f₁. Dynamic-size types.
struct DampedOscillator {
    double k, c;
    weft::DenseForces<double> operator()(const VecX& q, const VecX& v) const
    {
        weft::DenseForces<double> out;
        const double f1 = -k * (q(1) - q(0)) - c * (v(1) - v(0));
        out.force = VecX(2);
        out.force << -f1, f1;
        out.force_jacobian_positions = MatX(2, 2);
        out.force_jacobian_positions << -k, k, k, -k;
        out.force_jacobian_velocities = MatX(2, 2);
        out.force_jacobian_velocities << -c, c, c, -c;
        return out;
    }
};

auto damped_oscillator_system(double m, double k, double c)
{
    MatX mass = MatX::Identity(2, 2) * m;
    weft::DenseFixedMask<> fixed(2);
    fixed << true, false;
    return weft::make_dense_system<double, Eigen::Dynamic>(DampedOscillator{k, c}, mass, fixed);
}

weft::DenseState<double> oscillator_state(double x0, double v0)
{
    weft::DenseState<double> s;
    s.positions = VecX(2);
    s.positions << 0.0, x0;
    s.velocities = VecX(2);
    s.velocities << 0.0, v0;
    return s;
}

/// Underdamped m ẍ + c ẋ + k x = 0: x(t) = e^{−σt}(x₀ cos ω_d t + (v₀ + σ x₀)/ω_d sin ω_d t).
double damped_position(double m, double k, double c, double x0, double v0, double t)
{
    const double sigma = c / (2 * m);
    const double omega_d = std::sqrt(k / m - sigma * sigma);
    return std::exp(-sigma * t) * (x0 * std::cos(omega_d * t) + (v0 + sigma * x0) / omega_d * std::sin(omega_d * t));
}

/// Largest |q₁ − x(t)| over a run of `steps` steps of size h.
double max_position_error(DenseIntegrator method, DenseNewtonMode mode, double h, int steps, int& anchor_moves)
{
    const double m = 1.0, k = 4.0, c = 0.4, x0 = 1.0, v0 = 0.5;
    const auto system = damped_oscillator_system(m, k, c);
    auto state = oscillator_state(x0, v0);
    weft::DenseNewtonOptions<double> newton;
    newton.mode = mode;
    double error = 0;
    for (int i = 0; i < steps; ++i) {
        const auto r = weft::integrator_step(system, state, h, method, newton);
        REQUIRE(r.ok());
        error = std::max(error, std::abs(state.positions(1) - damped_position(m, k, c, x0, v0, state.time)));
        if (state.positions(0) != 0.0 || state.velocities(0) != 0.0) ++anchor_moves;
    }
    return error;
}

/// Undamped 1-DoF oscillator with fixed-size types: f = −k q.
struct LinearSpring {
    double k;
    weft::DenseForces<double, 1> operator()(const weft::Vec<double, 1>& q, const weft::Vec<double, 1>&) const
    {
        weft::DenseForces<double, 1> out;
        out.force = -k * q;
        out.force_jacobian_positions << -k;
        out.force_jacobian_velocities << 0.0;
        return out;
    }
};

auto linear_spring_system(double m, double k)
{
    weft::Mat<double, 1, 1> mass;
    mass << m;
    weft::DenseFixedMask<1> fixed;
    fixed << false;
    return weft::make_dense_system<double, 1>(LinearSpring{k}, mass, fixed);
}

double spring_energy(double m, double k, const weft::DenseState<double, 1>& s)
{
    return 0.5 * m * s.velocities(0) * s.velocities(0) + 0.5 * k * s.positions(0) * s.positions(0);
}

/// Hardening spring f = −k q³ (2 DoFs, uncoupled); `wrong_sign` flips ∂f/∂q.
struct CubicSpring {
    double k;
    bool wrong_sign = false;
    weft::DenseForces<double, 2> operator()(const weft::Vec<double, 2>& q, const weft::Vec<double, 2>&) const
    {
        weft::DenseForces<double, 2> out;
        out.force = -k * q.array().cube().matrix();
        const weft::Vec<double, 2> d = -3.0 * k * q.array().square().matrix();
        out.force_jacobian_positions = (wrong_sign ? -d : d).asDiagonal();
        out.force_jacobian_velocities.setZero();
        return out;
    }
};

auto cubic_system(double k, bool wrong_sign = false)
{
    weft::DenseFixedMask<2> fixed;
    fixed << false, false;
    return weft::make_dense_system<double, 2>(CubicSpring{k, wrong_sign}, weft::Mat<double, 2, 2>::Identity(), fixed);
}

weft::DenseState<double, 2> cubic_state()
{
    weft::DenseState<double, 2> s;
    s.positions << 1.0, -2.0;
    s.velocities << 3.0, 0.5;
    return s;
}

/// The message of the weft::InvalidInput that f throws ("" if it throws none).
template <class F>
std::string invalid_input_message(F&& f)
{
    try {
        f();
    } catch (const weft::InvalidInput& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("dense integrators: each converges to the damped oscillator at its order",
          "[solver][dense_integrators][convergence]")
{
    struct Case {
        DenseIntegrator method;
        DenseNewtonMode mode;
        double order;
    };
    const std::vector<Case> cases = {{DenseIntegrator::symplectic_euler, DenseNewtonMode::full, 1.0},
                                     {DenseIntegrator::rk4, DenseNewtonMode::full, 4.0},
                                     {DenseIntegrator::newmark, DenseNewtonMode::full, 2.0},
                                     {DenseIntegrator::backward_euler, DenseNewtonMode::full, 1.0},
                                     {DenseIntegrator::backward_euler, DenseNewtonMode::single_step, 1.0}};
    int checked = 0;
    for (const Case& c : cases) {
        INFO("integrator " << weft::to_string(c.method)
                           << (c.mode == DenseNewtonMode::single_step ? " (one Newton step)" : ""));
        int anchor_moves = 0;
        const double coarse = max_position_error(c.method, c.mode, 0.02, 200, anchor_moves);
        const double fine = max_position_error(c.method, c.mode, 0.01, 400, anchor_moves);
        REQUIRE(fine > 0);
        const double ratio = coarse / fine;
        INFO("errors " << coarse << " / " << fine << " = " << ratio);
        CHECK(ratio == Approx(std::pow(2.0, c.order)).epsilon(0.1));
        CHECK(fine < 0.05);
        CHECK(anchor_moves == 0);  // the filtered DoF never moves
        ++checked;
    }
    REQUIRE(checked == 5);
}

TEST_CASE("dense integrators: symplectic Euler energy stays bounded without drift",
          "[solver][dense_integrators][energy]")
{
    const double m = 2.0, k = 8.0, h = 0.05;  // ω = 2, ωh = 0.1
    const auto system = linear_spring_system(m, k);
    weft::DenseState<double, 1> s;
    s.positions << 1.0;
    s.velocities << 0.0;
    const double e0 = spring_energy(m, k, s);
    const double pi = std::acos(-1.0);
    const int steps_per_period = static_cast<int>(std::round(pi / h));  // period π
    double early = 0, late = 0;
    int steps = 0;
    for (int period = 0; period < 1000; ++period) {
        for (int i = 0; i < steps_per_period; ++i, ++steps) {
            REQUIRE(weft::symplectic_euler_step(system, s, h).ok());
            const double deviation = std::abs(spring_energy(m, k, s) - e0) / e0;
            if (period < 10) early = std::max(early, deviation);
            if (period >= 990) late = std::max(late, deviation);
        }
    }
    REQUIRE(steps == 1000 * steps_per_period);
    REQUIRE(early > 0);
    CHECK(early < 0.11);                 // O(ωh) oscillation of the energy
    CHECK(late < early * 1.02 + 1e-12);  // no drift over 1000 periods
}

TEST_CASE("dense integrators: backward Euler energy decays by 1/(1 + h²ω²) per step",
          "[solver][dense_integrators][energy]")
{
    const double m = 1.0, k = 4.0, h = 0.1;
    const auto system = linear_spring_system(m, k);
    weft::DenseState<double, 1> s;
    s.positions << 1.0;
    s.velocities << 1.0;
    const double factor = 1.0 / (1.0 + h * h * k / m);
    int decreasing = 0;
    for (int i = 0; i < 100; ++i) {
        const double before = spring_energy(m, k, s);
        const auto r = weft::backward_euler_step(system, s, h);
        REQUIRE(r.ok());
        CHECK(r.newton_iterations == 1);  // linear: the first (Baraff–Witkin) solve is exact
        const double after = spring_energy(m, k, s);
        CHECK(after == Approx(before * factor).epsilon(1e-12));
        if (after < before) ++decreasing;
    }
    CHECK(decreasing == 100);
}

TEST_CASE("dense integrators: Newmark conserves the energy of a linear undamped system",
          "[solver][dense_integrators][energy]")
{
    const double m = 1.0, k = 100.0, h = 0.05;  // ωh = 0.5: large steps still conserve
    const auto system = linear_spring_system(m, k);
    weft::DenseState<double, 1> s;
    s.positions << 0.3;
    s.velocities << -2.0;
    const double e0 = spring_energy(m, k, s);
    double worst = 0;
    int steps = 0;
    for (; steps < 2000; ++steps) {
        const auto r = weft::newmark_step(system, s, h);
        REQUIRE(r.ok());
        worst = std::max(worst, std::abs(spring_energy(m, k, s) - e0) / e0);
    }
    REQUIRE(steps == 2000);
    CHECK(worst < 1e-12);
    CHECK(s.time == Approx(2000 * h));
}

TEST_CASE("dense integrators: the first Newton solve is the Baraff-Witkin system",
          "[solver][dense_integrators][newton]")
{
    const auto system = cubic_system(5.0);
    const double h = 0.01;
    auto s = cubic_state();
    const auto f = system.forces(s.positions, s.velocities);
    // A = M − h ∂f/∂v − h² ∂f/∂q, b = h (f + h ∂f/∂q v)
    const weft::Mat<double, 2, 2> a =
        system.mass - h * f.force_jacobian_velocities - h * h * f.force_jacobian_positions;
    const weft::Vec<double, 2> b = h * (f.force + h * f.force_jacobian_positions * s.velocities);
    const weft::Vec<double, 2> expected_v = s.velocities + a.lu().solve(b);

    weft::DenseNewtonOptions<double> one;
    one.mode = DenseNewtonMode::single_step;
    auto single = s;
    const auto r = weft::backward_euler_step(system, single, h, one);
    REQUIRE(r.ok());
    CHECK(r.newton_iterations == 1);
    REQUIRE((expected_v - s.velocities).norm() > 1e-3);
    CHECK((single.velocities - expected_v).norm() < 1e-13);
    CHECK((single.positions - (s.positions + h * expected_v)).norm() < 1e-13);

    auto full = s;
    const auto rf = weft::backward_euler_step(system, full, h);
    REQUIRE(rf.ok());
    CHECK(rf.newton_iterations > 1);  // nonlinear: the linearized step is not the solution
    CHECK(rf.residual_norm <= 1e-10 * rf.residual_scale);
    CHECK((full.velocities - single.velocities).norm() > 1e-9);
    // The full solution satisfies M (v₁ − v₀) = h f(q₀ + h v₁, v₁).
    const auto f1 = system.forces(full.positions, full.velocities);
    CHECK((system.mass * (full.velocities - s.velocities) - h * f1.force).norm() < 1e-9);
}

TEST_CASE("dense integrators: a Newton solve that does not converge is reported and the state kept",
          "[solver][dense_integrators][newton][failure]")
{
    int reported = 0;
    SECTION("too few iterations")
    {
        const auto system = cubic_system(50.0);
        auto s = cubic_state();
        const auto before = s;
        weft::DenseNewtonOptions<double> newton;
        newton.max_iterations = 2;
        for (auto method : {DenseIntegrator::backward_euler, DenseIntegrator::newmark}) {
            auto state = before;
            const auto r = weft::integrator_step(system, state, 0.1, method, newton);
            CHECK(r.status == DenseStepStatus::newton_not_converged);
            CHECK_FALSE(r.ok());
            CHECK(r.newton_iterations == 2);
            CHECK(r.residual_norm > 1e-10 * r.residual_scale);
            CHECK(state.positions == before.positions);
            CHECK(state.velocities == before.velocities);
            CHECK(state.time == before.time);
            ++reported;
        }
        CHECK(reported == 2);
    }
    SECTION("a wrong Jacobian")
    {
        const auto system = cubic_system(50.0, true);
        auto s = cubic_state();
        const auto before = s;
        const auto r = weft::backward_euler_step(system, s, 0.1);
        CHECK_FALSE(r.ok());
        CHECK(r.status != DenseStepStatus::ok);
        CHECK(s.positions == before.positions);
        ++reported;
        CHECK(reported == 1);
    }
    SECTION("integrate stops at the failed step")
    {
        const auto system = cubic_system(50.0);
        auto s = cubic_state();
        weft::DenseNewtonOptions<double> newton;
        newton.max_iterations = 1;
        int observed = 0;
        const auto summary = weft::integrate(system, s, 0.1, 10, DenseIntegrator::backward_euler, newton,
                                             [&](const weft::DenseState<double, 2>&) { ++observed; });
        CHECK(summary.status == DenseStepStatus::newton_not_converged);
        CHECK(summary.steps_taken == 0);
        CHECK(observed == 0);
        CHECK(summary.failure_time == 0.0);
        ++reported;
        CHECK(reported == 1);
    }
}

TEST_CASE("dense integrators: NaN in a force is reported as non-finite by every integrator",
          "[solver][dense_integrators][failure]")
{
    struct NanForce {
        weft::DenseForces<double, 1> operator()(const weft::Vec<double, 1>& q, const weft::Vec<double, 1>&) const
        {
            weft::DenseForces<double, 1> out;
            out.force << (q(0) > 1.5 ? std::numeric_limits<double>::quiet_NaN() : -q(0));
            out.force_jacobian_positions << -1.0;
            out.force_jacobian_velocities << 0.0;
            return out;
        }
    };
    weft::DenseFixedMask<1> fixed;
    fixed << false;
    const auto system =
        weft::make_dense_system<double, 1>(NanForce{}, weft::Mat<double, 1, 1>::Identity().eval(), fixed);
    int reported = 0;
    for (auto method : {DenseIntegrator::symplectic_euler, DenseIntegrator::rk4, DenseIntegrator::newmark,
                        DenseIntegrator::backward_euler}) {
        INFO(weft::to_string(method));
        weft::DenseState<double, 1> s;
        s.positions << 2.0;
        s.velocities << 0.0;
        const auto r = weft::integrator_step(system, s, 0.1, method);
        CHECK(r.status == DenseStepStatus::non_finite);
        CHECK(s.positions(0) == 2.0);
        CHECK(s.velocities.allFinite());
        ++reported;
    }
    CHECK(reported == 4);
}

TEST_CASE("dense integrators: a singular system is reported", "[solver][dense_integrators][failure]")
{
    weft::DenseFixedMask<1> fixed;
    fixed << false;
    const auto system =
        weft::make_dense_system<double, 1>(LinearSpring{0.0}, weft::Mat<double, 1, 1>::Zero().eval(), fixed);
    int reported = 0;
    for (auto method : {DenseIntegrator::symplectic_euler, DenseIntegrator::backward_euler}) {
        weft::DenseState<double, 1> s;
        s.positions << 1.0;
        s.velocities << 1.0;
        CHECK(weft::integrator_step(system, s, 0.1, method).status == DenseStepStatus::singular_system);
        ++reported;
    }
    CHECK(reported == 2);
}

TEST_CASE("dense integrators: a fixed DoF keeps its prescribed velocity", "[solver][dense_integrators][filter]")
{
    int checked = 0;
    for (auto method : {DenseIntegrator::symplectic_euler, DenseIntegrator::rk4, DenseIntegrator::newmark,
                        DenseIntegrator::backward_euler}) {
        INFO(weft::to_string(method));
        const auto system = damped_oscillator_system(1.0, 4.0, 0.4);
        auto s = oscillator_state(1.0, 0.0);
        s.velocities(0) = 0.25;  // the anchor is driven at constant speed
        for (int i = 0; i < 100; ++i) REQUIRE(weft::integrator_step(system, s, 0.01, method).ok());
        CHECK(s.velocities(0) == 0.25);
        CHECK(s.positions(0) == Approx(0.25).epsilon(1e-12));
        CHECK(s.positions(1) != Approx(1.0));  // the free DoF did move
        ++checked;
    }
    CHECK(checked == 4);
}

TEST_CASE("dense integrators: invalid input throws with the field named", "[solver][dense_integrators][input]")
{
    const auto system = linear_spring_system(1.0, 1.0);
    weft::DenseState<double, 1> s;
    s.positions << 1.0;
    s.velocities << 0.0;
    CHECK_THAT(invalid_input_message([&] { weft::symplectic_euler_step(system, s, 0.0); }),
               Catch::Matchers::Contains("time step = 0"));
    CHECK_THAT(invalid_input_message([&] { weft::backward_euler_step(system, s, -0.1); }),
               Catch::Matchers::Contains("time step = -0.1"));
    weft::DenseNewtonOptions<double> bad;
    bad.max_iterations = 0;
    CHECK_THAT(invalid_input_message([&] { weft::newmark_step(system, s, 0.1, bad); }),
               Catch::Matchers::Contains("max_iterations = 0"));

    weft::DenseFixedMask<> fixed(3);
    fixed.setConstant(false);
    CHECK_THAT(invalid_input_message([&] {
                   weft::make_dense_system<double, Eigen::Dynamic>(DampedOscillator{1, 0}, MatX::Identity(2, 2), fixed);
               }),
               Catch::Matchers::Contains("fixed mask: size 3"));
    CHECK_THAT(invalid_input_message([&] {
                   weft::make_dense_system<double, Eigen::Dynamic>(DampedOscillator{1, 0}, MatX::Identity(2, 3), fixed);
               }),
               Catch::Matchers::Contains("not square"));

    const auto dynamic = damped_oscillator_system(1.0, 1.0, 0.0);
    weft::DenseState<double> wrong;
    wrong.positions = VecX::Zero(3);
    wrong.velocities = VecX::Zero(2);
    CHECK_THAT(invalid_input_message([&] { weft::rk4_step(dynamic, wrong, 0.1); }),
               Catch::Matchers::Contains("positions: size 3"));
}

TEST_CASE("dense integrators: Newton accepts a residual at round-off level near rest",
          "[solver][dense_integrators][newton]")
{
    // f = −k (|q| − L) sign(q): at q = L (1 + 1e-13) the force is a difference
    // of nearly equal terms and carries a relative round-off error of ~1e-3.
    struct RestSpring {
        double k, rest_length;
        weft::DenseForces<double, 1> operator()(const weft::Vec<double, 1>& q, const weft::Vec<double, 1>&) const
        {
            weft::DenseForces<double, 1> out;
            out.force << -k * (std::abs(q(0)) - rest_length) * (q(0) < 0 ? -1.0 : 1.0);
            out.force_jacobian_positions << -k;
            out.force_jacobian_velocities << 0.0;
            return out;
        }
    };
    weft::DenseFixedMask<1> fixed;
    fixed << false;
    const auto system =
        weft::make_dense_system<double, 1>(RestSpring{50.0, 2.0}, weft::Mat<double, 1, 1>::Identity().eval(), fixed);
    int converged = 0;
    for (auto method : {DenseIntegrator::newmark, DenseIntegrator::backward_euler}) {
        weft::DenseState<double, 1> s;
        s.positions << 2.0 * (1.0 + 1e-13);
        s.velocities << 1e-15;
        for (int i = 0; i < 50; ++i) {
            const auto r = weft::integrator_step(system, s, 0.01, method);
            REQUIRE(r.ok());
            CHECK(r.newton_iterations <= 3);
        }
        CHECK(std::abs(s.positions(0) - 2.0) < 1e-12);
        ++converged;
    }
    CHECK(converged == 2);
}
