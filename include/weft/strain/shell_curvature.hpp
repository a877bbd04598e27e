#pragma once
/// @file shell_curvature.hpp
/// Bending strain of a triangle-mesh shell: the change of the second
/// fundamental form b of each triangle, b = n · ∂²x, with ∂²x the constant
/// second derivatives of a quadratic that a small stencil of vertices
/// determines, with gradient, Hessians and rate. Written for the 2018
/// paper's generic elastic and dissipative layers (Sec. 3.3–3.4):
/// ε = b − b̄ is a strain like the membrane's Green strain, and a StVK-form
/// density of it,
///     Ψ = λ_b/2 tr(ε)² + μ_b tr(ε²),  λ_b = D ν,  μ_b = D (1 − ν)/2,
/// is the Kirchhoff plate energy density ½ D [(tr ε)² − 2 (1 − ν) det ε]
/// (since tr(ε²) = (tr ε)² − 2 det ε for 2 × 2), D = E h³ / 12 (1 − ν²).
///
/// Stencil. Per triangle, b = n · w with w^{ab} = Σ_i c_i^{ab} x_i over up
/// to `curvature_stencil_nodes` vertices (the triangle's corners in slots
/// 0–2), n = (x₁ − x₀) × (x₂ − x₀) / |…| the triangle's unit normal. The
/// weights c are rest data; model/curvature_stencils.hpp builds them as a
/// rotation-free Morley element: the quadratic on the triangle takes the
/// corner values and, at each edge midpoint, a normal slope that the
/// triangle shares with its neighbour (the mean of the two triangles' six-
/// vertex patch quadratics, Oñate & Zárate 2000's patch). The shared slopes
/// make the piecewise quadratic weakly C¹ across edges, as Morley's
/// non-conforming plate element is, so the discrete plate converges to the
/// plate's solution; a triangle's own six-vertex patch alone gives the right
/// energy for smooth shapes but, on alternating meshes, a clamped strip that
/// sags more as the mesh is refined (1.13× and 1.17× the beam's deflection
/// at 20 and 40 elements; measured, docs/triangles.md). Whatever the stencil, its weights
/// reproduce quadratics: Σ_i c_i = 0 and Σ_i c_i p_i = 0, so translations
/// and in-plane maps of the rest sheet have no bending.
///
/// Strain. ε = b − b̄ in Voigt order (11, 22, 12), ε₁₂ stored once, b̄ the
/// same quantity of the rest shape (0 for a flat rest), in an orthonormal
/// frame of the triangle's rest plane. Rigid motions rotate n and w
/// together: b is invariant, so ∇εᵀ v = 0 for a rigid velocity and
/// strain-rate damping never damps rigid motion (2018 Eq. 1). Ω is the rest
/// area of the triangle (Lagrangian: size_gradient and size_hessian are
/// zero).
///
/// Derivatives. With c = e₁ × e₂ (e₁ = x₁ − x₀, e₂ = x₂ − x₀), r = |c|,
/// P = I − n nᵀ and g_k = P w_k / r,
///     ∂b_k/∂x_i = c_i^k n + [i ≤ 2] (∂c/∂x_i)ᵀ g_k,
/// and the Hessian adds, for the corner slots, ∂n/∂x_j = P ∂c/∂x_j / r,
/// the second derivative of n contracted with w_k,
///     Q_k = −[n (P w_k)ᵀ + (P w_k) nᵀ + (n·w_k) P] / r²,
/// and the bilinear part of c = e₁ × e₂ contracted with g_k.
///
/// Degenerate deformed triangle (status `degenerate_triangle`): when
/// r ≤ min_relative_height · max(|e₁|², |e₂|²) (or the input is not finite),
/// n is undefined; strain, gradient, Hessians and rate are zero, so the
/// element exerts no force until the membrane restores the triangle.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include <weft/core/error.hpp>
#include <weft/strain/dihedral.hpp>
#include <weft/strain/strain_eval.hpp>

