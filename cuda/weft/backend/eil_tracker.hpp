#pragma once
/// @file eil_tracker.hpp
/// EIL tracking for the yarn stepper (thesis Sec. 4.2–4.4), one source for
/// CUDA and OpenMP threads: which node of each yarn is EoL and which is EIL
/// at every (sub)step, the element lists that assignment implies, and the
/// contacts that leave their yarns.
///
/// `EilTracker` owns the yarn lists as they change during a run (the
/// topology after contacts left), the slot layout of the assignment on the
/// device and its host mirror. The stepper drives it through four calls:
/// - `begin_step` before a step (clears the look-ahead flags of the last one);
/// - `update` before every attempt at a (sub)step: contacts whose arc length
///   left their yarn are taken off (thesis Sec. 4.4), each yarn's nodes are
///   sorted and tagged on the device (thesis Sec. 4.3.1, one thread per
///   yarn), and, only when the order or a tag changed, the host rebuilds the
///   element lists (thesis Sec. 4.3.2), the filter of doubly EIL nodes
///   (thesis Sec. 4.3.3) and places nodes that stopped being doubly EIL;
///   doubly EIL nodes are then placed on their u-yarn's interpolation
///   (thesis Eq. 4.3);
/// - `remove` takes given contacts off their yarns (e.g. those whose normal
///   force pulls, thesis Sec. 4.4, Fig. 4.7);
/// - `flag_collapsed` after a rejected attempt: the later node of each
///   collapsed EoL segment counts as within the safety distance when the
///   attempt is redone (our trial-step look-ahead, docs/scenes.md).
/// Each call edits the state it is given (q, v, anchors) in place and says
/// what it changed (`EilChanges`); the stepper follows: new element lists,
/// filter, friction limits and yarn lines.

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <weft/backend/vector_ops.hpp>
#include <weft/core/error.hpp>
#include <weft/element/eil_elements.hpp>
#include <weft/element/eil_terms.hpp>
#include <weft/model/eil_assignment.hpp>
#include <weft/model/layers.hpp>
#include <weft/model/yarn_model.hpp>

namespace weft {

/// EIL nodes in the yarn stepper (thesis Sec. 4.2–4.3); off by default.
template <typename T>
struct EilOptions {
    bool enabled = false;
    T safety_factor = T(0.1);      ///< safety distance = factor × rest segment length (thesis Sec. 4.3.1)
    T contact_factor = T(1000);    ///< spring k = factor × k_s / rest segment length (thesis Sec. 4.3.2)
    T rest_segment_length = T(0);  ///< Δu of rest-shape segments (m); 0: the mean |Δs| of the model's segments
    /// Tag a node EIL also when the gap predicted one step ahead at the current
    /// ṡ is below the safety distance (our addition, see assign_eil_yarn).
    bool lookahead = true;
    /// A step that leaves an EoL segment shorter than this factor × min(safety
    /// distance, its length at the start of the step) is rejected (and halved,
    /// with a new assignment per substep): its nodes slid past each other.
    T min_segment_factor = T(0.25);
    /// On switching from EIL back to EoL, reset the node's arc length by
    /// thesis Eq. (4.4), so that stretch is uniform across it (the optional
    /// closed-form reset of thesis Sec. 4.3.1; the thesis keeps s in
    /// practice, and so does the default).
    bool reset_on_eol = false;
    /// Remove a contact between two layers (YarnModel::layer_friction ≥ 0)
    /// from both its yarns when its normal force pulls the layers together
    /// (N < 0; thesis Sec. 4.4, Fig. 4.7). Where they meet again, collision
    /// keeps them apart, and with its `create_contacts` makes a contact again
    /// (`attach`).
    bool remove_pulling_contacts = true;
    /// A contact counts as pulling when N < −pull_threshold × the magnitude
    /// of the forces its normal force balances (the sum of the magnitudes of
    /// its terms, layer_contact_normal_force, largest over the contact and
    /// its partners); at least 10⁻⁹ (round-off).
    T pull_threshold = T(1e-3);
};
namespace eil_tracker_detail {

constexpr int B = yarn_node_dofs;

/// Places node n's x and ẋ on the interpolation (thesis Eq. 4.3) between
/// the EoL nodes a and b of its yarn with arc-length coordinate c, and its
/// rate ẋ = J (ẋ_a, ṡ_a, ẋ_b, ṡ_b, ṡ).
template <typename T>
WEFT_HD inline Vec<T, 9> interpolation_stack(const T* q, int n, int a, int b, int c)
{
    const std::size_t in = B * static_cast<std::size_t>(n);
    const std::size_t ia = B * static_cast<std::size_t>(a);
    const std::size_t ib = B * static_cast<std::size_t>(b);
    const std::size_t ic = static_cast<std::size_t>(c);
    Vec<T, 9> s;
    s << q[ia], q[ia + 1], q[ia + 2], q[ia + ic], q[ib], q[ib + 1], q[ib + 2], q[ib + ic], q[in + ic];
    return s;
}
template <typename T>
WEFT_HD inline void place_on_interpolation(T* q, T* v, int n, int a, int b, int c)
{
    const std::size_t in = B * static_cast<std::size_t>(n);
    const EilInterpolation<T> x = eil_interpolation<T>(interpolation_stack<T>(q, n, a, b, c));
    const Vec3<T> xv = x.jacobian * interpolation_stack<T>(v, n, a, b, c);
    for (int k = 0; k < 3; ++k) {
        q[in + k] = x.position(k);
        v[in + k] = xv(k);
    }
}

/// A doubly EIL node on its u-yarn's interpolation (one thread per pair).
template <typename T>
struct PlacePairNode {
    T* q;
    T* v;
    WEFT_HD void operator()(const EilPairSpring& p) const
    {
        place_on_interpolation<T>(q, v, p.node, p.before[0], p.after[0], 3);
    }
};

/// Device pointers of the EIL slot layout (see EilAssignment): every slot
/// of the model, with the yarns' offsets and coordinates.
template <typename T>
struct EilDeviceSlots {
    const int* yarn_begin;
    const int* coordinate;
    EilYarnSlots<T> all;
    EilYarnSummary* summary;
    T* arc_length;         ///< = all.arc_length, writable: gathered from q per step
    T* arc_rate;           ///< = all.arc_rate, gathered from v
    unsigned char* fixed;  ///< = all.fixed

