#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/SparseCholesky>

#include <thrust/functional.h>
#include <thrust/transform.h>

#include <weft/backend/assembly.hpp>
#include <weft/backend/device.hpp>
#include <weft/backend/direct_solver.hpp>
#include <weft/backend/pcg.hpp>
#include <weft/backend/slowest_mode.hpp>

#include "backend/block_system.hpp"
#include "support/random.hpp"
#include "support/symmetric_eigen.hpp"
#include "support/threads.hpp"

using weft::BsrMatrix;
using weft::Index;
using weft::PcgOptions;
using weft::PcgPreconditioner;
using weft::PcgResult;
using weft::PcgStatus;
using weft::PcgWorkspace;
using weft_backend_test::random_vector;
using weft_backend_test::to_device;
using weft_backend_test::to_eigen_vector;
using weft_test::Random;

namespace {

using SparseMatrix = Eigen::SparseMatrix<double>;
using weft_backend_test::grid_problem;
using weft_backend_test::GridProblem;
using weft_backend_test::random_filter;
using weft_backend_test::relative_error;
using weft_backend_test::selection;
using weft_backend_test::sparse_ldlt_solve;

template <int B>
int check_matches_ldlt(Random& rng, int nx, int ny, PcgPreconditioner preconditioner)
{
    const GridProblem<B> problem = grid_problem<B>(rng, nx, ny);
    const Eigen::VectorXd b = random_vector(rng, B * problem.nodes);
    const Eigen::VectorXd expected = sparse_ldlt_solve(problem.reference, b);
    REQUIRE(expected.norm() > 0);

    PcgOptions<double> options;
    options.tolerance = 1e-10;
    options.preconditioner = preconditioner;
    PcgWorkspace<double, B> workspace;
    thrust::device_vector<double> x(static_cast<std::size_t>(B * problem.nodes), 0.0);
    const PcgResult<double> result = weft::solve_filtered_pcg(problem.a, to_device(b), x, workspace, options);
    REQUIRE(result.converged);
    REQUIRE(result.status == PcgStatus::converged);
    CHECK(result.iterations > 0);
    CHECK(result.relative_residual <= 1e-10);
    const Eigen::VectorXd solution = to_eigen_vector(x);
    CHECK(relative_error(solution, expected) <= 1e-8);
    CHECK((b - problem.reference * solution).norm() <= 1e-9 * b.norm());
    return 1;
}

}  // namespace

TEST_CASE("pcg: solution matches Eigen's SimplicialLDLT on SPD block systems", "[backend][pcg][solve]")
{
    Random rng(17);
    int ran = 0;
    for (auto preconditioner : {PcgPreconditioner::block_jacobi, PcgPreconditioner::none}) {
        ran += check_matches_ldlt<5>(rng, 8, 6, preconditioner);
        ran += check_matches_ldlt<5>(rng, 20, 1, preconditioner);  // a yarn-like chain
        ran += check_matches_ldlt<3>(rng, 9, 7, preconditioner);
    }
    REQUIRE(ran == 6);
}

TEST_CASE("pcg: constrained DoFs stay at zero and the free DoFs solve the reduced system", "[backend][pcg][filter]")
{
    Random rng(23);
    int checked_systems = 0;
    for (int trial = 0; trial < 3; ++trial) {
        const GridProblem<5> problem = grid_problem<5>(rng, 6, 5);
        const Eigen::Index dofs = 5 * problem.nodes;
        const std::vector<std::uint8_t> free_dofs = random_filter<5>(rng, problem.nodes, 0.3);
        const Eigen::VectorXd b = random_vector(rng, dofs);
        // Free entries of x on entry are ignored: start them at garbage.
        Eigen::VectorXd x_start = Eigen::VectorXd::Zero(dofs);
        for (Eigen::Index i = 0; i < dofs; ++i) {
            if (free_dofs[static_cast<std::size_t>(i)]) x_start(i) = 1e3;
        }
        thrust::device_vector<double> x = to_device(x_start);
        PcgWorkspace<double, 5> workspace;
        PcgOptions<double> options;
        options.tolerance = 1e-10;
        const PcgResult<double> result =
            weft::solve_filtered_pcg(problem.a, to_device(b), to_device(free_dofs), x, workspace, options);
        REQUIRE(result.converged);
        const Eigen::VectorXd solution = to_eigen_vector(x);

        int constrained = 0;
        int constrained_zero = 0;
        for (Eigen::Index i = 0; i < dofs; ++i) {
            if (free_dofs[static_cast<std::size_t>(i)]) continue;
            ++constrained;
            constrained_zero += solution(i) == 0.0 ? 1 : 0;
        }
        REQUIRE(constrained >= 5);
        CHECK(constrained_zero == constrained);

        const SparseMatrix p = selection(free_dofs);
        const SparseMatrix reduced = p * problem.reference * p.transpose();
        const Eigen::VectorXd expected = sparse_ldlt_solve(reduced, p * b);
        REQUIRE(expected.norm() > 0);
        CHECK(relative_error(p * solution, expected) <= 1e-8);
        ++checked_systems;
    }
    REQUIRE(checked_systems == 3);
}

TEST_CASE("pcg: prescribed values on constrained DoFs are kept and enter the free right-hand side",
          "[backend][pcg][filter]")
{
    Random rng(29);
    const GridProblem<3> problem = grid_problem<3>(rng, 7, 7);
    const Eigen::Index dofs = 3 * problem.nodes;
    const std::vector<std::uint8_t> free_dofs = random_filter<3>(rng, problem.nodes, 0.25);
    std::vector<std::uint8_t> constrained_dofs(free_dofs.size());
    for (std::size_t i = 0; i < free_dofs.size(); ++i) constrained_dofs[i] = free_dofs[i] ? 0 : 1;
    const Eigen::VectorXd b = random_vector(rng, dofs);
    const Eigen::VectorXd z = random_vector(rng, dofs, 0.5, 2.0);
    Eigen::VectorXd x_start = z;
    for (Eigen::Index i = 0; i < dofs; ++i) {
        if (free_dofs[static_cast<std::size_t>(i)]) x_start(i) = -7.0;
    }
    thrust::device_vector<double> x = to_device(x_start);
    PcgWorkspace<double, 3> workspace;
    PcgOptions<double> options;
    options.tolerance = 1e-11;
    const PcgResult<double> result =
        weft::solve_filtered_pcg(problem.a, to_device(b), to_device(free_dofs), x, workspace, options);
    REQUIRE(result.converged);
    const Eigen::VectorXd solution = to_eigen_vector(x);

    const SparseMatrix pf = selection(free_dofs);
    const SparseMatrix pc = selection(constrained_dofs);
    REQUIRE(pc.rows() >= 3);
    const Eigen::VectorXd z_c = pc * z;
    CHECK((pc * solution - z_c).lpNorm<Eigen::Infinity>() == 0.0);
    // A_ff x_f = b_f − A_fc z_c
    const SparseMatrix a_ff = pf * problem.reference * pf.transpose();
    const SparseMatrix a_fc = pf * problem.reference * pc.transpose();
    const Eigen::VectorXd expected = sparse_ldlt_solve(a_ff, pf * b - a_fc * z_c);
    REQUIRE((a_fc * z_c).norm() > 0);
    CHECK(relative_error(pf * solution, expected) <= 1e-8);
}

