// The sorted-grid broad phase (backend/broad_phase.hpp): exactly the pairs
// of overlapping boxes that a brute-force O(n²) search finds, for random
// segment and triangle soups and several cell sizes, sorted; bad input named.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <weft/backend/broad_phase.hpp>

#include "support/random.hpp"

using weft::Aabb;
using weft::CandidatePair;
using weft_test::Random;
using Vec3 = Eigen::Vector3d;

namespace {

Aabb<double> bounds(std::initializer_list<Vec3> points, double margin)
{
    Aabb<double> b;
    for (int k = 0; k < 3; ++k) {
        b.lo[k] = std::numeric_limits<double>::infinity();
        b.hi[k] = -std::numeric_limits<double>::infinity();
    }
    for (const Vec3& p : points)
        for (int k = 0; k < 3; ++k) {
            b.lo[k] = std::min(b.lo[k], p(k) - margin);
            b.hi[k] = std::max(b.hi[k], p(k) + margin);
        }
    return b;
}

/// Random segments (two points) or triangles (three) of about `size` in a box of side `extent`.
std::vector<Aabb<double>> soup(Random& rng, int count, int corners, double size, double extent, double margin)
{
    std::vector<Aabb<double>> boxes;
    for (int i = 0; i < count; ++i) {
        const Vec3 c = rng.vector<3>(-extent / 2, extent / 2);
        const Vec3 p = c + size * rng.vector<3>(-1, 1), q = c + size * rng.vector<3>(-1, 1),
                   r = c + size * rng.vector<3>(-1, 1);
        boxes.push_back(corners == 2 ? bounds({p, q}, margin) : bounds({p, q, r}, margin));
    }
    return boxes;
}

std::vector<std::pair<int, int>> brute_force(const std::vector<Aabb<double>>& boxes)
{
    std::vector<std::pair<int, int>> pairs;
    for (int a = 0; a < static_cast<int>(boxes.size()); ++a)
        for (int b = a + 1; b < static_cast<int>(boxes.size()); ++b) {
            bool overlap = true;
            for (int k = 0; k < 3; ++k)
                overlap = overlap && boxes[a].lo[k] <= boxes[b].hi[k] && boxes[b].lo[k] <= boxes[a].hi[k];
            if (overlap) pairs.emplace_back(a, b);
        }
    return pairs;
}

std::vector<std::pair<int, int>> broad_phase(const std::vector<Aabb<double>>& boxes, double cell,
                                             weft::BroadPhaseStats* stats = nullptr)
{
    const thrust::device_vector<Aabb<double>> device(boxes.begin(), boxes.end());
    const thrust::device_vector<CandidatePair> found = weft::find_overlapping_pairs<double>(device, cell, stats);
    const std::vector<CandidatePair> host = weft::to_host(found);
    std::vector<std::pair<int, int>> pairs;
    for (const CandidatePair& p : host) pairs.emplace_back(p.a, p.b);
    return pairs;
}

}  // namespace

TEST_CASE("broad phase: exactly the overlapping pairs of brute force, sorted, for any cell size",
          "[backend][broad-phase]")
{
    Random rng(11);
    int compared = 0;
    long long pairs_seen = 0;
    for (const int corners : {2, 3}) {
        for (const double extent : {1.0, 4.0}) {
            const std::vector<Aabb<double>> boxes = soup(rng, 600, corners, 0.05, extent, 0.01);
            const auto expected = brute_force(boxes);
            REQUIRE(!expected.empty());
            for (const double cell : {0.02, 0.07, 0.3, 5.0}) {
                INFO((corners == 2 ? "segments" : "triangles") << ", extent " << extent << ", cell " << cell);
                weft::BroadPhaseStats stats;
                const auto found = broad_phase(boxes, cell, &stats);
                CHECK(found == expected);  // same pairs, same (sorted) order
                CHECK(stats.pairs == static_cast<long long>(expected.size()));
                CHECK(stats.candidates >= stats.pairs);
                CHECK(stats.cell_entries >= static_cast<long long>(boxes.size()));
                pairs_seen += static_cast<long long>(found.size());
                ++compared;
            }
        }
    }
    REQUIRE(compared == 16);
    REQUIRE(pairs_seen > 100);
}

TEST_CASE("broad phase: touching boxes, boxes on cell boundaries and negative coordinates", "[backend][broad-phase]")
{
    std::vector<Aabb<double>> boxes;
    boxes.push_back(Aabb<double>{{0, 0, 0}, {1, 1, 1}});
    boxes.push_back(Aabb<double>{{1, 1, 1}, {2, 2, 2}});              // touches box 0 at a corner
    boxes.push_back(Aabb<double>{{-2, -2, -2}, {-1, -1, -1}});        // apart
    boxes.push_back(Aabb<double>{{-1, -1, -1}, {0, 0, 0}});           // touches box 0 and box 2
    boxes.push_back(Aabb<double>{{0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}});  // a point inside box 0
    for (const double cell : {0.5, 1.0, 3.0}) {
        INFO("cell " << cell);
        CHECK(broad_phase(boxes, cell) == brute_force(boxes));
    }
    CHECK(broad_phase(boxes, 1.0) == std::vector<std::pair<int, int>>{{0, 1}, {0, 3}, {0, 4}, {2, 3}});
    CHECK(broad_phase(std::vector<Aabb<double>>{}, 1.0).empty());
    CHECK(broad_phase(std::vector<Aabb<double>>(1, boxes[0]), 1.0).empty());
}