    WEFT_HD EilYarnSlots<T> yarn(int y) const { return slot_range(all, yarn_begin[y], yarn_begin[y + 1]); }
};

/// One yarn's assignment (thesis Sec. 4.3.1): gathers its arc lengths, ṡ and
/// fixed flags from the state, then sorts and tags (assign_eil_yarn).
template <typename T>
struct AssignYarn {
    EilDeviceSlots<T> slots;
    const T* q;
    const T* v;
    const std::uint8_t* base_free;
    const int* node_yarns;
    T safety;
    T lookahead;
    WEFT_HD void operator()(int y) const
    {
        for (int k = slots.yarn_begin[y]; k < slots.yarn_begin[y + 1]; ++k) {
            const std::size_t n = static_cast<std::size_t>(slots.all.node[k]);
            const std::size_t i = B * n + static_cast<std::size_t>(slots.coordinate[k]);
            slots.arc_length[k] = q[i];
            slots.arc_rate[k] = v[i];
            // A node on one yarn only has no contact partner: it stays EoL.
            slots.fixed[k] = (!base_free[i] || node_yarns[n] < 2) ? 1 : 0;
        }
        slots.summary[y] = assign_eil_yarn<T>(slots.yarn(y), safety, lookahead);
    }
};

/// Slots of yarn y (slots [yarn_begin[y], yarn_begin[y+1]) of `node`,
/// `coordinate`) whose node lies on two yarns and whose free arc length is
/// outside the range of the yarn's fixed nodes: it left the yarn (thesis
/// Sec. 4.4). Marks them in `departed` (per slot, if not null) and returns
/// their number; 0 for a yarn with fewer than two fixed nodes. Shared by the
/// device test of every step and the host detach.
template <typename T>
WEFT_HD inline int departed_slots(int y, const int* yarn_begin, const int* node, const int* coordinate, const T* q,
                                  const std::uint8_t* base_free, const int* node_yarns, unsigned char* departed)
{
    T lo = T(0), hi = T(0);
    int fixed = 0;
    for (int k = yarn_begin[y]; k < yarn_begin[y + 1]; ++k) {
        const std::size_t i = B * static_cast<std::size_t>(node[k]) + static_cast<std::size_t>(coordinate[k]);
        if (base_free[i]) continue;
        lo = (fixed == 0 || q[i] < lo) ? q[i] : lo;
        hi = (fixed == 0 || q[i] > hi) ? q[i] : hi;
        ++fixed;
    }
    if (fixed < 2) return 0;
    int count = 0;
    for (int k = yarn_begin[y]; k < yarn_begin[y + 1]; ++k) {
        const std::size_t n = static_cast<std::size_t>(node[k]);
        const std::size_t i = B * n + static_cast<std::size_t>(coordinate[k]);
        const bool left = base_free[i] && node_yarns[n] >= 2 && (q[i] < lo || q[i] > hi);
        if (departed) departed[k] = left ? 1 : 0;
        count += left ? 1 : 0;
    }
    return count;
}

/// Per yarn, the number of nodes that left it (departed_slots).
template <typename T>
struct DepartedOnYarn {
    EilDeviceSlots<T> slots;
    const T* q;
    const std::uint8_t* base_free;
    const int* node_yarns;
    WEFT_HD int operator()(int y) const
    {
        return departed_slots<T>(y, slots.yarn_begin, slots.all.node, slots.coordinate, q, base_free, node_yarns,
                                 nullptr);
    }
};

struct SummaryEilCount {
    WEFT_HD int operator()(const EilYarnSummary& s) const { return s.eil_count; }
};

/// 1 where a slot's sorted node or tag differs from the last rebuild's.
struct SlotChanged {
    const int* sorted_node;
    const unsigned char* eil;
    const int* previous_sorted;
    const unsigned char* previous_eil;
    WEFT_HD int operator()(int k) const
    {
        return (sorted_node[k] != previous_sorted[k] || eil[k] != previous_eil[k]) ? 1 : 0;
    }
};
}  // namespace eil_tracker_detail

/// The element lists of one EoL/EIL assignment (thesis Sec. 4.3.2): stretch
/// segments and bends over consecutive EoL nodes, one contact spring per EIL
/// node (the EIL–EIL spring for a node EIL on both yarns), and the
/// parallel-yarn pairs of consecutive crossings of one fabric.
struct EilElementLists {
    std::vector<YarnSegment> segments;
    std::vector<YarnBend> bends;
    std::vector<EilSpring> springs;
    std::vector<EilPairSpring> pairs;
    std::vector<YarnParallelPair> fabric;
};

/// The stepper state that EIL tracking reads and edits in place.
template <typename T>
struct EilState {
    thrust::device_vector<T>& q;
    thrust::device_vector<T>& v;
    thrust::device_vector<T>& anchors;
};

/// What a call of EilTracker changed, for the stepper to follow.
struct EilChanges {
    bool topology = false;  ///< nodes left yarns: topology() changed (yarn lists, filter, friction limits)
    bool lists = false;     ///< lists() hold the element lists of a new assignment
    bool filter = false;    ///< free() changed
    bool state = false;     ///< q, v or anchors changed

