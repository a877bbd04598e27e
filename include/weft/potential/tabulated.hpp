#pragma once
/// @file tabulated.hpp
/// Tabulated nonlinear anisotropic membrane material (GNATV, 2019 Sec. 3.1–3.2):
/// three measured stress–strain curves, warp, weft and shear, each acting on
/// its own component of the Green strain, without cross-dependencies.
///
/// The 2019 thesis numbers no equation; its displayed equations are cited
/// here in order of appearance: Eq. (1) the shape weights r_ua … r_vc,
/// Eq. (2) u = Σ r_ui P_i, v = Σ r_vi P_i, Eq. (3) the strains ε_uu, ε_vv,
/// ε_uv, Eq. (4) the nodal force F_j, Eq. (5) the position Jacobian J_ji.
///
/// ## One curve: `TabulatedCurve`
///
/// Knots (ε_k, σ_k), k = 0 … n−1, strictly increasing strains, σ = 0 at ε = 0
/// (a knot; the factory inserts it when the data only implies it), stress
/// non-decreasing. Between knots σ(ε) is the monotone C¹ piecewise cubic
/// Hermite interpolant of Fritsch & Carlson (1980) with the slopes of
/// Fritsch & Butland (1984), the "PCHIP" rule: interior slopes are the
/// weighted harmonic mean of the neighbouring secants (0 where a secant is
/// 0), end slopes the one-sided three-point estimate, limited to keep its
/// secant's sign and to ≤ 3× that secant where the data turns. Every slope
/// then lies in the Fritsch–Carlson monotonicity region, so monotone data
/// gives a monotone σ, i.e. σ′ ≥ 0 everywhere. GNATV itself interpolates
/// with a B-spline (Sec. 3.1, "a b-spline curve is then interpolated"); an
/// interpolating cubic spline can overshoot between knots and make σ′ < 0
/// there, a locally non-convex energy (Sec. 4.2 and Fig. 7: irregular
/// curves make the cloth fail). PCHIP cannot overshoot.
///
/// - ψ(ε) = ∫₀^ε σ in closed form: each piece integrates its cubic exactly,
///   and `knot_energy[k]` = ψ(ε_k) holds the prefix sums from the zero knot.
/// - σ′(ε) is the analytic derivative of the cubic (continuous at knots).
/// - Outside the table σ continues **linearly with the end slope**
///   (σ = σ_end + σ′_end (ε − ε_end), ψ quadratic): C¹ at the end knot,
///   never softening and never blowing up. A curve whose data stiffen up to
///   its last knot therefore stops stiffening there: give knots as far as
///   the simulation strains reach.
/// - **Compression side.** GNATV's warp and weft curves are tensile tests
///   (Kawabata elongation, Sec. 2.4); they say nothing about compression. If
///   a table has no negative strain, the curve is extended as an **odd
///   function**: σ(−ε) = −σ(ε), ψ(−ε) = ψ(ε), σ′(−ε) = σ′(ε). Why: (a) ψ stays convex
///   and σ′ continuous through 0 (an odd σ has an even σ′), so the rest state
///   is a smooth minimum with the table's own small-strain stiffness rather
///   than a kink; (b) for shear the odd extension is the physics of a
///   balanced weave (sheared by +γ and −γ it responds symmetrically; the
///   thesis's shear data have a maximum and a minimum, Fig. 11); (c) the
///   alternative "no stress in compression" has σ′ = 0 on one side, a
///   singular stiffness for a flat sheet at rest and a kink at 0. The cost:
///   the membrane resists compression as it resists tension, where a real
///   fabric buckles at nearly no load. With a dihedral bending model the
///   buckling is carried by bending; give negative knots to prescribe a
///   different compressive response, or a measured two-sided shear curve
///   (then no extension is applied, and the table is extrapolated linearly
///   below its first knot as above). Green strain is ≥ −½, so only
///   ε ∈ [−½, 0) is ever reached in compression.
///
/// ## The membrane density: `TabulatedMembraneDensity`
///
/// Interface of StVKDensity: strain ε = (ε₁₁, ε₂₂, ε₁₂) in Voigt order with
/// ε₁₂ stored once, conjugate stress (S₁₁, S₂₂, 2S₁₂).
///
///   ψ(ε) = ψ_warp(ε₁₁) + ψ_weft(ε₂₂) + ψ_shear(γ),  γ = 2ε₁₂
///   ∂ψ/∂ε = (σ_warp(ε₁₁), σ_weft(ε₂₂), 2 σ_shear(γ))   ⇒ S₁₂ = σ_shear(γ)
///   ∂²ψ/∂ε² = diag(σ′_warp, σ′_weft, 4 σ′_shear(γ))
///
/// - Material axis 1 (u of the rest (u, v) coordinates) is the **warp**,
///   axis 2 the **weft**. (The thesis calls its weft vector u and its warp v,
///   Sec. 3.1; weft's convention is the reverse, fixed by this file.)
/// - **Shear convention.** The shear curve is τ(γ) with γ the engineering
///   shear strain, γ = 2ε₁₂ = f₁·f₂ (for yarns that keep their length, the
///   cosine of the angle between the deformed warp and weft, ≈ the shear
///   angle for small shear), which is exactly the thesis's
///   ε_uv = ½(uᵀv + vᵀu) (2019 Eq. 3), and τ = S₁₂ the tensor shear stress,
///   which is the thesis's σ_uv: its force (2019 Eq. 4) has σ_uv multiply
///   r_uj v + r_vj u = ∂ε_uv/∂P_j, i.e. σ_uv is conjugate to ε_uv. So a
///   linear shear table τ = G γ is the StVK shear S₁₂ = 2μ ε₁₂ with G = μ, and
///   linear warp/weft tables σ = E ε with E = 2μ and that shear table
///   reproduce StVKDensity{λ = 0, μ} exactly.
/// - **No coupling term.** The thesis states "no cross-dependencies were
///   included in the model" (Sec. 3.2): no Poisson term is added. ψ is a sum
///   of 1D terms, so a uniaxial stretch along warp gives S₂₂ = S₁₂ = 0
///   whatever the lateral strain, and a stretch test reproduces each curve
///   exactly (the GNATV validation, Sec. 4.1).
/// - **Stress measure.** σ is the second Piola–Kirchhoff stress per unit rest
///   length (N/m: a 3D stress times the thickness), conjugate to Green
///   strain, so that V = Ω ψ with Ω the rest area. A tensile test measures
///   force per unit rest width P at engineering strain e = λ − 1; the
///   table wants ε = e + e²/2 and σ = P / (1 + e) (P = F S for a uniaxial
///   stretch). At 1 % strain the conversion changes the numbers by ~1 %.
/// - **Convexity.** ψ is convex in ε (a sum of convex 1D terms, as every σ is
///   non-decreasing), so ∂S/∂ε is diagonal and PSD, and ψ ≥ 0 with ψ(0) = 0.
///   Like every Green-strain membrane, V(q) is not convex in the positions:
///   a compressive stress makes the geometric term Σ S_k Hε_k indefinite
///   (use PsdProjection::on in implicit steps), and the odd extension keeps
///   the compressive stiffness of the table (see above). The position
///   Jacobian of the element is the exact −∇²V (element/elastic.hpp), which
///   contains the thesis's stiffness and geometric terms (2019 Eq. 5). Its
///   shear stiffness block, as printed, is σ′_uv (r_uj r_vi u vᵀ +
///   r_vj r_ui v uᵀ); the exact one, used here and checked by finite
///   differences, is σ′_uv (r_uj v + r_vj u)(r_ui v + r_vi u)ᵀ.
///
/// Plain data with fixed capacity (32 knots per curve, about 1 KiB per curve
/// in double), no heap and no exceptions in WEFT_HD code: usable in kernels.
/// Build curves on the host with `make_tabulated_curve`, which validates.