namespace {

/// The reference matrix with every entry rounded to float and back.
SparseMatrix rounded_to_float(const SparseMatrix& a)
{
    SparseMatrix rounded = a;
    for (Eigen::Index k = 0; k < rounded.nonZeros(); ++k) {
        rounded.valuePtr()[k] = static_cast<double>(static_cast<float>(rounded.valuePtr()[k]));
    }
    return rounded;
}

/// Filtered solve with prescribed values, in double and with a float copy of
/// the matrix: the single-precision iterate solves the rounded system A_f to
/// the tolerance, the double one A itself, and the two differ by about the
/// rounding. Returns the checks that ran.
template <int B>
int check_single_precision_matrix(Random& rng, int nx, int ny, PcgPreconditioner preconditioner)
{
    const GridProblem<B> problem = grid_problem<B>(rng, nx, ny);
    const Eigen::Index dofs = B * problem.nodes;
    const std::vector<std::uint8_t> free_dofs = random_filter<B>(rng, problem.nodes, 0.25);
    std::vector<std::uint8_t> constrained_dofs(free_dofs.size());
    for (std::size_t i = 0; i < free_dofs.size(); ++i) constrained_dofs[i] = free_dofs[i] ? 0 : 1;
    const Eigen::VectorXd b = random_vector(rng, dofs);
    const Eigen::VectorXd z = random_vector(rng, dofs, 0.5, 2.0);
    const SparseMatrix pf = selection(free_dofs);
    const SparseMatrix pc = selection(constrained_dofs);
    REQUIRE(pc.rows() >= B);
    // The filtered residual ‖S (b − A z_c − M x_f)‖ / ‖S (b − A z_c)‖ for
    // M = A or A_f: the prescribed values enter through A itself (r₀ is
    // formed with A), the free DoFs through the matrix of the iteration.
    const Eigen::VectorXd z_c = pc.transpose() * (pc * z);
    const Eigen::VectorXd b_free = pf * (b - problem.reference * z_c);
    const auto relative_residual = [&](const SparseMatrix& m, const Eigen::VectorXd& x) {
        const Eigen::VectorXd x_f = pf.transpose() * (pf * x);
        return (b_free - pf * (m * x_f)).norm() / b_free.norm();
    };
    const SparseMatrix rounded = rounded_to_float(problem.reference);
    REQUIRE((rounded - problem.reference).norm() > 0);

    Eigen::VectorXd solutions[2];
    for (int single = 0; single < 2; ++single) {
        PcgOptions<double> options;
        options.tolerance = 1e-12;
        options.preconditioner = preconditioner;
        options.single_precision_matrix = single == 1;
        PcgWorkspace<double, B> workspace;
        thrust::device_vector<double> x = to_device(z);
        const PcgResult<double> result =
            weft::solve_filtered_pcg(problem.a, to_device(b), to_device(free_dofs), x, workspace, options);
        REQUIRE(result.converged);
        solutions[single] = to_eigen_vector(x);
        CHECK((pc * solutions[single] - pc * z).lpNorm<Eigen::Infinity>() == 0.0);
    }
    // Each solves its own matrix to the tolerance (up to the recursion's
    // drift), and the other only to about float's rounding: so the float
    // copy is what the single-precision products used.
    CHECK(relative_residual(problem.reference, solutions[0]) <= 1e-10);
    CHECK(relative_residual(rounded, solutions[1]) <= 1e-10);
    CHECK(relative_residual(rounded, solutions[0]) > 1e-9);
    CHECK(relative_residual(problem.reference, solutions[1]) > 1e-9);
    CHECK(relative_residual(problem.reference, solutions[1]) <= 1e-5);
    CHECK(relative_error(pf * solutions[1], pf * solutions[0]) <= 1e-5);
    return 7;
}

struct Scaled {
    double factor;
    WEFT_HD double operator()(double v) const { return v * factor; }
};

}  // namespace

TEST_CASE("pcg: with a single-precision matrix the iteration solves the float-rounded system", "[backend][pcg][single]")
{
    Random rng(61);
    int checks = 0;
    for (auto preconditioner : {PcgPreconditioner::block_jacobi, PcgPreconditioner::none}) {
        checks += check_single_precision_matrix<5>(rng, 8, 6, preconditioner);
        checks += check_single_precision_matrix<3>(rng, 9, 7, preconditioner);
    }
    REQUIRE(checks == 28);
}

TEST_CASE("pcg: a matrix entry beyond float's range is reported as non-finite with a single-precision matrix",
          "[backend][pcg][single][status]")
{
    Random rng(67);
    const GridProblem<3> problem = grid_problem<3>(rng, 5, 4);
    // Scale the whole SPD matrix past float's largest value: double still solves it.
    BsrMatrix<double, 3> huge = problem.a;
    thrust::transform(huge.values().begin(), huge.values().end(), huge.values().begin(), Scaled{1e40});
    const Eigen::VectorXd b = random_vector(rng, 3 * problem.nodes);
    int statuses = 0;
    for (int single = 0; single < 2; ++single) {
        PcgOptions<double> options;
        options.tolerance = 1e-10;
        options.single_precision_matrix = single == 1;
        PcgWorkspace<double, 3> workspace;
        thrust::device_vector<double> x(static_cast<std::size_t>(3 * problem.nodes), 0.0);
        const PcgResult<double> result = weft::solve_filtered_pcg(huge, to_device(b * 1e40), x, workspace, options);
        if (single == 0) {
            CHECK(result.status == PcgStatus::converged);
        } else {
            CHECK(result.status == PcgStatus::non_finite);
            CHECK_FALSE(result.converged);
        }
        ++statuses;
    }
    REQUIRE(statuses == 2);
}

TEST_CASE("pcg: block-Jacobi converges in fewer iterations than no preconditioner on a badly scaled system",
          "[backend][pcg][preconditioner]")
{
    Random rng(37);
    const GridProblem<5> problem = grid_problem<5>(rng, 10, 8);
    const Eigen::Index dofs = 5 * problem.nodes;
    // A' = D A D with per-DoF scales over two orders of magnitude.
    Eigen::VectorXd scale(dofs);
    for (Eigen::Index i = 0; i < dofs; ++i) scale(i) = std::pow(10.0, rng.uniform(-1, 1));
    const SparseMatrix scaled = scale.asDiagonal() * problem.reference * scale.asDiagonal();
    const BsrMatrix<double, 5> a = weft::to_bsr<5>(scaled);
    const Eigen::VectorXd b = random_vector(rng, dofs);
    const Eigen::VectorXd expected = sparse_ldlt_solve(scaled, b);

    PcgOptions<double> options;
    options.tolerance = 1e-8;
    options.max_iterations = 20000;
    PcgWorkspace<double, 5> workspace;
    thrust::device_vector<double> x(static_cast<std::size_t>(dofs), 0.0);
    options.preconditioner = PcgPreconditioner::block_jacobi;
    const PcgResult<double> jacobi = weft::solve_filtered_pcg(a, to_device(b), x, workspace, options);
    REQUIRE(jacobi.converged);
    CHECK(relative_error(to_eigen_vector(x), expected) <= 1e-5);
    options.preconditioner = PcgPreconditioner::none;
    const PcgResult<double> plain = weft::solve_filtered_pcg(a, to_device(b), x, workspace, options);
    INFO("block-Jacobi iterations " << jacobi.iterations << ", unpreconditioned " << plain.iterations << " ("
                                    << weft::to_string(plain.status) << ")");
    REQUIRE(plain.converged);
    CHECK(relative_error(to_eigen_vector(x), expected) <= 1e-5);
    REQUIRE(jacobi.iterations > 0);
    CHECK(2 * jacobi.iterations < plain.iterations);
}

