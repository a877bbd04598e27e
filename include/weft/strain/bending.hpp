#pragma once
/// @file bending.hpp
/// Yarn bending strain at a node, in the two forms of the papers:
///  - the angle form ε_θ = θ/Ω (2017 Eq. 15–18, 2018 Eq. 20–21), exact for
///    any angle but with an undefined gradient at θ = 0 (and θ = π);
///  - the small-angle vector form ε_k = k/Ω, k = (a×b)/(a·b) (2018 Eq. 22–24,
///    2017 Eq. 19–21 up to sign), smooth at θ = 0 but unbounded as θ → π/2.
/// The element that blends them lives in element/bending_element.hpp.
///
/// DoFs (N = 12): q = [x_prev (3), s_prev, x₀ (3), s₀, x_next (3), s_next],
/// node 0 the middle node, s the arc-length (Eulerian) coordinate of each node.
/// a = x₀ − x_prev, b = x_next − x₀, Ω = s_next − s_prev (2017 Eq. 16; the
/// "added rest length L" of 2018). Notation of 2017 (Fig. 2): Δx₂ = −a,
/// Δx₁ = b, Δu₁ − Δu₂ = Ω; its vector v of Eq. (19) is −k. We follow 2018's
/// sign; a quadratic density only sees |ε|.
///
/// Derivatives are taken by hand w.r.t. the local variables y = (a, b, Ω) ∈ R⁷
/// and mapped to q by the constant matrix P = ∂y/∂q: ∇_q = Pᵀ∇_y, H_q = Pᵀ H_y P.
///
/// Rigid motion: θ and Ω are invariant, so the angle form has ε̇ = 0 under any
/// rigid velocity. The vector k is *not* rotation invariant: it turns with the
/// bending plane, k̇ = ω × k under a rigid rotation ω. Its strain rate is zero
/// for rigid translations, for rotations about k, and for every rotation at
/// θ = 0, but |ε̇_k| = |ω × ε_k| otherwise. The blended element uses the vector
/// form only below 5.5°, where |k| ≤ tan 5.5°; this is a property of the
/// papers' small-angle metric, kept as published.

#include <cmath>
#include <limits>

#include <weft/core/math.hpp>
#include <weft/strain/difference_map.hpp>
#include <weft/strain/strain_eval.hpp>
#include <weft/strain/stretch.hpp>

