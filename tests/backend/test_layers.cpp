// Stacked woven layers with frictional inter-layer contact (thesis Sec. 4.4,
// Fig. 4.3; model/layers.hpp): where contact nodes are created and with
// which arc lengths, the consistency of the resulting model, a stack at rest,
// per-node Coulomb limits, and Coulomb stick/slip between the layers on an
// incline (the friction_incline example's scene, EIL stepper).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <weft/backend/yarn_stepper.hpp>
#include <weft/model/eil_assignment.hpp>
#include <weft/model/layers.hpp>
#include <weft/solver/eigen_yarn_system.hpp>

#include "../../examples/friction_incline/friction_incline.hpp"
#include "support/random.hpp"
#include "support/schemes.hpp"
#include "support/yarn_patches.hpp"

using weft::LayerContact;
using weft::WovenPatch;
using weft::YarnModel;
using weft::YarnSegment;
using weft::YarnStepper;
using Vec3 = weft::Vec3<double>;

namespace {

struct Stack {
    YarnModel<double> model;
    WovenPatch top, bottom;
    int top_first = 0, bottom_first = 0;
    int bottom_yarns = 0;  ///< yarns 0 .. bottom_yarns − 1 are the bottom patch's
    std::vector<LayerContact> contacts;
};

/// A bottom patch of nb × nb nodes and a top patch of nt × nt stacked on it
/// (stacked_patch: half a spacing in-plane, no normal offset), fixed bottom.
Stack make_stack(int nb, int nt, double normal_offset = 0)
{
    Stack s;
    s.bottom.nx = s.bottom.ny = nb;
    s.top = weft::stacked_patch(s.bottom, nt, nt, normal_offset);
    s.model.material = weft_test::example_material(s.bottom);
    s.bottom_first = weft::add_woven_patch(s.model, s.bottom);
    s.bottom_yarns = static_cast<int>(s.model.yarns.size());
    s.top_first = weft::add_woven_patch(s.model, s.top);
    for (int n = s.bottom_first; n < s.bottom_first + nb * nb; ++n)
        for (int k = 0; k < 5; ++k) s.model.free_dof[5 * static_cast<std::size_t>(n) + k] = 0;
    s.contacts =
        weft::add_contact_layer<double>(s.model, s.top_first, s.top, s.bottom_first, s.bottom, 2 * s.bottom.radius);
    return s;
}

/// Counts the consistency checks that ran; fails with the reason otherwise.
int check_consistent(const YarnModel<double>& m)
{
    int checks = 0;
    const std::size_t nodes = static_cast<std::size_t>(m.node_count());
    REQUIRE(m.q.size() == 5 * nodes);
    REQUIRE(m.v.size() == 5 * nodes);
    REQUIRE(m.free_dof.size() == 5 * nodes);
    REQUIRE(m.anchors.size() == 2 * nodes);
    REQUIRE(m.over.size() == nodes);
    REQUIRE((m.friction_limit.empty() || m.friction_limit.size() == nodes));
    std::vector<YarnSegment> segments;
    std::vector<weft::YarnBend> bends;
    std::vector<int> on_yarn(2 * nodes, 0);
    for (std::size_t y = 0; y < m.yarns.size(); ++y) {
        const std::vector<int>& list = m.yarns[y];
        const int c = m.yarn_coordinate[y];
        for (std::size_t k = 0; k < list.size(); ++k) {
            ++on_yarn[2 * static_cast<std::size_t>(list[k]) + (c - 3)];
            if (k + 1 < list.size()) {
                // Sorted by arc length, strictly (no zero-length segment).
                CHECK(m.q[5 * list[k] + c] < m.q[5 * list[k + 1] + c]);
                ++checks;
                segments.push_back({list[k], list[k + 1], c});
            }
            if (k >= 1 && k + 1 < list.size()) bends.push_back({list[k - 1], list[k], list[k + 1], c});
        }
    }
    for (int count : on_yarn) CHECK(count <= 1);  // one yarn per coordinate at most
    REQUIRE(segments.size() == m.segments.size());
    REQUIRE(bends.size() == m.bends.size());
    CHECK(std::memcmp(segments.data(), m.segments.data(), segments.size() * sizeof(YarnSegment)) == 0);
    CHECK(std::memcmp(bends.data(), m.bends.data(), bends.size() * sizeof(weft::YarnBend)) == 0);
    CHECK_NOTHROW(weft::make_eil_assignment<double>(m));
    return checks;
}

}  // namespace

TEST_CASE("layers: contact nodes lie where the yarns cross, with both arc lengths", "[backend][layers][model]")
{
    // 6 × 6 on 4 × 4 (1 mm spacing): the top patch is shifted by (0.5, 0.5)
    // mm, so each top warp crosses the 3 bottom wefts inside its span, each
    // top weft the 3 bottom warps inside its: 4 · 3 + 4 · 3 = 24 contacts,
    // all midway between crossings on both yarns.
    const Stack s = make_stack(6, 4);
    REQUIRE(s.contacts.size() == 24u);
    const YarnModel<double>& m = s.model;
    const double spacing = s.bottom.spacing;
    const double bottom_left = -2.5e-3, top_left = -1.0e-3;  // first node of the patches along x (and y)
    CHECK(s.top.center[0] == Approx(0.5e-3));
    CHECK(m.q[5 * s.top_first] == Approx(top_left));
    int checks = 0, warp_contacts = 0;
    for (const LayerContact& c : s.contacts) {
        const std::size_t n = 5 * static_cast<std::size_t>(c.node);
        const Vec3 x(m.q[n], m.q[n + 1], m.q[n + 2]);
        CHECK(x(2) == 0.0);
        // Exactly on a bottom line along one axis and a top line along the other.
        if (c.top_coordinate == 3) {
            ++warp_contacts;
            // Top warp (along x, at its y) × bottom weft (along y, at its x).
            const double top_y = m.q[5 * static_cast<std::size_t>(m.yarns[c.top_yarn].front()) + 1];
            const double bottom_x = m.q[5 * static_cast<std::size_t>(m.yarns[c.bottom_yarn].front())];
            CHECK(x(1) == Approx(top_y).margin(1e-15));
            CHECK(x(0) == Approx(bottom_x).margin(1e-15));
            CHECK(m.q[n + 3] == Approx(x(0) - top_left).margin(1e-15));     // u on the top warp
            CHECK(m.q[n + 4] == Approx(x(1) - bottom_left).margin(1e-15));  // v on the bottom weft
            CHECK(m.over[c.node] == 1);
        } else {
            const double top_x = m.q[5 * static_cast<std::size_t>(m.yarns[c.top_yarn].front())];
            const double bottom_y = m.q[5 * static_cast<std::size_t>(m.yarns[c.bottom_yarn].front()) + 1];
            CHECK(x(0) == Approx(top_x).margin(1e-15));
            CHECK(x(1) == Approx(bottom_y).margin(1e-15));
            CHECK(m.q[n + 3] == Approx(x(0) - bottom_left).margin(1e-15));  // u on the bottom warp
            CHECK(m.q[n + 4] == Approx(x(1) - top_left).margin(1e-15));     // v on the top weft
            CHECK(m.over[c.node] == 0);
        }
        CHECK(m.yarn_coordinate[c.top_yarn] == c.top_coordinate);
        CHECK(m.yarn_coordinate[c.bottom_yarn] == 7 - c.top_coordinate);
        CHECK(c.top_yarn >= s.bottom_yarns);
        CHECK(c.bottom_yarn < s.bottom_yarns);
        // Midway: half a spacing from the nearest crossing on both yarns.
        for (int k = 3; k < 5; ++k) {
            const double s_rel = m.q[n + k] / spacing;
            CHECK(std::abs(s_rel - std::floor(s_rel) - 0.5) < 1e-9);
        }
        // Free x and arc lengths, anchors at the arc lengths.
        for (int k = 0; k < 5; ++k) CHECK(m.free_dof[n + k] == 1);
        CHECK(m.anchors[2 * c.node] == m.q[n + 3]);
        CHECK(m.anchors[2 * c.node + 1] == m.q[n + 4]);
        ++checks;
    }
    CHECK(warp_contacts == 12);
    REQUIRE(checks == 24);
    // No shear element at a contact node; the patches' own shears are kept.
    CHECK(m.shears.size() == 5u * 5u + 3u * 3u);
    for (const weft::YarnShear& sh : m.shears)
        for (const LayerContact& c : s.contacts)
            CHECK((sh.node != c.node && sh.along_u != c.node && sh.along_v != c.node));
}