#include <cmath>
#include <cstddef>
#include <limits>
#include <locale>
#include <sstream>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/types.hpp>
#include <weft/potential/stress_kind.hpp>

namespace weft {

/// Most knots a tabulated curve holds, the implied (0, 0) included.
inline constexpr int tabulated_curve_capacity = 32;

/// One stress–strain curve σ(ε) with its energy ψ = ∫₀^ε σ and slope σ′.
/// Plain data; see the file comment for interpolation and extension rules.
template <typename T>
struct TabulatedCurve {
    static constexpr int capacity = tabulated_curve_capacity;

    int knot_count;           ///< n, 2 ≤ n ≤ capacity knots in use
    bool odd_extension;       ///< knot 0 is ε = 0 and σ(−ε) = −σ(ε) is used below it
    T knot_strain[capacity];  ///< ε_k, strictly increasing, one of them 0
    T knot_stress[capacity];  ///< σ_k, non-decreasing, 0 at ε = 0
    T knot_slope[capacity];   ///< σ′(ε_k), PCHIP slopes, ≥ 0
    T knot_energy[capacity];  ///< ψ(ε_k) = ∫₀^{ε_k} σ, ≥ 0

    /// ψ(ε) = ∫₀^ε σ (even in ε under the odd extension)
    WEFT_HD T value(T strain) const { return table_energy(odd_extension && strain < T(0) ? -strain : strain); }

