#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <set>
#include <type_traits>
#include <vector>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <weft/backend/bsr_matrix.hpp>
#include <weft/backend/pcg.hpp>

#include "backend/block_system.hpp"
#include "support/random.hpp"

using weft::BsrMatrix;
using weft::Index;
using weft_backend_test::random_vector;
using weft_backend_test::to_device;
using weft_backend_test::to_eigen_vector;
using weft_test::Random;

namespace {

/// Host arrays of a random block-sparse matrix (some rows left empty) and
/// the same matrix built independently, scalar by scalar, in Eigen.
template <int B>
struct RandomBsr {
    Index block_rows = 0;
    Index block_cols = 0;
    std::vector<Index> row_ptr{0};
    std::vector<Index> col_idx;
    std::vector<double> values;
    Eigen::SparseMatrix<double> reference;
};

template <int B>
RandomBsr<B> random_bsr(Random& rng, Index block_rows, Index block_cols, double density)
{
    RandomBsr<B> m;
    m.block_rows = block_rows;
    m.block_cols = block_cols;
    std::vector<Eigen::Triplet<double>> triplets;
    for (Index i = 0; i < block_rows; ++i) {
        const bool empty_row = rng.uniform(0, 1) < 0.1;
        for (Index j = 0; j < block_cols && !empty_row; ++j) {
            if (rng.uniform(0, 1) >= density) continue;
            m.col_idx.push_back(j);
            for (int r = 0; r < B; ++r) {
                for (int c = 0; c < B; ++c) {
                    const double value = rng.uniform(-2, 2);
                    m.values.push_back(value);
                    triplets.emplace_back(B * i + r, B * j + c, value);
                }
            }
        }
        m.row_ptr.push_back(static_cast<Index>(m.col_idx.size()));
    }
    m.reference.resize(B * block_rows, B * block_cols);
    m.reference.setFromTriplets(triplets.begin(), triplets.end());
    return m;
}

template <int B>
int check_spmv_against_eigen(Random& rng, Index block_rows, Index block_cols)
{
    const RandomBsr<B> m = random_bsr<B>(rng, block_rows, block_cols, 0.3);
    REQUIRE(!m.col_idx.empty());
    const BsrMatrix<double, B> a(m.block_rows, m.block_cols, m.row_ptr, m.col_idx, m.values);
    REQUIRE(a.rows() == B * block_rows);
    REQUIRE(a.cols() == B * block_cols);
    REQUIRE(a.nonzero_blocks() == static_cast<Index>(m.col_idx.size()));
    const Eigen::VectorXd x = random_vector(rng, B * block_cols);
    thrust::device_vector<double> y_device(3, 7.0);  // wrong size on purpose: spmv resizes
    weft::spmv(a, to_device(x), y_device);
    const Eigen::VectorXd y = to_eigen_vector(y_device);
    const Eigen::VectorXd expected = m.reference * x;
    REQUIRE(expected.norm() > 0);
    REQUIRE(y.size() == expected.size());
    CHECK((y - expected).lpNorm<Eigen::Infinity>() <= 1e-12 * expected.lpNorm<Eigen::Infinity>());
    return 1;
}

/// The GPU's thread mapping (one thread per scalar row) against the CPU's (one
/// per block row), both run here: y and the filtered product with its
/// curvature shares must be the same to the last bit (same summation order).
template <int B>
int check_row_mappings_agree(Random& rng, Index block_rows)
{
    const RandomBsr<B> m = random_bsr<B>(rng, block_rows, block_rows, 0.3);
    REQUIRE(!m.col_idx.empty());
    const BsrMatrix<double, B> a(m.block_rows, m.block_cols, m.row_ptr, m.col_idx, m.values);
    const Eigen::VectorXd x_host = random_vector(rng, B * block_rows);
    const thrust::device_vector<double> x = to_device(x_host);
    const double* xp = thrust::raw_pointer_cast(x.data());
    const auto first = thrust::counting_iterator<Index>(0);
    thrust::device_vector<double> by_block(a.rows(), -1.0), by_scalar(a.rows(), -2.0);
    thrust::for_each(
        thrust::device, first, first + a.block_rows(),
        weft::bsr_detail::BlockRowProduct<double, B>{a.view(), xp, thrust::raw_pointer_cast(by_block.data())});
    thrust::for_each(
        thrust::device, first, first + a.rows(),
        weft::bsr_detail::ScalarRowProduct<double, B>{a.view(), xp, thrust::raw_pointer_cast(by_scalar.data())});
    const Eigen::VectorXd yb = to_eigen_vector(by_block), ys = to_eigen_vector(by_scalar);
    REQUIRE(yb.norm() > 0);
    CHECK((yb - ys).lpNorm<Eigen::Infinity>() == 0.0);
    const Eigen::VectorXd reference = m.reference * x_host;
    CHECK((yb - reference).lpNorm<Eigen::Infinity>() <= 1e-12 * yb.lpNorm<Eigen::Infinity>());

    // The PCG's fused S A p and pᵀ S A S p, with every third DoF constrained.
    std::vector<std::uint8_t> free_host(static_cast<std::size_t>(a.rows()));
    for (std::size_t i = 0; i < free_host.size(); ++i) free_host[i] = i % 3 != 1;
    const thrust::device_vector<std::uint8_t> free_dofs(free_host.begin(), free_host.end());
    const std::uint8_t* fp = thrust::raw_pointer_cast(free_dofs.data());
    thrust::device_vector<double> qb(a.rows(), -1.0), qs(a.rows(), -2.0), node_shares(block_rows, -1.0),
        row_shares(a.rows(), -1.0);
    thrust::for_each(
        thrust::device, first, first + a.block_rows(),
        weft::pcg_detail::FilteredProductAndCurvature<double, B>{a.view(), fp, xp, thrust::raw_pointer_cast(qb.data()),
                                                                 thrust::raw_pointer_cast(node_shares.data())});
    thrust::for_each(
        thrust::device, first, first + a.rows(),
        weft::pcg_detail::FilteredRowProductAndCurvature<double, B>{
            a.view(), fp, xp, thrust::raw_pointer_cast(qs.data()), thrust::raw_pointer_cast(row_shares.data())});
    const Eigen::VectorXd qbh = to_eigen_vector(qb), qsh = to_eigen_vector(qs);
    CHECK((qbh - qsh).lpNorm<Eigen::Infinity>() == 0.0);
    for (std::size_t i = 0; i < free_host.size(); ++i)
        if (!free_host[i]) CHECK(qsh(static_cast<Eigen::Index>(i)) == 0.0);
    const double by_nodes = to_eigen_vector(node_shares).sum(), by_rows = to_eigen_vector(row_shares).sum();
    const double expected = x_host.dot(qbh);
    REQUIRE(std::abs(expected) > 0);
    CHECK(std::abs(by_nodes - expected) <= 1e-12 * std::abs(expected) * block_rows);
    CHECK(std::abs(by_rows - expected) <= 1e-12 * std::abs(expected) * block_rows);

    // The direction update p ← z + β p formed inside the product: the same
    // bits as xpby followed by the product, in both mappings; p_out holds
    // the new direction.
    const double beta = 0.37;
    const thrust::device_vector<double> z = to_device(random_vector(rng, B * block_rows));
    thrust::device_vector<double> p_updated = x;
    weft::xpby(z, beta, p_updated);
    thrust::device_vector<double> q_reference(a.rows(), -1.0), q_block(a.rows(), -2.0), q_scalar(a.rows(), -3.0),
        p_block(a.rows(), -4.0), p_scalar(a.rows(), -5.0);
    thrust::for_each(thrust::device, first, first + a.block_rows(),
                     weft::pcg_detail::FilteredProductAndCurvature<double, B>{
                         a.view(), fp, thrust::raw_pointer_cast(p_updated.data()),
                         thrust::raw_pointer_cast(q_reference.data()), thrust::raw_pointer_cast(node_shares.data())});
    const weft::pcg_detail::NextDirection<double> next{thrust::raw_pointer_cast(z.data()), xp, beta};
    thrust::for_each(
        thrust::device, first, first + a.block_rows(),
        weft::pcg_detail::FilteredProductAndCurvature<double, B, double, weft::pcg_detail::NextDirection<double>>{
            a.view(), fp, next, thrust::raw_pointer_cast(q_block.data()), thrust::raw_pointer_cast(node_shares.data()),
            thrust::raw_pointer_cast(p_block.data())});
    thrust::for_each(
        thrust::device, first, first + a.rows(),
        weft::pcg_detail::FilteredRowProductAndCurvature<double, B, double, weft::pcg_detail::NextDirection<double>>{
            a.view(), fp, next, thrust::raw_pointer_cast(q_scalar.data()), thrust::raw_pointer_cast(row_shares.data()),
            thrust::raw_pointer_cast(p_scalar.data())});
    const Eigen::VectorXd q_ref = to_eigen_vector(q_reference), p_ref = to_eigen_vector(p_updated);
    REQUIRE(q_ref.norm() > 0);
    CHECK((to_eigen_vector(q_block) - q_ref).lpNorm<Eigen::Infinity>() == 0.0);
    CHECK((to_eigen_vector(q_scalar) - q_ref).lpNorm<Eigen::Infinity>() == 0.0);
    CHECK((to_eigen_vector(p_block) - p_ref).lpNorm<Eigen::Infinity>() == 0.0);
    CHECK((to_eigen_vector(p_scalar) - p_ref).lpNorm<Eigen::Infinity>() == 0.0);
    return 1;
}

}  // namespace

