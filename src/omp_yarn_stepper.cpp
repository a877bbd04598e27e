// weft::omp_steppers (CMake option WEFT_PRECOMPILED): YarnStepper<double> on
// Thrust's OpenMP system, compiled once for every program that links it.
#include <weft/backend/yarn_stepper.hpp>

namespace weft {
template class ImplicitStepper<double, yarn_node_dofs, YarnStepper<double>>;
template class YarnStepper<double>;
}  // namespace weft
