#include <cmath>

#include <weft/potential/quadratic.hpp>
#include <weft/strain/bending.hpp>

#include "support/element_checks.hpp"
#include "support/random.hpp"

using weft_test::FdChecker;
using weft_test::Random;
using weft_test::SuiteOptions;
using Vec12 = Eigen::Matrix<double, 12, 1>;
using Vec3 = Eigen::Vector3d;

namespace {

constexpr double pi = 3.14159265358979323846;
double deg(double degrees)
{
    return degrees * pi / 180.0;
}

// Checks per suite call (see tests/support/element_checks.hpp): M = 1 → 13;
// M = 3 → 13 + 2 per extra strain component = 17.
constexpr int scalar_suite_checks = 13;
constexpr int vector_suite_checks = 17;

/// A bending stencil: node 0 at x0, segments a = la·t and b = lb·(cos θ t + sin θ n).
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

Vec12 stencil(const Frame& f, double theta)
{
    const Vec3 a = f.la * f.t;
    const Vec3 b = f.lb * (std::cos(theta) * f.t + std::sin(theta) * f.n);
    Vec12 q;
    q << f.x0 - a, f.s_prev, f.x0, f.s_prev + f.size * f.la / (f.la + f.lb), f.x0 + b, f.s_prev + f.size;
    return q;
}

/// Rigid velocity t + ω × x on the positions, zero on the arc lengths.
Vec12 rigid_velocity(const Vec12& q, const Vec3& translation, const Vec3& omega)
{
    Vec12 v = Vec12::Zero();
    for (int node = 0; node < 3; ++node) v.segment<3>(4 * node) = translation + omega.cross(q.segment<3>(4 * node));
    return v;
}

auto angle_metric = [](const Vec12& q, const Vec12& v) { return weft::bending_angle_strain<double>(q, v); };
auto vector_metric = [](const Vec12& q, const Vec12& v) { return weft::bending_small_angle_strain<double>(q, v); };

}  // namespace

TEST_CASE("bending angle strain: derivatives match finite differences on random stencils",
          "[strain][bending][angle][gradient][hessian]")
{
    Random rng(11);
    FdChecker checker;
    int ran = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const Frame f = random_frame(rng);
        const Vec12 q = stencil(f, deg(rng.uniform(10, 170)));
        const Vec12 v = rng.vector<12>(-1, 1);
        weft::QuadraticDensity<double, 1> elastic{rng.uniform(1, 100)};
        weft::QuadraticDensity<double, 1> damping{rng.uniform(0.1, 2)};
        ran += weft_test::check_metric_and_densities(checker, angle_metric, q, v, elastic, damping);
    }
    REQUIRE(ran == 20 * scalar_suite_checks);
    REQUIRE(checker.checks == ran);
}

TEST_CASE("bending small-angle strain: derivatives match finite differences on random stencils",
          "[strain][bending][vector][gradient][hessian]")
{
    Random rng(12);
    FdChecker checker;
    int ran = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const Frame f = random_frame(rng);
        const Vec12 q = stencil(f, deg(rng.uniform(0.1, 60)));
        const Vec12 v = rng.vector<12>(-1, 1);
        weft::QuadraticDensity<double, 3> elastic{rng.uniform(1, 100)};
        weft::QuadraticDensity<double, 3> damping{rng.uniform(0.1, 2)};
        ran += weft_test::check_metric_and_densities(checker, vector_metric, q, v, elastic, damping);
    }
    REQUIRE(ran == 20 * vector_suite_checks);
    REQUIRE(checker.checks == ran);
}