namespace weft {

/// Vertices of a curvature stencil (slots; unused ones have zero weights).
constexpr int curvature_stencil_nodes = 12;
/// Vertices of a quadratic patch fit (the triangle's corners and three more).
constexpr int curvature_patch_nodes = 6;

template <typename T, int K = curvature_stencil_nodes>
using ShellCurvatureEval = StrainEval<T, 3 * K, 3>;

/// Rest state of one triangle's curvature with K stencil slots. Plain data,
/// usable in device code; build it on the host with
/// `make_shell_curvature_rest` (K = curvature_stencil_nodes), and narrow it
/// to fewer slots with `narrow_shell_curvature_rest` where the last ones are
/// unused (the assembly then writes K² blocks instead of 144).
template <typename T, int K = curvature_stencil_nodes>
struct ShellCurvatureRest {
    static constexpr int slots = K;
    T coefficient[K][3];  ///< c_i^{ab}, (ab) = (11, 22, 12), in 1/m²; slots 0–2 the corners
    T rest_curvature[3];  ///< b̄ (1/m), Voigt (11, 22, 12)
    T rest_area;          ///< Ā of the triangle (m²), the element size Ω
};

/// A quadratic through six points of the plane, u = Σ a_k m_k(s) in the
/// monomials m = (1, s₁, s₂, s₁², s₁s₂, s₂²) of s = (p − mean)/scale:
/// a = V⁻¹ u. Host-side construction data.
struct QuadraticPatchFit {
    double inverse[6][6];  ///< V⁻¹ (row k: the weights of a_k on the six values)
    Vec2<double> mean;
    double scale;
    double sum_squares;  ///< Σ of the squared scaled Hessian weights: the fit's noise amplification
};

namespace detail {

template <typename T>
WEFT_HD inline Mat3<T> cross_matrix(const Vec3<T>& a)
{
    Mat3<T> m;
    m << T(0), -a(2), a(1), a(2), T(0), -a(0), -a(1), a(0), T(0);
    return m;
}

/// Inverse of a 6 × 6 matrix by Gauss–Jordan elimination with partial
/// pivoting (written out: Eigen's decompositions are host-device functions,
/// which nvcc warns about when host code calls them, docs/api.md). Returns
/// |det|, 0 when singular.
inline double invert_6x6(const double (&a_in)[6][6], double (&inverse)[6][6])
{
    double a[6][12];
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) {
            a[i][j] = a_in[i][j];
            a[i][6 + j] = i == j ? 1 : 0;
        }
    double determinant = 1;
    for (int col = 0; col < 6; ++col) {
        int pivot = col;
        for (int i = col + 1; i < 6; ++i)
            if (std::abs(a[i][col]) > std::abs(a[pivot][col])) pivot = i;
        if (pivot != col)
            for (int j = 0; j < 12; ++j) std::swap(a[pivot][j], a[col][j]);
        determinant *= a[col][col];
        if (!(std::abs(a[col][col]) > 0)) return 0;
        const double inv = 1 / a[col][col];
        for (int j = 0; j < 12; ++j) a[col][j] *= inv;
        for (int i = 0; i < 6; ++i) {
            if (i == col || a[i][col] == 0) continue;
            const double f = a[i][col];
            for (int j = 0; j < 12; ++j) a[i][j] -= f * a[col][j];
        }
    }
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) inverse[i][j] = a[i][6 + j];
    return std::abs(determinant);
}

}  // namespace detail

/// The quadratic through six points (any orthonormal 2-D frame). Returns
/// false when they lie on a conic (no unique quadratic through them), judged
/// on the points scaled to unit RMS distance from their mean: |det| of the
/// 6 × 6 system below `min_determinant`.
inline bool fit_quadratic_patch(const Vec2<double> (&points)[curvature_patch_nodes], QuadraticPatchFit& fit,
                                double min_determinant = 1e-6)
{
    fit.mean = Vec2<double>::Zero();
    for (const auto& p : points) fit.mean += p / curvature_patch_nodes;
    fit.scale = 0;
    for (const auto& p : points) fit.scale += (p - fit.mean).squaredNorm() / curvature_patch_nodes;
    fit.scale = std::sqrt(fit.scale);
    if (!(fit.scale > 0) || !std::isfinite(fit.scale)) return false;
    double v[6][6];
    for (int i = 0; i < curvature_patch_nodes; ++i) {
        const Vec2<double> s = (points[i] - fit.mean) / fit.scale;
        const double row[6] = {1, s(0), s(1), s(0) * s(0), s(0) * s(1), s(1) * s(1)};
        for (int j = 0; j < 6; ++j) v[i][j] = row[j];
    }
    if (!(detail::invert_6x6(v, fit.inverse) > min_determinant)) return false;
    fit.sum_squares = 0;
    for (int i = 0; i < curvature_patch_nodes; ++i)
        for (const double w : {2 * fit.inverse[3][i], 2 * fit.inverse[5][i], fit.inverse[4][i]})
            fit.sum_squares += w * w;
    return true;
}

