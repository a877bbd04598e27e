#include <weft/element/membrane_element.hpp>
#include <weft/potential/tabulated.hpp>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "support/element_checks.hpp"
#include "support/fd_check.hpp"
#include "support/random.hpp"
#include "support/symmetric_eigen.hpp"

using Catch::Matchers::Contains;
using weft_test::AllowZero;
using weft_test::FdChecker;
using weft_test::MatrixX;
using weft_test::Random;
using weft_test::VectorX;
using Vec9 = Eigen::Matrix<double, 9, 1>;
using Mat9 = Eigen::Matrix<double, 9, 9>;
using Eigen::Matrix2d;
using Eigen::Matrix3d;
using Eigen::Vector2d;
using Eigen::Vector3d;
using Curve = weft::TabulatedCurve<double>;
using Density = weft::TabulatedMembraneDensity<double>;

namespace {

/// Knots as a user gives them.
struct Table {
    std::string name;
    std::vector<double> strain;
    std::vector<double> stress;
};

// Woven-cotton-like shapes (soft toe, then stiffening), N/m against Green strain.
const Table warp_table{"warp",
                       {0.0, 0.002, 0.004, 0.007, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04},
                       {0.0, 1.0, 3.0, 8.0, 16.0, 36.0, 66.0, 106.0, 152.0, 256.0}};
const Table weft_table{"weft",  // (0, 0) implied
                       {0.004, 0.008, 0.012, 0.02, 0.03, 0.04, 0.05, 0.06},
                       {0.8, 2.4, 5.0, 13.0, 30.0, 58.0, 100.0, 160.0}};
const Table shear_table{"shear",  // against γ = 2ε₁₂
                        {0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5},
                        {0.0, 0.3, 0.7, 1.3, 1.9, 2.6, 4.4, 7.5, 12.0}};
// A prescribed compression side (no odd extension), with (0, 0) given.
const Table two_sided_table{
    "two-sided", {-0.1, -0.05, -0.02, 0.0, 0.02, 0.05, 0.1}, {-2.0, -0.8, -0.2, 0.0, 0.5, 2.0, 6.0}};
// Both signs, (0, 0) implied between them.
const Table two_sided_implied_table{"two-sided-implied", {-0.05, -0.01, 0.01, 0.04}, {-1.0, -0.1, 0.3, 2.0}};
// Compression only: (0, 0) appended, linear extrapolation above 0.
const Table compression_table{"compression", {-0.1, -0.05}, {-3.0, -1.0}};
// Flat runs and a step: the classic overshoot case for splines.
const Table flat_table{"flat", {0.01, 0.02, 0.03, 0.05, 0.06, 0.07}, {1.0, 1.0, 1.0, 5.0, 5.0, 5.0}};
// One knot besides (0, 0): a straight line.
const Table single_table{"single", {0.05}, {2.0}};

const std::vector<Table>& all_tables()
{
    static const std::vector<Table> tables{
        warp_table,        weft_table, shear_table, two_sided_table, two_sided_implied_table,
        compression_table, flat_table, single_table};
    return tables;
}

Curve curve_of(const Table& t)
{
    return weft::make_tabulated_curve<double>(t.name, t.strain, t.stress);
}

Density sample_density()
{
    return Density{curve_of(warp_table), curve_of(weft_table), curve_of(shear_table)};
}

/// A random monotone table: random spacing, random increments with flat runs and jumps.
Table random_monotone_table(Random& rng, bool with_negative)
{
    Table t{"random", {}, {}};
    const int n = int(rng.uniform(3, 20));
    double x = with_negative ? -rng.uniform(0.01, 0.2) : rng.uniform(0.001, 0.05);
    double y = with_negative ? -rng.uniform(0.1, 10) : rng.uniform(0, 5);
    for (int k = 0; k < n; ++k) {
        if (with_negative && x < 0 && x + 0.03 >= 0) x = 0, y = 0;  // pass through (0, 0) exactly
        t.strain.push_back(x);
        t.stress.push_back(x == 0 ? 0.0 : y);
        const double kind = rng.uniform(0, 1);
        x += std::pow(10.0, rng.uniform(-3, -1));
        const double step = kind < 0.25 ? 0.0 : (kind < 0.4 ? rng.uniform(10, 100) : rng.uniform(0, 3));
        if (x < 0) {
            y = std::min(0.0, y + step);
        } else {
            y = std::max(t.stress.back(), 0.0) + step;
        }
    }
    return t;
}

/// The smallest knot spacing of a curve.
double min_spacing(const Curve& c)
{
    double h = std::numeric_limits<double>::infinity();
    for (int k = 0; k + 1 < c.knot_count; ++k) h = std::min(h, c.knot_strain[k + 1] - c.knot_strain[k]);
    return h;
}

/// Distance from x to the nearest knot (its mirror image included for an odd extension).
double distance_to_knot(const Curve& c, double x)
{
    double d = std::numeric_limits<double>::infinity();
    for (int k = 0; k < c.knot_count; ++k) {
        d = std::min(d, std::abs(x - c.knot_strain[k]));
        if (c.odd_extension) d = std::min(d, std::abs(x + c.knot_strain[k]));
    }
    return d;
}

/// Largest |σ| at the knots, and largest σ′ at the knots or secant: the scales of the FD comparisons
/// (polyfem's max(|a|, |b|, 1) in the curve's own units, so that roundoff in differences of a large ψ
/// does not fail a tiny σ).
double stress_scale(const Curve& c)
{
    double s = 0;
    for (int k = 0; k < c.knot_count; ++k) s = std::max(s, std::abs(c.knot_stress[k]));
    return s;
}

double slope_scale(const Curve& c)
{
    double s = 0;
    for (int k = 0; k < c.knot_count; ++k) s = std::max(s, c.knot_slope[k]);
    for (int k = 0; k + 1 < c.knot_count; ++k)
        s = std::max(s, (c.knot_stress[k + 1] - c.knot_stress[k]) / (c.knot_strain[k + 1] - c.knot_strain[k]));
    return s;
}

/// FD checks of one curve at x: ψ′ = σ and σ′ = dσ/dε, each scaled by max(|a|, |b|, floor × curve scale).
/// Returns the number of checks.
int check_curve_derivatives(FdChecker& checker, const Curve& c, double x, const std::string& where,
                            AllowZero allow_zero = AllowZero::no, double floor = 1.0)
{
    const VectorX at = VectorX::Constant(1, x);
    const int before = checker.checks;
    const double saved = checker.floor;
    checker.floor = floor * stress_scale(c);
    checker.gradient([&](const VectorX& e) { return c.value(e(0)); }, at, VectorX::Constant(1, c.stress(x)),
                     where + ": dpsi/deps = sigma", allow_zero);
    checker.floor = floor * slope_scale(c);
    checker.gradient([&](const VectorX& e) { return c.stress(e(0)); }, at, VectorX::Constant(1, c.stress_derivative(x)),
                     where + ": dsigma/deps = sigma'", allow_zero);
    checker.floor = saved;
    return checker.checks - before;
}

/// ∫₀^x σ by 8-point Gauss–Legendre on every piece between 0, the knots (and their mirror images) and x.
double quadrature_energy(const Curve& c, double x)
{
    static const double nodes[4] = {0.1834346424956498, 0.5255324099163290, 0.7966664774136267, 0.9602898564975363};
    static const double weights[4] = {0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763};
    std::vector<double> cuts{0.0, x};
    for (int k = 0; k < c.knot_count; ++k) {
        for (const double knot : {c.knot_strain[k], -c.knot_strain[k]}) {
            if ((knot > std::min(0.0, x)) && (knot < std::max(0.0, x))) cuts.push_back(knot);
        }
    }
    std::sort(cuts.begin(), cuts.end());
    double sum = 0;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
        const double mid = 0.5 * (cuts[i] + cuts[i + 1]), half = 0.5 * (cuts[i + 1] - cuts[i]);
        for (int g = 0; g < 4; ++g)
            sum += half * weights[g] * (c.stress(mid - half * nodes[g]) + c.stress(mid + half * nodes[g]));
    }
    return x >= 0 ? sum : -sum;
}

