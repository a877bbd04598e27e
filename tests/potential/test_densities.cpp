#include <weft/core/psd.hpp>
#include <weft/potential/quadratic.hpp>
#include <weft/potential/rayleigh_analogy.hpp>
#include <weft/potential/stvk.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "support/fd_check.hpp"
#include "support/random.hpp"
#include "support/symmetric_eigen.hpp"

using weft_test::AllowZero;
using weft_test::FdChecker;
using weft_test::MatrixX;
using weft_test::Random;
using weft_test::VectorX;

namespace {

/// Jacobian of the stress against FD. For M = 1 it goes through the scalar
/// gradient path: GCC 12 reports a false -Warray-bounds on Eigen's packet
/// store into a dynamic matrix it can prove has one element.
template <int M, class Stress>
void check_stress_derivative(FdChecker& checker, const Stress& stress, const VectorX& at, const MatrixX& analytic,
                             const std::string& what)
{
    if constexpr (M == 1) {
        checker.gradient([&](const VectorX& x) { return stress(x)(0); }, at, VectorX(analytic.col(0)), what);
    } else {
        checker.jacobian(stress, at, analytic, what);
    }
}

/// Checks one density at (rate, strain) in both roles: elastic (argument ε)
/// when `has_elastic_role`, and dissipative (argument ε̇, with ε fixed).
/// stress = ∇ value, stress_derivative = Jacobian of stress. Returns the count.
template <int M, bool ElasticRole, class Density>
int check_density(FdChecker& checker, const Density& density, const Eigen::Matrix<double, M, 1>& rate,
                  const Eigen::Matrix<double, M, 1>& strain)
{
    using V = Eigen::Matrix<double, M, 1>;
    const int before = checker.checks;
    if constexpr (ElasticRole) {
        checker.gradient([&](const VectorX& x) { return density.value(V(x)); }, VectorX(strain),
                         VectorX(density.stress(strain)), "elastic stress = dPsi/deps");
        check_stress_derivative<M>(
            checker, [&](const VectorX& x) { return VectorX(density.stress(V(x))); }, VectorX(strain),
            MatrixX(density.stress_derivative(strain)), "elastic dS/deps");
    }
    checker.gradient([&](const VectorX& x) { return density.value(V(x), strain); }, VectorX(rate),
                     VectorX(density.stress(rate, strain)), "dissipative stress = dPsi_d/deps_dot");
    check_stress_derivative<M>(
        checker, [&](const VectorX& x) { return VectorX(density.stress(V(x), strain)); }, VectorX(rate),
        MatrixX(density.stress_derivative(rate, strain)), "dissipative dS_d/deps_dot");
    return checker.checks - before;
}

/// Reference clamp of a symmetric matrix by Eigen's solver: V max(Λ, 0) Vᵀ.
Eigen::MatrixXd reference_psd(const Eigen::MatrixXd& a)
{
    const weft_test::SymmetricEigen solver = weft_test::symmetric_eigen(a);
    REQUIRE(solver.ok);
    const Eigen::VectorXd clamped = solver.values.cwiseMax(0.0);
    return solver.vectors * clamped.asDiagonal() * solver.vectors.transpose();
}

Eigen::Matrix2d voigt_to_tensor(const Eigen::Vector3d& s)
{
    Eigen::Matrix2d t;
    t << s(0), s(2), s(2), s(1);
    return t;
}

/// Symmetric N×N matrix with entries in [−1, 1], eigenvalues of both signs.
template <int N>
Eigen::Matrix<double, N, N> random_symmetric(Random& rng)
{
    Eigen::Matrix<double, N, N> a;
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) a(i, j) = rng.uniform(-1, 1);
    return 0.5 * (a + a.transpose());
}

