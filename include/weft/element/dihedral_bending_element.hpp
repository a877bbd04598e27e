#pragma once
/// @file dihedral_bending_element.hpp
/// Discrete-shells bending of a triangle-mesh hinge with strain-rate
/// dissipation: the dihedral strain of strain/dihedral.hpp,
/// ε = wrap(θ − θ̄)|ē|/Ā on Ω = Ā, × QuadraticDensity(k) for elasticity and
/// × QuadraticDensity(k_d) for dissipation:
///     V   = Ω ½ k ε²  = ½ k (θ − θ̄)² |ē|²/Ā      (2018 Eq. 4; Grinspun et al. 2003 with k_B = k/2)
///     V_d = Ω ½ k_d ε̇² = ½ k_d θ̇² |ē|²/Ā          (2018 Eq. 6; 2017 Eq. 6)
/// Everything goes through the generic layers (element/elastic.hpp,
/// element/dissipation.hpp): f_d = −Ω ∇ε S_d (2018 Eq. 7), ∂f_d/∂v (Eq. 8),
/// the symmetric ∂f_d/∂q with the non-symmetric term of Eq. (9) dropped and
/// the dissipative stress clamped (Sec. 3.4). Since f_d lies along ∇ε = ∇θ·|ē|/Ā
/// and θ is invariant under rigid motions, rigid motion is never damped
/// (2018 Eq. 1), bent hinges included.
///
/// DoFs: q = [x₀, x₁, x₂, x₃] (edge x₁–x₂, opposite vertices x₀, x₃), v = q̇
/// (12 each). Stiffness k in N·m, damping k_d in N·m·s (Rayleigh analogy,
/// 2018 Eq. 12: k_d = β k).
///
/// PSD projection. Unlike the Green strain (whose Hessians are PSD, so that
/// the 2018 Sec. 3.4 stress clamp alone makes the membrane's −∂f_d/∂q PSD), the
/// dihedral angle's Hessian Hθ is indefinite: −∂f_d/∂q = Ω max(S_d, 0) Hε is
/// indefinite even with the clamp. PsdProjection::on therefore projects the
/// element's whole stiffness block −(∂f_e/∂q + ∂f_d/∂q) onto the PSD cone, once.

#include <weft/core/error.hpp>
#include <weft/core/psd.hpp>
#include <weft/element/dissipation.hpp>
#include <weft/element/elastic.hpp>
#include <weft/potential/quadratic.hpp>
#include <weft/strain/dihedral.hpp>

