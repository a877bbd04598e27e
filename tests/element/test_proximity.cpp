// Closest points of segment pairs and of a point and a triangle
// (element/proximity.hpp) against a brute-force minimization of the
// distance over the parameter domain, on random, parallel, crossing,
// touching and degenerate configurations.

#include <weft/element/proximity.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include <catch2/catch.hpp>

#include "support/random.hpp"

using weft_test::Random;
using Vec3 = Eigen::Vector3d;

namespace {

/// min f over the unit square (segments) or the unit triangle (u, v ≥ 0,
/// u + v ≤ 1), f convex: a 101² grid, then cyclic golden-section line
/// searches along both parameters within the domain, repeated until the
/// value stops changing. Independent of the closed-form solution.
double brute_minimum(const std::function<double(double, double)>& f, bool triangle)
{
    const auto inside = [&](double s, double t) {
        return s >= 0 && t >= 0 && (triangle ? s + t <= 1 : (s <= 1 && t <= 1));
    };
    double best = std::numeric_limits<double>::infinity(), bs = 0, bt = 0;
    const int n = 100;
    for (int i = 0; i <= n; ++i)
        for (int j = 0; j <= n; ++j) {
            const double s = double(i) / n, t = double(j) / n;
            if (!inside(s, t)) continue;
            const double v = f(s, t);
            if (v < best) best = v, bs = s, bt = t;
        }
    const auto golden = [&](const std::function<double(double)>& g, double lo, double hi) {
        const double r = 0.5 * (std::sqrt(5.0) - 1);
        double a = lo, b = hi;
        for (int k = 0; k < 200; ++k) {
            const double c = b - r * (b - a), d = a + r * (b - a);
            if (g(c) < g(d))
                b = d;
            else
                a = c;
        }
        return 0.5 * (a + b);
    };
    for (int sweep = 0; sweep < 200; ++sweep) {
        const double before = best;
        bs = golden([&](double s) { return f(s, bt); }, 0.0, triangle ? 1 - bt : 1.0);
        bt = golden([&](double t) { return f(bs, t); }, 0.0, triangle ? 1 - bs : 1.0);
        // Also along the hypotenuse direction for the triangle (s + t fixed).
        if (triangle) {
            const double sum = bs + bt;
            bs = golden([&](double s) { return f(s, sum - s); }, 0.0, sum);
            bt = sum - bs;
        }
        best = std::min(best, f(bs, bt));
        if (before - best <= 1e-16 * (1 + best) && sweep > 3) break;
    }
    return best;
}

double segment_value(const Vec3& a0, const Vec3& a1, const Vec3& b0, const Vec3& b1, double s, double t)
{
    return ((a0 + s * (a1 - a0)) - (b0 + t * (b1 - b0))).squaredNorm();
}

}  // namespace

TEST_CASE("proximity: segment-segment closest points against brute force", "[element][proximity]")
{
    Random rng(3);
    int checks = 0;
    const auto check = [&](const Vec3& a0, const Vec3& a1, const Vec3& b0, const Vec3& b1, const char* what) {
        const auto c = weft::closest_segment_segment<double>(a0, a1, b0, b1);
        INFO(what << ": s " << c.s << ", t " << c.t << ", d2 " << c.distance_squared);
        REQUIRE(c.s >= 0);
        REQUIRE(c.s <= 1);
        REQUIRE(c.t >= 0);
        REQUIRE(c.t <= 1);
        // The parameters give the distance returned.
        CHECK(segment_value(a0, a1, b0, b1, c.s, c.t) == Approx(c.distance_squared).margin(1e-15));
        const double reference =
            brute_minimum([&](double s, double t) { return segment_value(a0, a1, b0, b1, s, t); }, false);
        CHECK(c.distance_squared <= reference + 1e-12 * (1 + reference));
        CHECK(c.distance_squared == Approx(reference).margin(1e-12));
        ++checks;
    };
    for (int k = 0; k < 60; ++k) {
        const Vec3 a0 = rng.vector<3>(-1, 1), a1 = rng.vector<3>(-1, 1), b0 = rng.vector<3>(-1, 1),
                   b1 = rng.vector<3>(-1, 1);
        check(a0, a1, b0, b1, "random");
    }
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    check(Vec3::Zero(), x, 0.5 * x + 0.3 * z - y, 0.5 * x + 0.3 * z + y, "crossing at a distance");
    check(Vec3::Zero(), x, 0.5 * x - y, 0.5 * x + y, "crossing, touching");
    check(Vec3::Zero(), x, 0.2 * y, x + 0.2 * y, "parallel, overlapping");
    check(Vec3::Zero(), x, 1.5 * x + 0.2 * y, 2.5 * x + 0.2 * y, "parallel, disjoint");
    check(Vec3::Zero(), x, 0.3 * x, 0.7 * x, "collinear, contained");
    check(Vec3::Zero(), x, 2 * x, 3 * x, "collinear, apart");
    check(Vec3::Zero(), x, x, x + y, "sharing an end point");
    check(0.4 * x + 0.2 * z, 0.4 * x + 0.2 * z, Vec3::Zero(), x, "a point against a segment");
    check(0.4 * y, 0.4 * y, x, x, "two points");
    check(Vec3::Zero(), x, -0.3 * y + 2 * x, 0.3 * y + 2 * x, "end against interior");
    REQUIRE(checks == 70);
}