// ---------------------------------------------------------------------------
// Membrane patch for the GNATV stretch test.

/// A rectangle [0, L] × [0, H] of two triangles (0, 1, 2), (0, 2, 3); nodes 1, 2 on the right edge, 2, 3 on top.
struct Patch {
    double length = 0.3, height = 0.2;  ///< not square: a mixed-up L and H would show
    Vector2d uv[4];
    weft::TabulatedMembraneElement<double> triangles[2];

    explicit Patch(const Density& density)
    {
        uv[0] = {0, 0}, uv[1] = {length, 0}, uv[2] = {length, height}, uv[3] = {0, height};
        const int tri[2][3] = {{0, 1, 2}, {0, 2, 3}};
        for (int t = 0; t < 2; ++t) {
            triangles[t] = weft::make_membrane_element<double>(
                weft::make_triangle_rest<double>(uv[tri[t][0]], uv[tri[t][1]], uv[tri[t][2]]), density,
                weft::StVKDensity<double>{0.1, 0.2});
        }
    }

    /// Second Piola–Kirchhoff stress (tensor) measured from the nodal forces of the homogeneous
    /// deformation x = R F X + c: the forces on the right edge sum to −H P e₁ and on the top edge to
    /// −L P e₂ (Σ over an edge's shape functions is X/L resp. Y/H), P = R F S.
    Matrix2d measured_stress(const Matrix3d& r, const Matrix2d& f, const Vector3d& c) const
    {
        const int tri[2][3] = {{0, 1, 2}, {0, 2, 3}};
        Vector3d x[4];
        for (int a = 0; a < 4; ++a) x[a] = r * Vector3d((f * uv[a]).x(), (f * uv[a]).y(), 0) + c;
        Vector3d force[4] = {Vector3d::Zero(), Vector3d::Zero(), Vector3d::Zero(), Vector3d::Zero()};
        for (int t = 0; t < 2; ++t) {
            Vec9 q;
            for (int a = 0; a < 3; ++a) q.segment<3>(3 * a) = x[tri[t][a]];
            const auto out = weft::evaluate_membrane(triangles[t], q, Vec9::Zero().eval());
            REQUIRE(out.status == weft::StrainStatus::ok);
            for (int a = 0; a < 3; ++a) force[tri[t][a]] += out.force().segment<3>(3 * a);
        }
        Eigen::Matrix<double, 3, 2> p;
        p.col(0) = -(force[1] + force[2]) / height;
        p.col(1) = -(force[2] + force[3]) / length;
        const Eigen::Matrix<double, 3, 2> p_material = r.transpose() * p;
        REQUIRE(std::abs(p_material(2, 0)) + std::abs(p_material(2, 1)) <= 1e-10 * (1 + p_material.norm()));
        return f.inverse() * p_material.topRows<2>();
    }
};

Matrix2d stretch(double warp, double weft)
{
    return Vector2d(warp, weft).asDiagonal();
}

/// Stretch λ with Green strain ε: λ = √(1 + 2ε).
double stretch_for(double green_strain)
{
    return std::sqrt(1 + 2 * green_strain);
}

/// Picture-frame shear: warp and weft keep their length, f₁·f₂ = sin 2a = γ.
Matrix2d picture_frame(double gamma)
{
    const double a = 0.5 * std::asin(gamma);
    Matrix2d f;
    f << std::cos(a), std::sin(a), std::sin(a), std::cos(a);
    return f;
}

/// Strains at which to test a table: its knots, midpoints, random points, beyond the end, compression.
std::vector<double> test_strains(const Table& t, Random& rng)
{
    std::vector<double> x;
    for (std::size_t k = 0; k < t.strain.size(); ++k) {
        x.push_back(t.strain[k]);
        if (k + 1 < t.strain.size()) {
            x.push_back(0.5 * (t.strain[k] + t.strain[k + 1]));
            x.push_back(rng.uniform(t.strain[k], t.strain[k + 1]));
        }
    }
    x.push_back(t.strain.back() * 1.5);
    x.push_back(-0.5 * t.strain[1]);
    x.push_back(-t.strain.back());
    return x;
}

/// Rigid velocity field t + ω × x at the three nodes.
Vec9 rigid_velocity(const Vec9& q, const Vector3d& t, const Vector3d& omega)
{
    Vec9 v;
    for (int a = 0; a < 3; ++a) v.segment<3>(3 * a) = t + omega.cross(Vector3d(q.segment<3>(3 * a)));
    return v;
}

/// A random rest triangle and a deformation x = R (I + G) X + t + noise with |G| ~ amplitude.
struct TriangleState {
    weft::TriangleRest<double> rest;
    Vec9 q;
};

