#pragma once
/// @file strain_eval.hpp
/// The result of evaluating a strain metric on one element: everything the
/// generic elastic and dissipative layers need (2018 Sec. 3.3–3.4, 5.1).

#include <weft/core/types.hpp>

namespace weft {

/// Why an evaluation fell back to a finite value instead of the exact one.
enum class StrainStatus : int {
    ok = 0,
    degenerate_segment = 1,     ///< a segment of (near) zero length
    degenerate_arc_length = 2,  ///< Δs at or below its floor (Eulerian size → 0)
    parallel_segments = 3,      ///< angle at 0 or π, where |a×b| → 0
    obtuse_small_angle = 4,     ///< small-angle vector strain with a·b ≤ 0
    degenerate_triangle = 5,    ///< a (deformed) triangle of (near) zero height over its edge
};

/// Human-readable name of a status, for error messages.
inline const char* to_string(StrainStatus s)
{
    switch (s) {
        case StrainStatus::ok:
            return "ok";
        case StrainStatus::degenerate_segment:
            return "degenerate segment (zero length)";
        case StrainStatus::degenerate_arc_length:
            return "degenerate arc length (delta s <= floor)";
        case StrainStatus::parallel_segments:
            return "parallel segments (angle 0 or pi)";
        case StrainStatus::obtuse_small_angle:
            return "small-angle strain used with a.b <= 0";
        case StrainStatus::degenerate_triangle:
            return "degenerate triangle (height <= floor x edge length)";
    }
    return "unknown";
}

/// Which derivatives a strain evaluation fills. `gradients` leaves every
/// Hessian (StrainEval::hessian and size_hessian, AngleDerivatives::hessian,
/// …) zero and computes the rest with the same operations, so values,
/// gradients and rates have the same bits as with `hessians`. For callers
/// that read no second derivative: the Gauss–Newton stiffness (Ω ∇ε ∂S/∂ε
/// ∇εᵀ), forces and energies. The yarn bending and shear elements of the
/// one-step scheme spent about half their time on Hessians they never read
/// (benchmarks/RESULTS.md, "Strain Hessians only where they are read").
enum class StrainDerivatives : int {
    hessians = 0,   ///< values, gradients, rates and Hessians
    gradients = 1,  ///< values, gradients and rates; Hessians zero
};

/// Strain ε ∈ R^M of one element with N stacked DoFs, its derivatives, its
/// rate, and the element size Ω(q) with its derivatives (Eulerian case).
///
/// Conventions: `gradient` is N by M (column k = ∇ε_k), `hessian[k]` is the
/// N by N Hessian of ε_k, `rate` = ∇εᵀ q̇ (2017 Eq. 7). Ω is the integration
/// weight of the densities (2018 Eq. 4/6): V = Ω Ψ(ε).
template <typename T, int N, int M>
struct StrainEval {
    static constexpr int dofs = N;
    static constexpr int strain_dim = M;
    using Scalar = T;

    Vec<T, M> strain;
    Mat<T, N, M> gradient;
    Mat<T, N, N> hessian[M];
    Vec<T, M> rate;

    T size;
    Vec<T, N> size_gradient;
    Mat<T, N, N> size_hessian;

    StrainStatus status;

    /// Set `rate` from generalized velocities: ε̇ = ∇εᵀ q̇ (2017 Eq. 7).
    WEFT_HD void set_rate_from(const Vec<T, N>& velocities) { rate = gradient.transpose() * velocities; }

    /// ∂ε̇_k/∂q = Hε_k q̇, stacked as columns (needed only by exact Jacobians).
    WEFT_HD Mat<T, N, M> rate_gradient(const Vec<T, N>& velocities) const
    {
        Mat<T, N, M> g;
        for (int k = 0; k < M; ++k) g.col(k) = hessian[k] * velocities;
        return g;
    }
};

}  // namespace weft