TEST_CASE("bsr: the GPU's scalar-row SpMV and the CPU's block-row SpMV give the same bits", "[backend][bsr][spmv]")
{
    Random rng(97);
    int ran = 0;
    for (int trial = 0; trial < 4; ++trial) {
        ran += check_row_mappings_agree<3>(rng, 15 + 7 * trial);
        ran += check_row_mappings_agree<5>(rng, 11 + 5 * trial);
    }
    REQUIRE(ran == 8);
}

TEST_CASE("bsr: spmv equals Eigen's product on random block-sparse matrices (B = 3)", "[backend][bsr][spmv]")
{
    Random rng(31);
    int ran = 0;
    for (int trial = 0; trial < 5; ++trial) ran += check_spmv_against_eigen<3>(rng, 12 + trial, 9 + 2 * trial);
    ran += check_spmv_against_eigen<3>(rng, 20, 20);
    REQUIRE(ran == 6);
}

TEST_CASE("bsr: spmv equals Eigen's product on random block-sparse matrices (B = 5)", "[backend][bsr][spmv]")
{
    Random rng(53);
    int ran = 0;
    for (int trial = 0; trial < 5; ++trial) ran += check_spmv_against_eigen<5>(rng, 10 + trial, 14 - trial);
    ran += check_spmv_against_eigen<5>(rng, 30, 30);
    REQUIRE(ran == 6);
}

