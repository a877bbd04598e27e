// A program that uses the Thrust backend as a user's project would: builds a
// 12 × 12 woven patch in code, pins two corners, steps it 20 times under
// gravity with weft::YarnStepper and checks that the free corner fell while
// the pins held. Built with weft::omp (CPU threads), or as stepper.cu with
// weft::cuda where the CUDA language is enabled.
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
    weft::WovenPatch patch;
    patch.nx = 12;
    patch.ny = 12;
    weft::YarnModel<double> model;
    model.material.linear_density = patch.density * weft::Constants<double>::pi * patch.radius * patch.radius;
    model.material.stretch_stiffness = 500;
    model.material.bending_stiffness = 1e-5;
    model.material.shear_stiffness = 1e-4;
    weft::add_woven_patch(model, patch);
    const int last = patch.nx * patch.ny - 1;
    weft::pin_nodes(model, {0, patch.nx - 1});
    weft::YarnStepperOptions<double> options;
    options.max_halvings = 4;
    weft::YarnStepper<double> stepper(model, {}, weft::Vec3<double>(0, 0, -9.81), options);
    for (int step = 0; step < 20; ++step) {
        const weft::YarnStepReport r = stepper.step(1e-3);
        if (!r.ok) {
            std::printf("step %d failed: %s\n", step, r.message.c_str());
            return 1;
        }
    }
    const std::vector<double> q = weft::to_host(stepper.positions());
    const double fall = model.q[5 * last + 2] - q[5 * last + 2];
    const double pin_motion = std::abs(q[2] - model.q[2]);
    std::printf("backend %s: stepped 20 steps, free corner fell %.3g m, pin moved %.3g m\n", WEFT_BACKEND_NAME, fall,
                pin_motion);
    return fall > 1e-4 && pin_motion == 0 ? 0 : 1;
}