    /// σ(ε) (odd in ε under the odd extension)
    WEFT_HD T stress(T strain) const
    {
        return odd_extension && strain < T(0) ? -table_stress(-strain) : table_stress(strain);
    }

    /// σ′(ε) = dσ/dε (even in ε under the odd extension)
    WEFT_HD T stress_derivative(T strain) const
    {
        return table_slope(odd_extension && strain < T(0) ? -strain : strain);
    }

private:
    /// ψ from the knots (no mirroring): Hermite integral inside, quadratic outside.
    WEFT_HD T table_energy(T strain) const
    {
        const int last = knot_count - 1;
        if (strain < knot_strain[0]) return linear_energy(0, strain - knot_strain[0]);
        if (!(strain < knot_strain[last])) return linear_energy(last, strain - knot_strain[last]);
        const int k = piece(strain);
        const T h = knot_strain[k + 1] - knot_strain[k];
        const T t = (strain - knot_strain[k]) / h;
        const T t2 = t * t, t3 = t2 * t, t4 = t3 * t;
        // ∫ of the Hermite basis from 0 to t: H00 = t − t³ + t⁴/2, H10 = t²/2 − 2t³/3 + t⁴/4,
        // H01 = t³ − t⁴/2, H11 = t⁴/4 − t³/3 (each × h; the slope terms × h²)
        const T h00 = t - t3 + T(0.5) * t4;
        const T h10 = T(0.5) * t2 - T(2) / T(3) * t3 + T(0.25) * t4;
        const T h01 = t3 - T(0.5) * t4;
        const T h11 = T(0.25) * t4 - t3 / T(3);
        return knot_energy[k] + h * (knot_stress[k] * h00 + knot_stress[k + 1] * h01 +
                                     h * (knot_slope[k] * h10 + knot_slope[k + 1] * h11));
    }

    /// σ from the knots (no mirroring): cubic Hermite inside, linear outside.
    WEFT_HD T table_stress(T strain) const
    {
        const int last = knot_count - 1;
        if (strain < knot_strain[0]) return knot_stress[0] + knot_slope[0] * (strain - knot_strain[0]);
        if (!(strain < knot_strain[last])) return knot_stress[last] + knot_slope[last] * (strain - knot_strain[last]);
        const int k = piece(strain);
        const T h = knot_strain[k + 1] - knot_strain[k];
        const T t = (strain - knot_strain[k]) / h;
        const T t2 = t * t, t3 = t2 * t;
        // Cubic Hermite basis h00 = 2t³ − 3t² + 1, h10 = t³ − 2t² + t, h01 = −2t³ + 3t², h11 = t³ − t²
        return knot_stress[k] * (T(2) * t3 - T(3) * t2 + T(1)) + knot_stress[k + 1] * (T(3) * t2 - T(2) * t3) +
               h * (knot_slope[k] * (t3 - T(2) * t2 + t) + knot_slope[k + 1] * (t3 - t2));
    }

