#include <cmath>
#include <vector>

#include <Eigen/Core>
#include <weft/element/bending_element.hpp>

#include "support/element_checks.hpp"
#include "support/random.hpp"
#include "support/symmetric_eigen.hpp"

using weft_test::AllowZero;
using weft_test::FdChecker;
using weft_test::MatrixX;
using weft_test::Random;
using weft_test::VectorX;
using Vec12 = Eigen::Matrix<double, 12, 1>;
using Mat12 = Eigen::Matrix<double, 12, 12>;
using Vec3 = Eigen::Vector3d;
using Densities = weft::QuadraticBendingDensities<double>;

namespace {

constexpr double pi = 3.14159265358979323846;
double deg(double degrees)
{
    return degrees * pi / 180.0;
}

constexpr int element_checks = 7;        // see check_bending_element
constexpr int scalar_suite_checks = 13;  // tests/support/element_checks.hpp, M = 1
constexpr int vector_suite_checks = 17;  // M = 3: two more per extra component

struct Frame {
    Vec3 x0, t, n;
    double la, lb, s_prev, size;
};

Frame random_frame(Random& rng, double length_scale = 1.0)
{
    Frame f;
    f.x0 = rng.vector<3>(-1, 1);
    f.t = rng.unit_vector();
    Vec3 u;
    do {
        u = rng.unit_vector();
    } while (f.t.cross(u).norm() < 0.3);
    f.n = f.t.cross(u).normalized();
    f.la = length_scale * rng.uniform(0.5, 2.0);
    f.lb = length_scale * rng.uniform(0.5, 2.0);
    f.s_prev = rng.uniform(-1, 1);
    f.size = (f.la + f.lb) * rng.uniform(0.8, 1.2);
    return f;
}

/// Stencil with bending angle θ at node 0: a = la·t, b = lb·(cos θ t + sin θ n).
Vec12 stencil(const Frame& f, double theta)
{
    const Vec3 a = f.la * f.t;
    const Vec3 b = f.lb * (std::cos(theta) * f.t + std::sin(theta) * f.n);
    Vec12 q;
    q << f.x0 - a, f.s_prev, f.x0, f.s_prev + f.size * f.la / (f.la + f.lb), f.x0 + b, f.s_prev + f.size;
    return q;
}

/// An exactly straight stencil (a × b = 0 in floating point).
Vec12 straight_stencil()
{
    Vec12 q;
    q << -0.7, 0.2, 0.1, 0.0, 0.3, 0.2, 0.1, 0.6, 1.4, 0.2, 0.1, 1.5;
    return q;
}

Vec12 rigid_velocity(const Vec12& q, const Vec3& translation, const Vec3& omega)
{
    Vec12 v = Vec12::Zero();
    for (int node = 0; node < 3; ++node) v.segment<3>(4 * node) = translation + omega.cross(q.segment<3>(4 * node));
    return v;
}

weft::BendingElementEval<double> evaluate(const Vec12& q, const Vec12& v, const Densities& d,
                                          const weft::BendingBlend<double>& blend = {})
{
    return weft::evaluate_bending(q, v, d, weft::PsdProjection::off, weft::StressClamp::off, blend);
}

/// Element-level FD checks of the summed element (7 comparisons).
int check_bending_element(FdChecker& checker, const Vec12& q, const Vec12& v, const Densities& d)
{
    const int before = checker.checks;
    const auto e0 = evaluate(q, v, d);
    REQUIRE(e0.status == weft::StrainStatus::ok);
    const VectorX qx = q;
    const VectorX vx = v;
    auto at_q = [&](const VectorX& qq) { return evaluate(Vec12(qq), v, d); };
    auto at_v = [&](const VectorX& vv) { return evaluate(q, Vec12(vv), d); };

    checker.gradient([&](const VectorX& qq) { return -at_q(qq).energy; }, qx, VectorX(e0.elastic_force),
                     "element elastic force = -grad V");
    checker.jacobian([&](const VectorX& qq) { return VectorX(at_q(qq).elastic_force); }, qx,
                     MatrixX(e0.elastic_force_jacobian), "element elastic force Jacobian");
    checker.gradient([&](const VectorX& vv) { return -at_v(vv).dissipation_potential; }, vx,
                     VectorX(e0.dissipative_force), "element dissipative force = -dV_d/dv");
    checker.jacobian([&](const VectorX& vv) { return VectorX(at_v(vv).dissipative_force); }, vx,
                     MatrixX(e0.dissipative_force_jacobian_velocities), "element df_d/dv");
    const Mat12 exact = weft::bending_dissipative_force_jacobian_exact(q, v, d);
    checker.jacobian([&](const VectorX& qq) { return VectorX(at_q(qq).dissipative_force); }, qx, MatrixX(exact),
                     "element exact df_d/dq");

    // Symmetric ∂f_d/∂q = exact − the dropped terms of each active form.
    const auto forms = weft::bending_forms(q, v);
    Mat12 dropped = Mat12::Zero();
    if (forms.vector_active) {
        dropped += weft::dissipative_force_jacobian_dropped_terms(forms.vector_form, d.vector_dissipative, v);
    }
    if (forms.angle_active) {
        dropped += weft::dissipative_force_jacobian_dropped_terms(forms.angle_form, d.angle_dissipative, v);
    }
    const Mat12 symmetric = e0.dissipative_force_jacobian_positions;
    checker.compare(MatrixX(symmetric), MatrixX(exact - dropped), "element symmetric df_d/dq = exact - dropped",
                    AllowZero::yes);
    checker.compare(MatrixX(symmetric), MatrixX(symmetric.transpose()), "element symmetric df_d/dq is symmetric",
                    AllowZero::yes);
    return checker.checks - before;
}

double relative_difference(const MatrixX& a, const MatrixX& b)
{
    const double scale = std::max(a.cwiseAbs().maxCoeff(), b.cwiseAbs().maxCoeff());
    REQUIRE(scale > 0);
    return (a - b).cwiseAbs().maxCoeff() / scale;
}

}  // namespace

