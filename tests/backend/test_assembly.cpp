#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

#include <weft/backend/assembly.hpp>

#include "backend/block_system.hpp"
#include "support/random.hpp"
#include "support/threads.hpp"

using weft::AssemblyMap;
using weft::BsrMatrix;
using weft::Index;
using weft_backend_test::BlockContributions;
using weft_backend_test::to_device;
using weft_backend_test::to_eigen_vector;
using weft_test::Random;

namespace {

/// A grid spring network plus extra non-symmetric blocks, shuffled so that
/// contributions to one block are scattered through the buffer, with values
/// spread over many orders of magnitude so that the summation order shows in
/// the last bits.
template <int B>
BlockContributions<B> scattered_contributions(Random& rng, int nx, int ny)
{
    const BlockContributions<B> grid = weft_backend_test::grid_system<B>(rng, nx, ny);
    const Index nodes = nx * ny;
    BlockContributions<B> extra = grid;
    for (int k = 0; k < 3 * nodes; ++k) {
        Eigen::Matrix<double, B, B> block;
        for (int r = 0; r < B; ++r) {
            for (int c = 0; c < B; ++c) block(r, c) = rng.uniform(-1, 1) * std::pow(10.0, rng.uniform(-8, 8));
        }
        const auto row = static_cast<Index>(rng.uniform(0, nodes));
        const auto col = static_cast<Index>(rng.uniform(0, nodes));
        extra.add(std::min(row, nodes - 1), std::min(col, nodes - 1), block);
    }
    std::vector<std::size_t> order(extra.coords.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    for (std::size_t i = order.size() - 1; i > 0; --i) {
        const auto j = std::min(i, static_cast<std::size_t>(rng.uniform(0, static_cast<double>(i + 1))));
        std::swap(order[i], order[j]);
    }
    BlockContributions<B> shuffled;
    for (std::size_t k : order) {
        Eigen::Matrix<double, B, B> block;
        for (int r = 0; r < B; ++r) {
            for (int c = 0; c < B; ++c) block(r, c) = extra.blocks[k * B * B + r * B + c];
        }
        shuffled.add(extra.coords[k].row, extra.coords[k].col, block);
    }
    return shuffled;
}

/// Random vector contributions: node list and #contributions · B values.
template <int B>
std::pair<std::vector<Index>, std::vector<double>> random_vector_contributions(Random& rng, Index nodes, int count)
{
    std::vector<Index> targets;
    std::vector<double> values;
    for (int k = 0; k < count; ++k) {
        targets.push_back(std::min(static_cast<Index>(rng.uniform(0, nodes)), nodes - 1));
        for (int i = 0; i < B; ++i) values.push_back(rng.uniform(-1, 1) * std::pow(10.0, rng.uniform(-8, 8)));
    }
    return {targets, values};
}

template <int B>
Eigen::VectorXd straightforward_vector(Index nodes, const std::vector<Index>& targets,
                                       const std::vector<double>& values)
{
    Eigen::VectorXd f = Eigen::VectorXd::Zero(B * nodes);
    for (std::size_t k = 0; k < targets.size(); ++k) {
        for (int i = 0; i < B; ++i) f(B * targets[k] + i) += values[k * B + i];
    }
    return f;
}

template <int B>
int check_assembly_against_triplets(Random& rng, int nx, int ny)
{
    const Index nodes = nx * ny;
    const BlockContributions<B> contributions = scattered_contributions<B>(rng, nx, ny);
    const auto vectors = random_vector_contributions<B>(rng, nodes, 4 * nodes);
    const AssemblyMap<B> map = AssemblyMap<B>::build(nodes, contributions.coords, vectors.first);
    REQUIRE(map.matrix_contributions() == static_cast<Index>(contributions.coords.size()));
    REQUIRE(map.vector_contributions() == static_cast<Index>(vectors.first.size()));

    BsrMatrix<double, B> a;
    weft::assemble_matrix(map, to_device(contributions.blocks), a);
    const Eigen::SparseMatrix<double> expected = contributions.triplet_assembly(nodes);
    const Eigen::MatrixXd difference = Eigen::MatrixXd(weft::to_eigen(a) - expected);
    const double scale = Eigen::MatrixXd(expected).cwiseAbs().maxCoeff();
    REQUIRE(scale > 0);
    CHECK(difference.cwiseAbs().maxCoeff() <= 1e-15 * scale);

    // The pattern is exactly the set of targets plus every diagonal block.
    std::set<std::pair<Index, Index>> targets;
    for (const auto& c : contributions.coords) targets.insert({c.row, c.col});
    for (Index i = 0; i < nodes; ++i) targets.insert({i, i});
    REQUIRE(map.nonzero_blocks() == static_cast<Index>(targets.size()));
    REQUIRE(a.nonzero_blocks() == map.nonzero_blocks());
    int found = 0;
    for (const auto& t : targets) found += map.find_block(t.first, t.second) >= 0 ? 1 : 0;
    REQUIRE(found == static_cast<int>(targets.size()));

    thrust::device_vector<double> f;
    weft::assemble_vector(map, to_device(vectors.second), f);
    const Eigen::VectorXd f_expected = straightforward_vector<B>(nodes, vectors.first, vectors.second);
    REQUIRE(f_expected.norm() > 0);
    CHECK((to_eigen_vector(f) - f_expected).lpNorm<Eigen::Infinity>() <= 1e-15 * f_expected.lpNorm<Eigen::Infinity>());
    return 1;
}

/// Assemble with a given OpenMP thread count; host copies of A's values and f.
template <int B>
std::pair<std::vector<double>, std::vector<double>> assemble_with_threads(int threads, const AssemblyMap<B>& map,
                                                                          const std::vector<double>& matrix_buffer,
                                                                          const std::vector<double>& vector_buffer)
{
    const int previous = weft_test::max_threads();
    weft_test::set_threads(threads);
    BsrMatrix<double, B> a;
    thrust::device_vector<double> f;
    weft::assemble_matrix(map, to_device(matrix_buffer), a);
    weft::assemble_vector(map, to_device(vector_buffer), f);
    weft_test::set_threads(previous);
    return {weft::to_host(a.values()), weft::to_host(f)};
}

template <int B>
int check_bitwise_determinism(Random& rng, int nx, int ny)
{
    const Index nodes = nx * ny;
    const BlockContributions<B> contributions = scattered_contributions<B>(rng, nx, ny);
    const auto vectors = random_vector_contributions<B>(rng, nodes, 6 * nodes);
    const AssemblyMap<B> map = AssemblyMap<B>::build(nodes, contributions.coords, vectors.first);
    const auto one = assemble_with_threads<B>(1, map, contributions.blocks, vectors.second);
    const auto two = assemble_with_threads<B>(2, map, contributions.blocks, vectors.second);
    const auto four = assemble_with_threads<B>(4, map, contributions.blocks, vectors.second);
    REQUIRE(one.first.size() == static_cast<std::size_t>(map.nonzero_blocks()) * B * B);
    REQUIRE(one.second.size() == static_cast<std::size_t>(nodes) * B);
    REQUIRE(two.first.size() == one.first.size());
    REQUIRE(four.first.size() == one.first.size());
    REQUIRE(two.second.size() == one.second.size());
    REQUIRE(four.second.size() == one.second.size());
    const std::size_t matrix_bytes = one.first.size() * sizeof(double);
    const std::size_t vector_bytes = one.second.size() * sizeof(double);
    CHECK(std::memcmp(one.first.data(), two.first.data(), matrix_bytes) == 0);
    CHECK(std::memcmp(one.first.data(), four.first.data(), matrix_bytes) == 0);
    CHECK(std::memcmp(one.second.data(), two.second.data(), vector_bytes) == 0);
    CHECK(std::memcmp(one.second.data(), four.second.data(), vector_bytes) == 0);
    return 1;
}

/// The GPU's gather (one thread per entry, GatherEntry) and the CPU threads'
/// (one per output block, GatherBlock), run here on CPU threads: the same
/// bits for the matrix and the vector.
template <int B>
int check_entry_and_block_gathers(Random& rng, int nx, int ny)
{
    const Index nodes = nx * ny;
    const BlockContributions<B> contributions = scattered_contributions<B>(rng, nx, ny);
    const auto vectors = random_vector_contributions<B>(rng, nodes, 5 * nodes);
    const AssemblyMap<B> map = AssemblyMap<B>::build(nodes, contributions.coords, vectors.first);
    int compared = 0;  // bit comparisons that ran
    const auto both = [&compared](Index blocks, const auto& source_ptr, const auto& sources,
                                  const std::vector<double>& host, auto stride) {
        constexpr int S = decltype(stride)::value;
        const thrust::device_vector<double> buffer = to_device(host);
        const std::size_t entries = static_cast<std::size_t>(blocks) * S;
        thrust::device_vector<double> by_entry(entries), by_block(entries);
        const Index* ptr = thrust::raw_pointer_cast(source_ptr.data());
        const Index* src = thrust::raw_pointer_cast(sources.data());
        const double* values = thrust::raw_pointer_cast(buffer.data());
        thrust::transform(thrust::device, thrust::counting_iterator<std::size_t>(0),
                          thrust::counting_iterator<std::size_t>(entries), by_entry.begin(),
                          weft::assembly_detail::GatherEntry<double, S>{ptr, src, values});
        thrust::for_each(
            thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(blocks),
            weft::assembly_detail::GatherBlock<double, S>{ptr, src, values, thrust::raw_pointer_cast(by_block.data()),
                                                          static_cast<Index>(sources.size())});
        const std::vector<double> a = weft::to_host(by_entry);
        const std::vector<double> b = weft::to_host(by_block);
        REQUIRE(a.size() == entries);
        REQUIRE(b.size() == entries);
        CHECK(std::any_of(a.begin(), a.end(), [](double v) { return v != 0.0; }));
        CHECK(std::memcmp(a.data(), b.data(), entries * sizeof(double)) == 0);
        ++compared;
        return a;
    };
    const std::vector<double> matrix_bits = both(map.nonzero_blocks(), map.block_source_ptr(), map.block_sources(),
                                                 contributions.blocks, std::integral_constant<int, B * B>{});
    const std::vector<double> vector_bits = both(map.num_nodes(), map.node_source_ptr(), map.node_sources(),
                                                 vectors.second, std::integral_constant<int, B>{});

    // And assemble_matrix / assemble_vector give those bits.
    BsrMatrix<double, B> a;
    weft::assemble_matrix(map, to_device(contributions.blocks), a);
    thrust::device_vector<double> f;
    weft::assemble_vector(map, to_device(vectors.second), f);
    const std::vector<double> assembled = weft::to_host(a.values());
    const std::vector<double> f_assembled = weft::to_host(f);
    REQUIRE(assembled.size() == matrix_bits.size());
    REQUIRE(f_assembled.size() == vector_bits.size());
    CHECK(std::memcmp(assembled.data(), matrix_bits.data(), matrix_bits.size() * sizeof(double)) == 0);
    ++compared;
    CHECK(std::memcmp(f_assembled.data(), vector_bits.data(), vector_bits.size() * sizeof(double)) == 0);
    ++compared;
    return compared;
}

}  // namespace

TEST_CASE("assembly: assembled matrix and vector equal a triplet assembly of the same contributions (B = 3)",
          "[backend][assembly]")
{
    Random rng(3);
    int ran = 0;
    ran += check_assembly_against_triplets<3>(rng, 6, 5);
    ran += check_assembly_against_triplets<3>(rng, 1, 9);
    REQUIRE(ran == 2);
}

TEST_CASE("assembly: assembled matrix and vector equal a triplet assembly of the same contributions (B = 5)",
          "[backend][assembly]")
{
    Random rng(5);
    int ran = 0;
    ran += check_assembly_against_triplets<5>(rng, 7, 4);
    ran += check_assembly_against_triplets<5>(rng, 12, 1);
    REQUIRE(ran == 2);
}

TEST_CASE("assembly: results are bit-for-bit identical with 1, 2 and 4 threads", "[backend][assembly][determinism]")
{
    Random rng(11);
    int ran = 0;
    ran += check_bitwise_determinism<3>(rng, 20, 15);
    ran += check_bitwise_determinism<5>(rng, 16, 16);
    REQUIRE(ran == 2);
}

TEST_CASE("assembly: the GPU's gather by entries and the CPU's gather by blocks give the same bits",
          "[backend][assembly][determinism]")
{
    Random rng(17);
    int ran = 0;
    ran += check_entry_and_block_gathers<3>(rng, 11, 9);
    ran += check_entry_and_block_gathers<5>(rng, 9, 8);
    REQUIRE(ran == 8);  // per block size: both gathers of the matrix and the vector, then the assembled ones
}

TEST_CASE("assembly: summation follows ascending contribution index within each block",
          "[backend][assembly][determinism]")
{
    // (1e16 + 1) − 1e16 = 0 but (1e16 − 1e16) + 1 = 1 in double: the order shows.
    const std::vector<weft::BlockCoordinate> coords{{0, 0}, {0, 0}, {0, 0}};
    const std::vector<double> buffer{1e16, 1.0, -1e16};
    const AssemblyMap<1> map = AssemblyMap<1>::build(1, coords, {0, 0, 0});
    BsrMatrix<double, 1> a;
    weft::assemble_matrix(map, to_device(buffer), a);
    thrust::device_vector<double> f;
    weft::assemble_vector(map, to_device(buffer), f);
    const double expected = (1e16 + 1.0) + -1e16;
    REQUIRE(expected != 1.0);
    CHECK(weft::to_host(a.values()) == std::vector<double>{expected});
    CHECK(weft::to_host(f) == std::vector<double>{expected});
}

TEST_CASE("assembly: the pattern holds every diagonal block, zero where nothing contributes",
          "[backend][assembly][pattern]")
{
    // Node 1 and node 3 receive no diagonal contribution; node 4 none at all.
    const std::vector<weft::BlockCoordinate> coords{{0, 0}, {0, 1}, {1, 0}, {2, 2}, {3, 0}, {3, 2}, {2, 3}};
    const Index nodes = 5;
    std::vector<double> buffer;
    for (std::size_t k = 0; k < coords.size() * 9; ++k) buffer.push_back(1.0 + static_cast<double>(k));
    const AssemblyMap<3> map = AssemblyMap<3>::build(nodes, coords, {});
    REQUIRE(map.nonzero_blocks() == 7 + 3);
    BsrMatrix<double, 3> a;
    weft::assemble_matrix(map, to_device(buffer), a);
    const Eigen::MatrixXd dense(weft::to_eigen(a));
    int diagonals = 0;
    for (Index i = 0; i < nodes; ++i) {
        REQUIRE(map.find_block(i, i) >= 0);
        ++diagonals;
    }
    REQUIRE(diagonals == nodes);
    CHECK(dense.block<3, 3>(3, 3).isZero(0));
    CHECK(dense.block<3, 3>(9, 9).isZero(0));
    CHECK(dense.block<3, 3>(12, 12).isZero(0));
    CHECK(dense.block<3, 3>(6, 6)(0, 0) == 28.0);  // contribution 3, first entry
    CHECK(map.find_block(1, 2) == -1);
    CHECK(map.find_block(4, 0) == -1);

    // Columns are sorted within each row: (3, 0) < (3, 2) < (3, 3).
    const std::vector<Index> col_idx = weft::to_host(map.col_idx());
    const std::vector<Index> row_ptr = weft::to_host(map.row_ptr());
    REQUIRE(row_ptr == std::vector<Index>{0, 2, 4, 6, 9, 10});
    CHECK(col_idx == std::vector<Index>{0, 1, 0, 1, 2, 3, 0, 2, 3, 4});
}

TEST_CASE("assembly: rebuilding the map for a new topology replaces the matrix pattern", "[backend][assembly][pattern]")
{
    const std::vector<double> ones(2 * 4, 1.0);
    const AssemblyMap<2> first = AssemblyMap<2>::build(3, {{0, 1}, {1, 0}}, {});
    const AssemblyMap<2> second = AssemblyMap<2>::build(3, {{1, 2}, {2, 1}}, {});
    REQUIRE(first.nonzero_blocks() == second.nonzero_blocks());
    BsrMatrix<double, 2> a;
    weft::assemble_matrix(first, to_device(ones), a);
    weft::assemble_matrix(second, to_device(ones), a);
    const Eigen::MatrixXd dense(weft::to_eigen(a));
    REQUIRE(dense.sum() == 8.0);
    CHECK(dense.block<2, 2>(0, 2).isZero(0));
    CHECK(dense.block<2, 2>(2, 4).isOnes(0));
    CHECK(dense.block<2, 2>(4, 2).isOnes(0));
}

TEST_CASE("assembly: out-of-range targets and mismatched buffers are rejected", "[backend][assembly][input]")
{
    CHECK_THROWS_AS(AssemblyMap<3>::build(2, {{0, 2}}, {}), weft::InvalidInput);
    CHECK_THROWS_AS(AssemblyMap<3>::build(2, {{-1, 0}}, {}), weft::InvalidInput);
    CHECK_THROWS_AS(AssemblyMap<3>::build(2, {}, {2}), weft::InvalidInput);
    CHECK_THROWS_AS(AssemblyMap<3>::build(-1, {}, {}), weft::InvalidInput);

    const AssemblyMap<3> map = AssemblyMap<3>::build(2, {{0, 1}}, {1, 1});
    BsrMatrix<double, 3> a;
    thrust::device_vector<double> f;
    CHECK_THROWS_AS(weft::assemble_matrix(map, thrust::device_vector<double>(8), a), weft::InvalidInput);
    CHECK_THROWS_AS(weft::assemble_vector(map, thrust::device_vector<double>(3), f), weft::InvalidInput);
    CHECK_NOTHROW(weft::assemble_matrix(map, thrust::device_vector<double>(9), a));
    CHECK_NOTHROW(weft::assemble_vector(map, thrust::device_vector<double>(6), f));
}