TEST_CASE("bending angle strain: derivatives stay correct near pi", "[strain][bending][angle][edge]")
{
    Random rng(13);
    FdChecker checker;
    int ran = 0;
    for (double degrees : {175.0, 179.0, 179.9}) {
        const Frame f = random_frame(rng);
        const Vec12 q = stencil(f, deg(degrees));
        const Vec12 v = rng.vector<12>(-1, 1);
        const auto e = angle_metric(q, v);
        CHECK(e.strain(0) * e.size == Approx(deg(degrees)).epsilon(1e-12));
        // Hessian terms grow like 1/|a×b|: a smaller step keeps the FD error down.
        SuiteOptions options;
        options.hessian_step_scale = 0.1;
        ran += weft_test::check_metric_and_densities(checker, angle_metric, q, v, weft::QuadraticDensity<double, 1>{10},
                                                     weft::QuadraticDensity<double, 1>{1}, options);
    }
    REQUIRE(ran == 3 * scalar_suite_checks);
}

TEST_CASE("bending: derivatives hold for small delta s (yarn scale)", "[strain][bending][edge]")
{
    Random rng(14);
    FdChecker checker;
    checker.step = 1e-3 * 1e-5;  // segments ~1e-3: relative step 1e-5
    checker.tolerance = 1e-5;
    int ran = 0;
    for (int trial = 0; trial < 4; ++trial) {
        Frame f = random_frame(rng, 1e-3);
        f.size = 1e-4;  // Ω ~ 1e-4 with segment lengths ~1e-3 (Eulerian nodes pulled together)
        const Vec12 v = rng.vector<12>(-1, 1) * 1e-3;
        const Vec12 q_angle = stencil(f, deg(rng.uniform(10, 170)));
        ran += weft_test::check_metric_and_densities(checker, angle_metric, q_angle, v,
                                                     weft::QuadraticDensity<double, 1>{1e-5},
                                                     weft::QuadraticDensity<double, 1>{1e-8});
        const Vec12 q_vector = stencil(f, deg(rng.uniform(0.5, 10)));
        ran += weft_test::check_metric_and_densities(checker, vector_metric, q_vector, v,
                                                     weft::QuadraticDensity<double, 3>{1e-5},
                                                     weft::QuadraticDensity<double, 3>{1e-8});
    }
    REQUIRE(ran == 4 * (scalar_suite_checks + vector_suite_checks));
}

TEST_CASE("bending angle strain: values and the 2017 Eq. 17-18 strain rate on a planar stencil", "[strain][bending]")
{
    const double theta = deg(30);
    Vec12 q, v;
    // a = (2, 0, 0), b = 1·(cos θ, sin θ, 0), Ω = 4
    q << -2, 0, 0, 1, 0, 0, 0, 2, std::cos(theta), std::sin(theta), 0, 5;
    const Vec3 omega(0, 0, 0.7);  // x_next turns about x₀ at 0.7 rad/s → θ̇ = 0.7
    v.setZero();
    v.segment<3>(8) = omega.cross(q.segment<3>(8));
    v(11) = 0.2;  // Ω̇ = 0.2
    const auto e = weft::bending_angle_strain(q, v);
    CHECK(e.status == weft::StrainStatus::ok);
    CHECK(e.size == Approx(4.0));
    CHECK(e.strain(0) == Approx(theta / 4.0));
    // ε̇ = (θ̇ − ε Ω̇)/Ω
    CHECK(e.rate(0) == Approx((0.7 - theta / 4.0 * 0.2) / 4.0));
}

TEST_CASE("bending small-angle strain: values and the 2017 Eq. 20-21 strain rate on a planar stencil",
          "[strain][bending][vector]")
{
    const double theta = deg(3);
    Vec12 q, v;
    q << -2, 0, 0, 1, 0, 0, 0, 2, std::cos(theta), std::sin(theta), 0, 5;
    v.setZero();
    v.segment<3>(8) = Vec3(0, 0, 0.7).cross(q.segment<3>(8));
    v(11) = 0.2;
    const auto e = weft::bending_small_angle_strain(q, v);
    CHECK(e.status == weft::StrainStatus::ok);
    // k = a×b/(a·b) = tan θ ẑ; k̇ = θ̇/cos²θ ẑ
    CHECK(e.strain(0) == Approx(0).margin(1e-15));
    CHECK(e.strain(1) == Approx(0).margin(1e-15));
    CHECK(e.strain(2) == Approx(std::tan(theta) / 4.0));
    const double k_dot = 0.7 / (std::cos(theta) * std::cos(theta));
    CHECK(e.rate(2) == Approx((k_dot - std::tan(theta) / 4.0 * 0.2) / 4.0));
    CHECK(e.rate.head<2>().norm() < 1e-15);
}

