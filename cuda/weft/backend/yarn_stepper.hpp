#pragma once
/// @file yarn_stepper.hpp
/// Backward Euler for yarn-level cloth on the Thrust backend (one source for
/// CUDA and OpenMP threads): the yarn element kernels and friction anchors on
/// top of the shared Newton/PCG/halving driver of implicit_stepper.hpp.
///
/// Yarn specifics: one thread per segment, bend, shear and node; after each
/// accepted step the friction anchors are dragged to the Coulomb limit; the
/// yarn-line preconditioners get the model's warp and weft yarns.
///
/// Consistent EoL mass: M(q) enters A and the kinetic energy; ∂T/∂q and the
/// Ṁ q̇ terms of 2017 Eq. 1 are neglected (see yarn_terms.hpp).

#include <vector>

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <weft/backend/implicit_stepper.hpp>
#include <weft/backend/line_preconditioner.hpp>
#include <weft/core/error.hpp>
#include <weft/element/yarn_elements.hpp>
#include <weft/model/yarn_model.hpp>

namespace weft {

template <typename T>
using YarnStepperOptions = StepperOptions<T>;
using YarnStepReport = BackendStepReport;

namespace yarn_stepper_detail {

constexpr int B = yarn_node_dofs;

/// Pointers and constants shared by the element kernels.
template <typename T>
struct KernelInputs {
    const T* q;
    const T* v;
    const std::uint8_t* free_dof;
    const T* anchors;
    NewtonInputs<T> newton;
    YarnMaterial<T> material;
    Vec3<T> gravity;
    T radius;
    T h;
    const Collider<T>* colliders;
    int collider_count;
    ElementBuffers<T> out;
};

/// The element functions behind one kernel, by element type.
template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const YarnSegment& s, NodeBlocks<T, 2, B>& blocks,
                                     ElementEnergies<T>& e)
{
    evaluate_yarn_segment<T>(in.q, in.v, s, in.material, in.gravity, in.h, blocks, e, in.newton);
}
template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const YarnBend& b, NodeBlocks<T, 3, B>& blocks,
                                     ElementEnergies<T>& e)
{
    evaluate_yarn_bend<T>(in.q, in.v, b, in.material, in.h, blocks, e, in.newton);
}
template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const YarnShear& s, NodeBlocks<T, 3, B>& blocks,
                                     ElementEnergies<T>& e)
{
    evaluate_yarn_shear<T>(in.q, in.v, s, in.material, in.h, blocks, e, in.newton);
}

template <typename T, class Element, int K>
using ElementKernel = stepper_detail::ElementKernel<T, B, KernelInputs<T>, Element, K>;

template <typename T>
struct NodeKernel {
    KernelInputs<T> in;
    std::size_t matrix_base;
    std::size_t vector_base;
    std::size_t energy_base;
    WEFT_HD void operator()(Index node) const
    {
        NodeBlocks<T, 1, B> blocks;
        blocks.set_zero();
        ElementEnergies<T> e;
        evaluate_yarn_node<T>(in.q, in.v, in.free_dof, in.anchors, node, in.material, in.colliders,
                              in.collider_count, in.radius, in.h, blocks, e, in.newton);
        stepper_detail::write_blocks<T, 1, B>(blocks, in.out, matrix_base + static_cast<std::size_t>(node),
                              vector_base + static_cast<std::size_t>(node));
        in.out.energies[energy_base + static_cast<std::size_t>(node)] = e;
    }
};

/// Coulomb anchors after a step (DESIGN.md; same rule as the Eigen path).
template <typename T>
struct DragAnchors {
    const T* q;
    T* anchors;
    YarnMaterial<T> m;
    WEFT_HD void operator()(Index node) const
    {
        const bool friction = m.anchor_stiffness > T(0) && m.friction_coefficient > T(0);
        for (int c = 0; c < 2; ++c) {
            const T s = q[B * static_cast<std::size_t>(node) + 3 + c];
            T& a = anchors[2 * static_cast<std::size_t>(node) + c];
            a = friction ? drag_anchor<T>(s, a, m.anchor_stiffness, m.friction_coefficient, m.normal_force) : s;
        }
    }
};

}  // namespace yarn_stepper_detail

