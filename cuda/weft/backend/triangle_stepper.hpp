#pragma once
/// @file triangle_stepper.hpp
/// Backward Euler for triangle-mesh cloth on the Thrust backend (block size
/// 3): membrane, bending (plate triangle or hinge) and node kernels
/// (element/triangle_elements.hpp) on top of the shared Newton/PCG/halving
/// driver of implicit_stepper.hpp. Contribution order: triangles (3×3 node
/// blocks), hinges (4×4), plate triangles (6×6, 8×8 and 12×12 by the
/// stencil slots they use), nodes (1), then the cloth's contact pairs
/// (4×4) when `TriangleModel::collision` is enabled; a model has hinges or
/// plate triangles, not both.
///
/// Collision (docs/collision.md): before every attempt at a (sub)step the
/// point–triangle and edge–edge pairs within reach of each other are found
/// at the attempt's start (`ClothContactFinder`): those closer than 1.5
/// thicknesses plus twice the distance their nodes move relative to each
/// other in the step at the start's velocities; they become the contact
/// elements of the step (the assembly map is rebuilt when the list
/// changes). A pair farther than the thickness contributes nothing, so
/// contacts that close within the step act. The safeguard: an attempt that ends with a triangle pair intersecting that
/// did not intersect at its start is rejected (`accept_step`), so the step
/// is halved, and reported as failed when no halving is left.

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform_reduce.h>

#include <weft/backend/cloth_collision.hpp>
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
    ClothCollision<T> collision;
    const Collider<T>* colliders;
    int collider_count;
    const T* friction_rate;  ///< collision: per node (contact_friction_rates), or null
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

