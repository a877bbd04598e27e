#pragma once
/// @file dihedral.hpp
/// Bending strain of a triangle-mesh hinge: the signed dihedral angle θ of two
/// triangles sharing an edge, measured from its rest value and scaled into a
/// curvature, with its gradient, Hessian and rate. The triangle analogue of the
/// yarn angle strain ε_θ = θ/L (2018 Eq. 20, strain/bending.hpp), in the
/// discrete-shells form of Grinspun et al. 2003 ([GHDS03] in the 2018 paper).
///
/// DoFs (N = 12): q = [x₀, x₁, x₂, x₃] (3 each). The hinge edge is x₁–x₂; x₀
/// and x₃ are the opposite vertices of triangles A = (x₀, x₁, x₂) and
/// B = (x₃, x₂, x₁). A consistently oriented mesh traverses the shared edge
/// 1 → 2 in A and 2 → 1 in B, so that the normals
///     n_A = (x₁ − x₀) × (x₂ − x₀),   n_B = (x₂ − x₃) × (x₁ − x₃)
/// agree on a flat hinge. With e = x₂ − x₁,
///     θ = atan2((n_A × n_B)·e, |e| n_A·n_B) ∈ [−π, π]
/// (both arguments are θ's sine and cosine times r = |e||n_A||n_B| > 0; atan2,
/// never acos: TinyAD's pitfall list). Sign: θ > 0 when x₃ lies behind the
/// plane of A (on the side −n_A), i.e. a closed mesh with outward normals has
/// θ > 0 at convex edges.
///
/// Strain and energy (the exact form). With rest angle θ̄, rest edge length
/// |ē| and rest hinge area Ā = (Ā_A + Ā_B)/3 (a third of each rest triangle),
///     ε = wrap(θ − θ̄) |ē| / Ā,        Ω = Ā,
/// so that a QuadraticDensity Ψ_e = ½ k ε² gives (2018 Eq. 4)
///     V = Ω Ψ_e(ε) = ½ k (θ − θ̄)² |ē|² / Ā = ½ k (θ − θ̄)² |ē| / h̄,
/// the discrete-shells energy with h̄ = Ā/|ē| = (h̄_A + h̄_B)/6, a third of the
/// average rest height of the two triangles; its stiffness k_B is ½ k (the ½ is
/// the library's Ψ = ½ k ε² convention, 2017 Eq. 2). ε = Δθ/h̄ is the angle per
/// rest length across the edge, exactly as 2018 Eq. (20) is θ per rest length
/// L along the yarn; it has units 1/m, so k is in N·m (J) and a damping k_d
/// of Ψ_d = ½ k_d ε̇² (2018 Eq. 6) in N·m·s. Ω is Lagrangian (rest area):
/// size_gradient and size_hessian are zero.
///
/// Strain rate: ε̇ = ∇εᵀ q̇ (2017 Eq. 7). θ̇ is the (signed) counterpart of the
/// yarn's 2018 Eq. (21); with a constant Ω there is no −εΩ̇ term.
///
/// No small-angle form (2018 Eq. 22–24) is needed. The yarn angle is unsigned,
/// θ = atan2(|a×b|, a·b): its bending plane a×b/|a×b| is undefined at θ = 0,
/// so its gradient is too, and 2018 Sec. 5.2 blends in the vector strain k to
/// give the dissipative force a direction there. A hinge has its bending axis
/// built in, the shared edge: both triangle normals are defined at every angle
/// as long as the triangles are not degenerate, and θ is a signed, analytic
/// function of q through 0, where ∂θ/∂x₀ = −n̂_A/h_A and ∂θ/∂x₃ = −n̂_B/h_B
/// (h the triangle heights over the edge). Flat hinges (θ = 0) therefore get
/// an exact, finite gradient and Hessian and a well-defined dissipative force
/// direction, with no switch, no blend, and no status.
///
/// θ near ±π (the hinge folded flat onto itself): atan2's branch cut (first
/// argument changing sign with the second negative) makes θ jump by 2π, while
/// its gradient and Hessian are continuous across the cut. Only the wrapped
/// difference wrap(θ − θ̄) ∈ (−π, π] enters the strain, so ε is continuous
/// across the cut; it jumps (from +π|ē|/Ā to −π|ē|/Ā) only where θ is exactly
/// π away from θ̄, the energy's ridge, where unfolding either way lowers V and
/// the elastic force flips direction. For a flat rest hinge that ridge is the
/// fully folded state θ = ±π. ε̇, ∇ε and Hε, and hence the dissipative force,
/// are continuous everywhere.
///
/// Degenerate deformed triangles (finite fallback, status
/// `degenerate_triangle`): ∂θ/∂x₀ grows like 1/h_A and the Hessian like
/// 1/h_A² as triangle A collapses (and likewise for B, and for both when the
/// edge collapses, since |n| ≤ |e| × (side length)). When h_A or h_B is at or
/// below `min_relative_height`·|e| (i.e. |n| ≤ min_relative_height·|e|²),
/// or the input is not finite, the gradient, Hessian and rate are set to zero:
/// the bending direction is undefined, the hinge exerts no bending force until
/// the membrane restores the triangle, and the energy keeps its exact value
/// (ε from atan2, continuous at the threshold) as long as r > 0. Where r = 0
/// exactly (θ undefined), ε = 0.

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <weft/core/error.hpp>
#include <weft/core/math.hpp>
#include <weft/strain/green_strain.hpp>
#include <weft/strain/strain_eval.hpp>