namespace {

/// The node-diagonal blocks of `a`, the matrix of the free DoFs of
/// `free_host` (B DoFs per node): block Jacobi's M on the free DoFs.
template <int B>
Eigen::MatrixXd node_blocks(const Eigen::MatrixXd& a, const std::vector<std::uint8_t>& free_host)
{
    std::vector<std::size_t> node_of;
    for (std::size_t i = 0; i < free_host.size(); ++i)
        if (free_host[i]) node_of.push_back(i / B);
    Eigen::MatrixXd blocks = Eigen::MatrixXd::Zero(a.rows(), a.cols());
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < a.cols(); ++j)
            if (node_of[static_cast<std::size_t>(i)] == node_of[static_cast<std::size_t>(j)]) blocks(i, j) = a(i, j);
    return blocks;
}

/// The eigenvalues, ascending, of M⁻¹ Â on the free DoFs: Â = A's free rows
/// and columns, M = the free part of each node's diagonal block (block
/// Jacobi) or the identity (no preconditioner), as C = L⁻¹ Â L⁻ᵀ with M = L Lᵀ.
template <int B>
Eigen::VectorXd preconditioned_eigenvalues(const SparseMatrix& reference, const std::vector<std::uint8_t>& free_host,
                                           bool block_jacobi)
{
    const SparseMatrix pf = selection(free_host);
    const Eigen::MatrixXd a = Eigen::MatrixXd(SparseMatrix(pf * reference * pf.transpose()));
    if (!block_jacobi) return weft_test::symmetric_eigenvalues(a);
    const Eigen::LLT<Eigen::MatrixXd> llt(node_blocks<B>(a, free_host));
    REQUIRE(llt.info() == Eigen::Success);
    const Eigen::MatrixXd l = llt.matrixL();
    const Eigen::MatrixXd left = l.triangularView<Eigen::Lower>().solve(a);  // L⁻¹ Â
    const Eigen::MatrixXd c = l.triangularView<Eigen::Lower>().solve(Eigen::MatrixXd(left.transpose()));
    return weft_test::symmetric_eigenvalues(c);
}

/// PCG's Ritz values on a random grid system with a random filter: to
/// convergence they reach the ends of M⁻¹ Â's spectrum; after three
/// iterations they lie inside it; the iterate is the same bits as without
/// the estimate. Returns the cases checked.
template <int B>
int check_ritz_values(Random& rng, PcgPreconditioner preconditioner)
{
    const GridProblem<B> problem = grid_problem<B>(rng, 6, 5);
    const std::vector<std::uint8_t> free_host = random_filter<B>(rng, problem.nodes, 0.2);
    const Eigen::VectorXd spectrum =
        preconditioned_eigenvalues<B>(problem.reference, free_host, preconditioner == PcgPreconditioner::block_jacobi);
    const double lowest = spectrum(0), highest = spectrum(spectrum.size() - 1);
    REQUIRE(lowest > 0);
    REQUIRE(highest > 1.5 * lowest);  // a spectrum with two distinct ends to find
    const thrust::device_vector<std::uint8_t> free_dofs = to_device(free_host);
    const thrust::device_vector<double> b = to_device(random_vector(rng, B * problem.nodes));
    PcgWorkspace<double, B> workspace;
    PcgOptions<double> options;
    options.preconditioner = preconditioner;
    options.tolerance = 1e-12;
    options.max_iterations = 2000;
    const auto solve = [&](bool estimate, int limit, thrust::device_vector<double>& x) {
        options.estimate_spectrum = estimate;
        options.max_iterations = limit;
        x.assign(static_cast<std::size_t>(B * problem.nodes), 0.0);
        return weft::solve_filtered_pcg(problem.a, b, free_dofs, x, workspace, options);
    };
    int checked = 0;
    thrust::device_vector<double> x, x_plain;
    const PcgResult<double> full = solve(true, 2000, x);
    const PcgResult<double> plain = solve(false, 2000, x_plain);
    INFO("B = " << B << ", spectrum [" << lowest << ", " << highest << "], Ritz [" << full.ritz_min << ", "
                << full.ritz_max << "] after " << full.iterations << " iterations");
    REQUIRE(full.converged);
    REQUIRE(full.spectrum_estimated);
    CHECK(std::abs(full.ritz_min - lowest) <= 1e-5 * lowest);
    CHECK(std::abs(full.ritz_max - highest) <= 1e-5 * highest);
    CHECK_FALSE(plain.spectrum_estimated);
    CHECK(plain.ritz_min == 0.0);
    CHECK(plain.ritz_max == 0.0);
    CHECK(plain.iterations == full.iterations);
    CHECK(to_eigen_vector(x) == to_eigen_vector(x_plain));
    ++checked;

    const PcgResult<double> early = solve(true, 3, x);
    INFO("after 3 iterations: Ritz [" << early.ritz_min << ", " << early.ritz_max << "]");
    REQUIRE(early.status == PcgStatus::max_iterations_reached);
    REQUIRE(early.spectrum_estimated);
    CHECK(early.ritz_min >= lowest * (1 - 1e-12));
    CHECK(early.ritz_max <= highest * (1 + 1e-12));
    CHECK(early.ritz_min < early.ritz_max);
    // Three Lanczos steps do not yet reach the ends of 120-odd eigenvalues.
    CHECK((early.ritz_min > lowest * (1 + 1e-3) || early.ritz_max < highest * (1 - 1e-3)));
    ++checked;

    // PcgOptions::ritz_stop: each Lanczos diagonal entry is a Rayleigh
    // quotient, so a bound below the spectrum stops before the first update
    // (x as it came) and one above it never stops (the same bits).
    options.ritz_stop = 0.5 * lowest;
    const PcgResult<double> at_once = solve(false, 2000, x);
    CHECK(at_once.status == PcgStatus::ritz_above_bound);
    CHECK_FALSE(at_once.converged);
    CHECK(at_once.iterations == 0);
    CHECK(to_eigen_vector(x).isZero(0.0));
    options.ritz_stop = highest * (1 + 1e-9);
    const PcgResult<double> never = solve(false, 2000, x);
    CHECK(never.converged);
    CHECK(never.iterations == plain.iterations);
    CHECK(to_eigen_vector(x) == to_eigen_vector(x_plain));
    // A bound inside the spectrum: where it stops, x is the iterate of the
    // same solve cut at that many iterations.
    options.ritz_stop = 0.5 * (lowest + highest);
    const PcgResult<double> inside = solve(true, 2000, x);
    if (inside.status == PcgStatus::ritz_above_bound) {
        CHECK_FALSE(inside.spectrum_estimated);  // a stopped solve gives no estimate
        options.ritz_stop = 0.0;
        thrust::device_vector<double> x_cut;
        const PcgResult<double> cut = solve(false, inside.iterations, x_cut);
        CHECK(to_eigen_vector(x) == to_eigen_vector(x_cut));
        CHECK(cut.iterations == inside.iterations);
    } else {
        CHECK(inside.converged);
        CHECK(to_eigen_vector(x) == to_eigen_vector(x_plain));
    }
    options.ritz_stop = 0.0;
    checked += 2;
    return checked;
}

}  // namespace