TEST_CASE("broad phase: the collision finders' cell is at least the boxes' mean largest side", "[backend][broad-phase]")
{
    // Largest sides 1, 3 and 2 (on different axes): mean 2.
    const std::vector<Aabb<double>> boxes{Aabb<double>{{0, 0, 0}, {1, 0.5, 0}}, Aabb<double>{{0, 0, 0}, {0, 3, 1}},
                                          Aabb<double>{{-1, 0, 0}, {0, 0, 1}}, Aabb<double>{{5, 5, 5}, {5, 5, 7}}};
    const thrust::device_vector<Aabb<double>> device(boxes.begin(), boxes.end());
    CHECK(weft::grid_cell_for<double>(device, 0.5) == Approx(1.75).epsilon(1e-15));  // (1 + 3 + 1 + 2) / 4
    CHECK(weft::grid_cell_for<double>(device, 2.5) == 2.5);
    CHECK(weft::grid_cell_for<double>(thrust::device_vector<Aabb<double>>{}, 0.25) == 0.25);
    // A box that is not finite: the broad phase still names it (not the cell size).
    for (const double bad_value : {std::nan(""), std::numeric_limits<double>::infinity()}) {
        std::vector<Aabb<double>> bad = boxes;
        bad[2].hi[1] = bad_value;
        const thrust::device_vector<Aabb<double>> bad_device(bad.begin(), bad.end());
        const double cell = weft::grid_cell_for<double>(bad_device, 0.5);
        CHECK(std::isfinite(cell));
        CHECK_THROWS_WITH(weft::find_overlapping_pairs<double>(bad_device, cell), Catch::Contains("box 2"));
    }
    // The pairs do not depend on the cell: boxes far larger than a cell and the chosen one agree with brute force.
    Random rng(13);
    const std::vector<Aabb<double>> grown = soup(rng, 400, 2, 0.05, 1.0, 0.2);
    const thrust::device_vector<Aabb<double>> grown_device(grown.begin(), grown.end());
    const double cell = weft::grid_cell_for<double>(grown_device, 0.02);
    CHECK(cell > 0.4);
    weft::BroadPhaseStats small, chosen;
    const auto expected = brute_force(grown);
    CHECK(broad_phase(grown, 0.02, &small) == expected);
    CHECK(broad_phase(grown, cell, &chosen) == expected);
    CHECK(chosen.candidates < small.candidates);  // each pair tested in fewer cells
}

TEST_CASE("broad phase: the pairs in the grid's order, sorted by sort_pairs, are find_overlapping_pairs'",
          "[backend][broad-phase]")
{
    Random rng(14);
    const std::vector<Aabb<double>> boxes = soup(rng, 500, 3, 0.05, 1.0, 0.01);
    const thrust::device_vector<Aabb<double>> device(boxes.begin(), boxes.end());
    const auto as_pairs = [](const thrust::device_vector<CandidatePair>& found) {
        std::vector<std::pair<int, int>> pairs;
        for (const CandidatePair& p : weft::to_host(found)) pairs.emplace_back(p.a, p.b);
        return pairs;
    };
    const auto expected = brute_force(boxes);
    REQUIRE(expected.size() > 50);
    int checked = 0;
    for (const double cell : {0.03, 0.2}) {
        INFO("cell " << cell);
        thrust::device_vector<CandidatePair> grid = weft::overlapping_pairs_in_grid_order<double>(device, cell);
        std::vector<std::pair<int, int>> in_grid_order = as_pairs(grid);
        CHECK(!std::is_sorted(in_grid_order.begin(), in_grid_order.end()));  // cells first, then indices
        for (const auto& [a, b] : in_grid_order) CHECK(a < b);
        weft::sort_pairs(grid, static_cast<int>(boxes.size()));
        CHECK(as_pairs(grid) == expected);
        std::sort(in_grid_order.begin(), in_grid_order.end());
        CHECK(in_grid_order == expected);  // each pair once
        ++checked;
    }
    REQUIRE(checked == 2);
    thrust::device_vector<CandidatePair> none;
    weft::sort_pairs(none, 3);
    CHECK(none.empty());
}

