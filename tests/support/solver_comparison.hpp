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
    // The busy patch's steps are not convex: where one preconditioner's
    // exact-Hessian solve meets negative curvature and the other's does not,
    // the two take the projected retry at different iterations. With the
    // clamped projection both still reach the same solution; with absolute
    // eigenvalues (the default) the multilevel and block-Jacobi runs ended
    // 22 % apart in v after three steps (|dv| 0.043 of 0.199), two
    // different solutions, each converged to 1e-4.
    options.hessian_projection = weft::HessianProjection::clamp;
    // Even so, whether an iteration is redone projected depends on PCG's
    // iteration count (a retry past twice the step's last converged solve):
    // with the multilevel hierarchy refreshed between solves, the runs took
    // different Newton paths through the third step and ended 3 % apart in
    // v. Projected Hessians from the first solve: the same systems in both.
    options.exact_hessians = false;
    options.max_halvings = 4;
    options.pcg.tolerance = 1e-12;
    options.pcg.max_iterations = 20000;
    options.linear = linear;
    return options;
}

}  // namespace weft_test
