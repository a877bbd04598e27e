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
/// of every (sub)step, before the first Newton iteration, each yarn's nodes
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
/// Robust steps with EIL (ours; docs/scenes.md): tags one step ahead at the
/// current ṡ; a step that collapses an EoL segment is redone with the
/// segment's later node tagged EIL (`accept_step`, `retry_attempt`), then
/// halved; a contact whose arc length leaves its yarn is taken off it during
/// the step (thesis Sec. 4.4, `EilTracker::update`). With EIL off, a step that
/// inverts an EoL segment fails (negative length, negative mass).
///
/// Yarn–yarn collision (YarnModel::collision, docs/collision.md): before
/// every attempt, after the EIL assignment, the segment pairs that are no
/// neighbours in the fabric and may come within reach in the step
/// (YarnContactFinder) become 4-node contact elements on the nodes'
/// positions (cloth_contact.hpp), assembled after the nodes; an attempt in
/// which a pair passed through each other is rejected (`accept_step`).
/// Pairs between two layers of one stack carry the offset of their levels,
/// taken with the pairs at the attempt's start (`YarnContactFinder::set_layers`).
///
/// Choices of ours, beyond the thesis: a node that lies on one yarn only has
/// no contact partner and never becomes EIL (it is treated like a fixed node
/// by the assignment); arc lengths are not reset on switching by default
/// (thesis Sec. 4.3.1 opts for the same in practice); EilOptions::reset_on_eol
/// applies Eq. 4.4 when a node turns back to EoL (eil_assignment.hpp has the
/// closed-form resets of Eq. 4.4–4.7). The assignment runs on the device, one
/// thread per yarn; the host rebuilds the element lists only when the result
/// changes them. EIL tracking is its own component (eil_tracker.hpp,
/// `EilTracker`): the stepper calls it before every attempt and follows the
/// changes it reports (`YarnStepper::follow`).

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <thrust/count.h>
#include <thrust/device_vector.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include <weft/backend/eil_tracker.hpp>
#include <weft/backend/implicit_stepper.hpp>
#include <weft/backend/line_preconditioner.hpp>
#include <weft/backend/state_archive.hpp>
#include <weft/backend/yarn_collision.hpp>
#include <weft/core/error.hpp>
#include <weft/element/cloth_contact.hpp>
#include <weft/element/eil_elements.hpp>
#include <weft/element/eil_terms.hpp>
#include <weft/element/yarn_elements.hpp>
#include <weft/model/eil_assignment.hpp>
#include <weft/model/layers.hpp>
#include <weft/model/yarn_model.hpp>

namespace weft {

template <typename T>
using YarnStepperOptions = StepperOptions<T>;

/// What one call of YarnStepper::step() did: the shared report plus the EIL
/// assignment it ran with.
struct YarnStepReport : BackendStepReport {
    int eil_nodes = 0;  ///< EIL (yarn, node) pairs of this step's assignment (peak over substeps); 0 with EIL off
    int detached_contacts = 0;  ///< nodes taken off a yarn in this step because they left it (EIL on)
    int arc_length_resets = 0;  ///< EIL → EoL switches whose arc length was reset (EilOptions::reset_on_eol)
    int pulled_contacts = 0;    ///< inter-layer contacts removed in this step because their normal force pulled
    int created_contacts = 0;   ///< inter-layer contacts made in this step where layers met (collision.create_contacts)
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
    const std::uint8_t* external_contact;  ///< per node, or nullptr: none (YarnModel::external_contact)
    /// true: parallel-yarn contact is evaluated on the stretch segments (the
    /// fabric pairs are exactly the segments); false: on its own pair list
    bool segment_parallel;
    const YarnSegment* segments;        ///< the stretch segments
    const NodeSegments* node_segments;  ///< per node: its segments (for its lumped mass)
    ClothCollision<T> collision;        ///< yarn–yarn collision settings
    const T* friction_rate;             ///< collision: per node (contact_friction_rates), or null
    ElementBuffers<T> out;
};

/// The element functions behind one kernel, by element type.
template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const YarnSegment& s, NodeBlocks<T, 2, B>& blocks,
                                     ElementEnergies<T>& e)
{
    const bool parallel =
        in.segment_parallel && !(in.external_contact && (in.external_contact[s.node0] || in.external_contact[s.node1]));
    evaluate_yarn_segment<T>(in.q, in.v, s, in.material, in.gravity, in.h, blocks, e, in.newton, parallel);
}
template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const YarnParallelPair& p, NodeBlocks<T, 2, B>& blocks,
                                     ElementEnergies<T>& e)
{
    evaluate_parallel_pair<T>(in.q, in.v, p, in.material, in.h, blocks, e, in.newton);
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
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const EilSpring& s, NodeBlocks<T, 5, B>& blocks,
                                     ElementEnergies<T>& e)
{
    evaluate_eil_spring<T>(in.q, in.v, s, in.eil_stiffness, in.h, blocks, e, in.newton);
}
template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const EilPairSpring& s, NodeBlocks<T, 9, B>& blocks,
                                     ElementEnergies<T>& e)
{
    evaluate_eil_pair_spring<T>(in.q, in.v, s, in.eil_stiffness, in.h, blocks, e, in.newton);
}

/// A yarn–yarn contact pair (collision; cloth_contact.hpp on the nodes' x).
template <typename T>
WEFT_HD inline void evaluate_element(const KernelInputs<T>& in, const ClothContactElement<T>& pair,
                                     NodeBlocks<T, 4, B>& blocks, ElementEnergies<T>& e)
{
    evaluate_cloth_contact<T, B>(in.q, in.v, in.friction_rate, pair, in.collision, in.h, blocks, e, in.newton);
}

/// Each node's lumped mass on its current segments.
template <typename T>
struct NodeMass {
    const T* q;
    const YarnSegment* segments;
    const NodeSegments* at;
    T linear_density;
    WEFT_HD T operator()(Index node) const
    {
        return yarn_node_mass<T>(q, segments, at[static_cast<std::size_t>(node)], linear_density);
    }
};

/// Per node, the segments that end at it (`NodeSegments`, host).
/// @throws InvalidInput for a node with more than four segments
inline std::vector<NodeSegments> node_segment_lists(const std::vector<YarnSegment>& segments, Index nodes)
{
    std::vector<NodeSegments> at(static_cast<std::size_t>(nodes), NodeSegments{{-1, -1, -1, -1}});
    for (std::size_t k = 0; k < segments.size(); ++k)
        for (const int n : {segments[k].node0, segments[k].node1}) {
            int* slot = at[static_cast<std::size_t>(n)].segment;
            int free = 0;
            while (free < 4 && slot[free] >= 0) ++free;
            if (free == 4)
                throw InvalidInput(
                    detail::describe("YarnModel segments at node", n, "more than four (two yarns, two segments each)"));
            slot[free] = static_cast<int>(k);
        }
    return at;
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
        // Full Newton: the node's mass at the step start sets the slip
        // velocities of its collider friction and its slipping anchors.
        const T mass = in.newton.lagged_positions ? yarn_node_mass<T>(in.newton.lagged_positions, in.segments,
                                                                      in.node_segments[static_cast<std::size_t>(node)],
                                                                      in.material.linear_density)
                                                  : T(0);
        evaluate_yarn_node<T>(in.q, in.v, in.free_dof, in.anchors, in.friction_limit, node, in.material, in.colliders,
                              in.collider_count, in.radius, in.h, blocks, e, in.newton, mass);
        stepper_detail::write_blocks<T, 1, B>(blocks, in.out, matrix_base + static_cast<std::size_t>(node),
                                              vector_base + static_cast<std::size_t>(node));
        in.out.energies[energy_base + static_cast<std::size_t>(node)] = e;
    }
};

/// Index of DoF `component` of `node` in q, v.
WEFT_HD inline std::size_t dof_index(int node, int component)
{
    return B * static_cast<std::size_t>(node) + static_cast<std::size_t>(component);
}

/// 1 for a pair of consecutive crossings of one fabric whose order on their
/// yarn flipped during the step (YarnParallelPair).
template <typename T>
struct PassedPair {
    const T* q;
    const T* q_start;
    WEFT_HD int operator()(const YarnParallelPair& p) const
    {
        const std::size_t a = dof_index(p.node0, p.coordinate);
        const std::size_t b = dof_index(p.node1, p.coordinate);
        return q_start[b] - q_start[a] > T(0) && !(q[b] - q[a] > T(0)) ? 1 : 0;
    }
};

