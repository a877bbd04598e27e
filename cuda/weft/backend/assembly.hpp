#pragma once
/// @file assembly.hpp
/// Deterministic gather assembly of block-sparse matrices and block vectors.
///
/// Elements write their local results to a contribution buffer, one B×B block
/// (or one B-vector) per contribution, in any order and without atomics. An
/// AssemblyMap, built on the host from where each contribution goes, gives
/// every output block the list of its contributions in ascending contribution
/// index; each output entry is that list summed in that order (one thread per
/// entry on a GPU, per output block on CPU threads). The sum is therefore the
/// same, bit for bit, whatever the thread count or device. The
/// map depends only on topology: rebuild it when topology or the EIL node
/// assignment changes, not every step.
///
/// Buffer layouts:
///   matrix contributions : #matrix contributions · B·B scalars; contribution k
///                          is a row-major B×B block at [k·B·B, (k+1)·B·B)
///   vector contributions : #vector contributions · B scalars; contribution k
///                          at [k·B, (k+1)·B)

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>

#include <weft/backend/bsr_matrix.hpp>
#include <weft/core/config.hpp>
#include <weft/core/error.hpp>

namespace weft {

/// Where a B×B contribution goes: block row and block column (node indices).
struct BlockCoordinate {
    Index row;
    Index col;
};

namespace assembly_detail {

/// One entry e of the output: Σ over the entry's contributions, in the map's
/// fixed order, of the same entry of each contribution. `Stride` is B·B for
/// matrices and B for vectors. One thread per entry: the GPU's gather
/// (neighbouring threads read and write neighbouring entries).
template <typename T, int Stride>
struct GatherEntry {
    const Index* const source_ptr;  ///< #outputs + 1 offsets into sources
    const Index* const sources;     ///< contribution indices, grouped by output block
    const T* const buffer;          ///< #contributions · Stride

    WEFT_HD T operator()(std::size_t entry) const
    {
        const std::size_t block = entry / Stride;
        const std::size_t offset = entry % Stride;
        T sum = T(0);
        for (Index c = source_ptr[block]; c < source_ptr[block + 1]; ++c) {
            sum += buffer[static_cast<std::size_t>(sources[c]) * Stride + offset];
        }
        return sum;
    }
};

/// The same sums for all `Stride` entries of one output block, each in the
/// same order as GatherEntry (so the same bits): one thread per block, which
/// reads each contribution's indices once and its entries as one run. The
/// gather on CPU threads (benchmarks/RESULTS.md, "The assembly's gather by
/// blocks").
template <typename T, int Stride>
struct GatherBlock {
    const Index* const source_ptr;  ///< #outputs + 1 offsets into sources
    const Index* const sources;     ///< contribution indices, grouped by output block
    const T* const buffer;          ///< #contributions · Stride
    T* const output;                ///< #outputs · Stride
    const Index source_count;       ///< size of sources

    /// Contributions read ahead of the sum (prefetched on the host). The
    /// contributions lie in the elements' order, scattered relative to the
    /// output blocks: without it each one waits for memory, and the gather
    /// ran at an eighth of the machine's bandwidth, the same on one thread as
    /// on two (benchmarks/RESULTS.md, "The gather's contributions read ahead").
    static constexpr Index read_ahead = 8;

