// EoL/EIL node assignment of thesis Sec. 4.3.1 (model/eil_assignment.hpp):
// the per-yarn routine on hand-made and random yarns, the model-level
// assignment on woven patches, and the arc-length resets of Eq. (4.4–4.7).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <weft/element/eil_terms.hpp>
#include <weft/model/eil_assignment.hpp>
#include <weft/model/woven.hpp>

#include "support/random.hpp"
#include "support/yarn_patches.hpp"

using weft::EilAssignment;
using weft::YarnModel;
using weft_test::Random;
using Vec3 = Eigen::Vector3d;

namespace {

/// One yarn as the per-yarn routine sees it (list order).
struct YarnInput {
    std::vector<int> node;
    std::vector<double> s;
    std::vector<unsigned char> fixed;
};

struct YarnOutput {
    std::vector<int> order, sorted_node, eol_before, eol_after;
    std::vector<unsigned char> eil;
    std::vector<double> weight;
    weft::EilYarnSummary summary{};
};

YarnOutput run(const YarnInput& in, double d, std::vector<int> order = {})
{
    const int n = static_cast<int>(in.node.size());
    YarnOutput out;
    if (order.empty()) {
        order.resize(n);
        std::iota(order.begin(), order.end(), 0);
    }
    out.order = order;
    out.sorted_node.assign(n, -7);
    out.eol_before.assign(n, -7);
    out.eol_after.assign(n, -7);
    out.eil.assign(n, 7);
    out.weight.assign(n, -7.0);
    const weft::EilYarnSlots<double> slots{n,
                                           in.node.data(),
                                           in.s.data(),
                                           in.fixed.data(),
                                           out.order.data(),
                                           out.sorted_node.data(),
                                           out.eil.data(),
                                           out.eol_before.data(),
                                           out.eol_after.data(),
                                           out.weight.data()};
    out.summary = weft::assign_eil_yarn<double>(slots, d);
    return out;
}

/// A yarn whose list order is the given order, nodes numbered 0..n−1.
YarnInput yarn(const std::vector<double>& s, const std::vector<int>& fixed_nodes)
{
    YarnInput in;
    in.s = s;
    for (int k = 0; k < static_cast<int>(s.size()); ++k) in.node.push_back(k);
    in.fixed.assign(s.size(), 0);
    for (int f : fixed_nodes) in.fixed[f] = 1;
    return in;
}

/// EIL flags in sorted order as a string "EoL=0, EIL=1", for readable checks.
std::string tags(const YarnOutput& out)
{
    std::string t;
    for (unsigned char e : out.eil) t += e ? '1' : '0';
    return t;
}

/// The invariants every assignment must satisfy. Returns the number of checks.
int check_invariants(const YarnInput& in, const YarnOutput& out, double d)
{
    const int n = static_cast<int>(in.node.size());
    int checks = 0;
    std::vector<int> sorted_order = out.order;
    std::sort(sorted_order.begin(), sorted_order.end());
    std::vector<int> identity(n);
    std::iota(identity.begin(), identity.end(), 0);
    REQUIRE(sorted_order == identity);  // a permutation
    std::vector<int> slot_of(n);        // node id → sorted position (nodes are 0..n−1 here)
    for (int i = 0; i < n; ++i) {
        REQUIRE(out.sorted_node[i] == in.node[out.order[i]]);
        slot_of[out.sorted_node[i]] = i;
    }
    auto s = [&](int i) { return in.s[out.order[i]]; };
    for (int i = 1; i < n; ++i) CHECK(s(i - 1) <= s(i));
    ++checks;
    if (n == 0) return checks;
    CHECK(out.eil[0] == 0);
    CHECK(out.eil[n - 1] == 0);
    ++checks;
    int eil_count = 0, unresolved = 0, last = -1;
    for (int i = 0; i < n; ++i) {
        CHECK(out.eil[i] <= 1);
        if (in.fixed[out.order[i]]) CHECK(out.eil[i] == 0);
        if (!out.eil[i]) {
            CHECK(out.eol_before[i] == (last >= 0 ? out.sorted_node[last] : -1));
            CHECK(out.weight[i] == 0.0);
            if (last >= 0 && s(i) - s(last) < d) {
                // Only pairs that cannot be resolved: the earlier is the first
                // node or fixed, the later is the last node or fixed.
                CHECK((last == 0 || in.fixed[out.order[last]]));
                CHECK((i == n - 1 || in.fixed[out.order[i]]));
                ++unresolved;
            }
            last = i;
            continue;
        }
        ++eil_count;
        const int a = slot_of[out.eol_before[i]];
        const int b = slot_of[out.eol_after[i]];
        CHECK(a < i);
        CHECK(b > i);
        for (int j = a + 1; j < b; ++j) CHECK(out.eil[j] == 1);  // the nearest EoL nodes
        CHECK(out.eil[a] == 0);
        CHECK(out.eil[b] == 0);
        CHECK(out.weight[i] >= 0.0);
        CHECK(out.weight[i] <= 1.0);
        // thesis Eq. (4.3) applied to the arc length itself reproduces it
        CHECK((1 - out.weight[i]) * s(a) + out.weight[i] * s(b) == Approx(s(i)).margin(1e-14));
        // No gratuitous EIL node: it is within d of one of its brackets.
        CHECK(std::min(s(i) - s(a), s(b) - s(i)) < d);
    }
    checks += 4;
    CHECK(eil_count == out.summary.eil_count);
    CHECK(unresolved == out.summary.unresolved);
    return checks + 2;
}

/// A single straight u-yarn of a hand-made model: x = x0 + stretch · u · dir,
/// v fixed (no v-yarns). The yarn's list is nodes 0..n−1 in the order given.
YarnModel<double> straight_yarn(const std::vector<double>& u, const std::vector<int>& fixed_nodes, double stretch,
                                const Vec3& x0 = Vec3::Zero(), const Vec3& dir = Vec3::UnitX())
{
    YarnModel<double> m;
    const int n = static_cast<int>(u.size());
    std::vector<int> list;
    for (int k = 0; k < n; ++k) {
        const Vec3 x = x0 + stretch * u[k] * dir;
        m.q.insert(m.q.end(), {x(0), x(1), x(2), u[k], 0.0});
        m.v.insert(m.v.end(), 5, 0.0);
        m.free_dof.insert(m.free_dof.end(), {1, 1, 1, 1, 0});
        list.push_back(k);
    }
    for (int f : fixed_nodes) m.free_dof[5 * f + 3] = 0;
    m.yarns.push_back(list);
    m.yarn_coordinate.push_back(3);
    return m;
}

int slot_of_node(const EilAssignment<double>& a, int y, int node)
{
    for (int i = a.yarn_begin[y]; i < a.yarn_begin[y + 1]; ++i)
        if (a.sorted_node[i] == node) return i;
    FAIL("node " << node << " not on yarn " << y);
    return -1;
}

}  // namespace

