// Yarn–yarn collision: the segment-pair finder against brute force (with
// the neighbour exclusion rebuilt independently), no pair in a flat patch,
// the contacts' assembled force and stiffness against finite differences, a
// patch dropped onto another that stops about one yarn diameter above it
// (crossing and parallel yarns, one-step and full Newton), a contact pulled
// apart that releases, a patch on a slope that sticks below atan(μ) and
// slides above, full Newton's bound on a pair's onset (yarn and triangle
// pairs), the pass-through check, and bad input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <weft/backend/yarn_stepper.hpp>
#include <weft/io/checkpoint.hpp>
#include <weft/model/woven.hpp>

#include "support/collision_settings.hpp"
#include "support/newton_jacobian.hpp"
#include "support/random.hpp"
#include "support/symmetric_eigen.hpp"
#include "support/yarn_patches.hpp"

using weft::YarnModel;
using weft::YarnStepper;
using Vec3 = weft::Vec3<double>;
using VectorX = Eigen::VectorXd;

namespace {

constexpr int B = weft::yarn_node_dofs;

Vec3 at(const std::vector<double>& q, int i)
{
    return Vec3(q[B * i], q[B * i + 1], q[B * i + 2]);
}

/// A bottom n × n patch (1 mm spacing) at z = 0, pinned, and a free top
/// m × m patch `gap` above it, turned by `rotation` degrees and shifted so
/// that no nodes coincide in the plane. Collision on with the given
/// thickness, stiffness and friction.
YarnModel<double> two_patches(int n, int m, double gap, double rotation, double thickness, double stiffness,
                              double friction, weft::DampingModel damping = weft::DampingModel::strain_rate)
{
    YarnModel<double> model = weft_test::make_patch(n, n, damping);
    weft::WovenPatch top;
    top.nx = top.ny = m;
    top.center = {0.23e-3, 0.37e-3, gap};
    top.rotation = rotation;
    const int first = weft::add_woven_patch(model, top);
    std::vector<int> bottom;
    for (int i = 0; i < first; ++i) bottom.push_back(i);
    weft::pin_nodes(model, bottom);
    model.collision.enabled = true;
    model.collision.thickness = thickness;
    model.collision.stiffness = stiffness;
    model.collision.friction = friction;
    return model;
}

using PairKey = std::pair<int, int>;  // segment indices, a < b

/// A segment's box swept over τ v, grown by `grow` on every side.
std::pair<Vec3, Vec3> swept_box(const YarnModel<double>& model, const weft::YarnSegment& s, double tau, double grow)
{
    Vec3 lo = at(model.q, s.node0), hi = lo;
    for (int i : {s.node0, s.node1})
        for (const Vec3& x : {at(model.q, i), Vec3(at(model.q, i) + tau * at(model.v, i))}) {
            lo = lo.cwiseMin(x);
            hi = hi.cwiseMax(x);
        }
    return {Vec3(lo - Vec3::Constant(grow)), Vec3(hi + Vec3::Constant(grow))};
}

/// By brute force, whether segments sa and sb (sb displaced by `offset`)
/// are a pair: their boxes swept over τ v (without the offset), grown by
/// `grow`, overlap, and their distance is below reach plus τ times the
/// largest relative speed of their nodes.
bool near_pair(const YarnModel<double>& model, const weft::YarnSegment& sa, const weft::YarnSegment& sb,
               const Vec3& offset, double tau, double reach, double grow)
{
    const auto ba = swept_box(model, sa, tau, grow), bb = swept_box(model, sb, tau, grow);
    if (!((ba.first.array() <= bb.second.array()).all() && (bb.first.array() <= ba.second.array()).all())) return false;
    double fastest = 0;
    for (int i : {sa.node0, sa.node1})
        for (int j : {sb.node0, sb.node1}) fastest = std::max(fastest, (at(model.v, i) - at(model.v, j)).norm());
    const double limit = reach + tau * fastest;
    return weft::closest_segment_segment<double>(at(model.q, sa.node0), at(model.q, sa.node1),
                                                 Vec3(at(model.q, sb.node0) + offset),
                                                 Vec3(at(model.q, sb.node1) + offset))
               .distance_squared < limit * limit;
}

/// By brute force: the segment pairs, sharing no node and with no end node
/// next to one of the other's along a segment, whose boxes swept over τ v
/// (grown by reach / 2) overlap and whose distance is below reach plus τ
/// times the largest relative speed of their nodes.
std::set<PairKey> brute_force_pairs(const YarnModel<double>& model, double tau, double reach)
{
    std::set<std::pair<int, int>> linked;
    for (const weft::YarnSegment& s : model.segments) {
        linked.insert({s.node0, s.node1});
        linked.insert({s.node1, s.node0});
    }
    const auto near = [&](int a, int b) { return a == b || linked.count({a, b}) > 0; };
    std::set<PairKey> out;
    const int count = static_cast<int>(model.segments.size());
    for (int a = 0; a < count; ++a)
        for (int b = a + 1; b < count; ++b) {
            const weft::YarnSegment &sa = model.segments[static_cast<std::size_t>(a)],
                                    &sb = model.segments[static_cast<std::size_t>(b)];
            bool excluded = false;
            for (int i : {sa.node0, sa.node1})
                for (int j : {sb.node0, sb.node1}) excluded = excluded || near(i, j);
            if (excluded) continue;
            if (near_pair(model, sa, sb, Vec3::Zero(), tau, reach, reach / 2)) out.insert({a, b});
        }
    return out;
}

VectorX host(const thrust::device_vector<double>& x)
{
    const std::vector<double> h = weft::to_host(x);
    return Eigen::Map<const VectorX>(h.data(), static_cast<Eigen::Index>(h.size()));
}

}  // namespace

TEST_CASE("yarn collision: the finder returns exactly the non-neighbour segment pairs within reach",
          "[backend][yarn][collision]")
{
    // A flat patch and a crumpled one 0.3 mm above it, turned by 30°, with
    // random velocities: pairs within one patch (its crumples) and between
    // the two.
    YarnModel<double> model = two_patches(8, 7, 0.3e-3, 30.0, 0.5e-3, 1.0, 0.0);
    weft_test::Random rng(11);
    for (int n = 0; n < model.node_count(); ++n)
        for (int k = 0; k < 3; ++k) {
            model.q[static_cast<std::size_t>(B * n + k)] += rng.uniform(-0.3e-3, 0.3e-3);
            model.v[static_cast<std::size_t>(B * n + k)] = rng.uniform(-0.2, 0.2);
        }
    std::map<int, int> segment_of;  // packed node pair → segment index
    const int nodes = model.node_count();
    for (std::size_t s = 0; s < model.segments.size(); ++s)
        segment_of[model.segments[s].node0 * nodes + model.segments[s].node1] = static_cast<int>(s);
    const thrust::device_vector<double> q(model.q.begin(), model.q.end()), v(model.v.begin(), model.v.end());
    int compared = 0;
    std::size_t most = 0;
    for (const double cell : {0.4e-3, 2e-3, 6e-3}) {
        weft::YarnContactFinder<double> finder(nodes, cell);
        finder.set_segments(model.segments, model.segments, {}, {});
        for (const double tau : {0.0, 2e-3})
            for (const double reach : {0.5e-3, 0.75e-3, 1.2e-3}) {
                std::set<PairKey> found;
                for (const weft::ClothContactElement<double>& c : weft::to_host(finder.find(q, v, tau, reach))) {
                    CHECK(c.kind == int(weft::ClothContactKind::segment_pair));
                    const int a = segment_of.at(c.nodes[0] * nodes + c.nodes[1]);
                    const int b = segment_of.at(c.nodes[2] * nodes + c.nodes[3]);
                    CHECK(a < b);
                    found.insert({a, b});
                }
                const std::set<PairKey> expected = brute_force_pairs(model, tau, reach);
                INFO("cell " << cell << " tau " << tau << " reach " << reach);
                CHECK(found == expected);
                most = std::max(most, expected.size());
                ++compared;
            }
    }
    CHECK(compared == 18);
    CHECK(most > 100);  // the comparison is not between empty sets

    // A flat patch alone has no pair within 1.5 yarn diameters: its
    // crossings' and neighbouring yarns' segments are excluded, and the
    // nearest others (two crossings apart) are √2 spacings away.
    YarnModel<double> flat = weft_test::make_patch(10, 10, weft::DampingModel::strain_rate);
    const thrust::device_vector<double> fq(flat.q.begin(), flat.q.end()), fv(flat.v.size(), 0.0);
    weft::YarnContactFinder<double> finder(flat.node_count(), 2e-3);
    finder.set_segments(flat.segments, flat.segments, {}, {});
    CHECK(finder.find(fq, fv, 0.0, 0.75e-3).empty());
    CHECK_FALSE(finder.find(fq, fv, 0.0, 1.5e-3).empty());  // … which a reach above √2 mm finds
    // The exclusion: a crossing's two yarns, a yarn's neighbours, and the
    // parallel yarn next to it (joined by a crossing yarn's segment).
    CHECK(finder.excluded(0, 1, 1, 2));
    CHECK(finder.excluded(0, 1, 10, 11));
    CHECK_FALSE(finder.excluded(0, 1, 22, 23));
}

