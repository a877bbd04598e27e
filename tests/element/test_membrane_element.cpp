#include <weft/element/membrane_element.hpp>
#include <weft/element/triangle_elements.hpp>

#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "support/element_kernels.hpp"
#include "support/fd_check.hpp"
#include "support/random.hpp"
#include "support/symmetric_eigen.hpp"

using weft_test::FdChecker;
using weft_test::MatrixX;
using weft_test::Random;
using weft_test::VectorX;
using Vec9 = Eigen::Matrix<double, 9, 1>;
using Mat9 = Eigen::Matrix<double, 9, 9>;
using Eigen::Vector3d;

namespace {

double min_eigenvalue(const Mat9& a)
{
    const weft_test::SymmetricEigen solver = weft_test::symmetric_eigen(0.5 * (a + a.transpose()));
    REQUIRE(solver.ok);
    return solver.values.minCoeff();
}

/// Eigenvalues of the 2×2 tensor behind a Voigt conjugate vector (S₁₁, S₂₂, 2 S₁₂).
Eigen::Vector2d stress_eigenvalues(const Vector3d& conjugate)
{
    Eigen::Matrix2d s;
    s << conjugate(0), 0.5 * conjugate(2), 0.5 * conjugate(2), conjugate(1);
    return weft_test::symmetric_eigenvalues(s);
}

struct MembraneState {
    weft::MembraneElement<double> element;
    Eigen::Vector2d uv[3];
    Vec9 q;
    Vec9 v;
};

/// A random element in a random (stressed) configuration with a random velocity.
MembraneState random_state(Random& rng)
{
    MembraneState s;
    double area = 0;
    do {
        for (auto& p : s.uv) p = rng.vector<2>(-1, 1);
        area = 0.5 * std::abs((s.uv[1] - s.uv[0]).x() * (s.uv[2] - s.uv[0]).y() -
                              (s.uv[1] - s.uv[0]).y() * (s.uv[2] - s.uv[0]).x());
    } while (area < 0.1);
    s.element =
        weft::make_membrane_element<double>(weft::make_triangle_rest<double>(s.uv[0], s.uv[1], s.uv[2]),
                                            weft::StVKDensity<double>{rng.uniform(0, 50), rng.uniform(1, 50)},
                                            weft::StVKDensity<double>{rng.uniform(0, 0.5), rng.uniform(0.1, 1)});
    const Eigen::Matrix3d r = weft_test::random_rotation(rng);
    for (int a = 0; a < 3; ++a) {
        s.q.segment<3>(3 * a) = r * Vector3d(s.uv[a].x(), s.uv[a].y(), 0) + 0.3 * rng.vector<3>(-1, 1);
    }
    s.v = rng.vector<9>(-1, 1);
    return s;
}

double max_abs_difference(const MatrixX& a, const MatrixX& b)
{
    return (a - b).cwiseAbs().maxCoeff();
}

}  // namespace