    /// σ′ from the knots (no mirroring): the cubic's derivative inside, the end slope outside.
    WEFT_HD T table_slope(T strain) const
    {
        const int last = knot_count - 1;
        if (strain < knot_strain[0]) return knot_slope[0];
        if (!(strain < knot_strain[last])) return knot_slope[last];
        const int k = piece(strain);
        const T h = knot_strain[k + 1] - knot_strain[k];
        const T t = (strain - knot_strain[k]) / h;
        const T t2 = t * t;
        // d/dε = (1/h) d/dt: h00′ = 6t² − 6t = −h01′, h10′ = 3t² − 4t + 1, h11′ = 3t² − 2t
        return (knot_stress[k + 1] - knot_stress[k]) * (T(6) * (t - t2)) / h +
               knot_slope[k] * (T(3) * t2 - T(4) * t + T(1)) + knot_slope[k + 1] * (T(3) * t2 - T(2) * t);
    }

    /// k with ε_k ≤ x < ε_{k+1}, for ε_0 ≤ x < ε_{n−1} (binary search; a NaN
    /// lands in some piece and propagates).
    WEFT_HD int piece(T x) const
    {
        int lo = 0, hi = knot_count - 1;
        while (hi - lo > 1) {
            const int mid = (lo + hi) / 2;
            if (x < knot_strain[mid])
                hi = mid;
            else
                lo = mid;
        }
        return lo;
    }

    /// ψ beyond the end knot k, d = ε − ε_k: ψ_k + σ_k d + ½ σ′_k d²
    WEFT_HD T linear_energy(int k, T d) const
    {
        return knot_energy[k] + d * (knot_stress[k] + T(0.5) * knot_slope[k] * d);
    }
};

/// GNATV membrane density (2019 Sec. 3.1–3.2): warp curve on ε₁₁, weft curve
/// on ε₂₂, shear curve τ(γ) on γ = 2ε₁₂; see the file comment for the
/// conventions. Interface of StVKDensity.
template <typename T>
struct TabulatedMembraneDensity {
    static constexpr int strain_dim = 3;
    static constexpr StressKind stress_kind = StressKind::symmetric_2x2;

    TabulatedCurve<T> warp;   ///< S₁₁(ε₁₁), material axis 1 (N/m)
    TabulatedCurve<T> weft;   ///< S₂₂(ε₂₂), material axis 2 (N/m)
    TabulatedCurve<T> shear;  ///< S₁₂(γ), γ = 2ε₁₂ engineering shear (N/m)

    /// ψ(ε) = ψ_warp(ε₁₁) + ψ_weft(ε₂₂) + ψ_shear(2ε₁₂)
    WEFT_HD T value(const Vec3<T>& e) const { return warp.value(e(0)) + weft.value(e(1)) + shear.value(T(2) * e(2)); }
    /// (S₁₁, S₂₂, 2S₁₂): 2019 Eq. (3) strains plugged into their curves
    WEFT_HD Vec3<T> stress(const Vec3<T>& e) const
    {
        // ∂ψ_shear(2ε₁₂)/∂ε₁₂ = 2 σ_shear(γ)
        return Vec3<T>(warp.stress(e(0)), weft.stress(e(1)), T(2) * shear.stress(T(2) * e(2)));
    }
    /// diag(σ′_warp, σ′_weft, 4σ′_shear): no cross-dependencies (2019 Sec. 3.2)
    WEFT_HD Mat3<T> stress_derivative(const Vec3<T>& e) const
    {
        Mat3<T> d = Mat3<T>::Zero();
        d(0, 0) = warp.stress_derivative(e(0));
        d(1, 1) = weft.stress_derivative(e(1));
        d(2, 2) = T(4) * shear.stress_derivative(T(2) * e(2));
        return d;
    }