namespace weft {

/// One hinge: rest state, the two quadratic densities, and the floor below
/// which a deformed triangle counts as degenerate. Plain data.
template <typename T>
struct DihedralBendingElement {
    HingeRest<T> rest;
    QuadraticDensity<T, 1> elastic;      ///< bending stiffness k (N·m), Ψ_e = ½ k ε²
    QuadraticDensity<T, 1> dissipative;  ///< bending damping k_d (N·m·s), Ψ_d = ½ k_d ε̇² (2018 Eq. 6)
    T min_relative_height = default_min_relative_hinge_height<T>();  ///< see strain/dihedral.hpp
};

/// Host-side factory that validates the rest state and the parameters.
/// Both coefficients must be finite and ≥ 0 (a convex Ψ_d makes the
/// dissipated power −f_d·v = 2V_d ≥ 0).
/// @throws InvalidInput naming the offending field and its value.
template <typename T>
inline DihedralBendingElement<T> make_dihedral_bending_element(const HingeRest<T>& rest,
                                                               const QuadraticDensity<T, 1>& elastic,
                                                               const QuadraticDensity<T, 1>& dissipative)
{
    validate_hinge_rest(rest);
    require_non_negative("dihedral bending stiffness k", elastic.stiffness);
    require_non_negative("dihedral bending damping k_d", dissipative.stiffness);
    return DihedralBendingElement<T>{rest, elastic, dissipative, default_min_relative_hinge_height<T>()};
}

/// Dihedral strain (and rate) of the element's hinge.
template <typename T>
WEFT_HD inline DihedralEval<T> dihedral_bending_element_strain(const DihedralBendingElement<T>& element,
                                                               const Vec<T, 12>& q, const Vec<T, 12>& v)
{
    return dihedral_bending_strain(element.rest, q, v, element.min_relative_height);
}

/// V = Ω Ψ_e(ε) = ½ k (θ − θ̄)²|ē|²/Ā (2018 Eq. 4)
template <typename T>
WEFT_HD inline T dihedral_bending_elastic_energy(const DihedralBendingElement<T>& element, const Vec<T, 12>& q)
{
    return elastic_energy(dihedral_bending_element_strain(element, q, Vec<T, 12>::Zero().eval()), element.elastic);
}

/// f_e = −Ω ∇ε S_e (2018 Eq. 5)
template <typename T>
WEFT_HD inline Vec<T, 12> dihedral_bending_elastic_force(const DihedralBendingElement<T>& element, const Vec<T, 12>& q)
{
    return elastic_force(dihedral_bending_element_strain(element, q, Vec<T, 12>::Zero().eval()), element.elastic);
}

/// ∂f_e/∂q = −∇²V, optionally with −∂f_e/∂q projected onto the PSD cone.
template <typename T>
WEFT_HD inline Mat<T, 12, 12> dihedral_bending_elastic_force_jacobian(const DihedralBendingElement<T>& element,
                                                                      const Vec<T, 12>& q,
                                                                      PsdProjection projection = PsdProjection::off)
{
    return elastic_force_jacobian(dihedral_bending_element_strain(element, q, Vec<T, 12>::Zero().eval()),
                                  element.elastic, projection);
}

/// V_d = Ω Ψ_d(ε̇) = ½ k_d θ̇²|ē|²/Ā (2018 Eq. 6)
template <typename T>
WEFT_HD inline T dihedral_bending_dissipation_potential(const DihedralBendingElement<T>& element, const Vec<T, 12>& q,
                                                        const Vec<T, 12>& v)
{
    return dissipation_potential(dihedral_bending_element_strain(element, q, v), element.dissipative);
}

/// f_d = −Ω ∇ε S_d(ε̇) (2018 Eq. 7)
template <typename T>
WEFT_HD inline Vec<T, 12> dihedral_bending_dissipative_force(const DihedralBendingElement<T>& element,
                                                             const Vec<T, 12>& q, const Vec<T, 12>& v)
{
    return dissipative_force(dihedral_bending_element_strain(element, q, v), element.dissipative);
}

/// ∂f_d/∂v (2018 Eq. 8, exact) or the symmetric ∂f_d/∂q = −Ω clamp(S_d) Hε
/// (Eq. 9 without its non-symmetric term, Sec. 3.4 clamp when `clamp` is on).
template <typename T>
WEFT_HD inline Mat<T, 12, 12> dihedral_bending_dissipative_force_jacobian(const DihedralBendingElement<T>& element,
                                                                          const Vec<T, 12>& q, const Vec<T, 12>& v,
                                                                          DiffWrt wrt,
                                                                          StressClamp clamp = StressClamp::on)
{
    return dissipative_force_jacobian(dihedral_bending_element_strain(element, q, v), element.dissipative, wrt, clamp);
}

/// Everything an implicit integrator needs from one hinge, from a single
/// strain evaluation (the 12-DoF counterpart of MembraneForces).
template <typename T>
struct DihedralBendingForces {
    T elastic_energy;                  ///< V
    T dissipation_potential;           ///< V_d
    Vec<T, 12> elastic_force;          ///< f_e = −∇V
    Vec<T, 12> dissipative_force;      ///< f_d = −∂V_d/∂v
    Mat<T, 12, 12> position_jacobian;  ///< ∂f_e/∂q + symmetric ∂f_d/∂q (exactly symmetric; see `projection`)
    Mat<T, 12, 12> velocity_jacobian;  ///< ∂f_d/∂v (exactly symmetric, negative semi-definite for k_d ≥ 0)
    T angle;                           ///< θ (0 where undefined, see DihedralAngleDerivatives)
    StrainStatus status;               ///< ok or degenerate_triangle (then all forces and Jacobians are zero)

