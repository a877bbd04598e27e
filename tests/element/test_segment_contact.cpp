// Segment–segment and point–triangle penalty contact
// (element/segment_contact.hpp): force and
// exact Hessian against central differences of the energy and the force,
// for crossing pairs (both closest parameters free), an end against an
// interior (one clamped), end against end (both clamped) and random close
// pairs; no force beyond the contact distance; momentum conserved; the
// Gauss–Newton stiffness PSD.

#include <weft/element/cloth_contact.hpp>
#include <weft/element/segment_contact.hpp>

#include <Eigen/Core>
#include <array>
#include <cmath>

#include "support/fd_check.hpp"
#include "support/random.hpp"
#include "support/symmetric_eigen.hpp"

using weft_test::FdChecker;
using weft_test::MatrixX;
using weft_test::Random;
using weft_test::VectorX;
using Vec12 = Eigen::Matrix<double, 12, 1>;
using Vec3 = Eigen::Vector3d;

namespace {

Vec12 stack(const Vec3& a0, const Vec3& a1, const Vec3& b0, const Vec3& b1)
{
    Vec12 q;
    q << a0, a1, b0, b1;
    return q;
}

/// The forces on the four points sum to zero and exert no torque.
/// Whether closest parameters (s, t) lie within `margin` of a bound that
/// they have not reached: a region boundary of the closest points, where
/// the distance's derivatives have a kink that central differences would
/// straddle. A triangle's (s, t) = (u, v) also has the bound u + v = 1.
bool near_kink(double s, double t, double margin, bool triangle)
{
    const auto near_bound = [margin](double x) { return (x > 0 && x < margin) || (x < 1 && x > 1 - margin); };
    return near_bound(s) || near_bound(t) || (triangle && s + t > 1 - margin && s + t < 1 + margin);
}

void check_momentum(const Vec12& q, const Vec12& force)
{
    Vec3 sum = Vec3::Zero(), torque = Vec3::Zero();
    for (int i = 0; i < 4; ++i) {
        sum += force.segment<3>(3 * i);
        torque += q.segment<3>(3 * i).cross(force.segment<3>(3 * i));
    }
    CHECK(sum.norm() < 1e-12 * (1 + force.norm()));
    CHECK(torque.norm() < 1e-12 * (1 + force.norm()));
}

/// Four random points in [-1, 1]³ as two segments: for trial ≡ 1 (mod 4)
/// the second nearly parallel to the first, for trial ≡ 2 point
/// `degenerate` (1 or 3) on the point before it (a segment of length 0).
void random_points(Random& rng, int trial, int degenerate, Vec3 (&p)[4])
{
    for (Vec3& x : p) x = rng.vector<3>(-1, 1);
    if (trial % 4 == 1) p[3] = p[2] + (p[1] - p[0]) * 0.7 + Vec3(0, 0, 1e-9);
    if (trial % 4 == 2) p[degenerate] = p[degenerate - 1];
}

/// The finite-difference settings of every contact check here.
FdChecker contact_checker()
{
    FdChecker checker;
    checker.step = 1e-7;
    checker.tolerance = 1e-6;
    return checker;
}

}  // namespace

TEST_CASE("segment contact: force and exact Hessian against finite differences", "[element][contact][fd]")
{
    Random rng(31);
    FdChecker checker = contact_checker();
    const double k = 50, r = 0.5;
    int configurations = 0;
    const auto check = [&](const Vec12& q, const char* what, int free_expected) {
        const auto c = weft::segment_contact<double>(q, k, r);
        INFO(what << ": d " << c.distance << ", s " << c.s << ", t " << c.t);
        REQUIRE(c.active);
        REQUIRE_FALSE(c.degenerate);
        const int free = (c.s > 0 && c.s < 1) + (c.t > 0 && c.t < 1);
        CHECK(free == free_expected);
        checker.gradient([&](const VectorX& x) { return -weft::segment_contact<double>(Vec12(x), k, r).energy; },
                         VectorX(q), VectorX(c.force), std::string("force = -grad V, ") + what);
        checker.jacobian(
            [&](const VectorX& x) { return VectorX(-weft::segment_contact<double>(Vec12(x), k, r).force); }, VectorX(q),
            MatrixX(c.hessian), std::string("Hessian = grad grad V, ") + what);
        checker.compare(MatrixX(c.hessian), MatrixX(c.hessian.transpose()), "Hessian symmetric");
        check_momentum(q, c.force);
        const Eigen::VectorXd gn = weft_test::symmetric_eigenvalues(c.gauss_newton);
        CHECK(gn.minCoeff() > -1e-12 * gn.maxCoeff());
        ++configurations;
    };
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    check(stack(Vec3::Zero(), x, 0.4 * x - 0.5 * y + 0.3 * z, 0.5 * x + 0.6 * y + 0.35 * z), "crossing", 2);
    check(stack(Vec3::Zero(), x, 0.3 * x + 0.2 * z + 0.05 * y, 0.2 * x + 1.0 * z), "end over an interior", 1);
    check(stack(Vec3::Zero(), x, 1.2 * x + 0.1 * y, 2 * x + 0.5 * y + 0.2 * z), "end near end", 0);
    for (int trial = 0; trial < 30; ++trial) {
        // Random pairs placed so that they are closer than r.
        const Vec3 a0 = rng.vector<3>(-1, 1), a1 = rng.vector<3>(-1, 1);
        const Vec3 dir = rng.vector<3>(-1, 1).normalized();
        const double s = rng.uniform(0.1, 0.9);
        const Vec3 mid = a0 + s * (a1 - a0) + rng.uniform(0.05, 0.4) * (a1 - a0).cross(dir).normalized();
        const Vec3 b0 = mid - rng.uniform(0.2, 1.0) * dir, b1 = mid + rng.uniform(0.2, 1.0) * dir;
        const Vec12 q = stack(a0, a1, b0, b1);
        const auto c = weft::segment_contact<double>(q, k, r);
        if (!c.active || c.distance < 1e-3) continue;
        if (near_kink(c.s, c.t, 1e-4, false)) continue;
        const int free = (c.s > 0 && c.s < 1) + (c.t > 0 && c.t < 1);
        check(q, "random", free);
    }
    INFO("configurations " << configurations << ", comparisons " << checker.checks);
    REQUIRE(configurations >= 20);
    REQUIRE(checker.checks == 3 * configurations);
}