TEST_CASE("membrane: element evaluation equals the generic elastic and dissipative layers",
          "[element][membrane][generic]")
{
    Random rng(41);
    int checks = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const MembraneState s = random_state(rng);
        const auto& el = s.element;
        const auto e = weft::green_strain(el.rest, s.q, s.v);
        REQUIRE(e.rate.norm() > 1e-3);
        REQUIRE(e.strain.norm() > 1e-3);

        for (const auto projection : {weft::PsdProjection::off, weft::PsdProjection::on}) {
            for (const auto clamp : {weft::StressClamp::off, weft::StressClamp::on}) {
                const auto out = weft::evaluate_membrane(el, s.q, s.v, projection, clamp);
                const Mat9 expected_jq =
                    weft::elastic_force_jacobian(e, el.elastic, projection) +
                    weft::dissipative_force_jacobian(e, el.dissipative, weft::DiffWrt::positions, clamp);
                const double tol = 1e-13 * std::max(1.0, expected_jq.cwiseAbs().maxCoeff());
                CHECK(out.status == weft::StrainStatus::ok);
                CHECK(out.elastic_energy == Approx(weft::elastic_energy(e, el.elastic)).epsilon(1e-14));
                CHECK(out.dissipation_potential ==
                      Approx(weft::dissipation_potential(e, el.dissipative)).epsilon(1e-14));
                CHECK(max_abs_difference(out.elastic_force, weft::elastic_force(e, el.elastic)) <= tol);
                CHECK(max_abs_difference(out.dissipative_force, weft::dissipative_force(e, el.dissipative)) <= tol);
                CHECK(max_abs_difference(out.force(), out.elastic_force + out.dissipative_force) == 0.0);
                CHECK(max_abs_difference(out.position_jacobian, expected_jq) <= tol);
                CHECK(max_abs_difference(
                          out.velocity_jacobian,
                          weft::dissipative_force_jacobian(e, el.dissipative, weft::DiffWrt::velocities)) <= tol);
                checks += 8;
            }
        }

        // The one-piece helpers.
        const double tol = 1e-13 * std::max(1.0, weft::elastic_force_jacobian(e, el.elastic).cwiseAbs().maxCoeff());
        CHECK(weft::membrane_elastic_energy(el, s.q) == Approx(weft::elastic_energy(e, el.elastic)).epsilon(1e-14));
        CHECK(max_abs_difference(weft::membrane_elastic_force(el, s.q), weft::elastic_force(e, el.elastic)) <= tol);
        CHECK(max_abs_difference(weft::membrane_elastic_force_jacobian(el, s.q, weft::PsdProjection::on),
                                 weft::elastic_force_jacobian(e, el.elastic, weft::PsdProjection::on)) <= tol);
        CHECK(weft::membrane_dissipation_potential(el, s.q, s.v) ==
              Approx(weft::dissipation_potential(e, el.dissipative)).epsilon(1e-14));
        CHECK(max_abs_difference(weft::membrane_dissipative_force(el, s.q, s.v),
                                 weft::dissipative_force(e, el.dissipative)) <= tol);
        CHECK(max_abs_difference(weft::membrane_dissipative_force_jacobian(el, s.q, s.v, weft::DiffWrt::positions),
                                 weft::dissipative_force_jacobian(e, el.dissipative, weft::DiffWrt::positions,
                                                                  weft::StressClamp::on)) <= tol);
        CHECK(max_abs_difference(weft::membrane_strain(el, s.q, s.v).rate, e.rate) == 0.0);
        checks += 7;
    }
    REQUIRE(checks == 10 * (4 * 8 + 7));
}