TEST_CASE("bsr: row_abs_sums equals Eigen's row sums of |A|, empty rows included", "[backend][bsr][spmv]")
{
    Random rng(71);
    int ran = 0;
    const auto check = [&](const auto& m, auto block) {
        constexpr int B = decltype(block)::value;
        const BsrMatrix<double, B> a(m.block_rows, m.block_cols, m.row_ptr, m.col_idx, m.values);
        thrust::device_vector<double> y(2, -1.0);  // wrong size on purpose: resized
        weft::row_abs_sums(a, y);
        const Eigen::VectorXd sums = to_eigen_vector(y);
        const Eigen::VectorXd expected = Eigen::MatrixXd(m.reference).cwiseAbs().rowwise().sum();
        REQUIRE(sums.size() == expected.size());
        REQUIRE(expected.maxCoeff() > 0);
        CHECK((sums - expected).lpNorm<Eigen::Infinity>() <= 1e-14 * expected.maxCoeff());
        CHECK(sums.minCoeff() == 0.0);  // random_bsr leaves about one row in ten empty
        ++ran;
    };
    check(random_bsr<3>(rng, 40, 30, 0.3), std::integral_constant<int, 3>{});
    check(random_bsr<5>(rng, 40, 40, 0.3), std::integral_constant<int, 5>{});
    REQUIRE(ran == 2);
}

TEST_CASE("bsr: empty block rows give zero rows in the product", "[backend][bsr][spmv]")
{
    // Block row 1 of 3 stores nothing.
    const std::vector<Index> row_ptr{0, 1, 1, 2};
    const std::vector<Index> col_idx{0, 1};
    std::vector<double> values(2 * 9);
    for (std::size_t k = 0; k < values.size(); ++k) values[k] = 1.0 + static_cast<double>(k);
    const BsrMatrix<double, 3> a(3, 2, row_ptr, col_idx, values);
    thrust::device_vector<double> x(6, 1.0);
    thrust::device_vector<double> y;
    weft::spmv(a, x, y);
    const Eigen::VectorXd result = to_eigen_vector(y);
    REQUIRE(result.size() == 9);
    CHECK(result.segment<3>(0).isApprox(Eigen::Vector3d(6, 15, 24)));
    CHECK(result.segment<3>(3).isZero(0));
    CHECK(result.segment<3>(6).isApprox(Eigen::Vector3d(33, 42, 51)));
}

TEST_CASE("bsr: has_pattern tells a kept pattern from a changed one, values aside", "[backend][bsr]")
{
    const std::vector<Index> row_ptr{0, 2, 3, 4};
    const std::vector<Index> col_idx{0, 2, 1, 2};
    BsrMatrix<double, 3> a(3, 3, row_ptr, col_idx);
    const thrust::device_vector<Index> kept_rows = a.row_ptr();
    const thrust::device_vector<Index> kept_cols = a.col_idx();
    CHECK(weft::has_pattern(a, kept_rows, kept_cols));
    thrust::fill(a.values().begin(), a.values().end(), 2.5);  // new values, same pattern
    CHECK(weft::has_pattern(a, kept_rows, kept_cols));

    // One column moved, same sizes.
    const BsrMatrix<double, 3> moved(3, 3, row_ptr, std::vector<Index>{0, 2, 0, 2});
    CHECK_FALSE(weft::has_pattern(moved, kept_rows, kept_cols));
    // One block more: the sizes differ.
    const BsrMatrix<double, 3> grown(3, 3, std::vector<Index>{0, 2, 3, 5}, std::vector<Index>{0, 2, 1, 1, 2});
    CHECK_FALSE(weft::has_pattern(grown, kept_rows, kept_cols));
    // The blocks moved between rows: same col_idx, other row_ptr.
    const BsrMatrix<double, 3> shifted(3, 3, std::vector<Index>{0, 1, 3, 4}, std::vector<Index>{0, 1, 2, 2});
    CHECK_FALSE(weft::has_pattern(shifted, kept_rows, thrust::device_vector<Index>(std::vector<Index>{0, 1, 2, 2})));
    CHECK(weft::has_pattern(shifted, shifted.row_ptr(), shifted.col_idx()));
}