namespace {

/// A bottom n × n patch (1 mm spacing, r = 0.25 mm) at z = 0, pinned, and
/// an m × m patch stacked on it by `add_contact_layer` (half a spacing off,
/// in its plane: model/layers.hpp), collision on at thickness 2r. With
/// `separate`, every contact is removed again (`remove_contact_node`): the
/// layers keep their places in the stack but nothing joins them.
YarnModel<double> stacked_pair(int n, int m, bool separate, double stiffness, double friction)
{
    YarnModel<double> model = weft_test::make_patch(n, n, weft::DampingModel::strain_rate);
    weft::WovenPatch bottom;
    bottom.nx = bottom.ny = n;
    const weft::WovenPatch top = weft::stacked_patch(bottom, m, m);
    const int first = weft::add_woven_patch(model, top);
    std::vector<int> pinned;
    for (int i = 0; i < first; ++i) pinned.push_back(i);
    weft::pin_nodes(model, pinned);
    const std::vector<weft::LayerContact> contacts =
        weft::add_contact_layer(model, first, top, 0, bottom, 2.5 * bottom.radius);
    REQUIRE(contacts.size() > 10);
    if (separate)
        for (const weft::LayerContact& c : contacts) weft::remove_contact_node(model, c.node);
    model.collision.enabled = true;
    model.collision.thickness = 2 * bottom.radius;
    model.collision.stiffness = stiffness;
    model.collision.friction = friction;
    return model;
}

/// The stack level of the yarn a segment lies on (YarnModel::yarn_layer).
int segment_level(const YarnModel<double>& model, const weft::YarnSegment& s)
{
    for (std::size_t y = 0; y < model.yarns.size(); ++y) {
        if (model.yarn_coordinate[y] != s.coordinate) continue;
        const std::vector<int>& list = model.yarns[y];
        if (std::find(list.begin(), list.end(), s.node0) != list.end() &&
            std::find(list.begin(), list.end(), s.node1) != list.end())
            return model.yarn_layer.at(y).level;
    }
    FAIL("segment " << s.node0 << "-" << s.node1 << " on no yarn");
    return -1;
}

}  // namespace

TEST_CASE("yarn collision: stacked layers are measured a thickness apart, so they touch nowhere at rest",
          "[backend][yarn][collision][layers]")
{
    // Two layers of one stack: joined by their contacts, then with every
    // contact removed (nothing joins them but they keep their levels).
    for (const bool separate : {false, true}) {
        INFO((separate ? "contacts removed" : "joined by contacts"));
        const YarnModel<double> model = stacked_pair(8, 7, separate, 1.0, 0.0);
        const double thickness = model.collision.thickness;
        // add_contact_layer records the stack: the bottom fabric's yarns at
        // level 0, the top's at level 1, one stack.
        REQUIRE(model.yarn_layer.size() == model.yarns.size());
        for (std::size_t y = 0; y < model.yarns.size(); ++y) {
            CHECK(model.yarn_layer[y].stack == 0);
            CHECK(model.yarn_layer[y].level == (y < 16 ? 0 : 1));
        }
        const int nodes = model.node_count();
        std::map<std::pair<int, int>, int> level_of;  // segment's nodes → level
        for (const weft::YarnSegment& s : model.segments) level_of[{s.node0, s.node1}] = segment_level(model, s);
        const auto at_contact = [&](const weft::YarnSegment& seg) {
            return model.external_contact[static_cast<std::size_t>(seg.node0)] ||
                   model.external_contact[static_cast<std::size_t>(seg.node1)];
        };
        const thrust::device_vector<double> q(model.q.begin(), model.q.end()), v(model.v.size(), 0.0);
        const std::vector<weft::YarnParallelPair> fabric = weft::fabric_pairs(model);
        weft::YarnContactFinder<double> finder(nodes, 2e-3, thickness);
        finder.set_layers(model);
        finder.set_segments(model.segments, model.segments, {}, {}, fabric);
        const std::vector<weft::ClothContactElement<double>> pairs =
            weft::to_host(finder.find(q, v, 0.0, 1.5 * thickness));
        // The contacts cut each fabric's segments in two; each half keeps
        // the whole fabric segment's exclusions: its ends are two of the
        // fabric's crossings one spacing apart with only contacts between.
        const std::vector<int> parents = weft::YarnContactFinder<double>::fabric_segment_ends(model.segments, fabric);
        int halves = 0;
        for (std::size_t k = 0; k < model.segments.size(); ++k) {
            const weft::YarnSegment& seg = model.segments[k];
            const int p0 = parents[2 * k], p1 = parents[2 * k + 1];
            if (!at_contact(seg)) {
                CHECK((p0 == seg.node0 && p1 == seg.node1));
                continue;
            }
            ++halves;
            CHECK_FALSE(model.external_contact[static_cast<std::size_t>(p0)]);
            CHECK_FALSE(model.external_contact[static_cast<std::size_t>(p1)]);
            CHECK(std::abs((at(model.q, p1) - at(model.q, p0)).norm() - 1e-3) < 1e-12);
        }
        if (separate)
            CHECK(halves == 0);
        else
            CHECK(halves > 200);  // 336: every top segment, and the bottom's under the top patch
        if (!separate) {
            // Joined: no pair at all within 1.5 thicknesses. The contacts
            // join every segment of the top layer to the bottom one, and a
            // flat fabric alone has no pair that near; without the fabric
            // segments' exclusions the halves that meet at a crossing, √½
            // spacing apart, would be pairs.
            CHECK(pairs.empty());
            weft::YarnContactFinder<double> halves_only(nodes, 2e-3, thickness);
            halves_only.set_layers(model);
            halves_only.set_segments(model.segments, model.segments, {}, {});
            CHECK(halves_only.find(q, v, 0.0, 1.5 * thickness).size() > 50);
        } else {
            // Nothing joins the layers: the pairs between them carry the
            // offset, none is within the thickness. The node normals of the
            // flat patches are +z (axis1 × axis2) on both layers, zero on
            // the removed contacts (on no yarn).
            int normals = 0;
            const std::vector<double> n = finder.normals();
            for (int i = 0; i < nodes; ++i) {
                const Vec3 ni(n[3 * i], n[3 * i + 1], n[3 * i + 2]);
                if (ni.norm() == 0) continue;
                CHECK((ni - Vec3(0, 0, 1)).norm() < 1e-12);
                ++normals;
            }
            CHECK(normals == 8 * 8 + 7 * 7);
            int between = 0;
            const weft::cloth_collision_detail::ContactDistance<double> distance{model.q.data(), B};
            for (const weft::ClothContactElement<double>& c : pairs) {
                const int la = level_of.at({c.nodes[0], c.nodes[1]}), lb = level_of.at({c.nodes[2], c.nodes[3]});
                const Vec3 offset(c.offset[0], c.offset[1], c.offset[2]);
                // The second segment moves by thickness × (its level − the first's) along +z.
                CHECK((offset - Vec3(0, 0, thickness * (lb - la))).norm() < 1e-15);
                between += la != lb ? 1 : 0;
                // The other layer's centre lines are a thickness away at least.
                CHECK(distance(c) >= thickness * (1 - 1e-12));
            }
            CHECK(between >= 50);
            CHECK(between == static_cast<int>(pairs.size()));  // a flat fabric alone has none
        }

        // The finder against brute force, with the offsets, the fabric
        // segments' exclusions and the joined layers' exclusion, on the
        // stack crumpled so that the top layer dips through the bottom one
        // in places (random positions ±0.3 mm and velocities), several
        // cells, reaches and sweep times.
        YarnModel<double> crumpled = model;
        weft_test::Random rng(5);
        for (int i = 0; i < nodes; ++i)
            for (int k = 0; k < 3; ++k) {
                crumpled.q[static_cast<std::size_t>(B * i + k)] += rng.uniform(-0.3e-3, 0.3e-3);
                crumpled.v[static_cast<std::size_t>(B * i + k)] = rng.uniform(-0.2, 0.2);
            }
        const thrust::device_vector<double> cq(crumpled.q.begin(), crumpled.q.end()),
            cv(crumpled.v.begin(), crumpled.v.end());
        int compared = 0, offset_pairs = 0, same_layer = 0;
        for (const double cell : {0.4e-3, 2e-3}) {
            weft::YarnContactFinder<double> f(nodes, cell, thickness);
            f.set_layers(crumpled);
            f.set_segments(crumpled.segments, crumpled.segments, {}, {}, fabric);
            for (const double tau : {0.0, 2e-3})
                for (const double reach : {0.5e-3, 0.75e-3}) {
                    const thrust::device_vector<weft::ClothContactElement<double>> found = f.find(cq, cv, tau, reach);
                    const std::vector<double> normal = f.normals();
                    std::set<std::vector<int>> got, expected;
                    for (const weft::ClothContactElement<double>& c : weft::to_host(found))
                        got.insert({c.nodes[0], c.nodes[1], c.nodes[2], c.nodes[3]});
                    // Brute force: every pair of segments not excluded, nor
                    // their fabric segments (the finder's own exclusion,
                    // tested above against a rebuilt one), nor on two levels
                    // with a contact at an end (every contact here joins the
                    // two layers), whose boxes swept over τ v, grown by half
                    // the reach plus half the largest offset (one
                    // thickness), overlap, offset by thickness × Δlevel ×
                    // the unit sum of the four end nodes' normals, within
                    // reach + τ × relative speed.
                    for (std::size_t a = 0; a < crumpled.segments.size(); ++a)
                        for (std::size_t b = a + 1; b < crumpled.segments.size(); ++b) {
                            const weft::YarnSegment &sa = crumpled.segments[a], &sb = crumpled.segments[b];
                            if (f.excluded(sa.node0, sa.node1, sb.node0, sb.node1) ||
                                f.excluded(parents[2 * a], parents[2 * a + 1], parents[2 * b], parents[2 * b + 1]))
                                continue;
                            const int dl = level_of.at({sb.node0, sb.node1}) - level_of.at({sa.node0, sa.node1});
                            if (dl != 0 && (at_contact(sa) || at_contact(sb))) continue;
                            const int ids[4] = {sa.node0, sa.node1, sb.node0, sb.node1};
                            Vec3 sum = Vec3::Zero();
                            for (int i : ids) sum += Vec3(normal[3 * i], normal[3 * i + 1], normal[3 * i + 2]);
                            const Vec3 offset = dl == 0 ? Vec3::Zero() : Vec3(thickness * dl * sum.normalized());
                            if (near_pair(crumpled, sa, sb, offset, tau, reach, (reach + thickness) / 2)) {
                                expected.insert({ids[0], ids[1], ids[2], ids[3]});
                                offset_pairs += dl != 0 ? 1 : 0;
                                same_layer += dl == 0 ? 1 : 0;
                            }
                        }
                    INFO("cell " << cell << " tau " << tau << " reach " << reach);
                    CHECK(got == expected);
                    ++compared;
                }
        }
        CHECK(compared == 8);
        CHECK(same_layer > 100);
        if (separate) CHECK(offset_pairs > 100);
    }
}

