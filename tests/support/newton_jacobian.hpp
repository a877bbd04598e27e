#pragma once
// Full Newton's matrix against central differences of its right-hand side,
// shared by the backend stepper tests (yarn model, contacts).
#include <catch2/catch.hpp>

#include <weft/backend/bsr_matrix.hpp>
#include <weft/backend/vector_ops.hpp>

#include <Eigen/Core>
#include <algorithm>
#include <vector>

#include "support/random.hpp"

namespace weft_test {

/// The worst relative mismatch ‖A d + (b(v + εd) − b(v − εd)) / 2ε‖ / ‖A d‖
/// over `directions` random directions d (free DoFs, ±0.01) at the iterate
/// v, with A and b of `assemble_newton(h, ·)` (ε = 1e-4, constrained DoFs
/// left out): 0 when A is the derivative of −b.
template <class Stepper, class Model>
double newton_jacobian_mismatch(Stepper& stepper, const Model& model, const std::vector<double>& v, double h,
                                Random& rng, int directions)
{
    using VectorX = Eigen::VectorXd;
    const auto host = [](const auto& x) {
        const std::vector<double> values = weft::to_host(x);
        return VectorX(Eigen::Map<const VectorX>(values.data(), static_cast<Eigen::Index>(values.size())));
    };
    const double eps = 1e-4;
    double worst = 0;
    for (int k = 0; k < directions; ++k) {
        std::vector<double> d(v.size(), 0.0);
        for (std::size_t i = 0; i < d.size(); ++i)
            if (model.free_dof[i]) d[i] = rng.uniform(-0.01, 0.01);
        stepper.assemble_newton(h, v);
        const VectorX ad = weft::to_eigen(stepper.matrix()) * Eigen::Map<const VectorX>(d.data(), d.size());
        std::vector<double> plus = v, minus = v;
        for (std::size_t i = 0; i < d.size(); ++i) {
            plus[i] += eps * d[i];
            minus[i] -= eps * d[i];
        }
        stepper.assemble_newton(h, plus);
        const VectorX b_plus = host(stepper.rhs());
        stepper.assemble_newton(h, minus);
        const VectorX b_minus = host(stepper.rhs());
        VectorX mismatch = ad + (b_plus - b_minus) / (2 * eps);
        VectorX scale = ad;
        for (std::size_t i = 0; i < d.size(); ++i)
            if (!model.free_dof[i]) mismatch(static_cast<Eigen::Index>(i)) = scale(static_cast<Eigen::Index>(i)) = 0;
        REQUIRE(scale.norm() > 0);
        worst = std::max(worst, mismatch.norm() / scale.norm());
    }
    return worst;
}

}  // namespace weft_test