namespace weft {

template <typename T>
using BendingAngleEval = StrainEval<T, 12, 1>;
template <typename T>
using BendingVectorEval = StrainEval<T, 12, 3>;

namespace detail {

/// (u, w) ∈ R⁶. Fixed-size blocks rather than a comma initializer, whose
/// dynamic-size blocks trip GCC 12's -Warray-bounds on float Vec3 packets.
template <typename T>
WEFT_HD inline Vec<T, 6> stack(const Vec3<T>& u, const Vec3<T>& w)
{
    Vec<T, 6> out;
    out.template head<3>() = u;
    out.template tail<3>() = w;
    return out;
}

/// J = ∂(a×b)/∂(a, b) = [−[b]×, [a]×] (3 by 6).
template <typename T>
WEFT_HD inline Mat<T, 3, 6> cross_product_jacobian(const Vec3<T>& a, const Vec3<T>& b)
{
    Mat<T, 3, 6> j;
    j.template leftCols<3>() = -cross_matrix(b);
    j.template rightCols<3>() = cross_matrix(a);
    return j;
}

}  // namespace detail

/// A unit vector perpendicular to u (any one; (0, 0, 1) for u = 0). Used as
/// the fallback bending-plane normal when a ∥ b.
template <typename T>
WEFT_HD inline Vec3<T> any_unit_perpendicular(const Vec3<T>& u)
{
    using std::abs;
    // Cross with the axis of u's smallest component: never parallel to u.
    Vec3<T> axis = Vec3<T>::Zero();
    const T ax = abs(u(0));
    const T ay = abs(u(1));
    const T az = abs(u(2));
    if (ax <= ay && ax <= az) {
        axis(0) = T(1);
    } else if (ay <= az) {
        axis(1) = T(1);
    } else {
        axis(2) = T(1);
    }
    const Vec3<T> p = u.cross(axis);
    const T len = p.norm();
    if (!(len > T(0))) return Vec3<T>(T(0), T(0), T(1));
    return p / len;
}

/// The angle θ = atan2(|a×b|, a·b) ∈ [0, π] between two vectors with its
/// gradient and Hessian w.r.t. the stacked (a, b) ∈ R⁶.
template <typename T>
struct AngleDerivatives {
    T angle;               ///< θ
    T cross_norm;          ///< c = |a×b|
    T dot;                 ///< d = a·b
    Vec3<T> normal;        ///< r̂ = (a×b)/|a×b|, or the fallback normal (status ≠ ok)
    Vec<T, 6> gradient;    ///< ∂θ/∂(a, b)
    Mat<T, 6, 6> hessian;  ///< ∂²θ/∂(a, b)²
    StrainStatus status;
};

/// θ(a, b) = atan2(c, d), c = |a×b|, d = a·b, with derivatives (TinyAD-style
/// pitfall avoided: no acos, bounded derivatives near 0 and π except for the
/// unavoidable kink of c = |r| at r = 0).
///
/// Fallbacks (finite, never NaN):
///  - |a×b| ≤ ε_machine |a||b| (a ∥ b, θ ≈ 0 or π): the normal r̂ is undefined;
///    an arbitrary unit vector perpendicular to the longer segment is used,
///    giving the one-sided derivative for bending in the plane ⟂ r̂; the
///    Hessian keeps every term except Jᵀ(I − r̂r̂ᵀ)J/c, which is infinite.
///    Status `parallel_segments`.
///  - |a||b| = 0: θ = 0 and all derivatives zero, status `degenerate_segment`.
/// @param[in] a  first segment vector (3)
/// @param[in] b  second segment vector (3)
/// @param[in] which  StrainDerivatives::gradients leaves `hessian` zero
template <typename T>
WEFT_HD inline AngleDerivatives<T> angle_derivatives(const Vec3<T>& a, const Vec3<T>& b,
                                                     StrainDerivatives which = StrainDerivatives::hessians)
{
    using std::atan2;
    using std::sqrt;
    AngleDerivatives<T> out;
    out.status = StrainStatus::ok;
    const Vec3<T> r = a.cross(b);
    const T c = r.norm();
    const T d = a.dot(b);
    out.cross_norm = c;
    out.dot = d;
    const T rho = c * c + d * d;  // = |a|²|b|² (Lagrange identity)
    const Vec3<T>& longer = a.squaredNorm() >= b.squaredNorm() ? a : b;
    if (!(rho > T(0))) {
        out.angle = T(0);
        out.normal = any_unit_perpendicular(longer);
        out.gradient.setZero();
        out.hessian.setZero();
        out.status = StrainStatus::degenerate_segment;
        return out;
    }
    out.angle = atan2(c, d);
    const bool parallel = !(c > std::numeric_limits<T>::epsilon() * sqrt(rho));
    if (parallel) {
        out.normal = any_unit_perpendicular(longer);
        out.status = StrainStatus::parallel_segments;
    } else {
        out.normal = r / c;
    }
    const Vec3<T>& n = out.normal;

    // ∂c/∂a = (∂r/∂a)ᵀ r̂ = b × r̂,  ∂c/∂b = (∂r/∂b)ᵀ r̂ = r̂ × a   (∂r/∂a = −[b]×, ∂r/∂b = [a]×)
    const Vec<T, 6> grad_c = detail::stack(b.cross(n), n.cross(a));
    const Vec<T, 6> grad_d = detail::stack(b, a);

    // θ_c = d/ρ, θ_d = −c/ρ, θ_cc = −2cd/ρ², θ_dd = 2cd/ρ², θ_cd = (c² − d²)/ρ²
    const T theta_c = d / rho;
    const T theta_d = -c / rho;

    // ∇θ = θ_c ∇c + θ_d ∇d
    out.gradient = theta_c * grad_c + theta_d * grad_d;
    if (which == StrainDerivatives::gradients) {
        out.hessian.setZero();
        return out;
    }
    const T rho2 = rho * rho;
    const T theta_cc = T(-2) * c * d / rho2;
    const T theta_dd = T(2) * c * d / rho2;
    const T theta_cd = (c * c - d * d) / rho2;

    // Hc = Jᵀ(I − r̂r̂ᵀ)J / c + Σ_i r̂_i Hr_i, J = [−[b]×, [a]×], Σ_i r̂_i ∂²r_i/∂a∂b = −[r̂]× (∂²r_i/∂a_j∂b_k = ε_ijk)
    Mat<T, 6, 6> hess_c = Mat<T, 6, 6>::Zero();
    hess_c.template block<3, 3>(0, 3) = -cross_matrix(n);
    hess_c.template block<3, 3>(3, 0) = cross_matrix(n);
    if (!parallel) {
        const Mat<T, 3, 6> jac_r = detail::cross_product_jacobian(a, b);
        const Mat3<T> projector = Mat3<T>::Identity() - n * n.transpose();
        hess_c += jac_r.transpose() * projector * jac_r / c;
    }
    // Hd = [[0, I], [I, 0]]
    Mat<T, 6, 6> hess_d = Mat<T, 6, 6>::Zero();
    hess_d.template block<3, 3>(0, 3).setIdentity();
    hess_d.template block<3, 3>(3, 0).setIdentity();

    // Hθ = θ_cc ∇c∇cᵀ + θ_dd ∇d∇dᵀ + θ_cd (∇c∇dᵀ + ∇d∇cᵀ) + θ_c Hc + θ_d Hd
    const Mat<T, 6, 6> cross_term = grad_c * grad_d.transpose();
    out.hessian = theta_cc * (grad_c * grad_c.transpose()) + theta_dd * (grad_d * grad_d.transpose()) +
                  theta_cd * (cross_term + cross_term.transpose()) + theta_c * hess_c + theta_d * hess_d;
    return out;
}

/// Time derivative of θ(a, b) along (ȧ, ḃ):
// 2017 Eq. (18) with Δx₂ = −a, Δx₁ = b: θ̇ = cos²θ/(a·b) (r̂·(a×ḃ − b×ȧ) − (a·ḃ + b·ȧ) tanθ), multiplied
// through by cos²θ/(a·b) = (a·b)/ρ and tanθ = |a×b|/(a·b) so that it also holds at θ = π/2:
// θ̇ = ((a·b) r̂·(a×ḃ − b×ȧ) − |a×b| (a·ḃ + b·ȧ)) / ρ.
// (2018 Eq. (21) prints + before the tanθ term; d/dt atan(c/d) = cos²θ (ċ − ḋ tanθ)/d gives −, as 2017 Eq. 18.)
template <typename T>
WEFT_HD inline T angle_rate(const AngleDerivatives<T>& angle, const Vec3<T>& a, const Vec3<T>& b, const Vec3<T>& a_dot,
                            const Vec3<T>& b_dot)
{
    if (angle.status == StrainStatus::degenerate_segment) return T(0);
    const T c = angle.cross_norm;
    const T d = angle.dot;
    const T rho = c * c + d * d;
    const T c_dot = angle.normal.dot(a.cross(b_dot) - b.cross(a_dot));
    const T d_dot = a.dot(b_dot) + b.dot(a_dot);
    return (d * c_dot - c * d_dot) / rho;
}

/// The small-angle bending vector k = (a×b)/(a·b) (2018 Eq. 22) with its
/// gradient (6 by 3, column i = ∇k_i) and Hessians w.r.t. (a, b).
template <typename T>
struct SmallAngleVectorDerivatives {
    Vec3<T> value;            ///< k
    T denominator;            ///< a·b, or |a||b| in the obtuse fallback
    Mat<T, 6, 3> gradient;    ///< ∂k/∂(a, b)
    Mat<T, 6, 6> hessian[3];  ///< ∂²k_i/∂(a, b)²
    StrainStatus status;
};

/// k(a, b) = (a×b)/(a·b) with derivatives.
///
/// Fallbacks (finite, never NaN):
///  - a·b ≤ 0 (θ ≥ 90°, where k is unbounded or flips sign): the denominator is
///    frozen at |a||b| (its value at θ = 0), k = (a×b)/(|a||b|) and the
///    derivatives are those of (a×b)/D with D held constant. Status
///    `obtuse_small_angle`; callers switch to the angle form long before.
///  - |a||b| = 0: k = 0, all derivatives zero, status `degenerate_segment`.
/// StrainDerivatives::gradients leaves `hessian` zero.
template <typename T>
WEFT_HD inline SmallAngleVectorDerivatives<T> small_angle_vector_derivatives(
    const Vec3<T>& a, const Vec3<T>& b, StrainDerivatives which = StrainDerivatives::hessians)
{
    SmallAngleVectorDerivatives<T> out;
    out.status = StrainStatus::ok;
    const T length_product = a.norm() * b.norm();
    if (!(length_product > T(0))) {
        out.value.setZero();
        out.denominator = T(0);
        out.gradient.setZero();
        for (int i = 0; i < 3; ++i) out.hessian[i].setZero();
        out.status = StrainStatus::degenerate_segment;
        return out;
    }
    const Vec3<T> r = a.cross(b);
    T d = a.dot(b);
    const bool frozen = !(d > T(0));
    if (frozen) {
        d = length_product;
        out.status = StrainStatus::obtuse_small_angle;
    }
    out.denominator = d;
    out.value = r / d;

    // ∂r/∂(a, b) = J = [−[b]×, [a]×]; ∇d = (b, a); Hd = [[0, I], [I, 0]]
    const Mat<T, 3, 6> jac_r = detail::cross_product_jacobian(a, b);
    Vec<T, 6> grad_d = detail::stack(b, a);
    if (frozen) grad_d.setZero();

    for (int i = 0; i < 3; ++i) {
        // k_i d = r_i ⇒ ∇k_i = (∇r_i − k_i ∇d)/d
        const Vec<T, 6> grad_k = (jac_r.row(i).transpose() - out.value(i) * grad_d) / d;
        out.gradient.col(i) = grad_k;
        if (which == StrainDerivatives::gradients) {
            out.hessian[i].setZero();
            continue;
        }
        // Hr_i: ∂²r_i/∂a_j∂b_k = ε_ijk, i.e. the (a, b) block is −[e_i]× and the (b, a) block [e_i]×
        const Vec3<T> unit = Vec3<T>::Unit(i);
        Mat<T, 6, 6> hess_r = Mat<T, 6, 6>::Zero();
        hess_r.template block<3, 3>(0, 3) = -cross_matrix(unit);
        hess_r.template block<3, 3>(3, 0) = cross_matrix(unit);
        // k_i d = r_i ⇒ Hk_i = (Hr_i − ∇k_i∇dᵀ − ∇d∇k_iᵀ − k_i Hd)/d
        Mat<T, 6, 6> h = hess_r;
        if (!frozen) {
            const Mat<T, 6, 6> outer = grad_k * grad_d.transpose();
            h -= outer + outer.transpose();
            h.template block<3, 3>(0, 3) -= out.value(i) * Mat3<T>::Identity();
            h.template block<3, 3>(3, 0) -= out.value(i) * Mat3<T>::Identity();
        }
        out.hessian[i] = h / d;
    }
    return out;
}

namespace detail {

/// The bending stencil's local variables and their rates.
template <typename T>
struct BendingStencil {
    Vec3<T> a, b, a_dot, b_dot;
    T size;       ///< Ω = s_next − s_prev (clamped at the floor)
    T size_rate;  ///< Ω̇
    StrainStatus status;
};

template <typename T>
WEFT_HD inline BendingStencil<T> bending_stencil(const Vec<T, 12>& q, const Vec<T, 12>& v, T min_arc_length)
{
    BendingStencil<T> s;
    s.status = StrainStatus::ok;
    s.a = q.template segment<3>(4) - q.template segment<3>(0);
    s.b = q.template segment<3>(8) - q.template segment<3>(4);
    s.a_dot = v.template segment<3>(4) - v.template segment<3>(0);
    s.b_dot = v.template segment<3>(8) - v.template segment<3>(4);
    s.size = q(11) - q(3);
    s.size_rate = v(11) - v(3);
    if (!(s.size > min_arc_length)) {
        s.size = min_arc_length;
        s.status = StrainStatus::degenerate_arc_length;
    }
    return s;
}

/// Sets Ω, ∇Ω = Pᵀe₇, HΩ = 0 and clears what the caller fills.
template <typename T, int M>
WEFT_HD inline void set_bending_size(StrainEval<T, 12, M>& e, const BendingStencil<T>& s)
{
    e.size = s.size;
    e.size_gradient.setZero();
    e.size_gradient(3) = T(-1);
    e.size_gradient(11) = T(1);
    e.size_hessian.setZero();
}

/// ε = f/Ω for a function f(a, b) with local gradient g and Hessian h, mapped to q:
// ∇_y ε = (g/Ω, −f/Ω²),  H_y ε = [[h/Ω, −g/Ω²], [−gᵀ/Ω², 2f/Ω³]],  ∇_q = Pᵀ∇_y,  H_q = Pᵀ H_y P
/// (StrainDerivatives::gradients: the gradient only, hessian_q zero.)
template <typename T>
WEFT_HD inline void divided_by_size_to_q(T f, const Vec<T, 6>& g, const Mat<T, 6, 6>& h, T size, Vec<T, 12>& gradient_q,
                                         Mat<T, 12, 12>& hessian_q,
                                         StrainDerivatives which = StrainDerivatives::hessians)
{
    // P = ∂(a, b, Ω)/∂q: (a, b) by add_difference_*, Ω = s_next − s_prev (q₁₁ − q₃) by hand.
    const T inv = T(1) / size;
    const T inv2 = inv * inv;
    constexpr DifferenceMap map = bending_differences();
    gradient_q.setZero();
    add_difference_gradient<T>(g * inv, map, gradient_q);
    gradient_q(3) = f * inv2;  // −(−f/Ω²)
    gradient_q(11) = -f * inv2;
    hessian_q.setZero();
    if (which == StrainDerivatives::gradients) return;
    add_difference_hessian<T>(h * inv, map, hessian_q);
    // The (a, b)–Ω blocks −g/Ω²: column Pᵀ(−g/Ω²) at s_next, its negative at s_prev (and rows).
    Vec<T, 12> mixed = Vec<T, 12>::Zero();
    add_difference_gradient<T>(-g * inv2, map, mixed);
    hessian_q.col(11) += mixed;
    hessian_q.col(3) -= mixed;
    hessian_q.row(11) += mixed.transpose();
    hessian_q.row(3) -= mixed.transpose();
    const T h_size = T(2) * f * inv2 * inv;
    hessian_q(3, 3) += h_size;
    hessian_q(11, 11) += h_size;
    hessian_q(3, 11) -= h_size;
    hessian_q(11, 3) -= h_size;
}

/// Angle form from precomputed θ(a, b) derivatives (shared with the blended element).
template <typename T>
WEFT_HD inline BendingAngleEval<T> bending_angle_strain_from(const AngleDerivatives<T>& angle,
                                                             const BendingStencil<T>& s,
                                                             StrainDerivatives which = StrainDerivatives::hessians)
{
    BendingAngleEval<T> e;
    e.status = s.status != StrainStatus::ok ? s.status : angle.status;
    const T theta = angle.angle;
    e.strain(0) = theta / s.size;  // 2017 Eq. (15), 2018 Eq. (20)
    Vec<T, 12> gradient;
    divided_by_size_to_q<T>(theta, angle.gradient, angle.hessian, s.size, gradient, e.hessian[0], which);
    e.gradient.col(0) = gradient;
    set_bending_size(e, s);
    // 2017 Eq. (17): ε̇ = (θ̇ − ε Ω̇)/Ω, θ̇ by Eq. (18) (angle_rate)
    const T theta_dot = angle_rate(angle, s.a, s.b, s.a_dot, s.b_dot);
    e.rate(0) = (theta_dot - e.strain(0) * s.size_rate) / s.size;
    return e;
}

/// Vector form from precomputed k(a, b) derivatives.
template <typename T>
WEFT_HD inline BendingVectorEval<T> bending_small_angle_strain_from(
    const SmallAngleVectorDerivatives<T>& k, const BendingStencil<T>& s,
    StrainDerivatives which = StrainDerivatives::hessians)
{
    BendingVectorEval<T> e;
    e.status = s.status != StrainStatus::ok ? s.status : k.status;
    e.strain = k.value / s.size;  // 2018 Eq. (22)
    for (int i = 0; i < 3; ++i) {
        Vec<T, 12> gradient;
        divided_by_size_to_q<T>(k.value(i), Vec<T, 6>(k.gradient.col(i)), k.hessian[i], s.size, gradient, e.hessian[i],
                                which);
        e.gradient.col(i) = gradient;
    }
    set_bending_size(e, s);
    // 2017 Eq. (21) with v = −k: k̇ = (a×ḃ − b×ȧ − (a·ḃ + b·ȧ) k)/(a·b)
    // (2018 Eq. (24) prints + before the k term; d/dt (r/d) = (ṙ − ḋ k)/d gives −.)
    Vec3<T> k_dot = Vec3<T>::Zero();
    if (k.status != StrainStatus::degenerate_segment) {
        const T d_dot = k.status == StrainStatus::obtuse_small_angle ? T(0) : s.a.dot(s.b_dot) + s.b.dot(s.a_dot);
        k_dot = (s.a.cross(s.b_dot) - s.b.cross(s.a_dot) - d_dot * k.value) / k.denominator;
    }
    // 2017 Eq. (20): ε̇ = (k̇ − ε Ω̇)/Ω
    e.rate = (k_dot - e.strain * s.size_rate) / s.size;
    return e;
}

}  // namespace detail

/// Bending angle strain ε = θ/Ω, θ = atan2(|a×b|, a·b) (2017 Eq. 15, 2018
/// Eq. 20), size Ω = s_next − s_prev (2017 Eq. 16), and rate by 2017 Eq. (17–18).
/// @param[in] q  12 stacked DoFs [x_prev, s_prev, x₀, s₀, x_next, s_next]
/// @param[in] v  12 stacked generalized velocities
/// @param[in] min_arc_length  floor for Ω; below it Ω is clamped and the status
///            is `degenerate_arc_length`
/// At a ∥ b the gradient is undefined: see angle_derivatives for the finite
/// fallback (status `parallel_segments`). The blended element never hits it
/// at θ = 0; at θ = π it remains a documented fallback.
template <typename T>
WEFT_HD inline BendingAngleEval<T> bending_angle_strain(const Vec<T, 12>& q, const Vec<T, 12>& v,
                                                        T min_arc_length = default_min_arc_length<T>())
{
    const detail::BendingStencil<T> s = detail::bending_stencil(q, v, min_arc_length);
    return detail::bending_angle_strain_from(angle_derivatives(s.a, s.b), s);
}

/// Small-angle bending vector strain ε = k/Ω, k = (a×b)/(a·b) (2018 Eq. 22;
/// 2017 Eq. 19 is −k), size Ω, rate by 2017 Eq. (20–21).
/// @param[in] q  12 stacked DoFs [x_prev, s_prev, x₀, s₀, x_next, s_next]
/// @param[in] v  12 stacked generalized velocities
/// @param[in] min_arc_length  floor for Ω (status `degenerate_arc_length`)
/// With a·b ≤ 0 the status is `obtuse_small_angle` and the values are the
/// finite fallback of small_angle_vector_derivatives.
template <typename T>
WEFT_HD inline BendingVectorEval<T> bending_small_angle_strain(const Vec<T, 12>& q, const Vec<T, 12>& v,
                                                               T min_arc_length = default_min_arc_length<T>())
{
    const detail::BendingStencil<T> s = detail::bending_stencil(q, v, min_arc_length);
    return detail::bending_small_angle_strain_from(small_angle_vector_derivatives(s.a, s.b), s);
}

}  // namespace weft
