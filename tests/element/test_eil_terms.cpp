// EIL element terms (element/eil_terms.hpp): the interpolated position of
// thesis Eq. (4.3) and its derivatives, the contact spring of thesis
// Sec. 4.3.2 (EIL–EoL and EIL–EIL), its Gauss–Newton stiffness, the stiffness
// helper, and stretch across an EIL node with the existing segment element.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include <weft/element/eil_elements.hpp>
#include <weft/element/eil_terms.hpp>
#include <weft/element/elastic.hpp>
#include <weft/element/yarn_elements.hpp>
#include <weft/model/yarn_model.hpp>
#include <weft/potential/quadratic.hpp>
#include <weft/strain/stretch.hpp>

#include "support/fd_check.hpp"
#include "support/random.hpp"
#include "support/symmetric_eigen.hpp"

using weft::EilSpringHessian;
using weft_test::AllowZero;
using weft_test::FdChecker;
using weft_test::MatrixX;
using weft_test::Random;
using weft_test::VectorX;
using Vec3 = Eigen::Vector3d;
using Vec8 = Eigen::Matrix<double, 8, 1>;
using Vec9 = Eigen::Matrix<double, 9, 1>;
using Vec12 = Eigen::Matrix<double, 12, 1>;
using Vec18 = Eigen::Matrix<double, 18, 1>;

namespace {

/// Interpolation DoFs [x_a, s_a, x_b, s_b, s] with span Δs = s_b − s_a, weight
/// t, and |x_b − x_a| = stretch · Δs.
Vec9 interpolation_dofs(Random& rng, const Vec3& x_a, double s_a, double span, double t, double stretch)
{
    Vec9 q;
    q << x_a, s_a, x_a + stretch * span * rng.unit_vector(), s_a + span, s_a + t * span;
    return q;
}

Vec9 random_interpolation(Random& rng, double t_lo = -0.2, double t_hi = 1.2)
{
    return interpolation_dofs(rng, rng.vector<3>(-1, 1), rng.uniform(-1, 1), rng.uniform(0.5, 2.0),
                              rng.uniform(t_lo, t_hi), rng.uniform(0.7, 1.4));
}

/// FD checks of the interpolation: position Jacobian and the curvature
/// Σ λ_c ∇²x_c against the FD Jacobian of Jᵀλ (2 comparisons).
int check_interpolation(FdChecker& checker, const Vec9& q, const Vec3& lambda,
                        weft::StrainStatus expected = weft::StrainStatus::ok)
{
    const int before = checker.checks;
    const auto x0 = weft::eil_interpolation<double>(q);
    REQUIRE(x0.status == expected);
    checker.jacobian([](const VectorX& qq) { return VectorX(weft::eil_interpolation<double>(Vec9(qq)).position); },
                     VectorX(q), MatrixX(x0.jacobian), "interpolation Jacobian, thesis Eq. (4.3)");
    const Eigen::Matrix<double, 9, 9> curvature = weft::eil_interpolation_curvature<double>(q, lambda);
    checker.jacobian(
        [&](const VectorX& qq) {
            return VectorX(weft::eil_interpolation<double>(Vec9(qq)).jacobian.transpose() * lambda);
        },
        VectorX(q), MatrixX(curvature), "interpolation curvature sum_c lambda_c Hess x_c");
    return checker.checks - before;
}

template <int N>
double min_eigenvalue(const Eigen::Matrix<double, N, N>& a)
{
    return weft_test::symmetric_eigenvalues(a).minCoeff();
}

/// FD and structure checks of a contact spring (5 comparisons + 2 CHECKs):
/// force = −∇V, exact df_dq = FD Jacobian of the force, exact symmetric,
/// Gauss–Newton = exact without the curvature, Gauss–Newton PSD.
template <int N, class Spring>
int check_spring(FdChecker& checker, const Spring& spring, const Eigen::Matrix<double, N, 1>& q,
                 const Eigen::Matrix<double, N, N>& curvature, double stiffness, bool& exact_indefinite)
{
    using VecN = Eigen::Matrix<double, N, 1>;
    using MatN = Eigen::Matrix<double, N, N>;
    const int before = checker.checks;
    const auto exact = spring(q, EilSpringHessian::exact);
    const auto gn = spring(q, EilSpringHessian::gauss_newton);
    REQUIRE(exact.status == weft::StrainStatus::ok);
    REQUIRE(exact.gap.norm() > 0);
    CHECK(exact.terms.energy == Approx(0.5 * stiffness * exact.gap.squaredNorm()));
    CHECK(gn.terms.df_dv.norm() == 0.0);
    checker.gradient([&](const VectorX& qq) { return -spring(VecN(qq), EilSpringHessian::exact).terms.energy; },
                     VectorX(q), VectorX(exact.terms.force), "spring force = -grad V");
    checker.jacobian([&](const VectorX& qq) { return VectorX(spring(VecN(qq), EilSpringHessian::exact).terms.force); },
                     VectorX(q), MatrixX(exact.terms.df_dq), "spring exact df/dq");
    checker.compare(MatrixX(exact.terms.df_dq), MatrixX(exact.terms.df_dq.transpose()), "exact df/dq symmetric");
    checker.compare(MatrixX(gn.terms.df_dq), MatrixX(exact.terms.df_dq + stiffness * curvature),
                    "Gauss-Newton = exact without the interpolation curvature");
    checker.compare(MatrixX(gn.terms.force), MatrixX(exact.terms.force), "same force in both forms");
    const MatN gn_hessian = -gn.terms.df_dq;
    CHECK(min_eigenvalue<N>(gn_hessian) >= -1e-12 * gn_hessian.norm());
    const MatN exact_hessian = -exact.terms.df_dq;
    if (min_eigenvalue<N>(exact_hessian) < -1e-9 * exact_hessian.norm()) exact_indefinite = true;
    return checker.checks - before;
}

Vec12 spring_dofs(Random& rng, const Vec9& qi, double gap_scale)
{
    Vec12 q;
    q << qi, weft::eil_interpolation<double>(qi).position + gap_scale * rng.vector<3>(-1, 1);
    return q;
}

auto single = [](double k) {
    return [k](const Vec12& q, EilSpringHessian form) { return weft::eil_contact_spring<double>(q, k, form); };
};
auto pair = [](double k) {
    return [k](const Vec18& q, EilSpringHessian form) { return weft::eil_pair_contact_spring<double>(q, k, form); };
};

Eigen::Matrix<double, 12, 12> single_curvature(const Vec12& q)
{
    const Vec9 qi = q.head<9>();
    Eigen::Matrix<double, 12, 12> c = Eigen::Matrix<double, 12, 12>::Zero();
    const Vec3 gap = weft::eil_interpolation<double>(qi).position - q.tail<3>();
    c.topLeftCorner<9, 9>() = weft::eil_interpolation_curvature<double>(qi, gap);
    return c;
}

Eigen::Matrix<double, 18, 18> pair_curvature(const Vec18& q)
{
    const Vec9 q1 = q.head<9>(), q2 = q.tail<9>();
    const Vec3 gap = weft::eil_interpolation<double>(q1).position - weft::eil_interpolation<double>(q2).position;
    Eigen::Matrix<double, 18, 18> c = Eigen::Matrix<double, 18, 18>::Zero();
    c.topLeftCorner<9, 9>() = weft::eil_interpolation_curvature<double>(q1, gap);
    c.bottomRightCorner<9, 9>() = weft::eil_interpolation_curvature<double>(q2, Vec3(-gap));
    return c;
}

}  // namespace

