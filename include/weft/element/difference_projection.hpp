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

#include <limits>

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
    return detail::segment_difference_hessian<T>(
        project_to_psd<T, 4>(Mat<T, 4, 4>(hessian.template block<4, 4>(4, 4)), absolute));
}

namespace detail {

/// The negative part Σ_{λ<0} λ u uᵀ of a symmetric 4×4 H in (Δx, Δs) that
/// has the stretch segment's form
///   H = c (I − t tᵀ) ⊕ [[a, b], [b, d]] on the basis ((t, 0), (0, 1)),
/// t the unit segment direction: every term of the stretch energy's Hessian
/// and of the symmetric damping stiffness (2018 Eq. 9) is built from ∇ε,
/// ∇Ω and Hε of 2017 Eq. 12–13, and those read Δx only through |Δx| and
/// t (Hε's Δx block is (I − t tᵀ)/(|Δx| Δs)). So c, with multiplicity two,
/// and the two eigenvalues of the 2×2 block are H's spectrum, in closed
/// form. Returns false, leaving `negative` unset, where H departs from that
/// form by more than 1e-9 of its largest entry (64 ulps in float), or t is
/// zero or not finite, or an entry is not finite: the caller then takes the
/// general eigen-solver.
template <typename T>
WEFT_HD inline bool segment_negative_part(const Mat<T, 4, 4>& h, const Vec3<T>& direction, Mat<T, 4, 4>& negative)
{
    using std::abs;
    const T norm = direction.norm();
    if (!(norm > T(0)) || !(norm - norm == T(0))) return false;  // zero, NaN or ±inf
    const Vec3<T> t = direction / norm;
    const Mat3<T> hxx = h.template block<3, 3>(0, 0);
    const Vec3<T> hxs = h.template block<3, 1>(0, 3);
    const T a = t.dot(hxx * t);
    const T b = t.dot(hxs);
    const T d = h(3, 3);
    const T c = T(0.5) * (hxx.trace() - a);
    // H less its model, entry by entry, against its largest entry.
    T largest = T(0), misfit = T(0);
    bool finite = true;
    for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
            T model;
            if (i < 3 && j < 3) {
                model = (a - c) * t(i) * t(j) + (i == j ? c : T(0));
            } else if (i < 3) {
                model = b * t(i);
            } else if (j < 3) {
                model = b * t(j);
            } else {
                model = d;
            }
            finite = finite && h(i, j) - h(i, j) == T(0);  // false for NaN and ±inf
            largest = abs(h(i, j)) > largest ? abs(h(i, j)) : largest;
            misfit = abs(h(i, j) - model) > misfit ? abs(h(i, j) - model) : misfit;
        }
    }
    // 1e-9 in double; in float, 64 ulps (its rounding is about 1e-7).
    const T epsilon = std::numeric_limits<T>::epsilon();
    const T tolerance = T(64) * epsilon > T(1e-9) ? T(64) * epsilon : T(1e-9);
    if (!finite || !(misfit <= tolerance * largest)) return false;  // not finite: the general solver's handling
    negative.setZero();
    if (c < T(0)) negative.template block<3, 3>(0, 0) = c * (Mat3<T>::Identity() - t * t.transpose());
    // The 2×2 block [[a, b], [b, d]]: eigenvalues mean ± radius. Where only
    // the lower is negative, its eigenprojector is (M − λ₊ I)/(λ₋ − λ₊), whose
    // error times |λ₋| ≤ 2 radius stays at rounding (as in clamp_symmetric_2x2).
    const T mean = T(0.5) * (a + d);
    const T radius = psd_detail::scaled_hypot(T(0.5) * a - T(0.5) * d, b);
    const T upper = mean + radius;
    const T lower = mean - radius;
    Mat<T, 2, 2> part = Mat<T, 2, 2>::Zero();
    if (upper < T(0)) {
        part << a, b, b, d;  // both negative: the whole block
    } else if (lower < T(0)) {
        const T scale = lower / (lower - upper);
        part << scale * (a - upper), scale * b, scale * b, scale * (d - upper);
    }
    // Back from the basis ((t, 0), (0, 1)).
    negative.template block<3, 3>(0, 0) += part(0, 0) * t * t.transpose();
    negative.template block<3, 1>(0, 3) = part(0, 1) * t;
    negative.template block<1, 3>(3, 0) = part(1, 0) * t.transpose();
    negative(3, 3) = part(1, 1);
    return true;
}

}  // namespace detail