TEST_CASE("eil assignment: nodes closer than the safety distance become EIL", "[model][eil][assignment]")
{
    const double d = 0.1;
    int checks = 0;
    {
        const YarnInput in = yarn({0, 1, 1.05, 2, 3}, {0, 4});
        const YarnOutput out = run(in, d);
        CHECK(tags(out) == "00100");
        CHECK(out.eol_before[2] == 1);
        CHECK(out.eol_after[2] == 3);
        CHECK(out.weight[2] == Approx(0.05));
        CHECK(out.summary.eil_count == 1);
        CHECK(out.summary.unresolved == 0);
        checks += 6 + check_invariants(in, out, d);
    }
    {
        // A run of close nodes: all within d of the last EoL node (1.0) are EIL.
        const YarnInput in = yarn({0, 1, 1.02, 1.04, 1.09, 1.2, 2}, {0, 6});
        const YarnOutput out = run(in, d);
        CHECK(tags(out) == "0011100");
        for (int i = 2; i <= 4; ++i) {
            CHECK(out.eol_before[i] == 1);
            CHECK(out.eol_after[i] == 5);
        }
        CHECK(out.weight[3] == Approx(0.04 / 0.2));
        checks += 3 + check_invariants(in, out, d);
    }
    {
        // Exactly at the safety distance is safe ("closer than d" tags).
        const YarnInput in = yarn({0, 0.5, 0.625, 1}, {0, 3});
        CHECK(tags(run(in, 0.125)) == "0000");
        ++checks;
    }
    REQUIRE(checks > 0);
    REQUIRE(checks == 6 + 3 + 1 + 2 * 8);
}

TEST_CASE("eil assignment: a fixed end node stays EoL and its predecessor is tagged", "[model][eil][assignment]")
{
    const double d = 0.1;
    int checks = 0;
    {
        const YarnInput in = yarn({0, 1, 2, 2.95, 3}, {0, 4});
        const YarnOutput out = run(in, d);
        CHECK(tags(out) == "00010");
        CHECK(out.eol_before[3] == 2);
        CHECK(out.eol_after[3] == 4);
        CHECK(out.weight[3] == Approx(0.95));
        checks += 4 + check_invariants(in, out, d);
    }
    {
        // The predecessor already has EIL nodes before it: they re-bracket.
        const YarnInput in = yarn({0, 1, 2, 2.02, 2.96, 2.99, 3}, {0, 6});
        const YarnOutput out = run(in, d);
        CHECK(tags(out) == "0001110");
        CHECK(out.eol_before[3] == 2);
        CHECK(out.eol_after[3] == 6);
        checks += 3 + check_invariants(in, out, d);
    }
    {
        // A fixed interior node acts like an end: the node before it is tagged.
        const YarnInput in = yarn({0, 1, 1.97, 2, 3}, {0, 3, 4});
        const YarnOutput out = run(in, d);
        CHECK(tags(out) == "00100");
        checks += 1 + check_invariants(in, out, d);
    }
    {
        // A free last node is kept EoL too (an EIL node needs an EoL node after it).
        const YarnInput in = yarn({0, 1, 2, 2.05}, {0});
        const YarnOutput out = run(in, d);
        CHECK(tags(out) == "0010");
        checks += 1 + check_invariants(in, out, d);
    }
    {
        // Two fixed nodes closer than d: nothing can be done; counted, both EoL.
        const YarnInput in = yarn({0, 0.05, 1, 2}, {0, 1, 3});
        const YarnOutput out = run(in, d);
        CHECK(tags(out) == "0000");
        CHECK(out.summary.unresolved == 1);
        checks += 2 + check_invariants(in, out, d);
    }
    REQUIRE(checks == 4 + 3 + 1 + 1 + 2 + 5 * 8);
}

