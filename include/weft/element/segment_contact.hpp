#pragma once
/// @file segment_contact.hpp
/// Penalty contact between two yarn segments (or triangle edges) that come
/// closer than the sum of their radii (or a cloth thickness), r, and between
/// a point and a triangle (`point_triangle_contact`): with d the distance of
/// the closest points,
///     V = ½ k (r − d)²   for d < r,   0 otherwise,
/// (the thesis' stiff penalty for non-persistent contacts, Sec. 4.4), with
/// its exact gradient and Hessian with respect to the four end points
/// q = [a₀, a₁, b₀, b₁], and the Gauss–Newton Hessian k ∇d ∇dᵀ (PSD).
/// Collision handling (docs/collision.md): triangle cloth's contacts
/// (cloth_contact.hpp) are these two; yarn–yarn contact is the segment pair
/// (the same element on the yarn nodes' positions, YarnStepper).
///
/// Distance as a value function. d² = 2 D(q), D(q) = min_θ f(q, θ) with
/// f = ½ |x|², x = a₀ + s (a₁ − a₀) − b₀ − t (b₁ − b₀), θ = (s, t) ∈ [0, 1]²
/// (proximity.hpp). With the parameters that sit on a bound held there and
/// the free ones stationary, the envelope theorem gives ∇D = ∂f/∂q = Jᵀ x
/// (J = ∂x/∂q at fixed θ), and the implicit function theorem
///     ∇²D = f_qq − f_qθ f_θθ⁻¹ f_θq   (free parameters only),
/// with f_qq = JᵀJ, f_θθ = [[u·u, −u·w], [−u·w, w·w]] (u = a₁ − a₀,
/// w = b₁ − b₀) and f_qθ the q-derivatives of ∂f/∂s = x·u and
/// ∂f/∂t = −x·w. Then ∇d = ∇D/d and ∇²d = ∇²D/d − ∇D ∇Dᵀ/d³.
/// Where the free parameters' f_θθ is singular (parallel segments, whose
/// closest points are not unique), the Hessian holds the parameter s fixed
/// too; the distance and gradient stay exact. At d = 0 (segments that
/// intersect) the direction is undefined: everything is zero and the status
/// says so.

#include <weft/core/types.hpp>
#include <weft/element/collider.hpp>
#include <weft/element/implicit_system.hpp>
#include <weft/element/penalty.hpp>
#include <weft/element/proximity.hpp>

