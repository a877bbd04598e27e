#include <weft/element/dihedral_bending_element.hpp>
#include <weft/element/triangle_elements.hpp>

#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "support/element_kernels.hpp"
#include "support/fd_check.hpp"
#include "support/hinges.hpp"
#include "support/random.hpp"
#include "support/symmetric_eigen.hpp"

using weft_test::FdChecker;
using weft_test::hinge;
using weft_test::HingeFrame;
using weft_test::MatrixX;
using weft_test::node;
using weft_test::Random;
using weft_test::random_frame;
using weft_test::rest_of;
using weft_test::rigid_velocity;
using weft_test::VectorX;
using Vec12 = Eigen::Matrix<double, 12, 1>;
using Mat12 = Eigen::Matrix<double, 12, 12>;
using Vec3 = Eigen::Vector3d;

namespace {

constexpr double pi = 3.14159265358979323846;

struct HingeState {
    weft::DihedralBendingElement<double> element;
    Vec12 q, v;
};

/// A random element (random rest angle and shape) in a random bent configuration with a random velocity.
HingeState random_state(Random& rng, double phi_min = -3.0, double phi_max = 3.0)
{
    HingeState s;
    const Vec12 rest_q = hinge(random_frame(rng), rng.uniform(-1.5, 1.5));
    const auto rest = rest_of(rest_q);
    s.element =
        weft::make_dihedral_bending_element<double>(rest, weft::QuadraticDensity<double, 1>{rng.uniform(0.5, 20)},
                                                    weft::QuadraticDensity<double, 1>{rng.uniform(0.05, 2)});
    s.q = hinge(random_frame(rng), rng.uniform(phi_min, phi_max));
    s.v = rng.vector<12>(-1, 1);
    return s;
}

double max_abs_difference(const MatrixX& a, const MatrixX& b)
{
    return (a - b).cwiseAbs().maxCoeff();
}

Eigen::VectorXd eigenvalues(const Mat12& a)
{
    const weft_test::SymmetricEigen solver = weft_test::symmetric_eigen(0.5 * (a + a.transpose()));
    REQUIRE(solver.ok);
    return solver.values;
}

}  // namespace