TEST_CASE("eil terms: interpolation reproduces thesis Eq. (4.3)", "[element][eil][interpolation]")
{
    Vec9 q;
    q << 0, 0, 0, 1.0, 3, 4, 0, 3.0, 1.5;  // Δs = 2, t = 1/4
    const auto x = weft::eil_interpolation<double>(q);
    CHECK(x.status == weft::StrainStatus::ok);
    CHECK(x.weight == Approx(0.25));
    CHECK(x.arc_length_span == Approx(2.0));
    CHECK((x.position - Vec3(0.75, 1.0, 0.0)).norm() < 1e-15);
    // Eq. (4.3) as printed: x(u_b) = (u_c − u_b)/(u_c − u_a) x_a + (u_b − u_a)/(u_c − u_a) x_c
    const Vec3 printed = (3.0 - 1.5) / 2.0 * Vec3(0, 0, 0) + (1.5 - 1.0) / 2.0 * Vec3(3, 4, 0);
    CHECK((x.position - printed).norm() < 1e-15);
}

TEST_CASE("eil terms: interpolation derivatives match finite differences", "[element][eil][interpolation][gradient]")
{
    Random rng(101);
    FdChecker checker;
    int ran = 0;
    for (int trial = 0; trial < 30; ++trial)
        ran += check_interpolation(checker, random_interpolation(rng), rng.vector<3>(-1, 1));
    REQUIRE(ran == 30 * 2);
    REQUIRE(checker.checks == ran);
}

TEST_CASE("eil terms: interpolation derivatives at t near 0 and 1 and for tiny spans",
          "[element][eil][interpolation][edge]")
{
    // The terms are invariant to translations in x and in s, so the edge cases
    // sit near the origin, where an FD step of 1e-4 Δs is representable.
    Random rng(102);
    int ran = 0;
    const double rest = 1e-3;  // a yarn segment (m)
    for (double span : {rest, 1e-6 * rest}) {
        for (double t : {0.0, 1e-9, 0.5, 1.0 - 1e-9, 1.0}) {
            for (double stretch : {1.1, rest / span}) {  // |Δx| ≈ Δs, and |Δx| = rest (huge stretch)
                INFO("span = " << span << ", t = " << t << ", |dx|/ds = " << stretch);
                FdChecker checker;
                checker.step = 1e-4 * span;
                checker.tolerance = 1e-6;
                const Vec9 q = interpolation_dofs(rng, span * rng.vector<3>(-1, 1), 0.0, span, t, stretch);
                const auto x = weft::eil_interpolation<double>(q);
                CHECK(std::abs(x.weight - t) <= 1e-12);
                ran += check_interpolation(checker, q, rng.vector<3>(-1, 1));
            }
        }
    }
    REQUIRE(ran == 2 * 5 * 2 * 2);
}

TEST_CASE("eil terms: a degenerate span gives finite values, a status, and consistent derivatives",
          "[element][eil][interpolation][edge]")
{
    Random rng(103);
    FdChecker checker;
    int ran = 0;
    for (double span : {0.0, -0.1, 1e-14}) {
        INFO("span = " << span);
        Vec9 q;
        q << 0.1, 0.2, 0.3, 0.0, 0.4, 0.2, 0.3, span, 1e-13;
        const auto x = weft::eil_interpolation<double>(q);
        CHECK(x.status == weft::StrainStatus::degenerate_arc_length);
        CHECK(x.arc_length_span == weft::default_min_arc_length<double>());
        CHECK(x.position.allFinite());
        CHECK(x.jacobian.allFinite());
        const auto spring =
            weft::eil_contact_spring<double>((Vec12() << q, 0.0, 0.0, 0.0).finished(), 1e3, EilSpringHessian::exact);
        CHECK(spring.status == weft::StrainStatus::degenerate_arc_length);
        CHECK(spring.terms.force.allFinite());
        CHECK(spring.terms.df_dq.allFinite());
        if (span < 0) {
            // Away from the floor the clamped span is locally constant: the
            // derivatives are exactly those of the clamped function.
            ran += check_interpolation(checker, q, rng.vector<3>(-1, 1), weft::StrainStatus::degenerate_arc_length);
        }
    }
    REQUIRE(ran == 2);
}

TEST_CASE("eil terms: EIL-EoL contact spring force and Hessian match finite differences",
          "[element][eil][spring][gradient][hessian]")
{
    Random rng(104);
    FdChecker checker;
    int ran = 0;
    bool indefinite = false;
    for (int trial = 0; trial < 30; ++trial) {
        const double k = rng.uniform(1, 1e3);
        const Vec12 q = spring_dofs(rng, random_interpolation(rng), trial % 2 ? 0.5 : 1e-3);
        ran += check_spring<12>(checker, single(k), q, single_curvature(q), k, indefinite);
    }
    CHECK(indefinite);  // the exact Hessian is indefinite for some gaps: Gauss–Newton is needed
    REQUIRE(ran == 30 * 5);
    REQUIRE(checker.checks == ran);
}

TEST_CASE("eil terms: EIL-EIL contact spring force and Hessian match finite differences",
          "[element][eil][spring][gradient][hessian]")
{
    Random rng(105);
    FdChecker checker;
    int ran = 0;
    bool indefinite = false;
    for (int trial = 0; trial < 30; ++trial) {
        const double k = rng.uniform(1, 1e3);
        const Vec9 q1 = random_interpolation(rng);
        Vec9 q2 = random_interpolation(rng);
        // Put the second interpolated point near the first (a crossing).
        const Vec3 shift = weft::eil_interpolation<double>(q1).position - weft::eil_interpolation<double>(q2).position +
                           (trial % 2 ? 0.5 : 1e-3) * rng.vector<3>(-1, 1);
        q2.segment<3>(0) += shift;
        q2.segment<3>(4) += shift;
        const Vec18 q = (Vec18() << q1, q2).finished();
        ran += check_spring<18>(checker, pair(k), q, pair_curvature(q), k, indefinite);
    }
    CHECK(indefinite);
    REQUIRE(ran == 30 * 5);
    REQUIRE(checker.checks == ran);
}