TEST_CASE("layers: the stacked model is consistent and every segment is at rest length", "[backend][layers][model]")
{
    const Stack s = make_stack(6, 4);
    const int checks = check_consistent(s.model);
    // 12 + 12 yarns of the patches; each contact adds one segment to 2 yarns.
    CHECK(checks == 2 * 6 * 5 + 2 * 4 * 3 + 2 * 24);
    int segments = 0;
    for (const YarnSegment& seg : s.model.segments) {
        const Vec3 d = s.model.position(seg.node1) - s.model.position(seg.node0);
        const double ds = s.model.q[5 * seg.node1 + seg.coordinate] - s.model.q[5 * seg.node0 + seg.coordinate];
        CHECK(d.norm() == Approx(ds).epsilon(1e-12));
        ++segments;
    }
    REQUIRE(segments == checks);
    // Bad input: crossings on existing nodes (no in-plane shift) and a bad distance.
    Stack unshifted;
    unshifted.bottom.nx = unshifted.bottom.ny = 6;
    unshifted.top.nx = unshifted.top.ny = 4;
    unshifted.model.material = weft_test::example_material(unshifted.bottom);
    const int b = weft::add_woven_patch(unshifted.model, unshifted.bottom);
    const int t = weft::add_woven_patch(unshifted.model, unshifted.top);
    CHECK_THROWS_WITH(weft::add_contact_layer<double>(unshifted.model, t, unshifted.top, b, unshifted.bottom, 5e-4),
                      Catch::Contains("existing node"));
    CHECK_THROWS_WITH(weft::add_contact_layer<double>(unshifted.model, t, unshifted.top, b, unshifted.bottom, 0.0),
                      Catch::Contains("max_distance"));
    // Lifted by two radii with a smaller max_distance: no contact.
    Stack lifted = make_stack(6, 4, 5e-4);
    CHECK(lifted.contacts.size() == 24u);  // max_distance = 2 r: found, at the midpoint
    CHECK(lifted.model.q[5 * lifted.contacts.front().node + 2] == Approx(2.5e-4));
}

TEST_CASE("layers: a rotated layer gets its contacts where its yarns cross the other coordinate's below",
          "[backend][layers][model][rotation]")
{
    // A 7 × 7 top patch rotated by 30° (and off-centre, so that no crossing
    // falls on a node) on a 14 × 14 bottom patch. Expected contacts, counted
    // independently: every (top warp, bottom weft) and (top weft, bottom
    // warp) pair of straight yarns whose lines intersect inside both yarns.
    WovenPatch bottom;
    bottom.nx = bottom.ny = 14;
    WovenPatch top = bottom;
    top.nx = top.ny = 7;
    top.rotation = 30;
    top.center = {0.13e-3, -0.07e-3, 0};
    YarnModel<double> m;
    m.material = weft_test::example_material(bottom);
    const int b = weft::add_woven_patch(m, bottom);
    const int bottom_yarns = static_cast<int>(m.yarns.size());
    const int tf = weft::add_woven_patch(m, top);
    const std::vector<std::vector<int>> lists = m.yarns;  // straight yarns before any contact
    // The top patch is the bottom's grid turned by 30° about its centre.
    Vec3 along_u, along_v;
    weft::patch_axes(top, along_u, along_v);
    CHECK(along_u(0) == Approx(std::cos(M_PI / 6)));
    CHECK(along_u(1) == Approx(std::sin(M_PI / 6)));
    const Vec3 d01 = m.position(tf + 1) - m.position(tf);
    CHECK((d01 - 1e-3 * along_u).norm() < 1e-15);
    const Vec3 d07 = m.position(tf + 7) - m.position(tf);
    CHECK((d07 - 1e-3 * along_v).norm() < 1e-15);

    int expected = 0;
    std::vector<Vec3> crossings;
    for (std::size_t ty = static_cast<std::size_t>(bottom_yarns); ty < lists.size(); ++ty)
        for (std::size_t by = 0; by < static_cast<std::size_t>(bottom_yarns); ++by) {
            if (m.yarn_coordinate[ty] == m.yarn_coordinate[by]) continue;
            const Vec3 p0 = m.position(lists[ty].front()), p1 = m.position(lists[ty].back());
            const Vec3 q0 = m.position(lists[by].front()), q1 = m.position(lists[by].back());
            // 2D intersection p0 + a (p1 − p0) = q0 + c (q1 − q0) (all z = 0)
            const Vec3 dp = p1 - p0, dq = q1 - q0, r = q0 - p0;
            const double det = dp(0) * (-dq(1)) - dp(1) * (-dq(0));
            const double a = (r(0) * (-dq(1)) - r(1) * (-dq(0))) / det;
            const double c = (dp(0) * r(1) - dp(1) * r(0)) / det;
            if (a > 0 && a < 1 && c > 0 && c < 1) {
                ++expected;
                crossings.push_back(p0 + a * dp);
            }
        }
    const std::vector<LayerContact> contacts = weft::add_contact_layer<double>(m, tf, top, b, bottom, 2.5e-4);
    REQUIRE(expected > 40);
    REQUIRE(contacts.size() == static_cast<std::size_t>(expected));
    int checks = 0;
    for (const LayerContact& c : contacts) {
        const Vec3 x = m.position(c.node);
        // the contact is one of the independently found crossings
        double nearest = 1;
        for (const Vec3& k : crossings) nearest = std::min(nearest, (k - x).norm());
        CHECK(nearest < 1e-15);
        // its arc lengths are the distances along both straight yarns from their first node (arc length 0)
        const auto arc_on = [&](int yarn) {
            const std::vector<int>& list = lists[static_cast<std::size_t>(yarn)];
            const Vec3 s0 = m.position(list.front()), s1 = m.position(list.back());
            return (x - s0).dot((s1 - s0).normalized());
        };
        const int tc = c.top_coordinate, bc = 7 - c.top_coordinate;
        CHECK(m.q[5 * static_cast<std::size_t>(c.node) + tc] == Approx(arc_on(c.top_yarn)).margin(1e-15));
        CHECK(m.q[5 * static_cast<std::size_t>(c.node) + bc] == Approx(arc_on(c.bottom_yarn)).margin(1e-15));
        CHECK(m.yarn_coordinate[static_cast<std::size_t>(c.top_yarn)] == tc);
        CHECK(m.yarn_coordinate[static_cast<std::size_t>(c.bottom_yarn)] == bc);
        ++checks;
    }
    REQUIRE(checks == expected);
    CHECK(check_consistent(m) > 0);
    // Rotated by 90°, every top warp runs along the bottom wefts: no contact.
    YarnModel<double> turned;
    turned.material = m.material;
    top.rotation = 90;
    const int b90 = weft::add_woven_patch(turned, bottom);
    const int t90 = weft::add_woven_patch(turned, top);
    CHECK(weft::add_contact_layer<double>(turned, t90, top, b90, bottom, 2.5e-4).empty());
    // A rotation that is not a finite number is rejected, naming the field.
    top.rotation = std::nan("");
    CHECK_THROWS_WITH(weft::add_woven_patch(turned, top), Catch::Contains("rotation"));
}

