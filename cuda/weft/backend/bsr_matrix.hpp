#pragma once
/// @file bsr_matrix.hpp
/// Block-sparse-row (BSR) matrix on the Thrust device system, with a
/// deterministic SpMV and conversions to and from Eigen (host copies).
///
/// Layout, for a matrix of `block_rows` by `block_cols` blocks of size B×B:
///   row_ptr  : block_rows + 1 offsets into col_idx (row_ptr[0] = 0)
///   col_idx  : #blocks block-column indices, strictly increasing in each row
///   values   : #blocks · B·B scalars; block k is row-major at [k·B·B, (k+1)·B·B)
/// Scalar (row, col) = (B·block_row + r, B·block_col + c) lies at
/// values[k·B·B + r·B + c].

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>
#include <Eigen/Sparse>

#include <weft/backend/device.hpp>
#include <weft/backend/vector_ops.hpp>
#include <weft/core/config.hpp>
#include <weft/core/error.hpp>

namespace weft {

/// Raw, read-only view of a BSR matrix for use inside kernels.
template <typename T, int B>
struct BsrConstView {
    Index block_rows;
    Index block_cols;
    const Index* row_ptr;  ///< block_rows + 1
    const Index* col_idx;  ///< #blocks
    const T* values;       ///< #blocks · B·B, row-major blocks
};

/// Position of block (row, col) in a BSR pattern (binary search in the row,
/// whose columns are sorted), or -1 when the block is not stored.
WEFT_HD inline Index bsr_find_block(const Index* row_ptr, const Index* col_idx, Index row, Index col)
{
    Index lo = row_ptr[row];
    Index hi = row_ptr[row + 1];
    while (lo < hi) {
        const Index mid = lo + (hi - lo) / 2;
        if (col_idx[mid] < col) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return (lo < row_ptr[row + 1] && col_idx[lo] == col) ? lo : Index(-1);
}

/// Block-sparse-row matrix of B×B blocks whose arrays live in Thrust device
/// vectors (GPU memory under CUDA, host memory under OpenMP).
template <typename T, int B>
class BsrMatrix {
    static_assert(B >= 1, "block size must be positive");

public:
    using Scalar = T;
    static constexpr int block_size = B;
    static constexpr int block_entries = B * B;

    /// An empty 0×0 matrix.
    BsrMatrix() = default;

    /// Matrix with a validated pattern and the given values (zeros if `values` is empty).
    /// @param[in] block_rows  number of block rows
    /// @param[in] block_cols  number of block columns
    /// @param[in] row_ptr     block_rows + 1 non-decreasing offsets, row_ptr[0] = 0
    /// @param[in] col_idx     row_ptr.back() block columns, strictly increasing in each row
    /// @param[in] values      col_idx.size() · B·B row-major block entries, or empty
    /// @throws InvalidInput   if the arrays are inconsistent or out of range
    BsrMatrix(Index block_rows, Index block_cols, const std::vector<Index>& row_ptr, const std::vector<Index>& col_idx,
              const std::vector<T>& values = {})
    {
        set_pattern(block_rows, block_cols, row_ptr, col_idx);
        if (!values.empty()) {
            if (values.size() != m_values.size()) {
                throw InvalidInput(
                    detail::describe("BsrMatrix values.size()", values.size(),
                                     ("must equal #blocks * B*B = " + std::to_string(m_values.size())).c_str()));
            }
            thrust::copy(values.begin(), values.end(), m_values.begin());
        }
    }

    /// Replace the pattern (validated on the host); all values become zero.
    /// Arguments as in the constructor.
    void set_pattern(Index block_rows, Index block_cols, const std::vector<Index>& row_ptr,
                     const std::vector<Index>& col_idx)
    {
        if (block_rows < 0) throw InvalidInput(detail::describe("BsrMatrix block_rows", block_rows, "must be >= 0"));
        if (block_cols < 0) throw InvalidInput(detail::describe("BsrMatrix block_cols", block_cols, "must be >= 0"));
        if (row_ptr.size() != static_cast<std::size_t>(block_rows) + 1) {
            throw InvalidInput(
                detail::describe("BsrMatrix row_ptr.size()", row_ptr.size(), "must equal block_rows + 1"));
        }
        if (row_ptr.front() != 0)
            throw InvalidInput(detail::describe("BsrMatrix row_ptr[0]", row_ptr.front(), "must be 0"));
        if (row_ptr.back() < 0 || static_cast<std::size_t>(row_ptr.back()) != col_idx.size()) {
            throw InvalidInput(
                detail::describe("BsrMatrix row_ptr.back()", row_ptr.back(), "must equal col_idx.size()"));
        }
        for (Index i = 0; i < block_rows; ++i) {
            if (row_ptr[i + 1] < row_ptr[i]) {
                throw InvalidInput(detail::describe("BsrMatrix row_ptr", i + 1, "offsets must be non-decreasing"));
            }
            for (Index k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
                if (col_idx[k] < 0 || col_idx[k] >= block_cols) {
                    throw InvalidInput(detail::describe("BsrMatrix col_idx", col_idx[k], "must be in [0, block_cols)"));
                }
                if (k > row_ptr[i] && !(col_idx[k - 1] < col_idx[k])) {
                    throw InvalidInput(detail::describe("BsrMatrix col_idx", col_idx[k],
                                                        "block columns must be strictly increasing within a row"));
                }
            }
        }
        m_block_rows = block_rows;
        m_block_cols = block_cols;
        m_row_ptr.assign(row_ptr.begin(), row_ptr.end());
        m_col_idx.assign(col_idx.begin(), col_idx.end());
        m_values.assign(col_idx.size() * block_entries, T(0));
    }

    /// Replace the pattern by a copy of device arrays that the caller
    /// guarantees valid (as produced by AssemblyMap); values are resized to
    /// match and left unspecified. No reallocation when sizes do not grow.
    void assign_trusted_pattern(Index block_rows, Index block_cols, const thrust::device_vector<Index>& row_ptr,
                                const thrust::device_vector<Index>& col_idx)
    {
        m_block_rows = block_rows;
        m_block_cols = block_cols;
        m_row_ptr.resize(row_ptr.size());
        thrust::copy(row_ptr.begin(), row_ptr.end(), m_row_ptr.begin());
        m_col_idx.resize(col_idx.size());
        thrust::copy(col_idx.begin(), col_idx.end(), m_col_idx.begin());
        m_values.resize(col_idx.size() * block_entries);
    }

    /// Replace pattern and values by copies of host arrays that the caller
    /// guarantees valid (as a compressed Eigen row-major matrix's): row_ptr
    /// has block_rows + 1 entries, col_idx row_ptr[block_rows], values B·B
    /// per block. Nothing is validated, and the values are not zero-filled first.
    void assign_trusted(Index block_rows, Index block_cols, const Index* row_ptr, const Index* col_idx, const T* values)
    {
        const std::size_t blocks = static_cast<std::size_t>(row_ptr[block_rows]);
        m_block_rows = block_rows;
        m_block_cols = block_cols;
        m_row_ptr.assign(row_ptr, row_ptr + block_rows + 1);
        m_col_idx.assign(col_idx, col_idx + blocks);
        m_values.assign(values, values + blocks * block_entries);
    }

    /// Set every stored value to zero (pattern kept).
    void set_zero() { thrust::fill(m_values.begin(), m_values.end(), T(0)); }

    Index block_rows() const { return m_block_rows; }
    Index block_cols() const { return m_block_cols; }
    /// Scalar rows: B · block_rows.
    Index rows() const { return B * m_block_rows; }
    /// Scalar columns: B · block_cols.
    Index cols() const { return B * m_block_cols; }
    /// Number of stored B×B blocks.
    Index nonzero_blocks() const { return static_cast<Index>(m_col_idx.size()); }

    /// block_rows + 1 offsets into col_idx().
    const thrust::device_vector<Index>& row_ptr() const { return m_row_ptr; }
    /// #blocks block-column indices.
    const thrust::device_vector<Index>& col_idx() const { return m_col_idx; }
    /// #blocks · B·B values, row-major blocks.
    const thrust::device_vector<T>& values() const { return m_values; }
    /// Writable values (the pattern stays fixed).
    thrust::device_vector<T>& values() { return m_values; }

    /// Raw pointers for kernels; valid until the pattern changes.
    BsrConstView<T, B> view() const { return view_with(m_values); }

    /// This pattern with other values of the same layout, e.g. a float copy
    /// of values() (bsr_detail::round_to_float).
    /// @throws InvalidInput when `values` is not #blocks · B·B long
    template <typename TV>
    BsrConstView<TV, B> view_with(const thrust::device_vector<TV>& values) const
    {
        if (values.size() != m_values.size()) {
            throw InvalidInput(
                detail::describe("BsrMatrix::view_with values.size()", values.size(),
                                 ("must equal the matrix's #blocks * B * B = " + std::to_string(m_values.size()) +
                                  " (a copy made for an earlier pattern?)")
                                     .c_str()));
        }
        return {m_block_rows, m_block_cols, thrust::raw_pointer_cast(m_row_ptr.data()),
                thrust::raw_pointer_cast(m_col_idx.data()), thrust::raw_pointer_cast(values.data())};
    }

private:
    Index m_block_rows = 0;
    Index m_block_cols = 0;
    thrust::device_vector<Index> m_row_ptr = thrust::device_vector<Index>(1, 0);
    thrust::device_vector<Index> m_col_idx;
    thrust::device_vector<T> m_values;
};

/// How the matrix–vector kernels map threads to rows. On a GPU: one thread per
/// scalar row, so that the B threads of a block row read each B×B block as one
/// contiguous span (coalesced loads; one thread per block row streams 200-byte
/// blocks per thread and measured 0.6 TB/s on an H100 at 10⁶ yarn nodes). On
/// CPU threads: one per block row, each thread streaming its own blocks. Both
/// sum a row in the same order, so y is the same to the last bit.
inline constexpr bool spmv_scalar_rows = backend_is_cuda();

namespace bsr_detail {

/// A value rounded to float (an entry beyond float's range becomes infinite).
template <typename T>
struct ToFloat {
    WEFT_HD float operator()(const T& value) const { return static_cast<float>(value); }
};

/// out = values rounded to float (resized to match): the float copies of a
/// matrix's values or of a preconditioner's factors.
template <typename T>
void round_to_float(const thrust::device_vector<T>& values, thrust::device_vector<float>& out)
{
    out.resize(values.size());
    thrust::transform(thrust::device, values.begin(), values.end(), out.begin(), ToFloat<T>{});
}

/// sum = Σ_{k ∈ [begin, end)} A_k x_{col_idx[k]}: the blocks of one block
/// row given by their columns and row-major values, summed in that order, each
/// entry widened from TA to T before its product. X is a pointer to T or
/// anything that gives entry i of x as x[i] (e.g. a vector formed on the fly).
template <typename TA, typename X, typename T, int B>
WEFT_HD inline void block_range_product(const Index* col_idx, const TA* values, Index begin, Index end, const X& x,
                                        T (&sum)[B])
{
    for (int r = 0; r < B; ++r) sum[r] = T(0);
    for (Index k = begin; k < end; ++k) {
        const TA* block = values + static_cast<std::size_t>(k) * (B * B);
        const std::size_t column = static_cast<std::size_t>(col_idx[k]) * B;
        T xk[B];
        for (int c = 0; c < B; ++c) xk[c] = x[column + c];
        for (int r = 0; r < B; ++r) {
            for (int c = 0; c < B; ++c) sum[r] += static_cast<T>(block[r * B + c]) * xk[c];
        }
    }
}

/// sum = Σ_k A_ik x_k for block row i, summed in stored (column) order. The
/// matrix's scalar TA may be narrower than the vectors' T (a float copy of a
/// double matrix, PcgOptions::single_precision_matrix): each entry is widened
/// to T before its product, so the sums are T's.
template <typename TA, typename X, typename T, int B>
WEFT_HD inline void block_row_product(const BsrConstView<TA, B>& a, const X& x, Index row, T (&sum)[B])
{
    block_range_product(a.col_idx, a.values, a.row_ptr[row], a.row_ptr[row + 1], x, sum);
}

/// w = S (r − A z) for one block row (z is zero on constrained DoFs), A's
/// values stored as TA and widened to T in the products.
template <typename T, int B, typename TA = T>
struct FilteredResidual {
    const BsrConstView<TA, B> a;
    const std::uint8_t* const free_dofs;  ///< #DoFs
    const T* const r;                     ///< #DoFs
    const T* const z;                     ///< #DoFs
    T* const w;                           ///< #DoFs

    WEFT_HD void operator()(Index row) const
    {
        T product[B];
        block_row_product(a, z, row, product);
        store(row, product);
    }

    /// The same for block row `row` with its blocks read from a copy of them
    /// (columns and values at [begin, end) of `col_idx` and `values`, in the
    /// row's stored order): the same bits as operator()(row).
    WEFT_HD void from_copy(Index row, const Index* col_idx, const TA* values, Index begin, Index end) const
    {
        T product[B];
        block_range_product(col_idx, values, begin, end, z, product);
        store(row, product);
    }

    WEFT_HD void store(Index row, const T (&product)[B]) const
    {
        const std::size_t offset = static_cast<std::size_t>(row) * B;
        for (int i = 0; i < B; ++i) w[offset + i] = free_dofs[offset + i] ? r[offset + i] - product[i] : T(0);
    }
};

/// Σ_k (row r of A_ik) · x_k for the scalar row B i + r: entry r of
/// block_row_product, summed in the same order (so the same bits).
template <typename T, typename TA, typename X, int B>
WEFT_HD inline T scalar_row_product(const BsrConstView<TA, B>& a, const X& x, Index scalar_row)
{
    const Index row = scalar_row / B;
    const int r = static_cast<int>(scalar_row - row * B);
    T sum = T(0);
    for (Index k = a.row_ptr[row]; k < a.row_ptr[row + 1]; ++k) {
        const TA* block_row_r = a.values + static_cast<std::size_t>(k) * (B * B) + r * B;
        const std::size_t column = static_cast<std::size_t>(a.col_idx[k]) * B;
        for (int c = 0; c < B; ++c) sum += static_cast<T>(block_row_r[c]) * static_cast<T>(x[column + c]);
    }
    return sum;
}

/// y_i = Σ_k A_ik x_k for one block row i; the row is summed in stored
/// (column) order, so the result does not depend on the thread count.
template <typename T, int B>
struct BlockRowProduct {
    const BsrConstView<T, B> a;
    const T* const x;  ///< B · block_cols
    T* const y;        ///< B · block_rows

    WEFT_HD void operator()(Index row) const
    {
        T sum[B];
        block_row_product(a, x, row, sum);
        T* yi = y + static_cast<std::size_t>(row) * B;
        for (int r = 0; r < B; ++r) yi[r] = sum[r];
    }
};

/// y_row = Σ_k (row r of A_ik) x_k for one scalar row = B i + r, summed in the
/// order of BlockRowProduct.
template <typename T, int B>
struct ScalarRowProduct {
    const BsrConstView<T, B> a;
    const T* const x;  ///< B · block_cols
    T* const y;        ///< B · block_rows

    WEFT_HD void operator()(Index row) const { y[row] = scalar_row_product<T>(a, x, row); }
};

/// y_row = Σ_j |A_row,j| for one scalar row, in the stored order.
template <typename T, int B>
struct ScalarRowAbsSum {
    const BsrConstView<T, B> a;
    T* const y;  ///< B · block_rows

    WEFT_HD void operator()(Index scalar_row) const
    {
        const Index row = scalar_row / B;
        const int r = static_cast<int>(scalar_row - row * B);
        T sum = T(0);
        for (Index k = a.row_ptr[row]; k < a.row_ptr[row + 1]; ++k) {
            const T* block_row_r = a.values + static_cast<std::size_t>(k) * (B * B) + r * B;
            for (int c = 0; c < B; ++c) sum += block_row_r[c] < T(0) ? -block_row_r[c] : block_row_r[c];
        }
        y[scalar_row] = sum;
    }
};

}  // namespace bsr_detail

/// y_i = Σ_j |A_ij| for every scalar row i: the ∞-norm of each row, i.e. the
/// largest |(A x)_i| over vectors with |x_j| ≤ 1 (the bound of a rounding
/// error of size 1 in every entry of x carried through A).
/// @param[in]  a  BSR matrix
/// @param[out] y  rows() values (resized if needed)
template <typename T, int B>
void row_abs_sums(const BsrMatrix<T, B>& a, thrust::device_vector<T>& y)
{
    y.resize(static_cast<std::size_t>(a.rows()));
    thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(a.rows()),
                     bsr_detail::ScalarRowAbsSum<T, B>{a.view(), thrust::raw_pointer_cast(y.data())});
}

/// y = A x, a gather (deterministic): one thread per block row on CPU threads,
/// per scalar row on a GPU (spmv_scalar_rows).
/// @param[in]  a  BSR matrix, rows() by cols()
/// @param[in]  x  cols() values; must not be the same vector as y
/// @param[out] y  rows() values (resized if needed)
/// @throws InvalidInput on a size mismatch or aliasing
template <typename T, int B>
void spmv(const BsrMatrix<T, B>& a, const thrust::device_vector<T>& x, thrust::device_vector<T>& y)
{
    if (x.size() != static_cast<std::size_t>(a.cols())) {
        throw InvalidInput(detail::describe("spmv x.size()", x.size(), "must equal the matrix's scalar column count"));
    }
    if (&x == &y) throw InvalidInput("invalid spmv arguments: x and y must be different vectors");
    y.resize(static_cast<std::size_t>(a.rows()));
    if constexpr (spmv_scalar_rows) {
        thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                         thrust::counting_iterator<Index>(a.rows()),
                         bsr_detail::ScalarRowProduct<T, B>{a.view(), thrust::raw_pointer_cast(x.data()),
                                                            thrust::raw_pointer_cast(y.data())});
    } else {
        thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                         thrust::counting_iterator<Index>(a.block_rows()),
                         bsr_detail::BlockRowProduct<T, B>{a.view(), thrust::raw_pointer_cast(x.data()),
                                                           thrust::raw_pointer_cast(y.data())});
    }
}