TEST_CASE("segment contact at fixed parameters: force and Hessian against finite differences", "[element][contact][fd]")
{
    Random rng(37);
    FdChecker checker = contact_checker();
    const double k = 50, r = 0.5;
    int configurations = 0;
    for (int trial = 0; trial < 40; ++trial) {
        const Vec3 a0 = rng.vector<3>(-1, 1), a1 = a0 + rng.vector<3>(-1, 1);
        const Vec3 b0 = a0 + rng.vector<3>(-0.3, 0.3), b1 = a1 + rng.vector<3>(-0.3, 0.3);  // nearly parallel too
        const double s = rng.uniform(0, 1), t = rng.uniform(0, 1);
        const Vec12 q = stack(a0, a1, b0, b1);
        const auto c = weft::segment_contact_at<double>(q, s, t, k, r);
        if (!c.active || c.distance < 1e-3) continue;
        checker.gradient(
            [&](const VectorX& x) { return -weft::segment_contact_at<double>(Vec12(x), s, t, k, r).energy; },
            VectorX(q), VectorX(c.force), "force = -grad V at fixed (s, t)");
        checker.jacobian(
            [&](const VectorX& x) { return VectorX(-weft::segment_contact_at<double>(Vec12(x), s, t, k, r).force); },
            VectorX(q), MatrixX(c.hessian), "Hessian = grad grad V at fixed (s, t)");
        check_momentum(q, c.force);
        const Eigen::VectorXd gn = weft_test::symmetric_eigenvalues(c.gauss_newton);
        CHECK(gn.minCoeff() > -1e-12 * gn.maxCoeff());
        // At the closest parameters it is the segment contact itself (envelope theorem).
        const auto closest = weft::segment_contact<double>(q, k, r);
        if (closest.active && !closest.degenerate) {
            const auto at = weft::segment_contact_at<double>(q, closest.s, closest.t, k, r);
            CHECK(at.energy == Approx(closest.energy).epsilon(1e-12));
            CHECK((at.force - closest.force).norm() <= 1e-12 * (1 + closest.force.norm()));
            CHECK((at.gauss_newton - closest.gauss_newton).norm() <= 1e-12 * (1 + closest.gauss_newton.norm()));
        }
        ++configurations;
    }
    INFO("configurations " << configurations << ", comparisons " << checker.checks);
    REQUIRE(configurations >= 15);
    REQUIRE(checker.checks == 2 * configurations);
}

TEST_CASE("a yarn segment pair's contact is continuous through parallel segments, an edge pair's is not",
          "[element][contact]")
{
    // Two parallel, overlapping segments pressed within r, tilted by ±2e-12
    // rad towards each other: the plain edge–edge penalty puts its force at one end of the
    // overlap or the other (a residual that jumps under round-off); the
    // segment pair holds the middle of the overlap.
    const double k = 50, r = 0.5;
    const Vec3 x(1, 0, 0), z(0, 0, 1);
    const auto pressed = [&](double tilt) {
        return stack(Vec3::Zero(), x, 0.2 * x + (0.4 + tilt) * z, 1.2 * x + (0.4 - tilt) * z);
    };
    const auto force = [&](const Vec12& q, weft::ClothContactKind kind) {
        const weft::ClothContactElement<double> pair{{0, 1, 2, 3}, int(kind), 0.0};
        return weft::cloth_contact<double>(q, pair, k, r).force;
    };
    const Vec12 segment_plus = force(pressed(1e-12), weft::ClothContactKind::segment_pair);
    const Vec12 segment_minus = force(pressed(-1e-12), weft::ClothContactKind::segment_pair);
    const Vec12 edge_plus = force(pressed(1e-12), weft::ClothContactKind::edge_edge);
    const Vec12 edge_minus = force(pressed(-1e-12), weft::ClothContactKind::edge_edge);
    INFO("segment pair: " << segment_plus.transpose() << " / " << segment_minus.transpose());
    INFO("edge pair: " << edge_plus.transpose() << " / " << edge_minus.transpose());
    REQUIRE(segment_plus.norm() > 1.0);
    CHECK((segment_plus - segment_minus).norm() < 1e-9 * segment_plus.norm());
    CHECK((edge_plus - edge_minus).norm() > 0.5 * edge_plus.norm());
    // The middle of the overlap [0.2, 1] of a: a's ends share the force 0.4 : 0.6, no torque about y.
    CHECK(segment_plus(2) / segment_plus(5) == Approx(0.4 / 0.6).epsilon(1e-9));
    check_momentum(pressed(1e-12), segment_plus);

    // Beyond the threshold angle the segment pair is the segment contact
    // itself: force = −∇V (central differences) on crossing pairs.
    FdChecker checker = contact_checker();
    const weft::ClothContactElement<double> pair{{0, 1, 2, 3}, int(weft::ClothContactKind::segment_pair), 0.0};
    Random rng(5);
    int crossing = 0;
    for (int trial = 0; trial < 20 && crossing < 5; ++trial) {
        const Vec12 q = stack(Vec3::Zero(), x, 0.5 * x + 0.3 * z, 0.5 * x + 0.3 * z) +
                        0.3 * Vec12(rng.vector<12>(-1, 1)).cwiseProduct(stack(x, x, Vec3(1, 2, 0.1), Vec3(1, 2, 0.1)));
        const auto c = weft::cloth_contact<double>(q, pair, k, r);
        const auto closest = weft::segment_contact<double>(q, k, r, false);
        if (!c.active || c.distance < 1e-3) continue;
        const Vec3 u = q.segment<3>(3) - q.segment<3>(0), w = q.segment<3>(9) - q.segment<3>(6);
        if (u.cross(w).squaredNorm() < 2e-3 * u.squaredNorm() * w.squaredNorm()) continue;
        CHECK((c.force - closest.force).norm() <= 1e-12 * (1 + closest.force.norm()));
        checker.gradient([&](const VectorX& v) { return -weft::cloth_contact<double>(Vec12(v), pair, k, r).energy; },
                         VectorX(q), VectorX(c.force), "segment pair force = -grad V beyond the parallel blend");
        ++crossing;
    }
    REQUIRE(crossing == 5);
    REQUIRE(checker.checks == 5);
}