TEST_CASE("eil assignment: random yarns satisfy the invariants, whatever the initial order",
          "[model][eil][assignment][random]")
{
    Random rng(201);
    int checks = 0, eil_total = 0, retired = 0;
    const double rest = 1e-3, d = 0.1 * rest;
    for (int trial = 0; trial < 200; ++trial) {
        const int n = 2 + static_cast<int>(rng.uniform(0, 29));
        std::vector<double> s;
        double at = rng.uniform(-1e-3, 1e-3);
        for (int k = 0; k < n; ++k) {
            s.push_back(at);
            at += rng.uniform(0, 1) < 0.5 ? rng.uniform(0, 0.15 * rest) : rng.uniform(0.2 * rest, 1.5 * rest);
        }
        if (trial % 7 == 0 && n > 2) s[1] = s[0];  // an exact tie
        YarnInput in;
        in.s = s;
        for (int k = 0; k < n; ++k) in.node.push_back(k);
        in.fixed.assign(n, 0);
        if (trial % 3 != 0) in.fixed[0] = in.fixed[n - 1] = 1;  // yarn ends, usually
        for (int k = 1; k + 1 < n; ++k)
            if (rng.uniform(0, 1) < 0.05) in.fixed[k] = 1;
        // Shuffle the list order: the routine must sort.
        std::vector<int> perm(n);
        std::iota(perm.begin(), perm.end(), 0);
        for (int k = n - 1; k > 0; --k) std::swap(perm[k], perm[static_cast<int>(rng.uniform(0, k + 1)) % (k + 1)]);
        YarnInput shuffled;
        for (int k : perm) {
            shuffled.node.push_back(in.node[k]);
            shuffled.s.push_back(in.s[k]);
            shuffled.fixed.push_back(in.fixed[k]);
        }
        const YarnOutput fresh = run(shuffled, d);
        checks += check_invariants(shuffled, fresh, d);
        // A different initial order (e.g. the previous step's) gives the same bits.
        std::vector<int> start(n);
        std::iota(start.begin(), start.end(), 0);
        std::reverse(start.begin(), start.end());
        const YarnOutput warm = run(shuffled, d, start);
        CHECK(warm.order == fresh.order);
        CHECK(warm.eil == fresh.eil);
        CHECK(warm.eol_before == fresh.eol_before);
        CHECK(warm.eol_after == fresh.eol_after);
        CHECK(warm.weight == fresh.weight);
        checks += 5;
        eil_total += fresh.summary.eil_count;
        // A node tagged on traversal is within d of the EoL node before it; one
        // farther away was retired by the fixed-node rule (or its bracket was).
        for (int i = 0; i < n; ++i)
            if (fresh.eil[i] && in.s[fresh.sorted_node[i]] - in.s[fresh.eol_before[i]] >= d) ++retired;
    }
    CHECK(eil_total > 100);  // the generator exercises the EIL paths
    CHECK(retired > 0);      // and the fixed-node rule
    REQUIRE(checks > 0);
    REQUIRE(checks == 200 * (8 + 5));
}

TEST_CASE("eil assignment: crossing nodes swap order and the assignment follows the sort",
          "[model][eil][assignment][crossing]")
{
    const double rest = 1e-3;
    const double d = weft::eil_safety_distance(rest);
    YarnModel<double> model = straight_yarn({0, 1e-3, 1.05e-3, 2e-3, 3e-3}, {0, 4}, 1.0);
    EilAssignment<double> a = weft::make_eil_assignment(model);
    REQUIRE(weft::assign_eil_nodes(model, d, a) == 1);
    CHECK(a.sorted_node == std::vector<int>{0, 1, 2, 3, 4});
    CHECK(a.node_eil[2 * 2] == 1);
    CHECK(a.node_eil[2 * 1] == 0);
    CHECK(a.eol_before[slot_of_node(a, 0, 2)] == 1);
    CHECK(a.eol_after[slot_of_node(a, 0, 2)] == 3);

    // Node 2 slides past node 1: sorted order and EIL tag follow.
    model.q[5 * 2 + 3] = 0.97e-3;
    REQUIRE(weft::assign_eil_nodes(model, d, a) == 1);  // warm start from the previous order
    CHECK(a.sorted_node == std::vector<int>{0, 2, 1, 3, 4});
    CHECK(a.node_eil[2 * 2] == 0);
    CHECK(a.node_eil[2 * 1] == 1);
    const int slot = slot_of_node(a, 0, 1);
    CHECK(a.eil[slot] == 1);
    CHECK(a.eol_before[slot] == 2);
    CHECK(a.eol_after[slot] == 3);
    CHECK(a.weight[slot] == Approx((1e-3 - 0.97e-3) / (2e-3 - 0.97e-3)));
    CHECK(a.order == std::vector<int>{0, 2, 1, 3, 4});

    // A fresh assignment (no warm start) agrees bit for bit.
    EilAssignment<double> fresh = weft::make_eil_assignment(model);
    weft::assign_eil_nodes(model, d, fresh);
    CHECK(fresh.sorted_node == a.sorted_node);
    CHECK(fresh.eil == a.eil);
    CHECK(fresh.weight == a.weight);

    // Stretch and bending chains skip the EIL node.
    const auto segments = weft::eol_segments(a);
    REQUIRE(segments.size() == 3);
    CHECK((segments[1].node0 == 2 && segments[1].node1 == 3 && segments[1].coordinate == 3));
    const auto bends = weft::eol_bends(a);
    REQUIRE(bends.size() == 2);
    CHECK((bends[0].prev == 0 && bends[0].node == 2 && bends[0].next == 3));
}

TEST_CASE("eil assignment: nothing is EIL when the spacing is ample", "[model][eil][assignment][woven]")
{
    Random rng(202);
    YarnModel<double> model = weft_test::make_patch(6, 5, weft::DampingModel::none);
    weft_test::perturb(model, rng, 2e-4, 3e-4);  // Δs stays ≥ 0.4 spacing > d
    EilAssignment<double> a = weft::make_eil_assignment(model);
    REQUIRE(a.yarn_count() == 5 + 6);
    REQUIRE(a.slot_count() == 2 * 30);
    CHECK(weft::assign_eil_nodes(model, weft::eil_safety_distance(1e-3), a) == 0);
    CHECK(std::count(a.node_eil.begin(), a.node_eil.end(), 1) == 0);
    for (const auto& s : a.summary) CHECK(s.unresolved == 0);
    // With no EIL node the EoL chains are the woven builder's element lists.
    const auto segments = weft::eol_segments(a);
    const auto bends = weft::eol_bends(a);
    REQUIRE(segments.size() == model.segments.size());
    REQUIRE(bends.size() == model.bends.size());
    int checks = 0;
    for (std::size_t k = 0; k < segments.size(); ++k, ++checks) {
        CHECK(segments[k].node0 == model.segments[k].node0);
        CHECK(segments[k].node1 == model.segments[k].node1);
        CHECK(segments[k].coordinate == model.segments[k].coordinate);
    }
    for (std::size_t k = 0; k < bends.size(); ++k, ++checks) {
        CHECK(bends[k].prev == model.bends[k].prev);
        CHECK(bends[k].node == model.bends[k].node);
        CHECK(bends[k].next == model.bends[k].next);
        CHECK(bends[k].coordinate == model.bends[k].coordinate);
    }
    REQUIRE(checks == static_cast<int>(model.segments.size() + model.bends.size()));
    REQUIRE(checks > 0);
}

