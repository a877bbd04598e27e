#pragma once
/// @file eigen_yarn_system.hpp
/// The simple path (DESIGN.md): the backward-Euler system of a yarn model
/// assembled into an Eigen::SparseMatrix on the host, for users who bring
/// their own solver. It calls the same element functions as the Thrust
/// backend, so it is also the oracle of the backend tests and the baseline of
/// the benchmarks.

#include <vector>

#include <Eigen/Sparse>

#include <weft/core/error.hpp>
#include <weft/element/yarn_elements.hpp>
#include <weft/model/yarn_model.hpp>

namespace weft {

template <typename T>
struct EigenYarnSystem {
    Eigen::SparseMatrix<T> a;               ///< A = M − h ∂f/∂v − h² ∂f/∂q, 5·#nodes square
    Eigen::Matrix<T, Eigen::Dynamic, 1> b;  ///< h (f + h ∂f/∂q v)
    Eigen::Matrix<T, Eigen::Dynamic, 1> f;  ///< f(q, v)
    Eigen::SparseMatrix<T> mass;            ///< consistent mass M
    ElementEnergies<T> energy{T(0), T(0), T(0), T(0)};
};

namespace detail {
template <typename T, int K>
void add_blocks(std::vector<Eigen::Triplet<T>>& triplets, Eigen::Matrix<T, Eigen::Dynamic, 1>& b,
                Eigen::Matrix<T, Eigen::Dynamic, 1>& f, const NodeBlocks<T, K, yarn_node_dofs>& blocks,
                const int (&nodes)[K])
{
    constexpr int B = yarn_node_dofs;
    for (int i = 0; i < K; ++i) {
        b.template segment<B>(B * nodes[i]) += blocks.b[i];
        f.template segment<B>(B * nodes[i]) += blocks.f[i];
        for (int j = 0; j < K; ++j)
            for (int r = 0; r < B; ++r)
                for (int c = 0; c < B; ++c)
                    if (blocks.a[i][j](r, c) != T(0))
                        triplets.emplace_back(B * nodes[i] + r, B * nodes[j] + c, blocks.a[i][j](r, c));
    }
}
template <typename T>
void add(ElementEnergies<T>& sum, const ElementEnergies<T>& e)
{
    sum.kinetic += e.kinetic;
    sum.elastic += e.elastic;
    sum.gravity += e.gravity;
    sum.dissipation += e.dissipation;
}
}  // namespace detail

/// The per-node Coulomb limits of `model` as the element functions take
/// them: nullptr when it has none (the material's μF_n).
/// @throws InvalidInput when friction_limit is neither empty nor #nodes long
template <typename T>
const T* friction_limits(const YarnModel<T>& model)
{
    if (model.friction_limit.empty()) return nullptr;
    if (model.friction_limit.size() != static_cast<std::size_t>(model.node_count()))
        throw InvalidInput(
            detail::describe("YarnModel friction_limit.size()", model.friction_limit.size(), "must be 0 or #nodes"));
    return model.friction_limit.data();
}

/// Assembles A, b and f for the state stored in `model` (q, v, anchors).
template <typename T>
EigenYarnSystem<T> assemble_yarn_system_eigen(const YarnModel<T>& model, const std::vector<Collider<T>>& colliders,
                                              const Vec3<T>& gravity, T h)
{
    constexpr int B = yarn_node_dofs;
    const int n = model.node_count();
    EigenYarnSystem<T> sys;
    sys.b = Eigen::Matrix<T, Eigen::Dynamic, 1>::Zero(B * n);
    sys.f = Eigen::Matrix<T, Eigen::Dynamic, 1>::Zero(B * n);
    std::vector<Eigen::Triplet<T>> triplets, mass_triplets;
    const T* q = model.q.data();
    const T* v = model.v.data();
    ElementEnergies<T> e{};
    // Parallel-yarn contact between consecutive crossings of one fabric: on
    // the segments where those pairs are the segments, else on its own pairs
    // (as the backend, yarn_stepper.hpp).
    const std::vector<YarnParallelPair> fabric = fabric_pairs(model);
    const bool segment_parallel =
        model.yarns.empty() || !(model.material.contact_stiffness > T(0)) || pairs_are_segments(fabric, model.segments);
    for (const YarnSegment& seg : model.segments) {
        NodeBlocks<T, 2, B> blocks;
        blocks.set_zero();
        const auto external = [&](int node) {
            return static_cast<std::size_t>(node) < model.external_contact.size() &&
                   model.external_contact[static_cast<std::size_t>(node)] != 0;
        };
        evaluate_yarn_segment<T>(q, v, seg, model.material, gravity, h, blocks, e, NewtonInputs<T>{},
                                 segment_parallel && !(external(seg.node0) || external(seg.node1)));
        detail::add(sys.energy, e);
        const int nodes[2] = {seg.node0, seg.node1};
        detail::add_blocks(triplets, sys.b, sys.f, blocks, nodes);
        // The mass alone, for kinetic energy and Newton residuals.
        const Vec<T, 8> ql = gather_xs<T, 2>(q, nodes, seg.coordinate);
        const Mat<T, 8, 8> m = segment_mass<T>(ql, model.material.linear_density);
        const XsLayout<2> layout(seg.coordinate);
        for (int i = 0; i < 8; ++i)
            for (int j = 0; j < 8; ++j)
                mass_triplets.emplace_back(B * nodes[layout.slot[i]] + layout.component[i],
                                           B * nodes[layout.slot[j]] + layout.component[j], m(i, j));
    }
    if (!segment_parallel)
        for (const YarnParallelPair& pair : fabric) {
            NodeBlocks<T, 2, B> blocks;
            blocks.set_zero();
            evaluate_parallel_pair<T>(q, v, pair, model.material, h, blocks, e);
            detail::add(sys.energy, e);
            const int nodes[2] = {pair.node0, pair.node1};
            detail::add_blocks(triplets, sys.b, sys.f, blocks, nodes);
        }
    for (const YarnBend& bend : model.bends) {
        NodeBlocks<T, 3, B> blocks;
        blocks.set_zero();
        evaluate_yarn_bend<T>(q, v, bend, model.material, h, blocks, e);
        detail::add(sys.energy, e);
        const int nodes[3] = {bend.prev, bend.node, bend.next};
        detail::add_blocks(triplets, sys.b, sys.f, blocks, nodes);
    }
    for (const YarnShear& shear : model.shears) {
        NodeBlocks<T, 3, B> blocks;
        blocks.set_zero();
        evaluate_yarn_shear<T>(q, v, shear, model.material, h, blocks, e);
        detail::add(sys.energy, e);
        const int nodes[3] = {shear.node, shear.along_u, shear.along_v};
        detail::add_blocks(triplets, sys.b, sys.f, blocks, nodes);
    }
    for (int node = 0; node < n; ++node) {
        NodeBlocks<T, 1, B> blocks;
        blocks.set_zero();
        evaluate_yarn_node<T>(q, v, model.free_dof.data(), model.anchors.data(), friction_limits(model), node,
                              model.material, colliders.data(), static_cast<int>(colliders.size()), model.radius, h,
                              blocks, e);
        detail::add(sys.energy, e);
        const int nodes[1] = {node};
        detail::add_blocks(triplets, sys.b, sys.f, blocks, nodes);
    }
    sys.a.resize(B * n, B * n);
    sys.a.setFromTriplets(triplets.begin(), triplets.end());
    sys.mass.resize(B * n, B * n);
    sys.mass.setFromTriplets(mass_triplets.begin(), mass_triplets.end());
    return sys;
}

}  // namespace weft