TEST_CASE("broad phase: bad input is refused, naming it", "[backend][broad-phase][errors]")
{
    const std::vector<Aabb<double>> ok{Aabb<double>{{0, 0, 0}, {1, 1, 1}}, Aabb<double>{{0, 0, 0}, {1, 1, 1}}};
    const thrust::device_vector<Aabb<double>> device(ok.begin(), ok.end());
    CHECK_THROWS_WITH(weft::find_overlapping_pairs<double>(device, 0.0), Catch::Contains("cell size"));
    CHECK_THROWS_WITH(weft::find_overlapping_pairs<double>(device, std::nan("")), Catch::Contains("cell size"));
    std::vector<Aabb<double>> bad = ok;
    bad[1].hi[2] = -1;  // inverted
    CHECK_THROWS_WITH(
        weft::find_overlapping_pairs<double>(thrust::device_vector<Aabb<double>>(bad.begin(), bad.end()), 1.0),
        Catch::Contains("box 1") && Catch::Contains("lo <= hi"));
    bad = ok;
    bad[0].lo[0] = std::nan("");
    CHECK_THROWS_WITH(
        weft::find_overlapping_pairs<double>(thrust::device_vector<Aabb<double>>(bad.begin(), bad.end()), 1.0),
        Catch::Contains("box 0"));
    CHECK_THROWS_WITH(weft::find_overlapping_pairs<double>(device, 1e-3, nullptr, 1000),
                      Catch::Contains("cell entries") && Catch::Contains("far below"));
    bad = ok;
    bad[1].hi[0] = 1e12;
    CHECK_THROWS_WITH(
        weft::find_overlapping_pairs<double>(thrust::device_vector<Aabb<double>>(bad.begin(), bad.end()), 1.0),
        Catch::Contains("cells from the origin"));
}

TEST_CASE(
    "triangle intersections: the broad phase and narrow test give the brute-force pairs; a folded sheet is caught",
    "[backend][broad-phase][intersection]")
{
    Random rng(12);
    // A random soup of 300 small triangles: brute force over all pairs.
    std::vector<double> q;
    std::vector<int> triangles;
    for (int i = 0; i < 300; ++i) {
        const Vec3 c = rng.vector<3>(-0.5, 0.5);
        for (int k = 0; k < 3; ++k) {
            const Vec3 x = c + 0.08 * rng.vector<3>(-1, 1);
            q.insert(q.end(), {x(0), x(1), x(2)});
            triangles.push_back(3 * i + k);
        }
    }
    const auto vertex = [&](int v) { return Vec3(q[3 * v], q[3 * v + 1], q[3 * v + 2]); };
    std::vector<std::pair<int, int>> expected;
    for (int a = 0; a < 300; ++a)
        for (int b = a + 1; b < 300; ++b) {
            const Vec3 ta[3] = {vertex(triangles[3 * a]), vertex(triangles[3 * a + 1]), vertex(triangles[3 * a + 2])};
            const Vec3 tb[3] = {vertex(triangles[3 * b]), vertex(triangles[3 * b + 1]), vertex(triangles[3 * b + 2])};
            if (weft::triangles_intersect<double>(ta, tb)) expected.emplace_back(a, b);
        }
    REQUIRE(expected.size() > 10);
    const auto found_pairs = [&](const std::vector<double>& x, const std::vector<int>& t, double cell) {
        const thrust::device_vector<double> dq(x.begin(), x.end());
        const thrust::device_vector<int> dt(t.begin(), t.end());
        std::vector<std::pair<int, int>> out;
        for (const CandidatePair& p : weft::to_host(weft::find_intersecting_triangles<double>(dq, dt, cell)))
            out.emplace_back(p.a, p.b);
        return out;
    };
    for (const double cell : {0.05, 0.2, 1.0}) {
        INFO("cell " << cell);
        CHECK(found_pairs(q, triangles, cell) == expected);
    }

    // A 12 × 12 sheet: flat, no intersection (neighbours share vertices);
    // its right half folded back through the left one, intersections.
    const int n = 12;
    std::vector<double> sheet;
    std::vector<int> tris;
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) sheet.insert(sheet.end(), {double(i) / (n - 1), double(j) / (n - 1), 0.0});
    for (int j = 0; j + 1 < n; ++j)
        for (int i = 0; i + 1 < n; ++i) {
            const int a = j * n + i, b = a + 1, c = a + n, d = c + 1;
            tris.insert(tris.end(), {a, b, d, a, d, c});
        }
    CHECK(found_pairs(sheet, tris, 0.2).empty());
    std::vector<double> folded = sheet;
    for (int v = 0; v < n * n; ++v) {
        const double x = folded[3 * v];
        if (x > 0.5) {
            // Rotated about the line x = 0.5 by 170°, down through the plane of the left half.
            const double angle = 170.0 * 3.14159265358979 / 180;
            folded[3 * v] = 0.5 + (x - 0.5) * std::cos(angle);
            folded[3 * v + 2] = -(x - 0.5) * std::sin(angle) + 0.02 * std::sin(12 * folded[3 * v + 1]);
        }
    }
    const auto folded_pairs = found_pairs(folded, tris, 0.2);
    INFO(folded_pairs.size() << " intersecting pairs in the folded sheet");
    CHECK(!folded_pairs.empty());
    CHECK_THROWS_WITH(found_pairs(sheet, std::vector<int>{0, 1}, 0.2), Catch::Contains("multiple of 3"));
}