    EilChanges& operator|=(const EilChanges& o)
    {
        topology = topology || o.topology;
        lists = lists || o.lists;
        filter = filter || o.filter;
        state = state || o.state;
        return *this;
    }
};

/// Whether fabric pairs can be formed: the model has yarn lists.
template <typename T>
bool has_yarn_lists(const YarnModel<T>& model)
{
    return !model.yarns.empty() && model.yarn_coordinate.size() == model.yarns.size();
}

/// Per node, 1 for a contact with another fabric (YarnModel::external_contact; empty: none).
template <typename T>
std::vector<unsigned char> external_contact_flags(const YarnModel<T>& model)
{
    if (model.external_contact.empty()) return {};
    std::vector<unsigned char> external(static_cast<std::size_t>(model.node_count()), 0);
    for (std::size_t n = 0; n < external.size() && n < model.external_contact.size(); ++n)
        external[n] = model.external_contact[n] ? 1 : 0;
    return external;
}

/// EIL tracking of a yarn model (see the file comment).
/// The members of a YarnModel for checkpoints (state_archive.hpp); the
/// material and radius stay those of the scene.
template <class Model, class Archive>
void yarn_model_state_fields(Model& m, Archive& a)
{
    a("q", m.q);
    a("v", m.v);
    a("free_dof", m.free_dof);
    a("segments", m.segments);
    a("bends", m.bends);
    a("shears", m.shears);
    a("yarns", m.yarns);
    a("yarn_coordinate", m.yarn_coordinate);
    a("anchors", m.anchors);
    a("over", m.over);
    a("friction_limit", m.friction_limit);
    a("external_contact", m.external_contact);
    a("layer_friction", m.layer_friction);
}

template <typename T>
class EilTracker {
    static constexpr int B = yarn_node_dofs;

public:
    /// Tracking off (EilOptions::enabled false): no call changes anything.
    EilTracker() = default;

    /// @param[in] model              topology and initial state
    /// @param[in] options            EIL options (tracking off unless `enabled`)
    /// @param[in] stretch_stiffness  k_s of the material, for the contact spring (thesis Sec. 4.3.2)
    /// @throws InvalidInput for invalid options or a model with no segments to take a rest length from
    EilTracker(const YarnModel<T>& model, const EilOptions<T>& options, T stretch_stiffness) : m_options(options)
    {
        if (!m_options.enabled) return;
        T rest = m_options.rest_segment_length;
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
        if (!(m_options.min_segment_factor >= T(0) && m_options.min_segment_factor < T(1)))
            throw InvalidInput(
                detail::describe("EilOptions min_segment_factor", m_options.min_segment_factor, "must be in [0, 1)"));
        m_safety = weft::eil_safety_distance<T>(rest, m_options.safety_factor);
        m_stiffness = weft::eil_contact_stiffness<T>(stretch_stiffness, rest, m_options.contact_factor);
        m_lists_known = has_yarn_lists(model);
        m_external = external_contact_flags(model);
        m_topology = model;
        m_free_now = model.free_dof;
        make_layout();
    }

