#include <weft/potential/quadratic.hpp>
#include <weft/potential/rayleigh_analogy.hpp>
#include <weft/strain/stretch.hpp>

#include "support/element_checks.hpp"
#include "support/random.hpp"

using weft_test::FdChecker;
using weft_test::Random;
using Vec8 = Eigen::Matrix<double, 8, 1>;

namespace {

Vec8 random_segment(Random& rng, double rest, double stretch, double ds_scale = 1.0)
{
    const Eigen::Vector3d x0 = rng.vector<3>(-1, 1);
    const Eigen::Vector3d x1 = x0 + rest * stretch * rng.unit_vector();
    const double s0 = rng.uniform(-1, 1);
    Vec8 q;
    q << x0, s0, x1, s0 + rest * ds_scale;
    return q;
}

auto stretch = [](const Vec8& q, const Vec8& v) { return weft::stretch_strain<double>(q, v); };

}  // namespace

TEST_CASE("stretch: derivatives match finite differences on random segments", "[strain][stretch][gradient][hessian]")
{
    Random rng(1);
    FdChecker checker;
    int ran = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const Vec8 q = random_segment(rng, rng.uniform(0.5, 2.0), rng.uniform(0.7, 1.4));
        const Vec8 v = rng.vector<8>(-1, 1);
        weft::QuadraticDensity<double, 1> elastic{rng.uniform(1, 100)};
        weft::QuadraticDensity<double, 1> damping{rng.uniform(0.1, 2)};
        ran += weft_test::check_metric_and_densities(checker, stretch, q, v, elastic, damping);
    }
    REQUIRE(ran == 20 * 13);
    REQUIRE(checker.checks == ran);
}

TEST_CASE("stretch: derivatives hold for small delta s (yarn scale)", "[strain][stretch][edge]")
{
    Random rng(2);
    FdChecker checker;
    int ran = 0;
    for (double ds : {1e-3, 1e-5}) {
        checker.step = ds * 1e-4;
        checker.tolerance = 1e-5;
        const Vec8 q = random_segment(rng, ds, 1.1);
        const Vec8 v = rng.vector<8>(-1, 1) * ds;
        weft::QuadraticDensity<double, 1> elastic{500};
        weft::QuadraticDensity<double, 1> damping{3e-7};
        ran += weft_test::check_metric_and_densities(checker, stretch, q, v, elastic, damping);
    }
    REQUIRE(ran == 2 * 13);
}

TEST_CASE("stretch: Lagrangian spring values and Eq. 14 strain rate", "[strain][stretch]")
{
    Vec8 q, v;
    q << 0, 0, 0, 0, 3, 4, 0, 2;  // |Δx| = 5, Δs = 2 → ε = 1.5
    v << 0, 0, 0, 0, 0.6, 0.8, 0, 0;
    const auto e = weft::stretch_strain(q, v);
    CHECK(e.strain(0) == Approx(1.5));
    CHECK(e.size == Approx(2.0));
    CHECK(e.rate(0) == Approx(0.5));  // d|Δx|/dt / Δs = 1 / 2
    CHECK(e.status == weft::StrainStatus::ok);
}

TEST_CASE("stretch: rigid motion has zero strain rate", "[strain][stretch][rigid]")
{
    Random rng(3);
    int checks = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const Vec8 q = random_segment(rng, 1.0, 1.3);
        const Eigen::Vector3d t = rng.vector<3>(-1, 1);
        const Eigen::Vector3d w = rng.vector<3>(-2, 2);
        Vec8 v = Vec8::Zero();
        v.segment<3>(0) = t + w.cross(q.segment<3>(0));
        v.segment<3>(4) = t + w.cross(q.segment<3>(4));
        const auto e = weft::stretch_strain(q, v);
        REQUIRE(e.gradient.norm() > 0);
        CHECK(std::abs(e.rate(0)) < 1e-12);
        weft::QuadraticDensity<double, 1> damping{1.0};
        CHECK(weft::dissipative_force(e, damping).norm() < 1e-12);
        ++checks;
    }
    REQUIRE(checks == 10);
}

TEST_CASE("stretch: degenerate segments give finite values and a status", "[strain][stretch][edge]")
{
    Vec8 q = Vec8::Zero(), v = Vec8::Ones();
    q(7) = 1.0;  // zero-length segment, Δs = 1
    auto e = weft::stretch_strain(q, v);
    CHECK(e.status == weft::StrainStatus::degenerate_segment);
    CHECK(e.gradient.allFinite());
    CHECK(e.hessian[0].allFinite());
    CHECK(std::isfinite(e.rate(0)));

    q << 0, 0, 0, 1, 1, 0, 0, 1;  // Δs = 0
    e = weft::stretch_strain(q, v);
    CHECK(e.status == weft::StrainStatus::degenerate_arc_length);
    CHECK(e.gradient.allFinite());
    CHECK(e.hessian[0].allFinite());
    CHECK(std::isfinite(e.strain(0)));
}

TEMPLATE_TEST_CASE("stretch: float and double agree", "[strain][stretch][float]", float, double)
{
    weft::Vec<TestType, 8> q, v;
    q << 0, 0, 0, 0, 1.2f, 0.1f, 0, 1;
    v << 0, 0, 0, 0, 0.3f, 0.2f, 0.1f, 0.05f;
    const auto e = weft::stretch_strain<TestType>(q, v);
    const auto ed = weft::stretch_strain<double>(q.template cast<double>(), v.template cast<double>());
    CHECK(double(e.strain(0)) == Approx(ed.strain(0)).epsilon(1e-5));
    CHECK(double(e.rate(0)) == Approx(ed.rate(0)).epsilon(1e-5));
}
