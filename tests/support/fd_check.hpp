#pragma once
// Reusable finite-difference derivative checker (central differences, scaled
// tolerance). Every comparison is counted so tests can REQUIRE how many ran;
// an all-zero analytic derivative is rejected unless explicitly allowed, so a
// check can never pass vacuously.

#include <Eigen/Dense>
#include <catch2/catch.hpp>
#include <functional>
#include <string>

namespace weft_test {

using VectorX = Eigen::VectorXd;
using MatrixX = Eigen::MatrixXd;

enum class AllowZero { no, yes };

struct FdChecker {
    double step = 1e-6;       ///< absolute FD step
    double tolerance = 1e-6;  ///< on |a−b| / max(max|a|, max|b|, floor)
    double floor = 0.0;       ///< lower bound of the scale (0: purely relative)
    int checks = 0;           ///< comparisons that ran

    /// Gradient of a scalar function by central differences.
    VectorX fd_gradient(const std::function<double(const VectorX&)>& f, const VectorX& x) const
    {
        VectorX g(x.size());
        for (Eigen::Index i = 0; i < x.size(); ++i) {
            VectorX xp = x, xm = x;
            xp(i) += step;
            xm(i) -= step;
            g(i) = (f(xp) - f(xm)) / (2 * step);
        }
        return g;
    }

    /// Jacobian of a vector function by central differences (column i = ∂f/∂x_i).
    MatrixX fd_jacobian(const std::function<VectorX(const VectorX&)>& f, const VectorX& x) const
    {
        const VectorX f0 = f(x);
        MatrixX j(f0.size(), x.size());
        for (Eigen::Index i = 0; i < x.size(); ++i) {
            VectorX xp = x, xm = x;
            xp(i) += step;
            xm(i) -= step;
            j.col(i) = (f(xp) - f(xm)) / (2 * step);
        }
        return j;
    }

    /// Compare two arrays with the scaled tolerance; counts as one check.
    void compare(const MatrixX& analytic, const MatrixX& reference, const std::string& what,
                 AllowZero allow_zero = AllowZero::no)
    {
        INFO(what);
        REQUIRE(analytic.rows() == reference.rows());
        REQUIRE(analytic.cols() == reference.cols());
        REQUIRE(analytic.allFinite());
        REQUIRE(reference.allFinite());
        const double scale_a = analytic.size() ? analytic.cwiseAbs().maxCoeff() : 0.0;
        const double scale_r = reference.size() ? reference.cwiseAbs().maxCoeff() : 0.0;
        if (allow_zero == AllowZero::no) REQUIRE(scale_a > 0.0);
        const double scale = std::max({scale_a, scale_r, floor});
        const double error = (analytic - reference).cwiseAbs().maxCoeff();
        INFO("max |analytic - reference| = " << error << ", scale = " << scale);
        INFO("analytic:\n" << analytic << "\nreference:\n" << reference);
        CHECK(error <= tolerance * scale + (scale == 0.0 ? 1e-300 : 0.0));
        ++checks;
    }

    void gradient(const std::function<double(const VectorX&)>& f, const VectorX& x, const VectorX& analytic,
                  const std::string& what, AllowZero allow_zero = AllowZero::no)
    {
        compare(analytic, fd_gradient(f, x), what, allow_zero);
    }

    void jacobian(const std::function<VectorX(const VectorX&)>& f, const VectorX& x, const MatrixX& analytic,
                  const std::string& what, AllowZero allow_zero = AllowZero::no)
    {
        compare(analytic, fd_jacobian(f, x), what, allow_zero);
    }
};

}  // namespace weft_test