TEST_CASE("bending element: derivatives match finite differences on random stencils",
          "[element][bending][gradient][hessian]")
{
    Random rng(41);
    FdChecker checker;
    int ran = 0;
    int in_band = 0;
    for (int trial = 0; trial < 24; ++trial) {
        const Frame f = random_frame(rng);
        // A third of the trials inside the blend band, the rest spread over [0.5°, 150°].
        const double theta = trial % 3 == 0 ? deg(rng.uniform(4.55, 5.45)) : deg(rng.uniform(0.5, 150));
        const Vec12 q = stencil(f, theta);
        const Vec12 v = rng.vector<12>(-1, 1);
        const double k = rng.uniform(1, 100);
        const Densities d = weft::quadratic_bending_densities(k, rng.uniform(0.1, 2.0));
        const auto forms = weft::bending_forms(q, v);
        in_band += forms.angle_active && forms.vector_active;
        ran += check_bending_element(checker, q, v, d);
    }
    REQUIRE(in_band >= 8);
    REQUIRE(ran == 24 * element_checks);
    REQUIRE(checker.checks == ran);
}

TEST_CASE("bending element: derivatives match finite differences inside and outside the blend band",
          "[element][bending][blend][edge]")
{
    Random rng(42);
    FdChecker checker;
    int ran = 0;
    for (double degrees : {4.4, 4.9, 5.0, 5.1, 5.6}) {
        INFO("theta = " << degrees << " deg");
        const Frame f = random_frame(rng);
        const Vec12 q = stencil(f, deg(degrees));
        const Vec12 v = rng.vector<12>(-1, 1);
        const Densities d = weft::quadratic_bending_densities(20.0, 0.5);
        const auto forms = weft::bending_forms(q, v);
        CHECK(forms.vector_active == (degrees < 5.5));
        CHECK(forms.angle_active == (degrees > 4.5));
        ran += check_bending_element(checker, q, v, d);
    }
    REQUIRE(ran == 5 * element_checks);
}

