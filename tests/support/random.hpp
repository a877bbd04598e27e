#pragma once
// Deterministic random inputs for tests.
#include <Eigen/Dense>
#include <random>

namespace weft_test {

class Random {
public:
    explicit Random(unsigned seed = 12345u) : m_engine(seed) {}
    double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(m_engine); }
    Eigen::Vector3d unit_vector()
    {
        Eigen::Vector3d v;
        do {
            v = Eigen::Vector3d(uniform(-1, 1), uniform(-1, 1), uniform(-1, 1));
        } while (v.norm() < 0.1 || v.norm() > 1.0);
        return v.normalized();
    }
    template <int N>
    Eigen::Matrix<double, N, 1> vector(double lo, double hi)
    {
        Eigen::Matrix<double, N, 1> v;
        for (int i = 0; i < N; ++i) v(i) = uniform(lo, hi);
        return v;
    }

private:
    std::mt19937 m_engine;
};

/// A random rotation (unit quaternion), for rigid-motion tests.
inline Eigen::Matrix3d random_rotation(Random& rng)
{
    Eigen::Quaterniond q(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1));
    return q.normalized().toRotationMatrix();
}

}  // namespace weft_test