/// Device state and solver of one yarn model. Construct once; call step().
template <typename T>
class YarnStepper : public ImplicitStepper<T, yarn_node_dofs, YarnStepper<T>> {
    static constexpr int B = yarn_node_dofs;
    using Base = ImplicitStepper<T, yarn_node_dofs, YarnStepper<T>>;
    friend Base;

public:
    /// @param[in] model      topology, material and initial state (q, v, free_dof, anchors)
    /// @param[in] colliders  penalty colliders seen by every node
    /// @param[in] gravity    m/s²
    /// @param[in] options    Newton, halving and PCG settings
    /// @throws InvalidInput for inconsistent model arrays or options
    YarnStepper(const YarnModel<T>& model, const std::vector<Collider<T>>& colliders, const Vec3<T>& gravity,
                const YarnStepperOptions<T>& options = {})
        : Base(validated(model, options).q, model.v, model.free_dof, options),
          m_material(model.material),
          m_gravity(gravity),
          m_radius(model.radius)
    {
        const std::size_t nodes = static_cast<std::size_t>(model.node_count());
        m_anchors.assign(model.anchors.begin(), model.anchors.end());
        m_segments.assign(model.segments.begin(), model.segments.end());
        m_bends.assign(model.bends.begin(), model.bends.end());
        m_shears.assign(model.shears.begin(), model.shears.end());
        m_colliders.assign(colliders.begin(), colliders.end());
        m_segment_count = model.segments.size();
        m_bend_count = model.bends.size();
        m_shear_count = model.shears.size();

        // Contribution order: segments (2×2 blocks), bends (3×3), shears (3×3), nodes (1).
        std::vector<BlockCoordinate> blocks;
        std::vector<Index> vectors;
        const Index node_total = this->m_nodes;
        const auto add_element = [&](std::initializer_list<int> element_nodes) {
            for (int i : element_nodes) {
                if (i < 0 || i >= node_total)
                    throw InvalidInput(detail::describe("YarnModel element node", i, "out of range"));
                for (int j : element_nodes) blocks.push_back({i, j});
                vectors.push_back(i);
            }
        };
        for (const YarnSegment& s : model.segments) add_element({s.node0, s.node1});
        for (const YarnBend& b : model.bends) add_element({b.prev, b.node, b.next});
        for (const YarnShear& s : model.shears) add_element({s.node, s.along_u, s.along_v});
        for (Index n = 0; n < node_total; ++n) add_element({n});
        this->build_assembly(blocks, vectors, m_segment_count + m_bend_count + m_shear_count + nodes);
        m_lines = yarn_line_set(model);
    }

    const thrust::device_vector<T>& anchors() const { return m_anchors; }

    /// Copies q, v and anchors back into `model` (same topology).
    void download(YarnModel<T>& model) const
    {
        if (model.q.size() != this->m_q.size())
            throw InvalidInput(detail::describe("download model q.size()", model.q.size(), "must match the stepper"));
        thrust::copy(this->m_q.begin(), this->m_q.end(), model.q.begin());
        thrust::copy(this->m_v.begin(), this->m_v.end(), model.v.begin());
        model.anchors.resize(m_anchors.size());
        thrust::copy(m_anchors.begin(), m_anchors.end(), model.anchors.begin());
    }

private:
    static const YarnModel<T>& validated(const YarnModel<T>& model, const YarnStepperOptions<T>& options)
    {
        stepper_detail::validate_state<T>("YarnModel", model.q, model.v, model.free_dof, B, options);
        if (model.anchors.size() != 2 * static_cast<std::size_t>(model.node_count()))
            throw InvalidInput(detail::describe("YarnModel anchors.size()", model.anchors.size(), "must be 2 x #nodes"));
        return model;
    }

    void evaluate_elements(T h, const NewtonInputs<T>& newton, const ElementBuffers<T>& out)
    {
        using namespace yarn_stepper_detail;
        KernelInputs<T> in{this->raw(this->m_q),
                           this->raw(this->m_v),
                           this->raw(this->m_free),
                           this->raw(m_anchors),
                           newton,
                           m_material,
                           m_gravity,
                           m_radius,
                           h,
                           this->raw(m_colliders),
                           static_cast<int>(m_colliders.size()),
                           out};
        const auto first = thrust::counting_iterator<Index>(0);
        const std::size_t seg_m = 4 * m_segment_count;
        const std::size_t seg_v = 2 * m_segment_count;
        const std::size_t bend_m = seg_m + 9 * m_bend_count;
        const std::size_t bend_v = seg_v + 3 * m_bend_count;
        thrust::for_each(thrust::device, first, first + static_cast<Index>(m_segment_count),
                         ElementKernel<T, YarnSegment, 2>{in, this->raw(m_segments), 0, 0, 0});
        thrust::for_each(thrust::device, first, first + static_cast<Index>(m_bend_count),
                         ElementKernel<T, YarnBend, 3>{in, this->raw(m_bends), seg_m, seg_v, m_segment_count});
        thrust::for_each(thrust::device, first, first + static_cast<Index>(m_shear_count),
                         ElementKernel<T, YarnShear, 3>{in, this->raw(m_shears), bend_m, bend_v,
                                                        m_segment_count + m_bend_count});
        thrust::for_each(thrust::device, first, first + this->m_nodes,
                         NodeKernel<T>{in, bend_m + 9 * m_shear_count, bend_v + 3 * m_shear_count,
                                       m_segment_count + m_bend_count + m_shear_count});
    }

    void after_step()
    {
        thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                         thrust::counting_iterator<Index>(this->m_nodes),
                         yarn_stepper_detail::DragAnchors<T>{this->raw(this->m_q), this->raw(m_anchors), m_material});
    }
    void save_extra() { m_anchors_saved = m_anchors; }
    void restore_extra() { m_anchors = m_anchors_saved; }

    PcgOptions<T> pcg_options() const
    {
        PcgOptions<T> options = this->m_options.pcg;
        options.lines = &m_lines;
        return options;
    }

    YarnMaterial<T> m_material;
    Vec3<T> m_gravity;
    T m_radius;
    std::size_t m_segment_count = 0;
    std::size_t m_bend_count = 0;
    std::size_t m_shear_count = 0;

    thrust::device_vector<T> m_anchors, m_anchors_saved;
    thrust::device_vector<YarnSegment> m_segments;
    thrust::device_vector<YarnBend> m_bends;
    thrust::device_vector<YarnShear> m_shears;
    thrust::device_vector<Collider<T>> m_colliders;
    LineSet m_lines;  ///< warp and weft yarns, for the yarn-line preconditioners
};

}  // namespace weft