TriangleState random_triangle(Random& rng, double amplitude)
{
    Vector2d uv[3];
    double area = 0;
    do {
        for (auto& p : uv) p = rng.vector<2>(-1, 1);
        area = 0.5 * std::abs((uv[1] - uv[0]).x() * (uv[2] - uv[0]).y() - (uv[1] - uv[0]).y() * (uv[2] - uv[0]).x());
    } while (area < 0.1);
    TriangleState s{weft::make_triangle_rest<double>(uv[0], uv[1], uv[2]), Vec9::Zero()};
    Matrix2d g;
    g << rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1);
    const Matrix2d f = Matrix2d::Identity() + amplitude * g;
    const Matrix3d r = weft_test::random_rotation(rng);
    const Vector3d t = rng.vector<3>(-1, 1);
    for (int a = 0; a < 3; ++a) {
        const Vector2d x = f * uv[a];
        s.q.segment<3>(3 * a) = r * Vector3d(x.x(), x.y(), 0.01 * amplitude * rng.uniform(-1, 1)) + t;
    }
    return s;
}

}  // namespace

// ---------------------------------------------------------------------------
// One curve

TEST_CASE("tabulated curve: the interpolant passes through every knot, the implied (0, 0) included",
          "[potential][tabulated][knots]")
{
    int checks = 0, expected = 0;
    for (const Table& t : all_tables()) {
        INFO(t.name);
        const Curve c = curve_of(t);
        const bool has_zero = std::find(t.strain.begin(), t.strain.end(), 0.0) != t.strain.end();
        expected += 2 * int(t.strain.size()) + 2 + 2 * (int(t.strain.size()) + (has_zero ? 0 : 1));
        CHECK(c.knot_count == int(t.strain.size()) + (has_zero ? 0 : 1));
        CHECK(c.odd_extension == (t.strain.front() >= 0));
        double scale = 1e-300;
        for (const double s : t.stress) scale = std::max(scale, std::abs(s));
        for (std::size_t k = 0; k < t.strain.size(); ++k) {
            CHECK(std::abs(c.stress(t.strain[k]) - t.stress[k]) <= 1e-14 * scale);
            // From the left piece (t → 1) as well.
            const double left = t.strain[k] - 1e-13 * std::max(1.0, std::abs(t.strain[k]));
            CHECK(std::abs(c.stress(left) - t.stress[k]) <= 1e-9 * scale);
            checks += 2;
        }
        CHECK(c.stress(0.0) == 0.0);
        CHECK(c.value(0.0) == 0.0);
        checks += 2;
        for (int k = 0; k < c.knot_count; ++k) {
            CHECK(c.value(c.knot_strain[k]) == Approx(c.knot_energy[k]).epsilon(1e-14).margin(1e-300));
            CHECK(c.stress_derivative(c.knot_strain[k]) == Approx(c.knot_slope[k]).epsilon(1e-13));
            checks += 2;
        }
        REQUIRE_NOTHROW(weft::require_valid_tabulated_curve(t.name, c));
    }
    REQUIRE(expected > 0);
    REQUIRE(checks == expected);
}

TEST_CASE("tabulated curve: monotone data give a monotone curve with sigma' >= 0 everywhere",
          "[potential][tabulated][monotone]")
{
    Random rng(101);
    std::vector<Table> tables = all_tables();
    for (int r = 0; r < 40; ++r) tables.push_back(random_monotone_table(rng, r % 2 == 1));
    int checks = 0, random_with_flat = 0;
    for (const Table& t : tables) {
        INFO(t.name << " with " << t.strain.size() << " knots");
        const Curve c = curve_of(t);
        const double lo = c.knot_strain[0], hi = c.knot_strain[c.knot_count - 1];
        const double span = hi - lo;
        double scale = 1e-300;
        for (int k = 0; k < c.knot_count; ++k) scale = std::max(scale, std::abs(c.knot_stress[k]));
        const double from = c.odd_extension ? -hi - 0.5 * span : lo - 0.5 * span;
        constexpr int samples = 4000;
        double previous = c.stress(from), min_slope = std::numeric_limits<double>::infinity();
        bool monotone = true;
        for (int i = 1; i <= samples; ++i) {
            const double x = from + (hi + 0.5 * span - from) * i / samples;
            const double s = c.stress(x);
            monotone = monotone && s >= previous - 1e-13 * scale;
            min_slope = std::min(min_slope, c.stress_derivative(x));
            previous = s;
        }
        CHECK(monotone);
        CHECK(min_slope >= 0.0);
        // Between two knots the curve stays within their stresses (no overshoot).
        bool bounded = true;
        for (int k = 0; k + 1 < c.knot_count; ++k) {
            for (int i = 1; i < 50; ++i) {
                const double s = c.stress(c.knot_strain[k] + (c.knot_strain[k + 1] - c.knot_strain[k]) * i / 50);
                bounded = bounded && s >= c.knot_stress[k] - 1e-13 * scale && s <= c.knot_stress[k + 1] + 1e-13 * scale;
            }
            if (t.name == "random" && c.knot_stress[k] == c.knot_stress[k + 1] && c.knot_strain[k] != 0)
                ++random_with_flat;
        }
        CHECK(bounded);
        checks += 3;
    }
    REQUIRE(random_with_flat >= 5);  // the random tables do exercise flat runs
    REQUIRE(checks == 3 * int(tables.size()));
}

TEST_CASE("tabulated curve: C1 at every knot, sigma' jumps are absent, flat data stay flat",
          "[potential][tabulated][smoothness]")
{
    Random rng(102);
    std::vector<Table> tables = all_tables();
    for (int r = 0; r < 20; ++r) tables.push_back(random_monotone_table(rng, r % 2 == 0));
    int checks = 0, expected = 0;
    for (const Table& t : tables) {
        INFO(t.name);
        const Curve c = curve_of(t);
        double scale = 1e-300, slope_scale = 1e-300;
        for (int k = 0; k < c.knot_count; ++k) {
            scale = std::max(scale, std::abs(c.knot_stress[k]));
            slope_scale = std::max(slope_scale, c.knot_slope[k]);
        }
        const double delta = 1e-9 * min_spacing(c);
        for (int k = 0; k < c.knot_count; ++k) {
            const double x = c.knot_strain[k];
            CHECK(std::abs(c.stress(x - delta) - c.stress(x + delta)) <= 1e-6 * scale);
            CHECK(std::abs(c.stress_derivative(x - delta) - c.stress_derivative(x + delta)) <= 1e-6 * slope_scale);
            CHECK(std::abs(c.stress_derivative(x - delta) - c.knot_slope[k]) <= 1e-6 * slope_scale);
            checks += 3;
            expected += 3;
        }
        // Equal stresses at both ends of a piece: both slopes are 0 (PCHIP), so the piece is flat.
        for (int k = 0; k + 1 < c.knot_count; ++k) {
            if (c.knot_stress[k] == c.knot_stress[k + 1]) {
                const double mid = 0.5 * (c.knot_strain[k] + c.knot_strain[k + 1]);
                CHECK(c.stress_derivative(mid) == 0.0);
                CHECK(c.stress(mid) == Approx(c.knot_stress[k]).epsilon(1e-15).margin(1e-300));
                checks += 2;
            }
        }
    }
    REQUIRE(expected > 100);
    REQUIRE(checks >= expected + 2 * 4);  // the "flat" table alone has four flat pieces
}