TEST_CASE("dihedral bending element: evaluation equals the generic elastic and dissipative layers",
          "[element][dihedral][generic]")
{
    Random rng(401);
    int checks = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const HingeState s = random_state(rng);
        const auto& el = s.element;
        const auto e = weft::dihedral_bending_strain(el.rest, s.q, s.v);
        REQUIRE(e.status == weft::StrainStatus::ok);
        REQUIRE(std::abs(e.rate(0)) > 1e-3);
        REQUIRE(std::abs(e.strain(0)) > 1e-3);

        for (const auto clamp : {weft::StressClamp::off, weft::StressClamp::on}) {
            const auto out = weft::evaluate_dihedral_bending(el, s.q, s.v, weft::PsdProjection::off, clamp);
            const Mat12 expected_jq =
                weft::elastic_force_jacobian(e, el.elastic) +
                weft::dissipative_force_jacobian(e, el.dissipative, weft::DiffWrt::positions, clamp);
            const double tol = 1e-13 * std::max(1.0, expected_jq.cwiseAbs().maxCoeff());
            CHECK(out.status == weft::StrainStatus::ok);
            CHECK(out.angle == weft::dihedral_angle_derivatives(s.q).angle);
            CHECK(out.elastic_energy == Approx(weft::elastic_energy(e, el.elastic)).epsilon(1e-14));
            CHECK(out.dissipation_potential == Approx(weft::dissipation_potential(e, el.dissipative)).epsilon(1e-14));
            CHECK(max_abs_difference(out.elastic_force, weft::elastic_force(e, el.elastic)) <= tol);
            CHECK(max_abs_difference(out.dissipative_force, weft::dissipative_force(e, el.dissipative)) <= tol);
            CHECK(max_abs_difference(out.force(), out.elastic_force + out.dissipative_force) == 0.0);
            CHECK(max_abs_difference(out.position_jacobian, expected_jq) <= tol);
            CHECK(max_abs_difference(out.velocity_jacobian, weft::dissipative_force_jacobian(
                                                                e, el.dissipative, weft::DiffWrt::velocities)) <= tol);
            CHECK(out.position_jacobian == out.position_jacobian.transpose());
            CHECK(out.velocity_jacobian == out.velocity_jacobian.transpose());
            checks += 11;
        }

        // The one-piece helpers.
        const double tol = 1e-13 * std::max(1.0, weft::elastic_force_jacobian(e, el.elastic).cwiseAbs().maxCoeff());
        CHECK(weft::dihedral_bending_elastic_energy(el, s.q) ==
              Approx(weft::elastic_energy(e, el.elastic)).epsilon(1e-14));
        CHECK(max_abs_difference(weft::dihedral_bending_elastic_force(el, s.q), weft::elastic_force(e, el.elastic)) <=
              tol);
        CHECK(max_abs_difference(weft::dihedral_bending_elastic_force_jacobian(el, s.q, weft::PsdProjection::on),
                                 weft::elastic_force_jacobian(e, el.elastic, weft::PsdProjection::on)) <= tol);
        CHECK(weft::dihedral_bending_dissipation_potential(el, s.q, s.v) ==
              Approx(weft::dissipation_potential(e, el.dissipative)).epsilon(1e-14));
        CHECK(max_abs_difference(weft::dihedral_bending_dissipative_force(el, s.q, s.v),
                                 weft::dissipative_force(e, el.dissipative)) <= tol);
        CHECK(max_abs_difference(
                  weft::dihedral_bending_dissipative_force_jacobian(el, s.q, s.v, weft::DiffWrt::positions),
                  weft::dissipative_force_jacobian(e, el.dissipative, weft::DiffWrt::positions,
                                                   weft::StressClamp::on)) <= tol);
        CHECK(max_abs_difference(
                  weft::dihedral_bending_dissipative_force_jacobian(el, s.q, s.v, weft::DiffWrt::velocities),
                  weft::dissipative_force_jacobian(e, el.dissipative, weft::DiffWrt::velocities)) <= tol);
        CHECK(weft::dihedral_bending_element_strain(el, s.q, s.v).rate(0) == e.rate(0));
        checks += 8;
    }
    REQUIRE(checks == 10 * (2 * 11 + 8));
}

