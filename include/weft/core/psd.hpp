#pragma once
/// @file psd.hpp
/// Projection of symmetric matrices onto the positive semi-definite cone and
/// clamping of symmetric 2×2 stress tensors (2018 Sec. 3.4). Both work in
/// device code: a fixed-size symmetric eigen-solver (tridiagonal QL) with no
/// dynamic allocation.

#include <cmath>
#include <limits>

#include <weft/core/types.hpp>

namespace weft {

namespace psd_detail {

/// √(a² + b²) without overflow or underflow in the squares.
template <typename T>
WEFT_HD inline T scaled_hypot(T a, T b)
{
    using std::abs;
    using std::sqrt;
    a = abs(a);
    b = abs(b);
    const T big = a > b ? a : b;
    if (big == T(0)) return T(0);
    const T small = (a > b ? b : a) / big;
    return big * sqrt(T(1) + small * small);
}
}  // namespace psd_detail

/// Eigen-decomposition A = V diag(λ) Vᵀ of a symmetric N×N matrix:
/// Householder reduction to tridiagonal form, then the implicit QL algorithm
/// with shifts on the tridiagonal matrix (Golub & Van Loan, "Matrix
/// Computations", Alg. 8.3.1 and Sec. 8.3.3; the EISPACK routines tred2 and
/// tql2). O(N³) with a small constant: on 12×12 element Hessians about 3×
/// faster than cyclic Jacobi rotations (benchmarks/RESULTS.md, "Full Newton's
/// fixed cost"; `bench_psd`). Eigenvalues are not sorted.
/// @param[in]  a       symmetric matrix
/// @param[out] values  the N eigenvalues
/// @param[out] v       N by N orthogonal matrix of eigenvectors (columns, in the order of `values`)
/// @return false when an eigenvalue did not converge in 60 QL iterations
///         (non-finite input); `values` and `v` then hold the last iterate
template <typename T, int N>
WEFT_HD inline bool symmetric_eigen(const Mat<T, N, N>& a, Vec<T, N>& values, Mat<T, N, N>& v)
{
    using std::abs;
    using std::sqrt;
    Vec<T, N>& d = values;
    Vec<T, N> e;
    v = a;
    if constexpr (N == 1) {
        d(0) = a(0, 0);
        v(0, 0) = T(1);
        return true;
    }
    // Householder reduction to tridiagonal form A = Q T Qᵀ (diagonal d, off-diagonal e);
    // Q accumulated in v.
    for (int j = 0; j < N; ++j) d(j) = v(N - 1, j);
    for (int i = N - 1; i > 0; --i) {
        T scale = T(0);
        T h = T(0);
        for (int k = 0; k < i; ++k) scale += abs(d(k));
        if (scale == T(0)) {
            e(i) = d(i - 1);
            for (int j = 0; j < i; ++j) {
                d(j) = v(i - 1, j);
                v(i, j) = T(0);
                v(j, i) = T(0);
            }
        } else {
            for (int k = 0; k < i; ++k) {
                d(k) /= scale;
                h += d(k) * d(k);
            }
            T f = d(i - 1);
            T g = f > T(0) ? -sqrt(h) : sqrt(h);
            e(i) = scale * g;
            h -= f * g;
            d(i - 1) = f - g;
            for (int j = 0; j < i; ++j) e(j) = T(0);
            for (int j = 0; j < i; ++j) {
                f = d(j);
                v(j, i) = f;
                g = e(j) + v(j, j) * f;
                for (int k = j + 1; k < i; ++k) {
                    g += v(k, j) * d(k);
                    e(k) += v(k, j) * f;
                }
                e(j) = g;
            }
            f = T(0);
            for (int j = 0; j < i; ++j) {
                e(j) /= h;
                f += e(j) * d(j);
            }
            const T hh = f / (h + h);
            for (int j = 0; j < i; ++j) e(j) -= hh * d(j);
            for (int j = 0; j < i; ++j) {
                f = d(j);
                g = e(j);
                for (int k = j; k < i; ++k) v(k, j) -= f * e(k) + g * d(k);
                d(j) = v(i - 1, j);
                v(i, j) = T(0);
            }
        }
        d(i) = h;
    }
    for (int i = 0; i < N - 1; ++i) {
        v(N - 1, i) = v(i, i);
        v(i, i) = T(1);
        const T h = d(i + 1);
        if (h != T(0)) {
            for (int k = 0; k <= i; ++k) d(k) = v(k, i + 1) / h;
            for (int j = 0; j <= i; ++j) {
                T g = T(0);
                for (int k = 0; k <= i; ++k) g += v(k, i + 1) * v(k, j);
                for (int k = 0; k <= i; ++k) v(k, j) -= g * d(k);
            }
        }
        for (int k = 0; k <= i; ++k) v(k, i + 1) = T(0);
    }
    for (int j = 0; j < N; ++j) {
        d(j) = v(N - 1, j);
        v(N - 1, j) = T(0);
    }
    v(N - 1, N - 1) = T(1);
    e(0) = T(0);
    // Implicit QL on T (each sweep: a shift from the leading 2×2 block, then Givens
    // rotations chasing the bulge upward), rotations accumulated into v.
    for (int i = 1; i < N; ++i) e(i - 1) = e(i);
    e(N - 1) = T(0);
    T shift = T(0);
    T norm = T(0);
    const T eps = std::numeric_limits<T>::epsilon();
    bool ok = true;
    for (int l = 0; l < N; ++l) {
        const T bound = abs(d(l)) + abs(e(l));
        if (bound > norm) norm = bound;
        int m = l;
        while (m < N - 1 && !(abs(e(m)) <= eps * norm)) ++m;
        if (m > l) {
            int iterations = 0;
            do {
                if (++iterations > 60) {
                    ok = false;
                    break;
                }
                T g = d(l);
                T p = (d(l + 1) - g) / (T(2) * e(l));
                T r = psd_detail::scaled_hypot(p, T(1));
                if (p < T(0)) r = -r;
                d(l) = e(l) / (p + r);
                d(l + 1) = e(l) * (p + r);
                const T dl1 = d(l + 1);
                T h = g - d(l);
                for (int i = l + 2; i < N; ++i) d(i) -= h;
                shift += h;
                p = d(m);
                T c = T(1), c2 = T(1), c3 = T(1);
                const T el1 = e(l + 1);
                T s = T(0), s2 = T(0);
                for (int i = m - 1; i >= l; --i) {
                    c3 = c2;
                    c2 = c;
                    s2 = s;
                    g = c * e(i);
                    h = c * p;
                    r = psd_detail::scaled_hypot(p, e(i));
                    e(i + 1) = s * r;
                    s = e(i) / r;
                    c = p / r;
                    p = c * d(i) - s * g;
                    d(i + 1) = h + s * (c * g + s * d(i));
                    for (int k = 0; k < N; ++k) {
                        h = v(k, i + 1);
                        v(k, i + 1) = s * v(k, i) + c * h;
                        v(k, i) = c * v(k, i) - s * h;
                    }
                }
                p = -s * s2 * c3 * el1 * e(l) / dl1;
                e(l) = s * p;
                d(l) = c * p;
            } while (abs(e(l)) > eps * norm);
        }
        d(l) += shift;
        e(l) = T(0);
    }
    return ok;
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
    const Mat<T, N, N> d = T(0.5) * (symmetric + symmetric.transpose());
    Vec<T, N> lambda;
    Mat<T, N, N> v;
    symmetric_eigen<T, N>(d, lambda, v);
    // V max(Λ, 0) Vᵀ = A − Σ_{λ<0} λ v vᵀ, and V |Λ| Vᵀ = A − 2 Σ_{λ<0} λ v vᵀ:
    // only the (few) negative eigenpairs are touched, and a PSD input comes
    // back unchanged.
    Mat<T, N, N> result = d;
    const T factor = absolute ? T(2) : T(1);
    for (int k = 0; k < N; ++k) {
        if (lambda(k) < T(0)) result -= (factor * lambda(k)) * v.col(k) * v.col(k).transpose();
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