TEST_CASE("eil assignment: a woven patch with columns pushed together", "[model][eil][assignment][woven]")
{
    // nx = 6: column 2 slides to 0.05 spacing after column 1 (it becomes EIL on
    // every u-yarn); column 4 slides to 0.05 spacing before the fixed end
    // column 5 (column 4 becomes EIL by the fixed-node rule).
    const double spacing = 1e-3;
    YarnModel<double> model = weft_test::make_patch(6, 4, weft::DampingModel::none);
    const int nx = 6, ny = 4;
    for (int j = 0; j < ny; ++j) {
        model.q[5 * (j * nx + 2) + 3] = 1.05 * spacing;
        model.q[5 * (j * nx + 4) + 3] = 4.95 * spacing;
    }
    EilAssignment<double> a = weft::make_eil_assignment(model);
    CHECK(weft::assign_eil_nodes(model, weft::eil_safety_distance(spacing), a) == 2 * ny);
    int checks = 0;
    for (int j = 0; j < ny; ++j) {
        for (int i = 0; i < nx; ++i) {
            const int n = j * nx + i;
            CHECK(a.node_eil[2 * n] == ((i == 2 || i == 4) ? 1 : 0));  // on its u-yarn
            CHECK(a.node_eil[2 * n + 1] == 0);                         // on its v-yarn
        }
        const int s2 = slot_of_node(a, j, j * nx + 2);
        CHECK(a.eol_before[s2] == j * nx + 1);
        CHECK(a.eol_after[s2] == j * nx + 3);
        CHECK(a.weight[s2] == Approx(0.05 / 2.0));
        const int s4 = slot_of_node(a, j, j * nx + 4);
        CHECK(a.eol_before[s4] == j * nx + 3);
        CHECK(a.eol_after[s4] == j * nx + 5);
        CHECK(a.weight[s4] == Approx(1.95 / 2.0));
        ++checks;
    }
    // Each u-yarn loses two segments and two bends; v-yarns are untouched.
    CHECK(weft::eol_segments(a).size() == model.segments.size() - 2 * ny);
    CHECK(weft::eol_bends(a).size() == model.bends.size() - 2 * ny);
    REQUIRE(checks == ny);
}

TEST_CASE("eil assignment: weights reproduce positions on a straight yarn", "[model][eil][assignment][interpolation]")
{
    Random rng(203);
    int checks = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const double rest = 1e-3, stretch = rng.uniform(0.8, 1.3);
        std::vector<double> u;
        double at = 0;
        for (int k = 0; k < 25; ++k) {
            u.push_back(at);
            at += rng.uniform(0, 1) < 0.4 ? rng.uniform(0, 0.12 * rest) : rng.uniform(0.3 * rest, rest);
        }
        std::vector<int> fixed = {0, 24};
        // Shuffle the list order of the interior nodes via their arc lengths.
        for (int k = 1; k + 2 < 25; k += 3) std::swap(u[k], u[k + 1]);
        const YarnModel<double> model = straight_yarn(u, fixed, stretch, rng.vector<3>(-1, 1), rng.unit_vector());
        EilAssignment<double> a = weft::make_eil_assignment(model);
        const int eil = weft::assign_eil_nodes(model, weft::eil_safety_distance(rest), a);
        REQUIRE(eil > 0);
        for (int slot = 0; slot < a.slot_count(); ++slot) {
            if (!a.eil[slot]) continue;
            const double t = a.weight[slot];
            CHECK(t >= 0.0);
            CHECK(t <= 1.0);
            const int na = a.eol_before[slot], nb = a.eol_after[slot], n = a.sorted_node[slot];
            const Vec3 interpolated = (1 - t) * model.position(na) + t * model.position(nb);
            CHECK((interpolated - model.position(n)).norm() <= 1e-12);
            // The element-level interpolation agrees.
            const auto x = weft::eil_interpolation<double>(model.position(na), model.q[5 * na + 3], model.position(nb),
                                                           model.q[5 * nb + 3], model.q[5 * n + 3]);
            CHECK((x.position - model.position(n)).norm() <= 1e-12);
            CHECK(x.weight == Approx(t).margin(1e-12));
            ++checks;
        }
    }
    REQUIRE(checks > 20);
}