TEST_CASE("dihedral bending element: forces and Jacobians match finite differences",
          "[element][dihedral][gradient][hessian]")
{
    Random rng(402);
    FdChecker checker;
    int stress_non_negative = 0;
    constexpr int trials = 12;
    for (int trial = 0; trial < trials; ++trial) {
        // Include the flat hinge and the neighbourhoods of ±π.
        const double phi = trial == 0 ? 0.0 : trial == 1 ? pi - 1e-3 : trial == 2 ? -(pi - 1e-3) : rng.uniform(-3, 3);
        HingeState s = random_state(rng);
        s.q = hinge(random_frame(rng), phi);
        const auto& el = s.element;
        const VectorX q = s.q, v = s.v;
        auto at = [](const VectorX& x) { return Vec12(x); };

        // Elastic: f_e = −∂V/∂q and ∂f_e/∂q.
        checker.gradient([&](const VectorX& qq) { return -weft::dihedral_bending_elastic_energy(el, at(qq)); }, q,
                         VectorX(weft::dihedral_bending_elastic_force(el, s.q)), "f_e = -dV/dq");
        checker.jacobian([&](const VectorX& qq) { return VectorX(weft::dihedral_bending_elastic_force(el, at(qq))); },
                         q, MatrixX(weft::dihedral_bending_elastic_force_jacobian(el, s.q)), "df_e/dq");

        // Dissipative: f_d = −∂V_d/∂v and ∂f_d/∂v.
        checker.gradient(
            [&](const VectorX& vv) { return -weft::dihedral_bending_dissipation_potential(el, s.q, at(vv)); }, v,
            VectorX(weft::dihedral_bending_dissipative_force(el, s.q, s.v)), "f_d = -dV_d/dv");
        checker.jacobian(
            [&](const VectorX& vv) { return VectorX(weft::dihedral_bending_dissipative_force(el, s.q, at(vv))); }, v,
            MatrixX(weft::dihedral_bending_dissipative_force_jacobian(el, s.q, s.v, weft::DiffWrt::velocities)),
            "df_d/dv");

        // Total force in q: the symmetric Jacobian plus exactly the dropped term of 2018 Eq. (9) is the FD one.
        const auto e = weft::dihedral_bending_strain(el.rest, s.q, s.v);
        const Mat12 dropped = weft::dissipative_force_jacobian_dropped_terms(e, el.dissipative, s.v);
        const auto unclamped =
            weft::evaluate_dihedral_bending(el, s.q, s.v, weft::PsdProjection::off, weft::StressClamp::off);
        checker.jacobian(
            [&](const VectorX& qq) { return VectorX(weft::evaluate_dihedral_bending(el, at(qq), s.v).force()); }, q,
            MatrixX(unclamped.position_jacobian + dropped), "d(f_e + f_d)/dq = symmetric + dropped term");
        // The clamp changes nothing where the dissipative stress S_d = k_d ε̇ is already ≥ 0.
        if (e.rate(0) >= 0) {
            ++stress_non_negative;
            checker.compare(MatrixX(weft::evaluate_dihedral_bending(el, s.q, s.v).position_jacobian),
                            MatrixX(unclamped.position_jacobian), "clamped = unclamped for S_d >= 0");
        }
    }
    REQUIRE(stress_non_negative >= 1);
    REQUIRE(stress_non_negative < trials);  // the clamp was active in some trials
    REQUIRE(checker.checks == trials * 5 + stress_non_negative);
}

TEST_CASE("dihedral bending element: the PSD-projected position Jacobian is negative semi-definite",
          "[element][dihedral][psd]")
{
    // Hθ is indefinite, so the 2018 Sec. 3.4 clamp alone (S_d ← max(S_d, 0)) leaves −∂f_d/∂q = Ω S_d Hε
    // indefinite; PsdProjection::on projects the whole element block.
    Random rng(403);
    int checks = 0, clamp_not_enough = 0, elastic_indefinite = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const HingeState s = random_state(rng);
        const auto raw = weft::evaluate_dihedral_bending(s.element, s.q, s.v, weft::PsdProjection::off);
        const auto projected = weft::evaluate_dihedral_bending(s.element, s.q, s.v, weft::PsdProjection::on);
        const Eigen::VectorXd raw_eig = eigenvalues(-raw.position_jacobian);
        const Eigen::VectorXd projected_eig = eigenvalues(-projected.position_jacobian);
        const double scale = raw_eig.cwiseAbs().maxCoeff();
        REQUIRE(scale > 0);
        CHECK(projected_eig.minCoeff() >= -1e-10 * scale);
        CHECK(projected_eig.maxCoeff() == Approx(raw_eig.maxCoeff()).epsilon(1e-8));  // positive part kept
        CHECK(projected.position_jacobian == projected.position_jacobian.transpose());
        // Forces and ∂f/∂v are not touched by the projection; ∂f_d/∂v is always negative semi-definite.
        CHECK(projected.elastic_force == raw.elastic_force);
        CHECK(projected.dissipative_force == raw.dissipative_force);
        CHECK(eigenvalues(projected.velocity_jacobian).maxCoeff() <=
              1e-12 * projected.velocity_jacobian.cwiseAbs().maxCoeff());
        checks += 6;

        const Mat12 clamped_dissipative = -weft::dihedral_bending_dissipative_force_jacobian(
            s.element, s.q, s.v, weft::DiffWrt::positions, weft::StressClamp::on);
        if (clamped_dissipative.norm() > 0) {
            const Eigen::VectorXd d = eigenvalues(clamped_dissipative);
            clamp_not_enough += d.minCoeff() < -1e-8 * d.cwiseAbs().maxCoeff();
        }
        elastic_indefinite +=
            eigenvalues(-weft::dihedral_bending_elastic_force_jacobian(s.element, s.q)).minCoeff() < -1e-8 * scale;
    }
    REQUIRE(checks == 120);
    REQUIRE(clamp_not_enough > 0);    // the reason the element projects its whole block
    REQUIRE(elastic_indefinite > 0);  // the projection had something to remove
}