TEST_CASE("a contact pair's exact Hessian, where asked for, is its force's Jacobian; Gauss-Newton elsewhere",
          "[element][contact][fd]")
{
    // cloth_contact(..., exact = true), what full Newton's exact Hessians
    // assemble (evaluate_cloth_contact): the point-triangle pair and the
    // segment pair beyond the parallel blend carry their exact Hessian; the
    // blend and the mollified edge pair keep the Gauss-Newton stiffness.
    FdChecker checker = contact_checker();
    const double k = 50, r = 0.5;
    Random rng(43);
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    const auto element = [](weft::ClothContactKind kind) {
        return weft::ClothContactElement<double>{{0, 1, 2, 3}, int(kind), 0.0};
    };
    int exact = 0;
    for (const auto kind : {weft::ClothContactKind::segment_pair, weft::ClothContactKind::point_triangle}) {
        const auto pair = element(kind);
        const int before = exact;
        for (int trial = 0; trial < 200 && exact < before + 12; ++trial) {
            // Pairs pressed within r: crossing segments, or a point over a triangle.
            const Vec12 q =
                kind == weft::ClothContactKind::segment_pair
                    ? Vec12(stack(Vec3::Zero(), x, 0.5 * x - 0.5 * y + 0.3 * z, 0.5 * x + 0.5 * y + 0.3 * z) +
                            0.1 * Vec12(rng.vector<12>(-1, 1)))
                    : Vec12(stack(0.3 * x + 0.3 * y + 0.25 * z, Vec3::Zero(), x, y) +
                            0.1 * Vec12(rng.vector<12>(-1, 1)));
            const auto c = weft::cloth_contact<double>(q, pair, k, r, true);
            if (!c.active || c.distance < 1e-3) continue;
            if (near_kink(c.s, c.t, 1e-3, kind == weft::ClothContactKind::point_triangle)) continue;
            INFO("kind " << int(kind) << ": d " << c.distance << ", s " << c.s << ", t " << c.t);
            REQUIRE(c.exact_hessian);
            // The force is that of the plain evaluation; only the stiffness
            // differs. Its gauss_newton field is the kind's Gauss-Newton
            // stiffness (the plain point-triangle pair's closer than
            // contact_projected_below r is the projected Hessian, tested below).
            const auto plain = weft::cloth_contact<double>(q, pair, k, r, false);
            CHECK_FALSE(plain.exact_hessian);
            CHECK((c.force - plain.force).norm() <= 1e-12 * (1 + plain.force.norm()));
            const auto gauss_newton = kind == weft::ClothContactKind::point_triangle
                                          ? weft::point_triangle_contact<double>(q, k, r, false)
                                          : plain;
            CHECK((c.gauss_newton - gauss_newton.gauss_newton).norm() <=
                  1e-12 * (1 + gauss_newton.gauss_newton.norm()));
            checker.jacobian(
                [&](const VectorX& v) { return VectorX(-weft::cloth_contact<double>(Vec12(v), pair, k, r).force); },
                VectorX(q), MatrixX(c.hessian), "exact contact Hessian = -d force / dq");
            // It differs from Gauss-Newton by the curvature term -k (r - d) grad^2 d.
            CHECK((c.hessian - c.gauss_newton).norm() > 1e-3 * c.gauss_newton.norm());
            ++exact;
        }
        CHECK(exact == before + 12);
    }
    CHECK(checker.checks == exact);

    // Within the blend (parallel segments pressed together) and for edge
    // pairs: no exact Hessian, whatever is asked.
    const Vec12 parallel = stack(Vec3::Zero(), x, 0.2 * x + 0.4 * z, 1.2 * x + 0.4 * z);
    const auto blended =
        weft::cloth_contact<double>(parallel, element(weft::ClothContactKind::segment_pair), k, r, true);
    REQUIRE(blended.active);
    CHECK_FALSE(blended.exact_hessian);
    CHECK(blended.hessian.norm() == 0.0);
    const Vec12 crossing = stack(Vec3::Zero(), x, 0.5 * x - 0.5 * y + 0.3 * z, 0.5 * x + 0.5 * y + 0.3 * z);
    const auto edge = weft::cloth_contact<double>(crossing, element(weft::ClothContactKind::edge_edge), k, r, true);
    REQUIRE(edge.active);
    CHECK_FALSE(edge.exact_hessian);
}

TEST_CASE("a mollified edge pair's stiffness is the Gauss-Newton stiffness of its energy as one square",
          "[element][contact][fd]")
{
    // cloth_contact on an edge_edge pair: V = m E = 1/2 k s^2 with
    // s = sqrt(m) (r - d), and the stiffness for A is k grad s grad s^T,
    // grad s by central differences of sqrt(2 V / k). Nearly parallel edges
    // (inside the mollifier, m < 1: its force -E grad m is stiffened too)
    // and crossing ones (m = 1: k grad d grad d^T). The force is -grad V.
    FdChecker checker = contact_checker();
    const double k = 50, r = 0.5;
    Random rng(47);
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    int mollified = 0, plain = 0;
    for (int trial = 0; trial < 400 && (mollified < 20 || plain < 20); ++trial) {
        const bool parallel = trial % 2 == 0;
        if ((parallel ? mollified : plain) == 20) continue;
        // Edges of length about 1 with eps = 1e-3 |u|^2 |w|^2 (the triangle
        // cloth's, EdgeEdgeElement): tilts below 0.03 rad lie inside.
        const Vec3 tilt = parallel ? Vec3(0, rng.uniform(-0.02, 0.02), rng.uniform(-0.02, 0.02))
                                   : Vec3(0, rng.uniform(0.5, 1.0), rng.uniform(-0.1, 0.1));
        Vec12 q = parallel ? stack(Vec3::Zero(), x, 0.2 * x - 0.5 * tilt + 0.3 * z, 1.2 * x + 0.5 * tilt + 0.3 * z)
                           : stack(Vec3::Zero(), x, 0.5 * x - 0.5 * tilt - 0.5 * y + 0.3 * z,
                                   0.5 * x + 0.5 * tilt + 0.5 * y + 0.3 * z);
        q += 1e-3 * Vec12(rng.vector<12>(-1, 1));
        const Vec3 u = q.segment<3>(3) - q.segment<3>(0), w = q.segment<3>(9) - q.segment<3>(6);
        const weft::ClothContactElement<double> pair{
            {0, 1, 2, 3}, int(weft::ClothContactKind::edge_edge), 1e-3 * u.squaredNorm() * w.squaredNorm()};
        const auto energy = [&](const VectorX& v) { return weft::cloth_contact<double>(Vec12(v), pair, k, r).energy; };
        const auto c = weft::cloth_contact<double>(q, pair, k, r);
        const auto unmollified = weft::segment_contact<double>(q, k, r);
        INFO((parallel ? "nearly parallel" : "crossing") << ": d " << c.distance << ", s " << c.s << ", t " << c.t);
        REQUIRE(c.active);
        if (near_kink(c.s, c.t, 1e-3, false)) continue;
        const double m = c.energy / unmollified.energy;
        if (parallel) {
            REQUIRE(m < 0.999);
            REQUIRE(m > 0.01);
            ++mollified;
        } else {
            REQUIRE(m == 1.0);
            ++plain;
        }
        checker.gradient([&](const VectorX& v) { return -energy(v); }, VectorX(q), VectorX(c.force), "force = -grad V");
        const VectorX grad_s =
            checker.fd_gradient([&](const VectorX& v) { return std::sqrt(2 * energy(v) / k); }, VectorX(q));
        checker.compare(MatrixX(c.gauss_newton), MatrixX(k * grad_s * grad_s.transpose()),
                        "stiffness = k grad s grad s^T, s = sqrt(2 V / k)");
        // A rigid translation is free of it; it is PSD.
        for (int axis = 0; axis < 3; ++axis) {
            Vec12 shift = Vec12::Zero();
            for (int i = 0; i < 4; ++i) shift(3 * i + axis) = 1;
            CHECK((c.gauss_newton * shift).norm() <= 1e-12 * c.gauss_newton.norm());
        }
        const Eigen::VectorXd gn = weft_test::symmetric_eigenvalues(c.gauss_newton);
        CHECK(gn.minCoeff() > -1e-12 * gn.maxCoeff());
        // Inside the mollifier it is not m k grad d grad d^T, which left the
        // mollifier's force without stiffness.
        if (parallel) CHECK((c.gauss_newton - m * unmollified.gauss_newton).norm() > 1e-3 * c.gauss_newton.norm());
    }
    CHECK(mollified == 20);
    CHECK(plain == 20);
    CHECK(checker.checks == 2 * 40);
}

