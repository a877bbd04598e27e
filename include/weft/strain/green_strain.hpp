#pragma once
/// @file green_strain.hpp
/// Green strain of a linear triangle embedded in 3D, for StVK membranes
/// (2018 Sec. 4, Eq. 13 and 17).
///
/// DoFs (N = 9): q = [x₀, x₁, x₂] (3 each), the deformed node positions.
/// Strain (M = 3) in Voigt order (ε₁₁, ε₂₂, ε₁₂) with ε₁₂ stored once, the
/// order StVKDensity expects (its conjugate stress is (S₁₁, S₂₂, 2S₁₂)).
///
/// Conventions and choices:
/// - The rest state is given by material-space (u, v) coordinates of the three
///   nodes (a flat parameterization of the cloth, e.g. warp/weft axes), so
///   F = Ds Dm⁻¹ is 3×2 and ε = ½(FᵀF − I) is a 2×2 tensor in material axes.
/// - Ω is the rest area (Lagrangian): `size_gradient` and `size_hessian` are
///   zero. Densities are therefore per unit rest area; a thin sheet of
///   thickness h with 3D Lamé parameters uses λ·h, μ·h — that scaling is the
///   caller's.
/// - Inverted (flipped in 3D) and collapsed deformed triangles are fine: Green
///   strain depends on FᵀF only, which is finite and smooth everywhere, so the
///   status is always `ok`. A flip is simply a large strain; it is not
///   penalized specially (StVK's well-known weak resistance to inversion).
/// - A degenerate *rest* triangle is bad input, rejected on the host by
///   `make_triangle_rest` with a message that names the area.

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <weft/core/error.hpp>
#include <weft/strain/strain_eval.hpp>

