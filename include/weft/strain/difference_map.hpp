#pragma once
/// @file difference_map.hpp
/// Stencils whose strain depends on two differences of 3-vectors a and b of
/// a 12-vector q (bending: a = x₀ − x_prev, b = x_next − x₀; the crossing's
/// shear: a = x₁ − x₀, b = x₂ − x₀): P = ∂(a, b)/∂q is made of ±I blocks,
/// so Pᵀg and PᵀhP are sums of signed 3-blocks; and the segment's
/// [[H, −H], [−H, H]] of its difference (Δx, Δs).

#include <weft/core/types.hpp>

namespace weft {
namespace detail {

/// The segment's two-node form: for f of the 4 differences (Δx, Δs) of an
/// 8-vector [x₀, s₀, x₁, s₁], H_q f = [[H, −H], [−H, H]] with H = H_{(Δx,Δs)} f.
template <typename T>
WEFT_HD inline Mat<T, 8, 8> segment_difference_hessian(const Mat<T, 4, 4>& h)
{
    Mat<T, 8, 8> out;
    out.template block<4, 4>(0, 0) = h;
    out.template block<4, 4>(4, 4) = h;
    out.template block<4, 4>(0, 4) = -h;
    out.template block<4, 4>(4, 0) = -h;
    return out;
}

/// Where a stencil's two differences of 3-vectors come from in its 12-vector
/// q: a = q[a_plus..+3] − q[a_minus..+3], b = q[b_plus..+3] − q[b_minus..+3].
struct DifferenceMap {
    int a_plus, a_minus, b_plus, b_minus;
};

/// The bending stencil's a = x₀ − x_prev, b = x_next − x₀.
WEFT_HD inline constexpr DifferenceMap bending_differences()
{
    return {4, 0, 8, 4};
}

/// The crossing's (shear's) a = x₁ − x₀, b = x₂ − x₀.
WEFT_HD inline constexpr DifferenceMap crossing_differences()
{
    return {4, 0, 8, 0};
}

/// ∇_q f += Pᵀ g for g = ∇_{(a,b)} f and P = ∂(a, b)/∂q of `map` (±I blocks).
template <typename T>
WEFT_HD inline void add_difference_gradient(const Vec<T, 6>& g, const DifferenceMap& map, Vec<T, 12>& out)
{
    out.template segment<3>(map.a_plus) += g.template head<3>();
    out.template segment<3>(map.a_minus) -= g.template head<3>();
    out.template segment<3>(map.b_plus) += g.template tail<3>();
    out.template segment<3>(map.b_minus) -= g.template tail<3>();
}

/// H_q f += Pᵀ h P for h = H_{(a,b)} f: h's 3×3 blocks added with P's signs.
/// A dense 12×6×12 congruence with P's zeros costs about ten times as many
/// operations; the bending Hessian's three of them were 8 % of a
/// tablecloth.json step (benchmarks/RESULTS.md, "CI time: the sanitizer
/// build with clang").
template <typename T>
WEFT_HD inline void add_difference_hessian(const Mat<T, 6, 6>& h, const DifferenceMap& map, Mat<T, 12, 12>& out)
{
    const int plus[2] = {map.a_plus, map.b_plus};
    const int minus[2] = {map.a_minus, map.b_minus};
    for (int u = 0; u < 2; ++u)
        for (int w = 0; w < 2; ++w) {
            const Mat3<T> block = h.template block<3, 3>(3 * u, 3 * w);
            out.template block<3, 3>(plus[u], plus[w]) += block;
            out.template block<3, 3>(plus[u], minus[w]) -= block;
            out.template block<3, 3>(minus[u], plus[w]) -= block;
            out.template block<3, 3>(minus[u], minus[w]) += block;
        }
}

}  // namespace detail
}  // namespace weft