namespace weft {

/// The contact of one segment pair. Plain data.
template <typename T>
struct SegmentContact {
    T energy;                     ///< V
    Vec<T, 12> force;             ///< −∇V
    Mat<T, 12, 12> hessian;       ///< ∇²V (exact; indefinite in general)
    Mat<T, 12, 12> gauss_newton;  ///< k ∇d ∇dᵀ (PSD), the stiffness for the system matrix
    T distance;                   ///< d
    T s, t;                       ///< closest parameters
    T coefficient[4];             ///< c_i of x = Σ c_i q_i, the closest points' difference, at fixed (s, t)
    Vec3<T> normal;               ///< x / d, from the second primitive towards the first
    T normal_force;               ///< λ = k (r − d), the penalty's force between the closest points
    bool active;                  ///< d < r
    bool degenerate;              ///< d = 0: no direction, everything zero
    bool exact_hessian;           ///< `hessian` was formed (an active contact asked for it)
};

namespace detail {

/// Fills the closest parameters and the distance; true when the penalty
/// acts and has a direction (0 < d < r), with everything else zero.
template <typename T>
WEFT_HD inline bool start_contact(SegmentContact<T>& out, T s, T t, T distance_squared, T radius_sum)
{
    using std::sqrt;
    out.energy = T(0);
    out.force.setZero();
    out.hessian.setZero();
    out.gauss_newton.setZero();
    out.s = s;
    out.t = t;
    for (T& c : out.coefficient) c = T(0);
    out.normal.setZero();
    out.normal_force = T(0);
    out.distance = sqrt(distance_squared);
    out.active = out.distance < radius_sum;
    out.degenerate = out.active && !(out.distance > T(0));
    out.exact_hessian = false;
    return out.active && !out.degenerate;
}

/// ∇D = Jᵀx and f_qq = JᵀJ, J = ∂x/∂q at fixed parameters, x = Σ_i c_i q_i.
template <typename T>
WEFT_HD inline void distance_value_base(const T (&coefficient)[4], const Vec3<T>& x, Vec<T, 12>& grad_D,
                                        Mat<T, 12, 12>& hess_D)
{
    for (int i = 0; i < 4; ++i) {
        grad_D.template segment<3>(3 * i) = coefficient[i] * x;
        for (int j = 0; j < 4; ++j)
            hess_D.template block<3, 3>(3 * i, 3 * j) = coefficient[i] * coefficient[j] * Mat3<T>::Identity();
    }
}

/// ∂/∂q of x · e at fixed parameters, e = q_to − q_from: Jᵀe + x at `to` − x at `from`.
template <typename T>
WEFT_HD inline Vec<T, 12> parameter_cross_derivative(const T (&coefficient)[4], const Vec3<T>& e, const Vec3<T>& x,
                                                     int from, int to)
{
    Vec<T, 12> out;
    for (int i = 0; i < 4; ++i) out.template segment<3>(3 * i) = coefficient[i] * e;
    out.template segment<3>(3 * from) -= x;
    out.template segment<3>(3 * to) += x;
    return out;
}

/// Energy, force and Hessians of the penalty E(r − d) from D = ½ d² and its
/// derivatives; the coefficients and the normal x/d for the friction. E is
/// the colliders' law (`smooth_penalty`) of the gap g = r − d with onset
/// width δ = `onset`: ½ k g² for δ = 0; for δ > 0 its stiffness rises from 0
/// to k over δ, so it is C² at d = r and a pair that comes into contact
/// within a Newton update has stiffness in A from the start instead of a
/// jump from 0 to k (docs/collision.md, "A smooth onset of the penalty").
template <typename T>
WEFT_HD inline void finish_contact(SegmentContact<T>& out, const T (&coefficient)[4], const Vec3<T>& x,
                                   const Vec<T, 12>& grad_D, const Mat<T, 12, 12>& hess_D, T stiffness, T radius_sum,
                                   bool exact_hessian = true, T onset = T(0))
{
    const T d = out.distance;
    for (int i = 0; i < 4; ++i) out.coefficient[i] = coefficient[i];
    out.normal = x / d;
    const Vec<T, 12> grad_d = grad_D / d;
    const PenaltyTerms<T> law = smooth_penalty<T>(radius_sum - d, stiffness, onset);
    out.normal_force = law.force;
    out.energy = law.energy;
    out.force = law.force * grad_d;
    out.gauss_newton = law.stiffness * grad_d * grad_d.transpose();
    if (!exact_hessian) return;  // `hessian` stays zero
    const Mat<T, 12, 12> hess_d = hess_D / d - grad_D * grad_D.transpose() / (d * d * d);
    out.hessian = out.gauss_newton - law.force * hess_d;
    out.exact_hessian = true;
}

/// The penalty of a segment pair between the points of parameters `c`
/// (`c.distance_squared` theirs) that are closest on each segment whose
/// parameter lies inside (0, 1): the exact Hessian takes the implicit-
/// function terms of those free parameters. segment_contact (the
/// segments' closest points) and end_point_contact (an end point, fixed,
/// and its closest point on the other segment).
template <typename T>
WEFT_HD inline SegmentContact<T> segment_pair_penalty(const Vec<T, 12>& q, const SegmentPairClosest<T>& c, T stiffness,
                                                      T radius_sum, bool exact_hessian, T onset)
{
    const Vec3<T> a0 = q.template segment<3>(0), a1 = q.template segment<3>(3), b0 = q.template segment<3>(6),
                  b1 = q.template segment<3>(9);
    SegmentContact<T> out;
    if (!start_contact(out, c.s, c.t, c.distance_squared, radius_sum)) return out;
    const T s = c.s, t = c.t;
    const Vec3<T> u = a1 - a0, w = b1 - b0;
    const Vec3<T> x = a0 + s * u - b0 - t * w;
    // x = Σ c_i q_i at fixed (s, t): coefficients of a₀, a₁, b₀, b₁.
    const T coefficient[4] = {T(1) - s, s, -(T(1) - t), -t};
    Vec<T, 12> grad_D;
    Mat<T, 12, 12> hess_D;
    distance_value_base(coefficient, x, grad_D, hess_D);
    if (!exact_hessian) {
        finish_contact(out, coefficient, x, grad_D, hess_D, stiffness, radius_sum, false, onset);
        return out;
    }
    // ∂f/∂s = x·u, ∂f/∂t = −x·w.
    const Vec<T, 12> f_qs = parameter_cross_derivative(coefficient, u, x, 0, 1);
    const Vec<T, 12> f_qt = -parameter_cross_derivative(coefficient, w, x, 2, 3);
    const bool s_free = s > T(0) && s < T(1);
    const bool t_free = t > T(0) && t < T(1);
    const T uu = u.dot(u), ww = w.dot(w), uw = u.dot(w);
    const T det = uu * ww - uw * uw;
    if (s_free && t_free && det > T(1e-12) * uu * ww) {
        // (f_θθ)⁻¹ = [[ww, uw], [uw, uu]] / det
        hess_D -= (ww * f_qs * f_qs.transpose() + uw * (f_qs * f_qt.transpose() + f_qt * f_qs.transpose()) +
                   uu * f_qt * f_qt.transpose()) /
                  det;
    } else if (t_free && ww > T(0)) {
        hess_D -= f_qt * f_qt.transpose() / ww;
    } else if (s_free && uu > T(0)) {
        hess_D -= f_qs * f_qs.transpose() / uu;
    }
    finish_contact(out, coefficient, x, grad_D, hess_D, stiffness, radius_sum, true, onset);
    return out;
}

}  // namespace detail

/// The penalty contact of segments [a₀, a₁] and [b₀, b₁] (stacked in q) with
/// stiffness k (N/m) and contact distance r (m). `exact_hessian` false
/// leaves `hessian` zero and skips its implicit-function terms (callers that
/// assemble the Gauss–Newton stiffness only).
template <typename T>
WEFT_HD inline SegmentContact<T> segment_contact(const Vec<T, 12>& q, T stiffness, T radius_sum,
                                                 bool exact_hessian = true, T onset = T(0))
{
    const SegmentPairClosest<T> c = closest_segment_segment<T>(q.template segment<3>(0), q.template segment<3>(3),
                                                               q.template segment<3>(6), q.template segment<3>(9));
    return detail::segment_pair_penalty(q, c, stiffness, radius_sum, exact_hessian, onset);
}

/// The same penalty between the points a₀ + s (a₁ − a₀) and b₀ + t (b₁ − b₀)
/// at fixed parameters (s, t) (e.g. those of `stable_segment_parameters`):
/// d = |x| with x = Σ c_i q_i, so ∇D = Jᵀx and ∇²D = JᵀJ exactly
/// (no implicit-function terms), and the penalty is C¹ in q wherever d > 0,
/// whatever the segments' angle.
template <typename T>
WEFT_HD inline SegmentContact<T> segment_contact_at(const Vec<T, 12>& q, T s, T t, T stiffness, T radius_sum,
                                                    bool exact_hessian = true, T onset = T(0))
{
    const Vec3<T> a0 = q.template segment<3>(0), a1 = q.template segment<3>(3), b0 = q.template segment<3>(6),
                  b1 = q.template segment<3>(9);
    const Vec3<T> x = a0 + s * (a1 - a0) - b0 - t * (b1 - b0);
    SegmentContact<T> out;
    if (!detail::start_contact(out, s, t, x.squaredNorm(), radius_sum)) return out;
    const T coefficient[4] = {T(1) - s, s, -(T(1) - t), -t};
    Vec<T, 12> grad_D;
    Mat<T, 12, 12> hess_D;
    detail::distance_value_base(coefficient, x, grad_D, hess_D);
    detail::finish_contact(out, coefficient, x, grad_D, hess_D, stiffness, radius_sum, exact_hessian, onset);
    return out;
}

/// The same penalty on the distance from one end point of a segment pair
/// to the other segment (`end_point_parameters`, `part` 0–3: a₀, a₁, b₀,
/// b₁). The end point's parameter is fixed; the other segment's is free
/// (when its closest point is inside it), so the exact Hessian takes its
/// implicit-function term as segment_contact does. Fields as
/// SegmentContact; `exact_hessian` as there.
template <typename T>
WEFT_HD inline SegmentContact<T> end_point_contact(const Vec<T, 12>& q, int part, T stiffness, T radius_sum,
                                                   bool exact_hessian = true, T onset = T(0))
{
    const SegmentPairClosest<T> c = end_point_parameters<T>(q.template segment<3>(0), q.template segment<3>(3),
                                                            q.template segment<3>(6), q.template segment<3>(9), part);
    return detail::segment_pair_penalty(q, c, stiffness, radius_sum, exact_hessian, onset);
}

/// The contact of a point and a triangle, q = [p, x₀, x₁, x₂]: the same
/// penalty of the distance d from p to the triangle (closest point
/// x₀ + u (x₁ − x₀) + v (x₂ − x₀), proximity.hpp), with the same value-
/// function derivatives. The free directions of (u, v) are those of the
/// face (both), of the edge the closest point lies on (one), or none at a
/// corner. Fields as SegmentContact, with (s, t) = (u, v); `exact_hessian`
/// as for segment_contact.
template <typename T>
WEFT_HD inline SegmentContact<T> point_triangle_contact(const Vec<T, 12>& q, T stiffness, T radius_sum,
                                                        bool exact_hessian = true, T onset = T(0))
{
    const Vec3<T> p = q.template segment<3>(0), x0 = q.template segment<3>(3), x1 = q.template segment<3>(6),
                  x2 = q.template segment<3>(9);
    const PointTriangleClosest<T> c = closest_point_triangle<T>(p, x0, x1, x2);
    SegmentContact<T> out;
    if (!detail::start_contact(out, c.u, c.v, c.distance_squared, radius_sum)) return out;
    const T u = c.u, v = c.v;
    const Vec3<T> e1 = x1 - x0, e2 = x2 - x0;
    const Vec3<T> x = x0 + u * e1 + v * e2 - p;
    const T coefficient[4] = {T(-1), T(1) - u - v, u, v};
    Vec<T, 12> grad_D;
    Mat<T, 12, 12> hess_D;
    detail::distance_value_base(coefficient, x, grad_D, hess_D);
    if (!exact_hessian) {
        detail::finish_contact(out, coefficient, x, grad_D, hess_D, stiffness, radius_sum, false, onset);
        return out;
    }
    // ∂f/∂u = x·e₁, ∂f/∂v = x·e₂.
    const Vec<T, 12> f_qu = detail::parameter_cross_derivative(coefficient, e1, x, 1, 2);
    const Vec<T, 12> f_qv = detail::parameter_cross_derivative(coefficient, e2, x, 1, 3);
    const T a = e1.dot(e1), b = e1.dot(e2), cc = e2.dot(e2);
    const bool on_v0 = !(v > T(0)), on_u0 = !(u > T(0)), on_hypotenuse = u + v >= T(1) - T(1e-12);
    const int bounds = int(on_v0) + int(on_u0) + int(on_hypotenuse);
    const T det = a * cc - b * b;
    if (bounds == 0 && det > T(1e-12) * a * cc) {
        hess_D -= (cc * f_qu * f_qu.transpose() - b * (f_qu * f_qv.transpose() + f_qv * f_qu.transpose()) +
                   a * f_qv * f_qv.transpose()) /
                  det;
    } else if (bounds == 1) {
        // One free direction δ = (δu, δv) along the edge: f_qδ = δu f_qu + δv f_qv, f_δδ = δᵀ f_θθ δ.
        const T du = on_u0 ? T(0) : (on_v0 ? T(1) : T(-1));
        const T dv = on_u0 ? T(1) : (on_v0 ? T(0) : T(1));
        const Vec<T, 12> f_qd = du * f_qu + dv * f_qv;
        const T f_dd = du * du * a + T(2) * du * dv * b + dv * dv * cc;
        if (f_dd > T(0)) hess_D -= f_qd * f_qd.transpose() / f_dd;
    }
    detail::finish_contact(out, coefficient, x, grad_D, hess_D, stiffness, radius_sum, true, onset);
    return out;
}

/// Coulomb friction of a contact as a potential (as the colliders' in full
/// Newton, collider.hpp `lagged_friction`): with the contact's coefficients
/// c_i, normal n and Coulomb limit μλ taken at the start of the step (from
/// `lagged`, its SegmentContact there, λ = k (r − d)), the relative velocity of the closest points
/// v_rel = Σ c_i v_i, its tangential part P v_rel (P = I − n nᵀ), and the
/// mollified friction −μλ f₁(|P v_rel|) P v_rel/|P v_rel|, mapped to the
/// four points by c_i. It is the v-gradient of μλ f₀(|P Σ c_i v_i|), so its
/// ∂f/∂v is exact and symmetric, and since Σ c_i = 0 it exerts no net force.
/// `energy` is the dissipation potential μλ f₀; df_dq is zero (lagged).
template <typename T>
WEFT_HD inline LocalTerms<T, 12> contact_friction(const SegmentContact<T>& lagged, const Vec<T, 12>& v, T friction,
                                                  T slip_velocity)
{
    LocalTerms<T, 12> out = LocalTerms<T, 12>::zero();
    if (!lagged.active || lagged.degenerate || !(friction > T(0))) return out;
    const T limit = friction * lagged.normal_force;
    Vec3<T> relative = Vec3<T>::Zero();
    for (int i = 0; i < 4; ++i) relative += lagged.coefficient[i] * v.template segment<3>(3 * i);
    const LocalTerms<T, 3> f = lagged_friction<T>(relative, lagged.normal, limit, slip_velocity);
    out.energy = f.energy;
    for (int i = 0; i < 4; ++i) {
        out.force.template segment<3>(3 * i) = lagged.coefficient[i] * f.force;
        for (int j = 0; j < 4; ++j)
            out.df_dv.template block<3, 3>(3 * i, 3 * j) = lagged.coefficient[i] * lagged.coefficient[j] * f.df_dv;
    }
    return out;
}

}  // namespace weft
