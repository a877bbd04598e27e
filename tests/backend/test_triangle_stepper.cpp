// The triangle-cloth stepper: assembled force and stiffness against finite
// differences of the assembled energy and force, rigid motion not damped by
// strain-rate dissipation (Rayleigh does damp it), momentum conservation,
// no energy gain without damping, failure reporting, the tabulated material,
// and bad input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <weft/backend/triangle_stepper.hpp>

#include "support/random.hpp"
#include "support/solver_comparison.hpp"

using weft::Collider;
using weft::TriangleDamping;
using weft::TriangleMaterial;
using weft::TriangleModel;
using weft::TriangleStepper;
using Vec3 = weft::Vec3<double>;
using VectorX = Eigen::VectorXd;

namespace {

/// 1 m² of a light cloth: λh = 2000 N/m, μh = 1000 N/m, ρh = 0.1 kg/m².
TriangleMaterial<double> cloth_material(TriangleDamping damping)
{
    TriangleMaterial<double> m;
    m.stvk = weft::StVKDensity<double>{2000.0, 1000.0};
    m.areal_density = 0.1;
    m.bending_stiffness = 1e-4;
    m.damping = damping;
    if (damping == TriangleDamping::strain_rate) {
        m.membrane_damping = weft::StVKDensity<double>{2000.0 * 0.15, 1000.0 * 0.15};  // 2018 Eq. 12, β = 0.15
        m.bending_damping = 1e-4 * 0.15;
    }
    if (damping == TriangleDamping::rayleigh) m.rayleigh_beta = 0.15;
    return m;
}

TriangleModel<double> grid_model(int n, TriangleDamping damping, double stretch = 1.0)
{
    const weft::TriangleMesh mesh = weft::make_triangle_grid(n, n, 1.0, 1.0);
    TriangleModel<double> model = weft::build_triangle_model<double>(mesh, cloth_material(damping));
    for (double& x : model.q) x *= stretch;
    return model;
}

VectorX host(const thrust::device_vector<double>& x)
{
    const std::vector<double> h = weft::to_host(x);
    return Eigen::Map<const VectorX>(h.data(), static_cast<Eigen::Index>(h.size()));
}

double potential(TriangleStepper<double>& s)
{
    const weft::ElementEnergies<double> e = s.energies();
    return e.elastic + e.gravity;
}

VectorX linear_momentum(const TriangleModel<double>& model, const VectorX& v)
{
    VectorX p = VectorX::Zero(3);
    for (int i = 0; i < model.node_count(); ++i) p += model.mass[i] * v.segment<3>(3 * i);
    return p;
}

/// A bent, stretched, moving sheet: every term is active.
TriangleModel<double> busy_sheet(TriangleDamping damping)
{
    weft_test::Random rng(5);
    TriangleModel<double> model = grid_model(5, damping, 1.02);
    for (int i = 0; i < model.node_count(); ++i) {
        const double x = model.q[3 * i], y = model.q[3 * i + 1];
        model.q[3 * i + 2] = 0.05 * std::sin(3 * x) * std::cos(2 * y) + rng.uniform(-2e-3, 2e-3);
    }
    for (double& v : model.v) v = rng.uniform(-0.1, 0.1);
    return model;
}

}  // namespace

TEST_CASE("contribution terms: kinds of one name form one term, its node count named where they agree",
          "[backend][jacobian]")
{
    // Laid out one after the other: 2 triangles (3 nodes: 9 blocks, 3
    // vectors each), no 6-node plates, 4 8-node plates, 1 12-node plate,
    // then 5 nodes. The plates' first kind with elements sets the count;
    // a second count among them leaves it 0 (no per-element check).
    const std::vector<weft::ContributionTerm> t = weft::contribution_terms_of(
        {{"triangles", 2, 3}, {"plates", 0, 6}, {"plates", 4, 8}, {"plates", 1, 12}, {"nodes", 5, 1}});
    REQUIRE(t.size() == 3);
    CHECK(std::string(t[0].name) == "triangles");
    CHECK((t[0].matrix_begin == 0 && t[0].matrix_end == 18 && t[0].vector_begin == 0 && t[0].vector_end == 6));
    CHECK(t[0].nodes == 3);
    CHECK((t[1].matrix_begin == 18 && t[1].matrix_end == 18 + 256 + 144));
    CHECK((t[1].vector_begin == 6 && t[1].vector_end == 6 + 32 + 12));
    CHECK(t[1].nodes == 0);
    CHECK((t[2].vector_begin == 50 && t[2].vector_end == 55 && t[2].nodes == 1));
    // Empty kinds around one with elements: its count.
    const std::vector<weft::ContributionTerm> u =
        weft::contribution_terms_of({{"plates", 0, 6}, {"plates", 3, 8}, {"plates", 0, 12}});
    REQUIRE(u.size() == 1);
    CHECK(u[0].nodes == 8);
    CHECK((u[0].vector_end == 24 && u[0].matrix_end == 192));
}

TEST_CASE("triangle stepper: assembled force is minus the gradient of the assembled energy", "[backend][triangle]")
{
    const TriangleModel<double> model = busy_sheet(TriangleDamping::none);
    const Vec3 gravity(0, 0, -9.81);
    TriangleStepper<double> stepper(model, {}, gravity);
    stepper.assemble(1e-3);
    const VectorX force = host(stepper.force());
    REQUIRE(force.norm() > 1.0);
    int checked = 0;
    const double eps = 1e-7;
    for (std::size_t i = 0; i < model.q.size(); i += 5) {
        TriangleModel<double> plus = model, minus = model;
        plus.q[i] += eps;
        minus.q[i] -= eps;
        TriangleStepper<double> sp(plus, {}, gravity), sm(minus, {}, gravity);
        const double fd = -(potential(sp) - potential(sm)) / (2 * eps);
        CHECK(force(static_cast<Eigen::Index>(i)) == Approx(fd).epsilon(1e-5).margin(1e-6));
        ++checked;
    }
    REQUIRE(checked == static_cast<int>((model.q.size() + 4) / 5));
}