TEST_CASE("bending small-angle strain: well defined at zero angle", "[strain][bending][vector][edge]")
{
    // Axis-aligned so that a × b is exactly zero.
    Vec12 q, v;
    q << -0.7, 0.2, 0.1, 0.0, 0.3, 0.2, 0.1, 0.6, 1.4, 0.2, 0.1, 1.5;
    Random rng(15);
    v = rng.vector<12>(-1, 1);
    const auto e = vector_metric(q, v);
    REQUIRE(e.status == weft::StrainStatus::ok);
    CHECK(e.strain.norm() == 0.0);
    CHECK(e.rate.norm() > 0.1);
    FdChecker checker;
    for (int k = 0; k < 3; ++k) {
        if (k == 0) {
            // k_x: a, b along x, so a × b has no x component to first order.
            CHECK(e.gradient.col(0).norm() == 0.0);
        } else {
            checker.gradient([&](const weft_test::VectorX& qq) { return vector_metric(Vec12(qq), v).strain(k); }, q,
                             weft_test::VectorX(e.gradient.col(k)), "strain gradient at theta = 0");
        }
        checker.jacobian(
            [&](const weft_test::VectorX& qq) {
                return weft_test::VectorX(vector_metric(Vec12(qq), v).gradient.col(k));
            },
            q, weft_test::MatrixX(e.hessian[k]), "strain Hessian at theta = 0");
    }
    // Dissipative force: finite and in the range of the (well-defined) gradient.
    weft::QuadraticDensity<double, 3> damping{1.0};
    const Vec12 fd = weft::dissipative_force(e, damping);
    CHECK(fd.allFinite());
    CHECK(fd.norm() > 0);
    REQUIRE(checker.checks == 5);
}

TEST_CASE("bending angle strain: a parallel stencil falls back to finite values with a status",
          "[strain][bending][angle][edge]")
{
    Random rng(16);
    const Vec12 v = rng.vector<12>(-1, 1);
    int ran = 0;
    for (double sign : {1.0, -1.0}) {  // θ = 0 and θ = π
        Vec12 q;
        q << -0.7, 0.2, 0.1, 0.0, 0.3, 0.2, 0.1, 0.6, 0.3 + sign * 1.1, 0.2, 0.1, 1.5;
        const auto e = angle_metric(q, v);
        CHECK(e.status == weft::StrainStatus::parallel_segments);
        CHECK(e.strain(0) * e.size == Approx(sign > 0 ? 0.0 : pi).margin(1e-15));
        CHECK(e.gradient.allFinite());
        CHECK(e.gradient.norm() > 0);
        CHECK(e.hessian[0].allFinite());
        CHECK(std::isfinite(e.rate(0)));
        // The fallback rate is the fallback gradient's: ε̇ = ∇εᵀv.
        CHECK(e.rate(0) == Approx(e.gradient.col(0).dot(v)).margin(1e-12));
        ++ran;
    }
    REQUIRE(ran == 2);
}