TEST_CASE("pcg: tridiagonal_extreme_eigenvalues equals a dense eigen-solver's ends", "[backend][pcg][spectrum]")
{
    Random rng(83);
    int checked = 0;
    const auto check = [&](const std::vector<double>& diagonal, const std::vector<double>& off) {
        const Eigen::Index k = static_cast<Eigen::Index>(diagonal.size());
        Eigen::MatrixXd t = Eigen::MatrixXd::Zero(k, k);
        double scale = 0;
        for (Eigen::Index i = 0; i < k; ++i) {
            t(i, i) = diagonal[static_cast<std::size_t>(i)];
            scale = std::max(scale, std::abs(t(i, i)));
            if (i + 1 < k) {
                t(i, i + 1) = t(i + 1, i) = off[static_cast<std::size_t>(i)];
                scale = std::max(scale, std::abs(t(i, i + 1)));
            }
        }
        const Eigen::VectorXd expected = weft_test::symmetric_eigenvalues(t);
        const std::pair<double, double> ends = weft::tridiagonal_extreme_eigenvalues(diagonal, off);
        INFO("k = " << k << ": [" << ends.first << ", " << ends.second << "] against [" << expected(0) << ", "
                    << expected(k - 1) << "]");
        CHECK(std::abs(ends.first - expected(0)) <= 1e-12 * std::max(scale, 1e-300) * k);
        CHECK(std::abs(ends.second - expected(k - 1)) <= 1e-12 * std::max(scale, 1e-300) * k);
        ++checked;
    };
    for (const int k : {1, 2, 3, 5, 20, 150}) {
        for (int trial = 0; trial < 4; ++trial) {
            std::vector<double> diagonal(static_cast<std::size_t>(k)), off(static_cast<std::size_t>(k - 1));
            for (double& d : diagonal) d = rng.uniform(-2, 3);
            for (double& e : off) e = rng.uniform(-1, 1);
            check(diagonal, off);
            // Decoupled: the ends are the diagonal's.
            std::fill(off.begin(), off.end(), 0.0);
            check(diagonal, off);
            // Nearly decoupled, badly scaled, and a zero matrix.
            for (double& e : off) e = rng.uniform(-1, 1) * 1e-9;
            check(diagonal, off);
            for (double& d : diagonal) d *= 1e6;
            check(diagonal, off);
        }
        check(std::vector<double>(static_cast<std::size_t>(k), 0.0),
              std::vector<double>(static_cast<std::size_t>(k - 1), 0.0));
        // A repeated eigenvalue: the constant diagonal with no coupling.
        check(std::vector<double>(static_cast<std::size_t>(k), 0.7),
              std::vector<double>(static_cast<std::size_t>(k - 1), 0.0));
    }
    // The 1-D Laplacian tridiag(−1, 2, −1): 2 − 2 cos(jπ/(k + 1)).
    const int k = 40;
    const std::pair<double, double> laplacian =
        weft::tridiagonal_extreme_eigenvalues(std::vector<double>(k, 2.0), std::vector<double>(k - 1, -1.0));
    const double pi = std::acos(-1.0);
    CHECK(std::abs(laplacian.first - (2 - 2 * std::cos(pi / (k + 1)))) <= 1e-13);
    CHECK(std::abs(laplacian.second - (2 - 2 * std::cos(k * pi / (k + 1)))) <= 1e-13);
    REQUIRE(checked == 6 * 4 * 4 + 6 * 2);

    CHECK_THROWS_WITH(weft::tridiagonal_extreme_eigenvalues(std::vector<double>{}, std::vector<double>{}),
                      Catch::Contains("diagonal") && Catch::Contains("empty"));
    CHECK_THROWS_WITH(weft::tridiagonal_extreme_eigenvalues(std::vector<double>{1, 2}, std::vector<double>{}),
                      Catch::Contains("off.size()") && Catch::Contains("must equal diagonal.size() - 1 = 1"));
    CHECK_THROWS_WITH(
        weft::tridiagonal_extreme_eigenvalues(std::vector<double>{1, std::nan("")}, std::vector<double>{0.5}),
        Catch::Contains("entry") && Catch::Contains("not finite"));
}

TEST_CASE("pcg: the Ritz values reach the ends of the preconditioned spectrum and stay inside it",
          "[backend][pcg][spectrum]")
{
    Random rng(89);
    int checked = 0;
    for (const auto preconditioner : {PcgPreconditioner::block_jacobi, PcgPreconditioner::none}) {
        checked += check_ritz_values<3>(rng, preconditioner);
        checked += check_ritz_values<5>(rng, preconditioner);
    }
    REQUIRE(checked == 16);
}

namespace {

/// z = P r with a dense host matrix P: a preconditioner whose M⁻¹ the test knows.
class DenseOperator final : public weft::PreconditionerOperator<double> {
public:
    explicit DenseOperator(Eigen::MatrixXd p) : m_p(std::move(p)) {}
    void apply(const thrust::device_vector<double>& r, thrust::device_vector<double>& z) override
    {
        z = to_device(Eigen::VectorXd(m_p * to_eigen_vector(r)));
        ++applications;
    }
    int applications = 0;

private:
    Eigen::MatrixXd m_p;
};

/// slowest_mode on a random grid system with a random filter, M⁻¹ the
/// identity or block Jacobi on the free DoFs: the smallest eigenvalue of
/// M⁻¹ Â from a dense eigen-solver, from above, and its eigenvector, zero on
/// the constrained DoFs and of unit energy. Returns the checks run.
template <int B>
int check_slowest_mode(Random& rng, bool block_jacobi)
{
    const GridProblem<B> problem = grid_problem<B>(rng, 6, 5);
    const std::vector<std::uint8_t> free_host = random_filter<B>(rng, problem.nodes, 0.2);
    const Eigen::VectorXd spectrum = preconditioned_eigenvalues<B>(problem.reference, free_host, block_jacobi);
    const double lowest = spectrum(0), highest = spectrum(spectrum.size() - 1);
    const SparseMatrix pf = selection(free_host);
    const Eigen::MatrixXd a = Eigen::MatrixXd(SparseMatrix(pf * problem.reference * pf.transpose()));
    Eigen::MatrixXd p = Eigen::MatrixXd::Identity(a.rows(), a.cols());
    if (block_jacobi) p = node_blocks<B>(a, free_host).inverse();
    DenseOperator m(Eigen::MatrixXd(pf.transpose() * p * pf));
    weft::SlowestModeOptions<double> options;
    options.max_iterations = 20000;
    options.tolerance = 1e-14;
    const weft::SlowestMode<double> mode = weft::slowest_mode(problem.a, to_device(free_host), m, options);
    INFO("B = " << B << (block_jacobi ? ", block Jacobi" : ", identity") << ": spectrum [" << lowest << ", " << highest
                << "], estimate " << mode.eigenvalue << " after " << mode.iterations << " iterations, top "
                << mode.top);
    CHECK(mode.converged);
    CHECK(mode.change <= options.tolerance);
    CHECK(mode.eigenvalue >= lowest * (1 - 1e-12));
    CHECK(mode.eigenvalue <= lowest * (1 + 1e-8));
    CHECK(mode.top <= highest * (1 + 1e-12));
    CHECK(mode.top >= 0.5 * highest);
    CHECK(m.applications == options.max_iterations_top + mode.iterations);
    const Eigen::VectorXd x = to_eigen_vector(mode.vector);
    int constrained = 0;
    for (std::size_t i = 0; i < free_host.size(); ++i) {
        if (free_host[i]) continue;
        CHECK(x(static_cast<Eigen::Index>(i)) == 0.0);
        ++constrained;
    }
    CHECK(constrained >= B);
    const Eigen::VectorXd xf = pf * x;
    CHECK(std::abs(xf.dot(a * xf) - 1.0) <= 1e-12);
    const Eigen::VectorXd residual = p * (a * xf) - mode.eigenvalue * xf;
    CHECK(residual.norm() <= 1e-4 * highest * xf.norm());
    return 1;
}

}  // namespace