namespace {

/// Makes `node` EIL on its yarn of `coordinate` in the segment list: the
/// two segments of that coordinate ending at it become one, and the spring
/// that interpolates it there (with the neighbouring segments' far ends as
/// its outer nodes, −1 where there is none) is returned.
weft::EilSpring make_eil(std::vector<weft::YarnSegment>& segments, int node, int coordinate)
{
    const auto ending = [&](int at, bool as_start) {
        for (std::size_t k = 0; k < segments.size(); ++k)
            if (segments[k].coordinate == coordinate && (as_start ? segments[k].node0 : segments[k].node1) == at)
                return static_cast<int>(k);
        return -1;
    };
    const int before = ending(node, false), after = ending(node, true);
    REQUIRE(before >= 0);
    REQUIRE(after >= 0);
    weft::EilSpring s;
    s.node = node;
    s.coordinate = coordinate;
    s.before = segments[static_cast<std::size_t>(before)].node0;
    s.after = segments[static_cast<std::size_t>(after)].node1;
    const int outer_before = ending(s.before, false), outer_after = ending(s.after, true);
    s.outer_before = outer_before >= 0 ? segments[static_cast<std::size_t>(outer_before)].node0 : -1;
    s.outer_after = outer_after >= 0 ? segments[static_cast<std::size_t>(outer_after)].node1 : -1;
    segments[static_cast<std::size_t>(before)].node1 = s.after;
    segments.erase(segments.begin() + after);
    return s;
}

}  // namespace

TEST_CASE("yarn collision: a segment through an EIL node keeps the exclusions of the two it replaces",
          "[backend][yarn][collision][layers][eil]")
{
    // The joined stack of the test above has no pair within 1.5 thicknesses
    // at rest. An EIL node ends no segment of its EIL yarn: one segment
    // passes through it. Made EIL here: a crossing of the bottom fabric on
    // both of its yarns (its two yarns' segments then cross in one plane),
    // one on its v-yarn only (the segments of its u-yarn that end at the
    // contacts half a spacing from it then come within the thickness of
    // the v-yarn's segment through it), as two springs and as a pair
    // spring, and a contact between the layers on its top yarn. Still no
    // pair: each segment through an EIL node is excluded where the two it
    // replaces were. And the normal of a node EIL on a yarn comes from its
    // spring's chord: +z like every other node of the flat stack.
    const YarnModel<double> model = stacked_pair(8, 7, false, 1.0, 0.0);
    const double thickness = model.collision.thickness;
    const int nodes = model.node_count();
    const auto incident = [&](int n, int coordinate) {
        int count = 0;
        for (const weft::YarnSegment& s : model.segments)
            count += s.coordinate == coordinate && (s.node0 == n || s.node1 == n) ? 1 : 0;
        return count;
    };
    // Interior crossings of the bottom fabric (its 8 × 8 nodes come first;
    // two segments of each coordinate end there, cut by contacts), two on
    // different yarns, and a contact with the same, on none of their yarns.
    std::vector<int> interior, contacts;
    for (int n = 0; n < nodes; ++n)
        if (incident(n, 3) == 2 && incident(n, 4) == 2)
            (model.external_contact[static_cast<std::size_t>(n)] ? contacts : interior).push_back(n);
    const auto apart = [&](int a, int b) {
        const Vec3 d = at(model.q, a) - at(model.q, b);
        return std::abs(d.x()) > 1.5e-3 && std::abs(d.y()) > 1.5e-3;
    };
    std::vector<int> crossings;
    for (int n : interior)
        if (n < 8 * 8 && (crossings.empty() || apart(n, crossings[0]))) crossings.push_back(n);
    REQUIRE(crossings.size() >= 2);
    int contact = -1;
    for (int n : contacts)
        if (contact < 0 && apart(n, crossings[0]) && apart(n, crossings[1])) contact = n;
    REQUIRE(contact >= 0);
    const thrust::device_vector<double> q(model.q.begin(), model.q.end()), v(model.v.size(), 0.0);
    const std::vector<weft::YarnParallelPair> fabric = weft::fabric_pairs(model);
    for (int variant = 0; variant < 2; ++variant) {
        INFO((variant == 0 ? "EIL springs" : "a pair spring for the node EIL on both yarns"));
        std::vector<weft::YarnSegment> segments = model.segments;
        std::vector<weft::EilSpring> springs;
        std::vector<weft::EilPairSpring> pairs;
        const weft::EilSpring su = make_eil(segments, crossings[0], 3);
        const weft::EilSpring sv = make_eil(segments, crossings[0], 4);
        if (variant == 0) {
            springs = {su, sv};
        } else {
            weft::EilPairSpring p;
            p.node = crossings[0];
            for (const weft::EilSpring& s : {su, sv}) {
                const int k = s.coordinate - 3;
                p.before[k] = s.before;
                p.after[k] = s.after;
                p.outer_before[k] = s.outer_before;
                p.outer_after[k] = s.outer_after;
            }
            pairs = {p};
        }
        springs.push_back(make_eil(segments, crossings[1], 4));
        const int top_coordinate = incident(contact, 3) == 2 ? 3 : 4;
        springs.push_back(make_eil(segments, contact, top_coordinate));
        // The segments through the EIL crossings cross or pass within the
        // thickness of others of their own fabric: without the exclusions
        // these are pairs (checked by brute force: segments sharing no node
        // and not next to each other along the segments of the model).
        int close = 0;
        std::set<std::pair<int, int>> linked;
        const std::vector<weft::YarnSegment>* lists[2] = {&model.segments, &segments};
        for (const std::vector<weft::YarnSegment>* list : lists)
            for (const weft::YarnSegment& s : *list) {
                linked.insert({s.node0, s.node1});
                linked.insert({s.node1, s.node0});
            }
        for (std::size_t a = 0; a < segments.size(); ++a)
            for (std::size_t b = a + 1; b < segments.size(); ++b) {
                const weft::YarnSegment &sa = segments[a], &sb = segments[b];
                bool excluded = false;
                for (int i : {sa.node0, sa.node1})
                    for (int j : {sb.node0, sb.node1}) excluded = excluded || i == j || linked.count({i, j}) > 0;
                if (excluded) continue;
                const double d =
                    std::sqrt(weft::closest_segment_segment<double>(at(model.q, sa.node0), at(model.q, sa.node1),
                                                                    at(model.q, sb.node0), at(model.q, sb.node1))
                                  .distance_squared);
                close += d < thickness * (1 + 1e-9) ? 1 : 0;
            }
        CHECK(close >= 3);
        weft::YarnContactFinder<double> finder(nodes, 2e-3, thickness);
        finder.set_layers(model);
        finder.set_segments(model.segments, segments, springs, pairs, fabric);
        CHECK(finder.find(q, v, 0.0, 1.5 * thickness).empty());
        const std::vector<double> n = finder.normals();
        for (int i : {crossings[0], crossings[1], contact}) {
            INFO("node " << i);
            CHECK((Vec3(n[3 * i], n[3 * i + 1], n[3 * i + 2]) - Vec3(0, 0, 1)).norm() < 1e-12);
        }
    }
}

TEST_CASE("yarn collision: neighbouring yarns of one fabric stay no pair where the crossings between them are EIL",
          "[backend][yarn][collision][layers][eil]")
{
    // In the joined stack, two neighbouring crossings of the bottom fabric
    // on one u-yarn are made EIL on it (as where contacts slide along a
    // yarn past its crossings): neither ends a segment of that yarn, the
    // chains of segments between them and to their other neighbours break,
    // and the cut segments there keep their own ends
    // (fabric_segment_ends). The v-yarns through the two crossings are
    // still neighbouring parallel yarns of one fabric, 1 mm apart, which
    // the fabric's own elements keep apart: every v-segment ending at one
    // crossing is excluded with every v-segment ending at the other (the
    // fabric pair's own link; the springs' nodes between them are
    // contacts, so they do not link the two), and a reach beyond the
    // spacing finds none of them. Without that link they were pairs
    // wherever a fabric was compressed (tablecloth_three.json with
    // collision, docs/collision.md).
    const YarnModel<double> model = stacked_pair(8, 7, false, 1.0, 0.0);
    const double thickness = model.collision.thickness;
    const int nodes = model.node_count();
    const std::vector<weft::YarnParallelPair> fabric = weft::fabric_pairs(model);
    const auto ending = [&](const std::vector<weft::YarnSegment>& list, int n, int coordinate) {
        std::vector<weft::YarnSegment> out;
        for (const weft::YarnSegment& s : list)
            if (s.coordinate == coordinate && (s.node0 == n || s.node1 == n)) out.push_back(s);
        return out;
    };
    const auto cut_crossing = [&](int n) {
        return n >= 0 && n < 8 * 8 && !model.external_contact[static_cast<std::size_t>(n)] &&
               ending(model.segments, n, 3).size() == 2 && ending(model.segments, n, 4).size() == 2;
    };
    // Two bottom crossings joined by a fabric pair on their u-yarn, with
    // every segment of theirs cut by contacts with the top fabric.
    int first = -1, second = -1;
    for (const weft::YarnParallelPair& f : fabric)
        if (first < 0 && f.coordinate == 3 && cut_crossing(f.node0) && cut_crossing(f.node1)) {
            first = f.node0;
            second = f.node1;
        }
    REQUIRE(first >= 0);
    std::vector<weft::YarnSegment> segments = model.segments;
    weft::EilSpring a = make_eil(segments, first, 3);
    weft::EilSpring b = make_eil(segments, second, 3);
    // Each lies in a segment between two contacts; the neighbouring
    // segment towards the other is the one through the other.
    REQUIRE(a.after == b.before);
    a.outer_after = b.after;
    b.outer_before = a.before;
    // Between the two crossings the springs' nodes are contacts only.
    for (int n : {a.after, a.outer_after, b.before, b.outer_before}) {
        INFO("spring node " << n);
        CHECK(model.external_contact[static_cast<std::size_t>(n)]);
    }
    // The chains through the crossings are broken: the u-segments through
    // them keep their own ends as their fabric segments'.
    const std::vector<int> parents = weft::YarnContactFinder<double>::fabric_segment_ends(segments, fabric);
    int through = 0;
    for (std::size_t k = 0; k < segments.size(); ++k)
        for (const weft::EilSpring& s : {a, b})
            if (segments[k].node0 == s.before && segments[k].node1 == s.after) {
                CHECK(parents[2 * k] == s.before);
                CHECK(parents[2 * k + 1] == s.after);
                ++through;
            }
    REQUIRE(through == 2);
    weft::YarnContactFinder<double> finder(nodes, 2e-3, thickness);
    finder.set_layers(model);
    finder.set_segments(model.segments, segments, {a, b}, {}, fabric);
    const double reach = 1.1e-3;
    const thrust::device_vector<double> q(model.q.begin(), model.q.end()), v(model.v.size(), 0.0);
    std::set<std::vector<int>> found;
    for (const weft::ClothContactElement<double>& c : weft::to_host(finder.find(q, v, 0.0, reach))) {
        found.insert({c.nodes[0], c.nodes[1], c.nodes[2], c.nodes[3]});
        found.insert({c.nodes[2], c.nodes[3], c.nodes[0], c.nodes[1]});
    }
    int checked = 0;
    for (const weft::YarnSegment& p : ending(segments, first, 4))
        for (const weft::YarnSegment& r : ending(segments, second, 4)) {
            INFO("segments " << p.node0 << "-" << p.node1 << " and " << r.node0 << "-" << r.node1);
            const double d = std::sqrt(weft::closest_segment_segment<double>(at(model.q, p.node0), at(model.q, p.node1),
                                                                             at(model.q, r.node0), at(model.q, r.node1))
                                           .distance_squared);
            CHECK(d < reach);  // within reach: only the exclusion keeps the pair out
            CHECK(finder.excluded(p.node0, p.node1, r.node0, r.node1));
            CHECK(found.count({p.node0, p.node1, r.node0, r.node1}) == 0);
            ++checked;
        }
    CHECK(checked == 4);  // two v-segments end at each crossing
}

