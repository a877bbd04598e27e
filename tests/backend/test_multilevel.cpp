#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <weft/backend/multilevel_preconditioner.hpp>
#include <weft/backend/pcg.hpp>

#include "backend/block_system.hpp"
#include "support/random.hpp"

// The smoothed-aggregation preconditioner (multilevel_preconditioner.hpp) on
// random SPD block systems over a grid of nodes: as an operator, and inside
// the filtered PCG.

using weft::Index;
using weft::MultilevelOptions;
using weft::MultilevelPreconditioner;
using weft::PcgOptions;
using weft::PcgPreconditioner;
using weft::PcgResult;
using weft::PcgWorkspace;
using weft_backend_test::grid_problem;
using weft_backend_test::GridProblem;
using weft_backend_test::random_filter;
using weft_backend_test::random_vector;
using weft_backend_test::relative_error;
using weft_backend_test::to_device;
using weft_backend_test::to_eigen_vector;
using weft_test::Random;

namespace {

/// Node states of an nx by ny grid (node = x + nx·y): positions on a wavy
/// sheet with 1 cm spacing, then arc lengths (B = 5).
template <int B>
std::vector<double> grid_state(int nx, int ny)
{
    std::vector<double> q;
    for (int y = 0; y < ny; ++y) {
        for (int x = 0; x < nx; ++x) {
            q.push_back(0.01 * x);
            q.push_back(0.01 * y);
            q.push_back(0.002 * std::sin(0.3 * x + 0.2 * y));
            for (int e = 3; e < B; ++e) q.push_back(e == 3 ? 0.01 * x : 0.01 * y);
        }
    }
    return q;
}

/// Options that make a 20 × 20 grid coarsen twice or more.
MultilevelOptions small_coarse()
{
    MultilevelOptions options;
    options.coarse_dofs = 60;
    return options;
}

/// The same, with slow solves rebuilding (no refresh of the values).
MultilevelOptions small_coarse_rebuilding()
{
    MultilevelOptions options = small_coarse();
    options.refresh = weft::MultilevelRefresh::off;
    return options;
}

/// x with zeros where the filter constrains.
Eigen::VectorXd filtered(Eigen::VectorXd x, const std::vector<std::uint8_t>& free_dofs)
{
    for (Eigen::Index i = 0; i < x.size(); ++i)
        if (!free_dofs[static_cast<std::size_t>(i)]) x(i) = 0.0;
    return x;
}

/// The solution on the free DoFs of the filtered system with prescribed
/// values z on the others: A_ff x_f = b_f − A_fc z_c, by LDLT.
Eigen::VectorXd reference_solution(const weft_backend_test::SparseMatrix& a, const std::vector<std::uint8_t>& free_host,
                                   const Eigen::VectorXd& b, const Eigen::VectorXd& prescribed)
{
    std::vector<std::uint8_t> constrained(free_host.size());
    for (std::size_t i = 0; i < free_host.size(); ++i) constrained[i] = free_host[i] ? 0 : 1;
    const auto pf = weft_backend_test::selection(free_host), pc = weft_backend_test::selection(constrained);
    return weft_backend_test::sparse_ldlt_solve(weft_backend_test::SparseMatrix(pf * a * pf.transpose()),
                                                pf * b - pf * a * pc.transpose() * (pc * prescribed));
}

/// The V-cycle of `m` applied to random vectors zero on the constrained DoFs:
/// xᵀ M y = yᵀ M x, xᵀ M x > 0, and M x exactly zero on the constrained DoFs.
/// Returns the trials that ran.
template <int B>
int check_vcycle_spd(MultilevelPreconditioner<double, B>& m, const std::vector<std::uint8_t>& free_host, Random& rng,
                     int trials)
{
    const Eigen::Index size = static_cast<Eigen::Index>(free_host.size());
    int checked = 0;
    for (int trial = 0; trial < trials; ++trial) {
        const Eigen::VectorXd x = filtered(random_vector(rng, size), free_host);
        const Eigen::VectorXd y = filtered(random_vector(rng, size), free_host);
        thrust::device_vector<double> mx, my;
        m.apply(to_device(x), mx);
        m.apply(to_device(y), my);
        const Eigen::VectorXd px = to_eigen_vector(mx), py = to_eigen_vector(my);
        CHECK(std::abs(x.dot(py) - y.dot(px)) <= 1e-11 * std::sqrt(x.dot(px) * y.dot(py)));
        CHECK(x.dot(px) > 0.0);
        CHECK(y.dot(py) > 0.0);
        int nonzero_constrained = 0;
        for (Eigen::Index i = 0; i < size; ++i)
            nonzero_constrained += !free_host[static_cast<std::size_t>(i)] && px(i) != 0.0 ? 1 : 0;
        CHECK(nonzero_constrained == 0);
        ++checked;
    }
    return checked;
}

template <int B>
int check_symmetric_positive_definite(Random& rng)
{
    const int n = 20;
    const GridProblem<B> problem = grid_problem<B>(rng, n, n);
    const std::vector<std::uint8_t> free_host = random_filter<B>(rng, problem.nodes, 0.2);
    const thrust::device_vector<std::uint8_t> free_dofs = to_device(free_host);
    const thrust::device_vector<double> state = to_device(grid_state<B>(n, n));
    MultilevelPreconditioner<double, B> m(small_coarse());
    REQUIRE(m.prepare(problem.a, free_dofs, state));
    CHECK(m.levels() >= 3);
    CHECK(m.builds() == 1);
    const std::vector<Index> dofs = m.level_dofs();
    REQUIRE(dofs.size() == static_cast<std::size_t>(m.levels()));
    CHECK(dofs.front() == B * problem.nodes);
    for (std::size_t l = 1; l < dofs.size(); ++l) CHECK(dofs[l] < dofs[l - 1]);
    CHECK(dofs.back() <= 60);
    CHECK(m.operator_complexity() > 1.0);
    CHECK(m.operator_complexity() < 2.5);
    CHECK(m.cycles() == 0);
    CHECK(m.level_cycle_seconds().empty());

    const auto start = std::chrono::steady_clock::now();
    const int checked = check_vcycle_spd(m, free_host, rng, 4);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Each application is one cycle, its time split over every level it
    // visited (the coarsest's direct solve included), within the time the
    // applications took.
    CHECK(m.cycles() == 2 * checked);
    const std::vector<double> seconds = m.level_cycle_seconds();
    REQUIRE(seconds.size() == dofs.size());
    double sum = 0.0;
    for (const double s : seconds) {
        CHECK(s > 0.0);
        sum += s;
    }
    CHECK(sum <= wall);
    return checked;
}

template <int B>
int check_pcg_solution(Random& rng)
{
    const int n = 24;
    const GridProblem<B> problem = grid_problem<B>(rng, n, n);
    const Eigen::Index size = B * problem.nodes;
    const std::vector<std::uint8_t> free_host = random_filter<B>(rng, problem.nodes, 0.15);
    const thrust::device_vector<std::uint8_t> free_dofs = to_device(free_host);
    const Eigen::VectorXd b = random_vector(rng, size);
    const Eigen::VectorXd prescribed = random_vector(rng, size, 0.5, 2.0);

    const Eigen::VectorXd expected = reference_solution(problem.reference, free_host, b, prescribed);
    std::vector<std::uint8_t> constrained(free_host.size());
    for (std::size_t i = 0; i < free_host.size(); ++i) constrained[i] = free_host[i] ? 0 : 1;
    const auto pf = weft_backend_test::selection(free_host), pc = weft_backend_test::selection(constrained);

    PcgOptions<double> options;
    options.tolerance = 1e-11;
    options.max_iterations = 5000;
    PcgWorkspace<double, B> workspace;
    thrust::device_vector<double> x_jacobi = to_device(prescribed);
    const PcgResult<double> jacobi =
        weft::solve_filtered_pcg(problem.a, to_device(b), free_dofs, x_jacobi, workspace, options);
    REQUIRE(jacobi.converged);

    MultilevelPreconditioner<double, B> m(small_coarse());
    REQUIRE(m.prepare(problem.a, free_dofs, to_device(grid_state<B>(n, n))));
    options.preconditioner = PcgPreconditioner::multilevel;
    options.custom = &m;
    thrust::device_vector<double> x_multilevel = to_device(prescribed);
    const PcgResult<double> multilevel =
        weft::solve_filtered_pcg(problem.a, to_device(b), free_dofs, x_multilevel, workspace, options);
    REQUIRE(multilevel.converged);
    INFO("block-Jacobi " << jacobi.iterations << " iterations, multilevel " << multilevel.iterations);
    CHECK(multilevel.iterations < jacobi.iterations);
    // One cycle for z₀ and one after each iteration but the converged last,
    // whose z PCG would not read.
    CHECK(m.cycles() == multilevel.iterations);

    const Eigen::VectorXd solution = to_eigen_vector(x_multilevel);
    CHECK(relative_error(pf * solution, expected) <= 1e-8);
    CHECK(relative_error(solution, to_eigen_vector(x_jacobi)) <= 1e-8);
    CHECK((pc * solution - pc * prescribed).lpNorm<Eigen::Infinity>() == 0.0);

    // A tolerance that the starting residual meets: x₀ is the answer, and no
    // cycle runs.
    const long cycles_before = m.cycles();
    options.tolerance = 2.0;
    thrust::device_vector<double> x_start = to_device(prescribed);
    const PcgResult<double> at_once =
        weft::solve_filtered_pcg(problem.a, to_device(b), free_dofs, x_start, workspace, options);
    CHECK(at_once.converged);
    CHECK(at_once.iterations == 0);
    CHECK(at_once.relative_residual <= 2.0);
    CHECK(m.cycles() == cycles_before);
    // x₀: zero on the free DoFs, the prescribed values on the others.
    const Eigen::VectorXd start = to_eigen_vector(x_start);
    CHECK((pf * start).lpNorm<Eigen::Infinity>() + (pc * start - pc * prescribed).lpNorm<Eigen::Infinity>() == 0.0);
    return 1;
}

/// An n × n grid of 5-DoF nodes, every DoF free: the system on which the
/// rules for reusing, refreshing and rebuilding a hierarchy are checked.
struct RuleProblem {
    GridProblem<5> problem;
    thrust::device_vector<double> state;
    thrust::device_vector<std::uint8_t> free_dofs;