TEST_CASE("proximity: stable segment parameters are continuous through parallel segments", "[element][proximity]")
{
    Random rng(17);
    const double threshold = weft::parallel_blend_sine2;  // the default, in sin² of the angle
    int checks = 0;
    // Beyond the threshold the closest pair itself.
    for (int k = 0; k < 40; ++k) {
        const Vec3 a0 = rng.vector<3>(-1, 1), a1 = rng.vector<3>(-1, 1), b0 = rng.vector<3>(-1, 1),
                   b1 = rng.vector<3>(-1, 1);
        const Vec3 u = a1 - a0, w = b1 - b0;
        if (u.cross(w).squaredNorm() < 2 * threshold * u.squaredNorm() * w.squaredNorm()) continue;
        const auto c = weft::closest_segment_segment<double>(a0, a1, b0, b1);
        const auto p = weft::stable_segment_parameters<double>(a0, a1, b0, b1);
        CHECK(p.s == c.s);
        CHECK(p.t == c.t);
        CHECK(p.distance_squared == c.distance_squared);
        ++checks;
    }
    REQUIRE(checks >= 20);
    // Parallel: the middle of the overlap, whichever way round-off tilts the pair.
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    for (const double tilt : {0.0, 1e-12, -1e-12}) {
        const auto p = weft::stable_segment_parameters<double>(Vec3::Zero(), x, 0.4 * x + 0.3 * z + tilt * y,
                                                               1.6 * x + 0.3 * z - tilt * y);
        INFO("tilt " << tilt);
        CHECK(p.s == Approx(0.7).margin(1e-9));   // overlap s ∈ [0.4, 1]
        CHECK(p.t == Approx(0.25).margin(1e-9));  // b(t) = 0.4 + 1.2 t = 0.7
        CHECK(p.distance_squared == Approx(0.09).margin(1e-12));
        const auto c = weft::closest_segment_segment<double>(Vec3::Zero(), x, 0.4 * x + 0.3 * z + tilt * y,
                                                             1.6 * x + 0.3 * z - tilt * y);
        CHECK(c.distance_squared <= p.distance_squared + 1e-15);
        ++checks;
    }
    // Disjoint parallel segments: the facing ends.
    {
        const auto p = weft::stable_segment_parameters<double>(Vec3::Zero(), x, 1.5 * x + 0.2 * y, 2.5 * x + 0.2 * y);
        CHECK(p.s == Approx(1.0));
        CHECK(p.t == Approx(0.0).margin(1e-15));
        ++checks;
    }
    // Turning b through parallel (and beyond the threshold on both sides)
    // about a point off its middle, so that the closest pair jumps from one
    // end of the overlap to the other: the stable parameters move in steps
    // of the order of the turn, the closest pair's do not.
    double largest_stable = 0, largest_closest = 0;
    double previous_s = -1, previous_cs = -1;
    const int steps = 4000;
    for (int i = 0; i <= steps; ++i) {
        const double angle = 6e-2 * (2.0 * i / steps - 1);  // ±60 mrad: sin² up to 3.6e-3
        const Vec3 dir(std::cos(angle), std::sin(angle), 0);
        const Vec3 pivot = 0.6 * x + 0.3 * z;
        const Vec3 b0 = pivot - 0.5 * dir, b1 = pivot + 0.7 * dir;
        const auto p = weft::stable_segment_parameters<double>(Vec3::Zero(), x, b0, b1);
        const auto c = weft::closest_segment_segment<double>(Vec3::Zero(), x, b0, b1);
        if (i > 0) {
            largest_stable = std::max(largest_stable, std::abs(p.s - previous_s));
            largest_closest = std::max(largest_closest, std::abs(c.s - previous_cs));
        }
        previous_s = p.s;
        previous_cs = c.s;
    }
    INFO("largest step of s: stable " << largest_stable << ", closest " << largest_closest);
    CHECK(largest_closest > 0.3);  // the jump that the stable parameters remove
    CHECK(largest_stable < 2e-2);  // 4,000 steps of 3e-5 rad
    checks += 2;
    REQUIRE(checks >= 26);
}

