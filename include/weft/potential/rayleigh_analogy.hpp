#pragma once
/// @file rayleigh_analogy.hpp
/// The Rayleigh-analogy dissipation density of 2018 Eq. (12):
/// Ψ_d(ε̇; ε) = ½ β ε̇ᵀ (∂²Ψ_e/∂ε²)(ε) ε̇ — "good" Rayleigh damping, i.e. the
/// stiffness-proportional damping with the term that violates the good
/// damping condition (2018 Eq. 11, the ∂²ε/∂x² part) removed.
///
/// For quadratic and StVK elastic densities ∂²Ψ_e/∂ε² is constant and the
/// result is again quadratic / StVK with k_d = β k_e or (λ_d, μ_d) = β (λ, μ):
/// `rayleigh_analogy()` returns exactly that type. For a nonlinear elastic
/// density the generic wrapper evaluates ∂²Ψ_e/∂ε² at the current strain; its
/// dependence on ε is one of the terms dropped from ∂f_d/∂q.

#include <weft/core/types.hpp>
#include <weft/potential/quadratic.hpp>
#include <weft/potential/stvk.hpp>

namespace weft {

/// Generic Rayleigh-analogy density over any elastic density with
/// `stress_derivative(ε)`.
template <typename T, class ElasticDensity>
struct RayleighAnalogy {
    static constexpr int strain_dim = ElasticDensity::strain_dim;
    static constexpr StressKind stress_kind = ElasticDensity::stress_kind;
    using V = Vec<T, strain_dim>;

    ElasticDensity elastic;
    T beta;  ///< Rayleigh stiffness coefficient β (seconds)

    WEFT_HD T value(const V& rate, const V& strain) const
    {
        return T(0.5) * beta * rate.dot(elastic.stress_derivative(strain) * rate);
    }
    WEFT_HD V stress(const V& rate, const V& strain) const { return beta * (elastic.stress_derivative(strain) * rate); }
    WEFT_HD Mat<T, strain_dim, strain_dim> stress_derivative(const V&, const V& strain) const
    {
        return beta * elastic.stress_derivative(strain);
    }
};

/// k_d = β k_e (2018 Eq. 12 for a quadratic density).
template <typename T, int M>
WEFT_HD inline QuadraticDensity<T, M> rayleigh_analogy(const QuadraticDensity<T, M>& elastic, T beta)
{
    return QuadraticDensity<T, M>{beta * elastic.stiffness};
}

/// (λ_d, μ_d) = β (λ, μ) (2018 Eq. 12 for StVK).
template <typename T>
WEFT_HD inline StVKDensity<T> rayleigh_analogy(const StVKDensity<T>& elastic, T beta)
{
    return StVKDensity<T>{beta * elastic.lambda, beta * elastic.mu};
}

}  // namespace weft
