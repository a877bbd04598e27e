#pragma once
/// @file implicit_system.hpp
/// Turning an element's local force and Jacobians into its contribution to
/// the backward-Euler system A Δv = b, scattered onto B-DoF node blocks.
///
/// A = M − h ∂f/∂v − h² ∂f/∂q,  b = h (f + h ∂f/∂q v)   (Baraff–Witkin 1998,
/// the standard implicit-Euler system; one Newton step linearized at (q, v)).
/// Later Newton iterations add −M (v_k − v_n) to b and linearize K about the
/// iterate (see NewtonInputs below).

#include <weft/core/types.hpp>

namespace weft {

/// Local energy, force and force Jacobians of an element with N DoFs.
template <typename T, int N>
struct LocalTerms {
    T energy;
    Vec<T, N> force;
    Mat<T, N, N> df_dq;  ///< symmetric (or symmetrized) ∂f/∂q
    Mat<T, N, N> df_dv;  ///< ∂f/∂v

    WEFT_HD static LocalTerms zero()
    {
        LocalTerms t;
        t.energy = T(0);
        t.force.setZero();
        t.df_dq.setZero();
        t.df_dv.setZero();
        return t;
    }
};

/// Energies of one element, summed for the CSV output.
template <typename T>
struct ElementEnergies {
    T kinetic;
    T elastic;
    T gravity;
    T dissipation;  ///< dissipation potential V_d (rate of dissipated energy / 2 for quadratic Ψ_d)
};

/// What changes on Newton iterations after the first (backward Euler solved
/// for v_{n+1}, q_{n+1} = q_n + h v_{n+1}; linearized about the iterate
/// (q_k, v_k)): b = h (f_k + h K_k w) − M (v_k − v_n) with
/// w = (q_n + h v_k − q_k) / h. On the first iteration (q_k, v_k) = (q_n, v_n),
/// so w = v_n and the mass term vanishes: the one-step system of 2017 Sec. 6.
/// Null pointers mean exactly that first-iteration form.
template <typename T>
struct NewtonInputs {
    const T* stiffness_velocity = nullptr;  ///< w per DoF; null: w = v
    const T* mass_velocity = nullptr;       ///< v_k − v_n per DoF; null: zero
    /// Positions at the start of the step, at which lagged quantities are
    /// frozen for the whole Newton solve (collider friction: normal force and
    /// tangent basis, `lagged_friction`); null: the one-step scheme's forms,
    /// evaluated at the current q.
    const T* lagged_positions = nullptr;
    /// Velocities at the start of the step (v_n), set with lagged_positions:
    /// the slipping anchors' slip velocity (`anchor_slip_velocity`) is
    /// frozen from them for the whole Newton solve.
    const T* lagged_velocities = nullptr;
    /// Positions at the start of the step for strain rates in incremental-
    /// potential form, ε̇ = (ε(q) − ε(q_n))/h (`set_incremental_rate`; full
    /// Newton iterations after the first); null: ε̇ = ∇ε(q)·v.
    const T* rate_start = nullptr;
    /// The step is solved by full Newton (every evaluation of the step, its
    /// first iteration included): forms that only an iterated solve needs,
    /// such as the EIL springs' rounded corners (`evaluate_eil_spring`).
    bool full_newton = false;
    /// Full Newton: the element stiffnesses are the exact Hessians, not
    /// projected onto the PSD cone (yarn stretch, bending and shear with
    /// strain-rate damping or none; Rayleigh damping's force is built from
    /// the projected stiffness, so it keeps it). A is then the exact Jacobian
    /// of the residual, and may be indefinite: the stepper redoes an
    /// iteration with the projected stiffnesses where PCG meets negative
    /// curvature (StepperOptions::exact_hessians).
    bool exact_hessians = false;
    /// Full Newton: where the stiffnesses are projected (exact_hessians
    /// false), the yarn elements' negative eigenvalues become their absolute
    /// values instead of zero (PsdProjection::absolute;
    /// StepperOptions::hessian_projection). Rayleigh damping keeps the clamp.
    bool absolute_eigenvalues = false;
    /// Full Newton: only the forces, energies and right-hand side of this
    /// evaluation are used (a line-search trial where the step is expected to
    /// converge, so that its system is never solved). Kernels may skip
    /// work that only A needs, such as the yarn elements' PSD projections; the
    /// forces and right-hand side must come out bit for bit as in a full
    /// evaluation (a stepper that goes on from the trial re-evaluates it).
    bool forces_only = false;
};

/// The contribution of one element with K nodes of B DoFs each.
template <typename T, int K, int B>
struct NodeBlocks {
    Mat<T, B, B> a[K][K];  ///< A blocks, row node i, column node j
    Vec<T, B> b[K];        ///< right-hand side per node
    Vec<T, B> f[K];        ///< force per node (for residuals and reporting)

    WEFT_HD void set_zero()
    {
        for (int i = 0; i < K; ++i) {
            b[i].setZero();
            f[i].setZero();
            for (int j = 0; j < K; ++j) a[i][j].setZero();
        }
    }
};

/// Scatter a local N-DoF system onto node blocks. `slot[i]` and `component[i]`
/// give the node (0..K−1) and the component (0..B−1) of local DoF i; a
/// negative component drops that DoF (e.g. the zero s-derivatives of shear).
/// @param[in] mass   N×N local mass (may be zero)
/// @param[in] df_dq  N×N ∂f/∂q (symmetric form), df_dv N×N ∂f/∂v, force N, v N
/// @param[in] v  N velocities that multiply h² K in b (the linearization
///               point's q − q₀ offset over h, see solver/; the velocity itself
///               on the first Newton iteration)
/// @param[in] mass_velocity  N velocities v_k − v_n for the −M (v_k − v_n)
///               term of later Newton iterations (zero on the first)
template <typename T, int N, int K, int B>
WEFT_HD inline void scatter_implicit(NodeBlocks<T, K, B>& out, const int (&slot)[N], const int (&component)[N],
                                     const Mat<T, N, N>& mass, const Vec<T, N>& force, const Mat<T, N, N>& df_dq,
                                     const Mat<T, N, N>& df_dv, const Vec<T, N>& v, T h, const Vec<T, N>& mass_velocity)
{
    // A = M − h D − h² K,  b = h (f + h K v) − M (v_k − v_n)
    const Vec<T, N> rhs = h * (force + h * (df_dq * v)) - mass * mass_velocity;
    for (int i = 0; i < N; ++i) {
        const int ci = component[i];
        if (ci < 0) continue;
        out.b[slot[i]](ci) += rhs(i);
        out.f[slot[i]](ci) += force(i);
        for (int j = 0; j < N; ++j) {
            const int cj = component[j];
            if (cj < 0) continue;
            out.a[slot[i]][slot[j]](ci, cj) += mass(i, j) - h * df_dv(i, j) - h * h * df_dq(i, j);
        }
    }
}

/// The one-Newton-step form: b = h (f + h K v).
template <typename T, int N, int K, int B>
WEFT_HD inline void scatter_implicit(NodeBlocks<T, K, B>& out, const int (&slot)[N], const int (&component)[N],
                                     const Mat<T, N, N>& mass, const Vec<T, N>& force, const Mat<T, N, N>& df_dq,
                                     const Mat<T, N, N>& df_dv, const Vec<T, N>& v, T h)
{
    scatter_implicit<T, N, K, B>(out, slot, component, mass, force, df_dq, df_dv, v, h, Vec<T, N>::Zero().eval());
}

}  // namespace weft