TEST_CASE("bsr: to_eigen reproduces the stored blocks and to_bsr round-trips", "[backend][bsr][eigen]")
{
    Random rng(7);
    int compared = 0;
    for (int trial = 0; trial < 4; ++trial) {
        const RandomBsr<5> m = random_bsr<5>(rng, 8, 8, 0.4);
        const BsrMatrix<double, 5> a(m.block_rows, m.block_cols, m.row_ptr, m.col_idx, m.values);
        const Eigen::SparseMatrix<double> eigen = weft::to_eigen(a);
        REQUIRE(eigen.nonZeros() == static_cast<Eigen::Index>(m.values.size()));
        REQUIRE(m.reference.norm() > 0);
        CHECK(Eigen::MatrixXd(eigen - m.reference).isZero(0));

        const BsrMatrix<double, 5> back = weft::to_bsr<5>(eigen);
        // to_bsr adds every diagonal block of a square matrix; the values must still agree.
        std::set<Index> diagonal_missing;
        for (Index i = 0; i < m.block_rows; ++i) diagonal_missing.insert(i);
        for (Index i = 0; i < m.block_rows; ++i) {
            for (Index k = m.row_ptr[i]; k < m.row_ptr[i + 1]; ++k) {
                if (m.col_idx[k] == i) diagonal_missing.erase(i);
            }
        }
        REQUIRE(back.nonzero_blocks() == a.nonzero_blocks() + static_cast<Index>(diagonal_missing.size()));
        CHECK(Eigen::MatrixXd(weft::to_eigen(back) - m.reference).isZero(0));
        ++compared;
    }
    REQUIRE(compared == 4);
}

TEST_CASE("bsr: to_bsr keeps a rectangular matrix's values and adds no diagonal", "[backend][bsr][eigen]")
{
    Random rng(8);
    const RandomBsr<3> m = random_bsr<3>(rng, 4, 7, 0.5);
    const BsrMatrix<double, 3> a = weft::to_bsr<3>(m.reference);
    REQUIRE(a.block_rows() == 4);
    REQUIRE(a.block_cols() == 7);
    REQUIRE(a.nonzero_blocks() == static_cast<Index>(m.col_idx.size()));
    CHECK(Eigen::MatrixXd(weft::to_eigen(a) - m.reference).isZero(0));
}

TEST_CASE("bsr: inconsistent patterns and sizes are rejected", "[backend][bsr][input]")
{
    using Bsr = BsrMatrix<double, 3>;
    CHECK_THROWS_AS(Bsr(2, 2, {0, 1}, {0}), weft::InvalidInput);               // row_ptr too short
    CHECK_THROWS_AS(Bsr(2, 2, {0, 2, 1}, {0, 1}), weft::InvalidInput);         // decreasing offsets
    CHECK_THROWS_AS(Bsr(2, 2, {0, 2, 2}, {1, 0}), weft::InvalidInput);         // unsorted columns
    CHECK_THROWS_AS(Bsr(2, 2, {0, 2, 2}, {0, 0}), weft::InvalidInput);         // repeated column
    CHECK_THROWS_AS(Bsr(2, 2, {0, 1, 2}, {0, 2}), weft::InvalidInput);         // column out of range
    CHECK_THROWS_AS(Bsr(2, 2, {0, 1, 2}, {0, 1}, {1.0}), weft::InvalidInput);  // wrong value count
    CHECK_THROWS_AS(weft::to_bsr<3>(Eigen::SparseMatrix<double>(4, 6)), weft::InvalidInput);

    const Bsr a(2, 2, {0, 1, 2}, {0, 1});
    thrust::device_vector<double> x(5, 1.0);
    thrust::device_vector<double> y;
    CHECK_THROWS_AS(weft::spmv(a, x, y), weft::InvalidInput);
    thrust::device_vector<double> same(6, 1.0);
    CHECK_THROWS_AS(weft::spmv(a, same, same), weft::InvalidInput);
}
