// Catch's main for the backend tests built by nvcc (tests/CMakeLists.txt,
// WEFT_CUDA_BACKEND_TESTS). Without a CUDA device it says why and exits with
// 77, which ctest reports as skipped; it never reports a pass it did not run.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include <cuda_runtime.h>

int main(int argc, char* argv[])
{
    int devices = 0;
    const cudaError_t status = cudaGetDeviceCount(&devices);
    if (status != cudaSuccess || devices == 0) {
        std::printf("SKIPPED: no CUDA device found (%s): this test was built for the GPU and not run\n",
                    status != cudaSuccess ? cudaGetErrorString(status) : "0 devices");
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