/// 1 for an EoL segment collapsed during the step: its arc-length span
/// shrank to ≤ factor × min(floor, span at the start), or changed sign.
template <typename T>
struct CollapsedSegment {
    const T* q;
    const T* q_start;
    T floor;
    T factor;
    WEFT_HD int operator()(const YarnSegment& s) const
    {
        const std::size_t a = dof_index(s.node0, s.coordinate);
        const std::size_t b = dof_index(s.node1, s.coordinate);
        const T start = q_start[b] - q_start[a];
        if (start == T(0)) return 0;
        const T span = start > T(0) ? start : -start;
        const T end = start > T(0) ? q[b] - q[a] : q[a] - q[b];
        const T limit = factor * (floor < span ? floor : span);
        return end <= limit ? 1 : 0;
    }
};

/// Feasibility of a full-Newton update q + α h Δv (implicit_stepper.hpp):
/// the largest α ≤ 1 for which no oriented arc-length difference along a
/// yarn flips sign, keeping `keep` of it at least. EoL segments: s₁ − s₀
/// (no inverted segment, no negative mass); EIL nodes: s stays inside the
/// EoL segments its spring can interpolate on (its bracket and the two
/// neighbouring segments, EilSpring and EilPairSpring), so every interpolation weight of thesis Eq. 4.3 stays in [0, 1]
/// except past a yarn's end, which a departing contact may cross.
template <typename T>
struct FeasibleFraction {
    const T* q;
    const T* dv;
    T h;
    T keep;
    /// The fraction that keeps s_to − s_from + margin positive (keep of it).
    WEFT_HD T difference(int from, int to, int coordinate, T margin = T(0)) const
    {
        const std::size_t a = dof_index(from, coordinate);
        const std::size_t b = dof_index(to, coordinate);
        return stepper_detail::sign_keeping_fraction<T>(q[b] - q[a] + margin, h * (dv[b] - dv[a]), keep);
    }
    WEFT_HD T operator()(const YarnSegment& s) const { return difference(s.node0, s.node1, s.coordinate); }
    /// An EIL spring's node may slide into the neighbouring EoL segment
    /// (EilSpring::outer_before, outer_after). Where there is none, the
    /// bracket ends the yarn: the node may pass that end by up to one
    /// bracket span (the interpolation extrapolates there), so that a
    /// contact sliding off the yarn leaves it within the step and the next
    /// assignment takes it off (thesis Sec. 4.4) instead of the step stalling
    /// at the yarn's end.
    WEFT_HD T sliding(int node, int before, int after, int outer_before, int outer_after, int coordinate) const
    {
        const T span = q[dof_index(after, coordinate)] - q[dof_index(before, coordinate)];
        const T lo =
            outer_before >= 0 ? difference(outer_before, node, coordinate) : difference(before, node, coordinate, span);
        const T hi =
            outer_after >= 0 ? difference(node, outer_after, coordinate) : difference(node, after, coordinate, span);
        return lo < hi ? lo : hi;
    }
    WEFT_HD T operator()(const EilSpring& s) const
    {
        return sliding(s.node, s.before, s.after, s.outer_before, s.outer_after, s.coordinate);
    }
    WEFT_HD T operator()(const EilPairSpring& p) const
    {
        const T u = sliding(p.node, p.before[0], p.after[0], p.outer_before[0], p.outer_after[0], 3);
        const T w = sliding(p.node, p.before[1], p.after[1], p.outer_before[1], p.outer_after[1], 4);
        return u < w ? u : w;
    }
};

/// 1 for an EIL spring whose node lies outside its bracket [s_a, s_b] on a
/// side where the yarn has a further EoL segment (EilSpring::outer_before,
/// outer_after): the bracket can follow it (YarnStepper::rebracket_within_step).
template <typename T>
struct OutsideBracket {
    const T* q;
    WEFT_HD int outside(int node, int before, int after, int outer_before, int outer_after, int coordinate) const
    {
        const T s = q[dof_index(node, coordinate)];
        return ((outer_before >= 0 && s < q[dof_index(before, coordinate)]) ||
                (outer_after >= 0 && s > q[dof_index(after, coordinate)]))
                   ? 1
                   : 0;
    }
    WEFT_HD int operator()(const EilSpring& s) const
    {
        return outside(s.node, s.before, s.after, s.outer_before, s.outer_after, s.coordinate);
    }
    WEFT_HD int operator()(const EilPairSpring& p) const
    {
        return outside(p.node, p.before[0], p.after[0], p.outer_before[0], p.outer_after[0], 3) |
               outside(p.node, p.before[1], p.after[1], p.outer_before[1], p.outer_after[1], 4);
    }
};

/// Coulomb anchors after a step (DESIGN.md; same rule as the Eigen path).
/// Full Newton (`q_start` set): an anchor that slipped in the step
/// (`anchor_at_limit` at the step's start) settles by the rate it ended with
/// (`settle_slipping_anchor`, with the slip velocity of the step's friction).
template <typename T>
struct DragAnchors {
    const T* q;
    T* anchors;
    const T* friction_limit;  ///< nullptr: the material's μF_n
    YarnMaterial<T> m;
    const T* v = nullptr;        ///< full Newton: the step's end velocities
    const T* force = nullptr;    ///< full Newton: the total force at the step's end (the converged iterate's f)
    const T* v_start = nullptr;  ///< full Newton: the velocities at the step's start
    const T* q_start = nullptr;  ///< full Newton: the positions at the step's start; null: one-step scheme
    const YarnSegment* segments = nullptr;
    const NodeSegments* node_segments = nullptr;
    T h = T(0);
    WEFT_HD void operator()(Index node) const
    {
        T limit = T(0);
        const bool friction = node_friction<T>(m, friction_limit, static_cast<int>(node), limit);
        const bool slip = friction && q_start && m.anchor_friction == AnchorFriction::slip_in_step;
        const T mass =
            slip ? yarn_node_mass<T>(q_start, segments, node_segments[static_cast<std::size_t>(node)], m.linear_density)
                 : T(0);
        for (int c = 0; c < 2; ++c) {
            const std::size_t i = B * static_cast<std::size_t>(node) + 3 + static_cast<std::size_t>(c);
            const T s = q[i];
            T& a = anchors[2 * static_cast<std::size_t>(node) + c];
            if (slip && anchor_at_limit<T>(q_start[i], a, m.anchor_stiffness, limit))
                a = settle_slipping_anchor<T>(s, a, v[i], force[i], m.anchor_stiffness, limit,
                                              anchor_slip_velocity<T>(m.anchor_stiffness, limit, h, mass, v_start[i]));
            else
                a = friction ? drag_anchor_to_limit<T>(s, a, m.anchor_stiffness, limit) : s;
        }
    }
};

/// The exchange force of each contact between layers
/// (layer_contact_normal_force); where it is undefined at this step (EIL
/// node on a yarn, removed contact) the last value stays.
template <typename T>
struct LayerExchangeForce {
    const T* q;
    const T* v;
    const LayerContactStencil* stencils;
    const YarnSegment* segments;
    const YarnBend* bends;
    T* exchange;
    T* magnitude;
    int* defined;  ///< 1 where the force was evaluated at this step
    YarnMaterial<T> m;
    Vec3<T> gravity;
    const Collider<T>* colliders;
    int collider_count;
    T radius;
    WEFT_HD void operator()(Index k) const
    {
        T n = exchange[k], scale = magnitude[k];
        defined[k] = layer_contact_normal_force<T>(q, v, stencils[k], segments, bends, m, gravity, colliders,
                                                   collider_count, radius, n, &scale)
                         ? 1
                         : 0;
        exchange[k] = n;
        magnitude[k] = scale;
    }
};