TEST_CASE("triangle stepper: stiffness in A is the force Jacobian of a sheet in tension", "[backend][triangle]")
{
    // In uniform tension every stress eigenvalue is positive, so the clamped
    // membrane stiffness is exact; bending (Gauss–Newton) is exact on a flat
    // sheet at rest. A = M − h² K without damping.
    TriangleModel<double> model = grid_model(4, TriangleDamping::none, 1.05);
    weft_test::Random rng(8);
    for (int i = 0; i < model.node_count(); ++i)
        for (int c = 0; c < 2; ++c) model.q[3 * i + c] += rng.uniform(-1e-3, 1e-3);
    const double h = 1e-2;
    TriangleStepper<double> stepper(model, {}, Vec3::Zero());
    stepper.assemble(h);
    const Eigen::MatrixXd a = Eigen::MatrixXd(weft::to_eigen(stepper.matrix()));
    Eigen::MatrixXd mass = Eigen::MatrixXd::Zero(a.rows(), a.cols());
    for (int i = 0; i < model.node_count(); ++i)
        mass.block<3, 3>(3 * i, 3 * i) = model.mass[i] * Eigen::Matrix3d::Identity();
    const Eigen::MatrixXd k = (mass - a) / (h * h);
    REQUIRE(k.norm() > 100.0);
    const double eps = 1e-7;
    double worst = 0;
    for (std::size_t j = 0; j < model.q.size(); ++j) {
        TriangleModel<double> plus = model, minus = model;
        plus.q[j] += eps;
        minus.q[j] -= eps;
        TriangleStepper<double> sp(plus, {}, Vec3::Zero()), sm(minus, {}, Vec3::Zero());
        sp.assemble(h);
        sm.assemble(h);
        const VectorX column = (host(sp.force()) - host(sm.force())) / (2 * eps);
        worst = std::max(worst, (column - k.col(static_cast<Eigen::Index>(j))).norm() / std::max(1.0, column.norm()));
    }
    CHECK(worst < 1e-5);
}

TEST_CASE("triangle stepper: rigid rotation of a stressed sheet is not damped by strain-rate dissipation",
          "[backend][triangle][good-damping]")
{
    // A sheet stretched by 5 % (stressed) and spinning rigidly about its
    // normal: the assembled damping force (f − f_undamped) is zero for
    // strain-rate dissipation (ε̇ = 0, 2018 Eq. 1) and dissipative for
    // Rayleigh damping (β K v ≠ 0 through the stress term, 2018 Eq. 11).
    const auto force = [](TriangleDamping damping) {
        TriangleModel<double> model = grid_model(6, damping, 1.05);
        for (int i = 0; i < model.node_count(); ++i) {
            model.v[3 * i] = -4.0 * model.q[3 * i + 1];
            model.v[3 * i + 1] = 4.0 * model.q[3 * i];
        }
        TriangleStepper<double> stepper(model, {}, Vec3::Zero());
        stepper.assemble(1e-3);
        return std::make_pair(host(stepper.force()), host(stepper.velocities()));
    };
    const auto [elastic, v] = force(TriangleDamping::none);
    const VectorX ours = force(TriangleDamping::strain_rate).first - elastic;
    const VectorX rayleigh = force(TriangleDamping::rayleigh).first - elastic;
    REQUIRE(elastic.norm() > 1.0);
    INFO("|f_d| strain-rate " << ours.norm() << ", Rayleigh " << rayleigh.norm() << ", |f_e| " << elastic.norm());
    CHECK(ours.norm() < 1e-12 * elastic.norm());
    CHECK(-rayleigh.dot(v) > 1e-3);  // Rayleigh dissipates power on a rigid motion
}

TEST_CASE("triangle stepper: a spinning sheet keeps its kinetic energy with strain-rate damping",
          "[backend][triangle][good-damping]")
{
    // Dynamic counterpart: the ratio to the undamped run after 0.5 s. The
    // sheet stretches a little under the centrifugal load and strain-rate
    // damping only acts on that (small) strain rate.
    const auto run = [](TriangleDamping damping) {
        TriangleModel<double> model = grid_model(6, damping, 1.0);
        const double omega = 4.0;
        for (int i = 0; i < model.node_count(); ++i) {
            model.v[3 * i] = -omega * model.q[3 * i + 1];
            model.v[3 * i + 1] = omega * model.q[3 * i];
        }
        weft::StepperOptions<double> options;
        options.newton_iterations = 12;
        options.newton_tolerance = 1e-5;
        options.pcg.tolerance = 1e-9;
        TriangleStepper<double> stepper(model, {}, Vec3::Zero(), options);
        const double ke0 = stepper.energies().kinetic;
        for (int s = 0; s < 100; ++s) {
            const weft::BackendStepReport r = stepper.step(5e-3);
            INFO("damping " << static_cast<int>(damping) << ", step " << s << ": " << r.message);
            REQUIRE(r.ok);
        }
        return stepper.energies().kinetic / ke0;
    };
    const double none = run(TriangleDamping::none);
    const double ours = run(TriangleDamping::strain_rate);
    INFO("KE ratio none " << none << ", strain-rate " << ours);
    CHECK(none > 0.5);
    CHECK(ours / none == Approx(1.0).epsilon(0.02));
}

TEST_CASE("triangle stepper: a free sheet in zero gravity keeps its linear momentum", "[backend][triangle][momentum]")
{
    for (const TriangleDamping damping : {TriangleDamping::none, TriangleDamping::strain_rate}) {
        TriangleModel<double> model = busy_sheet(damping);
        const VectorX p0 = linear_momentum(model, Eigen::Map<const VectorX>(model.v.data(), model.v.size()));
        weft::StepperOptions<double> options;
        options.pcg.tolerance = 1e-10;
        TriangleStepper<double> stepper(model, {}, Vec3::Zero(), options);
        for (int s = 0; s < 20; ++s) REQUIRE(stepper.step(2e-3).ok);
        const VectorX p1 = linear_momentum(model, host(stepper.velocities()));
        INFO("damping " << static_cast<int>(damping) << ": p0 " << p0.transpose() << ", p1 " << p1.transpose());
        REQUIRE(p0.norm() > 1e-3);
        CHECK((p1 - p0).norm() < 1e-8 * (1 + p0.norm()));
    }
}