TEST_CASE("tabulated curve: dpsi/deps = sigma and dsigma/deps = sigma' by finite differences",
          "[potential][tabulated][gradient]")
{
    Random rng(103);
    std::vector<Table> tables = all_tables();
    for (int r = 0; r < 10; ++r) tables.push_back(random_monotone_table(rng, r % 2 == 0));
    FdChecker checker;
    checker.tolerance = 1e-6;
    int random_points = 0, near_knot = 0, at_knot = 0, extrapolated = 0, near_zero = 0, negative = 0;
    for (const Table& t : tables) {
        INFO(t.name);
        const Curve c = curve_of(t);
        const double lo = c.knot_strain[0], hi = c.knot_strain[c.knot_count - 1];
        const double h_min = min_spacing(c);
        // Flat data have σ′ = 0 on whole pieces, and σ = 0 left of the first positive stress.
        const bool has_flat = t.name == "flat" || t.name == "random";
        const AllowZero allow = has_flat ? AllowZero::yes : AllowZero::no;
        checker.step = 1e-4 * h_min;

        // Random points inside the table, kept two steps away from knots so no difference straddles one.
        for (int i = 0; i < 20; ++i) {
            double x = 0;
            do x = rng.uniform(lo, hi);
            while (distance_to_knot(c, x) < 2 * checker.step);
            random_points += check_curve_derivatives(checker, c, x, "random point", allow);
        }
        // Close to every knot, on both sides, without straddling it.
        for (int k = 0; k < c.knot_count; ++k) {
            for (const double side : {-3.0, 3.0}) {
                const double x = c.knot_strain[k] + side * checker.step;
                if (x == 0.0) continue;
                near_knot += check_curve_derivatives(checker, c, x, "near knot " + std::to_string(k),
                                                     c.knot_strain[k] == 0 || has_flat ? AllowZero::yes : allow);
            }
        }
        // Beyond the ends (linear σ, quadratic ψ).
        for (const double d : {0.1, 1.0, 10.0}) {
            extrapolated += check_curve_derivatives(checker, c, hi + d * (hi - lo), "beyond the last knot", allow);
            if (!c.odd_extension)
                extrapolated += check_curve_derivatives(checker, c, lo - d * (hi - lo), "below the first knot", allow);
        }
        // Compression side of an odd extension (mirrored), random points.
        if (c.odd_extension) {
            for (int i = 0; i < 10; ++i) {
                double x = 0;
                do x = -rng.uniform(0, 2 * hi);
                while (distance_to_knot(c, x) < 2 * checker.step);
                negative += check_curve_derivatives(checker, c, x, "mirrored compression", allow);
            }
        }
        // Near 0 (a knot): tiny strains on both sides.
        for (const double x : {1e-3 * h_min, -1e-3 * h_min}) {
            FdChecker fine = checker;
            fine.step = 1e-6 * h_min;
            const int before = fine.checks;
            near_zero += check_curve_derivatives(fine, c, x, "near zero", AllowZero::yes);
            checker.checks += fine.checks - before;
        }
        // Exactly at knots: the difference straddles the knot, where σ″ jumps (C¹ only): error ≈
        // step |Δσ″| / 4 ≲ 1e-7 h_min · 6 max σ′ / h_min, so a smaller step and 1e-5 of the curve's scale.
        for (int k = 0; k < c.knot_count; ++k) {
            FdChecker fine = checker;
            fine.step = 1e-7 * h_min;
            fine.tolerance = 1e-5;
            const int before = fine.checks;
            at_knot +=
                check_curve_derivatives(fine, c, c.knot_strain[k], "at knot " + std::to_string(k), AllowZero::yes);
            checker.checks += fine.checks - before;
        }
    }
    const int n = int(tables.size());
    REQUIRE(random_points == n * 20 * 2);
    REQUIRE(near_knot > 2 * n * 2);
    REQUIRE(at_knot > n * 2 * 2);
    REQUIRE(extrapolated >= n * 3 * 2);
    REQUIRE(near_zero == n * 2 * 2);
    REQUIRE(negative > 0);
    REQUIRE(checker.checks == random_points + near_knot + at_knot + extrapolated + near_zero + negative);
}

TEST_CASE("tabulated curve: psi is the integral of sigma from 0, by quadrature, in and outside the table",
          "[potential][tabulated][energy]")
{
    Random rng(104);
    std::vector<Table> tables = all_tables();
    for (int r = 0; r < 10; ++r) tables.push_back(random_monotone_table(rng, r % 2 == 0));
    int checks = 0;
    for (const Table& t : tables) {
        INFO(t.name);
        const Curve c = curve_of(t);
        const double lo = c.knot_strain[0], hi = c.knot_strain[c.knot_count - 1];
        const double left = c.odd_extension ? -2 * hi : lo - (hi - lo);
        for (int i = 0; i < 25; ++i) {
            const double x = rng.uniform(left, hi + (hi - lo));
            const double psi = c.value(x), reference = quadrature_energy(c, x);
            INFO("x = " << x);
            CHECK(psi == Approx(reference).epsilon(1e-11).margin(1e-14 * std::abs(x) * (1 + c.knot_slope[0])));
            CHECK(psi >= 0.0);  // σ changes sign only at 0, so ψ ≥ 0 (convex with minimum 0 at 0)
            checks += 2;
        }
    }
    REQUIRE(checks == int(tables.size()) * 50);
}