TEST_CASE("layers: three stacked layers, the third a quarter spacing off the second", "[backend][layers][model]")
{
    // Layer 1 half a spacing off layer 0 (stacked_patch); layer 2 half a
    // spacing off layer 1 would put its contacts on the arc lengths of layer
    // 1's contacts with layer 0 (rejected); a quarter spacing works.
    WovenPatch p0;
    p0.nx = p0.ny = 10;
    const WovenPatch p1 = weft::stacked_patch(p0, 9, 9);
    YarnModel<double> m;
    m.material = weft_test::example_material(p0);
    const int f0 = weft::add_woven_patch(m, p0);
    const int f1 = weft::add_woven_patch(m, p1);
    const std::size_t c01 = weft::add_contact_layer<double>(m, f1, p1, f0, p0, 2.5e-4).size();
    CHECK(c01 == 2u * 9u * 8u);  // each of 9 + 9 top yarns crosses 8 yarns below inside its span
    YarnModel<double> half = m;
    const WovenPatch p2_half = weft::stacked_patch(p1, 8, 8);
    const int f2h = weft::add_woven_patch(half, p2_half);
    CHECK_THROWS_WITH(weft::add_contact_layer<double>(half, f2h, p2_half, f1, p1, 2.5e-4),
                      Catch::Contains("existing node"));
    WovenPatch p2 = p1;
    p2.nx = p2.ny = 8;
    p2.center = {p1.center[0] + 0.25e-3, p1.center[1] + 0.25e-3, 0};
    const int f2 = weft::add_woven_patch(m, p2);
    const std::vector<LayerContact> c12 = weft::add_contact_layer<double>(m, f2, p2, f1, p1, 2.5e-4);
    // a quarter off, layer 2 spans (−3.25, 3.75) mm: each of its 8 + 8 yarns crosses 7 of layer 1
    CHECK(c12.size() == 2u * 8u * 7u);
    CHECK(check_consistent(m) > 0);
    // the middle layer's yarns carry the contacts of both neighbours
    int middle_yarns_with_both = 0;
    for (std::size_t y = 0; y < m.yarns.size(); ++y) {
        bool below = false, above = false;
        for (int n : m.yarns[y]) {
            below = below || (n >= f2 - static_cast<int>(c01) && n < f2);  // a contact with layer 0
            above = above || n >= f2 + 64;                                 // a contact with layer 2
        }
        const bool middle =
            std::any_of(m.yarns[y].begin(), m.yarns[y].end(), [&](int n) { return n >= f1 && n < f1 + 81; });
        if (middle && below && above) ++middle_yarns_with_both;
    }
    CHECK(middle_yarns_with_both == 14);  // the 7 + 7 yarns of layer 1 inside layer 2's span
}

TEST_CASE("layers: a stack with no gravity stays at rest, with EIL on and off, one-step and full Newton",
          "[backend][layers][rest]")
{
    // Full Newton at rest: the residual of the stiff contact and anchor
    // springs is rounding noise (‖S b‖ ≈ 1e-15); the iteration must count it
    // as converged (ImplicitStepper::resolution_floor), not fail the line
    // search that cannot decrease it. With and without friction at the
    // contact nodes (without it, the first step at rest once failed).
    int runs = 0;
    for (const bool friction : {true, false}) {
        Stack s = make_stack(8, 5);
        if (friction) weft_test::enable_friction(s.model);
        for (const bool newton : {false, true}) {
            for (const bool eil : {false, true}) {
                weft::EilOptions<double> options;
                options.enabled = eil;
                YarnStepper<double> stepper(s.model, {}, Vec3::Zero(),
                                            newton ? weft_test::full_newton_options() : weft_test::one_step_options(),
                                            options);
                int iterations = 0;
                for (int step = 0; step < 30; ++step) {
                    const weft::YarnStepReport r = stepper.step(1e-3);
                    INFO("friction " << friction << ", Newton " << newton << ", EIL " << eil << ", step " << step
                                     << ": " << r.message);
                    REQUIRE(r.ok);
                    CHECK(r.eil_nodes == 0);
                    CHECK(r.halvings == 0);
                    iterations += r.newton_iterations;
                }
                const std::vector<double> q = weft::to_host(stepper.positions());
                const std::vector<double> v = weft::to_host(stepper.velocities());
                double dq = 0, dv = 0;
                for (std::size_t i = 0; i < q.size(); ++i) {
                    dq = std::max(dq, std::abs(q[i] - s.model.q[i]));
                    dv = std::max(dv, std::abs(v[i]));
                }
                INFO("friction " << friction << ", Newton " << newton << ", EIL " << eil << ": max |dq| " << dq
                                 << ", max |v| " << dv << ", Newton iterations " << iterations);
                CHECK(dq < 1e-15);
                CHECK(dv < 1e-12);
                // Full Newton: the predictor's residual is below the resolution
                // floor, so no step updates anything (ImplicitStepper::
                // resolution_floor); the one-step scheme solves once per step.
                CHECK(iterations == (newton ? 0 : 30));
                ++runs;
            }
        }
    }
    REQUIRE(runs == 8);
}

TEST_CASE("layers: detaching a contact from its top yarn keeps the model consistent", "[backend][layers][model]")
{
    Stack s = make_stack(6, 4);
    const LayerContact c = s.contacts.front();
    const std::size_t before = s.model.yarns[c.top_yarn].size();
    weft::set_friction_limit<double>(s.model, {c.node}, 1e-3);
    weft::detach_contact_node(s.model, c.node, c.top_coordinate);
    CHECK(s.model.yarns[c.top_yarn].size() == before - 1);
    CHECK(std::find(s.model.yarns[c.bottom_yarn].begin(), s.model.yarns[c.bottom_yarn].end(), c.node) !=
          s.model.yarns[c.bottom_yarn].end());
    CHECK(s.model.free_dof[5 * c.node + 3] == 0);
    CHECK(s.model.free_dof[5 * c.node + 4] == 0);
    CHECK(s.model.friction_limit[c.node] == 0.0);
    CHECK(check_consistent(s.model) > 0);
    CHECK_THROWS_WITH(weft::detach_contact_node(s.model, c.node, c.top_coordinate), Catch::Contains("no yarn"));
    CHECK_NOTHROW(YarnStepper<double>(s.model, {}, Vec3::Zero()));
}

TEST_CASE("layers: removing a contact takes it off both yarns and leaves consistent lists", "[backend][layers][model]")
{
    Stack s = make_stack(6, 4);
    const LayerContact c = s.contacts.front();
    const std::size_t top_before = s.model.yarns[c.top_yarn].size();
    const std::size_t bottom_before = s.model.yarns[c.bottom_yarn].size();
    weft::set_friction_limit<double>(s.model, {c.node}, 1e-3);
    s.model.v[5 * c.node] = 0.1;
    weft::remove_contact_node(s.model, c.node);
    CHECK(s.model.yarns[c.top_yarn].size() == top_before - 1);
    CHECK(s.model.yarns[c.bottom_yarn].size() == bottom_before - 1);
    int on = 0;
    for (const std::vector<int>& list : s.model.yarns)
        on += static_cast<int>(std::count(list.begin(), list.end(), c.node));
    CHECK(on == 0);
    for (int k = 0; k < 5; ++k) {
        CHECK(s.model.free_dof[5 * c.node + k] == 0);
        CHECK(s.model.v[5 * c.node + k] == 0.0);
    }
    CHECK(s.model.friction_limit[c.node] == 0.0);
    for (const weft::YarnSegment& g : s.model.segments) CHECK((g.node0 != c.node && g.node1 != c.node));
    for (const weft::YarnBend& b : s.model.bends) CHECK((b.prev != c.node && b.node != c.node && b.next != c.node));
    CHECK(check_consistent(s.model) > 0);
    // the stepper takes the model with the orphaned node, and steps
    YarnStepper<double> stepper(s.model, {}, Vec3(0, 0, -9.81));
    CHECK(stepper.step(1e-3).ok);
    // bad input: removed already, a crossing of one fabric, out of range
    CHECK_THROWS_WITH(weft::remove_contact_node(s.model, c.node), Catch::Contains("remove_contact_node node"));
    CHECK_THROWS_WITH(weft::remove_contact_node(s.model, s.top_first + 5), Catch::Contains("external_contact"));
    CHECK_THROWS_WITH(weft::remove_contact_node(s.model, -1), Catch::Contains("out of range"));
}