TEST_CASE("triangle stepper: an undamped pinned sheet does not gain energy", "[backend][triangle][energy]")
{
    TriangleModel<double> model = grid_model(8, TriangleDamping::none);
    for (int c = 0; c < 3; ++c) {
        model.free_dof[3 * 0 + c] = 0;
        model.free_dof[3 * 7 + c] = 0;
    }
    const Vec3 gravity(0, -9.81, 0);  // hangs in its own plane from two corners, then swings
    TriangleStepper<double> stepper(model, {}, gravity);
    const auto total = [&]() {
        const weft::ElementEnergies<double> e = stepper.energies();
        return e.kinetic + e.elastic + e.gravity;
    };
    const double e0 = total();
    double previous = e0;
    int rises = 0;
    for (int s = 0; s < 60; ++s) {
        REQUIRE(stepper.step(2e-3).ok);
        const double e = total();
        if (e > previous + 1e-9 * std::abs(e0) + 1e-12) ++rises;
        previous = e;
    }
    CHECK(rises == 0);
    CHECK(stepper.energies().kinetic > 0);
}

TEST_CASE("triangle stepper: pins follow the targets set before each step", "[backend][triangle][pins]")
{
    // The two corners of one edge lifted at 0.5 m/s, one of them also on a
    // circle; the sheet falls under gravity and hangs from them. The one-step
    // scheme and full Newton.
    for (const int newton : {1, 8}) {
        TriangleModel<double> model = grid_model(8, TriangleDamping::strain_rate);
        const std::vector<int> pins = {0, 7};
        for (const int n : pins)
            for (int c = 0; c < 3; ++c) model.free_dof[3 * n + c] = 0;
        weft::StepperOptions<double> options;
        options.newton_iterations = newton;
        options.newton_tolerance = 1e-4;
        options.max_halvings = 4;
        TriangleStepper<double> stepper(model, {}, Vec3(0, 0, -9.81), options);
        const double h = 2e-3, lift = 0.5, radius = 0.02, period = 0.08;
        auto target = [&](int k, double t) {
            const int n = pins[static_cast<std::size_t>(k)];
            const double a = 2 * weft::Constants<double>::pi * t / period;
            const Vec3 x0(model.q[3 * n], model.q[3 * n + 1], model.q[3 * n + 2]);
            const Vec3 circle = k == 0 ? Vec3(radius * std::sin(a), 0, radius * (1 - std::cos(a))) : Vec3::Zero();
            return Vec3(x0 + Vec3(0, 0, lift * t) + circle);
        };
        double worst = 0;
        for (int step = 1; step <= 40; ++step) {
            const double t = step * h;
            stepper.set_pin_targets(pins, {target(0, t), target(1, t)}, h);
            const weft::BackendStepReport r = stepper.step(h);
            INFO("newton " << newton << " step " << step << ": " << r.message);
            REQUIRE(r.ok);
            const std::vector<double> q = weft::to_host(stepper.positions());
            for (int k = 0; k < 2; ++k) {
                const int n = pins[static_cast<std::size_t>(k)];
                worst = std::max(worst, (Vec3(q[3 * n], q[3 * n + 1], q[3 * n + 2]) - target(k, t)).norm());
            }
        }
        INFO("largest distance of a pin from its target " << worst << " m");
        CHECK(worst < 1e-12);
        const std::vector<double> q = weft::to_host(stepper.positions());
        const int far = model.node_count() - 1;
        CHECK(std::isfinite(q[3 * far + 2]));
        CHECK(q[3 * far + 2] < model.q[3 * far + 2] - 1e-3);  // the free edge fell
        CHECK_THROWS_WITH(stepper.set_pin_targets({far}, {Vec3::Zero()}, h), Catch::Contains("not pinned"));
    }
}

TEST_CASE("triangle stepper: the tabulated (GNATV) membrane steps and stiffens with strain",
          "[backend][triangle][tabulated]")
{
    // Warp much stiffer than weft: a square sheet hanging by one edge under
    // gravity along the weft stretches more than one hanging along the warp.
    const auto curve = [](const char* name, double scale) {
        return weft::make_tabulated_curve<double>(name, {0.0, 0.01, 0.02, 0.05},
                                                  {0.0, 2 * scale, 8 * scale, 40 * scale});
    };
    const weft::TabulatedMembraneDensity<double> density =
        weft::make_tabulated_membrane_density<double>(curve("warp", 100.0), curve("weft", 10.0), curve("shear", 5.0));
    const auto sag = [&](int axis) {
        TriangleMaterial<double> m = cloth_material(TriangleDamping::strain_rate);
        m.membrane = weft::MembraneModel::tabulated;
        const weft::TriangleMesh mesh = weft::make_triangle_grid(5, 5, 0.2, 0.2);
        TriangleModel<double> model = weft::build_triangle_model<double>(mesh, m, density);
        for (int i = 0; i < model.node_count(); ++i) {
            const bool top = axis == 0 ? model.q[3 * i] > 0.099 : model.q[3 * i + 1] > 0.099;
            if (top)
                for (int c = 0; c < 3; ++c) model.free_dof[3 * i + c] = 0;
        }
        Vec3 gravity = Vec3::Zero();
        gravity(axis) = -9.81 * 200;  // strong pull, well into the curves
        weft::StepperOptions<double> options;
        options.max_halvings = 4;
        TriangleStepper<double> stepper(model, {}, gravity, options);
        for (int s = 0; s < 200; ++s) REQUIRE(stepper.step(2e-3).ok);
        const VectorX q = host(stepper.positions());
        double lowest = 0;
        for (int i = 0; i < model.node_count(); ++i) lowest = std::min(lowest, q(3 * i + axis));
        return -0.1 - lowest;  // extension of the 0.2 m sheet
    };
    const double warp = sag(0);
    const double weft_ext = sag(1);
    INFO("extension along warp " << warp << " m, along weft " << weft_ext << " m");
    CHECK(warp > 0);
    CHECK(weft_ext > 1.5 * warp);
}

