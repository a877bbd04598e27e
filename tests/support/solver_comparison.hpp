#pragma once
/// Stepper options for comparing linear solvers on the same steps: PCG solved
/// to 1e-12 (so that it and a direct solve give the same systems' solutions),
/// Newton (when newton > 1) to 1e-4 with up to 4 halvings.
#include <weft/backend/implicit_stepper.hpp>

namespace weft_test {

inline weft::StepperOptions<double> solver_comparison_options(int newton, weft::LinearSolver linear)
{
    weft::StepperOptions<double> options;
    options.newton_iterations = newton;
    options.newton_tolerance = 1e-4;
    options.max_halvings = 4;
    options.pcg.tolerance = 1e-12;
    options.pcg.max_iterations = 20000;
    options.linear = linear;
    return options;
}

}  // namespace weft_test
