// The yarn stepper compiled by nvcc and run on the GPU (the same source also
// runs on CPU threads as ctest device.yarn_stepper.omp): a stressed woven patch
// with every term (stretch, bending, shear, friction, collider, gravity,
// strain-rate damping) is assembled on the device and compared with the Eigen
// reference path on the host (the oracle of the OpenMP tests too), then
// stepped and compared with the reference step. Without a CUDA device the
// test says so and exits with code 77, which ctest reports as skipped.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#ifdef __CUDACC__
#include <cuda_runtime.h>
#endif

#include <weft/backend/yarn_stepper.hpp>
#include <weft/model/woven.hpp>
#include <weft/solver/eigen_yarn_system.hpp>

namespace {

int failures = 0;
int checks = 0;

void check(bool ok, const char* what, double value, double limit)
{
    ++checks;
    if (!ok) {
        ++failures;
        std::printf("FAILED: %s: %.3e (limit %.3e)\n", what, value, limit);
    } else {
        std::printf("ok: %s: %.3e (limit %.3e)\n", what, value, limit);
    }
}

weft::YarnModel<double> patch(std::vector<weft::Collider<double>>& colliders)
{
    weft::WovenPatch p;
    p.nx = 9;
    p.ny = 8;
    weft::YarnModel<double> m;
    m.material.linear_density = p.density * weft::Constants<double>::pi * p.radius * p.radius;
    m.material.stretch_stiffness = 500;
    m.material.bending_stiffness = 1e-5;
    m.material.shear_stiffness = 1e-4;
    m.material.damping = weft::DampingModel::strain_rate;
    m.material.stretch_damping = 3e-6;
    m.material.bending_damping = 1e-12;
    m.material.shear_damping = 1e-8;
    m.material.friction_coefficient = 0.3;
    m.material.anchor_stiffness = 5e5;
    m.material.normal_force = 5;
    weft::add_woven_patch(m, p);
    for (int n = 0; n < m.node_count(); ++n) {
        for (int k = 0; k < 3; ++k) m.q[5 * n + k] += 2e-5 * std::sin(1.7 * n + 2.3 * k);
        for (int k = 0; k < 3; ++k) m.v[5 * n + k] = 0.01 * std::cos(0.9 * n + 1.1 * k);
    }
    weft::pin_nodes(m, weft::woven_node_set(p, 0, "top-edge"));
    for (std::size_t i = 0; i < m.v.size(); ++i)
        if (!m.free_dof[i]) m.v[i] = 0;
    colliders = {weft::sphere_collider(weft::Vec3<double>(4e-3, 3e-3, -1.95e-3), 2e-3, 1e4, 0.3)};
    return m;
}

}  // namespace

int main()
{
#ifdef __CUDACC__  // built for CPU threads too (tests/CMakeLists.txt), where this check is left out
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("SKIPPED: no CUDA device found; the yarn stepper was compiled by nvcc but not run\n");
        return 77;
    }
    std::printf("backend: CUDA (the GPU)\n");
#else
    std::printf("backend: CPU threads (this source built without nvcc; the device check is left out)\n");
#endif
    std::vector<weft::Collider<double>> colliders;
    const weft::YarnModel<double> model = patch(colliders);
    const weft::Vec3<double> g(0, 0, -9.81);
    const double h = 1e-3;
    weft::YarnStepperOptions<double> options;
    options.newton_iterations = 1;  // the reference is the one-step scheme's system and step
    options.pcg.tolerance = 1e-12;
    options.pcg.max_iterations = 20000;
    weft::YarnStepper<double> stepper(model, colliders, g, options);
    stepper.assemble(h);
    const weft::EigenYarnSystem<double> ref = weft::assemble_yarn_system_eigen<double>(model, colliders, g, h);
    const Eigen::MatrixXd a = Eigen::MatrixXd(weft::to_eigen(stepper.matrix()));
    const Eigen::MatrixXd a_ref = Eigen::MatrixXd(ref.a);
    const std::vector<double> b = weft::to_host(stepper.rhs());
    double db = 0;
    for (std::size_t i = 0; i < b.size(); ++i) db = std::max(db, std::abs(b[i] - ref.b(i)));
    check((a - a_ref).norm() <= 1e-12 * a_ref.norm(), "|A_backend - A_ref| / |A_ref|",
          (a - a_ref).norm() / a_ref.norm(), 1e-12);
    check(db <= 1e-12 * ref.b.cwiseAbs().maxCoeff(), "max |b_backend - b_ref| / max |b_ref|",
          db / ref.b.cwiseAbs().maxCoeff(), 1e-12);

    const weft::YarnStepReport r = stepper.step(h);
    check(r.ok, "backend step converged", r.pcg_residual, 1e-12);
    weft::YarnModel<double> host = model;
    weft::step_backward_euler_eigen<double>(host, colliders, g, h, 1e-12, 20000);
    weft::YarnModel<double> gpu = model;
    stepper.download(gpu);
    double dv = 0, scale = 0;
    for (std::size_t i = 0; i < gpu.v.size(); ++i) {
        dv = std::max(dv, std::abs(gpu.v[i] - host.v[i]));
        scale = std::max(scale, std::abs(host.v[i] - model.v[i]));
    }
    check(scale > 0 && dv <= 1e-8 * scale, "max |v_backend - v_ref| / max |v_ref - v0|", scale > 0 ? dv / scale : 1.0,
          1e-8);
    std::printf("%d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