    /// f = f_e + f_d
    WEFT_HD Vec<T, 12> force() const { return elastic_force + dissipative_force; }
};

/// How `dihedral_bending_forces` builds the stiffness −∂f/∂q.
enum class HingeStiffness {
    exact,          ///< ∂f_e/∂q + the symmetric, clamped ∂f_d/∂q (indefinite in general)
    psd_projected,  ///< the same, projected onto the PSD cone once (file comment)
    /// Gauss–Newton Ω ∇ε C ∇εᵀ, ∂f_d/∂q omitted: PSD by construction, the
    /// stiffness the triangle backend assembles (triangle_elements.hpp)
    gauss_newton
};

/// The hinge's energies, forces and Jacobians from one dihedral-strain
/// evaluation `e` (its rate as the caller set it: ∇ε(q)·v, or the
/// incremental rate of full Newton, `set_incremental_rate`). This is the one
/// implementation of the hinge: `evaluate_dihedral_bending` and the backend
/// kernel (`evaluate_triangle_hinge`) both call it. A zero damping k_d
/// contributes nothing and is not evaluated. `angle` is left 0.
template <typename T>
WEFT_HD inline DihedralBendingForces<T> dihedral_bending_forces(const DihedralEval<T>& e,
                                                                const QuadraticDensity<T, 1>& elastic,
                                                                const QuadraticDensity<T, 1>& dissipative,
                                                                HingeStiffness stiffness,
                                                                StressClamp clamp = StressClamp::on)
{
    DihedralBendingForces<T> out;
    out.elastic_energy = elastic_energy(e, elastic);
    out.elastic_force = elastic_force(e, elastic);
    const bool damped = dissipative.stiffness != T(0);
    out.dissipation_potential = damped ? dissipation_potential(e, dissipative) : T(0);
    if (damped)
        out.dissipative_force = dissipative_force(e, dissipative);
    else
        out.dissipative_force.setZero();
    if (stiffness == HingeStiffness::gauss_newton) {
        const Vec<T, 12> g = e.gradient.col(0);
        out.position_jacobian = -(e.size * elastic.stiffness) * (g * g.transpose());
    } else {
        out.position_jacobian = elastic_force_jacobian(e, elastic, PsdProjection::off);
        if (damped) out.position_jacobian += dissipative_force_jacobian(e, dissipative, DiffWrt::positions, clamp);
        // One projection of the element's stiffness: the clamp alone cannot make Ω S_d Hε PSD (Hε is indefinite).
        if (stiffness == HingeStiffness::psd_projected)
            out.position_jacobian = -project_to_psd<T, 12>(Mat<T, 12, 12>(-out.position_jacobian));
        // Exactly symmetric (the outer products ∇ε k ∇εᵀ round (i, j) and (j, i) differently).
        out.position_jacobian = T(0.5) * (out.position_jacobian + out.position_jacobian.transpose()).eval();
    }
    if (damped) {
        const Mat<T, 12, 12> velocity_jacobian = dissipative_force_jacobian(e, dissipative, DiffWrt::velocities);
        out.velocity_jacobian = T(0.5) * (velocity_jacobian + velocity_jacobian.transpose());
    } else {
        out.velocity_jacobian.setZero();
    }
    out.angle = T(0);
    out.status = e.status;
    return out;
}

/// @param[in] q  12 stacked positions [x₀, x₁, x₂, x₃]
/// @param[in] v  12 stacked velocities
/// @param[in] projection  PsdProjection::on projects the whole −position_jacobian
///            (elastic + clamped dissipative) onto the PSD cone (file comment);
///            the hinge always clamps, so `absolute` projects as `on`
/// @param[in] clamp  clamp of the dissipative stress in ∂f_d/∂q (2018 Sec. 3.4)
template <typename T>
WEFT_HD inline DihedralBendingForces<T> evaluate_dihedral_bending(const DihedralBendingElement<T>& element,
                                                                  const Vec<T, 12>& q, const Vec<T, 12>& v,
                                                                  PsdProjection projection = PsdProjection::off,
                                                                  StressClamp clamp = StressClamp::on)
{
    const DihedralAngleDerivatives<T> theta = dihedral_angle_derivatives(q, element.min_relative_height);
    DihedralBendingForces<T> out = dihedral_bending_forces(
        dihedral_bending_strain_from(element.rest, theta, v), element.elastic, element.dissipative,
        projection != PsdProjection::off ? HingeStiffness::psd_projected : HingeStiffness::exact, clamp);
    out.angle = theta.angle;
    return out;
}

}  // namespace weft