TEST_CASE("layers: a removed contact put back by attach_contact_node restores the lists, or lies at a new place",
          "[backend][layers][model]")
{
    Stack s = make_stack(6, 4);
    const YarnModel<double> original = s.model;
    const LayerContact c = s.contacts.front();
    const std::size_t i = 5 * static_cast<std::size_t>(c.node);
    weft::NewLayerContact<double> back;
    back.node = c.node;
    back.top_yarn = c.top_yarn;
    back.bottom_yarn = c.bottom_yarn;
    back.top_arc = s.model.q[i + static_cast<std::size_t>(c.top_coordinate)];
    back.bottom_arc = s.model.q[i + static_cast<std::size_t>(7 - c.top_coordinate)];
    back.position = s.model.position(c.node);
    back.velocity = Vec3(0.01, -0.02, 0.03);
    back.top_arc_rate = 0.004;
    weft::remove_contact_node(s.model, c.node);
    // Bad input first (the model stays as it is): a node on a yarn, arcs
    // outside the yarn or on a node, two yarns of one coordinate.
    {
        weft::NewLayerContact<double> bad = back;
        bad.node = s.contacts[1].node;
        CHECK_THROWS_WITH(weft::attach_contact_node(s.model, bad), Catch::Contains("still on a yarn"));
        bad = back;
        bad.top_arc = 1.0;
        CHECK_THROWS_WITH(weft::attach_contact_node(s.model, bad),
                          Catch::Contains("top_arc") && Catch::Contains("outside"));
        bad = back;
        bad.bottom_arc = s.model.q[5 * static_cast<std::size_t>(s.model.yarns[c.bottom_yarn][1]) +
                                   static_cast<std::size_t>(7 - c.top_coordinate)];
        CHECK_THROWS_WITH(weft::attach_contact_node(s.model, bad), Catch::Contains("lies on a node"));
        bad = back;
        for (std::size_t y = 0; y < s.model.yarns.size(); ++y)
            if (static_cast<int>(y) != c.top_yarn && s.model.yarn_coordinate[y] == s.model.yarn_coordinate[c.top_yarn])
                bad.bottom_yarn = static_cast<int>(y);
        REQUIRE(bad.bottom_yarn != c.bottom_yarn);
        CHECK_THROWS_WITH(weft::attach_contact_node(s.model, bad), Catch::Contains("one warp, one weft"));
        bad = back;
        bad.node = s.top_first;  // a crossing of the top fabric
        CHECK_THROWS_WITH(weft::attach_contact_node(s.model, bad), Catch::Contains("external_contact"));
    }
    // Back where it was: the lists, segments and bends are the original's.
    weft::attach_contact_node(s.model, back);
    CHECK(s.model.yarns == original.yarns);
    REQUIRE(s.model.segments.size() == original.segments.size());
    CHECK(std::memcmp(s.model.segments.data(), original.segments.data(),
                      original.segments.size() * sizeof(YarnSegment)) == 0);
    REQUIRE(s.model.bends.size() == original.bends.size());
    CHECK(check_consistent(s.model) > 0);
    for (int k = 0; k < 5; ++k) {
        CHECK(s.model.free_dof[i + static_cast<std::size_t>(k)] == 1);
        CHECK(s.model.q[i + static_cast<std::size_t>(k)] == original.q[i + static_cast<std::size_t>(k)]);
    }
    CHECK(s.model.v[i] == 0.01);
    CHECK(s.model.v[i + static_cast<std::size_t>(c.top_coordinate)] == 0.004);
    CHECK(s.model.anchors[2 * static_cast<std::size_t>(c.node)] == s.model.q[i + 3]);
    CHECK(s.model.anchors[2 * static_cast<std::size_t>(c.node) + 1] == s.model.q[i + 4]);
    CHECK(s.model.over[static_cast<std::size_t>(c.node)] == original.over[static_cast<std::size_t>(c.node)]);
    // At a new place: node c's at another contact's crossing (its own
    // yarns, arc lengths and position), that contact removed.
    const LayerContact other = s.contacts.back();
    REQUIRE(other.top_yarn != c.top_yarn);
    const std::size_t j = 5 * static_cast<std::size_t>(other.node);
    weft::NewLayerContact<double> moved = back;
    moved.top_yarn = other.top_yarn;
    moved.bottom_yarn = other.bottom_yarn;
    moved.top_arc = s.model.q[j + static_cast<std::size_t>(other.top_coordinate)];
    moved.bottom_arc = s.model.q[j + static_cast<std::size_t>(7 - other.top_coordinate)];
    moved.position = s.model.position(other.node);
    weft::remove_contact_node(s.model, c.node);
    weft::remove_contact_node(s.model, other.node);
    weft::attach_contact_node(s.model, moved);
    CHECK(check_consistent(s.model) > 0);
    std::vector<std::vector<int>> expected = original.yarns;
    for (std::vector<int>& list : expected) {
        list.erase(std::remove(list.begin(), list.end(), c.node), list.end());
        std::replace(list.begin(), list.end(), other.node, c.node);
    }
    CHECK(s.model.yarns == expected);
    CHECK(s.model.position(c.node) == original.position(other.node));
    // The stack, c in its new place and zero velocity there, stays at rest.
    for (int k = 0; k < 5; ++k) s.model.v[i + static_cast<std::size_t>(k)] = 0;
    YarnStepper<double> stepper(s.model, {}, Vec3::Zero(), weft_test::full_newton_options());
    for (int step = 0; step < 3; ++step) {
        const weft::YarnStepReport r = stepper.step(1e-3);
        INFO("step " << step << ": " << r.message);
        REQUIRE(r.ok);
        CHECK(r.max_speed < 1e-12);
    }
}

TEST_CASE("layers: per-node friction limits equal to the material's change nothing, bit for bit",
          "[backend][layers][friction]")
{
    // A moving, perturbed patch with friction (explicit drag, the default):
    // the per-node path must reproduce the material path exactly.
    weft_test::Random rng(5);
    YarnModel<double> model = weft_test::make_patch(6, 5, weft::DampingModel::strain_rate, 10.0);
    weft_test::enable_friction(model);
    weft_test::perturb(model, rng, 5e-5, 3e-5);
    for (std::size_t i = 0; i < model.v.size(); ++i) model.v[i] = model.free_dof[i] ? rng.uniform(-0.02, 0.02) : 0;
    YarnModel<double> per_node = model;
    weft::set_friction_limit<double>(per_node, {}, 0.0);  // materializes the material's μF_n
    REQUIRE(per_node.friction_limit.size() == static_cast<std::size_t>(model.node_count()));
    REQUIRE(per_node.friction_limit[0] == model.material.friction_coefficient * model.material.normal_force);
    const Vec3 g(0, 0, -9.81);
    // Full Newton (the default) needs up to 25 iterations and one halving in
    // step 2 of this patch, whose random velocities slide every crossing
    // (measured: 4, 4, 25 with one halving, 12, 9 iterations).
    weft::YarnStepperOptions<double> options;
    options.max_halvings = 4;
    YarnStepper<double> a(model, {}, g, options), b(per_node, {}, g, options);
    for (int step = 0; step < 5; ++step) {
        const weft::YarnStepReport ra = a.step(1e-3), rb = b.step(1e-3);
        INFO("step " << step << ": material limits: " << ra.message << "; per-node limits: " << rb.message);
        REQUIRE(ra.ok);
        REQUIRE(rb.ok);
    }
    const std::vector<double> qa = weft::to_host(a.positions()), qb = weft::to_host(b.positions());
    const std::vector<double> aa = weft::to_host(a.anchors()), ab = weft::to_host(b.anchors());
    REQUIRE(qa.size() == qb.size());
    CHECK(std::memcmp(qa.data(), qb.data(), qa.size() * sizeof(double)) == 0);
    CHECK(std::memcmp(aa.data(), ab.data(), aa.size() * sizeof(double)) == 0);
    // The Eigen path: a zero limit switches a node's anchors off, in both paths.
    YarnModel<double> off = model;
    for (int n = 0; n < off.node_count(); ++n) off.anchors[2 * n] = off.q[5 * n + 3] - 1e-6;
    weft::set_friction_limit<double>(off, {8}, 0.0);
    const weft::EigenYarnSystem<double> with = weft::assemble_yarn_system_eigen<double>(model, {}, g, 1e-3);
    YarnModel<double> displaced = model;
    displaced.anchors = off.anchors;
    const weft::EigenYarnSystem<double> base = weft::assemble_yarn_system_eigen<double>(displaced, {}, g, 1e-3);
    const weft::EigenYarnSystem<double> without = weft::assemble_yarn_system_eigen<double>(off, {}, g, 1e-3);
    REQUIRE(model.free_dof[5 * 8 + 3] == 1);
    const double spring = model.material.anchor_stiffness * 1e-6;  // −k_f (s − s̄)
    CHECK(base.f(5 * 8 + 3) - without.f(5 * 8 + 3) == Approx(-spring).epsilon(1e-6));
    CHECK(base.f(5 * 9 + 3) == without.f(5 * 9 + 3));
    CHECK(with.f.size() == base.f.size());
    // Bad limits are rejected with the field named.
    YarnModel<double> bad = model;
    bad.friction_limit.assign(3, 0.1);
    CHECK_THROWS_WITH(YarnStepper<double>(bad, {}, g), Catch::Contains("friction_limit"));
    bad.friction_limit.assign(static_cast<std::size_t>(model.node_count()), 0.1);
    bad.friction_limit[4] = -1;
    CHECK_THROWS_WITH(YarnStepper<double>(bad, {}, g), Catch::Contains("friction_limit[4]"));
}

