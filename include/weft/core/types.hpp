#pragma once
/// @file types.hpp
/// Fixed-size linear-algebra aliases (column vectors and matrices) used by
/// every per-element kernel. Sizes are compile-time so kernels run on the GPU.

#include <weft/core/config.hpp>

#include <Eigen/Geometry>  // cross products

namespace weft {

template <typename T, int N>
using Vec = Eigen::Matrix<T, N, 1>;

template <typename T, int R, int C>
using Mat = Eigen::Matrix<T, R, C>;

template <typename T>
using Vec2 = Vec<T, 2>;
template <typename T>
using Vec3 = Vec<T, 3>;
template <typename T>
using Mat2 = Mat<T, 2, 2>;
template <typename T>
using Mat3 = Mat<T, 3, 3>;

/// Cross-product matrix: cross_matrix(a) * b == a.cross(b).
template <typename T>
WEFT_HD inline Mat3<T> cross_matrix(const Vec3<T>& a)
{
    Mat3<T> m;
    m << T(0), -a(2), a(1), a(2), T(0), -a(0), -a(1), a(0), T(0);
    return m;
}

/// a · s · bᵀ for small fixed-size matrices (a: N×M, s: M×M, b: K×M), with
/// coefficient-based products. Eigen sends a fixed-size product whose
/// sizes are large enough (e.g. 12×7 by 7×12) to its blocked GEMM, whose
/// packing costs more than the product at these sizes; the element
/// Hessians' congruences (Pᵀ H P, ∇ε S ∇εᵀ) are such products.
template <typename T, int N, int M, int K>
WEFT_HD inline Mat<T, N, K> sandwich(const Mat<T, N, M>& a, const Mat<T, M, M>& s, const Mat<T, K, M>& b)
{
    const Mat<T, N, M> as = a.lazyProduct(s);
    return as.lazyProduct(b.transpose());
}

}  // namespace weft
