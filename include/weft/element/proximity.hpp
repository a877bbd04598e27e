#pragma once
/// @file proximity.hpp
/// Closest points between the primitives of collision handling: segment–
/// segment (yarn against yarn, and a triangle edge against another) and
/// point–triangle. Exact for every configuration, including parallel and
/// degenerate (zero-length) segments and degenerate triangles: each query
/// minimizes a convex quadratic over its parameter domain, first in the
/// interior, then on the domain's boundary, and returns the parameters of a
/// closest pair (unique unless the primitives are parallel, where one of the
/// minimizers is returned). Host and device.

#include <weft/core/types.hpp>

namespace weft {

/// Closest points p = a₀ + s (a₁ − a₀) and q = b₀ + t (b₁ − b₀), s, t ∈ [0, 1].
template <typename T>
struct SegmentPairClosest {
    T s, t;
    T distance_squared;
};

namespace detail {

template <typename T>
WEFT_HD inline T clamp_unit(T x)
{
    return x < T(0) ? T(0) : (x > T(1) ? T(1) : x);
}

}  // namespace detail

/// Closest points of segments [a₀, a₁] and [b₀, b₁]. The squared distance
/// |d₀ + s u − t w|² (u = a₁ − a₀, w = b₁ − b₀, d₀ = a₀ − b₀) is a convex
/// quadratic on the unit square: its minimum lies at the interior stationary
/// point when that is inside and the segments are not parallel, otherwise on
/// one of the four edges, each a clamped 1-D minimization.
template <typename T>
WEFT_HD inline SegmentPairClosest<T> closest_segment_segment(const Vec3<T>& a0, const Vec3<T>& a1, const Vec3<T>& b0,
                                                             const Vec3<T>& b1)
{
    const Vec3<T> u = a1 - a0, w = b1 - b0, d0 = a0 - b0;
    const T uu = u.dot(u), ww = w.dot(w), uw = u.dot(w), ud = u.dot(d0), wd = w.dot(d0);
    const auto value = [&](T s, T t) { return (d0 + s * u - t * w).squaredNorm(); };
    SegmentPairClosest<T> best{T(0), T(0), value(T(0), T(0))};
    const auto consider = [&](T s, T t) {
        const T v = value(s, t);
        if (v < best.distance_squared) best = SegmentPairClosest<T>{s, t, v};
    };
    // Interior: ∂/∂s = uu s − uw t + ud = 0, ∂/∂t = −uw s + ww t − wd = 0.
    const T det = uu * ww - uw * uw;
    const T scale = uu * ww;
    if (det > T(1e-14) * scale && scale > T(0)) {
        const T s = (uw * wd - ww * ud) / det;
        const T t = (uu * wd - uw * ud) / det;
        if (s >= T(0) && s <= T(1) && t >= T(0) && t <= T(1)) consider(s, t);
    }
    // Edges s ∈ {0, 1} (minimize over t) and t ∈ {0, 1} (minimize over s).
    for (int k = 0; k < 2; ++k) {
        const T s = T(k);
        consider(s, ww > T(0) ? detail::clamp_unit((wd + s * uw) / ww) : T(0));
        const T t = T(k);
        consider(uu > T(0) ? detail::clamp_unit((t * uw - ud) / uu) : T(0), t);
    }
    return best;
}

/// sin² of the angle between two segments' directions u and w,
/// (|u|²|w|² − (u·w)²) / (|u|²|w|²); 1 (not parallel) where either is a
/// point. The measure of "nearly parallel" of `stable_segment_parameters`
/// and of the yarn finder's `parallel_segment_pair`s.
template <typename T>
WEFT_HD inline T segment_sine2(const Vec3<T>& u, const Vec3<T>& w)
{
    const T uu = u.dot(u), ww = w.dot(w), uw = u.dot(w);
    if (!(uu > T(0) && ww > T(0))) return T(1);
    return (uu * ww - uw * uw) / (uu * ww);
}

/// The width of `stable_segment_parameters`' blend, in sin² of the angle
/// between the segments: 10⁻³ (1.8°). Two segments in contact at distance
/// d ≈ r, of lengths |u| and |w|, at sin² of their angle, have closest
/// points that sweep the whole overlap when the nodes move by about
/// sin² |u| |w| / d: for the shipped yarns (1 mm segments, r = 0.5 mm)
/// 2 nm at the old width of 10⁻⁶, whose pairs just beyond it stalled full
/// Newton where a fold's halves meet (80 × 40 fold with the penalty's onset:
/// 13.2 Newton iterations per step, against 4.76 with 10⁻³); 2 µm at 10⁻³,
/// ten times the late Newton updates there. Wider (3 × 10⁻³) was slower again
/// (4.95): the blended force leaves out the parameters' own derivatives
/// (docs/collision.md, "Parallel yarns"; benchmarks/RESULTS.md, "The
/// parallel blend's width").
constexpr double parallel_blend_sine2 = 1e-3;

/// Contact parameters of segments [a₀, a₁] and [b₀, b₁] that are continuous
/// in the end points, for yarn contacts (`ClothContactKind::segment_pair`,
/// docs/collision.md, "Parallel yarns"). The closest pair
/// of `closest_segment_segment` jumps from one end of the overlap to the
/// other as two overlapping segments turn through parallel (for parallel
/// ones round-off picks the end). Here, below `parallel` in sin² of the
/// angle between the segments (`parallel_blend_sine2` by default), the
/// closest pair is blended with the middle of the overlap (s at the middle
/// of b's projection onto a, clamped to [0, 1]; t the point of b nearest
/// to a(s)) by the weight
/// 1 − σ²(3 − 2σ), σ = sin²/parallel: 1 for parallel segments, 0 from the
/// threshold on, where the closest pair is returned as it is. The closest
/// pair is continuous wherever the segments are not parallel, so the blend
/// is continuous everywhere. `distance_squared` is that of the returned
/// points (at least the segments' distance).
template <typename T>
WEFT_HD inline SegmentPairClosest<T> stable_segment_parameters(const Vec3<T>& a0, const Vec3<T>& a1, const Vec3<T>& b0,
                                                               const Vec3<T>& b1, T parallel = T(parallel_blend_sine2))
{
    const SegmentPairClosest<T> closest = closest_segment_segment<T>(a0, a1, b0, b1);
    const Vec3<T> u = a1 - a0, w = b1 - b0;
    const T sine2 = segment_sine2<T>(u, w);
    if (!(sine2 < parallel)) return closest;
    const T uu = u.dot(u), ww = w.dot(w);
    const T p0 = (b0 - a0).dot(u) / uu, p1 = (b1 - a0).dot(u) / uu;
    const T lo = detail::clamp_unit(p0 < p1 ? p0 : p1), hi = detail::clamp_unit(p0 < p1 ? p1 : p0);
    const T s_mid = T(0.5) * (lo + hi);
    const T t_mid = detail::clamp_unit((a0 + s_mid * u - b0).dot(w) / ww);
    const T sigma = sine2 / parallel;
    const T weight = T(1) - sigma * sigma * (T(3) - T(2) * sigma);
    const T s = weight * s_mid + (T(1) - weight) * closest.s;
    const T t = weight * t_mid + (T(1) - weight) * closest.t;
    return SegmentPairClosest<T>{s, t, (a0 + s * u - b0 - t * w).squaredNorm()};
}

/// The parameters (s, t) of one end point's part of a segment pair
/// [a₀, a₁], [b₀, b₁] (`part` 0–3: a₀, a₁, b₀, b₁): the end point itself
/// (s or t at 0 or 1) and its closest point on the other segment. The
/// parts of a nearly parallel yarn segment pair
/// (`ClothContactKind::parallel_segment_pair`, docs/collision.md, "Parallel
/// yarns"): unlike the segments' closest pair, each is unique and
/// continuous in the end points at any angle.
template <typename T>
WEFT_HD inline SegmentPairClosest<T> end_point_parameters(const Vec3<T>& a0, const Vec3<T>& a1, const Vec3<T>& b0,
                                                          const Vec3<T>& b1, int part)
{
    T s, t;
    if (part < 2) {
        const Vec3<T> w = b1 - b0;
        const T ww = w.dot(w);
        s = T(part);
        t = ww > T(0) ? detail::clamp_unit(((part == 0 ? a0 : a1) - b0).dot(w) / ww) : T(0);
    } else {
        const Vec3<T> u = a1 - a0;
        const T uu = u.dot(u);
        t = T(part - 2);
        s = uu > T(0) ? detail::clamp_unit(((part == 2 ? b0 : b1) - a0).dot(u) / uu) : T(0);
    }
    return SegmentPairClosest<T>{s, t, (a0 + s * (a1 - a0) - b0 - t * (b1 - b0)).squaredNorm()};
}

/// Closest point x₀ + u (x₁ − x₀) + v (x₂ − x₀), u, v ≥ 0, u + v ≤ 1, of a
/// triangle to a point p.
template <typename T>
struct PointTriangleClosest {
    T u, v;
    T distance_squared;
};

/// Closest point of triangle (x₀, x₁, x₂) to p: the interior stationary
/// point of the convex |x₀ − p + u e₁ + v e₂|² when it lies inside the
/// triangle (and the triangle is not degenerate), otherwise the closest
/// point on one of its three edges.
template <typename T>
WEFT_HD inline PointTriangleClosest<T> closest_point_triangle(const Vec3<T>& p, const Vec3<T>& x0, const Vec3<T>& x1,
                                                              const Vec3<T>& x2)
{
    const Vec3<T> e1 = x1 - x0, e2 = x2 - x0, d = x0 - p;
    const T a = e1.dot(e1), b = e1.dot(e2), c = e2.dot(e2), g1 = e1.dot(d), g2 = e2.dot(d);
    const auto value = [&](T u, T v) { return (d + u * e1 + v * e2).squaredNorm(); };
    PointTriangleClosest<T> best{T(0), T(0), value(T(0), T(0))};
    const auto consider = [&](T u, T v) {
        const T f = value(u, v);
        if (f < best.distance_squared) best = PointTriangleClosest<T>{u, v, f};
    };
    const T det = a * c - b * b;
    if (det > T(1e-14) * a * c && a * c > T(0)) {
        const T u = (b * g2 - c * g1) / det;
        const T v = (b * g1 - a * g2) / det;
        if (u >= T(0) && v >= T(0) && u + v <= T(1)) consider(u, v);
    }
    // Edge v = 0 (x₀x₁), u = 0 (x₀x₂), u + v = 1 (x₁x₂: u = 1 − r, v = r).
    consider(a > T(0) ? detail::clamp_unit(-g1 / a) : T(0), T(0));
    consider(T(0), c > T(0) ? detail::clamp_unit(-g2 / c) : T(0));
    {
        const Vec3<T> e = x2 - x1, d1 = x1 - p;
        const T ee = e.dot(e);
        const T r = ee > T(0) ? detail::clamp_unit(-e.dot(d1) / ee) : T(0);
        consider(T(1) - r, r);
    }
    return best;
}

/// Whether segment [p₀, p₁] crosses triangle (x₀, x₁, x₂): Möller–Trumbore
/// with the segment parameter in [0, 1] and the barycentrics in the closed
/// triangle. A segment parallel to the triangle's plane (or a degenerate
/// triangle) counts as not crossing; `triangles_intersect` covers coplanar
/// overlaps through the other triangle's edges where they cross.
template <typename T>
WEFT_HD inline bool segment_crosses_triangle(const Vec3<T>& p0, const Vec3<T>& p1, const Vec3<T>& x0, const Vec3<T>& x1,
                                             const Vec3<T>& x2)
{
    const Vec3<T> e1 = x1 - x0, e2 = x2 - x0, d = p1 - p0;
    const Vec3<T> h = d.cross(e2);
    const T a = e1.dot(h);
    const T scale = e1.norm() * e2.norm() * d.norm();
    if (!(a > T(1e-14) * scale || a < -T(1e-14) * scale)) return false;
    const T f = T(1) / a;
    const Vec3<T> s = p0 - x0;
    const T u = f * s.dot(h);
    if (u < T(0) || u > T(1)) return false;
    const Vec3<T> q = s.cross(e1);
    const T v = f * d.dot(q);
    if (v < T(0) || u + v > T(1)) return false;
    const T t = f * e2.dot(q);
    return t >= T(0) && t <= T(1);
}

/// Whether two triangles intersect: an edge of one crosses the other. For
/// triangles that share no vertex this is the usual test (two non-coplanar
/// triangles intersect iff one's edge crosses the other). Callers skip
/// pairs that share a vertex (mesh neighbours touch by construction).
template <typename T>
WEFT_HD inline bool triangles_intersect(const Vec3<T> (&a)[3], const Vec3<T> (&b)[3])
{
    for (int k = 0; k < 3; ++k) {
        if (segment_crosses_triangle<T>(a[k], a[(k + 1) % 3], b[0], b[1], b[2])) return true;
        if (segment_crosses_triangle<T>(b[k], b[(k + 1) % 3], a[0], a[1], a[2])) return true;
    }
    return false;
}

}  // namespace weft
