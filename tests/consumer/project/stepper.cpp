// A program that uses the Thrust backend as a user's project would: builds a
// 12 × 12 woven patch in code, pins two corners and lifts them along a path
// set before every step, steps it 20 times under gravity with
// weft::YarnStepper, and checks that the pins followed their path while the
// free corner fell. Built with weft::omp (CPU threads), or as stepper.cu with
// weft::cuda where the CUDA language is enabled. docs/api.md shows this file.
#include <cmath>
#include <cstdio>
#include <vector>

#include <weft/backend/device.hpp>
#include <weft/backend/yarn_stepper.hpp>
#include <weft/weft.hpp>

int main()
{
    const std::string unavailable = weft::device_unavailable_reason();
    if (!unavailable.empty()) {
        std::printf("backend %s: skipped, %s\n", WEFT_BACKEND_NAME, unavailable.c_str());
        return 0;
    }
    // The model: a woven patch with its material (SI units). The stepper
    // checks it like a scene's (no mass or a negative coefficient is an error).
    weft::WovenPatch patch;
    patch.nx = 12;
    patch.ny = 12;
    weft::YarnModel<double> model;
    model.material.linear_density = patch.density * weft::Constants<double>::pi * patch.radius * patch.radius;
    model.material.stretch_stiffness = 500;
    model.material.bending_stiffness = 1e-5;
    model.material.shear_stiffness = 1e-4;
    weft::add_woven_patch(model, patch);
    const std::vector<int> pins = {0, patch.nx - 1};
    weft::pin_nodes(model, pins);

    // The solver: full Newton (the default), up to 4 halvings of a failed step.
    weft::YarnStepperOptions<double> options;
    options.max_halvings = 4;
    weft::YarnStepper<double> stepper(model, {}, weft::Vec3<double>(0, 0, -9.81), options);

    // Each step: where the pins are to be at its end, then the step.
    // The 11 mm patch is nearly rigid in bending: lifted faster than it falls
    // (2 mm in these 20 ms), its far corner would rise with the pins.
    const double h = 1e-3, lift = 0.01;  // s, m/s
    std::vector<weft::Vec3<double>> start;
    for (const int n : pins) start.emplace_back(model.q[5 * n], model.q[5 * n + 1], model.q[5 * n + 2]);
    for (int step = 1; step <= 20; ++step) {
        std::vector<weft::Vec3<double>> targets;
        for (const weft::Vec3<double>& x : start) targets.push_back(x + weft::Vec3<double>(0, 0, lift * step * h));
        stepper.set_pin_targets(pins, targets, h);
        const weft::YarnStepReport r = stepper.step(h);
        if (!r.ok) {
            std::printf("step %d failed: %s\n", step, r.message.c_str());
            return 1;
        }
    }

    // The state on the host: 5 DoFs per node (x, y, z, u, v).
    const std::vector<double> q = weft::to_host(stepper.positions());
    const int last = patch.nx * patch.ny - 1;
    const double fall = model.q[5 * last + 2] - q[5 * last + 2];
    const double pin_error = std::abs(q[2] - (model.q[2] + lift * 20 * h));
    std::printf("backend %s: stepped 20 steps, free corner fell %.3g m, pin off its path by %.3g m\n",
                WEFT_BACKEND_NAME, fall, pin_error);
    return fall > 1e-4 && pin_error < 1e-12 ? 0 : 1;
}
