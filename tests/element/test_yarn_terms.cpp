// The non-strain terms of the EoL yarn model (element/yarn_terms.hpp) and the
// collider's 3-D Jacobian, against finite differences on random and edge-case
// inputs: segment gravity with its Eulerian component, the parallel-yarn
// contact penalty, the friction anchor spring and its slipping form, the
// consistent segment mass (against the kinetic energy of its velocity
// field, integrated independently), and the penalty's ∂f/∂x on a plane and a
// sphere (where the curvature part is dropped on purpose and computed here
// on its own). Also: a full-Newton line-search trial's shear and bending
// forces and right-hand side are the full evaluation's, to the bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <weft/element/collider.hpp>
#include <weft/element/yarn_elements.hpp>
#include <weft/element/yarn_terms.hpp>

#include "support/random.hpp"

using Vec3 = weft::Vec3<double>;
using Vec8 = weft::Vec<double, 8>;
using Mat8 = weft::Mat<double, 8, 8>;

namespace {

/// A segment [x₀, s₀, x₁, s₁] of about `length` with Δs = length / stretch.
Vec8 random_segment(weft_test::Random& rng, double length, double stretch)
{
    Vec8 q;
    const Vec3 x0 = rng.vector<3>(-1e-2, 1e-2);
    const Vec3 x1 = x0 + length * rng.unit_vector();
    const double s0 = rng.uniform(-1e-2, 1e-2);
    q << x0, s0, x1, s0 + length / stretch;
    return q;
}

/// Central differences at q of a local term's energy (its gradient) and of
/// its force (its Jacobian).
template <int N, class Eval>
void central_differences(const Eval& eval, const weft::Vec<double, N>& q, double step, weft::Vec<double, N>& gradient,
                         weft::Mat<double, N, N>& jacobian)
{
    for (int i = 0; i < N; ++i) {
        weft::Vec<double, N> p = q, m = q;
        p(i) += step;
        m(i) -= step;
        const auto tp = eval(p), tm = eval(m);
        gradient(i) = (tp.energy - tm.energy) / (2 * step);
        jacobian.col(i) = (tp.force - tm.force) / (2 * step);
    }
}

/// The largest relative mismatches of force against −∇energy and of df_dq
/// against ∂force/∂q (central differences) at q.
template <int N, class Eval>
void fd_check(const Eval& eval, const weft::Vec<double, N>& q, double step, double& force_error, double& jacobian_error)
{
    const auto t = eval(q);
    weft::Vec<double, N> gradient;
    weft::Mat<double, N, N> jacobian;
    central_differences<N>(eval, q, step, gradient, jacobian);
    REQUIRE(t.force.norm() > 0);
    force_error = (t.force + gradient).norm() / t.force.norm();
    jacobian_error = jacobian.norm() > 0 ? (t.df_dq - jacobian).norm() / jacobian.norm() : t.df_dq.norm();
}

}  // namespace

TEST_CASE("yarn terms: segment gravity is minus the gradient of its energy, with its exact Jacobian",
          "[element][yarn][fd]")
{
    weft_test::Random rng(3);
    int checked = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const double rho = rng.uniform(1e-5, 1e-3);
        const Vec3 g = trial == 0 ? Vec3(0, 0, -9.81) : Vec3(rng.vector<3>(-10, 10));
        const Vec8 q = random_segment(rng, rng.uniform(1e-4, 2e-3), rng.uniform(0.8, 1.2));
        const auto eval = [&](const Vec8& x) { return weft::segment_gravity<double>(x, rho, g); };
        double force_error = 0, jacobian_error = 0;
        fd_check<8>(eval, q, 1e-7, force_error, jacobian_error);
        INFO("trial " << trial << ": force " << force_error << ", Jacobian " << jacobian_error);
        CHECK(force_error < 1e-7);
        CHECK(jacobian_error < 1e-7);
        const auto t = eval(q);
        CHECK((t.df_dq - t.df_dq.transpose()).norm() == Approx(0).margin(1e-12 * t.df_dq.norm()));
        // The x forces sum to the segment's weight ρ Δs g; the s forces to 0.
        CHECK((t.force.segment<3>(0) + t.force.segment<3>(4) - rho * (q(7) - q(3)) * g).norm() ==
              Approx(0).margin(1e-12 * rho * g.norm()));
        CHECK(t.force(3) + t.force(7) == Approx(0).margin(1e-15));
        ++checked;
    }
    REQUIRE(checked == 20);
    // The Eulerian component: material sliding towards the lower node
    // (s₁ grows at fixed x, the segment's arc-length span moves down) lowers
    // the energy when node 1 is the lower one.
    Vec8 q;
    q << 0, 0, 1e-3, 0, 0, 0, 0, 1e-3;
    const double before = weft::segment_gravity<double>(q, 1e-4, Vec3(0, 0, -9.81)).energy;
    q(7) += 1e-5;
    CHECK(weft::segment_gravity<double>(q, 1e-4, Vec3(0, 0, -9.81)).energy > before);
}