TEST_CASE("slowest_mode: the smallest eigenvalue of M⁻¹ S A S and its eigenvector, against a dense eigen-solver",
          "[backend][pcg][slowest_mode]")
{
    Random rng(101);
    int checked = 0;
    for (const bool block_jacobi : {false, true}) {
        checked += check_slowest_mode<3>(rng, block_jacobi);
        checked += check_slowest_mode<5>(rng, block_jacobi);
    }
    REQUIRE(checked == 4);

    const GridProblem<3> problem = grid_problem<3>(rng, 4, 3);
    const Eigen::MatrixXd dense = Eigen::MatrixXd(problem.reference);
    const std::vector<std::uint8_t> all_free(static_cast<std::size_t>(3 * problem.nodes), 1);
    // M⁻¹ = A⁻¹ / 2: every eigenvalue 1/2, found at the first quotient; with
    // σ = 1 (no estimate of the top) the second iteration confirms it.
    DenseOperator half(0.5 * dense.inverse());
    weft::SlowestModeOptions<double> options;
    options.max_iterations_top = 0;
    const weft::SlowestMode<double> flat = weft::slowest_mode(problem.a, to_device(all_free), half, options);
    CHECK(flat.converged);
    CHECK(flat.iterations == 2);
    CHECK(flat.top == 1.0);
    CHECK(std::abs(flat.eigenvalue - 0.5) <= 1e-12);
    CHECK(half.applications == 2);
    // One free DoF: the quotient is P_ii A_ii at once.
    std::vector<std::uint8_t> one_free(all_free.size(), 0);
    one_free[4] = 1;
    DenseOperator identity(Eigen::MatrixXd::Identity(dense.rows(), dense.cols()));
    const weft::SlowestMode<double> single = weft::slowest_mode(problem.a, to_device(one_free), identity);
    CHECK(single.converged);
    CHECK(std::abs(single.eigenvalue - dense(4, 4)) <= 1e-12 * dense(4, 4));
    const Eigen::VectorXd single_vector = to_eigen_vector(single.vector);
    CHECK(single_vector.cwiseAbs().maxCoeff() == std::abs(single_vector(4)));
    CHECK(std::abs(single_vector(4) * single_vector(4) * dense(4, 4) - 1.0) <= 1e-12);
    // The iteration limit: reported as not converged.
    options = {};
    options.max_iterations = 1;
    const weft::SlowestMode<double> cut = weft::slowest_mode(problem.a, to_device(all_free), identity, options);
    CHECK_FALSE(cut.converged);
    CHECK(cut.iterations == 1);

    // Bad input names the field and the value.
    const thrust::device_vector<std::uint8_t> free_dofs = to_device(all_free);
    const auto throws_with = [&](const weft::SlowestModeOptions<double>& bad, const char* field) {
        CHECK_THROWS_WITH(weft::slowest_mode(problem.a, free_dofs, identity, bad), Catch::Contains(field));
    };
    options = {};
    options.max_iterations = 0;
    throws_with(options, "max_iterations");
    options = {};
    options.tolerance = -1.0;
    throws_with(options, "tolerance");
    options = {};
    options.max_iterations_top = -1;
    throws_with(options, "max_iterations_top");
    options = {};
    options.top_margin = 0.5;
    throws_with(options, "top_margin");
    CHECK_THROWS_WITH(weft::slowest_mode(problem.a, to_device(std::vector<std::uint8_t>(3, 1)), identity),
                      Catch::Contains("free_dofs.size()") && Catch::Contains("36"));
    CHECK_THROWS_WITH(weft::slowest_mode(problem.a, to_device(std::vector<std::uint8_t>(all_free.size(), 0)), identity),
                      Catch::Contains("no DoF is free"));
    // A matrix that is not positive definite, and a preconditioner that is not.
    weft::BsrMatrix<double, 3> negative = problem.a;
    thrust::transform(negative.values().begin(), negative.values().end(), negative.values().begin(),
                      thrust::negate<double>{});
    CHECK_THROWS_WITH(weft::slowest_mode(negative, free_dofs, identity), Catch::Contains("A not SPD"));
    DenseOperator flipped(-Eigen::MatrixXd::Identity(dense.rows(), dense.cols()));
    CHECK_THROWS_WITH(weft::slowest_mode(problem.a, free_dofs, flipped), Catch::Contains("M⁻¹ not SPD"));
}

TEST_CASE("pcg: stopping at max_iterations is reported as not converged", "[backend][pcg][status]")
{
    Random rng(41);
    const GridProblem<5> problem = grid_problem<5>(rng, 10, 10);
    const Eigen::VectorXd b = random_vector(rng, 5 * problem.nodes);
    PcgOptions<double> options;
    options.max_iterations = 2;
    options.tolerance = 1e-10;
    PcgWorkspace<double, 5> workspace;
    thrust::device_vector<double> x(b.size(), 0.0);
    const PcgResult<double> result = weft::solve_filtered_pcg(problem.a, to_device(b), x, workspace, options);
    CHECK_FALSE(result.converged);
    CHECK(result.status == PcgStatus::max_iterations_reached);
    CHECK(result.iterations == 2);
    CHECK(result.relative_residual > options.tolerance);
    CHECK(std::isfinite(result.relative_residual));
}