TEST_CASE("triangle stepper: a failed solve is reported and halving rescues it", "[backend][triangle]")
{
    TriangleModel<double> model = busy_sheet(TriangleDamping::strain_rate);
    weft::StepperOptions<double> options;
    options.pcg.max_iterations = 3;
    options.pcg.tolerance = 1e-12;
    TriangleStepper<double> failing(model, {}, Vec3(0, 0, -9.81), options);
    const weft::BackendStepReport r = failing.step(1e-2);
    CHECK_FALSE(r.ok);
    CHECK(r.message.find("PCG") != std::string::npos);
    // the state is undone
    CHECK((host(failing.positions()) - Eigen::Map<const VectorX>(model.q.data(), model.q.size())).norm() == 0.0);
}

TEST_CASE("triangle stepper: colliders hold the sheet up", "[backend][triangle][collider]")
{
    TriangleModel<double> model = grid_model(6, TriangleDamping::strain_rate);
    model.material.contact_offset = 1e-3;
    Collider<double> floor = weft::plane_collider<double>(Vec3(0, 0, -0.01), Vec3(0, 0, 1), 1e3, 0.0);
    TriangleStepper<double> stepper(model, {floor}, Vec3(0, 0, -9.81));
    for (int s = 0; s < 300; ++s) REQUIRE(stepper.step(2e-3).ok);
    const VectorX q = host(stepper.positions());
    double lowest = 1;
    for (int i = 0; i < model.node_count(); ++i) lowest = std::min(lowest, q(3 * i + 2));
    // The heaviest node's weight F = m g rests at the depth where the C²
    // penalty (collider_contact, onset δ = 0.1 × offset) balances it:
    // √(2δF/k) inside the onset, F/k + δ/2 beyond it.
    const double weight = *std::max_element(model.mass.begin(), model.mass.end()) * 9.81;
    const double k = 1e3, delta = 1e-4;
    const double rest = weight < 0.5 * k * delta ? std::sqrt(2 * delta * weight / k) : weight / k + 0.5 * delta;
    INFO("lowest node " << -0.01 + 1e-3 - lowest << " m deep; resting depth " << rest << " m");
    CHECK(lowest > -0.01 + 1e-3 - 1.05 * rest);
    CHECK(lowest < -0.01 + 1e-3);
}

TEST_CASE("triangle stepper: CHOLMOD's direct solves give the PCG steps, one-step and full Newton",
          "[backend][triangle][cholmod]")
{
    TriangleModel<double> model = busy_sheet(TriangleDamping::strain_rate);
    for (int c = 0; c < 3; ++c) model.free_dof[static_cast<std::size_t>(c)] = 0;  // node 0 pinned
    const Collider<double> floor = weft::plane_collider<double>(Vec3(0, 0, -0.04), Vec3(0, 0, 1), 1e3, 0.3);
    if (!weft::cholmod_available()) {
        weft::StepperOptions<double> options;
        options.linear = weft::LinearSolver::cholmod;
        CHECK_THROWS_WITH(TriangleStepper<double>(model, {floor}, Vec3(0, 0, -9.81), options),
                          Catch::Contains("solver.linear"));
        WARN("CHOLMOD is not in this build: only its refusal was checked");
        return;
    }
    int compared = 0;
    for (int newton : {1, 20}) {
        VectorX v[2];
        for (int k = 0; k < 2; ++k) {
            const weft::StepperOptions<double> options = weft_test::solver_comparison_options(
                newton, k == 0 ? weft::LinearSolver::pcg : weft::LinearSolver::cholmod);
            TriangleStepper<double> stepper(model, {floor}, Vec3(0, 0, -9.81), options);
            for (int s = 0; s < 3; ++s) {
                const weft::BackendStepReport r = stepper.step(2e-3);
                INFO("linear " << weft::to_string(options.linear) << ", Newton " << newton << ": " << r.message);
                REQUIRE(r.ok);
            }
            v[k] = host(stepper.velocities());
            if (k == 1) CHECK(stepper.direct_analyses() == 1);  // one pattern throughout
        }
        INFO("Newton " << newton << ": |dv| " << (v[1] - v[0]).lpNorm<Eigen::Infinity>() << " of "
                       << v[0].lpNorm<Eigen::Infinity>());
        REQUIRE(v[0].lpNorm<Eigen::Infinity>() > 0);
        CHECK((v[1] - v[0]).lpNorm<Eigen::Infinity>() <= 1e-7 * v[0].lpNorm<Eigen::Infinity>());
        ++compared;
    }
    REQUIRE(compared == 2);
}

TEST_CASE("triangle stepper: the multilevel preconditioner gives the block-Jacobi steps and reuses its hierarchy",
          "[backend][triangle][multilevel]")
{
    TriangleModel<double> model = busy_sheet(TriangleDamping::strain_rate);
    for (int c = 0; c < 3; ++c) model.free_dof[static_cast<std::size_t>(c)] = 0;  // node 0 pinned
    const Collider<double> floor = weft::plane_collider<double>(Vec3(0, 0, -0.04), Vec3(0, 0, 1), 1e3, 0.3);
    int compared = 0;
    for (int newton : {1, 20}) {
        // 0: block Jacobi; 1: multilevel (coarse values refreshed on growth,
        // the default); 2: multilevel with its coarse values refreshed for
        // every solve.
        VectorX v[3];
        for (int k = 0; k < 3; ++k) {
            int builds = 0, refreshes = 0, solves = 0;
            weft::StepperOptions<double> options =
                weft_test::solver_comparison_options(newton, weft::LinearSolver::pcg);
            if (k > 0) {
                options.pcg.preconditioner = weft::PcgPreconditioner::multilevel;
                options.multilevel.coarse_dofs = 30;  // a small sheet, still two levels or more
            }
            if (k == 2) options.multilevel.refresh = weft::MultilevelRefresh::every_prepare;
            TriangleStepper<double> stepper(model, {floor}, Vec3(0, 0, -9.81), options);
            for (int s = 0; s < 4; ++s) {
                const weft::BackendStepReport r = stepper.step(2e-3);
                INFO("variant " << k << ", Newton " << newton << ": " << r.message);
                REQUIRE(r.ok);
                builds += r.multilevel_builds;
                refreshes += r.multilevel_refreshes;
                solves += r.newton_iterations;
            }
            v[k] = host(stepper.velocities());
            INFO("variant " << k << ", Newton " << newton << ": " << builds << " builds, " << refreshes
                            << " refreshes for " << solves << " solves");
            if (k == 0) {
                CHECK(builds == 0);
                CHECK(refreshes == 0);
                continue;
            }
            CHECK(stepper.multilevel().levels() >= 2);
            CHECK(stepper.multilevel_builds() == builds);
            CHECK(stepper.multilevel().refreshes() == refreshes);
            CHECK(builds >= 1);
            CHECK(builds < solves);                           // one pattern throughout: the hierarchy is reused
            if (k == 2) CHECK(builds + refreshes >= solves);  // every solve after a build refreshes
            INFO("|dv| " << (v[k] - v[0]).lpNorm<Eigen::Infinity>() << " of " << v[0].lpNorm<Eigen::Infinity>());
            REQUIRE(v[0].lpNorm<Eigen::Infinity>() > 0);
            CHECK((v[k] - v[0]).lpNorm<Eigen::Infinity>() <= 1e-7 * v[0].lpNorm<Eigen::Infinity>());
            ++compared;
        }
    }
    REQUIRE(compared == 4);
    // Its settings are checked when the stepper is built.
    weft::StepperOptions<double> bad;
    bad.pcg.preconditioner = weft::PcgPreconditioner::multilevel;
    bad.multilevel.smoother_degree = 0;
    CHECK_THROWS_WITH(TriangleStepper<double>(model, {floor}, Vec3(0, 0, -9.81), bad),
                      Catch::Contains("smoother_degree") && Catch::Contains("0"));
}