    RuleProblem(Random& rng, int n)
        : problem(grid_problem<5>(rng, n, n)),
          state(to_device(grid_state<5>(n, n))),
          free_dofs(static_cast<std::size_t>(5 * problem.nodes), 1)
    {
    }

    /// m.prepare() for this system (its current values and filter).
    bool prepare(MultilevelPreconditioner<double, 5>& m) const { return m.prepare(problem.a, free_dofs, state); }
};

/// The default rule's start on a RuleProblem: the build (its seconds are
/// returned), a first solve of 10 iterations, then one of 16 (slow: the
/// first refresh, its price unknown, is bought) and the prepare that refreshes.
double buy_first_refresh(RuleProblem& rule, MultilevelPreconditioner<double, 5>& m)
{
    REQUIRE(rule.prepare(m));
    const double build = m.last_build_seconds();
    REQUIRE(build > 0.0);
    m.record_solve(true, 10, 10 * build / 80);
    m.record_solve(true, 16, 16 * build / 80);
    REQUIRE(rule.prepare(m));
    REQUIRE(m.refreshes() == 1);
    return build;
}

/// Â = S A S + (I − S) of a reference matrix, as a dense matrix.
Eigen::MatrixXd filtered_dense(const weft_backend_test::SparseMatrix& a, const std::vector<std::uint8_t>& free_dofs)
{
    Eigen::MatrixXd result = Eigen::MatrixXd(a);
    for (Eigen::Index i = 0; i < result.rows(); ++i) {
        if (free_dofs[static_cast<std::size_t>(i)]) continue;
        result.row(i).setZero();
        result.col(i).setZero();
        result(i, i) = 1.0;
    }
    return result;
}

/// Pᵀ Â P with the identity added on coarse DoFs whose diagonal is (near)
/// zero, as the build adds it for DoFs left inactive.
Eigen::MatrixXd galerkin(const Eigen::MatrixXd& a, const Eigen::MatrixXd& p)
{
    Eigen::MatrixXd c = p.transpose() * a * p;
    const double largest = c.diagonal().cwiseAbs().maxCoeff();
    for (Eigen::Index i = 0; i < c.rows(); ++i) {
        if (!(c(i, i) > 1e-12 * largest)) c(i, i) += 1.0;
    }
    return c;
}

/// Each coarse level of `m` against the Galerkin product of the level above
/// (`above` the finest Â) with `prolongators` (the build's, the first one
/// with its rows zeroed where `first_rows` is 0), to 1e-12, and exactly
/// symmetric (a refresh forms the upper half and copies it to the lower).
/// Returns the levels checked.
template <int B>
int check_galerkin_levels(const MultilevelPreconditioner<double, B>& m, Eigen::MatrixXd above,
                          const std::vector<Eigen::MatrixXd>& prolongators, const std::vector<std::uint8_t>& first_rows)
{
    int checked = 0;
    for (int l = 1; l < m.levels(); ++l) {
        CHECK(Eigen::MatrixXd(m.level_prolongator(l)) == prolongators[static_cast<std::size_t>(l - 1)]);
        Eigen::MatrixXd p = prolongators[static_cast<std::size_t>(l - 1)];
        if (l == 1) {
            for (Eigen::Index i = 0; i < p.rows(); ++i)
                if (!first_rows[static_cast<std::size_t>(i)]) p.row(i).setZero();
        }
        const Eigen::MatrixXd expected = galerkin(above, p);
        const Eigen::MatrixXd refreshed = Eigen::MatrixXd(m.level_matrix(l));
        INFO("level " << l);
        CHECK((refreshed - expected).cwiseAbs().maxCoeff() <= 1e-12 * expected.cwiseAbs().maxCoeff());
        CHECK(refreshed == refreshed.transpose());
        above = refreshed;
        ++checked;
    }
    return checked;
}

/// PCG with `m` on (a, filter free_host) with prescribed values: the LDLT solution.
template <int B>
void check_pcg_reaches_ldlt(MultilevelPreconditioner<double, B>& m, const GridProblem<B>& problem,
                            const std::vector<std::uint8_t>& free_host, Random& rng)
{
    const Eigen::Index size = B * problem.nodes;
    const Eigen::VectorXd b = random_vector(rng, size);
    const Eigen::VectorXd prescribed = random_vector(rng, size, 0.5, 2.0);
    const Eigen::VectorXd expected = reference_solution(problem.reference, free_host, b, prescribed);
    const auto pf = weft_backend_test::selection(free_host);
    const PcgOptions<double> pcg = weft_backend_test::multilevel_pcg(m, 1e-11, 2000);
    PcgWorkspace<double, B> workspace;
    thrust::device_vector<double> x = to_device(prescribed);
    const PcgResult<double> result =
        weft::solve_filtered_pcg(problem.a, to_device(b), to_device(free_host), x, workspace, pcg);
    REQUIRE(result.converged);
    CHECK(relative_error(pf * to_eigen_vector(x), expected) <= 1e-8);
}

/// The refreshed coarse matrices against Pᵀ Â P of the new values with the
/// build's prolongators, level by level; the refreshed V-cycle inside PCG.
template <int B>
int check_refresh(Random& rng)
{
    const int n = 20;
    const GridProblem<B> built_for = grid_problem<B>(rng, n, n);
    const GridProblem<B> now = grid_problem<B>(rng, n, n);
    REQUIRE(weft::to_host(built_for.a.col_idx()) == weft::to_host(now.a.col_idx()));
    const std::vector<std::uint8_t> free_host = random_filter<B>(rng, built_for.nodes, 0.2);
    const thrust::device_vector<std::uint8_t> free_dofs = to_device(free_host);
    const thrust::device_vector<double> state = to_device(grid_state<B>(n, n));
    MultilevelOptions options = small_coarse();
    options.refresh = weft::MultilevelRefresh::every_prepare;
    MultilevelPreconditioner<double, B> m(options);
    REQUIRE(m.prepare(built_for.a, free_dofs, state));
    REQUIRE(m.levels() >= 3);
    std::vector<Eigen::MatrixXd> prolongators;
    for (int l = 1; l < m.levels(); ++l) prolongators.push_back(Eigen::MatrixXd(m.level_prolongator(l)));

    REQUIRE(m.prepare(now.a, free_dofs, state));
    CHECK(m.builds() == 1);
    CHECK(m.refreshes() == 1);
    const int checked = check_galerkin_levels(m, filtered_dense(now.reference, free_host), prolongators, free_host);
    // The refreshed V-cycle in PCG: the LDLT solution of the new system.
    check_pcg_reaches_ldlt(m, now, free_host, rng);
    return checked;
}

/// A new filter on the kept pattern: the refresh's coarse matrices against
/// P'ᵀ Â P' with P' = S P (the build's first prolongator restricted to the
/// new free DoFs) and the new filter's Â, level by level; the V-cycle
/// symmetric positive definite and zero on the newly constrained DoFs; PCG
/// with it at the LDLT solution. Returns the checks that ran.
template <int B>
int check_filter_refresh(Random& rng)
{
    const int n = 20;
    const GridProblem<B> problem = grid_problem<B>(rng, n, n);
    const std::vector<std::uint8_t> built_free = random_filter<B>(rng, problem.nodes, 0.2);
    // The new filter: some free DoFs constrained (as an EIL tag does), some
    // constrained ones freed (a tag cleared).
    std::vector<std::uint8_t> free_host = built_free;
    int constrained_now = 0, freed_now = 0;
    for (std::size_t i = 0; i < free_host.size(); ++i) {
        if (rng.uniform(0.0, 1.0) >= 0.05) continue;
        constrained_now += free_host[i] ? 1 : 0;
        freed_now += free_host[i] ? 0 : 1;
        free_host[i] = free_host[i] ? 0 : 1;
    }
    REQUIRE(constrained_now > 0);
    REQUIRE(freed_now > 0);
    const thrust::device_vector<double> state = to_device(grid_state<B>(n, n));
    MultilevelPreconditioner<double, B> m(small_coarse());  // refresh on_growth, the default
    REQUIRE(m.prepare(problem.a, to_device(built_free), state));
    REQUIRE(m.levels() >= 3);
    std::vector<Eigen::MatrixXd> prolongators;
    for (int l = 1; l < m.levels(); ++l) prolongators.push_back(Eigen::MatrixXd(m.level_prolongator(l)));

    const thrust::device_vector<std::uint8_t> free_dofs = to_device(free_host);
    REQUIRE(m.prepare(problem.a, free_dofs, state));
    CHECK(m.builds() == 1);
    CHECK(m.filter_refreshes() == 1);
    CHECK(m.refreshes() == 1);
    int checked = check_galerkin_levels(m, filtered_dense(problem.reference, free_host), prolongators, free_host);
    checked += check_vcycle_spd(m, free_host, rng, 3);
    check_pcg_reaches_ldlt(m, problem, free_host, rng);
    return checked + 1;
}

/// The grid problem of `contributions` over `nodes` nodes, assembled.
template <int B>
GridProblem<B> assembled(const weft_backend_test::BlockContributions<B>& contributions, weft::Index nodes)
{
    GridProblem<B> problem;
    problem.nodes = nodes;
    const auto map = weft::AssemblyMap<B>::build(nodes, contributions.coords, {});
    weft::assemble_matrix(map, to_device(contributions.blocks), problem.a);
    problem.reference = contributions.triplet_assembly(nodes);
    return problem;
}

/// keep_across_patterns: a new pattern of the same size (stiff springs
/// between nodes five rows apart, as contacts add) with a new filter keeps
/// the coarse levels (no build, pattern_keeps() counts it); the V-cycle is
/// symmetric positive definite and zero on the constrained DoFs, and PCG
/// with it reaches the LDLT solution of the new system; the same pattern
/// again is a plain reuse; a slow solve then rebuilds (a kept hierarchy is
/// not refreshed), after which refreshes work again; without the option a
/// new pattern builds. Returns the checks that ran.
template <int B>
int check_pattern_keep(Random& rng)
{
    const int n = 20;
    weft_backend_test::BlockContributions<B> contributions = weft_backend_test::grid_system<B>(rng, n, n);
    const GridProblem<B> built_for = assembled(contributions, n * n);
    for (int k = 0; k < 12; ++k) {
        const weft::Index a = static_cast<weft::Index>(rng.uniform(0.0, 1.0) * (n * (n - 5)));
        const weft::Index b = a + 5 * n;
        const Eigen::Matrix<double, B, B> spring = 10.0 * weft_backend_test::random_spd_block<B>(rng, 0.1);
        contributions.add(a, a, spring);
        contributions.add(a, b, -spring);
        contributions.add(b, a, -spring);
        contributions.add(b, b, spring);
    }
    const GridProblem<B> now = assembled(contributions, n * n);
    REQUIRE(now.a.nonzero_blocks() > built_for.a.nonzero_blocks());
    const std::vector<std::uint8_t> built_free = random_filter<B>(rng, built_for.nodes, 0.2);
    std::vector<std::uint8_t> free_host = built_free;
    for (std::size_t i = 0; i < free_host.size(); ++i)
        if (rng.uniform(0.0, 1.0) < 0.05) free_host[i] = free_host[i] ? 0 : 1;
    REQUIRE(free_host != built_free);
    const thrust::device_vector<double> state = to_device(grid_state<B>(n, n));
    const thrust::device_vector<std::uint8_t> free_dofs = to_device(free_host);

    MultilevelOptions options = small_coarse();  // refresh on_growth, the default
    options.keep_across_patterns = true;
    MultilevelPreconditioner<double, B> m(options);
    REQUIRE(m.prepare(built_for.a, to_device(built_free), state));
    REQUIRE(m.levels() >= 3);
    m.record_solve(true, 10);
    REQUIRE(m.prepare(now.a, free_dofs, state));
    CHECK(m.builds() == 1);
    CHECK(m.pattern_keeps() == 1);
    CHECK(m.refreshes() == 0);
    int checked = check_vcycle_spd(m, free_host, rng, 3);
    check_pcg_reaches_ldlt(m, now, free_host, rng);
    ++checked;
    REQUIRE(m.prepare(now.a, free_dofs, state));  // the same pattern and filter: reused
    CHECK(m.pattern_keeps() == 1);
    CHECK(m.builds() == 1);
    m.record_solve(true, 16);  // slow against the build's 10: a build, not a refresh
    REQUIRE(m.prepare(now.a, free_dofs, state));
    CHECK(m.builds() == 2);
    CHECK(m.growth_builds() == 1);
    CHECK(m.refreshes() == 0);
    m.record_solve(true, 10);
    m.record_solve(true, 16);  // built for this pattern: a slow solve refreshes again
    REQUIRE(m.prepare(now.a, free_dofs, state));
    CHECK(m.builds() == 2);
    CHECK(m.refreshes() == 1);
    checked += check_vcycle_spd(m, free_host, rng, 1);

    MultilevelPreconditioner<double, B> rebuilding(small_coarse());  // keep_across_patterns false, the default
    REQUIRE(rebuilding.prepare(built_for.a, to_device(built_free), state));
    REQUIRE(rebuilding.prepare(now.a, free_dofs, state));
    CHECK(rebuilding.builds() == 2);
    CHECK(rebuilding.pattern_keeps() == 0);
    return checked + 1;
}

}  // namespace