namespace weft {

template <typename T>
using DihedralEval = StrainEval<T, 12, 1>;

/// Rest state of one hinge. Plain data, usable in device code; build it on the
/// host with `make_hinge_rest` (which validates it).
template <typename T>
struct HingeRest {
    T rest_angle;        ///< θ̄ ∈ (−π, π] (rad), same sign convention as θ
    T rest_edge_length;  ///< |ē| = |X₂ − X₁| (m)
    T rest_area;         ///< Ā = (Ā_A + Ā_B)/3 (m²), the element size Ω
};

/// Default floor of a deformed triangle's height relative to the hinge edge,
/// √ε_machine (1.5e-8 in double, 3.5e-4 in float): below it the exact Hessian
/// (∝ 1/h²) has lost about all its significant digits relative to the rest.
template <typename T>
WEFT_HD inline T default_min_relative_hinge_height()
{
    using std::sqrt;
    return sqrt(std::numeric_limits<T>::epsilon());
}

/// An angle difference wrapped to (−π, π] (for inputs in (−3π, 3π]).
template <typename T>
WEFT_HD inline T wrap_angle(T angle)
{
    const T pi = Constants<T>::pi;
    if (angle > pi) return angle - T(2) * pi;
    if (angle <= -pi) return angle + T(2) * pi;
    return angle;
}

namespace detail {

/// True for finite values (false for ±∞ and NaN), without <cmath> classification in device code.
template <typename T>
WEFT_HD inline bool is_finite_value(T value)
{
    return value - value == T(0);
}

/// The hinge's local vectors: n_A = a × b, n_B = c × d, e.
template <typename T>
struct HingeVectors {
    Vec3<T> a, b;  ///< x₁ − x₀, x₂ − x₀
    Vec3<T> c, d;  ///< x₂ − x₃, x₁ − x₃
    Vec3<T> edge;  ///< e = x₂ − x₁
    Vec3<T> normal_a, normal_b;
};

template <typename T>
WEFT_HD inline HingeVectors<T> hinge_vectors(const Vec3<T>& x0, const Vec3<T>& x1, const Vec3<T>& x2, const Vec3<T>& x3)
{
    HingeVectors<T> h;
    h.a = x1 - x0;
    h.b = x2 - x0;
    h.c = x2 - x3;
    h.d = x1 - x3;
    h.edge = x2 - x1;
    h.normal_a = h.a.cross(h.b);
    h.normal_b = h.c.cross(h.d);
    return h;
}

// Node coefficients of the factors of n_A = a × b and n_B = c × d: a = Σ_j α_j x_j etc.
template <typename T>
WEFT_HD inline Vec<T, 4> coefficients(T c0, T c1, T c2, T c3)
{
    Vec<T, 4> out;
    out(0) = c0;
    out(1) = c1;
    out(2) = c2;
    out(3) = c3;
    return out;
}

/// ∂(u × v)/∂q (3 by 12) for u = Σ_j α_j x_j, v = Σ_j β_j x_j:
// ∂(u×v)/∂x_j = α_j ∂(u×v)/∂u + β_j ∂(u×v)/∂v = −α_j [v]× + β_j [u]×
template <typename T>
WEFT_HD inline Mat<T, 3, 12> cross_jacobian(const Vec3<T>& u, const Vec3<T>& v, const Vec<T, 4>& alpha,
                                            const Vec<T, 4>& beta)
{
    const Mat3<T> cu = cross_matrix(u);
    const Mat3<T> cv = cross_matrix(v);
    Mat<T, 3, 12> j;
    for (int n = 0; n < 4; ++n) j.template block<3, 3>(0, 3 * n) = beta(n) * cu - alpha(n) * cv;
    return j;
}

/// Adds Σ_i w_i ∂²(u × v)_i/∂q² for the same u, v:
// w·(u×v) = −uᵀ[w]×v  ⇒  ∂²/∂x_j∂x_k = −α_jβ_k [w]× − β_jα_k [w]×ᵀ = (β_jα_k − α_jβ_k) [w]×
template <typename T>
WEFT_HD inline void add_weighted_cross_hessian(Mat<T, 12, 12>& h, const Vec3<T>& w, const Vec<T, 4>& alpha,
                                               const Vec<T, 4>& beta)
{
    const Mat3<T> cw = cross_matrix(w);
    for (int j = 0; j < 4; ++j) {
        for (int k = 0; k < 4; ++k) {
            const T coefficient = beta(j) * alpha(k) - alpha(j) * beta(k);
            if (coefficient != T(0)) h.template block<3, 3>(3 * j, 3 * k) += coefficient * cw;
        }
    }
}

}  // namespace detail

/// The signed dihedral angle θ = atan2((n_A × n_B)·e, |e| n_A·n_B) ∈ [−π, π]
/// of the hinge (x₀, x₁, x₂, x₃) (see the file comment for the orientation).
/// 0 where it is undefined (r = |e||n_A||n_B| = 0, or non-finite input).
template <typename T>
WEFT_HD inline T dihedral_angle(const Vec3<T>& x0, const Vec3<T>& x1, const Vec3<T>& x2, const Vec3<T>& x3)
{
    using std::atan2;
    const detail::HingeVectors<T> h = detail::hinge_vectors(x0, x1, x2, x3);
    const T y = h.normal_a.cross(h.normal_b).dot(h.edge);
    const T x = h.edge.norm() * h.normal_a.dot(h.normal_b);
    const T r = h.edge.norm() * h.normal_a.norm() * h.normal_b.norm();
    const bool defined =
        r > T(0) && detail::is_finite_value(r) && detail::is_finite_value(y) && detail::is_finite_value(x);
    return defined ? atan2(y, x) : T(0);
}

/// θ with its gradient and Hessian w.r.t. q = [x₀, x₁, x₂, x₃].
template <typename T>
struct DihedralAngleDerivatives {
    T angle;                 ///< θ ∈ [−π, π]
    bool angle_defined;      ///< false where r = |e||n_A||n_B| = 0 or the input is not finite (angle = 0)
    Vec<T, 12> gradient;     ///< ∂θ/∂q (zero when status ≠ ok)
    Mat<T, 12, 12> hessian;  ///< ∂²θ/∂q², exactly symmetric (zero when status ≠ ok)
    StrainStatus status;     ///< ok or degenerate_triangle
};

/// θ(q) with analytic derivatives, by the chain rule through the local
/// variables z = (n_A, n_B, e) ∈ R⁹ with Z = ∂z/∂q (9 by 12):
///     θ = atan2(y, x),  y = (n_A × n_B)·e,  x = |e| (n_A·n_B),  r = |e||n_A||n_B| = √(x² + y²).
/// Every quantity is divided by r before it is squared, so the code works
/// in float for millimetre-scale meshes (x² ~ L¹⁰ would underflow).
/// @param[in] q  12 stacked positions [x₀, x₁, x₂, x₃]
/// @param[in] min_relative_height  fallback when h_A or h_B ≤ this × |e|
///            (status `degenerate_triangle`, zero derivatives; file comment)
template <typename T>
WEFT_HD inline DihedralAngleDerivatives<T> dihedral_angle_derivatives(
    const Vec<T, 12>& q, T min_relative_height = default_min_relative_hinge_height<T>())
{
    using std::atan2;
    DihedralAngleDerivatives<T> out;
    out.status = StrainStatus::ok;
    const detail::HingeVectors<T> h = detail::hinge_vectors<T>(q.template segment<3>(0), q.template segment<3>(3),
                                                               q.template segment<3>(6), q.template segment<3>(9));
    const Vec3<T>& na = h.normal_a;
    const Vec3<T>& nb = h.normal_b;
    const Vec3<T>& e = h.edge;
    const T edge_length = e.norm();
    const T na_dot_nb = na.dot(nb);
    const T y = na.cross(nb).dot(e);
    const T x = edge_length * na_dot_nb;
    const T r = edge_length * na.norm() * nb.norm();

    out.angle_defined =
        r > T(0) && detail::is_finite_value(r) && detail::is_finite_value(y) && detail::is_finite_value(x);
    out.angle = out.angle_defined ? atan2(y, x) : T(0);
    // h_A = |n_A|/|e| ≤ floor·|e|  ⇔  |n_A| ≤ floor·|e|² (also catches |e| = 0 and non-finite input)
    const T min_normal = min_relative_height * edge_length * edge_length;
    if (!out.angle_defined || !(na.norm() > min_normal) || !(nb.norm() > min_normal)) {
        out.gradient.setZero();
        out.hessian.setZero();
        out.status = StrainStatus::degenerate_triangle;
        return out;
    }

    const T inv_r = T(1) / r;
    const T cos_t = x * inv_r;
    const T sin_t = y * inv_r;
    const Vec3<T> e_hat = e / edge_length;

    // Z = ∂(n_A, n_B, e)/∂q with a = x₁ − x₀, b = x₂ − x₀, c = x₂ − x₃, d = x₁ − x₃, e = x₂ − x₁
    const Vec<T, 4> alpha_a = detail::coefficients<T>(-1, 1, 0, 0);  // a
    const Vec<T, 4> beta_a = detail::coefficients<T>(-1, 0, 1, 0);   // b
    const Vec<T, 4> alpha_b = detail::coefficients<T>(0, 0, 1, -1);  // c
    const Vec<T, 4> beta_b = detail::coefficients<T>(0, 1, 0, -1);   // d
    Mat<T, 9, 12> z_jacobian = Mat<T, 9, 12>::Zero();
    z_jacobian.template block<3, 12>(0, 0) = detail::cross_jacobian(h.a, h.b, alpha_a, beta_a);
    z_jacobian.template block<3, 12>(3, 0) = detail::cross_jacobian(h.c, h.d, alpha_b, beta_b);
    z_jacobian.template block<3, 3>(6, 3) = -Mat3<T>::Identity();
    z_jacobian.template block<3, 3>(6, 6) = Mat3<T>::Identity();

    // ∇_z y = (n_B × e, e × n_A, n_A × n_B),  ∇_z x = (|e| n_B, |e| n_A, (n_A·n_B) ê), both divided by r
    Vec<T, 9> u;
    u.template segment<3>(0) = nb.cross(e) * inv_r;
    u.template segment<3>(3) = e.cross(na) * inv_r;
    u.template segment<3>(6) = na.cross(nb) * inv_r;
    Vec<T, 9> w;
    w.template segment<3>(0) = (edge_length * inv_r) * nb;
    w.template segment<3>(3) = (edge_length * inv_r) * na;
    w.template segment<3>(6) = (na_dot_nb * inv_r) * e_hat;

    // ∇θ = (x∇y − y∇x)/r² = cosθ ∇y/r − sinθ ∇x/r;  ∇_q θ = Zᵀ ∇_z θ
    const Vec<T, 9> grad_z = cos_t * u - sin_t * w;
    out.gradient = z_jacobian.transpose() * grad_z;

    // H_z θ = (cosθ H_z y − sinθ H_z x)/r − 2 cosθ sinθ (uuᵀ − wwᵀ) + (sin²θ − cos²θ)(uwᵀ + wuᵀ), from
    // θ_yy = −2xy/r⁴, θ_xx = 2xy/r⁴, θ_xy = (y² − x²)/r⁴, θ_y = x/r², θ_x = −y/r².
    // H_z y (y = −n_Aᵀ[e]×n_B = n_Aᵀ[n_B]×e = −n_Bᵀ[n_A]×e): (A,B) −[e]×, (A,E) [n_B]×, (B,E) −[n_A]×;
    // H_z x: (A,B) |e| I, (A,E) n_B êᵀ, (B,E) n_A êᵀ, (E,E) (n_A·n_B)(I − êêᵀ)/|e|; lower blocks transposed.
    Mat<T, 9, 9> hess_z = Mat<T, 9, 9>::Zero();
    const T cr = cos_t * inv_r;
    const T sr = sin_t * inv_r;
    const Mat3<T> block_ab = -cr * cross_matrix(e) - (sr * edge_length) * Mat3<T>::Identity();
    const Mat3<T> block_ae = cr * cross_matrix(nb) - sr * (nb * e_hat.transpose());
    const Mat3<T> block_be = -cr * cross_matrix(na) - sr * (na * e_hat.transpose());
    const Mat3<T> block_ee = (-sr * na_dot_nb / edge_length) * (Mat3<T>::Identity() - e_hat * e_hat.transpose());
    hess_z.template block<3, 3>(0, 3) = block_ab;
    hess_z.template block<3, 3>(3, 0) = block_ab.transpose();
    hess_z.template block<3, 3>(0, 6) = block_ae;
    hess_z.template block<3, 3>(6, 0) = block_ae.transpose();
    hess_z.template block<3, 3>(3, 6) = block_be;
    hess_z.template block<3, 3>(6, 3) = block_be.transpose();
    hess_z.template block<3, 3>(6, 6) = block_ee;
    const Mat<T, 9, 9> uw = u * w.transpose();
    hess_z += (T(-2) * cos_t * sin_t) * (u * u.transpose() - w * w.transpose()) +
              (sin_t * sin_t - cos_t * cos_t) * (uw + uw.transpose());

    // H_q θ = Zᵀ H_z θ Z + Σ_i (∂θ/∂n_A,i) H_q n_A,i + Σ_i (∂θ/∂n_B,i) H_q n_B,i   (e is linear in q)
    Mat<T, 12, 12> hessian = sandwich<T, 12, 9, 12>(z_jacobian.transpose(), hess_z, z_jacobian.transpose());
    detail::add_weighted_cross_hessian<T>(hessian, grad_z.template segment<3>(0), alpha_a, beta_a);
    detail::add_weighted_cross_hessian<T>(hessian, grad_z.template segment<3>(3), alpha_b, beta_b);
    // Exact symmetry (the triple product above rounds its two triangles differently).
    out.hessian = T(0.5) * (hessian + hessian.transpose());
    return out;
}

/// The same from precomputed θ derivatives (shared with the element, which also reports θ).
template <typename T>
WEFT_HD inline DihedralEval<T> dihedral_bending_strain_from(const HingeRest<T>& rest,
                                                            const DihedralAngleDerivatives<T>& angle,
                                                            const Vec<T, 12>& v)
{
    DihedralEval<T> e;
    e.status = angle.status;
    // Discrete-shells scaling |ē|/Ā = 1/h̄ (Grinspun et al. 2003), the hinge's 1/L of 2018 Eq. (20)
    const T scale = rest.rest_edge_length / rest.rest_area;
    const T theta = angle.angle_defined ? angle.angle : rest.rest_angle;
    e.strain(0) = scale * wrap_angle(theta - rest.rest_angle);
    e.gradient.col(0) = scale * angle.gradient;
    e.hessian[0] = scale * angle.hessian;
    // 2017 Eq. (7): ε̇ = ∇εᵀ q̇ (Ω constant: no −εΩ̇/Ω term)
    e.set_rate_from(v);
    // Ω = Ā, Lagrangian (2018 Eq. 4)
    e.size = rest.rest_area;
    e.size_gradient.setZero();
    e.size_hessian.setZero();
    return e;
}

/// ε = wrap(θ − θ̄)|ē|/Ā with Ω = Ā, its gradient, Hessian and rate (see the
/// file comment for the exact form, the branch cut and the fallback).
/// @param[in] rest  rest state from `make_hinge_rest`
/// @param[in] q     12 stacked positions [x₀, x₁, x₂, x₃]
/// @param[in] v     12 stacked velocities
/// @param[in] min_relative_height  degenerate-triangle floor (h ≤ floor·|e|)
template <typename T>
WEFT_HD inline DihedralEval<T> dihedral_bending_strain(const HingeRest<T>& rest, const Vec<T, 12>& q,
                                                       const Vec<T, 12>& v,
                                                       T min_relative_height = default_min_relative_hinge_height<T>())
{
    return dihedral_bending_strain_from(rest, dihedral_angle_derivatives(q, min_relative_height), v);
}
namespace detail {

template <typename T>
inline std::string describe_point(const Vec3<T>& p)
{
    std::ostringstream os;
    os.precision(17);
    os << "(" << p(0) << ", " << p(1) << ", " << p(2) << ")";
    return os.str();
}

}  // namespace detail

/// Validates a hinge rest state (e.g. one built by hand).
/// @throws InvalidInput naming the field and its value.
template <typename T>
inline void validate_hinge_rest(const HingeRest<T>& rest)
{
    require_finite("hinge rest angle", rest.rest_angle);
    if (!(rest.rest_angle > -Constants<T>::pi && rest.rest_angle <= Constants<T>::pi)) {
        throw InvalidInput(detail::describe("hinge rest angle", rest.rest_angle, "must be in (-pi, pi] (rad)"));
    }
    require_positive("hinge rest edge length", rest.rest_edge_length);
    require_positive("hinge rest area", rest.rest_area);
}

/// Rest state from the rest angle, edge length and the two rest triangle areas.
/// @param[in] rest_angle  θ̄ in [−π, π] (rad); −π is stored as π
/// @param[in] rest_edge_length  |ē| (m)
/// @param[in] rest_area_a, rest_area_b  areas of triangles (x₀, x₁, x₂) and (x₃, x₂, x₁) (m²)
/// @param[in] min_relative_area  rejects an area ≤ min_relative_area·|ē|²
///            (a rest height ≤ 2·min_relative_area·|ē|, which would make |ē|/Ā blow up)
/// @throws InvalidInput naming the field and its value.
template <typename T>
inline HingeRest<T> make_hinge_rest(T rest_angle, T rest_edge_length, T rest_area_a, T rest_area_b,
                                    T min_relative_area = default_min_relative_rest_area<T>())
{
    require_finite("hinge rest angle", rest_angle);
    if (!(std::abs(rest_angle) <= Constants<T>::pi)) {
        throw InvalidInput(detail::describe("hinge rest angle", rest_angle, "must be in [-pi, pi] (rad)"));
    }
    require_positive("hinge rest edge length", rest_edge_length);
    const T min_area = min_relative_area * rest_edge_length * rest_edge_length;
    const char* area_names[2] = {"hinge rest area of triangle (x0, x1, x2)",
                                 "hinge rest area of triangle (x3, x2, x1)"};
    const T areas[2] = {rest_area_a, rest_area_b};
    for (int t = 0; t < 2; ++t) {
        require_finite(area_names[t], areas[t]);
        if (!(areas[t] > min_area)) {
            std::ostringstream requirement;
            requirement.precision(17);
            requirement << "must be > " << min_area << " (" << min_relative_area << " x rest edge length squared)";
            throw InvalidInput(detail::describe(area_names[t], areas[t], requirement.str().c_str()));
        }
    }
    HingeRest<T> rest{wrap_angle(rest_angle), rest_edge_length, (rest_area_a + rest_area_b) / T(3)};
    validate_hinge_rest(rest);
    return rest;
}

/// Rest state from the four rest positions (θ̄ by the same atan2 as θ).
/// @param[in] x0, x1, x2, x3  rest positions (m); edge x₁–x₂, see the file comment for the orientation
/// @param[in] min_relative_area  rejects a triangle of area ≤ min_relative_area·(its longest edge)²,
///            the criterion of make_triangle_rest
/// @throws InvalidInput naming the position, the edge length or the triangle area, with its value.
template <typename T>
inline HingeRest<T> make_hinge_rest(const Vec3<T>& x0, const Vec3<T>& x1, const Vec3<T>& x2, const Vec3<T>& x3,
                                    T min_relative_area = default_min_relative_rest_area<T>())
{
    const Vec3<T>* points[4] = {&x0, &x1, &x2, &x3};
    for (int n = 0; n < 4; ++n) {
        if (!points[n]->allFinite()) {
            throw InvalidInput("invalid hinge rest position x" + std::to_string(n) + " = " +
                               detail::describe_point(*points[n]) + ": must be finite");
        }
    }
    const detail::HingeVectors<T> h = detail::hinge_vectors(x0, x1, x2, x3);
    const T edge_length = h.edge.norm();
    require_positive("hinge rest edge length |x2 - x1|", edge_length);

    struct Triangle {
        const char* name;
        T area;
        T longest_sq;
    };
    const Triangle triangles[2] = {{"hinge rest area of triangle (x0, x1, x2)", T(0.5) * h.normal_a.norm(),
                                    std::max({h.a.squaredNorm(), h.b.squaredNorm(), h.edge.squaredNorm()})},
                                   {"hinge rest area of triangle (x3, x2, x1)", T(0.5) * h.normal_b.norm(),
                                    std::max({h.c.squaredNorm(), h.d.squaredNorm(), h.edge.squaredNorm()})}};
    for (const Triangle& t : triangles) {
        const T min_area = min_relative_area * t.longest_sq;
        if (!(t.area > min_area)) {
            std::ostringstream requirement;
            requirement.precision(17);
            requirement << "must be > " << min_area << " (" << min_relative_area
                        << " x longest rest edge squared); rest positions x0 = " << detail::describe_point(x0)
                        << ", x1 = " << detail::describe_point(x1) << ", x2 = " << detail::describe_point(x2)
                        << ", x3 = " << detail::describe_point(x3);
            throw InvalidInput(detail::describe(t.name, t.area, requirement.str().c_str()));
        }
    }
    HingeRest<T> rest{wrap_angle(dihedral_angle(x0, x1, x2, x3)), edge_length,
                      (triangles[0].area + triangles[1].area) / T(3)};
    validate_hinge_rest(rest);
    return rest;
}

}  // namespace weft