TEST_CASE("yarn collision: segments closer along their yarns than the thickness are no pair",
          "[backend][yarn][collision][eil]")
{
    // Sliding contacts leave segments shorter than the thickness (0.5 mm).
    // A straight u-yarn (nodes 0–7 along x, arc length u = x) with two
    // segments of 0.1 mm (nodes 3, 4), a v-yarn crossing it at node 4
    // (nodes 8, 4, 9 along y, v = y), and a separate u-yarn 0.3 mm above
    // (nodes 10, 11). Within the thickness and not excluded by the
    // neighbour links: segments 1–2 and 4–5 of the first yarn (collinear,
    // 0.2 mm apart along it), segment 1–2 and the v-yarn's 8–4 (0.2 mm
    // apart, crossing at node 4), and the yarn above with the first. Only
    // the last is a pair: the others lie closer than the thickness along
    // their yarns, on one yarn or to a common node.
    const double mm = 1e-3, thickness = 0.5 * mm;
    const std::vector<Vec3> x = {{0, 0, 0},
                                 {1 * mm, 0, 0},
                                 {2 * mm, 0, 0},
                                 {2.1 * mm, 0, 0},
                                 {2.2 * mm, 0, 0},
                                 {3.2 * mm, 0, 0},
                                 {4.2 * mm, 0, 0},
                                 {5.2 * mm, 0, 0},
                                 {2.2 * mm, -1 * mm, 0},
                                 {2.2 * mm, 1 * mm, 0},
                                 {3.2 * mm, 0, 0.3 * mm},
                                 {4.2 * mm, 0, 0.3 * mm}};
    const int nodes = static_cast<int>(x.size());
    std::vector<double> qh(static_cast<std::size_t>(B * nodes), 0.0);
    for (int i = 0; i < nodes; ++i) {
        for (int d = 0; d < 3; ++d) qh[static_cast<std::size_t>(B * i + d)] = x[static_cast<std::size_t>(i)](d);
        qh[static_cast<std::size_t>(B * i + 3)] = x[static_cast<std::size_t>(i)].x();
        qh[static_cast<std::size_t>(B * i + 4)] = x[static_cast<std::size_t>(i)].y();
    }
    std::vector<weft::YarnSegment> segments;
    for (int i = 0; i < 7; ++i) segments.push_back({i, i + 1, 3});
    segments.push_back({8, 4, 4});
    segments.push_back({4, 9, 4});
    segments.push_back({10, 11, 3});
    const thrust::device_vector<double> q(qh.begin(), qh.end()), v(qh.size(), 0.0);
    const auto found = [&](const weft::YarnContactFinder<double>& f) {
        std::set<std::vector<int>> out;
        for (const weft::ClothContactElement<double>& c : weft::to_host(f.find(q, v, 0.0, thickness))) {
            std::vector<int> a = {c.nodes[0], c.nodes[1]}, b = {c.nodes[2], c.nodes[3]};
            std::sort(a.begin(), a.end());
            std::sort(b.begin(), b.end());
            if (b < a) std::swap(a, b);
            out.insert({a[0], a[1], b[0], b[1]});
        }
        return out;
    };
    // Without a thickness (the finder's tests against brute force) the
    // rule is off: all of them are pairs.
    weft::YarnContactFinder<double> plain(nodes, 2 * mm);
    plain.set_segments(segments, segments, {}, {});
    const std::set<std::vector<int>> all = found(plain);
    CHECK(all.count({1, 2, 4, 5}) == 1);
    CHECK(all.count({1, 2, 4, 8}) == 1);
    CHECK(all.count({5, 6, 10, 11}) == 1);
    weft::YarnContactFinder<double> finder(nodes, 2 * mm, thickness);
    finder.set_segments(segments, segments, {}, {});
    const std::set<std::vector<int>> pairs = found(finder);
    CHECK(pairs.count({1, 2, 4, 5}) == 0);
    CHECK(pairs.count({1, 2, 4, 8}) == 0);
    CHECK(pairs.count({5, 6, 10, 11}) == 1);
    // The same yarn folded back on itself meets itself as any other: the
    // second yarn joined to the first's end (arc length going on) is far
    // from segment 5–6 along the chain.
    std::vector<weft::YarnSegment> folded = segments;
    folded.back() = {7, 11, 3};
    folded.push_back({11, 10, 3});
    std::vector<double> qf = qh;
    qf[static_cast<std::size_t>(B * 11 + 3)] = 6.2 * mm;
    qf[static_cast<std::size_t>(B * 10 + 3)] = 7.2 * mm;
    const thrust::device_vector<double> q_folded(qf.begin(), qf.end());
    weft::YarnContactFinder<double> fold(nodes, 2 * mm, thickness);
    fold.set_segments(folded, folded, {}, {});
    bool folded_pair = false;
    for (const weft::ClothContactElement<double>& c : weft::to_host(fold.find(q_folded, v, 0.0, thickness)))
        folded_pair = folded_pair ||
                      (std::set<int>{c.nodes[0], c.nodes[1], c.nodes[2], c.nodes[3]} == std::set<int>{5, 6, 10, 11});
    CHECK(folded_pair);
}

TEST_CASE("yarn collision: stacked layers that no contact joins any more meet again without passing through",
          "[backend][yarn][collision][layers]")
{
    // The top layer of a stack, its contacts removed, falls at 0.2 m/s
    // under gravity onto the pinned bottom layer in whose plane its centre
    // lines lie (model/layers.hpp). Measured a thickness above it, it comes
    // to rest with its centre lines on the bottom's (z ≈ 0, the penalty's
    // depth below at most), never through; without collision it falls
    // through.
    for (const bool collide : {true, false}) {
        YarnModel<double> model = stacked_pair(10, 7, true, 0.0, 0.3);
        const int first = 100;
        const double h = 1e-3;
        double mass = 0;
        for (const weft::YarnSegment& s : model.segments)
            mass += model.material.linear_density * (at(model.q, s.node1) - at(model.q, s.node0)).norm();
        model.collision.stiffness = 100 * mass / model.node_count() / (h * h);
        model.collision.enabled = collide;
        for (int i = first; i < first + 49; ++i) model.v[static_cast<std::size_t>(B * i + 2)] = -0.2;
        weft::StepperOptions<double> options;
        options.max_halvings = 4;
        options.newton_iterations = 8;
        options.newton_tolerance = 1e-4;
        YarnStepper<double> stepper(model, {}, Vec3(0, 0, -9.81), options);
        double lowest = 1, closest = 1;
        std::size_t interpenetrating = 0;
        int steps = 0;
        for (int s = 0; s < 150; ++s) {
            const auto r = stepper.step(h);
            INFO(r.message);
            REQUIRE(r.ok);
            ++steps;
            const VectorX q = host(stepper.positions());
            for (int i = first; i < first + 49; ++i) lowest = std::min(lowest, q(B * i + 2));
            if (collide) {
                closest = std::min(closest, stepper.min_contact_distance());
                interpenetrating += stepper.interpenetrating_pairs();
            }
        }
        const VectorX q = host(stepper.positions()), v = host(stepper.velocities());
        double final_low = 1, final_high = -1, fastest = 0;
        for (int i = first; i < first + 49; ++i) {
            final_low = std::min(final_low, q(B * i + 2));
            final_high = std::max(final_high, q(B * i + 2));
            fastest = std::max(fastest, v.segment<3>(B * i).norm());
        }
        INFO((collide ? "collision" : "no collision")
             << ": top layer's crossings lowest " << lowest << " m, at the end " << final_low << " to " << final_high
             << " m, speed " << fastest << ", closest pair " << closest);
        CHECK(steps == 150);
        if (collide) {
            CHECK(lowest > -0.1 * model.collision.thickness);
            CHECK(final_high < 0.3 * model.collision.thickness);
            CHECK(fastest < 0.02);
            CHECK(closest > 0.5 * model.collision.thickness);
            CHECK(interpenetrating == 0);
        } else {
            CHECK(final_high < -10 * model.collision.thickness);  // fell through
        }
    }
}

