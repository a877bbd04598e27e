// PSD projection of translation-invariant element Hessians in their
// difference variables (element/difference_projection.hpp), and on the
// complement of the translations (project_translation_invariant_to_psd):
// against a reference eigen-decomposition, on random and edge-case matrices
// and on the bending element's clamped dissipative stiffness.
#include <catch2/catch.hpp>

#include <cmath>

#include <Eigen/Core>

#include <weft/element/bending_element.hpp>
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

TEST_CASE("difference projection: the segment's closed form given its direction", "[element][projection]")
{
    weft_test::Random rng(14);
    int closed_forms = 0, indefinite = 0, checks = 0;
    const auto check_against_reference = [&](const Mat8& hessian, const Eigen::Vector3d& direction) {
        const Mat8 p = weft::project_segment_hessian<double>(hessian, direction);
        const Mat8 pa = weft::project_segment_hessian<double>(hessian, direction, true);
        const double scale = hessian.norm();
        CHECK((p - reference_projection<8>(hessian)).norm() <= 1e-9 * scale);
        CHECK((pa - reference_projection<8>(hessian, true)).norm() <= 1e-9 * scale);
        CHECK((p - weft::project_segment_hessian<double>(hessian)).norm() <= 1e-9 * scale);
        CHECK(min_eigenvalue<8>(p) >= -1e-10 * scale);
        checks += 4;
    };

    SECTION("stretch and its damping stiffness of random segments, stretched and compressed, clamped and not")
    {
        const weft::QuadraticDensity<double, 1> elastic{500.0};
        const weft::QuadraticDensity<double, 1> damping{3.0};
        for (int trial = 0; trial < 200; ++trial) {
            Eigen::Matrix<double, 8, 1> q, v;
            const Eigen::Vector3d x0 = rng.vector<3>(-1, 1);
            const double s0 = rng.uniform(-1, 1), ds = rng.uniform(0.5, 1.5);
            const Eigen::Vector3d dx = rng.unit_vector() * ds * rng.uniform(0.4, 1.6);
            q << x0, s0, x0 + dx, s0 + ds;
            v = rng.vector<8>(-20, 20);
            const auto e = weft::stretch_strain<double>(q, v);
            const weft::StressClamp clamp = trial % 2 == 0 ? weft::StressClamp::on : weft::StressClamp::off;
            const Mat8 hessian = -weft::elastic_force_jacobian(e, elastic) -
                                 weft::dissipative_force_jacobian(e, damping, weft::DiffWrt::positions, clamp);
            Eigen::Matrix4d negative;
            if (weft::detail::segment_negative_part<double>(Eigen::Matrix4d(hessian.block<4, 4>(4, 4)), dx, negative))
                ++closed_forms;
            if (min_eigenvalue<8>(hessian) < -1e-9 * hessian.norm()) ++indefinite;
            check_against_reference(hessian, dx);
        }
        CHECK(closed_forms == 200);
        CHECK(indefinite > 50);
        REQUIRE(checks == 800);
    }

    SECTION("every sign of c and of the 2 × 2 block's eigenvalues, repeated and zero ones")
    {
        const double values[] = {-3.0, -1e-3, 0.0, 1e-3, 2.0};
        for (double c : values) {
            for (double upper : values) {
                for (double lower : values) {
                    if (lower > upper) continue;
                    const Eigen::Vector3d t = rng.unit_vector();
                    const double angle = rng.uniform(0, 3.14159);
                    const Eigen::Vector2d u(std::cos(angle), std::sin(angle));
                    const Eigen::Vector2d w(-u(1), u(0));
                    const Eigen::Matrix2d block = upper * u * u.transpose() + lower * w * w.transpose();
                    Eigen::Matrix4d h = Eigen::Matrix4d::Zero();
                    h.block<3, 3>(0, 0) =
                        c * (Eigen::Matrix3d::Identity() - t * t.transpose()) + block(0, 0) * t * t.transpose();
                    h.block<3, 1>(0, 3) = block(0, 1) * t;
                    h.block<1, 3>(3, 0) = block(1, 0) * t.transpose();
                    h(3, 3) = block(1, 1);
                    const Mat8 hessian = weft::detail::segment_difference_hessian<double>(h);
                    if (hessian.norm() == 0.0) {
                        CHECK(weft::project_segment_hessian<double>(hessian, t) == Mat8::Zero());
                        ++checks;
                        continue;
                    }
                    Eigen::Matrix4d negative;
                    REQUIRE(weft::detail::segment_negative_part<double>(h, t, negative));
                    // The direction's length does not matter.
                    check_against_reference(hessian, 2.5 * t);
                }
            }
        }
        REQUIRE(checks == 1 + 74 * 4);  // 5 × 15 cases, one of them zero
    }

    SECTION("a matrix not of the segment's form, or no direction, takes the general projection")
    {
        for (int trial = 0; trial < 20; ++trial) {
            const Eigen::Matrix<double, 16, 1> entries = rng.vector<16>(-1, 1);
            const Eigen::Matrix4d random = Eigen::Map<const Eigen::Matrix4d>(entries.data());
            const Eigen::Matrix4d h = random + random.transpose();
            Mat8 hessian;
            hessian << h, -h, -h, h;
            const Eigen::Vector3d t = rng.unit_vector();
            Eigen::Matrix4d negative;
            CHECK_FALSE(weft::detail::segment_negative_part<double>(h, t, negative));
            CHECK(weft::project_segment_hessian<double>(hessian, t) == weft::project_segment_hessian<double>(hessian));
            // A real segment's Hessian with the wrong direction, and with none (zero length).
            Eigen::Matrix<double, 8, 1> q;
            q << 0, 0, 0, 0, rng.unit_vector() * 0.7, 1.0;
            const auto e = weft::stretch_strain<double>(q, Eigen::Matrix<double, 8, 1>::Zero());
            const Mat8 stretch = -weft::elastic_force_jacobian(e, weft::QuadraticDensity<double, 1>{10.0});
            const Eigen::Vector3d across = q.segment<3>(4).cross(rng.unit_vector());
            CHECK_FALSE(weft::detail::segment_negative_part<double>(Eigen::Matrix4d(stretch.block<4, 4>(4, 4)), across,
                                                                    negative));
            CHECK_FALSE(weft::detail::segment_negative_part<double>(Eigen::Matrix4d(stretch.block<4, 4>(4, 4)),
                                                                    Eigen::Vector3d::Zero(), negative));
            CHECK(weft::project_segment_hessian<double>(stretch, Eigen::Vector3d::Zero()) ==
                  weft::project_segment_hessian<double>(stretch));
            // An entry or a direction that is not finite is left to the general solver too.
            const double bad = rng.uniform(0, 1) < 0.5 ? std::nan("") : -HUGE_VAL;
            Eigen::Matrix4d broken = stretch.block<4, 4>(4, 4);
            broken(trial % 4, (trial / 4) % 4) = bad;
            CHECK_FALSE(
                weft::detail::segment_negative_part<double>(broken, Eigen::Vector3d(q.segment<3>(4)), negative));
            Eigen::Vector3d bad_direction = q.segment<3>(4);
            bad_direction(trial % 3) = bad;
            CHECK_FALSE(weft::detail::segment_negative_part<double>(Eigen::Matrix4d(stretch.block<4, 4>(4, 4)),
                                                                    bad_direction, negative));
            CHECK(weft::project_segment_hessian<double>(stretch, bad_direction) ==
                  weft::project_segment_hessian<double>(stretch));
            checks += 8;
        }
        REQUIRE(checks == 160);
    }
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

namespace {

/// A random symmetric indefinite matrix over `Nodes` nodes of `Dofs` DoFs
/// that is blind to translations: Dᵀ H D, D the differences of consecutive
/// nodes per DoF, H random symmetric with entries in [−1, 1] times `scale`.
template <int Nodes, int Dofs>
Eigen::Matrix<double, Nodes * Dofs, Nodes * Dofs> random_translation_invariant(weft_test::Random& rng, double scale,
                                                                               int rank)
{
    constexpr int N = Nodes * Dofs, R = (Nodes - 1) * Dofs;
    Eigen::Matrix<double, R, N> d = Eigen::Matrix<double, R, N>::Zero();
    for (int j = 0; j + 1 < Nodes; ++j) {
        for (int c = 0; c < Dofs; ++c) {
            d(j * Dofs + c, j * Dofs + c) = -1;
            d(j * Dofs + c, (j + 1) * Dofs + c) = 1;
        }
    }
    Eigen::Matrix<double, R, R> h = Eigen::Matrix<double, R, R>::Zero();
    for (int k = 0; k < rank; ++k) {
        Eigen::Matrix<double, R, 1> x;
        for (int i = 0; i < R; ++i) x(i) = rng.uniform(-1, 1);
        h += rng.uniform(-1, 1) * x * x.transpose();
    }
    return scale * d.transpose() * h * d;
}

template <int Nodes, int Dofs>
int check_translation_invariant_projection(weft_test::Random& rng, int trials)
{
    constexpr int N = Nodes * Dofs;
    using MatN = Eigen::Matrix<double, N, N>;
    int checks = 0;
    for (int trial = 0; trial < trials; ++trial) {
        const double scale = std::pow(10.0, rng.uniform(-12, 6));
        const int rank = 1 + trial % ((Nodes - 1) * Dofs);
        const MatN a = random_translation_invariant<Nodes, Dofs>(rng, scale, rank);
        const double norm = std::max(a.norm(), 1e-300);
        for (const bool absolute : {false, true}) {
            INFO("nodes " << Nodes << ", dofs " << Dofs << ", trial " << trial << ", absolute " << absolute);
            const MatN p = weft::project_translation_invariant_to_psd<double, Nodes, Dofs>(a, absolute);
            // The same matrix as the whole projection, and as the reference.
            CHECK((p - reference_projection<N>(a, absolute)).norm() <= 1e-10 * norm);
            CHECK((p - weft::project_to_psd<double, N>(a, absolute)).norm() <= 1e-10 * norm);
            CHECK(p == p.transpose());
            for (int c = 0; c < Dofs; ++c) {
                Eigen::Matrix<double, N, 1> t = Eigen::Matrix<double, N, 1>::Zero();
                for (int n = 0; n < Nodes; ++n) t(n * Dofs + c) = 1;
                CHECK((p * t).norm() <= 1e-12 * norm);
            }
            checks += 3 + Dofs;
        }
    }
    return checks;
}

}  // namespace

TEST_CASE("difference projection: a translation-invariant matrix projected on the translations' complement",
          "[element][projection]")
{
    weft_test::Random rng(6);
    int checks = 0;
    checks += check_translation_invariant_projection<3, 4>(rng, 60);  // a bending stencil
    checks += check_translation_invariant_projection<2, 4>(rng, 30);  // a segment
    checks += check_translation_invariant_projection<4, 3>(rng, 30);  // a dihedral hinge
    REQUIRE(checks == 60 * 2 * 7 + 30 * 2 * 7 + 30 * 2 * 6);

    // Edge cases: zero, PSD (returned as is, to rounding), negative definite
    // on the complement (projected to zero), and a matrix that is not blind
    // to translations, which is projected whole (the same bits as project_to_psd).
    const Mat12 zero = Mat12::Zero();
    CHECK(weft::project_translation_invariant_to_psd<double, 3, 4>(zero) == zero);
    Mat12 psd = Mat12::Zero();
    for (int k = 0; k < 8; ++k) {
        const Mat12 one = random_translation_invariant<3, 4>(rng, 1.0, 1);
        psd += reference_projection<12>(one);
    }
    CHECK((weft::project_translation_invariant_to_psd<double, 3, 4>(psd) - psd).norm() <= 1e-13 * psd.norm());
    CHECK(weft::project_translation_invariant_to_psd<double, 3, 4>(Mat12(-psd)).norm() <= 1e-13 * psd.norm());
    CHECK((weft::project_translation_invariant_to_psd<double, 3, 4>(Mat12(-psd), true) - psd).norm() <=
          1e-12 * psd.norm());
    Mat12 general;
    for (int i = 0; i < 12; ++i)
        for (int j = 0; j <= i; ++j) general(i, j) = general(j, i) = rng.uniform(-1, 1);
    for (const bool absolute : {false, true}) {
        CHECK(weft::project_translation_invariant_to_psd<double, 3, 4>(general, absolute) ==
              weft::project_to_psd<double, 12>(general, absolute));
        // Blind to translations but for one entry pair well above rounding.
        Mat12 nearly = random_translation_invariant<3, 4>(rng, 1.0, 8);
        nearly(0, 5) += 1e-6;
        nearly(5, 0) += 1e-6;
        CHECK(weft::project_translation_invariant_to_psd<double, 3, 4>(nearly, absolute) ==
              weft::project_to_psd<double, 12>(nearly, absolute));
    }
}

TEST_CASE("difference projection: the bending element's clamped dissipative stiffness on the translations' complement",
          "[element][projection][bending]")
{
    // The vector form's −Ω Π(Σ_k S_d,k Hε_k) (2018 Eq. 9 with the stress
    // clamp of Sec. 3.4) against the whole 12 × 12 projection of the
    // unclamped sum, on random stencils: straight, bent, folded, moving.
    weft_test::Random rng(7);
    const weft::QuadraticDensity<double, 3> damping{2e-3};
    int compared = 0, clamped = 0;
    for (int trial = 0; trial < 60; ++trial) {
        const double angle = trial % 6 == 0 ? 0.0 : rng.uniform(-0.08, 0.08);
        Eigen::Matrix<double, 12, 1> q, v;
        const Eigen::Vector3d x0 = rng.vector<3>(-1, 1);
        const Eigen::Vector3d x1 = x0 + Eigen::Vector3d(1, 0, 0) * rng.uniform(0.8, 1.2);
        const Eigen::Vector3d x2 =
            x1 +
            Eigen::Vector3d(std::cos(angle), 0.2 * rng.uniform(-angle, angle), std::sin(angle)) * rng.uniform(0.8, 1.2);
        const double s0 = rng.uniform(-1, 1);
        q << x0, s0, x1, s0 + 1.0, x2, s0 + 2.0;
        for (int i = 0; i < 12; ++i) v(i) = rng.uniform(-1, 1);
        const weft::BendingForms<double> f = weft::bending_forms<double>(q, v);
        if (!f.vector_active) continue;
        const auto& e = f.vector_form;
        const Mat12 unclamped =
            weft::dissipative_force_jacobian(e, damping, weft::DiffWrt::positions, weft::StressClamp::off);
        const Mat12 reference = -reference_projection<12>(Mat12(-unclamped));
        const Mat12 whole = -weft::project_to_psd<double, 12>(Mat12(-unclamped));
        const Mat12 fast =
            weft::dissipative_force_jacobian<3>(e, damping, weft::DiffWrt::positions, weft::StressClamp::on);
        const double norm = std::max(unclamped.norm(), 1e-300);
        INFO("trial " << trial);
        CHECK((fast - reference).norm() <= 1e-9 * norm);
        CHECK((fast - whole).norm() <= 1e-9 * norm);
        if ((reference - unclamped).norm() > 1e-6 * norm) ++clamped;
        ++compared;
    }
    CHECK(compared >= 50);
    CHECK(clamped >= 10);  // stencils whose clamp removes a negative part
}