    bool enabled() const { return m_options.enabled; }
    const EilOptions<T>& options() const { return m_options; }
    /// The safety distance and contact-spring stiffness in use (0 with tracking off).
    T safety_distance() const { return m_safety; }
    T contact_stiffness() const { return m_stiffness; }
    /// EIL (yarn, node) pairs of the last assignment.
    int count() const { return m_count; }
    /// Nodes taken off a yarn because their arc length left it, and
    /// arc-length resets (EilOptions::reset_on_eol), since construction.
    int detached() const { return m_detached; }
    int resets() const { return m_resets; }
    /// Yarn lists, filter, anchors and friction limits after the contacts
    /// that left (an empty model with tracking off).
    const YarnModel<T>& topology() const { return m_topology; }
    /// The last assignment (host; empty with tracking off).
    const EilAssignment<T>& assignment() const
    {
        if (m_options.enabled) download_assignment();
        return m_assignment;
    }
    /// The element lists of the last list rebuild.
    const EilElementLists& lists() const { return m_lists; }
    /// The filter in use: the topology's, with the x DoFs of doubly EIL nodes removed.
    const std::vector<unsigned char>& free() const { return m_free_now; }

    /// Before a step: the look-ahead flags of the last step's rejected attempts no longer apply.
    void begin_step()
    {
        if (!m_close_set) return;
        std::fill(m_assignment.close.begin(), m_assignment.close.end(), static_cast<unsigned char>(0));
        m_close_set = false;
        m_close_dirty = true;
    }

    /// Before every attempt at a (sub)step (thesis Sec. 4.3.1: before the
    /// first Newton step of a solve): contacts that left their yarns are taken
    /// off (thesis Sec. 4.4), then the assignment, sorted and tagged on the
    /// device one thread per yarn, reading q and v in place. The host sees
    /// the result only when it changes the element lists (the sorted order or
    /// a tag differs from the last rebuild's, a contact left its yarn, or a
    /// collapsed segment was flagged); a step without such a change costs one
    /// count and no host transfer.
    EilChanges update(EilState<T> state, T h)
    {
        using namespace eil_tracker_detail;
        EilChanges changes;
        if (!m_options.enabled) return changes;
        const auto yarns = thrust::counting_iterator<int>(0);
        const int yarn_count = m_assignment.yarn_count();
        const int departed = thrust::transform_reduce(
            thrust::device, yarns, yarns + yarn_count,
            DepartedOnYarn<T>{device_slots(), raw_pointer(state.q), raw_pointer(m_base_free_device),
                              raw_pointer(m_node_yarns_device)},
            0, thrust::plus<int>{});
        if (departed > 0) detach_departed(state, changes);  // new layout: device_slots() changes
        if (m_close_dirty) {
            m_close_device.assign(m_assignment.close.begin(), m_assignment.close.end());
            m_close_dirty = false;
        }
        const EilDeviceSlots<T> d = device_slots();
        thrust::for_each(thrust::device, yarns, yarns + yarn_count,
                         AssignYarn<T>{d, raw_pointer(state.q), raw_pointer(state.v), raw_pointer(m_base_free_device),
                                       raw_pointer(m_node_yarns_device), m_safety, m_options.lookahead ? h : T(0)});
        m_count = thrust::transform_reduce(thrust::device, m_summary_device.begin(), m_summary_device.end(),
                                           SummaryEilCount{}, 0, thrust::plus<int>{});
        const auto slot_first = thrust::counting_iterator<int>(0);
        const int changed =
            m_layout_fresh
                ? 1
                : thrust::transform_reduce(thrust::device, slot_first, slot_first + m_assignment.slot_count(),
                                           SlotChanged{d.all.sorted_node, d.all.eil, raw_pointer(m_previous_sorted),
                                                       raw_pointer(m_previous_eil)},
                                           0, thrust::plus<int>{});
        if (changed > 0) {
            rebuild_lists(state, changes);
            m_previous_sorted = m_sorted_device;
            m_previous_eil = m_eil_device;
            m_layout_fresh = false;
        }
        // Doubly EIL nodes: x filtered, and placed with its velocity on the
        // u-yarn's interpolation (thesis Eq. 4.3) every step, so that the
        // filtered x does not go stale while the arc lengths slide.
        if (!m_pairs_device.empty()) {
            thrust::for_each(thrust::device, m_pairs_device.begin(), m_pairs_device.end(),
                             PlacePairNode<T>{raw_pointer(state.q), raw_pointer(state.v)});
            changes.state = true;
        }
        return changes;
    }

    /// Takes each (node, coordinate) off its yarns: a contact with another
    /// fabric off both (`remove_contact_node`: no fixed arc length left
    /// mid-yarn), a crossing of one fabric off the yarn with that coordinate
    /// only (`detach_contact_node`: it stays on its other yarn as a
    /// Lagrangian node and carries that yarn's shear elements); a node
    /// already off every yarn is skipped. v and the anchors follow the new
    /// topology; the slot layout is rebuilt. Returns the number of entries.
    int remove(EilState<T> state, const std::vector<std::pair<int, int>>& nodes, EilChanges& changes)
    {
        edit_topology(state, changes, false, [&](YarnModel<T>& model) {
            for (const std::pair<int, int>& d : nodes) {
                const std::size_t n = static_cast<std::size_t>(d.first);
                const bool external = n < model.external_contact.size() && model.external_contact[n];
                bool on_yarn = false;
                for (const std::vector<int>& list : model.yarns)
                    on_yarn = on_yarn || std::find(list.begin(), list.end(), d.first) != list.end();
                if (!on_yarn) continue;  // removed already (it left both yarns in one step)
                if (external)
                    remove_contact_node(model, d.first);
                else
                    detach_contact_node(model, d.first, d.second);
            }
        });
        return static_cast<int>(nodes.size());
    }