TEST_CASE("dihedral bending element: rigid motion of a bent hinge is not damped", "[element][dihedral][rigid]")
{
    Random rng(404);
    int checks = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const double phi = trial == 0 ? 0.0 : trial == 1 ? pi - 1e-3 : rng.uniform(-3, 3);
        HingeState s = random_state(rng);
        s.q = hinge(random_frame(rng), phi);
        const Vec12 v = rigid_velocity(s.q, rng.vector<3>(-1, 1), rng.vector<3>(-2, 2));
        const auto out = weft::evaluate_dihedral_bending(s.element, s.q, v);
        const auto e = weft::dihedral_bending_strain(s.element.rest, s.q, v);
        REQUIRE(e.gradient.norm() > 0.1);
        REQUIRE(out.elastic_force.norm() > 0);  // bent away from its rest angle
        const double force_scale = s.element.dissipative.stiffness * e.size * e.gradient.squaredNorm() * v.norm();
        CHECK(out.dissipative_force.norm() <= 1e-13 * force_scale);
        CHECK(out.dissipation_potential <= 1e-26 * force_scale * v.norm());
        CHECK((out.force() - out.elastic_force).norm() <= 1e-13 * force_scale);
        // The same hinge with a bending velocity is damped: the test can fail.
        Vec12 bend = v;
        bend.segment<3>(9) += (node(s.q, 2) - node(s.q, 1)).cross(node(s.q, 3) - node(s.q, 1)).normalized();
        CHECK(weft::evaluate_dihedral_bending(s.element, s.q, bend).dissipative_force.norm() > 1e-6 * force_scale);
        checks += 4;
    }
    REQUIRE(checks == 80);
}

TEST_CASE("dihedral bending element: dissipated power is never positive", "[element][dihedral][dissipation]")
{
    Random rng(405);
    int checks = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const HingeState s = random_state(rng);
        const auto out = weft::evaluate_dihedral_bending(s.element, s.q, s.v);
        const double power = out.dissipative_force.dot(s.v);
        REQUIRE(out.dissipation_potential > 0);
        CHECK(power < 0);
        CHECK(-power == Approx(2 * out.dissipation_potential).epsilon(1e-12));
        checks += 2;
    }
    REQUIRE(checks == 40);
}

TEST_CASE("dihedral bending element: a collapsed triangle gives finite zero forces and reports its status",
          "[element][dihedral][degenerate]")
{
    Random rng(406);
    const HingeState s = random_state(rng);
    HingeFrame f = random_frame(rng);
    f.height_b = 1e-3 * weft::default_min_relative_hinge_height<double>() * f.length;
    Vec12 collapsed_edge = hinge(f, 1.0);
    collapsed_edge.segment<3>(6) = collapsed_edge.segment<3>(3);
    int checks = 0;
    for (const Vec12& q : {hinge(f, 1.0), collapsed_edge}) {
        for (const auto projection : {weft::PsdProjection::off, weft::PsdProjection::on}) {
            const auto out = weft::evaluate_dihedral_bending(s.element, q, s.v, projection);
            CHECK(out.status == weft::StrainStatus::degenerate_triangle);
            CHECK(std::isfinite(out.elastic_energy));
            CHECK(std::isfinite(out.angle));
            CHECK(out.dissipation_potential == 0);
            CHECK(out.elastic_force.isZero(0));
            CHECK(out.dissipative_force.isZero(0));
            CHECK(out.position_jacobian.allFinite());
            CHECK(out.position_jacobian.isZero(0));
            CHECK(out.velocity_jacobian.isZero(0));
            checks += 9;
        }
    }
    REQUIRE(checks == 36);
}