TEST_CASE("eil terms: contact spring at t near 0 and 1 and for tiny spans", "[element][eil][spring][edge]")
{
    Random rng(106);
    int ran = 0;
    bool indefinite = false;
    const double rest = 1e-3;
    const double k = weft::eil_contact_stiffness(500.0, rest);
    for (double span : {rest, 1e-6 * rest}) {
        for (double t : {0.0, 1e-9, 1.0 - 1e-9, 1.0}) {
            INFO("span = " << span << ", t = " << t);
            FdChecker checker;
            checker.step = 1e-4 * span;
            checker.tolerance = 1e-6;
            const Vec9 qi = interpolation_dofs(rng, span * rng.vector<3>(-1, 1), 0.0, span, t, 1.1);
            const Vec12 q = spring_dofs(rng, qi, 0.1 * span);
            ran += check_spring<12>(checker, single(k), q, single_curvature(q), k, indefinite);
            const Vec9 q2 = interpolation_dofs(rng, span * rng.vector<3>(-1, 1), 0.0, span, 1.0 - t, 0.9);
            const Vec18 qp = (Vec18() << qi, q2).finished();
            ran += check_spring<18>(checker, pair(k), qp, pair_curvature(qp), k, indefinite);
        }
    }
    REQUIRE(ran == 2 * 4 * 2 * 5);
}

TEST_CASE("eil terms: a closed gap has no force and exact = Gauss-Newton", "[element][eil][spring]")
{
    Random rng(107);
    int checks = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const Vec9 qi = random_interpolation(rng);
        const Vec12 q = spring_dofs(rng, qi, 0.0);
        const auto exact = weft::eil_contact_spring<double>(q, 100.0, EilSpringHessian::exact);
        const auto gn = weft::eil_contact_spring<double>(q, 100.0, EilSpringHessian::gauss_newton);
        REQUIRE(gn.terms.df_dq.norm() > 0);
        CHECK(exact.terms.energy == 0.0);
        CHECK(exact.terms.force.norm() <= 1e-12);
        CHECK((exact.terms.df_dq - gn.terms.df_dq).norm() <= 1e-12 * gn.terms.df_dq.norm());
        // Rigid translations of x and of s leave the gap unchanged: null space of the stiffness.
        Vec12 tx = Vec12::Zero(), ts = Vec12::Zero();
        for (int c = 0; c < 3; ++c) tx(c) = tx(4 + c) = tx(9 + c) = 1;
        ts(3) = ts(7) = ts(8) = 1;
        CHECK((gn.terms.df_dq * tx).norm() <= 1e-10 * gn.terms.df_dq.norm());
        CHECK((gn.terms.df_dq * ts).norm() <= 1e-10 * gn.terms.df_dq.norm());
        checks += 5;
    }
    REQUIRE(checks == 50);
}

TEST_CASE("eil terms: contact stiffness helper, thesis Sec. 4.3.2", "[element][eil][spring][error]")
{
    using Catch::Matchers::Contains;
    CHECK(weft::eil_contact_stiffness(500.0, 1e-3) == Approx(5e8));  // 1000 k_s / Δs
    CHECK(weft::eil_contact_stiffness(500.0, 1e-3, 10.0) == Approx(5e6));
    REQUIRE_THROWS_WITH(weft::eil_contact_stiffness(-1.0, 1e-3), Contains("stretch_stiffness = -1"));
    REQUIRE_THROWS_WITH(weft::eil_contact_stiffness(500.0, 0.0), Contains("rest_segment_length = 0"));
    REQUIRE_THROWS_WITH(weft::eil_contact_stiffness(500.0, 1e-3, std::numeric_limits<double>::quiet_NaN()),
                        Contains("eil contact stiffness factor = nan"));
    REQUIRE_THROWS_WITH(weft::eil_contact_stiffness(1e300, 1e-300), Contains("eil contact stiffness = inf"));
    REQUIRE_THROWS_AS(weft::eil_contact_stiffness(500.0, -1e-3), weft::InvalidInput);
}

TEST_CASE("eil terms: stretch across an EIL node is the stretch of the bypassing segment", "[element][eil][stretch]")
{
    // thesis Sec. 4.2.3: with x_e interpolated on the line (a, b), stretch is
    // the same on both halves, so V(a, e) + V(e, b) = V(a, b) and the sum does
    // not depend on s_e: the existing segment element applied to (a, b)
    // bypasses the EIL node exactly.
    Random rng(108);
    FdChecker checker;
    const weft::QuadraticDensity<double, 1> elastic{500.0};
    const Vec8 zero = Vec8::Zero();
    auto energy = [&](const Vec8& q) { return weft::elastic_energy(weft::stretch_strain<double>(q, zero), elastic); };
    auto halves = [&](const Vec9& q) {  // V(a, e) + V(e, b), x_e = x(s_e)
        const Vec3 xe = weft::eil_interpolation<double>(q).position;
        Vec8 ae, eb;
        ae << q.segment<3>(0), q(3), xe, q(8);
        eb << xe, q(8), q.segment<3>(4), q(7);
        return energy(ae) + energy(eb);
    };
    int checks = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const Vec9 q = random_interpolation(rng, 0.05, 0.95);
        const Vec8 ab = q.head<8>();
        const double whole = energy(ab);
        REQUIRE(whole > 0);
        CHECK(halves(q) == Approx(whole).epsilon(1e-12));
        // ∂/∂(x_a, s_a, x_b, s_b) of the halves = the (a, b) element's gradient; ∂/∂s_e = 0.
        const VectorX fd = checker.fd_gradient([&](const VectorX& qq) { return halves(Vec9(qq)); }, VectorX(q));
        const Vec8 element_force = weft::elastic_force(weft::stretch_strain<double>(ab, zero), elastic);
        checker.compare(MatrixX(-element_force), MatrixX(fd.head<8>()), "grad of halves = grad of (a, b)");
        CHECK(std::abs(fd(8)) <= 1e-6 * element_force.cwiseAbs().maxCoeff());
        checks += 2;
    }
    REQUIRE(checks == 40);
    REQUIRE(checker.checks == 20);
}

