#include "support/symmetric_eigen.hpp"

#include <Eigen/Eigenvalues>

namespace weft_test {

SymmetricEigen symmetric_eigen(const Eigen::MatrixXd& a)
{
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(a);
    SymmetricEigen out;
    out.ok = solver.info() == Eigen::Success;
    out.values = solver.eigenvalues();
    out.vectors = solver.eigenvectors();
    return out;
}

Eigen::VectorXd symmetric_eigenvalues(const Eigen::MatrixXd& a)
{
    return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(a, Eigen::EigenvaluesOnly).eigenvalues();
}

}  // namespace weft_test
