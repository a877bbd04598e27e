// Every strain metric and element of the core instantiated inside a Thrust
// kernel (CUDA device code), evaluated on the GPU and compared with the same
// functor run on the host. Without a CUDA device the test says so and exits
// with code 77, which ctest reports as skipped.
#include <cuda_runtime.h>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <weft/element/bending_element.hpp>
#include <weft/element/dissipation.hpp>
#include <weft/element/elastic.hpp>
#include <weft/element/rayleigh_damping.hpp>
#include <weft/potential/quadratic.hpp>
#include <weft/potential/rayleigh_analogy.hpp>
#include <weft/potential/stvk.hpp>
#include <weft/strain/green_strain.hpp>
#include <weft/strain/shear.hpp>
#include <weft/strain/stretch.hpp>

namespace {

// A deterministic pseudo-random configuration from an index, on host and device.
WEFT_HD double hash_unit(int i, int k)
{
    unsigned int x = static_cast<unsigned int>(i) * 2654435761u + static_cast<unsigned int>(k) * 40503u + 1u;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return (x & 0xffffff) / double(0xffffff) - 0.5;
}

template <int N>
WEFT_HD weft::Vec<double, N> chain_dofs(int i, double spacing, int salt)
{
    // nodes of (x, s): along x with jitter, s increasing
    weft::Vec<double, N> q;
    for (int node = 0; node < N / 4; ++node) {
        q(4 * node + 0) = node * spacing + 0.2 * spacing * hash_unit(i, salt + 4 * node);
        q(4 * node + 1) = 0.2 * spacing * hash_unit(i, salt + 4 * node + 1);
        q(4 * node + 2) = 0.2 * spacing * hash_unit(i, salt + 4 * node + 2);
        q(4 * node + 3) = node * spacing * (1.0 + 0.05 * hash_unit(i, salt + 4 * node + 3));
    }
    return q;
}

struct EvaluateAll {
    weft::TriangleRest<double> rest;  // made on the host (its factory validates input and may throw)

    WEFT_HD double operator()(int i) const
    {
        double sum = 0;
        const weft::QuadraticDensity<double, 1> k1{100.0};
        const weft::QuadraticDensity<double, 1> d1{0.5};
        {  // stretch
            const auto q = chain_dofs<8>(i, 1.0, 0);
            const auto v = chain_dofs<8>(i, 0.3, 100);
            const auto e = weft::stretch_strain<double>(q, v);
            sum += weft::elastic_force(e, k1).sum() + weft::elastic_force_jacobian(e, k1).sum();
            sum += weft::dissipative_force(e, d1).sum();
            sum += weft::dissipative_force_jacobian(e, d1, weft::DiffWrt::positions).sum();
            sum += weft::dissipative_force_jacobian(e, d1, weft::DiffWrt::velocities).sum();
            sum += weft::rayleigh_damping_force(e, k1, 0.1, v).sum();
        }
        {  // bending (blended) and shear
            const auto q = chain_dofs<12>(i, 1.0, 200);
            const auto v = chain_dofs<12>(i, 0.3, 300);
            const auto b = weft::evaluate_bending<double>(q, v, weft::quadratic_bending_densities<double>(1e-2, 1e-3),
                                                          weft::PsdProjection::on, weft::StressClamp::on);
            sum += b.energy + b.elastic_force.sum() + b.elastic_force_jacobian.sum() + b.dissipative_force.sum();
            sum += b.dissipative_force_jacobian_positions.sum() + b.dissipative_force_jacobian_velocities.sum();
            auto qs = q;
            qs.segment<3>(8) = q.segment<3>(0) + weft::Vec3<double>(0.1 * hash_unit(i, 7), 1.0, 0.1);
            const auto s = weft::shear_strain<double>(qs, v, 1.0);
            sum += weft::elastic_force(s, k1).sum() + weft::dissipative_force(s, d1).sum();
        }
        {  // triangle Green strain with StVK elastic and dissipative densities
            weft::Vec<double, 9> x, v;
            for (int k = 0; k < 9; ++k) {
                x(k) = hash_unit(i, 400 + k) * 0.1;
                v(k) = hash_unit(i, 500 + k);
            }
            x(3) += 1.0;
            x(7) += 1.0;
            const auto e = weft::green_strain<double>(rest, x, v);
            const weft::StVKDensity<double> elastic{10.0, 5.0};
            const weft::StVKDensity<double> damping = weft::rayleigh_analogy(elastic, 0.1);
            sum += weft::elastic_force(e, elastic).sum() + weft::elastic_force_jacobian(e, elastic).sum();
            sum += weft::dissipative_force(e, damping).sum();
            sum += weft::dissipative_force_jacobian(e, damping, weft::DiffWrt::positions).sum();
        }
        return sum;
    }
};

}  // namespace

int main()
{
    int devices = 0;
    const cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0) {
        std::printf("SKIPPED: no CUDA device found (%s); the kernels compiled for the device but did not run\n",
                    err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        return 77;
    }
    const EvaluateAll kernel{
        weft::make_triangle_rest<double>(weft::Vec2<double>(0, 0), weft::Vec2<double>(1, 0), weft::Vec2<double>(0, 1))};
    const int n = 4096;
    thrust::device_vector<double> device_out(n);
    thrust::transform(thrust::counting_iterator<int>(0), thrust::counting_iterator<int>(n), device_out.begin(), kernel);
    thrust::host_vector<double> from_device = device_out;
    int passed = 0, failed = 0;
    for (int i = 0; i < n; ++i) {
        const double host = kernel(i);
        const double diff = std::abs(host - from_device[i]);
        if (std::isfinite(host) && diff <= 1e-9 * std::max(1.0, std::abs(host)))
            ++passed;
        else
            ++failed;
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed == n ? 0 : 1;
}