/// project_segment_hessian for the stretch segment's ∇²V, given the
/// segment's direction Δx/|Δx|: its 4×4 H_d has the form of
/// detail::segment_negative_part, so the negative eigenpairs are found in
/// closed form, without the iterative eigen-solver; where H_d has not that
/// form the general projection is taken. Either way a PSD H_d comes back
/// unchanged and the result is the same closest PSD matrix up to rounding.
template <typename T>
WEFT_HD inline Mat<T, 8, 8> project_segment_hessian(const Mat<T, 8, 8>& hessian, const Vec3<T>& direction,
                                                    bool absolute = false)
{
    const Mat<T, 4, 4> block = hessian.template block<4, 4>(4, 4);
    const Mat<T, 4, 4> h = T(0.5) * (block + block.transpose());
    Mat<T, 4, 4> negative;
    if (!detail::segment_negative_part<T>(h, direction, negative)) return project_segment_hessian<T>(hessian, absolute);
    return detail::segment_difference_hessian<T>(Mat<T, 4, 4>(h - (absolute ? T(2) : T(1)) * negative));
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

/// Projects a symmetric matrix over `Nodes` nodes of `Dofs` DoFs each
/// (node-major) that is blind to translations: adding the same value to DoF
/// c of every node (for each c) leaves the energy it is the Hessian of
/// unchanged, so those Dofs vectors lie in its null space and its
/// eigenvectors of nonzero eigenvalue are orthogonal to them. The projection
/// is then Q Π(Qᵀ A Q) Qᵀ, Q an orthonormal basis of their complement (the
/// Helmert contrasts of the nodes, per DoF): in exact arithmetic the same
/// matrix as project_to_psd of the whole A, for a (Nodes − 1)·Dofs
/// eigen-problem instead of a Nodes·Dofs one (8 × 8 instead of 12 × 12 for a
/// bending stencil: about a third of the work). Where A is not blind to
/// translations to within 1e-9 of its largest entry, the whole A is
/// projected (project_to_psd), so the result is always the closest PSD
/// matrix (or V |Λ| Vᵀ with `absolute`) up to rounding.
template <typename T, int Nodes, int Dofs>
WEFT_HD inline Mat<T, Nodes * Dofs, Nodes * Dofs> project_translation_invariant_to_psd(
    const Mat<T, Nodes * Dofs, Nodes * Dofs>& a, bool absolute = false)
{
    static_assert(Nodes >= 2 && Dofs >= 1, "a translation-invariant stencil has two nodes or more");
    constexpr int N = Nodes * Dofs;
    constexpr int R = (Nodes - 1) * Dofs;
    using std::abs;
    using std::sqrt;
    const Mat<T, N, N> d = T(0.5) * (a + a.transpose());
    T largest = T(0);
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) largest = abs(d(i, j)) > largest ? abs(d(i, j)) : largest;
    if (largest == T(0)) return d;  // zero (an undamped form's clamped sum): project_to_psd returns it as is
    // Row sums over the nodes, per DoF c: d t_c, which must vanish.
    for (int i = 0; i < N; ++i) {
        for (int c = 0; c < Dofs; ++c) {
            T sum = T(0);
            for (int n = 0; n < Nodes; ++n) sum += d(i, n * Dofs + c);
            if (!(abs(sum) <= T(1e-9) * largest)) return project_to_psd<T, N>(a, absolute);
        }
    }
    // Helmert contrasts: u_j(n) = 1/√(j(j+1)) for n < j, −j/√(j(j+1)) for n = j, 0 beyond.
    T u[Nodes - 1][Nodes];
    for (int j = 1; j < Nodes; ++j) {
        const T scale = T(1) / sqrt(T(j * (j + 1)));
        for (int n = 0; n < Nodes; ++n) u[j - 1][n] = n < j ? scale : (n == j ? -T(j) * scale : T(0));
    }
    // Column (j, c) of Q holds u_j on DoF c of each node; B = Qᵀ d Q, with d Q first.
    Mat<T, N, R> dq;
    for (int i = 0; i < N; ++i) {
        for (int j = 0; j < Nodes - 1; ++j) {
            for (int c = 0; c < Dofs; ++c) {
                T sum = T(0);
                for (int n = 0; n <= j + 1 && n < Nodes; ++n) sum += d(i, n * Dofs + c) * u[j][n];
                dq(i, j * Dofs + c) = sum;
            }
        }
    }
    Mat<T, R, R> b;
    for (int j = 0; j < Nodes - 1; ++j) {
        for (int c = 0; c < Dofs; ++c) {
            for (int k = 0; k < R; ++k) {
                T sum = T(0);
                for (int n = 0; n <= j + 1 && n < Nodes; ++n) sum += u[j][n] * dq(n * Dofs + c, k);
                b(j * Dofs + c, k) = sum;
            }
        }
    }
    const Mat<T, R, R> p = project_to_psd<T, R>(b, absolute);
    // Q p Qᵀ, with p Qᵀ first.
    Mat<T, R, N> pq;
    for (int r = 0; r < R; ++r) {
        for (int n = 0; n < Nodes; ++n) {
            for (int c = 0; c < Dofs; ++c) {
                T sum = T(0);
                for (int j = n == 0 ? 0 : n - 1; j < Nodes - 1; ++j) sum += p(r, j * Dofs + c) * u[j][n];
                pq(r, n * Dofs + c) = sum;
            }
        }
    }
    Mat<T, N, N> out;
    for (int n = 0; n < Nodes; ++n) {
        for (int c = 0; c < Dofs; ++c) {
            for (int col = 0; col < N; ++col) {
                T sum = T(0);
                for (int j = n == 0 ? 0 : n - 1; j < Nodes - 1; ++j) sum += u[j][n] * pq(j * Dofs + c, col);
                out(n * Dofs + c, col) = sum;
            }
        }
    }
    return T(0.5) * (out + out.transpose());
}

}  // namespace weft