TEST_CASE("tabulated curve: linear extrapolation with the end slope, odd extension for tension-only tables",
          "[potential][tabulated][extension]")
{
    int checks = 0;
    for (const Table& t : all_tables()) {
        INFO(t.name);
        const Curve c = curve_of(t);
        const int last = c.knot_count - 1;
        const double hi = c.knot_strain[last], lo = c.knot_strain[0];
        for (const double d : {1e-3, 0.1, 1.0, 5.0}) {
            // σ = σ_n + σ′_n d, σ′ = σ′_n, ψ = ψ_n + σ_n d + ½ σ′_n d²
            CHECK(c.stress(hi + d) == Approx(c.knot_stress[last] + c.knot_slope[last] * d).epsilon(1e-14));
            CHECK(c.stress_derivative(hi + d) == c.knot_slope[last]);
            CHECK(c.value(hi + d) ==
                  Approx(c.knot_energy[last] + c.knot_stress[last] * d + 0.5 * c.knot_slope[last] * d * d)
                      .epsilon(1e-14));
            checks += 3;
            if (c.odd_extension) {
                // Odd σ, even ψ and σ′.
                for (const double x : {0.37 * hi, hi, hi + d}) {
                    CHECK(c.stress(-x) == -c.stress(x));
                    CHECK(c.value(-x) == c.value(x));
                    CHECK(c.stress_derivative(-x) == c.stress_derivative(x));
                    checks += 3;
                }
            } else {
                CHECK(c.stress(lo - d) == Approx(c.knot_stress[0] - c.knot_slope[0] * d).epsilon(1e-14));
                CHECK(c.stress_derivative(lo - d) == c.knot_slope[0]);
                checks += 2;
            }
        }
        if (c.odd_extension) {
            // σ′(0) is the first secant (PCHIP on the mirrored data), so the rest state is a smooth minimum.
            CHECK(c.knot_slope[0] == Approx((c.knot_stress[1] - c.knot_stress[0]) / c.knot_strain[1]).epsilon(1e-13));
            ++checks;
        }
    }
    // Prescribed compression differs from the mirror image.
    const Curve two_sided = curve_of(two_sided_table);
    CHECK(two_sided.stress(-0.05) == Approx(-0.8).epsilon(1e-13));
    CHECK(two_sided.stress(0.05) == Approx(2.0).epsilon(1e-13));
    CHECK(curve_of(compression_table).stress(0.1) ==
          Approx(curve_of(compression_table).knot_slope[2] * 0.1).epsilon(1e-13));
    checks += 3;
    REQUIRE(checks == 8 * 4 * 3 + 5 * 4 * 9 + 3 * 4 * 2 + 5 + 3);
}

TEST_CASE("tabulated curve: linear data give the straight line exactly", "[potential][tabulated][linear]")
{
    const Curve c = weft::make_tabulated_curve<double>("line", {0.01, 0.03, 0.04, 0.1}, {5, 15, 20, 50});
    int checks = 0;
    for (const double x : {-0.3, -0.05, 0.0, 0.005, 0.02, 0.035, 0.07, 0.2}) {
        CHECK(c.stress(x) == Approx(500 * x).epsilon(1e-13).margin(1e-13));
        CHECK(c.stress_derivative(x) == Approx(500).epsilon(1e-13));
        CHECK(c.value(x) == Approx(250 * x * x).epsilon(1e-13).margin(1e-15));
        checks += 3;
    }
    REQUIRE(checks == 24);
}

TEST_CASE("tabulated curve: slopes, values and energies match hand-computed PCHIP numbers",
          "[potential][tabulated][pchip]")
{
    int checks = 0;
    // Odd extension: knots (0, 0), (1, 1), (2, 4); secants 1, 3.
    const Curve odd = weft::make_tabulated_curve<double>("odd", {1, 2}, {1, 4});
    CHECK(odd.knot_slope[0] == Approx(1.0).epsilon(1e-15));  // mirrored secants 1 and 1
    CHECK(odd.knot_slope[1] == Approx(1.5).epsilon(1e-15));  // 6 / (3/1 + 3/3)
    CHECK(odd.knot_slope[2] == Approx(4.0).epsilon(1e-15));  // ((2 + 1) 3 − 1) / 2
    CHECK(odd.stress(0.5) == Approx(0.4375).epsilon(1e-15));
    CHECK(odd.stress_derivative(0.5) == Approx(0.875).epsilon(1e-15));
    CHECK(odd.value(1.0) == Approx(0.5 - 0.5 / 12).epsilon(1e-15));  // h (σ₀+σ₁)/2 + h² (m₀−m₁)/12
    CHECK(odd.value(2.0) == Approx(0.5 - 0.5 / 12 + 2.5 - 2.5 / 12).epsilon(1e-15));
    CHECK(odd.value(3.0) == Approx(2.75 + 4 + 2).epsilon(1e-15));  // + σ₂ d + ½ m₂ d²
    CHECK(odd.stress(3.0) == Approx(8.0).epsilon(1e-15));
    CHECK(odd.stress(-0.5) == Approx(-0.4375).epsilon(1e-15));
    checks += 10;
    // Prescribed compression: knots (−1, −2), (0, 0), (1, 1); MATLAB's pchip slopes 2.5, 4/3, 0.5.
    const Curve two = weft::make_tabulated_curve<double>("two", {-1, 0, 1}, {-2, 0, 1});
    CHECK(two.knot_slope[0] == Approx(2.5).epsilon(1e-15));
    CHECK(two.knot_slope[1] == Approx(4.0 / 3).epsilon(1e-15));
    CHECK(two.knot_slope[2] == Approx(0.5).epsilon(1e-15));
    CHECK(two.value(-1.0) == Approx(-(-2 * 0.5 + (2.5 - 4.0 / 3) / 12)).epsilon(1e-15));  // −∫_{−1}^0 σ
    CHECK(two.stress(-2.0) == Approx(-4.5).epsilon(1e-15));
    checks += 5;
    REQUIRE(checks == 15);
}

TEST_CASE("tabulated curve: the same code runs in float", "[potential][tabulated][float]")
{
    const auto c = weft::make_tabulated_curve<float>("warp", {0.01f, 0.02f, 0.04f}, {1.0f, 3.0f, 10.0f});
    const auto d = weft::make_tabulated_curve<double>("warp", {0.01, 0.02, 0.04}, {1.0, 3.0, 10.0});
    int checks = 0;
    for (const double x : {-0.05, -0.01, 0.0, 0.005, 0.015, 0.03, 0.08}) {
        CHECK(double(c.stress(float(x))) == Approx(d.stress(x)).epsilon(1e-5).margin(1e-6));
        CHECK(double(c.value(float(x))) == Approx(d.value(x)).epsilon(1e-5).margin(1e-8));
        CHECK(double(c.stress_derivative(float(x))) == Approx(d.stress_derivative(x)).epsilon(1e-5));
        checks += 3;
    }
    REQUIRE(checks == 21);
}

