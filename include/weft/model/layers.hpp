#pragma once
/// @file layers.hpp
/// Stacked layers of yarn-level cloth with frictional inter-layer contact
/// (thesis Sec. 4.4, stacked layers; Fig. 4.3): where a yarn of the top patch
/// crosses a yarn of the bottom patch, one 5-DoF contact node (x, u, v) is
/// shared by both yarns, exactly like a woven crossing (Cirio et al. 2014,
/// thesis Eq. 4.1 enforced implicitly by the shared x). Its arc lengths are
/// free, so the layers slide over each other; the friction anchors on them
/// give Coulomb friction between the layers, with a per-node limit μF_n:
/// fixed (YarnModel::friction_limit, `set_friction_limit`), or following
/// the contact's normal force (YarnModel::layer_friction). As contacts slide
/// past the layers' own crossings, use the EIL stepper (EilOptions), which
/// keeps the yarn discretization robust (thesis Sec. 4.3).
///
/// Which yarn is which coordinate: a top warp (u-yarn, coordinate 3) meets a
/// bottom weft (v-yarn, 4): the contact's u is its arc length on the top
/// warp, v on the bottom weft. A top weft (4) meets a bottom warp (3): v on
/// the top weft, u on the bottom warp. Warp–warp and weft–weft pairs get no
/// contact: aligned they are parallel; in a layer rotated in its plane
/// (WovenPatch::rotation) they cross, but a 5-DoF node carries only one arc
/// length per coordinate. A layer rotated by θ therefore meets the layer
/// below at the warp–weft crossings only, at an angle of 90° − |θ| (θ in
/// [−90°, 90°]); near 90° its warps run along the wefts below and few
/// contacts remain (none at exactly 90°).
///
/// More than two layers: each `add_contact_layer` call joins one pair, and a
/// middle layer's yarns carry the contacts of both neighbours. A contact must
/// not fall on a node its yarn already has: stacking a third aligned layer
/// half a spacing off the second puts its contacts at the arc lengths of the
/// first pair's (the call throws); shift it by a quarter spacing instead.
///
/// Placement: the 5-DoF node has no thickness, so the two yarns of a contact
/// pass through one point (as at a woven crossing, whose over/under is only
/// rendered). Stack the top patch with no normal offset and shifted by half
/// a spacing in both in-plane directions (`stacked_patch`): contacts then
/// start midway between the crossings of both patches, every yarn stays
/// straight and the stack is at rest. A renderer may lift the top layer by
/// two radii. A top patch placed two radii above instead still gets its
/// contacts (with max_distance ≥ 2r), at the midpoint of the two centre
/// lines, but both yarns then kink through that point and the layers are
/// pulled together in the first steps.
///
/// The contact is bilateral: the node belongs to both yarns, so the layers
/// can neither separate nor interpenetrate there, whatever the normal force.
/// The thesis removes a contact when its arc length leaves the yarn or when
/// the normal force would pull the layers together instead of pushing
/// (Cirio et al. 2014; thesis Sec. 4.4, Fig. 4.7). Both are provided by the
/// EIL stepper: a contact whose arc length leaves one of its yarns is removed
/// from both yarns (EilTracker, `detach_departed`, `remove_contact_node`),
/// so no node with a fixed arc length is left in the middle of the other
/// yarn; and a contact with YarnModel::layer_friction ≥ 0 gets its normal
/// force N from the node's balance at the start of every step
/// (`layer_contact_normal_force`), its Coulomb limit μ max(N, 0), and is
/// removed the same way when N < 0 (EilOptions::remove_pulling_contacts).
/// Where a removed contact was, the layers keep from passing through each
/// other only with yarn–yarn collision on (YarnModel::collision), which
/// measures two layers of one stack with the upper one lifted by the
/// thickness per level, as recorded here in YarnModel::yarn_layer
/// (docs/collision.md, "Stacked layers").
/// `detach_contact_node` takes a node off one yarn by hand between steppers
/// (friction_incline detaches a little before the end and shares F_n among
/// the remaining contacts). The thesis makes contacts only at the start ("no
/// dynamic addition of EoL nodes", Sec. 4.5); with collision's
/// `create_contacts` the yarn stepper also puts removed contact nodes back
/// where two neighbouring layers touch again (`attach_contact_node`), so
/// the node count never changes during a run.
///
/// Parallel-yarn contact (thesis Sec. 4.3.2, rule (a)): every contact node
/// is marked in `YarnModel::external_contact`, which takes it out of
/// parallel-yarn contact, so that contacts slide past the crossings of the
/// yarns they lie on; the crossings of each fabric keep their parallel-yarn
/// contact with each other across the contacts (`YarnParallelPair`, without
/// it a stacked fabric's crossings run into each other once the layers
/// slide). Clear a node's flag to keep it in parallel-yarn contact.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/math.hpp>
#include <weft/model/woven.hpp>
#include <weft/model/yarn_model.hpp>