TEST_CASE(
    "membrane: clamping the dissipative stress makes -df_d/dq PSD when the strain rate is compressive in one "
    "direction",
    "[element][membrane][clamp]")
{
    Random rng(42);
    const Eigen::Vector2d uv[3] = {{0, 0}, {1, 0}, {0.25, 0.9}};
    const auto rest = weft::make_triangle_rest<double>(uv[0], uv[1], uv[2]);
    // Shear-dominated damping (small λ_d) so that opposite-sign rates give opposite-sign stresses.
    const auto element = weft::make_membrane_element<double>(rest, weft::StVKDensity<double>{10, 20},
                                                             weft::StVKDensity<double>{0.05, 1.0});
    int mixed = 0, checks = 0;
    for (int trial = 0; trial < 10; ++trial) {
        // Stretched flat configuration, rigidly placed; velocity v = L x with L = R diag(a, −b, 0) Rᵀ:
        // extension along material axis 1, compression along axis 2.
        const Eigen::Matrix3d r = weft_test::random_rotation(rng);
        Vec9 q, v;
        const double a = rng.uniform(0.5, 2.0), b = rng.uniform(0.5, 2.0);
        const Eigen::Matrix3d l = r * Eigen::Vector3d(a, -b, 0).asDiagonal() * r.transpose();
        for (int n = 0; n < 3; ++n) {
            q.segment<3>(3 * n) = r * Vector3d(1.1 * uv[n].x(), 1.05 * uv[n].y(), 0);
            v.segment<3>(3 * n) = l * q.segment<3>(3 * n);
        }
        const auto e = weft::green_strain(rest, q, v);
        const Vector3d stress = element.dissipative.stress(e.rate, e.strain);
        const Eigen::Vector2d eig = stress_eigenvalues(stress);
        REQUIRE(eig(0) < -0.1);  // compressive
        REQUIRE(eig(1) > 0.1);   // and tensile: the clamp has something to remove and something to keep
        ++mixed;

        const Mat9 unclamped =
            -weft::membrane_dissipative_force_jacobian(element, q, v, weft::DiffWrt::positions, weft::StressClamp::off);
        const Mat9 clamped =
            -weft::membrane_dissipative_force_jacobian(element, q, v, weft::DiffWrt::positions, weft::StressClamp::on);
        const double scale = unclamped.cwiseAbs().maxCoeff();
        REQUIRE(scale > 0.01);
        // Without the clamp the stress part of −∂f_d/∂q is indefinite; with it, PSD.
        CHECK(min_eigenvalue(unclamped) < -0.01 * scale);
        CHECK(min_eigenvalue(clamped) >= -1e-12 * scale);
        CHECK(clamped.isApprox(clamped.transpose(), 1e-14));
        // It is Ω (G S₊ Gᵀ ⊗ I₃), S₊ the stress with its negative eigenvalue removed (rank one).
        Eigen::Matrix<double, 3, 2> g;
        g << -1, -1, 1, 0, 0, 1;
        g = g * rest.dm_inverse;
        Eigen::Matrix2d s;
        s << stress(0), 0.5 * stress(2), 0.5 * stress(2), stress(1);
        const weft_test::SymmetricEigen se = weft_test::symmetric_eigen(s);
        const Eigen::Matrix2d s_plus = se.vectors * se.values.cwiseMax(0.0).asDiagonal() * se.vectors.transpose();
        const Eigen::Matrix3d gsg = g * s_plus * g.transpose();
        Mat9 expected;
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                expected.block<3, 3>(3 * i, 3 * j) = rest.area * gsg(i, j) * Eigen::Matrix3d::Identity();
        CHECK(max_abs_difference(clamped, expected) <= 1e-12 * scale);

        // The whole element Jacobian with the elastic block projected is then PSD as well.
        const auto out = weft::evaluate_membrane(element, q, v, weft::PsdProjection::on, weft::StressClamp::on);
        CHECK(min_eigenvalue(-out.position_jacobian) >= -1e-12 * out.position_jacobian.cwiseAbs().maxCoeff());
        checks += 5;
    }
    REQUIRE(mixed == 10);
    REQUIRE(checks == 50);
}

TEST_CASE("membrane: the clamp changes nothing when the dissipative stress is already PSD and is PSD for random states",
          "[element][membrane][clamp]")
{
    Random rng(43);
    int already_psd = 0, indefinite = 0, checks = 0;
    for (int trial = 0; trial < 60; ++trial) {
        const MembraneState s = random_state(rng);
        const auto e = weft::green_strain(s.element.rest, s.q, s.v);
        const Eigen::Vector2d eig = stress_eigenvalues(s.element.dissipative.stress(e.rate, e.strain));
        const Mat9 unclamped = -weft::membrane_dissipative_force_jacobian(s.element, s.q, s.v, weft::DiffWrt::positions,
                                                                          weft::StressClamp::off);
        const Mat9 clamped = -weft::membrane_dissipative_force_jacobian(s.element, s.q, s.v, weft::DiffWrt::positions);
        const double scale = std::max(unclamped.cwiseAbs().maxCoeff(), 1e-300);
        CHECK(min_eigenvalue(clamped) >= -1e-12 * scale);
        ++checks;
        if (eig(0) >= 0) {
            ++already_psd;
            CHECK(max_abs_difference(clamped, unclamped) <= 1e-14 * scale);
            ++checks;
        } else if (eig(0) < -1e-3 * eig.cwiseAbs().maxCoeff()) {  // clearly indefinite: the clamp must act
            ++indefinite;
            CHECK(max_abs_difference(clamped, unclamped) > 1e-6 * scale);
            ++checks;
        }
    }
    REQUIRE(checks == 60 + already_psd + indefinite);
    REQUIRE(already_psd >= 5);
    REQUIRE(indefinite >= 5);
}