TEST_CASE("tabulated curve: bad tables are rejected naming the field and its value", "[potential][tabulated][error]")
{
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    auto error_of = [](const std::vector<double>& strain, const std::vector<double>& stress) -> std::string {
        try {
            weft::make_tabulated_curve<double>("warp", strain, stress);
        } catch (const weft::InvalidInput& e) {
            return e.what();
        }
        return "";
    };
    int checks = 0;
    auto expect = [&](const std::string& message, const std::string& part) {
        INFO("message: " << message);
        CHECK_THAT(message, Contains(part));
        ++checks;
    };
    expect(error_of({0.01, 0.03, 0.02}, {1, 2, 3}), "invalid warp.strain[2] = 0.02: must be > warp.strain[1] = 0.03");
    expect(error_of({0.01, 0.01}, {1, 2}), "invalid warp.strain[1] = 0.01: must be > warp.strain[0] = 0.01");
    expect(error_of({0.01, nan}, {1, 2}), "invalid warp.strain[1] = nan: must be a finite number");
    expect(error_of({0.01, 0.02}, {1, inf}), "invalid warp.stress[1] = inf: must be a finite number");
    expect(error_of({0.01, 0.02}, {1, -inf}), "invalid warp.stress[1] = -inf");
    expect(error_of({0, 0.02}, {0.5, 1}), "invalid warp.stress[0] = 0.5: must be 0 at strain 0");
    expect(error_of({0.01, 0.02, 0.03}, {1, 3, 2}), "invalid warp.stress[2] = 2: must be >= warp.stress[1] = 3");
    expect(error_of({0.01, 0.02}, {-1, 2}), "invalid warp.stress[0] = -1: must be >= the implied stress 0 at strain 0");
    expect(error_of({-0.02, -0.01, 0.01}, {-1, 0.5, 1}),
           "invalid warp.stress at the implied strain 0 = 0: the stress before it, warp.stress[1] = 0.5, must be <= 0");
    expect(error_of({-0.02, 0, 0.01}, {1, 0, 1}), "invalid warp.stress[1] = 0: must be >= warp.stress[0] = 1");
    expect(error_of({0.01, 0.02}, {1}), "invalid warp.stress count = 1: must equal the strain count 2");
    expect(error_of({}, {}), "invalid warp.strain count = 0");
    expect(error_of({0}, {0}), "invalid warp.knot_count = 1: must be >= 2");
    std::vector<double> strain, stress;
    for (int k = 1; k <= 32; ++k) strain.push_back(0.01 * k), stress.push_back(k);
    expect(error_of(strain, stress), "invalid warp.knot_count = 33: must be <= 32 (including the implied knot (0, 0))");
    strain.insert(strain.begin(), 0.0), stress.insert(stress.begin(), 0.0);
    expect(error_of(strain, stress), "invalid warp.knot_count = 33: must be <= 32");
    strain.pop_back(), stress.pop_back();
    CHECK_NOTHROW(weft::make_tabulated_curve<double>("warp", strain, stress));  // exactly 32 fit
    ++checks;
    expect(error_of({0.01, 0.02}, {1e308, 1.7e308}),
           "invalid warp.knot_slope[0] = inf: must be finite (the table overflows at strain 0)");

    // A hand-made curve is checked by the element factory.
    Curve broken = curve_of(warp_table);
    broken.knot_slope[3] = -1;
    const auto rest = weft::make_triangle_rest<double>({0, 0}, {1, 0}, {0, 1});
    const Density good = sample_density();
    Density bad = good;
    bad.weft = broken;
    REQUIRE_NOTHROW(weft::make_membrane_element<double>(rest, good, weft::StVKDensity<double>{0, 0}));
    REQUIRE_THROWS_WITH(weft::make_membrane_element<double>(rest, bad, weft::StVKDensity<double>{0, 0}),
                        Contains("invalid weft.knot_slope[3] = -1: must be >= 0"));
    bad.weft = good.weft;
    bad.shear.knot_count = 40;
    REQUIRE_THROWS_WITH(weft::make_membrane_element<double>(rest, bad, weft::StVKDensity<double>{0, 0}),
                        Contains("invalid shear.knot_count = 40"));
    bad.shear = good.shear;
    bad.warp.knot_stress[0] = 0.25;
    REQUIRE_THROWS_WITH(weft::make_membrane_element<double>(rest, bad, weft::StVKDensity<double>{0, 0}),
                        Contains("invalid warp.knot_stress[0] = 0.25: must be 0 at strain 0"));
    REQUIRE_THROWS_WITH(weft::make_membrane_element<double>(rest, good, weft::StVKDensity<double>{0, -2}),
                        Contains("membrane mu_d = -2"));
    REQUIRE_THROWS_WITH(weft::make_tabulated_membrane_density(good.warp, broken, good.shear),
                        Contains("invalid weft.knot_slope[3] = -1"));
    checks += 6;
    REQUIRE(checks == 23);
}

// ---------------------------------------------------------------------------
// The membrane density

TEST_CASE("tabulated density: value, stress and stress derivative by finite differences, both roles",
          "[potential][tabulated][density][gradient]")
{
    Random rng(105);
    const Density density = sample_density();
    FdChecker checker;
    int ran = 0;
    // Strain boxes: inside the tables, beyond their ends, compression, mixed.
    const double boxes[4][3] = {{0.035, 0.055, 0.2}, {0.1, 0.12, 0.4}, {-0.04, -0.06, -0.25}, {0.06, -0.1, 0.3}};
    for (const auto& box : boxes) {
        for (int i = 0; i < 10; ++i) {
            Vector3d strain, rate;
            for (int k = 0; k < 3; ++k) {
                strain(k) = box[k] * rng.uniform(0.05, 1);
                rate(k) = box[k] * rng.uniform(-1, 1);
            }
            // No FD straddles a knot (σ″ jumps there); the shear curve sees 2ε₁₂.
            checker.step = 1e-7;
            const VectorX at = strain;
            checker.gradient([&](const VectorX& e) { return density.value(Vector3d(e)); }, at,
                             VectorX(density.stress(strain)), "stress = dpsi/deps");
            checker.jacobian([&](const VectorX& e) { return VectorX(density.stress(Vector3d(e))); }, at,
                             MatrixX(density.stress_derivative(strain)), "dS/deps");
            checker.gradient([&](const VectorX& e) { return density.value(Vector3d(e), strain); }, VectorX(rate),
                             VectorX(density.stress(rate, strain)), "dissipative stress = dpsi_d/deps_dot");
            checker.jacobian([&](const VectorX& e) { return VectorX(density.stress(Vector3d(e), strain)); },
                             VectorX(rate), MatrixX(density.stress_derivative(rate, strain)), "dS_d/deps_dot");
            ran += 4;

            // Structure: no coupling, the Voigt shear factor, convexity.
            const Vector3d s = density.stress(strain);
            CHECK(s(2) == 2 * density.shear.stress(2 * strain(2)));
            const Matrix3d d = density.stress_derivative(strain);
            CHECK(d(2, 2) == 4 * density.shear.stress_derivative(2 * strain(2)));
            CHECK((d - Matrix3d(d.diagonal().asDiagonal())).cwiseAbs().maxCoeff() == 0.0);
            CHECK(d.diagonal().minCoeff() > 0.0);
            CHECK(density.value(strain) > 0.0);
            ran += 5;
        }
    }
    REQUIRE(checker.checks == 4 * 10 * 4);
    REQUIRE(ran == 4 * 10 * 9);
}