/// Runs the project_to_psd checks on random matrices of size N; returns the count.
template <int N>
int check_project_to_psd(Random& rng, int trials)
{
    using MatN = Eigen::Matrix<double, N, N>;
    int checks = 0;
    int with_negative = 0;
    for (int trial = 0; trial < trials; ++trial) {
        const MatN a = random_symmetric<N>(rng);
        const MatN p = weft::project_to_psd<double, N>(a);
        const double tol = 1e-12 * std::max(1.0, a.norm());
        INFO("N = " << N << ", trial " << trial << "\nA =\n" << a << "\nP =\n" << p);

        const weft_test::SymmetricEigen solver = weft_test::symmetric_eigen(a);
        REQUIRE(solver.ok);
        if (solver.values.minCoeff() < -1e-3) ++with_negative;

        // Matches the reference V max(Λ, 0) Vᵀ.
        CHECK((Eigen::MatrixXd(p) - reference_psd(Eigen::MatrixXd(a))).cwiseAbs().maxCoeff() <= tol);
        // Symmetric and PSD.
        CHECK((p - p.transpose()).cwiseAbs().maxCoeff() <= tol);
        CHECK(weft_test::symmetric_eigenvalues(p).minCoeff() >= -tol);
        // Eigenvectors of A preserved: P v_k = max(λ_k, 0) v_k.
        for (int k = 0; k < N; ++k) {
            const Eigen::VectorXd vk = solver.vectors.col(k);
            const double lk = std::max(solver.values(k), 0.0);
            CHECK((Eigen::MatrixXd(p) * vk - lk * vk).norm() <= tol);
        }
        // Already PSD (A Aᵀ + a multiple of I): unchanged.
        const MatN psd = a * a.transpose() + 1e-3 * MatN::Identity();
        CHECK((weft::project_to_psd<double, N>(psd) - psd).cwiseAbs().maxCoeff() <= 1e-12 * std::max(1.0, psd.norm()));
        // The absolute filter: V |Λ| Vᵀ, the same eigenvectors, PSD; unchanged where A is PSD.
        const MatN abs_p = weft::project_to_psd<double, N>(a, true);
        for (int k = 0; k < N; ++k) {
            const Eigen::VectorXd vk = solver.vectors.col(k);
            CHECK((Eigen::MatrixXd(abs_p) * vk - std::abs(solver.values(k)) * vk).norm() <= tol);
        }
        CHECK(weft_test::symmetric_eigenvalues(abs_p).minCoeff() >= -tol);
        CHECK((weft::project_to_psd<double, N>(psd, true) - psd).cwiseAbs().maxCoeff() <=
              1e-12 * std::max(1.0, psd.norm()));
        checks += 8;
    }
    // The random matrices must actually exercise the clamp.
    REQUIRE(with_negative >= trials / 2);
    return checks;
}

/// Checks weft::symmetric_eigen on `a`: A = V Λ Vᵀ, VᵀV = I, and the
/// eigenvalues those of Eigen's solver. Returns the count of checks.
template <int N>
int check_symmetric_eigen(const Eigen::Matrix<double, N, N>& a, const std::string& what)
{
    using MatN = Eigen::Matrix<double, N, N>;
    Eigen::Matrix<double, N, 1> values;
    MatN v;
    const bool ok = weft::symmetric_eigen<double, N>(a, values, v);
    const double scale = std::max(a.norm(), std::numeric_limits<double>::min());
    const double tol = 1e-13 * N;
    INFO(what << ", N = " << N << "\nA =\n" << a << "\nvalues = " << values.transpose());
    CHECK(ok);
    CHECK((v * values.asDiagonal() * v.transpose() - a).norm() <= tol * scale);
    CHECK((v.transpose() * v - MatN::Identity()).norm() <= tol);
    Eigen::VectorXd sorted = values;
    std::sort(sorted.data(), sorted.data() + N);
    CHECK((sorted - weft_test::symmetric_eigenvalues(Eigen::MatrixXd(a))).norm() <= tol * scale);
    return 4;
}

