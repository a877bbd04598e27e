#pragma once
/// @file device.hpp
/// The device system the backend was compiled for: its name, whether a device
/// is there to run on, waiting for queued work, and device memory in use.
/// With THRUST_DEVICE_SYSTEM_CUDA these call the CUDA runtime; on CPU threads
/// (OpenMP) the device is the host, always present, and they do nothing.
#include <cstddef>
#include <stdexcept>
#include <string>

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
#include <cuda_runtime.h>
#endif

namespace weft {

/// True when the backend runs on a CUDA GPU.
constexpr bool backend_is_cuda()
{
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
    return true;
#else
    return false;
#endif
}

/// op(i) for every i in [first, last), in no particular order. On a GPU one
/// thread each (thrust::for_each). On CPU threads in runs of consecutive
/// indices that shrink as the work runs out, each taken by whichever thread
/// is free (OpenMP's guided schedule), instead of Thrust's equal shares
/// fixed in advance: where items cost unevenly or threads run at uneven
/// speed (a virtual machine's cores under load, the fast and slow cores of
/// a hybrid CPU), equal shares leave the other threads waiting for the
/// slowest. Runs, not single items, so that neighbouring items (lines of a
/// sweep whose nodes interleave in memory) stay on one thread. Meant for up
/// to a few hundred items of real work each, such as whole lines of a line
/// sweep (benchmarks/RESULTS.md "Line sweeps shared by a guided schedule").
template <typename I, typename Op>
void for_each_balanced(I first, I last, const Op& op)
{
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
    thrust::for_each(thrust::device, thrust::counting_iterator<I>(first), thrust::counting_iterator<I>(last), op);
#else
#pragma omp parallel for schedule(guided)
    for (I i = first; i < last; ++i) op(i);
#endif
}

/// Empty when the backend can run here; otherwise why not, e.g.
/// "no CUDA device found (cudaGetDeviceCount: no CUDA-capable device is detected)".
inline std::string device_unavailable_reason()
{
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
    int devices = 0;
    const cudaError_t status = cudaGetDeviceCount(&devices);
    if (status != cudaSuccess)
        return std::string("no CUDA device found (cudaGetDeviceCount: ") + cudaGetErrorString(status) + ")";
    if (devices == 0) return "no CUDA device found (0 devices)";
#endif
    return {};
}

/// @throws std::runtime_error with device_unavailable_reason() when the backend cannot run here.
inline void require_device()
{
    const std::string reason = device_unavailable_reason();
    if (!reason.empty()) throw std::runtime_error(reason);
}

/// Waits until the device has finished the work queued so far (CUDA); a no-op
/// on CPU threads, whose Thrust calls return when done.
/// @throws std::runtime_error naming the CUDA error of earlier asynchronous work
inline void device_synchronize()
{
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
    const cudaError_t status = cudaDeviceSynchronize();
    if (status != cudaSuccess)
        throw std::runtime_error(std::string("cudaDeviceSynchronize: ") + cudaGetErrorString(status));
#endif
}

/// Device memory in use now in bytes (cudaMemGetInfo: total − free, so other
/// processes' allocations count too), or -1 on CPU threads.
inline double device_memory_in_use_bytes()
{
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return -1;
    return static_cast<double>(total_bytes - free_bytes);
#else
    return -1;
#endif
}

}  // namespace weft