TEST_CASE("the penalty's onset: its law is C2 at d = r, and each kind's force and stiffness follow it",
          "[element][contact][fd]")
{
    // smooth_penalty (the contacts' law) with onset width delta: E' = F and F' = stiffness by
    // central differences on both sides of delta, continuous at delta, all
    // zero at d = r; without an onset the quadratic law. Then the pairs that
    // use it (ClothCollision::onset): point-triangle and segment pairs (force
    // = -grad V, exact Hessian = -d force / dq, Gauss-Newton F' grad d grad
    // d^T) and mollified edge pairs (force = -grad V, stiffness
    // F' grad V grad V^T / (m F^2)), at gaps on both sides of delta.
    FdChecker checker = contact_checker();
    const double k = 50, r = 0.5, onset = 0.25 * r;
    Random rng(53);
    int laws = 0;
    for (int i = 0; i < 40; ++i) {
        const double g = rng.uniform(1e-3, r);
        if (std::abs(g - onset) < 1e-4) continue;
        const auto law = [&](double x) { return weft::smooth_penalty<double>(x, k, onset); };
        const double e = 1e-6;
        INFO("gap " << g);
        CHECK((law(g + e).energy - law(g - e).energy) / (2 * e) == Approx(law(g).force).epsilon(1e-7));
        CHECK((law(g + e).force - law(g - e).force) / (2 * e) == Approx(law(g).stiffness).epsilon(1e-7));
        CHECK(law(g).stiffness <= k);
        const auto quadratic = weft::smooth_penalty<double>(g, k, 0.0);
        CHECK(quadratic.energy == Approx(0.5 * k * g * g).epsilon(1e-14));
        CHECK(quadratic.force == Approx(k * g).epsilon(1e-14));
        CHECK(quadratic.stiffness == k);
        ++laws;
    }
    CHECK(laws >= 30);
    const auto touching = weft::smooth_penalty<double>(0.0, k, onset);
    CHECK(touching.energy == 0.0);
    CHECK(touching.force == 0.0);
    CHECK(touching.stiffness == 0.0);
    const auto inside = weft::smooth_penalty<double>(onset * (1 - 1e-12), k, onset);
    const auto beyond = weft::smooth_penalty<double>(onset * (1 + 1e-12), k, onset);
    CHECK(inside.energy == Approx(beyond.energy).epsilon(1e-9));
    CHECK(inside.force == Approx(beyond.force).epsilon(1e-9));
    CHECK(inside.stiffness == Approx(beyond.stiffness).epsilon(1e-9));

    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    int pairs = 0, within = 0;
    for (const auto kind : {weft::ClothContactKind::point_triangle, weft::ClothContactKind::segment_pair}) {
        const weft::ClothContactElement<double> pair{{0, 1, 2, 3}, int(kind), 0.0};
        int found = 0;
        for (int trial = 0; trial < 200 && found < 12; ++trial) {
            const double height = rng.uniform(0.2, 0.49);
            const Vec12 q =
                kind == weft::ClothContactKind::segment_pair
                    ? Vec12(stack(Vec3::Zero(), x, 0.5 * x - 0.5 * y + height * z, 0.5 * x + 0.5 * y + height * z) +
                            0.02 * Vec12(rng.vector<12>(-1, 1)))
                    : Vec12(stack(0.3 * x + 0.3 * y + height * z, Vec3::Zero(), x, y) +
                            0.02 * Vec12(rng.vector<12>(-1, 1)));
            const auto c = weft::cloth_contact<double>(q, pair, k, r, true, 0, onset);
            if (!c.active || c.distance < 1e-3 || std::abs(r - c.distance - onset) < 1e-3) continue;
            if (near_kink(c.s, c.t, 1e-3, kind == weft::ClothContactKind::point_triangle)) continue;
            const auto law = weft::smooth_penalty<double>(r - c.distance, k, onset);
            INFO("kind " << int(kind) << ": gap " << r - c.distance << " (onset " << onset << ")");
            REQUIRE(c.exact_hessian);
            CHECK(c.normal_force == Approx(law.force).epsilon(1e-12));
            checker.gradient(
                [&](const VectorX& v) {
                    return -weft::cloth_contact<double>(Vec12(v), pair, k, r, true, 0, onset).energy;
                },
                VectorX(q), VectorX(c.force), "force = -grad V with an onset");
            checker.jacobian(
                [&](const VectorX& v) {
                    return VectorX(-weft::cloth_contact<double>(Vec12(v), pair, k, r, true, 0, onset).force);
                },
                VectorX(q), MatrixX(c.hessian), "exact Hessian = -d force / dq with an onset");
            const Vec12 grad_d = -c.force / law.force;
            checker.compare(MatrixX(c.gauss_newton), MatrixX(law.stiffness * grad_d * grad_d.transpose()),
                            "Gauss-Newton = F' grad d grad d^T");
            within += r - c.distance < onset;
            ++found;
        }
        CHECK(found == 12);
        pairs += found;
    }
    CHECK(within >= 4);
    CHECK(within <= pairs - 4);

    int mollified = 0;
    for (int trial = 0; trial < 200 && mollified < 12; ++trial) {
        const Vec3 tilt(0, rng.uniform(-0.02, 0.02), rng.uniform(-0.02, 0.02));
        const double height = rng.uniform(0.3, 0.49);
        Vec12 q = stack(Vec3::Zero(), x, 0.2 * x - 0.5 * tilt + height * z, 1.2 * x + 0.5 * tilt + height * z);
        q += 1e-3 * Vec12(rng.vector<12>(-1, 1));
        const Vec3 u = q.segment<3>(3) - q.segment<3>(0), w = q.segment<3>(9) - q.segment<3>(6);
        const weft::ClothContactElement<double> pair{
            {0, 1, 2, 3}, int(weft::ClothContactKind::edge_edge), 1e-3 * u.squaredNorm() * w.squaredNorm()};
        const auto energy = [&](const VectorX& v) {
            return weft::cloth_contact<double>(Vec12(v), pair, k, r, false, 0, onset).energy;
        };
        const auto c = weft::cloth_contact<double>(q, pair, k, r, false, 0, onset);
        const auto unmollified = weft::segment_contact<double>(q, k, r, false, onset);
        if (!c.active || std::abs(r - c.distance - onset) < 1e-3 || near_kink(c.s, c.t, 1e-3, false)) continue;
        const double m = c.energy / unmollified.energy;
        if (!(m < 0.999 && m > 0.01)) continue;
        const auto law = weft::smooth_penalty<double>(r - c.distance, k, onset);
        INFO("mollified: gap " << r - c.distance << ", m " << m);
        checker.gradient([&](const VectorX& v) { return -energy(v); }, VectorX(q), VectorX(c.force),
                         "mollified force = -grad V with an onset");
        const VectorX grad_v = checker.fd_gradient(energy, VectorX(q));
        checker.compare(MatrixX(c.gauss_newton),
                        MatrixX(law.stiffness / (m * law.force * law.force) * grad_v * grad_v.transpose()),
                        "mollified stiffness = F' grad V grad V^T / (m F^2)");
        const Eigen::VectorXd gn = weft_test::symmetric_eigenvalues(c.gauss_newton);
        CHECK(gn.minCoeff() > -1e-12 * gn.maxCoeff());
        ++mollified;
    }
    CHECK(mollified == 12);
    CHECK(checker.checks == 3 * pairs + 2 * mollified);
}