/// symmetric_eigen on random, rank-deficient, repeated-eigenvalue, diagonal,
/// zero and badly scaled matrices of size N. Returns the count of checks.
template <int N>
int check_symmetric_eigen_cases(Random& rng)
{
    using MatN = Eigen::Matrix<double, N, N>;
    using VecN = Eigen::Matrix<double, N, 1>;
    int checks = 0;
    for (int trial = 0; trial < 5; ++trial) checks += check_symmetric_eigen<N>(random_symmetric<N>(rng), "random");
    VecN g, w;
    for (int i = 0; i < N; ++i) {
        g(i) = rng.uniform(-1, 1);
        w(i) = rng.uniform(-1, 1);
    }
    // A bending element's Hessian: a Gauss-Newton part of rank 2 and a small indefinite rest.
    checks += check_symmetric_eigen<N>(MatN(1e3 * g * g.transpose() - 1e3 * w * w.transpose()), "rank 2, indefinite");
    checks += check_symmetric_eigen<N>(MatN(1e3 * g * g.transpose() + 1e-3 * random_symmetric<N>(rng)),
                                       "rank 1 plus a small rest");
    checks += check_symmetric_eigen<N>(MatN(g * g.transpose()), "rank 1");
    checks += check_symmetric_eigen<N>(MatN::Zero(), "zero");
    checks += check_symmetric_eigen<N>(MatN(2.0 * MatN::Identity()), "repeated eigenvalue");
    MatN diagonal = MatN::Zero();
    for (int i = 0; i < N; ++i) diagonal(i, i) = (i % 2 ? -1.0 : 1.0) * std::pow(10.0, i - N / 2);
    checks += check_symmetric_eigen<N>(diagonal, "diagonal, mixed signs and scales");
    // Eigenvalues that coincide in pairs, in a rotated basis.
    VecN u;  // a Householder reflection I − 2 u uᵀ / uᵀu: orthogonal
    for (int i = 0; i < N; ++i) u(i) = rng.uniform(-1, 1);
    const MatN q = MatN::Identity() - (2.0 / u.squaredNorm()) * u * u.transpose();
    VecN paired;
    for (int i = 0; i < N; ++i) paired(i) = double(i / 2) - 2.0;
    checks += check_symmetric_eigen<N>(MatN(q * paired.asDiagonal() * q.transpose()), "paired eigenvalues");
    checks += check_symmetric_eigen<N>(MatN(1e-30 * random_symmetric<N>(rng)), "scaled by 1e-30");
    checks += check_symmetric_eigen<N>(MatN(1e30 * random_symmetric<N>(rng)), "scaled by 1e30");
    return checks;
}

}  // namespace

TEST_CASE("densities: stress is the gradient of the value and its derivative the stress Jacobian",
          "[potential][density][gradient][hessian]")
{
    Random rng(21);
    FdChecker checker;
    checker.step = 1e-5;
    checker.tolerance = 1e-7;
    int ran = 0;
    constexpr int trials = 10;
    for (int trial = 0; trial < trials; ++trial) {
        const Eigen::Matrix<double, 1, 1> rate1 = rng.vector<1>(-1, 1), strain1 = rng.vector<1>(-0.5, 0.5);
        const Eigen::Vector3d rate3 = rng.vector<3>(-1, 1), strain3 = rng.vector<3>(-0.5, 0.5);
        const double beta = rng.uniform(0.01, 1.0);

        const weft::QuadraticDensity<double, 1> quad1{rng.uniform(0.1, 100)};
        const weft::QuadraticDensity<double, 3> quad3{rng.uniform(0.1, 100)};
        const weft::StVKDensity<double> stvk{rng.uniform(-5, 50), rng.uniform(0.1, 50)};
        ran += check_density<1, true>(checker, quad1, rate1, strain1);
        ran += check_density<3, true>(checker, quad3, rate3, strain3);
        ran += check_density<3, true>(checker, stvk, rate3, strain3);
        // Rayleigh analogy (dissipative role only), over both elastic laws.
        const weft::RayleighAnalogy<double, weft::QuadraticDensity<double, 1>> analogy1{quad1, beta};
        const weft::RayleighAnalogy<double, weft::StVKDensity<double>> analogy_stvk{stvk, beta};
        ran += check_density<1, false>(checker, analogy1, rate1, strain1);
        ran += check_density<3, false>(checker, analogy_stvk, rate3, strain3);
    }
    REQUIRE(ran == trials * (3 * 4 + 2 * 2));
    REQUIRE(checker.checks == ran);
}