TEST_CASE("pcg: a direction of negative curvature is reported as an indefinite matrix", "[backend][pcg][status]")
{
    // [[I, 2I], [2I, I]] has eigenvalues −1 and 3; b = (1, −1) is a −1 eigenvector.
    Eigen::MatrixXd dense = Eigen::MatrixXd::Identity(10, 10);
    dense.block<5, 5>(0, 5).diagonal().setConstant(2.0);
    dense.block<5, 5>(5, 0).diagonal().setConstant(2.0);
    const BsrMatrix<double, 5> a = weft::to_bsr<5>(SparseMatrix(dense.sparseView()));
    Eigen::VectorXd b(10);
    b << Eigen::VectorXd::Ones(5), -Eigen::VectorXd::Ones(5);
    int reported = 0;
    for (auto preconditioner : {PcgPreconditioner::block_jacobi, PcgPreconditioner::none}) {
        PcgOptions<double> options;
        options.preconditioner = preconditioner;
        options.estimate_spectrum = true;  // a failed solve gives no estimate
        PcgWorkspace<double, 5> workspace;
        thrust::device_vector<double> x(10, 0.0);
        const PcgResult<double> result = weft::solve_filtered_pcg(a, to_device(b), x, workspace, options);
        CHECK_FALSE(result.converged);
        CHECK(result.status == PcgStatus::indefinite_matrix);
        CHECK(result.iterations == 0);
        CHECK_FALSE(result.spectrum_estimated);
        ++reported;
    }
    REQUIRE(reported == 2);
}

TEST_CASE("pcg: an indefinite system with positive definite diagonal blocks is reported, not solved",
          "[backend][pcg][status]")
{
    Random rng(43);
    const GridProblem<5> problem = grid_problem<5>(rng, 6, 6);
    const Eigen::MatrixXd dense(problem.reference);
    // Shift between the smallest eigenvalue of A and that of its diagonal blocks:
    // A − σI is indefinite while every diagonal block stays positive definite.
    const double lowest = weft_test::symmetric_eigenvalues(dense)(0);
    double lowest_block = std::numeric_limits<double>::max();
    for (Index i = 0; i < problem.nodes; ++i) {
        const Eigen::Matrix<double, 5, 5> block = dense.block<5, 5>(5 * i, 5 * i);
        lowest_block = std::min(lowest_block, weft_test::symmetric_eigenvalues(block)(0));
    }
    REQUIRE(lowest_block > lowest + 0.5);
    const double shift = 0.5 * (lowest + lowest_block);
    const SparseMatrix shifted =
        problem.reference - shift * SparseMatrix(Eigen::MatrixXd::Identity(dense.rows(), dense.cols()).sparseView());
    const BsrMatrix<double, 5> a = weft::to_bsr<5>(shifted);
    const Eigen::VectorXd b = random_vector(rng, dense.rows());
    int reported = 0;
    for (auto preconditioner : {PcgPreconditioner::block_jacobi, PcgPreconditioner::none}) {
        PcgOptions<double> options;
        options.tolerance = 1e-12;
        options.preconditioner = preconditioner;
        PcgWorkspace<double, 5> workspace;
        thrust::device_vector<double> x(b.size(), 0.0);
        const PcgResult<double> result = weft::solve_filtered_pcg(a, to_device(b), x, workspace, options);
        INFO(weft::to_string(result.status) << " after " << result.iterations << " iterations");
        CHECK_FALSE(result.converged);
        CHECK(result.status == PcgStatus::indefinite_matrix);
        ++reported;
    }
    REQUIRE(reported == 2);
}

TEST_CASE("pcg: a diagonal block that is not positive definite is reported, unless the filter removes it",
          "[backend][pcg][preconditioner][filter]")
{
    Random rng(47);
    const GridProblem<3> problem = grid_problem<3>(rng, 5, 5);
    SparseMatrix broken = problem.reference;
    broken.coeffRef(4, 4) = -1.0;  // node 1's diagonal block is now indefinite
    const BsrMatrix<double, 3> a = weft::to_bsr<3>(broken);
    const Eigen::VectorXd b = random_vector(rng, broken.rows());

    PcgWorkspace<double, 3> workspace;
    thrust::device_vector<double> x(b.size(), 0.0);
    const PcgResult<double> unfiltered = weft::solve_filtered_pcg(a, to_device(b), x, workspace);
    CHECK_FALSE(unfiltered.converged);
    CHECK(unfiltered.status == PcgStatus::indefinite_preconditioner);
    CHECK(unfiltered.iterations == 0);

    // Constraining that DoF leaves the original, SPD, principal submatrix.
    std::vector<std::uint8_t> free_dofs(static_cast<std::size_t>(b.size()), 1);
    free_dofs[4] = 0;
    PcgOptions<double> options;
    options.tolerance = 1e-10;
    const PcgResult<double> filtered =
        weft::solve_filtered_pcg(a, to_device(b), to_device(free_dofs), x, workspace, options);
    REQUIRE(filtered.converged);
    const SparseMatrix p = selection(free_dofs);
    const Eigen::VectorXd expected = sparse_ldlt_solve(SparseMatrix(p * problem.reference * p.transpose()), p * b);
    const Eigen::VectorXd solution = to_eigen_vector(x);
    CHECK(solution(4) == 0.0);
    CHECK(relative_error(p * solution, expected) <= 1e-8);
}

TEST_CASE("pcg: a non-finite right-hand side is reported", "[backend][pcg][status]")
{
    Random rng(53);
    const GridProblem<3> problem = grid_problem<3>(rng, 3, 3);
    Eigen::VectorXd b = random_vector(rng, 3 * problem.nodes);
    b(5) = std::numeric_limits<double>::quiet_NaN();
    PcgWorkspace<double, 3> workspace;
    thrust::device_vector<double> x(b.size(), 0.0);
    const PcgResult<double> result = weft::solve_filtered_pcg(problem.a, to_device(b), x, workspace);
    CHECK_FALSE(result.converged);
    CHECK(result.status == PcgStatus::non_finite);
}

TEST_CASE("pcg: a zero right-hand side converges at once to x = 0", "[backend][pcg][status]")
{
    Random rng(59);
    const GridProblem<5> problem = grid_problem<5>(rng, 4, 3);
    const thrust::device_vector<double> b(static_cast<std::size_t>(5 * problem.nodes), 0.0);
    thrust::device_vector<double> x(b.size(), 3.0);
    PcgWorkspace<double, 5> workspace;
    const PcgResult<double> result = weft::solve_filtered_pcg(problem.a, b, x, workspace);
    REQUIRE(result.converged);
    CHECK(result.iterations == 0);
    CHECK(result.relative_residual == 0.0);
    CHECK(weft::squared_norm(x) == 0.0);
}