namespace weft {

/// One inter-layer contact created by `add_contact_layer`.
struct LayerContact {
    int node;            ///< the new contact node
    int top_yarn;        ///< index into model.yarns of the top patch's yarn through it
    int bottom_yarn;     ///< index into model.yarns of the bottom patch's yarn through it
    int top_coordinate;  ///< 3 (top warp: u is on the top yarn) or 4 (top weft: v is)
};

/// The patch to stack on `bottom` with `nx` × `ny` nodes: same spacing,
/// radius, density, plane and pattern, centred so that its yarns lie midway
/// between the bottom's (shifted by half a spacing along an axis where the
/// node counts differ by an even number; already midway where odd), and
/// `normal_offset` (m) along axis1 × axis2 (+z for ClothPlane::xy). The
/// recommended normal offset is 0 (see the file comment).
inline WovenPatch stacked_patch(const WovenPatch& bottom, int nx, int ny, double normal_offset = 0)
{
    WovenPatch top = bottom;
    top.nx = nx;
    top.ny = ny;
    Vec3<double> a1, a2;
    patch_axes(bottom, a1, a2);
    const double shift1 = (bottom.nx - nx) % 2 == 0 ? 0.5 * bottom.spacing : 0.0;
    const double shift2 = (bottom.ny - ny) % 2 == 0 ? 0.5 * bottom.spacing : 0.0;
    const Vec3<double> c = Vec3<double>(bottom.center[0], bottom.center[1], bottom.center[2]) + shift1 * a1 +
                           shift2 * a2 + normal_offset * a1.cross(a2);
    top.center = {c(0), c(1), c(2)};
    return top;
}

namespace layers_detail {

/// Records that the `top` yarns' fabric lies on the `bottom` ones'
/// (YarnModel::yarn_layer): the bottom fabric starts a stack unless it is in
/// one, and the top fabric's stack (itself and whatever was stacked on it
/// before) joins it one level above the bottom fabric. A top fabric already
/// in the bottom's stack moves alone to one level above the bottom one.
template <typename T>
void stack_layers(YarnModel<T>& model, const std::vector<int>& top, const std::vector<int>& bottom)
{
    if (top.empty() || bottom.empty()) return;
    model.yarn_layer.resize(model.yarns.size());
    const auto at = [&](int y) -> YarnLayerPlace& { return model.yarn_layer[static_cast<std::size_t>(y)]; };
    if (at(bottom.front()).stack < 0) {
        int next = 0;
        for (const YarnLayerPlace& p : model.yarn_layer) next = std::max(next, p.stack + 1);
        for (int y : bottom) at(y) = YarnLayerPlace{next, 0};
    }
    const YarnLayerPlace base = at(bottom.front());
    const YarnLayerPlace old = at(top.front());
    if (old.stack < 0 || old.stack == base.stack) {
        for (int y : top) at(y) = YarnLayerPlace{base.stack, base.level + 1};
        return;
    }
    const int shift = base.level + 1 - old.level;
    for (YarnLayerPlace& p : model.yarn_layer)
        if (p.stack == old.stack) p = YarnLayerPlace{base.stack, p.level + shift};
}

}  // namespace layers_detail

/// Indices of the yarns through at least one node of [first, first + count).
template <typename T>
std::vector<int> yarns_through_nodes(const YarnModel<T>& model, int first, int count)
{
    std::vector<int> out;
    for (std::size_t y = 0; y < model.yarns.size(); ++y)
        for (int n : model.yarns[y])
            if (n >= first && n < first + count) {
                out.push_back(static_cast<int>(y));
                break;
            }
    return out;
}

/// Rebuilds model.segments and model.bends from the yarn node lists: one
/// segment per pair and one bend per triple of consecutive nodes, in yarn
/// order. For woven patches this is the builder's lists, element for
/// element; segments or bends not along a yarn list are dropped.
template <typename T>
void rebuild_yarn_segments_and_bends(YarnModel<T>& model)
{
    model.segments.clear();
    model.bends.clear();
    for (std::size_t y = 0; y < model.yarns.size(); ++y) {
        const std::vector<int>& nodes = model.yarns[y];
        const int c = model.yarn_coordinate[y];
        for (std::size_t k = 0; k + 1 < nodes.size(); ++k) model.segments.push_back({nodes[k], nodes[k + 1], c});
    }
    for (std::size_t y = 0; y < model.yarns.size(); ++y) {
        const std::vector<int>& nodes = model.yarns[y];
        const int c = model.yarn_coordinate[y];
        for (std::size_t k = 1; k + 1 < nodes.size(); ++k)
            model.bends.push_back({nodes[k - 1], nodes[k], nodes[k + 1], c});
    }
}

namespace layers_detail {

/// Closest points of the lines through segments [p0, p1] and [q0, q1]:
/// parameters t on the first and s on the second; false when parallel.
inline bool line_closest_parameters(const Vec3<double>& p0, const Vec3<double>& p1, const Vec3<double>& q0,
                                    const Vec3<double>& q1, double& t, double& s)
{
    const Vec3<double> d1 = p1 - p0, d2 = q1 - q0, r = p0 - q0;
    const double a = d1.dot(d1), e = d2.dot(d2), b = d1.dot(d2), c = d1.dot(r), f = d2.dot(r);
    const double denominator = a * e - b * b;
    if (!(denominator > 1e-12 * a * e)) return false;
    t = (b * f - c * e) / denominator;
    s = (a * f - b * c) / denominator;
    return true;
}

template <typename T>
Vec3<double> node_position(const YarnModel<T>& model, int n)
{
    const std::size_t i = yarn_node_dofs * static_cast<std::size_t>(n);
    return Vec3<double>(static_cast<double>(model.q[i]), static_cast<double>(model.q[i + 1]),
                        static_cast<double>(model.q[i + 2]));
}

template <typename T>
double arc_length(const YarnModel<T>& model, int n, int coordinate)
{
    return static_cast<double>(model.q[yarn_node_dofs * static_cast<std::size_t>(n) + coordinate]);
}

/// Throws unless yarn y's list is strictly increasing in arc length.
template <typename T>
void require_sorted_yarn(const YarnModel<T>& model, int y)
{
    const std::vector<int>& nodes = model.yarns[static_cast<std::size_t>(y)];
    const int c = model.yarn_coordinate[static_cast<std::size_t>(y)];
    for (std::size_t k = 0; k + 1 < nodes.size(); ++k)
        if (!(arc_length(model, nodes[k], c) < arc_length(model, nodes[k + 1], c))) {
            const std::string field = "yarns[" + std::to_string(y) + "][" + std::to_string(k + 1) + "]";
            throw InvalidInput(
                detail::describe(field.c_str(), nodes[k + 1], "yarn nodes must be listed in increasing arc length"));
        }
}

struct Box {
    Vec3<double> lo, hi;
    bool overlaps(const Box& o) const
    {
        return (lo.array() <= o.hi.array()).all() && (o.lo.array() <= hi.array()).all();
    }
};

inline Box segment_box(const Vec3<double>& a, const Vec3<double>& b, double pad)
{
    return {a.cwiseMin(b) - Vec3<double>::Constant(pad), a.cwiseMax(b) + Vec3<double>::Constant(pad)};
}

}  // namespace layers_detail

/// Creates the inter-layer contact nodes between two stacked patches of
/// `model` (see the file comment): wherever a top yarn and a bottom yarn of
/// the other coordinate cross within `max_distance` (the distance between
/// their centre lines, i.e. the normal separation of the layers), a new node
/// at the midpoint of the two closest points, with u and v the two yarns' arc
/// lengths there (linear in each segment), x and both arc lengths free,
/// anchors at its arc lengths, no velocity of its arc lengths and ẋ the mean
/// of the two yarns' interpolated velocities, `over` = 1 where the top yarn
/// is its u-yarn. It is inserted into both yarns' node lists in arc-length
/// order; segments and bends are then rebuilt from the lists
/// (`rebuild_yarn_segments_and_bends`), so the model is valid with EIL off
/// too. No shear element is added at a contact node. If the model has
/// per-node friction limits, contacts get the material's μF_n; set theirs
/// with `set_friction_limit`.
///
/// Cost: for every (top yarn, bottom yarn) pair, the segments of one that
/// overlap the other's bounding box, then box-filtered segment pairs —
/// about O(#top yarns × #bottom yarns × segments per yarn).
///
/// @param[in,out] model  holds both patches (e.g. two `add_woven_patch` calls)
/// @param[in] top_first_node, top  first node and layout of the top patch
/// @param[in] bottom_first_node, bottom  the same for the bottom patch
/// @param[in] max_distance  largest centre-line distance of a contact (m), > 0
/// @return the contacts, in creation order (node ids increasing)
/// @throws InvalidInput for a bad distance, node ranges outside the model,
///         yarn lists not sorted by arc length, or a crossing that falls on
///         an existing node (a zero-length segment: shift the top patch by
///         half a spacing, `stacked_patch`)
template <typename T>
std::vector<LayerContact> add_contact_layer(YarnModel<T>& model, int top_first_node, const WovenPatch& top,
                                            int bottom_first_node, const WovenPatch& bottom, T max_distance)
{
    using namespace layers_detail;
    require_positive("max_distance", static_cast<double>(max_distance));
    const int top_count = top.nx * top.ny, bottom_count = bottom.nx * bottom.ny;
    const int nodes = model.node_count();
    if (top_first_node < 0 || top_count <= 0 || top_first_node + top_count > nodes)
        throw InvalidInput(detail::describe("top_first_node", top_first_node, "top patch nodes outside the model"));
    if (bottom_first_node < 0 || bottom_count <= 0 || bottom_first_node + bottom_count > nodes)
        throw InvalidInput(
            detail::describe("bottom_first_node", bottom_first_node, "bottom patch nodes outside the model"));
    if (top_first_node < bottom_first_node + bottom_count && bottom_first_node < top_first_node + top_count)
        throw InvalidInput(detail::describe("top_first_node", top_first_node, "top and bottom patches overlap"));
    if (model.yarn_coordinate.size() != model.yarns.size())
        throw InvalidInput(
            detail::describe("yarn_coordinate.size()", model.yarn_coordinate.size(), "must equal yarns.size()"));

    const std::vector<int> top_yarns = yarns_through_nodes(model, top_first_node, top_count);
    const std::vector<int> bottom_yarns = yarns_through_nodes(model, bottom_first_node, bottom_count);
    for (int y : top_yarns) require_sorted_yarn(model, y);
    for (int y : bottom_yarns) require_sorted_yarn(model, y);

    const double pad = static_cast<double>(max_distance);
    const auto yarn_box = [&](int y) {
        const std::vector<int>& list = model.yarns[static_cast<std::size_t>(y)];
        Box box{node_position(model, list.front()), node_position(model, list.front())};
        for (int n : list) {
            box.lo = box.lo.cwiseMin(node_position(model, n));
            box.hi = box.hi.cwiseMax(node_position(model, n));
        }
        box.lo -= Vec3<double>::Constant(pad);
        box.hi += Vec3<double>::Constant(pad);
        return box;
    };

    struct Found {
        LayerContact contact;
        Vec3<double> x, velocity;
        double top_arc, bottom_arc;
    };
    std::vector<Found> found;
    for (int ty : top_yarns) {
        const int tc = model.yarn_coordinate[static_cast<std::size_t>(ty)];
        const std::vector<int>& tl = model.yarns[static_cast<std::size_t>(ty)];
        const Box top_box = yarn_box(ty);
        for (int by : bottom_yarns) {
            const int bc = model.yarn_coordinate[static_cast<std::size_t>(by)];
            // A node carries one u and one v: two yarns of one coordinate
            // (parallel, or crossing in a rotated layer) share no node.
            if (bc == tc) continue;
            const Box bottom_box = yarn_box(by);
            if (!top_box.overlaps(bottom_box)) continue;
            const std::vector<int>& bl = model.yarns[static_cast<std::size_t>(by)];
            for (std::size_t i = 0; i + 1 < tl.size(); ++i) {
                const Vec3<double> p0 = node_position(model, tl[i]), p1 = node_position(model, tl[i + 1]);
                const Box tb = segment_box(p0, p1, pad);
                if (!tb.overlaps(bottom_box)) continue;
                for (std::size_t j = 0; j + 1 < bl.size(); ++j) {
                    const Vec3<double> q0 = node_position(model, bl[j]), q1 = node_position(model, bl[j + 1]);
                    if (!tb.overlaps(segment_box(q0, q1, pad))) continue;
                    double t = 0, s = 0;
                    // Half-open [0, 1) on both, so a crossing is found once.
                    if (!line_closest_parameters(p0, p1, q0, q1, t, s)) continue;
                    if (t < 0 || t >= 1 || s < 0 || s >= 1) continue;
                    const Vec3<double> pt = p0 + t * (p1 - p0), pb = q0 + s * (q1 - q0);
                    if ((pt - pb).norm() > pad) continue;
                    if (t < 1e-9 || s < 1e-9) {
                        const std::string field =
                            "contact between yarns " + std::to_string(ty) + " and " + std::to_string(by) + " at node";
                        throw InvalidInput(detail::describe(field.c_str(), t < 1e-9 ? tl[i] : bl[j],
                                                            "falls on an existing node of a yarn (zero-length "
                                                            "segment); shift the top patch in its plane, e.g. by "
                                                            "half a spacing (stacked_patch), or by a quarter over "
                                                            "a layer that already carries contacts"));
                    }
                    const auto lerp_arc = [&](int a, int b, int c, double w) {
                        return (1 - w) * arc_length(model, a, c) + w * arc_length(model, b, c);
                    };
                    const auto lerp_velocity = [&](int a, int b, double w) {
                        const std::size_t ia = yarn_node_dofs * static_cast<std::size_t>(a);
                        const std::size_t ib = yarn_node_dofs * static_cast<std::size_t>(b);
                        Vec3<double> out;
                        for (int k = 0; k < 3; ++k)
                            out(k) = (1 - w) * static_cast<double>(model.v[ia + k]) +
                                     w * static_cast<double>(model.v[ib + k]);
                        return out;
                    };
                    Found f;
                    f.contact = {-1, ty, by, tc};
                    f.x = 0.5 * (pt + pb);
                    f.velocity = 0.5 * (lerp_velocity(tl[i], tl[i + 1], t) + lerp_velocity(bl[j], bl[j + 1], s));
                    f.top_arc = lerp_arc(tl[i], tl[i + 1], tc, t);
                    f.bottom_arc = lerp_arc(bl[j], bl[j + 1], bc, s);
                    found.push_back(f);
                }
            }
        }
    }

    // New nodes, then insertion into both yarns' lists.
    const bool per_node_limits = !model.friction_limit.empty();
    if (per_node_limits && model.friction_limit.size() != static_cast<std::size_t>(nodes))
        throw InvalidInput(
            detail::describe("friction_limit.size()", model.friction_limit.size(), "must be 0 or #nodes"));
    std::vector<LayerContact> out;
    std::vector<std::vector<std::pair<double, int>>> inserted(model.yarns.size());
    for (Found& f : found) {
        const int n = model.node_count();
        f.contact.node = n;
        const double u = f.contact.top_coordinate == 3 ? f.top_arc : f.bottom_arc;
        const double v = f.contact.top_coordinate == 3 ? f.bottom_arc : f.top_arc;
        for (int k = 0; k < 3; ++k) model.q.push_back(T(f.x(k)));
        model.q.push_back(T(u));
        model.q.push_back(T(v));
        for (int k = 0; k < 3; ++k) model.v.push_back(T(f.velocity(k)));
        model.v.push_back(T(0));
        model.v.push_back(T(0));
        for (int k = 0; k < yarn_node_dofs; ++k) model.free_dof.push_back(1);
        model.anchors.push_back(T(u));
        model.anchors.push_back(T(v));
        model.over.push_back(static_cast<unsigned char>(f.contact.top_coordinate == 3 ? 1 : 0));
        if (per_node_limits)
            model.friction_limit.push_back(model.material.friction_coefficient * model.material.normal_force);
        // A contact with another fabric: no parallel-yarn contact on its
        // segments (thesis Sec. 4.3.2, rule (a)), so it slides past crossings.
        model.external_contact.resize(static_cast<std::size_t>(n), 0);
        model.external_contact.push_back(1);
        inserted[static_cast<std::size_t>(f.contact.top_yarn)].push_back({f.top_arc, n});
        inserted[static_cast<std::size_t>(f.contact.bottom_yarn)].push_back({f.bottom_arc, n});
        out.push_back(f.contact);
    }
    for (std::size_t y = 0; y < model.yarns.size(); ++y) {
        if (inserted[y].empty()) continue;
        const int c = model.yarn_coordinate[y];
        std::vector<std::pair<double, int>> list = inserted[y];
        for (int n : model.yarns[y]) list.push_back({arc_length(model, n, c), n});
        // (arc length, node id): the order of the EIL assignment's sort.
        std::sort(list.begin(), list.end());
        model.yarns[y].clear();
        for (const auto& entry : list) model.yarns[y].push_back(entry.second);
    }
    rebuild_yarn_segments_and_bends(model);
    layers_detail::stack_layers(model, top_yarns, bottom_yarns);
    return out;
}

/// Sets the Coulomb limit μF_n (N) of the given nodes' anchors; creates the
/// per-node array from the material's μF_n first if the model has none
/// (YarnModel::friction_limit).
/// @throws InvalidInput for a node out of range or a negative/non-finite limit
template <typename T>
void set_friction_limit(YarnModel<T>& model, const std::vector<int>& nodes, T limit)
{
    if (!(std::isfinite(static_cast<double>(limit)) && limit >= T(0)))
        throw InvalidInput(detail::describe("friction limit", limit, "must be a finite number >= 0"));
    if (model.friction_limit.empty())
        model.friction_limit.assign(static_cast<std::size_t>(model.node_count()),
                                    model.material.friction_coefficient * model.material.normal_force);
    for (int n : nodes) {
        if (n < 0 || n >= model.node_count())
            throw InvalidInput(detail::describe("friction limit node", n, "out of range"));
        model.friction_limit[static_cast<std::size_t>(n)] = limit;
    }
}

/// Total mass (kg) of the yarns through the nodes [first, first + count):
/// linear density × the arc-length span of each yarn. The weight of a layer,
/// from which a caller derives the normal force of its contacts, e.g.
/// F_n = m g cos θ / #contacts on an incline of angle θ.
template <typename T>
T layer_mass(const YarnModel<T>& model, int first, int count)
{
    T total = T(0);
    for (int y : yarns_through_nodes(model, first, count)) {
        const std::vector<int>& list = model.yarns[static_cast<std::size_t>(y)];
        const int c = model.yarn_coordinate[static_cast<std::size_t>(y)];
        T lo = model.q[yarn_node_dofs * static_cast<std::size_t>(list.front()) + c], hi = lo;
        for (int n : list) {
            const T s = model.q[yarn_node_dofs * static_cast<std::size_t>(n) + c];
            lo = std::min(lo, s);
            hi = std::max(hi, s);
        }
        total += model.material.linear_density * (hi - lo);
    }
    return total;
}

/// Removes a contact node from its yarn with `coordinate` (3 or 4), e.g.
/// when its arc length is about to leave that yarn (thesis Sec. 4.4): the
/// node stays on its other yarn as a Lagrangian node (both arc lengths fixed,
/// anchors reset to them, no friction limit; a node on one yarn with a free
/// arc length would have no partner to fix its place on the yarn), and
/// segments and bends are rebuilt from the lists. A stepper made before must
/// be rebuilt from the model (its slot layout and element lists are fixed at
/// construction); download its state first.
/// @throws InvalidInput if the node is not on a yarn with that coordinate, or
///         that yarn would keep fewer than 2 nodes
template <typename T>
void detach_contact_node(YarnModel<T>& model, int node, int coordinate)
{
    if (node < 0 || node >= model.node_count())
        throw InvalidInput(detail::describe("detach_contact_node node", node, "out of range"));
    if (coordinate != 3 && coordinate != 4)
        throw InvalidInput(detail::describe("detach_contact_node coordinate", coordinate, "must be 3 (u) or 4 (v)"));
    for (std::size_t y = 0; y < model.yarns.size(); ++y) {
        if (model.yarn_coordinate[y] != coordinate) continue;
        std::vector<int>& list = model.yarns[y];
        const auto it = std::find(list.begin(), list.end(), node);
        if (it == list.end()) continue;
        if (list.size() <= 2)
            throw InvalidInput(detail::describe("detach_contact_node node", node, "its yarn would keep < 2 nodes"));
        list.erase(it);
        const std::size_t i = yarn_node_dofs * static_cast<std::size_t>(node);
        for (int c = 0; c < 2; ++c) {
            model.free_dof[i + 3 + c] = 0;
            model.v[i + 3 + c] = T(0);
            model.anchors[2 * static_cast<std::size_t>(node) + c] = model.q[i + 3 + c];
        }
        if (!model.friction_limit.empty()) model.friction_limit[static_cast<std::size_t>(node)] = T(0);
        rebuild_yarn_segments_and_bends(model);
        return;
    }
    throw InvalidInput(detail::describe("detach_contact_node node", node, "is on no yarn with this coordinate"));
}

namespace layers_detail {

/// Throws unless `node` is in range, marked in `external_contact` and on no
/// shear element (a contact between layers); `field` names the caller.
template <typename T>
void require_contact_node(const YarnModel<T>& model, int node, const char* field)
{
    if (node < 0 || node >= model.node_count()) throw InvalidInput(detail::describe(field, node, "out of range"));
    if (!(static_cast<std::size_t>(node) < model.external_contact.size() &&
          model.external_contact[static_cast<std::size_t>(node)]))
        throw InvalidInput(detail::describe(field, node, "is not a contact with another fabric (external_contact)"));
    for (const YarnShear& s : model.shears)
        if (s.node == node || s.along_u == node || s.along_v == node)
            throw InvalidInput(detail::describe(field, node, "lies on a shear element"));
}

}  // namespace layers_detail

/// Removes a contact with another fabric from every yarn it lies on (thesis
/// Sec. 4.4: a contact whose arc length has left one of its yarns no longer
/// exists): the node keeps its index but is on no yarn and takes no part in
/// any element, all its DoFs fixed, its velocity and friction limit zero, its
/// anchors at its arc lengths; segments and bends are rebuilt from the lists.
/// Unlike `detach_contact_node` it leaves no node with a fixed arc length in
/// the middle of the other yarn, past which that yarn's other contacts would
/// have to slide. A stepper made before must be rebuilt from the model.
/// @throws InvalidInput if the node is out of range, is not marked in
///         `external_contact`, lies on a shear element or on no yarn, or a
///         yarn would keep fewer than 2 nodes (the model is then unchanged)
template <typename T>
void remove_contact_node(YarnModel<T>& model, int node)
{
    layers_detail::require_contact_node(model, node, "remove_contact_node node");
    int lists = 0;
    for (const std::vector<int>& list : model.yarns)
        if (std::find(list.begin(), list.end(), node) != list.end()) {
            ++lists;
            if (list.size() <= 2)
                throw InvalidInput(detail::describe("remove_contact_node node", node, "its yarn would keep < 2 nodes"));
        }
    if (lists == 0) throw InvalidInput(detail::describe("remove_contact_node node", node, "is on no yarn"));
    for (std::vector<int>& list : model.yarns) list.erase(std::remove(list.begin(), list.end(), node), list.end());
    const std::size_t i = yarn_node_dofs * static_cast<std::size_t>(node);
    for (int k = 0; k < yarn_node_dofs; ++k) {
        model.free_dof[i + static_cast<std::size_t>(k)] = 0;
        model.v[i + static_cast<std::size_t>(k)] = T(0);
    }
    for (int c = 0; c < 2; ++c) model.anchors[2 * static_cast<std::size_t>(node) + c] = model.q[i + 3 + c];
    if (!model.friction_limit.empty()) model.friction_limit[static_cast<std::size_t>(node)] = T(0);
    rebuild_yarn_segments_and_bends(model);
}

/// A contact to make between two yarns of neighbouring layers
/// (`attach_contact_node`): where on each yarn, and the node's motion.
template <typename T>
struct NewLayerContact {
    int node = -1;             ///< a removed contact node (on no yarn) to reuse
    int top_yarn = -1;         ///< index into model.yarns of the upper layer's yarn
    int bottom_yarn = -1;      ///< index into model.yarns of the lower layer's yarn
    T top_arc = T(0);          ///< the contact's arc length on the top yarn
    T bottom_arc = T(0);       ///< the contact's arc length on the bottom yarn
    Vec3<T> position;          ///< x of the node
    Vec3<T> velocity;          ///< ẋ of the node
    T top_arc_rate = T(0);     ///< ṡ on the top yarn
    T bottom_arc_rate = T(0);  ///< ṡ on the bottom yarn
};

/// Puts a removed contact node (`remove_contact_node`: on no yarn, marked in
/// `external_contact`) back between two yarns, where two layers met again:
/// the inverse of `remove_contact_node`, at a new place. The node joins the
/// top yarn at arc length `top_arc` and the bottom yarn at `bottom_arc`
/// (inserted in each list in arc-length order), every DoF free, its
/// friction anchors at those arc lengths (no slip yet) and its friction
/// limit 0 until the stepper sets it from the normal force; `over` records
/// which yarn is on top. Segments and bends are rebuilt from the lists. A
/// stepper made before must be rebuilt from the model (or let EilTracker
/// do this in place: `EilTracker::attach`).
/// @throws InvalidInput if the node is not a removed contact, the yarns
///         are out of range, not one warp (3) and one weft (4), or an arc
///         length lies outside its yarn's nodes or on one of them (the
///         model is then unchanged)
template <typename T>
void attach_contact_node(YarnModel<T>& model, const NewLayerContact<T>& c)
{
    const int node = c.node;
    layers_detail::require_contact_node(model, node, "attach_contact_node node");
    for (const std::vector<int>& list : model.yarns)
        if (std::find(list.begin(), list.end(), node) != list.end())
            throw InvalidInput(detail::describe("attach_contact_node node", node, "is still on a yarn"));
    const int yarn_count = static_cast<int>(model.yarns.size());
    if (c.top_yarn < 0 || c.top_yarn >= yarn_count)
        throw InvalidInput(detail::describe("attach_contact_node top_yarn", c.top_yarn, "out of range"));
    if (c.bottom_yarn < 0 || c.bottom_yarn >= yarn_count)
        throw InvalidInput(detail::describe("attach_contact_node bottom_yarn", c.bottom_yarn, "out of range"));
    const int top_c = model.yarn_coordinate[static_cast<std::size_t>(c.top_yarn)];
    const int bottom_c = model.yarn_coordinate[static_cast<std::size_t>(c.bottom_yarn)];
    if (!((top_c == 3 && bottom_c == 4) || (top_c == 4 && bottom_c == 3)))
        throw InvalidInput(detail::describe("attach_contact_node bottom_yarn", c.bottom_yarn,
                                            "must cross the top yarn (one warp, one weft)"));
    // Where the node goes in each list (the first node past its arc length).
    const auto place = [&](int y, T arc, const char* field) {
        const std::vector<int>& list = model.yarns[static_cast<std::size_t>(y)];
        const int coordinate = model.yarn_coordinate[static_cast<std::size_t>(y)];
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (int n : list) {
            const double s = layers_detail::arc_length(model, n, coordinate);
            if (s == static_cast<double>(arc)) throw InvalidInput(detail::describe(field, arc, "lies on a node"));
            lo = std::min(lo, s);
            hi = std::max(hi, s);
        }
        if (!(static_cast<double>(arc) > lo && static_cast<double>(arc) < hi))
            throw InvalidInput(detail::describe(field, arc, "lies outside its yarn's nodes"));
        std::size_t k = 0;
        while (k < list.size() && layers_detail::arc_length(model, list[k], coordinate) < static_cast<double>(arc)) ++k;
        return k;
    };
    const std::size_t top_at = place(c.top_yarn, c.top_arc, "attach_contact_node top_arc");
    const std::size_t bottom_at = place(c.bottom_yarn, c.bottom_arc, "attach_contact_node bottom_arc");
    std::vector<int>& top = model.yarns[static_cast<std::size_t>(c.top_yarn)];
    std::vector<int>& bottom = model.yarns[static_cast<std::size_t>(c.bottom_yarn)];
    top.insert(top.begin() + static_cast<std::ptrdiff_t>(top_at), node);
    bottom.insert(bottom.begin() + static_cast<std::ptrdiff_t>(bottom_at), node);
    const std::size_t i = yarn_node_dofs * static_cast<std::size_t>(node);
    for (int k = 0; k < 3; ++k) {
        model.q[i + static_cast<std::size_t>(k)] = c.position[k];
        model.v[i + static_cast<std::size_t>(k)] = c.velocity[k];
    }
    model.q[i + static_cast<std::size_t>(top_c)] = c.top_arc;
    model.q[i + static_cast<std::size_t>(bottom_c)] = c.bottom_arc;
    model.v[i + static_cast<std::size_t>(top_c)] = c.top_arc_rate;
    model.v[i + static_cast<std::size_t>(bottom_c)] = c.bottom_arc_rate;
    for (int k = 0; k < yarn_node_dofs; ++k) model.free_dof[i + static_cast<std::size_t>(k)] = 1;
    for (int k = 0; k < 2; ++k) model.anchors[2 * static_cast<std::size_t>(node) + k] = model.q[i + 3 + k];
    if (!model.friction_limit.empty()) model.friction_limit[static_cast<std::size_t>(node)] = T(0);
    if (model.over.size() < static_cast<std::size_t>(model.node_count()))
        model.over.resize(static_cast<std::size_t>(model.node_count()), 0);
    model.over[static_cast<std::size_t>(node)] = top_c == 3 ? 1 : 0;
    rebuild_yarn_segments_and_bends(model);
}

/// The stencils of `layer_contact_normal_force` for the contact nodes
/// `nodes` (top coordinates `top_coordinates`, 3 or 4 each: YarnModel::over
/// 1 → 3) in the element lists `segments` and `bends` (the model's, or a
/// stepper's current EoL lists): per contact, the segments and bends of its
/// two yarns that act on its x, and the top yarn's neighbours whose collider
/// load it shares. A neighbour
/// rests on the layer below when it is not one of `nodes` (a crossing of the
/// top fabric) or is one whose top yarn is not this yarn (a contact with a
/// layer above); its load is shared among its neighbours on its yarns of
/// this fabric that are contacts with this fabric's yarn on top. Partners:
/// the contacts next to a load crossing on its other yarn where that yarn
/// is on top (the other kind of contact in the same cell of the weave).
/// A woven stack has at most 2 load nodes and 4 partners per contact; any
/// beyond those (irregular layouts) are left out.
/// @throws InvalidInput for mismatched sizes, a node outside [0, node_count)
///         or a coordinate other than 3 or 4
inline std::vector<LayerContactStencil> layer_contact_stencils(const std::vector<int>& nodes,
                                                               const std::vector<int>& top_coordinates, int node_count,
                                                               const std::vector<YarnSegment>& segments,
                                                               const std::vector<YarnBend>& bends)
{
    if (top_coordinates.size() != nodes.size())
        throw InvalidInput(detail::describe("layer_contact_stencils top_coordinates.size()", top_coordinates.size(),
                                            "must equal nodes.size()"));
    std::vector<int> contact_of(static_cast<std::size_t>(node_count), -1);
    std::vector<int> top_of(static_cast<std::size_t>(node_count), 0);  // 0: no contact in `nodes`
    std::vector<LayerContactStencil> out(nodes.size());
    for (std::size_t k = 0; k < nodes.size(); ++k) {
        if (nodes[k] < 0 || nodes[k] >= node_count)
            throw InvalidInput(detail::describe("layer_contact_stencils node", nodes[k], "out of range"));
        if (top_coordinates[k] != 3 && top_coordinates[k] != 4)
            throw InvalidInput(
                detail::describe("layer_contact_stencils top coordinate", top_coordinates[k], "must be 3 or 4"));
        contact_of[static_cast<std::size_t>(nodes[k])] = static_cast<int>(k);
        top_of[static_cast<std::size_t>(nodes[k])] = top_coordinates[k];
        out[k] = {nodes[k],     top_coordinates[k], {-1, -1}, {-1, -1},        {-1, -1, -1},
                  {-1, -1, -1}, {-1, -1},           {0, 0},   {-1, -1, -1, -1}};
    }
    const auto put = [](int* slots, int count, int value) {
        for (int k = 0; k < count; ++k)
            if (slots[k] < 0) {
                slots[k] = value;
                return;
            }
    };
    // Neighbours along the EoL segments: (node, coordinate of the segment).
    std::vector<std::vector<std::pair<int, int>>> neighbours(static_cast<std::size_t>(node_count));
    for (std::size_t i = 0; i < segments.size(); ++i) {
        const YarnSegment& g = segments[i];
        if (g.node0 < 0 || g.node0 >= node_count || g.node1 < 0 || g.node1 >= node_count)
            throw InvalidInput(detail::describe("layer_contact_stencils segment", i, "has a node out of range"));
        neighbours[static_cast<std::size_t>(g.node0)].push_back({g.node1, g.coordinate});
        neighbours[static_cast<std::size_t>(g.node1)].push_back({g.node0, g.coordinate});
        for (int n : {g.node0, g.node1}) {
            const int c = contact_of[static_cast<std::size_t>(n)];
            if (c < 0) continue;
            LayerContactStencil& st = out[static_cast<std::size_t>(c)];
            put(g.coordinate == st.top_coordinate ? st.top_segment : st.bottom_segment, 2, static_cast<int>(i));
        }
    }
    for (std::size_t i = 0; i < bends.size(); ++i)
        for (int n : {bends[i].prev, bends[i].node, bends[i].next}) {
            const int c = n >= 0 && n < node_count ? contact_of[static_cast<std::size_t>(n)] : -1;
            if (c < 0) continue;
            LayerContactStencil& st = out[static_cast<std::size_t>(c)];
            put(bends[i].coordinate == st.top_coordinate ? st.top_bend : st.bottom_bend, 3, static_cast<int>(i));
        }
    for (LayerContactStencil& st : out) {
        int slot = 0;
        for (const auto& [o, coordinate] : neighbours[static_cast<std::size_t>(st.node)]) {
            if (coordinate != st.top_coordinate || slot == 2) continue;
            const int top_o = top_of[static_cast<std::size_t>(o)];
            if (top_o == coordinate) continue;  // a contact of this yarn with the same layer below
            // o's yarns of this fabric: both (a crossing) or this one (o is a
            // contact with a layer above, this yarn its bottom yarn).
            int share = 0;
            for (const auto& [p, pc] : neighbours[static_cast<std::size_t>(o)])
                if ((top_o == 0 || pc == coordinate) && top_of[static_cast<std::size_t>(p)] == pc) ++share;
            st.load_node[slot] = o;
            st.load_share[slot] = share;
            ++slot;
            if (top_o != 0) continue;
            // o's other yarn of this fabric: the contacts on it where that yarn is on top.
            for (const auto& [p, pc] : neighbours[static_cast<std::size_t>(o)])
                if (pc != coordinate && top_of[static_cast<std::size_t>(p)] == pc)
                    put(st.partner, 4, contact_of[static_cast<std::size_t>(p)]);
        }
    }
    return out;
}

}  // namespace weft