TEST_CASE("layers: slip_in_step anchors are the spring below the limit and kinetic friction at it",
          "[backend][layers][friction]")
{
    const double k = 5e5, limit = 2e-7, s = 5e-3;
    // Below the limit: the spring.
    const auto below = weft::slipping_anchor<double>(s, s - 0.5 * limit / k, k, limit);
    CHECK(below.force(0) == Approx(-0.5 * limit));
    CHECK(below.df_dq(0, 0) == -k);
    // At the limit as the drag leaves it (rounded): constant force, no stiffness.
    const double anchor = weft::drag_anchor_to_limit<double>(s, s - 3 * limit / k, k, limit);
    const auto at = weft::slipping_anchor<double>(s, anchor, k, limit);
    CHECK(at.force(0) == -limit);
    CHECK(at.df_dq(0, 0) == 0.0);
    const auto negative = weft::slipping_anchor<double>(s, s + 2 * limit / k, k, limit);
    CHECK(negative.force(0) == limit);
    CHECK(negative.energy == Approx(limit * 2 * limit / k - limit * limit / (2 * k)));
}

namespace {

weft::examples::InclineRun incline(double degrees, double mu, double duration)
{
    weft::examples::InclineOptions o;
    o.angle_degrees = degrees;
    o.friction = mu;
    o.duration = duration;
    o.quiet = true;
    return weft::examples::run_friction_incline(o);
}

}  // namespace

TEST_CASE("layers: Coulomb friction between stacked layers on an incline", "[backend][layers][friction][incline]")
{
    // The friction_incline scene (8 × 8 on 12 × 12, 1 mm spacing, h = 1 ms,
    // EIL on), 15 steps. F_n per contact = m g cos θ / #contacts, so the
    // layers stick for tan θ < μ and slide with a = g (sin θ − μ cos θ).
    // Backward Euler from rest gives x_n = ½ a h² n (n + 1); the contacts stick
    // for the first one or two steps (the first step loads the stiff anchor
    // springs; then the last ones reach the limit), so the slide lies between
    // the curves delayed by 0 and by 3 steps (measured: exactly 2 for μ = 1).
    // Sticking: the anchors deflect by ≤ μF_n/k_f ~ 10⁻¹² m and the patch
    // stretches by ~10⁻¹⁰ m under its weight; 1 µm is far above both and
    // 50× below the smallest slide asserted.
    const double g = 9.81, h = 1e-3, duration = 0.015;
    const int n = 15;
    struct Case {
        double degrees, mu;
    };
    int checks = 0;
    for (const Case c : {Case{35, 1}, Case{40, 1}, Case{50, 1}, Case{55, 1}, Case{20, 0.5}, Case{24, 0.5},
                         Case{30, 0.5}, Case{35, 0.5}}) {
        const double theta = c.degrees * weft::Constants<double>::pi / 180;
        const weft::examples::InclineRun run = incline(c.degrees, c.mu, duration);
        INFO(c.degrees << " deg, mu " << c.mu << ": slid " << run.slide_distance << " m (" << run.message << ")");
        REQUIRE(run.ok);
        REQUIRE(run.samples.size() == static_cast<std::size_t>(n + 1));
        REQUIRE(run.contacts == 112);
        if (std::tan(theta) < c.mu) {
            CHECK(std::abs(run.slide_distance) < 1e-6);
            CHECK_FALSE(run.slid());
        } else {
            const double a = g * (std::sin(theta) - c.mu * std::cos(theta));
            REQUIRE(a > 0);
            CHECK(run.slide_distance > 0.5 * a * h * h * (n - 3) * (n - 2));
            CHECK(run.slide_distance < 0.5 * a * h * h * n * (n + 1) * (1 + 1e-6));
            CHECK(run.slide_distance > 5e-5);
        }
        ++checks;
    }
    REQUIRE(checks == 8);
}

TEST_CASE("layers: frictionless layers slide with a = g sin(theta)", "[backend][layers][friction][incline]")
{
    // No anchors at the contacts: the top patch slides from the first step,
    // x_n = ½ a h² n (n + 1) (backward Euler), a = g sin θ; 20 steps take it
    // past the first detachments (0.3 mm) without changing the motion.
    const double g = 9.81, h = 1e-3, theta = 30 * weft::Constants<double>::pi / 180;
    const int n = 20;
    const weft::examples::InclineRun run = incline(30, 0, n * h);
    REQUIRE(run.ok);
    REQUIRE(run.samples.size() == static_cast<std::size_t>(n + 1));
    CHECK(run.detached > 0);
    const double a = g * std::sin(theta);
    int checks = 0;
    for (int k = 5; k <= n; k += 5) {
        CHECK(run.samples[k].slide_distance == Approx(0.5 * a * h * h * k * (k + 1)).epsilon(0.02));
        ++checks;
    }
    REQUIRE(checks == 4);
}

TEST_CASE("layers: contact nodes switch parallel-yarn contact off on their segments", "[backend][layers][contact]")
{
    // thesis Sec. 4.3.2, rule (a): a node that represents a contact with
    // another fabric gets no parallel-yarn contact force.
    Stack s = make_stack(6, 5);
    const YarnModel<double>& m = s.model;
    REQUIRE(!s.contacts.empty());
    REQUIRE(m.external_contact.size() == static_cast<std::size_t>(m.node_count()));
    int flagged = 0;
    for (unsigned char f : m.external_contact) flagged += f;
    CHECK(flagged == static_cast<int>(s.contacts.size()));
    for (const weft::LayerContact& c : s.contacts) CHECK(m.external_contact[static_cast<std::size_t>(c.node)] == 1);

    // A segment from a contact to a crossing closer than the contact distance:
    // the penalty acts without the flag and not with it.
    YarnModel<double> close = m;
    close.material.contact_stiffness = 1e4;
    close.material.contact_min_distance = 0.9 * s.top.spacing;
    int checked = 0;
    for (const weft::YarnSegment& seg : close.segments) {
        const bool external = close.external_contact[static_cast<std::size_t>(seg.node0)] ||
                              close.external_contact[static_cast<std::size_t>(seg.node1)];
        weft::NodeBlocks<double, 2, 5> with, without;
        with.set_zero();
        without.set_zero();
        weft::ElementEnergies<double> e_with{}, e_without{};
        weft::evaluate_yarn_segment<double>(close.q.data(), close.v.data(), seg, close.material,
                                            weft::Vec3<double>::Zero(), 1e-3, with, e_with, {}, true);
        weft::evaluate_yarn_segment<double>(close.q.data(), close.v.data(), seg, close.material,
                                            weft::Vec3<double>::Zero(), 1e-3, without, e_without, {}, false);
        if (external) {
            CHECK(e_with.elastic > e_without.elastic);  // half a spacing < 0.9 spacing: the penalty acts
            ++checked;
        }
    }
    REQUIRE(checked > 0);
    // The assembled system (Eigen path) leaves it out on those segments.
    const weft::EigenYarnSystem<double> flagged_sys =
        weft::assemble_yarn_system_eigen<double>(close, {}, weft::Vec3<double>::Zero(), 1e-3);
    YarnModel<double> unflagged = close;
    unflagged.external_contact.clear();
    const weft::EigenYarnSystem<double> unflagged_sys =
        weft::assemble_yarn_system_eigen<double>(unflagged, {}, weft::Vec3<double>::Zero(), 1e-3);
    CHECK(flagged_sys.energy.elastic < unflagged_sys.energy.elastic);
}

