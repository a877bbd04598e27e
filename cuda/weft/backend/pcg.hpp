#pragma once
/// @file pcg.hpp
/// Filtered preconditioned conjugate gradients on a BSR matrix: the
/// "modified PCG" of Baraff & Witkin (1998), as used for the
/// implicit step in the GNATV paper (2019).
///
/// A per-scalar-DoF filter S (diagonal, 1 = free, 0 = constrained) removes
/// constrained DoFs without resizing the system. With z the prescribed values
/// on the constrained DoFs, the solver returns x with x = z on constrained
/// DoFs and, on the free DoFs, the solution of the reduced system
///     A_ff x_f = b_f − A_fc z_c,
/// i.e. S A x = S b, by CG on S A S with the starting point x₀ = z.
///
/// Preconditioner: block-Jacobi, the inverse of each node's diagonal B×B
/// block restricted to its free DoFs (identity on constrained DoFs), from a
/// Cholesky factorization so that a diagonal block that is not positive
/// definite is detected and reported rather than inverted; or the yarn-line
/// preconditioner of line_preconditioner.hpp (exact block-banded solves along
/// node chains such as yarns, additive or symmetric multiplicative over
/// families of chains).
///
/// Single-precision matrix (PcgOptions::single_precision_matrix): the
/// iteration's products S A p use a float copy of A's values, and block
/// Jacobi a float copy of its inverse blocks, while every vector, dot
/// product and sum stays in T and r₀ = S (b − A x₀) uses A itself. Each
/// iteration then moves about half the matrix bytes: worth it where the
/// product is bandwidth-bound (1.2× per iteration on two CPU threads at
/// 200², benchmarks/RESULTS.md "Single-precision matrix in PCG"). PCG solves A_f x = b with
/// ‖A_f − A‖ ≤ 2⁻²⁴ ‖A‖ entry by entry; the step's Newton iteration, whose
/// residual uses A, absorbs that as it absorbs the PCG tolerance. An entry
/// beyond float's range becomes infinite and the solve reports non_finite.
///
/// Spectrum estimate (PcgOptions::estimate_spectrum): CG's coefficients
/// define the Lanczos matrix T_k of the preconditioned operator M⁻¹ S A S on
/// the free DoFs (Saad, Iterative Methods for Sparse Linear Systems, 2nd ed.,
/// Sec. 6.7.3): with p_{j+1} = z_{j+1} + β_j p_j,
///     (T_k)_jj = 1/α_j + β_{j−1}/α_{j−1},   (T_k)_{j,j+1} = √β_j / α_j.
/// Its extreme eigenvalues (Ritz values) lie inside the operator's spectrum
/// and approach its ends within a few iterations; their ratio estimates the
/// condition number that bounds PCG's convergence. A measure of a
/// preconditioner's quality that does not depend on the tolerance or the
/// right-hand side (benchmarks/RESULTS.md, "The V-cycle's spectrum").
///
/// Failures are reported in PcgResult, never hidden: a direction with
/// pᵀAp ≤ 0 (the filtered matrix is not positive definite), a preconditioned
/// residual with rᵀM⁻¹r ≤ 0 or a diagonal block that is not positive definite
/// (the preconditioner is not), a non-finite value, or the iteration limit.
/// The residual that meets the tolerance ends the solve before its z is
/// formed or checked: with the line and multilevel preconditioners M⁻¹ is
/// not applied to it, so a solve that converges in k iterations applies M⁻¹
/// k times (benchmarks/RESULTS.md, "PCG skips the converged iteration's
/// cycle").

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>

#include <weft/backend/bsr_matrix.hpp>
#include <weft/backend/line_preconditioner.hpp>
#include <weft/backend/vector_ops.hpp>
#include <weft/core/config.hpp>
#include <weft/core/error.hpp>