TEST_CASE("yarn terms: the parallel-yarn contact and the anchor springs against finite differences",
          "[element][yarn][fd]")
{
    weft_test::Random rng(5);
    const double k = 0.3, d_min = 5e-4;
    int checked = 0;
    for (int trial = 0; trial < 20; ++trial) {
        // Inside the contact distance (at most 99 % of it: the penalty's
        // stiffness jumps at Δs = d_min).
        const double s0 = rng.uniform(-1e-2, 1e-2);
        const double ds = trial == 0 ? 0.0 : rng.uniform(-0.5, 0.99) * d_min;
        weft::Vec<double, 2> s(s0, s0 + ds);
        const auto contact = [&](const weft::Vec<double, 2>& x) {
            return weft::parallel_contact<double>(x(0), x(1), k, d_min);
        };
        double force_error = 0, jacobian_error = 0;
        fd_check<2>(contact, s, 1e-9, force_error, jacobian_error);
        INFO("trial " << trial << " Δs/d_min " << ds / d_min << ": force " << force_error << ", Jacobian "
                      << jacobian_error);
        CHECK(force_error < 1e-6);
        CHECK(jacobian_error < 1e-6);
        CHECK(contact(s).force(1) > 0);  // pushes the nodes apart
        ++checked;
    }
    REQUIRE(checked == 20);
    // No force beyond the contact distance.
    CHECK(weft::parallel_contact<double>(0.0, 1.01 * d_min, k, d_min).force.norm() == 0.0);
    CHECK(weft::parallel_contact<double>(0.0, 1.01 * d_min, k, d_min).energy == 0.0);

    // Anchor spring, and the slipping anchor in both of its regimes.
    const double kf = 0.1, limit = 2e-7;
    for (int trial = 0; trial < 10; ++trial) {
        const double anchor = rng.uniform(-1e-2, 1e-2);
        const double offset = rng.uniform(-1, 1) * limit / kf;
        weft::Vec<double, 1> s;
        s << anchor + offset;
        const auto spring = [&](const weft::Vec<double, 1>& x) {
            return weft::anchor_spring<double>(x(0), anchor, kf);
        };
        double force_error = 0, jacobian_error = 0;
        fd_check<1>(spring, s, 1e-3 * limit / kf, force_error, jacobian_error);
        CHECK(force_error < 1e-6);
        CHECK(jacobian_error < 1e-6);
        // Slipping: past the limit the force is ∓limit, with no stiffness.
        weft::Vec<double, 1> far;
        far << anchor + (offset < 0 ? -3 : 3) * limit / kf;
        const auto slip = [&](const weft::Vec<double, 1>& x) {
            return weft::slipping_anchor<double>(x(0), anchor, kf, limit);
        };
        fd_check<1>(slip, far, 1e-3 * limit / kf, force_error, jacobian_error);
        CHECK(force_error < 1e-6);
        CHECK(std::abs(slip(far).force(0)) == Approx(limit));
        CHECK(slip(far).df_dq(0, 0) == 0.0);
        ++checked;
    }
    REQUIRE(checked == 30);
}

