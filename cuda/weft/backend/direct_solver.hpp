#pragma once
/// @file direct_solver.hpp
/// The filtered implicit system solved directly: CHOLMOD's supernodal
/// Cholesky factorization (SuiteSparse, through Eigen's CholmodSupport) on the
/// host, as a baseline for the iterative solvers of pcg.hpp and as an option
/// for small, stiff systems (`solver.linear: "cholmod"`).
///
/// It solves the same system as `solve_filtered_pcg`: with S the DoF filter
/// (1 free, 0 prescribed) and z the prescribed values held in x on entry,
///     (S A S + I − S) x = S (b − A z) + (I − S) z,
/// i.e. A_ff x_f = b_f − A_fc z_c on the free DoFs and x = z elsewhere.
/// The factorized matrix keeps every stored entry of A's pattern (zeros where
/// filtered), so that the symbolic analysis (fill-reducing ordering,
/// supernodes) depends on the pattern only: it is redone when the BSR pattern
/// changes (contacts, EIL element lists) and reused across Newton iterations
/// and steps otherwise, as the numerical factorization alone is cheaper.
///
/// CHOLMOD is found by CMake (libsuitesparse-dev) and linked to weft::omp,
/// which then defines WEFT_WITH_CHOLMOD; without it `cholmod_available()` is
/// false and a solve throws InvalidInput naming the option. The matrix and
/// vectors are copied to the host (a copy in memory on the OpenMP system).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>

#include <weft/backend/bsr_matrix.hpp>
#include <weft/backend/pcg.hpp>
#include <weft/core/config.hpp>
#include <weft/core/error.hpp>

#ifdef WEFT_WITH_CHOLMOD
#include <Eigen/CholmodSupport>
#include <Eigen/SparseCore>
#endif

namespace weft {

/// The linear solver of each Newton iteration (`solver.linear`).
enum class LinearSolver {
    pcg,     ///< filtered PCG on the backend (pcg.hpp), the default
    cholmod  ///< CHOLMOD supernodal Cholesky on the host (this file)
};

/// The scene-file name of a linear solver.
inline const char* to_string(LinearSolver s)
{
    return s == LinearSolver::cholmod ? "cholmod" : "pcg";
}

/// Whether this build links CHOLMOD (weft::omp with SuiteSparse found).
constexpr bool cholmod_available()
{
#ifdef WEFT_WITH_CHOLMOD
    return true;
#else
    return false;
#endif
}

/// Throws unless `solver` can run in this build.
inline void require_linear_solver(LinearSolver solver)
{
    if (solver == LinearSolver::cholmod && !cholmod_available())
        throw InvalidInput(
            "invalid solver.linear \"cholmod\": this program was built without CHOLMOD (SuiteSparse; install "
            "libsuitesparse-dev and rebuild weft::omp programs, CUDA builds do not link it), use \"pcg\"");
}

/// CHOLMOD on a filtered BSR system, keeping its symbolic analysis while the
/// pattern stays the same. One object per system (a stepper owns one).
template <typename T, int B>
class CholmodSolver {
public:
    /// Solves (S A S + I − S) x = S (b − A z) + (I − S) z with z = x on
    /// entry (see the file comment). Reports like PCG: `converged` with 0
    /// iterations and the relative residual ‖S (b − A x)‖ / ‖S (b − A z)‖;
    /// `indefinite_matrix` when the filtered matrix is not positive definite
    /// (x unchanged), `non_finite` for NaN input.
    /// @throws InvalidInput without CHOLMOD in this build, or for sizes that do not match
    PcgResult<T> solve(const BsrMatrix<T, B>& a, const thrust::device_vector<T>& b,
                       const thrust::device_vector<std::uint8_t>& free, thrust::device_vector<T>& x)
    {
        require_linear_solver(LinearSolver::cholmod);
        const std::size_t n = static_cast<std::size_t>(a.block_rows()) * B;
        if (b.size() != n || free.size() != n || x.size() != n || a.block_rows() != a.block_cols())
            throw InvalidInput(detail::describe("CholmodSolver system size", n, "must match b, free and x"));
#ifdef WEFT_WITH_CHOLMOD
        PcgResult<T> result;
        refresh_pattern(a);
        const HostView<T> values(a.values());
        const HostView<std::uint8_t> filter(free);
        const HostView<T> rhs(b);
        const HostView<T> x0(x);
        // Values of the lower triangle, filtered; S (b − A z) from the whole of A.
        double* const lower = m_lower.valuePtr();
        std::fill(lower, lower + m_lower.nonZeros(), 0.0);
        Eigen::VectorXd right(static_cast<Eigen::Index>(n));
        for (std::size_t i = 0; i < n; ++i) right(static_cast<Eigen::Index>(i)) = filter[i] ? double(rhs[i]) : 0.0;
        for (std::size_t e = 0; e < m_entry_row.size(); ++e) {
            const std::size_t i = m_entry_row[e], j = m_entry_col[e];
            const double v = double(values[e]);
            if (filter[i] && !filter[j]) right(static_cast<Eigen::Index>(i)) -= v * double(x0[j]);
            if (m_entry_lower[e] >= 0 && filter[i] && filter[j]) lower[m_entry_lower[e]] = v;
        }
        for (std::size_t i = 0; i < n; ++i) {
            if (filter[i]) continue;
            lower[m_diagonal[i]] = 1.0;
            right(static_cast<Eigen::Index>(i)) = double(x0[i]);
        }
        if (!right.allFinite() || !Eigen::Map<const Eigen::VectorXd>(lower, m_lower.nonZeros()).allFinite()) {
            result.status = PcgStatus::non_finite;
            return result;
        }
        if (m_analyzed != m_pattern_version) {
            m_llt.analyzePattern(m_lower);
            m_analyzed = m_pattern_version;
            ++m_analyses;
        }
        m_llt.factorize(m_lower);
        if (m_llt.info() != Eigen::Success) {
            result.status = PcgStatus::indefinite_matrix;
            return result;
        }
        const Eigen::VectorXd solution = m_llt.solve(right);
        // Residual of the free rows (the prescribed rows hold x = z exactly).
        Eigen::VectorXd free_right = right;
        for (std::size_t i = 0; i < n; ++i)
            if (!filter[i]) free_right(static_cast<Eigen::Index>(i)) = 0.0;
        Eigen::VectorXd residual = free_right - m_lower.selfadjointView<Eigen::Lower>() * solution;
        for (std::size_t i = 0; i < n; ++i)
            if (!filter[i]) residual(static_cast<Eigen::Index>(i)) = 0.0;
        const double right_norm = free_right.norm();
        std::vector<T> host(n);
        for (std::size_t i = 0; i < n; ++i) host[i] = filter[i] ? T(solution(static_cast<Eigen::Index>(i))) : x0[i];
        thrust::copy(host.begin(), host.end(), x.begin());
        result.iterations = 0;
        result.relative_residual = right_norm > 0 ? T(residual.norm() / right_norm) : T(0);
        result.status = std::isfinite(double(result.relative_residual)) ? PcgStatus::converged : PcgStatus::non_finite;
        result.converged = result.status == PcgStatus::converged;
        return result;
#else
        (void)x;
        return {};
#endif
    }