TEST_CASE("triangle stepper: bad input is rejected with the field named", "[backend][triangle][errors]")
{
    TriangleModel<double> model = grid_model(3, TriangleDamping::none);
    {
        TriangleModel<double> bad = model;
        bad.mass.pop_back();
        CHECK_THROWS_WITH((TriangleStepper<double>(bad, {}, Vec3::Zero())), Catch::Contains("mass.size()"));
    }
    {
        TriangleModel<double> bad = model;
        bad.q[4] = std::nan("");
        CHECK_THROWS_WITH((TriangleStepper<double>(bad, {}, Vec3::Zero())), Catch::Contains("q: non-finite"));
    }
    {
        TriangleMaterial<double> m = cloth_material(TriangleDamping::none);
        m.areal_density = -1;
        CHECK_THROWS_WITH(weft::build_triangle_model<double>(weft::make_triangle_grid(3, 3, 1, 1), m),
                          Catch::Contains("material.density"));
        m = cloth_material(TriangleDamping::none);
        m.membrane = weft::MembraneModel::tabulated;
        CHECK_THROWS_WITH(weft::build_triangle_model<double>(weft::make_triangle_grid(3, 3, 1, 1), m),
                          Catch::Contains("tabulated"));
    }
    TriangleStepper<double> stepper(model, {}, Vec3::Zero());
    CHECK_THROWS_WITH(stepper.step(-1.0), Catch::Contains("time_step"));
}

TEST_CASE("triangle stepper: a step beyond max_speed fails, is undone, and names max_speed",
          "[backend][triangle][max-speed]")
{
    // A free, unstressed sheet in free fall: after a step of h every node
    // moves at g h (0.0981 m/s for h = 10 ms), whatever the substeps (to
    // the linear solve's tolerance, set tight below: the bending stiffness
    // in A keeps PCG from reaching the uniform solution in one iteration).
    const TriangleModel<double> model = grid_model(4, TriangleDamping::strain_rate);
    const double g = 9.81, h = 1e-2;
    const Vec3 gravity(0, 0, -g);
    const VectorX q0 = Eigen::Map<const VectorX>(model.q.data(), static_cast<Eigen::Index>(model.q.size()));
    const VectorX v0 = Eigen::Map<const VectorX>(model.v.data(), static_cast<Eigen::Index>(model.v.size()));
    REQUIRE(v0.lpNorm<Eigen::Infinity>() == 0.0);
    int checks = 0;
    {
        weft::StepperOptions<double> options;
        options.pcg.tolerance = 1e-10;
        options.max_speed = 0.6 * g * h;
        TriangleStepper<double> stepper(model, {}, gravity, options);
        const weft::BackendStepReport r = stepper.step(h);
        INFO(r.message);
        CHECK_FALSE(r.ok);
        CHECK_THAT(r.message, Catch::Contains("max_speed"));
        CHECK_THAT(r.message, Catch::Contains("time step 0.01"));
        CHECK(r.substeps == 0);
        CHECK(r.halvings == 0);
        // Undone: the state before the step, bit for bit.
        CHECK(host(stepper.positions()) == q0);
        CHECK(host(stepper.velocities()) == v0);
        // The failure is not sticky: with the bound raised the same stepper steps.
        weft::StepperOptions<double> relaxed = options;
        relaxed.max_speed = 2 * g * h;
        stepper.set_options(relaxed);
        const weft::BackendStepReport again = stepper.step(h);
        CHECK(again.ok);
        CHECK(host(stepper.velocities()).lpNorm<Eigen::Infinity>() == Approx(g * h).epsilon(1e-6));
        ++checks;
    }
    {
        // With the bound above g h the same step is ok.
        weft::StepperOptions<double> options;
        options.pcg.tolerance = 1e-10;
        options.max_speed = 1.05 * g * h;
        TriangleStepper<double> stepper(model, {}, gravity, options);
        const weft::BackendStepReport r = stepper.step(h);
        INFO(r.message);
        CHECK(r.ok);
        CHECK(r.message.empty());
        CHECK(r.substeps == 1);
        const VectorX v = host(stepper.velocities());
        CHECK(v.lpNorm<Eigen::Infinity>() == Approx(g * h).epsilon(1e-6));
        CHECK(v.lpNorm<Eigen::Infinity>() <= options.max_speed);
        ++checks;
    }
    {
        // Halving is tried when allowed: the first half step (g h / 2) passes,
        // the second cannot (it ends at g h again, at every depth).
        weft::StepperOptions<double> options;
        options.pcg.tolerance = 1e-10;
        options.max_speed = 0.6 * g * h;
        options.max_halvings = 3;
        TriangleStepper<double> stepper(model, {}, gravity, options);
        const weft::BackendStepReport r = stepper.step(h);
        INFO(r.message);
        CHECK_FALSE(r.ok);
        CHECK_THAT(r.message, Catch::Contains("max_speed"));
        CHECK(r.halvings == 3);
        CHECK_THAT(r.message, Catch::Contains("after 3 halvings"));
        CHECK(r.substeps >= 1);  // the substeps before the failure were accepted
        CHECK(host(stepper.velocities()).lpNorm<Eigen::Infinity>() <= options.max_speed);
        ++checks;
    }
    {
        // A sheet already moving faster than the bound fails at every depth;
        // every attempt is undone, so the state is the initial one.
        TriangleModel<double> fast = model;
        for (int i = 0; i < fast.node_count(); ++i) fast.v[3 * i] = 2.0;
        weft::StepperOptions<double> options;
        options.max_speed = 1.0;
        options.max_halvings = 2;
        TriangleStepper<double> stepper(fast, {}, Vec3::Zero(), options);
        const weft::BackendStepReport r = stepper.step(1e-3);
        INFO(r.message);
        CHECK_FALSE(r.ok);
        CHECK_THAT(r.message, Catch::Contains("max_speed"));
        CHECK_THAT(r.message, Catch::Contains("after 2 halvings"));
        CHECK(r.halvings == 2);
        CHECK(r.substeps == 0);
        CHECK(host(stepper.positions()) == q0);
        CHECK(host(stepper.velocities()) ==
              Eigen::Map<const VectorX>(fast.v.data(), static_cast<Eigen::Index>(fast.v.size())));
        ++checks;
    }
    {
        // The default bound is 1000 m/s: a rigid translation at 900 m/s steps,
        // at 1100 m/s it fails; +inf switches the check off.
        CHECK(weft::StepperOptions<double>{}.max_speed == 1000.0);
        for (const double speed : {900.0, 1100.0}) {
            TriangleModel<double> fast = model;
            for (int i = 0; i < fast.node_count(); ++i) fast.v[3 * i + 1] = speed;
            TriangleStepper<double> stepper(fast, {}, Vec3::Zero());
            const weft::BackendStepReport r = stepper.step(1e-3);
            INFO(speed << " m/s: " << r.message);
            CHECK(r.ok == (speed < 1000.0));
            if (!r.ok) CHECK_THAT(r.message, Catch::Contains("max_speed"));
            weft::StepperOptions<double> off;
            off.max_speed = std::numeric_limits<double>::infinity();
            TriangleStepper<double> unbounded(fast, {}, Vec3::Zero(), off);
            CHECK(unbounded.step(1e-3).ok);
        }
        ++checks;
    }
    REQUIRE(checks == 5);
}