TEST_CASE("bending element: the weighted forms pass the metric suite inside the band",
          "[element][bending][blend][gradient][hessian]")
{
    // Run each weighted form through the generic suite: this checks the
    // weighted sizes wΩ and (1 − w)Ω, their gradients and Hessians, by FD.
    Random rng(43);
    FdChecker checker;
    int ran = 0;
    for (double degrees : {4.9, 5.0, 5.1}) {
        const Frame f = random_frame(rng);
        const Vec12 q = stencil(f, deg(degrees));
        const Vec12 v = rng.vector<12>(-1, 1);
        const auto angle_form = [](const Vec12& qq, const Vec12& vv) { return weft::bending_forms(qq, vv).angle_form; };
        const auto vector_form = [](const Vec12& qq, const Vec12& vv) {
            return weft::bending_forms(qq, vv).vector_form;
        };
        const auto forms = weft::bending_forms(q, v);
        REQUIRE(forms.angle_active);
        REQUIRE(forms.vector_active);
        REQUIRE(forms.weight.first > 0);
        ran += weft_test::check_metric_and_densities(checker, angle_form, q, v, weft::QuadraticDensity<double, 1>{20},
                                                     weft::QuadraticDensity<double, 1>{0.5});
        ran += weft_test::check_metric_and_densities(checker, vector_form, q, v, weft::QuadraticDensity<double, 3>{20},
                                                     weft::QuadraticDensity<double, 3>{0.5});
    }
    REQUIRE(ran == 3 * (scalar_suite_checks + vector_suite_checks));
}

TEST_CASE("bending element: finite at zero angle, with the small-angle limit of the dissipative force",
          "[element][bending][edge]")
{
    const Vec12 q = straight_stencil();
    Random rng(44);
    const Vec12 v = rng.vector<12>(-1, 1);
    const Densities d = weft::quadratic_bending_densities(10.0, 2.0);
    const auto e = weft::evaluate_bending(q, v, d);
    REQUIRE(e.angle == 0.0);
    CHECK(e.status == weft::StrainStatus::ok);
    CHECK(e.blend_weight == 0.0);
    CHECK(e.energy == 0.0);
    CHECK(e.elastic_force.norm() == 0.0);
    CHECK(e.elastic_force_jacobian.allFinite());
    CHECK(e.elastic_force_jacobian.norm() > 0);
    CHECK(e.dissipative_force.allFinite());
    CHECK(e.dissipative_force_jacobian_velocities.allFinite());
    CHECK(e.dissipative_force_jacobian_positions.allFinite());
    REQUIRE(e.dissipative_force.norm() > 0);

    // Exactly the small-angle form's force...
    const auto vector = weft::bending_small_angle_strain(q, v);
    CHECK((e.dissipative_force - weft::dissipative_force(vector, d.vector_dissipative)).norm() <=
          1e-14 * e.dissipative_force.norm());
    // ...and the limit θ → 0 of the element's force (the bending plane tilted arbitrarily).
    Frame f;
    f.x0 = q.segment<3>(4);
    f.t = Vec3(1, 0, 0);
    f.n = Vec3(0, 0.6, 0.8);
    f.la = 1.0;
    f.lb = 1.1;
    f.s_prev = 0.0;
    f.size = 1.5;
    double previous = 1.0;
    for (double theta : {1e-4, 1e-6, 1e-8}) {
        const auto near = weft::evaluate_bending(stencil(f, theta), v, d);
        const double difference = relative_difference(near.dissipative_force, e.dissipative_force);
        INFO("theta = " << theta);
        CHECK(difference < 10 * theta);
        CHECK(difference < previous);
        previous = difference;
    }
    // The angle form alone has no defined gradient here: it reports the fallback.
    CHECK(weft::bending_angle_strain(q, v).status == weft::StrainStatus::parallel_segments);
}