namespace weft {

template <typename T>
using GreenStrainEval = StrainEval<T, 9, 3>;

/// Rest state of one triangle: Dm⁻¹ with Dm = [X₁ − X₀, X₂ − X₀] (2×2, material
/// coordinates as columns) and the rest area ½|det Dm|. Plain data, usable in
/// device code; build it on the host with `make_triangle_rest`.
template <typename T>
struct TriangleRest {
    Mat2<T> dm_inverse;  ///< Dm⁻¹, 2 by 2
    T area;              ///< rest area (m²), the element size Ω
};

/// Smallest admissible rest area relative to the squared longest rest edge,
/// √ε_machine: below it Dm⁻¹ loses about half the significant digits.
template <typename T>
inline T default_min_relative_rest_area()
{
    return std::sqrt(std::numeric_limits<T>::epsilon());
}

/// Rest state from the material-space (u, v) coordinates of the three nodes.
/// Either orientation (counter-clockwise or clockwise) is accepted: the Green
/// strain does not depend on it, and the area is taken as |det Dm| / 2.
/// @param[in] uv0, uv1, uv2  rest (u, v) coordinates of nodes 0, 1, 2 (m)
/// @param[in] min_relative_area  rejects area ≤ min_relative_area · (longest edge)²
/// @throws InvalidInput naming the rest area (and the coordinates) when the
///         area is non-finite or (near) zero.
template <typename T>
inline TriangleRest<T> make_triangle_rest(const Vec2<T>& uv0, const Vec2<T>& uv1, const Vec2<T>& uv2,
                                          T min_relative_area = default_min_relative_rest_area<T>())
{
    Mat2<T> dm;
    dm.col(0) = uv1 - uv0;
    dm.col(1) = uv2 - uv0;
    const T det = dm.determinant();
    const T area = T(0.5) * std::abs(det);
    const T longest_sq = std::max({dm.col(0).squaredNorm(), dm.col(1).squaredNorm(), (uv2 - uv1).squaredNorm()});
    const T min_area = min_relative_area * longest_sq;
    const bool finite = uv0.allFinite() && uv1.allFinite() && uv2.allFinite() && std::isfinite(area);
    if (!finite || !(area > min_area)) {
        std::ostringstream requirement;
        requirement.precision(17);
        requirement << (finite ? "must be > " : "must be a finite number > ") << min_area << " (" << min_relative_area
                    << " x longest rest edge squared); rest (u,v) = (" << uv0(0) << ", " << uv0(1) << "), (" << uv1(0)
                    << ", " << uv1(1) << "), (" << uv2(0) << ", " << uv2(1) << ")";
        throw InvalidInput(detail::describe("triangle rest area", area, requirement.str().c_str()));
    }
    return TriangleRest<T>{dm.inverse(), area};
}

/// Gradients of the linear shape functions w.r.t. material coordinates,
/// stacked as rows: F = Σ_a x_a g_aᵀ, i.e. F = [x₀ x₁ x₂] G with
/// G = [[−1, −1], [1, 0], [0, 1]] Dm⁻¹ (3 by 2).
template <typename T>
WEFT_HD inline Mat<T, 3, 2> shape_function_gradients(const TriangleRest<T>& rest)
{
    Mat<T, 3, 2> g;
    g.row(1) = rest.dm_inverse.row(0);
    g.row(2) = rest.dm_inverse.row(1);
    g.row(0) = -(g.row(1) + g.row(2));
    return g;
}

/// Green strain ε = ½(FᵀF − I) with F = Ds Dm⁻¹ (2018 Sec. 4), its gradient,
/// its (constant) Hessians, Ω = rest area, and the strain rate of Eq. (17).
/// @param[in] rest  rest state from `make_triangle_rest`
/// @param[in] q     9 stacked positions [x₀, x₁, x₂]
/// @param[in] v     9 stacked velocities [v₀, v₁, v₂]
template <typename T>
WEFT_HD inline GreenStrainEval<T> green_strain(const TriangleRest<T>& rest, const Vec<T, 9>& q, const Vec<T, 9>& v)
{
    GreenStrainEval<T> e;
    e.status = StrainStatus::ok;

    const Mat<T, 3, 2> g = shape_function_gradients(rest);
    // Local variables: the columns f₁, f₂ of F and ḟ₁, ḟ₂ of Ḟ = V Dm⁻¹ (q ↦ F linear).
    Mat<T, 3, 2> f = Mat<T, 3, 2>::Zero();
    Mat<T, 3, 2> f_dot = Mat<T, 3, 2>::Zero();
    for (int a = 0; a < 3; ++a) {
        f += q.template segment<3>(3 * a) * g.row(a);
        f_dot += v.template segment<3>(3 * a) * g.row(a);
    }
    const Vec3<T> f1 = f.col(0);
    const Vec3<T> f2 = f.col(1);

    // 2018 Sec. 4: ε = ½(FᵀF − I), in Voigt order (ε₁₁, ε₂₂, ε₁₂)
    e.strain(0) = T(0.5) * (f1.dot(f1) - T(1));
    e.strain(1) = T(0.5) * (f2.dot(f2) - T(1));
    e.strain(2) = T(0.5) * f1.dot(f2);

    // ∂ε_ij/∂x_a = ½(G_ai f_j + G_aj f_i)
    for (int a = 0; a < 3; ++a) {
        e.gradient.template block<3, 1>(3 * a, 0) = g(a, 0) * f1;
        e.gradient.template block<3, 1>(3 * a, 1) = g(a, 1) * f2;
        e.gradient.template block<3, 1>(3 * a, 2) = T(0.5) * (g(a, 0) * f2 + g(a, 1) * f1);
    }

    // ∂²ε_ij/∂x_a∂x_b = ½(G_ai G_bj + G_aj G_bi) I₃, independent of q
    for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) {
            const T c11 = g(a, 0) * g(b, 0);
            const T c22 = g(a, 1) * g(b, 1);
            const T c12 = T(0.5) * (g(a, 0) * g(b, 1) + g(a, 1) * g(b, 0));
            e.hessian[0].template block<3, 3>(3 * a, 3 * b) = c11 * Mat3<T>::Identity();
            e.hessian[1].template block<3, 3>(3 * a, 3 * b) = c22 * Mat3<T>::Identity();
            e.hessian[2].template block<3, 3>(3 * a, 3 * b) = c12 * Mat3<T>::Identity();
        }
    }

    // 2018 Eq. (17): ε̇ = ½(FᵀḞ + ḞᵀF), Ḟ = V Dm⁻¹
    e.rate(0) = f1.dot(f_dot.col(0));
    e.rate(1) = f2.dot(f_dot.col(1));
    e.rate(2) = T(0.5) * (f1.dot(f_dot.col(1)) + f_dot.col(0).dot(f2));

    // Ω = rest area, constant (Lagrangian discretization, 2018 Eq. 4)
    e.size = rest.area;
    e.size_gradient.setZero();
    e.size_hessian.setZero();
    return e;
}

}  // namespace weft