TEST_CASE("triangle stepper: bad max_speed and max_retries are rejected with the field named",
          "[backend][triangle][errors][max-speed]")
{
    const TriangleModel<double> model = grid_model(3, TriangleDamping::none);
    int checks = 0;
    for (const double bad : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
        weft::StepperOptions<double> options;
        options.max_speed = bad;
        CHECK_THROWS_AS((TriangleStepper<double>(model, {}, Vec3::Zero(), options)), weft::InvalidInput);
        CHECK_THROWS_WITH((TriangleStepper<double>(model, {}, Vec3::Zero(), options)),
                          Catch::Contains("solver.max_speed"));
        ++checks;
    }
    {
        weft::StepperOptions<double> options;
        options.max_retries = -1;
        CHECK_THROWS_AS((TriangleStepper<double>(model, {}, Vec3::Zero(), options)), weft::InvalidInput);
        CHECK_THROWS_WITH((TriangleStepper<double>(model, {}, Vec3::Zero(), options)),
                          Catch::Contains("solver.max_retries = -1"));
        options.max_retries = 0;  // the boundary is allowed
        CHECK_NOTHROW(TriangleStepper<double>(model, {}, Vec3::Zero(), options));
        options.max_retries = 4;
        options.max_speed = 1e-9;  // tiny but positive is allowed
        CHECK_NOTHROW(TriangleStepper<double>(model, {}, Vec3::Zero(), options));
        ++checks;
    }
    REQUIRE(checks == 4);
}

TEST_CASE("triangle stepper: full Newton on a swinging sheet converges in a few iterations and keeps the swing",
          "[backend][triangle][newton][good-damping]")
{
    // stvk_swing.json in small: a sheet pinned along one edge swings down
    // under gravity, strain-rate damping with β = 0.15 s. With the damping
    // Jacobian of ∇ε(q)·v (non-symmetric part dropped), Newton was linear
    // and halved most steps; the incremental rate makes it exact.
    const auto run = [](TriangleDamping damping, double& iterations, int& halvings, int& cuts) {
        TriangleModel<double> model = grid_model(10, damping, 1.0);
        for (int i = 0; i < model.node_count(); ++i)
            if (model.q[3 * i + 1] > 0.5 - 1e-9)
                for (int k = 0; k < 3; ++k) model.free_dof[3 * i + k] = 0;
        weft::StepperOptions<double> options;
        options.newton_iterations = 6;
        options.newton_tolerance = 1e-4;
        options.max_halvings = 4;
        TriangleStepper<double> stepper(model, {}, Vec3(0, 0, -9.81), options);
        double peak = 0;
        long newton = 0;
        halvings = cuts = 0;
        const int steps = 150;
        for (int s = 0; s < steps; ++s) {
            const weft::BackendStepReport r = stepper.step(2e-3);
            INFO("step " << s << ": " << r.message);
            REQUIRE(r.ok);
            newton += r.newton_iterations;
            halvings += r.halvings > 0 ? 1 : 0;
            cuts += r.line_search_cuts;
            peak = std::max(peak, stepper.energies().kinetic);
        }
        iterations = double(newton) / steps;
        return peak;
    };
    double it_none = 0, it_ours = 0;
    int halved_none = 0, halved_ours = 0, cuts_none = 0, cuts_ours = 0;
    const double none = run(TriangleDamping::none, it_none, halved_none, cuts_none);
    const double ours = run(TriangleDamping::strain_rate, it_ours, halved_ours, cuts_ours);
    INFO("peak KE none " << none << ", strain-rate " << ours << "; Newton/step " << it_none << ", " << it_ours
                         << "; halved steps " << halved_none << ", " << halved_ours << "; cuts " << cuts_none << ", "
                         << cuts_ours);
    REQUIRE(none > 0.01);
    CHECK(ours >= 0.9 * none);
    CHECK(it_ours <= 5.0);
    CHECK(halved_ours == 0);
    CHECK(it_none <= 5.0);
}

