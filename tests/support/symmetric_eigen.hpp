#pragma once
/// @file symmetric_eigen.hpp
/// Eigen-decomposition of a symmetric matrix for the tests' checks
/// (definiteness of Hessians and system matrices, reference projections).
/// Compiled once (support/symmetric_eigen.cpp, linked into every test):
/// each size of Eigen::SelfAdjointEigenSolver a translation unit
/// instantiates costs it about 6 s of the compiler, 2 x 2 included
/// (measured with g++ 12 -O2 on the 2-core machine), and the tests used 22.

#include <Eigen/Core>

namespace weft_test {

/// A = V diag(values) Vᵀ: eigenvalues ascending, eigenvectors in V's columns.
struct SymmetricEigen {
    Eigen::VectorXd values;
    Eigen::MatrixXd vectors;
    bool ok = false;  ///< Eigen's solver reported success
};

/// The decomposition of the symmetric matrix `a` (its lower triangle is read).
SymmetricEigen symmetric_eigen(const Eigen::MatrixXd& a);

/// The eigenvalues of the symmetric matrix `a`, ascending.
Eigen::VectorXd symmetric_eigenvalues(const Eigen::MatrixXd& a);

}  // namespace weft_test