TEST_CASE("eil terms: evaluate_yarn_segment applies to non-adjacent EoL nodes", "[element][eil][stretch]")
{
    // Three nodes on one u-yarn; the segment element is evaluated on (0, 2),
    // bypassing node 1. Its force blocks must be −∇ of its energy over the 10
    // DoFs of nodes 0 and 2, and node 1 must not matter.
    Random rng(109);
    weft::YarnModel<double> model;
    model.q = {0, 0, 0, 0, 0, 0.9e-3, 0.1e-3, 0, 0.5e-3, 0, 2.2e-3, 0.1e-3, 0.2e-3, 2e-3, 0};
    model.v.assign(15, 0.0);
    model.material.stretch_stiffness = 500;
    model.material.linear_density = 1e-5;
    const weft::YarnSegment seg{0, 2, 3};
    const Vec3 gravity = Vec3::Zero();
    auto evaluate = [&](const std::vector<double>& q, weft::NodeBlocks<double, 2, 5>& out) {
        weft::ElementEnergies<double> e{};
        out.set_zero();
        weft::evaluate_yarn_segment<double>(q.data(), model.v.data(), seg, model.material, gravity, 1e-3, out, e);
        return e.elastic;
    };
    weft::NodeBlocks<double, 2, 5> blocks;
    const double energy0 = evaluate(model.q, blocks);
    REQUIRE(energy0 > 0);
    VectorX force(10), dofs(10);
    for (int k = 0; k < 5; ++k) {
        force(k) = blocks.f[0](k);
        force(5 + k) = blocks.f[1](k);
        dofs(k) = model.q[k];
        dofs(5 + k) = model.q[10 + k];
    }
    FdChecker checker;
    checker.step = 1e-9;
    checker.gradient(
        [&](const VectorX& d) {
            std::vector<double> q = model.q;
            for (int k = 0; k < 5; ++k) {
                q[k] = d(k);
                q[10 + k] = d(5 + k);
            }
            weft::NodeBlocks<double, 2, 5> b;
            return -evaluate(q, b);
        },
        dofs, force, "segment (0, 2) force = -grad V");
    std::vector<double> moved = model.q;
    for (int k = 5; k < 10; ++k) moved[k] += rng.uniform(-1e-3, 1e-3);
    weft::NodeBlocks<double, 2, 5> moved_blocks;
    CHECK(evaluate(moved, moved_blocks) == energy0);
    // Equal to the stretch of the stacked (a, b) DoFs directly.
    Vec8 ab;
    ab << 0, 0, 0, 0, 2.2e-3, 0.1e-3, 0.2e-3, 2e-3;
    const weft::QuadraticDensity<double, 1> elastic{500.0};
    CHECK(weft::elastic_energy(weft::stretch_strain<double>(ab, Vec8::Zero()), elastic) == Approx(energy0));
    REQUIRE(checker.checks == 1);
}

namespace {

/// Five EoL nodes' and one EIL node's DoFs on one bent u-yarn: EoL nodes
/// 0 (outer_before), 1 (a), 2 (b), 3 (outer_after) at s = 0, 1, 2, 3 mm, the
/// EIL node 4 at arc length `s` and position x(s) + `offset`.
struct OuterStencil {
    std::vector<double> q;
    weft::EilSpring spring{1, 2, 4, 3, 0, 3};
};

OuterStencil outer_stencil(Random& rng, double s, const Vec3& offset, bool with_outer = true)
{
    OuterStencil o;
    o.q.assign(25, 0.0);
    Vec3 x = rng.vector<3>(-1e-3, 1e-3);
    for (int n = 0; n < 4; ++n) {
        for (int c = 0; c < 3; ++c) o.q[5 * n + c] = x(c);
        o.q[5 * n + 3] = 1e-3 * n;
        o.q[5 * n + 4] = rng.uniform(-1e-3, 1e-3);  // the other yarn's coordinate: no role
        x += 1e-3 * rng.uniform(0.9, 1.1) * (Vec3(1, 0, 0) + 0.4 * rng.vector<3>(-1, 1)).normalized();
    }
    // x(s) on the polyline (extrapolated on the end segments).
    const int seg = s < 1e-3 ? 0 : (s > 2e-3 ? 2 : 1);
    const double t = (s - 1e-3 * seg) / 1e-3;
    for (int c = 0; c < 3; ++c) o.q[20 + c] = (1 - t) * o.q[5 * seg + c] + t * o.q[5 * (seg + 1) + c] + offset(c);
    o.q[23] = s;
    if (!with_outer) {
        o.spring.outer_before = -1;
        o.spring.outer_after = -1;
    }
    return o;
}

/// Energy, force (25) and A (25 × 25) of `evaluate_eil_spring` on the
/// stencil; nodes 0..4 are ids 0..4 so the blocks' slot order is
/// (a, b, e, outer_before, outer_after) = ids (1, 2, 4, 0, 3).
struct OuterEval {
    double energy;
    VectorX force;
    MatrixX a;
};

OuterEval evaluate_outer(const std::vector<double>& q, const weft::EilSpring& spring, double k, double h,
                         const weft::NewtonInputs<double>& newton = {})
{
    const std::vector<double> v(q.size(), 0.0);
    weft::NodeBlocks<double, 5, 5> blocks;
    blocks.set_zero();
    weft::ElementEnergies<double> e{};
    weft::evaluate_eil_spring<double>(q.data(), v.data(), spring, k, h, blocks, e, newton);
    int ids[5];
    weft::eil_spring_stencil(spring, ids);
    OuterEval out{e.elastic, VectorX::Zero(25), MatrixX::Zero(25, 25)};
    bool seen[5] = {false, false, false, false, false};
    for (int i = 0; i < 5; ++i) {
        if (seen[ids[i]]) continue;  // a missing outer node repeats a or b; its slot stays empty
        seen[ids[i]] = true;
        out.force.segment<5>(5 * ids[i]) = blocks.f[i];
        bool seen_j[5] = {false, false, false, false, false};
        for (int j = 0; j < 5; ++j) {
            if (seen_j[ids[j]]) continue;
            seen_j[ids[j]] = true;
            out.a.block<5, 5>(5 * ids[i], 5 * ids[j]) = blocks.a[i][j];
        }
    }
    return out;
}

/// eil_contact_spring on EoL nodes (i, j) of the stencil and the EIL node.
double spring_on(const std::vector<double>& q, int i, int j, double k)
{
    Vec12 l;
    l << q[5 * i], q[5 * i + 1], q[5 * i + 2], q[5 * i + 3], q[5 * j], q[5 * j + 1], q[5 * j + 2], q[5 * j + 3], q[23],
        q[20], q[21], q[22];
    return weft::eil_contact_spring<double>(l, k, EilSpringHessian::gauss_newton).terms.energy;
}

}  // namespace