namespace {

/// The largest relative difference between a stepper's assembled force at
/// the model's state (more than 10 contact pairs) and central differences
/// (1e-9 m) of its elastic energy over every node position; each perturbed
/// stepper must find the same pairs. `checked` counts the compared entries.
double assembled_force_mismatch(const YarnModel<double>& model, int& checked)
{
    YarnStepper<double> stepper(model, {}, Vec3::Zero());
    REQUIRE(stepper.contact_pairs() > 10);
    stepper.assemble(1e-3);
    const VectorX force = host(stepper.force());
    const int pairs = stepper.contact_pairs();
    const double eps = 1e-9;
    double worst = 0;
    for (int n = 0; n < model.node_count(); ++n)
        for (int k = 0; k < 3; ++k) {
            const std::size_t i = static_cast<std::size_t>(B * n + k);
            YarnModel<double> plus = model, minus = model;
            plus.q[i] += eps;
            minus.q[i] -= eps;
            YarnStepper<double> sp(plus, {}, Vec3::Zero()), sm(minus, {}, Vec3::Zero());
            REQUIRE(sp.contact_pairs() == pairs);
            const double fd = -(sp.energies().elastic - sm.energies().elastic) / (2 * eps);
            worst = std::max(worst, std::abs(force(static_cast<Eigen::Index>(i)) - fd) / std::max(1e-4, std::abs(fd)));
            ++checked;
        }
    return worst;
}

}  // namespace

TEST_CASE("yarn collision: assembled contact force and stiffness against finite differences",
          "[backend][yarn][collision]")
{
    // A patch 0.3 mm above another (thickness 0.5 mm), turned by 30° and
    // ruffled, everything free, no gravity, no damping: the energy is
    // elastic (yarn elements plus the contacts' penalty).
    YarnModel<double> model = two_patches(5, 4, 0.3e-3, 30.0, 0.5e-3, 20.0, 0.0, weft::DampingModel::none);
    std::fill(model.free_dof.begin(), model.free_dof.end(), 1);
    weft_test::Random rng(4);
    weft_test::perturb(model, rng, 0.05e-3, 0.0);
    int checked = 0;
    CHECK(assembled_force_mismatch(model, checked) < 1e-4);
    CHECK(checked == 3 * model.node_count());

    // The contacts' stiffness alone (yarn elements off) is Gauss–Newton,
    // k ∇d ∇dᵀ: symmetric, PSD, zero on the arc lengths, and the force's
    // derivative up to k (r − d) ∇²d, small at d = 0.98 r.
    YarnModel<double> near = two_patches(5, 4, 0.49e-3, 30.0, 0.5e-3, 20.0, 0.0, weft::DampingModel::none);
    std::fill(near.free_dof.begin(), near.free_dof.end(), 1);
    near.material.stretch_stiffness = near.material.bending_stiffness = near.material.shear_stiffness = 0;
    near.material.contact_stiffness = 0;
    const double h = 1e-3;
    YarnStepper<double> ns(near, {}, Vec3::Zero());
    REQUIRE(ns.contact_pairs() > 10);
    ns.assemble(h);
    const Eigen::MatrixXd a = Eigen::MatrixXd(weft::to_eigen(ns.matrix()));
    // A = M − h² K with the same M at these positions: K from A at two step sizes.
    YarnStepper<double> rest(near, {}, Vec3::Zero());
    rest.assemble(2 * h);
    const Eigen::MatrixXd a2 = Eigen::MatrixXd(weft::to_eigen(rest.matrix()));
    const Eigen::MatrixXd kn = (a - a2) / (3 * h * h);  // (M − h²K) − (M − 4h²K) = 3h²K
    REQUIRE(kn.norm() > 1.0);
    double worst_column = 0;
    for (int n = 0; n < near.node_count(); ++n)
        for (int k = 0; k < B; ++k) {
            const std::size_t j = static_cast<std::size_t>(B * n + k);
            YarnModel<double> plus = near, minus = near;
            plus.q[j] += 1e-9;
            minus.q[j] -= 1e-9;
            YarnStepper<double> sp(plus, {}, Vec3::Zero()), sm(minus, {}, Vec3::Zero());
            sp.assemble(h);
            sm.assemble(h);
            const VectorX column = (host(sp.force()) - host(sm.force())) / 2e-9;
            // Against the matrix's size: the Gauss–Newton stiffness drops
            // k (r − d) ∇²d, whose tangential part (2 % of k per pair here)
            // is all that some columns of the force's derivative have.
            worst_column = std::max(worst_column,
                                    (column - kn.col(static_cast<Eigen::Index>(j))).norm() / std::max(1.0, kn.norm()));
            if (k >= 3)
                CHECK(kn.col(static_cast<Eigen::Index>(j)).norm() <= 1e-12 * kn.norm());  // arc lengths: untouched
        }
    CHECK(worst_column < 0.05);
    const Eigen::MatrixXd sym = 0.5 * (kn + kn.transpose());
    CHECK((kn - sym).norm() < 1e-9 * kn.norm());
    CHECK(weft_test::symmetric_eigenvalues(sym).maxCoeff() < 1e-9 * kn.norm());
}

TEST_CASE(
    "yarn collision: pairs within parallel_angle are parallel segment pairs, and the assembled force is "
    "the energy's gradient",
    "[backend][yarn][collision][fd]")
{
    // A patch 0.3 mm above another (thickness 0.5 mm), turned by 2 degrees
    // and ruffled a little: its yarns lie within a few degrees of the
    // parallel yarns below and across the others.
    YarnModel<double> model = two_patches(5, 4, 0.3e-3, 2.0, 0.5e-3, 20.0, 0.0, weft::DampingModel::none);
    std::fill(model.free_dof.begin(), model.free_dof.end(), 1);
    weft_test::Random rng(8);
    weft_test::perturb(model, rng, 0.02e-3, 0.0);
    const double angle = weft::degrees_to_radians(5.0);
    const thrust::device_vector<double> q(model.q.begin(), model.q.end()), v(model.v.size(), 0.0);
    weft::YarnContactFinder<double> plain(model.node_count(), 2e-3), split(model.node_count(), 2e-3);
    plain.set_segments(model.segments, model.segments, {}, {});
    split.set_segments(model.segments, model.segments, {}, {});
    split.set_parallel_angle(angle);
    const auto before = weft::to_host(plain.find(q, v, 0.0, 0.75e-3));
    const auto after = weft::to_host(split.find(q, v, 0.0, 0.75e-3));
    REQUIRE(before.size() == after.size());
    int parallel = 0, across = 0;
    for (std::size_t k = 0; k < after.size(); ++k) {
        CHECK(before[k].kind == int(weft::ClothContactKind::segment_pair));
        for (int i = 0; i < 4; ++i) CHECK(before[k].nodes[i] == after[k].nodes[i]);
        const Vec3 u = at(model.q, after[k].nodes[1]) - at(model.q, after[k].nodes[0]);
        const Vec3 w = at(model.q, after[k].nodes[3]) - at(model.q, after[k].nodes[2]);
        const double sine = u.cross(w).norm() / (u.norm() * w.norm());
        INFO("pair " << k << ": sin " << sine);
        CHECK(std::abs(sine - std::sin(angle)) > 1e-6);  // no pair sits on the threshold
        const bool is_parallel = after[k].kind == int(weft::ClothContactKind::parallel_segment_pair);
        CHECK(is_parallel == (sine < std::sin(angle)));
        parallel += is_parallel;
        across += !is_parallel;
    }
    INFO("parallel pairs " << parallel << ", others " << across);
    CHECK(parallel > 10);
    CHECK(across > 10);

    // The stepper's elastic force (the yarn elements and every contact
    // part) against central differences of its elastic energy.
    model.collision.parallel_angle = angle;
    int checked = 0;
    CHECK(assembled_force_mismatch(model, checked) < 1e-4);
    CHECK(checked == 3 * model.node_count());
}

namespace {

/// Contacts alone (yarn elements without stiffness, no damping): a patch
/// 0.3 mm above another for a thickness of 0.5 mm, turned by 30 degrees so
/// that the pairs cross, moving at random velocities up to 1 cm/s.
YarnModel<double> pressed_patches(weft_test::Random& rng)
{
    YarnModel<double> model = two_patches(5, 4, 0.3e-3, 30.0, 0.5e-3, 20.0, 0.0, weft::DampingModel::none);
    model.material.stretch_stiffness = model.material.bending_stiffness = model.material.shear_stiffness = 0;
    model.material.contact_stiffness = 0;
    for (std::size_t i = 0; i < model.v.size(); ++i) model.v[i] = model.free_dof[i] ? rng.uniform(-0.01, 0.01) : 0;
    return model;
}

}  // namespace

TEST_CASE("yarn collision: full Newton's exact Hessians hold the contacts' force derivative, Gauss-Newton does not",
          "[backend][yarn][collision][newton][fd]")
{
    // Contacts alone (yarn elements off, no gravity): a patch 0.3 mm above
    // another for a thickness of 0.5 mm, turned by 30 degrees so that the
    // pairs cross (beyond the parallel blend), moving at up to 1 cm/s.
    // With exact Hessians A holds k grad d grad d^T - k (r - d) grad^2 d,
    // the derivative of the contacts' force; Gauss-Newton drops the second
    // term, (r - d) / d = 2/3 of k across the normal here.
    weft_test::Random rng(8);
    const YarnModel<double> model = pressed_patches(rng);
    double mismatch[2] = {0, 0};
    for (const bool exact : {true, false}) {
        weft::YarnStepperOptions<double> options;
        options.newton_iterations = 8;
        options.exact_hessians = exact;
        YarnStepper<double> stepper(model, {}, Vec3::Zero(), options);
        REQUIRE(stepper.contact_pairs() > 10);
        // h^2 k (2e-5 N s^2/m) outweighs a node's mass (about 1e-7 kg), so A d shows the stiffness.
        mismatch[exact ? 0 : 1] = weft_test::newton_jacobian_mismatch(stepper, model, model.v, 1e-3, rng, 3);
    }
    INFO("relative mismatch of A d: exact Hessians " << mismatch[0] << ", Gauss-Newton " << mismatch[1]);
    CHECK(mismatch[0] < 1e-6);
    CHECK(mismatch[1] > 1e-2);
}