TEST_CASE("a point-triangle pair closer than half the thickness takes its exact Hessian projected onto the PSD cone",
          "[element][contact][fd]")
{
    // cloth_contact without exact Hessians (what the triangle stepper
    // assembles): below contact_projected_below r the stiffness is the PSD
    // projection of -d force / dq by central differences; beyond it,
    // Gauss-Newton k grad d grad d^T.
    FdChecker checker = contact_checker();
    checker.tolerance = 1e-5;
    const double k = 50, r = 0.5;
    Random rng(53);
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    const weft::ClothContactElement<double> pair{{0, 1, 2, 3}, int(weft::ClothContactKind::point_triangle), 0.0};
    int close = 0, far = 0;
    for (int trial = 0; trial < 400 && (close < 12 || far < 12); ++trial) {
        const double height = rng.uniform(0.05, 0.95) * r;
        const Vec12 q = stack(0.3 * x + 0.3 * y + height * z, Vec3::Zero(), x, y) + 0.05 * Vec12(rng.vector<12>(-1, 1));
        const auto c = weft::cloth_contact<double>(q, pair, k, r);
        if (!c.active || c.distance < 1e-3) continue;
        if (near_kink(c.s, c.t, 1e-3, true)) continue;
        INFO("d " << c.distance << ", u " << c.s << ", v " << c.t);
        CHECK_FALSE(c.exact_hessian);
        const auto plain = weft::point_triangle_contact<double>(q, k, r, false);
        CHECK((c.force - plain.force).norm() <= 1e-12 * (1 + plain.force.norm()));
        if (c.distance < weft::contact_projected_below * r) {
            if (close == 12) continue;
            const MatrixX jacobian = checker.fd_jacobian(
                [&](const VectorX& v) { return VectorX(-weft::cloth_contact<double>(Vec12(v), pair, k, r).force); },
                VectorX(q));
            const Eigen::Matrix<double, 12, 12> fd = jacobian;
            checker.compare(MatrixX(c.gauss_newton), MatrixX(weft::project_to_psd<double, 12>(fd)),
                            "stiffness = PSD projection of -d force / dq");
            const Eigen::VectorXd eigen = weft_test::symmetric_eigenvalues(c.gauss_newton);
            CHECK(eigen.minCoeff() > -1e-12 * eigen.maxCoeff());
            // Not Gauss-Newton: the curvature term is in it.
            CHECK((c.gauss_newton - plain.gauss_newton).norm() > 1e-3 * plain.gauss_newton.norm());
            ++close;
        } else {
            if (far == 12) continue;
            CHECK(c.gauss_newton == plain.gauss_newton);
            ++far;
        }
    }
    CHECK(close == 12);
    CHECK(far == 12);
    CHECK(checker.checks == close);
}

TEST_CASE("segment contact: nothing beyond the contact distance; intersecting segments are flagged",
          "[element][contact]")
{
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    const auto apart = weft::segment_contact<double>(stack(Vec3::Zero(), x, 0.5 * x - y + z, 0.5 * x + y + z), 10, 0.5);
    CHECK_FALSE(apart.active);
    CHECK(apart.energy == 0);
    CHECK(apart.force.norm() == 0);
    CHECK(apart.distance == Approx(1.0));
    // Energy continuous at d = r and ½ k (r − d)² inside.
    const auto close =
        weft::segment_contact<double>(stack(Vec3::Zero(), x, 0.5 * x - y + 0.3 * z, 0.5 * x + y + 0.3 * z), 10, 0.5);
    CHECK(close.active);
    CHECK(close.energy == Approx(0.5 * 10 * 0.2 * 0.2));
    CHECK(close.force.segment<3>(0).z() < 0);  // pushes segment a down, away from b
    const auto crossing = weft::segment_contact<double>(stack(Vec3::Zero(), x, 0.5 * x - y, 0.5 * x + y), 10, 0.5);
    CHECK(crossing.active);
    CHECK(crossing.degenerate);
    CHECK(crossing.force.norm() == 0);
}

TEST_CASE("point-triangle contact: force and exact Hessian against finite differences", "[element][contact][fd]")
{
    Random rng(37);
    FdChecker checker = contact_checker();
    const double k = 80, r = 0.4;
    int configurations = 0;
    const auto check = [&](const Vec12& q, const char* what, int free_expected) {
        const auto c = weft::point_triangle_contact<double>(q, k, r);
        INFO(what << ": d " << c.distance << ", u " << c.s << ", v " << c.t);
        REQUIRE(c.active);
        REQUIRE_FALSE(c.degenerate);
        const bool on_v0 = c.t <= 0, on_u0 = c.s <= 0, on_hyp = c.s + c.t >= 1 - 1e-12;
        const int bounds = int(on_v0) + int(on_u0) + int(on_hyp);
        CHECK((bounds == 0 ? 2 : (bounds == 1 ? 1 : 0)) == free_expected);
        checker.gradient([&](const VectorX& x) { return -weft::point_triangle_contact<double>(Vec12(x), k, r).energy; },
                         VectorX(q), VectorX(c.force), std::string("force = -grad V, ") + what);
        checker.jacobian(
            [&](const VectorX& x) { return VectorX(-weft::point_triangle_contact<double>(Vec12(x), k, r).force); },
            VectorX(q), MatrixX(c.hessian), std::string("Hessian = grad grad V, ") + what);
        check_momentum(q, c.force);
        ++configurations;
    };
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    const Vec3 t0 = Vec3::Zero(), t1 = x + 0.1 * z, t2 = 0.2 * x + y;
    check(stack(0.3 * x + 0.3 * y + 0.25 * z, t0, t1, t2), "above the face", 2);
    check(stack(0.5 * x - 0.2 * y + 0.1 * z, t0, t1, t2), "beside the edge x0 x1", 1);
    check(stack(-0.1 * x + 0.5 * y + 0.1 * z, t0, t1, t2), "beside the edge x0 x2", 1);
    check(stack(0.8 * x + 0.7 * y + 0.1 * z, t0, t1, t2), "beside the edge x1 x2", 1);
    check(stack(1.2 * x - 0.1 * y + 0.1 * z, t0, t1, t2), "beyond the corner x1", 0);
    check(stack(-0.2 * x - 0.2 * y, t0, t1, t2), "beyond the corner x0", 0);
    for (int trial = 0; trial < 40 && configurations < 26; ++trial) {
        const Vec3 a = rng.vector<3>(-1, 1), b = rng.vector<3>(-1, 1), c3 = rng.vector<3>(-1, 1);
        const double wu = rng.uniform(0.05, 0.6), wv = rng.uniform(0.05, 0.35);
        const Vec3 n = (b - a).cross(c3 - a).normalized();
        const Vec3 p = a + wu * (b - a) + wv * (c3 - a) + rng.uniform(0.05, 0.35) * n + 0.1 * rng.vector<3>(-1, 1);
        const Vec12 q = stack(p, a, b, c3);
        const auto c = weft::point_triangle_contact<double>(q, k, r);
        if (!c.active || c.distance < 1e-3) continue;
        const double m = 1e-4;  // away from the region boundaries (kinks)
        if ((c.s > 0 && c.s < m) || (c.t > 0 && c.t < m) || (c.s + c.t > 1 - m && c.s + c.t < 1 - 1e-12)) continue;
        const bool on_v0 = c.t <= 0, on_u0 = c.s <= 0, on_hyp = c.s + c.t >= 1 - 1e-12;
        const int bounds = int(on_v0) + int(on_u0) + int(on_hyp);
        check(q, "random", bounds == 0 ? 2 : (bounds == 1 ? 1 : 0));
    }
    INFO("configurations " << configurations);
    REQUIRE(configurations >= 16);
    REQUIRE(checker.checks == 2 * configurations);
}

