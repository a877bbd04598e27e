#pragma once
/// @file penalty.hpp
/// The C² penalty of weft's colliders and cloth contacts:
/// a stiffness that grows linearly from 0 to k over an onset width δ, then
/// stays k. Of the depth d > 0 (0 below):
///
///   V = k d³/(6δ),                                  0 < d < δ
///   V = ½ k (d − δ)² + ½ k δ (d − δ) + k δ²/6,      d ≥ δ
///
/// so F = V′ = k d²/(2δ) resp. k (d − δ/2), and V″ = k d/δ resp. k.
/// Why not the plain ½ k d²: a node resting against a stiff penalty sits at
/// the depth F/k, where the plain penalty's stiffness jumps between 0 and k.
/// The Jacobian is then discontinuous at the solution and full Newton stalls
/// at a linear rate (measured on colliders, docs/scenes.md). δ = 0 gives the
/// plain penalty. Cloth contact (segment_contact.hpp, cloth_contact.hpp)
/// uses the same law of the gap r − d, with δ = `collision.onset` × r.

#include <weft/core/types.hpp>

namespace weft {

/// Energy, force magnitude V′ and stiffness V″ of a penalty at one depth.
template <typename T>
struct PenaltyTerms {
    T energy = T(0);
    T force = T(0);      ///< V′(d) ≥ 0: pushes the depth back
    T stiffness = T(0);  ///< V″(d) ≥ 0
};

/// The C² penalty of the file comment at depth d (≤ 0: no contact).
/// @param depth      d (m, or whatever length the contact measures)
/// @param stiffness  k
/// @param onset      δ ≥ 0
template <typename T>
WEFT_HD inline PenaltyTerms<T> smooth_penalty(T depth, T stiffness, T onset)
{
    PenaltyTerms<T> p;
    if (!(depth > T(0))) return p;
    if (depth < onset) {
        p.energy = stiffness * depth * depth * depth / (T(6) * onset);
        p.force = stiffness * depth * depth / (T(2) * onset);
        p.stiffness = stiffness * depth / onset;
    } else {
        const T beyond = depth - onset;
        p.energy = T(0.5) * stiffness * beyond * beyond + T(0.5) * stiffness * onset * beyond +
                   stiffness * onset * onset / T(6);
        p.force = stiffness * (depth - T(0.5) * onset);
        p.stiffness = stiffness;
    }
    return p;
}

}  // namespace weft
