#pragma once
// Test hinges of a known dihedral angle in random frames, shared by the
// dihedral strain tests and the dihedral bending element tests.
#include <weft/strain/dihedral.hpp>

#include <Eigen/Dense>
#include <cmath>

#include "support/random.hpp"

namespace weft_test {

/// A hinge with edge x₁ → x₂ = x₁ + L t, triangle A in the plane (t, u) on the −u side and x₃ at
/// x₁ + α_B L t + h_B (cos φ u + sin φ w), w = t × u. Its dihedral angle is exactly φ (φ ∈ (−π, π]):
/// n̂_A = −w, n̂_B = −cos φ w + sin φ u, so (n̂_A × n̂_B)·t = sin φ and n̂_A·n̂_B = cos φ.
struct HingeFrame {
    Eigen::Vector3d origin, t, u, w;
    double length, alpha_a, height_a, alpha_b, height_b;
};

inline HingeFrame random_frame(Random& rng, double scale = 1.0)
{
    HingeFrame f;
    f.origin = scale * rng.vector<3>(-1, 1);
    f.t = rng.unit_vector();
    Eigen::Vector3d s;
    do {
        s = rng.unit_vector();
    } while (f.t.cross(s).norm() < 0.3);
    f.w = f.t.cross(s).normalized();
    f.u = f.w.cross(f.t);
    f.length = scale * rng.uniform(0.5, 2.0);
    f.alpha_a = rng.uniform(-0.3, 1.3);
    f.alpha_b = rng.uniform(-0.3, 1.3);
    f.height_a = f.length * rng.uniform(0.3, 1.5);
    f.height_b = f.length * rng.uniform(0.3, 1.5);
    return f;
}

/// The hinge of `f` bent to dihedral angle φ: nodes x₀, x₁, x₂, x₃ stacked.
inline Eigen::Matrix<double, 12, 1> hinge(const HingeFrame& f, double phi)
{
    const Eigen::Vector3d e = f.length * f.t;
    Eigen::Matrix<double, 12, 1> q;
    q.segment<3>(0) = f.origin + f.alpha_a * e - f.height_a * f.u;
    q.segment<3>(3) = f.origin;
    q.segment<3>(6) = f.origin + e;
    q.segment<3>(9) = f.origin + f.alpha_b * e + f.height_b * (std::cos(phi) * f.u + std::sin(phi) * f.w);
    return q;
}

/// Node n (0..3) of a hinge.
inline Eigen::Vector3d node(const Eigen::Matrix<double, 12, 1>& q, int n)
{
    return q.segment<3>(3 * n);
}

/// The rest state of a hinge whose rest configuration is q.
inline weft::HingeRest<double> rest_of(const Eigen::Matrix<double, 12, 1>& q)
{
    return weft::make_hinge_rest<double>(node(q, 0), node(q, 1), node(q, 2), node(q, 3));
}

/// Rigid velocity t + ω × x at the four nodes.
inline Eigen::Matrix<double, 12, 1> rigid_velocity(const Eigen::Matrix<double, 12, 1>& q,
                                                   const Eigen::Vector3d& translation, const Eigen::Vector3d& omega)
{
    Eigen::Matrix<double, 12, 1> v;
    for (int n = 0; n < 4; ++n) v.segment<3>(3 * n) = translation + omega.cross(node(q, n));
    return v;
}

}  // namespace weft_test
