#pragma once
/// @file rayleigh_damping.hpp
/// Stiffness-proportional Rayleigh damping f = −β K v with K = −∂f_e/∂q
/// (2017 Eq. 4 with α = 0, 2018 Eq. 11). Kept only as the baseline the papers
/// compare against: for a nonlinear strain metric under stress it damps rigid
/// motion (it violates the good-damping condition 2018 Eq. 1).
///
/// One implementation: `add_rayleigh_damping` takes the stiffness an element
/// assembles (exact, projected or clamped, the element's choice) and is what
/// every backend element with Rayleigh damping calls. Energy convention, the
/// same for yarns and triangles: the dissipation potential
/// V_d = ½ β vᵀ K v (f = −∂V_d/∂v, dissipated power 2 V_d).

#include <weft/element/elastic.hpp>

namespace weft {

/// Adds f_R = β (∂f_e/∂q) v to `force` and ∂f_R/∂v = β ∂f_e/∂q to `df_dv`
/// (∂f_R/∂q, which needs third derivatives of V_e, is neglected as in the
/// papers' baseline), and returns V_d = −½ β vᵀ (∂f_e/∂q) v. `df_dq` is the
/// element's elastic stiffness as it assembles it.
template <typename T, int N>
WEFT_HD inline T add_rayleigh_damping(const Mat<T, N, N>& df_dq, T beta, const Vec<T, N>& velocities, Vec<T, N>& force,
                                      Mat<T, N, N>& df_dv)
{
    const Vec<T, N> kv = df_dq * velocities;
    force += beta * kv;
    df_dv += beta * df_dq;
    return -T(0.5) * beta * velocities.dot(kv);
}

/// f_R = β (∂f_e/∂q) v = −β ∇²V_e v, with the exact Hessian of V_e
template <typename T, int N, int M, class Density>
WEFT_HD inline Vec<T, N> rayleigh_damping_force(const StrainEval<T, N, M>& e, const Density& elastic_density, T beta,
                                                const Vec<T, N>& velocities)
{
    Vec<T, N> force = Vec<T, N>::Zero();
    Mat<T, N, N> df_dv = Mat<T, N, N>::Zero();
    add_rayleigh_damping<T, N>(elastic_force_jacobian(e, elastic_density), beta, velocities, force, df_dv);
    return force;
}

/// ∂f_R/∂v = −β ∇²V_e.
template <typename T, int N, int M, class Density>
WEFT_HD inline Mat<T, N, N> rayleigh_damping_force_jacobian(const StrainEval<T, N, M>& e,
                                                            const Density& elastic_density, T beta)
{
    return beta * elastic_force_jacobian(e, elastic_density);
}

}  // namespace weft
