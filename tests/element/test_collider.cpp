// Collider signed distances: sphere, plane and box; φ's gradient is the
// normal (finite differences), and penalty contact pushes along it.
#include <catch2/catch.hpp>

#include <cmath>

#include <weft/core/math.hpp>
#include <weft/element/collider.hpp>

#include "support/random.hpp"

using Vec3 = weft::Vec3<double>;

namespace {

weft::Collider<double> box()
{
    weft::Collider<double> c;
    c.type = 2;
    c.center = Vec3(0.1, -0.2, 0.3);
    c.normal = Vec3(0.4, 0.25, 0.1);  // half extents
    c.radius = 0;
    c.stiffness = 1e3;
    c.friction = 0;
    return c;
}

/// Brute-force signed distance of d (from the centre) to a box of half
/// extents `half`: outside, the distance to the clamped point (returned in
/// `clamped`); inside, minus the distance to the nearest face.
double box_distance(const Vec3& d, const Vec3& half, Vec3& clamped)
{
    for (int a = 0; a < 3; ++a) clamped(a) = std::max(-half(a), std::min(half(a), d(a)));
    double distance = (d - clamped).norm();
    if (distance == 0) {
        distance = -1e300;
        for (int a = 0; a < 3; ++a) distance = std::max(distance, std::abs(d(a)) - half(a));
    }
    return distance;
}

/// A random point around the box, with φ and n there.
struct Probe {
    Vec3 x;
    double phi;
    Vec3 n;
};
Probe probe(const weft::Collider<double>& c, weft_test::Random& rng)
{
    Probe p;
    p.x = c.center + Vec3(rng.uniform(-0.8, 0.8), rng.uniform(-0.6, 0.6), rng.uniform(-0.3, 0.3));
    c.distance(p.x, p.phi, p.n);
    return p;
}

}  // namespace

TEST_CASE("collider: box signed distance, normal = gradient of phi", "[element][collider]")
{
    const weft::Collider<double> c = box();
    weft_test::Random rng(3);
    int checked = 0;
    for (int k = 0; k < 400; ++k) {
        const auto [x, phi, n] = probe(c, rng);
        Vec3 clamped;
        const double expected = box_distance(x - c.center, c.normal, clamped);
        CHECK(phi == Approx(expected).margin(1e-14));
        CHECK(n.norm() == Approx(1.0));
        // ∇φ by central differences (away from edges and the medial planes)
        const double eps = 1e-7;
        Vec3 grad;
        for (int a = 0; a < 3; ++a) {
            Vec3 xp = x, xm = x;
            xp(a) += eps;
            xm(a) -= eps;
            double pp, pm;
            Vec3 np, nm;
            c.distance(xp, pp, np);
            c.distance(xm, pm, nm);
            grad(a) = (pp - pm) / (2 * eps);
        }
        if ((grad - n).norm() < 1e-3 || std::abs(grad.norm() - 1) > 1e-3) {
            // kinks (medial planes inside, none outside) give a gradient of the wrong length
            if (std::abs(grad.norm() - 1) <= 1e-3) {
                CHECK((grad - n).norm() < 1e-5);
                ++checked;
            }
        } else {
            FAIL("normal " << n.transpose() << " differs from the gradient " << grad.transpose() << " at "
                           << x.transpose());
        }
    }
    REQUIRE(checked > 300);
}

TEST_CASE("collider: a node resting on the table top is pushed up", "[element][collider]")
{
    const weft::Collider<double> c = box();
    const Vec3 x = c.center + Vec3(0.1, 0.05, c.normal(2) - 1e-4);  // 0.1 mm inside the top face
    double phi;
    Vec3 n;
    c.distance(x, phi, n);
    CHECK(phi == Approx(-1e-4));
    CHECK((n - Vec3(0, 0, 1)).norm() == 0.0);
    const weft::LocalTerms<double, 3> t = weft::collider_contact<double>(Vec3::Zero(), phi, n, 2e-4, c.stiffness, 0.0, 1e-3);
    CHECK(t.force(2) == Approx(c.stiffness * 3e-4));
    CHECK(t.force.head<2>().norm() == 0.0);
}

TEST_CASE("collider: a rounded box is the shrunk box inflated by the rounding", "[element][collider][rounding]")
{
    weft::Collider<double> c = box();
    c.radius = 0.05;
    weft_test::Random rng(4);
    int compared = 0;
    int on_edges = 0;
    for (int k = 0; k < 400; ++k) {
        const auto [x, phi, n] = probe(c, rng);
        // brute force: distance to the box of half extents e − ρ, minus ρ
        const Vec3 d = x - c.center;
        const Vec3 inner = c.normal - Vec3::Constant(c.radius);
        Vec3 clamped;
        const double expected = box_distance(d, inner, clamped);
        if (expected > 0) {
            // outside the shrunk box the normal is the unit vector from its nearest point
            CHECK((n - (d - clamped) / expected).norm() < 1e-12);
            int outside_axes = 0;
            for (int a = 0; a < 3; ++a) outside_axes += std::abs(d(a)) > inner(a) ? 1 : 0;
            on_edges += outside_axes >= 2 ? 1 : 0;
        }
        CHECK(phi == Approx(expected - c.radius).margin(1e-14));
        ++compared;
    }
    REQUIRE(compared == 400);
    REQUIRE(on_edges > 50);  // points beside edges and corners, where rounding changes φ and n

    // Over the edge of a table, the normal turns continuously: no jump as a
    // point slides from the top face around the rounded edge.
    const Vec3 edge = c.center + Vec3(c.normal(0), 0, c.normal(2));
    Vec3 previous;
    double phi;
    c.distance(edge + Vec3(-0.2, 0, 0.01), phi, previous);
    double largest_turn = 0;
    for (int k = 1; k <= 200; ++k) {
        const double angle = 0.5 * weft::Constants<double>::pi * k / 200;  // from the top face down the side
        const Vec3 x = edge + Vec3(-c.radius, 0, -c.radius) +
                       (c.radius + 0.01) * Vec3(std::sin(angle), 0, std::cos(angle));
        Vec3 n;
        c.distance(x, phi, n);
        CHECK(phi == Approx(0.01).margin(1e-12));
        largest_turn = std::max(largest_turn, (n - previous).norm());
        previous = n;
    }
    CHECK(largest_turn < 0.01);
    CHECK((previous - Vec3(1, 0, 0)).norm() < 1e-12);
}
