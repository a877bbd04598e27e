#include <weft/potential/stvk.hpp>
#include <weft/strain/green_strain.hpp>

#include <Eigen/Geometry>
#include <cmath>
#include <limits>

#include "support/element_checks.hpp"
#include "support/random.hpp"

using weft_test::FdChecker;
using weft_test::Random;
using Vec9 = Eigen::Matrix<double, 9, 1>;
using Vec2d = Eigen::Vector2d;

namespace {

/// Rest (u,v) coordinates of a random, reasonably shaped triangle.
weft::TriangleRest<double> random_rest(Random& rng)
{
    for (;;) {
        const Vec2d a = rng.vector<2>(-1, 1), b = rng.vector<2>(-1, 1), c = rng.vector<2>(-1, 1);
        const double area = 0.5 * std::abs((b - a).x() * (c - a).y() - (b - a).y() * (c - a).x());
        if (area > 0.1) return weft::make_triangle_rest<double>(a, b, c);
    }
}

/// Deformed positions: the rest triangle placed in 3D by a random rotation,
/// then perturbed so that all three strain components are non-zero.
Vec9 random_deformed(Random& rng, const Vec2d& uv0, const Vec2d& uv1, const Vec2d& uv2, double noise)
{
    const Eigen::Matrix3d r = weft_test::random_rotation(rng);
    const Eigen::Vector3d t = rng.vector<3>(-1, 1);
    Vec9 q;
    const Vec2d uv[3] = {uv0, uv1, uv2};
    for (int a = 0; a < 3; ++a) {
        q.segment<3>(3 * a) = r * Eigen::Vector3d(uv[a].x(), uv[a].y(), 0.0) + t + noise * rng.vector<3>(-1, 1);
    }
    return q;
}

/// Rest (u,v) coordinates recovered from a rest state (X₀ = 0).
void rest_coordinates(const weft::TriangleRest<double>& rest, Vec2d& uv0, Vec2d& uv1, Vec2d& uv2)
{
    const Eigen::Matrix2d dm = rest.dm_inverse.inverse();
    uv0 = Vec2d::Zero();
    uv1 = dm.col(0);
    uv2 = dm.col(1);
}

/// Reference Green strain (Voigt) computed directly from F = Ds Dm⁻¹.
Eigen::Vector3d reference_strain(const weft::TriangleRest<double>& rest, const Vec9& q)
{
    Eigen::Matrix<double, 3, 2> ds;
    ds.col(0) = q.segment<3>(3) - q.segment<3>(0);
    ds.col(1) = q.segment<3>(6) - q.segment<3>(0);
    const Eigen::Matrix<double, 3, 2> f = ds * rest.dm_inverse;
    const Eigen::Matrix2d e = 0.5 * (f.transpose() * f - Eigen::Matrix2d::Identity());
    return Eigen::Vector3d(e(0, 0), e(1, 1), e(0, 1));
}

/// Rigid velocity field t + ω × x at the three nodes.
Vec9 rigid_velocity(const Vec9& q, const Eigen::Vector3d& t, const Eigen::Vector3d& omega)
{
    Vec9 v;
    for (int a = 0; a < 3; ++a) v.segment<3>(3 * a) = t + omega.cross(Eigen::Vector3d(q.segment<3>(3 * a)));
    return v;
}

}  // namespace

TEST_CASE("green strain: derivatives match finite differences on random triangles",
          "[strain][green_strain][gradient][hessian]")
{
    Random rng(11);
    FdChecker checker;
    weft_test::SuiteOptions options;
    options.size_is_constant = true;
    int ran = 0;
    constexpr int trials = 20;
    for (int trial = 0; trial < trials; ++trial) {
        const weft::TriangleRest<double> rest = random_rest(rng);
        Vec2d uv0, uv1, uv2;
        rest_coordinates(rest, uv0, uv1, uv2);
        const Vec9 q = random_deformed(rng, uv0, uv1, uv2, 0.3);
        const Vec9 v = rng.vector<9>(-1, 1);
        const weft::StVKDensity<double> elastic{rng.uniform(0, 50), rng.uniform(1, 100)};
        const weft::StVKDensity<double> damping{rng.uniform(0, 1), rng.uniform(0.1, 2)};
        auto metric = [&rest](const Vec9& qq, const Vec9& vv) { return weft::green_strain<double>(rest, qq, vv); };
        ran += weft_test::check_metric_and_densities(checker, metric, q, v, elastic, damping, options);
    }
    // 3 components × (gradient, Hessian) + 2 rate + 1 size + 2 elastic + 2 dissipative + 3 ∂f_d/∂q
    REQUIRE(ran == trials * 16);
    REQUIRE(checker.checks == ran);
}

