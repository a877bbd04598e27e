#pragma once
// Random block systems for the backend tests: lists of B×B contributions as
// elements would write them, and the same data as Eigen matrices (oracles).
#include <cstddef>
#include <vector>

#include <thrust/device_vector.h>
#include <Eigen/Dense>
#include <Eigen/Sparse>

#include <weft/backend/assembly.hpp>

#include "support/random.hpp"

namespace weft_backend_test {

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

}  // namespace weft_backend_test