TEST_CASE("triangle stepper: full Newton leaves a collider's penalty onset in a few iterations",
          "[backend][triangle][newton][collider]")
{
    // A sheet at rest 0.9 δ deep in a stiff plane's onset (δ = 0.1 × offset):
    // the penalty throws it out, and the step ends about 60 times shallower.
    // The onset's force k d²/(2δ) has a double root at d = 0, so linear
    // updates only halve the depth each iteration (6–7 iterations here);
    // the onset correction keeps F'' in each node's normal equation.
    TriangleModel<double> model = grid_model(6, TriangleDamping::strain_rate);
    const double offset = 1e-3, onset = weft::collider_onset_fraction * offset, k = 1e7;
    model.material.contact_offset = offset;
    for (int i = 0; i < model.node_count(); ++i) model.q[3 * i + 2] = offset - 0.9 * onset;
    Collider<double> floor = weft::plane_collider<double>(Vec3(0, 0, 0), Vec3(0, 0, 1), k, 0.0);
    weft::StepperOptions<double> options;
    options.newton_iterations = 20;
    options.newton_tolerance = 1e-8;
    TriangleStepper<double> stepper(model, {floor}, Vec3(0, 0, -9.81), options);
    const weft::BackendStepReport r = stepper.step(2e-3);
    INFO(r.message);
    REQUIRE(r.ok);
    CHECK(r.halvings == 0);
    const VectorX q = host(stepper.positions());
    double deepest = 0;
    for (int i = 0; i < model.node_count(); ++i) deepest = std::max(deepest, offset - q(3 * i + 2));
    INFO("Newton iterations " << r.newton_iterations << ", deepest node " << deepest << " m (onset " << onset << ")");
    CHECK(deepest < 0.05 * onset);  // thrown out of most of the onset within the step
    CHECK(deepest > 0.0);           // and still in contact
    CHECK(r.newton_iterations <= 4);
}

TEST_CASE("triangle stepper: full Newton converges on a sheet sliding to a stop on a plane with friction",
          "[backend][triangle][newton][collider]")
{
    // A sheet resting on a plane with μ = 0.3, launched at 0.5 m/s along x:
    // friction decelerates it at μ g (the normal force is its weight) until it
    // sticks. The friction is lagged at the step start and differentiated
    // exactly, and the line search also accepts a decrease of the (convex)
    // incremental potential, so Newton converges through the stop.
    TriangleModel<double> model = grid_model(6, TriangleDamping::strain_rate);
    model.material.contact_offset = 1e-3;
    const double k = 1e3, mu = 0.3, g = 9.81, v0 = 0.5;
    const double weight = model.material.areal_density * 1.0 * g;  // 1 m² sheet
    for (int i = 0; i < model.node_count(); ++i) {
        model.q[3 * i + 2] = 1e-3 - weight / (k * model.node_count());  // about the resting depth
        model.v[3 * i] = v0;
    }
    Collider<double> floor = weft::plane_collider<double>(Vec3(0, 0, 0), Vec3(0, 0, 1), k, mu);
    weft::StepperOptions<double> options;
    options.newton_iterations = 8;
    options.newton_tolerance = 1e-5;
    TriangleStepper<double> stepper(model, {floor}, Vec3(0, 0, -g), options);
    const double h = 2e-3;
    long newton = 0;
    int steps = 0, halved = 0, slowest = 0;
    double vx_mid = 0;
    for (; steps < 120; ++steps) {
        const weft::BackendStepReport r = stepper.step(h);
        INFO("step " << steps << ": " << r.message);
        REQUIRE(r.ok);
        halved += r.halvings > 0 ? 1 : 0;
        slowest = std::max(slowest, r.newton_iterations);
        newton += r.newton_iterations;
        if (steps == 24) vx_mid = host(stepper.velocities())(0);
    }
    INFO("vx after 0.05 s " << vx_mid << ", Newton/step " << double(newton) / steps << ", at most " << slowest
                            << ", halved steps " << halved);
    CHECK(halved == 0);
    CHECK(double(newton) / steps <= 5.0);
    // After 25 steps (0.05 s): v = v0 − μ g t while sliding.
    CHECK(vx_mid == Approx(v0 - mu * g * 0.05).epsilon(0.05));
    // Stopped by t = v0/(μ g) ≈ 0.17 s, at rest at 0.24 s.
    const VectorX v = host(stepper.velocities());
    CHECK(v.cwiseAbs().maxCoeff() < 1e-3);
}