TEST_CASE("bending element: forces and Jacobians are continuous across the blend band",
          "[element][bending][blend][continuity]")
{
    Random rng(45);
    const Densities d = weft::quadratic_bending_densities(20.0, 0.5);
    int ran = 0;
    for (int trial = 0; trial < 5; ++trial) {
        const Frame f = random_frame(rng);
        const Vec12 v = rng.vector<12>(-1, 1);
        for (double edge : {deg(4.5), deg(5.5)}) {
            INFO("edge = " << edge << " rad");
            const auto below = evaluate(stencil(f, edge - 1e-7), v, d);
            const auto above = evaluate(stencil(f, edge + 1e-7), v, d);
            CHECK(relative_difference(below.elastic_force, above.elastic_force) < 1e-5);
            CHECK(relative_difference(below.dissipative_force, above.dissipative_force) < 1e-5);
            CHECK(relative_difference(below.dissipative_force_jacobian_velocities,
                                      above.dissipative_force_jacobian_velocities) < 1e-5);
            CHECK(relative_difference(below.dissipative_force_jacobian_positions,
                                      above.dissipative_force_jacobian_positions) < 1e-5);
            CHECK(std::abs(below.energy - above.energy) < 1e-5 * above.energy);
            // The stiffness contains w''(θ)Ω(Ψ_θ − Ψ_k)∇θ∇θᵀ: continuous (w'' = 0 at the
            // band ends) but steep, ~1e-5 over 2e-7 rad; the jump shrinks with the gap.
            CHECK(relative_difference(below.elastic_force_jacobian, above.elastic_force_jacobian) < 1e-4);
            const auto below_close = evaluate(stencil(f, edge - 1e-9), v, d);
            const auto above_close = evaluate(stencil(f, edge + 1e-9), v, d);
            CHECK(relative_difference(below_close.elastic_force_jacobian, above_close.elastic_force_jacobian) < 1e-6);
            ++ran;
        }
        // Control: a hard switch at 5° (no band) jumps by far more than the tolerance above.
        weft::BendingBlend<double> hard;
        hard.lower = hard.upper = deg(5.0);
        const auto vector_side = evaluate(stencil(f, deg(5.0) - 1e-7), v, d, hard);
        const auto angle_side = evaluate(stencil(f, deg(5.0) + 1e-7), v, d, hard);
        REQUIRE(vector_side.blend_weight == 0.0);
        REQUIRE(angle_side.blend_weight == 1.0);
        CHECK(relative_difference(vector_side.elastic_force, angle_side.elastic_force) > 1e-3);
        CHECK(relative_difference(vector_side.dissipative_force, angle_side.dissipative_force) > 1e-3);
        CHECK(relative_difference(vector_side.elastic_force_jacobian, angle_side.elastic_force_jacobian) > 1e-3);
    }
    REQUIRE(ran == 10);
}

TEST_CASE("bending element: derivatives stay correct near pi", "[element][bending][edge]")
{
    Random rng(46);
    FdChecker checker;
    checker.step = 1e-7;  // Hessian terms grow like 1/|a×b|
    int ran = 0;
    for (double degrees : {170.0, 179.0}) {
        const Frame f = random_frame(rng);
        const Vec12 q = stencil(f, deg(degrees));
        const auto e = evaluate(q, rng.vector<12>(-1, 1), weft::quadratic_bending_densities(5.0, 1.0));
        CHECK(e.blend_weight == 1.0);
        CHECK(e.status == weft::StrainStatus::ok);
        ran += check_bending_element(checker, q, rng.vector<12>(-1, 1), weft::quadratic_bending_densities(5.0, 1.0));
    }
    // At π exactly the angle form falls back: finite, with a status.
    Vec12 q = straight_stencil();
    q.segment<3>(8) = q.segment<3>(4) - Vec3(0.9, 0, 0);
    const auto e = evaluate(q, Vec12::Ones(), weft::quadratic_bending_densities(5.0, 1.0));
    CHECK(e.status == weft::StrainStatus::parallel_segments);
    CHECK(e.elastic_force.allFinite());
    CHECK(e.elastic_force_jacobian.allFinite());
    CHECK(e.dissipative_force.allFinite());
    REQUIRE(ran == 2 * element_checks);
}