TEST_CASE("eil assignment: closed-form arc-length resets, thesis Eq. (4.4)-(4.7)", "[model][eil][reset]")
{
    Random rng(204);
    int checks = 0;
    for (int trial = 0; trial < 50; ++trial) {
        const Vec3 x_a = rng.vector<3>(-1, 1), x_b = rng.vector<3>(-1, 1), x_c = rng.vector<3>(-1, 1);
        const double s_a = rng.uniform(-1, 0), s_c = s_a + rng.uniform(0.5, 2), s_b = rng.uniform(s_a, s_c);

        // Eq. (4.4): stretch uniform across the new EoL node.
        const double s44 = weft::eil_to_eol_arc_length(x_a, s_a, x_b, s_b, x_c, s_c);
        REQUIRE(s44 > s_a);
        REQUIRE(s44 < s_c);
        CHECK((x_a - x_b).norm() / (s44 - s_a) == Approx((x_b - x_c).norm() / (s_c - s44)).epsilon(1e-12));

        // Eq. (4.5): x(s) closest to x_b on the segment [x_a, x_c].
        const double s45 = weft::eol_to_eil_arc_length(x_a, s_a, x_b, s_b, x_c, s_c);
        auto distance2 = [&](double s) {
            return (weft::eil_interpolation<double>(x_a, s_a, x_c, s_c, s).position - x_b).squaredNorm();
        };
        double best = std::numeric_limits<double>::infinity();
        for (int k = 0; k <= 2000; ++k) best = std::min(best, distance2(s_a + (s_c - s_a) * k / 2000.0));
        CHECK(distance2(s45) <= best + 1e-12);
        CHECK(s45 >= s_a);
        CHECK(s45 <= s_c);
        checks += 2;
    }
    // Eq. (4.5) is clamped to the segment (the thesis' max(., u_c) read as a clamp).
    CHECK(weft::eol_to_eil_arc_length<double>(Vec3(0, 0, 0), 1.0, Vec3(5, 1, 0), 1.5, Vec3(1, 0, 0), 2.0) == 2.0);
    CHECK(weft::eol_to_eil_arc_length<double>(Vec3(0, 0, 0), 1.0, Vec3(-5, 1, 0), 1.5, Vec3(1, 0, 0), 2.0) == 1.0);
    CHECK(weft::eol_to_eil_arc_length<double>(Vec3(0, 0, 0), 1.0, Vec3(0.25, 1, 0), 1.5, Vec3(1, 0, 0), 2.0) ==
          Approx(1.25));
    // Degenerate inputs keep s_b.
    CHECK(weft::eol_to_eil_arc_length<double>(Vec3(1, 2, 3), 1.0, Vec3(0, 1, 0), 1.3, Vec3(1, 2, 3), 2.0) == 1.3);
    CHECK(weft::eil_to_eol_arc_length<double>(Vec3(1, 2, 3), 1.0, Vec3(1, 2, 3), 1.3, Vec3(1, 2, 3), 2.0) == 1.3);
    checks += 5;

    // Eq. (4.6)-(4.7): with uniform stretch Eq. (4.5) depends on the angle alone.
    for (int trial = 0; trial < 50; ++trial) {
        const double s_a = rng.uniform(-1, 0), s_c = s_a + rng.uniform(0.5, 2), s_b = rng.uniform(s_a + 0.1, s_c - 0.1);
        const double stretch = rng.uniform(0.8, 1.3), theta = rng.uniform(0, 2.5);
        const Vec3 t1 = rng.unit_vector();
        Vec3 n = t1.cross(rng.unit_vector()).normalized();
        const Vec3 t2 = std::cos(theta) * t1 + std::sin(theta) * n;  // angle θ between (x_a − x_b) and (x_b − x_c)
        const Vec3 x_b = rng.vector<3>(-1, 1);
        const Vec3 x_a = x_b + stretch * (s_b - s_a) * t1;
        const Vec3 x_c = x_b - stretch * (s_c - s_b) * t2;
        const double s45 = weft::eol_to_eil_arc_length(x_a, s_a, x_b, s_b, x_c, s_c);
        const double s47 = weft::eol_to_eil_arc_length_uniform_stretch(s_a, s_b, s_c, std::cos(theta));
        CHECK(s47 == Approx(s45).epsilon(1e-10));
        ++checks;
    }
    // Straight yarn (θ = 0): the thesis' practical choice, s_b unchanged.
    CHECK(weft::eol_to_eil_arc_length_uniform_stretch(0.0, 0.3, 1.0, 1.0) == Approx(0.3));
    CHECK(weft::eol_to_eil_arc_length_uniform_stretch(0.0, 0.5, 1.0, -1.0) == 0.5);  // a fold: fallback
    checks += 2;
    REQUIRE(checks == 100 + 5 + 50 + 2);
}

TEST_CASE("eil assignment: bad input is rejected naming the field and value", "[model][eil][error]")
{
    using Catch::Matchers::Contains;
    REQUIRE_THROWS_WITH(weft::eil_safety_distance(-1e-3), Contains("rest_segment_length = -0.001"));
    REQUIRE_THROWS_WITH(weft::eil_safety_distance(1e-3, 0.0), Contains("safety distance factor = 0"));

    YarnModel<double> model = straight_yarn({0, 1, 2}, {0, 2}, 1.0);
    EilAssignment<double> a = weft::make_eil_assignment(model);
    REQUIRE_THROWS_WITH(weft::assign_eil_nodes(model, 0.0, a), Contains("safety_distance = 0"));
    REQUIRE_THROWS_WITH(weft::assign_eil_nodes(model, std::numeric_limits<double>::quiet_NaN(), a),
                        Contains("safety_distance = nan"));
    YarnModel<double> nan_arc = model;
    nan_arc.q[5 * 1 + 3] = std::numeric_limits<double>::quiet_NaN();
    REQUIRE_THROWS_WITH(weft::assign_eil_nodes(nan_arc, 0.1, a), Contains("q[8] (arc length of node 1) = nan"));

    YarnModel<double> bad = model;
    bad.yarn_coordinate[0] = 5;
    REQUIRE_THROWS_WITH(weft::make_eil_assignment(bad), Contains("yarn_coordinate[0] = 5"));
    bad = model;
    bad.yarns[0][2] = 99;
    REQUIRE_THROWS_WITH(weft::make_eil_assignment(bad), Contains("yarns[0][2] = 99"));
    bad = model;
    bad.yarns[0][2] = 0;
    REQUIRE_THROWS_WITH(weft::make_eil_assignment(bad), Contains("yarns[0][2] = 0: node already on a yarn"));
    bad = model;
    bad.yarn_coordinate.clear();
    REQUIRE_THROWS_WITH(weft::make_eil_assignment(bad), Contains("yarn_coordinate.size() = 0"));
    bad = model;
    bad.free_dof.pop_back();
    REQUIRE_THROWS_WITH(weft::make_eil_assignment(bad), Contains("free_dof.size() = 14"));

    YarnModel<double> other = weft_test::make_patch(3, 3, weft::DampingModel::none);
    REQUIRE_THROWS_WITH(weft::assign_eil_nodes(other, 0.1, a), Contains("eil assignment yarn count = 1"));
    REQUIRE_NOTHROW(weft::assign_eil_nodes(model, 0.1, a));
}