/// The normal force of each contact, N = X + Σ_p (X_p − X) / 8 over its
/// partners p (the other kind of contact in its cell; with four partners the
/// mean of its exchange force X and theirs; symmetric, so ΣN = ΣX), its
/// Coulomb limit μ max(N, 0), and state 1 where the contact's
/// own force was evaluated at this step and N < −threshold × the largest
/// magnitude of the terms averaged, else 0.
template <typename T>
struct LayerNormalForce {
    const LayerContactStencil* stencils;
    const T* exchange;
    const T* magnitude;
    const T* mu;
    T* normal;
    T* friction_limit;
    int* state;   ///< in: 1 where evaluated at this step (LayerExchangeForce); out: 1 where it pulls
    T threshold;  ///< pull threshold, a fraction of the magnitude (EilOptions::pull_threshold)
    WEFT_HD void operator()(Index k) const
    {
        const LayerContactStencil& s = stencils[k];
        T n = exchange[k], scale = magnitude[k];
        for (int p = 0; p < 4; ++p) {
            if (s.partner[p] < 0) continue;
            n += T(0.125) * (exchange[s.partner[p]] - exchange[k]);
            scale = scale > magnitude[s.partner[p]] ? scale : magnitude[s.partner[p]];
        }
        normal[k] = n;
        friction_limit[s.node] = mu[k] * (n > T(0) ? n : T(0));
        state[k] = state[k] && n < -threshold * scale ? 1 : 0;
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
    /// @throws InvalidInput for inconsistent model arrays or options, or a
    ///         material that `validate_yarn_material` refuses (no mass, a
    ///         negative coefficient)
    YarnStepper(const YarnModel<T>& model, const std::vector<Collider<T>>& colliders, const Vec3<T>& gravity,
                const YarnStepperOptions<T>& options = {}, const EilOptions<T>& eil = {});

    /// Advance by h (in 2^k substeps when a step had to be halved). With EIL
    /// on, the EoL/EIL assignment is revised before every (sub)step (thesis
    /// Sec. 4.3.1: before the first Newton step of a solve), so a halved step
    /// re-assigns between its halves; its time counts as assembly.
    YarnStepReport step(T h);

    const thrust::device_vector<T>& anchors() const { return m_anchors; }

    /// EIL (yarn, node) pairs of the last assignment (0 with EIL off or before the first step);
    /// the step report's `eil_nodes` is the largest count over the step's substeps.
    int eil_nodes() const { return m_tracker.count(); }
    /// The last EoL/EIL assignment (host; empty with EIL off).
    const EilAssignment<T>& eil_assignment() const { return m_tracker.assignment(); }
    /// EIL tracking: the assignment, the topology after contacts left, and their counters.
    const EilTracker<T>& eil_tracker() const { return m_tracker; }
    /// The EIL contact springs of the last assignment (host).
    const std::vector<EilSpring>& eil_springs() const { return m_host_springs; }
    const std::vector<EilPairSpring>& eil_pair_springs() const { return m_host_pairs; }
    /// Stretch segments of the last assignment (host; the model's list with EIL off).
    const std::vector<YarnSegment>& segments() const { return m_host_segments; }
    /// Nodes taken off a yarn since construction because their arc length left
    /// it (thesis Sec. 4.4; EIL on), and the topology that results.
    int detached_contacts() const { return m_tracker.detached(); }
    /// Contacts between layers removed since construction because their
    /// normal force pulled (EilOptions::remove_pulling_contacts).
    int pulled_contacts() const { return m_pulled; }
    /// Contacts between layers made since construction where two layers met
    /// (ClothCollision::create_contacts; removed contact nodes put back).
    int created_contacts() const { return m_created; }
    /// Contacts made and taken off again at once because their normal force
    /// pulled (not counted in created_contacts).
    int declined_contacts() const { return m_declined; }
    /// The contacts between layers whose limit follows their normal force
    /// (YarnModel::layer_friction ≥ 0), their last normal forces N (N; > 0
    /// pushes the layers apart; a contact's exchange force smoothed with
    /// its partners', LayerNormalForce) and exchange forces
    /// (layer_contact_normal_force), evaluated at the start of the last
    /// (sub)step; a removed contact keeps its last values.
    const std::vector<int>& layer_contact_nodes() const { return m_contact_nodes; }
    std::vector<T> layer_normal_forces() const { return to_host(m_normal_force); }
    std::vector<T> layer_exchange_forces() const { return to_host(m_exchange_force); }
    const YarnModel<T>& topology() const { return m_tracker.topology(); }
    /// The warp and weft yarns as node chains (of the current topology), as
    /// the yarn-line preconditioners and the multilevel yarn-line smoother
    /// read them.
    const LineSet& lines() const { return m_lines; }
    /// The safety distance and contact-spring stiffness in use (0 with EIL off).
    T eil_safety_distance() const { return m_tracker.safety_distance(); }
    T eil_contact_stiffness() const { return m_tracker.contact_stiffness(); }
    /// How often the assembly map was built (1 at construction, +1 per change of the
    /// EIL element lists; rebuilds for a new list of collision contact pairs are not counted).
    int assembly_builds() const { return m_assembly_builds; }

    /// Collision (YarnModel::collision): the settings, and the contact pairs
    /// of the last attempt (segment pairs within reach at its start).
    const ClothCollision<T>& collision() const { return m_collision; }
    int contact_pairs() const { return static_cast<int>(m_contacts.size()); }
    /// The segment pairs of the last attempt's contacts (host).
    std::vector<ClothContactElement<T>> contacts() const { return to_host(m_contacts); }
    /// Collision: the smallest distance between the segments of a contact
    /// pair at the current positions (+inf: no pair).
    T min_contact_distance() const
    {
        if (m_contacts.empty()) return std::numeric_limits<T>::infinity();
        return thrust::transform_reduce(thrust::device, m_contacts.begin(), m_contacts.end(),
                                        cloth_collision_detail::ContactDistance<T>{this->raw(this->m_q), B},
                                        std::numeric_limits<T>::infinity(), stepper_detail::Minimum<T>{});
    }
    /// Collision: the contact pairs whose segments' centre lines are closer
    /// than one yarn radius at the current positions: yarns that
    /// interpenetrate (weft-run checks every frame).
    std::size_t interpenetrating_pairs() const
    {
        if (m_contacts.empty()) return 0;
        const cloth_collision_detail::ContactDistance<T> distance{this->raw(this->m_q), B};
        return static_cast<std::size_t>(thrust::count_if(thrust::device, m_contacts.begin(), m_contacts.end(),
                                                         cloth_collision_detail::CloserThan<T>{distance, m_radius}));
    }
    /// Collision: wall time spent finding pairs and checking for passes
    /// since construction (s); the contacts' element kernels count as assembly.
    double collision_seconds() const { return m_collision_seconds; }

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
        validate_yarn_material(model.material);
        if (model.anchors.size() != 2 * static_cast<std::size_t>(model.node_count()))
            throw InvalidInput(
                detail::describe("YarnModel anchors.size()", model.anchors.size(), "must be 2 x #nodes"));
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
        if (!model.layer_friction.empty()) {
            if (model.layer_friction.size() != static_cast<std::size_t>(model.node_count()))
                throw InvalidInput(detail::describe("YarnModel layer_friction.size()", model.layer_friction.size(),
                                                    "must be 0 or #nodes"));
            for (std::size_t n = 0; n < model.layer_friction.size(); ++n) {
                const T mu = model.layer_friction[n];
                const std::string field = "YarnModel layer_friction[" + std::to_string(n) + "]";
                if (!std::isfinite(static_cast<double>(mu)))
                    throw InvalidInput(detail::describe(field.c_str(), mu, "must be a finite number"));
                if (mu < T(0)) continue;
                if (!(n < model.external_contact.size() && model.external_contact[n]))
                    throw InvalidInput(detail::describe(field.c_str(), mu,
                                                        "is set on a node that is no contact with another fabric "
                                                        "(external_contact)"));
                if (n >= model.over.size())
                    throw InvalidInput(
                        detail::describe(field.c_str(), mu, "needs YarnModel over[node] (which yarn is on top)"));
            }
        }
        return model;
    }

    /// The contacts whose Coulomb limit follows their normal force.
    void setup_layer_contacts(const YarnModel<T>& model)
    {
        std::vector<T> mu;
        for (std::size_t n = 0; n < model.layer_friction.size(); ++n) {
            if (model.layer_friction[n] < T(0)) continue;
            m_contact_nodes.push_back(static_cast<int>(n));
            m_contact_top.push_back(model.over[n] ? 3 : 4);
            mu.push_back(model.layer_friction[n]);
        }
        if (m_contact_nodes.empty()) return;
        if (m_friction_limit.empty()) {
            std::vector<T> limit(static_cast<std::size_t>(model.node_count()),
                                 m_material.friction_coefficient * m_material.normal_force);
            for (int n : m_contact_nodes) limit[static_cast<std::size_t>(n)] = T(0);
            m_friction_limit.assign(limit.begin(), limit.end());
        }
        m_layer_mu.assign(mu.begin(), mu.end());
        m_normal_force.assign(mu.size(), T(0));
        m_exchange_force.assign(mu.size(), T(0));
        m_exchange_scale.assign(mu.size(), T(0));
        m_contact_state.assign(mu.size(), 0);
    }

    /// Normal forces and Coulomb limits of the contacts between layers at the
    /// start of an attempt; with EIL on and EilOptions::remove_pulling_contacts,
    /// the contacts whose normal force pulls are removed from both yarns
    /// (`remove_contact_node`) and the limits are evaluated again on the new lists.
    void update_layer_contacts(T h)
    {
        evaluate_layer_contacts();
        if (!(m_tracker.enabled() && m_tracker.options().remove_pulling_contacts)) return;
        const int pulling = thrust::reduce(thrust::device, m_contact_state.begin(), m_contact_state.end(), 0);
        if (pulling == 0) return;
        const std::vector<int> state = to_host(m_contact_state);
        std::vector<std::pair<int, int>> nodes;
        for (std::size_t k = 0; k < state.size(); ++k)
            if (state[k]) nodes.push_back({m_contact_nodes[k], m_contact_top[k]});
        EilChanges changes;
        m_pulled += m_tracker.remove(eil_state(), nodes, changes);
        follow(changes);
        follow(m_tracker.update(eil_state(), h));
        evaluate_layer_contacts();
    }

