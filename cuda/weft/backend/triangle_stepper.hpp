#pragma once
/// @file triangle_stepper.hpp
/// Backward Euler for triangle-mesh cloth on the Thrust backend (block size
/// 3): membrane, bending (plate triangle or hinge) and node kernels
/// (element/triangle_elements.hpp) on top of the shared Newton/PCG/halving
/// driver of implicit_stepper.hpp. Contribution order: triangles (3×3 node
/// blocks), hinges (4×4), plate triangles (6×6, 8×8 and 12×12 by the
/// stencil slots they use), nodes (1); a model has hinges or plate
/// triangles, not both.

#include <type_traits>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <weft/backend/implicit_stepper.hpp>
#include <weft/core/error.hpp>
#include <weft/element/triangle_elements.hpp>
#include <weft/model/triangle_model.hpp>

namespace weft {

namespace triangle_stepper_detail {

constexpr int B = triangle_node_dofs;

/// Pointers and constants shared by the triangle kernels.
template <typename T>
struct KernelInputs {
    const T* q;
    const T* v;
    const T* mass;
    NewtonInputs<T> newton;
    TriangleMaterial<T> material;
    const TabulatedMembraneDensity<T>* tabulated;  ///< one density in device memory, or null
    Vec3<T> gravity;
    T h;
    const Collider<T>* colliders;
    int collider_count;
    ElementBuffers<T> out;
};

/// A node as an element of the node kernel.
struct TriangleNode {
    int node;
};

template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const TriangleElement<T>& tri,
                                     NodeBlocks<T, 3, B>& blocks, ElementEnergies<T>& e)
{
    if (in.material.membrane == MembraneModel::tabulated)
        evaluate_triangle_membrane<T>(in.q, in.v, tri, in.material, *in.tabulated, in.h, blocks, e, in.newton);
    else
        evaluate_triangle_membrane<T>(in.q, in.v, tri, in.material, in.material.stvk, in.h, blocks, e, in.newton);
}
template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const HingeElement<T>& hinge,
                                     NodeBlocks<T, 4, B>& blocks, ElementEnergies<T>& e)
{
    evaluate_triangle_hinge<T>(in.q, in.v, hinge, in.material, in.h, blocks, e, in.newton);
}
template <typename T, int K>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const PlateElement<T, K>& plate,
                                     NodeBlocks<T, K, B>& blocks, ElementEnergies<T>& e)
{
    evaluate_triangle_plate<T>(in.q, in.v, plate, in.material, in.h, blocks, e, in.newton);
}
template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const TriangleNode& n, NodeBlocks<T, 1, B>& blocks,
                                     ElementEnergies<T>& e)
{
    evaluate_triangle_node<T>(in.q, in.v, in.mass[n.node], n.node, in.gravity, in.colliders, in.collider_count,
                              in.material.contact_offset, in.h, blocks, e, in.newton);
}

template <typename T, class Element, int K>
using ElementKernel = stepper_detail::ElementKernel<T, B, KernelInputs<T>, Element, K>;

}  // namespace triangle_stepper_detail

/// Device state and solver of one triangle model. Construct once; call step().
template <typename T>
class TriangleStepper : public ImplicitStepper<T, triangle_node_dofs, TriangleStepper<T>> {
    static constexpr int B = triangle_node_dofs;
    using Base = ImplicitStepper<T, triangle_node_dofs, TriangleStepper<T>>;
    friend Base;

public:
    /// @param[in] model      topology, material and initial state (q, v, free_dof, mass)
    /// @param[in] colliders  penalty colliders seen by every node
    /// @param[in] gravity    m/s²
    /// @param[in] options    Newton, halving and PCG settings
    /// @throws InvalidInput for inconsistent model arrays or options
    TriangleStepper(const TriangleModel<T>& model, const std::vector<Collider<T>>& colliders, const Vec3<T>& gravity,
                    const StepperOptions<T>& options = {});