TEST_CASE(
    "multilevel: keep_across_patterns keeps the coarse levels across a new pattern and filter; SPD, the LDLT "
    "solution; a slow solve rebuilds",
    "[backend][multilevel][reuse]")
{
    Random rng(89);
    int checks = 0;
    checks += check_pattern_keep<3>(rng);
    checks += check_pattern_keep<5>(rng);
    CHECK(checks == 2 * (3 + 1 + 1 + 1));
    CHECK(weft::multilevel_keep_across_patterns_named("keep"));
    CHECK_FALSE(weft::multilevel_keep_across_patterns_named("rebuild"));
    CHECK_THROWS_WITH(weft::multilevel_keep_across_patterns_named("sometimes"),
                      Catch::Contains("sometimes") && Catch::Contains("rebuild, keep"));
}

TEST_CASE("multilevel: the V-cycle is symmetric positive definite and leaves constrained DoFs at zero",
          "[backend][multilevel]")
{
    Random rng(41);
    CHECK(check_symmetric_positive_definite<3>(rng) == 4);
    CHECK(check_symmetric_positive_definite<5>(rng) == 4);
}

TEST_CASE("multilevel: PCG reaches the block-Jacobi and LDLT solution with prescribed values, in fewer iterations",
          "[backend][multilevel][pcg]")
{
    Random rng(43);
    CHECK(check_pcg_solution<3>(rng) == 1);
    CHECK(check_pcg_solution<5>(rng) == 1);
}

TEST_CASE("multilevel: a system at or below coarse_dofs is inverted exactly (one level)", "[backend][multilevel]")
{
    Random rng(47);
    const GridProblem<3> problem = grid_problem<3>(rng, 5, 4);
    const thrust::device_vector<std::uint8_t> free_dofs(static_cast<std::size_t>(3 * problem.nodes), 1);
    MultilevelPreconditioner<double, 3> m;  // coarse_dofs 150 > 60 DoFs
    REQUIRE(m.prepare(problem.a, free_dofs, to_device(grid_state<3>(5, 4))));
    CHECK(m.levels() == 1);
    PcgOptions<double> options;
    options.tolerance = 1e-10;
    options.preconditioner = PcgPreconditioner::multilevel;
    options.custom = &m;
    PcgWorkspace<double, 3> workspace;
    const Eigen::VectorXd b = random_vector(rng, 3 * problem.nodes);
    thrust::device_vector<double> x(static_cast<std::size_t>(3 * problem.nodes), 0.0);
    const PcgResult<double> result =
        weft::solve_filtered_pcg(problem.a, to_device(b), free_dofs, x, workspace, options);
    REQUIRE(result.converged);
    CHECK(result.iterations <= 1);
    CHECK(relative_error(to_eigen_vector(x), weft_backend_test::sparse_ldlt_solve(problem.reference, b)) <= 1e-9);
}