template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const ClothContactElement<T>& pair,
                                     NodeBlocks<T, 4, B>& blocks, ElementEnergies<T>& e)
{
    evaluate_cloth_contact<T>(in.q, in.v, in.friction_rate, pair, in.collision, in.h, blocks, e, in.newton);
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

    /// Collision: the contact pairs of the last attempt (within reach at its start).
    int contact_pairs() const { return static_cast<int>(m_contacts.size()); }
    /// Collision: the smallest distance between the primitives of a contact
    /// pair at the current positions (+infinity without pairs).
    T min_contact_distance() const
    {
        if (m_contacts.empty()) return std::numeric_limits<T>::infinity();
        return thrust::transform_reduce(thrust::device, m_contacts.begin(), m_contacts.end(),
                                        cloth_collision_detail::ContactDistance<T>{this->raw(this->m_q), B},
                                        std::numeric_limits<T>::infinity(), stepper_detail::Minimum<T>{});
    }
    /// Collision: the triangle pairs (sharing no vertex) that intersect at
    /// the current positions, sorted (empty without collision).
    std::vector<CandidatePair> intersecting_triangles() const
    {
        if (!m_collision.enabled) return {};
        return to_host(m_finder.intersections(this->m_q));
    }
    const ClothCollision<T>& collision() const { return m_collision; }
    /// Collision: wall time spent finding contact pairs, rebuilding the
    /// assembly for them and checking intersections, summed since
    /// construction (s); the contacts' element kernels count as assembly.
    double collision_seconds() const { return m_collision_seconds; }

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
        validate_triangle_collision(model);
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
                                 m_collision,
                                 this->raw(m_colliders),
                                 static_cast<int>(m_colliders.size()),
                                 m_friction_rate.empty() ? nullptr : this->raw(m_friction_rate),
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
        blocks += this->m_nodes;
        vectors += this->m_nodes;
        elements += this->m_nodes;
        thrust::for_each(
            thrust::device, first, first + static_cast<Index>(m_contacts.size()),
            ElementKernel<T, ClothContactElement<T>, 4>{in, this->raw(m_contacts), blocks, vectors, elements});
    }

    /// Collision: the contact pairs of the attempt, and the intersections
    /// at its start for the safeguard.
    void begin_attempt(T h)
    {
        if (!m_collision.enabled) return;
        const auto start = std::chrono::steady_clock::now();
        refresh_contacts(T(2) * h, T(1.5) * m_collision.thickness);
        m_start_intersections = to_host(m_finder.intersections(this->m_q));
        m_collision_seconds += stepper_detail::seconds_since(start);
    }

    /// Collision's safeguard: no triangle pair may intersect at the end of
    /// an attempt that did not intersect at its start.
    bool accept_step(std::string& why)
    {
        if (!m_collision.enabled) return true;
        const auto start = std::chrono::steady_clock::now();
        const std::vector<CandidatePair> now = to_host(m_finder.intersections(this->m_q));
        m_collision_seconds += stepper_detail::seconds_since(start);
        std::size_t fresh = 0;
        const CandidatePair* first_fresh = nullptr;
        for (const CandidatePair& p : now) {
            const bool before = std::binary_search(
                m_start_intersections.begin(), m_start_intersections.end(), p,
                [](const CandidatePair& x, const CandidatePair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
            if (!before) {
                if (!first_fresh) first_fresh = &p;
                ++fresh;
            }
        }
        if (fresh == 0) return true;
        why = "collision: " + std::to_string(fresh) +
              " triangle pair(s) intersect at the end of the step (first: triangles " + std::to_string(first_fresh->a) +
              " and " + std::to_string(first_fresh->b) + "), which did not at its start";
        return false;
    }

    /// The contact elements that may come within `reach` in a time τ
    /// (ClothContactFinder::find); the assembly is rebuilt when they changed.
    /// The contact friction's load rates (its slip velocities,
    /// `contact_friction_rates`) are taken here, at the attempt's start.
    void refresh_contacts(T tau, T reach)
    {
        thrust::device_vector<ClothContactElement<T>> found = m_finder.find(this->m_q, this->m_v, tau, reach);
        const bool same = same_contacts(found, m_contacts);
        if (!same) m_contacts.swap(found);
        contact_friction_rates<T, B>(m_contacts, this->m_q, this->raw(m_mass), this->raw(this->m_free), m_collision,
                                     this->m_nodes, m_friction_rate, m_friction_scratch);
        if (same) return;
        std::vector<BlockCoordinate> blocks = m_base_blocks;
        std::vector<Index> vectors = m_base_vectors;
        append_contact_blocks(m_contacts, blocks, vectors);
        this->build_assembly(blocks, vectors, m_base_entries + m_contacts.size());
        this->invalidate_evaluation();
    }

    /// The kinds of element in contribution order (the constructor,
    /// refresh_contacts), for the per-term Jacobian check: "nodes" holds the
    /// inertia, gravity and colliders, "contacts" the collision's pairs.
    std::vector<ContributionTerm> contribution_terms() const
    {
        return contribution_terms_of({{"triangles", m_triangles.size(), 3},
                                      {"hinges", m_hinges.size(), 4},
                                      {"plates", m_plates6.size(), 6},  // the plates' three stencils: one term
                                      {"plates", m_plates8.size(), 8},
                                      {"plates", m_plates12.size(), curvature_stencil_nodes},
                                      {"nodes", static_cast<std::size_t>(this->m_nodes), 1},
                                      {"contacts", m_contacts.size(), 4}});
    }

    /// Full Newton: nodes resting on a collider keep their depth in the
    /// predictor (ImplicitStepper::collider_predictor).
    void adjust_predictor(T h) { this->collider_predictor(h, m_colliders, m_material.contact_offset); }
    void adjust_update(T h) { this->collider_onset_correction(h, m_colliders, m_material.contact_offset); }

    /// Full Newton: no node enters a collider deeper than half the contact
    /// offset in one update (ImplicitStepper::collider_step_bound). The
    /// yarns' bound on a contact pair's onset (ContactOnsetFraction) is not
    /// applied: on sheet_fold.json it took 3.83 → 4.04 Newton iterations per
    /// step, with 20 of 500 steps halved either way (docs/collision.md).
    T feasible_step_fraction(T h, const thrust::device_vector<T>& dv)
    {
        return this->collider_step_bound(h, dv, m_colliders, m_material.contact_offset);
    }

    TriangleMaterial<T> m_material;
    ClothCollision<T> m_collision;
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
    // Collision: the finder, the contact elements of the current attempt,
    // the contributions of every other element (the assembly's fixed part)
    // and the intersecting triangle pairs at the attempt's start.
    ClothContactFinder<T> m_finder;
    thrust::device_vector<ClothContactElement<T>> m_contacts;
    thrust::device_vector<T> m_friction_rate;   ///< contact_friction_rates, at the attempt's start; empty: none
    FrictionRateScratch<T> m_friction_scratch;  ///< contact_friction_rates' working storage
    std::vector<BlockCoordinate> m_base_blocks;
    std::vector<Index> m_base_vectors;
    std::size_t m_base_entries = 0;
    std::vector<CandidatePair> m_start_intersections;
    double m_collision_seconds = 0;
};

template <typename T>
TriangleStepper<T>::TriangleStepper(const TriangleModel<T>& model, const std::vector<Collider<T>>& colliders,
                                    const Vec3<T>& gravity, const StepperOptions<T>& options)
    : Base(validated(model, options).q, model.v, model.free_dof, options),
      m_material(model.material),
      m_collision(model.collision),
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
    m_base_entries = model.triangles.size() + model.hinges.size() + model.plates.size() + nodes.size();
    this->build_assembly(blocks, vectors, m_base_entries);
    if (m_collision.enabled) {
        std::vector<int> corners;
        corners.reserve(3 * model.triangles.size());
        for (const TriangleElement<T>& t : model.triangles) corners.insert(corners.end(), t.nodes, t.nodes + 3);
        m_finder = ClothContactFinder<T>(corners, model.q, cloth_collision_cell(model));
        m_base_blocks = std::move(blocks);
        m_base_vectors = std::move(vectors);
        refresh_contacts(T(0), m_collision.thickness);
    }
}

#if defined(WEFT_PRECOMPILED_STEPPERS) && THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
// Compiled once into weft::omp_steppers (see yarn_stepper.hpp).
extern template class ImplicitStepper<double, triangle_node_dofs, TriangleStepper<double>>;
extern template class TriangleStepper<double>;
#endif

}  // namespace weft