TEST_CASE("tabulated density: linear curves E = 2 mu (warp, weft) and G = mu (shear, against gamma) are StVK(0, mu)",
          "[potential][tabulated][density][stvk]")
{
    Random rng(106);
    int checks = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const double mu = rng.uniform(1, 100);
        const Density tabulated{weft::make_tabulated_curve<double>("warp", {0.1}, {2 * mu * 0.1}),
                                weft::make_tabulated_curve<double>("weft", {0.05, 0.2}, {2 * mu * 0.05, 2 * mu * 0.2}),
                                weft::make_tabulated_curve<double>("shear", {0.3}, {mu * 0.3})};
        const weft::StVKDensity<double> stvk{0, mu};
        const Vector3d e = rng.vector<3>(-0.4, 0.4);
        const double scale = mu * (1 + e.squaredNorm());
        CHECK(std::abs(tabulated.value(e) - stvk.value(e)) <= 1e-13 * scale);
        CHECK((tabulated.stress(e) - stvk.stress(e)).cwiseAbs().maxCoeff() <= 1e-13 * scale);
        CHECK((tabulated.stress_derivative(e) - stvk.stress_derivative(e)).cwiseAbs().maxCoeff() <= 1e-13 * scale);
        checks += 3;
    }
    REQUIRE(checks == 60);
}

// ---------------------------------------------------------------------------
// The membrane element with the tabulated density

TEST_CASE("tabulated membrane: forces and Jacobians match finite differences (shared derivative suite)",
          "[element][membrane][tabulated][gradient][hessian]")
{
    Random rng(107);
    const Density density = sample_density();
    const weft::StVKDensity<double> damping{0.3, 0.5};
    FdChecker checker;
    checker.step = 1e-7;  // strains change by ~1e-7: a difference rarely straddles a knot
    weft_test::SuiteOptions options;
    options.size_is_constant = true;
    int ran = 0, trials = 0;
    for (const double amplitude : {0.01, 0.03, 0.1, 0.3}) {
        for (int trial = 0; trial < 5; ++trial, ++trials) {
            const TriangleState s = random_triangle(rng, amplitude);
            const Vec9 v = rng.vector<9>(-1, 1);
            auto metric = [&s](const Vec9& qq, const Vec9& vv) { return weft::green_strain<double>(s.rest, qq, vv); };
            ran += weft_test::check_metric_and_densities(checker, metric, s.q, v, density, damping, options);
            // The tabulated density in the dissipative role as well (curves against the strain rate).
            const Vec9 slow = 0.05 * v;
            ran += weft_test::check_metric_and_densities(checker, metric, s.q, slow, density, density, options);
        }
    }
    REQUIRE(ran == trials * 2 * 16);
    REQUIRE(checker.checks == ran);
}

TEST_CASE("tabulated membrane: the element equals the generic layers, and its force and Jacobians match FD",
          "[element][membrane][tabulated][generic]")
{
    Random rng(108);
    const Density density = sample_density();
    FdChecker checker;
    checker.step = 1e-7;
    int checks = 0, trials = 0;
    for (const double amplitude : {0.02, 0.08, 0.3}) {
        for (int trial = 0; trial < 5; ++trial, ++trials) {
            const TriangleState s = random_triangle(rng, amplitude);
            const auto el = weft::make_membrane_element<double>(s.rest, density, weft::StVKDensity<double>{0.2, 0.4});
            static_assert(std::is_same_v<std::decay_t<decltype(el)>, weft::TabulatedMembraneElement<double>>);
            const Vec9 v = rng.vector<9>(-1, 1);
            const auto e = weft::green_strain(el.rest, s.q, v);
            for (const auto projection : {weft::PsdProjection::off, weft::PsdProjection::on}) {
                const auto out = weft::evaluate_membrane(el, s.q, v, projection, weft::StressClamp::on);
                const Mat9 jq = weft::elastic_force_jacobian(e, el.elastic, projection) +
                                weft::dissipative_force_jacobian(e, el.dissipative, weft::DiffWrt::positions);
                const double tol = 1e-13 * std::max(1.0, jq.cwiseAbs().maxCoeff());
                CHECK(out.elastic_energy == Approx(weft::elastic_energy(e, el.elastic)).epsilon(1e-14));
                CHECK((out.elastic_force - weft::elastic_force(e, el.elastic)).cwiseAbs().maxCoeff() <= tol);
                CHECK((out.position_jacobian - jq).cwiseAbs().maxCoeff() <= tol);
                checks += 3;
                if (projection == weft::PsdProjection::on) {
                    const Eigen::VectorXd eigenvalues =
                        weft_test::symmetric_eigenvalues(-weft::elastic_force_jacobian(e, el.elastic, projection));
                    CHECK(eigenvalues.minCoeff() >= -1e-12 * std::max(1.0, jq.cwiseAbs().maxCoeff()));
                    ++checks;
                }
            }
            const VectorX q = s.q;
            checker.gradient([&](const VectorX& qq) { return -weft::membrane_elastic_energy(el, Vec9(qq)); }, q,
                             VectorX(weft::membrane_elastic_force(el, s.q)), "f_e = -grad V_e");
            checker.jacobian([&](const VectorX& qq) { return VectorX(weft::membrane_elastic_force(el, Vec9(qq))); }, q,
                             MatrixX(weft::membrane_elastic_force_jacobian(el, s.q)), "df_e/dq");
            checker.jacobian(
                [&](const VectorX& vv) { return VectorX(weft::membrane_dissipative_force(el, s.q, Vec9(vv))); },
                VectorX(v), MatrixX(weft::membrane_dissipative_force_jacobian(el, s.q, v, weft::DiffWrt::velocities)),
                "df_d/dv");
        }
    }
    REQUIRE(checks == trials * 7);
    REQUIRE(checker.checks == trials * 3);
}