TEST_CASE("multilevel: the hierarchy is reused while the pattern and filter stay, rebuilt when they change",
          "[backend][multilevel][reuse]")
{
    Random rng(53);
    const int n = 16;
    RuleProblem rule(rng, n);
    GridProblem<5>& problem = rule.problem;
    thrust::device_vector<std::uint8_t>& free_dofs = rule.free_dofs;
    MultilevelPreconditioner<double, 5> m(small_coarse_rebuilding());
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 1);
    // New values, same pattern: reused.
    thrust::transform(problem.a.values().begin(), problem.a.values().end(), problem.a.values().begin(),
                      weft::multilevel_detail::Scale<double>{1.5});
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 1);
    m.record_solve(true, 10);  // the first solve after the build sets the reference
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 1);
    m.record_solve(true, 15);  // within max(1.5 · 10, 10 + 5)
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 1);
    // A changed filter (a pinned node, an EIL tag) with refreshes off: rebuilt.
    free_dofs[7] = 0;
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 2);
    // A slow solve, then a failed one: rebuilt each time.
    m.record_solve(true, 10);
    m.record_solve(true, 16);
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 3);
    m.record_solve(false, 40);
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 4);
    // A changed pattern: rebuilt.
    GridProblem<5> wider = grid_problem<5>(rng, n, n + 1);
    const thrust::device_vector<double> wider_state = to_device(grid_state<5>(n, n + 1));
    const thrust::device_vector<std::uint8_t> wider_free(static_cast<std::size_t>(5 * wider.nodes), 1);
    REQUIRE(m.prepare(wider.a, wider_free, wider_state));
    CHECK(m.builds() == 5);
    // reuse = false: every prepare builds.
    MultilevelOptions always = small_coarse_rebuilding();
    always.reuse = false;
    m.set_options(always);
    // New options: apply() needs a prepare() first.
    thrust::device_vector<double> unused;
    CHECK_THROWS_AS(m.apply(thrust::device_vector<double>(static_cast<std::size_t>(wider.a.rows()), 1.0), unused),
                    weft::InvalidInput);
    REQUIRE(m.prepare(wider.a, wider_free, wider_state));
    REQUIRE(m.prepare(wider.a, wider_free, wider_state));
    CHECK(m.builds() == 7);
}

TEST_CASE("multilevel: a refresh gives each coarse level Pᵀ Â P of the current values with the kept prolongators",
          "[backend][multilevel][refresh]")
{
    Random rng(71);
    int levels = 0;
    levels += check_refresh<3>(rng);
    levels += check_refresh<5>(rng);
    CHECK(levels >= 4);
}

TEST_CASE(
    "multilevel: a new filter on the kept pattern is taken by a refresh: Galerkin with the filtered "
    "prolongator, SPD, the LDLT solution",
    "[backend][multilevel][refresh][filter]")
{
    Random rng(83);
    int checks = 0;
    checks += check_filter_refresh<3>(rng);
    checks += check_filter_refresh<5>(rng);
    CHECK(checks >= 2 * (2 + 3 + 1));
}

TEST_CASE(
    "multilevel: with timed solves, iterations that drift above the last renewal's buy a refresh once they have "
    "cost one, below the growth limit too",
    "[backend][multilevel][refresh]")
{
    Random rng(79);
    RuleProblem rule(rng, 16);
    MultilevelPreconditioner<double, 5> m(small_coarse());  // refresh on_growth, timed rebuilds: the defaults
    REQUIRE(m.options().refresh == weft::MultilevelRefresh::on_growth);
    REQUIRE(m.options().timed_rebuild);
    REQUIRE(rule.prepare(m));
    const double build = m.last_build_seconds();
    REQUIRE(build > 0.0);
    // Reference 10 (growth limit 15); then solves of 12, each 2 extra
    // iterations at build/80 apiece: build/40. No refresh yet, so its price is
    // the build's.
    m.record_solve(true, 10, 10 * build / 80);
    CHECK(m.fresh_stale_seconds() == 0.0);
    for (int solve = 0; solve < 20; ++solve) m.record_solve(true, 12, 12 * build / 80);
    REQUIRE(rule.prepare(m));
    CHECK(m.refreshes() == 0);
    CHECK(m.fresh_stale_seconds() == Approx(build / 2));
    for (int solve = 0; solve < 21; ++solve) m.record_solve(true, 12, 12 * build / 80);
    REQUIRE(rule.prepare(m));  // the drift has cost a build: refreshed, not rebuilt
    CHECK(m.builds() == 1);
    CHECK(m.refreshes() == 1);
    CHECK(m.growth_refreshes() == 1);
    CHECK(m.fresh_stale_seconds() == 0.0);
    CHECK(m.stale_seconds() == 0.0);
    // The first solve after the refresh is the new reference; solves at it cost nothing.
    const double refresh = m.last_refresh_seconds();
    REQUIRE(refresh > 0.0);
    m.record_solve(true, 12, 12 * refresh);
    m.record_solve(true, 12, 12 * refresh);
    REQUIRE(rule.prepare(m));
    CHECK(m.refreshes() == 1);
    CHECK(m.fresh_stale_seconds() == 0.0);
    // Now the price is the refresh's: 3 extra iterations at refresh/2 apiece buy the next one.
    m.record_solve(true, 15, 15 * refresh / 2);
    REQUIRE(rule.prepare(m));
    CHECK(m.refreshes() == 2);
    CHECK(m.builds() == 1);
    // Stiffened past the build's limit: 20 iterations ask for a refresh, after
    // which 17 (above the limit, below 20) count as help: the next slow solve
    // refreshes again, it does not rebuild. The first stale solve after each
    // renewal drifts by less than a refresh costs, so none is made ahead.
    double price = m.last_refresh_seconds();
    m.record_solve(true, 12, 12 * price);
    m.record_solve(true, 13, 13 * price / 4);  // 1 extra iteration at price/4
    CHECK_FALSE(m.refreshing_ahead());
    m.record_solve(true, 20, 20 * price);
    REQUIRE(rule.prepare(m));
    CHECK(m.refreshes() == 3);
    price = m.last_refresh_seconds();
    m.record_solve(true, 17, 17 * price);
    m.record_solve(true, 19, 19 * price / 8);  // 2 extra iterations at price/8
    CHECK_FALSE(m.refreshing_ahead());
    REQUIRE(rule.prepare(m));
    CHECK(m.refreshes() == 4);
    CHECK(m.builds() == 1);
    CHECK(m.refreshes_ahead() == 0);
    // A refresh after which the solve is no faster did not help: the next slow solve rebuilds.
    m.record_solve(true, 19, 19 * refresh);
    m.record_solve(true, 30, 30 * build);
    REQUIRE(rule.prepare(m));
    CHECK(m.refreshes() == 4);
    CHECK(m.builds() == 2);
    // With no refresh yet its price is unknown: the first solve over the
    // growth limit buys one at once, however little the stale time.
    MultilevelPreconditioner<double, 5> first(small_coarse());
    REQUIRE(rule.prepare(first));
    first.record_solve(true, 10, 1e-9);
    first.record_solve(true, 16, 1e-9);
    REQUIRE(rule.prepare(first));
    CHECK(first.builds() == 1);
    CHECK(first.refreshes() == 1);
    CHECK(first.growth_refreshes() == 1);
}

TEST_CASE(
    "multilevel: where one prepare's drift costs more than a refresh, the values are refreshed ahead of every solve, "
    "with probes that measure the drift again",
    "[backend][multilevel][refresh]")
{
    Random rng(89);
    RuleProblem rule(rng, 16);
    MultilevelPreconditioner<double, 5> m(small_coarse());  // refresh on_growth, timed rebuilds: the defaults
    // The first refresh (its price unknown) is bought by the first slow solve.
    const double build = buy_first_refresh(rule, m);
    CHECK_FALSE(m.refreshing_ahead());
    // The fresh solve, then the first stale one: 3 extra iterations at half
    // a refresh apiece cost 1.5 refreshes. From now on each prepare refreshes.
    double price = m.last_refresh_seconds();
    REQUIRE(price > 0.0);
    m.record_solve(true, 10, 10 * price / 2);
    m.record_solve(true, 13, 13 * price / 2);
    CHECK(m.refreshing_ahead());
    CHECK(m.probe_interval() == 4);
    int refreshes = m.refreshes();
    int probes = 0;
    // Refreshed ahead before each of 4 fresh solves; then one prepare keeps
    // the values and the stale solve after it measures the drift again.
    auto run_until_probe = [&](int interval) {
        for (int solve = 0; solve < interval; ++solve) {
            REQUIRE(rule.prepare(m));
            CHECK(m.refreshes() == ++refreshes);
            m.record_solve(true, 10, 10 * m.last_refresh_seconds() / 2);
        }
        REQUIRE(rule.prepare(m));  // the probe
        CHECK(m.refreshes() == refreshes);
        ++probes;
    };
    run_until_probe(4);
    CHECK(m.refreshes_ahead() == 4);
    price = m.last_refresh_seconds();
    m.record_solve(true, 13, 13 * price / 2);  // the drift still costs 1.5 refreshes: confirmed
    CHECK(m.refreshing_ahead());
    CHECK(m.probe_interval() == 8);  // each confirmation doubles the interval
    run_until_probe(8);
    CHECK(m.refreshes_ahead() == 12);
    m.record_solve(true, 13, 13 * m.last_refresh_seconds() / 2);
    CHECK(m.probe_interval() == 16);
    run_until_probe(16);
    m.record_solve(true, 13, 13 * m.last_refresh_seconds() / 2);
    CHECK(m.probe_interval() == 32);
    run_until_probe(32);
    m.record_solve(true, 13, 13 * m.last_refresh_seconds() / 2);
    CHECK(m.probe_interval() == 32);  // at most 32
    CHECK(m.refreshes_ahead() == 4 + 8 + 16 + 32);
    CHECK(m.growth_refreshes() == 1);
    CHECK(m.builds() == 1);
    // A probe whose drift costs a hundredth of a refresh ends it: back to the
    // rent-or-buy rule, whose stale solves then buy the next refresh.
    run_until_probe(32);
    m.record_solve(true, 11, 11 * m.last_refresh_seconds() / 100);
    CHECK_FALSE(m.refreshing_ahead());
    CHECK(m.probe_interval() == 4);
    REQUIRE(rule.prepare(m));
    CHECK(m.refreshes() == refreshes);
    CHECK(probes == 5);

    m.record_solve(true, 14, 14 * m.last_refresh_seconds() / 2);  // 4 extra at half a refresh apiece
    CHECK_FALSE(m.refreshing_ahead());
    REQUIRE(rule.prepare(m));
    CHECK(m.refreshes() == ++refreshes);
    CHECK(m.growth_refreshes() == 2);

    // Refreshing ahead, a slow solve has fresh values: only a build helps it,
    // at the build's price (as with every_prepare). Reference 10, limit 15.
    m.record_solve(true, 10, 10 * m.last_refresh_seconds() / 2);
    m.record_solve(true, 13, 13 * m.last_refresh_seconds() / 2);
    REQUIRE(m.refreshing_ahead());
    REQUIRE(rule.prepare(m));
    CHECK(m.refreshes() == ++refreshes);
    m.record_solve(true, 30, 30 * build);  // fresh, above the growth limit, 20 extra iterations at a build apiece
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 2);
    CHECK(m.growth_builds() == 1);
    CHECK(m.refreshes() == refreshes);

    // Without timed solves (runs that repeat bit for bit), nothing is refreshed ahead.
    MultilevelOptions untimed = small_coarse();
    untimed.timed_rebuild = false;
    MultilevelPreconditioner<double, 5> plain(untimed);
    REQUIRE(rule.prepare(plain));
    plain.record_solve(true, 10, 10.0);
    plain.record_solve(true, 16, 16.0);
    REQUIRE(rule.prepare(plain));
    REQUIRE(plain.refreshes() == 1);
    plain.record_solve(true, 10, 10.0);
    plain.record_solve(true, 13, 1e3);
    CHECK_FALSE(plain.refreshing_ahead());
    REQUIRE(rule.prepare(plain));
    CHECK(plain.refreshes() == 1);
    CHECK(plain.refreshes_ahead() == 0);
}

