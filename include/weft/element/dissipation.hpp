#pragma once
/// @file dissipation.hpp
/// The generic strain-rate dissipation layer: any strain metric × any
/// dissipation density Ψ_d(ε̇). This is the one code path through which every
/// element of weft is damped.
///
/// V_d = Ω Ψ_d(ε̇)                         (2017 Eq. 6, 2018 Eq. 6)
/// f_d = −∇_v V_d = −Ω ∇ε S_d               (2017 Eq. 8, 2018 Eq. 7)
/// ∂f_d/∂v = −Ω ∇ε (∂S_d/∂ε̇) ∇εᵀ           (2017 Eq. 10, 2018 Eq. 8)
/// ∂f_d/∂q ≈ −Ω Σ_k clamp(S_d)_k Hε_k       (2017 Eq. 11, 2018 Eq. 9 and 19
///          with the non-symmetric terms −Ω ∇ε ∂S_d/∂ε̇ ∇ε̇ᵀ and −∇ε S_d ∇Ωᵀ
///          dropped and negative stress eigenvalues clamped, Sec. 3.4)
///
/// Since f_d lies in the range of ∇ε, a velocity with ε̇ = 0 (rigid motion)
/// gets no dissipative force: the good-damping condition (2018 Eq. 1) holds
/// by construction.

#include <weft/element/jacobian_options.hpp>
#include <weft/element/stress_hessian.hpp>
#include <weft/strain/strain_eval.hpp>