TEST_CASE("bending: obtuse, degenerate and collapsed stencils give finite values and a status",
          "[strain][bending][edge]")
{
    Random rng(17);
    const Vec12 v = rng.vector<12>(-1, 1);
    const Frame f = random_frame(rng);
    Vec12 right_angle;  // a·b = 0 exactly
    right_angle << -1, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 3;
    for (const Vec12& q : {right_angle, stencil(f, deg(120)), stencil(f, deg(180))}) {
        const auto e = vector_metric(q, v);
        CHECK(e.status == weft::StrainStatus::obtuse_small_angle);
        CHECK(e.strain.allFinite());
        CHECK(e.gradient.allFinite());
        CHECK(e.gradient.norm() > 0);
        for (int k = 0; k < 3; ++k) CHECK(e.hessian[k].allFinite());
        CHECK(e.rate.allFinite());
    }
    Vec12 q = stencil(f, deg(40));
    q.segment<3>(0) = q.segment<3>(4);  // a = 0
    for (const auto status : {angle_metric(q, v).status, vector_metric(q, v).status}) {
        CHECK(status == weft::StrainStatus::degenerate_segment);
    }
    CHECK(angle_metric(q, v).gradient.allFinite());
    CHECK(std::isfinite(angle_metric(q, v).rate(0)));
    CHECK(vector_metric(q, v).rate.allFinite());

    q = stencil(f, deg(40));
    q(11) = q(3);  // Ω = 0
    const auto ea = angle_metric(q, v);
    const auto ev = vector_metric(q, v);
    CHECK(ea.status == weft::StrainStatus::degenerate_arc_length);
    CHECK(ev.status == weft::StrainStatus::degenerate_arc_length);
    CHECK(std::isfinite(ea.strain(0)));
    CHECK(ea.hessian[0].allFinite());
    CHECK(ev.strain.allFinite());
    CHECK(ev.hessian[2].allFinite());
}

TEST_CASE("bending: the two forms' energies agree to leading order at small angles (2018 Eq. 23)",
          "[strain][bending][energy]")
{
    Random rng(18);
    const Frame f = random_frame(rng);
    const Vec12 v = Vec12::Zero();
    weft::QuadraticDensity<double, 1> scalar{3.0};
    weft::QuadraticDensity<double, 3> vector{3.0};
    int ran = 0;
    for (double theta : {1e-1, 1e-2, 1e-3}) {
        const Vec12 q = stencil(f, theta);
        const double v_theta = weft::elastic_energy(angle_metric(q, v), scalar);
        const double v_k = weft::elastic_energy(vector_metric(q, v), vector);
        REQUIRE(v_k > 0);
        // θ²/tan²θ = 1 − (2/3)θ² + O(θ⁴)
        const double ratio = v_theta / v_k;
        CHECK(std::abs(ratio - 1.0) <= theta * theta);
        CHECK((1.0 - ratio) / (theta * theta) == Approx(2.0 / 3.0).epsilon(1e-2));
        ++ran;
    }
    REQUIRE(ran == 3);
}

TEST_CASE("bending: rigid translation has zero strain rate and no dissipative force", "[strain][bending][rigid]")
{
    Random rng(19);
    int ran = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const Frame f = random_frame(rng);
        const Vec12 q_angle = stencil(f, deg(rng.uniform(1, 179)));
        const Vec12 q_vector = stencil(f, deg(rng.uniform(0, 60)));
        const Vec3 t = rng.vector<3>(-1, 1);
        const auto ea = angle_metric(q_angle, rigid_velocity(q_angle, t, Vec3::Zero()));
        const auto ev = vector_metric(q_vector, rigid_velocity(q_vector, t, Vec3::Zero()));
        REQUIRE(ea.gradient.norm() > 0);
        REQUIRE(ev.gradient.norm() > 0);
        CHECK(std::abs(ea.rate(0)) < 1e-13);
        CHECK(ev.rate.norm() < 1e-13);
        CHECK(weft::dissipative_force(ea, weft::QuadraticDensity<double, 1>{1}).norm() < 1e-12);
        CHECK(weft::dissipative_force(ev, weft::QuadraticDensity<double, 3>{1}).norm() < 1e-12);
        ++ran;
    }
    REQUIRE(ran == 10);
}