    /// Copies q and v back into `model` (same topology).
    void download(TriangleModel<T>& model) const
    {
        if (model.q.size() != this->m_q.size())
            throw InvalidInput(detail::describe("download model q.size()", model.q.size(), "must match the stepper"));
        thrust::copy(this->m_q.begin(), this->m_q.end(), model.q.begin());
        thrust::copy(this->m_v.begin(), this->m_v.end(), model.v.begin());
    }

private:
    static const TriangleModel<T>& validated(const TriangleModel<T>& model, const StepperOptions<T>& options)
    {
        stepper_detail::validate_state<T>("TriangleModel", model.q, model.v, model.free_dof, B, options);
        if (model.mass.size() != static_cast<std::size_t>(model.node_count()))
            throw InvalidInput(detail::describe("TriangleModel mass.size()", model.mass.size(), "must be #nodes"));
        validate_triangle_material(model.material, model.tabulated.has_value());
        return model;
    }

    void evaluate_elements(T h, const NewtonInputs<T>& newton, const ElementBuffers<T>& out)
    {
        using namespace triangle_stepper_detail;
        const KernelInputs<T> in{this->raw(this->m_q),
                                 this->raw(this->m_v),
                                 this->raw(m_mass),
                                 newton,
                                 m_material,
                                 m_tabulated.empty() ? nullptr : this->raw(m_tabulated),
                                 m_gravity,
                                 h,
                                 this->raw(m_colliders),
                                 static_cast<int>(m_colliders.size()),
                                 out};
        const auto first = thrust::counting_iterator<Index>(0);
        const std::size_t triangles = m_triangles.size();
        const std::size_t hinges = m_hinges.size();
        thrust::for_each(thrust::device, first, first + static_cast<Index>(triangles),
                         ElementKernel<T, TriangleElement<T>, 3>{in, this->raw(m_triangles), 0, 0, 0});
        thrust::for_each(
            thrust::device, first, first + static_cast<Index>(hinges),
            ElementKernel<T, HingeElement<T>, 4>{in, this->raw(m_hinges), 9 * triangles, 3 * triangles, triangles});
        std::size_t blocks = 9 * triangles + 16 * hinges, vectors = 3 * triangles + 4 * hinges,
                    elements = triangles + hinges;
        const auto plates = [&](const auto& group) {
            using Element = typename std::decay_t<decltype(group)>::value_type;
            constexpr int K = std::extent<decltype(Element::nodes)>::value;
            if (group.empty()) return;
            thrust::for_each(thrust::device, first, first + static_cast<Index>(group.size()),
                             ElementKernel<T, Element, K>{in, this->raw(group), blocks, vectors, elements});
            blocks += K * K * group.size();
            vectors += K * group.size();
            elements += group.size();
        };
        plates(m_plates6);
        plates(m_plates8);
        plates(m_plates12);
        thrust::for_each(thrust::device, first, first + this->m_nodes,
                         ElementKernel<T, TriangleNode, 1>{in, this->raw(m_node_list), blocks, vectors, elements});
    }

    /// Full Newton: nodes resting on a collider keep their depth in the
    /// predictor (ImplicitStepper::collider_predictor).
    void adjust_predictor(T h) { this->collider_predictor(h, m_colliders, m_material.contact_offset); }
    void adjust_update(T h) { this->collider_onset_correction(h, m_colliders, m_material.contact_offset); }

    /// Full Newton: no node enters a collider deeper than half the contact
    /// offset in one update (ImplicitStepper::collider_step_bound).
    T feasible_step_fraction(T h, const thrust::device_vector<T>& dv)
    {
        return this->collider_step_bound(h, dv, m_colliders, m_material.contact_offset);
    }