namespace weft {

/// V_d = Ω Ψ_d(ε̇). Its rate of work is −f_d·v = Ω S_d·ε̇ ≥ 0 for convex Ψ_d ≥ 0
/// with Ψ_d(0) = 0.
template <typename T, int N, int M, class Density>
WEFT_HD inline T dissipation_potential(const StrainEval<T, N, M>& e, const Density& density)
{
    return e.size * density.value(e.rate, e.strain);
}

/// f_d = −Ω ∇ε S_d(ε̇)   (2017 Eq. 8, 2018 Eq. 7)
template <typename T, int N, int M, class Density>
WEFT_HD inline Vec<T, N> dissipative_force(const StrainEval<T, N, M>& e, const Density& density)
{
    return -e.size * (e.gradient * density.stress(e.rate, e.strain));
}

/// DiffWrt::velocities: −Ω ∇ε ∂S_d/∂ε̇ ∇εᵀ (2018 Eq. 8), exact.
/// DiffWrt::positions: the symmetric approximation −Ω Σ_k clamp(S_d)_k Hε_k
/// (2018 Eq. 9, non-symmetric term dropped; Eq. 19, ∇Ω term dropped).
/// `TranslationNodes`: as for stress_weighted_hessian.
template <int TranslationNodes = 0, typename T, int N, int M, class Density>
WEFT_HD inline Mat<T, N, N> dissipative_force_jacobian(const StrainEval<T, N, M>& e, const Density& density,
                                                       DiffWrt wrt, StressClamp clamp = StressClamp::on)
{
    if (wrt == DiffWrt::velocities) {
        return -e.size * sandwich<T, N, M, N>(e.gradient, density.stress_derivative(e.rate, e.strain), e.gradient);
    }
    const Vec<T, M> stress = density.stress(e.rate, e.strain);
    return -e.size * stress_weighted_hessian<Density::stress_kind, TranslationNodes>(stress, e.hessian, clamp);
}

/// The terms of the exact ∂f_d/∂q that the symmetric form drops:
/// −Ω ∇ε (∂S_d/∂ε̇) (∂ε̇/∂q)ᵀ − ∇ε S_d ∇Ωᵀ, with ∂ε̇_k/∂q = Hε_k q̇.
/// (For a density whose S_d also depends on ε, e.g. the Rayleigh analogy of
/// a nonlinear elastic law, that dependence is dropped as well.)
template <typename T, int N, int M, class Density>
WEFT_HD inline Mat<T, N, N> dissipative_force_jacobian_dropped_terms(const StrainEval<T, N, M>& e,
                                                                     const Density& density,
                                                                     const Vec<T, N>& velocities)
{
    const Vec<T, M> stress = density.stress(e.rate, e.strain);
    const Mat<T, N, M> rate_gradient = e.rate_gradient(velocities);
    return -e.size * sandwich<T, N, M, N>(e.gradient, density.stress_derivative(e.rate, e.strain), rate_gradient) -
           (e.gradient * stress) * e.size_gradient.transpose();
}

/// The exact (non-symmetric) ∂f_d/∂q, for testing and for users who bring a
/// non-symmetric solver: 2018 Eq. (9) plus the ∇Ω term of Eq. (19).
template <typename T, int N, int M, class Density>
WEFT_HD inline Mat<T, N, N> dissipative_force_jacobian_exact(const StrainEval<T, N, M>& e, const Density& density,
                                                             const Vec<T, N>& velocities)
{
    return dissipative_force_jacobian(e, density, DiffWrt::positions, StressClamp::off) +
           dissipative_force_jacobian_dropped_terms(e, density, velocities);
}

/// Strain rate of the incremental potential (full Newton, after the first
/// iteration): the backward difference ε̇ = (ε(q) − ε(q_n))/h over the step,
/// with q = q_n + h v. The dissipation force −Ω ∇ε(q) S_d(ε̇) is then the
/// q-gradient of the potential h Ω Ψ_d((ε(q) − ε(q_n))/h) (Ω fixed), so its
/// Jacobian is symmetric: ∂f_d/∂v through q = −Ω ∇ε (∂S_d/∂ε̇) ∇εᵀ (the
/// `DiffWrt::velocities` block, exact) + h (−Ω Σ S_d,k Hε_k) (the
/// `DiffWrt::positions` block). ∇ε(q)·v drops the non-symmetric
/// −Ω ∇ε (∂S_d/∂ε̇) (Hε v)ᵀ instead, which is as large as the elastic
/// stiffness when β ω ~ 1 and kept Newton at linear convergence. Both rates
/// agree to O(h) (the accuracy of backward Euler), and both vanish exactly
/// for a rigid motion of the converged step: ε is invariant under it, so
/// ε(q_{n+1}) = ε(q_n) (good damping, 2018 Eq. 1).
/// @param e      evaluation at q (its rate is replaced)
/// @param start  evaluation of the same metric at q_n (only its strain is read)
template <class Eval, typename T>
WEFT_HD inline void set_incremental_rate(Eval& e, const Eval& start, T h)
{
    e.rate = (e.strain - start.strain) / h;
}

/// The evaluation that the dissipation of an incremental-potential step
/// reads where the element size depends on q (the EoL stretch segment,
/// Ω = Δs): a copy of `e` with the incremental rate and the size Ω(q_n)
/// frozen at the start of the step. The potential h Ω(q_n) Ψ_d(ε̇(q)) then
/// has the q-gradient −f_d = Ω(q_n) ∇ε S_d and the symmetric Hessian
/// Ω(q_n) (∇ε (∂S_d/∂ε̇) ∇εᵀ / h + Σ S_d,k Hε_k), which are the blocks the
/// element assembles. With Ω(q) in the force, the force is no gradient: its
/// q-derivative has the non-symmetric −∇ε S_d ∇Ωᵀ, of relative size h ε̇
/// against the damping block, which A lacked (docs/scenes.md,
/// "Exact stretch damping"). Ω(q_n) and Ω(q) agree to O(h), and
/// rigid motion is undamped either way (ε̇ = 0).
/// @param e      evaluation at q
/// @param start  evaluation of the same metric at q_n (its strain and size are read)
template <class Eval, typename T>
WEFT_HD inline Eval incremental_dissipation_eval(const Eval& e, const Eval& start, T h)
{
    Eval d = e;
    set_incremental_rate(d, start, h);
    d.size = start.size;
    d.size_gradient.setZero();
    d.size_hessian.setZero();
    return d;
}

}  // namespace weft
