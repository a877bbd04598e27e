#pragma once
/// @file psd.hpp
/// Projection of symmetric matrices onto the positive semi-definite cone and
/// clamping of symmetric 2×2 stress tensors (2018 Sec. 3.4). Both work in
/// device code: a cyclic Jacobi eigen-solver on fixed-size matrices, with no
/// dynamic allocation.

#include <cmath>
#include <limits>

#include <weft/core/types.hpp>

namespace weft {

/// Eigen-decomposition A = V diag(λ) Vᵀ of a symmetric N×N matrix by cyclic
/// Jacobi rotations. Converges quadratically; `max_sweeps` bounds the work.
/// @param[in,out] a  symmetric matrix, overwritten by its (near) diagonal form
/// @param[out] v     N by N orthogonal matrix of eigenvectors (columns)
template <typename T, int N>
WEFT_HD inline void symmetric_eigen_jacobi(Mat<T, N, N>& a, Mat<T, N, N>& v, int max_sweeps = 30)
{
    using std::abs;
    using std::sqrt;
    v.setIdentity();
    for (int sweep = 0; sweep < max_sweeps; ++sweep) {
        T off = T(0);
        T diag = T(0);
        for (int p = 0; p < N; ++p) {
            diag += a(p, p) * a(p, p);
            for (int q = p + 1; q < N; ++q) off += a(p, q) * a(p, q);
        }
        if (!(off > std::numeric_limits<T>::epsilon() * std::numeric_limits<T>::epsilon() * diag)) break;
        for (int p = 0; p < N - 1; ++p) {
            for (int q = p + 1; q < N; ++q) {
                const T apq = a(p, q);
                if (apq == T(0)) continue;
                const T theta = (a(q, q) - a(p, p)) / (T(2) * apq);
                const T t = (theta >= T(0) ? T(1) : T(-1)) / (abs(theta) + sqrt(theta * theta + T(1)));
                const T c = T(1) / sqrt(t * t + T(1));
                const T s = t * c;
                for (int k = 0; k < N; ++k) {  // A ← A J
                    const T akp = a(k, p);
                    const T akq = a(k, q);
                    a(k, p) = c * akp - s * akq;
                    a(k, q) = s * akp + c * akq;
                }
                for (int k = 0; k < N; ++k) {  // A ← Jᵀ A
                    const T apk = a(p, k);
                    const T aqk = a(q, k);
                    a(p, k) = c * apk - s * aqk;
                    a(q, k) = s * apk + c * aqk;
                }
                for (int k = 0; k < N; ++k) {  // V ← V J
                    const T vkp = v(k, p);
                    const T vkq = v(k, q);
                    v(k, p) = c * vkp - s * vkq;
                    v(k, q) = s * vkp + c * vkq;
                }
            }
        }
    }
}

/// Closest (Frobenius) positive semi-definite matrix to a symmetric matrix:
/// negative eigenvalues set to zero. With `absolute`, they are replaced by
/// their absolute values instead (the eigenvalue filter of Chen et al. 2024,
/// "Trust-region eigenvalue filtering for projected Newton"): still PSD,
/// equal to the input where it is PSD, and it keeps the curvature of a
/// negative direction as a positive one, so that a Newton update along it is
/// short instead of unbounded.
template <typename T, int N>
WEFT_HD inline Mat<T, N, N> project_to_psd(const Mat<T, N, N>& symmetric, bool absolute = false)
{
    using std::abs;
    Mat<T, N, N> d = T(0.5) * (symmetric + symmetric.transpose());
    Mat<T, N, N> v;
    symmetric_eigen_jacobi<T, N>(d, v);
    Mat<T, N, N> result = Mat<T, N, N>::Zero();
    for (int k = 0; k < N; ++k) {
        const T lambda = d(k, k);
        const T kept = absolute ? abs(lambda) : (lambda > T(0) ? lambda : T(0));
        if (kept > T(0)) result += kept * v.col(k) * v.col(k).transpose();
    }
    return result;
}

/// Clamp the negative eigenvalues of a symmetric 2×2 tensor stored in Voigt
/// order (s11, s22, s12) to zero. Closed form: no iteration.
template <typename T>
WEFT_HD inline Vec3<T> clamp_symmetric_2x2(const Vec3<T>& s)
{
    using std::sqrt;
    const T mean = T(0.5) * (s(0) + s(1));
    const T half_diff = T(0.5) * (s(0) - s(1));
    const T radius = sqrt(half_diff * half_diff + s(2) * s(2));
    const T l1 = mean + radius;
    const T l2 = mean - radius;
    if (l2 >= T(0)) return s;
    if (l1 <= T(0)) return Vec3<T>::Zero();
    // Only l1 > 0 survives: result = l1 e1 e1ᵀ, with e1 e1ᵀ = (S − l2 I)/(l1 − l2).
    const T scale = l1 / (l1 - l2);
    return Vec3<T>(scale * (s(0) - l2), scale * (s(1) - l2), scale * s(2));
}

}  // namespace weft