    /// Collision with ClothCollision::create_contacts, at the start of a
    /// step: a segment pair of two neighbouring layers of one stack, a warp
    /// and a weft, that touched (closest points inside both segments, their
    /// distance as collision measures it below the thickness) at the start of
    /// `create_after` consecutive steps becomes a contact between the layers
    /// again: a contact node removed before (its normal force pulled, or its
    /// arc length left a yarn) is put back where the two segments are closest
    /// (`attach_contact_node`, EilTracker::attach), on both yarns, at the
    /// midpoint of their centre lines, each yarn's arc length and arc rate
    /// and the mean of their velocities there. Its arc lengths keep
    /// `2 × the EIL safety distance` from every node on both yarns. With
    /// EilOptions::remove_pulling_contacts, a contact whose normal force
    /// pulls as soon as it is made is taken off again (declined_contacts).
    /// Thereafter it is an EoL contact like those the layers started with:
    /// friction from its normal force, removed again when that pulls.
    /// Returns the number made and kept.
    int make_layer_contacts(T h)
    {
        using layers_detail::line_closest_parameters;
        const YarnModel<T>& topology = m_tracker.topology();
        const std::size_t nodes = static_cast<std::size_t>(this->m_nodes);
        std::vector<int> yarn_of(2 * nodes, -1);  // each node's yarn per coordinate
        std::vector<unsigned char> on_yarn(nodes, 0);
        for (std::size_t y = 0; y < topology.yarns.size(); ++y)
            for (int n : topology.yarns[y]) {
                yarn_of[2 * static_cast<std::size_t>(n) + (topology.yarn_coordinate[y] == 3 ? 0 : 1)] =
                    static_cast<int>(y);
                on_yarn[static_cast<std::size_t>(n)] = 1;
            }
        std::vector<std::size_t> pool;  // removed contacts (indices into m_contact_nodes)
        for (std::size_t k = 0; k < m_contact_nodes.size(); ++k)
            if (!on_yarn[static_cast<std::size_t>(m_contact_nodes[k])]) pool.push_back(k);
        if (pool.empty()) {
            // Every contact node is on its yarns: nothing can be made, and no
            // pair search is spent. Touching counts start again from zero
            // once a node is free (a state-only rule, as the counts are).
            m_meeting.clear();
            return 0;
        }
        // The pairs within the thickness now (from the state alone, so that a
        // stepper loaded from a checkpoint finds the same ones).
        const std::vector<ClothContactElement<T>> pairs =
            to_host(m_contact_finder.find(this->m_q, this->m_v, T(0), m_collision.thickness));
        const auto segment_yarn = [&](int n0, int n1) {
            for (std::size_t c = 0; c < 2; ++c) {
                const int y = yarn_of[2 * static_cast<std::size_t>(n0) + c];
                if (y >= 0 && y == yarn_of[2 * static_cast<std::size_t>(n1) + c]) return y;
            }
            return -1;
        };
        const auto place = [&](int y) {
            return static_cast<std::size_t>(y) < topology.yarn_layer.size()
                       ? topology.yarn_layer[static_cast<std::size_t>(y)]
                       : YarnLayerPlace{};
        };
        // The pairs that touched at the last steps' starts: (4 nodes, count) each.
        std::map<std::array<int, 4>, int> before;
        for (std::size_t k = 0; k + 5 <= m_meeting.size(); k += 5)
            before[{m_meeting[k], m_meeting[k + 1], m_meeting[k + 2], m_meeting[k + 3]}] = m_meeting[k + 4];
        std::vector<int> meeting;
        if (pairs.empty() && before.empty()) return 0;
        const std::vector<T> q = to_host(this->m_q), v = to_host(this->m_v);
        const auto x_of = [&](int n) {
            const std::size_t i = B * static_cast<std::size_t>(n);
            return Vec3<double>(double(q[i]), double(q[i + 1]), double(q[i + 2]));
        };
        const auto lerp = [&](const std::vector<T>& values, int n0, int n1, int k, double t) {
            return T((1 - t) * double(values[B * static_cast<std::size_t>(n0) + k]) +
                     t * double(values[B * static_cast<std::size_t>(n1) + k]));
        };
        const double clearance = 2 * double(m_tracker.safety_distance());
        std::vector<std::pair<int, double>> taken;  // (yarn, arc length) of the contacts made here
        const auto clear_of_nodes = [&](int y, double arc) {
            const int c = topology.yarn_coordinate[static_cast<std::size_t>(y)];
            for (int n : topology.yarns[static_cast<std::size_t>(y)])
                if (std::abs(double(q[B * static_cast<std::size_t>(n) + c]) - arc) < clearance) return false;
            for (const auto& [ty, ta] : taken)
                if (ty == y && std::abs(ta - arc) < clearance) return false;
            return true;
        };
        std::vector<NewLayerContact<T>> made;
        std::vector<std::size_t> made_slot;
        std::vector<int> made_top;  // the top yarn's coordinate of each
        for (const ClothContactElement<T>& pair : pairs) {
            const int* n = pair.nodes;
            const int ya = segment_yarn(n[0], n[1]), yb = segment_yarn(n[2], n[3]);
            if (ya < 0 || yb < 0) continue;
            const YarnLayerPlace pa = place(ya), pb = place(yb);
            if (pa.stack < 0 || pa.stack != pb.stack || std::abs(pa.level - pb.level) != 1) continue;
            const int ca = topology.yarn_coordinate[static_cast<std::size_t>(ya)];
            const int cb = topology.yarn_coordinate[static_cast<std::size_t>(yb)];
            if (ca == cb) continue;
            const Vec3<double> offset(double(pair.offset[0]), double(pair.offset[1]), double(pair.offset[2]));
            const Vec3<double> a0 = x_of(n[0]), a1 = x_of(n[1]), b0 = x_of(n[2]), b1 = x_of(n[3]);
            double t = 0, u = 0;
            if (!line_closest_parameters(a0, a1, b0 + offset, b1 + offset, t, u)) continue;
            if (!(t > 0 && t < 1 && u > 0 && u < 1)) continue;
            const Vec3<double> pa_x = a0 + t * (a1 - a0), pb_x = b0 + u * (b1 - b0);
            if (!((pa_x - pb_x - offset).norm() < double(m_collision.thickness))) continue;
            const std::array<int, 4> key{n[0], n[1], n[2], n[3]};
            const auto it = before.find(key);
            const int count = (it == before.end() ? 0 : it->second) + 1;
            if (count < m_collision.create_after) {
                meeting.insert(meeting.end(), {n[0], n[1], n[2], n[3], count});
                continue;
            }
            const double arc_a = double(lerp(q, n[0], n[1], ca, t)), arc_b = double(lerp(q, n[2], n[3], cb, u));
            if (pool.size() == made.size() || !clear_of_nodes(ya, arc_a) || !clear_of_nodes(yb, arc_b)) {
                meeting.insert(meeting.end(), {n[0], n[1], n[2], n[3], count});
                continue;
            }
            taken.push_back({ya, arc_a});
            taken.push_back({yb, arc_b});
            const bool a_on_top = pa.level > pb.level;
            NewLayerContact<T> c;
            c.node = m_contact_nodes[pool[made.size()]];
            c.top_yarn = a_on_top ? ya : yb;
            c.bottom_yarn = a_on_top ? yb : ya;
            c.top_arc = T(a_on_top ? arc_a : arc_b);
            c.bottom_arc = T(a_on_top ? arc_b : arc_a);
            c.top_arc_rate = a_on_top ? lerp(v, n[0], n[1], ca, t) : lerp(v, n[2], n[3], cb, u);
            c.bottom_arc_rate = a_on_top ? lerp(v, n[2], n[3], cb, u) : lerp(v, n[0], n[1], ca, t);
            for (int k = 0; k < 3; ++k) {
                c.position[k] = T(0.5 * (pa_x[k] + pb_x[k]));
                c.velocity[k] = T(0.5) * (lerp(v, n[0], n[1], k, t) + lerp(v, n[2], n[3], k, u));
            }
            made.push_back(c);
            made_slot.push_back(pool[made.size() - 1]);
            made_top.push_back(a_on_top ? ca : cb);
        }
        m_meeting.swap(meeting);
        if (made.empty()) return 0;
        EilChanges changes;
        m_tracker.attach(eil_state(), made, changes);
        for (std::size_t k = 0; k < made.size(); ++k) m_contact_top[made_slot[k]] = made_top[k];
        forget_initial_links(made);
        m_contact_finder.set_layers(m_tracker.topology());
        follow(changes);
        follow(m_tracker.update(eil_state(), h));
        int kept = static_cast<int>(made.size());
        if (m_tracker.options().remove_pulling_contacts) {
            // A contact is made only where it pushes: one whose normal force
            // would pull at once (the layers touch there, but nothing presses
            // them together) is taken off again, not counted, and its pair
            // counts its steps from zero.
            evaluate_layer_contacts();
            const std::vector<int> state = to_host(m_contact_state);
            std::vector<std::pair<int, int>> pulling;
            for (std::size_t k : made_slot)
                if (state[k]) pulling.push_back({m_contact_nodes[k], m_contact_top[k]});
            if (!pulling.empty()) {
                EilChanges again;
                m_tracker.remove(eil_state(), pulling, again);
                follow(again);
                follow(m_tracker.update(eil_state(), h));
                kept -= static_cast<int>(pulling.size());
                m_declined += static_cast<int>(pulling.size());
            }
        }
        m_created += kept;
        return kept;
    }