    WEFT_HD void operator()(Index block) const
    {
        T sum[Stride];
        for (int o = 0; o < Stride; ++o) sum[o] = T(0);
        for (Index c = source_ptr[block]; c < source_ptr[block + 1]; ++c) {
#if !defined(__CUDA_ARCH__) && (defined(__GNUC__) || defined(__clang__))
            if (c + read_ahead < source_count) {
                const char* ahead =
                    reinterpret_cast<const char*>(buffer + static_cast<std::size_t>(sources[c + read_ahead]) * Stride);
                for (std::size_t byte = 0; byte < Stride * sizeof(T); byte += 64) __builtin_prefetch(ahead + byte);
            }
#endif
            const T* contribution = buffer + static_cast<std::size_t>(sources[c]) * Stride;
            for (int o = 0; o < Stride; ++o) sum[o] += contribution[o];
        }
        T* out = output + static_cast<std::size_t>(block) * Stride;
        for (int o = 0; o < Stride; ++o) out[o] = sum[o];
    }
};

/// output = the gathered sums of `blocks` output blocks of `Stride` entries:
/// per entry on a GPU (GatherEntry), per block on CPU threads (GatherBlock);
/// the same bits either way. `output` must hold blocks · Stride entries.
template <int Stride, typename T>
void gather(Index blocks, const thrust::device_vector<Index>& source_ptr, const thrust::device_vector<Index>& sources,
            const thrust::device_vector<T>& buffer, thrust::device_vector<T>& output)
{
    const Index* ptr = thrust::raw_pointer_cast(source_ptr.data());
    const Index* src = thrust::raw_pointer_cast(sources.data());
    const T* values = thrust::raw_pointer_cast(buffer.data());
    if constexpr (backend_is_cuda()) {
        const std::size_t entries = static_cast<std::size_t>(blocks) * Stride;
        thrust::transform(thrust::device, thrust::counting_iterator<std::size_t>(0),
                          thrust::counting_iterator<std::size_t>(entries), output.begin(),
                          GatherEntry<T, Stride>{ptr, src, values});
    } else {
        thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(blocks),
                         GatherBlock<T, Stride>{ptr, src, values, thrust::raw_pointer_cast(output.data()),
                                                static_cast<Index>(sources.size())});
    }
}

inline Index checked_count(const char* field, std::size_t count)
{
    if (count > static_cast<std::size_t>(std::numeric_limits<Index>::max())) {
        throw InvalidInput(detail::describe(field, count, "exceeds the largest Index"));
    }
    return static_cast<Index>(count);
}

}  // namespace assembly_detail

/// Sparsity pattern plus, for each output block, its contributions in a fixed
/// order. B is the node block size (5 for yarns, 3 for triangles).
template <int B>
class AssemblyMap {
    static_assert(B >= 1, "block size must be positive");

public:
    static constexpr int block_size = B;