/// The fit's constant second derivatives (∂₁₁, ∂₂₂, ∂₁₂) as weights on the six values.
inline void quadratic_patch_hessian_weights(const QuadraticPatchFit& fit, double (&weights)[curvature_patch_nodes][3])
{
    const double s2 = fit.scale * fit.scale;
    for (int i = 0; i < curvature_patch_nodes; ++i) {
        weights[i][0] = 2 * fit.inverse[3][i] / s2;
        weights[i][1] = 2 * fit.inverse[5][i] / s2;
        weights[i][2] = fit.inverse[4][i] / s2;
    }
}

/// The fit's gradient at `point` as weights on the six values.
inline void quadratic_patch_gradient_weights(const QuadraticPatchFit& fit, const Vec2<double>& point,
                                             double (&weights)[curvature_patch_nodes][2])
{
    const Vec2<double> s = (point - fit.mean) / fit.scale;
    for (int i = 0; i < curvature_patch_nodes; ++i) {
        const double(&a)[6][6] = fit.inverse;
        weights[i][0] = (a[1][i] + 2 * s(0) * a[3][i] + s(1) * a[4][i]) / fit.scale;
        weights[i][1] = (a[2][i] + s(0) * a[4][i] + 2 * s(1) * a[5][i]) / fit.scale;
    }
}

/// Second fundamental form b (Voigt 11, 22, 12) in the normal of the
/// triangle of slots 0–2, from stacked positions; that triangle's doubled
/// area |c| goes to `doubled_area`.
template <typename T, int K>
WEFT_HD inline Vec3<T> stencil_second_fundamental_form(const T (&coefficient)[K][3], const Vec<T, 3 * K>& q,
                                                       T* doubled_area = nullptr)
{
    const Vec3<T> x0 = q.template segment<3>(0);
    const Vec3<T> c = (q.template segment<3>(3) - x0).cross(q.template segment<3>(6) - x0);
    const T r = c.norm();
    if (doubled_area) *doubled_area = r;
    Vec3<T> b = Vec3<T>::Zero();
    if (!(r > T(0))) return b;
    const Vec3<T> n = c / r;
    for (int i = 0; i < K; ++i)
        for (int k = 0; k < 3; ++k) b(k) += coefficient[i][k] * n.dot(q.template segment<3>(3 * i));
    return b;
}

/// Host-side factory: the weights (slots 0–2 the triangle's corners, unused
/// slots zero), b̄ from the rest positions (`rest_positions`, stacked like q;
/// null for a flat rest, b̄ = 0), the triangle's rest area.
/// @throws InvalidInput for a weight that is not finite, an area that is not
///         positive, or a degenerate rest triangle in the rest positions.
template <typename T>
inline ShellCurvatureRest<T> make_shell_curvature_rest(const double (&coefficient)[curvature_stencil_nodes][3],
                                                       double rest_area,
                                                       const Vec<double, 3 * curvature_stencil_nodes>* rest_positions)
{
    require_positive("curvature stencil rest area", rest_area);
    ShellCurvatureRest<T> rest;
    for (int i = 0; i < curvature_stencil_nodes; ++i)
        for (int k = 0; k < 3; ++k) {
            require_finite("curvature stencil weight", coefficient[i][k]);
            rest.coefficient[i][k] = static_cast<T>(coefficient[i][k]);
        }
    Vec3<double> curvature = Vec3<double>::Zero();
    if (rest_positions) {
        double doubled_area = 0;
        curvature = stencil_second_fundamental_form<double, curvature_stencil_nodes>(coefficient, *rest_positions,
                                                                                     &doubled_area);
        if (!(doubled_area > 0))
            throw InvalidInput("curvature stencil: degenerate rest triangle in the rest positions");
    }
    for (int k = 0; k < 3; ++k) rest.rest_curvature[k] = static_cast<T>(curvature(k));
    rest.rest_area = static_cast<T>(rest_area);
    return rest;
}

