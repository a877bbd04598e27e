// The good-damping condition of 2018 Sec. 3.1–3.5 for every metric, and the
// Rayleigh-damping counter-example of Sec. 3.5–3.6.
#include <weft/element/dissipation.hpp>
#include <weft/element/rayleigh_damping.hpp>
#include <weft/element/yarn_elements.hpp>
#include <weft/potential/quadratic.hpp>
#include <weft/potential/rayleigh_analogy.hpp>
#include <weft/potential/stvk.hpp>
#include <weft/strain/green_strain.hpp>
#include <weft/strain/stretch.hpp>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <cmath>

#include <catch2/catch.hpp>

#include "support/element_kernels.hpp"
#include "support/fd_check.hpp"
#include "support/random.hpp"
#include "support/symmetric_eigen.hpp"

using weft_test::Random;
using Vec8 = Eigen::Matrix<double, 8, 1>;
using Vec9 = Eigen::Matrix<double, 9, 1>;
using Eigen::Vector3d;

namespace {

/// The part of f outside the range of ∇ε: (I − ∇ε (∇εᵀ∇ε)⁻¹ ∇εᵀ) f, whose
/// vanishing is the good-damping condition, 2018 Eq. (1).
template <int N, int M>
Eigen::Matrix<double, N, 1> good_damping_residual(const Eigen::Matrix<double, N, M>& gradient,
                                                  const Eigen::Matrix<double, N, 1>& force)
{
    const Eigen::Matrix<double, M, M> normal = gradient.transpose() * gradient;
    return force - gradient * normal.ldlt().solve(gradient.transpose() * force);
}

/// Yarn stretch (2017 Eq. 12–14) with quadratic densities; q = [x₀, s₀, x₁, s₁].
struct StretchCase {
    static constexpr int N = 8;
    using VecN = Vec8;
    using Elastic = weft::QuadraticDensity<double, 1>;
    using Dissipative = weft::QuadraticDensity<double, 1>;

    VecN q;
    Elastic elastic;
    Dissipative dissipative;

    /// A segment stretched or compressed by up to 40%, random stiffness and damping.
    static StretchCase random(Random& rng)
    {
        const double rest = rng.uniform(0.5, 2.0);
        const double stretch = rng.uniform(0.6, 1.4);
        const Vector3d x0 = rng.vector<3>(-1, 1);
        const double s0 = rng.uniform(-1, 1);
        VecN q;
        q << x0, s0, x0 + rest * stretch * rng.unit_vector(), s0 + rest;
        return StretchCase{q, Elastic{rng.uniform(1, 100)}, Dissipative{rng.uniform(0.1, 2)}};
    }
    weft::StretchEval<double> eval(const VecN& v) const { return weft::stretch_strain<double>(q, v); }
    /// ẋ = t + ω × x at both nodes, ṡ = 0: the material does not slide.
    VecN rigid_velocity(const Vector3d& t, const Vector3d& omega) const
    {
        VecN v = VecN::Zero();
        v.segment<3>(0) = t + omega.cross(Vector3d(q.segment<3>(0)));
        v.segment<3>(4) = t + omega.cross(Vector3d(q.segment<3>(4)));
        return v;
    }
};

/// Triangle Green strain (2018 Sec. 4) with StVK densities; q = [x₀, x₁, x₂].
struct TriangleCase {
    static constexpr int N = 9;
    using VecN = Vec9;
    using Elastic = weft::StVKDensity<double>;
    using Dissipative = weft::StVKDensity<double>;

    weft::TriangleRest<double> rest;
    VecN q;
    Elastic elastic;
    Dissipative dissipative;

