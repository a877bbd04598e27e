// The smallest program on weft::omp: a dot product on the Thrust device
// system through weft's vector operations. It checks the backend target's
// wiring (CCCL include path, THRUST_DEVICE_SYSTEM, OpenMP) where building the
// whole stepping program (stepper.cpp) a second time would add nothing.
#include <cstdio>
#include <vector>

#include <weft/backend/vector_ops.hpp>

int main()
{
    const std::vector<double> a{1, 2, 3}, b{4, 5, 6};
    const thrust::device_vector<double> x(a.begin(), a.end()), y(b.begin(), b.end());
    const double d = weft::dot(x, y);
    std::printf("backend %s: dot %g\n", WEFT_BACKEND_NAME, d);
    return d == 32 ? 0 : 1;
}