    /// A node put back at a new place keeps none of the links its first
    /// place gave it in the collision's exclusions (the model's initial
    /// segments through it).
    void forget_initial_links(const std::vector<NewLayerContact<T>>& made)
    {
        const auto reused = [&](const YarnSegment& g) {
            for (const NewLayerContact<T>& c : made)
                if (g.node0 == c.node || g.node1 == c.node) return true;
            return false;
        };
        m_initial_segments.erase(std::remove_if(m_initial_segments.begin(), m_initial_segments.end(), reused),
                                 m_initial_segments.end());
    }

    void evaluate_layer_contacts()
    {
        const auto first = thrust::counting_iterator<Index>(0);
        const auto last = first + static_cast<Index>(m_contact_nodes.size());
        thrust::for_each(thrust::device, first, last,
                         yarn_stepper_detail::LayerExchangeForce<T>{
                             this->raw(this->m_q), this->raw(this->m_v), this->raw(m_stencils), this->raw(m_segments),
                             this->raw(m_bends), this->raw(m_exchange_force), this->raw(m_exchange_scale),
                             this->raw(m_contact_state), m_material, m_gravity, this->raw(m_colliders),
                             static_cast<int>(m_colliders.size()), m_radius});
        thrust::for_each(
            thrust::device, first, last,
            yarn_stepper_detail::LayerNormalForce<T>{
                this->raw(m_stencils), this->raw(m_exchange_force), this->raw(m_exchange_scale), this->raw(m_layer_mu),
                this->raw(m_normal_force), this->raw(m_friction_limit), this->raw(m_contact_state),
                m_tracker.options().pull_threshold > T(1e-9) ? m_tracker.options().pull_threshold : T(1e-9)});
    }

    /// Uploads the element lists and builds the assembly map. Contribution
    /// order: segments (2×2 blocks), bends (3×3), shears (3×3), EIL springs
    /// (5×5, `eil_spring_stencil`), EIL pair springs (9×9,
    /// `eil_pair_spring_stencil`), parallel-yarn pairs (2×2, only where they
    /// are not the segments), nodes (1); with no EIL spring this is the order
    /// of the stepper without EIL.
    void rebuild_elements(const std::vector<YarnSegment>& segments, const std::vector<YarnBend>& bends,
                          const std::vector<EilSpring>& springs, const std::vector<EilPairSpring>& pairs,
                          const std::vector<YarnParallelPair>& fabric)
    {
        // Parallel-yarn contact acts between consecutive crossings of one
        // fabric (YarnParallelPair). Where those pairs are exactly the stretch
        // segments (no EIL node, no contact with another fabric) the segment
        // kernel evaluates it, as before; otherwise the pairs are elements of
        // their own and the segments carry none. Without parallel-yarn
        // contact (stiffness 0, e.g. crossing rods) there are no pairs.
        m_segment_parallel =
            !m_lists_known || !(m_material.contact_stiffness > T(0)) || pairs_are_segments(fabric, segments);
        const std::vector<YarnParallelPair> parallel = m_segment_parallel ? std::vector<YarnParallelPair>{} : fabric;
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
        for (const EilSpring& s : springs) {
            int stencil[5];
            eil_spring_stencil(s, stencil);
            add_element({stencil[0], stencil[1], stencil[2], stencil[3], stencil[4]});
        }
        for (const EilPairSpring& p : pairs) {
            int n[9];
            eil_pair_spring_stencil(p, n);
            add_element({n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8]});
        }
        for (const YarnParallelPair& p : parallel) add_element({p.node0, p.node1});
        for (Index n = 0; n < node_total; ++n) add_element({n});
        const std::size_t entries = segments.size() + bends.size() + m_host_shears.size() + springs.size() +
                                    pairs.size() + parallel.size() + static_cast<std::size_t>(node_total);
        m_base_blocks = std::move(blocks);
        m_base_vectors = std::move(vectors);
        m_base_entries = entries;
        if (m_collision.enabled) m_contact_finder.set_segments(m_initial_segments, segments, springs, pairs, fabric);
        build_with_contacts();
        ++m_assembly_builds;

        if (!m_contact_nodes.empty()) {
            const std::vector<LayerContactStencil> stencils =
                layer_contact_stencils(m_contact_nodes, m_contact_top, static_cast<int>(node_total), segments, bends);
            m_stencils.assign(stencils.begin(), stencils.end());
        }
        m_host_segments = segments;
        m_host_bends = bends;
        m_host_springs = springs;
        m_host_pairs = pairs;
        m_host_fabric = fabric;
        m_parallel.assign(parallel.begin(), parallel.end());
        m_parallel_count = parallel.size();
        m_segments.assign(segments.begin(), segments.end());
        const std::vector<NodeSegments> at = yarn_stepper_detail::node_segment_lists(segments, node_total);
        m_node_segments.assign(at.begin(), at.end());
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

    /// The assembly map of the element lists (rebuild_elements) followed by
    /// the collision's contact pairs (4×4 blocks each, last).
    void build_with_contacts()
    {
        if (m_contacts.empty()) {
            this->build_assembly(m_base_blocks, m_base_vectors, m_base_entries);
            return;
        }
        std::vector<BlockCoordinate> blocks = m_base_blocks;
        std::vector<Index> vectors = m_base_vectors;
        append_contact_blocks(m_contacts, blocks, vectors);
        this->build_assembly(blocks, vectors, m_base_entries + m_contacts.size());
    }

    /// Collision: the segment pairs that may come within `reach` in a time τ
    /// (YarnContactFinder::find) become the contact elements; the assembly
    /// is rebuilt when they changed. The contact friction's load rates (its
    /// slip velocities, `contact_friction_rates`) are taken here, at the
    /// attempt's start, with the nodes' masses there.
    void refresh_contacts(T tau, T reach)
    {
        update_contacts(m_contact_finder.find(this->m_q, this->m_v, tau, reach));
        if (m_contacts.empty() || !(m_collision.friction > T(0))) {
            m_friction_rate.clear();
            return;
        }
        m_node_mass.resize(static_cast<std::size_t>(this->m_nodes));
        const auto first = thrust::counting_iterator<Index>(0);
        thrust::transform(thrust::device, first, first + this->m_nodes, m_node_mass.begin(),
                          yarn_stepper_detail::NodeMass<T>{this->raw(this->m_q), this->raw(m_segments),
                                                           this->raw(m_node_segments), m_material.linear_density});
        contact_friction_rates<T, B>(m_contacts, this->m_q, this->raw(m_node_mass), this->raw(this->m_free),
                                     m_collision, this->m_nodes, m_friction_rate, m_friction_scratch);
    }

    /// `found` becomes the contact elements; the assembly is rebuilt when
    /// the pairs changed, the evaluation invalidated when they or their
    /// offsets did.
    void update_contacts(thrust::device_vector<ClothContactElement<T>> found)
    {
        if (same_contacts(found, m_contacts)) {
            // The same pairs; between stacked layers their offsets follow the layers' normal.
            if (same_contact_offsets(found, m_contacts)) return;
            m_contacts.swap(found);
            this->invalidate_evaluation();
            return;
        }
        m_contacts.swap(found);
        build_with_contacts();
        this->invalidate_evaluation();
    }

    /// The stepper state that EIL tracking edits.
    EilState<T> eil_state() { return {this->m_q, this->m_v, m_anchors}; }

    /// Follows what EIL tracking changed: new element lists (uploaded and a
    /// new assembly map where they differ from the current ones), the filter,
    /// and after contacts left their yarns, the friction limits and the yarn
    /// lines of the new topology.
    void follow(const EilChanges& changes)
    {
        if (changes.topology) {
            const YarnModel<T>& model = m_tracker.topology();
            // (With no limits in the model, the contacts' limits come from their normal forces, set each attempt.)
            if (!model.friction_limit.empty())
                m_friction_limit.assign(model.friction_limit.begin(), model.friction_limit.end());
            m_lines = yarn_line_set(model);
        }
        if (changes.lists) {
            const EilElementLists& l = m_tracker.lists();
            using yarn_stepper_detail::same_elements;
            if (!(same_elements(l.segments, m_host_segments) && same_elements(l.bends, m_host_bends) &&
                  same_elements(l.springs, m_host_springs) && same_elements(l.pairs, m_host_pairs) &&
                  same_elements(l.fabric, m_host_fabric)))
                rebuild_elements(l.segments, l.bends, l.springs, l.pairs, l.fabric);
        }
        if (changes.filter) this->m_free.assign(m_tracker.free().begin(), m_tracker.free().end());
        if (changes.topology || changes.state) this->invalidate_evaluation();
    }

