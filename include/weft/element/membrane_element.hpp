#pragma once
/// @file membrane_element.hpp
/// A StVK membrane triangle with strain-rate dissipation (2018 Sec. 4): the
/// Green strain of `green_strain.hpp` × StVKDensity(λ, μ) for elasticity
/// (Eq. 13–14) × StVKDensity(λ_d, μ_d) for dissipation (Eq. 15–16).
///
/// Everything is delegated to the generic layers (element/elastic.hpp,
/// element/dissipation.hpp); this file only bundles the three ingredients and
/// evaluates the strain once per call. DoFs: q = [x₀, x₁, x₂], v = q̇ (9 each).
/// Densities are per unit rest area (multiply 3D Lamé parameters by the
/// thickness for a thin sheet).

#include <weft/core/error.hpp>
#include <weft/element/dissipation.hpp>
#include <weft/element/elastic.hpp>
#include <weft/potential/stvk.hpp>
#include <weft/strain/green_strain.hpp>

namespace weft {

/// One membrane triangle: rest state and the two StVK densities. Plain data.
template <typename T>
struct MembraneElement {
    TriangleRest<T> rest;
    StVKDensity<T> elastic;      ///< λ, μ per unit rest area (N/m)
    StVKDensity<T> dissipative;  ///< λ_d, μ_d per unit rest area (N·s/m), 2018 Eq. (15)
};

/// Host-side factory that validates the parameters. Each density must be
/// finite and convex in its argument: with Voigt (ε₁₁, ε₂₂, ε₁₂) the Hessian
/// of Ψ has eigenvalues 2(λ + μ), 2μ, 4μ, so μ ≥ 0 and λ + μ ≥ 0. For the
/// dissipative density this is what makes the dissipated power −f_d·v ≥ 0.
/// @throws InvalidInput naming the offending parameter and its value.
template <typename T>
inline MembraneElement<T> make_membrane_element(const TriangleRest<T>& rest, const StVKDensity<T>& elastic,
                                                const StVKDensity<T>& dissipative)
{
    require_positive("membrane rest area", rest.area);
    if (!rest.dm_inverse.allFinite()) {
        throw InvalidInput("invalid membrane rest state: Dm^-1 is not finite (use make_triangle_rest)");
    }
    require_finite("membrane lambda", elastic.lambda);
    require_non_negative("membrane mu", elastic.mu);
    require_non_negative("membrane lambda + mu", elastic.lambda + elastic.mu);
    require_finite("membrane lambda_d", dissipative.lambda);
    require_non_negative("membrane mu_d", dissipative.mu);
    require_non_negative("membrane lambda_d + mu_d", dissipative.lambda + dissipative.mu);
    return MembraneElement<T>{rest, elastic, dissipative};
}

/// Green strain (and rate) of the element's triangle.
template <typename T>
WEFT_HD inline GreenStrainEval<T> membrane_strain(const MembraneElement<T>& element, const Vec<T, 9>& q,
                                                  const Vec<T, 9>& v)
{
    return green_strain(element.rest, q, v);
}

/// V_e = Ω Ψ_e(ε) (2018 Eq. 4, 13)
template <typename T>
WEFT_HD inline T membrane_elastic_energy(const MembraneElement<T>& element, const Vec<T, 9>& q)
{
    return elastic_energy(green_strain(element.rest, q, Vec<T, 9>::Zero().eval()), element.elastic);
}

/// f_e = −Ω ∇ε S_e (2018 Eq. 5, 14)
template <typename T>
WEFT_HD inline Vec<T, 9> membrane_elastic_force(const MembraneElement<T>& element, const Vec<T, 9>& q)
{
    return elastic_force(green_strain(element.rest, q, Vec<T, 9>::Zero().eval()), element.elastic);
}

/// ∂f_e/∂q = −∇²V_e, optionally with −∂f_e/∂q projected onto the PSD cone.
template <typename T>
WEFT_HD inline Mat<T, 9, 9> membrane_elastic_force_jacobian(const MembraneElement<T>& element, const Vec<T, 9>& q,
                                                            PsdProjection projection = PsdProjection::off)
{
    return elastic_force_jacobian(green_strain(element.rest, q, Vec<T, 9>::Zero().eval()), element.elastic, projection);
}

/// V_d = Ω Ψ_d(ε̇) (2018 Eq. 6, 15)
template <typename T>
WEFT_HD inline T membrane_dissipation_potential(const MembraneElement<T>& element, const Vec<T, 9>& q,
                                                const Vec<T, 9>& v)
{
    return dissipation_potential(green_strain(element.rest, q, v), element.dissipative);
}

/// f_d = −Ω ∇ε S_d(ε̇) (2018 Eq. 7, 16)
template <typename T>
WEFT_HD inline Vec<T, 9> membrane_dissipative_force(const MembraneElement<T>& element, const Vec<T, 9>& q,
                                                    const Vec<T, 9>& v)
{
    return dissipative_force(green_strain(element.rest, q, v), element.dissipative);
}

/// ∂f_d/∂v (2018 Eq. 8, exact) or the symmetric ∂f_d/∂q (Eq. 9 without its
/// non-symmetric term, with the dissipative stress eigenvalues clamped when
/// `clamp` is on, as 2018 Sec. 4 prescribes for StVK).
template <typename T>
WEFT_HD inline Mat<T, 9, 9> membrane_dissipative_force_jacobian(const MembraneElement<T>& element, const Vec<T, 9>& q,
                                                                const Vec<T, 9>& v, DiffWrt wrt,
                                                                StressClamp clamp = StressClamp::on)
{
    return dissipative_force_jacobian(green_strain(element.rest, q, v), element.dissipative, wrt, clamp);
}

/// Everything an implicit integrator needs from one element, from a single
/// strain evaluation.
template <typename T>
struct MembraneForces {
    T elastic_energy;                ///< V_e
    T dissipation_potential;         ///< V_d
    Vec<T, 9> elastic_force;         ///< f_e
    Vec<T, 9> dissipative_force;     ///< f_d
    Mat<T, 9, 9> position_jacobian;  ///< ∂f_e/∂q + symmetric ∂f_d/∂q (symmetric)
    Mat<T, 9, 9> velocity_jacobian;  ///< ∂f_d/∂v (symmetric)
    StrainStatus status;

    /// f = f_e + f_d
    WEFT_HD Vec<T, 9> force() const { return elastic_force + dissipative_force; }
};

/// @param[in] projection  PSD projection of the elastic stiffness block
/// @param[in] clamp       clamp of the dissipative stress in ∂f_d/∂q (2018 Sec. 3.4)
template <typename T>
WEFT_HD inline MembraneForces<T> evaluate_membrane(const MembraneElement<T>& element, const Vec<T, 9>& q,
                                                   const Vec<T, 9>& v, PsdProjection projection = PsdProjection::off,
                                                   StressClamp clamp = StressClamp::on)
{
    const GreenStrainEval<T> e = green_strain(element.rest, q, v);
    MembraneForces<T> out;
    out.elastic_energy = elastic_energy(e, element.elastic);
    out.dissipation_potential = dissipation_potential(e, element.dissipative);
    out.elastic_force = elastic_force(e, element.elastic);
    out.dissipative_force = dissipative_force(e, element.dissipative);
    out.position_jacobian = elastic_force_jacobian(e, element.elastic, projection) +
                            dissipative_force_jacobian(e, element.dissipative, DiffWrt::positions, clamp);
    out.velocity_jacobian = dissipative_force_jacobian(e, element.dissipative, DiffWrt::velocities);
    out.status = e.status;
    return out;
}

}  // namespace weft
