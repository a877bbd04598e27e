#pragma once
/// @file schemes.hpp
/// Stepper options for the tests written for the one-step scheme: their
/// references (the Eigen reference path's one linearized step) and measured
/// figures are that scheme's, so they name it rather than take
/// StepperOptions' default. Full Newton has tests of its own.

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

}  // namespace weft_test
