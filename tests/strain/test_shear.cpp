#include <cmath>
#include <vector>

#include <weft/potential/quadratic.hpp>
#include <weft/strain/shear.hpp>

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

// Checks per suite call with a constant size: 13 − 1 (the size Hessian check
// is replaced by one "zero size gradient" comparison) = 12.
constexpr int shear_suite_checks = 12;

/// A crossing at x0 with yarn directions t (node 1) and cos φ t + sin φ n (node 2).
struct Crossing {
    Vec3 x0, t, n;
    double la, lb;
    Eigen::Vector3d s;
};

Crossing random_crossing(Random& rng, double length_scale = 1.0)
{
    Crossing c;
    c.x0 = rng.vector<3>(-1, 1);
    c.t = rng.unit_vector();
    Vec3 u;
    do {
        u = rng.unit_vector();
    } while (c.t.cross(u).norm() < 0.3);
    c.n = c.t.cross(u).normalized();
    c.la = length_scale * rng.uniform(0.5, 2.0);
    c.lb = length_scale * rng.uniform(0.5, 2.0);
    c.s = rng.vector<3>(-1, 1);
    return c;
}

Vec12 crossing(const Crossing& c, double phi)
{
    Vec12 q;
    q << c.x0, c.s(0), c.x0 + c.la * c.t, c.s(1), c.x0 + c.lb * (std::cos(phi) * c.t + std::sin(phi) * c.n), c.s(2);
    return q;
}

Vec12 rigid_velocity(const Vec12& q, const Vec3& translation, const Vec3& omega)
{
    Vec12 v = Vec12::Zero();
    for (int node = 0; node < 3; ++node) v.segment<3>(4 * node) = translation + omega.cross(q.segment<3>(4 * node));
    return v;
}

struct ShearMetric {
    double rest_spacing;
    weft::ShearEval<double> operator()(const Vec12& q, const Vec12& v) const
    {
        return weft::shear_strain<double>(q, v, rest_spacing);
    }
};

SuiteOptions constant_size()
{
    SuiteOptions options;
    options.size_is_constant = true;
    return options;
}

}  // namespace

TEST_CASE("shear: derivatives match finite differences on random crossings", "[strain][shear][gradient][hessian]")
{
    Random rng(31);
    FdChecker checker;
    int ran = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const Vec12 q = crossing(random_crossing(rng), deg(rng.uniform(20, 160)));
        const Vec12 v = rng.vector<12>(-1, 1);
        weft::QuadraticDensity<double, 1> elastic{rng.uniform(1, 100)};
        weft::QuadraticDensity<double, 1> damping{rng.uniform(0.1, 2)};
        ran += weft_test::check_metric_and_densities(checker, ShearMetric{rng.uniform(0.5, 2)}, q, v, elastic, damping,
                                                     constant_size());
    }
    REQUIRE(ran == 20 * shear_suite_checks);
    REQUIRE(checker.checks == ran);
}

TEST_CASE("shear: exact and smooth at the right angle", "[strain][shear][edge]")
{
    Random rng(32);
    FdChecker checker;
    // Stresses ~1e-6 are tiny next to the strain's curvature: a smaller step
    // keeps the O(h²) truncation error below the tolerance.
    checker.step = 1e-7;
    int ran = 0;
    for (double offset : {1e-6, -1e-6, 1e-3}) {
        const Crossing c = random_crossing(rng);
        const Vec12 q = crossing(c, pi / 2 + offset);
        const Vec12 v = rng.vector<12>(-1, 1);
        const auto e = weft::shear_strain(q, v, 1.0);
        CHECK(e.strain(0) == Approx(offset).margin(1e-15));
        // |∇ε| = |∂φ/∂a| + ... is 1/|a| (resp. 1/|b|) per moving node: non-zero at π/2.
        CHECK(e.gradient.norm() > 0.5 / std::max(c.la, c.lb));
        ran += weft_test::check_metric_and_densities(checker, ShearMetric{1.0}, q, v,
                                                     weft::QuadraticDensity<double, 1>{10},
                                                     weft::QuadraticDensity<double, 1>{1}, constant_size());
    }
    // Exactly π/2 (axis-aligned, a·b = 0): zero strain and elastic force, but
    // a regular gradient and Hessian, and a well-defined dissipative force.
    Vec12 q;
    q << 0.1, 0.2, 0.3, 0, 1.1, 0.2, 0.3, 1, 0.1, 0.9, 0.3, 2;
    const Vec12 v = rng.vector<12>(-1, 1);
    const ShearMetric metric{1.0};
    const auto e = metric(q, v);
    CHECK(e.strain(0) == 0.0);
    using weft_test::MatrixX;
    using weft_test::VectorX;
    checker.gradient([&](const VectorX& qq) { return metric(Vec12(qq), v).strain(0); }, q, VectorX(e.gradient),
                     "strain gradient at pi/2");
    checker.jacobian([&](const VectorX& qq) { return VectorX(metric(Vec12(qq), v).gradient); }, q,
                     MatrixX(e.hessian[0]), "strain Hessian at pi/2");
    weft::QuadraticDensity<double, 1> damping{2.0};
    checker.gradient([&](const VectorX& vv) { return -weft::dissipation_potential(metric(q, Vec12(vv)), damping); }, v,
                     VectorX(weft::dissipative_force(e, damping)), "dissipative force at pi/2");
    REQUIRE(ran == 3 * shear_suite_checks);
    REQUIRE(checker.checks == ran + 3);
}