    /// Puts removed contact nodes back between two yarns of neighbouring
    /// layers (`attach_contact_node`, YarnModel::collision's
    /// `create_contacts`): the node's q and v are written into the state, its
    /// anchors at its arc lengths; the slot layout is rebuilt. Returns the
    /// number of contacts made.
    int attach(EilState<T> state, const std::vector<NewLayerContact<T>>& contacts, EilChanges& changes)
    {
        if (contacts.empty()) return 0;
        edit_topology(state, changes, true, [&](YarnModel<T>& model) {
            for (const NewLayerContact<T>& c : contacts) attach_contact_node(model, c);
        });
        return static_cast<int>(contacts.size());
    }

    /// After an attempt rejected for collapsed EoL segments (`collapsed(g)`
    /// true for segment g of `segments`): the later node of each counts as
    /// within the safety distance when the attempt is redone. Returns whether
    /// a flag was newly set (then redoing the attempt at the same size can help).
    template <class Collapsed>
    bool flag_collapsed(const std::vector<YarnSegment>& segments, const Collapsed& collapsed)
    {
        bool flagged = false;
        for (const YarnSegment& g : segments) {
            if (!collapsed(g)) continue;
            const int slot = m_slot_of[2 * static_cast<std::size_t>(g.node1) + (g.coordinate - 3)];
            if (slot >= 0 && !m_assignment.close[static_cast<std::size_t>(slot)]) {
                m_assignment.close[static_cast<std::size_t>(slot)] = 1;
                flagged = true;
                m_close_set = true;
                m_close_dirty = true;
            }
        }
        return flagged;
    }

    /// Every member that later updates depend on, for checkpoints
    /// (state_archive.hpp): the topology after removals, the slot layout,
    /// the last assignment and lists, the filter and the hysteresis of the
    /// list rebuilds. `self` is this tracker (const to save).
    template <class Self, class Archive>
    static void state_fields(Self& self, Archive& a)
    {
        a("count", self.m_count);
        a("detached", self.m_detached);
        a("resets", self.m_resets);
        a("external", self.m_external);
        Archive topology = a.nested("topology");
        yarn_model_state_fields(self.m_topology, topology);
        a("slot_of", self.m_slot_of);
        Archive assignment = a.nested("assignment");
        auto& e = self.m_assignment;
        assignment("yarn_begin", e.yarn_begin);
        assignment("coordinate", e.coordinate);
        assignment("node", e.node);
        assignment("arc_length", e.arc_length);
        assignment("fixed", e.fixed);
        assignment("arc_rate", e.arc_rate);
        assignment("close", e.close);
        assignment("order", e.order);
        assignment("sorted_node", e.sorted_node);
        assignment("eil", e.eil);
        assignment("eol_before", e.eol_before);
        assignment("eol_after", e.eol_after);
        assignment("weight", e.weight);
        assignment("node_eil", e.node_eil);
        assignment("summary", e.summary);
        a("lists.segments", self.m_lists.segments);
        a("lists.bends", self.m_lists.bends);
        a("lists.springs", self.m_lists.springs);
        a("lists.pairs", self.m_lists.pairs);
        a("lists.fabric", self.m_lists.fabric);
        a("pairs_device", self.m_pairs_device);
        a("yarn_begin_device", self.m_yarn_begin_device);
        a("slot_node_device", self.m_slot_node_device);
        a("slot_coordinate_device", self.m_slot_coordinate_device);
        a("order_device", self.m_order_device);
        a("sorted_device", self.m_sorted_device);
        a("before_device", self.m_before_device);
        a("after_device", self.m_after_device);
        a("arc_device", self.m_arc_device);
        a("rate_device", self.m_rate_device);
        a("weight_device", self.m_weight_device);
        a("fixed_device", self.m_fixed_device);
        a("close_device", self.m_close_device);
        a("eil_device", self.m_eil_device);
        a("summary_device", self.m_summary_device);
        a("base_free_device", self.m_base_free_device);
        a("node_yarns_device", self.m_node_yarns_device);
        a("previous_sorted", self.m_previous_sorted);
        a("previous_eil", self.m_previous_eil);
        a("layout_fresh", self.m_layout_fresh);
        a("close_dirty", self.m_close_dirty);
        a("close_set", self.m_close_set);
        a("base_free", self.m_base_free);
        a("free_now", self.m_free_now);
        a("node_yarns", self.m_node_yarns);
        a("previous_pairs", self.m_previous_pairs);
        a("was_eil", self.m_was_eil);
    }

private:
    /// Applies `edit` to the topology, which first takes the state's q, v and
    /// anchors; writes v and anchors back (and q with `positions`) and
    /// rebuilds the slot layout.
    template <class Edit>
    void edit_topology(EilState<T> state, EilChanges& changes, bool positions, const Edit& edit)
    {
        YarnModel<T>& model = m_topology;
        model.q = to_host(state.q);
        model.v = to_host(state.v);
        thrust::copy(state.anchors.begin(), state.anchors.end(), model.anchors.begin());
        edit(model);
        if (positions) state.q.assign(model.q.begin(), model.q.end());
        state.v.assign(model.v.begin(), model.v.end());
        state.anchors.assign(model.anchors.begin(), model.anchors.end());
        m_previous_pairs.clear();
        make_layout();
        changes.topology = true;
        changes.state = true;
    }

