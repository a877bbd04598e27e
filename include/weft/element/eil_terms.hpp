#pragma once
/// @file eil_terms.hpp
/// Element terms of EIL nodes (Eulerian with Interpolated Lagrangian, thesis
/// Sec. 4.2.3 and 4.3.2): the interpolated Lagrangian position of an EIL node
/// with its derivatives, and the stiff zero-rest-length contact spring that
/// replaces the implicit contact constraint (thesis Eq. 4.1) at an EIL node.
///
/// Stacked DoFs of one interpolation (9): [x_a (3), s_a, x_b (3), s_b, s],
/// a and b the bracketing EoL nodes on the EIL node's yarn, s the EIL node's
/// own arc length on that yarn. The first 8 are the (x, s) stack of the
/// bypassing segment (a, b), as `gather_xs` reads it.
///
/// Stretch across an EIL node needs no new element: `evaluate_yarn_segment`
/// (yarn_elements.hpp) takes any two node ids, and with the EIL node on the
/// straight line between a and b the stretch energy of (a, b) equals the sum
/// over (a, e) and (e, b) (thesis Sec. 4.2.3; tests/element/test_eil_terms.cpp).
/// The backend only has to build its segment and bend lists from consecutive
/// EoL nodes (model/eil_assignment.hpp: `eol_segments`, `eol_bends`).

#include <weft/core/error.hpp>
#include <weft/core/types.hpp>
#include <weft/element/yarn_terms.hpp>
#include <weft/strain/strain_eval.hpp>
#include <weft/strain/stretch.hpp>

