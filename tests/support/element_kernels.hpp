#pragma once
// Reading an element kernel's local terms back from its node blocks: the
// backend kernels (element/triangle_elements.hpp) scatter
// A = M − h ∂f/∂v − h² ∂f/∂q and f; run at two step sizes, they give
// ∂f/∂q and ∂f/∂v separately, for finite-difference checks of what the
// backend assembles.
#include <weft/element/implicit_system.hpp>

#include <Eigen/Dense>

namespace weft_test {

struct KernelTerms {
    Eigen::VectorXd force;
    Eigen::MatrixXd df_dq;
    Eigen::MatrixXd df_dv;
    double elastic = 0;
    double dissipation = 0;
};

template <int K, int B>
Eigen::MatrixXd block_matrix(const weft::NodeBlocks<double, K, B>& blocks)
{
    Eigen::MatrixXd a(B * K, B * K);
    for (int i = 0; i < K; ++i)
        for (int j = 0; j < K; ++j) a.block<B, B>(B * i, B * j) = blocks.a[i][j];
    return a;
}

/// Runs `kernel(h, blocks, energies)` of an element without mass (K nodes of
/// B DoFs) at h = 1 and h = 2: A(h) = −h D − h² K gives
/// K = (2 A(1) − A(2))/2 and D = −A(1) − K.
template <int K, int B = 3, class Kernel>
KernelTerms kernel_terms(const Kernel& kernel)
{
    weft::NodeBlocks<double, K, B> one, two;
    weft::ElementEnergies<double> e1{}, e2{};
    one.set_zero();
    two.set_zero();
    kernel(1.0, one, e1);
    kernel(2.0, two, e2);
    KernelTerms t;
    const Eigen::MatrixXd a1 = block_matrix<K, B>(one), a2 = block_matrix<K, B>(two);
    t.df_dq = 0.5 * (2 * a1 - a2);
    t.df_dv = -a1 - t.df_dq;
    t.force.resize(B * K);
    for (int i = 0; i < K; ++i) t.force.segment<B>(B * i) = one.f[i];
    t.elastic = e1.elastic;
    t.dissipation = e1.dissipation;
    return t;
}

}  // namespace weft_test