    /// A random triangle placed in 3D and perturbed (stressed), random Lamé parameters.
    static TriangleCase random(Random& rng)
    {
        Eigen::Vector2d uv[3];
        double area = 0;
        do {
            for (auto& p : uv) p = rng.vector<2>(-1, 1);
            area =
                0.5 * std::abs((uv[1] - uv[0]).x() * (uv[2] - uv[0]).y() - (uv[1] - uv[0]).y() * (uv[2] - uv[0]).x());
        } while (area < 0.1);
        const Eigen::Matrix3d r = weft_test::random_rotation(rng);
        VecN q;
        for (int a = 0; a < 3; ++a) {
            q.segment<3>(3 * a) = r * Vector3d(uv[a].x(), uv[a].y(), 0) + 0.3 * rng.vector<3>(-1, 1);
        }
        return TriangleCase{weft::make_triangle_rest<double>(uv[0], uv[1], uv[2]), q,
                            Elastic{rng.uniform(0, 50), rng.uniform(1, 50)},
                            Dissipative{rng.uniform(0, 1), rng.uniform(0.1, 1)}};
    }
    weft::GreenStrainEval<double> eval(const VecN& v) const { return weft::green_strain<double>(rest, q, v); }
    VecN rigid_velocity(const Vector3d& t, const Vector3d& omega) const
    {
        VecN v;
        for (int a = 0; a < 3; ++a) v.segment<3>(3 * a) = t + omega.cross(Vector3d(q.segment<3>(3 * a)));
        return v;
    }
};

}  // namespace

TEMPLATE_TEST_CASE("good damping: rigid translation and rotation have zero strain rate and zero dissipative force",
                   "[element][good_damping][rigid]", StretchCase, TriangleCase)
{
    Random rng(31);
    int checks = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const TestType c = TestType::random(rng);
        const Vector3d t = rng.vector<3>(-1, 1);
        const Vector3d omega = rng.vector<3>(-2, 2);
        const double beta = rng.uniform(0.01, 0.5);
        const auto analogy = weft::rayleigh_analogy(c.elastic, beta);
        const weft::RayleighAnalogy<double, typename TestType::Elastic> analogy_generic{c.elastic, beta};
        for (const auto& v : {c.rigid_velocity(t, Vector3d::Zero()), c.rigid_velocity(Vector3d::Zero(), omega),
                              c.rigid_velocity(t, omega)}) {
            const auto e = c.eval(v);
            REQUIRE(e.status == weft::StrainStatus::ok);
            REQUIRE(e.gradient.norm() > 0.1);
            REQUIRE(v.norm() > 0.1);
            const double scale = e.gradient.norm() * v.norm();
            CHECK(e.rate.norm() <= 1e-14 * scale);
            // |f_d| ≤ Ω |∇ε| |∂S/∂ε̇| |ε̇|: compare with the force of a unit strain rate.
            const double force_scale = e.size * e.gradient.norm() * scale * 100;
            CHECK(weft::dissipative_force(e, c.dissipative).norm() <= 1e-14 * force_scale);
            CHECK(weft::dissipative_force(e, analogy).norm() <= 1e-14 * force_scale);
            CHECK(weft::dissipative_force(e, analogy_generic).norm() <= 1e-14 * force_scale);
            checks += 4;
        }
    }
    REQUIRE(checks == 10 * 3 * 4);
}

TEMPLATE_TEST_CASE("good damping: dissipated power f_d . v is never positive", "[element][good_damping][power]",
                   StretchCase, TriangleCase)
{
    Random rng(32);
    int strictly_negative = 0, checks = 0;
    for (int trial = 0; trial < 50; ++trial) {
        const TestType c = TestType::random(rng);
        const typename TestType::VecN v = rng.vector<TestType::N>(-1, 1);
        const auto e = c.eval(v);
        const double power = weft::dissipative_force(e, c.dissipative).dot(v);
        const double potential = weft::dissipation_potential(e, c.dissipative);
        CHECK(power <= 0.0);
        // Ψ_d is quadratic (homogeneous of degree 2): f_d·v = −∇_v V_d·v = −2 V_d.
        CHECK(power == Approx(-2 * potential).epsilon(1e-12).margin(1e-300));
        if (power < -1e-6) ++strictly_negative;
        checks += 2;
    }
    REQUIRE(checks == 100);
    REQUIRE(strictly_negative >= 45);  // the check is not passed by zero forces
}

