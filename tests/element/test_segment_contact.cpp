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
        // Stay away from the kinks where a closest parameter reaches a bound.
        const double margin = 1e-4;
        if ((c.s > 0 && c.s < margin) || (c.s < 1 && c.s > 1 - margin) || (c.t > 0 && c.t < margin) ||
            (c.t < 1 && c.t > 1 - margin))
            continue;
        const int free = (c.s > 0 && c.s < 1) + (c.t > 0 && c.t < 1);
        check(q, "random", free);
    }
    INFO("configurations " << configurations << ", comparisons " << checker.checks);
    REQUIRE(configurations >= 20);
    REQUIRE(checker.checks == 3 * configurations);
}

namespace {

/// A yarn segment pair with the finder's mollifier ε× = band × |u|² |w|² at q.
weft::ClothContactElement<double> segment_pair_at(const Vec12& q)
{
    const double uu = (q.segment<3>(3) - q.segment<3>(0)).squaredNorm();
    const double ww = (q.segment<3>(9) - q.segment<3>(6)).squaredNorm();
    return {{0, 1, 2, 3}, int(weft::ClothContactKind::segment_pair), weft::segment_pair_parallel_band * uu * ww};
}

/// sin² of the angle between a pair's two segments.
double sine_squared(const Vec12& q)
{
    const Vec3 u = q.segment<3>(3) - q.segment<3>(0), w = q.segment<3>(9) - q.segment<3>(6);
    return u.cross(w).squaredNorm() / (u.squaredNorm() * w.squaredNorm());
}

/// Whether a segment pair lies within 1e-3 (in parameter) of a boundary of
/// one of its parts' closest-point regions, or within 1e-3 r of the
/// penalty's reach, where the force's Jacobian jumps (central differences
/// straddle it).
bool near_a_kink(const Vec12& q, double k, double r)
{
    for (int part = 0; part < weft::segment_pair_parts; ++part) {
        const auto c = weft::segment_pair_part<double>(q, part, k, r, false);
        if (std::abs(c.distance - r) < 1e-3 * r) return true;
        if (!c.active) continue;
        for (const double x : {c.s, c.t})
            if ((x > 0 && x < 1e-3) || (x < 1 && x > 1 - 1e-3)) return true;
    }
    return false;
}

}  // namespace