TEST_CASE("multilevel: refreshing ahead, a probe comes after as many refreshes as the last stale solve cost",
          "[backend][multilevel][refresh]")
{
    Random rng(97);
    RuleProblem rule(rng, 16);
    MultilevelPreconditioner<double, 5> m(small_coarse());  // the defaults
    buy_first_refresh(rule, m);
    // Fresh solves of 10 iterations; stale ones of 13 (within the growth
    // limit, 15) whose 3 extra iterations cost `paid` refreshes.
    const auto stale = [&](double paid) { m.record_solve(true, 13, 13 * paid / 3 * m.last_refresh_seconds()); };
    m.record_solve(true, 10, 10 * m.last_refresh_seconds() / 2);
    stale(9.5);  // the first probe after 10 fresh solves, not 4
    REQUIRE(m.refreshing_ahead());
    CHECK(m.probe_interval() == 10);
    int refreshes = m.refreshes();
    int probes = 0;
    const auto run_until_probe = [&](int interval) {
        for (int solve = 0; solve < interval; ++solve) {
            REQUIRE(rule.prepare(m));
            CHECK(m.refreshes() == ++refreshes);
            m.record_solve(true, 10, 10 * m.last_refresh_seconds() / 2);
        }
        REQUIRE(rule.prepare(m));  // the probe keeps the values
        CHECK(m.refreshes() == refreshes);
        ++probes;
    };
    run_until_probe(10);
    stale(12.5);  // confirmed: the doubled interval, 20, is the longer
    CHECK(m.probe_interval() == 20);
    run_until_probe(20);
    stale(25);  // confirmed: the doubled interval, 40, capped at 32
    CHECK(m.probe_interval() == 32);
    CHECK(m.refreshes_ahead() == 10 + 20);
    run_until_probe(32);
    m.record_solve(true, 11, 11 * m.last_refresh_seconds() / 100);  // a hundredth of a refresh: ended
    REQUIRE_FALSE(m.refreshing_ahead());
    CHECK(m.probe_interval() == 4);
    REQUIRE(rule.prepare(m));
    CHECK(m.refreshes() == refreshes);
    m.record_solve(true, 14, 14 * m.last_refresh_seconds() / 2);  // rent or buy: 2 refreshes' drift buys one
    REQUIRE(rule.prepare(m));
    REQUIRE(m.refreshes() == ++refreshes);
    m.record_solve(true, 10, 10 * m.last_refresh_seconds() / 2);
    stale(100);  // begun again at a drift of 100 refreshes: the cap at once
    CHECK(m.refreshing_ahead());
    CHECK(m.probe_interval() == 32);
    CHECK(probes == 3);
    CHECK(m.builds() == 1);
}

TEST_CASE(
    "multilevel: refreshing ahead, the hierarchy's age rebuilds it below the growth limit once it has cost a "
    "build",
    "[backend][multilevel][refresh][reuse]")
{
    Random rng(101);
    RuleProblem rule(rng, 16);
    MultilevelPreconditioner<double, 5> m(small_coarse());  // the defaults
    const double build = buy_first_refresh(rule, m);        // the first solve after the build: 10, growth limit 15
    m.record_solve(true, 10, 10 * m.last_refresh_seconds() / 2);
    m.record_solve(true, 13, 13 * m.last_refresh_seconds() / 2);  // 1.5 refreshes of drift: ahead
    REQUIRE(m.refreshing_ahead());
    REQUIRE(m.probe_interval() == 4);
    CHECK(m.aged_seconds() == 0.0);  // stale solves are not the hierarchy's age
    // Fresh solves of 12 iterations, 2 above the first, at a quarter of a
    // build apiece: half a build each. Within the growth limit, which alone
    // never rebuilds.
    REQUIRE(rule.prepare(m));
    m.record_solve(true, 12, 12 * build / 4);
    CHECK(m.aged_seconds() == Approx(build / 2));
    for (int solve = 0; solve < 3; ++solve) {  // fresh solves as fast as the first add nothing
        REQUIRE(rule.prepare(m));
        m.record_solve(true, 10, 10 * build / 4);
    }
    CHECK(m.aged_seconds() == Approx(build / 2));
    const int refreshes = m.refreshes();
    REQUIRE(rule.prepare(m));  // the probe keeps the values
    CHECK(m.refreshes() == refreshes);
    // Stale: at least 2 builds of drift (and 4 refreshes, however long the
    // refresh took), not of age.
    m.record_solve(true, 14, 14 * std::max(build / 2, m.last_refresh_seconds()));
    CHECK(m.aged_seconds() == Approx(build / 2));
    REQUIRE(m.refreshing_ahead());
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 1);
    m.record_solve(true, 13, 13 * build / 4);  // the age passes a build (1.25): rebuilt
    CHECK(m.aged_seconds() == Approx(1.25 * build));
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 2);
    CHECK(m.growth_builds() == 1);
    CHECK(m.aged_builds() == 1);
    CHECK(m.aged_seconds() == 0.0);
    // Still ahead after the build (the drift was measured on the values, not
    // the hierarchy): its first solve sets the age's reference again.
    CHECK(m.refreshing_ahead());
    CHECK(m.age_price_builds() == 1);
    const double rebuilt = m.last_build_seconds();  // the price is now this build's time
    REQUIRE(rebuilt > 0.0);
    // Solves of `iterations` with fresh values, at a quarter of a build per
    // iteration. Where a prepare is a probe (it kept the values: no refresh,
    // no build), its stale solve takes 3 more, within the growth limit, at a
    // build or a refresh per iteration, whichever took longer: a drift of 3
    // refreshes at least keeps the refreshes ahead. Then the solve is made again.
    const auto fresh_solves = [&](int solves, int iterations) {
        for (int solve = 0; solve < solves;) {
            const int refreshes = m.refreshes();
            const int builds = m.builds();
            REQUIRE(rule.prepare(m));
            const bool probe = m.refreshes() == refreshes && m.builds() == builds;
            const int taken = probe ? iterations + 3 : iterations;
            m.record_solve(true, taken, taken * (probe ? std::max(rebuilt, m.last_refresh_seconds()) : rebuilt / 4));
            REQUIRE(m.refreshing_ahead());
            if (!probe) ++solve;
        }
    };
    m.record_solve(true, 12, 12 * rebuilt / 4);  // the first solve after the build
    fresh_solves(1, 12);
    CHECK(m.aged_seconds() == 0.0);
    CHECK(m.builds() == 2);
    // Its first three fresh solves (12 on average) were no faster than the
    // last three before it (10, 10, 13: 11): the build did not lower the
    // iterations, so the next one waits for twice the age.
    fresh_solves(1, 12);
    CHECK(m.age_price_builds() == 2);
    // Fresh solves 2 above the first (12): half a build of age each.
    fresh_solves(3, 14);  // 1.5 builds of age: one build's price would have rebuilt
    CHECK(m.aged_seconds() == Approx(1.5 * rebuilt));
    CHECK(m.aged_builds() == 1);
    CHECK(m.builds() == 2);
    fresh_solves(1, 15);  // 2.25 builds of age (past 2 by more than round-off): rebuilt at the next prepare
    CHECK(m.aged_builds() == 2);
    // That build lowers the iterations (10 against the 14, 14 and 15 before it): the
    // price goes back to one build.
    fresh_solves(3, 10);
    CHECK(m.builds() == 3);
    CHECK(m.age_price_builds() == 1);

    // Without timed solves the age is not weighed.
    MultilevelOptions untimed = small_coarse();
    untimed.timed_rebuild = false;
    MultilevelPreconditioner<double, 5> plain(untimed);
    REQUIRE(rule.prepare(plain));
    plain.record_solve(true, 10, 10.0);
    plain.record_solve(true, 14, 1e6);
    CHECK(plain.aged_seconds() == 0.0);
    REQUIRE(rule.prepare(plain));
    CHECK(plain.builds() == 1);
}