TEST_CASE("yarn terms: a slipping anchor's full-Newton friction is the gradient of its dissipation potential",
          "[element][yarn][friction][fd]")
{
    // D(ṡ) = limit f₀(|ṡ|) (IPC's mollifier) on the sliding rate: f = −∂D/∂ṡ
    // and ∂f/∂ṡ by central differences below the slip velocity ε, beyond it
    // and at the edge cases (rest, ±ε); −∂f/∂ṡ ≥ 0; |f| ≤ limit, f opposes ṡ.
    weft_test::Random rng(5);
    const double kf = 0.1, limit = 2e-7, h = 1e-3;
    const double eps = weft::anchor_slip_velocity<double>(kf, limit, h);
    REQUIRE(eps == Approx(limit / (kf * h)));
    // With the node's mass m and the coordinate's rate at the step's start:
    // the floor, raised to min(|ṡ_n|, limit h / m) (a contact at rest keeps
    // the floor, a sliding one gets at most its own rate).
    const double mass = limit * h / (8 * eps);  // limit h / m = 8 ε
    CHECK(weft::anchor_slip_velocity<double>(kf, limit, h, mass) == eps);
    CHECK(weft::anchor_slip_velocity<double>(kf, limit, h, mass, 0.0) == eps);
    CHECK(weft::anchor_slip_velocity<double>(kf, limit, h, 0.0, 100 * eps) == eps);
    CHECK(weft::anchor_slip_velocity<double>(kf, limit, h, mass, 0.5 * eps) == eps);
    CHECK(weft::anchor_slip_velocity<double>(kf, limit, h, mass, 3 * eps) == Approx(3 * eps));
    CHECK(weft::anchor_slip_velocity<double>(kf, limit, h, mass, -3 * eps) == Approx(3 * eps));
    CHECK(weft::anchor_slip_velocity<double>(kf, limit, h, mass, 100 * eps) == Approx(8 * eps));
    CHECK(weft::anchor_slip_velocity<double>(kf, limit, h, 1e3 * mass, 100 * eps) == eps);
    int checked = 0, below = 0, above = 0;
    std::vector<double> rates = {0.0, eps, -eps, eps * (1 - 1e-9), eps * (1 + 1e-9)};
    for (int trial = 0; trial < 100; ++trial)
        rates.push_back((trial % 2 ? -1 : 1) * (trial < 50 ? rng.uniform(0.01, 0.99) : rng.uniform(1.01, 50)) * eps);
    for (const double rate : rates) {
        const auto t = weft::lagged_anchor_friction<double>(rate, limit, eps);
        const double d = 1e-7 * eps;
        const auto p = weft::lagged_anchor_friction<double>(rate + d, limit, eps);
        const auto m = weft::lagged_anchor_friction<double>(rate - d, limit, eps);
        INFO("rate / eps " << rate / eps);
        CHECK(std::abs(t.force(0) + (p.energy - m.energy) / (2 * d)) <= 1e-6 * limit);
        CHECK(std::abs(t.df_dv(0, 0) - (p.force(0) - m.force(0)) / (2 * d)) <= 1e-5 * limit / eps);
        CHECK(t.df_dv(0, 0) <= 0.0);
        CHECK(std::abs(t.force(0)) <= limit * (1 + 1e-12));
        CHECK(t.force(0) * rate <= 0.0);
        CHECK(t.df_dq(0, 0) == 0.0);
        (std::abs(rate) < eps ? below : above) += 1;
        ++checked;
    }
    REQUIRE(checked == 105);
    REQUIRE(below == 52);
    REQUIRE(above == 53);
    // Below ε as stiff as twice the spring: −∂f/∂ṡ at rest is 2 limit/ε = 2 k_f h.
    CHECK(-weft::lagged_anchor_friction<double>(0.0, limit, eps).df_dv(0, 0) == Approx(2 * kf * h));
    CHECK(weft::lagged_anchor_friction<double>(-3 * eps, limit, eps).force(0) == Approx(limit));
    CHECK(weft::lagged_anchor_friction<double>(0.1, 0.0, eps).force(0) == 0.0);
    // The regime test: dragged to the limit (either side) is at it; inside is not.
    for (int trial = 0; trial < 20; ++trial) {
        const double s = rng.uniform(-1e-2, 1e-2);
        const double sign = trial % 2 ? -1.0 : 1.0;
        const double dragged = weft::drag_anchor_to_limit<double>(s, s - sign * 3 * limit / kf, kf, limit);
        CHECK(weft::anchor_at_limit<double>(s, dragged, kf, limit));
        CHECK_FALSE(weft::anchor_at_limit<double>(s, s - sign * 0.9 * limit / kf, kf, limit));
    }
    // After a step in which the anchor slipped, Coulomb's stick test on the
    // total force at the step's end: below ε and with the other forces
    // F = force − f(ṡ) within the limit it sticks, the spring carrying −F;
    // beyond the limit, or at or beyond ε, it is dragged to the limit.
    int settled = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const double s = rng.uniform(-1e-2, 1e-2);
        const double sign = trial % 2 ? -1.0 : 1.0;
        const double old_anchor = s - sign * 3 * limit / kf;
        const double slow = sign * rng.uniform(0.01, 0.9) * eps;
        const double f = weft::lagged_anchor_friction<double>(slow, limit, eps).force(0);
        // steady creep (the load balances f: total force 0): F = −f, within the limit
        const double steady = weft::settle_slipping_anchor<double>(s, old_anchor, slow, 0.0, kf, limit, eps);
        CHECK(weft::anchor_spring<double>(s, steady, kf).force(0) == Approx(f).epsilon(1e-9));
        CHECK_FALSE(weft::anchor_at_limit<double>(s, steady, kf, limit));
        // a load below the limit that still accelerates it: held by the spring
        const double below = sign * rng.uniform(0.1, 0.99) * limit;
        const double held = weft::settle_slipping_anchor<double>(s, old_anchor, slow, below + f, kf, limit, eps);
        CHECK(weft::anchor_spring<double>(s, held, kf).force(0) == Approx(-below).epsilon(1e-9));
        // a load beyond the limit: F = 1.2 limit · sign
        CHECK(weft::settle_slipping_anchor<double>(s, old_anchor, slow, 1.2 * sign * limit + f, kf, limit, eps) ==
              weft::drag_anchor_to_limit<double>(s, old_anchor, kf, limit));
        for (const double fast : {sign * eps, sign * rng.uniform(1.01, 50) * eps})
            CHECK(weft::settle_slipping_anchor<double>(s, old_anchor, fast, 0.0, kf, limit, eps) ==
                  weft::drag_anchor_to_limit<double>(s, old_anchor, kf, limit));
        ++settled;
    }
    REQUIRE(settled == 20);
}