TEST_CASE("a yarn segment pair's contact is a C1 potential through parallel segments, a plain edge pair's is not",
          "[element][contact][fd]")
{
    // Two parallel, overlapping segments pressed within r, tilted by ±2e-12
    // rad towards each other: the plain segment penalty puts its force at
    // one end of the overlap or the other (a residual that jumps under
    // round-off); the segment pair's end points carry it, continuously.
    const double k = 50, r = 0.5;
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    const auto pressed = [&](double tilt) {
        return stack(Vec3::Zero(), x, 0.2 * x + (0.4 + tilt) * z, 1.2 * x + (0.4 - tilt) * z);
    };
    const auto plain = [&](const Vec12& q) {
        const weft::ClothContactElement<double> pair{{0, 1, 2, 3}, int(weft::ClothContactKind::edge_edge), 0.0};
        return weft::cloth_contact<double>(q, pair, k, r).force;
    };
    const auto segment_pair = [&](const Vec12& q) {
        return weft::cloth_contact<double>(q, segment_pair_at(q), k, r).force;
    };
    const Vec12 segment_plus = segment_pair(pressed(1e-12)), segment_minus = segment_pair(pressed(-1e-12));
    const Vec12 edge_plus = plain(pressed(1e-12)), edge_minus = plain(pressed(-1e-12));
    INFO("segment pair: " << segment_plus.transpose() << " / " << segment_minus.transpose());
    INFO("edge pair: " << edge_plus.transpose() << " / " << edge_minus.transpose());
    REQUIRE(segment_plus.norm() > 1.0);
    CHECK((segment_plus - segment_minus).norm() < 1e-9 * segment_plus.norm());
    CHECK((edge_plus - edge_minus).norm() > 0.5 * edge_plus.norm());
    check_momentum(pressed(1e-12), segment_plus);
    // Each end point within reach of the other segment pushes with a quarter
    // of the penalty at its distance: a₀ (0, 0, 0) is 0.4472 from b's end
    // b₀, a₁ lies 0.4 under b, b₀ 0.4 over a, b₁ (1.2, 0, 0.4) 0.4472 from a₁.
    const double near = 0.4, corner = std::sqrt(0.2 * 0.2 + 0.4 * 0.4);
    const auto flat = weft::cloth_contact<double>(pressed(0), segment_pair_at(pressed(0)), k, r);
    CHECK(
        flat.energy ==
        Approx(0.5 * k * (2 * 0.25 * (r - near) * (r - near) + 2 * 0.25 * (r - corner) * (r - corner))).epsilon(1e-12));
    CHECK(flat.normal_force == Approx(0.25 * k * (2 * (r - near) + 2 * (r - corner))).epsilon(1e-12));
    // Two equal segments on each other: four quarters of the segments' own penalty.
    const Vec12 equal = stack(Vec3::Zero(), x, 0.4 * z, x + 0.4 * z);
    const auto on_each_other = weft::cloth_contact<double>(equal, segment_pair_at(equal), k, r);
    CHECK(on_each_other.energy == Approx(0.5 * k * (r - near) * (r - near)).epsilon(1e-12));
    CHECK(on_each_other.force.segment<3>(6).z() == Approx(0.5 * k * (r - near)).epsilon(1e-12));

    // force = −∇V (central differences) at every angle: crossing pairs (the
    // segments' contact alone), pairs within the mollifier's band (18°), and
    // parallel pairs (the end points alone).
    FdChecker checker = contact_checker();
    Random rng(5);
    int regime_counts[3] = {0, 0, 0};
    for (int trial = 0; trial < 400; ++trial) {
        const int regime = trial % 3;
        const double angle = regime == 0 ? rng.uniform(0.4, 1.5) : (regime == 1 ? rng.uniform(0.05, 0.3) : 0.0);
        const Vec3 along = std::cos(angle) * x + std::sin(angle) * y;
        const Vec3 b0 = rng.uniform(-0.4, 0.6) * x + rng.uniform(-0.2, 0.2) * y + rng.uniform(0.2, 0.45) * z;
        const Vec12 q =
            stack(rng.uniform(-0.05, 0.05) * x, rng.uniform(0.95, 1.05) * x, b0, b0 + rng.uniform(0.6, 1.2) * along);
        const auto pair = segment_pair_at(q);
        const auto c = weft::cloth_contact<double>(q, pair, k, r);
        if (!c.active || regime_counts[regime] >= 6 || near_a_kink(q, k, r)) continue;
        const double sin2 = sine_squared(q);
        INFO("regime " << regime << ", sin^2 " << sin2 << ", d " << c.distance);
        if (regime == 0 && sin2 < 1.1 * weft::segment_pair_parallel_band) continue;
        if (regime == 1) REQUIRE(sin2 < weft::segment_pair_parallel_band);
        checker.gradient([&](const VectorX& v) { return -weft::cloth_contact<double>(Vec12(v), pair, k, r).energy; },
                         VectorX(q), VectorX(c.force), "segment pair force = -grad V");
        check_momentum(q, c.force);
        const Eigen::VectorXd gn = weft_test::symmetric_eigenvalues(c.gauss_newton);
        CHECK(gn.minCoeff() > -1e-12 * gn.maxCoeff());
        if (regime == 0) {
            // Beyond the mollifier it is the segments' contact itself.
            const auto segments = weft::segment_contact<double>(q, k, r, false);
            CHECK((c.force - segments.force).norm() <= 1e-12 * (1 + segments.force.norm()));
        }
        ++regime_counts[regime];
    }
    INFO("crossing " << regime_counts[0] << ", within the mollifier " << regime_counts[1] << ", parallel "
                     << regime_counts[2]);
    REQUIRE(regime_counts[0] == 6);
    REQUIRE(regime_counts[1] == 6);
    REQUIRE(regime_counts[2] == 6);
    REQUIRE(checker.checks == 18);
}