TEST_CASE("densities: StVK values follow 2018 Eq. 13-14 in Voigt order", "[potential][stvk]")
{
    const weft::StVKDensity<double> stvk{2.0, 3.0};
    const Eigen::Vector3d e(0.1, -0.2, 0.05);
    const Eigen::Matrix2d tensor = voigt_to_tensor(e);
    // Ψ = λ/2 tr(ε)² + μ tr(ε²)
    CHECK(stvk.value(e) == Approx(0.5 * 2.0 * tensor.trace() * tensor.trace() + 3.0 * (tensor * tensor).trace()));
    // S = λ tr(ε) I + 2μ ε, conjugate vector (S₁₁, S₂₂, 2 S₁₂)
    const Eigen::Matrix2d s = 2.0 * tensor.trace() * Eigen::Matrix2d::Identity() + 2 * 3.0 * tensor;
    const Eigen::Vector3d stress = stvk.stress(e);
    CHECK(stress(0) == Approx(s(0, 0)));
    CHECK(stress(1) == Approx(s(1, 1)));
    CHECK(stress(2) == Approx(2 * s(0, 1)));
}

TEST_CASE("densities: rayleigh_analogy scales the elastic parameters by beta (2018 Eq. 12)",
          "[potential][rayleigh_analogy]")
{
    const double beta = 0.125;
    const weft::QuadraticDensity<double, 1> quad1{80.0};
    const weft::QuadraticDensity<double, 3> quad3{6.0};
    const weft::StVKDensity<double> stvk{3.0, 7.0};
    CHECK(weft::rayleigh_analogy(quad1, beta).stiffness == Approx(beta * 80.0));
    CHECK(weft::rayleigh_analogy(quad3, beta).stiffness == Approx(beta * 6.0));
    const weft::StVKDensity<double> stvk_d = weft::rayleigh_analogy(stvk, beta);
    CHECK(stvk_d.lambda == Approx(beta * 3.0));
    CHECK(stvk_d.mu == Approx(beta * 7.0));
}

TEST_CASE("densities: the generic Rayleigh analogy equals the specialised one", "[potential][rayleigh_analogy]")
{
    Random rng(22);
    int checks = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const double beta = rng.uniform(0.01, 1.0);
        const weft::StVKDensity<double> stvk{rng.uniform(0, 50), rng.uniform(0.1, 50)};
        const weft::RayleighAnalogy<double, weft::StVKDensity<double>> generic{stvk, beta};
        const weft::StVKDensity<double> special = weft::rayleigh_analogy(stvk, beta);
        const Eigen::Vector3d rate = rng.vector<3>(-1, 1), strain = rng.vector<3>(-0.5, 0.5);
        REQUIRE(std::abs(special.value(rate, strain)) > 0);
        CHECK(generic.value(rate, strain) == Approx(special.value(rate, strain)).epsilon(1e-13));
        CHECK((generic.stress(rate, strain) - special.stress(rate, strain)).norm() <=
              1e-13 * special.stress(rate, strain).norm());
        CHECK((generic.stress_derivative(rate, strain) - special.stress_derivative(rate, strain)).norm() <=
              1e-13 * special.stress_derivative(rate, strain).norm());

        const weft::QuadraticDensity<double, 3> quad{rng.uniform(0.1, 10)};
        const weft::RayleighAnalogy<double, weft::QuadraticDensity<double, 3>> generic_q{quad, beta};
        const weft::QuadraticDensity<double, 3> special_q = weft::rayleigh_analogy(quad, beta);
        CHECK(generic_q.value(rate, strain) == Approx(special_q.value(rate, strain)).epsilon(1e-13));
        CHECK((generic_q.stress(rate, strain) - special_q.stress(rate, strain)).norm() <=
              1e-13 * special_q.stress(rate, strain).norm());
        checks += 5;
    }
    REQUIRE(checks == 50);
}