TEST_CASE("yarn terms: the consistent segment mass is the kinetic energy of the EoL velocity field", "[element][yarn]")
{
    // A material point at parameter t moves with u(t) = (1−t)(ẋ₀ − w ṡ₀) +
    // t(ẋ₁ − w ṡ₁), w = Δx/Δs; T = ½ ρ Δs ∫₀¹ |u(t)|² dt, integrated by
    // Simpson's rule (exact for this quadratic in t), against ½ vᵀ M v.
    weft_test::Random rng(11);
    int checked = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const double rho = rng.uniform(1e-5, 1e-3);
        const Vec8 q = random_segment(rng, rng.uniform(1e-4, 2e-3), rng.uniform(0.8, 1.2));
        const Vec8 v = rng.vector<8>(-0.1, 0.1);
        const Vec3 w = (q.segment<3>(4) - q.segment<3>(0)) / (q(7) - q(3));
        const auto u = [&](double t) {
            return Vec3((1 - t) * (v.segment<3>(0) - w * v(3)) + t * (v.segment<3>(4) - w * v(7)));
        };
        const double simpson = (u(0).squaredNorm() + 4 * u(0.5).squaredNorm() + u(1).squaredNorm()) / 6;
        const double expected = 0.5 * rho * (q(7) - q(3)) * simpson;
        const Mat8 m = weft::segment_mass<double>(q, rho);
        REQUIRE(expected > 0);
        CHECK(0.5 * v.dot(m * v) == Approx(expected).epsilon(1e-12));
        CHECK((m - m.transpose()).norm() == Approx(0).margin(1e-15 * m.norm()));
        ++checked;
    }
    REQUIRE(checked == 20);
    // Edge cases: material at rest while the nodes slide along a straight
    // yarn with it (ẋ_i = w ṡ_i) has no kinetic energy; a translation has
    // the segment's mass ρ Δs.
    const Vec8 q = random_segment(rng, 1e-3, 1.1);
    const Vec3 w = (q.segment<3>(4) - q.segment<3>(0)) / (q(7) - q(3));
    Vec8 v;
    v << 0.3 * w, 0.3, -0.2 * w, -0.2;
    const Mat8 m = weft::segment_mass<double>(q, 1e-4);
    CHECK(v.dot(m * v) == Approx(0).margin(1e-18));
    Vec8 translation;
    translation << 1, 0, 0, 0, 1, 0, 0, 0;
    CHECK(translation.dot(m * translation) == Approx(1e-4 * (q(7) - q(3))).epsilon(1e-12));
}

