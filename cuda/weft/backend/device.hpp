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

#if defined(__linux__) && defined(__GLIBC__)
#include <unistd.h>

#include <cstdlib>
#include <fstream>
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

/// Whether the heap of this process is asked for transparent huge pages:
/// glibc's malloc with the tunable glibc.malloc.hugetlb=1 (GLIBC_TUNABLES,
/// glibc 2.35 and later), which advises the kernel to back its large
/// allocations with 2 MiB pages where the kernel grants them on request
/// (/sys/kernel/mm/transparent_hugepage/enabled "madvise"; with "always"
/// every process has them). false elsewhere (not Linux with glibc).
inline bool heap_huge_pages_advised()
{
#if defined(__linux__) && defined(__GLIBC__)
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    return tunables != nullptr && std::string(tunables).find("glibc.malloc.hugetlb=1") != std::string::npos;
#else
    return false;
#endif
}

/// Runs this program again (execv of /proc/self/exe with the same `argv`)
/// with glibc.malloc.hugetlb=1 added to GLIBC_TUNABLES, where that tunable
/// is not set, the kernel grants transparent huge pages on request only
/// ("madvise" mode) and glibc is 2.35 or later; returns where it does not
/// (or where the exec fails, with the environment as it was). Call it first
/// in main(), before threads start or files open: the process keeps its id
/// and arguments. The tunable can only be set before a process starts, and
/// Thrust's host systems allocate through malloc, so a program run on CPU
/// threads gets huge pages for its matrices and hierarchies this way. On
/// the 2-core VM a 400² sphere drop's multilevel build took 7.0 s instead
/// of 16–18 s and a step 1.9–2.2 s instead of 2.5–2.7 s (about 2.36
/// million page faults instead of 42,000; benchmarks/RESULTS.md,
/// "Transparent huge pages for the heap"). WEFT_HUGE_PAGES=0 in the
/// environment turns it off; WEFT_HUGE_PAGES_RERUN marks the re-run (never
/// a second one).
inline void run_with_huge_pages(char** argv)
{
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
    const char* off = std::getenv("WEFT_HUGE_PAGES");
    if ((off != nullptr && std::string(off) == "0") || std::getenv("WEFT_HUGE_PAGES_RERUN") != nullptr) return;
    if (argv == nullptr || heap_huge_pages_advised()) return;
    std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    if (!std::getline(mode, modes) || modes.find("[madvise]") == std::string::npos) return;
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    const std::string before = tunables != nullptr ? tunables : "";
    const std::string with = (before.empty() ? "" : before + ":") + "glibc.malloc.hugetlb=1";
    if (setenv("GLIBC_TUNABLES", with.c_str(), 1) != 0 || setenv("WEFT_HUGE_PAGES_RERUN", "1", 1) != 0) return;
    execv("/proc/self/exe", argv);
    // Not re-run: on as before.
    if (tunables != nullptr) {
        setenv("GLIBC_TUNABLES", before.c_str(), 1);
    } else {
        unsetenv("GLIBC_TUNABLES");
    }
    unsetenv("WEFT_HUGE_PAGES_RERUN");
#else
    (void)argv;
#endif
}

}  // namespace weft