TEST_CASE("pcg: repeated solves reuse the workspace without reallocating", "[backend][pcg][workspace]")
{
    Random rng(61);
    const GridProblem<5> problem = grid_problem<5>(rng, 6, 6);
    PcgWorkspace<double, 5> workspace;
    thrust::device_vector<double> x(static_cast<std::size_t>(5 * problem.nodes), 0.0);
    const auto first = weft::solve_filtered_pcg(problem.a, to_device(random_vector(rng, x.size())), x, workspace);
    REQUIRE(first.converged);
    const std::vector<const double*> before{thrust::raw_pointer_cast(workspace.residual.data()),
                                            thrust::raw_pointer_cast(workspace.preconditioned_residual.data()),
                                            std::min(thrust::raw_pointer_cast(workspace.direction.data()),
                                                     thrust::raw_pointer_cast(workspace.next_direction.data())),
                                            std::max(thrust::raw_pointer_cast(workspace.direction.data()),
                                                     thrust::raw_pointer_cast(workspace.next_direction.data())),
                                            thrust::raw_pointer_cast(workspace.matrix_direction.data()),
                                            thrust::raw_pointer_cast(workspace.inverse_diagonal.data()),
                                            thrust::raw_pointer_cast(workspace.node_sums_first.data()),
                                            thrust::raw_pointer_cast(workspace.node_sums_second.data())};
    const std::uint8_t* mask_before = thrust::raw_pointer_cast(workspace.all_free.data());
    const Eigen::VectorXd b = random_vector(rng, x.size());
    const auto second = weft::solve_filtered_pcg(problem.a, to_device(b), x, workspace);
    REQUIRE(second.converged);
    const std::vector<const double*> after{thrust::raw_pointer_cast(workspace.residual.data()),
                                           thrust::raw_pointer_cast(workspace.preconditioned_residual.data()),
                                           std::min(thrust::raw_pointer_cast(workspace.direction.data()),
                                                    thrust::raw_pointer_cast(workspace.next_direction.data())),
                                           std::max(thrust::raw_pointer_cast(workspace.direction.data()),
                                                    thrust::raw_pointer_cast(workspace.next_direction.data())),
                                           thrust::raw_pointer_cast(workspace.matrix_direction.data()),
                                           thrust::raw_pointer_cast(workspace.inverse_diagonal.data()),
                                           thrust::raw_pointer_cast(workspace.node_sums_first.data()),
                                           thrust::raw_pointer_cast(workspace.node_sums_second.data())};
    REQUIRE(before.size() == 8);
    CHECK(before == after);
    CHECK(mask_before == thrust::raw_pointer_cast(workspace.all_free.data()));
    CHECK(relative_error(to_eigen_vector(x), sparse_ldlt_solve(problem.reference, b)) <= 1e-6);
}

TEST_CASE("pcg: size mismatches and invalid options are rejected", "[backend][pcg][input]")
{
    Random rng(67);
    const GridProblem<3> problem = grid_problem<3>(rng, 2, 2);
    const std::size_t dofs = 12;
    PcgWorkspace<double, 3> workspace;
    thrust::device_vector<double> b(dofs, 1.0);
    thrust::device_vector<double> x(dofs, 0.0);
    thrust::device_vector<std::uint8_t> free_dofs(dofs, 1);
    thrust::device_vector<double> short_vector(dofs - 1, 1.0);
    thrust::device_vector<std::uint8_t> short_mask(dofs - 1, 1);
    CHECK_THROWS_AS(weft::solve_filtered_pcg(problem.a, short_vector, free_dofs, x, workspace), weft::InvalidInput);
    CHECK_THROWS_AS(weft::solve_filtered_pcg(problem.a, b, short_mask, x, workspace), weft::InvalidInput);
    CHECK_THROWS_AS(weft::solve_filtered_pcg(problem.a, b, free_dofs, short_vector, workspace), weft::InvalidInput);
    PcgOptions<double> options;
    options.tolerance = -1e-8;
    CHECK_THROWS_AS(weft::solve_filtered_pcg(problem.a, b, free_dofs, x, workspace, options), weft::InvalidInput);
    options.tolerance = 1e-8;
    options.max_iterations = -1;
    CHECK_THROWS_AS(weft::solve_filtered_pcg(problem.a, b, free_dofs, x, workspace, options), weft::InvalidInput);
    options.max_iterations = 100;
    options.ritz_stop = std::nan("");
    CHECK_THROWS_WITH(weft::solve_filtered_pcg(problem.a, b, free_dofs, x, workspace, options),
                      Catch::Contains("ritz_stop") && Catch::Contains("NaN"));
    options.ritz_stop = 0.0;
    const BsrMatrix<double, 3> rectangular(1, 2, {0, 1}, {1});
    thrust::device_vector<double> b3(3, 1.0);
    thrust::device_vector<double> x3(3, 0.0);
    thrust::device_vector<std::uint8_t> free3(3, 1);
    CHECK_THROWS_AS(weft::solve_filtered_pcg(rectangular, b3, free3, x3, workspace), weft::InvalidInput);
    options.max_iterations = 100;
    CHECK(weft::solve_filtered_pcg(problem.a, b, free_dofs, x, workspace, options).converged);
}

// ---------------------------------------------------------------------------
// The direct solver (direct_solver.hpp): the same filtered system as PCG.

TEST_CASE("cholmod: the filtered system's solution, with prescribed values, matches PCG and LDLT",
          "[backend][cholmod][filter]")
{
    if (!weft::cholmod_available()) {
        // A build without SuiteSparse: the solver refuses, naming the option.
        weft::CholmodSolver<double, 3> solver;
        BsrMatrix<double, 3> a = weft::to_bsr<3>(SparseMatrix(Eigen::MatrixXd::Identity(3, 3).sparseView()));
        thrust::device_vector<double> x(3, 0.0);
        const thrust::device_vector<std::uint8_t> free_dofs(3, 1);
        CHECK_THROWS_WITH(solver.solve(a, x, free_dofs, x), Catch::Contains("solver.linear \"cholmod\""));
        CHECK_THROWS_WITH(weft::require_linear_solver(weft::LinearSolver::cholmod), Catch::Contains("CHOLMOD"));
        WARN("CHOLMOD is not in this build: only its refusal was checked");
        return;
    }
    Random rng(31);
    int checked = 0;
    for (int trial = 0; trial < 3; ++trial) {
        const GridProblem<5> problem = grid_problem<5>(rng, 7, 6);
        const Eigen::Index dofs = 5 * problem.nodes;
        const std::vector<std::uint8_t> free_dofs = random_filter<5>(rng, problem.nodes, 0.25);
        const Eigen::VectorXd b = random_vector(rng, dofs);
        const Eigen::VectorXd z = random_vector(rng, dofs, 0.5, 2.0);
        Eigen::VectorXd x_start = z;
        for (Eigen::Index i = 0; i < dofs; ++i)
            if (free_dofs[static_cast<std::size_t>(i)]) x_start(i) = -7.0;  // ignored
        thrust::device_vector<double> x_direct = to_device(x_start), x_pcg = to_device(x_start);
        weft::CholmodSolver<double, 5> solver;
        const PcgResult<double> direct = solver.solve(problem.a, to_device(b), to_device(free_dofs), x_direct);
        REQUIRE(direct.converged);
        CHECK(direct.iterations == 0);
        CHECK(direct.relative_residual <= 1e-12);
        PcgOptions<double> options;
        options.tolerance = 1e-12;
        PcgWorkspace<double, 5> workspace;
        REQUIRE(weft::solve_filtered_pcg(problem.a, to_device(b), to_device(free_dofs), x_pcg, workspace, options)
                    .converged);
        const Eigen::VectorXd solution = to_eigen_vector(x_direct);
        CHECK(relative_error(solution, to_eigen_vector(x_pcg)) <= 1e-9);
        // A_ff x_f = b_f − A_fc z_c, and x_c = z_c exactly.
        std::vector<std::uint8_t> constrained(free_dofs.size());
        for (std::size_t i = 0; i < free_dofs.size(); ++i) constrained[i] = free_dofs[i] ? 0 : 1;
        const SparseMatrix pf = selection(free_dofs), pc = selection(constrained);
        CHECK((pc * solution - pc * z).lpNorm<Eigen::Infinity>() == 0.0);
        const Eigen::VectorXd expected = sparse_ldlt_solve(SparseMatrix(pf * problem.reference * pf.transpose()),
                                                           pf * b - pf * problem.reference * pc.transpose() * (pc * z));
        CHECK(relative_error(pf * solution, expected) <= 1e-10);
        ++checked;
    }
    REQUIRE(checked == 3);
}