TEST_CASE("yarn terms: the derivative of the consistent mass's product matches finite differences",
          "[element][yarn][fd]")
{
    // ∂(M(q) u)/∂q against central differences of segment_mass(q) u, on
    // random segments (stretched and compressed, long and short) and on an
    // edge case: a segment whose Δs is a tenth of its length.
    weft_test::Random rng(12);
    int checked = 0;
    for (int trial = 0; trial < 21; ++trial) {
        const double rho = rng.uniform(1e-5, 1e-3);
        const double stretch = trial == 20 ? 10.0 : rng.uniform(0.7, 1.3);
        const Vec8 q = random_segment(rng, rng.uniform(1e-4, 2e-3), stretch);
        const Vec8 u = rng.vector<8>(-0.1, 0.1);
        const Mat8 g = weft::segment_mass_derivative<double>(q, rho, u);
        Mat8 fd;
        for (int j = 0; j < 8; ++j) {
            const double eps = 1e-7 * (q(7) - q(3));
            Vec8 qp = q, qm = q;
            qp(j) += eps;
            qm(j) -= eps;
            fd.col(j) = (weft::segment_mass<double>(qp, rho) * u - weft::segment_mass<double>(qm, rho) * u) / (2 * eps);
        }
        INFO("trial " << trial << "\nanalytic\n" << g << "\nfd\n" << fd);
        REQUIRE(fd.norm() > 0);
        CHECK((g - fd).norm() <= 1e-6 * fd.norm());
        ++checked;
    }
    REQUIRE(checked == 21);
    // A translation of the whole segment leaves M unchanged: G e = 0 for
    // e = (t, 0, t, 0), and G does not depend on where the segment lies.
    const Vec8 q = random_segment(rng, 1e-3, 1.1);
    const Vec8 u = rng.vector<8>(-0.1, 0.1);
    const Mat8 g = weft::segment_mass_derivative<double>(q, 1e-4, u);
    Vec8 translation;
    translation << 0.3, -0.2, 0.5, 0, 0.3, -0.2, 0.5, 0;
    CHECK((g * translation).norm() <= 1e-12 * g.norm());
    Vec8 shifted = q;
    shifted.segment<3>(0) += Vec3(1, 2, 3);
    shifted.segment<3>(4) += Vec3(1, 2, 3);
    CHECK((weft::segment_mass_derivative<double>(shifted, 1e-4, u) - g).norm() <= 1e-9 * g.norm());
}