TEST_CASE("yarn collision: the per-term Jacobian check names the contacts as the term Gauss-Newton misstates",
          "[backend][yarn][collision][newton][fd]")
{
    // The setup of the test above, yarn elements present but without
    // stiffness: a step's first full-Newton solve with the check on. Its
    // terms tile the matrix and the residual (the "rest" is zero); with
    // exact Hessians every term is the derivative of its residual, with
    // Gauss-Newton the contacts alone are not (the elements' projection of
    // a zero Hessian is exact). The segments carry the consistent mass
    // M(q), whose derivative's antisymmetric part A leaves out (symmetric
    // for PCG; docs/scenes.md), a small known mismatch at u = v - v_n != 0.
    weft_test::Random rng(9);
    const YarnModel<double> model = pressed_patches(rng);
    const std::vector<std::string> names = {"segments",       "bends", "shears",   "eil_springs", "eil_pair_springs",
                                            "parallel_pairs", "nodes", "contacts", "rest"};
    int checked = 0;
    for (const bool exact : {true, false}) {
        weft::YarnStepperOptions<double> options;
        options.newton_iterations = 8;
        options.exact_hessians = exact;
        options.jacobian_check = true;
        YarnStepper<double> stepper(model, {}, Vec3::Zero(), options);
        REQUIRE(stepper.contact_pairs() > 10);
        const auto r = stepper.step(1e-3);
        INFO((exact ? "exact Hessians" : "Gauss-Newton") << ": " << r.message);
        // The first solve of each kind (an indefinite exact A is solved again projected).
        const auto found = std::find_if(r.jacobian_checks.begin(), r.jacobian_checks.end(),
                                        [&](const weft::JacobianCheck& x) { return x.exact_hessians == exact; });
        REQUIRE(found != r.jacobian_checks.end());
        const weft::JacobianCheck& c = *found;
        REQUIRE(c.terms.size() == names.size());
        double sum = 0, others = 0;
        for (std::size_t t = 0; t < names.size(); ++t) {
            const weft::JacobianCheck::Term& term = c.terms[t];
            INFO("term " << term.name << ": product " << term.product << ", mismatch " << term.mismatch[0] << ", "
                         << term.mismatch[1] << " (whole " << c.mismatch[0] << ", " << c.mismatch[1] << ")");
            CHECK(term.name == names[t]);
            sum += term.mismatch[1];
            if (term.name == "rest") {
                CHECK(term.product < 1e-12);
                CHECK(term.mismatch[1] < 1e-9);
                CHECK(term.worst_element[1] == -1);  // no elements of its own
                CHECK(term.element_nodes[1].empty());
            } else if (term.name == "contacts") {
                CHECK(term.product > 0.5);  // the contacts dominate A d
                if (exact)
                    CHECK(term.mismatch[1] < 1e-6);
                else
                    CHECK(term.mismatch[1] > 1e-2);
                // The worst pair by its own mismatch: one of the pairs, four
                // distinct nodes; with exact Hessians each pair is the
                // derivative of its force, with Gauss-Newton the term's
                // mismatch is the pairs' sum, so the worst pair holds at
                // least its share.
                for (int e = 0; e < 2; ++e) {
                    INFO("eps " << e << ": worst pair " << term.worst_element[e] << ", own mismatch "
                                << term.element_mismatch[e]);
                    REQUIRE(term.worst_element[e] >= 0);
                    CHECK(term.worst_element[e] < stepper.contact_pairs());
                    REQUIRE(term.element_nodes[e].size() == 4);
                    std::set<long> distinct(term.element_nodes[e].begin(), term.element_nodes[e].end());
                    CHECK(distinct.size() == 4);
                    for (long n : distinct) CHECK((n >= 0 && n < model.node_count()));
                }
                if (exact)
                    CHECK(term.element_mismatch[1] < 1e-6);
                else
                    CHECK(term.element_mismatch[1] * stepper.contact_pairs() >= term.mismatch[1] * (1 - 1e-9));
            } else {
                CHECK(term.mismatch[1] < (term.name == "segments" ? 1e-2 : 1e-6));
                others += term.mismatch[1];
            }
            ++checked;
        }
        // The whole mismatch is the terms' sum as vectors: between the
        // contacts' less the others' and the sum of all.
        CHECK(c.mismatch[1] <= sum * (1 + 1e-9) + 1e-15);
        CHECK(c.mismatch[1] >= c.terms[7].mismatch[1] - others - 1e-12);
    }
    CHECK(checked == 18);
}

TEST_CASE("yarn collision: a patch dropped onto another stops about one yarn diameter above it, never through it",
          "[backend][yarn][collision]")
{
    const double thickness = 0.5e-3;           // the yarn diameter
    for (const double rotation : {30.0, 0.0})  // crossing yarns, then parallel ones
        for (const bool full_newton : {false, true}) {
            YarnModel<double> model = two_patches(10, 6, 2e-3, rotation, thickness, 0.0, 0.3);
            const int bottom = 10 * 10;
            // Default stiffness, as scenes resolve it: 100 m̄ / h².
            const double h = 1e-3;
            double mass = 0;
            for (const weft::YarnSegment& s : model.segments)
                mass += model.material.linear_density * (at(model.q, s.node1) - at(model.q, s.node0)).norm();
            model.collision.stiffness = 100 * mass / model.node_count() / (h * h);
            weft::StepperOptions<double> options;
            options.max_halvings = 4;
            if (full_newton) {
                options.newton_iterations = 8;
                options.newton_tolerance = 1e-4;
            }
            YarnStepper<double> stepper(model, {}, Vec3(0, 0, -9.81), options);
            double closest = 1;
            int steps = 0;
            std::size_t interpenetrating = 0;
            for (int s = 0; s < 300; ++s) {
                const auto r = stepper.step(h);
                INFO(r.message);
                REQUIRE(r.ok);
                ++steps;
                closest = std::min(closest, stepper.min_contact_distance());
                interpenetrating += stepper.interpenetrating_pairs();
            }
            const VectorX q = host(stepper.positions()), v = host(stepper.velocities());
            double lowest = 1, highest = -1, fastest = 0;
            for (int i = bottom; i < model.node_count(); ++i) {
                lowest = std::min(lowest, q(B * i + 2));
                highest = std::max(highest, q(B * i + 2));
                fastest = std::max(fastest, v.segment<3>(B * i).norm());
            }
            INFO("rotation " << rotation << (full_newton ? ", full Newton" : ", one step") << ": top patch between "
                             << lowest << " and " << highest << " m, closest pair " << closest << " m, speed "
                             << fastest);
            CHECK(steps == 300);
            CHECK(interpenetrating == 0);
            CHECK(closest > 0.5 * thickness);
            CHECK(lowest > 0.8 * thickness);
            CHECK(highest < 1.5 * thickness);
            CHECK(fastest < 0.02);
        }
}

TEST_CASE("yarn collision: a contact pulled apart releases", "[backend][yarn][collision]")
{
    // A patch pressed 0.05 mm into another (thickness 0.5 mm), μ = 0.3,
    // pulled away by gravity along +z: the penalty only pushes, so the
    // patch leaves and keeps no pair within the thickness. Full Newton: the
    // pressed penalty's energy is returned on top of the fall, ½ g t² in t
    // (measured: 0.485 m/s after 40 ms against g t = 0.392; the releasing
    // step is halved once, Newton oscillating as the penalty switches off).
    // The one-step scheme linearizes the penalty at the step's start, which
    // pulls back beyond r in the step that leaves it: 0.345 m/s, as if held
    // 5 ms, and the pressed energy is lost (backward Euler on the stiff
    // contact); it still releases.
    for (const bool full_newton : {true, false}) {
        YarnModel<double> model = two_patches(6, 4, 0.45e-3, 30.0, 0.5e-3, 5.0, 0.3);
        weft_test::enable_friction(model);  // at the crossings: the patches hold together
        const int first = 36;
        weft::StepperOptions<double> options;
        options.max_halvings = 4;
        options.newton_iterations = full_newton ? 8 : 1;
        if (full_newton) options.newton_tolerance = 1e-5;
        YarnStepper<double> stepper(model, {}, Vec3(0, 0, 9.81), options);
        int halved = 0;
        REQUIRE(stepper.contact_pairs() > 0);
        REQUIRE(stepper.min_contact_distance() < 0.5e-3);
        const VectorX q0 = host(stepper.positions());
        const double h = 1e-3, duration = 0.04;
        for (int s = 0; s < 40; ++s) {
            const auto r = stepper.step(h);
            INFO(r.message);
            REQUIRE(r.ok);
            halved += r.halvings > 0 ? 1 : 0;
        }
        const VectorX q1 = host(stepper.positions()), v = host(stepper.velocities());
        double rise = 0, speed = 0;
        for (int i = first; i < model.node_count(); ++i) {
            rise += q1(B * i + 2) - q0(B * i + 2);
            speed += v(B * i + 2);
        }
        rise /= model.node_count() - first;
        speed /= model.node_count() - first;
        const double free_rise = 0.5 * 9.81 * duration * duration, free_speed = 9.81 * duration;
        INFO((full_newton ? "full Newton" : "one step")
             << ": rose " << rise << " m (free: " << free_rise << "), speed " << speed << " m/s (free: " << free_speed
             << "), " << stepper.contact_pairs() << " pairs, closest " << stepper.min_contact_distance() << " m");
        CHECK(stepper.min_contact_distance() > 0.5e-3);  // no pair within the thickness (+inf: none in reach)
        if (full_newton) {
            // The pressed penalty's energy comes back on top of the fall.
            CHECK(rise > free_rise);
            CHECK(speed > free_speed);
            CHECK(speed < 2 * free_speed);
            CHECK(halved <= 2);
        } else {
            CHECK(speed > 0.8 * free_speed);
            CHECK(speed < free_speed);
            CHECK(halved == 0);
        }
    }
}