namespace weft {

/// DoFs of one interpolated position: x_a, s_a, x_b, s_b, s.
constexpr int eil_interpolation_dofs = 9;

/// How the contact spring's stiffness −∂f/∂q is formed.
///  - exact: the Hessian of V, including k Σ_c r_c ∇²x_c of the
///    interpolation (indefinite in general: it couples s with x_a, x_b);
///  - gauss_newton: k Gᵀ G, G the Jacobian of the gap r; PSD by construction,
///    exact only where the gap is closed (r = 0). A spring that carries a
///    contact force F stands open by r = F/k, so the dropped k Σ r_c ∇²x_c
///    = F·∇²x does not vanish as k grows; it matters where the yarn turns
///    under the contact (docs/scenes.md, "The EIL springs' exact Hessian").
///    Full Newton's exact-Hessian iterations therefore take `exact`.
enum class EilSpringHessian { exact, gauss_newton };

/// Interpolated position of an EIL node and its first derivatives.
template <typename T>
struct EilInterpolation {
    Vec3<T> position;       ///< x(s) = (1 − t) x_a + t x_b, thesis Eq. (4.3)
    T weight;               ///< t = (s − s_a) / (s_b − s_a)
    T arc_length_span;      ///< s_b − s_a as used (clamped to the floor if degenerate)
    Mat<T, 3, 9> jacobian;  ///< ∂x/∂(x_a, s_a, x_b, s_b, s)
    StrainStatus status;    ///< ok, or degenerate_arc_length when s_b − s_a ≤ floor
};

/// Interpolated Lagrangian position of an EIL node, thesis Eq. (4.3), with
/// t = (s − s_a)/(s_b − s_a). t is not clamped to [0, 1]: within a step the
/// Newton iterates may slide s past a bracket, and the linear extrapolation
/// keeps V smooth; the next step's assignment re-sorts the nodes.
/// Degenerate span (s_b − s_a ≤ min_arc_length, including crossed brackets):
/// the span is clamped to the floor and treated as a constant, so the
/// derivatives are those of the clamped function (finite, status flagged).
/// @param[in] x_a, s_a  position and arc length of the EoL node before
/// @param[in] x_b, s_b  position and arc length of the EoL node after
/// @param[in] s         arc length of the EIL node
template <typename T>
WEFT_HD inline EilInterpolation<T> eil_interpolation(const Vec3<T>& x_a, T s_a, const Vec3<T>& x_b, T s_b, T s,
                                                     T min_arc_length = default_min_arc_length<T>())
{
    EilInterpolation<T> r;
    r.status = StrainStatus::ok;
    T span = s_b - s_a;
    const bool degenerate = !(span > min_arc_length);
    if (degenerate) {
        span = min_arc_length;
        r.status = StrainStatus::degenerate_arc_length;
    }
    const T t = (s - s_a) / span;
    const Vec3<T> dx = x_b - x_a;
    r.weight = t;
    r.arc_length_span = span;
    // thesis Eq. (4.3): x(s) = (s_b − s)/(s_b − s_a) x_a + (s − s_a)/(s_b − s_a) x_b
    r.position = x_a + t * dx;
    // ∂x/∂x_a = (1 − t) I, ∂x/∂x_b = t I, ∂x/∂s_k = Δx ∂t/∂s_k with
    // ∂t/∂s_a = −(1 − t)/Δs, ∂t/∂s_b = −t/Δs, ∂t/∂s = 1/Δs (Δs constant if clamped)
    const T dt_da = degenerate ? T(-1) / span : -(T(1) - t) / span;
    const T dt_db = degenerate ? T(0) : -t / span;
    const T dt_ds = T(1) / span;
    r.jacobian.setZero();
    r.jacobian.template block<3, 3>(0, 0) = (T(1) - t) * Mat3<T>::Identity();
    r.jacobian.template block<3, 3>(0, 4) = t * Mat3<T>::Identity();
    r.jacobian.template block<3, 1>(0, 3) = dt_da * dx;
    r.jacobian.template block<3, 1>(0, 7) = dt_db * dx;
    r.jacobian.template block<3, 1>(0, 8) = dt_ds * dx;
    return r;
}

/// Stacked-vector form of `eil_interpolation`: q = [x_a, s_a, x_b, s_b, s].
template <typename T>
WEFT_HD inline EilInterpolation<T> eil_interpolation(const Vec<T, 9>& q, T min_arc_length = default_min_arc_length<T>())
{
    return eil_interpolation<T>(q.template segment<3>(0), q(3), q.template segment<3>(4), q(7), q(8), min_arc_length);
}

/// Second derivatives of the interpolation contracted with a vector λ ∈ R³:
/// Σ_c λ_c ∇²x_c(q), 9 by 9 symmetric, q = [x_a, s_a, x_b, s_b, s]. This is
/// the curvature term of any energy V(x(q)) with λ = ∂V/∂x:
/// ∇²V = Jᵀ (∂²V/∂x²) J + Σ_c λ_c ∇²x_c.
/// Non-zero blocks: ∂²x/∂x_a∂s_k = −I ∂t/∂s_k, ∂²x/∂x_b∂s_k = I ∂t/∂s_k,
/// ∂²x/∂s_k∂s_l = Δx ∂²t/∂s_k∂s_l, with (Δs = s_b − s_a)
/// ∂²t/∂s_a² = −2(1−t)/Δs², ∂²t/∂s_a∂s_b = (1−2t)/Δs², ∂²t/∂s_a∂s = 1/Δs²,
/// ∂²t/∂s_b² = 2t/Δs², ∂²t/∂s_b∂s = −1/Δs², ∂²t/∂s² = 0.
/// With a clamped (degenerate) span t is linear in (s_a, s), so only the
/// mixed x–s blocks remain.
template <typename T>
WEFT_HD inline Mat<T, 9, 9> eil_interpolation_curvature(const Vec<T, 9>& q, const Vec3<T>& lambda,
                                                        T min_arc_length = default_min_arc_length<T>())
{
    T span = q(7) - q(3);
    const bool degenerate = !(span > min_arc_length);
    if (degenerate) span = min_arc_length;
    const T t = (q(8) - q(3)) / span;
    const Vec3<T> dx = q.template segment<3>(4) - q.template segment<3>(0);
    // ∇t over (s_a, s_b, s) and its Hessian
    const T g[3] = {degenerate ? T(-1) / span : -(T(1) - t) / span, degenerate ? T(0) : -t / span, T(1) / span};
    const int s_index[3] = {3, 7, 8};
    Mat<T, 9, 9> h = Mat<T, 9, 9>::Zero();
    for (int k = 0; k < 3; ++k) {
        const Vec3<T> mixed = g[k] * lambda;
        h.template block<3, 1>(0, s_index[k]) = -mixed;
        h.template block<1, 3>(s_index[k], 0) = -mixed.transpose();
        h.template block<3, 1>(4, s_index[k]) = mixed;
        h.template block<1, 3>(s_index[k], 4) = mixed.transpose();
    }
    if (!degenerate) {
        const T c = lambda.dot(dx) / (span * span);
        Mat3<T> tt;
        tt << -T(2) * (T(1) - t), T(1) - T(2) * t, T(1),  //
            T(1) - T(2) * t, T(2) * t, T(-1),             //
            T(1), T(-1), T(0);
        for (int k = 0; k < 3; ++k)
            for (int l = 0; l < 3; ++l) h(s_index[k], s_index[l]) = c * tt(k, l);
    }
    return h;
}

/// DoFs of an interpolation across a corner of the EoL polyline:
/// [x_a, s_a, x_b, s_b, x_c, s_c, s], the corner at b between the segments
/// (a, b) and (b, c).
constexpr int eil_corner_dofs = 13;

/// ρ of the corner window's half-width δ = ρ Δ_L Δ_R / (Δ_L + Δ_R)
/// (`eil_corner_interpolation`): at most half the shorter segment, so the
/// windows of two corners of one segment never overlap.
constexpr double eil_corner_rounding = 0.5;

/// The quintic smooth step of the corner window, φ(σ) = ½ + σ(15 − 10σ² +
/// 3σ⁴)/16 on (−1, 1), 0 below, 1 above, with φ' = 15/16 (1 − σ²)² and
/// φ'' = −15/4 σ (1 − σ²) (both 0 outside).
template <typename T>
struct CornerStep {
    T phi, dphi, ddphi;
};
template <typename T>
WEFT_HD inline CornerStep<T> corner_step(T sigma)
{
    CornerStep<T> r{sigma <= T(-1) ? T(0) : T(1), T(0), T(0)};
    if (sigma > T(-1) && sigma < T(1)) {
        const T s2 = sigma * sigma;
        const T w = T(1) - s2;
        r.phi = T(0.5) + sigma * (T(15) - s2 * (T(10) - T(3) * s2)) / T(16);
        r.dphi = T(15) / T(16) * w * w;
        r.ddphi = -T(15) / T(4) * sigma * w;
    }
    return r;
}

/// Interpolated position across a corner and its Jacobian.
template <typename T>
struct EilCornerInterpolation {
    Vec3<T> position;                     ///< x(s)
    Mat<T, 3, eil_corner_dofs> jacobian;  ///< ∂x/∂(x_a, s_a, x_b, s_b, x_c, s_c, s)
    StrainStatus status;                  ///< ok, or degenerate_arc_length (a span at the floor)
    Vec<T, eil_corner_dofs> dofs;         ///< the DoFs it was evaluated at
    int segment = -1;                     ///< −1: the rounded corner; 0, 1: Eq. (4.3) on (a, b), (b, c)
};

/// Eq. (4.3) on one segment of the corner layout, (a, b) (`segment` 0) or
/// (b, c) (1), extrapolating past its ends; the other node's DoFs take no
/// part (zero columns). For a yarn with no EoL node beyond a bracket end.
template <typename T>
WEFT_HD inline EilCornerInterpolation<T> eil_segment_interpolation(const Vec<T, eil_corner_dofs>& q, int segment,
                                                                   T min_arc_length = default_min_arc_length<T>())
{
    const int first = 4 * segment;
    Vec<T, 9> qi;
    qi.template head<8>() = q.template segment<8>(first);
    qi(8) = q(12);
    const EilInterpolation<T> lin = eil_interpolation<T>(qi, min_arc_length);
    EilCornerInterpolation<T> r;
    r.jacobian.setZero();
    r.position = lin.position;
    r.jacobian.template block<3, 8>(0, first) = lin.jacobian.template leftCols<8>();
    r.jacobian.col(12) = lin.jacobian.col(8);
    r.status = lin.status;
    r.dofs = q;
    r.segment = segment;
    return r;
}

/// The EoL polyline through a, b, c with its corner at b rounded, as a
/// function of arc length: x(s) = L(s) + φ(σ) (R(s) − L(s)), L and R the
/// linear interpolations of thesis Eq. (4.3) on (a, b) and (b, c), both
/// extended through b, σ = (s − s_b)/δ and φ the quintic smooth step
/// (0 for σ ≤ −1, 1 for σ ≥ 1, φ' = φ'' = 0 at ±1). Outside the window
/// |s − s_b| < δ this is Eq. (4.3) on the segment that holds s; inside it
/// x(s) is C² in every DoF where the polyline's x(s) has a kink at s_b.
/// Full Newton needs that: an EIL node whose equilibrium lies on an EoL
/// node's arc length (a contact resting on a crossing where its yarn turns)
/// otherwise sees a force that jumps there, and Newton's arc-length update
/// crosses the kink back and forth without converging (docs/scenes.md,
/// "The Jacobian that full Newton lacked"). With R − L = (s − s_b)(t_R − t_L),
/// t_L = (x_b − x_a)/Δ_L, t_R = (x_c − x_b)/Δ_R, Δ_L = s_b − s_a,
/// Δ_R = s_c − s_b and D = (s − s_b) φ:
///   x = x_a + (s − s_a) t_L + D (t_R − t_L),
/// a combination of x_a, x_b, x_c whose weights sum to 1, unchanged when
/// every arc length shifts by the same amount. δ = ρ Δ_L Δ_R/(Δ_L + Δ_R)
/// follows the spans (its derivatives are in the Jacobian).
/// A span at or below `min_arc_length`: no rounding, Eq. (4.3) on the
/// segment that holds s (status degenerate_arc_length where that one is).
template <typename T>
WEFT_HD inline EilCornerInterpolation<T> eil_corner_interpolation(const Vec<T, eil_corner_dofs>& q,
                                                                  T min_arc_length = default_min_arc_length<T>())
{
    EilCornerInterpolation<T> r;
    r.jacobian.setZero();
    r.dofs = q;
    r.segment = -1;
    const T s_a = q(3), s_b = q(7), s_c = q(11), s = q(12);
    const T span_l = s_b - s_a;
    const T span_r = s_c - s_b;
    if (!(span_l > min_arc_length) || !(span_r > min_arc_length))
        return eil_segment_interpolation<T>(q, s < s_b ? 0 : 1, min_arc_length);
    r.status = StrainStatus::ok;
    const Vec3<T> x_a = q.template segment<3>(0);
    const Vec3<T> x_b = q.template segment<3>(4);
    const Vec3<T> x_c = q.template segment<3>(8);
    const T sum = span_l + span_r;
    const T rho = T(eil_corner_rounding);
    const T delta = rho * span_l * span_r / sum;
    const T sigma = (s - s_b) / delta;
    const CornerStep<T> step = corner_step<T>(sigma);
    const T phi = step.phi, dphi = step.dphi;
    const Vec3<T> t_l = (x_b - x_a) / span_l;
    const Vec3<T> t_r = (x_c - x_b) / span_r;
    const Vec3<T> u = t_r - t_l;
    const T w_l = (s - s_a) / span_l;
    const T d = (s - s_b) * phi;
    const T p = phi + sigma * dphi;                    // ∂D/∂s
    const T dd = -sigma * sigma * dphi;                // ∂D/∂δ at fixed s − s_b
    const T dl = rho * span_r * span_r / (sum * sum);  // ∂δ/∂Δ_L
    const T dr = rho * span_l * span_l / (sum * sum);  // ∂δ/∂Δ_R
    r.position = x_a + (s - s_a) * t_l + d * u;
    const Mat3<T> id = Mat3<T>::Identity();
    r.jacobian.template block<3, 3>(0, 0) = (T(1) - w_l + d / span_l) * id;
    r.jacobian.template block<3, 3>(0, 4) = (w_l - d / span_l - d / span_r) * id;
    r.jacobian.template block<3, 3>(0, 8) = (d / span_r) * id;
    r.jacobian.col(3) = -(T(1) - w_l + d / span_l) * t_l - dd * dl * u;
    r.jacobian.col(7) = -w_l * t_l + d * (t_r / span_r + t_l / span_l) + (dd * (dl - dr) - p) * u;
    r.jacobian.col(11) = -(d / span_r) * t_r + dd * dr * u;
    r.jacobian.col(12) = t_l + p * u;
    return r;
}

namespace detail {
/// Gradient and Hessian of W = N/Δ from those of N and Δ (Δ linear):
/// ∇W = ∇N/Δ − N∇Δ/Δ², ∇²W = ∇²N/Δ − (∇N∇Δᵀ + ∇Δ∇Nᵀ)/Δ² + 2N∇Δ∇Δᵀ/Δ³.
template <typename T>
WEFT_HD inline void quotient_derivatives(T n, const Vec<T, 4>& gn, const Mat<T, 4, 4>& hn, T span, const Vec<T, 4>& gs,
                                         Vec<T, 4>& g, Mat<T, 4, 4>& h)
{
    const T span2 = span * span;
    g = gn / span - n * gs / span2;
    h = hn / span - (gn * gs.transpose() + gs * gn.transpose()) / span2 +
        T(2) * n * gs * gs.transpose() / (span2 * span);
}
}  // namespace detail

/// Second derivatives of an interpolation in the corner layout contracted
/// with λ ∈ R³: Σ_c λ_c ∇²x_c over (x_a, s_a, x_b, s_b, x_c, s_c, s), 13 by 13
/// symmetric, at the DoFs and in the form (`segment`) that `x` was evaluated
/// with (`eil_corner_interpolation`, `eil_segment_interpolation`): the
/// curvature term of the contact spring's exact Hessian.
/// The rounded corner x = x_a + W_L (x_b − x_a) + W_R (x_c − x_b), with the
/// arc-length weights W_L = (s − s_a − D)/Δ_L and W_R = D/Δ_R, is linear in
/// the positions for fixed arc lengths, so λᵀx = λᵀx_a + W_L a_L + W_R a_R
/// (a_L = λᵀ(x_b − x_a), a_R = λᵀ(x_c − x_b)) has
///   ∂²/∂x∂s_k = ∂W_L/∂s_k ∇_x a_L + ∂W_R/∂s_k ∇_x a_R,
///   ∂²/∂s_k∂s_l = a_L ∂²W_L + a_R ∂²W_R,  ∂²/∂x∂x = 0.
/// D(e, δ) = e φ(e/δ), e = s − s_b, δ = ρ Δ_L Δ_R/(Δ_L + Δ_R), with
/// D_e = φ + σφ', D_δ = −σ²φ', D_ee = (2φ' + σφ'')/δ,
/// D_eδ = −σ(2φ' + σφ'')/δ, D_δδ = σ²(2φ' + σφ'')/δ, σ = e/δ.
template <typename T>
WEFT_HD inline Mat<T, eil_corner_dofs, eil_corner_dofs> eil_corner_curvature(
    const EilCornerInterpolation<T>& x, const Vec3<T>& lambda, T min_arc_length = default_min_arc_length<T>())
{
    using Mat13 = Mat<T, eil_corner_dofs, eil_corner_dofs>;
    Mat13 h = Mat13::Zero();
    const Vec<T, eil_corner_dofs>& q = x.dofs;
    if (x.segment >= 0) {
        const int first = 4 * x.segment;
        Vec<T, 9> qi;
        qi.template head<8>() = q.template segment<8>(first);
        qi(8) = q(12);
        const Mat<T, 9, 9> c = eil_interpolation_curvature<T>(qi, lambda, min_arc_length);
        int index[9];
        for (int i = 0; i < 8; ++i) index[i] = first + i;
        index[8] = 12;
        for (int i = 0; i < 9; ++i)
            for (int j = 0; j < 9; ++j) h(index[i], index[j]) = c(i, j);
        return h;
    }
    // Arc-length variables in the order (s_a, s_b, s_c, s) = DoFs 3, 7, 11, 12.
    using V4 = Vec<T, 4>;
    using M4 = Mat<T, 4, 4>;
    const int s_index[4] = {3, 7, 11, 12};
    const T span_l = q(7) - q(3), span_r = q(11) - q(7), sum = span_l + span_r;
    const T rho = T(eil_corner_rounding);
    const T delta = rho * span_l * span_r / sum;
    const T e = q(12) - q(7);
    const T sigma = e / delta;
    const CornerStep<T> step = corner_step<T>(sigma);
    const T phi = step.phi, dphi = step.dphi, ddphi = step.ddphi;
    const T d = e * phi;
    const T d_e = phi + sigma * dphi;
    const T d_delta = -sigma * sigma * dphi;
    const T k = T(2) * dphi + sigma * ddphi;
    const T d_ee = k / delta, d_edelta = -sigma * k / delta, d_deltadelta = sigma * sigma * k / delta;
    const V4 grad_l(T(-1), T(1), T(0), T(0)), grad_r(T(0), T(-1), T(1), T(0)), grad_e(T(0), T(-1), T(0), T(1));
    const T sum3 = sum * sum * sum;
    const T delta_l = rho * span_r * span_r / (sum * sum), delta_r = rho * span_l * span_l / (sum * sum);
    const T delta_ll = -T(2) * rho * span_r * span_r / sum3, delta_rr = -T(2) * rho * span_l * span_l / sum3;
    const T delta_lr = T(2) * rho * span_l * span_r / sum3;
    const V4 grad_delta = delta_l * grad_l + delta_r * grad_r;
    const M4 hess_delta = delta_ll * grad_l * grad_l.transpose() +
                          delta_lr * (grad_l * grad_r.transpose() + grad_r * grad_l.transpose()) +
                          delta_rr * grad_r * grad_r.transpose();
    const V4 grad_d = d_e * grad_e + d_delta * grad_delta;
    const M4 hess_d = d_ee * grad_e * grad_e.transpose() +
                      d_edelta * (grad_e * grad_delta.transpose() + grad_delta * grad_e.transpose()) +
                      d_deltadelta * grad_delta * grad_delta.transpose() + d_delta * hess_delta;
    V4 g_l, g_r;
    M4 h_l, h_r;
    detail::quotient_derivatives<T>(q(12) - q(3) - d, V4(T(-1), T(0), T(0), T(1)) - grad_d, M4(-hess_d), span_l, grad_l,
                                    g_l, h_l);
    detail::quotient_derivatives<T>(d, grad_d, hess_d, span_r, grad_r, g_r, h_r);
    const Vec3<T> x_a = q.template segment<3>(0), x_b = q.template segment<3>(4), x_c = q.template segment<3>(8);
    const T a_l = lambda.dot(x_b - x_a), a_r = lambda.dot(x_c - x_b);
    for (int k2 = 0; k2 < 4; ++k2)
        for (int l = 0; l < 4; ++l) h(s_index[k2], s_index[l]) = a_l * h_l(k2, l) + a_r * h_r(k2, l);
    // ∇_x a_L = (−λ, λ, 0), ∇_x a_R = (0, −λ, λ) over (x_a, x_b, x_c)
    for (int k2 = 0; k2 < 4; ++k2) {
        const Vec3<T> at_a = -g_l(k2) * lambda;
        const Vec3<T> at_b = (g_l(k2) - g_r(k2)) * lambda;
        const Vec3<T> at_c = g_r(k2) * lambda;
        const int col = s_index[k2];
        h.template block<3, 1>(0, col) = at_a;
        h.template block<3, 1>(4, col) = at_b;
        h.template block<3, 1>(8, col) = at_c;
        h.template block<1, 3>(col, 0) = at_a.transpose();
        h.template block<1, 3>(col, 4) = at_b.transpose();
        h.template block<1, 3>(col, 8) = at_c.transpose();
    }
    return h;
}

/// Energy, force and stiffness of a contact spring, with the status of its
/// interpolation(s). `terms.df_dq` = −∇²V (exact or Gauss–Newton, as asked),
/// `terms.df_dv` = 0: the spring carries no damping of its own (the thesis
/// adds none; the yarn's own damping acts through the EoL nodes).
template <typename T, int N>
struct EilContactEval {
    LocalTerms<T, N> terms;
    Vec3<T> gap;          ///< r = x_interp − x_partner
    StrainStatus status;  ///< first non-ok status of the interpolation(s)
};

namespace detail {
/// V = ½ k |r|², r(q) with Jacobian G (3 by N) and curvature C = Σ_c r_c ∇²r_c:
/// ∇V = k Gᵀ r, ∇²V = k (Gᵀ G + C).
template <typename T, int N>
WEFT_HD inline LocalTerms<T, N> zero_length_spring(const Vec3<T>& gap, const Mat<T, 3, N>& gap_jacobian,
                                                   const Mat<T, N, N>& gap_curvature, T stiffness,
                                                   EilSpringHessian form)
{
    LocalTerms<T, N> t = LocalTerms<T, N>::zero();
    t.energy = T(0.5) * stiffness * gap.squaredNorm();
    t.force = -stiffness * (gap_jacobian.transpose() * gap);
    // −∇²V = −k (Gᵀ G + Σ_c r_c ∇²r_c)
    t.df_dq = -stiffness * (gap_jacobian.transpose() * gap_jacobian);
    if (form == EilSpringHessian::exact) t.df_dq -= stiffness * gap_curvature;
    return t;
}
}  // namespace detail

/// Contact spring between an EIL node and an EoL partner (thesis Sec. 4.3.2):
/// V = ½ k |x(s) − x_p|², x(s) of thesis Eq. (4.3), a soft form of the
/// contact constraint (4.1). In the 5-DoF node model x_p is the crossing
/// node's own x, which belongs to the other yarn where that node is EoL.
/// The force on the interpolated position is mapped to (x_a, s_a, x_b, s_b, s)
/// through the interpolation Jacobian.
/// @param[in] q  12 stacked DoFs [x_a, s_a, x_b, s_b, s, x_p]
/// @param[in] stiffness  k (N/m), see `eil_contact_stiffness`
template <typename T>
WEFT_HD inline EilContactEval<T, 12> eil_contact_spring(const Vec<T, 12>& q, T stiffness,
                                                        EilSpringHessian form = EilSpringHessian::gauss_newton,
                                                        T min_arc_length = default_min_arc_length<T>())
{
    const Vec<T, 9> qi = q.template head<9>();
    const EilInterpolation<T> x = eil_interpolation<T>(qi, min_arc_length);
    EilContactEval<T, 12> e;
    e.gap = x.position - q.template tail<3>();
    e.status = x.status;
    // G = [∂x/∂q_interp, −I]
    Mat<T, 3, 12> g;
    g.template block<3, 9>(0, 0) = x.jacobian;
    g.template block<3, 3>(0, 9) = -Mat3<T>::Identity();
    Mat<T, 12, 12> c = Mat<T, 12, 12>::Zero();
    if (form == EilSpringHessian::exact)
        c.template block<9, 9>(0, 0) = eil_interpolation_curvature<T>(qi, e.gap, min_arc_length);
    e.terms = detail::zero_length_spring<T, 12>(e.gap, g, c, stiffness, form);
    return e;
}

/// Contact spring between two EIL nodes, one on each yarn of a crossing
/// (thesis Sec. 4.3.2: "the constraint may be acting between two EIL nodes"):
/// V = ½ k |x₁(s) − x₂(s')|², each side interpolated by thesis Eq. (4.3) on
/// its own yarn. The crossing node's x DoFs take no part (they are filtered
/// while the node is EIL on both yarns).
/// @param[in] q  18 stacked DoFs [x_a, s_a, x_b, s_b, s | x_c, s'_c, x_d, s'_d, s'],
///               the first interpolation on the first yarn, the second on the other
template <typename T>
WEFT_HD inline EilContactEval<T, 18> eil_pair_contact_spring(const Vec<T, 18>& q, T stiffness,
                                                             EilSpringHessian form = EilSpringHessian::gauss_newton,
                                                             T min_arc_length = default_min_arc_length<T>())
{
    const Vec<T, 9> q1 = q.template head<9>();
    const Vec<T, 9> q2 = q.template tail<9>();
    const EilInterpolation<T> x1 = eil_interpolation<T>(q1, min_arc_length);
    const EilInterpolation<T> x2 = eil_interpolation<T>(q2, min_arc_length);
    EilContactEval<T, 18> e;
    e.gap = x1.position - x2.position;
    e.status = x1.status != StrainStatus::ok ? x1.status : x2.status;
    // G = [J₁, −J₂]; Σ_c r_c ∇²r_c = diag(Σ r_c ∇²x₁_c, −Σ r_c ∇²x₂_c)
    Mat<T, 3, 18> g;
    g.template block<3, 9>(0, 0) = x1.jacobian;
    g.template block<3, 9>(0, 9) = -x2.jacobian;
    Mat<T, 18, 18> c = Mat<T, 18, 18>::Zero();
    if (form == EilSpringHessian::exact) {
        c.template block<9, 9>(0, 0) = eil_interpolation_curvature<T>(q1, e.gap, min_arc_length);
        c.template block<9, 9>(9, 9) = eil_interpolation_curvature<T>(q2, Vec3<T>(-e.gap), min_arc_length);
    }
    e.terms = detail::zero_length_spring<T, 18>(e.gap, g, c, stiffness, form);
    return e;
}

/// `eil_contact_spring` on an interpolation in the 13-DoF corner layout
/// (`eil_corner_interpolation`, `eil_segment_interpolation`), over
/// [x_a, s_a, x_b, s_b, x_c, s_c, s, x_p]: stiffness k Gᵀ G (Gauss–Newton) or
/// the exact k (Gᵀ G + Σ_c r_c ∇²x_c) (`eil_corner_curvature`).
/// @param[in] x        the interpolated position on the EIL node's yarn
/// @param[in] partner  x_p, the node's own position (EoL on its other yarn)
template <typename T>
WEFT_HD inline EilContactEval<T, 16> eil_corner_contact_spring(const EilCornerInterpolation<T>& x,
                                                               const Vec3<T>& partner, T stiffness,
                                                               EilSpringHessian form = EilSpringHessian::gauss_newton)
{
    EilContactEval<T, 16> e;
    e.gap = x.position - partner;
    e.status = x.status;
    Mat<T, 3, 16> g;
    g.template block<3, 13>(0, 0) = x.jacobian;
    g.template block<3, 3>(0, 13) = -Mat3<T>::Identity();
    Mat<T, 16, 16> c = Mat<T, 16, 16>::Zero();
    if (form == EilSpringHessian::exact) c.template block<13, 13>(0, 0) = eil_corner_curvature<T>(x, e.gap);
    e.terms = detail::zero_length_spring<T, 16>(e.gap, g, c, stiffness, form);
    return e;
}

/// `eil_pair_contact_spring` on two interpolations in the corner layout,
/// over their 13 + 13 DoFs, Gauss–Newton or exact stiffness.
template <typename T>
WEFT_HD inline EilContactEval<T, 26> eil_corner_pair_contact_spring(
    const EilCornerInterpolation<T>& x1, const EilCornerInterpolation<T>& x2, T stiffness,
    EilSpringHessian form = EilSpringHessian::gauss_newton)
{
    EilContactEval<T, 26> e;
    e.gap = x1.position - x2.position;
    e.status = x1.status != StrainStatus::ok ? x1.status : x2.status;
    Mat<T, 3, 26> g;
    g.template block<3, 13>(0, 0) = x1.jacobian;
    g.template block<3, 13>(0, 13) = -x2.jacobian;
    Mat<T, 26, 26> c = Mat<T, 26, 26>::Zero();
    if (form == EilSpringHessian::exact) {
        c.template block<13, 13>(0, 0) = eil_corner_curvature<T>(x1, e.gap);
        c.template block<13, 13>(13, 13) = eil_corner_curvature<T>(x2, Vec3<T>(-e.gap));
    }
    e.terms = detail::zero_length_spring<T, 26>(e.gap, g, c, stiffness, form);
    return e;
}

/// Stiffness of the EIL contact spring (host side, validated): thesis
/// Sec. 4.3.2 uses 1000 × the effective stretch stiffness k_s/Δu of
/// rest-shape rod segments.
/// @param[in] stretch_stiffness    k_s (N), YarnMaterial::stretch_stiffness
/// @param[in] rest_segment_length  Δu of a rest-shape segment (m), e.g. the weave spacing
/// @param[in] factor               multiple of k_s/Δu (default 1000)
/// @return k (N/m)
/// @throws InvalidInput naming the offending argument and its value
template <typename T>
inline T eil_contact_stiffness(T stretch_stiffness, T rest_segment_length, T factor = T(1000))
{
    require_positive("stretch_stiffness", stretch_stiffness);
    require_positive("rest_segment_length", rest_segment_length);
    require_positive("eil contact stiffness factor", factor);
    const T k = factor * stretch_stiffness / rest_segment_length;
    return require_finite("eil contact stiffness", k);
}

}  // namespace weft