TEST_CASE("psd: clamp_symmetric_2x2 matches Eigen's eigen-decomposition", "[core][psd][clamp]")
{
    Random rng(23);
    int both_positive = 0, mixed = 0, both_negative = 0, checks = 0;
    for (int trial = 0; trial < 300; ++trial) {
        const Eigen::Vector3d s(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1));
        const Eigen::Matrix2d tensor = voigt_to_tensor(s);
        const weft_test::SymmetricEigen solver = weft_test::symmetric_eigen(tensor);
        REQUIRE(solver.ok);
        const Eigen::Vector2d l = solver.values;  // ascending
        if (l(0) >= 0)
            ++both_positive;
        else if (l(1) > 0)
            ++mixed;
        else
            ++both_negative;

        const Eigen::Vector3d clamped = weft::clamp_symmetric_2x2<double>(s);
        const Eigen::Matrix2d result = voigt_to_tensor(clamped);
        const Eigen::Matrix2d expected = reference_psd(Eigen::MatrixXd(tensor));
        INFO("s = " << s.transpose() << ", eigenvalues " << l.transpose() << ", clamped " << clamped.transpose());
        CHECK((result - expected).cwiseAbs().maxCoeff() <= 1e-13);
        // PSD, and the eigenvectors of S are kept: result e_k = max(λ_k, 0) e_k.
        CHECK(weft_test::symmetric_eigenvalues(result).minCoeff() >= -1e-13);
        for (int k = 0; k < 2; ++k) {
            const Eigen::Vector2d ek = solver.vectors.col(k);
            CHECK((result * ek - std::max(l(k), 0.0) * ek).norm() <= 1e-13);
        }
        if (l(0) >= 0) CHECK(clamped == s);  // unchanged, bit for bit, when already PSD
        checks += 4;
    }
    REQUIRE(checks == 1200);
    // Every branch of the closed form ran.
    REQUIRE(both_positive > 20);
    REQUIRE(mixed > 20);
    REQUIRE(both_negative > 20);
}

TEST_CASE("psd: symmetric_eigen decomposes random and degenerate symmetric matrices of sizes 1, 2, 3 and 12",
          "[core][psd][eigen]")
{
    Random rng(31);
    int checks = 0;
    // Sizes 1 (no reduction), 2, 3 and 12 (the bending elements'; each size
    // costs the sanitizer build about 7 s of the compiler).
    checks += check_symmetric_eigen_cases<1>(rng);
    checks += check_symmetric_eigen_cases<2>(rng);
    checks += check_symmetric_eigen_cases<3>(rng);
    checks += check_symmetric_eigen_cases<12>(rng);
    REQUIRE(checks == 4 * 14 * 4);
}

TEST_CASE("psd: project_to_psd leaves PSD input unchanged, zeroes or negates a negative definite one",
          "[core][psd][projection]")
{
    using Mat12 = Eigen::Matrix<double, 12, 12>;
    Random rng(32);
    int checks = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const Mat12 b = random_symmetric<12>(rng);
        Eigen::Matrix<double, 12, 1> g;
        for (int i = 0; i < 12; ++i) g(i) = rng.uniform(-1, 1);
        const Mat12 product = b * b.transpose() + Mat12::Identity();
        const Mat12 definite = 0.5 * (product + product.transpose());  // exactly symmetric
        const Mat12 rank_one = g * g.transpose();
        INFO("trial " << trial);
        for (const bool absolute : {false, true}) {
            // PSD (definite, and singular of rank 1): returned exactly as given.
            CHECK(weft::project_to_psd<double, 12>(definite, absolute) == definite);
            CHECK((weft::project_to_psd<double, 12>(rank_one, absolute) - rank_one).norm() <= 1e-14 * rank_one.norm());
            // Negative definite: zero, or its negation with absolute values.
            const Mat12 expected = absolute ? Mat12(definite) : Mat12(Mat12::Zero());
            CHECK((weft::project_to_psd<double, 12>(Mat12(-definite), absolute) - expected).norm() <=
                  1e-13 * definite.norm());
            // A negative rank-one matrix: zero, or the positive one.
            const Mat12 expected_one = absolute ? Mat12(rank_one) : Mat12(Mat12::Zero());
            CHECK((weft::project_to_psd<double, 12>(Mat12(-rank_one), absolute) - expected_one).norm() <=
                  1e-14 * rank_one.norm());
            checks += 4;
        }
    }
    CHECK(weft::project_to_psd<double, 12>(Mat12::Zero()) == Mat12::Zero());
    REQUIRE(checks == 10 * 2 * 4);
}

TEST_CASE("psd: project_to_psd matches Eigen's eigen-decomposition for sizes 2, 3, 9, 12, clamped and absolute",
          "[core][psd][projection]")
{
    Random rng(24);
    int checks = 0;
    checks += check_project_to_psd<2>(rng, 20);
    checks += check_project_to_psd<3>(rng, 20);
    checks += check_project_to_psd<9>(rng, 20);
    checks += check_project_to_psd<12>(rng, 20);
    REQUIRE(checks == 4 * 20 * 8);
}
