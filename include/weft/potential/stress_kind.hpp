#pragma once
/// @file stress_kind.hpp
/// How a density's stress is clamped in the symmetric position Jacobian
/// (2018 Sec. 3.4: "clamp the negative eigenvalues of the stress").

namespace weft {

enum class StressKind {
    /// Scalar strain: the stress itself is the only eigenvalue, clamp = max(S, 0).
    scalar,
    /// Symmetric 2×2 tensor in Voigt order (ε₁₁, ε₂₂, ε₁₂), whose conjugate
    /// vector ∂Ψ/∂ε is (S₁₁, S₂₂, 2S₁₂): the tensor S is clamped in closed form.
    symmetric_2x2,
    /// Vector strain without tensor structure (small-angle bending k/Ω): a
    /// stress vector has no eigenvalues, so the product Σ_k S_k Hε_k is
    /// projected onto the PSD cone instead. This is the rotation-invariant
    /// reading of the clamp for vector strains.
    vector,
};

}  // namespace weft