TEST_CASE("a contact pair's exact Hessian, where asked for, is its force's Jacobian; Gauss-Newton elsewhere",
          "[element][contact][fd]")
{
    // cloth_contact(..., exact = true), what full Newton's exact Hessians
    // assemble (evaluate_cloth_contact): the point-triangle pair and the
    // segment pair at every angle (crossing, within the mollifier, parallel)
    // carry their exact Hessian; the mollified edge pair keeps the
    // Gauss-Newton stiffness.
    FdChecker checker = contact_checker();
    const double k = 50, r = 0.5;
    Random rng(43);
    const Vec3 x(1, 0, 0), y(0, 1, 0), z(0, 0, 1);
    int exact = 0, cases = 0;
    for (int kind_case = 0; kind_case < 4; ++kind_case) {
        const int before = exact;
        for (int trial = 0; trial < 400 && exact < before + 8; ++trial) {
            Vec12 q;
            if (kind_case == 0) {  // a point over a triangle
                q = stack(0.3 * x + 0.3 * y + 0.25 * z, Vec3::Zero(), x, y) + 0.1 * Vec12(rng.vector<12>(-1, 1));
            } else if (kind_case == 1) {  // crossing segments
                q = stack(Vec3::Zero(), x, 0.5 * x - 0.5 * y + 0.3 * z, 0.5 * x + 0.5 * y + 0.3 * z) +
                    0.1 * Vec12(rng.vector<12>(-1, 1));
            } else {  // within the mollifier (2), parallel (3)
                const double angle = kind_case == 2 ? rng.uniform(0.05, 0.3) : 0.0;
                const Vec3 b0 = rng.uniform(-0.4, 0.6) * x + rng.uniform(-0.2, 0.2) * y + rng.uniform(0.2, 0.45) * z;
                q = stack(rng.uniform(-0.05, 0.05) * x, rng.uniform(0.95, 1.05) * x, b0,
                          b0 + rng.uniform(0.6, 1.2) * (std::cos(angle) * x + std::sin(angle) * y));
            }
            const auto pair =
                kind_case == 0
                    ? weft::ClothContactElement<double>{{0, 1, 2, 3}, int(weft::ClothContactKind::point_triangle), 0.0}
                    : segment_pair_at(q);
            const auto c = weft::cloth_contact<double>(q, pair, k, r, true);
            if (!c.active || c.distance < 1e-3) continue;
            const double m = 1e-3;  // away from the closest points' region boundaries (kinks)
            if (kind_case == 0 && ((c.s > 0 && c.s < m) || (c.s < 1 && c.s > 1 - m) || (c.t > 0 && c.t < m) ||
                                   (c.t < 1 && c.t > 1 - m) || (c.s + c.t > 1 - m && c.s + c.t < 1 + m)))
                continue;
            if (kind_case > 0 && near_a_kink(q, k, r)) continue;
            if (kind_case == 1 && sine_squared(q) < 1.1 * weft::segment_pair_parallel_band) continue;
            INFO("case " << kind_case << ": d " << c.distance << ", s " << c.s << ", t " << c.t);
            REQUIRE(c.exact_hessian);
            // The force is that of the plain (Gauss-Newton) evaluation; only the stiffness differs.
            const auto plain = weft::cloth_contact<double>(q, pair, k, r, false);
            CHECK_FALSE(plain.exact_hessian);
            CHECK(plain.hessian.norm() == 0.0);
            CHECK((c.force - plain.force).norm() <= 1e-12 * (1 + plain.force.norm()));
            CHECK((c.gauss_newton - plain.gauss_newton).norm() <= 1e-12 * (1 + plain.gauss_newton.norm()));
            // Parallel pairs: the segments' force m ∇V_ss jumps across parallel
            // by O(m) = O(step²/ε×), a central-difference error O(step/ε×), so
            // the step is smaller there.
            checker.step = kind_case == 3 ? 1e-9 : 1e-7;
            checker.jacobian(
                [&](const VectorX& v) { return VectorX(-weft::cloth_contact<double>(Vec12(v), pair, k, r).force); },
                VectorX(q), MatrixX(c.hessian), "exact contact Hessian = -d force / dq");
            checker.step = 1e-7;
            CHECK((c.hessian - c.hessian.transpose()).norm() <= 1e-12 * c.hessian.norm());
            // It differs from Gauss-Newton (the curvature of the distances, and of the mollifier).
            CHECK((c.hessian - c.gauss_newton).norm() > 1e-3 * c.gauss_newton.norm());
            ++exact;
        }
        CHECK(exact == before + 8);
        ++cases;
    }
    REQUIRE(cases == 4);
    CHECK(checker.checks == exact);

    // The mollifier's own second derivative against central differences of its gradient.
    for (int trial = 0; trial < 4; ++trial) {
        const Vec3 b0 = rng.vector<3>(-0.3, 0.3) + 0.4 * z;
        const Vec12 q = stack(rng.uniform(-0.1, 0.1) * x, x, b0, b0 + x + rng.vector<3>(-0.15, 0.15));
        const double eps = segment_pair_at(q).parallel_eps;
        Vec12 dm;
        REQUIRE(weft::parallel_mollifier<double>(q, eps, dm) < 1.0);
        checker.jacobian(
            [&](const VectorX& v) {
                Vec12 g;
                weft::parallel_mollifier<double>(Vec12(v), eps, g);
                return VectorX(g);
            },
            VectorX(q), MatrixX(weft::parallel_mollifier_hessian<double>(q, eps)), "mollifier Hessian");
    }
    CHECK(checker.checks == exact + 4);

    // Edge pairs: no exact Hessian, whatever is asked.
    const Vec12 crossing = stack(Vec3::Zero(), x, 0.5 * x - 0.5 * y + 0.3 * z, 0.5 * x + 0.5 * y + 0.3 * z);
    const auto edge = weft::cloth_contact<double>(
        crossing, weft::ClothContactElement<double>{{0, 1, 2, 3}, int(weft::ClothContactKind::edge_edge), 0.0}, k, r,
        true);
    REQUIRE(edge.active);
    CHECK_FALSE(edge.exact_hessian);
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

TEST_CASE("a contact pair's point weights give its closest points' difference for every kind", "[element][contact]")
{
    // contact_point_weights against the closest-point functions it
    // dispatches to: |Σ c_i p_i| is the pair's distance, and the weights of
    // each primitive sum to ±1 (the difference of two points on them).
    Random rng(11);
    int checked = 0;
    for (int trial = 0; trial < 200; ++trial) {
        Vec3 p[4];
        for (Vec3& x : p) x = rng.vector<3>(-1, 1);
        if (trial % 4 == 1) p[3] = p[2] + (p[1] - p[0]) * 0.7 + Vec3(0, 0, 1e-9);  // nearly parallel edges
        if (trial % 4 == 2) p[1] = p[0];                                           // a degenerate first segment
        const auto difference = [&](const double c[4]) {
            return Vec3(c[0] * p[0] + c[1] * p[1] + c[2] * p[2] + c[3] * p[3]);
        };
        double c[4];
        weft::contact_point_weights<double>(p[0], p[1], p[2], p[3], int(weft::ClothContactKind::point_triangle), c);
        const auto triangle = weft::closest_point_triangle<double>(p[0], p[1], p[2], p[3]);
        CHECK(difference(c).norm() == Approx(std::sqrt(triangle.distance_squared)).margin(1e-14));
        CHECK(c[0] == 1.0);
        CHECK(c[1] + c[2] + c[3] == Approx(-1.0).margin(1e-14));
        const auto at = weft::closest_segment_segment<double>(p[0], p[1], p[2], p[3]);
        for (const auto kind : {weft::ClothContactKind::edge_edge, weft::ClothContactKind::segment_pair}) {
            weft::contact_point_weights<double>(p[0], p[1], p[2], p[3], int(kind), c);
            const Vec3 expected = (p[0] + at.s * (p[1] - p[0])) - (p[2] + at.t * (p[3] - p[2]));
            CHECK((difference(c) - expected).norm() <= 1e-14);
            CHECK(c[0] + c[1] == Approx(1.0).margin(1e-15));
            CHECK(c[2] + c[3] == Approx(-1.0).margin(1e-15));
            CHECK(difference(c).norm() == Approx(std::sqrt(at.distance_squared)).margin(1e-14));
        }
        ++checked;
    }
    REQUIRE(checked == 200);
}
