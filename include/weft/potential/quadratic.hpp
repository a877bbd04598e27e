#pragma once
/// @file quadratic.hpp
/// Quadratic density Ψ(ε) = ½ k |ε|² for scalar and vector strains
/// (2017 Eq. 2 and Eq. 6; vector strains use the squared norm, 2017 Sec. 5.2).
/// The same type serves as an elastic density (argument ε, stiffness k_e)
/// and as a dissipative density (argument ε̇, coefficient k_d).

#include <weft/core/types.hpp>
#include <weft/potential/stress_kind.hpp>

namespace weft {

template <typename T, int M>
struct QuadraticDensity {
    static constexpr int strain_dim = M;
    static constexpr StressKind stress_kind = M == 1 ? StressKind::scalar : StressKind::vector;

    /// k_e (elastic) or k_d (dissipative), per unit element size Ω.
    T stiffness;

    WEFT_HD T value(const Vec<T, M>& e) const { return T(0.5) * stiffness * e.squaredNorm(); }
    WEFT_HD Vec<T, M> stress(const Vec<T, M>& e) const { return stiffness * e; }
    WEFT_HD Mat<T, M, M> stress_derivative(const Vec<T, M>&) const { return stiffness * Mat<T, M, M>::Identity(); }

    // Dissipative role: Ψ_d(ε̇) does not depend on ε.
    WEFT_HD T value(const Vec<T, M>& rate, const Vec<T, M>&) const { return value(rate); }
    WEFT_HD Vec<T, M> stress(const Vec<T, M>& rate, const Vec<T, M>&) const { return stress(rate); }
    WEFT_HD Mat<T, M, M> stress_derivative(const Vec<T, M>& rate, const Vec<T, M>&) const
    {
        return stress_derivative(rate);
    }
};

}  // namespace weft
