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
///
/// EIL nodes (thesis Sec. 4.2–4.3), opt-in through `EilOptions`: at the start
/// of every step() call, before the first Newton iteration, each yarn's nodes
/// are sorted by arc length and tagged EoL or EIL (thesis Sec. 4.3.1,
/// model/eil_assignment.hpp). Stretch, bending and segment mass are then
/// built over consecutive EoL nodes only, so an EIL node carries no mass on
/// that yarn and its arc length is governed by statics (thesis Eq. 4.10);
/// one stiff contact spring per EIL node ties its interpolated position
/// (thesis Eq. 4.3) to its own x, which stays attached to its other yarn
/// through that yarn's elements (thesis Sec. 4.3.2). A node EIL on both of
/// its yarns gets the EIL–EIL spring instead, and its x DoFs are filtered out
/// (per-DoF filter, no resizing: thesis Sec. 4.3.3), with x and ẋ set to
/// the interpolation on its u-yarn so that it re-enters at the contact point.
/// The assembly map is rebuilt only when the element lists change. With EIL
/// off (the default) nothing of this runs and the stepper is unchanged.
///
/// Choices of ours, beyond the thesis: a node that lies on one yarn only has
/// no contact partner and never becomes EIL (it is treated like a fixed node
/// by the assignment); arc lengths are not reset on switching (thesis
/// Sec. 4.3.1 opts for the same in practice; eil_assignment.hpp has the
/// closed-form resets of Eq. 4.4–4.7); the assignment runs on the host, see
/// `YarnStepper::update_eil`.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <weft/backend/implicit_stepper.hpp>
#include <weft/backend/line_preconditioner.hpp>
#include <weft/core/error.hpp>
#include <weft/element/eil_elements.hpp>
#include <weft/element/eil_terms.hpp>
#include <weft/element/yarn_elements.hpp>
#include <weft/model/eil_assignment.hpp>
#include <weft/model/yarn_model.hpp>