TEST_CASE("layers: a fabric's own consecutive crossings keep parallel-yarn contact across contacts of another",
          "[backend][layers][contact]")
{
    // Rule (a) takes the contact nodes out of parallel-yarn contact; the
    // crossings of each fabric keep it with their neighbours on the yarn
    // across them (otherwise a stacked fabric's weave has none left, and its
    // crossings slide into each other). With the penalty acting below 1.2
    // spacings, every pair of consecutive own crossings (1 spacing apart)
    // adds ½ k (0.2 spacing)²; contacts (half a spacing from the crossings)
    // add nothing. Both the Eigen path and the backend.
    Stack s = make_stack(6, 5);
    YarnModel<double> m = s.model;
    const double k = 1e3, spacing = s.top.spacing;
    m.material.contact_min_distance = 1.2 * spacing;
    YarnModel<double> off = m;
    m.material.contact_stiffness = k;
    off.material.contact_stiffness = 0;
    const std::vector<weft::YarnParallelPair> pairs = weft::fabric_pairs(m);
    // 10 top yarns of 5 crossings and 12 bottom yarns of 6: 10·4 + 12·5 pairs
    REQUIRE(pairs.size() == 100u);
    for (const weft::YarnParallelPair& p : pairs) {
        CHECK(m.external_contact[static_cast<std::size_t>(p.node0)] == 0);
        CHECK(m.external_contact[static_cast<std::size_t>(p.node1)] == 0);
        CHECK(m.q[5 * p.node1 + p.coordinate] - m.q[5 * p.node0 + p.coordinate] == Approx(spacing));
    }
    CHECK_FALSE(weft::pairs_are_segments(pairs, m.segments));
    const double expected = 100 * 0.5 * k * (0.2 * spacing) * (0.2 * spacing);
    const weft::Vec3<double> g = weft::Vec3<double>::Zero();
    const double eigen = weft::assemble_yarn_system_eigen<double>(m, {}, g, 1e-3).energy.elastic -
                         weft::assemble_yarn_system_eigen<double>(off, {}, g, 1e-3).energy.elastic;
    CHECK(eigen == Approx(expected).epsilon(1e-9));
    YarnStepper<double> with(m, {}, g), without(off, {}, g);
    const double backend = with.energies().elastic - without.energies().elastic;
    CHECK(backend == Approx(expected).epsilon(1e-9));
    // Its force on the arc lengths: k·gap pushing the two crossings apart,
    // checked against central differences of the energy in one pair's s₁.
    // a top pair at the end of its yarn (no other pair moves its s₁)
    weft::YarnParallelPair p = pairs.front();
    for (const weft::YarnParallelPair& c : pairs) {
        bool last = c.node0 >= s.top_first;
        for (const weft::YarnParallelPair& d : pairs)
            if (d.coordinate == c.coordinate && d.node0 == c.node1) last = false;
        if (last) {
            p = c;
            break;
        }
    }
    REQUIRE(p.node0 >= s.top_first);
    const auto energy_at = [&](double ds) {
        YarnModel<double> moved = m;
        moved.q[5 * p.node1 + p.coordinate] += ds;
        return weft::assemble_yarn_system_eigen<double>(moved, {}, g, 1e-3).energy.elastic;
    };
    const double step = 1e-7;
    const double fd = -(energy_at(step) - energy_at(-step)) / (2 * step);
    const weft::EigenYarnSystem<double> sys = weft::assemble_yarn_system_eigen<double>(m, {}, g, 1e-3);
    const weft::EigenYarnSystem<double> sys_off = weft::assemble_yarn_system_eigen<double>(off, {}, g, 1e-3);
    const int dof = 5 * p.node1 + p.coordinate;
    CHECK(sys.f(dof) - sys_off.f(dof) == Approx(k * 0.2 * spacing).epsilon(1e-9));
    const double fd_off = [&] {
        YarnModel<double> a = off, b = off;
        a.q[dof] += step;
        b.q[dof] -= step;
        return -(weft::assemble_yarn_system_eigen<double>(a, {}, g, 1e-3).energy.elastic -
                 weft::assemble_yarn_system_eigen<double>(b, {}, g, 1e-3).energy.elastic) /
               (2 * step);
    }();
    CHECK(fd - fd_off == Approx(k * 0.2 * spacing).epsilon(1e-6));
    // Without contacts with another fabric the pairs are the segments.
    YarnModel<double> single = weft_test::make_patch(5, 4, weft::DampingModel::strain_rate);
    CHECK(weft::pairs_are_segments(weft::fabric_pairs(single), single.segments));
}

TEST_CASE("layers: a pair of one fabric's crossings that passed each other within a step is found",
          "[backend][layers][eil]")
{
    // The stepper halves a step after which PassedPair counts any pair.
    const std::vector<double> start = {0, 0, 0, 1e-3, 0, 0, 0, 0, 2e-3, 0};
    weft::yarn_stepper_detail::PassedPair<double> passed{nullptr, start.data()};
    const weft::YarnParallelPair p{0, 1, 3};
    const weft::YarnParallelPair back{1, 0, 3};
    std::vector<double> end = start;
    passed.q = end.data();
    CHECK(passed(p) == 0);     // unchanged
    CHECK(passed(back) == 0);  // listed in the wrong order at the start: not a pass
    end[8] = 1.5e-3;
    CHECK(passed(p) == 0);  // closer, still in order
    end[8] = 1e-3;
    CHECK(passed(p) == 1);  // met
    end[8] = 0.5e-3;
    CHECK(passed(p) == 1);  // passed
    end[3] = std::nan("");
    CHECK(passed(p) == 1);  // not a number counts as passed
    const weft::YarnParallelPair v{0, 1, 4};
    CHECK(passed(v) == 0);  // the other coordinate did not move
}