TEST_CASE("cholmod: the symbolic analysis is reused while the pattern stays and redone when it changes",
          "[backend][cholmod]")
{
    if (!weft::cholmod_available()) {
        WARN("CHOLMOD is not in this build: analysis reuse not checked");
        return;
    }
    Random rng(37);
    const GridProblem<3> first = grid_problem<3>(rng, 6, 6);
    const GridProblem<3> same_pattern = grid_problem<3>(rng, 6, 6);  // new values
    const GridProblem<3> other = grid_problem<3>(rng, 9, 4);
    weft::CholmodSolver<double, 3> solver;
    int solved = 0;
    for (const GridProblem<3>* p : {&first, &same_pattern, &same_pattern, &other}) {
        const Eigen::VectorXd b = random_vector(rng, 3 * p->nodes);
        thrust::device_vector<double> x(static_cast<std::size_t>(3 * p->nodes), 0.0);
        const std::vector<std::uint8_t> free_dofs(x.size(), 1);
        REQUIRE(solver.solve(p->a, to_device(b), to_device(free_dofs), x).converged);
        CHECK(relative_error(to_eigen_vector(x), sparse_ldlt_solve(p->reference, b)) <= 1e-10);
        ++solved;
    }
    REQUIRE(solved == 4);
    CHECK(solver.analyses() == 2);  // 6 x 6 once (its values changed twice), 9 x 4 once
}

TEST_CASE("cholmod: an indefinite or non-finite system is reported, x left alone", "[backend][cholmod][status]")
{
    if (!weft::cholmod_available()) {
        WARN("CHOLMOD is not in this build: its failure reports not checked");
        return;
    }
    Eigen::MatrixXd dense = Eigen::MatrixXd::Identity(10, 10);
    dense.block<5, 5>(0, 5).diagonal().setConstant(2.0);
    dense.block<5, 5>(5, 0).diagonal().setConstant(2.0);
    const BsrMatrix<double, 5> a = weft::to_bsr<5>(SparseMatrix(dense.sparseView()));
    const Eigen::VectorXd b = Eigen::VectorXd::Ones(10);
    const std::vector<std::uint8_t> all_free(10, 1);
    weft::CholmodSolver<double, 5> solver;
    thrust::device_vector<double> x(10, 3.0);
    const PcgResult<double> indefinite = solver.solve(a, to_device(b), to_device(all_free), x);
    CHECK_FALSE(indefinite.converged);
    CHECK(indefinite.status == PcgStatus::indefinite_matrix);
    CHECK(to_eigen_vector(x) == Eigen::VectorXd::Constant(10, 3.0));
    // Filtering out the second node leaves the identity: solvable, with the
    // second node's values z = 3 (x on entry) moved to the right-hand side:
    // x_f = b_f − 2 z = −5.
    std::vector<std::uint8_t> first_free(10, 1);
    for (int i = 5; i < 10; ++i) first_free[static_cast<std::size_t>(i)] = 0;
    CHECK(solver.solve(a, to_device(b), to_device(first_free), x).converged);
    CHECK((to_eigen_vector(x).head(5) - Eigen::VectorXd::Constant(5, -5.0)).norm() <= 1e-14);
    CHECK(to_eigen_vector(x).tail(5) == Eigen::VectorXd::Constant(5, 3.0));
    Eigen::VectorXd nan_b = b;
    nan_b(2) = std::numeric_limits<double>::quiet_NaN();
    const PcgResult<double> non_finite = solver.solve(a, to_device(nan_b), to_device(first_free), x);
    CHECK(non_finite.status == PcgStatus::non_finite);
}

TEST_CASE("fixed-order sums: the same bits on 1, 2 and 4 threads, equal to the chunked sum in index order",
          "[backend][vector_ops][determinism]")
{
    Random rng(71);
    int checks = 0;
    const int threads_before = weft_test::max_threads();
    const std::size_t chunk = weft::fixed_order_chunk;
    for (const std::size_t n :
         {std::size_t(0), std::size_t(1), chunk - 1, chunk, chunk + 1, 3 * chunk + 5, 17 * chunk + 123}) {
        // Terms of mixed sign and magnitude, whose sum depends on the order.
        std::vector<double> a(n), b(n);
        for (std::size_t i = 0; i < n; ++i) {
            a[i] = rng.uniform(-1, 1) * std::pow(10.0, rng.uniform(-8, 8));
            b[i] = rng.uniform(-1, 1);
        }
        const thrust::device_vector<double> da(a.begin(), a.end()), db(b.begin(), b.end());
        // The reference: chunks of `chunk` terms in index order, then the chunk sums in order.
        double dot_ref = 0, sum_ref = 0;
        for (std::size_t begin = 0; begin < n; begin += chunk) {
            const std::size_t end = std::min(n, begin + chunk);
            double d = a[begin] * b[begin], s = a[begin];
            for (std::size_t i = begin + 1; i < end; ++i) {
                d += a[i] * b[i];
                s += a[i];
            }
            dot_ref += d;
            sum_ref += s;
        }
        if (weft::backend_is_cuda()) {
            // CUDA reduces in CUB's order (vector_ops.hpp): each reduction
            // gives the same bits on every run on one device, within
            // round-off of the ordered sums (each has its own order).
            double abs_dot = 0, abs_sum = 0;
            for (std::size_t i = 0; i < n; ++i) {
                abs_dot += std::abs(a[i] * b[i]);
                abs_sum += std::abs(a[i]);
            }
            const double bound = 2.0 * static_cast<double>(n) * std::numeric_limits<double>::epsilon();
            const double dot_first = weft::dot(da, db);
            const double pair_first = weft::sum_pair(da, db).first;
            const double sum_first = weft::fixed_order_reduce(da.begin(), n, 0.0, thrust::plus<double>{});
            CHECK(std::abs(dot_first - dot_ref) <= bound * abs_dot);
            CHECK(std::abs(pair_first - sum_ref) <= bound * abs_sum);
            CHECK(std::abs(sum_first - sum_ref) <= bound * abs_sum);
            for (int run = 0; run < 2; ++run) {
                INFO("n = " << n << ", run " << run);
                CHECK(weft::dot(da, db) == dot_first);  // bit for bit, run to run
                CHECK(weft::sum_pair(da, db).first == pair_first);
                CHECK(weft::fixed_order_reduce(da.begin(), n, 0.0, thrust::plus<double>{}) == sum_first);
            }
            checks += 9;
        } else {
            for (const int threads : {1, 2, 4}) {
                weft_test::set_threads(threads);
                INFO("n = " << n << ", " << threads << " threads");
                CHECK(weft::dot(da, db) == dot_ref);  // bit for bit
                const weft::SumPair<double> pair = weft::sum_pair(da, db);
                CHECK(pair.first == sum_ref);
                CHECK(weft::fixed_order_reduce(da.begin(), n, 0.0, thrust::plus<double>{}) == sum_ref);
                checks += 3;
            }
        }
    }
    weft_test::set_threads(threads_before);
    REQUIRE(checks == 7 * 3 * 3);
}