TEST_CASE("membrane: forces and Jacobians match finite differences", "[element][membrane][gradient][hessian]")
{
    Random rng(44);
    FdChecker checker;
    int stress_psd = 0;
    constexpr int trials = 10;
    for (int trial = 0; trial < trials; ++trial) {
        const MembraneState s = random_state(rng);
        const auto& el = s.element;
        const VectorX q = s.q, v = s.v;
        auto at_q = [&](const VectorX& qq) { return Vec9(qq); };

        // Elastic: f_e = −∇V_e, ∂f_e/∂q.
        checker.gradient([&](const VectorX& qq) { return -weft::membrane_elastic_energy(el, at_q(qq)); }, q,
                         VectorX(weft::membrane_elastic_force(el, s.q)), "f_e = -grad V_e");
        checker.jacobian([&](const VectorX& qq) { return VectorX(weft::membrane_elastic_force(el, at_q(qq))); }, q,
                         MatrixX(weft::membrane_elastic_force_jacobian(el, s.q)), "df_e/dq");

        // Dissipative: f_d = −∂V_d/∂v, ∂f_d/∂v.
        checker.gradient([&](const VectorX& vv) { return -weft::membrane_dissipation_potential(el, s.q, Vec9(vv)); }, v,
                         VectorX(weft::membrane_dissipative_force(el, s.q, s.v)), "f_d = -dV_d/dv");
        checker.jacobian(
            [&](const VectorX& vv) { return VectorX(weft::membrane_dissipative_force(el, s.q, Vec9(vv))); }, v,
            MatrixX(weft::membrane_dissipative_force_jacobian(el, s.q, s.v, weft::DiffWrt::velocities)), "df_d/dv");

        // Total force in q: the symmetric Jacobian plus exactly the dropped terms (2018 Eq. 9) is the FD one.
        const auto e = weft::green_strain(el.rest, s.q, s.v);
        const Mat9 dropped = weft::dissipative_force_jacobian_dropped_terms(e, el.dissipative, s.v);
        const auto unclamped = weft::evaluate_membrane(el, s.q, s.v, weft::PsdProjection::off, weft::StressClamp::off);
        checker.jacobian([&](const VectorX& qq) { return VectorX(weft::evaluate_membrane(el, at_q(qq), s.v).force()); },
                         q, MatrixX(unclamped.position_jacobian + dropped),
                         "d(f_e + f_d)/dq = symmetric + dropped terms");
        // The clamp is exact where the dissipative stress is PSD.
        if (stress_eigenvalues(el.dissipative.stress(e.rate, e.strain)).minCoeff() >= 0) {
            ++stress_psd;
            const auto clamped = weft::evaluate_membrane(el, s.q, s.v);
            checker.compare(MatrixX(clamped.position_jacobian), MatrixX(unclamped.position_jacobian),
                            "clamped = unclamped for PSD stress");
        }
    }
    REQUIRE(stress_psd >= 1);
    REQUIRE(checker.checks == trials * 5 + stress_psd);
}