TEST_CASE("bending angle strain: rigid rotation has zero strain rate", "[strain][bending][angle][rigid]")
{
    Random rng(20);
    int ran = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const Frame f = random_frame(rng);
        const Vec12 q = stencil(f, deg(rng.uniform(1, 179)));
        const Vec12 v = rigid_velocity(q, rng.vector<3>(-1, 1), rng.vector<3>(-2, 2));
        const auto e = angle_metric(q, v);
        REQUIRE(e.gradient.norm() > 0);
        CHECK(std::abs(e.rate(0)) < 1e-12);
        CHECK(std::abs(e.gradient.col(0).dot(v)) < 1e-12);
        CHECK(weft::dissipative_force(e, weft::QuadraticDensity<double, 1>{1}).norm() < 1e-12);
        ++ran;
    }
    REQUIRE(ran == 10);
}

TEST_CASE("bending small-angle strain: rigid rotation turns the strain vector, rate = omega x strain",
          "[strain][bending][vector][rigid]")
{
    // The vector k rotates with the bending plane, so the published small-angle
    // metric is not rotation invariant: ε̇_k = ω × ε_k. It vanishes on a straight
    // stencil and for rotations about k, which is what the blend relies on.
    Random rng(21);
    int ran = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const Frame f = random_frame(rng);
        const Vec12 q = stencil(f, deg(rng.uniform(0.5, 5.5)));
        const Vec3 omega = rng.vector<3>(-2, 2);
        const auto e = vector_metric(q, rigid_velocity(q, rng.vector<3>(-1, 1), omega));
        const Vec3 expected = omega.cross(Vec3(e.strain));
        REQUIRE(expected.norm() > 0);
        CHECK((Vec3(e.rate) - expected).norm() <= 1e-12 * expected.norm());
        CHECK(Vec3(e.rate).norm() <= omega.norm() * Vec3(e.strain).norm() * (1 + 1e-12));

        const Vec3 axis = Vec3(e.strain).normalized();  // rotation about k: no strain rate
        const auto e_about_k = vector_metric(q, rigid_velocity(q, rng.vector<3>(-1, 1), 1.3 * axis));
        CHECK(Vec3(e_about_k.rate).norm() < 1e-12);
        ++ran;
    }
    Vec12 straight;
    straight << -0.7, 0.2, 0.1, 0.0, 0.3, 0.2, 0.1, 0.6, 1.4, 0.2, 0.1, 1.5;
    const auto e0 = vector_metric(straight, rigid_velocity(straight, Vec3(0.1, 0.2, 0.3), Vec3(1, -2, 0.5)));
    REQUIRE(e0.gradient.norm() > 0);
    CHECK(Vec3(e0.rate).norm() < 1e-12);
    REQUIRE(ran == 10);
}

TEST_CASE("bending: dissipated power is never positive", "[strain][bending][dissipation]")
{
    Random rng(22);
    int ran = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const Frame f = random_frame(rng);
        const Vec12 v = rng.vector<12>(-1, 1);
        weft::QuadraticDensity<double, 1> d1{rng.uniform(0.1, 2)};
        weft::QuadraticDensity<double, 3> d3{d1.stiffness};
        const auto ea = angle_metric(stencil(f, deg(rng.uniform(1, 179))), v);
        const auto ev = vector_metric(stencil(f, deg(rng.uniform(0, 60))), v);
        const double pa = weft::dissipative_force(ea, d1).dot(v);
        const double pv = weft::dissipative_force(ev, d3).dot(v);
        CHECK(pa <= 0);
        CHECK(pv <= 0);
        // −f_d·v = Ω S_d·ε̇ = 2 V_d for a quadratic density.
        CHECK(-pa == Approx(2 * weft::dissipation_potential(ea, d1)).epsilon(1e-10));
        CHECK(-pv == Approx(2 * weft::dissipation_potential(ev, d3)).epsilon(1e-10));
        ++ran;
    }
    REQUIRE(ran == 20);
}