    /// The slot layout of `m_topology` (at construction and after a removal).
    void make_layout()
    {
        const YarnModel<T>& model = m_topology;
        m_assignment = make_eil_assignment<T>(model);
        m_base_free = model.free_dof;
        m_node_yarns.assign(static_cast<std::size_t>(model.node_count()), 0);
        for (const std::vector<int>& yarn : model.yarns)
            for (int n : yarn) ++m_node_yarns[static_cast<std::size_t>(n)];
        m_assignment.close.assign(m_assignment.node.size(), 0);
        m_slot_of.assign(2 * static_cast<std::size_t>(model.node_count()), -1);
        for (int slot = 0; slot < m_assignment.slot_count(); ++slot)
            m_slot_of[2 * static_cast<std::size_t>(m_assignment.node[slot]) + (m_assignment.coordinate[slot] - 3)] =
                slot;
        upload_layout();
    }

    /// Contact removal, thesis Sec. 4.4 ("the Eulerian coordinate of a node
    /// indicates that it has exit the length of the rod"): a node on two yarns
    /// whose free arc length on one of them lies beyond that yarn's fixed end
    /// nodes is taken off (`remove`). Yarns without two fixed nodes are left
    /// alone.
    void detach_departed(EilState<T> state, EilChanges& changes)
    {
        const EilAssignment<T>& a = m_assignment;
        const std::vector<T> q = to_host(state.q);
        std::vector<unsigned char> left(a.node.size(), 0);
        std::vector<std::pair<int, int>> departed;
        for (int y = 0; y < a.yarn_count(); ++y) {
            if (eil_tracker_detail::departed_slots<T>(y, a.yarn_begin.data(), a.node.data(), a.coordinate.data(),
                                                      q.data(), m_base_free.data(), m_node_yarns.data(),
                                                      left.data()) == 0)
                continue;
            for (int slot = a.yarn_begin[y]; slot < a.yarn_begin[y + 1]; ++slot)
                if (left[static_cast<std::size_t>(slot)]) departed.push_back({a.node[slot], a.coordinate[slot]});
        }
        if (departed.empty()) return;
        m_detached += remove(state, departed, changes);
    }

    /// Raw device pointers of the slot layout.
    eil_tracker_detail::EilDeviceSlots<T> device_slots()
    {
        const EilYarnSlots<T> all{
            m_assignment.slot_count(),    raw_pointer(m_slot_node_device), raw_pointer(m_arc_device),
            raw_pointer(m_fixed_device),  raw_pointer(m_order_device),     raw_pointer(m_sorted_device),
            raw_pointer(m_eil_device),    raw_pointer(m_before_device),    raw_pointer(m_after_device),
            raw_pointer(m_weight_device), raw_pointer(m_rate_device),      raw_pointer(m_close_device)};
        return {raw_pointer(m_yarn_begin_device),
                raw_pointer(m_slot_coordinate_device),
                all,
                raw_pointer(m_summary_device),
                raw_pointer(m_arc_device),
                raw_pointer(m_rate_device),
                raw_pointer(m_fixed_device)};
    }

    /// Uploads the host slot layout of `m_assignment` (after make_layout).
    void upload_layout()
    {
        const EilAssignment<T>& a = m_assignment;
        m_yarn_begin_device.assign(a.yarn_begin.begin(), a.yarn_begin.end());
        m_slot_node_device.assign(a.node.begin(), a.node.end());
        m_slot_coordinate_device.assign(a.coordinate.begin(), a.coordinate.end());
        m_order_device.assign(a.order.begin(), a.order.end());
        m_sorted_device.assign(a.sorted_node.begin(), a.sorted_node.end());
        m_close_device.assign(a.close.begin(), a.close.end());
        const std::size_t slots = a.node.size();
        m_arc_device.assign(slots, T(0));
        m_rate_device.assign(slots, T(0));
        m_fixed_device.assign(slots, 0);
        m_eil_device.assign(slots, 0);
        m_before_device.assign(slots, -1);
        m_after_device.assign(slots, -1);
        m_weight_device.assign(slots, T(0));
        m_summary_device.assign(a.summary.begin(), a.summary.end());
        m_base_free_device.assign(m_base_free.begin(), m_base_free.end());
        m_node_yarns_device.assign(m_node_yarns.begin(), m_node_yarns.end());
        m_close_dirty = false;
        m_close_set = false;
        m_layout_fresh = true;
    }