    // Dissipative role (as StVKDensity, 2018 Eq. 15–16): the same curves read
    // as dissipative stress against strain rate, independent of ε.
    WEFT_HD T value(const Vec3<T>& rate, const Vec3<T>&) const { return value(rate); }
    WEFT_HD Vec3<T> stress(const Vec3<T>& rate, const Vec3<T>&) const { return stress(rate); }
    WEFT_HD Mat3<T> stress_derivative(const Vec3<T>& rate, const Vec3<T>&) const { return stress_derivative(rate); }
};

namespace tabulated_detail {

inline std::string knot_field(const std::string& name, const char* column, std::size_t index)
{
    return name + "." + column + "[" + std::to_string(index) + "]";
}

/// The shortest decimal text (digits10 … max_digits10 significant digits) that reads back as `value`.
template <typename T>
inline std::string number(T value)
{
    std::string text;
    for (int digits = std::numeric_limits<T>::digits10; digits <= std::numeric_limits<T>::max_digits10; ++digits) {
        std::ostringstream os;
        os.imbue(std::locale::classic());
        os.precision(digits);
        os << value;
        text = os.str();
        std::istringstream back(text);
        back.imbue(std::locale::classic());
        T read = T(0);
        if (!std::isfinite(double(value)) || ((back >> read) && read == value)) break;
    }
    return text;
}

inline std::string number(std::size_t value)
{
    return std::to_string(value);
}
inline std::string number(int value)
{
    return std::to_string(value);
}

/// "invalid <field> = <value>: <requirement>", the wording of core/error.hpp.
template <typename V>
[[noreturn]] inline void fail(const std::string& field, V value, const std::string& requirement)
{
    throw InvalidInput("invalid " + field + " = " + number(value) + ": " + requirement);
}

template <typename T>
inline T sign_of(T x)
{
    return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
}

/// PCHIP end slope (Fritsch & Butland 1984; Moler, "Numerical Computing with
/// MATLAB", pchip): one-sided three-point estimate from the end secant δ₀ (width
/// h₀) and the next one δ₁ (width h₁), kept to the sign of δ₀ and to ≤ 3|δ₀|
/// when the data turns.
template <typename T>
inline T end_slope(T h0, T h1, T delta0, T delta1)
{
    T d = ((T(2) * h0 + h1) * delta0 - h0 * delta1) / (h0 + h1);
    if (sign_of(d) != sign_of(delta0)) return T(0);
    if (sign_of(delta0) != sign_of(delta1) && std::abs(d) > std::abs(T(3) * delta0)) return T(3) * delta0;
    return d;
}

/// PCHIP interior slope: weighted harmonic mean of the secants δ₀ (left,
/// width h₀) and δ₁ (right, width h₁); 0 where either is 0 (flat data stays flat).
template <typename T>
inline T interior_slope(T h0, T h1, T delta0, T delta1)
{
    if (!(delta0 * delta1 > T(0))) return T(0);
    const T w0 = T(2) * h1 + h0, w1 = h1 + T(2) * h0;
    return (w0 + w1) / (w0 / delta0 + w1 / delta1);
}

}  // namespace tabulated_detail

/// Checks the invariants of a curve built by hand (make_tabulated_curve
/// establishes them): 2 ≤ knot_count ≤ capacity, finite knots, strictly
/// increasing strains with a knot at 0 where σ = 0 and ψ = 0, non-decreasing
/// stresses, non-negative slopes, and for an odd extension the first knot at 0.
/// @throws InvalidInput naming `name`, the field and its value.
template <typename T>
inline void require_valid_tabulated_curve(const std::string& name, const TabulatedCurve<T>& curve)
{
    using tabulated_detail::fail;
    using tabulated_detail::knot_field;
    using tabulated_detail::number;
    if (curve.knot_count < 2 || curve.knot_count > curve.capacity)
        fail(name + ".knot_count", curve.knot_count,
             "must be between 2 and " + std::to_string(curve.capacity) + " (the knot at strain 0 included)");
    int zero_knots = 0;
    for (int k = 0; k < curve.knot_count; ++k) {
        const std::size_t i = std::size_t(k);
        require_finite(knot_field(name, "knot_strain", i).c_str(), curve.knot_strain[k]);
        require_finite(knot_field(name, "knot_stress", i).c_str(), curve.knot_stress[k]);
        require_non_negative(knot_field(name, "knot_slope", i).c_str(), curve.knot_slope[k]);
        require_non_negative(knot_field(name, "knot_energy", i).c_str(), curve.knot_energy[k]);
        if (curve.knot_strain[k] == T(0)) {
            ++zero_knots;
            if (curve.knot_stress[k] != T(0))
                fail(knot_field(name, "knot_stress", i), curve.knot_stress[k], "must be 0 at strain 0");
            if (curve.knot_energy[k] != T(0))
                fail(knot_field(name, "knot_energy", i), curve.knot_energy[k], "must be 0 at strain 0");
        }
        if (k == 0) continue;
        if (!(curve.knot_strain[k] > curve.knot_strain[k - 1]))
            fail(knot_field(name, "knot_strain", i), curve.knot_strain[k],
                 "must be > " + knot_field(name, "knot_strain", i - 1) + " = " + number(curve.knot_strain[k - 1]) +
                     " (strictly increasing)");
        if (!(curve.knot_stress[k] >= curve.knot_stress[k - 1]))
            fail(knot_field(name, "knot_stress", i), curve.knot_stress[k],
                 "must be >= " + knot_field(name, "knot_stress", i - 1) + " = " + number(curve.knot_stress[k - 1]) +
                     " (stress must not decrease with strain)");
    }
    if (zero_knots != 1)
        fail(name + ".knot_strain zero count", zero_knots, "must be 1: the curve passes through the knot (0, 0)");
    if (curve.odd_extension && curve.knot_strain[0] != T(0))
        fail(knot_field(name, "knot_strain", 0), curve.knot_strain[0],
             "must be 0 when odd_extension is set (the curve is mirrored about strain 0)");
}

/// Builds a curve from measured knots (see the file comment): validates,
/// inserts (0, 0) when strain 0 is not a knot, chooses the odd extension when
/// no strain is negative, computes the PCHIP slopes and the energy prefix sums.
/// @param[in] name      names the curve in errors, e.g. "warp"
/// @param[in] strains   knot strains (Green strain; shear: γ = 2ε₁₂), strictly increasing
/// @param[in] stresses  knot stresses (N/m), same count, non-decreasing, 0 at strain 0
/// @throws InvalidInput naming the field ("<name>.strain[k]", "<name>.stress[k]",
///         "<name>.knot_count") and its value.
template <typename T>
inline TabulatedCurve<T> make_tabulated_curve(const std::string& name, const std::vector<T>& strains,
                                              const std::vector<T>& stresses)
{
    using tabulated_detail::fail;
    using tabulated_detail::knot_field;
    using tabulated_detail::number;
    constexpr int capacity = TabulatedCurve<T>::capacity;

    if (stresses.size() != strains.size())
        fail(name + ".stress count", stresses.size(),
             "must equal the strain count " + std::to_string(strains.size()) + " (one stress per strain)");
    if (strains.empty()) fail(name + ".strain count", strains.size(), "must be >= 1 (a knot besides (0, 0))");
    for (std::size_t i = 0; i < strains.size(); ++i) {
        require_finite(knot_field(name, "strain", i).c_str(), strains[i]);
        require_finite(knot_field(name, "stress", i).c_str(), stresses[i]);
    }
    for (std::size_t i = 1; i < strains.size(); ++i) {
        if (!(strains[i] > strains[i - 1]))
            fail(knot_field(name, "strain", i), strains[i],
                 "must be > " + knot_field(name, "strain", i - 1) + " = " + number(strains[i - 1]) +
                     " (strains strictly increasing)");
    }

    // Merge the implied (0, 0); `origin` keeps each knot's input index (−1: implied) for messages.
    std::vector<T> x, y;
    std::vector<long> origin;
    bool has_zero = false;
    for (std::size_t i = 0; i < strains.size(); ++i) {
        if (strains[i] == T(0)) {
            has_zero = true;
            if (stresses[i] != T(0))
                fail(knot_field(name, "stress", i), stresses[i], "must be 0 at strain 0 (sigma(0) = 0)");
        }
    }
    for (std::size_t i = 0; i < strains.size(); ++i) {
        if (!has_zero && strains[i] > T(0) && (i == 0 || strains[i - 1] < T(0))) {
            x.push_back(T(0)), y.push_back(T(0)), origin.push_back(-1);
        }
        x.push_back(strains[i]), y.push_back(stresses[i]), origin.push_back(long(i));
    }
    if (!has_zero && strains.back() < T(0)) x.push_back(T(0)), y.push_back(T(0)), origin.push_back(-1);

    const std::size_t n = x.size();
    if (n < 2) fail(name + ".knot_count", n, "must be >= 2: the table needs a knot besides (0, 0)");
    if (n > std::size_t(capacity))
        fail(name + ".knot_count", n,
             "must be <= " + std::to_string(capacity) + (has_zero ? "" : " (including the implied knot (0, 0))"));
    for (std::size_t k = 1; k < n; ++k) {
        if (y[k] >= y[k - 1]) continue;
        const std::string previous =
            origin[k - 1] < 0 ? std::string("the implied stress 0 at strain 0")
                              : knot_field(name, "stress", std::size_t(origin[k - 1])) + " = " + number(y[k - 1]);
        if (origin[k] < 0)
            fail(name + ".stress at the implied strain 0", y[k],
                 "the stress before it, " + previous + ", must be <= 0 (stress must not decrease with strain)");
        fail(knot_field(name, "stress", std::size_t(origin[k])), y[k],
             "must be >= " + previous + " (stress must not decrease with strain)");
    }

    TabulatedCurve<T> curve{};
    curve.knot_count = int(n);
    curve.odd_extension = x[0] == T(0);
    for (std::size_t k = 0; k < n; ++k) curve.knot_strain[k] = x[k], curve.knot_stress[k] = y[k];

    // PCHIP slopes (Fritsch & Carlson 1980, Fritsch & Butland 1984).
    std::vector<T> h(n - 1), delta(n - 1);
    for (std::size_t k = 0; k + 1 < n; ++k) {
        h[k] = x[k + 1] - x[k];
        delta[k] = (y[k + 1] - y[k]) / h[k];
    }
    using tabulated_detail::end_slope;
    using tabulated_detail::interior_slope;
    for (std::size_t k = 1; k + 1 < n; ++k)
        curve.knot_slope[k] = interior_slope(h[k - 1], h[k], delta[k - 1], delta[k]);
    if (n == 2) {
        curve.knot_slope[0] = curve.knot_slope[1] = delta[0];
    } else {
        curve.knot_slope[n - 1] = end_slope(h[n - 2], h[n - 3], delta[n - 2], delta[n - 3]);
        // The zero knot of an odd extension is interior to the mirrored data, whose secants on both
        // sides are δ₀: the interior rule gives σ′(0) = δ₀.
        curve.knot_slope[0] = curve.odd_extension ? delta[0] : end_slope(h[0], h[1], delta[0], delta[1]);
    }

    // ψ(ε_k) = ∫₀^{ε_k} σ: each piece integrates to h (σ_k + σ_{k+1})/2 + h² (σ′_k − σ′_{k+1})/12,
    // summed outwards from the zero knot.
    std::size_t zero = 0;
    while (x[zero] != T(0)) ++zero;
    auto piece_integral = [&](std::size_t k) {
        return h[k] * (T(0.5) * (y[k] + y[k + 1]) + h[k] * (curve.knot_slope[k] - curve.knot_slope[k + 1]) / T(12));
    };
    curve.knot_energy[zero] = T(0);
    for (std::size_t k = zero + 1; k < n; ++k) curve.knot_energy[k] = curve.knot_energy[k - 1] + piece_integral(k - 1);
    for (std::size_t k = zero; k-- > 0;) curve.knot_energy[k] = curve.knot_energy[k + 1] - piece_integral(k);

    for (std::size_t k = 0; k < n; ++k) {
        const std::string where = " (the table overflows at strain " + number(x[k]) + ")";
        if (!std::isfinite(double(curve.knot_slope[k])))
            fail(knot_field(name, "knot_slope", k), curve.knot_slope[k], "must be finite" + where);
        if (!std::isfinite(double(curve.knot_energy[k])))
            fail(knot_field(name, "knot_energy", k), curve.knot_energy[k], "must be finite" + where);
    }
    return curve;
}

/// The three GNATV curves as a density, each validated
/// (require_valid_tabulated_curve names "warp", "weft", "shear").
template <typename T>
inline TabulatedMembraneDensity<T> make_tabulated_membrane_density(const TabulatedCurve<T>& warp,
                                                                   const TabulatedCurve<T>& weft,
                                                                   const TabulatedCurve<T>& shear)
{
    require_valid_tabulated_curve("warp", warp);
    require_valid_tabulated_curve("weft", weft);
    require_valid_tabulated_curve("shear", shear);
    return TabulatedMembraneDensity<T>{warp, weft, shear};
}

}  // namespace weft