/// The rest state of a single quadratic patch (its six vertices in slots
/// 0–5): the stencil of the plain patch interpolation, for tests and for
/// callers that build their own stencils.
/// @throws InvalidInput when the six points lie on a conic.
template <typename T>
inline ShellCurvatureRest<T> make_patch_curvature_rest(
    const Vec2<double> (&points)[curvature_patch_nodes],
    const Vec<double, 3 * curvature_stencil_nodes>* rest_positions = nullptr)
{
    QuadraticPatchFit fit;
    if (!fit_quadratic_patch(points, fit))
        throw InvalidInput("curvature patch: its six rest points admit no unique quadratic (they lie on a conic)");
    double patch[curvature_patch_nodes][3];
    quadratic_patch_hessian_weights(fit, patch);
    double coefficient[curvature_stencil_nodes][3] = {};
    for (int i = 0; i < curvature_patch_nodes; ++i)
        for (int k = 0; k < 3; ++k) coefficient[i][k] = patch[i][k];
    const Vec2<double> e1 = points[1] - points[0], e2 = points[2] - points[0];
    return make_shell_curvature_rest<T>(coefficient, 0.5 * std::abs(e1(0) * e2(1) - e1(1) * e2(0)), rest_positions);
}

/// The last slot in use plus one (at least 3, the corners).
template <typename T, int K>
inline int used_slots(const ShellCurvatureRest<T, K>& rest)
{
    int used = 3;
    for (int i = 3; i < K; ++i)
        for (int k = 0; k < 3; ++k)
            if (rest.coefficient[i][k] != T(0)) used = i + 1;
    return used;
}

/// The first K2 slots of a rest state whose later slots are unused.
/// @throws InvalidInput when a dropped slot has a weight.
template <int K2, typename T, int K>
inline ShellCurvatureRest<T, K2> narrow_shell_curvature_rest(const ShellCurvatureRest<T, K>& rest)
{
    static_assert(K2 >= 3 && K2 <= K, "a narrowed stencil keeps the corners and has no more slots");
    if (used_slots(rest) > K2)
        throw InvalidInput("curvature stencil: " + std::to_string(used_slots(rest)) + " slots in use, more than the " +
                           std::to_string(K2) + " asked for");
    ShellCurvatureRest<T, K2> out;
    for (int i = 0; i < K2; ++i)
        for (int k = 0; k < 3; ++k) out.coefficient[i][k] = rest.coefficient[i][k];
    for (int k = 0; k < 3; ++k) out.rest_curvature[k] = rest.rest_curvature[k];
    out.rest_area = rest.rest_area;
    return out;
}

/// ε = b(q) − b̄ with its gradient and rate ∇εᵀ v, and Ω = Ā: what
/// energies, forces, the Gauss–Newton stiffness and ∂f_d/∂v need (no
/// Hessians, so no 3 × (3K)² storage in the assembly kernels).
template <typename T, int K = curvature_stencil_nodes>
struct ShellCurvatureFirstOrder {
    Vec3<T> strain;
    Mat<T, 3 * K, 3> gradient;
    Vec3<T> rate;
    T size;
    StrainStatus status;
};

namespace detail {

/// Shared pieces of the strain and its derivatives (file comment).
template <typename T>
struct ShellCurvatureFrame {
    Vec3<T> n;
    Mat3<T> P;
    Mat3<T> dc[3];  ///< ∂c/∂x_i of the corners
    T r;
    Vec3<T> w[3];  ///< w_k = Σ_i c_i^k x_i
    bool ok;
};

template <typename T, int K>
WEFT_HD inline ShellCurvatureFrame<T> shell_curvature_frame(const ShellCurvatureRest<T, K>& rest,
                                                            const Vec<T, 3 * K>& q, T min_relative_height)
{
    ShellCurvatureFrame<T> f;
    const Vec3<T> x0 = q.template segment<3>(0);
    const Vec3<T> e1 = q.template segment<3>(3) - x0;
    const Vec3<T> e2 = q.template segment<3>(6) - x0;
    const Vec3<T> c = e1.cross(e2);
    f.r = c.norm();
    const T longest = e1.squaredNorm() > e2.squaredNorm() ? e1.squaredNorm() : e2.squaredNorm();
    f.ok = f.r > min_relative_height * longest && is_finite_value(f.r);
    if (!f.ok) return f;
    f.n = c / f.r;
    f.P = Mat3<T>::Identity() - f.n * f.n.transpose();
    // c = e₁ × e₂ = −[e₂]× e₁ = [e₁]× e₂.
    f.dc[1] = -cross_matrix<T>(e2);
    f.dc[2] = cross_matrix<T>(e1);
    f.dc[0] = -(f.dc[1] + f.dc[2]);
    for (int k = 0; k < 3; ++k) {
        f.w[k].setZero();
        for (int i = 0; i < K; ++i) f.w[k] += rest.coefficient[i][k] * q.template segment<3>(3 * i);
    }
    return f;
}

}  // namespace detail

