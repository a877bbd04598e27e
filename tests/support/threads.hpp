#pragma once
/// @file threads.hpp
/// The OpenMP thread count of the device system, for tests built from the
/// same source for CPU threads and for CUDA (tests/CMakeLists.txt). On CPU
/// threads these set and read OpenMP's count. On CUDA the device decides how
/// its work is split: set_threads does nothing, so a test that repeats the
/// same work "on 1, 2 and 4 threads" repeats it on the one device, and its
/// bit-for-bit comparisons check that runs repeat (the property the backend
/// promises there: docs/scenes.md, "The same bits on any thread count and
/// machine").
#include <thrust/device_vector.h>

#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
#include <omp.h>
#endif

namespace weft_test {

/// OpenMP's thread count for the next parallel regions (CPU threads only).
inline void set_threads(int threads)
{
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
}

/// OpenMP's current thread count; 1 on CUDA.
inline int max_threads()
{
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

}  // namespace weft_test