TEST_CASE("bending element: derivatives hold for small delta s (yarn scale)", "[element][bending][edge]")
{
    Random rng(47);
    FdChecker checker;
    checker.step = 1e-3 * 1e-5;  // relative to segment lengths ~1e-3
    checker.tolerance = 1e-5;
    int ran = 0;
    for (double degrees : {0.5, 4.4, 4.9, 5.0, 5.1, 5.6, 40.0}) {
        INFO("theta = " << degrees << " deg");
        Frame f = random_frame(rng, 1e-3);
        f.size = 1e-4;
        const Vec12 v = rng.vector<12>(-1, 1) * 1e-3;
        ran +=
            check_bending_element(checker, stencil(f, deg(degrees)), v, weft::quadratic_bending_densities(1e-5, 1e-8));
    }
    REQUIRE(ran == 7 * element_checks);
}

TEST_CASE("bending element: rigid translation is never damped", "[element][bending][rigid]")
{
    Random rng(48);
    int ran = 0;
    for (double degrees : {0.0, 2.0, 4.9, 5.0, 5.3, 30.0, 120.0}) {
        const Frame f = random_frame(rng);
        const Vec12 q = degrees == 0.0 ? straight_stencil() : stencil(f, deg(degrees));
        const auto e = weft::evaluate_bending(q, rigid_velocity(q, rng.vector<3>(-1, 1), Vec3::Zero()),
                                              weft::quadratic_bending_densities(3.0, 1.0));
        REQUIRE(e.dissipative_force_jacobian_velocities.norm() > 0);
        CHECK(e.dissipative_force.norm() < 1e-12);
        CHECK(std::abs(e.dissipation_potential) < 1e-24);
        ++ran;
    }
    REQUIRE(ran == 7);
}

TEST_CASE("bending element: rigid rotation is not damped on a straight yarn or at and above 5.5 degrees",
          "[element][bending][rigid]")
{
    Random rng(49);
    int ran = 0;
    for (double degrees : {0.0, 5.5, 5.6, 30.0, 120.0}) {
        const Frame f = random_frame(rng);
        const Vec12 q = degrees == 0.0 ? straight_stencil() : stencil(f, deg(degrees));
        const Vec12 v = rigid_velocity(q, rng.vector<3>(-1, 1), rng.vector<3>(-2, 2));
        const auto e = weft::evaluate_bending(q, v, weft::quadratic_bending_densities(3.0, 1.0));
        REQUIRE(e.dissipative_force_jacobian_velocities.norm() > 0);
        CHECK(e.dissipative_force.norm() < 1e-12);
        ++ran;
    }
    REQUIRE(ran == 5);
}

TEST_CASE("bending element: below 5.5 degrees a rigid rotation is damped only through the turning bending plane",
          "[element][bending][rigid]")
{
    // The published small-angle vector strain turns with the bending plane
    // (ε̇_k = ω × ε_k): a documented limitation of the metric, bounded here.
    Random rng(50);
    int ran = 0;
    for (double degrees : {1.0, 4.0, 5.0}) {
        const Frame f = random_frame(rng);
        const Vec12 q = stencil(f, deg(degrees));
        const Vec3 omega = rng.vector<3>(-2, 2);
        const Vec12 v = rigid_velocity(q, rng.vector<3>(-1, 1), omega);
        const double k_d = 1.3;
        const auto e = weft::evaluate_bending(q, v, weft::quadratic_bending_densities(3.0, k_d));
        const auto forms = weft::bending_forms(q, v);
        const Vec3 strain_k = forms.vector_form.strain;
        // V_d = ½ k_d (1 − w)Ω |ω × ε_k|², the angle form contributing nothing.
        const double expected = 0.5 * k_d * forms.vector_form.size * omega.cross(strain_k).squaredNorm();
        REQUIRE(expected > 0);
        CHECK(e.dissipation_potential == Approx(expected).epsilon(1e-9));
        // Bounded by |ω|² |ε_k|² ≤ |ω|² tan²(5.5°)/Ω².
        CHECK(e.dissipation_potential <=
              0.5 * k_d * forms.vector_form.size * omega.squaredNorm() * std::pow(std::tan(deg(5.5)) / f.size, 2));
        ++ran;
    }
    REQUIRE(ran == 3);
}