TEST_CASE("shear: derivatives hold at yarn scale (L ~ 1e-4, segments ~ 1e-3)", "[strain][shear][edge]")
{
    Random rng(33);
    FdChecker checker;
    checker.step = 1e-3 * 1e-5;
    checker.tolerance = 1e-5;
    int ran = 0;
    for (int trial = 0; trial < 4; ++trial) {
        const Vec12 q = crossing(random_crossing(rng, 1e-3), deg(rng.uniform(60, 120)));
        const Vec12 v = rng.vector<12>(-1, 1) * 1e-3;
        ran += weft_test::check_metric_and_densities(checker, ShearMetric{1e-4}, q, v,
                                                     weft::QuadraticDensity<double, 1>{1e-3},
                                                     weft::QuadraticDensity<double, 1>{1e-7}, constant_size());
    }
    REQUIRE(ran == 4 * shear_suite_checks);
}

TEST_CASE("shear: values and strain rate on a planar crossing", "[strain][shear]")
{
    const double phi = deg(70);
    Vec12 q, v;
    q << 0, 0, 0, 0.5, 2, 0, 0, 1.5, std::cos(phi), std::sin(phi), 0, -0.5;
    v.setZero();
    v.segment<3>(8) = Vec3(0, 0, 0.4).cross(q.segment<3>(8));  // opens the crossing at 0.4 rad/s
    v(3) = 1.0;                                                // sliding does not shear
    const auto e = weft::shear_strain(q, v, 0.25);
    CHECK(e.status == weft::StrainStatus::ok);
    CHECK(e.strain(0) == Approx(phi - pi / 2));
    CHECK(e.rate(0) == Approx(0.4));
    CHECK(e.size == 0.25);
    CHECK(e.size_gradient.norm() == 0.0);
    CHECK(e.size_hessian.norm() == 0.0);
}

TEST_CASE("shear: arc-length coordinates do not enter the strain", "[strain][shear]")
{
    Random rng(34);
    const Vec12 q = crossing(random_crossing(rng), deg(75));
    const auto e = weft::shear_strain(q, rng.vector<12>(-1, 1), 1.0);
    REQUIRE(e.gradient.norm() > 0);
    REQUIRE(e.hessian[0].norm() > 0);
    int ran = 0;
    for (int s : {3, 7, 11}) {
        CHECK(e.gradient(s, 0) == 0.0);
        CHECK(e.hessian[0].row(s).norm() == 0.0);
        CHECK(e.hessian[0].col(s).norm() == 0.0);
        ++ran;
    }
    REQUIRE(ran == 3);
}

TEST_CASE("shear: folded crossings (phi at 0 or pi) fall back to finite values with a status", "[strain][shear][edge]")
{
    Random rng(35);
    const Vec12 v = rng.vector<12>(-1, 1);
    int ran = 0;
    for (double sign : {1.0, -1.0}) {
        Vec12 q;  // axis-aligned so that a × b is exactly zero
        q << 0.1, 0.2, 0.3, 0, 1.1, 0.2, 0.3, 1, 0.1 + sign * 0.7, 0.2, 0.3, 2;
        const auto e = weft::shear_strain(q, v, 1.0);
        CHECK(e.status == weft::StrainStatus::parallel_segments);
        CHECK(e.strain(0) == Approx(sign > 0 ? -pi / 2 : pi / 2));
        CHECK(e.gradient.allFinite());
        CHECK(e.gradient.norm() > 0);
        CHECK(e.hessian[0].allFinite());
        CHECK(std::isfinite(e.rate(0)));
        CHECK(weft::dissipative_force(e, weft::QuadraticDensity<double, 1>{1}).allFinite());
        ++ran;
    }
    // Nearly folded but not parallel: regular, large but finite derivatives.
    const Crossing c = random_crossing(rng);
    for (double phi : {1e-9, pi - 1e-9}) {
        const auto e = weft::shear_strain(crossing(c, phi), v, 1.0);
        CHECK(e.status == weft::StrainStatus::ok);
        CHECK(e.gradient.allFinite());
        CHECK(e.hessian[0].allFinite());
        ++ran;
    }
    Vec12 q = crossing(c, deg(80));
    q.segment<3>(4) = q.segment<3>(0);  // a = 0
    const auto e = weft::shear_strain(q, v, 1.0);
    CHECK(e.status == weft::StrainStatus::degenerate_segment);
    CHECK(std::isfinite(e.strain(0)));
    CHECK(e.gradient.allFinite());
    CHECK(std::isfinite(e.rate(0)));
    REQUIRE(ran == 4);
}