TEST_CASE("multilevel: a slow solve refreshes the coarse values, and rebuilds where a refresh did not help",
          "[backend][multilevel][refresh]")
{
    Random rng(73);
    const int n = 16;
    RuleProblem rule(rng, n);
    thrust::device_vector<std::uint8_t>& free_dofs = rule.free_dofs;
    MultilevelPreconditioner<double, 5> m(small_coarse());  // refresh on_growth, the default
    REQUIRE(m.options().refresh == weft::MultilevelRefresh::on_growth);
    REQUIRE(rule.prepare(m));
    m.record_solve(true, 10);  // the reference; the growth limit is 15
    REQUIRE(rule.prepare(m));
    CHECK(m.refreshes() == 0);
    m.record_solve(true, 16);  // slow: the values are refreshed, nothing rebuilt
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 1);
    CHECK(m.refreshes() == 1);
    CHECK(m.growth_refreshes() == 1);
    m.record_solve(true, 12);  // the refresh helped
    m.record_solve(true, 17);  // slow again: another refresh
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 1);
    CHECK(m.refreshes() == 2);
    m.record_solve(true, 20);  // still slow right after the refresh: rebuilt
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 2);
    CHECK(m.growth_builds() == 1);
    CHECK(m.refreshes() == 2);
    m.record_solve(true, 10);
    m.record_solve(true, 16);  // after a build, refreshing is tried first again
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 2);
    CHECK(m.refreshes() == 3);
    m.record_solve(false, 40);  // a failed solve rebuilds at once
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 3);
    CHECK(m.failure_builds() == 1);
    m.record_solve(true, 10);
    m.record_solve(true, 16);  // a refresh is asked for, and the filter changes: refreshed for the new filter
    free_dofs[12] = 0;
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 3);
    CHECK(m.refreshes() == 4);
    CHECK(m.filter_refreshes() == 1);
    // every_prepare: each prepare with the same pattern refreshes.
    MultilevelOptions every = small_coarse();
    every.refresh = weft::MultilevelRefresh::every_prepare;
    m.set_options(every);
    REQUIRE(rule.prepare(m));
    REQUIRE(rule.prepare(m));
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 4);
    CHECK(m.refreshes() == 6);
    CHECK_THROWS_WITH(m.level_matrix(0), Catch::Contains("level"));
    CHECK_THROWS_WITH(m.level_matrix(static_cast<std::size_t>(m.levels())), Catch::Contains("coarse level"));
}

TEST_CASE("multilevel: refreshed coarse values take fewer PCG iterations than stale ones after a local stiffening",
          "[backend][multilevel][refresh]")
{
    Random rng(79);
    const int n = 24;
    const GridProblem<3> problem = grid_problem<3>(rng, n, n);
    const thrust::device_vector<double> state = to_device(grid_state<3>(n, n));
    const thrust::device_vector<std::uint8_t> free_dofs(static_cast<std::size_t>(3 * problem.nodes), 1);
    const Eigen::VectorXd b = random_vector(rng, 3 * problem.nodes);
    // Built for A, solved with A + 99 A_region (the blocks between nodes with
    // x < n/2: a principal submatrix of an SPD matrix, so the sum stays SPD),
    // as the contact stiffness of a landing changes a matrix.
    const auto solve = [&](weft::MultilevelRefresh refresh, bool stiffen) {
        MultilevelOptions options = small_coarse();
        options.refresh = refresh;
        MultilevelPreconditioner<double, 3> m(options);
        weft::BsrMatrix<double, 3> a = problem.a;
        REQUIRE(m.prepare(a, free_dofs, state));
        if (stiffen) {
            const std::vector<Index> row_ptr = weft::to_host(a.row_ptr()), col_idx = weft::to_host(a.col_idx());
            std::vector<double> values = weft::to_host(a.values());
            for (Index i = 0; i < a.block_rows(); ++i) {
                for (Index k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
                    if (i % n >= n / 2 || col_idx[k] % n >= n / 2) continue;
                    for (int e = 0; e < 9; ++e) values[static_cast<std::size_t>(k) * 9 + e] *= 100.0;
                }
            }
            thrust::copy(values.begin(), values.end(), a.values().begin());
            REQUIRE(m.prepare(a, free_dofs, state));
        }
        const PcgOptions<double> pcg = weft_backend_test::multilevel_pcg(m, 1e-8, 2000);
        PcgWorkspace<double, 3> workspace;
        thrust::device_vector<double> x(static_cast<std::size_t>(b.size()), 0.0);
        const PcgResult<double> result = weft::solve_filtered_pcg(a, to_device(b), free_dofs, x, workspace, pcg);
        REQUIRE(result.converged);
        return result.iterations;
    };
    const int stale = solve(weft::MultilevelRefresh::off, true);
    const int refreshed = solve(weft::MultilevelRefresh::every_prepare, true);
    const int unchanged = solve(weft::MultilevelRefresh::off, false);
    INFO("stale " << stale << ", refreshed " << refreshed << ", before the stiffening " << unchanged);
    CHECK(refreshed < stale);
}

TEST_CASE("multilevel: with timed solves, a slow solve rebuilds once the stale hierarchy has cost a build",
          "[backend][multilevel][reuse]")
{
    Random rng(57);
    const int n = 16;
    RuleProblem rule(rng, n);
    MultilevelPreconditioner<double, 5> m(small_coarse_rebuilding());
    REQUIRE(rule.prepare(m));
    REQUIRE(m.builds() == 1);
    const double build = m.last_build_seconds();
    REQUIRE(build > 0.0);
    // Reference: 10 iterations; the growth limit is 15. The two slow solves
    // below take 30 and 40 (20 and 30 extra).
    m.record_solve(true, 10, 10 * build / 80);
    CHECK(m.stale_seconds() == 0.0);
    m.record_solve(true, 30, 30 * build / 80);  // extra 20 · build/80 = build/4
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 1);
    CHECK(m.stale_seconds() == Approx(build / 4));
    m.record_solve(true, 12, 12 * build / 4);  // within the growth limit: adds 2 · build/4, never rebuilds
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 1);
    CHECK(m.stale_seconds() == Approx(3 * build / 4));
    m.record_solve(true, 40, 40 * build / 80);  // slow, and the stale time passes the build's: rebuilt
    CHECK(m.stale_seconds() == Approx(9 * build / 8));
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 2);
    CHECK(m.growth_builds() == 1);
    CHECK(m.stale_seconds() == 0.0);
    // A failed solve rebuilds at once, whatever the times.
    m.record_solve(true, 10, 1e-9);
    m.record_solve(false, 40, 1e-9);
    REQUIRE(rule.prepare(m));
    CHECK(m.builds() == 3);
    CHECK(m.failure_builds() == 1);
}

TEST_CASE("multilevel: without timed rebuilds, iteration growth alone rebuilds, whatever the solves' times",
          "[backend][multilevel][reuse]")
{
    // The same solves as above with the stale time far below the build's:
    // the rent-or-buy rule keeps the hierarchy, timed_rebuild = false
    // rebuilds at the first slow solve (the rule of runs that repeat bit for
    // bit).
    Random rng(61);
    const int n = 16;
    for (const bool timed : {true, false}) {
        RuleProblem rule(rng, n);
        MultilevelOptions options = small_coarse_rebuilding();
        options.timed_rebuild = timed;
        MultilevelPreconditioner<double, 5> m(options);
        REQUIRE(rule.prepare(m));
        const double build = m.last_build_seconds();
        REQUIRE(build > 0.0);
        m.record_solve(true, 10, 1e-6 * build);
        m.record_solve(true, 30, 3e-6 * build);  // slow: 20 extra iterations, a millionth of a build
        REQUIRE(rule.prepare(m));
        INFO("timed " << timed);
        CHECK(m.builds() == (timed ? 1 : 2));
        CHECK(m.growth_builds() == (timed ? 0 : 1));
        CHECK(m.stale_seconds() == (timed ? Approx(2e-6 * build) : Approx(0.0)));
    }
    // The words of the scene keys (scene_options.hpp and both benchmarks).
    CHECK(weft::multilevel_timed_rebuild_named("rent-or-buy"));
    CHECK_FALSE(weft::multilevel_timed_rebuild_named("growth"));
    CHECK_THROWS_WITH(weft::multilevel_timed_rebuild_named("never"),
                      Catch::Contains("\"never\"") && Catch::Contains("rent-or-buy, growth"));
    CHECK(weft::multilevel_refresh_named("every-prepare") == weft::MultilevelRefresh::every_prepare);
    CHECK_THROWS_WITH(weft::multilevel_refresh_named("always"), Catch::Contains("\"always\""));
}