TEST_CASE("bending element: dissipated power is never positive", "[element][bending][dissipation]")
{
    Random rng(51);
    int ran = 0;
    for (int trial = 0; trial < 30; ++trial) {
        const Frame f = random_frame(rng);
        const double theta = trial % 2 ? deg(rng.uniform(4.5, 5.5)) : deg(rng.uniform(0, 179));
        const Vec12 v = rng.vector<12>(-1, 1);
        const auto e =
            weft::evaluate_bending(stencil(f, theta), v, weft::quadratic_bending_densities(3.0, rng.uniform(0.1, 2)));
        const double power = e.dissipative_force.dot(v);
        CHECK(power <= 0);
        CHECK(-power == Approx(2 * e.dissipation_potential).epsilon(1e-10));
        ++ran;
    }
    REQUIRE(ran == 30);
}

TEST_CASE("bending element: PSD projection makes the stiffness negative semi-definite", "[element][bending][psd]")
{
    Random rng(52);
    int ran = 0;
    int projected_something = 0;
    for (double degrees : {2.0, 5.0, 60.0, 150.0}) {
        const Frame f = random_frame(rng);
        const Vec12 q = stencil(f, deg(degrees));
        const Vec12 v = rng.vector<12>(-1, 1);
        const auto d = weft::quadratic_bending_densities(7.0, 1.0);
        const auto raw = weft::evaluate_bending(q, v, d, weft::PsdProjection::off);
        const auto projected = weft::evaluate_bending(q, v, d, weft::PsdProjection::on);
        const Eigen::VectorXd raw_eigen = weft_test::symmetric_eigenvalues(-raw.elastic_force_jacobian);
        const Eigen::VectorXd projected_eigen = weft_test::symmetric_eigenvalues(-projected.elastic_force_jacobian);
        const double scale = raw_eigen.cwiseAbs().maxCoeff();
        REQUIRE(scale > 0);
        CHECK(projected_eigen.minCoeff() >= -1e-10 * scale);
        // Positive eigenvalues are kept.
        CHECK(projected_eigen.maxCoeff() == Approx(raw_eigen.maxCoeff()).epsilon(1e-8));
        projected_something += raw_eigen.minCoeff() < -1e-8 * scale;
        CHECK(projected.elastic_force == raw.elastic_force);
        ++ran;
    }
    REQUIRE(projected_something > 0);  // the test exercised an indefinite stiffness
    REQUIRE(ran == 4);
}