/// ε = b − b̄, ∇ε, ε̇ = ∇εᵀ v and Ω (file comment). A degenerate triangle or
/// a non-finite input gives status `degenerate_triangle` and zeros.
template <typename T, int K>
WEFT_HD inline ShellCurvatureFirstOrder<T, K> shell_curvature_first_order(
    const ShellCurvatureRest<T, K>& rest, const Vec<T, 3 * K>& q, const Vec<T, 3 * K>& v,
    T min_relative_height = default_min_relative_hinge_height<T>())
{
    ShellCurvatureFirstOrder<T, K> e;
    e.strain.setZero();
    e.gradient.setZero();
    e.rate.setZero();
    e.size = rest.rest_area;
    e.status = StrainStatus::ok;
    const detail::ShellCurvatureFrame<T> f = detail::shell_curvature_frame(rest, q, min_relative_height);
    if (!f.ok || !detail::is_finite_value(v.sum())) {
        e.status = StrainStatus::degenerate_triangle;
        return e;
    }
    for (int k = 0; k < 3; ++k) {
        e.strain(k) = f.n.dot(f.w[k]) - rest.rest_curvature[k];
        const Vec3<T> g = f.P * f.w[k] / f.r;
        for (int i = 0; i < K; ++i) {
            Vec3<T> grad = rest.coefficient[i][k] * f.n;
            if (i < 3) grad += f.dc[i].transpose() * g;
            e.gradient.template block<3, 1>(3 * i, k) = grad;
        }
    }
    e.rate = e.gradient.transpose() * v;
    return e;
}

/// The full evaluation for the generic layers: shell_curvature_first_order
/// plus the Hessians of ε (file comment).
template <typename T, int K>
WEFT_HD inline ShellCurvatureEval<T, K> shell_curvature_strain(
    const ShellCurvatureRest<T, K>& rest, const Vec<T, 3 * K>& q, const Vec<T, 3 * K>& v,
    T min_relative_height = default_min_relative_hinge_height<T>())
{
    const ShellCurvatureFirstOrder<T, K> first = shell_curvature_first_order(rest, q, v, min_relative_height);
    ShellCurvatureEval<T, K> e;
    e.strain = first.strain;
    e.gradient = first.gradient;
    e.rate = first.rate;
    e.size = first.size;
    e.size_gradient.setZero();
    e.size_hessian.setZero();
    e.status = first.status;
    for (int k = 0; k < 3; ++k) e.hessian[k].setZero();
    if (first.status != StrainStatus::ok) return e;
    const detail::ShellCurvatureFrame<T> f = detail::shell_curvature_frame(rest, q, min_relative_height);
    Mat3<T> dn[3];
    for (int i = 0; i < 3; ++i) dn[i] = f.P * f.dc[i] / f.r;
    // d_α(i): ∂e₁/∂x_i and ∂e₂/∂x_i for the corners.
    const T d1[3] = {T(-1), T(1), T(0)};
    const T d2[3] = {T(-1), T(0), T(1)};
    for (int k = 0; k < 3; ++k) {
        const Vec3<T> pw = f.P * f.w[k];
        const Mat3<T> Q = -(f.n * pw.transpose() + pw * f.n.transpose() + f.n.dot(f.w[k]) * f.P) / (f.r * f.r);
        const Mat3<T> G = detail::cross_matrix<T>(Vec3<T>(pw / f.r));
        Mat<T, 3 * K, 3 * K>& H = e.hessian[k];
        for (int i = 0; i < K; ++i) {
            for (int j = 0; j < K; ++j) {
                if (i >= 3 && j >= 3) continue;
                Mat3<T> block = Mat3<T>::Zero();
                if (j < 3) block += rest.coefficient[i][k] * dn[j];
                if (i < 3) block += rest.coefficient[j][k] * dn[i].transpose();
                if (i < 3 && j < 3) {
                    block += f.dc[i].transpose() * Q * f.dc[j];
                    // Bilinear part of g·(e₁ × e₂): ∂²/∂e₁∂e₂ = −[g]×, ∂²/∂e₂∂e₁ = [g]×.
                    block += (d2[i] * d1[j] - d1[i] * d2[j]) * G;
                }
                H.template block<3, 3>(3 * i, 3 * j) = block;
            }
        }
    }
    return e;
}

}  // namespace weft