    TriangleMaterial<T> m_material;
    Vec3<T> m_gravity;
    thrust::device_vector<T> m_mass;
    thrust::device_vector<TriangleElement<T>> m_triangles;
    thrust::device_vector<HingeElement<T>> m_hinges;
    // Plate triangles by the stencil slots they use (6: regular grids, 8:
    // alternating ones, 12: the rest), so that the assembly writes K² blocks
    // per triangle, not 144.
    thrust::device_vector<PlateElement<T, 6>> m_plates6;
    thrust::device_vector<PlateElement<T, 8>> m_plates8;
    thrust::device_vector<PlateElement<T, curvature_stencil_nodes>> m_plates12;
    thrust::device_vector<triangle_stepper_detail::TriangleNode> m_node_list;
    thrust::device_vector<TabulatedMembraneDensity<T>> m_tabulated;
    thrust::device_vector<Collider<T>> m_colliders;
};

template <typename T>
TriangleStepper<T>::TriangleStepper(const TriangleModel<T>& model, const std::vector<Collider<T>>& colliders,
                                    const Vec3<T>& gravity, const StepperOptions<T>& options)
    : Base(validated(model, options).q, model.v, model.free_dof, options),
      m_material(model.material),
      m_gravity(gravity)
{
    m_mass.assign(model.mass.begin(), model.mass.end());
    m_triangles.assign(model.triangles.begin(), model.triangles.end());
    m_hinges.assign(model.hinges.begin(), model.hinges.end());
    std::vector<PlateElement<T, 6>> plates6;
    std::vector<PlateElement<T, 8>> plates8;
    std::vector<PlateElement<T, curvature_stencil_nodes>> plates12;
    for (const PlateElement<T>& p : model.plates) {
        const int used = used_slots(p.rest);
        if (used <= 6)
            plates6.push_back(narrow_plate_element<6>(p));
        else if (used <= 8)
            plates8.push_back(narrow_plate_element<8>(p));
        else
            plates12.push_back(p);
    }
    m_plates6.assign(plates6.begin(), plates6.end());
    m_plates8.assign(plates8.begin(), plates8.end());
    m_plates12.assign(plates12.begin(), plates12.end());
    for (const Collider<T>& c : colliders)
        require_valid_collider(c);  // the factories' checks, for colliders built by hand
    m_colliders.assign(colliders.begin(), colliders.end());
    if (model.tabulated) {
        const std::vector<TabulatedMembraneDensity<T>> one(1, *model.tabulated);
        m_tabulated.assign(one.begin(), one.end());
    }
    std::vector<triangle_stepper_detail::TriangleNode> nodes(static_cast<std::size_t>(this->m_nodes));
    for (Index n = 0; n < this->m_nodes; ++n) nodes[static_cast<std::size_t>(n)].node = n;
    m_node_list.assign(nodes.begin(), nodes.end());

    std::vector<BlockCoordinate> blocks;
    std::vector<Index> vectors;
    const Index node_total = this->m_nodes;
    const auto add_element = [&](const int* element_nodes, int count) {
        for (int a = 0; a < count; ++a) {
            const int i = element_nodes[a];
            if (i < 0 || i >= node_total)
                throw InvalidInput(detail::describe("TriangleModel element node", i, "out of range"));
            for (int b = 0; b < count; ++b) blocks.push_back({i, element_nodes[b]});
            vectors.push_back(i);
        }
    };
    for (const TriangleElement<T>& t : model.triangles) add_element(t.nodes, 3);
    for (const HingeElement<T>& h : model.hinges) add_element(h.nodes, 4);
    for (const auto& p : plates6) add_element(p.nodes, 6);
    for (const auto& p : plates8) add_element(p.nodes, 8);
    for (const auto& p : plates12) add_element(p.nodes, curvature_stencil_nodes);
    for (Index n = 0; n < node_total; ++n) add_element(&n, 1);
    this->build_assembly(blocks, vectors,
                         model.triangles.size() + model.hinges.size() + model.plates.size() + nodes.size());
}

#if defined(WEFT_PRECOMPILED_STEPPERS) && THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
// Compiled once into weft::omp_steppers (see yarn_stepper.hpp).
extern template class ImplicitStepper<double, triangle_node_dofs, TriangleStepper<double>>;
extern template class TriangleStepper<double>;
#endif

}  // namespace weft