TEMPLATE_TEST_CASE("bending element: float and double agree", "[element][bending][float]", float, double)
{
    Random rng(53);
    const Frame f = random_frame(rng);
    const Vec12 v = rng.vector<12>(-1, 1);
    int ran = 0;
    for (double degrees : {0.0, 3.0, 5.0, 30.0, 150.0}) {
        const Vec12 q = degrees == 0.0 ? straight_stencil() : stencil(f, deg(degrees));
        const weft::Vec<TestType, 12> qt = q.cast<TestType>();
        const weft::Vec<TestType, 12> vt = v.cast<TestType>();
        const auto et = weft::evaluate_bending<TestType>(qt, vt, weft::quadratic_bending_densities<TestType>(3, 1));
        const auto ed = weft::evaluate_bending<double>(qt.template cast<double>(), vt.template cast<double>(),
                                                       weft::quadratic_bending_densities<double>(3, 1));
        INFO("theta = " << degrees << " deg");
        CHECK(double(et.energy) == Approx(ed.energy).epsilon(1e-4).margin(1e-12));
        CHECK(double(et.dissipation_potential) == Approx(ed.dissipation_potential).epsilon(1e-4));
        if (degrees == 0.0) {
            CHECK(et.elastic_force.norm() == 0);
            CHECK(ed.elastic_force.norm() == 0);
        } else {
            CHECK(relative_difference(et.elastic_force.template cast<double>(), ed.elastic_force) < 1e-4);
        }
        CHECK(relative_difference(et.dissipative_force.template cast<double>(), ed.dissipative_force) < 1e-4);
        CHECK(relative_difference(et.elastic_force_jacobian.template cast<double>(), ed.elastic_force_jacobian) < 1e-4);
        CHECK(relative_difference(et.dissipative_force_jacobian_velocities.template cast<double>(),
                                  ed.dissipative_force_jacobian_velocities) < 1e-4);
        ++ran;
    }
    REQUIRE(ran == 5);
}

TEST_CASE("bending element: the Gauss-Newton variant keeps the forces and gives a PSD stiffness",
          "[element][bending][gauss-newton]")
{
    Random rng(71);
    const Densities d = weft::quadratic_bending_densities<double>(2.0, 0.3);
    int checks = 0;
    for (double degrees : {0.0, 1.0, 4.4, 5.0, 5.6, 30.0, 120.0}) {
        const Frame f = random_frame(rng);
        const Vec12 q = degrees == 0.0 ? straight_stencil() : stencil(f, deg(degrees));
        const Vec12 v = rng.vector<12>(-1, 1);
        const auto exact = weft::evaluate_bending(q, v, d, weft::PsdProjection::off);
        const auto gn = weft::evaluate_bending_gauss_newton(q, v, d);
        CHECK(gn.energy == Approx(exact.energy).margin(1e-14));
        CHECK((gn.elastic_force - exact.elastic_force).norm() <= 1e-12 * (1 + exact.elastic_force.norm()));
        CHECK((gn.dissipative_force - exact.dissipative_force).norm() <= 1e-12 * (1 + exact.dissipative_force.norm()));
        CHECK((gn.dissipative_force_jacobian_velocities - exact.dissipative_force_jacobian_velocities).norm() <=
              1e-12 * (1 + exact.dissipative_force_jacobian_velocities.norm()));
        CHECK(gn.dissipative_force_jacobian_positions.isZero(0));
        const Mat12 k = -gn.elastic_force_jacobian;
        REQUIRE(k.norm() > 0);
        CHECK((k - k.transpose()).norm() <= 1e-14 * k.norm());
        CHECK(weft_test::symmetric_eigenvalues(k).minCoeff() >= -1e-12 * k.norm());
        checks += 7;
    }
    // At the straight rest state ε = 0 and Ψ = 0: Gauss-Newton is the exact Hessian.
    const Vec12 q = straight_stencil();
    const Vec12 v = Vec12::Zero();
    const auto exact = weft::evaluate_bending(q, v, d, weft::PsdProjection::off);
    const auto gn = weft::evaluate_bending_gauss_newton(q, v, d);
    REQUIRE(exact.elastic_force_jacobian.norm() > 0);
    CHECK((gn.elastic_force_jacobian - exact.elastic_force_jacobian).norm() <=
          1e-10 * exact.elastic_force_jacobian.norm());
    REQUIRE(checks == 49);
}

namespace {

/// The same energy, dissipation potential, forces and status, to the bit.
void check_same_forces(const weft::BendingElementEval<double>& a, const weft::BendingElementEval<double>& b)
{
    CHECK(a.energy == b.energy);
    CHECK(a.dissipation_potential == b.dissipation_potential);
    CHECK(a.elastic_force == b.elastic_force);
    CHECK(a.dissipative_force == b.dissipative_force);
    CHECK(a.status == b.status);
}

}  // namespace

