#pragma once
/// @file shear.hpp
/// Shear strain at a yarn crossing (2017 Eq. 22–23): the deviation of the
/// crossing angle from π/2.
///
/// DoFs (N = 12): q = [x₀ (3), s₀, x₁ (3), s₁, x₂ (3), s₂], node 0 the
/// crossing, node 1 its neighbour along one yarn, node 2 its neighbour along
/// the other. a = x₁ − x₀, b = x₂ − x₀, φ = angle(a, b) ∈ [0, π].
/// ε = φ − π/2, evaluated as atan2(−a·b, |a×b|): exact (no cancellation
/// against π/2) and smooth around the rest state φ = π/2, where a shear
/// element spends its life. Ω = L, the rest spacing between adjacent yarns,
/// so ∇Ω = 0 and HΩ = 0. The arc-length coordinates do not enter: their
/// derivatives are zero.
///
/// Near φ = 0 or π (a ∥ b, yarns folded onto each other) |a×b| → 0 and the
/// gradient direction is undefined, exactly as for bending at θ = 0: the
/// finite fallback of angle_derivatives applies (a fixed unit vector ⟂ to
/// the longer segment stands in for the normal), status `parallel_segments`.
/// The 2017 paper suggests a small-angle vector form for that regime; a
/// crossing never gets there without contact failing first, so it is not
/// provided.

#include <cmath>

#include <weft/strain/bending.hpp>

namespace weft {

template <typename T>
using ShearEval = StrainEval<T, 12, 1>;

/// Shear strain ε = φ − π/2 (2017 Eq. 22), Ω = L (Eq. 23), its derivatives
/// and its rate ε̇ = φ̇ (by the same atan2 rate formula as bending, 2017 Eq. 18).
/// @param[in] q  12 stacked DoFs [x₀, s₀, x₁, s₁, x₂, s₂]
/// @param[in] v  12 stacked generalized velocities
/// @param[in] rest_spacing  L > 0, the rest distance between adjacent yarns
/// @param[in] which  StrainDerivatives::gradients leaves the Hessians zero
template <typename T>
WEFT_HD inline ShearEval<T> shear_strain(const Vec<T, 12>& q, const Vec<T, 12>& v, T rest_spacing,
                                         StrainDerivatives which = StrainDerivatives::hessians)
{
    using std::atan2;
    ShearEval<T> e;
    const Vec3<T> a = q.template segment<3>(4) - q.template segment<3>(0);
    const Vec3<T> b = q.template segment<3>(8) - q.template segment<3>(0);
    const Vec3<T> a_dot = v.template segment<3>(4) - v.template segment<3>(0);
    const Vec3<T> b_dot = v.template segment<3>(8) - v.template segment<3>(0);

    // φ − π/2 differs from φ = θ(a, b) by a constant: same derivatives.
    const AngleDerivatives<T> phi = angle_derivatives(a, b, which);
    e.status = phi.status;
    e.strain(0) = phi.status == StrainStatus::degenerate_segment ? T(0) : atan2(-phi.dot, phi.cross_norm);

    // P = ∂(a, b)/∂q: a = x₁ − x₀, b = x₂ − x₀; ∇_q ε = Pᵀ∇φ, H_q ε = Pᵀ Hφ P
    constexpr detail::DifferenceMap map = detail::crossing_differences();
    Vec<T, 12> gradient = Vec<T, 12>::Zero();
    detail::add_difference_gradient<T>(phi.gradient, map, gradient);
    e.gradient.col(0) = gradient;
    e.hessian[0].setZero();
    if (which == StrainDerivatives::hessians) detail::add_difference_hessian<T>(phi.hessian, map, e.hessian[0]);

    e.size = rest_spacing;
    e.size_gradient.setZero();
    e.size_hessian.setZero();

    // ε̇ = φ̇ = ((a·b) r̂·(a×ḃ − b×ȧ) − |a×b|(a·ḃ + b·ȧ))/ρ   (2017 Eq. 18 multiplied through, see angle_rate)
    e.rate(0) = angle_rate(phi, a, b, a_dot, b_dot);
    return e;
}

}  // namespace weft
