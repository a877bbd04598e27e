#pragma once
/// @file rayleigh_damping.hpp
/// Stiffness-proportional Rayleigh damping f = −β K v with K = ∇²V_e
/// (2017 Eq. 4 with α = 0, 2018 Eq. 11). Kept only as the baseline the papers
/// compare against: for a nonlinear strain metric under stress it damps rigid
/// motion (it violates the good-damping condition 2018 Eq. 1).

#include <weft/element/elastic.hpp>

namespace weft {

/// f_R = β (∂f_e/∂q) v = −β ∇²V_e v
template <typename T, int N, int M, class Density>
WEFT_HD inline Vec<T, N> rayleigh_damping_force(const StrainEval<T, N, M>& e, const Density& elastic_density, T beta,
                                                const Vec<T, N>& velocities)
{
    return beta * (elastic_force_jacobian(e, elastic_density) * velocities);
}

/// ∂f_R/∂v = −β ∇²V_e. (∂f_R/∂q, which needs third derivatives of V_e, is
/// neglected as in the papers' baseline.)
template <typename T, int N, int M, class Density>
WEFT_HD inline Mat<T, N, N> rayleigh_damping_force_jacobian(const StrainEval<T, N, M>& e,
                                                            const Density& elastic_density, T beta)
{
    return beta * elastic_force_jacobian(e, elastic_density);
}

}  // namespace weft