    /// The yarn stretch, bending and shear kernels honour NewtonInputs::exact_hessians.
    bool has_exact_hessians() const { return true; }
    /// They skip their PSD projections and stress clamps under NewtonInputs::forces_only.
    bool has_forces_only() const { return true; }
    /// The kinds of element in contribution order (rebuild_elements,
    /// build_with_contacts), for the per-term Jacobian check. "segments"
    /// holds stretch, its damping, gravity, the consistent mass and the
    /// parallel-yarn contact where the segments carry it; "nodes" the
    /// per-node terms (friction anchors, colliders, the layers' normal and
    /// friction forces); "contacts" the collision's pairs.
    std::vector<ContributionTerm> contribution_terms() const
    {
        return contribution_terms_of({{"segments", m_segment_count, 2},
                                      {"bends", m_bend_count, 3},
                                      {"shears", m_shear_count, 3},
                                      {"eil_springs", m_spring_count, 5},
                                      {"eil_pair_springs", m_pair_count, 9},
                                      {"parallel_pairs", m_parallel_count, 2},
                                      {"nodes", static_cast<std::size_t>(this->m_nodes), 1},
                                      {"contacts", m_contacts.size(), 4}});
    }

    /// Before every attempt at a (sub)step: the EoL/EIL assignment (EIL on).
    /// Collision: then the contact pairs of the attempt (pairs within 1.5
    /// thicknesses plus twice what they move relative to each other in the
    /// step, as triangle cloth's).
    void begin_attempt(T h)
    {
        if (m_tracker.enabled() || !m_contact_nodes.empty()) {
            const auto start = std::chrono::steady_clock::now();
            if (m_tracker.enabled()) follow(m_tracker.update(eil_state(), h));
            if (m_rebracketed) {
                // Brackets moved within the last attempt: the assignment's lists again.
                m_rebracketed = false;
                const EilElementLists& l = m_tracker.lists();
                if (!(yarn_stepper_detail::same_elements(l.springs, m_host_springs) &&
                      yarn_stepper_detail::same_elements(l.pairs, m_host_pairs)))
                    rebuild_elements(l.segments, l.bends, l.springs, l.pairs, l.fabric);
            }
            if (!m_contact_nodes.empty()) update_layer_contacts(h);
            m_peak_eil = std::max(m_peak_eil, m_tracker.count());
            m_assignment_seconds += stepper_detail::seconds_since(start);
        }
        if (m_collision.enabled) {
            const auto start = std::chrono::steady_clock::now();
            refresh_contacts(T(2) * h, T(1.5) * m_collision.thickness);
            m_collision_seconds += stepper_detail::seconds_since(start);
        }
    }

    /// Rejects a (sub)step in which an EoL segment collapsed (see
    /// `EilOptions::min_segment_factor`; with EIL off: inverted segments only,
    /// whose negative length means negative mass).
    bool accept_step(std::string& why)
    {
        // Collision: no contact pair may pass through each other.
        if (!m_contacts.empty()) {
            const auto start = std::chrono::steady_clock::now();
            const int passed = thrust::transform_reduce(
                thrust::device, m_contacts.begin(), m_contacts.end(),
                yarn_collision_detail::PassedThrough<T>{
                    this->raw(this->m_q), this->raw(this->attempt_start_positions()), B, m_collision.thickness},
                0, thrust::plus<int>{});
            m_collision_seconds += stepper_detail::seconds_since(start);
            if (passed > 0) {
                why = "collision: " + std::to_string(passed) + " yarn segment pair(s) passed through each other";
                return false;
            }
        }
        // Two crossings of one fabric never pass each other on a yarn (their
        // parallel-yarn contact keeps them apart; a pass dissolves the weave):
        // a step that inverts such a pair where it is not a segment is halved.
        // (Only with parallel-yarn contact: contacts of crossing rods with no
        // such contact may pass each other, thesis Fig. 4.2.)
        if (m_parallel_count > 0) {
            const int passed = thrust::transform_reduce(
                thrust::device, m_parallel.begin(), m_parallel.end(),
                yarn_stepper_detail::PassedPair<T>{this->raw(this->m_q), this->raw(this->attempt_start_positions())}, 0,
                thrust::plus<int>{});
            if (passed > 0) {
                why = std::to_string(passed) +
                      " pair(s) of consecutive crossings of one fabric passed each other "
                      "on a yarn within the step";
                return false;
            }
        }
        if (m_segment_count == 0) return true;
        const bool eil = m_tracker.enabled();
        const T floor = eil ? m_tracker.safety_distance() : T(0);
        const T factor = eil ? m_tracker.options().min_segment_factor : T(0);
        const int collapsed = thrust::transform_reduce(
            thrust::device, m_segments.begin(), m_segments.end(),
            yarn_stepper_detail::CollapsedSegment<T>{this->raw(this->m_q), this->raw(this->attempt_start_positions()),
                                                     floor, factor},
            0, thrust::plus<int>{});
        if (collapsed == 0) return true;
        if (eil) {
            // Trial-step look-ahead: the later node of each collapsed segment
            // counts as within the safety distance when the step is redone.
            const std::vector<T> q = to_host(this->m_q);
            const std::vector<T> q0 = to_host(this->attempt_start_positions());
            const yarn_stepper_detail::CollapsedSegment<T> test{q.data(), q0.data(), floor, factor};
            if (m_tracker.flag_collapsed(m_host_segments, test)) m_retry = true;
        }
        why = std::to_string(collapsed) + " EoL segment(s) collapsed within the step (arc-length span";
        why +=
            eil ? " below " + std::to_string(static_cast<double>(factor)) + " x min(EIL safety distance, start span))"
                : " inverted; EIL nodes (solver.eil) keep sliding contacts apart)";
        return false;
    }

    /// Full Newton: nodes resting on a collider keep their depth in the
    /// predictor (ImplicitStepper::collider_predictor).
    void adjust_predictor(T h) { this->collider_predictor(h, m_colliders, m_radius); }
    void adjust_update(T h) { this->collider_onset_correction(h, m_colliders, m_radius); }

    /// Full Newton: the largest update fraction that inverts no EoL segment
    /// and keeps every EIL node inside the EoL segments its spring may
    /// interpolate on (FeasibleFraction; each difference may lose at most
    /// 90 % of itself per Newton update), carries no yarn contact pair more
    /// than half the thickness into contact (ContactOnsetFraction), and no
    /// node deep into a collider (collider_step_bound).
    T feasible_step_fraction(T h, const thrust::device_vector<T>& dv)
    {
        const yarn_stepper_detail::FeasibleFraction<T> bound{this->raw(this->m_q), this->raw(dv), h, T(0.1)};
        const stepper_detail::Minimum<T> lowest;
        T alpha = thrust::transform_reduce(thrust::device, m_segments.begin(), m_segments.end(), bound, T(1), lowest);
        if (m_spring_count > 0)
            alpha = lowest(alpha, thrust::transform_reduce(thrust::device, m_springs.begin(), m_springs.end(), bound,
                                                           T(1), lowest));
        if (m_pair_count > 0)
            alpha = lowest(
                alpha, thrust::transform_reduce(thrust::device, m_pairs.begin(), m_pairs.end(), bound, T(1), lowest));
        alpha = lowest(alpha, contact_onset_bound<T, B>(this->m_q, dv, h, m_contacts, m_collision.thickness));
        return lowest(alpha, this->collider_step_bound(h, dv, m_colliders, m_radius));
    }