TEST_CASE("contact friction: the v-gradient of its potential, exact Jacobian, tangential, no net force",
          "[element][contact][friction][fd]")
{
    Random rng(41);
    FdChecker checker = contact_checker();
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    const Vec12 q_segments = stack(Vec3::Zero(), x, 0.4 * x - 0.5 * y + 0.3 * z, 0.5 * x + 0.6 * y + 0.35 * z);
    const Vec12 q_point = stack(0.3 * x + 0.3 * y + 0.25 * z, Vec3::Zero(), x + 0.1 * z, 0.2 * x + y);
    int cases = 0;
    for (const bool segments : {true, false}) {
        const Vec12& q = segments ? q_segments : q_point;
        const auto lagged =
            segments ? weft::segment_contact<double>(q, 50.0, 0.5) : weft::point_triangle_contact<double>(q, 50.0, 0.5);
        REQUIRE(lagged.active);
        REQUIRE(lagged.normal_force == Approx(50.0 * (0.5 - lagged.distance)));
        const double mu = 0.4, eps = 0.05;
        // Slow (inside the mollifier) and fast slip, and a velocity with a normal part.
        for (const double speed : {0.01, 0.3, 2.0}) {
            const Vec12 v = speed * rng.vector<12>(-1, 1);
            const auto f = weft::contact_friction<double>(lagged, v, mu, eps);
            INFO((segments ? "segments" : "point-triangle") << ", speed " << speed);
            checker.gradient(
                [&](const VectorX& w) { return -weft::contact_friction<double>(lagged, Vec12(w), mu, eps).energy; },
                VectorX(v), VectorX(f.force), "friction = -dD/dv");
            checker.jacobian(
                [&](const VectorX& w) {
                    return VectorX(weft::contact_friction<double>(lagged, Vec12(w), mu, eps).force);
                },
                VectorX(v), MatrixX(f.df_dv), "df/dv");
            checker.compare(MatrixX(f.df_dv), MatrixX(f.df_dv.transpose()), "df/dv symmetric");
            Vec3 sum = Vec3::Zero(), relative = Vec3::Zero();
            for (int i = 0; i < 4; ++i) {
                sum += f.force.segment<3>(3 * i);
                relative += lagged.coefficient[i] * v.segment<3>(3 * i);
            }
            CHECK(sum.norm() < 1e-12 * (1 + f.force.norm()));
            // Tangential, opposing the slip, at most μλ on the first primitive's side.
            const Vec3 on_first = f.force.segment<3>(0) / lagged.coefficient[0];
            CHECK(std::abs(on_first.dot(lagged.normal)) < 1e-12 * (1 + on_first.norm()));
            CHECK(on_first.dot(relative) <= 1e-15);
            CHECK(on_first.norm() <= mu * lagged.normal_force * (1 + 1e-12));
            ++cases;
        }
    }
    REQUIRE(cases == 6);
    REQUIRE(checker.checks == 18);
    // No friction without contact or without a coefficient.
    const auto apart = weft::segment_contact<double>(stack(Vec3::Zero(), x, 0.5 * x - y + z, 0.5 * x + y + z), 50, 0.5);
    CHECK(weft::contact_friction<double>(apart, rng.vector<12>(-1, 1), 0.4, 0.05).force.norm() == 0);
    const auto touching = weft::segment_contact<double>(q_segments, 50, 0.5);
    CHECK(weft::contact_friction<double>(touching, rng.vector<12>(-1, 1), 0.0, 0.05).force.norm() == 0);
}

TEST_CASE("a contact pair's point weights give its contact points' difference for every kind", "[element][contact]")
{
    // contact_point_weights against the closest-point functions it
    // dispatches to: |Σ c_i p_i| is the pair's distance, the weights of each
    // primitive sum to ±1 (the difference of two points on them), and a
    // segment pair's force points are stable_segment_parameters'.
    Random rng(11);
    int checked = 0;
    for (int trial = 0; trial < 200; ++trial) {
        Vec3 p[4];
        random_points(rng, trial, 1, p);
        const auto difference = [&](const double c[4]) {
            return Vec3(c[0] * p[0] + c[1] * p[1] + c[2] * p[2] + c[3] * p[3]);
        };
        double c[4];
        weft::contact_point_weights<double>(p[0], p[1], p[2], p[3], int(weft::ClothContactKind::point_triangle), true,
                                            c);
        const auto triangle = weft::closest_point_triangle<double>(p[0], p[1], p[2], p[3]);
        CHECK(difference(c).norm() == Approx(std::sqrt(triangle.distance_squared)).margin(1e-14));
        CHECK(c[0] == 1.0);
        CHECK(c[1] + c[2] + c[3] == Approx(-1.0).margin(1e-14));
        const auto segments = weft::closest_segment_segment<double>(p[0], p[1], p[2], p[3]);
        const auto stable = weft::stable_segment_parameters<double>(p[0], p[1], p[2], p[3]);
        for (const auto kind : {weft::ClothContactKind::edge_edge, weft::ClothContactKind::segment_pair})
            for (const bool force_points : {false, true}) {
                weft::contact_point_weights<double>(p[0], p[1], p[2], p[3], int(kind), force_points, c);
                const bool blended = force_points && kind == weft::ClothContactKind::segment_pair;
                const auto& at = blended ? stable : segments;
                const Vec3 expected = (p[0] + at.s * (p[1] - p[0])) - (p[2] + at.t * (p[3] - p[2]));
                CHECK((difference(c) - expected).norm() <= 1e-14);
                CHECK(c[0] + c[1] == Approx(1.0).margin(1e-15));
                CHECK(c[2] + c[3] == Approx(-1.0).margin(1e-15));
                if (!blended) CHECK(difference(c).norm() == Approx(std::sqrt(segments.distance_squared)).margin(1e-14));
            }
        // A parallel segment pair's force points are its end points' parts;
        // without force points, its closest points.
        for (int part = 0; part < 4; ++part)
            for (const bool force_points : {false, true}) {
                weft::contact_point_weights<double>(
                    p[0], p[1], p[2], p[3], int(weft::ClothContactKind::parallel_segment_pair), force_points, c, part);
                const auto at =
                    force_points ? weft::end_point_parameters<double>(p[0], p[1], p[2], p[3], part) : segments;
                const Vec3 expected = (p[0] + at.s * (p[1] - p[0])) - (p[2] + at.t * (p[3] - p[2]));
                CHECK((difference(c) - expected).norm() <= 1e-14);
                if (force_points) CHECK((part < 2 ? at.s == double(part) : at.t == double(part - 2)));
            }
        ++checked;
    }
    REQUIRE(checked == 200);
}