TEST_CASE("layers: contacts leaving a yarn are detached inside the step as the top patch slides off",
          "[backend][layers][detach][incline]")
{
    // The incline scene at 4 × 4 on 6 × 6, 60°, frictionless, EIL on, one
    // stepper for the whole run (no manual detaching as in the example). A
    // contact on a top warp stays at its bottom weft while the warp slides
    // through it and leaves the warp's lower end; a contact on a top weft
    // rides along its bottom warp and leaves that warp's upper end. Both are
    // u-yarns, so every contact leaves coordinate 3. Top wefts sit at x = −1,
    // 0, 1, 2 mm, the bottom warps end at 2.5 mm; top-warp contacts are 0.5,
    // 1.5, 2.5 mm from their warp's start: 7 contacts leave at a 0.5 mm slide,
    // 7 at 1.5, 7 at 2.5 and the last 3 at 3.5 mm (step 30 at a = g sin 60°).
    weft::examples::InclineOptions o;
    o.angle_degrees = 60;
    o.friction = 0;
    o.top_nodes = 4;
    o.bottom_nodes = 6;
    weft::examples::incline_detail::Scene scene = weft::examples::incline_detail::build_scene(o);
    const double g = 9.81, h = 1e-3, theta = o.angle_degrees * weft::Constants<double>::pi / 180;
    const int top_count = o.top_nodes * o.top_nodes;
    const double mass = weft::layer_mass(scene.model, scene.top_first, top_count);
    weft::examples::incline_detail::share_normal_force(scene, mass, g, theta, 0.0);
    const YarnModel<double> start = scene.model;
    REQUIRE(scene.contacts.size() == 24u);
    for (const LayerContact& c : scene.contacts) REQUIRE(start.friction_limit[c.node] == 0.0);

    weft::YarnStepperOptions<double> options;
    options.pcg.max_iterations = 5000;
    options.pcg.tolerance = 1e-8;
    options.max_halvings = 4;
    weft::EilOptions<double> eil;
    eil.enabled = true;
    eil.rest_segment_length = scene.bottom.spacing;
    const Vec3 gravity(g * std::sin(theta), 0, -g * std::cos(theta));
    YarnStepper<double> stepper(start, {}, gravity, options, eil);
    REQUIRE(stepper.detached_contacts() == 0);

    const double a = g * std::sin(theta);
    const int steps = 36;
    int reported = 0, checks = 0, first_detach = -1;
    std::vector<int> detached_at;  // step of each detach event
    for (int k = 1; k <= steps; ++k) {
        const weft::YarnStepReport r = stepper.step(h);
        INFO("step " << k << ": " << r.message);
        REQUIRE(r.ok);
        CHECK(r.retries == 0);
        reported += r.detached_contacts;
        CHECK(stepper.detached_contacts() == reported);
        if (r.detached_contacts > 0) {
            detached_at.push_back(k);
            if (first_detach < 0) first_detach = k;
        }
        const std::vector<double> q = weft::to_host(stepper.positions());
        const std::vector<double> v = weft::to_host(stepper.velocities());
        double fastest = 0, slide = 0;
        for (std::size_t i = 0; i < q.size(); ++i) {
            REQUIRE(std::isfinite(q[i]));
            REQUIRE(std::isfinite(v[i]));
            fastest = std::max(fastest, std::abs(v[i]));
        }
        for (int n = 0; n < top_count; ++n)
            slide += (q[5 * static_cast<std::size_t>(scene.top_first + n)] - scene.x0[static_cast<std::size_t>(n)]) /
                     top_count;
        // Frictionless: backward Euler's x_k = ½ a h² k (k + 1), detaches or not.
        CHECK(slide == Approx(0.5 * a * h * h * k * (k + 1)).epsilon(0.01));
        CHECK(fastest <= 1.01 * a * h * k);
        ++checks;
    }
    REQUIRE(checks == steps);
    std::string events;
    for (int k : detached_at) events += std::to_string(k) + " ";
    INFO("detach events at steps " << events);
    CHECK(stepper.detached_contacts() == 24);
    CHECK(detached_at.size() == 4u);
    // The first contacts leave at a 0.5 mm slide: ½ a h² k (k + 1) ≥ 0.5 mm from k = 11.
    CHECK(first_detach >= 11);
    CHECK(first_detach <= 13);

    // The topology the stepper now runs on: every contact left its u-yarn and
    // was removed from both yarns (remove_contact_node), all DoFs fixed and
    // no velocity, so no node with a fixed arc length stays mid-yarn.
    const YarnModel<double>& topology = stepper.topology();
    REQUIRE(topology.node_count() == start.node_count());
    REQUIRE(topology.yarns.size() == start.yarns.size());
    const auto on_yarn = [&](int y, int node) {
        const std::vector<int>& list = topology.yarns[static_cast<std::size_t>(y)];
        return std::find(list.begin(), list.end(), node) != list.end();
    };
    int contact_checks = 0;
    for (const LayerContact& c : scene.contacts) {
        const int u_yarn = c.top_coordinate == 3 ? c.top_yarn : c.bottom_yarn;
        const int v_yarn = c.top_coordinate == 3 ? c.bottom_yarn : c.top_yarn;
        CHECK_FALSE(on_yarn(u_yarn, c.node));
        CHECK_FALSE(on_yarn(v_yarn, c.node));
        CHECK(std::find(start.yarns[static_cast<std::size_t>(u_yarn)].begin(),
                        start.yarns[static_cast<std::size_t>(u_yarn)].end(),
                        c.node) != start.yarns[static_cast<std::size_t>(u_yarn)].end());
        const std::size_t i = 5 * static_cast<std::size_t>(c.node);
        for (std::size_t k = 0; k < 5; ++k) {
            CHECK(topology.free_dof[i + k] == 0);
            CHECK(topology.v[i + k] == 0.0);
        }
        // It left the u-yarn's arc-length range: below the start of a top warp,
        // above the end of a bottom warp.
        const std::vector<int>& left = topology.yarns[static_cast<std::size_t>(u_yarn)];
        const double lo = topology.q[5 * static_cast<std::size_t>(left.front()) + 3];
        const double hi = topology.q[5 * static_cast<std::size_t>(left.back()) + 3];
        if (c.top_coordinate == 3)
            CHECK(topology.q[i + 3] < lo);
        else
            CHECK(topology.q[i + 3] > hi);
        // The stepper's state agrees: its arc lengths no longer move.
        const std::vector<double> q = weft::to_host(stepper.positions());
        CHECK(q[i + 3] == topology.q[i + 3]);
        CHECK(q[i + 4] == topology.q[i + 4]);
        ++contact_checks;
    }
    REQUIRE(contact_checks == 24);
    // Every yarn lost exactly its contacts; the patches' own nodes stay.
    std::size_t before = 0, after = 0;
    for (std::size_t y = 0; y < start.yarns.size(); ++y) {
        before += start.yarns[y].size();
        after += topology.yarns[y].size();
    }
    CHECK(after == before - 2 * 24);
    // Segments and bends follow the lists, and the EIL layout accepts them.
    std::size_t segments = 0;
    for (const std::vector<int>& list : topology.yarns) segments += list.size() - 1;
    CHECK(topology.segments.size() == segments);
    CHECK_NOTHROW(weft::make_eil_assignment<double>(topology));
}

namespace {

/// Marks every contact of `s` for normal forces from the elements, μ = `mu`.
void use_element_normal_forces(Stack& s, double mu)
{
    s.model.layer_friction.assign(static_cast<std::size_t>(s.model.node_count()), -1.0);
    std::vector<int> nodes;
    for (const LayerContact& c : s.contacts) {
        s.model.layer_friction[static_cast<std::size_t>(c.node)] = mu;
        nodes.push_back(c.node);
    }
    weft::set_friction_limit<double>(s.model, nodes, 0.0);
    s.model.material.anchor_friction = weft::AnchorFriction::slip_in_step;
}

/// The top layer's yarn mass (kg): every yarn of the top patch.
double top_mass(const Stack& s)
{
    return weft::layer_mass(s.model, s.top_first, s.top.nx * s.top.ny);
}

}  // namespace

TEST_CASE("layers: a contact's normal force is the exchange force of the node's balance (finite differences)",
          "[backend][layers][normal-force]")
{
    // N = n · (m_t f_b − m_b f_t) / (m_t + m_b) with f = −∂E/∂x of each yarn's
    // stretch, bending and gravity energy through the node and m = ½ ρ_l ×
    // each yarn's arc-length span at the node; checked against central
    // differences of those energies, with n, the elements and the masses from
    // the yarn lists (not the stencil), on randomly perturbed stacks and
    // random gravity. No collider here (its term is checked by the balances
    // of the next test).
    weft_test::Random rng(4242);
    int checked = 0, undefined = 0;
    for (int trial = 0; trial < 3; ++trial) {
        Stack s = make_stack(7, 4);
        weft_test::perturb(s.model, rng, trial == 2 ? 2e-4 : 3e-5, 1e-5);  // trial 2: large kinks
        const Vec3 gravity = 9.81 * Vec3(rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3), -1).normalized();
        std::vector<int> nodes, tops;
        for (const LayerContact& c : s.contacts) {
            nodes.push_back(c.node);
            tops.push_back(c.top_coordinate);
        }
        const std::vector<weft::LayerContactStencil> stencils =
            weft::layer_contact_stencils(nodes, tops, s.model.node_count(), s.model.segments, s.model.bends);
        REQUIRE(stencils.size() == s.contacts.size());
        for (std::size_t k = 0; k < s.contacts.size(); ++k) {
            const LayerContact& c = s.contacts[k];
            const std::vector<double>& q = s.model.q;
            const std::vector<double> v(q.size(), 0.0);
            double n_force = 0;
            REQUIRE(weft::layer_contact_normal_force<double>(q.data(), v.data(), stencils[k], s.model.segments.data(),
                                                             s.model.bends.data(), s.model.material, gravity, nullptr,
                                                             0, s.model.radius, n_force));
            // The reference, per yarn: the elements through the node, found by scanning.
            const auto yarn_energy = [&](const std::vector<double>& at, int coordinate) {
                double e = 0;
                weft::ElementEnergies<double> energy{};
                for (const YarnSegment& g : s.model.segments) {
                    if (g.coordinate != coordinate || (g.node0 != c.node && g.node1 != c.node)) continue;
                    weft::NodeBlocks<double, 2, 5> blocks;
                    blocks.set_zero();
                    weft::evaluate_yarn_segment<double>(at.data(), v.data(), g, s.model.material, gravity, 0.0, blocks,
                                                        energy, {}, false);
                    e += energy.elastic + energy.gravity;
                }
                for (const weft::YarnBend& b : s.model.bends) {
                    if (b.coordinate != coordinate || (b.prev != c.node && b.node != c.node && b.next != c.node))
                        continue;
                    weft::NodeBlocks<double, 3, 5> blocks;
                    blocks.set_zero();
                    weft::evaluate_yarn_bend<double>(at.data(), v.data(), b, s.model.material, 0.0, blocks, energy);
                    e += energy.elastic;
                }
                return e;
            };
            const auto yarn_force = [&](int coordinate) {
                Vec3 f;
                const double step = 1e-8;
                for (int d = 0; d < 3; ++d) {
                    std::vector<double> plus = q, minus = q;
                    plus[5 * c.node + d] += step;
                    minus[5 * c.node + d] -= step;
                    f(d) = -(yarn_energy(plus, coordinate) - yarn_energy(minus, coordinate)) / (2 * step);
                }
                return f;
            };
            const int bottom_coordinate = 7 - c.top_coordinate;
            const Vec3 f_top = yarn_force(c.top_coordinate), f_bottom = yarn_force(bottom_coordinate);
            double m_top = 0, m_bottom = 0;
            const auto tangent = [&](int yarn, int coordinate, double& mass) {
                const std::vector<int>& list = s.model.yarns[static_cast<std::size_t>(yarn)];
                const auto at = std::find(list.begin(), list.end(), c.node) - list.begin();
                REQUIRE(at > 0);
                REQUIRE(at + 1 < static_cast<long>(list.size()));
                mass = 0.5 * s.model.material.linear_density *
                       (q[5 * list[at + 1] + coordinate] - q[5 * list[at - 1] + coordinate]);
                return Vec3(s.model.position(list[at + 1]) - s.model.position(list[at - 1]));
            };
            const Vec3 t_top = tangent(c.top_yarn, c.top_coordinate, m_top);
            const Vec3 t_bottom = tangent(c.bottom_yarn, bottom_coordinate, m_bottom);
            const Vec3 n = (c.top_coordinate == 3 ? t_top.cross(t_bottom) : t_bottom.cross(t_top)).normalized();
            CHECK(n.z() > 0.9);  // from the bottom layer to the top one
            const double reference = n.dot(m_top * f_bottom - m_bottom * f_top) / (m_top + m_bottom);
            const double scale = std::max(f_top.norm() + f_bottom.norm(), 1e-12);
            INFO("trial " << trial << " contact " << c.node << ": N " << n_force << ", FD " << reference);
            CHECK(std::abs(n_force - reference) <= 1e-6 * scale);
            ++checked;
        }
        // Undefined: no segment of the bottom yarn (e.g. EIL there), and parallel tangents.
        weft::LayerContactStencil cut = stencils.front();
        cut.bottom_segment[0] = cut.bottom_segment[1] = -1;
        double untouched = 123;
        CHECK_FALSE(weft::layer_contact_normal_force<double>(s.model.q.data(), s.model.v.data(), cut,
                                                             s.model.segments.data(), s.model.bends.data(),
                                                             s.model.material, gravity, nullptr, 0, 0.0, untouched));
        CHECK(untouched == 123);
        weft::LayerContactStencil parallel = stencils.front();
        parallel.bottom_segment[0] = parallel.top_segment[0];
        parallel.bottom_segment[1] = parallel.top_segment[1];
        CHECK_FALSE(weft::layer_contact_normal_force<double>(s.model.q.data(), s.model.v.data(), parallel,
                                                             s.model.segments.data(), s.model.bends.data(),
                                                             s.model.material, gravity, nullptr, 0, 0.0, untouched));
        undefined += 2;
    }
    CHECK(checked >= 3 * 20);
    CHECK(undefined == 6);
    // Bad input to the stencil builder.
    const Stack s = make_stack(6, 4);
    CHECK_THROWS_WITH(
        weft::layer_contact_stencils({s.contacts[0].node}, {5}, s.model.node_count(), s.model.segments, s.model.bends),
        Catch::Contains("top coordinate"));
    CHECK_THROWS_WITH(weft::layer_contact_stencils({-1}, {3}, s.model.node_count(), s.model.segments, s.model.bends),
                      Catch::Contains("out of range"));
    CHECK_THROWS_WITH(
        weft::layer_contact_stencils({s.contacts[0].node}, {}, s.model.node_count(), s.model.segments, s.model.bends),
        Catch::Contains("top_coordinates.size()"));
}

