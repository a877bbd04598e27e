#pragma once
/// @file schemes.hpp
/// Stepper options that name the time-stepping scheme. Tests written for the
/// one-step scheme (their references are the Eigen reference path's one
/// linearized step, their measured figures that scheme's) name it rather
/// than take StepperOptions' default; tests that hold for both schemes run
/// both.

#include <weft/backend/implicit_stepper.hpp>

namespace weft_test {

/// Default options with the one-step scheme (newton_iterations 1).
template <typename T = double>
weft::StepperOptions<T> one_step_options()
{
    weft::StepperOptions<T> options;
    options.newton_iterations = 1;
    return options;
}

/// Full Newton as the scenes ask for it: newton_iterations 12, newton_tolerance 1e-4.
template <typename T = double>
weft::StepperOptions<T> full_newton_options()
{
    weft::StepperOptions<T> options;
    options.newton_iterations = 12;
    options.newton_tolerance = T(1e-4);
    return options;
}

}  // namespace weft_test