    /// Full Newton, after each accepted update: an EIL node that the update
    /// carried past an EoL node of its bracket (into the neighbouring segment
    /// that its spring's stencil covers, EilSpring) gets the bracket it now
    /// lies in, with that bracket's neighbouring segments as its new outer
    /// ones. Either bracket interpolates on the same EoL polyline of the
    /// yarn; full Newton rounds its corners at the bracket's ends
    /// (docs/scenes.md, "Rounded EIL corners in full Newton"), so the
    /// potential changes only where the node lies within the rounding
    /// window of the new bracket's far end. What changes is how far the next
    /// update may carry the node (FeasibleFraction). Without it, a node that
    /// slides past more than one EoL node within a step stalls Newton at that
    /// bound (each update closes 90 % of the rest of the gap, so the step
    /// fraction falls tenfold per iteration): EoL nodes do not pass each
    /// other within a step, and otherwise only the next assignment moves
    /// brackets. Each attempt starts from the assignment's lists whether or
    /// not brackets moved in the one before (begin_attempt), so a resumed
    /// run equals an uninterrupted one.
    bool rebracket_within_step()
    {
        if (!m_tracker.enabled() || (m_spring_count == 0 && m_pair_count == 0)) return false;
        const yarn_stepper_detail::OutsideBracket<T> outside{this->raw(this->m_q)};
        int count = 0;
        if (m_spring_count > 0)
            count += thrust::transform_reduce(thrust::device, m_springs.begin(), m_springs.end(), outside, 0,
                                              thrust::plus<int>{});
        if (m_pair_count > 0)
            count += thrust::transform_reduce(thrust::device, m_pairs.begin(), m_pairs.end(), outside, 0,
                                              thrust::plus<int>{});
        if (count == 0) return false;
        const std::vector<T> q = to_host(this->m_q);
        // The EoL chain of each yarn: consecutive EoL nodes are the segments' ends.
        const std::size_t nodes = static_cast<std::size_t>(this->m_nodes);
        std::vector<int> next(2 * nodes, -1), prev(2 * nodes, -1);
        for (const YarnSegment& g : m_host_segments) {
            const std::size_t c = static_cast<std::size_t>(g.coordinate - 3);
            next[2 * static_cast<std::size_t>(g.node0) + c] = g.node1;
            prev[2 * static_cast<std::size_t>(g.node1) + c] = g.node0;
        }
        // Moves (before, after) along the chain to the EoL segment holding the
        // node's arc length (or the chain's end segment); returns whether it moved.
        const auto follow_node = [&](int node, int& before, int& after, int& outer_before, int& outer_after,
                                     int coordinate) {
            const std::size_t c = static_cast<std::size_t>(coordinate - 3);
            const auto arc = [&](int n) { return q[yarn_stepper_detail::dof_index(n, coordinate)]; };
            const auto link = [&](const std::vector<int>& chain, int n) {
                return chain[2 * static_cast<std::size_t>(n) + c];
            };
            const T s = arc(node);
            const int before0 = before, after0 = after;
            while (s > arc(after) && link(next, after) >= 0) {
                before = after;
                after = link(next, after);
            }
            while (s < arc(before) && link(prev, before) >= 0) {
                after = before;
                before = link(prev, before);
            }
            outer_before = link(prev, before);
            outer_after = link(next, after);
            return before != before0 || after != after0;
        };
        std::vector<EilSpring> springs = m_host_springs;
        std::vector<EilPairSpring> pairs = m_host_pairs;
        bool moved = false;
        for (EilSpring& e : springs)
            moved = follow_node(e.node, e.before, e.after, e.outer_before, e.outer_after, e.coordinate) || moved;
        for (EilPairSpring& p : pairs)
            for (int i = 0; i < 2; ++i)
                moved =
                    follow_node(p.node, p.before[i], p.after[i], p.outer_before[i], p.outer_after[i], 3 + i) || moved;
        if (!moved) return false;
        rebuild_elements(m_host_segments, m_host_bends, springs, pairs, m_host_fabric);
        m_rebracketed = true;
        return true;
    }

    /// Redo a rejected attempt at the same size when collapsed segments
    /// changed the assignment's input (see accept_step).
    bool retry_attempt()
    {
        const bool retry = m_retry;
        m_retry = false;
        return retry;
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
                           m_tracker.contact_stiffness(),
                           m_external_contact.empty() ? nullptr : this->raw(m_external_contact),
                           m_segment_parallel,
                           this->raw(m_segments),
                           this->raw(m_node_segments),
                           m_collision,
                           m_friction_rate.empty() ? nullptr : this->raw(m_friction_rate),
                           out};
        const auto first = thrust::counting_iterator<Index>(0);
        const std::size_t seg_m = 4 * m_segment_count;
        const std::size_t seg_v = 2 * m_segment_count;
        const std::size_t bend_m = seg_m + 9 * m_bend_count;
        const std::size_t bend_v = seg_v + 3 * m_bend_count;
        const std::size_t shear_m = bend_m + 9 * m_shear_count;
        const std::size_t shear_v = bend_v + 3 * m_shear_count;
        const std::size_t spring_m = shear_m + 25 * m_spring_count;
        const std::size_t spring_v = shear_v + 5 * m_spring_count;
        const std::size_t pair_m = spring_m + 81 * m_pair_count;
        const std::size_t pair_v = spring_v + 9 * m_pair_count;
        const std::size_t parallel_m = pair_m + 4 * m_parallel_count;
        const std::size_t parallel_v = pair_v + 2 * m_parallel_count;
        const std::size_t shear_e = m_segment_count + m_bend_count + m_shear_count;
        const std::size_t pair_e = shear_e + m_spring_count + m_pair_count;
        thrust::for_each(thrust::device, first, first + static_cast<Index>(m_segment_count),
                         ElementKernel<T, YarnSegment, 2>{in, this->raw(m_segments), 0, 0, 0});
        thrust::for_each(thrust::device, first, first + static_cast<Index>(m_bend_count),
                         ElementKernel<T, YarnBend, 3>{in, this->raw(m_bends), seg_m, seg_v, m_segment_count});
        thrust::for_each(
            thrust::device, first, first + static_cast<Index>(m_shear_count),
            ElementKernel<T, YarnShear, 3>{in, this->raw(m_shears), bend_m, bend_v, m_segment_count + m_bend_count});
        if (m_spring_count > 0)
            thrust::for_each(thrust::device, first, first + static_cast<Index>(m_spring_count),
                             ElementKernel<T, EilSpring, 5>{in, this->raw(m_springs), shear_m, shear_v, shear_e});
        if (m_pair_count > 0)
            thrust::for_each(thrust::device, first, first + static_cast<Index>(m_pair_count),
                             ElementKernel<T, EilPairSpring, 9>{in, this->raw(m_pairs), spring_m, spring_v,
                                                                shear_e + m_spring_count});
        if (m_parallel_count > 0)
            thrust::for_each(thrust::device, first, first + static_cast<Index>(m_parallel_count),
                             ElementKernel<T, YarnParallelPair, 2>{in, this->raw(m_parallel), pair_m, pair_v, pair_e});
        thrust::for_each(thrust::device, first, first + this->m_nodes,
                         NodeKernel<T>{in, parallel_m, parallel_v, pair_e + m_parallel_count});
        if (!m_contacts.empty()) {
            const std::size_t nodes = static_cast<std::size_t>(this->m_nodes);
            thrust::for_each(
                thrust::device, first, first + static_cast<Index>(m_contacts.size()),
                ElementKernel<T, ClothContactElement<T>, 4>{in, this->raw(m_contacts), parallel_m + nodes,
                                                            parallel_v + nodes, pair_e + m_parallel_count + nodes});
        }
    }

    void after_step()
    {
        const bool full_newton = this->options().newton_iterations > 1;
        thrust::for_each(
            thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(this->m_nodes),
            yarn_stepper_detail::DragAnchors<T>{
                this->raw(this->m_q), this->raw(m_anchors), friction_limit(), m_material, this->raw(this->m_v),
                this->raw(this->force()), this->raw(this->attempt_start_velocities()),
                full_newton ? this->raw(this->attempt_start_positions()) : nullptr, this->raw(m_segments),
                this->raw(m_node_segments), this->attempt_step_size()});
    }
    const T* friction_limit() const { return m_friction_limit.empty() ? nullptr : this->raw(m_friction_limit); }

    /// The yarn state of a checkpoint (ImplicitStepper::save_state): the
    /// friction anchors and limits, the contacts between layers, and the EIL
    /// tracker's state, from which the element lists are rebuilt on loading.
    template <class Self, class Archive>
    static void state_fields(Self& self, Archive& a)
    {
        a("anchors", self.m_anchors);
        a("friction_limit", self.m_friction_limit);
        a("contact_nodes", self.m_contact_nodes);
        a("contact_top", self.m_contact_top);
        a("layer_mu", self.m_layer_mu);
        a("exchange_force", self.m_exchange_force);
        a("exchange_scale", self.m_exchange_scale);
        a("normal_force", self.m_normal_force);
        a("contact_state", self.m_contact_state);
        a("pulled", self.m_pulled);
        a("external_contact", self.m_external_contact);
        a("retry", self.m_retry);
        a("assembly_builds", self.m_assembly_builds);
        // Added with collision's create_contacts; a checkpoint written before
        // lacks them and starts from the constructed values: the model's own
        // segments, no touching counts and no contacts made.
        a.optional("initial_segments", self.m_initial_segments);
        a.optional("meeting", self.m_meeting);
        a.optional("created", self.m_created);
        a.optional("declined", self.m_declined);
        Archive tracker = a.nested("eil");
        EilTracker<T>::state_fields(self.m_tracker, tracker);
    }
    template <class Writer>
    void save_extra_state(Writer& out) const
    {
        StateSaver<Writer> a(out, "yarn.");
        state_fields(*this, a);
    }
    template <class Reader>
    void load_extra_state(const Reader& in)
    {
        StateLoader<Reader> a(in, "yarn.");
        state_fields(*this, a);
        if (m_tracker.enabled()) {
            // The element lists, stencils, yarn lines and assembly of the
            // loaded topology, as `follow` makes them after a change.
            // Contacts made during the run: the collision's layer places of the loaded lists.
            if (m_collision.create_contacts) m_contact_finder.set_layers(m_tracker.topology());
            const int builds = m_assembly_builds;
            const EilElementLists& l = m_tracker.lists();
            rebuild_elements(l.segments, l.bends, l.springs, l.pairs, l.fabric);
            m_assembly_builds = builds;
            m_lines = yarn_line_set(m_tracker.topology());
        }
        m_anchors_saved = m_anchors;
        m_anchors_step = m_anchors;
        // Collision: the contact pairs of the loaded state (the next attempt refreshes them again).
        if (m_collision.enabled) refresh_contacts(T(0), m_collision.thickness);
        this->invalidate_evaluation();
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
    std::size_t m_spring_count = 0;
    std::size_t m_pair_count = 0;
    std::size_t m_parallel_count = 0;  ///< parallel-yarn pairs evaluated on their own (0: on the segments)
    bool m_segment_parallel = true;    ///< parallel-yarn contact on the stretch segments
    bool m_lists_known = false;        ///< the model has yarn lists (fabric pairs can be formed)
    int m_assembly_builds = 0;

    thrust::device_vector<T> m_anchors, m_anchors_saved, m_anchors_step;
    thrust::device_vector<T> m_friction_limit;
    std::vector<int> m_contact_nodes;  ///< contacts between layers with YarnModel::layer_friction ≥ 0
    std::vector<int> m_contact_top;    ///< their top yarn's coordinate (3 or 4)
    thrust::device_vector<T> m_layer_mu, m_exchange_force, m_exchange_scale, m_normal_force;
    thrust::device_vector<int> m_contact_state;
    thrust::device_vector<LayerContactStencil> m_stencils;
    int m_pulled = 0;
    thrust::device_vector<std::uint8_t> m_external_contact;  ///< per node, empty: none  ///< empty: the material's μF_n
    thrust::device_vector<YarnSegment> m_segments;
    thrust::device_vector<NodeSegments> m_node_segments;  ///< per node, from m_segments
    thrust::device_vector<YarnBend> m_bends;
    thrust::device_vector<YarnShear> m_shears;
    thrust::device_vector<EilSpring> m_springs;
    thrust::device_vector<EilPairSpring> m_pairs;
    thrust::device_vector<YarnParallelPair> m_parallel;
    thrust::device_vector<Collider<T>> m_colliders;
    LineSet m_lines;  ///< warp and weft yarns, for the yarn-line preconditioners

    // Host copies of the element lists (compared with each new assignment).
    std::vector<YarnSegment> m_host_segments;
    std::vector<YarnBend> m_host_bends;
    std::vector<YarnShear> m_host_shears;
    std::vector<EilSpring> m_host_springs;
    std::vector<EilPairSpring> m_host_pairs;
    std::vector<YarnParallelPair> m_host_fabric;  ///< every fabric pair of the last list (see rebuild_elements)

    // The assembly's element lists before the contact pairs (rebuild_elements).
    std::vector<BlockCoordinate> m_base_blocks;
    std::vector<Index> m_base_vectors;
    std::size_t m_base_entries = 0;

    // Collision (YarnModel::collision): the finder, the contact pairs of the
    // current attempt, the nodes' masses at its start, the model's initial
    // segments (their links exclude pairs) and the time spent.
    ClothCollision<T> m_collision;
    YarnContactFinder<T> m_contact_finder;
    thrust::device_vector<ClothContactElement<T>> m_contacts;
    thrust::device_vector<T> m_node_mass;       ///< collision friction: at the attempt's start
    thrust::device_vector<T> m_friction_rate;   ///< contact_friction_rates, at the attempt's start; empty: none
    FrictionRateScratch<T> m_friction_scratch;  ///< contact_friction_rates' working storage
    std::vector<YarnSegment> m_initial_segments;
    /// create_contacts: the segment pairs of neighbouring layers that touched
    /// at the start of the last steps, (4 nodes, consecutive steps) each.
    std::vector<int> m_meeting;
    int m_created = 0, m_declined = 0;  ///< contacts made, and made but taken off at once (pulling)
    double m_collision_seconds = 0;

    // EIL tracking (thesis Sec. 4.2–4.4); does nothing with EIL off.
    EilTracker<T> m_tracker;
    bool m_retry = false;             ///< the last rejected attempt changed the assignment input
    bool m_rebracketed = false;       ///< rebracket_within_step moved brackets since the last assignment
    int m_peak_eil = 0;               ///< largest EIL count over the substeps of a step
    double m_assignment_seconds = 0;  ///< assignment time of the current step
};