TEST_CASE("end point parts: the distance from an end point to the other segment", "[element][contact]")
{
    // end_point_parameters against a brute-force search over the other
    // segment (10,001 samples) on random, nearly parallel and degenerate pairs.
    Random rng(17);
    int checked = 0;
    for (int trial = 0; trial < 100; ++trial) {
        Vec3 p[4];
        random_points(rng, trial, trial % 8 == 2 ? 1 : 3, p);
        for (int part = 0; part < 4; ++part) {
            const auto at = weft::end_point_parameters<double>(p[0], p[1], p[2], p[3], part);
            const Vec3 point = p[part];
            const Vec3 from = part < 2 ? p[2] : p[0], to = part < 2 ? p[3] : p[1];
            double brute = 1e300;
            for (int i = 0; i <= 10000; ++i) brute = std::min(brute, (from + (i / 1e4) * (to - from) - point).norm());
            INFO("trial " << trial << ", part " << part);
            CHECK(std::sqrt(at.distance_squared) <= brute + 1e-14);
            CHECK(std::sqrt(at.distance_squared) >= brute - 1e-4 * (to - from).norm() - 1e-14);
            CHECK(at.s >= 0.0);
            CHECK(at.s <= 1.0);
            CHECK(at.t >= 0.0);
            CHECK(at.t <= 1.0);
            ++checked;
        }
    }
    REQUIRE(checked == 400);
}

TEST_CASE(
    "a parallel yarn segment pair: four end point penalties, continuous through parallel, force and exact "
    "Hessian against finite differences",
    "[element][contact][fd]")
{
    const double k = 50, r = 0.5;
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    const weft::ClothContactElement<double> parallel{
        {0, 1, 2, 3}, int(weft::ClothContactKind::parallel_segment_pair), 0.0};
    const weft::ClothContactElement<double> blended{{0, 1, 2, 3}, int(weft::ClothContactKind::segment_pair), 0.0};
    REQUIRE(weft::contact_parts(parallel) == 4);
    REQUIRE(weft::contact_parts(blended) == 1);
    const auto sum = [&](const Vec12& q, bool exact = false) {
        weft::SegmentContact<double> total = weft::cloth_contact<double>(q, parallel, k, r, exact, 0);
        for (int part = 1; part < 4; ++part) {
            const auto c = weft::cloth_contact<double>(q, parallel, k, r, exact, part);
            total.energy += c.energy;
            total.force += c.force;
            total.gauss_newton += c.gauss_newton;
        }
        return total;
    };

    // Two equal segments, parallel and over each other: the segment pair's
    // penalty, shared equally by the ends.
    const Vec12 over = stack(Vec3::Zero(), x, 0.3 * z, x + 0.3 * z);
    const auto equal = sum(over);
    const auto pair = weft::cloth_contact<double>(over, blended, k, r);
    CHECK(equal.energy == Approx(0.5 * k * 0.2 * 0.2).epsilon(1e-12));
    CHECK(equal.energy == Approx(pair.energy).epsilon(1e-12));
    CHECK((equal.force - pair.force).norm() <= 1e-12 * pair.force.norm());
    check_momentum(over, equal.force);

    // Turned through parallel (the upper segment tilted about its middle in
    // the plane of the layers): beyond the blend (parallel_blend_sine2,
    // 0.032 rad) the segment pair's force acts at the closest points, at
    // one end of the overlap or the other with the tilt's sign; the end
    // points' parts change their force in proportion to the tilt (about
    // 10 times it here, the pair 0.42 apart across a 0.3 lateral offset).
    const auto tilted = [&](double angle) {
        const Vec3 half = 0.5 * (std::cos(angle) * x + std::sin(angle) * y);
        return stack(Vec3::Zero(), x, 0.5 * x + 0.3 * y + 0.3 * z - half, 0.5 * x + 0.3 * y + 0.3 * z + half);
    };
    for (const double angle : {5e-2, 1e-1}) {
        const Vec12 plus = sum(tilted(angle)).force, minus = sum(tilted(-angle)).force;
        const Vec12 pair_plus = weft::cloth_contact<double>(tilted(angle), blended, k, r).force;
        const Vec12 pair_minus = weft::cloth_contact<double>(tilted(-angle), blended, k, r).force;
        INFO("tilt " << angle << ": end points " << (plus - minus).norm() / plus.norm() << ", segment pair "
                     << (pair_plus - pair_minus).norm() / pair_plus.norm());
        REQUIRE(plus.norm() > 1.0);
        CHECK((plus - minus).norm() < 20 * angle * plus.norm());
        CHECK((pair_plus - pair_minus).norm() > 0.5 * pair_plus.norm());
    }

    // Each part: force = -grad V and, where asked for, the exact Hessian is
    // the force's Jacobian (central differences), on nearly parallel,
    // crossing and random close pairs; momentum; Gauss-Newton PSD.
    FdChecker checker = contact_checker();
    Random rng(23);
    int parts = 0, free_parts = 0;
    for (int trial = 0; trial < 60; ++trial) {
        const Vec12 q = trial % 3 == 0 ? Vec12(stack(Vec3::Zero(), x, 0.3 * z - 0.2 * x, 0.3 * z + 0.8 * x) +
                                               0.05 * Vec12(rng.vector<12>(-1, 1)))
                        : trial % 3 == 1
                            ? Vec12(stack(Vec3::Zero(), x, 0.5 * x - 0.5 * y + 0.3 * z, 0.5 * x + 0.5 * y + 0.3 * z) +
                                    0.1 * Vec12(rng.vector<12>(-1, 1)))
                            : Vec12(stack(rng.vector<3>(-0.5, 0.5), rng.vector<3>(-0.5, 0.5), rng.vector<3>(-0.5, 0.5),
                                          rng.vector<3>(-0.5, 0.5)));
        for (int part = 0; part < 4; ++part) {
            const auto c = weft::cloth_contact<double>(q, parallel, k, r, true, part);
            if (!c.active || c.distance < 1e-3) continue;
            const double free = part < 2 ? c.t : c.s, m = 1e-4;  // away from the clamp's kinks
            if ((free > 0 && free < m) || (free < 1 && free > 1 - m)) continue;
            INFO("trial " << trial << ", part " << part << ": d " << c.distance << ", s " << c.s << ", t " << c.t);
            REQUIRE(c.exact_hessian);
            CHECK(c.normal_force == Approx(0.25 * k * (r - c.distance)).epsilon(1e-12));
            checker.gradient(
                [&](const VectorX& v) {
                    return -weft::cloth_contact<double>(Vec12(v), parallel, k, r, false, part).energy;
                },
                VectorX(q), VectorX(c.force), "end point part: force = -grad V");
            checker.jacobian(
                [&](const VectorX& v) {
                    return VectorX(-weft::cloth_contact<double>(Vec12(v), parallel, k, r, false, part).force);
                },
                VectorX(q), MatrixX(c.hessian), "end point part: exact Hessian = -d force / dq");
            check_momentum(q, c.force);
            const Eigen::VectorXd gn = weft_test::symmetric_eigenvalues(c.gauss_newton);
            CHECK(gn.minCoeff() > -1e-12 * gn.maxCoeff());
            ++parts;
            free_parts += free > 0 && free < 1;
        }
    }
    INFO("parts " << parts << ", with a free parameter " << free_parts);
    REQUIRE(parts >= 60);
    REQUIRE(free_parts >= 30);
    REQUIRE(checker.checks == 2 * parts);
}