TEST_CASE("layers: the normal forces of a stack at rest carry the top layer's weight, with and without a collider",
          "[backend][layers][normal-force]")
{
    // Static balance of the top layer: the contacts' normal forces sum to its
    // weight. (a) Bottom fixed, no collider: the top yarns carry their
    // crossings to the contacts. (b) Both layers free on a plane: the plane
    // pushes the top layer's crossings directly (no thickness); their load is
    // passed to the contacts next to them. The old rule (weight / #contacts)
    // gives the same total on this flat stack.
    const Vec3 gravity(0, 0, -9.81);
    int cases = 0;
    for (const bool on_plane : {false, true}) {
        Stack s = make_stack(8, 5);
        s.model.material.damping = weft::DampingModel::strain_rate;
        s.model.material.stretch_damping = 3e-7;
        s.model.material.bending_damping = 1e-13;
        weft_test::enable_friction(s.model);
        std::vector<weft::Collider<double>> colliders;
        if (on_plane) {
            for (int n = s.bottom_first; n < s.bottom_first + 64; ++n)
                for (int k = 0; k < 5; ++k) s.model.free_dof[5 * static_cast<std::size_t>(n) + k] = 1;
            colliders.push_back(weft::plane_collider<double>(Vec3(0, 0, -s.model.radius), Vec3(0, 0, 1), 1e3, 0.0));
        }
        use_element_normal_forces(s, 0.3);
        weft::EilOptions<double> eil;
        eil.enabled = true;
        YarnStepper<double> stepper(s.model, colliders, gravity, {}, eil);
        REQUIRE(stepper.layer_contact_nodes().size() == s.contacts.size());
        for (int step = 0; step < 100; ++step) REQUIRE(stepper.step(1e-3).ok);
        const std::vector<double> normal = stepper.layer_normal_forces();
        double sum = 0;
        for (double n : normal) {
            CHECK(n > 0);
            sum += n;
        }
        const double weight = top_mass(s) * 9.81;

        INFO((on_plane ? "on a plane" : "on a fixed layer") << ": sum N " << sum << ", top weight " << weight);
        CHECK(sum == Approx(weight).epsilon(0.02));
        CHECK(stepper.pulled_contacts() == 0);
        ++cases;
    }
    REQUIRE(cases == 2);
}

TEST_CASE("layers: a contact whose normal force pulls is removed, one that pushes stays",
          "[backend][layers][normal-force]")
{
    // No gravity, bottom fixed; the top layer's crossings are moved (their x
    // fixed, with a velocity) away from the bottom layer (pulled: every
    // contact's N < 0) or into it (pushed: N > 0).
    const double speed = 0.02;
    int cases = 0;
    for (const double direction : {1.0, -1.0}) {
        for (const bool removal : {true, false}) {
            Stack s = make_stack(7, 4);
            weft_test::enable_friction(s.model);
            use_element_normal_forces(s, 0.3);
            for (int n = s.top_first; n < s.top_first + 16; ++n) {
                for (int k = 0; k < 3; ++k) s.model.free_dof[5 * static_cast<std::size_t>(n) + k] = 0;
                s.model.v[5 * static_cast<std::size_t>(n) + 2] = direction * speed;
            }
            weft::EilOptions<double> eil;
            eil.enabled = true;
            eil.remove_pulling_contacts = removal;
            YarnStepper<double> stepper(s.model, {}, Vec3::Zero(), {}, eil);
            int removed = 0;
            for (int step = 0; step < 3; ++step) {
                const weft::YarnStepReport r = stepper.step(1e-3);
                REQUIRE(r.ok);
                removed += r.pulled_contacts;
            }
            INFO((direction > 0 ? "pulled" : "pushed") << ", removal " << removal << ": removed " << removed);

            CHECK(removed == stepper.pulled_contacts());
            const std::vector<double> normal = stepper.layer_normal_forces();
            if (direction > 0 && removal) {
                CHECK(removed == static_cast<int>(s.contacts.size()));
                const YarnModel<double>& topology = stepper.topology();
                for (const LayerContact& c : s.contacts)
                    for (const std::vector<int>& list : topology.yarns)
                        CHECK(std::find(list.begin(), list.end(), c.node) == list.end());
                CHECK(check_consistent(topology) > 0);
            } else {
                CHECK(removed == 0);
                for (double n : normal) CHECK((direction > 0 ? n < 0 : n > 0));
            }
            ++cases;
        }
    }
    REQUIRE(cases == 4);
}

TEST_CASE("layers: layer_friction is validated by the stepper", "[backend][layers][normal-force]")
{
    Stack s = make_stack(6, 4);
    use_element_normal_forces(s, 0.3);
    s.model.layer_friction[static_cast<std::size_t>(s.top_first)] = 0.3;  // a crossing, no contact
    CHECK_THROWS_WITH(
        YarnStepper<double>(s.model, {}, Vec3::Zero()),
        Catch::Contains("layer_friction[" + std::to_string(s.top_first) + "]") && Catch::Contains("external_contact"));
    s.model.layer_friction[static_cast<std::size_t>(s.top_first)] = std::nan("");
    CHECK_THROWS_WITH(YarnStepper<double>(s.model, {}, Vec3::Zero()), Catch::Contains("finite"));
    s.model.layer_friction.resize(3);
    CHECK_THROWS_WITH(YarnStepper<double>(s.model, {}, Vec3::Zero()), Catch::Contains("layer_friction.size()"));
}
