#pragma once
/// @file stvk.hpp
/// Saint Venant–Kirchhoff density on the 2D Green strain of a membrane,
/// Ψ = λ/2 tr(ε)² + μ tr(ε²) (2018 Eq. 13), stress S = λ tr(ε) I + 2μ ε
/// (Eq. 14). With (λ_d, μ_d) and the strain rate it is the dissipation
/// density of 2018 Eq. (15–16).
///
/// Voigt order (ε₁₁, ε₂₂, ε₁₂) with ε₁₂ stored once, so
/// ∂Ψ/∂ε = (S₁₁, S₂₂, 2 S₁₂) and tr(ε²) = ε₁₁² + ε₂₂² + 2ε₁₂².

#include <weft/core/types.hpp>
#include <weft/potential/stress_kind.hpp>

namespace weft {

template <typename T>
struct StVKDensity {
    static constexpr int strain_dim = 3;
    static constexpr StressKind stress_kind = StressKind::symmetric_2x2;

    T lambda;  ///< first Lamé parameter λ (or λ_d), per unit element size
    T mu;      ///< second Lamé parameter μ (or μ_d), per unit element size

    WEFT_HD T value(const Vec3<T>& e) const
    {
        const T tr = e(0) + e(1);
        return T(0.5) * lambda * tr * tr + mu * (e(0) * e(0) + e(1) * e(1) + T(2) * e(2) * e(2));
    }
    WEFT_HD Vec3<T> stress(const Vec3<T>& e) const
    {
        const T tr = e(0) + e(1);
        return Vec3<T>(lambda * tr + T(2) * mu * e(0), lambda * tr + T(2) * mu * e(1), T(4) * mu * e(2));
    }
    WEFT_HD Mat3<T> stress_derivative(const Vec3<T>&) const
    {
        Mat3<T> d;
        d << lambda + T(2) * mu, lambda, T(0), lambda, lambda + T(2) * mu, T(0), T(0), T(0), T(4) * mu;
        return d;
    }

    // Dissipative role (2018 Eq. 15–16): Ψ_d(ε̇) does not depend on ε.
    WEFT_HD T value(const Vec3<T>& rate, const Vec3<T>&) const { return value(rate); }
    WEFT_HD Vec3<T> stress(const Vec3<T>& rate, const Vec3<T>&) const { return stress(rate); }
    WEFT_HD Mat3<T> stress_derivative(const Vec3<T>& rate, const Vec3<T>&) const { return stress_derivative(rate); }
};

}  // namespace weft
