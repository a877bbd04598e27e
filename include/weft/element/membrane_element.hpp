#pragma once
/// @file membrane_element.hpp
/// A membrane triangle with strain-rate dissipation (2018 Sec. 4): the Green
/// strain of `green_strain.hpp` × an elastic density × StVKDensity(λ_d, μ_d)
/// for dissipation (2018 Eq. 15–16). The elastic density is a template
/// parameter: StVKDensity(λ, μ) (2018 Eq. 13–14, the default) or the GNATV
/// tabulated warp/weft/shear curves, TabulatedMembraneDensity (2019 Sec.
/// 3.1–3.2, potential/tabulated.hpp). Any density with the StVKDensity
/// interface (strain_dim 3, StressKind::symmetric_2x2, value / stress /
/// stress_derivative of the Voigt Green strain) works.
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
#include <weft/potential/tabulated.hpp>
#include <weft/strain/green_strain.hpp>

namespace weft {

/// One membrane triangle: rest state, elastic density and the StVK
/// dissipation density. Plain data.
template <typename T, class ElasticDensity = StVKDensity<T>>
struct MembraneElement {
    static_assert(ElasticDensity::strain_dim == 3 && ElasticDensity::stress_kind == StressKind::symmetric_2x2,
                  "a membrane density acts on the Voigt Green strain (e11, e22, e12)");
    using Elastic = ElasticDensity;