namespace weft {

template <typename T>
using YarnStepperOptions = StepperOptions<T>;

/// What one call of YarnStepper::step() did: the shared report plus the EIL
/// assignment it ran with.
struct YarnStepReport : BackendStepReport {
    int eil_nodes = 0;  ///< EIL (yarn, node) pairs of this step's assignment; 0 with EIL off
};

/// EIL nodes in the yarn stepper (thesis Sec. 4.2–4.3); off by default.
template <typename T>
struct EilOptions {
    bool enabled = false;
    T safety_factor = T(0.1);      ///< safety distance = factor × rest segment length (thesis Sec. 4.3.1)
    T contact_factor = T(1000);    ///< spring k = factor × k_s / rest segment length (thesis Sec. 4.3.2)
    T rest_segment_length = T(0);  ///< Δu of rest-shape segments (m); 0: the mean |Δs| of the model's segments
};

namespace yarn_stepper_detail {

constexpr int B = yarn_node_dofs;

/// Pointers and constants shared by the element kernels.
template <typename T>
struct KernelInputs {
    const T* q;
    const T* v;
    const std::uint8_t* free_dof;
    const T* anchors;
    const T* friction_limit;  ///< nullptr: the material's μF_n
    NewtonInputs<T> newton;
    YarnMaterial<T> material;
    Vec3<T> gravity;
    T radius;
    T h;
    const Collider<T>* colliders;
    int collider_count;
    T eil_stiffness;
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

template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const EilSpring& s, NodeBlocks<T, 3, B>& blocks,
                                     ElementEnergies<T>& e)
{
    evaluate_eil_spring<T>(in.q, in.v, s, in.eil_stiffness, in.h, blocks, e, in.newton);
}
template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const EilPairSpring& s, NodeBlocks<T, 5, B>& blocks,
                                     ElementEnergies<T>& e)
{
    evaluate_eil_pair_spring<T>(in.q, in.v, s, in.eil_stiffness, in.h, blocks, e, in.newton);
}

/// The elements of plain-int structs compare equal member for member.
template <class Element>
bool same_elements(const std::vector<Element>& a, const std::vector<Element>& b)
{
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(Element)) == 0);
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
        evaluate_yarn_node<T>(in.q, in.v, in.free_dof, in.anchors, in.friction_limit, node, in.material,
                              in.colliders, in.collider_count, in.radius, in.h, blocks, e, in.newton);
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
    const T* friction_limit;  ///< nullptr: the material's μF_n
    YarnMaterial<T> m;
    WEFT_HD void operator()(Index node) const
    {
        T limit = T(0);
        const bool friction = node_friction<T>(m, friction_limit, static_cast<int>(node), limit);
        for (int c = 0; c < 2; ++c) {
            const T s = q[B * static_cast<std::size_t>(node) + 3 + c];
            T& a = anchors[2 * static_cast<std::size_t>(node) + c];
            a = friction ? drag_anchor_to_limit<T>(s, a, m.anchor_stiffness, limit) : s;
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
    /// @param[in] eil        EIL nodes (thesis Sec. 4.2–4.3); off by default
    /// @throws InvalidInput for inconsistent model arrays or options
    YarnStepper(const YarnModel<T>& model, const std::vector<Collider<T>>& colliders, const Vec3<T>& gravity,
                const YarnStepperOptions<T>& options = {}, const EilOptions<T>& eil = {})
        : Base(validated(model, options).q, model.v, model.free_dof, options),
          m_material(model.material),
          m_gravity(gravity),
          m_radius(model.radius),
          m_eil(eil)
    {
        m_anchors.assign(model.anchors.begin(), model.anchors.end());
        m_friction_limit.assign(model.friction_limit.begin(), model.friction_limit.end());
        m_host_shears = model.shears;
        m_colliders.assign(colliders.begin(), colliders.end());
        rebuild_elements(model.segments, model.bends, {}, {});
        m_lines = yarn_line_set(model);
        if (m_eil.enabled) setup_eil(model);
    }

    /// Advance by h (in 2^k substeps when a step had to be halved). With EIL
    /// on, the EoL/EIL assignment is revised first (thesis Sec. 4.3.1: before
    /// the first Newton step of the step); halved substeps keep it.
    YarnStepReport step(T h)
    {
        const auto start = std::chrono::steady_clock::now();
        if (m_eil.enabled) {
            require_positive("time_step", h);
            update_eil();
        }
        const double assignment_seconds = stepper_detail::seconds_since(start);
        YarnStepReport report;
        static_cast<BackendStepReport&>(report) = Base::step(h);
        report.eil_nodes = m_eil_count;
        report.assembly_seconds += assignment_seconds;
        report.total_seconds += assignment_seconds;
        return report;
    }

    const thrust::device_vector<T>& anchors() const { return m_anchors; }

    /// EIL (yarn, node) pairs of the last assignment (0 with EIL off or before the first step).
    int eil_nodes() const { return m_eil_count; }
    /// The last EoL/EIL assignment (host; empty with EIL off).
    const EilAssignment<T>& eil_assignment() const { return m_assignment; }
    /// The EIL contact springs of the last assignment (host).
    const std::vector<EilSpring>& eil_springs() const { return m_host_springs; }
    const std::vector<EilPairSpring>& eil_pair_springs() const { return m_host_pairs; }
    /// Stretch segments of the last assignment (host; the model's list with EIL off).
    const std::vector<YarnSegment>& segments() const { return m_host_segments; }
    /// The safety distance and contact-spring stiffness in use (0 with EIL off).
    T eil_safety_distance() const { return m_eil_safety; }
    T eil_contact_stiffness() const { return m_eil_stiffness; }
    /// How often the assembly map was built (1 at construction, +1 per change of the
    /// EIL element lists).
    int assembly_builds() const { return m_assembly_builds; }

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
        if (!model.friction_limit.empty()) {
            if (model.friction_limit.size() != static_cast<std::size_t>(model.node_count()))
                throw InvalidInput(detail::describe("YarnModel friction_limit.size()", model.friction_limit.size(),
                                                    "must be 0 or #nodes"));
            for (std::size_t n = 0; n < model.friction_limit.size(); ++n) {
                const T limit = model.friction_limit[n];
                if (!(std::isfinite(static_cast<double>(limit)) && limit >= T(0))) {
                    const std::string field = "YarnModel friction_limit[" + std::to_string(n) + "]";
                    throw InvalidInput(detail::describe(field.c_str(), limit, "must be a finite number >= 0"));
                }
            }
        }
        return model;
    }

    /// Uploads the element lists and builds the assembly map. Contribution
    /// order: segments (2×2 blocks), bends (3×3), shears (3×3), EIL springs
    /// (3×3), EIL pair springs (5×5), nodes (1); with no EIL spring this is
    /// the order of the stepper without EIL.
    void rebuild_elements(const std::vector<YarnSegment>& segments, const std::vector<YarnBend>& bends,
                          const std::vector<EilSpring>& springs, const std::vector<EilPairSpring>& pairs)
    {
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
        for (const YarnSegment& s : segments) add_element({s.node0, s.node1});
        for (const YarnBend& b : bends) add_element({b.prev, b.node, b.next});
        for (const YarnShear& s : m_host_shears) add_element({s.node, s.along_u, s.along_v});
        for (const EilSpring& s : springs) add_element({s.before, s.after, s.node});
        for (const EilPairSpring& p : pairs) add_element({p.before[0], p.after[0], p.node, p.before[1], p.after[1]});
        for (Index n = 0; n < node_total; ++n) add_element({n});
        const std::size_t entries = segments.size() + bends.size() + m_host_shears.size() + springs.size() +
                                    pairs.size() + static_cast<std::size_t>(node_total);
        this->build_assembly(blocks, vectors, entries);
        ++m_assembly_builds;

        m_host_segments = segments;
        m_host_bends = bends;
        m_host_springs = springs;
        m_host_pairs = pairs;
        m_segments.assign(segments.begin(), segments.end());
        m_bends.assign(bends.begin(), bends.end());
        m_shears.assign(m_host_shears.begin(), m_host_shears.end());
        m_springs.assign(springs.begin(), springs.end());
        m_pairs.assign(pairs.begin(), pairs.end());
        m_segment_count = segments.size();
        m_bend_count = bends.size();
        m_shear_count = m_host_shears.size();
        m_spring_count = springs.size();
        m_pair_count = pairs.size();
        this->invalidate_evaluation();
    }

    /// Validated EIL constants and the slot layout (host side).
    void setup_eil(const YarnModel<T>& model)
    {
        T rest = m_eil.rest_segment_length;
        if (rest == T(0)) {
            T sum = T(0);
            for (const YarnSegment& s : model.segments) {
                using std::abs;
                sum += abs(model.q[B * static_cast<std::size_t>(s.node1) + s.coordinate] -
                           model.q[B * static_cast<std::size_t>(s.node0) + s.coordinate]);
            }
            if (model.segments.empty())
                throw InvalidInput("invalid EIL options: the model has no segments to take a rest segment length from");
            rest = sum / T(model.segments.size());
        }
        m_eil_safety = weft::eil_safety_distance<T>(rest, m_eil.safety_factor);
        m_eil_stiffness = weft::eil_contact_stiffness<T>(m_material.stretch_stiffness, rest, m_eil.contact_factor);
        m_assignment = make_eil_assignment<T>(model);
        m_base_free = model.free_dof;
        m_node_yarns.assign(static_cast<std::size_t>(model.node_count()), 0);
        for (const std::vector<int>& yarn : model.yarns)
            for (int n : yarn) ++m_node_yarns[static_cast<std::size_t>(n)];
        m_free_now = m_base_free;
    }

    /// The per-step EoL/EIL assignment (thesis Sec. 4.3.1) and the element
    /// lists it implies (thesis Sec. 4.3.2). It runs on the host, on a copy of
    /// q: sorting and traversal are O(#slots) per step (warm-started insertion
    /// sort), cheap next to the solve, and the assembly map it may rebuild is
    /// a host structure anyway. `assign_eil_yarn` is WEFT_HD, so a device
    /// version would be one thrust::for_each over yarns plus a device
    /// compaction of the element lists.
    void update_eil()
    {
        EilAssignment<T>& a = m_assignment;
        std::vector<T> q = to_host(this->m_q);
        for (int slot = 0; slot < a.slot_count(); ++slot) {
            const std::size_t n = static_cast<std::size_t>(a.node[slot]);
            const std::size_t index = B * n + static_cast<std::size_t>(a.coordinate[slot]);
            const T s = q[index];
            if (!std::isfinite(static_cast<double>(s)))
                throw InvalidInput(detail::describe("EIL assignment arc length", s, "must be a finite number"));
            a.arc_length[slot] = s;
            // A node on one yarn only has no contact partner: it stays EoL.
            a.fixed[slot] = (!m_base_free[index] || m_node_yarns[n] < 2) ? 1 : 0;
        }
        int total = 0;
        for (int y = 0; y < a.yarn_count(); ++y) {
            a.summary[static_cast<std::size_t>(y)] = assign_eil_yarn<T>(a.yarn_slots(y), m_eil_safety);
            total += a.summary[static_cast<std::size_t>(y)].eil_count;
        }
        m_eil_count = total;

        // Per (node, coordinate): EIL flag and brackets.
        const std::size_t nodes = static_cast<std::size_t>(this->m_nodes);
        std::fill(a.node_eil.begin(), a.node_eil.end(), static_cast<unsigned char>(0));
        std::vector<int> before(2 * nodes, -1), after(2 * nodes, -1);
        for (int slot = 0; slot < a.slot_count(); ++slot) {
            if (!a.eil[slot]) continue;
            const std::size_t k = 2 * static_cast<std::size_t>(a.sorted_node[slot]) + (a.coordinate[slot] - 3);
            a.node_eil[k] = 1;
            before[k] = a.eol_before[slot];
            after[k] = a.eol_after[slot];
        }
        std::vector<EilSpring> springs;
        std::vector<EilPairSpring> pairs;
        for (int slot = 0; slot < a.slot_count(); ++slot) {
            if (!a.eil[slot]) continue;
            const int n = a.sorted_node[slot];
            const int c = a.coordinate[slot];
            const std::size_t u = 2 * static_cast<std::size_t>(n);
            if (a.node_eil[u] && a.node_eil[u + 1]) {
                if (c == 3) pairs.push_back({{before[u], before[u + 1]}, {after[u], after[u + 1]}, n});
            } else {
                springs.push_back({a.eol_before[slot], a.eol_after[slot], n, c});
            }
        }
        const std::vector<YarnSegment> segments = eol_segments(a);
        const std::vector<YarnBend> bends = eol_bends(a);
        using yarn_stepper_detail::same_elements;
        if (!(same_elements(segments, m_host_segments) && same_elements(bends, m_host_bends) &&
              same_elements(springs, m_host_springs) && same_elements(pairs, m_host_pairs)))
            rebuild_elements(segments, bends, springs, pairs);

        // Doubly EIL nodes: x filtered, and placed with its velocity on the
        // u-yarn's interpolation (thesis Eq. 4.3) every step, so that the
        // filtered x does not go stale while the arc lengths slide. A node
        // that leaves the doubly EIL state is placed by the contact
        // constraint (thesis Eq. 4.1, Sec. 4.3.1): on the interpolation of the
        // yarn where it is still EIL, else on its last u-yarn interpolation.
        std::vector<unsigned char> free = m_base_free;
        std::vector<std::size_t> placed;
        std::vector<int> place_before, place_after, place_coordinate;
        const auto place = [&](int n, int b, int f, int c) {
            placed.push_back(static_cast<std::size_t>(n));
            place_before.push_back(b);
            place_after.push_back(f);
            place_coordinate.push_back(c);
        };
        for (const EilPairSpring& p : pairs) {
            place(p.node, p.before[0], p.after[0], 3);
            for (int k = 0; k < 3; ++k) free[B * static_cast<std::size_t>(p.node) + k] = 0;
        }
        for (const EilPairSpring& p : m_previous_pairs) {
            const std::size_t u = 2 * static_cast<std::size_t>(p.node);
            if (a.node_eil[u] && a.node_eil[u + 1]) continue;
            if (a.node_eil[u])
                place(p.node, before[u], after[u], 3);
            else if (a.node_eil[u + 1])
                place(p.node, before[u + 1], after[u + 1], 4);
            else
                place(p.node, p.before[0], p.after[0], 3);
        }
        m_previous_pairs = pairs;
        if (!placed.empty()) {
            std::vector<T> v = to_host(this->m_v);
            for (std::size_t i = 0; i < placed.size(); ++i) {
                const std::size_t n = B * placed[i];
                const std::size_t ia = B * static_cast<std::size_t>(place_before[i]);
                const std::size_t ib = B * static_cast<std::size_t>(place_after[i]);
                const std::size_t c = static_cast<std::size_t>(place_coordinate[i]);
                Vec<T, 9> qi, vi;
                qi << q[ia], q[ia + 1], q[ia + 2], q[ia + c], q[ib], q[ib + 1], q[ib + 2], q[ib + c], q[n + c];
                vi << v[ia], v[ia + 1], v[ia + 2], v[ia + c], v[ib], v[ib + 1], v[ib + 2], v[ib + c], v[n + c];
                // thesis Eq. (4.3) and its rate ẋ = J (ẋ_a, ṡ_a, ẋ_b, ṡ_b, ṡ)
                const EilInterpolation<T> x = eil_interpolation<T>(qi);
                const Vec3<T> xv = x.jacobian * vi;
                for (int k = 0; k < 3; ++k) {
                    q[n + k] = x.position(k);
                    v[n + k] = xv(k);
                }
            }
            this->m_q.assign(q.begin(), q.end());
            this->m_v.assign(v.begin(), v.end());
            this->invalidate_evaluation();
        }
        if (free != m_free_now) {
            m_free_now = free;
            this->m_free.assign(free.begin(), free.end());
        }
    }

    void evaluate_elements(T h, const NewtonInputs<T>& newton, const ElementBuffers<T>& out)
    {
        using namespace yarn_stepper_detail;
        KernelInputs<T> in{this->raw(this->m_q),
                           this->raw(this->m_v),
                           this->raw(this->m_free),
                           this->raw(m_anchors),
                           friction_limit(),
                           newton,
                           m_material,
                           m_gravity,
                           m_radius,
                           h,
                           this->raw(m_colliders),
                           static_cast<int>(m_colliders.size()),
                           m_eil_stiffness,
                           out};
        const auto first = thrust::counting_iterator<Index>(0);
        const std::size_t seg_m = 4 * m_segment_count;
        const std::size_t seg_v = 2 * m_segment_count;
        const std::size_t bend_m = seg_m + 9 * m_bend_count;
        const std::size_t bend_v = seg_v + 3 * m_bend_count;
        const std::size_t shear_m = bend_m + 9 * m_shear_count;
        const std::size_t shear_v = bend_v + 3 * m_shear_count;
        const std::size_t spring_m = shear_m + 9 * m_spring_count;
        const std::size_t spring_v = shear_v + 3 * m_spring_count;
        const std::size_t pair_m = spring_m + 25 * m_pair_count;
        const std::size_t pair_v = spring_v + 5 * m_pair_count;
        const std::size_t shear_e = m_segment_count + m_bend_count + m_shear_count;
        thrust::for_each(thrust::device, first, first + static_cast<Index>(m_segment_count),
                         ElementKernel<T, YarnSegment, 2>{in, this->raw(m_segments), 0, 0, 0});
        thrust::for_each(thrust::device, first, first + static_cast<Index>(m_bend_count),
                         ElementKernel<T, YarnBend, 3>{in, this->raw(m_bends), seg_m, seg_v, m_segment_count});
        thrust::for_each(thrust::device, first, first + static_cast<Index>(m_shear_count),
                         ElementKernel<T, YarnShear, 3>{in, this->raw(m_shears), bend_m, bend_v,
                                                        m_segment_count + m_bend_count});
        if (m_spring_count > 0)
            thrust::for_each(thrust::device, first, first + static_cast<Index>(m_spring_count),
                             ElementKernel<T, EilSpring, 3>{in, this->raw(m_springs), shear_m, shear_v, shear_e});
        if (m_pair_count > 0)
            thrust::for_each(thrust::device, first, first + static_cast<Index>(m_pair_count),
                             ElementKernel<T, EilPairSpring, 5>{in, this->raw(m_pairs), spring_m, spring_v,
                                                                shear_e + m_spring_count});
        thrust::for_each(thrust::device, first, first + this->m_nodes,
                         NodeKernel<T>{in, pair_m, pair_v, shear_e + m_spring_count + m_pair_count});
    }

    void after_step()
    {
        thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                         thrust::counting_iterator<Index>(this->m_nodes),
                         yarn_stepper_detail::DragAnchors<T>{this->raw(this->m_q), this->raw(m_anchors),
                                                             friction_limit(), m_material});
    }
    const T* friction_limit() const { return m_friction_limit.empty() ? nullptr : this->raw(m_friction_limit); }
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
    std::size_t m_spring_count = 0;
    std::size_t m_pair_count = 0;
    int m_assembly_builds = 0;

    thrust::device_vector<T> m_anchors, m_anchors_saved;
    thrust::device_vector<T> m_friction_limit;  ///< empty: the material's μF_n
    thrust::device_vector<YarnSegment> m_segments;
    thrust::device_vector<YarnBend> m_bends;
    thrust::device_vector<YarnShear> m_shears;
    thrust::device_vector<EilSpring> m_springs;
    thrust::device_vector<EilPairSpring> m_pairs;
    thrust::device_vector<Collider<T>> m_colliders;
    LineSet m_lines;  ///< warp and weft yarns, for the yarn-line preconditioners

    // Host copies of the element lists (compared with each new assignment).
    std::vector<YarnSegment> m_host_segments;
    std::vector<YarnBend> m_host_bends;
    std::vector<YarnShear> m_host_shears;
    std::vector<EilSpring> m_host_springs;
    std::vector<EilPairSpring> m_host_pairs;

    // EIL state (thesis Sec. 4.3); untouched with EIL off.
    EilOptions<T> m_eil;
    T m_eil_safety = T(0);
    T m_eil_stiffness = T(0);
    int m_eil_count = 0;
    EilAssignment<T> m_assignment;
    std::vector<unsigned char> m_base_free;  ///< the model's filter
    std::vector<unsigned char> m_free_now;   ///< the filter in use (doubly EIL x removed)
    std::vector<int> m_node_yarns;           ///< yarns through each node
    std::vector<EilPairSpring> m_previous_pairs;  ///< the doubly EIL nodes of the last assignment
};

}  // namespace weft
