#pragma once
/// @file elastic.hpp
/// The generic elastic layer: any strain metric × any elastic density.
/// V = Ω Ψ_e(ε) (2017 Eq. 2, 2018 Eq. 4) with the Eulerian term of a size
/// Ω(q) that depends on the arc-length coordinates (2017 Eq. 3, 2018 Eq. 18).

#include <weft/element/jacobian_options.hpp>
#include <weft/element/stress_hessian.hpp>
#include <weft/strain/strain_eval.hpp>

namespace weft {

/// V = Ω Ψ_e(ε)
template <typename T, int N, int M, class Density>
WEFT_HD inline T elastic_energy(const StrainEval<T, N, M>& e, const Density& density)
{
    return e.size * density.value(e.strain);
}

/// f_e = −∇V = −Ω ∇ε S_e − Ψ_e ∇Ω   (2017 Eq. 3, 2018 Eq. 18)
template <typename T, int N, int M, class Density>
WEFT_HD inline Vec<T, N> elastic_force(const StrainEval<T, N, M>& e, const Density& density)
{
    const Vec<T, M> stress = density.stress(e.strain);
    return -e.size * (e.gradient * stress) - density.value(e.strain) * e.size_gradient;
}

/// ∂f_e/∂q = −∇²V, exact and symmetric; optionally projected so that −∂f_e/∂q
/// is PSD. `clamp` (StressClamp::on) clamps the stress eigenvalues at zero in
/// the Σ S_k Hε_k term, the treatment 2018 Sec. 3.4 gives the dissipative
/// stress: exact in tension, it drops the destabilizing compression term, and
/// −∂f_e/∂q is PSD wherever the strain Hessians are (Green strain) and
/// ∂S/∂ε is (the triangle backend's membrane stiffness).
// ∇²V = Ω (∇ε ∂S/∂ε ∇εᵀ + Σ_k S_k Hε_k) + ∇ε S ∇Ωᵀ + ∇Ω Sᵀ∇εᵀ + Ψ HΩ
template <typename T, int N, int M, class Density>
WEFT_HD inline Mat<T, N, N> elastic_force_jacobian(const StrainEval<T, N, M>& e, const Density& density,
                                                   PsdProjection projection = PsdProjection::off,
                                                   StressClamp clamp = StressClamp::off)
{
    const Vec<T, M> stress = density.stress(e.strain);
    const Vec<T, N> grad_stress = e.gradient * stress;
    Mat<T, N, N> hessian = e.size * sandwich<T, N, M, N>(e.gradient, density.stress_derivative(e.strain), e.gradient);
    hessian += e.size * stress_weighted_hessian<Density::stress_kind>(stress, e.hessian, clamp);
    hessian += grad_stress * e.size_gradient.transpose() + e.size_gradient * grad_stress.transpose();
    hessian += density.value(e.strain) * e.size_hessian;
    if (projection != PsdProjection::off) return -project_to_psd<T, N>(hessian, projection == PsdProjection::absolute);
    return -hessian;
}

}  // namespace weft