TEST_CASE("tabulated membrane: rigid motions are not damped and do not change the elastic energy",
          "[element][membrane][tabulated][rigid]")
{
    Random rng(109);
    const Density density = sample_density();
    int checks = 0;
    for (int trial = 0; trial < 10; ++trial) {
        const TriangleState s = random_triangle(rng, 0.05);
        const auto el = weft::make_membrane_element<double>(s.rest, density, weft::StVKDensity<double>{0.2, 0.4});
        const Vector3d t = rng.vector<3>(-1, 1), omega = rng.vector<3>(-2, 2);
        for (const Vec9& v : {rigid_velocity(s.q, t, Vector3d::Zero()), rigid_velocity(s.q, Vector3d::Zero(), omega),
                              rigid_velocity(s.q, t, omega)}) {
            const auto out = weft::evaluate_membrane(el, s.q, v);
            const auto e = weft::green_strain(el.rest, s.q, v);
            REQUIRE(e.gradient.norm() > 0.1);
            REQUIRE(out.elastic_force.norm() > 1e-3);  // the element is stressed
            const double scale = e.size * e.gradient.norm() * e.gradient.norm() * v.norm() * 100;
            CHECK(e.rate.norm() <= 1e-14 * e.gradient.norm() * v.norm());
            CHECK(out.dissipative_force.norm() <= 1e-14 * scale);
            CHECK((out.velocity_jacobian * v).norm() <= 1e-14 * scale);
            CHECK(out.dissipation_potential <= 1e-24);  // Ψ_d of a rate ~1e-14 is ~1e-28
            // The tabulated curves as a dissipation density damp no rigid motion either.
            CHECK(weft::dissipative_force(e, density).norm() <= 1e-14 * scale * density.warp.knot_slope[9]);
            // A strain-changing velocity is damped.
            const Vec9 deforming = v + 0.1 * rng.vector<9>(-1, 1);
            CHECK(weft::evaluate_membrane(el, s.q, deforming).dissipative_force.norm() > 1e-6);
            checks += 6;
        }
        // Frame indifference: V(Rq + c) = V(q), f(Rq + c) = R f(q).
        const Matrix3d r = weft_test::random_rotation(rng);
        const Vector3d c = rng.vector<3>(-1, 1);
        Vec9 moved;
        for (int a = 0; a < 3; ++a) moved.segment<3>(3 * a) = r * s.q.segment<3>(3 * a) + c;
        const Vec9 f = weft::membrane_elastic_force(el, s.q), f_moved = weft::membrane_elastic_force(el, moved);
        CHECK(weft::membrane_elastic_energy(el, moved) ==
              Approx(weft::membrane_elastic_energy(el, s.q)).epsilon(1e-12));
        double worst = 0;
        for (int a = 0; a < 3; ++a)
            worst = std::max(worst, (f_moved.segment<3>(3 * a) - r * f.segment<3>(3 * a)).norm());
        CHECK(worst <= 1e-12 * f.norm());
        checks += 2;
    }
    REQUIRE(checks == 10 * (3 * 6 + 2));
}

TEST_CASE("tabulated membrane (GNATV check): stretch and shear tests reproduce the material's own curves",
          "[element][membrane][tabulated][gnatv]")
{
    // 2019 Sec. 4.1: a simulated tensile test must give back the data the model was built from.
    // The stress is measured from the element forces only (no access to the density), and compared with
    // the table's own numbers at the knots and with the interpolant between them.
    Random rng(110);
    const Density density = sample_density();
    const Patch patch(density);
    int at_knots = 0, between = 0, outside = 0, zero_components = 0;
    for (int trial = 0; trial < 3; ++trial) {
        const Matrix3d r = trial == 0 ? Matrix3d::Identity() : weft_test::random_rotation(rng);
        const Vector3d c = trial == 0 ? Vector3d::Zero() : rng.vector<3>(-1, 1);
        for (int mode = 0; mode < 3; ++mode) {
            const Table& table = mode == 0 ? warp_table : (mode == 1 ? weft_table : shear_table);
            const Curve& curve = mode == 0 ? density.warp : (mode == 1 ? density.weft : density.shear);
            double scale = 0;
            for (const double s : table.stress) scale = std::max(scale, std::abs(s));
            for (const double x : test_strains(table, rng)) {
                INFO(table.name << " at strain " << x << ", trial " << trial);
                // Lateral strain of the stretch tests: none, or a free contraction (no coupling, so no effect).
                const double lateral = trial == 2 ? -0.3 * x : 0.0;
                const Matrix2d f = mode == 0   ? stretch(stretch_for(x), stretch_for(lateral))
                                   : mode == 1 ? stretch(stretch_for(lateral), stretch_for(x))
                                               : picture_frame(x);
                const Matrix2d s = patch.measured_stress(r, f, c);
                const double measured = mode == 0 ? s(0, 0) : (mode == 1 ? s(1, 1) : s(0, 1));
                const auto knot = std::find(table.strain.begin(), table.strain.end(), x);
                if (knot != table.strain.end()) {
                    // The table's own number.
                    CHECK(measured == Approx(table.stress[std::size_t(knot - table.strain.begin())])
                                          .epsilon(1e-10)
                                          .margin(1e-12 * scale));
                    ++at_knots;
                } else if (x > table.strain.front() && x < table.strain.back()) {
                    CHECK(measured == Approx(curve.stress(x)).epsilon(1e-10).margin(1e-12 * scale));
                    // …and it lies between the neighbouring knots' numbers.
                    const auto above = std::upper_bound(table.strain.begin(), table.strain.end(), x);
                    const std::size_t k = std::size_t(above - table.strain.begin());
                    CHECK(measured >= table.stress[k - 1] - 1e-12 * scale);
                    CHECK(measured <= table.stress[k] + 1e-12 * scale);
                    between += 3;
                } else {
                    CHECK(measured == Approx(curve.stress(x)).epsilon(1e-10).margin(1e-12 * scale));
                    ++outside;
                }
                // The other stress components: the symmetric tensor's off-diagonal, and no coupling.
                CHECK(std::abs(s(0, 1) - s(1, 0)) <= 1e-10 * scale);
                if (mode == 0) {
                    CHECK(std::abs(s(1, 1) - density.weft.stress(lateral)) <= 1e-10 * scale);
                    CHECK(std::abs(s(0, 1)) <= 1e-10 * scale);
                } else if (mode == 1) {
                    CHECK(std::abs(s(0, 0) - density.warp.stress(lateral)) <= 1e-10 * scale);
                    CHECK(std::abs(s(0, 1)) <= 1e-10 * scale);
                } else {
                    CHECK(std::abs(s(0, 0)) <= 1e-10 * scale);
                    CHECK(std::abs(s(1, 1)) <= 1e-10 * scale);
                }
                zero_components += 3;
            }
        }
    }
    // Every knot of the three tables, in three placements.
    REQUIRE(at_knots == 3 * int(warp_table.strain.size() + weft_table.strain.size() + shear_table.strain.size()));
    REQUIRE(between > 3 * 3 * 2 * 8);
    REQUIRE(outside == 3 * 3 * 3);
    REQUIRE(zero_components == 3 * (at_knots + between / 3 + outside));
}