TEST_CASE("bending element: the forms without Hessians keep every other bit; Gauss-Newton and forces alone read none",
          "[element][bending][gauss-newton][gradients]")
{
    // bending_forms with StrainDerivatives::gradients, which the Gauss-Newton
    // element uses, must leave every Hessian zero and change no other bit:
    // below, inside and above the blend band, obtuse, straight, with a
    // collapsed arc length and with a zero-length segment.
    Random rng(72);
    const Densities d = weft::quadratic_bending_densities<double>(2.0, 0.3);
    std::vector<Vec12> stencils{straight_stencil()};
    for (double degrees : {1.0, 4.4, 4.8, 5.0, 5.3, 5.6, 30.0, 95.0, 120.0})
        stencils.push_back(stencil(random_frame(rng), deg(degrees)));
    Vec12 collapsed_size = stencil(random_frame(rng), deg(3.0));
    collapsed_size(11) = collapsed_size(3);  // Ω = 0: below the floor
    stencils.push_back(collapsed_size);
    Vec12 zero_segment = stencil(random_frame(rng), deg(2.0));
    zero_segment.segment<3>(8) = zero_segment.segment<3>(4);  // b = 0
    stencils.push_back(zero_segment);
    int in_band = 0, compared = 0, with_force = 0;
    for (const Vec12& q : stencils) {
        const Vec12 v = rng.vector<12>(-1, 1);
        const auto full = weft::bending_forms(q, v);
        const auto lean = weft::bending_forms(q, v, weft::BendingBlend<double>{}, weft::StrainDerivatives::gradients);
        REQUIRE(lean.angle_active == full.angle_active);
        REQUIRE(lean.vector_active == full.vector_active);
        CHECK(lean.status == full.status);
        CHECK(lean.angle == full.angle);
        weft_test::check_same_without_hessians(lean.angle_form, full.angle_form);
        weft_test::check_same_without_hessians(lean.vector_form, full.vector_form);
        if (full.angle_active && full.vector_active) ++in_band;

        // The Gauss-Newton element against its sums over the forms with Hessians.
        weft::BendingElementEval<double> reference = weft::detail::empty_bending_eval(full);
        if (full.vector_active)
            weft::detail::accumulate_bending_form(reference, full.vector_form, d.vector_elastic, d.vector_dissipative,
                                                  weft::StressClamp::off, true);
        if (full.angle_active)
            weft::detail::accumulate_bending_form(reference, full.angle_form, d.angle_elastic, d.angle_dissipative,
                                                  weft::StressClamp::off, true);
        const auto gn = weft::evaluate_bending_gauss_newton(q, v, d);
        check_same_forces(gn, reference);
        CHECK(gn.elastic_force_jacobian == reference.elastic_force_jacobian);
        CHECK(gn.dissipative_force_jacobian_velocities == reference.dissipative_force_jacobian_velocities);
        CHECK(gn.dissipative_force_jacobian_positions == reference.dissipative_force_jacobian_positions);

        // Forces alone (full Newton's line-search trials): the exact element's
        // energy, potential and forces to the bit, every Jacobian zero.
        const auto exact = weft::evaluate_bending(q, v, d, weft::PsdProjection::off, weft::StressClamp::off);
        const auto forces = weft::evaluate_bending_forces(q, v, d);
        check_same_forces(forces, exact);
        CHECK(forces.angle == exact.angle);
        CHECK(forces.blend_weight == exact.blend_weight);
        CHECK(forces.elastic_force_jacobian.isZero(0));
        CHECK(forces.dissipative_force_jacobian_velocities.isZero(0));
        CHECK(forces.dissipative_force_jacobian_positions.isZero(0));
        if (exact.elastic_force.norm() > 0) ++with_force;
        ++compared;
    }
    // The band's weighted sizes have Hessians that the lean forms leave out.
    REQUIRE(in_band >= 2);
    REQUIRE(with_force >= 10);
    REQUIRE(compared == 12);
}