TEST_CASE(
    "contact friction's slip velocity: the most the contact friction on its nodes changes its relative "
    "velocity in a step; a parallel pair's parts get the segment pair's friction, sticking and slipping",
    "[element][contact][friction]")
{
    // One segment sliding over an equal one at rest, both parallel: the four
    // end point parts' lagged friction (evaluate_cloth_contact, full Newton)
    // against the segment pair's. Each part carries a quarter of the normal
    // force; a slip velocity sized by a part's own quarter would be a
    // quarter of the pair's, and below it the parts would stick 4 times as
    // stiffly as the pair.
    const double k = 50, r = 0.5, h = 0.01, d = 0.3, mu = 0.4;
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    const Vec12 q = stack(Vec3::Zero(), x, d * z, x + d * z);
    weft::ClothCollision<double> collision;
    collision.enabled = true;
    collision.thickness = r;
    collision.stiffness = k;
    collision.friction = mu;
    const double limit = mu * k * (r - d);
    const auto element = [](weft::ClothContactKind kind) {
        return weft::ClothContactElement<double>{{0, 1, 2, 3}, int(kind), 0.0};
    };
    // Per node the limits of the friction on it over its mass (1): half of
    // μλ on each end, for either kind.
    const auto rates = [&](weft::ClothContactKind kind) {
        std::array<double, 4> load{};
        weft::contact_friction_loads<double>(q.data(), element(kind), collision, load.data());
        return load;
    };
    for (const auto kind : {weft::ClothContactKind::segment_pair, weft::ClothContactKind::parallel_segment_pair})
        for (const double a : rates(kind)) CHECK(a == Approx(0.5 * limit).epsilon(1e-12));
    const std::array<double, 4> rate = rates(weft::ClothContactKind::segment_pair);
    // h Σ |c_i| a_i = h μλ: 0.04 m/s, above the 1 mm/s floor, so the sizing matters.
    const double c_mid[4] = {0.5, 0.5, -0.5, -0.5}, c_end[4] = {1, 0, -1, 0};
    const int nodes[4] = {0, 1, 2, 3};
    const double slip = weft::contact_slip_velocity<double>(collision.slip_velocity, c_mid, nodes, rate.data(), h);
    CHECK(slip == Approx(h * limit).epsilon(1e-12));
    CHECK(weft::contact_slip_velocity<double>(collision.slip_velocity, c_end, nodes, rate.data(), h) ==
          Approx(slip).epsilon(1e-12));
    CHECK(weft::contact_slip_velocity<double>(collision.slip_velocity, c_mid, nodes, nullptr, h) ==
          collision.slip_velocity);
    CHECK(weft::contact_slip_velocity<double>(collision.slip_velocity, c_mid, nodes, rate.data(), 1e-6) ==
          collision.slip_velocity);
    const auto evaluate = [&](weft::ClothContactKind kind, const Vec3& slide, double friction) {
        Vec12 v = Vec12::Zero();
        v.segment<3>(0) = v.segment<3>(3) = slide;
        weft::NewtonInputs<double> newton;
        newton.full_newton = true;
        newton.lagged_positions = q.data();
        weft::ClothCollision<double> c = collision;
        c.friction = friction;
        weft::NodeBlocks<double, 4, 3> out;
        out.set_zero();
        weft::ElementEnergies<double> energy;
        weft::evaluate_cloth_contact<double>(q.data(), v.data(), rate.data(), element(kind), c, h, out, energy, newton);
        Vec12 f;
        for (int i = 0; i < 4; ++i) f.segment<3>(3 * i) = out.f[i];
        return std::make_pair(f, energy.dissipation);
    };
    int checks = 0;
    for (const double speed : {0.004, 0.02, 0.039, 0.5}) {
        const Vec3 slide = speed * (0.6 * x + 0.8 * y);
        const auto parts = evaluate(weft::ClothContactKind::parallel_segment_pair, slide, mu);
        const auto pair = evaluate(weft::ClothContactKind::segment_pair, slide, mu);
        const Vec12 penalty = evaluate(weft::ClothContactKind::segment_pair, slide, 0.0).first;
        const Vec12 friction = pair.first - penalty;
        INFO("speed " << speed << ": pair's friction " << friction.transpose() << ", the parts' "
                      << (parts.first - penalty).transpose());
        // The friction on the sliding segment: against the slide, μλ f₁(speed / slip).
        const double u = std::min(speed / slip, 1.0);
        const Vec3 on_a = friction.segment<3>(0) + friction.segment<3>(3);
        CHECK(on_a.norm() == Approx(limit * (2 * u - u * u)).epsilon(1e-9));
        CHECK(on_a.dot(slide) < 0);
        CHECK((parts.first - pair.first).norm() <= 1e-12 * (1 + pair.first.norm()));
        CHECK(parts.second == Approx(pair.second).epsilon(1e-12));
        CHECK(parts.second > 0);
        ++checks;
    }
    REQUIRE(checks == 4);
}
