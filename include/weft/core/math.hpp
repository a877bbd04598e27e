#pragma once
/// @file math.hpp
/// Scalar helpers that are safe on the device and at the edges of their
/// domains (angles at 0 and π, smooth blending weights).

#include <cmath>

#include <weft/core/types.hpp>

namespace weft {

template <typename T>
struct Constants {
    static constexpr T pi = T(3.14159265358979323846264338327950288);
    static constexpr T half_pi = T(1.57079632679489661923132169163975144);
};

template <typename T>
WEFT_HD inline T degrees_to_radians(T degrees)
{
    return degrees * (Constants<T>::pi / T(180));
}

template <typename T>
WEFT_HD inline T square(T a)
{
    return a * a;
}

/// Angle between two vectors in [0, π], computed as atan2(|a×b|, a·b): unlike
/// acos(â·b̂) its derivative stays bounded near 0 and π, and it keeps full
/// precision everywhere.
template <typename T>
WEFT_HD inline T angle_between(const Vec3<T>& a, const Vec3<T>& b)
{
    using std::atan2;
    return atan2(a.cross(b).norm(), a.dot(b));
}

/// Quintic "smootherstep" weight on [lo, hi] with its first and second
/// derivatives w.r.t. x: 0 below lo, 1 above hi, C² everywhere.
template <typename T>
struct BlendWeight {
    T value;
    T first;
    T second;
};

template <typename T>
WEFT_HD inline BlendWeight<T> smootherstep(T x, T lo, T hi)
{
    if (x <= lo) return {T(0), T(0), T(0)};
    if (x >= hi) return {T(1), T(0), T(0)};
    const T w = hi - lo;
    const T t = (x - lo) / w;
    const T t2 = t * t;
    // s(t) = 6t⁵ − 15t⁴ + 10t³, s'(t) = 30t²(t−1)², s''(t) = 60t(t−1)(2t−1)
    const T value = t2 * t * (t * (T(6) * t - T(15)) + T(10));
    const T first = T(30) * t2 * (t - T(1)) * (t - T(1)) / w;
    const T second = T(60) * t * (t - T(1)) * (T(2) * t - T(1)) / (w * w);
    return {value, first, second};
}

}  // namespace weft