TEMPLATE_TEST_CASE("eil assignment: the per-yarn routine compiles and agrees in float", "[model][eil][float]", float,
                   double)
{
    using T = TestType;
    const std::vector<int> node = {10, 11, 12, 13, 14};
    const std::vector<T> s = {T(0), T(1), T(1.05), T(2), T(3)};
    const std::vector<unsigned char> fixed = {1, 0, 0, 0, 1};
    std::vector<int> order = {4, 3, 2, 1, 0}, sorted(5), before(5), after(5);
    std::vector<unsigned char> eil(5);
    std::vector<T> weight(5);
    const weft::EilYarnSlots<T> slots{
        5,          node.data(),   s.data(),     fixed.data(), order.data(), sorted.data(),
        eil.data(), before.data(), after.data(), weight.data()};
    const auto summary = weft::assign_eil_yarn<T>(slots, T(0.1));
    CHECK(summary.eil_count == 1);
    CHECK(sorted == std::vector<int>{10, 11, 12, 13, 14});
    CHECK(eil[2] == 1);
    CHECK(before[2] == 11);
    CHECK(after[2] == 13);
    CHECK(double(weight[2]) == Approx(0.05).epsilon(1e-5));
}

// ---------------------------------------------------------------------------
// Our additions to the traversal: the look-ahead on ṡ and the `close` flags.

namespace {

/// The per-yarn routine with the optional inputs (empty vector: nullptr).
YarnOutput run_with(const YarnInput& in, double d, double lookahead, const std::vector<double>& arc_rate,
                    const std::vector<unsigned char>& close = {})
{
    const int n = static_cast<int>(in.node.size());
    YarnOutput out;
    out.order.resize(n);
    std::iota(out.order.begin(), out.order.end(), 0);
    out.sorted_node.assign(n, -7);
    out.eol_before.assign(n, -7);
    out.eol_after.assign(n, -7);
    out.eil.assign(n, 7);
    out.weight.assign(n, -7.0);
    weft::EilYarnSlots<double> slots{n,
                                     in.node.data(),
                                     in.s.data(),
                                     in.fixed.data(),
                                     out.order.data(),
                                     out.sorted_node.data(),
                                     out.eil.data(),
                                     out.eol_before.data(),
                                     out.eol_after.data(),
                                     out.weight.data()};
    slots.arc_rate = arc_rate.empty() ? nullptr : arc_rate.data();
    slots.close = close.empty() ? nullptr : close.data();
    out.summary = weft::assign_eil_yarn<double>(slots, d, lookahead);
    return out;
}

/// Every output of two assignments agrees bit for bit.
void check_same(const YarnOutput& a, const YarnOutput& b)
{
    CHECK(a.order == b.order);
    CHECK(a.sorted_node == b.sorted_node);
    CHECK(a.eil == b.eil);
    CHECK(a.eol_before == b.eol_before);
    CHECK(a.eol_after == b.eol_after);
    CHECK(a.weight == b.weight);
    CHECK(a.summary.eil_count == b.summary.eil_count);
    CHECK(a.summary.unresolved == b.summary.unresolved);
}

}  // namespace

