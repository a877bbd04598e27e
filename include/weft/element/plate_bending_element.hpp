#pragma once
/// @file plate_bending_element.hpp
/// Kirchhoff plate bending of a triangle-mesh shell with strain-rate
/// dissipation: the curvature strain ε = b − b̄ of strain/shell_curvature.hpp
/// on Ω = Ā, × a StVK-form density for elasticity and for dissipation:
///     V   = Ω [λ_b/2 tr(ε)² + μ_b tr(ε²)] = ½ D Ω [(tr ε)² − 2 (1 − ν) det ε],
///           λ_b = D ν, μ_b = D (1 − ν)/2, D = E h³ / 12 (1 − ν²) (N·m);
///     V_d = Ω [λ_bd/2 tr(ε̇)² + μ_bd tr(ε̇²)],  λ_bd = D_d ν, μ_bd = D_d (1 − ν)/2
/// (2018 Eq. 6 with the plate's own split of bending into its mean and
/// twisting parts; D_d in N·m·s). Everything goes through the generic layers
/// (element/elastic.hpp, element/dissipation.hpp): f_d = −Ω ∇ε S_d (2018
/// Eq. 7), ∂f_d/∂v (Eq. 8), the symmetric, clamped ∂f_d/∂q (Eq. 9, Sec. 3.4).
/// Since b is invariant under rigid motions, rigid motion is never damped.
///
/// DoFs: the triangle's stencil (corners first), 3 × curvature_stencil_nodes
/// each for q and v.
///
/// Stiffness. b's Hessian is indefinite (the normal's curvature), so the
/// backend assembles the Gauss–Newton Ω ∇ε C ∇εᵀ (C = ∂S/∂ε, PSD for
/// −1 < ν < 1), as for the dihedral hinge; the exact and PSD-projected forms
/// are available to callers and tests.

#include <weft/core/error.hpp>
#include <weft/core/psd.hpp>
#include <weft/element/dihedral_bending_element.hpp>
#include <weft/element/dissipation.hpp>
#include <weft/element/elastic.hpp>
#include <weft/potential/stvk.hpp>
#include <weft/strain/shell_curvature.hpp>

namespace weft {

/// The plate's bending densities from D (or D_d) and ν: (λ_b, μ_b) =
/// (D ν, D (1 − ν)/2), so that Ψ = ½ D [(tr ε)² − 2 (1 − ν) det ε].
template <typename T>
WEFT_HD inline StVKDensity<T> plate_bending_density(T rigidity, T poisson)
{
    return StVKDensity<T>{rigidity * poisson, rigidity * (T(1) - poisson) / T(2)};
}

/// Everything an implicit integrator needs from one plate triangle, from a
/// single strain evaluation.
template <typename T, int K = curvature_stencil_nodes>
struct PlateBendingForces {
    static constexpr int N = 3 * K;
    T elastic_energy;                ///< V
    T dissipation_potential;         ///< V_d
    Vec<T, N> elastic_force;         ///< f_e = −∇V
    Vec<T, N> dissipative_force;     ///< f_d = −∂V_d/∂v
    Mat<T, N, N> position_jacobian;  ///< stiffness part of ∂f/∂q (see HingeStiffness), exactly symmetric
    Mat<T, N, N> velocity_jacobian;  ///< ∂f_d/∂v (symmetric, negative semi-definite)
    StrainStatus status;             ///< ok or degenerate_triangle (then everything is zero)