    /// How often the symbolic analysis ran (once per distinct pattern solved).
    int analyses() const
    {
        return m_analyses;
    }

private:
#ifdef WEFT_WITH_CHOLMOD
    /// Rebuilds the lower-triangle CSC pattern and the map from BSR entries
    /// to it when the BSR pattern differs from the last one.
    void refresh_pattern(const BsrMatrix<T, B>& a)
    {
        std::vector<Index> row_ptr = to_host(a.row_ptr());
        std::vector<Index> col_idx = to_host(a.col_idx());
        if (row_ptr == m_row_ptr && col_idx == m_col_idx) return;
        m_row_ptr = std::move(row_ptr);
        m_col_idx = std::move(col_idx);
        const std::size_t n = static_cast<std::size_t>(a.block_rows()) * B;
        const std::size_t entries = m_col_idx.size() * B * B;
        m_entry_row.resize(entries);
        m_entry_col.resize(entries);
        m_entry_lower.assign(entries, -1);
        std::vector<Eigen::Triplet<double>> triplets;
        for (std::size_t br = 0; br + 1 < m_row_ptr.size(); ++br) {
            for (Index k = m_row_ptr[br]; k < m_row_ptr[br + 1]; ++k) {
                const std::size_t bc = static_cast<std::size_t>(m_col_idx[static_cast<std::size_t>(k)]);
                for (int r = 0; r < B; ++r) {
                    for (int c = 0; c < B; ++c) {
                        const std::size_t e = static_cast<std::size_t>(k) * B * B + static_cast<std::size_t>(r * B + c);
                        m_entry_row[e] = br * B + static_cast<std::size_t>(r);
                        m_entry_col[e] = bc * B + static_cast<std::size_t>(c);
                        if (m_entry_row[e] >= m_entry_col[e])
                            triplets.emplace_back(static_cast<int>(m_entry_row[e]), static_cast<int>(m_entry_col[e]),
                                                  double(e + 1));  // marks which entry lands where
                    }
                }
            }
        }
        // Every diagonal entry is stored (a prescribed DoF gets 1 there).
        for (std::size_t i = 0; i < n; ++i) triplets.emplace_back(static_cast<int>(i), static_cast<int>(i), 0.0);
        Eigen::SparseMatrix<double> marked(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(n));
        marked.setFromTriplets(triplets.begin(), triplets.end(), [](double u, double v) { return u + v; });
        marked.makeCompressed();
        // Each stored lower entry came from exactly one BSR entry (blocks are
        // unique), plus the added diagonal zero: recover the position map.
        for (Eigen::Index k = 0; k < marked.nonZeros(); ++k) {
            const double mark = marked.valuePtr()[k];
            if (mark > 0) m_entry_lower[static_cast<std::size_t>(mark) - 1] = static_cast<long>(k);
        }
        m_diagonal.assign(n, 0);
        for (Eigen::Index c = 0; c < marked.outerSize(); ++c)
            for (Eigen::Index k = marked.outerIndexPtr()[c]; k < marked.outerIndexPtr()[c + 1]; ++k)
                if (marked.innerIndexPtr()[k] == c) m_diagonal[static_cast<std::size_t>(c)] = static_cast<long>(k);
        m_lower = marked;
        ++m_pattern_version;
    }

    std::vector<Index> m_row_ptr, m_col_idx;            ///< the BSR pattern of the current CSC pattern
    std::vector<std::size_t> m_entry_row, m_entry_col;  ///< scalar row and column of each BSR entry
    std::vector<long> m_entry_lower;                    ///< its position in m_lower's values, −1 above the diagonal
    std::vector<long> m_diagonal;                       ///< position of each diagonal entry in m_lower's values
    Eigen::SparseMatrix<double> m_lower;
    Eigen::CholmodSupernodalLLT<Eigen::SparseMatrix<double>, Eigen::Lower> m_llt;
    int m_pattern_version = 0, m_analyzed = 0;
#endif
    int m_analyses = 0;
};

}  // namespace weft
