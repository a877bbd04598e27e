#pragma once
/// @file slowest_mode.hpp
/// The slowest mode of a preconditioner: the eigenvector of M⁻¹ S A S with
/// the smallest eigenvalue on the free DoFs, the error that PCG with M
/// removes last. A diagnostic of a preconditioner's design (where a
/// multilevel cycle loses the iterations it loses), not part of a step.
///
/// M⁻¹ S A S is self-adjoint in A's inner product (x, y)_A = xᵀ S A S y, with
/// real eigenvalues in (0, λ_max]. Power iteration on the error propagation
/// E = I − σ M⁻¹ S A S, with σ = 1 / λ_max, converges to the eigenvector of
/// E's largest eigenvalue 1 − σ λ_min: the slowest mode (Saad, Numerical
/// Methods for Large Eigenvalue Problems, 2nd ed., Sec. 4.1). Each
/// iteration costs one product with A and one application of M⁻¹, as one
/// PCG iteration. λ_max is estimated first by power iteration on M⁻¹ S A S
/// itself (`max_iterations_top` iterations; σ = 1 for a V-cycle of current
/// values, whose eigenvalues lie in (0, 1], see multilevel_preconditioner.hpp,
/// "Exact retakes"). The eigenvalue estimate is the Rayleigh quotient
///     λ = (A x)ᵀ M⁻¹ (A x) / xᵀ A x,
/// never below λ_min, and it converges as the square of the vector's error;
/// the iteration stops when it changes by less than `tolerance` of itself.
/// Convergence is linear in (1 − σ λ₂) / (1 − σ λ_min): slow where the next
/// eigenvalue λ₂ is close, as with a family of modes modulated along an
/// edge; SlowestMode reports the last change so that a caller sees it.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/transform.h>

#include <weft/backend/bsr_matrix.hpp>
#include <weft/backend/pcg.hpp>
#include <weft/backend/vector_ops.hpp>

