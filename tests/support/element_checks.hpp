#pragma once
// One derivative check suite that every strain metric × density runs through
// (polyfem style): strain gradient/Hessian, strain rate against d/dt along a
// trajectory, element size derivatives, elastic force = −∇V, elastic
// Jacobian, dissipative force = −∂V_d/∂v, ∂f_d/∂v, the exact ∂f_d/∂q, and the
// symmetric ∂f_d/∂q against the derivative of −Ω ∇ε(q) S_d with S_d and Ω
// held (so exact − symmetric, the dropped terms, is checked too).

#include <weft/element/dissipation.hpp>
#include <weft/element/elastic.hpp>

#include "support/fd_check.hpp"

namespace weft_test {

/// Options of one suite run. `check_*` flags let a caller skip parts that do
/// not apply (e.g. Ω is constant for triangles); what ran is counted.
struct SuiteOptions {
    bool size_is_constant = false;  ///< Ω does not depend on q (Lagrangian)
    bool strain_gradient_may_vanish = false;
    bool strain_hessian_may_vanish = false;
    double hessian_step_scale = 1.0;  ///< multiplies the FD step for Hessians
};

/// Runs the derivative suite. `metric(q, v)` must return a StrainEval.
/// Returns the number of checks that ran (also accumulated in `checker`).
template <class Metric, class Elastic, class Dissipative, int N>
int check_metric_and_densities(FdChecker& checker, const Metric& metric, const Eigen::Matrix<double, N, 1>& q0,
                               const Eigen::Matrix<double, N, 1>& v0, const Elastic& elastic,
                               const Dissipative& dissipative, const SuiteOptions& options = {})
{
    using VecN = Eigen::Matrix<double, N, 1>;
    const int before = checker.checks;
    const auto e0 = metric(q0, v0);
    constexpr int M = decltype(e0)::strain_dim;
    REQUIRE(e0.status == weft::StrainStatus::ok);

    const VectorX q = q0;
    const VectorX v = v0;
    auto eval_at = [&](const VectorX& qq) { return metric(VecN(qq), v0); };
    const auto allow_grad = options.strain_gradient_may_vanish ? AllowZero::yes : AllowZero::no;
    const auto allow_hess = options.strain_hessian_may_vanish ? AllowZero::yes : AllowZero::no;

    // Strain gradient and Hessians, component by component.
    for (int k = 0; k < M; ++k) {
        checker.gradient([&](const VectorX& qq) { return double(eval_at(qq).strain(k)); }, q,
                         VectorX(e0.gradient.col(k)), "strain gradient, component " + std::to_string(k), allow_grad);
        const double saved = checker.step;
        checker.step *= options.hessian_step_scale;
        checker.jacobian([&](const VectorX& qq) { return VectorX(eval_at(qq).gradient.col(k)); }, q,
                         MatrixX(e0.hessian[k]), "strain Hessian, component " + std::to_string(k), allow_hess);
        checker.step = saved;
    }

    // Strain rate against d/dt ε(q + t v) at t = 0.
    {
        // Time step such that the displacement h·v is one FD step.
        const double h = checker.step / std::max(v0.cwiseAbs().maxCoeff(), 1e-300);
        const auto ep = metric(VecN(q0 + h * v0), v0);
        const auto em = metric(VecN(q0 - h * v0), v0);
        const VectorX fd_rate = (VectorX(ep.strain) - VectorX(em.strain)) / (2 * h);
        checker.compare(VectorX(e0.rate), fd_rate, "strain rate vs d/dt along trajectory", allow_grad);
        checker.compare(VectorX(e0.rate), VectorX(e0.gradient.transpose() * v0), "strain rate vs grad^T v", allow_grad);
    }

    // Element size.
    if (!options.size_is_constant) {
        checker.gradient([&](const VectorX& qq) { return double(eval_at(qq).size); }, q, VectorX(e0.size_gradient),
                         "size gradient");
        checker.jacobian([&](const VectorX& qq) { return VectorX(eval_at(qq).size_gradient); }, q,
                         MatrixX(e0.size_hessian), "size Hessian", AllowZero::yes);
    } else {
        checker.compare(VectorX(e0.size_gradient), VectorX::Zero(N), "constant size has zero gradient", AllowZero::yes);
    }

    // Elastic force = −∇V and its Jacobian.
    checker.gradient([&](const VectorX& qq) { return -double(weft::elastic_energy(eval_at(qq), elastic)); }, q,
                     VectorX(weft::elastic_force(e0, elastic)), "elastic force = -grad V", allow_grad);
    checker.jacobian([&](const VectorX& qq) { return VectorX(weft::elastic_force(eval_at(qq), elastic)); }, q,
                     MatrixX(weft::elastic_force_jacobian(e0, elastic)), "elastic force Jacobian", allow_grad);

    // Dissipative force = −∂V_d/∂v and ∂f_d/∂v.
    auto eval_v = [&](const VectorX& vv) { return metric(q0, VecN(vv)); };
    checker.gradient([&](const VectorX& vv) { return -double(weft::dissipation_potential(eval_v(vv), dissipative)); },
                     v, VectorX(weft::dissipative_force(e0, dissipative)), "dissipative force = -dV_d/dv", allow_grad);
    checker.jacobian([&](const VectorX& vv) { return VectorX(weft::dissipative_force(eval_v(vv), dissipative)); }, v,
                     MatrixX(weft::dissipative_force_jacobian(e0, dissipative, weft::DiffWrt::velocities)), "df_d/dv",
                     allow_grad);

    // Exact ∂f_d/∂q against FD.
    const MatrixX exact = weft::dissipative_force_jacobian_exact(e0, dissipative, v0);
    checker.jacobian([&](const VectorX& qq) { return VectorX(weft::dissipative_force(eval_at(qq), dissipative)); }, q,
                     exact, "exact df_d/dq", allow_grad);
    const MatrixX symmetric =
        weft::dissipative_force_jacobian(e0, dissipative, weft::DiffWrt::positions, weft::StressClamp::off);
    // The symmetric form on its own, independent of `exact` (which is defined
    // as symmetric + dropped): the q-derivative of −Ω ∇ε(q) S_d with the
    // stress S_d and the size Ω held at their values at q0.
    {
        const auto stress0 = dissipative.stress(e0.rate, e0.strain);
        const double saved = checker.step;
        checker.step *= options.hessian_step_scale;
        checker.jacobian([&](const VectorX& qq) { return VectorX(-e0.size * (eval_at(qq).gradient * stress0)); }, q,
                         symmetric, "symmetric df_d/dq = d/dq (-Omega grad eps(q) S_d), S_d and Omega held",
                         AllowZero::yes);
        checker.step = saved;
    }
    checker.compare(symmetric, symmetric.transpose(), "symmetric df_d/dq is symmetric", AllowZero::yes);
    return checker.checks - before;
}

/// A strain evaluation made with StrainDerivatives::gradients against the
/// same one with Hessians: every output but the Hessians has the same bits,
/// and the Hessians (each hessian[k] and size_hessian) are zero.
template <class Eval>
void check_same_without_hessians(const Eval& lean, const Eval& full)
{
    CHECK(lean.status == full.status);
    CHECK(lean.strain == full.strain);
    CHECK(lean.gradient == full.gradient);
    CHECK(lean.rate == full.rate);
    CHECK(lean.size == full.size);
    CHECK(lean.size_gradient == full.size_gradient);
    for (const auto& h : lean.hessian) CHECK(h.isZero(0));
    CHECK(lean.size_hessian.isZero(0));
}

}  // namespace weft_test