TEMPLATE_TEST_CASE("bending: float and double agree", "[strain][bending][float]", float, double)
{
    Random rng(23);
    const Frame f = random_frame(rng);
    const Vec12 v = rng.vector<12>(-1, 1);
    int ran = 0;
    for (double degrees : {3.0, 30.0, 150.0}) {
        const Vec12 q = stencil(f, deg(degrees));
        const weft::Vec<TestType, 12> qt = q.cast<TestType>();
        const weft::Vec<TestType, 12> vt = v.cast<TestType>();
        // Reference in double from the same (rounded) input.
        const Vec12 qr = qt.template cast<double>();
        const Vec12 vr = vt.template cast<double>();
        const auto at = weft::bending_angle_strain<TestType>(qt, vt);
        const auto ad = weft::bending_angle_strain<double>(qr, vr);
        CHECK(double(at.strain(0)) == Approx(ad.strain(0)).epsilon(1e-5));
        CHECK(double(at.rate(0)) == Approx(ad.rate(0)).epsilon(1e-4));
        CHECK((at.gradient.template cast<double>() - ad.gradient).norm() <= 1e-5 * ad.gradient.norm());
        CHECK((at.hessian[0].template cast<double>() - ad.hessian[0]).norm() <= 1e-4 * ad.hessian[0].norm());
        if (degrees < 90) {
            const auto vt_eval = weft::bending_small_angle_strain<TestType>(qt, vt);
            const auto vd_eval = weft::bending_small_angle_strain<double>(qr, vr);
            CHECK((vt_eval.strain.template cast<double>() - vd_eval.strain).norm() <= 1e-5 * vd_eval.strain.norm());
            CHECK((vt_eval.rate.template cast<double>() - vd_eval.rate).norm() <= 1e-4 * vd_eval.rate.norm());
            CHECK((vt_eval.gradient.template cast<double>() - vd_eval.gradient).norm() <=
                  1e-5 * vd_eval.gradient.norm());
        }
        ++ran;
    }
    REQUIRE(ran == 3);
}

TEST_CASE("sandwich: a s b^T with coefficient-based products equals Eigen's product, at the element sizes",
          "[strain][core]")
{
    // The element Hessians' congruences (P^T H P, grad S grad^T) go through
    // weft::sandwich instead of Eigen's GEMM path; the results agree to
    // rounding.
    Random rng(211);
    int checked = 0;
    const auto check = [&](auto a, auto s, auto b) {
        a.setRandom();
        s.setRandom();
        b.setRandom();
        a *= rng.uniform(0.5, 2.0);
        const auto expected = (a * s * b.transpose()).eval();
        const auto got = weft::sandwich<double, decltype(a)::RowsAtCompileTime, decltype(s)::RowsAtCompileTime,
                                        decltype(b)::RowsAtCompileTime>(a, s, b);
        CHECK((got - expected).norm() <= 1e-13 * expected.norm());
        CHECK(expected.norm() > 0);
        ++checked;
    };
    for (int k = 0; k < 5; ++k) {
        check(Eigen::Matrix<double, 12, 7>(), Eigen::Matrix<double, 7, 7>(), Eigen::Matrix<double, 12, 7>());
        check(Eigen::Matrix<double, 12, 6>(), Eigen::Matrix<double, 6, 6>(), Eigen::Matrix<double, 12, 6>());
        check(Eigen::Matrix<double, 12, 9>(), Eigen::Matrix<double, 9, 9>(), Eigen::Matrix<double, 12, 9>());
        check(Eigen::Matrix<double, 12, 3>(), Eigen::Matrix<double, 3, 3>(), Eigen::Matrix<double, 12, 3>());
        check(Eigen::Matrix<double, 12, 1>(), Eigen::Matrix<double, 1, 1>(), Eigen::Matrix<double, 12, 1>());
        check(Eigen::Matrix<double, 8, 2>(), Eigen::Matrix<double, 2, 2>(), Eigen::Matrix<double, 9, 2>());
    }
    CHECK(checked == 30);
}