TEST_CASE("collider: the penalty's 3-D Jacobian is the derivative of its force, less the curvature it drops",
          "[element][collider][fd]")
{
    // ∂(F_n n)/∂x = −F_n′ n nᵀ + F_n ∇n: the element keeps the first part
    // (collider_contact); ∇n is 0 on a plane and (I − n nᵀ)/|x − c| on a
    // sphere, computed here independently of the element.
    weft_test::Random rng(23);
    const double r = 2e-4, k = 1e3;
    int checked = 0;
    for (const int type : {1, 0}) {
        weft::Collider<double> c;
        c.shape = type == 0 ? weft::ColliderShape::sphere : weft::ColliderShape::plane;
        c.center = Vec3(0.01, -0.02, 0.005);
        c.normal = type == 1 ? Vec3(rng.unit_vector()) : Vec3(0, 0, 1);
        c.radius = type == 0 ? 0.05 : 0.0;
        c.stiffness = k;
        c.friction = 0;
        for (int trial = 0; trial < 10; ++trial) {
            const Vec3 dir = type == 1 ? c.normal : Vec3(rng.unit_vector());
            const double depth = (trial == 0 ? 0.05 : rng.uniform(0.01, 0.9)) * r;  // in the onset and past it
            Vec3 along = rng.unit_vector();
            along -= along.dot(dir) * dir;  // a plane's point moved within the plane
            const Vec3 x = c.center + (c.radius + r - depth) * dir + (type == 1 ? Vec3(1e-3 * along) : Vec3::Zero());
            const auto force = [&](const Vec3& p) {
                double phi;
                Vec3 n;
                c.distance(p, phi, n);
                return weft::collider_contact<double>(Vec3::Zero(), phi, n, r, k, 0.0, 1e-3);
            };
            const auto t = force(x);
            double phi;
            Vec3 n;
            c.distance(x, phi, n);
            const double fn = t.force.dot(n);
            REQUIRE(fn > 0);
            Vec3 gradient;
            weft::Mat3<double> jacobian;
            central_differences<3>(force, x, 1e-4 * depth, gradient, jacobian);
            CHECK((t.force + gradient).norm() <= 1e-6 * t.force.norm());  // the force is −∇ of the penalty energy
            weft::Mat3<double> curvature = weft::Mat3<double>::Zero();
            if (type == 0) {
                const double len = (x - c.center).norm();
                curvature = (weft::Mat3<double>::Identity() - n * n.transpose()) / len;
            }
            const weft::Mat3<double> kept = jacobian - fn * curvature;
            INFO((type == 0 ? "sphere" : "plane") << " trial " << trial << " depth/r " << depth / r);
            CHECK((t.df_dq - kept).norm() <= 1e-5 * kept.norm());
            // On the sphere the dropped part is seen: the check tells them apart.
            if (type == 0) CHECK((t.df_dq - jacobian).norm() > 1e-4 * kept.norm());
            ++checked;
        }
    }
    REQUIRE(checked == 20);
}

namespace {

/// One shear and one bend element on three 5-DoF nodes, evaluated as a
/// full-Newton iterate: forces, right-hand sides and energies.
struct ElementOutputs {
    std::vector<double> b, f, energies;
};

template <int K>
void append(const weft::NodeBlocks<double, K, weft::yarn_node_dofs>& out, const weft::ElementEnergies<double>& e,
            ElementOutputs& o)
{
    for (int k = 0; k < K; ++k) {
        for (int c = 0; c < weft::yarn_node_dofs; ++c) {
            o.b.push_back(out.b[k](c));
            o.f.push_back(out.f[k](c));
        }
    }
    o.energies.insert(o.energies.end(), {e.kinetic, e.elastic, e.gravity, e.dissipation});
}

ElementOutputs evaluate_shear_and_bend(const std::vector<double>& q, const std::vector<double>& v,
                                       const std::vector<double>& start, const std::vector<double>& w,
                                       const weft::YarnMaterial<double>& mat, bool exact_hessians, bool forces_only)
{
    weft::NewtonInputs<double> newton;
    newton.full_newton = true;
    newton.exact_hessians = exact_hessians;
    newton.rate_start = start.data();
    newton.stiffness_velocity = w.data();
    newton.forces_only = forces_only;
    const double h = 2e-3;
    ElementOutputs o;
    weft::ElementEnergies<double> e{};
    weft::NodeBlocks<double, 3, weft::yarn_node_dofs> shear_out;
    shear_out.set_zero();
    weft::evaluate_yarn_shear<double>(q.data(), v.data(), weft::YarnShear{0, 1, 2, 1e-3}, mat, h, shear_out, e, newton);
    append(shear_out, e, o);
    weft::NodeBlocks<double, 3, weft::yarn_node_dofs> bend_out;
    bend_out.set_zero();
    weft::evaluate_yarn_bend<double>(q.data(), v.data(), weft::YarnBend{3, 0, 1, 3}, mat, h, bend_out, e, newton);
    append(bend_out, e, o);
    return o;
}

}  // namespace