TEST_CASE("yarn collision: a patch on a sloped patch sticks below atan(mu) and slides above",
          "[backend][yarn][collision][friction]")
{
    // A 6 × 6 patch (turned by 30°: its yarns cross the lower ones) resting
    // one diameter above a pinned 12 × 30 patch, both tilted by θ about x;
    // μ = 0.5 between the yarns (atan μ = 26.6°). Over 0.1 s it should stay
    // at 20° and slide ½ g (sin θ − μ cos θ) t² at 33°. Full Newton: the
    // one-step scheme's linearized contacts drag a patch sliding over
    // another (measured: 4.08 mm here instead of 6.15 mm, and frictionless
    // at 20° 15.2 mm of 16.8 mm; full Newton 6.62 and 16.9 mm).
    const double mu = 0.5, thickness = 0.5e-3, duration = 0.1, h = 1e-3;
    for (const double degrees : {20.0, 33.0}) {
        YarnModel<double> model = weft_test::make_patch(12, 30, weft::DampingModel::strain_rate);
        weft_test::enable_friction(model);  // at the crossings: the top patch holds together
        weft::WovenPatch top;
        top.nx = top.ny = 6;
        top.center = {0.23e-3, 8.37e-3, thickness};
        top.rotation = 30.0;
        const int first = weft::add_woven_patch(model, top);
        std::vector<int> bottom;
        for (int i = 0; i < first; ++i) bottom.push_back(i);
        weft::pin_nodes(model, bottom);
        const double theta = degrees * weft::Constants<double>::pi / 180, c = std::cos(theta), s = std::sin(theta);
        for (int n = 0; n < model.node_count(); ++n) {
            const Vec3 x = at(model.q, n);
            model.q[static_cast<std::size_t>(B * n + 1)] = c * x(1) - s * x(2);
            model.q[static_cast<std::size_t>(B * n + 2)] = s * x(1) + c * x(2);
        }
        double mass = 0;
        for (const weft::YarnSegment& seg : model.segments)
            mass += model.material.linear_density * (at(model.q, seg.node1) - at(model.q, seg.node0)).norm();
        model.collision = weft::ClothCollision<double>{true, thickness, 100 * mass / model.node_count() / (h * h), mu};
        weft::StepperOptions<double> options;
        options.newton_iterations = 8;
        options.newton_tolerance = 1e-5;
        YarnStepper<double> stepper(model, {}, Vec3(0, 0, -9.81), options);
        const VectorX q0 = host(stepper.positions());
        const int steps = static_cast<int>(std::lround(duration / h));
        for (int k = 0; k < steps; ++k) {
            const auto r = stepper.step(h);
            INFO(r.message);
            REQUIRE(r.ok);
        }
        const VectorX q1 = host(stepper.positions());
        const Vec3 downhill(0, -c, -s);
        double slide = 0;
        for (int n = first; n < model.node_count(); ++n)
            slide += (q1.segment<3>(B * n) - q0.segment<3>(B * n)).dot(downhill);
        slide /= model.node_count() - first;
        const double free_slide = 0.5 * 9.81 * (s - mu * c) * duration * duration;
        INFO(degrees << "°: slid " << slide << " m; Coulomb: " << std::max(0.0, free_slide) << " m");
        CHECK(stepper.contact_pairs() > 50);
        if (free_slide < 0) {
            // Sticking: no more than the creep below the slip velocity (9.2 mm/s).
            CHECK(std::abs(slide) < weft_test::sticking_creep_bound(h, mu, theta, duration));
        } else {
            CHECK(slide > 0.8 * free_slide);
            CHECK(slide < 1.2 * free_slide);
        }
    }
}

TEST_CASE("collision: one full-Newton update carries a pair at most half a thickness into contact",
          "[backend][collision][yarn][triangle][newton]")
{
    // Nodes x[4] in 5-DoF (yarn) and 3-DoF (triangle) layouts; the nodes
    // flagged in `moving` have velocity update dv_z, so a pair whose contact
    // points are z0 apart along z closes by -h dv_z at α = 1.
    const double r = 5e-4, h = 1e-3, cap = weft::contact_onset_cap * r;
    REQUIRE(cap == Approx(0.5 * r));
    const auto fraction = [&](const std::vector<Vec3>& x, const std::vector<bool>& moving, double dv_z, int kind) {
        double result[2];
        for (const int stride : {B, 3}) {
            std::vector<double> q(4 * stride, 0.0), dv(4 * stride, 0.0);
            for (int i = 0; i < 4; ++i) {
                for (int k = 0; k < 3; ++k) q[stride * i + k] = x[i](k);
                if (moving[i]) dv[stride * i + 2] = dv_z;
            }
            const weft::ClothContactElement<double> pair{{0, 1, 2, 3}, kind, 0.0};
            result[stride == 3] = stride == B
                                      ? weft::ContactOnsetFraction<double, B>{q.data(), dv.data(), h, r, cap}(pair)
                                      : weft::ContactOnsetFraction<double, 3>{q.data(), dv.data(), h, r, cap}(pair);
        }
        CHECK(result[0] == result[1]);  // the node layout does not matter
        return result[0];
    };
    // Segment a along x at z = 0; b along y (crossing) or along x (parallel:
    // the middle of the overlap) at height z0, moving. Point–triangle: the
    // point above a triangle in z = 0, moving.
    const auto segments = [](bool crossing, double z0) {
        return std::vector<Vec3>{Vec3(0, 0, 0), Vec3(1e-3, 0, 0), crossing ? Vec3(5e-4, -5e-4, z0) : Vec3(2e-4, 0, z0),
                                 crossing ? Vec3(5e-4, 5e-4, z0) : Vec3(1.2e-3, 0, z0)};
    };
    const auto point_triangle = [](double z0) {
        return std::vector<Vec3>{Vec3(2e-4, 3e-4, z0), Vec3(0, 0, 0), Vec3(1e-3, 0, 0), Vec3(0, 1e-3, 0)};
    };
    const std::vector<bool> b_moves{false, false, true, true}, point_moves{true, false, false, false};
    using Kind = weft::ClothContactKind;
    struct Case {
        const char* name;
        std::function<std::vector<Vec3>(double)> nodes;
        std::vector<bool> moving;
        int kind;
    };
    const std::vector<Case> cases{
        {"crossing yarn segments", [&](double z) { return segments(true, z); }, b_moves, int(Kind::segment_pair)},
        {"parallel yarn segments", [&](double z) { return segments(false, z); }, b_moves, int(Kind::segment_pair)},
        {"crossing triangle edges", [&](double z) { return segments(true, z); }, b_moves, int(Kind::edge_edge)},
        {"a point over a triangle", point_triangle, point_moves, int(Kind::point_triangle)}};
    for (const Case& c : cases) {
        INFO(c.name);
        // 1 mm apart, closing by 1 mm: stopped where the depth is the cap,
        // (d − r + cap) / closing = 0.75.
        CHECK(fraction(c.nodes(1e-3), c.moving, -1.0, c.kind) == Approx((1e-3 - r + cap) / 1e-3).epsilon(1e-12));
        // Closing by 0.6 mm ends 0.1 mm deep, less than the cap: the whole update.
        CHECK(fraction(c.nodes(1e-3), c.moving, -0.6, c.kind) == 1.0);
        // Moving apart, or already in contact (no onset to bound): the whole update.
        CHECK(fraction(c.nodes(1e-3), c.moving, 1.0, c.kind) == 1.0);
        CHECK(fraction(c.nodes(4e-4), c.moving, -1.0, c.kind) == 1.0);
        // Just outside contact and fast: the bound is cap / closing.
        CHECK(fraction(c.nodes(r), c.moving, -2.0, c.kind) == Approx(cap / 2e-3).epsilon(1e-12));
    }
}

TEST_CASE("yarn collision: a step in which yarns pass through each other is rejected",
          "[backend][yarn][collision][safeguard]")
{
    // A stiffness far too low to stop a patch thrown at 20 m/s: the step
    // ends with the top patch's yarns on the other side of the bottom's,
    // is reported as failed (no halving allowed) and undone.
    YarnModel<double> model = two_patches(6, 4, 0.4e-3, 30.0, 0.5e-3, 1e-6, 0.0);
    for (int i = 36; i < model.node_count(); ++i) model.v[static_cast<std::size_t>(B * i + 2)] = -20.0;
    weft::StepperOptions<double> options;
    options.max_halvings = 0;
    YarnStepper<double> stepper(model, {}, Vec3::Zero(), options);
    REQUIRE(stepper.contact_pairs() > 0);
    const VectorX before = host(stepper.positions());
    const auto r = stepper.step(1e-4);
    CHECK_FALSE(r.ok);
    CHECK(r.message.find("passed through") != std::string::npos);
    CHECK((host(stepper.positions()) - before).norm() == 0.0);
}

TEST_CASE("yarn collision: bad settings are rejected with the key named", "[backend][yarn][collision][errors]")
{
    const auto build = [](const YarnModel<double>& model) { YarnStepper<double> stepper(model, {}, Vec3::Zero()); };
    // Thickness 1.2e-3 m: above the 1 mm segments.
    weft_test::check_collision_settings(two_patches(4, 3, 2e-3, 30.0, 0.5e-3, 5.0, 0.3), 1.2e-3,
                                        "shortest yarn segment", build, true);
}

namespace {

/// The test above's stack (every contact removed, the top layer falling at
/// 0.2 m/s onto the pinned bottom one), its contacts taking their friction
/// from their normal force (layer_friction 0.3), collision's create_contacts
/// as given.
YarnModel<double> falling_layer(bool create, double h)
{
    YarnModel<double> model = stacked_pair(10, 7, true, 0.0, 0.3);
    const int first = 100;
    double mass = 0;
    for (const weft::YarnSegment& s : model.segments)
        mass += model.material.linear_density * (at(model.q, s.node1) - at(model.q, s.node0)).norm();
    model.collision.stiffness = 100 * mass / model.node_count() / (h * h);
    model.collision.create_contacts = create;
    std::vector<int> removed;
    model.layer_friction.assign(static_cast<std::size_t>(model.node_count()), -1.0);
    for (int n = first + 49; n < model.node_count(); ++n) {
        REQUIRE(model.external_contact.at(static_cast<std::size_t>(n)) == 1);
        model.layer_friction[static_cast<std::size_t>(n)] = 0.3;
        removed.push_back(n);
    }
    REQUIRE(removed.size() > 10);
    weft::set_friction_limit<double>(model, removed, 0.0);
    model.material.anchor_friction = weft::AnchorFriction::slip_in_step;
    for (int i = first; i < first + 49; ++i) model.v[static_cast<std::size_t>(B * i + 2)] = -0.2;
    return model;
}

weft::StepperOptions<double> falling_layer_options()
{
    weft::StepperOptions<double> options;
    options.max_halvings = 4;
    options.newton_iterations = 8;
    options.newton_tolerance = 1e-4;
    return options;
}

weft::EilOptions<double> falling_layer_eil()
{
    weft::EilOptions<double> eil;
    eil.enabled = true;
    return eil;
}

}  // namespace

