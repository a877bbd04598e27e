// Collider signed distances: sphere, plane and box; φ's gradient is the
// normal (finite differences), and penalty contact pushes along it.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <weft/core/math.hpp>
#include <weft/element/collider.hpp>

#include "support/random.hpp"
#include "support/symmetric_eigen.hpp"

using Vec3 = weft::Vec3<double>;

namespace {

weft::Collider<double> box()
{
    return weft::box_collider<double>(Vec3(0.1, -0.2, 0.3), Vec3(0.4, 0.25, 0.1), 0.0, 1e3);
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
        const double expected = box_distance(x - c.center, c.half_extents, clamped);
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
    const Vec3 x = c.center + Vec3(0.1, 0.05, c.half_extents(2) - 1e-4);  // 0.1 mm inside the top face
    double phi;
    Vec3 n;
    c.distance(x, phi, n);
    CHECK(phi == Approx(-1e-4));
    CHECK((n - Vec3(0, 0, 1)).norm() == 0.0);
    const weft::LocalTerms<double, 3> t =
        weft::collider_contact<double>(Vec3::Zero(), phi, n, 2e-4, c.stiffness, 0.0, 1e-3);
    // depth 3e-4 beyond the onset δ = 0.1 × 2e-4: k (d − δ/2)
    CHECK(t.force(2) == Approx(c.stiffness * (3e-4 - 0.5 * 2e-5)));
    CHECK(t.force.head<2>().norm() == 0.0);
}

TEST_CASE("collider: a rounded box is the shrunk box inflated by the rounding", "[element][collider][rounding]")
{
    weft::Collider<double> c = box();
    c.rounding = 0.05;
    weft_test::Random rng(4);
    int compared = 0;
    int on_edges = 0;
    for (int k = 0; k < 400; ++k) {
        const auto [x, phi, n] = probe(c, rng);
        // brute force: distance to the box of half extents e − ρ, minus ρ
        const Vec3 d = x - c.center;
        const Vec3 inner = c.half_extents - Vec3::Constant(c.rounding);
        Vec3 clamped;
        const double expected = box_distance(d, inner, clamped);
        if (expected > 0) {
            // outside the shrunk box the normal is the unit vector from its nearest point
            CHECK((n - (d - clamped) / expected).norm() < 1e-12);
            int outside_axes = 0;
            for (int a = 0; a < 3; ++a) outside_axes += std::abs(d(a)) > inner(a) ? 1 : 0;
            on_edges += outside_axes >= 2 ? 1 : 0;
        }
        CHECK(phi == Approx(expected - c.rounding).margin(1e-14));
        ++compared;
    }
    REQUIRE(compared == 400);
    REQUIRE(on_edges > 50);  // points beside edges and corners, where rounding changes φ and n

    // Over the edge of a table, the normal turns continuously: no jump as a
    // point slides from the top face around the rounded edge.
    const Vec3 edge = c.center + Vec3(c.half_extents(0), 0, c.half_extents(2));
    Vec3 previous;
    double phi;
    c.distance(edge + Vec3(-0.2, 0, 0.01), phi, previous);
    double largest_turn = 0;
    for (int k = 1; k <= 200; ++k) {
        const double angle = 0.5 * weft::Constants<double>::pi * k / 200;  // from the top face down the side
        const Vec3 x =
            edge + Vec3(-c.rounding, 0, -c.rounding) + (c.rounding + 0.01) * Vec3(std::sin(angle), 0, std::cos(angle));
        Vec3 n;
        c.distance(x, phi, n);
        CHECK(phi == Approx(0.01).margin(1e-12));
        largest_turn = std::max(largest_turn, (n - previous).norm());
        previous = n;
    }
    CHECK(largest_turn < 0.01);
    CHECK((previous - Vec3(1, 0, 0)).norm() < 1e-12);
}

TEST_CASE("collider: lagged friction is minus the v-gradient of its potential, with its exact Jacobian",
          "[element][collider][friction][fd]")
{
    // D(v) = μλ f₀(|P v|) with n and λ frozen: f = −∂D/∂v and ∂f/∂v by
    // central differences, in the mollified region (|v_t| < ε), beyond it,
    // and on both sides of ε; −∂f/∂v symmetric positive semi-definite.
    weft_test::Random rng(11);
    const double eps = 1e-3, limit = 0.7;
    int checked = 0, below = 0, above = 0;
    for (int trial = 0; trial < 200; ++trial) {
        const Vec3 n = rng.unit_vector();
        const double scale = trial < 100 ? rng.uniform(0.01, 0.99) * eps : rng.uniform(1.01, 50) * eps;
        const Vec3 w = rng.unit_vector();
        Vec3 v = (w - n * n.dot(w)).normalized() * scale;  // |v_t| = scale
        v += n * rng.uniform(-1, 1) * eps;                 // normal velocity does not matter
        const auto t = weft::lagged_friction<double>(v, n, limit, eps);
        const double u = (v - n * n.dot(v)).norm();
        (u < eps ? below : above) += 1;
        REQUIRE(t.force.norm() > 0);
        const double d = 1e-7 * eps;
        Vec3 grad, fd_col;
        weft::Mat3<double> jac;
        for (int k = 0; k < 3; ++k) {
            Vec3 vp = v, vm = v;
            vp(k) += d;
            vm(k) -= d;
            const auto p = weft::lagged_friction<double>(vp, n, limit, eps);
            const auto m = weft::lagged_friction<double>(vm, n, limit, eps);
            grad(k) = (p.energy - m.energy) / (2 * d);
            jac.col(k) = (p.force - m.force) / (2 * d);
        }
        INFO("trial " << trial << ", |v_t|/eps " << u / eps);
        CHECK((t.force + grad).norm() <= 1e-6 * limit);
        CHECK((t.df_dv - jac).norm() <= 1e-5 * (t.df_dv.norm() + limit / eps));
        CHECK((t.df_dv - t.df_dv.transpose()).norm() <= 1e-12 * t.df_dv.norm());
        CHECK(weft_test::symmetric_eigenvalues(-t.df_dv).minCoeff() >= -1e-9 * t.df_dv.norm());
        CHECK(t.force.norm() <= limit * (1 + 1e-12));  // never beyond the Coulomb limit
        ++checked;
    }
    REQUIRE(checked == 200);
    REQUIRE(below == 100);
    REQUIRE(above == 100);
    // Continuous at the slip velocity, zero at rest.
    const Vec3 n(0, 0, 1);
    const auto lo = weft::lagged_friction<double>(Vec3(eps * (1 - 1e-9), 0, 0), n, limit, eps);
    const auto hi = weft::lagged_friction<double>(Vec3(eps * (1 + 1e-9), 0, 0), n, limit, eps);
    CHECK((lo.force - hi.force).norm() <= 1e-6 * limit);
    CHECK(lo.energy == Approx(hi.energy).epsilon(1e-6));
    CHECK(weft::lagged_friction<double>(Vec3(0, 0, 0.3), n, limit, eps).force.norm() == 0.0);
}

TEST_CASE("collider: with lagged positions the friction uses the start-of-step normal force",
          "[element][collider][friction]")
{
    // A plane at z = 0, offset 1e-3: at the start the node is 0.5 mm deep; the
    // iterate is 0.8 mm deep. The penalty follows the iterate, the friction
    // limit the start (μ k · 0.5 mm), sliding fast along x.
    const weft::Collider<double> plane = weft::plane_collider<double>(Vec3::Zero(), Vec3(0, 0, 1), 1e3, 0.4);
    const double start[3] = {0, 0, 0.5e-3};
    const Vec3 x(0.01, 0, 0.2e-3), v(2.0, 0, 0);
    Vec3 force = Vec3::Zero();
    weft::Mat3<double> k = weft::Mat3<double>::Zero(), d = weft::Mat3<double>::Zero();
    double energy = 0, dissipation = 0;
    weft::add_collider_terms<double>(&plane, 1, x, v, start, 1e-3, 1e-3, force, k, d, energy, dissipation);
    // Beyond the onset δ = 0.1 r = 1e-4: F_n = k (d − δ/2).
    CHECK(force(2) == Approx(1e3 * 0.75e-3));
    CHECK(force(0) == Approx(-0.4 * 1e3 * 0.45e-3));
    CHECK(energy == Approx(0.5 * 1e3 * 0.7e-3 * 0.7e-3 + 0.5 * 1e3 * 1e-4 * 0.7e-3 + 1e3 * 1e-8 / 6));
    // the friction potential μλ (u − ε/3) beyond the slip velocity
    CHECK(dissipation == Approx(0.4 * 1e3 * 0.45e-3 * (2.0 - 1e-3 / 3)));
    // Without lagged positions: the one-step scheme's law at the iterate.
    force.setZero();
    weft::add_collider_terms<double>(&plane, 1, x, v, nullptr, 1e-3, 1e-3, force, k, d, energy, dissipation);
    CHECK(force(0) == Approx(-0.4 * 1e3 * 0.75e-3));
}

TEST_CASE("collider: full Newton's slip velocity is what the friction takes from the node in one step",
          "[element][collider][friction]")
{
    // ε = max(ε₀, μλ h / m); the floor without a mass or a step size.
    CHECK(weft::collider_slip_velocity<double>(1e-3, 2e-6, 1e-3, 5e-8) == Approx(2e-6 * 1e-3 / 5e-8));
    CHECK(weft::collider_slip_velocity<double>(1e-3, 2e-8, 1e-3, 5e-8) == 1e-3);
    CHECK(weft::collider_slip_velocity<double>(1e-3, 2e-6, 1e-3, 0.0) == 1e-3);
    CHECK(weft::collider_slip_velocity<double>(1e-3, 2e-6, 0.0, 5e-8) == 1e-3);
    // Through add_collider_terms: the plane of the test above, start 0.5 mm
    // deep (λ = k (d − δ/2) = 0.45 N, μλ = 0.18 N), sliding at 5 cm/s along x;
    // a mass of 1 g and h = 1 ms give ε = 0.18 m/s, so the node is in the
    // mollified range: f = −μλ (2/ε − u/ε²) u, against lagged_friction.
    const weft::Collider<double> plane = weft::plane_collider<double>(Vec3::Zero(), Vec3(0, 0, 1), 1e3, 0.4);
    const double start[3] = {0, 0, 0.5e-3};
    const Vec3 x(0.01, 0, 0.5e-3), v(0.05, 0, 0);
    const double limit = 0.4 * 1e3 * 0.45e-3, mass = 1e-3, h = 1e-3, eps = limit * h / mass;
    Vec3 force = Vec3::Zero();
    weft::Mat3<double> k = weft::Mat3<double>::Zero(), d = weft::Mat3<double>::Zero();
    double energy = 0, dissipation = 0;
    weft::add_collider_terms<double>(&plane, 1, x, v, start, 1e-3, 1e-3, force, k, d, energy, dissipation, mass, h);
    const auto expected = weft::lagged_friction<double>(v, Vec3(0, 0, 1), limit, eps);
    CHECK(force(0) == Approx(-limit * (2 / eps - 0.05 / (eps * eps)) * 0.05));
    CHECK(force(0) == Approx(expected.force(0)));
    CHECK(d(0, 0) == Approx(expected.df_dv(0, 0)));
    CHECK(dissipation == Approx(expected.energy));
    // With the floor alone (no mass) the same node slides beyond ε₀: f = −μλ.
    force.setZero();
    weft::add_collider_terms<double>(&plane, 1, x, v, start, 1e-3, 1e-3, force, k, d, energy, dissipation);
    CHECK(force(0) == Approx(-limit));
}

TEST_CASE("collider: the penalty is C2 in the depth and its force is minus the gradient of its energy",
          "[element][collider][fd]")
{
    // Against finite differences on both sides of the onset δ = 0.1 r and
    // across it: F_n = −∂V/∂φ, stiffness = ∂F_n/∂d continuous (0 at d = 0).
    const double r = 2e-3, k = 500, delta = 0.1 * r;
    const Vec3 n(0, 0, 1), v = Vec3::Zero();
    const auto at = [&](double depth) { return weft::collider_contact<double>(v, r - depth, n, r, k, 0.0, 1e-3); };
    int checked = 0;
    for (double depth : {0.01 * delta, 0.3 * delta, 0.99 * delta, 1.01 * delta, 2 * delta, 7 * delta}) {
        const double d = 1e-6 * delta;
        const double grad = (at(depth + d).energy - at(depth - d).energy) / (2 * d);
        const double stiff = (at(depth + d).force(2) - at(depth - d).force(2)) / (2 * d);
        INFO("depth / delta " << depth / delta);
        REQUIRE(at(depth).force(2) > 0);
        CHECK(at(depth).force(2) == Approx(grad).epsilon(1e-6));
        CHECK(-at(depth).df_dq(2, 2) == Approx(stiff).epsilon(1e-5));
        ++checked;
    }
    REQUIRE(checked == 6);
    // Continuity at the onset and at contact.
    CHECK(at(delta * (1 - 1e-12)).df_dq(2, 2) == Approx(at(delta * (1 + 1e-12)).df_dq(2, 2)));
    CHECK(at(delta * (1 - 1e-12)).force(2) == Approx(at(delta * (1 + 1e-12)).force(2)));
    CHECK(at(1e-12 * delta).df_dq(2, 2) == Approx(0).margin(1e-6 * k));
    CHECK(at(-1e-6).force.norm() == 0.0);
    // Deep in contact: the stiffness is k and the force k (d − δ/2).
    CHECK(-at(5 * delta).df_dq(2, 2) == Approx(k));
    CHECK(at(5 * delta).force(2) == Approx(k * 4.5 * delta));
}

TEST_CASE(
    "collider: the normal gradient is the Hessian of phi, and the exact curvature term completes the "
    "penalty's Jacobian",
    "[element][collider][fd]")
{
    weft_test::Random rng(11);
    const weft::Collider<double> sphere = weft::sphere_collider<double>(Vec3(0.02, -0.01, 0.03), 0.05, 1e3, 0.3);
    const weft::Collider<double> plane =
        weft::plane_collider<double>(Vec3(0.02, -0.01, 0.03), Vec3(0.6, 0, 0.8), 1e3, 0.3);
    weft::Collider<double> rounded = box();
    rounded.rounding = 0.05;
    rounded.friction = 0.3;
    const double offset = 2e-3, fd = 1e-7;
    int checked = 0, curved = 0;
    const weft::Collider<double>& rounded_box = rounded;
    for (const weft::Collider<double>* c : {&sphere, &plane, &rounded_box}) {
        for (int trial = 0; trial < 60; ++trial) {
            // A point within the contact band (0 < depth < offset), on any
            // side: the sphere's surface, the plane, the box's faces, rounded
            // edges and corners.
            Vec3 x, n;
            double phi = 0;
            do {
                const Vec3 dir = Vec3(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1)).normalized();
                Vec3 guess =
                    c->center + (c->shape == weft::ColliderShape::box
                                     ? Vec3(rng.uniform(-0.5, 0.5), rng.uniform(-0.35, 0.35), rng.uniform(-0.2, 0.2))
                                     : Vec3(0.05 * dir));
                c->distance(guess, phi, n);
                x = guess - (phi - offset * rng.uniform(0.05, 0.95)) * n;  // onto the band along n
                c->distance(x, phi, n);
            } while (!(offset - phi > 0 && offset - phi < offset));
            // ∇n against central differences of n.
            const weft::Mat3<double> g = c->normal_gradient(x);
            weft::Mat3<double> g_fd;
            for (int a = 0; a < 3; ++a) {
                Vec3 e = Vec3::Zero();
                e(a) = fd;
                double p1, p0;
                Vec3 n1, n0;
                c->distance(x + e, p1, n1);
                c->distance(x - e, p0, n0);
                g_fd.col(a) = (n1 - n0) / (2 * fd);
            }
            const double scale = std::max(1.0, g.norm());
            INFO("collider shape " << static_cast<int>(c->shape) << " trial " << trial << " x " << x.transpose());
            CHECK((g - g_fd).norm() < 1e-5 * scale);
            CHECK((g - g.transpose()).norm() < 1e-12 * scale);
            curved += g.norm() > 1 ? 1 : 0;
            // The penalty force's x-Jacobian with the curvature term (lagged
            // friction: only the penalty depends on x) against central
            // differences of the force.
            const double start[3] = {x(0), x(1), x(2)};
            const Vec3 v(rng.uniform(-0.1, 0.1), rng.uniform(-0.1, 0.1), rng.uniform(-0.1, 0.1));
            const auto force_at = [&](const Vec3& y, weft::Mat3<double>* k) {
                Vec3 f = Vec3::Zero();
                weft::Mat3<double> kk = weft::Mat3<double>::Zero(), d = weft::Mat3<double>::Zero();
                double e = 0, diss = 0;
                weft::add_collider_terms<double>(c, 1, y, v, start, offset, 1e-3, f, kk, d, e, diss, 1e-6, 1e-3, true);
                if (k) *k = kk;
                return f;
            };
            weft::Mat3<double> k;
            force_at(x, &k);
            weft::Mat3<double> k_fd;
            for (int a = 0; a < 3; ++a) {
                Vec3 e = Vec3::Zero();
                e(a) = fd;
                k_fd.col(a) = (force_at(x + e, nullptr) - force_at(x - e, nullptr)) / (2 * fd);
            }
            CHECK((k - k_fd).norm() < 1e-5 * std::max(1.0, k.norm()));
            ++checked;
        }
    }
    REQUIRE(checked == 180);
    REQUIRE(curved > 60);  // the sphere and the box's rounded edges and corners
}