TEST_CASE("green strain: values and Eq. 17 rate agree with F = Ds Dm^-1 and with d/dt", "[strain][green_strain][rate]")
{
    Random rng(12);
    int checks = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const weft::TriangleRest<double> rest = random_rest(rng);
        Vec2d uv0, uv1, uv2;
        rest_coordinates(rest, uv0, uv1, uv2);
        const Vec9 q = random_deformed(rng, uv0, uv1, uv2, 0.4);
        const Vec9 v = rng.vector<9>(-2, 2);
        const auto e = weft::green_strain(rest, q, v);
        REQUIRE(e.status == weft::StrainStatus::ok);
        REQUIRE(e.rate.norm() > 1e-3);

        const Eigen::Vector3d expected = reference_strain(rest, q);
        CHECK((e.strain - expected).norm() <= 1e-13 * std::max(1.0, expected.norm()));

        // 2018 Eq. (17) with V Dm⁻¹ built independently.
        Eigen::Matrix<double, 3, 2> ds, vs;
        ds << q.segment<3>(3) - q.segment<3>(0), q.segment<3>(6) - q.segment<3>(0);
        vs << v.segment<3>(3) - v.segment<3>(0), v.segment<3>(6) - v.segment<3>(0);
        const Eigen::Matrix<double, 3, 2> f = ds * rest.dm_inverse, f_dot = vs * rest.dm_inverse;
        const Eigen::Matrix2d rate = 0.5 * (f.transpose() * f_dot + f_dot.transpose() * f);
        CHECK((e.rate - Eigen::Vector3d(rate(0, 0), rate(1, 1), rate(0, 1))).norm() <= 1e-12 * e.rate.norm());

        // d/dt ε(q + t v) by a 4th-order central difference (ε is quadratic in t: exact up to round-off).
        const double h = 1e-3;
        const Eigen::Vector3d fd = (reference_strain(rest, q + h * v) - reference_strain(rest, q - h * v)) / (2 * h);
        CHECK((e.rate - fd).norm() <= 1e-9 * e.rate.norm());
        checks += 3;
    }
    REQUIRE(checks == 30);
}

TEST_CASE("green strain: rigid motions have zero strain rate and no dissipative force", "[strain][green_strain][rigid]")
{
    Random rng(13);
    const weft::StVKDensity<double> damping{0.7, 1.3};
    int checks = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const weft::TriangleRest<double> rest = random_rest(rng);
        Vec2d uv0, uv1, uv2;
        rest_coordinates(rest, uv0, uv1, uv2);
        const Vec9 q = random_deformed(rng, uv0, uv1, uv2, 0.3);  // stressed, not at rest
        const Eigen::Vector3d t = rng.vector<3>(-1, 1);
        const Eigen::Vector3d omega = rng.vector<3>(-2, 2);
        for (const Vec9& v : {rigid_velocity(q, t, Eigen::Vector3d::Zero()),
                              rigid_velocity(q, Eigen::Vector3d::Zero(), omega), rigid_velocity(q, t, omega)}) {
            const auto e = weft::green_strain(rest, q, v);
            REQUIRE(e.gradient.norm() > 0.1);
            REQUIRE(e.strain.norm() > 1e-3);
            const double scale = e.gradient.norm() * v.norm();
            CHECK(e.rate.norm() <= 1e-14 * scale);
            CHECK(weft::dissipative_force(e, damping).norm() <= 1e-13 * scale * e.gradient.norm());
            ++checks;
        }
        // Finite rigid motion: the strain itself is invariant.
        const Eigen::Matrix3d r = weft_test::random_rotation(rng);
        Vec9 q_moved;
        for (int a = 0; a < 3; ++a) q_moved.segment<3>(3 * a) = r * q.segment<3>(3 * a) + t;
        const auto e0 = weft::green_strain(rest, q, Vec9::Zero().eval());
        const auto e1 = weft::green_strain(rest, q_moved, Vec9::Zero().eval());
        CHECK((e0.strain - e1.strain).norm() <= 1e-13 * std::max(1.0, e0.strain.norm()));
        ++checks;
    }
    REQUIRE(checks == 40);
}