    TriangleRest<T> rest;
    ElasticDensity elastic;      ///< per unit rest area: λ, μ (N/m) or warp/weft/shear curves (N/m)
    StVKDensity<T> dissipative;  ///< λ_d, μ_d per unit rest area (N·s/m), 2018 Eq. (15)
};

/// A membrane element with the GNATV tabulated elastic density (2019 Sec. 3).
template <typename T>
using TabulatedMembraneElement = MembraneElement<T, TabulatedMembraneDensity<T>>;

namespace membrane_detail {

template <typename T>
inline void require_valid_rest(const TriangleRest<T>& rest)
{
    require_positive("membrane rest area", rest.area);
    if (!rest.dm_inverse.allFinite()) {
        throw InvalidInput("invalid membrane rest state: Dm^-1 is not finite (use make_triangle_rest)");
    }
}

template <typename T>
inline void require_valid_damping(const StVKDensity<T>& dissipative)
{
    require_finite("membrane lambda_d", dissipative.lambda);
    require_non_negative("membrane mu_d", dissipative.mu);
    require_non_negative("membrane lambda_d + mu_d", dissipative.lambda + dissipative.mu);
}

}  // namespace membrane_detail

/// Host-side factory that validates the parameters. Each density must be
/// finite and convex in its argument: with Voigt (ε₁₁, ε₂₂, ε₁₂) the Hessian
/// of Ψ has eigenvalues 2(λ + μ), 2μ, 4μ, so μ ≥ 0 and λ + μ ≥ 0. For the
/// dissipative density this is what makes the dissipated power −f_d·v ≥ 0.
/// @throws InvalidInput naming the offending parameter and its value.
template <typename T>
inline MembraneElement<T> make_membrane_element(const TriangleRest<T>& rest, const StVKDensity<T>& elastic,
                                                const StVKDensity<T>& dissipative)
{
    membrane_detail::require_valid_rest(rest);
    require_finite("membrane lambda", elastic.lambda);
    require_non_negative("membrane mu", elastic.mu);
    require_non_negative("membrane lambda + mu", elastic.lambda + elastic.mu);
    membrane_detail::require_valid_damping(dissipative);
    return MembraneElement<T>{rest, elastic, dissipative};
}

/// Host-side factory for the GNATV tabulated membrane (2019 Sec. 3). The
/// curves must satisfy require_valid_tabulated_curve (make_tabulated_curve
/// or load_tabulated_material build them so): then the elastic density is
/// convex in ε. The dissipative StVK density is checked as above.
/// @throws InvalidInput naming the offending curve field or parameter and its value.
template <typename T>
inline TabulatedMembraneElement<T> make_membrane_element(const TriangleRest<T>& rest,
                                                         const TabulatedMembraneDensity<T>& elastic,
                                                         const StVKDensity<T>& dissipative)
{
    membrane_detail::require_valid_rest(rest);
    require_valid_tabulated_curve("warp", elastic.warp);
    require_valid_tabulated_curve("weft", elastic.weft);
    require_valid_tabulated_curve("shear", elastic.shear);
    membrane_detail::require_valid_damping(dissipative);
    return TabulatedMembraneElement<T>{rest, elastic, dissipative};
}

/// Green strain (and rate) of the element's triangle.
template <typename T, class E>
WEFT_HD inline GreenStrainEval<T> membrane_strain(const MembraneElement<T, E>& element, const Vec<T, 9>& q,
                                                  const Vec<T, 9>& v)
{
    return green_strain(element.rest, q, v);
}

/// V_e = Ω Ψ_e(ε) (2018 Eq. 4, 13; tabulated: 2019 Sec. 3.1)
template <typename T, class E>
WEFT_HD inline T membrane_elastic_energy(const MembraneElement<T, E>& element, const Vec<T, 9>& q)
{
    return elastic_energy(green_strain(element.rest, q, Vec<T, 9>::Zero().eval()), element.elastic);
}

/// f_e = −Ω ∇ε S_e (2018 Eq. 5, 14; tabulated: 2019 Eq. 4)
template <typename T, class E>
WEFT_HD inline Vec<T, 9> membrane_elastic_force(const MembraneElement<T, E>& element, const Vec<T, 9>& q)
{
    return elastic_force(green_strain(element.rest, q, Vec<T, 9>::Zero().eval()), element.elastic);
}

/// ∂f_e/∂q = −∇²V_e (tabulated: the exact form of 2019 Eq. 5), optionally
/// with −∂f_e/∂q projected onto the PSD cone.
template <typename T, class E>
WEFT_HD inline Mat<T, 9, 9> membrane_elastic_force_jacobian(const MembraneElement<T, E>& element, const Vec<T, 9>& q,
                                                            PsdProjection projection = PsdProjection::off)
{
    return elastic_force_jacobian(green_strain(element.rest, q, Vec<T, 9>::Zero().eval()), element.elastic, projection);
}

/// V_d = Ω Ψ_d(ε̇) (2018 Eq. 6, 15)
template <typename T, class E>
WEFT_HD inline T membrane_dissipation_potential(const MembraneElement<T, E>& element, const Vec<T, 9>& q,
                                                const Vec<T, 9>& v)
{
    return dissipation_potential(green_strain(element.rest, q, v), element.dissipative);
}

/// f_d = −Ω ∇ε S_d(ε̇) (2018 Eq. 7, 16)
template <typename T, class E>
WEFT_HD inline Vec<T, 9> membrane_dissipative_force(const MembraneElement<T, E>& element, const Vec<T, 9>& q,
                                                    const Vec<T, 9>& v)
{
    return dissipative_force(green_strain(element.rest, q, v), element.dissipative);
}

/// ∂f_d/∂v (2018 Eq. 8, exact) or the symmetric ∂f_d/∂q (Eq. 9 without its
/// non-symmetric term, with the dissipative stress eigenvalues clamped when
/// `clamp` is on, as 2018 Sec. 4 prescribes for StVK).
template <typename T, class E>
WEFT_HD inline Mat<T, 9, 9> membrane_dissipative_force_jacobian(const MembraneElement<T, E>& element,
                                                                const Vec<T, 9>& q, const Vec<T, 9>& v, DiffWrt wrt,
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

/// How `membrane_forces` builds the stiffness −∂f/∂q.
struct MembraneJacobianOptions {
    PsdProjection projection = PsdProjection::off;    ///< project the elastic stiffness onto the PSD cone
    StressClamp elastic_clamp = StressClamp::off;     ///< clamp the elastic stress in Σ S_k Hε_k (elastic.hpp)
    StressClamp dissipative_clamp = StressClamp::on;  ///< clamp the dissipative stress in ∂f_d/∂q (2018 Sec. 3.4)
};

/// The stiffness the triangle backend assembles (triangle_elements.hpp): both
/// stresses clamped, no projection. With the Green strain's PSD Hessians and
/// a PSD ∂S/∂ε this is PSD, and exact in tension.
WEFT_HD inline MembraneJacobianOptions backend_membrane_jacobian()
{
    return MembraneJacobianOptions{PsdProjection::off, StressClamp::on, StressClamp::on};
}

/// The element's energies, forces and Jacobians from one Green-strain
/// evaluation `e` (its rate as the caller set it: ∇ε(q)·v, or the incremental
/// rate of full Newton, `set_incremental_rate`). This is the one
/// implementation of the membrane triangle: `evaluate_membrane` and the
/// backend kernel (`evaluate_triangle_membrane`) both call it. A zero
/// dissipative density contributes nothing and is not evaluated.
template <typename T, class Elastic>
WEFT_HD inline MembraneForces<T> membrane_forces(const GreenStrainEval<T>& e, const Elastic& elastic,
                                                 const StVKDensity<T>& dissipative,
                                                 const MembraneJacobianOptions& options = {})
{
    MembraneForces<T> out;
    out.elastic_energy = elastic_energy(e, elastic);
    out.elastic_force = elastic_force(e, elastic);
    out.position_jacobian = elastic_force_jacobian(e, elastic, options.projection, options.elastic_clamp);
    out.status = e.status;
    if (dissipative.lambda == T(0) && dissipative.mu == T(0)) {
        out.dissipation_potential = T(0);
        out.dissipative_force.setZero();
        out.velocity_jacobian.setZero();
        return out;
    }
    out.dissipation_potential = dissipation_potential(e, dissipative);
    out.dissipative_force = dissipative_force(e, dissipative);
    out.position_jacobian += dissipative_force_jacobian(e, dissipative, DiffWrt::positions, options.dissipative_clamp);
    out.velocity_jacobian = dissipative_force_jacobian(e, dissipative, DiffWrt::velocities);
    return out;
}

/// @param[in] projection  PSD projection of the elastic stiffness block
/// @param[in] clamp       clamp of the dissipative stress in ∂f_d/∂q (2018 Sec. 3.4)
template <typename T, class E>
WEFT_HD inline MembraneForces<T> evaluate_membrane(const MembraneElement<T, E>& element, const Vec<T, 9>& q,
                                                   const Vec<T, 9>& v, PsdProjection projection = PsdProjection::off,
                                                   StressClamp clamp = StressClamp::on)
{
    return membrane_forces(green_strain(element.rest, q, v), element.elastic, element.dissipative,
                           MembraneJacobianOptions{projection, StressClamp::off, clamp});
}

}  // namespace weft