TEST_CASE("eil terms: evaluate_eil_spring interpolates on the neighbouring EoL segment once s leaves its bracket",
          "[element][eil][spring][outer]")
{
    // s before a, inside (a, b), after b: force = −∇V over all 25 DoFs (the
    // unused EoL node gets nothing), energy = the contact spring of thesis
    // Sec. 4.3.2 on the segment that holds s, and at a closed gap A = −h² ×
    // the FD Jacobian of the force (Gauss–Newton = exact there).
    Random rng(113);
    const double k = 200.0, h = 1e-3;
    FdChecker checker;
    checker.step = 1e-9;
    checker.tolerance = 1e-5;
    int ran = 0;
    const double positions[3] = {0.5e-3, 1.5e-3, 2.5e-3};
    const int segment_nodes[3][2] = {{0, 1}, {1, 2}, {2, 3}};
    for (int trial = 0; trial < 4; ++trial)
        for (int piece = 0; piece < 3; ++piece) {
            const double s = positions[piece] + rng.uniform(-0.4e-3, 0.4e-3);
            const OuterStencil open = outer_stencil(rng, s, 1e-4 * rng.unit_vector());
            const OuterEval e = evaluate_outer(open.q, open.spring, k, h);
            REQUIRE(e.energy > 0);
            CHECK(e.energy == Approx(spring_on(open.q, segment_nodes[piece][0], segment_nodes[piece][1], k)));
            auto energy_of = [&](const VectorX& d) {
                return -evaluate_outer(std::vector<double>(d.data(), d.data() + 25), open.spring, k, h).energy;
            };
            const VectorX q0 = Eigen::Map<const VectorX>(open.q.data(), 25);
            checker.gradient(energy_of, q0, e.force, "EIL spring force = -grad V on the piece that holds s");
            const int unused = piece == 0 ? 3 : (piece == 2 ? 0 : -1);
            if (unused >= 0) CHECK(e.force.segment<5>(5 * unused).norm() == 0.0);
            const OuterStencil closed = outer_stencil(rng, s, Vec3::Zero());
            const OuterEval c = evaluate_outer(closed.q, closed.spring, k, h);
            CHECK(c.force.norm() <= 1e-12);
            const VectorX qc = Eigen::Map<const VectorX>(closed.q.data(), 25);
            checker.jacobian(
                [&](const VectorX& d) {
                    return evaluate_outer(std::vector<double>(d.data(), d.data() + 25), closed.spring, k, h).force;
                },
                qc, MatrixX(-c.a / (h * h)), "EIL spring A = -h^2 df/dq at a closed gap");
            ran += 2;
        }
    REQUIRE(ran == 24);
    REQUIRE(checker.checks == 24);
}

TEST_CASE("eil terms: evaluate_eil_spring is continuous at the bracket ends and extrapolates without outer nodes",
          "[element][eil][spring][outer]")
{
    Random rng(127);
    const double k = 200.0, h = 1e-3;
    int ran = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const Vec3 offset = 1e-4 * rng.unit_vector();
        for (const double end : {1e-3, 2e-3}) {
            // V continuous in s across a and b (x(s) on the polyline is).
            OuterStencil o = outer_stencil(rng, end, offset);
            o.q[23] = end - 1e-12;
            const double below = evaluate_outer(o.q, o.spring, k, h).energy;
            o.q[23] = end + 1e-12;
            const double above = evaluate_outer(o.q, o.spring, k, h).energy;
            CHECK(above == Approx(below).epsilon(1e-6));
            ++ran;
        }
        // No outer node (the yarn's EoL chain ends at a or b): the spring
        // extrapolates on (a, b), as eil_contact_spring does.
        for (const double s : {0.6e-3, 2.4e-3}) {
            const OuterStencil o = outer_stencil(rng, s, offset, false);
            const OuterEval e = evaluate_outer(o.q, o.spring, k, h);
            CHECK(e.energy == Approx(spring_on(o.q, 1, 2, k)));
            CHECK(e.force.segment<5>(0).norm() == 0.0);
            CHECK(e.force.segment<5>(15).norm() == 0.0);
            ++ran;
        }
    }
    REQUIRE(ran == 40);
}

namespace {

/// The pair-spring stencil of the tests below. Node ids: u-yarn EoL 0, 1, 2,
/// 3 (s_u = 0..3 mm), the doubly EIL node 4, v-yarn EoL 7, 5, 6, 8
/// (s_v = 0..3 mm); the spring's bracket is (1, 2) on u and (5, 6) on v, its
/// outer nodes 0, 3 and 7, 8.
const weft::EilPairSpring pair_spring{{1, 5}, {2, 6}, 4, {0, 7}, {3, 8}};
const int pair_chain[2][4] = {{0, 1, 2, 3}, {7, 5, 6, 8}};

/// 45 DoFs of the pair stencil: both yarns' EoL nodes on slightly bent
/// polylines; the EIL node's arc lengths and x are left at zero.
std::vector<double> pair_stencil_dofs(Random& rng)
{
    std::vector<double> q(45, 0.0);
    for (int y = 0; y < 2; ++y) {
        Vec3 x = 1e-3 * (y == 0 ? Vec3(-1.5, 0, 0) : Vec3(0, -1.5, 0.2)) + rng.vector<3>(-1e-4, 1e-4);
        const Vec3 direction = y == 0 ? Vec3(1, 0, 0) : Vec3(0, 1, 0);
        for (int n = 0; n < 4; ++n) {
            const int id = pair_chain[y][n];
            for (int c = 0; c < 3; ++c) q[5 * id + c] = x(c);
            q[5 * id + 3 + y] = 1e-3 * n;
            x += 1e-3 * (direction + 0.3 * rng.vector<3>(-1, 1)).normalized();
        }
    }
    return q;
}

/// Energy of `evaluate_eil_pair_spring` on the pair stencil, and its force
/// over all 45 DoFs when `force` is given.
double evaluate_pair_stencil(const std::vector<double>& q, VectorX* force, double k, double h,
                             const weft::NewtonInputs<double>& newton = {}, MatrixX* a = nullptr)
{
    const std::vector<double> v(q.size(), 0.0);
    weft::NodeBlocks<double, 9, 5> blocks;
    blocks.set_zero();
    weft::ElementEnergies<double> e{};
    weft::evaluate_eil_pair_spring<double>(q.data(), v.data(), pair_spring, k, h, blocks, e, newton);
    int ids[9];
    weft::eil_pair_spring_stencil(pair_spring, ids);
    if (force) {
        force->setZero(45);
        for (int i = 0; i < 9; ++i) force->segment<5>(5 * ids[i]) += blocks.f[i];
    }
    if (a) {  // every slot of the pair stencil is a distinct node
        a->setZero(45, 45);
        for (int i = 0; i < 9; ++i)
            for (int j = 0; j < 9; ++j) a->block<5, 5>(5 * ids[i], 5 * ids[j]) += blocks.a[i][j];
    }
    return e.elastic;
}

}  // namespace