TEST_CASE("proximity: the stable parameters of yarn segments near parallel move little with nanometres of motion",
          "[element][proximity]")
{
    // Two 1 mm yarn segments 0.45 mm apart (in contact for r = 0.5 mm),
    // crossing in projection at their middles at sin² 4e-6 to 4e-4 of
    // their angle. Tilting b towards a by 1e-8 m at one end moves the
    // closest points along the overlap by about d δ / (sin² |u|): across
    // the whole overlap at sin² 4e-6. Within the blend (parallel_blend_sine2)
    // the stable parameters hardly move; a blend as narrow as 1e-6 left
    // these pairs to the closest points (docs/collision.md, "Parallel yarns").
    const double length = 1e-3, d = 4.5e-4, delta = 1e-8;
    int checks = 0;
    for (const double sine2 : {4e-6, 4e-5, 4e-4}) {
        REQUIRE(sine2 < weft::parallel_blend_sine2);
        const double angle = std::asin(std::sqrt(sine2));
        const Vec3 a0 = Vec3::Zero(), a1(length, 0, 0);
        const Vec3 half = 0.5 * length * Vec3(std::cos(angle), std::sin(angle), 0);
        const Vec3 middle(0.5 * length, 0, d);
        const auto at = [&](double lift) {
            const Vec3 b0 = middle - half, b1 = middle + half + Vec3(0, 0, lift);
            return std::make_pair(weft::stable_segment_parameters<double>(a0, a1, b0, b1),
                                  weft::closest_segment_segment<double>(a0, a1, b0, b1));
        };
        const auto down = at(-delta), up = at(delta);
        INFO("sin^2 " << sine2 << ": stable s " << down.first.s << " -> " << up.first.s << ", closest s "
                      << down.second.s << " -> " << up.second.s);
        CHECK(std::abs(up.first.s - down.first.s) < 0.01);
        CHECK(std::abs(up.first.t - down.first.t) < 0.01);
        ++checks;
        if (sine2 < 1e-4) {
            CHECK(std::abs(up.second.s - down.second.s) > 0.1);  // the sweep the blend removes
            ++checks;
        }
    }
    REQUIRE(checks == 5);
}

TEST_CASE("proximity: segment_sine2 is the squared sine of the angle between two directions", "[element][proximity]")
{
    Random rng(23);
    int checks = 0;
    for (int k = 0; k < 50; ++k) {
        const Vec3 u = rng.vector<3>(-1, 1), w = rng.vector<3>(-1, 1);
        const double angle = std::acos(std::clamp(u.normalized().dot(w.normalized()), -1.0, 1.0));
        CHECK(weft::segment_sine2<double>(u, w) == Approx(std::sin(angle) * std::sin(angle)).margin(1e-12));
        // Scale- and orientation-free.
        CHECK(weft::segment_sine2<double>(-3.0 * u, 0.01 * w) ==
              Approx(weft::segment_sine2<double>(u, w)).margin(1e-12));
        ++checks;
    }
    const Vec3 x(1, 0, 0), y(0, 1, 0);
    CHECK(weft::segment_sine2<double>(x, 2.0 * x) == 0.0);
    CHECK(weft::segment_sine2<double>(x, y) == 1.0);
    CHECK(weft::segment_sine2<double>(x, std::cos(0.5) * x + std::sin(0.5) * y) ==
          Approx(std::sin(0.5) * std::sin(0.5)).epsilon(1e-12));
    // A point has no direction: never parallel.
    CHECK(weft::segment_sine2<double>(Vec3::Zero(), x) == 1.0);
    CHECK(weft::segment_sine2<double>(x, Vec3::Zero()) == 1.0);
    checks += 5;
    REQUIRE(checks == 55);
}