    /// Copies the device assignment into the host `m_assignment`.
    void download_assignment() const
    {
        EilAssignment<T>& a = m_assignment;
        thrust::copy(m_arc_device.begin(), m_arc_device.end(), a.arc_length.begin());
        a.arc_rate.resize(a.arc_length.size());
        thrust::copy(m_rate_device.begin(), m_rate_device.end(), a.arc_rate.begin());
        thrust::copy(m_fixed_device.begin(), m_fixed_device.end(), a.fixed.begin());
        thrust::copy(m_order_device.begin(), m_order_device.end(), a.order.begin());
        thrust::copy(m_sorted_device.begin(), m_sorted_device.end(), a.sorted_node.begin());
        thrust::copy(m_eil_device.begin(), m_eil_device.end(), a.eil.begin());
        thrust::copy(m_before_device.begin(), m_before_device.end(), a.eol_before.begin());
        thrust::copy(m_after_device.begin(), m_after_device.end(), a.eol_after.begin());
        thrust::copy(m_weight_device.begin(), m_weight_device.end(), a.weight.begin());
        thrust::copy(m_summary_device.begin(), m_summary_device.end(), a.summary.begin());
    }

    /// Host part of the assignment, run when the tags or the order changed:
    /// element lists (thesis Sec. 4.3.2), the filter of doubly EIL nodes, and
    /// the placement of nodes that stopped being doubly EIL (by the contact
    /// constraint, thesis Eq. 4.1, Sec. 4.3.1: on the interpolation of the
    /// yarn where they are still EIL, else on their last u-yarn
    /// interpolation).
    void rebuild_lists(EilState<T> state, EilChanges& changes)
    {
        download_assignment();
        EilAssignment<T>& a = m_assignment;
        // Per (node, coordinate): EIL flag and brackets.
        const std::size_t nodes = static_cast<std::size_t>(m_topology.node_count());
        m_was_eil = a.node_eil;
        std::fill(a.node_eil.begin(), a.node_eil.end(), static_cast<unsigned char>(0));
        std::vector<int> before(2 * nodes, -1), after(2 * nodes, -1);
        std::vector<std::pair<int, int>> outer(2 * nodes, {-1, -1});
        for (int slot = 0; slot < a.slot_count(); ++slot) {
            if (!a.eil[slot]) continue;
            const std::size_t k = 2 * static_cast<std::size_t>(a.sorted_node[slot]) + (a.coordinate[slot] - 3);
            a.node_eil[k] = 1;
            before[k] = a.eol_before[slot];
            after[k] = a.eol_after[slot];
            outer[k] = eol_beyond_bracket(a, slot);
        }
        EilElementLists lists;
        for (int slot = 0; slot < a.slot_count(); ++slot) {
            if (!a.eil[slot]) continue;
            const int n = a.sorted_node[slot];
            const int c = a.coordinate[slot];
            const std::size_t u = 2 * static_cast<std::size_t>(n);
            if (a.node_eil[u] && a.node_eil[u + 1]) {
                if (c == 3)
                    lists.pairs.push_back({{before[u], before[u + 1]},
                                           {after[u], after[u + 1]},
                                           n,
                                           {outer[u].first, outer[u + 1].first},
                                           {outer[u].second, outer[u + 1].second}});
            } else {
                const std::pair<int, int>& o = outer[u + static_cast<std::size_t>(c - 3)];
                lists.springs.push_back({a.eol_before[slot], a.eol_after[slot], n, c, o.first, o.second});
            }
        }
        lists.segments = eol_segments(a);
        lists.bends = eol_bends(a);
        if (m_lists_known)
            for (int y = 0; y < a.yarn_count(); ++y) {
                const int begin = a.yarn_begin[static_cast<std::size_t>(y)];
                const int count = a.yarn_begin[static_cast<std::size_t>(y) + 1] - begin;
                if (count > 0)
                    append_fabric_pairs(a.sorted_node.data() + begin, count,
                                        a.coordinate[static_cast<std::size_t>(begin)], m_external, lists.fabric);
            }
        m_lists = std::move(lists);
        m_pairs_device.assign(m_lists.pairs.begin(), m_lists.pairs.end());
        changes.lists = true;

        std::vector<unsigned char> free = m_base_free;
        for (const EilPairSpring& p : m_lists.pairs)
            for (int k = 0; k < 3; ++k) free[B * static_cast<std::size_t>(p.node) + k] = 0;
        struct Leaving {
            int node, before, after, coordinate;
        };
        std::vector<Leaving> leaving;
        for (const EilPairSpring& p : m_previous_pairs) {
            const std::size_t u = 2 * static_cast<std::size_t>(p.node);
            if (a.node_eil[u] && a.node_eil[u + 1]) continue;
            if (a.node_eil[u])
                leaving.push_back({p.node, before[u], after[u], 3});
            else if (a.node_eil[u + 1])
                leaving.push_back({p.node, before[u + 1], after[u + 1], 4});
            else
                leaving.push_back({p.node, p.before[0], p.after[0], 3});
        }
        m_previous_pairs = m_lists.pairs;
        // Nodes back to EoL on a yarn: thesis Eq. (4.4) (EilOptions::reset_on_eol).
        std::vector<int> reset;
        if (m_options.reset_on_eol && m_was_eil.size() == a.node_eil.size())
            for (int slot = 0; slot < a.slot_count(); ++slot) {
                const std::size_t k = 2 * static_cast<std::size_t>(a.sorted_node[slot]) + (a.coordinate[slot] - 3);
                if (!a.eil[slot] && m_was_eil[k] && a.eol_before[slot] >= 0 && a.eol_after[slot] >= 0)
                    reset.push_back(slot);
            }
        if (!leaving.empty() || !reset.empty()) {
            std::vector<T> q = to_host(state.q);
            std::vector<T> v = to_host(state.v);
            for (const Leaving& l : leaving)
                eil_tracker_detail::place_on_interpolation<T>(q.data(), v.data(), l.node, l.before, l.after,
                                                              l.coordinate);
            // The reset relabels the arc length of the contact point (x stays):
            // its friction anchor moves with it, so the reset is not a slip.
            std::vector<T> anchors = reset.empty() ? std::vector<T>{} : to_host(state.anchors);
            for (int slot : reset) {
                const std::size_t c = static_cast<std::size_t>(a.coordinate[slot]);
                const std::size_t node = static_cast<std::size_t>(a.sorted_node[slot]);
                const std::size_t n = B * node;
                const std::size_t ia = B * static_cast<std::size_t>(a.eol_before[slot]);
                const std::size_t ic = B * static_cast<std::size_t>(a.eol_after[slot]);
                const Vec3<T> xa(q[ia], q[ia + 1], q[ia + 2]), xb(q[n], q[n + 1], q[n + 2]),
                    xc(q[ic], q[ic + 1], q[ic + 2]);
                const T s = eil_to_eol_arc_length<T>(xa, q[ia + c], xb, q[n + c], xc, q[ic + c]);
                anchors[2 * node + (c - 3)] += s - q[n + c];
                q[n + c] = s;
            }
            if (!reset.empty()) state.anchors.assign(anchors.begin(), anchors.end());
            m_resets += static_cast<int>(reset.size());
            state.q.assign(q.begin(), q.end());
            state.v.assign(v.begin(), v.end());
            changes.state = true;
        }
        if (free != m_free_now) {
            m_free_now = free;
            changes.filter = true;
        }
    }