    /// Build the map on the host.
    /// @param[in] num_nodes             number of nodes (block rows and block columns)
    /// @param[in] matrix_contributions  #matrix contributions target blocks; repeats allowed
    /// @param[in] vector_contributions  #vector contributions target nodes; repeats allowed
    /// @return the map; the pattern holds the sorted unique targets and every
    ///         diagonal block (i, i), even one with no contribution
    /// @throws InvalidInput for a negative node count or a target outside [0, num_nodes)
    static AssemblyMap build(Index num_nodes, const std::vector<BlockCoordinate>& matrix_contributions,
                             const std::vector<Index>& vector_contributions)
    {
        if (num_nodes < 0) throw InvalidInput(detail::describe("AssemblyMap num_nodes", num_nodes, "must be >= 0"));
        const Index matrix_count = assembly_detail::checked_count("#matrix contributions", matrix_contributions.size());
        const Index vector_count = assembly_detail::checked_count("#vector contributions", vector_contributions.size());
        for (Index k = 0; k < matrix_count; ++k) {
            const BlockCoordinate& b = matrix_contributions[static_cast<std::size_t>(k)];
            if (b.row < 0 || b.row >= num_nodes || b.col < 0 || b.col >= num_nodes) {
                throw InvalidInput("invalid matrix contribution " + std::to_string(k) + " at block (" +
                                   std::to_string(b.row) + ", " + std::to_string(b.col) + "): must be in [0, " +
                                   std::to_string(num_nodes) + ")");
            }
        }
        for (Index k = 0; k < vector_count; ++k) {
            const Index node = vector_contributions[static_cast<std::size_t>(k)];
            if (node < 0 || node >= num_nodes) {
                throw InvalidInput("invalid vector contribution " + std::to_string(k) + " at node " +
                                   std::to_string(node) + ": must be in [0, " + std::to_string(num_nodes) + ")");
            }
        }

        AssemblyMap map;
        map.m_num_nodes = num_nodes;
        map.m_matrix_contributions = matrix_count;
        map.m_vector_contributions = vector_count;

        // Contributions sorted by target block; the stable sort keeps ascending
        // contribution index inside a block, which is the fixed summation order.
        std::vector<Index> order(static_cast<std::size_t>(matrix_count));
        std::iota(order.begin(), order.end(), Index(0));
        std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) {
            const BlockCoordinate& ca = matrix_contributions[static_cast<std::size_t>(a)];
            const BlockCoordinate& cb = matrix_contributions[static_cast<std::size_t>(b)];
            return ca.row < cb.row || (ca.row == cb.row && ca.col < cb.col);
        });
        std::vector<Index> row_ptr(static_cast<std::size_t>(num_nodes) + 1, 0);
        std::vector<Index> col_idx;
        std::vector<Index> source_ptr(1, 0);
        std::size_t c = 0;
        const auto target = [&](std::size_t sorted) -> const BlockCoordinate& {
            return matrix_contributions[static_cast<std::size_t>(order[sorted])];
        };
        for (Index i = 0; i < num_nodes; ++i) {
            bool has_diagonal = false;
            const auto push_empty_diagonal = [&] {
                col_idx.push_back(i);
                source_ptr.push_back(static_cast<Index>(c));
                has_diagonal = true;
            };
            while (c < order.size() && target(c).row == i) {
                const Index col = target(c).col;
                if (!has_diagonal && i < col) push_empty_diagonal();
                if (col == i) has_diagonal = true;
                while (c < order.size() && target(c).row == i && target(c).col == col) ++c;
                col_idx.push_back(col);
                source_ptr.push_back(static_cast<Index>(c));
            }
            if (!has_diagonal) push_empty_diagonal();
            row_ptr[static_cast<std::size_t>(i) + 1] = assembly_detail::checked_count("#blocks", col_idx.size());
        }

        // Vector contributions: a stable counting sort by node.
        std::vector<Index> node_ptr(static_cast<std::size_t>(num_nodes) + 1, 0);
        for (Index node : vector_contributions) ++node_ptr[static_cast<std::size_t>(node) + 1];
        std::partial_sum(node_ptr.begin(), node_ptr.end(), node_ptr.begin());
        std::vector<Index> node_sources(static_cast<std::size_t>(vector_count));
        std::vector<Index> cursor(node_ptr.begin(), node_ptr.end() - 1);
        for (Index k = 0; k < vector_count; ++k) {
            const auto node = static_cast<std::size_t>(vector_contributions[static_cast<std::size_t>(k)]);
            node_sources[static_cast<std::size_t>(cursor[node]++)] = k;
        }

        map.m_host_row_ptr = row_ptr;
        map.m_host_col_idx = col_idx;
        map.m_row_ptr.assign(row_ptr.begin(), row_ptr.end());
        map.m_col_idx.assign(col_idx.begin(), col_idx.end());
        map.m_block_source_ptr.assign(source_ptr.begin(), source_ptr.end());
        map.m_block_sources.assign(order.begin(), order.end());
        map.m_node_source_ptr.assign(node_ptr.begin(), node_ptr.end());
        map.m_node_sources.assign(node_sources.begin(), node_sources.end());
        return map;
    }

    /// Number of nodes (block rows = block columns).
    Index num_nodes() const { return m_num_nodes; }
    /// Number of stored blocks in the pattern.
    Index nonzero_blocks() const { return static_cast<Index>(m_host_col_idx.size()); }
    /// Number of B×B contributions the matrix buffer must hold.
    Index matrix_contributions() const { return m_matrix_contributions; }
    /// Number of B-vector contributions the vector buffer must hold.
    Index vector_contributions() const { return m_vector_contributions; }

    /// Position of block (row, col) in the pattern, or -1 if it is not stored (host lookup).
    Index find_block(Index row, Index col) const
    {
        if (row < 0 || row >= m_num_nodes) return -1;
        return bsr_find_block(m_host_row_ptr.data(), m_host_col_idx.data(), row, col);
    }

    /// num_nodes + 1 offsets into col_idx().
    const thrust::device_vector<Index>& row_ptr() const { return m_row_ptr; }
    /// #blocks block columns, sorted within each row.
    const thrust::device_vector<Index>& col_idx() const { return m_col_idx; }
    /// #blocks + 1 offsets into block_sources().
    const thrust::device_vector<Index>& block_source_ptr() const { return m_block_source_ptr; }
    /// #matrix contributions indices, grouped by pattern block, ascending within a block.
    const thrust::device_vector<Index>& block_sources() const { return m_block_sources; }
    /// num_nodes + 1 offsets into node_sources().
    const thrust::device_vector<Index>& node_source_ptr() const { return m_node_source_ptr; }
    /// #vector contributions indices, grouped by node, ascending within a node.
    const thrust::device_vector<Index>& node_sources() const { return m_node_sources; }