TEST_CASE("dihedral bending element: invalid parameters are rejected naming the field", "[element][dihedral][error]")
{
    using Catch::Matchers::Contains;
    const auto rest = weft::make_hinge_rest<double>(0.2, 1.0, 0.5, 0.5);
    const weft::QuadraticDensity<double, 1> good{1.0};
    REQUIRE_NOTHROW(weft::make_dihedral_bending_element<double>(rest, good, weft::QuadraticDensity<double, 1>{0.0}));
    REQUIRE_THROWS_WITH(weft::make_dihedral_bending_element<double>(rest, weft::QuadraticDensity<double, 1>{-2}, good),
                        Contains("dihedral bending stiffness k = -2"));
    REQUIRE_THROWS_WITH(weft::make_dihedral_bending_element<double>(
                            rest, good, weft::QuadraticDensity<double, 1>{std::numeric_limits<double>::quiet_NaN()}),
                        Contains("dihedral bending damping k_d = nan"));
    weft::HingeRest<double> bad = rest;
    bad.rest_edge_length = 0;
    REQUIRE_THROWS_AS(weft::make_dihedral_bending_element<double>(bad, good, good), weft::InvalidInput);
    REQUIRE_THROWS_WITH(weft::make_dihedral_bending_element<double>(bad, good, good),
                        Contains("hinge rest edge length = 0"));
    bad = rest;
    bad.rest_angle = 7;
    REQUIRE_THROWS_WITH(weft::make_dihedral_bending_element<double>(bad, good, good), Contains("hinge rest angle = 7"));
}

TEMPLATE_TEST_CASE("dihedral bending element: float and double agree", "[element][dihedral][float]", float, double)
{
    using T = TestType;
    Random rng(407);
    int checks = 0;
    for (double phi : {0.0, 0.4, -2.5}) {
        // Centimetre-scale hinge, cloth-like stiffness.
        const HingeFrame f = random_frame(rng, 1e-2);
        const Vec12 rest_q = hinge(random_frame(rng, 1e-2), -0.3);
        const weft::Vec<T, 12> rt = rest_q.cast<T>();
        const weft::Vec<T, 12> qt = hinge(f, phi).cast<T>();
        const weft::Vec<T, 12> vt = (0.1 * rng.vector<12>(-1, 1)).cast<T>();
        const auto rest_t = weft::make_hinge_rest<T>(rt.template segment<3>(0), rt.template segment<3>(3),
                                                     rt.template segment<3>(6), rt.template segment<3>(9));
        const auto el_t = weft::make_dihedral_bending_element<T>(rest_t, weft::QuadraticDensity<T, 1>{T(1e-4)},
                                                                 weft::QuadraticDensity<T, 1>{T(1e-5)});
        const weft::DihedralBendingElement<double> el_d{
            {double(rest_t.rest_angle), double(rest_t.rest_edge_length), double(rest_t.rest_area)}, {1e-4}, {1e-5}};
        const auto ot = weft::evaluate_dihedral_bending<T>(el_t, qt, vt);
        const auto od =
            weft::evaluate_dihedral_bending<double>(el_d, qt.template cast<double>(), vt.template cast<double>());
        INFO("phi = " << phi);
        REQUIRE(od.status == weft::StrainStatus::ok);
        REQUIRE(od.elastic_force.norm() > 0);
        auto relative = [](const MatrixX& a, const MatrixX& b) { return (a - b).norm() / b.norm(); };
        CHECK(double(ot.elastic_energy) == Approx(od.elastic_energy).epsilon(1e-4));
        CHECK(double(ot.dissipation_potential) == Approx(od.dissipation_potential).epsilon(1e-4));
        CHECK(relative(ot.elastic_force.template cast<double>(), od.elastic_force) < 1e-4);
        CHECK(relative(ot.dissipative_force.template cast<double>(), od.dissipative_force) < 1e-4);
        CHECK(relative(ot.position_jacobian.template cast<double>(), od.position_jacobian) < 1e-4);
        CHECK(relative(ot.velocity_jacobian.template cast<double>(), od.velocity_jacobian) < 1e-4);
        checks += 6;
    }
    REQUIRE(checks == 18);
}