namespace weft {

template <typename T>
struct SlowestModeOptions {
    /// Iteration limit of the power iteration on E. Must be ≥ 1.
    int max_iterations = 200;
    /// Stop when the Rayleigh quotient changes by at most this share of
    /// itself from one iteration to the next. Must be ≥ 0.
    T tolerance = T(1e-6);
    /// Power iterations on M⁻¹ S A S that estimate λ_max (σ = 1 / λ_max,
    /// widened by `top_margin`); 0: σ = 1, for operators with eigenvalues
    /// in (0, 1] such as a V-cycle of current values. Must be ≥ 0.
    int max_iterations_top = 20;
    /// σ = 1 / (top_margin · λ_max estimate): the estimate lies below λ_max,
    /// and E's eigenvalues must stay above −(1 − σ λ_min). Must be ≥ 1.
    T top_margin = T(1.05);
    /// Seed of the random start (uniform in [−1, 1] on the free DoFs).
    std::uint64_t seed = 1;
};

template <typename T>
struct SlowestMode {
    T eigenvalue = T(0);  ///< the last Rayleigh quotient, ≥ λ_min(M⁻¹ S A S)
    T change = T(0);      ///< its relative change in the last iteration
    T top = T(1);         ///< the λ_max estimate that set σ (1 where not estimated)
    int iterations = 0;   ///< power iterations on E
    bool converged = false;
    /// The mode, zero on constrained DoFs, with xᵀ S A S x = 1.
    thrust::device_vector<T> vector;
};

namespace slowest_mode_detail {

/// y ← y on free DoFs, 0 on constrained ones.
template <typename T>
struct Mask {
    WEFT_HD T operator()(T y, std::uint8_t free) const { return free ? y : T(0); }
};

/// v ← s v.
template <typename T>
struct Scale {
    T s;
    WEFT_HD T operator()(T v) const { return s * v; }
};

/// x ← x − σ z: the error propagation's step.
template <typename T>
struct Step {
    T sigma;
    WEFT_HD T operator()(T x, T z) const { return x - sigma * z; }
};

}  // namespace slowest_mode_detail

/// The slowest mode of `m` for `a` with filter `free_dofs` (see the file comment).
/// @param[in] a          the matrix m was prepared for (square)
/// @param[in] free_dofs  1 = free, 0 = constrained, one per scalar DoF
/// @param[in] m          z = M⁻¹ r, symmetric positive definite on the free DoFs
/// @throws InvalidInput on size mismatches, invalid options, a filter with no
///         free DoF, or a product that is not positive (A or M⁻¹ not
///         positive definite on the free DoFs, or a non-finite value)
template <typename T, int B>
SlowestMode<T> slowest_mode(const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs,
                            PreconditionerOperator<T>& m, const SlowestModeOptions<T>& options = {})
{
    const std::size_t dofs = static_cast<std::size_t>(a.rows());
    if (a.cols() != a.rows()) {
        throw InvalidInput(detail::describe("slowest_mode matrix columns", a.cols(), "must equal its rows"));
    }
    if (free_dofs.size() != dofs) {
        throw InvalidInput(detail::describe("slowest_mode free_dofs.size()", free_dofs.size(),
                                            ("must equal the matrix size " + std::to_string(dofs)).c_str()));
    }
    if (options.max_iterations < 1) {
        throw InvalidInput(
            detail::describe("SlowestModeOptions max_iterations", options.max_iterations, "must be >= 1"));
    }
    if (!(options.tolerance >= T(0))) {
        throw InvalidInput(detail::describe("SlowestModeOptions tolerance", options.tolerance, "must be >= 0"));
    }
    if (options.max_iterations_top < 0) {
        throw InvalidInput(
            detail::describe("SlowestModeOptions max_iterations_top", options.max_iterations_top, "must be >= 0"));
    }
    if (!(options.top_margin >= T(1))) {
        throw InvalidInput(detail::describe("SlowestModeOptions top_margin", options.top_margin, "must be >= 1"));
    }
    const std::vector<std::uint8_t> free_host = to_host(free_dofs);
    std::mt19937_64 engine(options.seed);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    std::vector<T> start(dofs, T(0));
    std::size_t free_count = 0;
    for (std::size_t i = 0; i < dofs; ++i) {
        const T value = static_cast<T>(uniform(engine));
        if (free_host[i]) {
            start[i] = value;
            ++free_count;
        }
    }
    if (free_count == 0) throw InvalidInput("invalid slowest_mode free_dofs: no DoF is free");

    SlowestMode<T> result;
    thrust::device_vector<T>& x = result.vector;
    x.assign(start.begin(), start.end());
    thrust::device_vector<T> y(dofs), z(dofs);
    // y = S A S x (x is zero on constrained DoFs), then x and y scaled to
    // ‖x‖_A = 1; refused where xᵀ S A S x is not positive.
    const auto product = [&]() {
        spmv(a, x, y);
        thrust::transform(thrust::device, y.begin(), y.end(), free_dofs.begin(), y.begin(),
                          slowest_mode_detail::Mask<T>{});
        const T energy = dot(x, y);
        if (!(energy > T(0) && std::isfinite(static_cast<double>(energy)))) {
            throw InvalidInput(detail::describe("slowest_mode xᵀ S A S x", energy,
                                                "must be positive and finite (A not SPD on the free DoFs)"));
        }
        const slowest_mode_detail::Scale<T> scale{T(1) / std::sqrt(energy)};
        thrust::transform(thrust::device, x.begin(), x.end(), x.begin(), scale);
        thrust::transform(thrust::device, y.begin(), y.end(), y.begin(), scale);
    };
    // z = M⁻¹ y and the Rayleigh quotient yᵀ z (‖x‖_A = 1).
    const auto quotient = [&]() {
        m.apply(y, z);
        const T value = dot(y, z);
        if (!(value > T(0) && std::isfinite(static_cast<double>(value)))) {
            throw InvalidInput(detail::describe("slowest_mode (S A x)ᵀ M⁻¹ (S A x)", value,
                                                "must be positive and finite (M⁻¹ not SPD on the free DoFs)"));
        }
        return value;
    };
    // λ_max by power iteration on M⁻¹ S A S: x ← z after each quotient.
    T top = T(1);
    for (int k = 0; k < options.max_iterations_top; ++k) {
        product();
        const T value = quotient();
        top = k == 0 ? value : std::max(top, value);
        thrust::transform(thrust::device, z.begin(), z.end(), free_dofs.begin(), x.begin(),
                          slowest_mode_detail::Mask<T>{});
    }
    result.top = top;
    const T sigma = options.max_iterations_top > 0 ? T(1) / (options.top_margin * top) : T(1);
    if (options.max_iterations_top > 0) x.assign(start.begin(), start.end());

    T previous = T(0);
    for (int k = 0; k < options.max_iterations; ++k) {
        product();
        const T value = quotient();
        result.iterations = k + 1;
        result.change = k == 0 ? T(1) : std::abs(value - previous) / value;
        result.eigenvalue = value;
        previous = value;
        if (k > 0 && result.change <= options.tolerance) {
            result.converged = true;
            break;
        }
        if (k + 1 == options.max_iterations) break;
        thrust::transform(thrust::device, x.begin(), x.end(), z.begin(), x.begin(),
                          slowest_mode_detail::Step<T>{sigma});
        // z is zero on constrained DoFs by PreconditionerOperator's contract; kept so whatever m does.
        thrust::transform(thrust::device, x.begin(), x.end(), free_dofs.begin(), x.begin(),
                          slowest_mode_detail::Mask<T>{});
    }
    return result;
}

}  // namespace weft