TEST_CASE("green strain: pure in-plane stretch and shear give the analytic Green strain",
          "[strain][green_strain][analytic]")
{
    const Vec2d uv0(0.2, -0.1), uv1(2.2, -0.1), uv2(0.2, 0.9);  // legs 2 and 1 along the material axes
    const auto rest = weft::make_triangle_rest<double>(uv0, uv1, uv2);
    CHECK(rest.area == Approx(1.0));
    Random rng(14);
    const Eigen::Matrix3d r = weft_test::random_rotation(rng);
    const Eigen::Vector3d t(0.3, -2.0, 1.0);
    auto place = [&](const Eigen::Matrix<double, 3, 2>& f) {
        // x = R F (X − X₀) + t: deformation gradient R F for any rigid placement.
        Vec9 q;
        const Vec2d uv[3] = {uv0, uv1, uv2};
        for (int a = 0; a < 3; ++a) q.segment<3>(3 * a) = r * (f * (uv[a] - uv0)) + t;
        return q;
    };

    SECTION("stretch by (s1, s2) along the material axes")
    {
        const double s1 = 1.3, s2 = 0.8;
        Eigen::Matrix<double, 3, 2> f = Eigen::Matrix<double, 3, 2>::Zero();
        f(0, 0) = s1;
        f(1, 1) = s2;
        // Velocity of stretching both axes at rates (a1, a2): Ḟ = diag(a1, a2).
        const double a1 = 0.5, a2 = -0.25;
        Eigen::Matrix<double, 3, 2> f_dot = Eigen::Matrix<double, 3, 2>::Zero();
        f_dot(0, 0) = a1;
        f_dot(1, 1) = a2;
        const Vec9 q = place(f);
        const Vec9 v = place(f_dot) - place(Eigen::Matrix<double, 3, 2>::Zero());
        const auto e = weft::green_strain(rest, q, v);
        CHECK(e.strain(0) == Approx(0.5 * (s1 * s1 - 1)).margin(1e-14));
        CHECK(e.strain(1) == Approx(0.5 * (s2 * s2 - 1)).margin(1e-14));
        CHECK(e.strain(2) == Approx(0.0).margin(1e-14));
        CHECK(e.rate(0) == Approx(s1 * a1).margin(1e-14));
        CHECK(e.rate(1) == Approx(s2 * a2).margin(1e-14));
        CHECK(e.rate(2) == Approx(0.0).margin(1e-14));
        CHECK(e.size == Approx(1.0));
    }
    SECTION("simple shear by gamma")
    {
        const double gamma = 0.4;
        Eigen::Matrix<double, 3, 2> f = Eigen::Matrix<double, 3, 2>::Zero();
        f(0, 0) = 1;
        f(0, 1) = gamma;
        f(1, 1) = 1;
        const auto e = weft::green_strain(rest, place(f), Vec9::Zero().eval());
        // FᵀF = [[1, γ], [γ, 1 + γ²]]
        CHECK(e.strain(0) == Approx(0.0).margin(1e-14));
        CHECK(e.strain(1) == Approx(0.5 * gamma * gamma).margin(1e-14));
        CHECK(e.strain(2) == Approx(0.5 * gamma).margin(1e-14));
    }
}

TEST_CASE("green strain: inverted and collapsed triangles are finite and FD-correct", "[strain][green_strain][edge]")
{
    Random rng(15);
    const Vec2d uv0(0, 0), uv1(1, 0), uv2(0.3, 0.8);
    const auto rest = weft::make_triangle_rest<double>(uv0, uv1, uv2);
    auto metric = [&rest](const Vec9& qq, const Vec9& vv) { return weft::green_strain<double>(rest, qq, vv); };
    const weft::StVKDensity<double> elastic{20, 40};
    const weft::StVKDensity<double> damping{0.5, 1.0};

    // Inverted: node 2 mirrored across the edge 0–1 (x = diag(1.1, −0.9) X in the plane z = 0.2).
    Vec9 q;
    q << 0, 0, 0.2, 1.1, 0, 0.2, 0.33, -0.72, 0.2;
    Vec9 q_upright = q;
    q_upright(7) = 0.72;
    const Vec9 v = rng.vector<9>(-1, 1);
    const auto e = weft::green_strain(rest, q, v);
    CHECK(e.status == weft::StrainStatus::ok);
    CHECK(e.strain.allFinite());
    CHECK(e.gradient.allFinite());
    // Green strain cannot tell a reflection: same strain as the upright triangle.
    CHECK((e.strain - weft::green_strain(rest, q_upright, v).strain).norm() <= 1e-14);

    FdChecker checker;
    weft_test::SuiteOptions options;
    options.size_is_constant = true;
    const int ran = weft_test::check_metric_and_densities(checker, metric, q, v, elastic, damping, options);
    REQUIRE(ran == 16);

    // Collapsed to a segment: ε₂₂ = −½ in one direction, still finite.
    Vec9 q_line;
    q_line << 0, 0, 0, 1, 0, 0, 0.3, 0, 0;
    const auto e_line = weft::green_strain(rest, q_line, v);
    CHECK(e_line.status == weft::StrainStatus::ok);
    CHECK(e_line.strain.allFinite());
    CHECK(e_line.gradient.allFinite());
    CHECK(e_line.rate.allFinite());
    CHECK(weft::dissipative_force(e_line, damping).allFinite());
}