TEST_CASE("eil terms: evaluate_eil_pair_spring interpolates each yarn on the EoL segment that holds its arc length",
          "[element][eil][spring][outer]")
{
    // Node ids: u-yarn EoL 0, 1, 2, 3 (s_u = 0..3 mm), the doubly EIL node 4,
    // v-yarn EoL 7, 5, 6, 8 (s_v = 0..3 mm); the spring's bracket is (1, 2)
    // on u and (5, 6) on v, its outer nodes 0, 3 and 7, 8. For each of the
    // 3 × 3 pieces of (s_u, s_v): energy = the pair spring of thesis
    // Sec. 4.3.2 on those segments, force = −∇V over all 45 DoFs.
    Random rng(131);
    const double k = 200.0, h = 1e-3;
    const auto& chain = pair_chain;
    auto evaluate = [&](const std::vector<double>& q, VectorX* force) { return evaluate_pair_stencil(q, force, k, h); };
    FdChecker checker;
    checker.step = 1e-9;
    checker.tolerance = 1e-5;
    int ran = 0;
    for (int trial = 0; trial < 2; ++trial)
        for (int pu = 0; pu < 3; ++pu)
            for (int pv = 0; pv < 3; ++pv) {
                std::vector<double> q = pair_stencil_dofs(rng);
                const double su = 1e-3 * (pu + rng.uniform(0.1, 0.9));
                const double sv = 1e-3 * (pv + rng.uniform(0.1, 0.9));
                q[23] = su;
                q[24] = sv;
                for (int c = 0; c < 3; ++c) q[20 + c] = rng.uniform(-1e-3, 1e-3);  // no part in the spring
                VectorX force;
                const double energy = evaluate(q, &force);
                REQUIRE(energy > 0);
                Vec18 local;
                for (int y = 0; y < 2; ++y) {
                    const int piece = y == 0 ? pu : pv;
                    const int a = chain[y][piece], b = chain[y][piece + 1];
                    local.segment<9>(9 * y) << q[5 * a], q[5 * a + 1], q[5 * a + 2], q[5 * a + 3 + y], q[5 * b],
                        q[5 * b + 1], q[5 * b + 2], q[5 * b + 3 + y], q[23 + y];
                }
                CHECK(energy == Approx(weft::eil_pair_contact_spring<double>(local, k, EilSpringHessian::gauss_newton)
                                           .terms.energy));
                CHECK(force.segment<3>(20).norm() == 0.0);
                const VectorX q0 = Eigen::Map<const VectorX>(q.data(), 45);
                checker.gradient(
                    [&](const VectorX& d) { return -evaluate(std::vector<double>(d.data(), d.data() + 45), nullptr); },
                    q0, force, "EIL pair spring force = -grad V on the pieces that hold s_u, s_v");
                ++ran;
            }
    REQUIRE(ran == 18);
    REQUIRE(checker.checks == 18);
}

namespace {

using Vec13 = Eigen::Matrix<double, 13, 1>;

/// Corner DoFs [x_a, s_a, x_b, s_b, x_c, s_c, s]: spans Δ_L, Δ_R, the yarn
/// turning by about `turn` radians at b, stretched by up to ±20 %.
Vec13 corner_dofs(Random& rng, double span_l, double span_r, double turn, double s)
{
    const Vec3 x_a = rng.vector<3>(-1, 1);
    const Vec3 t1 = rng.unit_vector();
    const Vec3 normal = t1.cross(rng.unit_vector()).normalized();
    const Vec3 t2 = std::cos(turn) * t1 + std::sin(turn) * normal;
    const double s_a = rng.uniform(-1, 1);
    const Vec3 x_b = x_a + rng.uniform(0.8, 1.2) * span_l * t1;
    const Vec3 x_c = x_b + rng.uniform(0.8, 1.2) * span_r * t2;
    Vec13 q;
    q << x_a, s_a, x_b, s_a + span_l, x_c, s_a + span_l + span_r, s_a + span_l + s;
    return q;
}

/// Eq. (4.3) on segment 0 (a, b) or 1 (b, c) of the corner DoFs.
weft::EilInterpolation<double> linear_piece(const Vec13& q, int segment)
{
    Vec9 qi;
    qi << q.segment<8>(4 * segment), q(12);
    return weft::eil_interpolation<double>(qi);
}

}  // namespace

TEST_CASE("eil terms: the rounded corner interpolation is Eq. (4.3) outside its window and C2 across it",
          "[element][eil][corner]")
{
    // Window half-width δ = ρ Δ_L Δ_R / (Δ_L + Δ_R). Inside: the Jacobian
    // (with δ's own dependence on s_a, s_b, s_c) against central differences,
    // at random s and at the corner itself; the weights sum to 1 and a
    // common shift of every arc length changes nothing; at s = s_b the
    // tangent is the mean of the two segments' (φ(0) = 1/2). Outside: the
    // position and Jacobian of Eq. (4.3) on the segment that holds s.
    Random rng(211);
    FdChecker checker;
    checker.step = 1e-7;
    checker.tolerance = 2e-6;
    int inside = 0, outside = 0;
    for (int trial = 0; trial < 12; ++trial) {
        const double span_l = rng.uniform(0.3, 2.0), span_r = rng.uniform(0.3, 2.0);
        const double delta = weft::eil_corner_rounding * span_l * span_r / (span_l + span_r);
        const double turn = rng.uniform(0.05, 1.2);
        for (const double sigma : {rng.uniform(-0.98, 0.98), 0.0, rng.uniform(-0.5, 0.5)}) {
            const Vec13 q = corner_dofs(rng, span_l, span_r, turn, sigma * delta);
            const auto x = weft::eil_corner_interpolation<double>(q);
            REQUIRE(x.status == weft::StrainStatus::ok);
            checker.jacobian(
                [](const VectorX& d) { return VectorX(weft::eil_corner_interpolation<double>(Vec13(d)).position); },
                VectorX(q), MatrixX(x.jacobian), "rounded corner interpolation Jacobian");
            const Eigen::Matrix3d weights =
                x.jacobian.block<3, 3>(0, 0) + x.jacobian.block<3, 3>(0, 4) + x.jacobian.block<3, 3>(0, 8);
            CHECK((weights - Eigen::Matrix3d::Identity()).norm() <= 1e-12);
            const Vec3 shift = x.jacobian.col(3) + x.jacobian.col(7) + x.jacobian.col(11) + x.jacobian.col(12);
            CHECK(shift.norm() <= 1e-12 * x.jacobian.norm());
            if (sigma == 0.0) {
                const Vec3 mean = 0.5 * (linear_piece(q, 0).jacobian.col(8) + linear_piece(q, 1).jacobian.col(8));
                CHECK((x.jacobian.col(12) - mean).norm() <= 1e-12 * mean.norm());
            }
            ++inside;
        }
        for (const double sigma : {-1.0, rng.uniform(-1.9, -1.0), 1.0, rng.uniform(1.0, 1.9)}) {
            const Vec13 q = corner_dofs(rng, span_l, span_r, turn, sigma * delta);
            const auto x = weft::eil_corner_interpolation<double>(q);
            const int segment = sigma < 0 ? 0 : 1;
            const auto lin = linear_piece(q, segment);
            CHECK((x.position - lin.position).norm() <= 1e-12 * (1 + lin.position.norm()));
            Eigen::Matrix<double, 3, 13> expected = Eigen::Matrix<double, 3, 13>::Zero();
            expected.block<3, 8>(0, 4 * segment) = lin.jacobian.leftCols<8>();
            expected.col(12) = lin.jacobian.col(8);
            CHECK((x.jacobian - expected).norm() <= 1e-11 * expected.norm());
            ++outside;
        }
        // C2 at the window's edges: the FD second derivative d²x/ds² from
        // either side of σ = ±1 agrees (the polyline's jumps by (t_R − t_L)/δ·…).
        for (const double edge : {-1.0, 1.0}) {
            Vec13 q = corner_dofs(rng, span_l, span_r, turn, edge * delta);
            const double e = 1e-4 * delta;
            auto tangent = [&](double ds) {
                Vec13 p = q;
                p(12) += ds;
                return Vec3(weft::eil_corner_interpolation<double>(p).jacobian.col(12));
            };
            const Vec3 below = (tangent(-e) - tangent(-2 * e)) / e;
            const Vec3 above = (tangent(2 * e) - tangent(e)) / e;
            const double scale =
                (linear_piece(q, 1).jacobian.col(8) - linear_piece(q, 0).jacobian.col(8)).norm() / delta;
            CHECK((below - above).norm() <= 1e-2 * scale);
            ++outside;
        }
    }
    // A span at the floor: no rounding, Eq. (4.3) on the segment holding s.
    Vec13 q = corner_dofs(rng, 1.0, 1.0, 0.5, 0.1);
    q(11) = q(7) + 1e-14;
    const auto x = weft::eil_corner_interpolation<double>(q);
    CHECK(x.status == weft::StrainStatus::degenerate_arc_length);
    CHECK((x.position - linear_piece(q, 1).position).norm() <= 1e-12);
    REQUIRE(inside == 36);
    REQUIRE(outside == 72);
    REQUIRE(checker.checks == 36);
}