TEST_CASE("membrane: invalid material parameters are rejected naming the parameter", "[element][membrane][error]")
{
    using Catch::Matchers::Contains;
    const auto rest = weft::make_triangle_rest<double>({0, 0}, {1, 0}, {0, 1});
    const weft::StVKDensity<double> good{1, 2};
    REQUIRE_NOTHROW(weft::make_membrane_element<double>(rest, good, weft::StVKDensity<double>{0, 0}));
    REQUIRE_THROWS_WITH(weft::make_membrane_element<double>(rest, good, weft::StVKDensity<double>{0.1, -1}),
                        Contains("membrane mu_d = -1"));
    REQUIRE_THROWS_WITH(weft::make_membrane_element<double>(rest, good, weft::StVKDensity<double>{-2, 1}),
                        Contains("membrane lambda_d + mu_d = -1"));
    REQUIRE_THROWS_WITH(weft::make_membrane_element<double>(rest, weft::StVKDensity<double>{-3, 2}, good),
                        Contains("membrane lambda + mu = -1"));
    REQUIRE_THROWS_WITH(weft::make_membrane_element<double>(
                            rest, weft::StVKDensity<double>{std::numeric_limits<double>::quiet_NaN(), 2}, good),
                        Contains("membrane lambda = nan"));
    weft::TriangleRest<double> bad_rest = rest;
    bad_rest.area = 0;
    REQUIRE_THROWS_AS(weft::make_membrane_element<double>(bad_rest, good, good), weft::InvalidInput);
}

// The backend kernel (triangle_elements.hpp) is the element above, gathered,
// with the backend's stiffness and scattered into A = M − h ∂f/∂v − h² ∂f/∂q
// and f. These cases read f, ∂f/∂q and ∂f/∂v back from the kernel's blocks
// (two step sizes separate the two Jacobians) and check them against finite
// differences of the energies the kernel reports.
namespace {

using weft_test::kernel_terms;
using weft_test::KernelTerms;

weft::TriangleElement<double> kernel_triangle(const weft::TriangleRest<double>& rest)
{
    return weft::TriangleElement<double>{{0, 1, 2}, rest};
}

KernelTerms membrane_kernel(const weft::TriangleElement<double>& tri, const weft::TriangleMaterial<double>& mat,
                            const VectorX& q, const VectorX& v)
{
    return kernel_terms<3>([&](double h, weft::NodeBlocks<double, 3, 3>& out, weft::ElementEnergies<double>& e) {
        weft::evaluate_triangle_membrane<double>(q.data(), v.data(), tri, mat, mat.stvk, h, out, e);
    });
}

}  // namespace

TEST_CASE(
    "membrane kernel: forces are the gradients of the energies it reports, its Jacobians match finite "
    "differences (exact in tension)",
    "[element][membrane][kernel][gradient][hessian]")
{
    Random rng(45);
    FdChecker checker;
    constexpr int trials = 8;
    for (int trial = 0; trial < trials; ++trial) {
        const MembraneState s = random_state(rng);
        weft::TriangleMaterial<double> mat;
        mat.stvk = s.element.elastic;
        mat.damping = weft::TriangleDamping::strain_rate;
        mat.membrane_damping = s.element.dissipative;
        const auto tri = kernel_triangle(s.element.rest);
        const VectorX q = s.q, v = s.v;
        const KernelTerms t = membrane_kernel(tri, mat, q, v);

        // f = −∂V_e/∂q − ∂V_d/∂v, from the energies the kernel reports.
        const VectorX fd_force =
            -checker.fd_gradient([&](const VectorX& qq) { return membrane_kernel(tri, mat, qq, v).elastic; }, q) -
            checker.fd_gradient([&](const VectorX& vv) { return membrane_kernel(tri, mat, q, vv).dissipation; }, v);
        checker.compare(t.force, fd_force, "kernel f = -dV_e/dq - dV_d/dv");
        // ∂f/∂v is exact (2018 Eq. 8).
        checker.jacobian([&](const VectorX& vv) { return membrane_kernel(tri, mat, q, vv).force; }, v, t.df_dv,
                         "kernel df/dv");

        // In tension at rest velocity the clamps do nothing: ∂f/∂q is exact.
        const Eigen::Matrix3d r = weft_test::random_rotation(rng);
        const double a = rng.uniform(1.05, 1.3), b = rng.uniform(1.05, 1.3);
        VectorX stretched(9);
        for (int n = 0; n < 3; ++n)
            stretched.segment<3>(3 * n) = r * Vector3d(a * s.uv[n].x(), b * s.uv[n].y(), 0) + Vector3d(0.1, -0.2, 0.3);
        const VectorX rest_v = VectorX::Zero(9);
        const auto e = weft::green_strain(s.element.rest, Vec9(stretched), Vec9(rest_v));
        REQUIRE(stress_eigenvalues(s.element.elastic.stress(e.strain)).minCoeff() > 0);
        checker.jacobian([&](const VectorX& qq) { return membrane_kernel(tri, mat, qq, rest_v).force; }, stretched,
                         membrane_kernel(tri, mat, stretched, rest_v).df_dq, "kernel df/dq in tension");

        // Anywhere, −∂f/∂q is PSD (both stresses clamped).
        const MatrixX k = -t.df_dq;
        CHECK(min_eigenvalue(Mat9(k)) >= -1e-12 * k.cwiseAbs().maxCoeff());
        CHECK((t.df_dq - t.df_dq.transpose()).cwiseAbs().maxCoeff() <= 1e-12 * k.cwiseAbs().maxCoeff());
    }
    REQUIRE(checker.checks == trials * 3);
}

