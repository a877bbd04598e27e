#pragma once
// Random block systems for the backend tests: lists of B×B contributions as
// elements would write them, and the same data as Eigen matrices (oracles).
#include <cstddef>
#include <vector>

#include <thrust/device_vector.h>
#include <Eigen/Dense>
#include <Eigen/Sparse>
#include <Eigen/SparseCholesky>
#include <cstdint>
#include <stdexcept>

#include <weft/backend/assembly.hpp>
#include <weft/backend/pcg.hpp>

#include "support/random.hpp"

namespace weft_backend_test {

/// PCG settings with a prepared multilevel preconditioner.
inline weft::PcgOptions<double> multilevel_pcg(weft::PreconditionerOperator<double>& m, double tolerance,
                                               int max_iterations)
{
    weft::PcgOptions<double> options;
    options.tolerance = tolerance;
    options.max_iterations = max_iterations;
    options.preconditioner = weft::PcgPreconditioner::multilevel;
    options.custom = &m;
    return options;
}

/// Contributions in element order: contribution k targets coords[k] and is
/// the row-major block blocks[k·B·B, (k+1)·B·B).
template <int B>
struct BlockContributions {
    std::vector<weft::BlockCoordinate> coords;
    std::vector<double> blocks;

    void add(weft::Index row, weft::Index col, const Eigen::Matrix<double, B, B>& block)
    {
        coords.push_back({row, col});
        for (int r = 0; r < B; ++r) {
            for (int c = 0; c < B; ++c) blocks.push_back(block(r, c));
        }
    }

    /// The straightforward assembly: one triplet per scalar, duplicates summed by Eigen.
    Eigen::SparseMatrix<double> triplet_assembly(weft::Index nodes) const
    {
        std::vector<Eigen::Triplet<double>> triplets;
        for (std::size_t k = 0; k < coords.size(); ++k) {
            for (int r = 0; r < B; ++r) {
                for (int c = 0; c < B; ++c) {
                    triplets.emplace_back(B * coords[k].row + r, B * coords[k].col + c, blocks[k * B * B + r * B + c]);
                }
            }
        }
        Eigen::SparseMatrix<double> a(B * nodes, B * nodes);
        a.setFromTriplets(triplets.begin(), triplets.end());
        return a;
    }
};

/// Random symmetric positive definite B×B block with eigenvalues ≥ `floor`.
template <int B>
Eigen::Matrix<double, B, B> random_spd_block(weft_test::Random& rng, double floor)
{
    Eigen::Matrix<double, B, B> g;
    for (int r = 0; r < B; ++r) {
        for (int c = 0; c < B; ++c) g(r, c) = rng.uniform(-1, 1);
    }
    return g * g.transpose() + floor * Eigen::Matrix<double, B, B>::Identity();
}

/// Spring-network system on an nx by ny grid of nodes (node = x + nx·y):
/// every grid edge (a, b) adds [[K, −K], [−K, K]] with K random SPD, every
/// node adds a random SPD "mass" block on its diagonal. The sum is SPD.
template <int B>
BlockContributions<B> grid_system(weft_test::Random& rng, int nx, int ny, double mass_floor = 0.5)
{
    BlockContributions<B> system;
    const auto node = [nx](int x, int y) { return x + nx * y; };
    for (int y = 0; y < ny; ++y) {
        for (int x = 0; x < nx; ++x) {
            for (int dir = 0; dir < 2; ++dir) {
                const int x1 = x + (dir == 0 ? 1 : 0);
                const int y1 = y + (dir == 1 ? 1 : 0);
                if (x1 >= nx || y1 >= ny) continue;
                const Eigen::Matrix<double, B, B> k = random_spd_block<B>(rng, 0.1);
                const weft::Index a = node(x, y);
                const weft::Index b = node(x1, y1);
                system.add(a, a, k);
                system.add(a, b, -k);
                system.add(b, a, -k);
                system.add(b, b, k);
            }
            system.add(node(x, y), node(x, y), random_spd_block<B>(rng, mass_floor));
        }
    }
    return system;
}

template <typename T>
thrust::device_vector<T> to_device(const std::vector<T>& values)
{
    return thrust::device_vector<T>(values.begin(), values.end());
}

inline thrust::device_vector<double> to_device(const Eigen::VectorXd& values)
{
    return thrust::device_vector<double>(values.data(), values.data() + values.size());
}

inline Eigen::VectorXd to_eigen_vector(const thrust::device_vector<double>& values)
{
    Eigen::VectorXd result(static_cast<Eigen::Index>(values.size()));
    thrust::copy(values.begin(), values.end(), result.data());
    return result;
}

inline Eigen::VectorXd random_vector(weft_test::Random& rng, Eigen::Index size, double lo = -1, double hi = 1)
{
    Eigen::VectorXd v(size);
    for (Eigen::Index i = 0; i < size; ++i) v(i) = rng.uniform(lo, hi);
    return v;
}

// Shared by the PCG, CHOLMOD and multilevel tests.

using SparseMatrix = Eigen::SparseMatrix<double>;

/// The grid spring network assembled by the backend, and its Eigen twin.
template <int B>
struct GridProblem {
    weft::Index nodes = 0;
    weft::BsrMatrix<double, B> a;
    SparseMatrix reference;
};

template <int B>
GridProblem<B> grid_problem(weft_test::Random& rng, int nx, int ny)
{
    GridProblem<B> problem;
    problem.nodes = nx * ny;
    const auto contributions = weft_backend_test::grid_system<B>(rng, nx, ny);
    const auto map = weft::AssemblyMap<B>::build(problem.nodes, contributions.coords, {});
    weft::assemble_matrix(map, to_device(contributions.blocks), problem.a);
    problem.reference = contributions.triplet_assembly(problem.nodes);
    return problem;
}

/// Selection of the entries where `keep` is true, as a #kept by n sparse matrix.
inline SparseMatrix selection(const std::vector<std::uint8_t>& keep)
{
    std::vector<Eigen::Triplet<double>> triplets;
    int row = 0;
    for (std::size_t i = 0; i < keep.size(); ++i) {
        if (keep[i]) triplets.emplace_back(row++, static_cast<int>(i), 1.0);
    }
    SparseMatrix p(row, static_cast<Eigen::Index>(keep.size()));
    p.setFromTriplets(triplets.begin(), triplets.end());
    return p;
}

inline Eigen::VectorXd sparse_ldlt_solve(const SparseMatrix& a, const Eigen::VectorXd& b)
{
    Eigen::SimplicialLDLT<SparseMatrix> ldlt(a);
    if (ldlt.info() != Eigen::Success) throw std::runtime_error("sparse_ldlt_solve: factorization failed");
    return ldlt.solve(b);
}

inline double relative_error(const Eigen::VectorXd& x, const Eigen::VectorXd& expected)
{
    return (x - expected).lpNorm<Eigen::Infinity>() / expected.lpNorm<Eigen::Infinity>();
}

/// Random filter: about `constrained_fraction` of DoFs constrained, plus all of node 0.
template <int B>
std::vector<std::uint8_t> random_filter(weft_test::Random& rng, weft::Index nodes, double constrained_fraction)
{
    std::vector<std::uint8_t> free_dofs(static_cast<std::size_t>(B * nodes), 1);
    for (auto& f : free_dofs) f = rng.uniform(0, 1) < constrained_fraction ? 0 : 1;
    for (int i = 0; i < B; ++i) free_dofs[static_cast<std::size_t>(i)] = 0;
    return free_dofs;
}

}  // namespace weft_backend_test