TEST_CASE("eil terms: in full Newton the EIL springs interpolate across rounded corners: C1 in s, force = -grad V",
          "[element][eil][spring][corner]")
{
    // The stencil of outer_stencil (EoL nodes at s = 0, 1, 2, 3 mm, bracket
    // (1, 2) mm): full Newton's spring rounds the corners at s = 1 and 2 mm
    // (δ = 0.25 mm). Its s-force is continuous there where the one-step
    // form's jumps; force = −∇V by FD inside and outside the windows; at a
    // closed gap A = −h² × the FD Jacobian of the force; away from the
    // windows both forms give the same energy.
    Random rng(223);
    const double k = 200.0, h = 1e-3;
    weft::NewtonInputs<double> full;
    full.full_newton = true;
    FdChecker checker;
    checker.step = 1e-9;
    checker.tolerance = 1e-5;
    int jumps = 0, ran = 0;
    for (int trial = 0; trial < 6; ++trial) {
        const Vec3 offset = 1e-4 * rng.unit_vector();
        for (const double end : {1e-3, 2e-3}) {
            OuterStencil o = outer_stencil(rng, end, offset);
            double s_force[2][2];
            for (int side = 0; side < 2; ++side) {
                o.q[23] = end + (side == 0 ? -1e-12 : 1e-12);
                s_force[0][side] = evaluate_outer(o.q, o.spring, k, h).force(23);
                s_force[1][side] = evaluate_outer(o.q, o.spring, k, h, full).force(23);
            }
            const double scale = std::abs(s_force[1][0]) + 1e-3 * k * offset.norm();
            CHECK(std::abs(s_force[1][1] - s_force[1][0]) <= 1e-5 * scale);
            if (std::abs(s_force[0][1] - s_force[0][0]) > 1e-3 * scale) ++jumps;
            ++ran;
        }
        for (const double s : {1e-3 + rng.uniform(-0.24e-3, 0.24e-3), 2e-3 + rng.uniform(-0.24e-3, 0.24e-3), 1e-3,
                               rng.uniform(0.3e-3, 0.7e-3), rng.uniform(1.3e-3, 1.7e-3)}) {
            const OuterStencil open = outer_stencil(rng, s, offset);
            const OuterEval e = evaluate_outer(open.q, open.spring, k, h, full);
            REQUIRE(e.energy > 0);
            const VectorX q0 = Eigen::Map<const VectorX>(open.q.data(), 25);
            checker.gradient(
                [&](const VectorX& d) {
                    return -evaluate_outer(std::vector<double>(d.data(), d.data() + 25), open.spring, k, h, full)
                                .energy;
                },
                q0, e.force, "full Newton EIL spring force = -grad V");
            const double distance = std::min(std::abs(s - 1e-3), std::abs(s - 2e-3));
            if (distance > 0.26e-3) CHECK(e.energy == Approx(evaluate_outer(open.q, open.spring, k, h).energy));
            // Close the gap on the rounded curve: f on x_e is k (x(s) − x_e).
            OuterStencil closed = open;
            for (int c = 0; c < 3; ++c) closed.q[20 + c] += e.force(20 + c) / k;
            const OuterEval c = evaluate_outer(closed.q, closed.spring, k, h, full);
            CHECK(c.force.norm() <= 1e-12);
            checker.jacobian(
                [&](const VectorX& d) {
                    return evaluate_outer(std::vector<double>(d.data(), d.data() + 25), closed.spring, k, h, full)
                        .force;
                },
                Eigen::Map<const VectorX>(closed.q.data(), 25), MatrixX(-c.a / (h * h)),
                "full Newton EIL spring A = -h^2 df/dq at a closed gap");
            ran += 2;
        }
    }
    CHECK(jumps == 12);  // the kink that the rounding removes is there in the one-step form
    REQUIRE(ran == 72);
    REQUIRE(checker.checks == 60);

    // The pair spring: both yarns' interpolations rounded; force = −∇V by FD
    // with s_u and s_v inside corner windows.
    auto evaluate_pair = [&](const std::vector<double>& q, VectorX* force) {
        return evaluate_pair_stencil(q, force, k, h, full);
    };
    FdChecker pair_checker;
    pair_checker.step = 1e-9;
    pair_checker.tolerance = 1e-5;
    for (int trial = 0; trial < 6; ++trial) {
        std::vector<double> q = pair_stencil_dofs(rng);
        q[23] = (trial % 2 == 0 ? 1e-3 : 2e-3) + rng.uniform(-0.24e-3, 0.24e-3);
        q[24] = (trial < 3 ? 1e-3 : 2e-3) + rng.uniform(-0.24e-3, 0.24e-3);
        VectorX force;
        REQUIRE(evaluate_pair(q, &force) > 0);
        CHECK(force.segment<3>(20).norm() == 0.0);
        pair_checker.gradient(
            [&](const VectorX& d) { return -evaluate_pair(std::vector<double>(d.data(), d.data() + 45), nullptr); },
            Eigen::Map<const VectorX>(q.data(), 45), force, "full Newton EIL pair spring force = -grad V");
    }
    REQUIRE(pair_checker.checks == 6);
}

