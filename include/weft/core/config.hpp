#pragma once
/// @file config.hpp
/// Host/device annotation and the Eigen include every weft header relies on.

#if defined(__CUDACC__)
#define WEFT_HD __host__ __device__
#else
#define WEFT_HD
#endif

// Eigen's fixed-size types compile in CUDA device code; keep its static
// alignment assertions (they are compile-time only) and its host-side checks.
#include <Eigen/Core>

namespace weft {

/// Index type used for node and DoF indices across the library.
using Index = int;

}  // namespace weft