TEMPLATE_TEST_CASE("good damping: f_d has no component in the null space of the strain gradient (2018 Eq. 1)",
                   "[element][good_damping][projection]", StretchCase, TriangleCase)
{
    Random rng(33);
    int checks = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const TestType c = TestType::random(rng);
        const typename TestType::VecN v = rng.vector<TestType::N>(-1, 1);
        const auto e = c.eval(v);
        const double beta = rng.uniform(0.01, 0.5);
        for (const auto& force : {weft::dissipative_force(e, c.dissipative),
                                  weft::dissipative_force(e, weft::rayleigh_analogy(c.elastic, beta))}) {
            REQUIRE(force.norm() > 1e-6);
            CHECK(good_damping_residual(e.gradient, force).norm() <= 1e-12 * force.norm());
            ++checks;
        }
    }
    REQUIRE(checks == 40);
}

TEST_CASE("good damping: Rayleigh damping brakes a stretched spring rotating rigidly, the Rayleigh analogy does not",
          "[element][good_damping][rayleigh][stretch]")
{
    // 2018 Sec. 3.6 (Fig. 2): rest length L = 2, k_e = 100, one end at the origin.
    const double rest = 2.0, k = 100.0, beta = 0.1, strain = 0.3;
    const weft::QuadraticDensity<double, 1> elastic{k};
    Vec8 q;
    q << 0, 0, 0, 0, (1 + strain) * rest, 0, 0, rest;  // Lagrangian: Δs = L fixed
    const Vector3d omega(0, 0, 5);                     // about the fixed end, in the horizontal plane
    Vec8 v = Vec8::Zero();
    v.segment<3>(4) = omega.cross(Vector3d(q.segment<3>(4)));  // |v| = 13: tangent to the spring
    const auto e = weft::stretch_strain<double>(q, v);
    REQUIRE(e.gradient.norm() > 0.1);
    REQUIRE(e.strain(0) == Approx(strain));
    REQUIRE(std::abs(e.rate(0)) <= 1e-14 * v.norm());  // the velocity is decoupled from deformation

    const Vec8 f_rayleigh = weft::rayleigh_damping_force(e, elastic, beta, v);
    // 2018 Eq. (11): only the ∂²ε/∂x² term survives, f = −β Ω k ε (I − d̂d̂ᵀ) v₁ / (|Δx| Δs) = −β k ε v₁ / |Δx|.
    Vec8 expected = Vec8::Zero();
    const Vector3d on_x1 = -beta * k * strain * v.segment<3>(4) / ((1 + strain) * rest);
    expected.segment<3>(4) = on_x1;
    expected.segment<3>(0) = -on_x1;
    CHECK((f_rayleigh - expected).norm() <= 1e-12 * expected.norm());
    // Clearly above round-off (|f| = β k ε |v| / |Δx| = 15), entirely in the null space of ∇ε: Eq. (1) fails.
    CHECK(f_rayleigh.norm() > 1.0);
    CHECK(good_damping_residual(e.gradient, f_rayleigh).norm() == Approx(f_rayleigh.norm()).epsilon(1e-12));
    // It removes kinetic energy from a rigid rotation (the spring slows to a stop in Fig. 2).
    CHECK(f_rayleigh.dot(v) < -1.0);

    // The strain-rate Rayleigh analogy (2018 Eq. 12) leaves the rotation alone.
    const Vec8 f_analogy = weft::dissipative_force(e, weft::rayleigh_analogy(elastic, beta));
    CHECK(f_analogy.norm() <= 1e-12 * f_rayleigh.norm());
}