#include <Eigen/IterativeLinearSolvers>

namespace weft {

/// Outcome of one backward-Euler step.
struct StepReport {
    bool converged = true;
    int newton_iterations = 0;
    int linear_iterations = 0;   ///< summed over Newton iterations
    double linear_residual = 0;  ///< relative residual of the last linear solve
};

/// Drags every friction anchor to the Coulomb limit after a step (DESIGN.md).
template <typename T>
void update_friction_anchors(YarnModel<T>& model)
{
    const YarnMaterial<T>& m = model.material;
    const T* limits = friction_limits(model);
    for (int n = 0; n < model.node_count(); ++n) {
        T limit = T(0);
        const bool friction = node_friction<T>(m, limits, n, limit);
        for (int c = 0; c < 2; ++c) {
            const T s = model.q[yarn_node_dofs * n + 3 + c];
            T& a = model.anchors[2 * n + c];
            a = friction ? drag_anchor_to_limit<T>(s, a, m.anchor_stiffness, limit) : s;
        }
    }
}

/// One backward-Euler step with one Newton iteration (2017 Sec. 6), solved
/// with Eigen's ConjugateGradient and a diagonal preconditioner on the
/// filtered system S A S Δv = S b (fixed DoFs keep Δv = 0). This is the
/// reference path; the Thrust backend does the same with BSR and PCG.
template <typename T>
StepReport step_backward_euler_eigen(YarnModel<T>& model, const std::vector<Collider<T>>& colliders,
                                     const Vec3<T>& gravity, T h, T tolerance = T(1e-8), int max_iterations = 10000)
{
    using VectorX = Eigen::Matrix<T, Eigen::Dynamic, 1>;
    EigenYarnSystem<T> sys = assemble_yarn_system_eigen(model, colliders, gravity, h);
    const Eigen::Index n = sys.b.size();
    VectorX filter(n);
    for (Eigen::Index i = 0; i < n; ++i) filter(i) = model.free_dof[i] ? T(1) : T(0);
    // S A S + (I − S): fixed rows/columns become identity rows.
    Eigen::SparseMatrix<T> a = filter.asDiagonal() * sys.a * filter.asDiagonal();
    for (Eigen::Index i = 0; i < n; ++i)
        if (filter(i) == T(0)) a.coeffRef(i, i) = T(1);
    const VectorX b = filter.cwiseProduct(sys.b);
    Eigen::ConjugateGradient<Eigen::SparseMatrix<T>, Eigen::Lower | Eigen::Upper> cg;
    cg.setTolerance(tolerance);
    cg.setMaxIterations(max_iterations);
    cg.compute(a);
    const VectorX dv = filter.cwiseProduct(cg.solve(b));
    StepReport report;
    report.newton_iterations = 1;
    report.linear_iterations = static_cast<int>(cg.iterations());
    report.linear_residual = static_cast<double>(cg.error());
    report.converged = cg.info() == Eigen::Success && dv.allFinite();
    if (!report.converged) return report;
    for (Eigen::Index i = 0; i < n; ++i) {
        model.v[i] += dv(i);
        model.q[i] += h * model.v[i];
    }
    update_friction_anchors(model);
    return report;
}

}  // namespace weft