TEST_CASE("collider: the factories check the fields of their shape and name the one that is wrong",
          "[element][collider][error]")
{
    using Catch::Matchers::Contains;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    // Valid ones, with their named fields.
    const auto ball = weft::sphere_collider<double>(Vec3(1, 2, 3), 0.5, 1e3, 0.3);
    CHECK(ball.shape == weft::ColliderShape::sphere);
    CHECK(ball.radius == 0.5);
    const auto floor = weft::plane_collider<double>(Vec3::Zero(), Vec3(0, 0, 2), 1e3);
    CHECK(floor.shape == weft::ColliderShape::plane);
    CHECK(floor.normal == Vec3(0, 0, 1));  // stored unit
    const auto table = weft::box_collider<double>(Vec3::Zero(), Vec3(0.4, 0.5, 0.01), 0.002, 1e3, 0.3);
    CHECK(table.shape == weft::ColliderShape::box);
    CHECK(table.half_extents == Vec3(0.4, 0.5, 0.01));
    CHECK(table.rounding == 0.002);

    REQUIRE_THROWS_WITH(weft::sphere_collider<double>(Vec3::Zero(), 0.0, 1e3), Contains("sphere collider radius = 0"));
    REQUIRE_THROWS_WITH(weft::sphere_collider<double>(Vec3(nan, 0, 0), 1.0, 1e3),
                        Contains("collider center = nan: must be a finite number"));
    REQUIRE_THROWS_WITH(weft::sphere_collider<double>(Vec3::Zero(), 1.0, -5.0), Contains("collider stiffness = -5"));
    REQUIRE_THROWS_WITH(weft::sphere_collider<double>(Vec3::Zero(), 1.0, 1e3, -0.1),
                        Contains("collider friction = -0.1"));
    REQUIRE_THROWS_WITH(weft::plane_collider<double>(Vec3::Zero(), Vec3::Zero(), 1e3),
                        Contains("plane collider normal: must be a non-zero finite vector"));
    REQUIRE_THROWS_WITH(weft::box_collider<double>(Vec3::Zero(), Vec3(0.4, -0.5, 0.01), 0.0, 1e3),
                        Contains("box collider half_extents = -0.5"));
    REQUIRE_THROWS_WITH(weft::box_collider<double>(Vec3::Zero(), Vec3(0.4, 0.5, 0.01), 0.01, 1e3),
                        Contains("box collider rounding = 0.01") && Contains("below the shortest half extent"));
    // A hand-built collider is checked the same way (the steppers call this).
    weft::Collider<double> tilted = floor;
    tilted.normal = Vec3(0, 0.5, 0.5);
    REQUIRE_THROWS_WITH(weft::require_valid_collider(tilted),
                        Contains("plane collider normal length = 0.70710678118654757: must be 1"));
}