TEST_CASE(
    "good damping: the backend's yarn segment brakes the rotating spring with Rayleigh damping and reports "
    "V_d = 1/2 beta v^T K v, the triangles' convention",
    "[element][good_damping][rayleigh][kernel]")
{
    // The spring above as an EoL stretch segment of the backend (2 nodes × 5 DoFs, u arc length).
    const double rest = 2.0, k = 100.0, beta = 0.1, strain = 0.3;
    Eigen::VectorXd q = Eigen::VectorXd::Zero(10), v = Eigen::VectorXd::Zero(10);
    q.segment<3>(5) = Vector3d((1 + strain) * rest, 0, 0);
    q(8) = rest;
    v.segment<3>(5) = Vector3d(0, 0, 5).cross(Vector3d(q.segment<3>(5)));
    weft::YarnMaterial<double> mat;
    mat.stretch_stiffness = k;
    const weft::YarnSegment seg{0, 1, 3};
    auto kernel = [&](const weft::YarnMaterial<double>& m, const Eigen::VectorXd& qq, const Eigen::VectorXd& vv) {
        return weft_test::kernel_terms<2, weft::yarn_node_dofs>(
            [&](double h, weft::NodeBlocks<double, 2, weft::yarn_node_dofs>& out, weft::ElementEnergies<double>& e) {
                weft::evaluate_yarn_segment<double>(qq.data(), vv.data(), seg, m, Vector3d::Zero().eval(), h, out, e);
            });
    };
    const weft_test::KernelTerms undamped = kernel(mat, q, v);
    mat.damping = weft::DampingModel::rayleigh;
    mat.rayleigh_beta = beta;
    const weft_test::KernelTerms damped = kernel(mat, q, v);
    const Eigen::VectorXd f_rayleigh = damped.force - undamped.force;
    const Eigen::MatrixXd stiffness = -undamped.df_dq;
    // f_R = −β K v with the stiffness the segment assembles; it brakes the rigid rotation.
    CHECK((f_rayleigh + beta * stiffness * v).norm() <= 1e-12 * f_rayleigh.norm());
    CHECK(f_rayleigh.dot(v) < -1.0);
    // Reported as V_d = ½ β vᵀ K v = −½ f_R·v (the triangle kernel's convention), whose v-gradient is −f_R.
    CHECK(undamped.dissipation == 0.0);
    CHECK(damped.dissipation == Approx(0.5 * beta * v.dot(stiffness * v)).epsilon(1e-12));
    CHECK(damped.dissipation == Approx(-0.5 * f_rayleigh.dot(v)).epsilon(1e-12));
    weft_test::FdChecker checker;
    checker.gradient([&](const Eigen::VectorXd& vv) { return -kernel(mat, q, vv).dissipation; }, v, f_rayleigh,
                     "Rayleigh f = -dV_d/dv (yarn segment)");
    REQUIRE(checker.checks == 1);
}

TEST_CASE("good damping: Rayleigh damping brakes a stretched triangle rotating rigidly, the Rayleigh analogy does not",
          "[element][good_damping][rayleigh][green_strain]")
{
    Random rng(34);
    const Eigen::Vector2d uv0(0, 0), uv1(1, 0), uv2(0.2, 0.8);
    const auto rest = weft::make_triangle_rest<double>(uv0, uv1, uv2);
    const weft::StVKDensity<double> elastic{20, 40};
    const double beta = 0.05;
    int checks = 0;
    for (int trial = 0; trial < 5; ++trial) {
        // Stretched by 20% and 10% along the material axes, then rigidly placed in 3D.
        const Eigen::Matrix3d r = weft_test::random_rotation(rng);
        const Vector3d translation = rng.vector<3>(-1, 1);
        Vec9 q;
        const Eigen::Vector2d uv[3] = {uv0, uv1, uv2};
        for (int a = 0; a < 3; ++a)
            q.segment<3>(3 * a) = r * Vector3d(1.2 * uv[a].x(), 1.1 * uv[a].y(), 0) + translation;
        const Vector3d t = rng.vector<3>(-1, 1);
        const Vector3d omega = 3 * rng.unit_vector();
        Vec9 v;
        for (int a = 0; a < 3; ++a) v.segment<3>(3 * a) = t + omega.cross(Vector3d(q.segment<3>(3 * a)));

        const auto e = weft::green_strain<double>(rest, q, v);
        REQUIRE(e.gradient.norm() > 0.1);
        REQUIRE(e.strain.norm() > 0.1);
        REQUIRE(e.rate.norm() <= 1e-14 * e.gradient.norm() * v.norm());

        const Vec9 f_rayleigh = weft::rayleigh_damping_force(e, elastic, beta, v);
        // Eq. (11) with ε̇ = 0: f = −β Ω Σ_k S_k Hε_k v = −β Ω (G S Gᵀ ⊗ I₃) v, G the shape gradients.
        Eigen::Matrix<double, 3, 2> g;
        g << -1, -1, 1, 0, 0, 1;
        g = g * rest.dm_inverse;
        const Eigen::Vector3d sv = elastic.stress(e.strain);  // (S₁₁, S₂₂, 2 S₁₂)
        Eigen::Matrix2d s;
        s << sv(0), 0.5 * sv(2), 0.5 * sv(2), sv(1);
        const Eigen::Matrix3d gsg = g * s * g.transpose();
        Vec9 expected = Vec9::Zero();
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                expected.segment<3>(3 * a) -= beta * rest.area * gsg(a, b) * v.segment<3>(3 * b);
        CHECK((f_rayleigh - expected).norm() <= 1e-12 * expected.norm());

        // Non-zero, mostly in the null space of ∇ε: Eq. (1) fails; it brakes the rotation (S is positive).
        const double residual = good_damping_residual(e.gradient, f_rayleigh).norm();
        CHECK(f_rayleigh.norm() > 0.1);
        CHECK(residual > 0.1 * f_rayleigh.norm());
        CHECK(f_rayleigh.dot(v) < -0.1);

        // The Rayleigh analogy (2018 Eq. 12) with (λ_d, μ_d) = β (λ, μ): no force.
        const Vec9 f_analogy = weft::dissipative_force(e, weft::rayleigh_analogy(elastic, beta));
        CHECK(f_analogy.norm() <= 1e-12 * f_rayleigh.norm());
        checks += 5;
    }
    REQUIRE(checks == 25);
}

