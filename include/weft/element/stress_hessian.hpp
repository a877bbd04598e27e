#pragma once
/// @file stress_hessian.hpp
/// The stress-weighted strain Hessian Σ_k S_k Hε_k that appears in both the
/// elastic stiffness and the dissipative position Jacobian, with the optional
/// clamp of negative stress eigenvalues (2018 Sec. 3.4).

#include <weft/core/psd.hpp>
#include <weft/element/difference_projection.hpp>
#include <weft/element/jacobian_options.hpp>
#include <weft/potential/stress_kind.hpp>

namespace weft {

/// @param[in] stress  M conjugate stress vector ∂Ψ/∂ε (or ∂Ψ_d/∂ε̇)
/// @param[in] hessian M strain Hessians, each N by N
/// @param[in] clamp   StressClamp::on removes the negative stress eigenvalues
///                    (scalar: max(S,0); 2×2 tensor: closed-form eigen clamp;
///                    vector strains: PSD projection of the sum, see StressKind)
/// `TranslationNodes` > 0: the N DoFs are that many nodes' (node-major) and
/// the strains are blind to translations, so the vector strains' projection
/// takes project_translation_invariant_to_psd (the same matrix, a smaller
/// eigen-problem).
template <StressKind Kind, int TranslationNodes = 0, typename T, int N, int M>
WEFT_HD inline Mat<T, N, N> stress_weighted_hessian(const Vec<T, M>& stress, const Mat<T, N, N> (&hessian)[M],
                                                    StressClamp clamp)
{
    Vec<T, M> s = stress;
    if (clamp == StressClamp::on) {
        if constexpr (Kind == StressKind::scalar) {
            for (int k = 0; k < M; ++k) s(k) = s(k) > T(0) ? s(k) : T(0);
        } else if constexpr (Kind == StressKind::symmetric_2x2) {
            static_assert(M == 3, "symmetric_2x2 stress needs a 3-vector in Voigt order");
            // Conjugate vector (S11, S22, 2 S12) → tensor (S11, S22, S12) → clamp → back.
            const Vec3<T> tensor(s(0), s(1), T(0.5) * s(2));
            const Vec3<T> clamped = clamp_symmetric_2x2<T>(tensor);
            s = Vec<T, M>(clamped(0), clamped(1), T(2) * clamped(2));
        }
    }
    Mat<T, N, N> sum = Mat<T, N, N>::Zero();
    for (int k = 0; k < M; ++k) sum += s(k) * hessian[k];
    if constexpr (Kind == StressKind::vector) {
        if (clamp == StressClamp::on) {
            if constexpr (TranslationNodes > 0) {
                static_assert(N % TranslationNodes == 0, "N must be TranslationNodes times the DoFs per node");
                return project_translation_invariant_to_psd<T, TranslationNodes, N / TranslationNodes>(sum);
            } else {
                return project_to_psd<T, N>(sum);
            }
        }
    }
    return sum;
}

}  // namespace weft
