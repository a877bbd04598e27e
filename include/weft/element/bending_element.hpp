#pragma once
/// @file bending_element.hpp
/// The yarn bending element: the small-angle vector strain ε_k = k/Ω below
/// the switch angle and the angle strain ε_θ = θ/Ω above it (2017 Sec. 5.2,
/// "smaller than 5 degrees"; 2018 Sec. 5.2), blended so that elastic and
/// dissipative forces and their Jacobians are continuous and finite
/// everywhere, θ = 0 included.
///
/// Blend design. The two forms are two integration points of one element in
/// the sense of 2018 Eq. (4) and (6):
///     V   = Ω_θ Ψ_e,θ(ε_θ) + Ω_k Ψ_e,k(ε_k),
///     V_d = Ω_θ Ψ_d,θ(ε̇_θ) + Ω_k Ψ_d,k(ε̇_k),
/// with weighted sizes Ω_θ = w(θ) Ω and Ω_k = (1 − w(θ)) Ω, where
/// w = smootherstep(θ, 4.5°, 5.5°) (quintic, C²; w = 0: pure vector form,
/// w = 1: pure angle form). Each form is an ordinary StrainEval whose size,
/// size gradient and size Hessian are replaced by those of its weighted size,
///     ∇(wΩ)  = w'Ω∇θ + w∇Ω,
///     ∇²(wΩ) = w''Ω∇θ∇θᵀ + w'ΩHθ + w'(∇θ∇Ωᵀ + ∇Ω∇θᵀ) + wHΩ   (HΩ = 0 here),
/// and the generic elastic and dissipative layers are summed over the forms.
/// Consequences:
///  - The elastic layer's Eulerian term −Ψ_e∇Ω_i is exactly the ∇w term of
///    the blend, so f_e = −∇V and its Jacobian are exact inside the band.
///  - f_d = −Σ Ω_i ∇ε_i S_d,i contains no ∇w (sizes do not depend on v), so
///    f_d is as continuous as w; the symmetric ∂f_d/∂q drops ∇ε S_d ∇Ω_iᵀ,
///    which now includes the ∇w term (2018 Eq. 19); the exact Jacobian is the
///    generic exact one per form, which restores it.
///  - Outside the band only one form is evaluated: below 4.5° the angle
///    gradient (undefined at θ = 0) is never computed, above 5.5° the vector
///    strain (unbounded at 90°) is never computed. w, w', w'' vanish at the
///    band ends, so every quantity, Jacobians included, is continuous there.
///
/// Rigid rotations: the angle form does not damp them; the vector form damps
/// the rotation of a bent (θ ≠ 0) stencil's bending plane, ε̇_k = ω × ε_k,
/// which the blend confines to θ < 5.5° (see strain/bending.hpp).

#include <weft/core/math.hpp>
#include <weft/core/psd.hpp>
#include <weft/element/dissipation.hpp>
#include <weft/element/elastic.hpp>
#include <weft/potential/quadratic.hpp>
#include <weft/strain/bending.hpp>