TEST_CASE("eil assignment: the look-ahead tags a node closing in faster than d per look-ahead time",
          "[model][eil][assignment][lookahead]")
{
    // Nodes 1 and 2 are 2d apart (1.0 and 1.2, d = 0.1) and close at a
    // relative speed v: after the look-ahead time h the gap is 2d − h v, below
    // d iff h v > d. Ends fixed, far from both.
    const double d = 0.1, h = 0.01;
    const YarnInput in = yarn({0, 1, 1.2, 2, 3}, {0, 4});
    const YarnOutput thesis = run(in, d);
    REQUIRE(tags(thesis) == "00000");
    int checks = 0;
    // Which node moves does not matter, only the relative speed.
    struct Split {
        double rate1, rate2;  // ṡ of nodes 1 and 2 per unit closing speed
    };
    for (const Split split : {Split{1, 0}, Split{0, -1}, Split{0.5, -0.5}, Split{3, 2}}) {
        for (const double factor : {0.99, 1.01, 0.5, 2.0}) {
            const double v = factor * d / h;  // closing speed
            const std::vector<double> rate = {0, split.rate1 * v, split.rate2 * v, 0, 0};
            const YarnOutput out = run_with(in, d, h, rate);
            INFO("rates " << rate[1] << ", " << rate[2] << ": h v / d = " << factor);
            if (factor > 1) {
                CHECK(tags(out) == "00100");
                CHECK(out.summary.eil_count == 1);
                CHECK(out.eol_before[2] == 1);
                CHECK(out.eol_after[2] == 3);
                // The weight interpolates the current arc lengths, not the predicted ones.
                CHECK(out.weight[2] == Approx(0.2));
            } else {
                CHECK(tags(out) == "00000");
                CHECK(out.summary.eil_count == 0);
                check_same(out, thesis);
            }
            CHECK(out.summary.unresolved == 0);
            CHECK(out.sorted_node == thesis.sorted_node);
            ++checks;
        }
    }
    // Moving apart, however fast: the look-ahead never tags.
    // (Nodes 2–4 move on together, or nodes 0–1 back and 2–4 on: only the
    // gap between 1 and 2 changes.)
    for (const double v : {1.0, 1e3, 1e9}) {
        check_same(run_with(in, d, h, {0, 0, v, v, v}), thesis);
        check_same(run_with(in, d, h, {-v, -v, v, v, v}), thesis);
        ++checks;
    }
    // The same rates reversed close the gap and tag node 2 (the test can fail).
    CHECK(tags(run_with(in, d, h, {0, 0, -15, -15, -15})) == "00100");  // h v = 1.5 d
    // Moving apart does not untag a node that is already within d now: the
    // gap is min(now, later).
    {
        const YarnInput near = yarn({0, 1, 1.05, 2, 3}, {0, 4});
        const YarnOutput out = run_with(near, d, h, {0, 0, 1e3, 0, 0});
        CHECK(tags(out) == "00100");
        check_same(out, run(near, d));
        ++checks;
    }
    // lookahead = 0, a negative lookahead, or no arc_rate: exactly the thesis result.
    {
        const std::vector<double> fast = {0, 2 * d / h, 0, 0, 0};
        REQUIRE(tags(run_with(in, d, h, fast)) == "00100");  // the rate alone would tag
        check_same(run_with(in, d, 0.0, fast), thesis);
        check_same(run_with(in, d, -h, fast), thesis);
        // (a negative look-ahead applied to opening rates would close the gap)
        const double open = 2 * d / h;
        check_same(run_with(in, d, -h, {0, 0, open, open, open}), thesis);
        check_same(run_with(in, d, h, {}), thesis);
        check_same(run_with(in, d, 1e6, {}), thesis);
        checks += 4;
    }
    // A fixed end approached from inside: the thesis rule for fixed nodes
    // applies to the predicted gap too (the node before it is retired).
    {
        const YarnInput end = yarn({0, 1, 2, 2.8, 3}, {0, 4});  // node 3 is 2d before the fixed end
        REQUIRE(tags(run(end, d)) == "00000");
        const YarnOutput slow = run_with(end, d, h, {0, 0, 0, 0.9 * d / h, 0});
        CHECK(tags(slow) == "00000");
        const YarnOutput out = run_with(end, d, h, {0, 0, 0, 1.1 * d / h, 0});
        CHECK(tags(out) == "00010");
        CHECK(out.eol_before[3] == 2);
        CHECK(out.eol_after[3] == 4);
        CHECK(out.summary.unresolved == 0);
        checks += 2;
    }
    REQUIRE(checks == 16 + 3 + 1 + 4 + 2);
}

TEST_CASE("eil assignment: close flags tag a free node and retire the EoL node before a fixed one",
          "[model][eil][assignment][close]")
{
    const double d = 0.1;
    const YarnInput in = yarn({0, 1, 2, 3, 4}, {0, 4});  // every gap 10 d
    const YarnOutput thesis = run(in, d);
    REQUIRE(tags(thesis) == "00000");
    int checks = 0;
    {
        // A free interior node flagged close becomes EIL however far it is.
        const YarnOutput out = run_with(in, d, 0.0, {}, {0, 0, 1, 0, 0});
        CHECK(tags(out) == "00100");
        CHECK(out.eol_before[2] == 1);
        CHECK(out.eol_after[2] == 3);
        CHECK(out.weight[2] == Approx(0.5));
        CHECK(out.summary.eil_count == 1);
        CHECK(out.summary.unresolved == 0);
        ++checks;
    }
    {
        // Two consecutive flagged nodes: both bracket to the same EoL pair.
        const YarnOutput out = run_with(in, d, 0.0, {}, {0, 1, 1, 0, 0});
        CHECK(tags(out) == "01100");
        CHECK(out.eol_before[1] == 0);
        CHECK(out.eol_before[2] == 0);
        CHECK(out.eol_after[1] == 3);
        CHECK(out.eol_after[2] == 3);
        CHECK(out.weight[1] == Approx(1.0 / 3));
        CHECK(out.weight[2] == Approx(2.0 / 3));
        ++checks;
    }
    {
        // The flag is in list order: shuffle the list, same sorted result.
        YarnInput shuffled;
        for (int k : {3, 0, 4, 2, 1}) {
            shuffled.node.push_back(in.node[k]);
            shuffled.s.push_back(in.s[k]);
            shuffled.fixed.push_back(in.fixed[k]);
        }
        // node 2 sits at list position 3
        const YarnOutput out = run_with(shuffled, d, 0.0, {}, {0, 0, 0, 1, 0});
        CHECK(out.sorted_node == std::vector<int>{0, 1, 2, 3, 4});
        CHECK(tags(out) == "00100");
        ++checks;
    }
    {
        // Flag on a fixed interior node: it stays EoL, the EoL node before it is retired.
        const YarnInput fixed_mid = yarn({0, 1, 2, 3, 4}, {0, 2, 4});
        REQUIRE(tags(run(fixed_mid, d)) == "00000");
        const YarnOutput out = run_with(fixed_mid, d, 0.0, {}, {0, 0, 1, 0, 0});
        CHECK(tags(out) == "01000");
        CHECK(out.eol_before[1] == 0);
        CHECK(out.eol_after[1] == 2);
        CHECK(out.weight[1] == Approx(0.5));
        CHECK(out.eol_before[2] == 0);  // the fixed node's chain neighbour is now node 0
        ++checks;
    }
    {
        // Flag on the fixed last node: the node before it is retired.
        const YarnOutput out = run_with(in, d, 0.0, {}, {0, 0, 0, 0, 1});
        CHECK(tags(out) == "00010");
        CHECK(out.eol_before[3] == 2);
        CHECK(out.eol_after[3] == 4);
        CHECK(out.eol_before[4] == 2);
        ++checks;
    }
    {
        // Flag on a free last node: treated like a fixed one (an EIL node needs an EoL node after it).
        const YarnInput free_end = yarn({0, 1, 2, 3, 4}, {0});
        const YarnOutput out = run_with(free_end, d, 0.0, {}, {0, 0, 0, 0, 1});
        CHECK(tags(out) == "00010");
        CHECK(out.eol_after[3] == 4);
        ++checks;
    }
    {
        // The first node's flag has no EoL node before it: no effect.
        check_same(run_with(in, d, 0.0, {}, {1, 0, 0, 0, 0}), thesis);
        // All flags clear: exactly the thesis result.
        check_same(run_with(in, d, 0.0, {}, {0, 0, 0, 0, 0}), thesis);
        checks += 2;
    }
    {
        // Flag on a fixed node right after the yarn's first node: nothing can
        // be retired (the first node is always EoL), both stay EoL.
        const YarnInput fixed_second = yarn({0, 1, 2, 3}, {0, 1, 3});
        const YarnOutput out = run_with(fixed_second, d, 0.0, {}, {0, 1, 0, 0});
        CHECK(tags(out) == "0000");
        CHECK(out.summary.eil_count == 0);
        CHECK(out.summary.unresolved == 1);
        ++checks;
    }
    {
        // The model-level assignment uses EilAssignment::close when it is not empty.
        YarnModel<double> model = straight_yarn({0, 1e-3, 2e-3, 3e-3, 4e-3}, {0, 4}, 1.0);
        EilAssignment<double> a = weft::make_eil_assignment(model);
        const double safety = weft::eil_safety_distance(1e-3);
        REQUIRE(weft::assign_eil_nodes(model, safety, a) == 0);
        a.close.assign(static_cast<std::size_t>(a.slot_count()), 0);
        a.close[2] = 1;  // list order: node 2
        CHECK(weft::assign_eil_nodes(model, safety, a) == 1);
        CHECK(a.node_eil[2 * 2] == 1);
        CHECK(a.eol_before[slot_of_node(a, 0, 2)] == 1);
        CHECK(a.eol_after[slot_of_node(a, 0, 2)] == 3);
        a.close[2] = 0;
        a.close[4] = 1;  // the fixed last node: node 3 is retired
        CHECK(weft::assign_eil_nodes(model, safety, a) == 1);
        CHECK(a.node_eil[2 * 3] == 1);
        CHECK(a.node_eil[2 * 2] == 0);
        a.close.clear();  // empty: the thesis result
        CHECK(weft::assign_eil_nodes(model, safety, a) == 0);
        ++checks;
    }
    REQUIRE(checks == 1 + 1 + 1 + 1 + 1 + 1 + 2 + 1 + 1);
}

