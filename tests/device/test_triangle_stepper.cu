// The triangle stepper compiled by nvcc and run on the GPU (the same source
// also runs on CPU threads as ctest device.triangle_stepper.omp): a bent, moving
// StVK sheet and a tabulated (GNATV) sheet, with plate bending (the default)
// and with dihedral hinges, are assembled on the device and compared with a
// host assembly of the same element functions (dense A, b),
// then stepped; the step must converge and keep every value finite. Without a
// CUDA device the test says so and exits with code 77 (ctest: skipped).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#ifdef __CUDACC__
#include <cuda_runtime.h>
#endif

#include <weft/backend/triangle_stepper.hpp>

namespace {

int failures = 0;
int checks = 0;

void check(bool ok, const char* what, double value, double limit)
{
    ++checks;
    if (!ok) ++failures;
    std::printf("%s: %s: %.3e (limit %.3e)\n", ok ? "ok" : "FAILED", what, value, limit);
}

weft::TriangleModel<double> sheet(bool tabulated, weft::BendingModel bending = weft::BendingModel::plate)
{
    weft::TriangleMaterial<double> m;
    m.bending = bending;
    m.stvk = weft::StVKDensity<double>{200.0, 200.0};
    m.areal_density = 0.2;
    m.bending_stiffness = 1e-4;
    m.damping = weft::TriangleDamping::strain_rate;
    m.membrane_damping = weft::StVKDensity<double>{30.0, 30.0};
    m.bending_damping = 1e-5;
    std::optional<weft::TabulatedMembraneDensity<double>> density;
    if (tabulated) {
        m.membrane = weft::MembraneModel::tabulated;
        const auto curve = [](const char* name, double s) {
            return weft::make_tabulated_curve<double>(name, {0.0, 0.01, 0.03, 0.06}, {0.0, s, 5 * s, 15 * s});
        };
        density =
            weft::make_tabulated_membrane_density<double>(curve("warp", 4.0), curve("weft", 2.0), curve("shear", 0.5));
    }
    const weft::TriangleMesh mesh = weft::make_triangle_grid(8, 7, 0.5, 0.4);
    weft::TriangleModel<double> model = weft::build_triangle_model<double>(mesh, m, density);
    for (int i = 0; i < model.node_count(); ++i) {
        model.q[3 * i] *= 1.02;
        model.q[3 * i + 2] = 0.02 * std::sin(5.0 * model.q[3 * i]) + 1e-3 * std::cos(1.3 * i);
        for (int k = 0; k < 3; ++k) model.v[3 * i + k] = 0.05 * std::sin(0.7 * i + 1.9 * k);
    }
    for (int c = 0; c < 3; ++c) model.free_dof[c] = 0;
    model.v[0] = model.v[1] = model.v[2] = 0;
    return model;
}

/// Dense A and b assembled on the host from the same element functions.
void host_system(const weft::TriangleModel<double>& model, const weft::Vec3<double>& g, double h, Eigen::MatrixXd& a,
                 Eigen::VectorXd& b)
{
    const int n = 3 * model.node_count();
    a = Eigen::MatrixXd::Zero(n, n);
    b = Eigen::VectorXd::Zero(n);
    const auto add = [&](const auto& blocks, const int* nodes, int count) {
        for (int i = 0; i < count; ++i) {
            b.segment<3>(3 * nodes[i]) += blocks.b[i];
            for (int j = 0; j < count; ++j) a.block<3, 3>(3 * nodes[i], 3 * nodes[j]) += blocks.a[i][j];
        }
    };
    weft::ElementEnergies<double> e;
    for (const auto& t : model.triangles) {
        weft::NodeBlocks<double, 3, 3> blocks;
        blocks.set_zero();
        if (model.material.membrane == weft::MembraneModel::tabulated)
            weft::evaluate_triangle_membrane<double>(model.q.data(), model.v.data(), t, model.material,
                                                     *model.tabulated, h, blocks, e);
        else
            weft::evaluate_triangle_membrane<double>(model.q.data(), model.v.data(), t, model.material,
                                                     model.material.stvk, h, blocks, e);
        add(blocks, t.nodes, 3);
    }
    for (const auto& hinge : model.hinges) {
        weft::NodeBlocks<double, 4, 3> blocks;
        blocks.set_zero();
        weft::evaluate_triangle_hinge<double>(model.q.data(), model.v.data(), hinge, model.material, h, blocks, e);
        add(blocks, hinge.nodes, 4);
    }
    // Plate bending (the default bending model): a curvature stencil per
    // triangle; its unused slots repeat a node with zero weights.
    for (const auto& plate : model.plates) {
        weft::NodeBlocks<double, weft::curvature_stencil_nodes, 3> blocks;
        blocks.set_zero();
        weft::evaluate_triangle_plate<double>(model.q.data(), model.v.data(), plate, model.material, h, blocks, e);
        add(blocks, plate.nodes, weft::curvature_stencil_nodes);
    }
    for (int i = 0; i < model.node_count(); ++i) {
        weft::NodeBlocks<double, 1, 3> blocks;
        blocks.set_zero();
        weft::evaluate_triangle_node<double>(model.q.data(), model.v.data(), model.mass[i], i, g, nullptr, 0, 0.0, h,
                                             blocks, e);
        add(blocks, &i, 1);
    }
}

}  // namespace