    EilOptions<T> m_options;
    T m_safety = T(0);
    T m_stiffness = T(0);
    bool m_lists_known = false;             ///< the model has yarn lists (fabric pairs can be formed)
    std::vector<unsigned char> m_external;  ///< per node: contact with another fabric (empty: none)
    int m_count = 0;
    int m_detached = 0;                     ///< nodes detached since construction
    int m_resets = 0;                       ///< arc-length resets since construction (reset_on_eol)
    YarnModel<T> m_topology;                ///< yarn lists, filter, anchors after removals
    std::vector<int> m_slot_of;             ///< slot of (node, coordinate − 3), −1 if none
    mutable EilAssignment<T> m_assignment;  ///< host mirror: layout, close flags, node_eil; the rest on demand
    EilElementLists m_lists;                ///< of the last list rebuild
    thrust::device_vector<EilPairSpring> m_pairs_device;  ///< m_lists.pairs (placed every update)
    // Device copy of the slot layout and of the per-step assignment.
    thrust::device_vector<int> m_yarn_begin_device, m_slot_node_device, m_slot_coordinate_device;
    thrust::device_vector<int> m_order_device, m_sorted_device, m_before_device, m_after_device;
    thrust::device_vector<T> m_arc_device, m_rate_device, m_weight_device;
    thrust::device_vector<unsigned char> m_fixed_device, m_close_device, m_eil_device;
    thrust::device_vector<EilYarnSummary> m_summary_device;
    thrust::device_vector<std::uint8_t> m_base_free_device;
    thrust::device_vector<int> m_node_yarns_device;
    thrust::device_vector<int> m_previous_sorted;         ///< sorted nodes at the last list rebuild
    thrust::device_vector<unsigned char> m_previous_eil;  ///< tags at the last list rebuild
    bool m_layout_fresh = true;                   ///< the layout was (re)built: rebuild the lists at the next update
    bool m_close_dirty = false;                   ///< host close flags not yet on the device
    bool m_close_set = false;                     ///< some close flag is set
    std::vector<unsigned char> m_base_free;       ///< the topology's filter
    std::vector<unsigned char> m_free_now;        ///< the filter in use (doubly EIL x removed)
    std::vector<int> m_node_yarns;                ///< yarns through each node
    std::vector<EilPairSpring> m_previous_pairs;  ///< the doubly EIL nodes of the last list rebuild
    std::vector<unsigned char> m_was_eil;         ///< node_eil of the previous list rebuild
};

}  // namespace weft