namespace weft {

/// Where the element switches from the vector form to the angle form.
template <typename T>
struct BendingBlend {
    T lower = degrees_to_radians(T(4.5));  ///< below: vector form only (rad)
    T upper = degrees_to_radians(T(5.5));  ///< above: angle form only (rad)
    T min_arc_length = default_min_arc_length<T>();
};

/// The four densities of a bending element: elastic and dissipative, for the
/// scalar angle strain (strain_dim 1) and the vector strain (strain_dim 3).
/// They should describe the same material (e.g. the same stiffness), so that
/// the two forms agree to leading order at small angles (2018 Eq. 23).
template <class AngleElastic, class AngleDissipative, class VectorElastic, class VectorDissipative>
struct BendingDensities {
    static_assert(AngleElastic::strain_dim == 1 && AngleDissipative::strain_dim == 1,
                  "the angle form has a scalar strain");
    static_assert(VectorElastic::strain_dim == 3 && VectorDissipative::strain_dim == 3,
                  "the small-angle form has a 3-vector strain");
    AngleElastic angle_elastic;
    AngleDissipative angle_dissipative;
    VectorElastic vector_elastic;
    VectorDissipative vector_dissipative;
};

template <typename T>
using QuadraticBendingDensities =
    BendingDensities<QuadraticDensity<T, 1>, QuadraticDensity<T, 1>, QuadraticDensity<T, 3>, QuadraticDensity<T, 3>>;

/// Quadratic bending (2017 Eq. 2 and 6): Ψ_e = ½ k_e |ε|², Ψ_d = ½ k_d |ε̇|²
/// for both forms, from one bending stiffness and one damping coefficient.
template <typename T>
WEFT_HD inline QuadraticBendingDensities<T> quadratic_bending_densities(T bending_stiffness, T damping_stiffness)
{
    return {{bending_stiffness}, {damping_stiffness}, {bending_stiffness}, {damping_stiffness}};
}

/// The two weighted forms of one bending element. An inactive form is all
/// zeros (size 0), so summing it is harmless; callers skip it.
template <typename T>
struct BendingForms {
    BendingAngleEval<T> angle_form;    ///< ε_θ = θ/Ω with size w(θ)Ω
    BendingVectorEval<T> vector_form;  ///< ε_k = k/Ω with size (1 − w(θ))Ω
    bool angle_active;                 ///< w(θ) > 0
    bool vector_active;                ///< w(θ) < 1
    T angle;                           ///< θ
    BlendWeight<T> weight;             ///< w(θ), w'(θ), w''(θ)
    StrainStatus status;               ///< first non-ok status of the evaluated forms
};

namespace detail {

template <typename T, int N, int M>
WEFT_HD inline void set_zero(StrainEval<T, N, M>& e)
{
    e.strain.setZero();
    e.gradient.setZero();
    for (int k = 0; k < M; ++k) e.hessian[k].setZero();
    e.rate.setZero();
    e.size = T(0);
    e.size_gradient.setZero();
    e.size_hessian.setZero();
    e.status = StrainStatus::ok;
}

}  // namespace detail

/// Evaluates the forms the blend needs at (q, v), with weighted sizes.
/// @param[in] q  12 stacked DoFs [x_prev, s_prev, x₀, s₀, x_next, s_next]
/// @param[in] v  12 stacked generalized velocities
/// @param[in] which  StrainDerivatives::gradients leaves every Hessian of
///            both forms zero (hessian and size_hessian); the rest has the
///            same bits as with `hessians`
template <typename T>
WEFT_HD inline BendingForms<T> bending_forms(const Vec<T, 12>& q, const Vec<T, 12>& v,
                                             const BendingBlend<T>& blend = {},
                                             StrainDerivatives which = StrainDerivatives::hessians)
{
    BendingForms<T> f;
    const detail::BendingStencil<T> s = detail::bending_stencil(q, v, blend.min_arc_length);
    f.angle = angle_between(s.a, s.b);
    f.weight = smootherstep(f.angle, blend.lower, blend.upper);
    f.angle_active = f.weight.value > T(0);
    f.vector_active = f.weight.value < T(1);
    f.status = s.status;

    if (f.vector_active) {
        f.vector_form =
            detail::bending_small_angle_strain_from(small_angle_vector_derivatives(s.a, s.b, which), s, which);
        if (f.status == StrainStatus::ok) f.status = f.vector_form.status;
    } else {
        detail::set_zero(f.vector_form);
    }
    if (!f.angle_active) {
        detail::set_zero(f.angle_form);
        return f;
    }
    const AngleDerivatives<T> theta = angle_derivatives(s.a, s.b, which);
    f.angle_form = detail::bending_angle_strain_from(theta, s, which);
    if (f.status == StrainStatus::ok) f.status = f.angle_form.status;
    if (f.vector_active) {
        // Inside the band: θ's own gradient and Hessian in q (the Ω row of P is not needed).
        constexpr detail::DifferenceMap map = detail::bending_differences();
        Vec<T, 12> grad_theta = Vec<T, 12>::Zero();
        detail::add_difference_gradient<T>(theta.gradient, map, grad_theta);
        const T size = s.size;
        const Vec<T, 12> grad_size = f.angle_form.size_gradient;  // ∇Ω; HΩ = 0
        const T w = f.weight.value;
        const T w1 = f.weight.first;
        const T w2 = f.weight.second;
        // ∇(wΩ) = w'Ω∇θ + w∇Ω
        const Vec<T, 12> grad_weight_size = w1 * size * grad_theta;
        f.angle_form.size = w * size;
        f.angle_form.size_gradient = grad_weight_size + w * grad_size;
        // (1 − w)Ω = Ω − wΩ
        f.vector_form.size = size - w * size;
        f.vector_form.size_gradient = grad_size - f.angle_form.size_gradient;
        if (which == StrainDerivatives::hessians) {
            Mat<T, 12, 12> hess_theta = Mat<T, 12, 12>::Zero();
            detail::add_difference_hessian<T>(theta.hessian, map, hess_theta);
            // ∇²(wΩ) = w''Ω∇θ∇θᵀ + w'ΩHθ + w'(∇θ∇Ωᵀ + ∇Ω∇θᵀ)
            const Mat<T, 12, 12> mixed = grad_theta * grad_size.transpose();
            const Mat<T, 12, 12> hess_weight_size = w2 * size * (grad_theta * grad_theta.transpose()) +
                                                    w1 * size * hess_theta + w1 * (mixed + mixed.transpose());
            f.angle_form.size_hessian = hess_weight_size;
            f.vector_form.size_hessian = -hess_weight_size;
        }
    }
    return f;
}

/// Everything a solver needs from one bending element (shapes: 12 DoFs).
template <typename T>
struct BendingElementEval {
    T energy;                                              ///< V
    Vec<T, 12> elastic_force;                              ///< f_e = −∇V
    Mat<T, 12, 12> elastic_force_jacobian;                 ///< ∂f_e/∂q (optionally PSD-projected −∇²V)
    T dissipation_potential;                               ///< V_d
    Vec<T, 12> dissipative_force;                          ///< f_d = −∂V_d/∂v
    Mat<T, 12, 12> dissipative_force_jacobian_velocities;  ///< ∂f_d/∂v (exact)
    Mat<T, 12, 12> dissipative_force_jacobian_positions;   ///< symmetric ∂f_d/∂q (2018 Eq. 9/19, terms dropped)
    T angle;                                               ///< θ
    T blend_weight;                                        ///< w(θ)
    StrainStatus status;
};

namespace detail {

/// The evaluation with the forms' angle, weight and status and all sums zero.
template <typename T>
WEFT_HD inline BendingElementEval<T> empty_bending_eval(const BendingForms<T>& f)
{
    BendingElementEval<T> out;
    out.angle = f.angle;
    out.blend_weight = f.weight.value;
    out.status = f.status;
    out.energy = T(0);
    out.elastic_force.setZero();
    out.elastic_force_jacobian.setZero();
    out.dissipation_potential = T(0);
    out.dissipative_force.setZero();
    out.dissipative_force_jacobian_velocities.setZero();
    out.dissipative_force_jacobian_positions.setZero();
    return out;
}

/// One form's energy, forces and dissipation potential added to `out`: the
/// part of accumulate_bending_form that reads no Jacobian, in its order.
template <typename T, int M, class Elastic, class Dissipative>
WEFT_HD inline void accumulate_bending_forces(BendingElementEval<T>& out, const StrainEval<T, 12, M>& e,
                                              const Elastic& elastic, const Dissipative& dissipative)
{
    out.energy += elastic_energy(e, elastic);
    out.elastic_force += elastic_force(e, elastic);
    out.dissipation_potential += dissipation_potential(e, dissipative);
    out.dissipative_force += dissipative_force(e, dissipative);
}

/// Adds one form's energy, forces and Jacobians. gauss_newton: elastic
/// stiffness −Ω ∇ε (∂S/∂ε) ∇εᵀ and no ∂f_d/∂q (evaluate_bending_gauss_newton).
template <typename T, int M, class Elastic, class Dissipative>
WEFT_HD inline void accumulate_bending_form(BendingElementEval<T>& out, const StrainEval<T, 12, M>& e,
                                            const Elastic& elastic, const Dissipative& dissipative, StressClamp clamp,
                                            bool gauss_newton = false)
{
    accumulate_bending_forces(out, e, elastic, dissipative);
    out.dissipative_force_jacobian_velocities += dissipative_force_jacobian(e, dissipative, DiffWrt::velocities);
    if (gauss_newton) {
        out.elastic_force_jacobian -=
            e.size * sandwich<T, 12, M, 12>(e.gradient, elastic.stress_derivative(e.strain), e.gradient);
        return;
    }
    out.elastic_force_jacobian += elastic_force_jacobian(e, elastic, PsdProjection::off);
    // The stencil's three nodes of [x, s]: its strains are blind to translations of x and s.
    out.dissipative_force_jacobian_positions +=
        dissipative_force_jacobian<3>(e, dissipative, DiffWrt::positions, clamp);
}

}  // namespace detail

/// Energy, forces and Jacobians of the blended bending element.
/// @param[in] q  12 stacked DoFs [x_prev, s_prev, x₀, s₀, x_next, s_next]
/// @param[in] v  12 stacked generalized velocities
/// @param[in] densities  BendingDensities (e.g. quadratic_bending_densities)
/// @param[in] projection  PsdProjection::on projects −∂f_e/∂q of the whole
///            element (sum of both forms) onto the PSD cone
/// @param[in] clamp  stress clamp in the symmetric ∂f_d/∂q (2018 Sec. 3.4)
template <typename T, class Densities>
WEFT_HD inline BendingElementEval<T> evaluate_bending(const Vec<T, 12>& q, const Vec<T, 12>& v,
                                                      const Densities& densities,
                                                      PsdProjection projection = PsdProjection::off,
                                                      StressClamp clamp = StressClamp::on,
                                                      const BendingBlend<T>& blend = {})
{
    const BendingForms<T> f = bending_forms(q, v, blend);
    BendingElementEval<T> out = detail::empty_bending_eval(f);

    // V = Σ_i Ω_i Ψ_i (2018 Eq. 4, 6): every output is the sum over the active forms.
    if (f.vector_active) {
        detail::accumulate_bending_form(out, f.vector_form, densities.vector_elastic, densities.vector_dissipative,
                                        clamp);
    }
    if (f.angle_active) {
        detail::accumulate_bending_form(out, f.angle_form, densities.angle_elastic, densities.angle_dissipative, clamp);
    }
    // Project the element's stiffness once, not each form's: the sum is what the solver sees.
    if (projection != PsdProjection::off) {
        out.elastic_force_jacobian = -project_translation_invariant_to_psd<T, 3, 4>(
            Mat<T, 12, 12>(-out.elastic_force_jacobian), projection == PsdProjection::absolute);
    }
    return out;
}

namespace detail {

/// What an element evaluated without strain Hessians adds per form.
enum class LeanBending { gauss_newton, forces };

/// The blended element from forms without strain Hessians
/// (StrainDerivatives::gradients), each form added as `lean` says.
template <typename T, class Densities>
WEFT_HD inline BendingElementEval<T> evaluate_bending_lean(const Vec<T, 12>& q, const Vec<T, 12>& v,
                                                           const Densities& densities, const BendingBlend<T>& blend,
                                                           LeanBending lean)
{
    const BendingForms<T> f = bending_forms(q, v, blend, StrainDerivatives::gradients);
    BendingElementEval<T> out = empty_bending_eval(f);
    const auto add = [&](const auto& form, const auto& elastic, const auto& dissipative) {
        if (lean == LeanBending::forces) {
            accumulate_bending_forces(out, form, elastic, dissipative);
        } else {
            accumulate_bending_form(out, form, elastic, dissipative, StressClamp::off, true);
        }
    };
    if (f.vector_active) add(f.vector_form, densities.vector_elastic, densities.vector_dissipative);
    if (f.angle_active) add(f.angle_form, densities.angle_elastic, densities.angle_dissipative);
    return out;
}

}  // namespace detail

/// The same forces with Gauss–Newton Jacobians, for solvers that need a
/// PSD stiffness every step at low cost: −∂f_e/∂q ≈ Σ_i Ω_i ∇ε_i (∂S_e/∂ε) ∇ε_iᵀ
/// (PSD for a convex density, exact at the straight rest state where ε = 0
/// and Ψ_e = 0), and ∂f_d/∂q omitted (its clamped form, 2018 Sec. 3.4, needs a
/// 12×12 eigen-decomposition for the vector strain). Energy, forces and
/// ∂f_d/∂v are exactly those of evaluate_bending. No strain Hessian is read,
/// so none is computed (StrainDerivatives::gradients).
template <typename T, class Densities>
WEFT_HD inline BendingElementEval<T> evaluate_bending_gauss_newton(const Vec<T, 12>& q, const Vec<T, 12>& v,
                                                                   const Densities& densities,
                                                                   const BendingBlend<T>& blend = {})
{
    return detail::evaluate_bending_lean(q, v, densities, blend, detail::LeanBending::gauss_newton);
}

/// The energy, forces and dissipation potential of evaluate_bending, to the
/// bit, with every Jacobian left zero and no strain Hessian computed
/// (StrainDerivatives::gradients): for evaluations that read no Jacobian,
/// such as full Newton's line-search trials (NewtonInputs::forces_only).
template <typename T, class Densities>
WEFT_HD inline BendingElementEval<T> evaluate_bending_forces(const Vec<T, 12>& q, const Vec<T, 12>& v,
                                                             const Densities& densities,
                                                             const BendingBlend<T>& blend = {})
{
    return detail::evaluate_bending_lean(q, v, densities, blend, detail::LeanBending::forces);
}

/// The exact (non-symmetric) ∂f_d/∂q of the blended element, for tests and
/// non-symmetric solvers: the generic exact Jacobian per form; the ∇Ω_i term
/// of its weighted size carries the ∇w(θ) part of the blend.
template <typename T, class Densities>
WEFT_HD inline Mat<T, 12, 12> bending_dissipative_force_jacobian_exact(const Vec<T, 12>& q, const Vec<T, 12>& v,
                                                                       const Densities& densities,
                                                                       const BendingBlend<T>& blend = {})
{
    const BendingForms<T> f = bending_forms(q, v, blend);
    Mat<T, 12, 12> jac = Mat<T, 12, 12>::Zero();
    if (f.vector_active) jac += dissipative_force_jacobian_exact(f.vector_form, densities.vector_dissipative, v);
    if (f.angle_active) jac += dissipative_force_jacobian_exact(f.angle_form, densities.angle_dissipative, v);
    return jac;
}

}  // namespace weft