TEST_CASE("multilevel: a matrix that is not positive definite is reported by prepare()", "[backend][multilevel]")
{
    Random rng(59);
    GridProblem<3> problem = grid_problem<3>(rng, 12, 12);
    const thrust::device_vector<std::uint8_t> free_dofs(static_cast<std::size_t>(3 * problem.nodes), 1);
    thrust::transform(problem.a.values().begin(), problem.a.values().end(), problem.a.values().begin(),
                      weft::multilevel_detail::Scale<double>{-1.0});
    MultilevelPreconditioner<double, 3> m(small_coarse());
    CHECK_FALSE(m.prepare(problem.a, free_dofs, to_device(grid_state<3>(12, 12))));
    thrust::device_vector<double> z;
    CHECK_THROWS_WITH(m.apply(thrust::device_vector<double>(3 * 144, 1.0), z),
                      Catch::Contains("before a successful prepare()"));
}

TEST_CASE("multilevel: bad sizes and options are rejected by name", "[backend][multilevel][input]")
{
    Random rng(61);
    const GridProblem<3> problem = grid_problem<3>(rng, 6, 6);
    const thrust::device_vector<std::uint8_t> free_dofs(static_cast<std::size_t>(3 * problem.nodes), 1);
    const thrust::device_vector<double> state = to_device(grid_state<3>(6, 6));
    MultilevelPreconditioner<double, 3> m;
    CHECK_THROWS_WITH(m.prepare(problem.a, thrust::device_vector<std::uint8_t>(5, 1), state),
                      Catch::Contains("free_dofs/state size"));
    CHECK_THROWS_WITH(m.prepare(problem.a, free_dofs, thrust::device_vector<double>(4, 0.0)),
                      Catch::Contains("free_dofs/state size"));
    const auto rejects = [&](MultilevelOptions o, const char* field) {
        MultilevelPreconditioner<double, 3> bad(o);
        CHECK_THROWS_WITH(bad.prepare(problem.a, free_dofs, state), Catch::Contains(field));
    };
    MultilevelOptions o;
    o.strength_threshold = 1.5;
    rejects(o, "strength_threshold");
    o = {};
    o.coarse_dofs = 0;
    rejects(o, "coarse_dofs");
    o = {};
    o.max_levels = 0;
    rejects(o, "max_levels");
    o = {};
    o.smoother_degree = 0;
    rejects(o, "smoother_degree");
    o = {};
    o.smoother_ratio = 1.0;
    rejects(o, "smoother_ratio");
    o = {};
    o.power_iterations = 0;
    rejects(o, "power_iterations");
    o = {};
    o.rebuild_growth = 0.5;
    rejects(o, "rebuild_growth");
    o = {};
    o.yarn_run = 0;
    rejects(o, "yarn_run");
    o = {};
    o.yarn_square = 0;
    rejects(o, "yarn_square");
    o = {};
    o.coarse_space = weft::MultilevelCoarseSpace::yarns;  // 3-DoF nodes have no yarns to follow
    rejects(o, "needs 5-DoF yarn nodes");
    o.coarse_space = weft::MultilevelCoarseSpace::squares;
    rejects(o, "needs 5-DoF yarn nodes");
    o = {};
    o.square_side = 2;  // lines of squares of 2 would couple three squares apart
    rejects(o, "square_side");
    o = {};
    o.square_join = 1;  // no coarsening below the first coarse level
    rejects(o, "square_join");
    o = {};
    o.cycle = static_cast<weft::MultilevelCycle>(7);
    rejects(o, "cycle");
    // PCG asked for the multilevel preconditioner without one.
    PcgOptions<double> options;
    options.preconditioner = PcgPreconditioner::multilevel;
    PcgWorkspace<double, 3> workspace;
    thrust::device_vector<double> x(static_cast<std::size_t>(3 * problem.nodes), 0.0);
    CHECK_THROWS_WITH(weft::solve_filtered_pcg(problem.a, x, free_dofs, x, workspace, options),
                      Catch::Contains("PcgOptions custom"));
}

TEST_CASE("multilevel setup algebra: SPD inverse and sparse product against their definitions",
          "[backend][multilevel][setup]")
{
    using weft::multilevel_detail::HostMatrix;
    Random rng(97);
    int checks = 0;
    for (const std::size_t n : {std::size_t(1), std::size_t(5), std::size_t(8), std::size_t(37)}) {
        // A = Mᵀ M + n I: SPD, with entries of both signs.
        std::vector<double> m(n * n), a(n * n, 0.0), inverse;
        for (double& value : m) value = rng.uniform(-1, 1);
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                for (std::size_t k = 0; k < n; ++k) a[i * n + j] += m[k * n + i] * m[k * n + j];
            }
            a[i * n + i] += static_cast<double>(n);
        }
        REQUIRE(weft::multilevel_detail::spd_inverse(a, n, inverse));
        double worst = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                double product = 0.0;
                for (std::size_t k = 0; k < n; ++k) product += a[i * n + k] * inverse[k * n + j];
                worst = std::max(worst, std::abs(product - (i == j ? 1.0 : 0.0)));
                CHECK(inverse[i * n + j] == inverse[j * n + i]);
            }
        }
        CHECK(worst <= 1e-13);
        // Indefinite (one negative pivot) and non-finite: refused.
        std::vector<double> indefinite = a;
        indefinite[(n - 1) * n + (n - 1)] = -1.0;
        CHECK_FALSE(weft::multilevel_detail::spd_inverse(indefinite, n, inverse));
        std::vector<double> nan = a;
        nan[0] = std::nan("");
        CHECK_FALSE(weft::multilevel_detail::spd_inverse(nan, n, inverse));
        checks += 3;
    }
    // C = A B on random sparse patterns (rows of A without entries, repeated
    // columns in the products) against the sums written out densely.
    const Index rows = 23, inner = 17, cols = 11;
    std::vector<Eigen::Triplet<double, Index>> ta, tb;
    for (Index r = 0; r < rows; ++r) {
        if (r % 7 == 3) continue;  // empty rows
        for (Index c = 0; c < inner; ++c) {
            if (rng.uniform(0, 1) < 0.25) ta.emplace_back(r, c, rng.uniform(-2, 2));
        }
    }
    for (Index r = 0; r < inner; ++r) {
        for (Index c = 0; c < cols; ++c) {
            if (rng.uniform(0, 1) < 0.3) tb.emplace_back(r, c, rng.uniform(-2, 2));
        }
    }
    HostMatrix<double> a(rows, inner), b(inner, cols);
    a.setFromTriplets(ta.begin(), ta.end());
    b.setFromTriplets(tb.begin(), tb.end());
    const HostMatrix<double> c = weft::multilevel_detail::sparse_product(a, b);
    REQUIRE(c.rows() == rows);
    REQUIRE(c.cols() == cols);
    REQUIRE(c.nonZeros() > 0);
    int compared = 0;
    for (Index r = 0; r < rows; ++r) {
        Index previous = -1;
        for (HostMatrix<double>::InnerIterator it(c, r); it; ++it) {
            CHECK(it.col() > previous);  // sorted, no duplicates
            previous = it.col();
        }
        for (Index col = 0; col < cols; ++col) {
            double expected = 0.0;
            bool structural = false;
            for (Index k = 0; k < inner; ++k) {
                if (a.coeff(r, k) != 0.0 && b.coeff(k, col) != 0.0) {
                    expected += a.coeff(r, k) * b.coeff(k, col);
                    structural = true;
                }
            }
            CHECK(c.coeff(r, col) == Approx(expected).margin(1e-14));
            if (!structural) CHECK(c.coeff(r, col) == 0.0);
            ++compared;
        }
    }
    REQUIRE(compared == rows * cols);
    REQUIRE(checks == 12);
}

