// PSD projection of translation-invariant element Hessians in their
// difference variables (element/difference_projection.hpp).
#include <catch2/catch.hpp>

#include <Eigen/Core>

#include <weft/element/difference_projection.hpp>
#include <weft/element/elastic.hpp>
#include <weft/potential/quadratic.hpp>
#include <weft/strain/shear.hpp>
#include <weft/strain/stretch.hpp>

#include "support/random.hpp"
#include "support/symmetric_eigen.hpp"

using Mat8 = Eigen::Matrix<double, 8, 8>;
using Mat12 = Eigen::Matrix<double, 12, 12>;

namespace {

template <int N>
double min_eigenvalue(const Eigen::Matrix<double, N, N>& a)
{
    return weft_test::symmetric_eigenvalues(a).minCoeff();
}

/// The closest PSD matrix (Frobenius) by a full eigen-decomposition; with
/// `absolute`, V |Λ| Vᵀ instead.
template <int N>
Eigen::Matrix<double, N, N> reference_projection(const Eigen::Matrix<double, N, N>& a, bool absolute = false)
{
    const weft_test::SymmetricEigen es = weft_test::symmetric_eigen(a);
    const Eigen::VectorXd filtered = absolute ? Eigen::VectorXd(es.values.cwiseAbs()) : es.values.cwiseMax(0.0);
    return es.vectors * filtered.asDiagonal() * es.vectors.transpose();
}

}  // namespace

TEST_CASE("difference projection: a compressed segment's stretch Hessian", "[element][projection]")
{
    weft_test::Random rng(4);
    const weft::QuadraticDensity<double, 1> density{500.0};
    int indefinite = 0, checks = 0;
    for (int trial = 0; trial < 50; ++trial) {
        Eigen::Matrix<double, 8, 1> q, v = Eigen::Matrix<double, 8, 1>::Zero();
        const Eigen::Vector3d x0 = rng.vector<3>(-1, 1);
        const Eigen::Vector3d dx = rng.unit_vector() * rng.uniform(0.5, 1.5);  // strain in [−0.5, 0.5]
        q << x0, 0.3, x0 + dx, 1.3;
        const auto e = weft::stretch_strain<double>(q, v);
        const Mat8 hessian = -weft::elastic_force_jacobian(e, density);
        if (min_eigenvalue<8>(hessian) < -1e-9 * hessian.norm()) ++indefinite;
        const Mat8 p = weft::project_segment_hessian<double>(hessian);
        CHECK(min_eigenvalue<8>(p) >= -1e-10 * hessian.norm());
        // The projection of [[H, −H], [−H, H]] in (Δx, Δs) is the closest PSD matrix.
        CHECK((p - reference_projection<8>(hessian)).norm() <= 1e-8 * hessian.norm());
        // D = [−I, I] is √2 times an isometry: the absolute filter in (Δx, Δs) is V |Λ| Vᵀ of ∇²V.
        const Mat8 pa = weft::project_segment_hessian<double>(hessian, true);
        CHECK((pa - reference_projection<8>(hessian, true)).norm() <= 1e-8 * hessian.norm());
        // Rigid translations stay in the null space.
        for (int axis = 0; axis < 4; ++axis) {
            Eigen::Matrix<double, 8, 1> t = Eigen::Matrix<double, 8, 1>::Zero();
            t(axis) = t(4 + axis) = 1;
            CHECK((p * t).norm() <= 1e-10 * hessian.norm());
        }
        checks += 7;
    }
    CHECK(indefinite > 5);  // compressed segments exist among the trials
    REQUIRE(checks == 350);
}

TEST_CASE("difference projection: the shear Hessian at a crossing", "[element][projection]")
{
    weft_test::Random rng(5);
    const weft::QuadraticDensity<double, 1> density{1e-2};
    int indefinite = 0, checks = 0;
    for (int trial = 0; trial < 50; ++trial) {
        Eigen::Matrix<double, 12, 1> q, v = Eigen::Matrix<double, 12, 1>::Zero();
        const Eigen::Vector3d x0 = rng.vector<3>(-1, 1);
        const Eigen::Vector3d a = rng.unit_vector() * rng.uniform(0.5, 1.5);
        const Eigen::Vector3d b = rng.unit_vector() * rng.uniform(0.5, 1.5);
        q << x0, 0.0, x0 + a, 1.0, x0 + b, 2.0;
        const auto e = weft::shear_strain<double>(q, v, 1.0);
        const Mat12 hessian = -weft::elastic_force_jacobian(e, density);
        REQUIRE(hessian.norm() > 0);
        if (min_eigenvalue<12>(hessian) < -1e-9 * hessian.norm()) ++indefinite;
        const Mat12 p = weft::project_crossing_hessian<double>(hessian);
        CHECK(min_eigenvalue<12>(p) >= -1e-10 * hessian.norm());
        // D is not an isometry here, so Dᵀ Π(H_d) D is not the Frobenius-closest
        // PSD matrix; it only removes the negative part: p ⪰ ∇²V, equal when ∇²V ⪰ 0.
        const Mat12 added = p - hessian;
        CHECK(min_eigenvalue<12>(added) >= -1e-10 * hessian.norm());
        const Mat12 psd = reference_projection<12>(hessian);
        CHECK((weft::project_crossing_hessian<double>(psd) - psd).norm() <= 1e-8 * hessian.norm());
        // The absolute filter: PSD, above the clamp's (|λ| ≥ max(λ, 0) in H_d), equal to it where ∇²V ⪰ 0.
        const Mat12 pa = weft::project_crossing_hessian<double>(hessian, true);
        CHECK(min_eigenvalue<12>(pa) >= -1e-10 * hessian.norm());
        CHECK(min_eigenvalue<12>(Mat12(pa - p)) >= -1e-10 * hessian.norm());
        CHECK((weft::project_crossing_hessian<double>(psd, true) - psd).norm() <= 1e-8 * hessian.norm());
        for (int axis = 0; axis < 3; ++axis) {
            Eigen::Matrix<double, 12, 1> t = Eigen::Matrix<double, 12, 1>::Zero();
            t(axis) = t(4 + axis) = t(8 + axis) = 1;
            CHECK((p * t).norm() <= 1e-10 * hessian.norm());
        }
        checks += 9;
    }
    CHECK(indefinite > 5);
    REQUIRE(checks == 450);
}