TEST_CASE("yarn elements: a line-search trial's shear and bending forces and b are the full evaluation's, to the bit",
          "[element][yarn][newton]")
{
    // Nodes 1 (along u) and 3 (the other side along u) around node 0, node 2
    // along v; 4 nodes of 5 DoFs. Random crossings, sheared, stretched and
    // compressed, straight and folded, at rest and moving.
    weft_test::Random rng(20261205);
    weft::YarnMaterial<double> mat;
    mat.linear_density = 3e-4;
    mat.stretch_stiffness = 100;
    mat.bending_stiffness = 1e-6;
    mat.shear_stiffness = 0.5;
    mat.damping = weft::DampingModel::strain_rate;
    mat.stretch_damping = 1e-3;
    mat.bending_damping = 1e-7;
    mat.shear_damping = 1e-3;
    const double l = 1e-3;
    int compared = 0;
    for (int trial = 0; trial < 40; ++trial) {
        const double bend = trial % 4 == 0 ? 0.0 : rng.uniform(-0.8, 0.8);
        const double shear = trial % 5 == 0 ? 0.0 : rng.uniform(-0.4, 0.4);
        std::vector<double> q(20, 0.0), v(20, 0.0), start(20), zero(20, 0.0), w(20);
        const Vec3 x[4] = {Vec3::Zero(), Vec3(l, 0, 0), Vec3(l * std::sin(shear), l * std::cos(shear), 0),
                           Vec3(-l * std::cos(bend), 0, l * std::sin(bend))};
        for (int n = 0; n < 4; ++n) {
            const Vec3 xn = x[n] + (trial % 3 == 0 ? Vec3::Zero() : Vec3(rng.vector<3>(-1e-4, 1e-4)));
            for (int c = 0; c < 3; ++c) q[5 * n + c] = xn(c);
            q[5 * n + 3] = n == 1 ? l : (n == 3 ? -l : 0.0);
            q[5 * n + 4] = n == 2 ? l : 0.0;
        }
        if (trial % 7 != 0) {
            for (int i = 0; i < 20; ++i) v[static_cast<std::size_t>(i)] = rng.uniform(-0.1, 0.1);
        }
        for (int i = 0; i < 20; ++i) {
            start[static_cast<std::size_t>(i)] = q[static_cast<std::size_t>(i)] - 2e-3 * rng.uniform(-0.1, 0.1);
            w[static_cast<std::size_t>(i)] = rng.uniform(-0.1, 0.1);
        }
        for (const weft::DampingModel model : {weft::DampingModel::strain_rate, weft::DampingModel::none}) {
            mat.damping = model;
            // w = 0 (full Newton's iterates; the trial's shortcut), against
            // full evaluations with exact and with projected stiffnesses: the
            // trial's forces, b and energies are the full evaluation's. And
            // w ≠ 0 (no shortcut) against the exact one, for the shear alone:
            // b = h (f + h K w) then reads K, and the trial's exact bending K
            // leaves its stress unclamped where the full evaluation clamps it.
            for (int variant = 0; variant < 3; ++variant) {
                const std::vector<double>& wv = variant < 2 ? zero : w;
                const bool exact = variant != 1;
                const ElementOutputs full = evaluate_shear_and_bend(q, v, start, wv, mat, exact, false);
                const ElementOutputs trial_out = evaluate_shear_and_bend(q, v, start, wv, mat, exact, true);
                REQUIRE(full.b.size() == trial_out.b.size());
                const std::size_t compared_entries = variant < 2 ? full.b.size() : 3 * weft::yarn_node_dofs;
                for (std::size_t i = 0; i < compared_entries; ++i) {
                    INFO("trial " << trial << ", variant " << variant << ", entry " << i);
                    REQUIRE(std::isfinite(full.b[i]));
                    REQUIRE(trial_out.b[i] == full.b[i]);  // == : +0 and −0 are equal
                    REQUIRE(trial_out.f[i] == full.f[i]);
                }
                const std::size_t compared_energies = variant < 2 ? full.energies.size() : 4;
                for (std::size_t i = 0; i < compared_energies; ++i) REQUIRE(trial_out.energies[i] == full.energies[i]);
                ++compared;
            }
        }
    }
    REQUIRE(compared == 240);
}