namespace weft {

enum class PcgPreconditioner {
    none,                  ///< plain CG on the filtered system
    block_jacobi,          ///< inverse filtered diagonal B×B blocks
    yarn_lines,            ///< additive line solves over PcgOptions::lines (one line pass per family)
    yarn_lines_symmetric,  ///< symmetric multiplicative line solves (2m − 1 line passes, 2m − 2 SpMVs, m families)
    multilevel  ///< PcgOptions::custom, e.g. the smoothed-aggregation V-cycle of multilevel_preconditioner.hpp
};

/// A preconditioner that PCG applies through PcgOptions::custom: z = M⁻¹ r
/// with M⁻¹ symmetric positive definite on the free DoFs. r is zero on the
/// constrained DoFs, and z must be too.
template <typename T>
class PreconditionerOperator {
public:
    virtual ~PreconditionerOperator() = default;
    /// z = M⁻¹ r (z is resized to r's size).
    virtual void apply(const thrust::device_vector<T>& r, thrust::device_vector<T>& z) = 0;
    /// A float copy of the values of the matrix the operator was prepared
    /// for, where it made one (PCG with PcgOptions::single_precision_matrix
    /// then iterates with it instead of rounding the values again); nullptr
    /// where it did not.
    virtual const thrust::device_vector<float>* matrix_values_single() const { return nullptr; }

protected:
    PreconditionerOperator() = default;
    PreconditionerOperator(const PreconditionerOperator&) = default;
    PreconditionerOperator& operator=(const PreconditionerOperator&) = default;
};

enum class PcgStatus {
    converged,                  ///< ‖r‖ ≤ tolerance · ‖r₀‖
    max_iterations_reached,     ///< stopped by the iteration limit
    indefinite_matrix,          ///< pᵀ S A S p ≤ 0 for a search direction p
    indefinite_preconditioner,  ///< a filtered diagonal or line pivot block, or rᵀ M⁻¹ r, is not positive
    non_finite,                 ///< NaN or infinity in the residual or a curvature
    ritz_above_bound            ///< a Lanczos diagonal entry above PcgOptions::ritz_stop (x: the last iterate)
};

/// Human-readable name of a status, for messages and logs.
inline const char* to_string(PcgStatus status)
{
    switch (status) {
        case PcgStatus::converged:
            return "converged";
        case PcgStatus::max_iterations_reached:
            return "max_iterations_reached";
        case PcgStatus::indefinite_matrix:
            return "indefinite_matrix";
        case PcgStatus::indefinite_preconditioner:
            return "indefinite_preconditioner";
        case PcgStatus::non_finite:
            return "non_finite";
        case PcgStatus::ritz_above_bound:
            return "ritz_above_bound";
    }
    return "unknown";
}

template <typename T>
struct PcgOptions {
    /// Stop when ‖r‖ ≤ tolerance · ‖r₀‖, with r₀ = S (b − A z) the filtered
    /// right-hand side (S b when nothing is prescribed). Must be ≥ 0.
    T tolerance = T(1e-8);
    /// Iteration limit (one SpMV per iteration). Must be ≥ 0.
    int max_iterations = 1000;
    PcgPreconditioner preconditioner = PcgPreconditioner::block_jacobi;
    /// Node chains for the yarn_lines preconditioners (not owned; must
    /// outlive the solve and match the matrix's node count). PCG factors
    /// them banded for the matrix (banded_line_set with the band widened up
    /// to max_line_bandwidth, kept in the workspace while the lines and the
    /// pattern stay).
    const LineSet* lines = nullptr;
    /// Relaxation ω ∈ (0, 1] of each family update of yarn_lines_symmetric.
    T line_relaxation = T(1);
    /// The preconditioner of PcgPreconditioner::multilevel (not owned; must be
    /// prepared for the matrix and filter of the solve).
    PreconditionerOperator<T>* custom = nullptr;
    /// Iterate with a float copy of A's values and of the block-Jacobi
    /// inverses (see the file comment); no effect when T is float. Scene key
    /// solver.matrix_precision ("double", "single").
    bool single_precision_matrix = false;
    /// Estimate the preconditioned operator's extreme eigenvalues from the
    /// iteration's coefficients (PcgResult::ritz_min, ritz_max; see the file
    /// comment). Costs two host scalars per iteration and a bisection on a
    /// tridiagonal matrix of the iteration count's order at the end.
    bool estimate_spectrum = false;
    /// Stop as soon as a diagonal entry of the Lanczos matrix (see the file
    /// comment) exceeds this, with status ritz_above_bound and x the last
    /// iterate; 0 or negative: never. Each diagonal entry is a Rayleigh
    /// quotient of M⁻¹ S A S, so the operator then has an eigenvalue above
    /// the bound: a preconditioner whose eigenvalues should lie in (0, 1]
    /// (a V-cycle of current values) shows that it is not what it should be
    /// within the first iterations, where the solve's end would show it
    /// only after them (solve_filtered_pcg_multilevel). One host division
    /// per iteration.
    T ritz_stop = T(0);
};

template <typename T>
struct PcgResult {
    PcgStatus status = PcgStatus::max_iterations_reached;
    bool converged = false;  ///< status == PcgStatus::converged
    int iterations = 0;      ///< completed CG updates of x
    /// ‖r‖ / ‖r₀‖ for the recursively updated residual of the last iterate
    /// (0 when r₀ = 0; 1 when the solve stopped before the first update;
    /// not finite when r₀ is not).
    T relative_residual = T(1);
    /// PcgOptions::estimate_spectrum and at least one completed iteration of
    /// a solve that converged or reached its limit: ritz_min and ritz_max hold
    /// the smallest and largest eigenvalues of the Lanczos matrix of the
    /// completed iterations. They lie in [λ_min, λ_max] of M⁻¹ S A S on the
    /// free DoFs; ritz_max / ritz_min estimates its condition number from
    /// below. Both 0 when not estimated.
    bool spectrum_estimated = false;
    T ritz_min = T(0);
    T ritz_max = T(0);
};

/// The smallest and largest eigenvalues of the symmetric tridiagonal matrix
/// with diagonal `diagonal` (k ≥ 1 entries) and off-diagonal `off` (k − 1
/// entries, off[i] coupling i and i + 1), by bisection on the Sturm
/// sequence's count of eigenvalues below a shift (Golub & Van Loan, Matrix
/// Computations, 4th ed., Sec. 8.4.1) inside the Gershgorin interval, to the
/// interval's rounding.
/// @throws InvalidInput for an empty diagonal, a wrong off-diagonal size or a
///         non-finite entry
template <typename T>
std::pair<T, T> tridiagonal_extreme_eigenvalues(const std::vector<T>& diagonal, const std::vector<T>& off)
{
    using std::abs;
    const std::size_t k = diagonal.size();
    if (k == 0) throw InvalidInput("invalid tridiagonal_extreme_eigenvalues diagonal: must not be empty");
    if (off.size() + 1 != k) {
        throw InvalidInput(detail::describe("tridiagonal_extreme_eigenvalues off.size()", off.size(),
                                            ("must equal diagonal.size() - 1 = " + std::to_string(k - 1)).c_str()));
    }
    T low = std::numeric_limits<T>::max();
    T high = std::numeric_limits<T>::lowest();
    T scale = T(0);
    for (std::size_t i = 0; i < k; ++i) {
        const T radius = (i > 0 ? abs(off[i - 1]) : T(0)) + (i + 1 < k ? abs(off[i]) : T(0));
        if (!(abs(diagonal[i]) <= std::numeric_limits<T>::max() && radius <= std::numeric_limits<T>::max())) {
            throw InvalidInput(detail::describe("tridiagonal_extreme_eigenvalues entry", i, "is not finite"));
        }
        low = std::min(low, diagonal[i] - radius);
        high = std::max(high, diagonal[i] + radius);
        scale = std::max(scale, abs(diagonal[i]) + radius);
    }
    // Eigenvalues below `shift`: the negative pivots of T − shift I's LDLᵀ
    // (a zero pivot nudged to a tiny negative one, as in LAPACK's dstebz).
    const T tiny = std::numeric_limits<T>::min() / std::numeric_limits<T>::epsilon();
    const auto count_below = [&](T shift) {
        std::size_t count = 0;
        T pivot = diagonal[0] - shift;
        for (std::size_t i = 0;; ++i) {
            if (abs(pivot) < tiny) pivot = -tiny;
            count += pivot < T(0) ? 1 : 0;
            if (i + 1 == k) break;
            pivot = diagonal[i + 1] - shift - off[i] * off[i] / pivot;
        }
        return count;
    };
    // The j-th smallest eigenvalue (j = 1 … k): count_below(lo) < j ≤ count_below(hi).
    const auto eigenvalue = [&](std::size_t j) {
        T lo = low - std::numeric_limits<T>::epsilon() * scale;
        T hi = high + std::numeric_limits<T>::epsilon() * scale;
        for (int step = 0; step < 200; ++step) {
            const T mid = lo + (hi - lo) / T(2);
            if (!(mid > lo && mid < hi)) break;
            if (count_below(mid) >= j) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        return lo + (hi - lo) / T(2);
    };
    return {eigenvalue(1), eigenvalue(k)};
}

/// Work vectors of the solver, kept between solves so that repeated solves of
/// the same size allocate nothing. Contents are scratch.
template <typename T, int B>
struct PcgWorkspace {
    thrust::device_vector<T> residual;                 ///< #DoFs, r
    thrust::device_vector<T> preconditioned_residual;  ///< #DoFs, M⁻¹ r
    thrust::device_vector<T> direction;                ///< #DoFs, p
    thrust::device_vector<T> matrix_direction;         ///< #DoFs, S A p
    thrust::device_vector<T> next_direction;           ///< #DoFs, z + β p while the product forms it
    thrust::device_vector<T> inverse_diagonal;         ///< #nodes · B·B, row-major M⁻¹ blocks
    thrust::device_vector<T> node_sums_first;          ///< #nodes partial dot products
    thrust::device_vector<T> node_sums_second;         ///< #nodes partial dot products
    thrust::device_vector<T> row_sums;                 ///< #DoFs partial dot products (spmv_scalar_rows only)
    thrust::device_vector<std::uint8_t> all_free;      ///< #DoFs ones, for the unfiltered overload
    LineFactors<T, B> line_factors;                    ///< yarn_lines factors, sized on first use
    LineSet banded_lines;                              ///< PcgOptions::lines cut to A's band (banded_line_set)
    int banded_from_bandwidth = 0;                     ///< and their bandwidth
    std::vector<Index> banded_from_ptr;                ///< the lines banded_lines was cut from (host line_ptr)
    std::vector<Index> banded_from_nodes;              ///< and their host line_nodes
    thrust::device_vector<Index> banded_rows;          ///< the pattern banded_lines was cut for: row_ptr
    thrust::device_vector<Index> banded_cols;          ///< and col_idx
    thrust::device_vector<float> values_single;        ///< #blocks · B·B, A's values (single_precision_matrix)
    thrust::device_vector<float> inverse_single;       ///< #nodes · B·B, M⁻¹ blocks (single_precision_matrix)
    std::vector<T> lanczos_alpha;                      ///< host: α of each iteration (estimate_spectrum)
    std::vector<T> lanczos_beta;                       ///< host: β of each iteration's direction update

    /// Size every vector for a system of `nodes` nodes (no-op when already sized).
    void resize(Index nodes)
    {
        const std::size_t dofs = static_cast<std::size_t>(nodes) * B;
        residual.resize(dofs);
        preconditioned_residual.resize(dofs);
        direction.resize(dofs);
        matrix_direction.resize(dofs);
        inverse_diagonal.resize(static_cast<std::size_t>(nodes) * (B * B));
        node_sums_first.resize(static_cast<std::size_t>(nodes));
        node_sums_second.resize(static_cast<std::size_t>(nodes));
        if constexpr (spmv_scalar_rows) row_sums.resize(dofs);
    }
};

namespace pcg_detail {

/// `lines` banded for `a` (banded_line_set): the band widened up to
/// max_line_bandwidth to the farthest coupling within a line, the lines cut
/// only beyond it; kept in the workspace while the lines and the matrix's
/// pattern stay the same.
template <typename T, int B>
const LineSet& banded_lines(const BsrMatrix<T, B>& a, const LineSet& lines, PcgWorkspace<T, B>& workspace)
{
    const bool same =
        workspace.banded_lines.node_count() == a.block_rows() && workspace.banded_from_bandwidth == lines.bandwidth() &&
        workspace.banded_from_ptr == lines.host_line_ptr() && workspace.banded_from_nodes == lines.host_line_nodes() &&
        has_pattern(a, workspace.banded_rows, workspace.banded_cols);
    if (!same) {
        workspace.banded_lines = banded_line_set(a, lines, max_line_bandwidth);
        workspace.banded_from_bandwidth = lines.bandwidth();
        workspace.banded_from_ptr = lines.host_line_ptr();
        workspace.banded_from_nodes = lines.host_line_nodes();
        workspace.banded_rows = a.row_ptr();
        workspace.banded_cols = a.col_idx();
    }
    return workspace.banded_lines;
}

template <typename T>
WEFT_HD inline bool is_positive_finite(T value)
{
    return value > T(0) && value <= std::numeric_limits<T>::max();
}

template <typename T>
inline bool both_finite(T a, T b)
{
    using std::abs;
    return abs(a) <= std::numeric_limits<T>::max() && abs(b) <= std::numeric_limits<T>::max();
}

/// x₀: the prescribed value on constrained DoFs, zero on free DoFs.
template <typename T>
struct StartValue {
    WEFT_HD T operator()(const T& x, const std::uint8_t& is_free) const { return is_free ? T(0) : x; }
};

/// r₀ = S (b − A x₀).
template <typename T>
struct FilteredDifference {
    WEFT_HD T operator()(const thrust::tuple<T, T, std::uint8_t>& b_ax_free) const
    {
        return thrust::get<2>(b_ax_free) ? thrust::get<0>(b_ax_free) - thrust::get<1>(b_ax_free) : T(0);
    }
};

/// M⁻¹ block of one node: the inverse of its diagonal block restricted to
/// its free DoFs (identity on constrained DoFs), through a Cholesky factor of
/// the lower triangle (line_detail::invert_spd_lower). Returns 1 (and writes
/// the identity) when that restricted block is not positive definite, else 0.
/// Computed in T, stored as TI (float for PcgOptions::single_precision_matrix).
template <typename T, int B, typename TI = T>
struct InvertFilteredDiagonal {
    const BsrConstView<T, B> a;
    const std::uint8_t* const free_dofs;  ///< #DoFs
    TI* const inverse;                    ///< #nodes · B·B

    WEFT_HD int operator()(Index node) const
    {
        const Index k = bsr_find_block(a.row_ptr, a.col_idx, node, node);
        const std::uint8_t* is_free = free_dofs + static_cast<std::size_t>(node) * B;
        TI* out = inverse + static_cast<std::size_t>(node) * (B * B);
        T l[B][B];
        for (int r = 0; r < B; ++r) {
            for (int c = 0; c <= r; ++c) {
                const bool kept = is_free[r] && is_free[c];
                const T stored = k >= 0 ? a.values[static_cast<std::size_t>(k) * (B * B) + r * B + c] : T(0);
                l[r][c] = kept ? stored : (r == c ? T(1) : T(0));
            }
        }
        if (line_detail::invert_spd_lower<T, B, TI>(l, out)) return 0;
        for (int r = 0; r < B; ++r) {
            for (int c = 0; c < B; ++c) out[r * B + c] = r == c ? TI(1) : TI(0);
        }
        return 1;
    }
};

/// CG's next search direction z + β p (p the previous one), formed entry by
/// entry where a product reads it: the same bits as xpby(z, β, p).
template <typename T>
struct NextDirection {
    const T* const z;  ///< #DoFs
    const T* const p;  ///< #DoFs, the previous direction
    const T beta;
    WEFT_HD T operator[](std::size_t i) const { return z[i] + beta * p[i]; }
};

/// q = S A p for one block row, and the row's share p_iᵀ q_i of pᵀ S A S p
/// (p is zero on constrained DoFs); A's values are TA (T or float). P is a
/// pointer to p, or NextDirection (then the row's entries of p are stored
/// in p_out, which must not be read by the other rows' threads).
template <typename T, int B, typename TA = T, typename P = const T*>
struct FilteredProductAndCurvature {
    const BsrConstView<TA, B> a;
    const std::uint8_t* const free_dofs;  ///< #DoFs
    const P p;                            ///< #DoFs
    T* const q;                           ///< #DoFs
    T* const curvature;                   ///< #nodes
    T* const p_out = nullptr;             ///< #DoFs, or nullptr: p's entries not stored

    WEFT_HD void operator()(Index row) const
    {
        T sum[B];
        bsr_detail::block_row_product(a, p, row, sum);
        const std::size_t offset = static_cast<std::size_t>(row) * B;
        T share = T(0);
        for (int r = 0; r < B; ++r) {
            const T pr = p[offset + r];
            if (p_out != nullptr) p_out[offset + r] = pr;
            const T filtered = free_dofs[offset + r] ? sum[r] : T(0);
            q[offset + r] = filtered;
            share += pr * filtered;
        }
        curvature[row] = share;
    }
};

/// q = S A p for one scalar row (spmv_scalar_rows), and the row's share
/// p_row q_row of pᵀ S A S p; the row is summed as in FilteredProductAndCurvature.
template <typename T, int B, typename TA = T, typename P = const T*>
struct FilteredRowProductAndCurvature {
    const BsrConstView<TA, B> a;
    const std::uint8_t* const free_dofs;  ///< #DoFs
    const P p;                            ///< #DoFs
    T* const q;                           ///< #DoFs
    T* const curvature;                   ///< #DoFs
    T* const p_out = nullptr;             ///< #DoFs, or nullptr: p's entries not stored

    WEFT_HD void operator()(Index row) const
    {
        const T sum = bsr_detail::scalar_row_product<T>(a, p, row);
        const T filtered = free_dofs[row] ? sum : T(0);
        const T pr = p[static_cast<std::size_t>(row)];
        if (p_out != nullptr) p_out[row] = pr;
        q[row] = filtered;
        curvature[row] = pr * filtered;
    }
};

/// One node of the CG update: x += α p, r −= α q, z = M⁻¹ r, and the node's
/// shares of rᵀz and rᵀr. With α = 0 it only applies the preconditioner.
/// The inverse blocks are TI (T or float); z's entries are summed in T.
template <typename T, int B, typename TI = T>
struct UpdateNode {
    const T alpha;
    const bool precondition;
    const TI* const inverse;  ///< #nodes · B·B (unused without preconditioner)
    const T* const p;         ///< #DoFs
    const T* const q;         ///< #DoFs
    T* const x;               ///< #DoFs
    T* const r;               ///< #DoFs
    T* const z;               ///< #DoFs
    T* const r_dot_z;         ///< #nodes
    T* const r_dot_r;         ///< #nodes

    WEFT_HD void operator()(Index node) const
    {
        const std::size_t offset = static_cast<std::size_t>(node) * B;
        T ri[B];
        for (int i = 0; i < B; ++i) {
            x[offset + i] += alpha * p[offset + i];
            ri[i] = r[offset + i] - alpha * q[offset + i];
            r[offset + i] = ri[i];
        }
        T rz = T(0);
        T rr = T(0);
        const TI* block = inverse + static_cast<std::size_t>(node) * (B * B);
        for (int i = 0; i < B; ++i) {
            T zi = ri[i];
            if (precondition) {
                zi = T(0);
                for (int j = 0; j < B; ++j) zi += static_cast<T>(block[i * B + j]) * ri[j];
            }
            z[offset + i] = zi;
            rz += ri[i] * zi;
            rr += ri[i] * ri[i];
        }
        r_dot_z[node] = rz;
        r_dot_r[node] = rr;
    }
};

/// x += α p, r −= α q for one node, and the node's share of rᵀr (the line or
/// multilevel preconditioner is applied after, once rᵀr says it is needed).
template <typename T, int B>
struct UpdateIterate {
    const T alpha;
    const T* const p;  ///< #DoFs
    const T* const q;  ///< #DoFs
    T* const x;        ///< #DoFs
    T* const r;        ///< #DoFs
    T* const r_dot_r;  ///< #nodes

    WEFT_HD void operator()(Index node) const
    {
        const std::size_t offset = static_cast<std::size_t>(node) * B;
        T rr = T(0);
        for (int i = 0; i < B; ++i) {
            x[offset + i] += alpha * p[offset + i];
            const T ri = r[offset + i] - alpha * q[offset + i];
            r[offset + i] = ri;
            rr += ri * ri;
        }
        r_dot_r[node] = rr;
    }
};

/// The node's share of rᵀz.
template <typename T, int B>
struct NodeDot {
    const T* const r;  ///< #DoFs
    const T* const z;  ///< #DoFs
    T* const r_dot_z;  ///< #nodes

    WEFT_HD void operator()(Index node) const
    {
        const std::size_t offset = static_cast<std::size_t>(node) * B;
        T rz = T(0);
        for (int i = 0; i < B; ++i) rz += r[offset + i] * z[offset + i];
        r_dot_z[node] = rz;
    }
};

template <typename T>
PcgResult<T> make_result(PcgStatus status, int iterations, T relative_residual)
{
    PcgResult<T> result;
    result.status = status;
    result.converged = status == PcgStatus::converged;
    result.iterations = iterations;
    result.relative_residual = relative_residual;
    return result;
}

/// `result` with the extreme eigenvalues of the Lanczos matrix of the
/// iterations whose α and β were recorded (see the file comment), where the
/// result is a convergence or the iteration limit after at least one
/// iteration; otherwise `result` unchanged.
template <typename T>
PcgResult<T> with_spectrum(PcgResult<T> result, const std::vector<T>& alpha, const std::vector<T>& beta)
{
    const bool usable = result.status == PcgStatus::converged || result.status == PcgStatus::max_iterations_reached;
    const std::size_t k = alpha.size();
    if (!usable || k == 0 || beta.size() + 1 < k) return result;
    std::vector<T> diagonal(k), off(k - 1);
    for (std::size_t j = 0; j < k; ++j) {
        diagonal[j] = T(1) / alpha[j] + (j > 0 ? beta[j - 1] / alpha[j - 1] : T(0));
        if (j + 1 < k) off[j] = std::sqrt(beta[j]) / alpha[j];
    }
    const std::pair<T, T> extremes = tridiagonal_extreme_eigenvalues(diagonal, off);
    result.spectrum_estimated = true;
    result.ritz_min = extremes.first;
    result.ritz_max = extremes.second;
    return result;
}

}  // namespace pcg_detail

/// Solve S A x = S b with x = z on constrained DoFs by filtered PCG.
/// @param[in]     a          square BSR matrix, #DoFs by #DoFs (#DoFs = B · #nodes);
///                           symmetric positive definite on the free DoFs
/// @param[in]     b          #DoFs right-hand side
/// @param[in]     free_dofs  #DoFs filter S: nonzero = free, 0 = constrained
/// @param[in,out] x          #DoFs; on entry the prescribed values z on
///                           constrained DoFs (free entries are ignored: the
///                           iteration starts from 0 there); on exit the solution,
///                           or the last iterate when the result is not converged
/// @param[in,out] workspace  reusable work vectors (resized on first use)
/// @param[in]     options    tolerance, iteration limit, preconditioner (and
///                           its LineSet for the yarn_lines preconditioners)
/// @return status, iteration count and final relative residual
/// @throws InvalidInput on size mismatches or invalid options (host-side checks)
template <typename T, int B>
PcgResult<T> solve_filtered_pcg(const BsrMatrix<T, B>& a, const thrust::device_vector<T>& b,
                                const thrust::device_vector<std::uint8_t>& free_dofs, thrust::device_vector<T>& x,
                                PcgWorkspace<T, B>& workspace, const PcgOptions<T>& options = {})
{
    using std::sqrt;
    if (a.block_rows() != a.block_cols()) {
        throw InvalidInput(
            detail::describe("solve_filtered_pcg block columns", a.block_cols(), "must equal block rows"));
    }
    const std::size_t dofs = static_cast<std::size_t>(a.rows());
    const std::string size_requirement = "must equal the matrix size " + std::to_string(dofs);
    if (b.size() != dofs)
        throw InvalidInput(detail::describe("solve_filtered_pcg b.size()", b.size(), size_requirement.c_str()));
    if (free_dofs.size() != dofs) {
        throw InvalidInput(
            detail::describe("solve_filtered_pcg free_dofs.size()", free_dofs.size(), size_requirement.c_str()));
    }
    if (x.size() != dofs)
        throw InvalidInput(detail::describe("solve_filtered_pcg x.size()", x.size(), size_requirement.c_str()));
    require_non_negative("PcgOptions tolerance", options.tolerance);
    if (std::isnan(static_cast<double>(options.ritz_stop)))
        throw InvalidInput(detail::describe("PcgOptions ritz_stop", options.ritz_stop, "must not be NaN"));
    if (options.max_iterations < 0) {
        throw InvalidInput(detail::describe("PcgOptions max_iterations", options.max_iterations, "must be >= 0"));
    }
    const bool line_preconditioner = options.preconditioner == PcgPreconditioner::yarn_lines ||
                                     options.preconditioner == PcgPreconditioner::yarn_lines_symmetric;
    if (line_preconditioner) {
        if (options.lines == nullptr) {
            throw InvalidInput(detail::describe("PcgOptions lines", "nullptr",
                                                "a LineSet is required by the yarn_lines preconditioners"));
        }
        if (!(options.line_relaxation > T(0) && options.line_relaxation <= T(1))) {
            throw InvalidInput(
                detail::describe("PcgOptions line_relaxation", options.line_relaxation, "must be in (0, 1]"));
        }
        if (options.lines->node_count() != a.block_rows()) {
            throw InvalidInput(
                detail::describe("PcgOptions lines->node_count()", options.lines->node_count(),
                                 ("must equal the matrix's block rows " + std::to_string(a.block_rows())).c_str()));
        }
    }

    const bool custom = options.preconditioner == PcgPreconditioner::multilevel;
    if (custom && options.custom == nullptr) {
        throw InvalidInput(detail::describe("PcgOptions custom", "nullptr",
                                            "a prepared preconditioner is required by the multilevel preconditioner"));
    }

    const Index nodes = a.block_rows();
    workspace.resize(nodes);
    const auto cells = [](thrust::device_vector<T>& v) { return thrust::raw_pointer_cast(v.data()); };
    const std::uint8_t* free_ptr = thrust::raw_pointer_cast(free_dofs.data());
    const auto node_first = thrust::counting_iterator<Index>(0);
    const auto node_last = thrust::counting_iterator<Index>(nodes);
    auto& r = workspace.residual;
    auto& z = workspace.preconditioned_residual;
    auto& p = workspace.direction;
    auto& q = workspace.matrix_direction;

    // x₀ = z on constrained DoFs, 0 on free ones; r₀ = S (b − A x₀).
    thrust::transform(thrust::device, x.begin(), x.end(), free_dofs.begin(), x.begin(), pcg_detail::StartValue<T>{});
    spmv(a, x, q);
    const auto start = thrust::make_zip_iterator(thrust::make_tuple(b.begin(), q.begin(), free_dofs.begin()));
    thrust::transform(thrust::device, start, start + dofs, r.begin(), pcg_detail::FilteredDifference<T>{});
    const T initial_norm = sqrt(squared_norm(r));
    if (!(initial_norm <= std::numeric_limits<T>::max())) {
        return pcg_detail::make_result(PcgStatus::non_finite, 0, initial_norm);
    }
    if (initial_norm == T(0)) return pcg_detail::make_result(PcgStatus::converged, 0, T(0));
    const T stop_norm = options.tolerance * initial_norm;

    const bool precondition = options.preconditioner == PcgPreconditioner::block_jacobi;
    const bool single = options.single_precision_matrix && !std::is_same<T, float>::value;
    // The lines cut where A couples two of a line's nodes beyond its band,
    // so that each line's factor is a principal submatrix of A.
    const LineSet* lines = line_preconditioner ? &pcg_detail::banded_lines(a, *options.lines, workspace) : nullptr;
    if (line_preconditioner && factor_lines(a, free_dofs, *lines, workspace.line_factors) > 0) {
        return pcg_detail::make_result(PcgStatus::indefinite_preconditioner, 0, T(1));
    }
    if (precondition) {
        const auto invert = [&](auto* inverse) {
            using TI = std::remove_pointer_t<decltype(inverse)>;
            return thrust::transform_reduce(thrust::device, node_first, node_last,
                                            pcg_detail::InvertFilteredDiagonal<T, B, TI>{a.view(), free_ptr, inverse},
                                            0, thrust::plus<int>{});
        };
        int failed_blocks = 0;
        if (single) {
            workspace.inverse_single.resize(static_cast<std::size_t>(nodes) * (B * B));
            failed_blocks = invert(thrust::raw_pointer_cast(workspace.inverse_single.data()));
        } else {
            failed_blocks = invert(cells(workspace.inverse_diagonal));
        }
        if (failed_blocks > 0) return pcg_detail::make_result(PcgStatus::indefinite_preconditioner, 0, T(1));
    }
    // A's pattern with float values (used only when single): the custom
    // preconditioner's copy where it made one, else the workspace's.
    const thrust::device_vector<float>* shared_single = custom ? options.custom->matrix_values_single() : nullptr;
    if (single && (shared_single == nullptr || shared_single->size() != a.values().size())) {
        bsr_detail::round_to_float(a.values(), workspace.values_single);
        shared_single = &workspace.values_single;
    }
    const BsrConstView<float, B> single_view =
        single ? a.view_with(*shared_single)
               : BsrConstView<float, B>{a.block_rows(), a.block_cols(), nullptr, nullptr, nullptr};

    // z₀ = M⁻¹ r₀ (an update with α = 0 on zeroed p and q), p₀ = z₀.
    thrust::fill(thrust::device, p.begin(), p.end(), T(0));
    thrust::fill(thrust::device, q.begin(), q.end(), T(0));
    // (rᵀz, rᵀr) after x += α p, r −= α q. The line and multilevel
    // preconditioners are applied only where r misses the tolerance: a
    // converged solve does not read its last z, and at a few iterations per
    // solve that cycle was a tenth to a fifth of the multilevel solve's time.
    // rᵀz is then 0, so callers test convergence before rᵀz's sign.
    const auto update = [&](T alpha) {
        if (line_preconditioner || custom) {
            thrust::for_each(thrust::device, node_first, node_last,
                             pcg_detail::UpdateIterate<T, B>{alpha, cells(p), cells(q), cells(x), cells(r),
                                                             cells(workspace.node_sums_second)});
            const T r_dot_r = fixed_order_reduce(workspace.node_sums_second.begin(), workspace.node_sums_second.size(),
                                                 T(0), thrust::plus<T>{});
            if (sqrt(r_dot_r) <= stop_norm) return SumPair<T>{T(0), r_dot_r};
            if (custom) {
                options.custom->apply(r, z);
            } else if (options.preconditioner == PcgPreconditioner::yarn_lines) {
                apply_lines_additive(*lines, workspace.line_factors, r, z);
            } else {
                apply_lines_symmetric(a, free_dofs, *lines, workspace.line_factors, r, z, options.line_relaxation);
            }
            thrust::for_each(thrust::device, node_first, node_last,
                             pcg_detail::NodeDot<T, B>{cells(r), cells(z), cells(workspace.node_sums_first)});
            const T r_dot_z = fixed_order_reduce(workspace.node_sums_first.begin(), workspace.node_sums_first.size(),
                                                 T(0), thrust::plus<T>{});
            return SumPair<T>{r_dot_z, r_dot_r};
        }
        const auto update_nodes = [&](const auto* inverse) {
            using TI = std::remove_const_t<std::remove_pointer_t<decltype(inverse)>>;
            thrust::for_each(thrust::device, node_first, node_last,
                             pcg_detail::UpdateNode<T, B, TI>{
                                 alpha, precondition, inverse, cells(p), cells(q), cells(x), cells(r), cells(z),
                                 cells(workspace.node_sums_first), cells(workspace.node_sums_second)});
        };
        if (single && precondition) {
            update_nodes(thrust::raw_pointer_cast(workspace.inverse_single.data()));
        } else {
            update_nodes(static_cast<const T*>(cells(workspace.inverse_diagonal)));
        }
        return sum_pair(workspace.node_sums_first, workspace.node_sums_second);
    };
    SumPair<T> sums = update(T(0));
    T r_dot_z = sums.first;
    T residual_norm = sqrt(sums.second);
    if (!pcg_detail::both_finite(r_dot_z, residual_norm))
        return pcg_detail::make_result(PcgStatus::non_finite, 0, T(1));
    if (residual_norm <= stop_norm)
        return pcg_detail::make_result(PcgStatus::converged, 0, residual_norm / initial_norm);
    if (!pcg_detail::is_positive_finite(r_dot_z)) {
        return pcg_detail::make_result(PcgStatus::indefinite_preconditioner, 0, T(1));
    }
    thrust::copy(thrust::device, z.begin(), z.end(), p.begin());

    // β of the direction update p ← z + β p that the next product forms on
    // the fly (a negative value: p is already the direction, as it is now).
    T pending_beta = T(-1);
    auto& lanczos_alpha = workspace.lanczos_alpha;
    auto& lanczos_beta = workspace.lanczos_beta;
    lanczos_alpha.clear();
    lanczos_beta.clear();
    const auto finish = [&](PcgStatus status, int iterations, T relative) {
        const PcgResult<T> result = pcg_detail::make_result(status, iterations, relative);
        return options.estimate_spectrum ? pcg_detail::with_spectrum(result, lanczos_alpha, lanczos_beta) : result;
    };
    auto& p_next = workspace.next_direction;
    p_next.resize(dofs);
    T last_alpha = T(1);  ///< α of the last iteration (the Lanczos diagonal of PcgOptions::ritz_stop)
    for (int iteration = 0; iteration < options.max_iterations; ++iteration) {
        // p ← z + β p, q = S A p and pᵀ S A S p in one pass over A (or its
        // float copy): the product reads z + β p where it needs p and stores
        // the new p in p_next, which then becomes p (the same bits as xpby
        // before the product, without that pass over three vectors).
        const auto product = [&](const auto& view, const auto& direction, T* direction_out) {
            using TA = std::remove_const_t<std::remove_pointer_t<decltype(view.values)>>;
            using P = std::decay_t<decltype(direction)>;
            if constexpr (spmv_scalar_rows) {
                thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                                 thrust::counting_iterator<Index>(a.rows()),
                                 pcg_detail::FilteredRowProductAndCurvature<T, B, TA, P>{
                                     view, free_ptr, direction, cells(q), cells(workspace.row_sums), direction_out});
                return fixed_order_reduce(workspace.row_sums.begin(), workspace.row_sums.size(), T(0),
                                          thrust::plus<T>{});
            } else {
                thrust::for_each(
                    thrust::device, node_first, node_last,
                    pcg_detail::FilteredProductAndCurvature<T, B, TA, P>{
                        view, free_ptr, direction, cells(q), cells(workspace.node_sums_first), direction_out});
                return fixed_order_reduce(workspace.node_sums_first.begin(), workspace.node_sums_first.size(), T(0),
                                          thrust::plus<T>{});
            }
        };
        const auto product_with = [&](const auto& view) {
            if (pending_beta < T(0)) return product(view, static_cast<const T*>(cells(p)), static_cast<T*>(nullptr));
            const T value =
                product(view, pcg_detail::NextDirection<T>{cells(z), cells(p), pending_beta}, cells(p_next));
            p.swap(p_next);
            return value;
        };
        const T curvature = single ? product_with(single_view) : product_with(a.view());
        if (!(std::abs(curvature) <= std::numeric_limits<T>::max())) {
            return pcg_detail::make_result(PcgStatus::non_finite, iteration, residual_norm / initial_norm);
        }
        if (!(curvature > T(0))) {
            return pcg_detail::make_result(PcgStatus::indefinite_matrix, iteration, residual_norm / initial_norm);
        }
        const T alpha = r_dot_z / curvature;
        if (options.estimate_spectrum) lanczos_alpha.push_back(alpha);
        // (T_k)_jj = 1/α_j + β_{j−1}/α_{j−1}: the new α is not applied yet, so x is the last iterate.
        if (options.ritz_stop > T(0) &&
            T(1) / alpha + (pending_beta < T(0) ? T(0) : pending_beta / last_alpha) > options.ritz_stop) {
            return finish(PcgStatus::ritz_above_bound, iteration, residual_norm / initial_norm);
        }
        last_alpha = alpha;
        sums = update(alpha);
        residual_norm = sqrt(sums.second);
        const T relative = residual_norm / initial_norm;
        if (!pcg_detail::both_finite(sums.first, residual_norm)) {
            return pcg_detail::make_result(PcgStatus::non_finite, iteration + 1, relative);
        }
        if (residual_norm <= stop_norm) return finish(PcgStatus::converged, iteration + 1, relative);
        if (!(sums.first > T(0))) {
            return pcg_detail::make_result(PcgStatus::indefinite_preconditioner, iteration + 1, relative);
        }
        pending_beta = sums.first / r_dot_z;  // ≥ 0: both dot products are positive
        if (options.estimate_spectrum) lanczos_beta.push_back(pending_beta);
        r_dot_z = sums.first;
    }
    return finish(PcgStatus::max_iterations_reached, options.max_iterations, residual_norm / initial_norm);
}

/// Unfiltered PCG: every DoF free (x's entries on entry are ignored).
/// Arguments as for the filtered overload.
template <typename T, int B>
PcgResult<T> solve_filtered_pcg(const BsrMatrix<T, B>& a, const thrust::device_vector<T>& b,
                                thrust::device_vector<T>& x, PcgWorkspace<T, B>& workspace,
                                const PcgOptions<T>& options = {})
{
    const std::size_t dofs = static_cast<std::size_t>(a.rows());
    if (workspace.all_free.size() != dofs) workspace.all_free.assign(dofs, std::uint8_t(1));
    return solve_filtered_pcg(a, b, workspace.all_free, x, workspace, options);
}

}  // namespace weft