/// Whether `a`'s pattern is the one kept in `row_ptr` and `col_idx` (a
/// copy of an earlier row_ptr() and col_idx()): the same sizes and indices,
/// compared on the device. What the preconditioners check before they reuse
/// what they made for a pattern.
template <typename T, int B>
bool has_pattern(const BsrMatrix<T, B>& a, const thrust::device_vector<Index>& row_ptr,
                 const thrust::device_vector<Index>& col_idx)
{
    return a.row_ptr().size() == row_ptr.size() && a.col_idx().size() == col_idx.size() &&
           thrust::equal(thrust::device, a.row_ptr().begin(), a.row_ptr().end(), row_ptr.begin()) &&
           thrust::equal(thrust::device, a.col_idx().begin(), a.col_idx().end(), col_idx.begin());
}

/// Host copy of a BSR matrix as an Eigen sparse matrix, rows() by cols().
/// Every entry of every stored block is kept (explicit zeros included).
template <typename T, int B>
Eigen::SparseMatrix<T> to_eigen(const BsrMatrix<T, B>& a)
{
    const HostView<Index> row_ptr(a.row_ptr());
    const HostView<Index> col_idx(a.col_idx());
    const HostView<T> values(a.values());
    std::vector<Eigen::Triplet<T>> triplets;
    triplets.reserve(values.size());
    for (Index i = 0; i < a.block_rows(); ++i) {
        for (Index k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
            for (int r = 0; r < B; ++r) {
                for (int c = 0; c < B; ++c) {
                    triplets.emplace_back(B * i + r, B * col_idx[k] + c,
                                          values[static_cast<std::size_t>(k) * (B * B) + r * B + c]);
                }
            }
        }
    }
    Eigen::SparseMatrix<T> result(a.rows(), a.cols());
    result.setFromTriplets(triplets.begin(), triplets.end());
    return result;
}

