#pragma once
/// @file vector_ops.hpp
/// Level-1 operations on Thrust device vectors, each one pass over memory
/// (dot products are reductions over zip iterators), and host copies.
/// All vectors are flat: n scalars, B consecutive scalars per node.
///
/// Every floating-point sum of the backend goes through
/// `fixed_order_transform_reduce`, so that a step gives the same bits
/// whatever the thread count and the machine (see there).

#include <cstddef>
#include <string>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>

#include <weft/core/config.hpp>
#include <weft/core/error.hpp>

namespace weft {

/// The raw pointer to a device vector's data, for the functors of kernels.
template <typename U>
U* raw_pointer(thrust::device_vector<U>& v)
{
    return thrust::raw_pointer_cast(v.data());
}
template <typename U>
const U* raw_pointer(const thrust::device_vector<U>& v)
{
    return thrust::raw_pointer_cast(v.data());
}

/// Two sums carried through one reduction (e.g. rᵀz and rᵀr in PCG).
template <typename T>
struct SumPair {
    T first;
    T second;
    WEFT_HD SumPair operator+(const SumPair& other) const { return {first + other.first, second + other.second}; }
};

namespace vector_detail {

template <typename T>
struct Product {
    WEFT_HD T operator()(const thrust::tuple<T, T>& ab) const { return thrust::get<0>(ab) * thrust::get<1>(ab); }
};

template <typename T>
struct Square {
    WEFT_HD T operator()(const T& a) const { return a * a; }
};

template <typename T>
struct AsSumPair {
    WEFT_HD SumPair<T> operator()(const thrust::tuple<T, T>& ab) const
    {
        return {thrust::get<0>(ab), thrust::get<1>(ab)};
    }
};

template <typename T>
struct PlusSumPair {
    WEFT_HD SumPair<T> operator()(const SumPair<T>& a, const SumPair<T>& b) const { return a + b; }
};

/// y ← α x + y
template <typename T>
struct Axpy {
    const T alpha;
    WEFT_HD T operator()(const T& x, const T& y) const { return alpha * x + y; }
};

/// y ← x + β y
template <typename T>
struct Xpby {
    const T beta;
    WEFT_HD T operator()(const T& x, const T& y) const { return x + beta * y; }
};

template <typename T>
void require_same_size(const char* what, const thrust::device_vector<T>& a, const thrust::device_vector<T>& b)
{
    if (a.size() != b.size()) {
        throw InvalidInput(detail::describe(
            what, b.size(), ("must equal the first vector's size " + std::to_string(a.size())).c_str()));
    }
}

/// The reduction of one fixed chunk of terms, in index order.
template <class Iterator, class Transform, typename T, class Op>
struct ChunkReduce {
    Iterator first;
    std::size_t n;
    std::size_t chunk;
    Transform transform;
    Op op;
    WEFT_HD T operator()(std::size_t c) const
    {
        const std::size_t begin = c * chunk;
        const std::size_t end = begin + chunk < n ? begin + chunk : n;
        T sum = transform(first[begin]);
        for (std::size_t i = begin + 1; i < end; ++i) sum = op(sum, transform(first[i]));
        return sum;
    }
};

/// The identity transform, for `fixed_order_reduce`.
struct Identity {
    template <typename U>
    WEFT_HD U operator()(const U& u) const
    {
        return u;
    }
};

}  // namespace vector_detail

/// Terms per chunk of `fixed_order_transform_reduce` on CPU threads.
constexpr std::size_t fixed_order_chunk = 4096;

/// op(init, Σ_i transform(first[i])) for i < n, summed in an order fixed by n
/// alone. On CPU threads (the OpenMP and C++ systems) the terms are summed in
/// chunks of `fixed_order_chunk` consecutive indices, each in index order (in
/// parallel when there are several), then the chunk sums in chunk order on
/// the host: the same bits for any OMP_NUM_THREADS and any machine.
/// Thrust's own reduce splits the range by omp_get_num_procs(), so its sums
/// change with the machine's core count (measured: hang.json's CSV differs
/// in the last digits between 1 and 2 available cores at 1 thread). On CUDA
/// this is thrust::transform_reduce (CUB's reduction: the same bits run to
/// run on one device, not across device models).
template <class Iterator, class Transform, typename T, class Op>
T fixed_order_transform_reduce(Iterator first, std::size_t n, Transform transform, T init, Op op)
{
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
    return thrust::transform_reduce(thrust::device, first, first + n, transform, init, op);
#else
    if (n == 0) return init;
    const std::size_t chunks = (n + fixed_order_chunk - 1) / fixed_order_chunk;
    const vector_detail::ChunkReduce<Iterator, Transform, T, Op> reduce_chunk{first, n, fixed_order_chunk, transform,
                                                                              op};
    if (chunks == 1) return op(init, reduce_chunk(0));
    std::vector<T> partial(chunks);
    thrust::transform(thrust::device, thrust::counting_iterator<std::size_t>(0),
                      thrust::counting_iterator<std::size_t>(chunks), partial.data(), reduce_chunk);
    T sum = init;
    for (const T& p : partial) sum = op(sum, p);
    return sum;
#endif
}

/// op(init, Σ first[i]) in the fixed order of `fixed_order_transform_reduce`.
template <class Iterator, typename T, class Op>
T fixed_order_reduce(Iterator first, std::size_t n, T init, Op op)
{
    return fixed_order_transform_reduce(first, n, vector_detail::Identity{}, init, op);
}

/// aᵀb.
/// @param[in] a  n values
/// @param[in] b  n values
template <typename T>
T dot(const thrust::device_vector<T>& a, const thrust::device_vector<T>& b)
{
    vector_detail::require_same_size("dot b.size()", a, b);
    const auto first = thrust::make_zip_iterator(thrust::make_tuple(a.begin(), b.begin()));
    return fixed_order_transform_reduce(first, a.size(), vector_detail::Product<T>{}, T(0), thrust::plus<T>{});
}

/// aᵀa.
template <typename T>
T squared_norm(const thrust::device_vector<T>& a)
{
    return fixed_order_transform_reduce(a.begin(), a.size(), vector_detail::Square<T>{}, T(0), thrust::plus<T>{});
}

/// (Σ a_i, Σ b_i) in one pass.
/// @param[in] a  n values
/// @param[in] b  n values
template <typename T>
SumPair<T> sum_pair(const thrust::device_vector<T>& a, const thrust::device_vector<T>& b)
{
    vector_detail::require_same_size("sum_pair b.size()", a, b);
    const auto first = thrust::make_zip_iterator(thrust::make_tuple(a.begin(), b.begin()));
    return fixed_order_transform_reduce(first, a.size(), vector_detail::AsSumPair<T>{}, SumPair<T>{T(0), T(0)},
                                        vector_detail::PlusSumPair<T>{});
}

/// y ← α x + y.
/// @param[in]     x  n values
/// @param[in,out] y  n values
template <typename T>
void axpy(T alpha, const thrust::device_vector<T>& x, thrust::device_vector<T>& y)
{
    vector_detail::require_same_size("axpy y.size()", x, y);
    thrust::transform(thrust::device, x.begin(), x.end(), y.begin(), y.begin(), vector_detail::Axpy<T>{alpha});
}

/// y ← x + β y (the CG direction update).
/// @param[in]     x  n values
/// @param[in,out] y  n values
template <typename T>
void xpby(const thrust::device_vector<T>& x, T beta, thrust::device_vector<T>& y)
{
    vector_detail::require_same_size("xpby y.size()", x, y);
    thrust::transform(thrust::device, x.begin(), x.end(), y.begin(), y.begin(), vector_detail::Xpby<T>{beta});
}

/// Host copy of a device vector (one bulk transfer).
template <typename T>
std::vector<T> to_host(const thrust::device_vector<T>& a)
{
    std::vector<T> result(a.size());
    thrust::copy(a.begin(), a.end(), result.begin());
    return result;
}

/// Read-only host access to a device vector's elements for host-side code
/// that only reads them: on CPU threads the device vector's own memory (no
/// copy: a matrix's values are the largest array of a step), under CUDA a
/// host copy (to_host). The view is valid while the vector is neither
/// resized nor destroyed; on CPU threads it also sees later writes.
template <typename T>
class HostView {
public:
    explicit HostView(const thrust::device_vector<T>& a) : m_size(a.size())
    {
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
        m_copy = to_host(a);
        m_data = m_copy.data();
#else
        m_data = thrust::raw_pointer_cast(a.data());
#endif
    }
    HostView(const HostView&) = delete;
    HostView& operator=(const HostView&) = delete;

    const T* data() const
    {
        return m_data;
    }
    std::size_t size() const
    {
        return m_size;
    }
    const T& operator[](std::size_t i) const
    {
        return m_data[i];
    }
    const T* begin() const
    {
        return m_data;
    }
    const T* end() const
    {
        return m_data + m_size;
    }

private:
    std::vector<T> m_copy;  ///< the host copy under CUDA; empty on CPU threads
    const T* m_data = nullptr;
    std::size_t m_size = 0;
};

}  // namespace weft