TEST_CASE("proximity: point-triangle closest points against brute force", "[element][proximity]")
{
    Random rng(4);
    int checks = 0;
    const auto check = [&](const Vec3& p, const Vec3& x0, const Vec3& x1, const Vec3& x2, const char* what) {
        const auto c = weft::closest_point_triangle<double>(p, x0, x1, x2);
        INFO(what << ": u " << c.u << ", v " << c.v << ", d2 " << c.distance_squared);
        REQUIRE(c.u >= 0);
        REQUIRE(c.v >= 0);
        REQUIRE(c.u + c.v <= 1 + 1e-15);
        const auto value = [&](double u, double v) { return (x0 + u * (x1 - x0) + v * (x2 - x0) - p).squaredNorm(); };
        CHECK(value(c.u, c.v) == Approx(c.distance_squared).margin(1e-15));
        const double reference = brute_minimum(value, true);
        CHECK(c.distance_squared <= reference + 1e-12 * (1 + reference));
        CHECK(c.distance_squared == Approx(reference).margin(1e-12));
        ++checks;
    };
    for (int k = 0; k < 60; ++k)
        check(rng.vector<3>(-1, 1), rng.vector<3>(-1, 1), rng.vector<3>(-1, 1), rng.vector<3>(-1, 1), "random");
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    check(0.2 * x + 0.2 * y + 0.5 * z, Vec3::Zero(), x, y, "above the interior");
    check(0.2 * x + 0.2 * y, Vec3::Zero(), x, y, "in the triangle");
    check(-x - y + z, Vec3::Zero(), x, y, "beyond a corner");
    check(0.5 * x - y, Vec3::Zero(), x, y, "beyond an edge");
    check(x + y, Vec3::Zero(), x, y, "beyond the hypotenuse");
    check(0.3 * z, Vec3::Zero(), x, 2 * x, "degenerate (collinear) triangle");
    check(0.3 * z + y, x, x, x, "a triangle collapsed to a point");
    REQUIRE(checks == 67);
}

namespace {

/// Independent segment–triangle crossing: the endpoints' signed distances to
/// the triangle's plane change sign and the crossing point lies in the
/// triangle (its distance to the triangle, by closest_point_triangle, is 0).
bool crosses_by_plane(const Vec3& p0, const Vec3& p1, const Vec3& x0, const Vec3& x1, const Vec3& x2)
{
    const Vec3 n = (x1 - x0).cross(x2 - x0).normalized();
    const double d0 = n.dot(p0 - x0), d1 = n.dot(p1 - x0);
    if (d0 * d1 > 0 || d0 == d1) return false;
    const Vec3 point = p0 + d0 / (d0 - d1) * (p1 - p0);
    return weft::closest_point_triangle<double>(point, x0, x1, x2).distance_squared < 1e-20;
}

}  // namespace

TEST_CASE("proximity: triangle-triangle intersection against a plane-clipping test", "[element][proximity]")
{
    Random rng(8);
    int intersecting = 0, apart = 0;
    for (int k = 0; k < 400; ++k) {
        Vec3 a[3], b[3];
        for (int c = 0; c < 3; ++c) {
            a[c] = rng.vector<3>(-1, 1);
            b[c] = rng.vector<3>(-1, 1) + Vec3(0.5, 0, 0);
        }
        bool reference = false;
        for (int c = 0; c < 3; ++c) {
            reference = reference || crosses_by_plane(a[c], a[(c + 1) % 3], b[0], b[1], b[2]);
            reference = reference || crosses_by_plane(b[c], b[(c + 1) % 3], a[0], a[1], a[2]);
        }
        INFO("pair " << k);
        CHECK(weft::triangles_intersect<double>(a, b) == reference);
        (reference ? intersecting : apart)++;
    }
    INFO(intersecting << " intersecting, " << apart << " apart");
    CHECK(intersecting > 50);
    CHECK(apart > 50);
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    const Vec3 flat[3] = {Vec3::Zero(), x, y};
    const Vec3 piercing[3] = {0.2 * x + 0.2 * y - z, 0.3 * x + 0.2 * y + z, 2 * x + 2 * y + z};
    const Vec3 above[3] = {0.1 * z, x + 0.1 * z, y + 0.1 * z};
    CHECK(weft::triangles_intersect<double>(flat, piercing));
    CHECK_FALSE(weft::triangles_intersect<double>(flat, above));
    CHECK(weft::segment_crosses_triangle<double>(0.2 * x + 0.2 * y - z, 0.2 * x + 0.2 * y + z, flat[0], flat[1],
                                                 flat[2]));
    CHECK_FALSE(weft::segment_crosses_triangle<double>(0.2 * x + 0.2 * y + 0.5 * z, 0.2 * x + 0.2 * y + z, flat[0],
                                                       flat[1], flat[2]));
}