    /// f = f_e + f_d
    WEFT_HD Vec<T, N> force() const { return elastic_force + dissipative_force; }
};

/// The element's energies, forces and Jacobians from one curvature
/// evaluation `e` (its rate as the caller set it: ∇ε(q)·v, or the
/// incremental rate of full Newton): the generic layers with the stiffness
/// `stiffness` (`HingeStiffness::gauss_newton`: Ω ∇ε C ∇εᵀ). The assembly
/// kernels use `plate_bending_forces_gauss_newton`, which gives the same
/// Gauss–Newton result from the first-order evaluation (tested).
template <typename T, int N>
WEFT_HD inline PlateBendingForces<T, N / 3> plate_bending_forces(const StrainEval<T, N, 3>& e,
                                                                 const StVKDensity<T>& elastic,
                                                                 const StVKDensity<T>& dissipative,
                                                                 HingeStiffness stiffness,
                                                                 StressClamp clamp = StressClamp::on)
{
    PlateBendingForces<T, N / 3> out;
    out.status = e.status;
    out.elastic_energy = elastic_energy(e, elastic);
    out.elastic_force = elastic_force(e, elastic);
    const bool damped = dissipative.lambda != T(0) || dissipative.mu != T(0);
    out.dissipation_potential = damped ? dissipation_potential(e, dissipative) : T(0);
    if (damped)
        out.dissipative_force = dissipative_force(e, dissipative);
    else
        out.dissipative_force.setZero();
    if (stiffness == HingeStiffness::gauss_newton) {
        out.position_jacobian = -e.size * (e.gradient * (elastic.stress_derivative(e.strain) * e.gradient.transpose()));
    } else {
        out.position_jacobian = elastic_force_jacobian(e, elastic, PsdProjection::off);
        if (damped) out.position_jacobian += dissipative_force_jacobian(e, dissipative, DiffWrt::positions, clamp);
        if (stiffness == HingeStiffness::psd_projected)
            out.position_jacobian = -project_to_psd<T, N>(Mat<T, N, N>(-out.position_jacobian));
    }
    out.position_jacobian = T(0.5) * (out.position_jacobian + out.position_jacobian.transpose()).eval();
    if (damped) {
        const Mat<T, N, N> velocity_jacobian = dissipative_force_jacobian(e, dissipative, DiffWrt::velocities);
        out.velocity_jacobian = T(0.5) * (velocity_jacobian + velocity_jacobian.transpose());
    } else {
        out.velocity_jacobian.setZero();
    }
    return out;
}

/// The Gauss–Newton forces of `plate_bending_forces` from the first-order
/// evaluation, as the backend assembles them: V = Ω Ψ(ε), f_e = −Ω ∇ε S(ε)
/// (2018 Eq. 5), −Ω ∇ε C ∇εᵀ, V_d = Ω Ψ_d(ε̇), f_d = −Ω ∇ε S_d(ε̇)
/// (Eq. 7) and ∂f_d/∂v = −Ω ∇ε C_d ∇εᵀ (Eq. 8).
template <typename T, int K>
WEFT_HD inline PlateBendingForces<T, K> plate_bending_forces_gauss_newton(const ShellCurvatureFirstOrder<T, K>& e,
                                                                          const StVKDensity<T>& elastic,
                                                                          const StVKDensity<T>& dissipative)
{
    PlateBendingForces<T, K> out;
    out.status = e.status;
    out.elastic_energy = e.size * elastic.value(e.strain);
    out.elastic_force = -e.size * (e.gradient * elastic.stress(e.strain));
    out.position_jacobian = -e.size * (e.gradient * (elastic.stress_derivative(e.strain) * e.gradient.transpose()));
    out.position_jacobian = T(0.5) * (out.position_jacobian + out.position_jacobian.transpose()).eval();
    if (dissipative.lambda == T(0) && dissipative.mu == T(0)) {
        out.dissipation_potential = T(0);
        out.dissipative_force.setZero();
        out.velocity_jacobian.setZero();
        return out;
    }
    out.dissipation_potential = e.size * dissipative.value(e.rate);
    out.dissipative_force = -e.size * (e.gradient * dissipative.stress(e.rate));
    out.velocity_jacobian = -e.size * (e.gradient * (dissipative.stress_derivative(e.rate) * e.gradient.transpose()));
    out.velocity_jacobian = T(0.5) * (out.velocity_jacobian + out.velocity_jacobian.transpose()).eval();
    return out;
}

}  // namespace weft