template <typename T>
YarnStepper<T>::YarnStepper(const YarnModel<T>& model, const std::vector<Collider<T>>& colliders,
                            const Vec3<T>& gravity, const YarnStepperOptions<T>& options, const EilOptions<T>& eil)
    : Base(validated(model, options).q, model.v, model.free_dof, options),
      m_material(model.material),
      m_gravity(gravity),
      m_radius(model.radius),
      m_tracker(model, eil, model.material.stretch_stiffness)
{
    m_anchors.assign(model.anchors.begin(), model.anchors.end());
    m_friction_limit.assign(model.friction_limit.begin(), model.friction_limit.end());
    const std::vector<unsigned char> external = external_contact_flags(model);
    m_external_contact.assign(external.begin(), external.end());
    m_host_shears = model.shears;
    for (const Collider<T>& c : colliders)
        require_valid_collider(c);  // the factories' checks, for colliders built by hand
    m_colliders.assign(colliders.begin(), colliders.end());
    // Without yarn lists (a model built from segments alone) parallel-yarn
    // contact stays on the segments.
    m_lists_known = has_yarn_lists(model);
    setup_layer_contacts(model);
    m_collision = model.collision;
    if (m_collision.enabled) {
        validate_yarn_collision(model);
        m_initial_segments = model.segments;
        m_contact_finder = YarnContactFinder<T>(model.node_count(), yarn_collision_cell(model), m_collision.thickness);
        m_contact_finder.set_layers(model);
        m_contact_finder.set_parallel_angle(m_collision.parallel_angle);
    }
    if (m_collision.enabled && m_collision.create_contacts) {
        if (!m_tracker.enabled())
            throw InvalidInput(
                "invalid collision.create_contacts: true needs EIL nodes (solver.eil.enabled), which let the contacts "
                "made slide past the yarns' crossings");
        if (m_contact_nodes.empty())
            throw InvalidInput(
                "invalid collision.create_contacts: true needs stacked layers whose contacts take their friction from "
                "their normal force (YarnModel::layer_friction >= 0; in scenes a cloth's on_top_of with "
                "layer_friction): contacts are made by putting removed ones back");
    } else {
        m_collision.create_contacts = false;
    }
    rebuild_elements(model.segments, model.bends, {}, {}, fabric_pairs(model));
    m_lines = yarn_line_set(model);
    if (m_collision.enabled) refresh_contacts(T(0), m_collision.thickness);
}

template <typename T>
YarnStepReport YarnStepper<T>::step(T h)
{
    m_assignment_seconds = 0;
    m_peak_eil = 0;
    const int detached_before = m_tracker.detached();
    const int resets_before = m_tracker.resets();
    const int pulled_before = m_pulled;
    m_tracker.begin_step();
    YarnStepReport report;
    if (m_collision.create_contacts) {
        const auto start = std::chrono::steady_clock::now();
        report.created_contacts = make_layer_contacts(h);
        m_collision_seconds += stepper_detail::seconds_since(start);
    }
    m_anchors_step = m_anchors;
    static_cast<BackendStepReport&>(report) = Base::step(h);
    if (!report.ok) m_anchors = m_anchors_step;  // q and v are restored by the base
    report.eil_nodes = m_peak_eil;
    report.detached_contacts = m_tracker.detached() - detached_before;
    report.arc_length_resets = m_tracker.resets() - resets_before;
    report.pulled_contacts = m_pulled - pulled_before;
    report.assembly_seconds += m_assignment_seconds;
    return report;
}

#if defined(WEFT_PRECOMPILED_STEPPERS) && THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
// Compiled once into weft::omp_steppers (CMake option WEFT_PRECOMPILED,
// src/omp_yarn_stepper.cpp): a program that links it does not instantiate
// the stepper's step and constructor again (they are defined out of the class
// body above for this reason; members defined in the class are inline and
// may still be instantiated where they are called).
extern template class ImplicitStepper<double, yarn_node_dofs, YarnStepper<double>>;
extern template class YarnStepper<double>;
#endif

}  // namespace weft