TEST_CASE("green strain: a degenerate rest triangle is rejected with a message naming the area",
          "[strain][green_strain][edge][error]")
{
    using Catch::Matchers::Contains;
    // Collinear rest coordinates: area exactly 0.
    REQUIRE_THROWS_AS(weft::make_triangle_rest<double>(Vec2d(0, 0), Vec2d(1, 1), Vec2d(2, 2)), weft::InvalidInput);
    REQUIRE_THROWS_WITH(weft::make_triangle_rest<double>(Vec2d(0, 0), Vec2d(1, 1), Vec2d(2, 2)),
                        Contains("triangle rest area = 0"));
    // Coincident nodes.
    REQUIRE_THROWS_WITH(weft::make_triangle_rest<double>(Vec2d(0.5, 0.5), Vec2d(0.5, 0.5), Vec2d(0.5, 0.5)),
                        Contains("triangle rest area = 0"));
    // Near-degenerate sliver (area / edge² = 5e-13).
    REQUIRE_THROWS_WITH(
        weft::make_triangle_rest<double>(Vec2d(0, 0), Vec2d(1, 0), Vec2d(0.5, 1e-12)),
        Contains("triangle rest area = 4.99") && Contains("longest rest edge") && Contains("(0.5, 9.99"));
    // Non-finite coordinates.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    REQUIRE_THROWS_WITH(weft::make_triangle_rest<double>(Vec2d(0, 0), Vec2d(1, 0), Vec2d(nan, 1)),
                        Contains("triangle rest area = nan") && Contains("finite"));
    const double inf = std::numeric_limits<double>::infinity();
    REQUIRE_THROWS_AS(weft::make_triangle_rest<double>(Vec2d(0, 0), Vec2d(inf, 0), Vec2d(0, 1)), weft::InvalidInput);

    // Either orientation is a valid rest state with a positive area.
    const auto ccw = weft::make_triangle_rest<double>(Vec2d(0, 0), Vec2d(1, 0), Vec2d(0, 1));
    const auto cw = weft::make_triangle_rest<double>(Vec2d(0, 0), Vec2d(0, 1), Vec2d(1, 0));
    CHECK(ccw.area == Approx(0.5));
    CHECK(cw.area == Approx(0.5));
    CHECK(ccw.dm_inverse.allFinite());
    CHECK(cw.dm_inverse.allFinite());
}

TEMPLATE_TEST_CASE("green strain: float and double agree", "[strain][green_strain][float]", float, double)
{
    using T = TestType;
    const weft::Vec2<T> uv0(0, 0), uv1(1, 0.1f), uv2(0.2f, 0.9f);
    const auto rest = weft::make_triangle_rest<T>(uv0, uv1, uv2);
    const auto rest_d = weft::make_triangle_rest<double>(uv0.template cast<double>(), uv1.template cast<double>(),
                                                         uv2.template cast<double>());
    weft::Vec<T, 9> q, v;
    q << 0.1f, 0, 0, 1.2f, 0.1f, 0.05f, 0.15f, 1.0f, -0.1f;
    v << 0.3f, -0.2f, 0.1f, 0.05f, 0.4f, -0.3f, -0.1f, 0.2f, 0.25f;
    const auto e = weft::green_strain<T>(rest, q, v);
    const auto ed = weft::green_strain<double>(rest_d, q.template cast<double>(), v.template cast<double>());
    REQUIRE(ed.strain.norm() > 0.01);
    REQUIRE(ed.rate.norm() > 0.01);
    for (int k = 0; k < 3; ++k) {
        CHECK(double(e.strain(k)) == Approx(ed.strain(k)).epsilon(1e-5).margin(1e-6));
        CHECK(double(e.rate(k)) == Approx(ed.rate(k)).epsilon(1e-5).margin(1e-6));
    }
    CHECK(double(e.size) == Approx(ed.size).epsilon(1e-6));
    const weft::StVKDensity<T> damping{T(0.5), T(1.5)};
    const weft::StVKDensity<double> damping_d{0.5, 1.5};
    const auto f = weft::dissipative_force(e, damping);
    const auto fd = weft::dissipative_force(ed, damping_d);
    CHECK((f.template cast<double>() - fd).norm() <= 1e-5 * fd.norm());
}