TEST_CASE(
    "membrane kernel: Rayleigh damping f = beta K v on the assembled stiffness, reported as V_d = "
    "1/2 beta v^T K v",
    "[element][membrane][kernel][rayleigh]")
{
    Random rng(46);
    FdChecker checker;
    int checks = 0;
    for (int trial = 0; trial < 6; ++trial) {
        const MembraneState s = random_state(rng);
        weft::TriangleMaterial<double> mat;
        mat.stvk = s.element.elastic;
        const auto tri = kernel_triangle(s.element.rest);
        const VectorX q = s.q, v = s.v, zero = VectorX::Zero(9);
        const KernelTerms undamped = membrane_kernel(tri, mat, q, v);
        CHECK(undamped.dissipation == 0.0);
        CHECK(undamped.df_dv.cwiseAbs().maxCoeff() == 0.0);
        mat.damping = weft::TriangleDamping::rayleigh;
        mat.rayleigh_beta = rng.uniform(0.01, 0.2);
        const KernelTerms damped = membrane_kernel(tri, mat, q, v);
        const MatrixX k = -undamped.df_dq;
        const double scale = k.cwiseAbs().maxCoeff() * v.cwiseAbs().maxCoeff();
        // The force and ∂f/∂v of f = −β K v with the stiffness the kernel assembles.
        CHECK((damped.force - undamped.force + mat.rayleigh_beta * k * v).cwiseAbs().maxCoeff() <= 1e-12 * scale);
        CHECK((damped.df_dv + mat.rayleigh_beta * k).cwiseAbs().maxCoeff() <= 1e-12 * k.cwiseAbs().maxCoeff());
        CHECK((damped.df_dq - undamped.df_dq).cwiseAbs().maxCoeff() <= 1e-12 * k.cwiseAbs().maxCoeff());
        CHECK(damped.dissipation == Approx(0.5 * mat.rayleigh_beta * v.dot(k * v)).epsilon(1e-12));
        CHECK(damped.dissipation >= 0.0);
        checks += 7;
        // Its reported potential is the one whose v-gradient is the damping force.
        checker.gradient([&](const VectorX& vv) { return -membrane_kernel(tri, mat, q, vv).dissipation; }, v,
                         VectorX(damped.force - membrane_kernel(tri, mat, q, zero).force), "Rayleigh f = -dV_d/dv");
    }
    REQUIRE(checks == 6 * 7);
    REQUIRE(checker.checks == 6);
}
