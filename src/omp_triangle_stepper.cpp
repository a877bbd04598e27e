// weft::omp_steppers (CMake option WEFT_PRECOMPILED): TriangleStepper<double>
// on Thrust's OpenMP system, compiled once for every program that links it.
#include <weft/backend/triangle_stepper.hpp>

namespace weft {
template class ImplicitStepper<double, triangle_node_dofs, TriangleStepper<double>>;
template class TriangleStepper<double>;
}  // namespace weft