TEST_CASE("good damping: Rayleigh damping is good damping in the unstressed state", "[element][good_damping][rayleigh]")
{
    // With ε = 0 the stress vanishes, so the ∂²ε/∂x² term of Eq. (11) is multiplied by zero and
    // f_R = −β Ω ∇ε (∂²Ψ/∂ε²) ∇εᵀ v: exactly the Rayleigh-analogy force, for every velocity.
    Random rng(35);
    const double beta = 0.2;
    int checks = 0;

    SECTION("spring at rest length")
    {
        const weft::QuadraticDensity<double, 1> elastic{100};
        for (int trial = 0; trial < 10; ++trial) {
            const double rest = rng.uniform(0.5, 2);
            const Vector3d x0 = rng.vector<3>(-1, 1);
            Vec8 q;
            q << x0, 0.3, x0 + rest * rng.unit_vector(), 0.3 + rest;
            const Vec8 v = rng.vector<8>(-1, 1);
            const auto e = weft::stretch_strain<double>(q, v);
            REQUIRE(std::abs(e.strain(0)) <= 1e-14);
            const Vec8 f_rayleigh = weft::rayleigh_damping_force(e, elastic, beta, v);
            const Vec8 f_analogy = weft::dissipative_force(e, weft::rayleigh_analogy(elastic, beta));
            REQUIRE(f_rayleigh.norm() > 1e-3);
            CHECK((f_rayleigh - f_analogy).norm() <= 1e-12 * f_rayleigh.norm());
            CHECK(good_damping_residual(e.gradient, f_rayleigh).norm() <= 1e-12 * f_rayleigh.norm());

            Vec8 v_rigid = Vec8::Zero();
            const Vector3d omega = rng.vector<3>(-2, 2);
            v_rigid.segment<3>(0) = omega.cross(Vector3d(q.segment<3>(0)));
            v_rigid.segment<3>(4) = omega.cross(Vector3d(q.segment<3>(4)));
            const auto e_rigid = weft::stretch_strain<double>(q, v_rigid);
            CHECK(weft::rayleigh_damping_force(e_rigid, elastic, beta, v_rigid).norm() <=
                  1e-12 * beta * elastic.stiffness * v_rigid.norm());
            checks += 3;
        }
    }
    SECTION("triangle in its rest shape, rigidly placed")
    {
        const weft::StVKDensity<double> elastic{20, 40};
        const Eigen::Vector2d uv[3] = {{0, 0}, {1, 0.1}, {0.3, 0.9}};
        const auto rest = weft::make_triangle_rest<double>(uv[0], uv[1], uv[2]);
        for (int trial = 0; trial < 10; ++trial) {
            const Eigen::Matrix3d r = weft_test::random_rotation(rng);
            const Vector3d translation = rng.vector<3>(-1, 1);
            Vec9 q;
            for (int a = 0; a < 3; ++a) q.segment<3>(3 * a) = r * Vector3d(uv[a].x(), uv[a].y(), 0) + translation;
            const Vec9 v = rng.vector<9>(-1, 1);
            const auto e = weft::green_strain<double>(rest, q, v);
            REQUIRE(e.strain.norm() <= 1e-14);
            const Vec9 f_rayleigh = weft::rayleigh_damping_force(e, elastic, beta, v);
            const Vec9 f_analogy = weft::dissipative_force(e, weft::rayleigh_analogy(elastic, beta));
            REQUIRE(f_rayleigh.norm() > 1e-3);
            CHECK((f_rayleigh - f_analogy).norm() <= 1e-12 * f_rayleigh.norm());
            CHECK(good_damping_residual(e.gradient, f_rayleigh).norm() <= 1e-12 * f_rayleigh.norm());

            Vec9 v_rigid;
            const Vector3d omega = rng.vector<3>(-2, 2);
            for (int a = 0; a < 3; ++a) v_rigid.segment<3>(3 * a) = omega.cross(Vector3d(q.segment<3>(3 * a)));
            const auto e_rigid = weft::green_strain<double>(rest, q, v_rigid);
            CHECK(weft::rayleigh_damping_force(e_rigid, elastic, beta, v_rigid).norm() <=
                  1e-12 * beta * elastic.mu * v_rigid.norm());
            checks += 3;
        }
    }
    REQUIRE(checks == 30);
}