TEST_CASE("shear: rigid motion has zero strain rate and no dissipative force", "[strain][shear][rigid]")
{
    Random rng(36);
    int ran = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const Vec12 q = crossing(random_crossing(rng), deg(rng.uniform(10, 170)));
        const Vec12 v = rigid_velocity(q, rng.vector<3>(-1, 1), rng.vector<3>(-2, 2));
        const auto e = weft::shear_strain(q, v, 0.5);
        REQUIRE(e.gradient.norm() > 0);
        CHECK(std::abs(e.rate(0)) < 1e-12);
        CHECK(weft::dissipative_force(e, weft::QuadraticDensity<double, 1>{1}).norm() < 1e-12);
        ++ran;
    }
    REQUIRE(ran == 10);
}

TEST_CASE("shear: dissipated power is never positive", "[strain][shear][dissipation]")
{
    Random rng(37);
    int ran = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const Vec12 q = crossing(random_crossing(rng), deg(rng.uniform(10, 170)));
        const Vec12 v = rng.vector<12>(-1, 1);
        const auto e = weft::shear_strain(q, v, rng.uniform(0.1, 2));
        weft::QuadraticDensity<double, 1> damping{rng.uniform(0.1, 2)};
        const double power = weft::dissipative_force(e, damping).dot(v);
        CHECK(power <= 0);
        CHECK(-power == Approx(2 * weft::dissipation_potential(e, damping)).epsilon(1e-10));
        ++ran;
    }
    REQUIRE(ran == 20);
}

TEMPLATE_TEST_CASE("shear: float and double agree", "[strain][shear][float]", float, double)
{
    Random rng(38);
    const Crossing c = random_crossing(rng);
    const Vec12 v = rng.vector<12>(-1, 1);
    int ran = 0;
    for (double degrees : {30.0, 89.0, 150.0}) {
        const weft::Vec<TestType, 12> qt = crossing(c, deg(degrees)).cast<TestType>();
        const weft::Vec<TestType, 12> vt = v.cast<TestType>();
        const auto et = weft::shear_strain<TestType>(qt, vt, TestType(0.5));
        const auto ed = weft::shear_strain<double>(qt.template cast<double>(), vt.template cast<double>(), 0.5);
        CHECK(double(et.strain(0)) == Approx(ed.strain(0)).epsilon(1e-5));
        CHECK(double(et.rate(0)) == Approx(ed.rate(0)).epsilon(1e-4));
        CHECK((et.gradient.template cast<double>() - ed.gradient).norm() <= 1e-5 * ed.gradient.norm());
        CHECK((et.hessian[0].template cast<double>() - ed.hessian[0]).norm() <= 1e-4 * ed.hessian[0].norm());
        ++ran;
    }
    REQUIRE(ran == 3);
}

TEST_CASE("shear: without Hessians every other output keeps its bits", "[strain][shear][gradients]")
{
    // StrainDerivatives::gradients (the Gauss-Newton element's evaluation)
    // must change nothing but the Hessians, which it leaves zero: on random
    // crossings, near the folds, exactly folded and with a zero segment.
    Random rng(36);
    std::vector<Vec12> crossings;
    for (double phi : {deg(90), deg(60), deg(125), 1e-9, pi - 1e-9})
        crossings.push_back(crossing(random_crossing(rng), phi));
    Vec12 folded;  // a × b exactly zero
    folded << 0.1, 0.2, 0.3, 0, 1.1, 0.2, 0.3, 1, -0.6, 0.2, 0.3, 2;
    crossings.push_back(folded);
    Vec12 collapsed = crossing(random_crossing(rng), deg(80));
    collapsed.segment<3>(4) = collapsed.segment<3>(0);
    crossings.push_back(collapsed);
    int compared = 0;
    for (const Vec12& q : crossings) {
        const Vec12 v = rng.vector<12>(-1, 1);
        const auto full = weft::shear_strain(q, v, 0.7);
        const auto lean = weft::shear_strain(q, v, 0.7, weft::StrainDerivatives::gradients);
        weft_test::check_same_without_hessians(lean, full);
        const auto angle =
            weft::angle_derivatives(Vec3(q.segment<3>(4) - q.segment<3>(0)), Vec3(q.segment<3>(8) - q.segment<3>(0)));
        const auto angle_lean =
            weft::angle_derivatives(Vec3(q.segment<3>(4) - q.segment<3>(0)), Vec3(q.segment<3>(8) - q.segment<3>(0)),
                                    weft::StrainDerivatives::gradients);
        CHECK(angle_lean.angle == angle.angle);
        CHECK(angle_lean.normal == angle.normal);
        CHECK(angle_lean.gradient == angle.gradient);
        CHECK(angle_lean.hessian.isZero(0));
        ++compared;
    }
    // The regular crossings do have Hessians to leave out.
    CHECK(weft::shear_strain(crossings[1], Vec12(Vec12::Zero()), 0.7).hessian[0].norm() > 0);
    REQUIRE(compared == 7);
}