TEST_CASE("multilevel setup algebra: the filtered host matrix and its device copy against S A S + (I - S)",
          "[backend][multilevel][setup]")
{
    // filtered_host_matrix writes the compressed arrays itself, block row by
    // block row on the threads; to_device_csr copies them.
    using weft::multilevel_detail::HostMatrix;
    Random rng(131);
    int compared = 0;
    for (const double constrained : {0.0, 0.3, 1.0}) {
        const GridProblem<5> problem = grid_problem<5>(rng, 5, 4);
        const std::vector<std::uint8_t> free = random_filter<5>(rng, problem.nodes, constrained);
        const HostMatrix<double> filtered = weft::multilevel_detail::filtered_host_matrix(problem.a, free);
        REQUIRE(filtered.isCompressed());
        const Eigen::MatrixXd dense = Eigen::MatrixXd(problem.reference);
        const Index n = static_cast<Index>(dense.rows());
        REQUIRE(filtered.rows() == n);
        REQUIRE(filtered.cols() == n);
        // Stored: a free row's free columns of A's blocks; a constrained row, its diagonal only.
        const std::vector<Index> block_ptr = weft::to_host(problem.a.row_ptr());
        const std::vector<Index> block_col = weft::to_host(problem.a.col_idx());
        Index expected_stored = 0;
        for (Index i = 0; i < problem.nodes; ++i) {
            Index free_columns = 0;
            for (Index k = block_ptr[i]; k < block_ptr[i + 1]; ++k) {
                for (int c = 0; c < 5; ++c) free_columns += free[5 * block_col[k] + c] ? 1 : 0;
            }
            for (int r = 0; r < 5; ++r) expected_stored += free[5 * i + r] ? free_columns : 1;
        }
        CHECK(filtered.nonZeros() == expected_stored);
        const weft::BsrMatrix<double, 1> device = weft::multilevel_detail::to_device_csr(filtered);
        const std::vector<Index> row_ptr = weft::to_host(device.row_ptr());
        const std::vector<Index> col_idx = weft::to_host(device.col_idx());
        const std::vector<double> values = weft::to_host(device.values());
        REQUIRE(row_ptr.size() == static_cast<std::size_t>(n) + 1);
        for (Index row = 0; row < n; ++row) {
            Index previous = -1;
            for (HostMatrix<double>::InnerIterator it(filtered, row); it; ++it) {
                CHECK(it.col() > previous);  // sorted, no duplicates
                previous = static_cast<Index>(it.col());
            }
            Eigen::VectorXd from_device = Eigen::VectorXd::Zero(n);
            for (Index k = row_ptr[row]; k < row_ptr[row + 1]; ++k) from_device(col_idx[k]) = values[k];
            for (Index col = 0; col < n; ++col) {
                const double expected =
                    free[row] && free[col] ? dense(row, col) : (row == col && !free[row] ? 1.0 : 0.0);
                CHECK(filtered.coeff(row, col) == expected);
                CHECK(from_device(col) == expected);
                ++compared;
            }
        }
    }
    CHECK(compared == 3 * 100 * 100);
}

TEST_CASE("multilevel setup algebra: the smoothed prolongator's difference and a matrix written into blocks",
          "[backend][multilevel][setup]")
{
    // sparse_difference_without_zeros(A, ω, B) must give Eigen's
    // (A − ω B).prune(0, ε) to the bit and entry; values_on_pattern (through
    // blocked_copy) each stored entry at its place in the blocks.
    using weft::multilevel_detail::HostMatrix;
    Random rng(177);
    int checks = 0;
    const Index rows = 31, cols = 19;
    for (const double omega : {0.75, -1.5, 1.0}) {
        std::vector<Eigen::Triplet<double, Index>> ta, tb;
        for (Index r = 0; r < rows; ++r) {
            if (r % 9 == 4) continue;  // empty rows in both
            for (Index c = 0; c < cols; ++c) {
                const double u = rng.uniform(0, 1);
                const double value = rng.uniform(-2, 2);
                if (u < 0.2) ta.emplace_back(r, c, value);
                if (u > 0.1 && u < 0.4) tb.emplace_back(r, c, rng.uniform(-2, 2));
                if (u > 0.95) {  // entries that cancel exactly: a = ω b
                    ta.emplace_back(r, c, omega * 0.5);
                    tb.emplace_back(r, c, 0.5);
                }
                if (u > 0.92 && u <= 0.95) ta.emplace_back(r, c, 0.0);  // a stored zero, dropped
            }
        }
        HostMatrix<double> a(rows, cols), b(rows, cols);
        a.setFromTriplets(ta.begin(), ta.end());
        b.setFromTriplets(tb.begin(), tb.end());
        HostMatrix<double> expected = a - omega * b;
        expected.prune(0.0, std::numeric_limits<double>::epsilon());
        expected.makeCompressed();
        const HostMatrix<double> c = weft::multilevel_detail::sparse_difference_without_zeros(a, omega, b);
        REQUIRE(c.isCompressed());
        REQUIRE(c.nonZeros() == expected.nonZeros());
        REQUIRE(c.nonZeros() < a.nonZeros() + b.nonZeros());  // some entries cancelled
        CHECK(std::equal(c.outerIndexPtr(), c.outerIndexPtr() + rows + 1, expected.outerIndexPtr()));
        CHECK(std::equal(c.innerIndexPtr(), c.innerIndexPtr() + c.nonZeros(), expected.innerIndexPtr()));
        CHECK(std::memcmp(c.valuePtr(), expected.valuePtr(), sizeof(double) * c.nonZeros()) == 0);
        checks += 3;
    }
    const HostMatrix<double> wide(rows, cols + 1);
    CHECK_THROWS_WITH(
        weft::multilevel_detail::sparse_difference_without_zeros(HostMatrix<double>(rows, cols), 1.0, wide),
        Catch::Contains("sparse_difference_without_zeros") && Catch::Contains("columns"));

    // A 4 × 3 blocked scalar matrix of 3 × 3 blocks, on its own pattern and on a wider one.
    constexpr int K = 3;
    const Index block_rows = 4, block_cols = 3;
    std::vector<Eigen::Triplet<double, Index>> tm;
    for (Index r = 0; r < block_rows * K; ++r) {
        for (Index c = 0; c < block_cols * K; ++c) {
            if (r / K != 2 && rng.uniform(0, 1) < 0.3) tm.emplace_back(r, c, rng.uniform(-2, 2));  // block row 2 empty
        }
    }
    HostMatrix<double> m(block_rows * K, block_cols * K);
    m.setFromTriplets(tm.begin(), tm.end());
    m.makeCompressed();
    weft::multilevel_detail::BlockPattern full;
    full.block_rows = block_rows;
    full.block_cols = block_cols;
    for (Index br = 0; br < block_rows; ++br) {
        for (Index bc = 0; bc < block_cols; ++bc) full.col_idx.push_back(bc);
        full.row_ptr.push_back((br + 1) * block_cols);
    }
    for (const bool own : {true, false}) {
        std::vector<Index> position;
        const weft::BsrMatrix<double, K> blocked =
            weft::multilevel_detail::blocked_copy<double, K>(m, position, own ? nullptr : &full);
        const std::vector<Index> row_ptr = weft::to_host(blocked.row_ptr());
        const std::vector<Index> col_idx = weft::to_host(blocked.col_idx());
        const std::vector<double> values = weft::to_host(blocked.values());
        REQUIRE(position.size() == static_cast<std::size_t>(m.nonZeros()));
        if (!own) CHECK(blocked.nonzero_blocks() == block_rows * block_cols);
        int compared = 0;
        for (Index br = 0; br < block_rows; ++br) {
            for (Index k = row_ptr[br]; k < row_ptr[br + 1]; ++k) {
                for (int r = 0; r < K; ++r) {
                    for (int c = 0; c < K; ++c) {
                        CHECK(values[static_cast<std::size_t>(k) * K * K + r * K + c] ==
                              m.coeff(br * K + r, col_idx[k] * K + c));
                        ++compared;
                    }
                }
            }
        }
        CHECK(compared == static_cast<int>(blocked.nonzero_blocks()) * K * K);
        for (Index row = 0; row < m.rows(); ++row) {
            for (Index e = m.outerIndexPtr()[row]; e < m.outerIndexPtr()[row + 1]; ++e)
                CHECK(values[static_cast<std::size_t>(position[e])] == m.valuePtr()[e]);
        }
        checks += 1;
    }
    // A pattern without block (3, 1): the entry there is named by its row and column.
    weft::multilevel_detail::BlockPattern missing = full;
    missing.col_idx.erase(missing.col_idx.begin() + 3 * block_cols + 1);
    missing.row_ptr.back() -= 1;
    HostMatrix<double> with_entry = m;
    with_entry.coeffRef(3 * K + 1, 1 * K + 2) = 1.0;
    with_entry.makeCompressed();
    // The first such entry in storage order is the one reported.
    Index missed_row = -1, missed_col = -1;
    for (Index row = 3 * K; row < 4 * K && missed_row < 0; ++row) {
        for (HostMatrix<double>::InnerIterator it(with_entry, row); it; ++it) {
            if (it.col() / K == 1) {
                missed_row = row;
                missed_col = static_cast<Index>(it.col());
                break;
            }
        }
    }
    REQUIRE(missed_row >= 0);
    std::vector<Index> position;
    CHECK_THROWS_WITH((weft::multilevel_detail::blocked_copy<double, K>(with_entry, position, &missing)),
                      Catch::Contains("misses the entry in row = " + std::to_string(missed_row)) &&
                          Catch::Contains("column " + std::to_string(missed_col)));
    REQUIRE(checks == 11);
}