private:
    Index m_num_nodes = 0;
    Index m_matrix_contributions = 0;
    Index m_vector_contributions = 0;
    std::vector<Index> m_host_row_ptr = std::vector<Index>(1, 0);
    std::vector<Index> m_host_col_idx;
    thrust::device_vector<Index> m_row_ptr = thrust::device_vector<Index>(1, 0);
    thrust::device_vector<Index> m_col_idx;
    thrust::device_vector<Index> m_block_source_ptr = thrust::device_vector<Index>(1, 0);
    thrust::device_vector<Index> m_block_sources;
    thrust::device_vector<Index> m_node_source_ptr = thrust::device_vector<Index>(1, 0);
    thrust::device_vector<Index> m_node_sources;
};

/// A = Σ contributions, each entry summed in the map's fixed order (assembly_detail::gather).
/// A takes the map's pattern (copied every call, so a matrix can never be
/// left with a stale pattern after the map is rebuilt; no reallocation when
/// the sizes do not grow).
/// @param[in]  map            assembly map
/// @param[in]  contributions  #matrix contributions · B·B scalars (row-major blocks)
/// @param[out] a              num_nodes·B square BSR matrix
/// @throws InvalidInput if the buffer size does not match the map
template <typename T, int B>
void assemble_matrix(const AssemblyMap<B>& map, const thrust::device_vector<T>& contributions, BsrMatrix<T, B>& a)
{
    const std::size_t expected = static_cast<std::size_t>(map.matrix_contributions()) * (B * B);
    if (contributions.size() != expected) {
        throw InvalidInput(
            detail::describe("assemble_matrix contributions.size()", contributions.size(),
                             ("must equal #matrix contributions * B*B = " + std::to_string(expected)).c_str()));
    }
    a.assign_trusted_pattern(map.num_nodes(), map.num_nodes(), map.row_ptr(), map.col_idx());
    assembly_detail::gather<B * B>(map.nonzero_blocks(), map.block_source_ptr(), map.block_sources(), contributions,
                                   a.values());
}

/// f = Σ contributions, each entry summed in the map's fixed order (assembly_detail::gather).
/// @param[in]  map            assembly map
/// @param[in]  contributions  #vector contributions · B scalars
/// @param[out] f              num_nodes · B scalars (resized if needed)
/// @throws InvalidInput if the buffer size does not match the map
template <typename T, int B>
void assemble_vector(const AssemblyMap<B>& map, const thrust::device_vector<T>& contributions,
                     thrust::device_vector<T>& f)
{
    const std::size_t expected = static_cast<std::size_t>(map.vector_contributions()) * B;
    if (contributions.size() != expected) {
        throw InvalidInput(
            detail::describe("assemble_vector contributions.size()", contributions.size(),
                             ("must equal #vector contributions * B = " + std::to_string(expected)).c_str()));
    }
    if (&contributions == &f)
        throw InvalidInput("invalid assemble_vector arguments: f must not be the contribution buffer");
    f.resize(static_cast<std::size_t>(map.num_nodes()) * B);
    assembly_detail::gather<B>(map.num_nodes(), map.node_source_ptr(), map.node_sources(), contributions, f);
}

}  // namespace weft