namespace {

/// A cantilever: an nx × ny grid of spacing Δ along x from −Δ to L, both
/// columns at x ≤ 0 held (a clamp at x = 0), loaded by its weight q = ρh g.
/// Runs backward Euler with large steps (which damps every mode) to the
/// static state and returns the mean deflection of the tip column and of its
/// middle third across the width.
struct CantileverResult {
    double tip_mean, tip_middle;
    int steps;
};

CantileverResult cantilever(double length, double width, int columns_per_length, double rigidity, double poisson)
{
    const double spacing = length / columns_per_length;
    const int nx = columns_per_length + 2;
    const int ny = static_cast<int>(std::lround(width / spacing)) + 1;
    const weft::TriangleMesh mesh = weft::make_triangle_grid(nx, ny, length + spacing, width);
    TriangleMaterial<double> material;
    material.stvk = weft::StVKDensity<double>{0.0, 5e3};  // a stiff membrane; it does not enter the small deflection
    material.areal_density = 1.0;                         // q = 9.81 N/m²
    material.bending_stiffness = rigidity;
    material.bending_poisson = poisson;
    TriangleModel<double> model = weft::build_triangle_model<double>(mesh, material);
    const double clamp_x = -0.5 * (length + spacing) + spacing;
    for (int i = 0; i < model.node_count(); ++i)
        if (model.q[3 * i] < clamp_x + 1e-9)
            for (int k = 0; k < 3; ++k) model.free_dof[3 * i + k] = 0;
    weft::StepperOptions<double> options;
    options.pcg.tolerance = 1e-10;
    options.pcg.max_iterations = 20000;
    if (weft::cholmod_available()) options.linear = weft::LinearSolver::cholmod;
    TriangleStepper<double> stepper(model, {}, Vec3(0, 0, -9.81), options);
    CantileverResult out{0, 0, 0};
    for (; out.steps < 400; ++out.steps) {
        const weft::BackendStepReport r = stepper.step(0.02);
        INFO("step " << out.steps << ": " << r.message);
        REQUIRE(r.ok);
        if (out.steps > 20 && host(stepper.velocities()).lpNorm<Eigen::Infinity>() < 1e-9) break;
    }
    const VectorX q = host(stepper.positions());
    int tip = 0, middle = 0;
    const double tip_x = 0.5 * (length + spacing);
    for (int i = 0; i < model.node_count(); ++i) {
        if (model.q[3 * i] < tip_x - 1e-9) continue;
        out.tip_mean -= q(3 * i + 2);
        ++tip;
        if (std::abs(model.q[3 * i + 1]) <= width / 6 + 1e-9) {
            out.tip_middle -= q(3 * i + 2);
            ++middle;
        }
    }
    REQUIRE(tip == ny);
    REQUIRE(middle > 0);
    out.tip_mean /= tip;
    out.tip_middle /= middle;
    return out;
}

}  // namespace

TEST_CASE("triangle stepper: a clamped strip sags by q L^4 / 8 D under its weight (plate bending)",
          "[backend][triangle][plate][cantilever]")
{
    // L = 0.1 m, D = 0.0125 N·m, q = 9.81 N/m²: δ = q L⁴ / 8 D = 9.81 mm (10 % of L).
    const double length = 0.1, rigidity = 0.0125, q = 9.81;
    const double expected = q * std::pow(length, 4) / (8 * rigidity);
    const CantileverResult coarse = cantilever(length, 0.02, 20, rigidity, 0.0);
    const CantileverResult fine = cantilever(length, 0.02, 40, rigidity, 0.0);
    INFO("tip deflection " << coarse.tip_mean << " (20 columns, " << coarse.steps << " steps), " << fine.tip_mean
                           << " (40 columns, " << fine.steps << " steps); beam theory " << expected);
    CHECK(std::abs(fine.tip_mean / expected - 1) < 0.10);
    CHECK(std::abs(fine.tip_mean / expected - 1) < std::abs(coarse.tip_mean / expected - 1));
    // A wide plate with ν = 0.3 bends cylindrically in its middle, with the plate's D = E h³ / 12 (1 − ν²).
    const CantileverResult wide = cantilever(length, 0.4, 20, rigidity, 0.3);
    INFO("wide plate, nu = 0.3: middle tip deflection " << wide.tip_middle << " (" << wide.steps << " steps)");
    CHECK(std::abs(wide.tip_middle / expected - 1) < 0.10);
}

namespace {

/// A 60° section of a cylinder of radius 0.2 m and length 0.3 m, as an OBJ
/// without texture coordinates (each triangle flattened from its 3D shape).
weft::TriangleMesh cylinder_section_obj()
{
    std::ostringstream obj;
    const int na = 13, nl = 9;
    for (int j = 0; j < nl; ++j)
        for (int i = 0; i < na; ++i) {
            const double a = (i - (na - 1) / 2.0) / (na - 1) * (3.14159265358979 / 3);
            obj << "v " << 0.2 * std::sin(a) << " " << 0.3 * j / (nl - 1) << " " << 0.2 * (1 - std::cos(a)) << "\n";
        }
    for (int j = 0; j + 1 < nl; ++j)
        for (int i = 0; i + 1 < na; ++i) {
            const int a = j * na + i + 1, b = a + 1, c = a + na, d = c + 1;
            obj << "f " << a << " " << b << " " << d << "\nf " << a << " " << d << " " << c << "\n";
        }
    std::istringstream in(obj.str());
    return weft::parse_obj_mesh(in, "cylinder_section.obj");
}

}  // namespace

TEST_CASE("triangle stepper: a curved rest shape from a mesh stays at rest with no load, a flat one springs open",
          "[backend][triangle][plate][rest-shape]")
{
    const weft::TriangleMesh mesh = cylinder_section_obj();
    int checks = 0;
    for (const auto bending : {weft::BendingModel::plate, weft::BendingModel::dihedral}) {
        double moved[2] = {0, 0};
        for (const auto rest : {weft::TriangleRestShape::mesh, weft::TriangleRestShape::flat}) {
            TriangleMaterial<double> material = cloth_material(TriangleDamping::none);
            material.bending = bending;
            material.bending_stiffness = 1e-3;
            const TriangleModel<double> model =
                weft::build_triangle_model<double>(mesh, material, std::nullopt, {}, rest);
            REQUIRE((bending == weft::BendingModel::plate ? model.plates.size() : model.hinges.size()) > 0);
            TriangleStepper<double> stepper(model, {}, Vec3(0, 0, 0));
            stepper.assemble(1e-3);
            const double force = host(stepper.force()).lpNorm<Eigen::Infinity>();
            for (int s = 0; s < 20; ++s) REQUIRE(stepper.step(2e-3).ok);
            const VectorX q0 = Eigen::Map<const VectorX>(model.q.data(), static_cast<Eigen::Index>(model.q.size()));
            moved[rest == weft::TriangleRestShape::flat] = (host(stepper.positions()) - q0).lpNorm<Eigen::Infinity>();
            INFO((bending == weft::BendingModel::plate ? "plate" : "dihedral")
                 << (rest == weft::TriangleRestShape::mesh ? ", mesh rest" : ", flat rest") << ": force " << force
                 << " N, moved " << moved[rest == weft::TriangleRestShape::flat] << " m");
            if (rest == weft::TriangleRestShape::mesh) {
                CHECK(force < 1e-9);
                CHECK(moved[0] < 1e-9);
            } else {
                CHECK(force > 1e-4);
            }
            ++checks;
        }
        CHECK(moved[1] > 1e-4);
    }
    REQUIRE(checks == 4);
}