TEST_CASE("good damping: the absolute eigenvalue filter of full Newton changes the stiffness, never a force",
          "[element][good_damping][rayleigh][projection]")
{
    // A compressed segment (indefinite stretch Hessian) sliding and turning;
    // full-Newton inputs with the projected stiffness, clamped and absolute.
    const double rest = 2.0, k = 100.0, strain = -0.3;
    Eigen::VectorXd q = Eigen::VectorXd::Zero(10), v = Eigen::VectorXd::Zero(10);
    q.segment<3>(5) = Vector3d((1 + strain) * rest, 0.1, 0);
    q(8) = rest;
    v.segment<3>(5) = Vector3d(0.3, 0, 5).cross(Vector3d(q.segment<3>(5)));
    v(3) = 0.2;
    const weft::YarnSegment seg{0, 1, 3};
    auto kernel = [&](const weft::YarnMaterial<double>& m, bool absolute) {
        weft::NewtonInputs<double> newton;
        newton.full_newton = true;
        newton.absolute_eigenvalues = absolute;
        return weft_test::kernel_terms<2, weft::yarn_node_dofs>(
            [&](double h, weft::NodeBlocks<double, 2, weft::yarn_node_dofs>& out, weft::ElementEnergies<double>& e) {
                weft::evaluate_yarn_segment<double>(q.data(), v.data(), seg, m, Vector3d::Zero().eval(), h, out, e,
                                                    newton);
            });
    };
    int checks = 0;
    for (const weft::DampingModel model :
         {weft::DampingModel::none, weft::DampingModel::strain_rate, weft::DampingModel::rayleigh}) {
        weft::YarnMaterial<double> mat;
        mat.stretch_stiffness = k;
        mat.damping = model;
        mat.stretch_damping = model == weft::DampingModel::strain_rate ? 0.5 : 0.0;
        mat.rayleigh_beta = model == weft::DampingModel::rayleigh ? 0.1 : 0.0;
        const weft_test::KernelTerms clamped = kernel(mat, false), absolute = kernel(mat, true);
        INFO("damping model " << static_cast<int>(model));
        CHECK((absolute.force - clamped.force).norm() == 0.0);
        CHECK(absolute.dissipation == clamped.dissipation);
        const Eigen::MatrixXd added = clamped.df_dq - absolute.df_dq;  // (−∂f/∂q)_abs − (−∂f/∂q)_clamp
        if (model == weft::DampingModel::rayleigh) {
            // Rayleigh's force is built from the projected stiffness: it keeps the clamp.
            CHECK(added.norm() == 0.0);
        } else {
            // |λ| ≥ max(λ, 0): the absolute form adds a PSD part, non-zero at this compressed segment.
            CHECK(weft_test::symmetric_eigenvalues(added).minCoeff() >= -1e-9 * clamped.df_dq.norm());
            CHECK(added.norm() > 1e-3 * clamped.df_dq.norm());
        }
        checks += 3;
    }
    REQUIRE(checks == 9);
}
