#pragma once
/// @file mollified_friction.hpp
/// IPC's mollified Coulomb law (Li et al. 2020, Sec. 5, Eq. 15–16): the
/// friction force of magnitude μλ f₁(u) against a slip velocity of size u,
/// with the C¹ mollifier f₁(u) = 2u/ε − u²/ε² below the slip velocity ε and
/// 1 above it, as the gradient of the dissipation potential μλ f₀(u),
/// f₀′ = f₁, f₀(0) = 0. Shared by the collider's friction (`lagged_friction`,
/// collider.hpp) and the friction anchors of yarn crossings
/// (`lagged_anchor_friction`, yarn_terms.hpp).

#include <weft/core/types.hpp>

namespace weft {

/// The mollifier at one slip speed, per unit Coulomb limit.
template <typename T>
struct MollifiedCoulomb {
    T potential;  ///< f₀(u): u²/ε − u³/(3ε²) below ε, u − ε/3 above
    T ratio;      ///< f₁(u)/u: 2/ε − u/ε² below ε (2/ε at u = 0), 1/u above
    T slope;      ///< f₁′(u): 2/ε − 2u/ε² below ε, 0 above
};

/// `MollifiedCoulomb` at slip speed u ≥ 0 and slip velocity ε > 0.
template <typename T>
WEFT_HD inline MollifiedCoulomb<T> mollified_coulomb(T u, T eps)
{
    MollifiedCoulomb<T> m;
    if (u < eps) {
        m.potential = u * u / eps - u * u * u / (T(3) * eps * eps);
        m.ratio = T(2) / eps - u / (eps * eps);
        m.slope = T(2) / eps - T(2) * u / (eps * eps);
    } else {
        m.potential = u - eps / T(3);
        m.ratio = T(1) / u;
        m.slope = T(0);
    }
    return m;
}

}  // namespace weft
