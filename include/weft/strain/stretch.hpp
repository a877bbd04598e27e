#pragma once
/// @file stretch.hpp
/// Yarn stretch strain of one segment (2017 Eq. 12–14).
///
/// DoFs (N = 8): q = [x₀ (3), s₀, x₁ (3), s₁], s the arc-length (Eulerian)
/// coordinate of each node. With s held fixed at rest arc lengths this is the
/// ordinary Lagrangian spring strain |x₁ − x₀| / L − 1.

#include <cmath>

#include <weft/core/math.hpp>
#include <weft/strain/difference_map.hpp>
#include <weft/strain/strain_eval.hpp>

namespace weft {

template <typename T>
using StretchEval = StrainEval<T, 8, 1>;

/// Default floor on Δs below which an element counts as degenerate.
template <typename T>
WEFT_HD inline T default_min_arc_length()
{
    return T(1e-12);
}

/// Strain ε = |w| − 1 with w = Δx/Δs (2017 Eq. 12), size Ω = Δs (Eq. 13),
/// their gradients and Hessians, and the strain rate (Eq. 14).
/// @param[in] q  8 stacked DoFs [x₀, s₀, x₁, s₁]
/// @param[in] v  8 stacked generalized velocities
/// @param[in] min_arc_length  floor for Δs; below it Δs is clamped and the
///            status is `degenerate_arc_length` (finite fallback, never NaN)
template <typename T>
WEFT_HD inline StretchEval<T> stretch_strain(const Vec<T, 8>& q, const Vec<T, 8>& v,
                                             T min_arc_length = default_min_arc_length<T>())
{
    using std::sqrt;
    StretchEval<T> e;
    e.status = StrainStatus::ok;

    const Vec3<T> dx = q.template segment<3>(4) - q.template segment<3>(0);
    T ds = q(7) - q(3);
    if (!(ds > min_arc_length)) {
        ds = min_arc_length;
        e.status = StrainStatus::degenerate_arc_length;
    }
    T len = dx.norm();
    Vec3<T> dir;
    if (len > T(0)) {
        dir = dx / len;
    } else {
        // Zero-length segment: ε = −1 with the gradient of the one-sided limit
        // along an arbitrary axis (finite, documented fallback).
        dir = Vec3<T>(T(1), T(0), T(0));
        e.status = StrainStatus::degenerate_segment;
    }

    e.strain(0) = len / ds - T(1);

    // Local variables (Δx, Δs); q ↦ local is linear: Δx = x₁ − x₀, Δs = s₁ − s₀.
    // ∂ε/∂Δx = d̂/Δs,  ∂ε/∂Δs = −|Δx|/Δs²
    const Vec3<T> g_dx = dir / ds;
    const T g_ds = -len / (ds * ds);
    e.gradient.setZero();
    e.gradient.template block<3, 1>(0, 0) = -g_dx;
    e.gradient(3, 0) = -g_ds;
    e.gradient.template block<3, 1>(4, 0) = g_dx;
    e.gradient(7, 0) = g_ds;

    // ∂²ε/∂Δx² = (I − d̂d̂ᵀ)/(|Δx|Δs), ∂²ε/∂Δx∂Δs = −d̂/Δs², ∂²ε/∂Δs² = 2|Δx|/Δs³
    Mat<T, 4, 4> h_local;
    const T inv_len = len > T(0) ? T(1) / len : T(0);
    h_local.template block<3, 3>(0, 0) = (Mat3<T>::Identity() - dir * dir.transpose()) * (inv_len / ds);
    h_local.template block<3, 1>(0, 3) = -dir / (ds * ds);
    h_local.template block<1, 3>(3, 0) = (-dir / (ds * ds)).transpose();
    h_local(3, 3) = T(2) * len / (ds * ds * ds);
    // H_q = Pᵀ H_local P with P = [−I, I] per local variable.
    e.hessian[0] = detail::segment_difference_hessian<T>(h_local);

    // Ω = Δs: ∇Ω = [0, −1, 0, 1], HΩ = 0.
    e.size = ds;
    e.size_gradient.setZero();
    e.size_gradient(3) = T(-1);
    e.size_gradient(7) = T(1);
    e.size_hessian.setZero();

    // 2017 Eq. (14): ε̇ = ŵᵀ (Δẋ − w Δṡ) / Δs
    const Vec3<T> w = dx / ds;
    const Vec3<T> dx_dot = v.template segment<3>(4) - v.template segment<3>(0);
    const T ds_dot = v(7) - v(3);
    e.rate(0) = dir.dot(dx_dot - w * ds_dot) / ds;
    return e;
}

}  // namespace weft