TEST_CASE("eil terms: the exact Hessian of full Newton's EIL springs: corner curvature and A by finite differences",
          "[element][eil][spring][corner][exact]")
{
    // eil_corner_curvature(x, λ) = Σ_c λ_c ∇²x_c against the FD Jacobian of
    // J(q)ᵀλ: inside the corner window (δ's own dependence on the spans
    // included), at its centre, outside it, on the segment interpolations
    // used where a yarn has no node beyond the bracket, and at a span at the
    // floor. Then the springs of full Newton with NewtonInputs::exact_hessians
    // at an open gap (where Gauss–Newton is not exact): A = −h² × the FD
    // Jacobian of the force, single and pair; the force is the same as with
    // Gauss–Newton and A is not (the open gap makes k Σ r_c ∇²x_c non-zero).
    Random rng(229);
    FdChecker checker;
    checker.step = 1e-7;
    checker.tolerance = 2e-6;
    int corner = 0, segment = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const double span_l = rng.uniform(0.3, 2.0), span_r = rng.uniform(0.3, 2.0);
        const double delta = weft::eil_corner_rounding * span_l * span_r / (span_l + span_r);
        const double turn = rng.uniform(0.05, 1.2);
        const Vec3 lambda = rng.vector<3>(-1, 1);
        for (const double sigma : {rng.uniform(-0.98, 0.98), 0.0, rng.uniform(-1.9, -1.02), rng.uniform(1.02, 1.9)}) {
            const Vec13 q = corner_dofs(rng, span_l, span_r, turn, sigma * delta);
            const auto x = weft::eil_corner_interpolation<double>(q);
            REQUIRE(x.segment == -1);
            checker.jacobian(
                [&](const VectorX& d) {
                    return VectorX(weft::eil_corner_interpolation<double>(Vec13(d)).jacobian.transpose() * lambda);
                },
                VectorX(q), MatrixX(weft::eil_corner_curvature<double>(x, lambda)),
                "rounded corner curvature sum_c lambda_c Hess x_c");
            ++corner;
        }
        for (const int piece : {0, 1}) {
            const Vec13 q = corner_dofs(rng, span_l, span_r, turn, rng.uniform(-0.5, 0.5) * span_r);
            const auto x = weft::eil_segment_interpolation<double>(q, piece);
            REQUIRE(x.segment == piece);
            checker.jacobian(
                [&](const VectorX& d) {
                    return VectorX(weft::eil_segment_interpolation<double>(Vec13(d), piece).jacobian.transpose() *
                                   lambda);
                },
                VectorX(q), MatrixX(weft::eil_corner_curvature<double>(x, lambda)),
                "segment interpolation curvature in the corner layout");
            ++segment;
        }
    }
    // A span at the floor: Eq. (4.3) on the segment that holds s, and its curvature.
    Vec13 q = corner_dofs(rng, 1.0, 1.0, 0.5, 0.1);
    q(11) = q(7) + 1e-14;
    const auto x = weft::eil_corner_interpolation<double>(q);
    REQUIRE(x.segment == 1);
    const Vec3 lambda(0.3, -0.2, 0.5);
    CHECK((weft::eil_corner_curvature<double>(x, lambda) -
           weft::eil_corner_curvature<double>(weft::eil_segment_interpolation<double>(q, 1), lambda))
              .norm() == 0.0);
    REQUIRE(corner == 40);
    REQUIRE(segment == 20);
    REQUIRE(checker.checks == 60);

    const double k = 200.0, h = 1e-3;
    weft::NewtonInputs<double> exact;
    exact.full_newton = true;
    exact.exact_hessians = true;
    weft::NewtonInputs<double> gauss_newton;
    gauss_newton.full_newton = true;
    FdChecker spring_checker;
    spring_checker.step = 1e-9;
    spring_checker.tolerance = 1e-5;
    int differs = 0;
    for (int trial = 0; trial < 6; ++trial) {
        const Vec3 offset = 1e-4 * rng.unit_vector();
        for (const double s : {1e-3 + rng.uniform(-0.24e-3, 0.24e-3), 2e-3 + rng.uniform(-0.24e-3, 0.24e-3),
                               rng.uniform(1.3e-3, 1.7e-3)}) {
            const OuterStencil o = outer_stencil(rng, s, offset, trial % 3 != 2);
            const OuterEval e = evaluate_outer(o.q, o.spring, k, h, exact);
            spring_checker.jacobian(
                [&](const VectorX& d) {
                    return evaluate_outer(std::vector<double>(d.data(), d.data() + 25), o.spring, k, h, exact).force;
                },
                Eigen::Map<const VectorX>(o.q.data(), 25), MatrixX(-e.a / (h * h)),
                "full Newton EIL spring, exact Hessians: A = -h^2 df/dq at an open gap");
            const OuterEval g = evaluate_outer(o.q, o.spring, k, h, gauss_newton);
            CHECK((g.force - e.force).norm() == 0.0);
            if ((g.a - e.a).norm() > 1e-6 * e.a.norm()) ++differs;
        }
    }
    CHECK(differs == 18);
    REQUIRE(spring_checker.checks == 18);

    // The pair spring with exact Hessians: its force Jacobian, both yarns in corner windows.
    FdChecker pair_checker;
    pair_checker.step = 1e-9;
    pair_checker.tolerance = 1e-5;
    for (int trial = 0; trial < 4; ++trial) {
        std::vector<double> q = pair_stencil_dofs(rng);
        q[23] = (trial % 2 == 0 ? 1e-3 : 2e-3) + rng.uniform(-0.24e-3, 0.24e-3);
        q[24] = (trial < 2 ? 1e-3 : 2e-3) + rng.uniform(-0.24e-3, 0.24e-3);
        MatrixX a;
        VectorX force;
        evaluate_pair_stencil(q, &force, k, h, exact, &a);
        pair_checker.jacobian(
            [&](const VectorX& d) {
                VectorX f;
                evaluate_pair_stencil(std::vector<double>(d.data(), d.data() + 45), &f, k, h, exact);
                return f;
            },
            Eigen::Map<const VectorX>(q.data(), 45), MatrixX(-a / (h * h)),
            "full Newton EIL pair spring, exact Hessians: A = -h^2 df/dq");
    }
    REQUIRE(pair_checker.checks == 4);
}

TEMPLATE_TEST_CASE("eil terms: float and double agree", "[element][eil][float]", float, double)
{
    using T = TestType;
    weft::Vec<T, 12> q;
    q << T(0), T(0), T(0), T(0.1), T(1.1), T(0.2), T(0), T(1.1), T(0.35), T(0.3), T(0.1), T(0.05);
    const auto e = weft::eil_contact_spring<T>(q, T(100), EilSpringHessian::exact);
    const auto d = weft::eil_contact_spring<double>(q.template cast<double>(), 100.0, EilSpringHessian::exact);
    REQUIRE(d.terms.force.norm() > 0);
    CHECK(double(e.terms.energy) == Approx(d.terms.energy).epsilon(1e-5));
    CHECK((e.terms.force.template cast<double>() - d.terms.force).norm() <= 1e-4 * d.terms.force.norm());
    CHECK((e.terms.df_dq.template cast<double>() - d.terms.df_dq).norm() <= 1e-4 * d.terms.df_dq.norm());
}