int main()
{
#ifdef __CUDACC__  // built for CPU threads too (tests/CMakeLists.txt), where this check is left out
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("SKIPPED: no CUDA device found; the triangle stepper was compiled by nvcc but not run\n");
        return 77;
    }
    std::printf("backend: CUDA (the GPU)\n");
#else
    std::printf("backend: CPU threads (this source built without nvcc; the device check is left out)\n");
#endif
    const weft::Vec3<double> g(0, 0, -9.81);
    const double h = 2e-3;
    for (const bool tabulated : {false, true})
        for (const weft::BendingModel bending : {weft::BendingModel::plate, weft::BendingModel::dihedral}) {
            const bool plate = bending == weft::BendingModel::plate;
            std::printf("%s membrane, %s bending\n", tabulated ? "tabulated" : "StVK", plate ? "plate" : "dihedral");
            const weft::TriangleModel<double> model = sheet(tabulated, bending);
            const std::size_t bending_elements = plate ? model.plates.size() : model.hinges.size();
            check(bending_elements > 0 && (plate ? model.hinges.empty() : model.plates.empty()),
                  "bending elements of the model (plates or hinges, not both)", double(bending_elements), 1.0);
            weft::StepperOptions<double> options;
            options.newton_iterations = 1;  // the reference is the one-step scheme's system and step
            options.pcg.tolerance = 1e-10;
            weft::TriangleStepper<double> stepper(model, {}, g, options);
            stepper.assemble(h);
            Eigen::MatrixXd a_ref;
            Eigen::VectorXd b_ref;
            host_system(model, g, h, a_ref, b_ref);
            const Eigen::MatrixXd a = Eigen::MatrixXd(weft::to_eigen(stepper.matrix()));
            const std::vector<double> b = weft::to_host(stepper.rhs());
            double db = 0;
            for (std::size_t i = 0; i < b.size(); ++i)
                db = std::max(db, std::abs(b[i] - b_ref(static_cast<Eigen::Index>(i))));
            check((a - a_ref).norm() <= 1e-12 * a_ref.norm(), "|A_backend - A_host| / |A_host|",
                  (a - a_ref).norm() / a_ref.norm(), 1e-12);
            check(db <= 1e-12 * b_ref.cwiseAbs().maxCoeff(), "max |b_backend - b_host| / max |b_host|",
                  db / b_ref.cwiseAbs().maxCoeff(), 1e-12);
            for (int s = 0; s < 5; ++s) {
                const weft::BackendStepReport r = stepper.step(h);
                check(r.ok, "backend step converged (relative PCG residual)", r.pcg_residual, 1e-10);
            }
            const std::vector<double> q = weft::to_host(stepper.positions());
            bool finite = true;
            for (const double x : q) finite = finite && std::isfinite(x);
            check(finite, "positions finite after 5 steps", finite ? 0.0 : 1.0, 0.0);
        }
    {
        // The multilevel preconditioner (setup on the host, V-cycle on the
        // device) steps the StVK sheet to the block-Jacobi positions.
        std::printf("StVK membrane, multilevel preconditioner against block Jacobi\n");
        const weft::TriangleModel<double> model = sheet(false);
        std::vector<double> q[2];
        for (int k = 0; k < 2; ++k) {
            weft::StepperOptions<double> options;
            options.newton_iterations = 1;  // the reference is the one-step scheme's system and step
            options.pcg.tolerance = 1e-10;
            if (k == 1) {
                options.pcg.preconditioner = weft::PcgPreconditioner::multilevel;
                options.multilevel.coarse_dofs = 30;  // two levels or more on this small sheet
            }
            weft::TriangleStepper<double> stepper(model, {}, g, options);
            for (int s = 0; s < 5; ++s) {
                const weft::BackendStepReport r = stepper.step(h);
                check(r.ok,
                      k == 1 ? "backend multilevel step converged (relative PCG residual)"
                             : "backend block-Jacobi step converged (relative PCG residual)",
                      r.pcg_residual, 1e-10);
            }
            if (k == 1)
                check(stepper.multilevel().levels() >= 2, "multilevel levels", stepper.multilevel().levels(), 2);
            q[k] = weft::to_host(stepper.positions());
        }
        double dq = 0, scale = 0;
        for (std::size_t i = 0; i < q[0].size(); ++i) {
            dq = std::max(dq, std::abs(q[1][i] - q[0][i]));
            scale = std::max(scale, std::abs(q[0][i] - model.q[i]));
        }
        check(scale > 0 && dq <= 1e-6 * scale, "max |q_multilevel - q_jacobi| / max |q - q0|", dq / scale, 1e-6);
    }
    std::printf("%d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