// The backend kernel (triangle_elements.hpp) is the element above with the
// Gauss–Newton stiffness: read back from its blocks (support/element_kernels.hpp)
// and checked against finite differences of the energies it reports.
namespace {

weft_test::KernelTerms hinge_kernel(const weft::HingeElement<double>& h_el, const weft::TriangleMaterial<double>& mat,
                                    const VectorX& q, const VectorX& v)
{
    return weft_test::kernel_terms<4>(
        [&](double h, weft::NodeBlocks<double, 4, 3>& out, weft::ElementEnergies<double>& e) {
            weft::evaluate_triangle_hinge<double>(q.data(), v.data(), h_el, mat, h, out, e);
        });
}

}  // namespace

TEST_CASE(
    "hinge kernel: forces are the gradients of the energies it reports, df/dv is exact, the Gauss-Newton "
    "df/dq is exact at the rest angle and negative semi-definite",
    "[element][dihedral][kernel][gradient][hessian]")
{
    Random rng(61);
    FdChecker checker;
    constexpr int trials = 8;
    int checks = 0;
    for (int trial = 0; trial < trials; ++trial) {
        const HingeState s = random_state(rng, -2.5, 2.5);
        weft::TriangleMaterial<double> mat;
        mat.bending_stiffness = s.element.elastic.stiffness;
        mat.bending_damping = s.element.dissipative.stiffness;
        mat.damping = weft::TriangleDamping::strain_rate;
        const weft::HingeElement<double> h_el{{0, 1, 2, 3}, s.element.rest};
        const VectorX q = s.q, v = s.v;
        const auto t = hinge_kernel(h_el, mat, q, v);

        const VectorX fd_force =
            -checker.fd_gradient([&](const VectorX& qq) { return hinge_kernel(h_el, mat, qq, v).elastic; }, q) -
            checker.fd_gradient([&](const VectorX& vv) { return hinge_kernel(h_el, mat, q, vv).dissipation; }, v);
        checker.compare(t.force, fd_force, "kernel f = -dV/dq - dV_d/dv");
        checker.jacobian([&](const VectorX& vv) { return hinge_kernel(h_el, mat, q, vv).force; }, v, t.df_dv,
                         "kernel df/dv");
        // The same numbers as the element's own evaluation.
        const auto element =
            weft::dihedral_bending_forces(weft::dihedral_bending_strain(s.element.rest, s.q, s.v), s.element.elastic,
                                          s.element.dissipative, weft::HingeStiffness::gauss_newton);
        CHECK(max_abs_difference(t.force, element.force()) <= 1e-12 * element.force().cwiseAbs().maxCoeff());
        // −∂f/∂q = Ω k ∇ε ∇εᵀ: PSD everywhere.
        CHECK(eigenvalues(Mat12(-t.df_dq)).minCoeff() >= -1e-12 * t.df_dq.cwiseAbs().maxCoeff());
        checks += 2;

        // At the rest angle (ε = 0) and at rest, Gauss–Newton is the exact Hessian.
        const VectorX at_rest = hinge(random_frame(rng), s.element.rest.rest_angle);
        const VectorX still = VectorX::Zero(12);
        checker.jacobian([&](const VectorX& qq) { return hinge_kernel(h_el, mat, qq, still).force; }, at_rest,
                         hinge_kernel(h_el, mat, at_rest, still).df_dq, "kernel df/dq at the rest angle");
    }
    REQUIRE(checks == trials * 2);
    REQUIRE(checker.checks == trials * 3);
}