/// BSR copy of an Eigen sparse matrix: a block is stored wherever the Eigen
/// matrix stores an entry, and every diagonal block of a square matrix is
/// stored (zero-filled if absent) so that block-Jacobi can find it.
/// @param[in] a  sparse matrix whose dimensions are multiples of B
/// @throws InvalidInput if a dimension is not a multiple of B
template <int B, typename T, int Options, typename StorageIndex>
BsrMatrix<T, B> to_bsr(const Eigen::SparseMatrix<T, Options, StorageIndex>& a)
{
    if (a.rows() % B != 0)
        throw InvalidInput(detail::describe("to_bsr rows", a.rows(), "must be a multiple of the block size"));
    if (a.cols() % B != 0)
        throw InvalidInput(detail::describe("to_bsr cols", a.cols(), "must be a multiple of the block size"));
    const Index block_rows = static_cast<Index>(a.rows() / B);
    const Index block_cols = static_cast<Index>(a.cols() / B);
    // Rows of blocks as sorted column lists, then the values scattered into them (host side).
    std::vector<std::vector<Index>> row_blocks(static_cast<std::size_t>(block_rows));
    for (int outer = 0; outer < a.outerSize(); ++outer) {
        for (typename Eigen::SparseMatrix<T, Options, StorageIndex>::InnerIterator it(a, outer); it; ++it) {
            row_blocks[static_cast<std::size_t>(it.row() / B)].push_back(static_cast<Index>(it.col() / B));
        }
    }
    if (block_rows == block_cols) {
        for (Index i = 0; i < block_rows; ++i) row_blocks[static_cast<std::size_t>(i)].push_back(i);
    }
    std::vector<Index> row_ptr(1, 0);
    std::vector<Index> col_idx;
    for (auto& cols : row_blocks) {
        std::sort(cols.begin(), cols.end());
        cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
        col_idx.insert(col_idx.end(), cols.begin(), cols.end());
        row_ptr.push_back(static_cast<Index>(col_idx.size()));
    }
    std::vector<T> values(col_idx.size() * B * B, T(0));
    for (int outer = 0; outer < a.outerSize(); ++outer) {
        for (typename Eigen::SparseMatrix<T, Options, StorageIndex>::InnerIterator it(a, outer); it; ++it) {
            const Index block_row = static_cast<Index>(it.row() / B);
            const auto first = col_idx.begin() + row_ptr[static_cast<std::size_t>(block_row)];
            const auto last = col_idx.begin() + row_ptr[static_cast<std::size_t>(block_row) + 1];
            const auto k = static_cast<std::size_t>(std::lower_bound(first, last, static_cast<Index>(it.col() / B)) -
                                                    col_idx.begin());
            values[k * B * B + static_cast<std::size_t>(it.row() % B) * B + static_cast<std::size_t>(it.col() % B)] +=
                it.value();
        }
    }
    return BsrMatrix<T, B>(block_rows, block_cols, row_ptr, col_idx, values);
}

}  // namespace weft