TEST_CASE("eil assignment: zero arc rates give the thesis result slot for slot, whatever the look-ahead",
          "[model][eil][assignment][lookahead][random]")
{
    Random rng(205);
    int checks = 0, eil_total = 0, tagged_by_rate = 0;
    const double rest = 1e-3, d = 0.1 * rest;
    for (int trial = 0; trial < 200; ++trial) {
        const int n = 2 + static_cast<int>(rng.uniform(0, 29));
        YarnInput in;
        double at = rng.uniform(-1e-3, 1e-3);
        for (int k = 0; k < n; ++k) {
            in.s.push_back(at);
            in.node.push_back(k);
            at += rng.uniform(0, 1) < 0.5 ? rng.uniform(0, 0.15 * rest) : rng.uniform(0.2 * rest, 1.5 * rest);
        }
        in.fixed.assign(n, 0);
        if (trial % 3 != 0) in.fixed[0] = in.fixed[n - 1] = 1;
        for (int k = 1; k + 1 < n; ++k)
            if (rng.uniform(0, 1) < 0.05) in.fixed[k] = 1;
        // Shuffle the list order (the routine sorts).
        for (int k = n - 1; k > 0; --k) {
            const int j = static_cast<int>(rng.uniform(0, k + 1)) % (k + 1);
            std::swap(in.node[k], in.node[j]);
            std::swap(in.s[k], in.s[j]);
            std::swap(in.fixed[k], in.fixed[j]);
        }
        const double lookahead = rng.uniform(1e-4, 1.0);
        const YarnOutput thesis = run(in, d);
        const YarnOutput still = run_with(in, d, lookahead, std::vector<double>(n, 0.0));
        check_same(still, thesis);
        checks += check_invariants(in, still, d);
        // A uniform ṡ (the whole yarn sliding as one) changes no gap either.
        check_same(run_with(in, d, lookahead, std::vector<double>(n, rng.uniform(-1, 1))), thesis);
        // Random rates do change the tags (so the comparisons above can
        // fail), never the sort, and keep the structural rules.
        std::vector<double> rate(n);
        for (double& r : rate) r = rng.uniform(-2 * d / lookahead, 2 * d / lookahead);
        const YarnOutput moving = run_with(in, d, lookahead, rate);
        if (moving.eil != thesis.eil) ++tagged_by_rate;
        CHECK(moving.order == thesis.order);  // sorting uses the current arc lengths only
        CHECK(moving.eil.front() == 0);
        CHECK(moving.eil.back() == 0);
        for (int i = 0; i < n; ++i)
            if (in.fixed[moving.order[i]]) CHECK(moving.eil[i] == 0);
        eil_total += thesis.summary.eil_count;
        checks += 5;
    }
    CHECK(eil_total > 100);
    CHECK(tagged_by_rate > 20);
    REQUIRE(checks == 200 * (8 + 5));
}
