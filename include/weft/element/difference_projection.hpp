#pragma once
/// @file difference_projection.hpp
/// PSD projection of an element Hessian in its difference variables.
///
/// Stretch and shear energies are translation invariant: they depend on q
/// only through differences d = D q (stretch: d = (Δx, Δs), 4 variables;
/// shear: d = (x₁ − x₀, x₂ − x₀), 6 variables). Then ∇²V = Dᵀ H_d D, and
/// Dᵀ Π(H_d) D, Π the eigenvalue clamp of core/psd.hpp, is PSD, removes only
/// the negative part (Dᵀ Π(H_d) D ⪰ ∇²V, equal when ∇²V ⪰ 0) and still
/// annihilates rigid translations. For the segment (D = [−I, I], a multiple
/// of an isometry) it is exactly the closest PSD matrix of the N×N ∇²V; for
/// the crossing it is not, but it costs a 6×6 instead of a 12×12 eigen-
/// decomposition.
///
/// Why project at all: at a compressed segment (ε < 0) the term Ω S Hε and
/// the Eulerian terms ∇ε S ∇Ωᵀ + ∇Ω Sᵀ ∇εᵀ are indefinite, and with
/// h² k / m ≈ 10⁹ one such direction makes A = M − h D − h² K indefinite, so
/// CG breaks down. The projection changes the Jacobian, never the force.

#include <weft/core/psd.hpp>
#include <weft/strain/difference_map.hpp>

namespace weft {

/// Projects −∂f/∂q = ∇²V of the 8-DoF segment [x₀, s₀, x₁, s₁]:
/// ∇²V = [[H, −H], [−H, H]] with H the 4×4 Hessian in (Δx, Δs).
/// @param[in] hessian   ∇²V (symmetric)
/// @param[in] absolute  negative eigenvalues of H_d to their absolute values instead of zero
/// @return  the projected ∇²V (PSD)
template <typename T>
WEFT_HD inline Mat<T, 8, 8> project_segment_hessian(const Mat<T, 8, 8>& hessian, bool absolute = false)
{
    const Mat<T, 4, 4> h = project_to_psd<T, 4>(Mat<T, 4, 4>(hessian.template block<4, 4>(4, 4)), absolute);
    Mat<T, 8, 8> out;
    out.template block<4, 4>(0, 0) = h;
    out.template block<4, 4>(4, 4) = h;
    out.template block<4, 4>(0, 4) = -h;
    out.template block<4, 4>(4, 0) = -h;
    return out;
}

/// Projects ∇²V of a 12-DoF three-node element [x₀, s₀, x₁, s₁, x₂, s₂] whose
/// energy depends only on a = x₁ − x₀ and b = x₂ − x₀ (shear, 2017 Eq. 22).
/// The s rows and columns of the result are zero. `absolute` as for the segment.
template <typename T>
WEFT_HD inline Mat<T, 12, 12> project_crossing_hessian(const Mat<T, 12, 12>& hessian, bool absolute = false)
{
    // H_d = Rᵀ ∇²V R with R: a ↦ x₁, b ↦ x₂ (a right inverse of D).
    Mat<T, 6, 6> hd;
    const int at[2] = {4, 8};
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) hd.template block<3, 3>(3 * i, 3 * j) = hessian.template block<3, 3>(at[i], at[j]);
    const Mat<T, 6, 6> p = project_to_psd<T, 6>(hd, absolute);
    // Dᵀ P D with D = [[−I, I, 0], [−I, 0, I]] on the x blocks.
    Mat<T, 12, 12> out = Mat<T, 12, 12>::Zero();
    detail::add_difference_hessian<T>(p, detail::crossing_differences(), out);
    return out;
}

}  // namespace weft