TEST_CASE("yarn collision: create_contacts makes contacts again where stacked layers met, and they hold",
          "[backend][yarn][collision][layers]")
{
    // The test above, with the layers' contacts taking their friction from
    // their normal force (layer_friction) and EIL on: the top layer, every
    // contact removed, falls onto the pinned bottom one. With create_contacts
    // the segment pairs that rest on each other for create_after steps get
    // removed contact nodes back, each joining a top yarn to a bottom yarn of
    // the other coordinate where they cross, pushing (N > 0) at the end; the
    // fall itself is what collision alone gives (no pass-through).
    const double h = 1e-3;
    std::map<bool, int> made;
    for (const bool create : {true, false}) {
        const YarnModel<double> model = falling_layer(create, h);
        const int first = 100;
        YarnStepper<double> stepper(model, {}, Vec3(0, 0, -9.81), falling_layer_options(), falling_layer_eil());
        double lowest = 1;
        std::size_t interpenetrating = 0;
        int steps = 0, reported = 0;
        for (int s = 0; s < 150; ++s) {
            const auto r = stepper.step(h);
            INFO("step " << s << ": " << r.message);
            REQUIRE(r.ok);
            ++steps;
            reported += r.created_contacts;
            const VectorX q = host(stepper.positions());
            for (int i = first; i < first + 49; ++i) lowest = std::min(lowest, q(B * i + 2));
            interpenetrating += stepper.interpenetrating_pairs();
        }
        CHECK(steps == 150);
        CHECK(reported == stepper.created_contacts());
        CHECK(lowest > -0.1 * model.collision.thickness);
        CHECK(interpenetrating == 0);
        made[create] = stepper.created_contacts();
        INFO("create " << create << ": made " << stepper.created_contacts() << ", pulled " << stepper.pulled_contacts()
                       << ", detached " << stepper.detached_contacts() << ", declined " << stepper.declined_contacts());
        // Each contact on a yarn now: one top (level 1) and one bottom
        // (level 0) yarn of the other coordinate, `over` naming the top one,
        // pushing the layers apart.
        const YarnModel<double>& topology = stepper.topology();
        const std::vector<double> normal = stepper.layer_normal_forces();
        const VectorX q = host(stepper.positions());
        int joined = 0;
        for (std::size_t k = 0; k < stepper.layer_contact_nodes().size(); ++k) {
            const int n = stepper.layer_contact_nodes()[k];
            std::vector<int> yarns;
            for (std::size_t y = 0; y < topology.yarns.size(); ++y)
                if (std::count(topology.yarns[y].begin(), topology.yarns[y].end(), n) > 0)
                    yarns.push_back(static_cast<int>(y));
            if (yarns.empty()) continue;
            ++joined;
            REQUIRE(yarns.size() == 2);
            const int upper = topology.yarn_layer.at(yarns[0]).level > topology.yarn_layer.at(yarns[1]).level ? 0 : 1;
            const int top = yarns[upper], bottom = yarns[1 - upper];
            CHECK(topology.yarn_layer.at(top).level == 1);
            CHECK(topology.yarn_layer.at(bottom).level == 0);
            CHECK(topology.yarn_coordinate[top] != topology.yarn_coordinate[bottom]);
            CHECK(topology.over[n] == (topology.yarn_coordinate[top] == 3 ? 1 : 0));
            CHECK(std::abs(q(B * n + 2)) < model.collision.thickness);  // in the layers' plane
            INFO("contact node " << n << ": N = " << normal[k]);
            CHECK(normal[k] > 0);
        }
        // (Contacts made and removed again, their normal force pulling, are on no yarn.)
        CHECK(joined == stepper.created_contacts() - stepper.pulled_contacts() - stepper.detached_contacts());
    }
    INFO("contacts made: " << made[true]);
    CHECK(made[true] > 10);
    CHECK(made[false] == 0);
}

TEST_CASE("yarn collision: create_contacts needs EIL and contacts that can be put back",
          "[backend][yarn][collision][errors]")
{
    YarnModel<double> model = stacked_pair(6, 3, true, 10.0, 0.3);
    model.collision.create_contacts = true;
    weft::EilOptions<double> eil;
    eil.enabled = true;
    CHECK_THROWS_WITH(YarnStepper<double>(model, {}, Vec3::Zero(), {}, eil),
                      Catch::Contains("collision.create_contacts") && Catch::Contains("layer_friction"));
    model.layer_friction.assign(static_cast<std::size_t>(model.node_count()), -1.0);
    for (int n = 36 + 9; n < model.node_count(); ++n) model.layer_friction[static_cast<std::size_t>(n)] = 0.3;
    CHECK_THROWS_WITH(YarnStepper<double>(model, {}, Vec3::Zero()),
                      Catch::Contains("collision.create_contacts") && Catch::Contains("solver.eil.enabled"));
    CHECK_NOTHROW(YarnStepper<double>(model, {}, Vec3::Zero(), {}, eil));
    model.collision.create_after = 0;
    CHECK_THROWS_WITH(YarnStepper<double>(model, {}, Vec3::Zero(), {}, eil), Catch::Contains("create_after"));
}

namespace {

/// The falling layer (with `create` contacts or without) in two steppers,
/// the first of which has taken 3 steps: for checkpoints the first writes
/// and the second loads.
struct FallingLayers {
    double h = 1e-3;
    YarnModel<double> model;
    YarnStepper<double> a, b;
    explicit FallingLayers(bool create)
        : model(falling_layer(create, 1e-3)),
          a(model, {}, Vec3(0, 0, -9.81), falling_layer_options(), falling_layer_eil()),
          b(model, {}, Vec3(0, 0, -9.81), falling_layer_options(), falling_layer_eil())
    {
        for (int k = 0; k < 3; ++k) REQUIRE(a.step(h).ok);
    }
    /// Steps both `n` times; the number of steps after which their
    /// positions, velocities and contacts made are the same, bit for bit.
    int same_steps(int n)
    {
        int same = 0;
        for (int k = 0; k < n; ++k) {
            const weft::YarnStepReport ra = a.step(h), rb = b.step(h);
            REQUIRE(ra.ok);
            REQUIRE(rb.ok);
            INFO("step " << k << " after the checkpoint");
            const std::vector<double> qa = weft::to_host(a.positions()), qb = weft::to_host(b.positions());
            const std::vector<double> va = weft::to_host(a.velocities()), vb = weft::to_host(b.velocities());
            CHECK(ra.created_contacts == rb.created_contacts);
            CHECK(qa == qb);
            CHECK(va == vb);
            same += ra.created_contacts == rb.created_contacts && qa == qb && va == vb;
        }
        return same;
    }
};

}  // namespace

TEST_CASE("yarn collision: a stepper making contacts resumes from its checkpoint bit for bit",
          "[backend][yarn][collision][layers][checkpoint]")
{
    // Saved after step 3, when the layers' pairs have touched for two steps
    // and no contact is made yet (create_after 3): the loaded stepper makes
    // the same contacts from the counts it loaded and takes the same steps
    // (positions, velocities and counts).
    FallingLayers s(true);
    const int made_before = s.a.created_contacts();
    INFO("made by step 3: " << made_before);
    weft::CheckpointWriter out;
    s.a.save_state(out);
    const std::filesystem::path file = std::filesystem::temp_directory_path() / "weft_test_create_contacts.checkpoint";
    out.write(file);
    s.b.load_state(weft::CheckpointReader(file));
    CHECK(s.b.created_contacts() == made_before);
    CHECK(s.same_steps(30) == 30);
    CHECK(s.a.created_contacts() > made_before);
    CHECK(s.a.created_contacts() == s.b.created_contacts());
    std::filesystem::remove(file);
}

namespace {

/// A checkpoint writer that leaves out the named blocks: the file an
/// earlier build, which did not have them, wrote.
struct WriterWithout {
    weft::CheckpointWriter& out;
    std::set<std::string> left_out;
    template <typename T>
    void put(const std::string& name, const std::vector<T>& values)
    {
        if (!left_out.count(name)) out.put(name, values);
    }
    template <typename T>
    void put_value(const std::string& name, const T& value)
    {
        if (!left_out.count(name)) out.put_value(name, value);
    }
};

}  // namespace

TEST_CASE("yarn collision: a checkpoint written before create_contacts' blocks existed still resumes",
          "[backend][yarn][collision][layers][checkpoint]")
{
    // The falling layer without create_contacts, saved after step 3 without
    // the blocks create_contacts added: a stepper loading it takes the same
    // steps, bit for bit, as the one that wrote it. A block every build
    // writes is still required, by name.
    FallingLayers s(false);
    const std::set<std::string> added{"yarn.initial_segments", "yarn.meeting", "yarn.created", "yarn.declined"};
    const std::filesystem::path file = std::filesystem::temp_directory_path() / "weft_test_earlier_checkpoint";
    {
        weft::CheckpointWriter out;
        WriterWithout earlier{out, added};
        s.a.save_state(earlier);
        out.write(file);
    }
    const weft::CheckpointReader in(file);
    int absent = 0;
    for (const std::string& name : added) absent += in.has(name) ? 0 : 1;
    REQUIRE(absent == 4);
    REQUIRE(in.has("yarn.anchors"));
    s.b.load_state(in);
    CHECK(s.same_steps(20) == 20);
    // Without a block that every build writes, loading names it.
    {
        weft::CheckpointWriter out;
        WriterWithout broken{out, {"yarn.anchors"}};
        s.a.save_state(broken);
        out.write(file);
    }
    YarnStepper<double> c(s.model, {}, Vec3(0, 0, -9.81), falling_layer_options(), falling_layer_eil());
    CHECK_THROWS_WITH(c.load_state(weft::CheckpointReader(file)), Catch::Contains("\"yarn.anchors\""));
    std::filesystem::remove(file);
}
