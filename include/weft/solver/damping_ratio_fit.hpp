#pragma once
/// @file damping_ratio_fit.hpp
/// Damping ratio ζ and natural frequency ω_n of a damped oscillation, fitted
/// to a time series (host only). 2017 Sec. 6.2 fits the characteristic
/// function of a second-order system,
///   f(t) = 2 e^{−ω_n ζ t} cos(ω_n t √(1−ζ²))                 (2017 Eq. 24),
/// to a measured curve; here the general form with amplitude, phase and offset
///   y(t) = c + A e^{−ζ ω_n τ} cos(ω_n √(1−ζ²) τ + φ),  τ = t − t₀,
/// is fitted, so that a raw signal (a spring length, a kinetic energy) can be
/// used without normalizing it first. Eq. 24 is the case c = 0, A = 2, φ = 0.
///
/// Method:
/// 1. initial guess — the offset from the tail mean refined by Shanks'
///    formula on consecutive extrema, the damped frequency ω_d from crossings
///    of the offset (with a hysteresis band of three noise standard
///    deviations, the noise estimated from second differences), and the decay
///    rate σ = ζ ω_n from the logarithmic decrement of the half-cycle extrema
///    (a least-squares line through ln|y_k − c| over t_k);
/// 2. a small grid over (σ, ω_d) around the guess, where (c, A cos φ, A sin φ)
///    enter linearly and are solved exactly (variable projection);
/// 3. Levenberg–Marquardt (Marquardt's diagonal scaling) on all five
///    parameters (c, P = A cos φ, Q = −A sin φ, σ, ω_d).
/// Then ω_n = √(σ² + ω_d²), ζ = σ / ω_n, A = √(P² + Q²), φ = atan2(−Q, P).
///
/// The time origin t₀ is `start_time` when given (samples before it are
/// ignored), else the first sample's time; φ refers to it.

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include <weft/core/error.hpp>
#include <weft/core/math.hpp>

namespace weft {

struct DampingRatioFitOptions {
    std::optional<double> start_time;  ///< fit only samples with t ≥ start_time (and measure τ from it)
    int max_iterations = 200;          ///< Levenberg–Marquardt iterations
    /// Minimum fraction of the variance of the fitted samples that the model
    /// must explain; below it the series is reported as not oscillating.
    double min_explained_variance = 0.5;
};

/// Fitted y(t) = c + A e^{−ζ ω_n (t − t₀)} cos(ω_n √(1−ζ²) (t − t₀) + φ).
struct DampedOscillationFit {
    double damping_ratio = 0;      ///< ζ (dimensionless; < 0 for a growing oscillation)
    double natural_frequency = 0;  ///< ω_n (rad per time unit)
    double amplitude = 0;          ///< A (units of y)
    double phase = 0;              ///< φ (rad) at τ = 0
    double offset = 0;             ///< c (units of y)
    double rms_residual = 0;       ///< √(mean (y − model)²) over the fitted samples
    double damped_frequency = 0;   ///< ω_d = ω_n √(1−ζ²)
    double decay_rate = 0;         ///< σ = ζ ω_n
    double time_origin = 0;        ///< t₀
    int samples = 0;               ///< samples used (t ≥ start_time)
    int zero_crossings = 0;        ///< crossings of the offset found by the initial guess
    int iterations = 0;            ///< Levenberg–Marquardt iterations taken
};

/// 2017 Eq. (24): f(t) = 2 e^{−ω_n ζ t} cos(ω_n t √(1−ζ²)), 0 ≤ ζ < 1.
inline double normalized_damped_oscillation(double damping_ratio, double natural_frequency, double t)
{
    return 2.0 * std::exp(-natural_frequency * damping_ratio * t) *
           std::cos(natural_frequency * t * std::sqrt(1.0 - damping_ratio * damping_ratio));
}

/// The fitted model evaluated at time t.
inline double damped_oscillation(const DampedOscillationFit& fit, double t)
{
    const double tau = t - fit.time_origin;
    return fit.offset +
           fit.amplitude * std::exp(-fit.decay_rate * tau) * std::cos(fit.damped_frequency * tau + fit.phase);
}

namespace detail::oscillation_fit {

using OscillationParams = Eigen::Matrix<double, 5, 1>;

/// Model in the fitting parameters p = (c, P, Q, σ, ω_d):
/// m(τ) = c + e^{−στ} (P cos ω_d τ + Q sin ω_d τ).
struct OscillationModel {
    static double value(const OscillationParams& p, double tau)
    {
        return p(0) + std::exp(-p(3) * tau) * (p(1) * std::cos(p(4) * tau) + p(2) * std::sin(p(4) * tau));
    }

    /// ∂m/∂p: [1, e cos, e sin, −τ e (P cos + Q sin), τ e (−P sin + Q cos)]
    static Eigen::Matrix<double, 1, 5> gradient(const OscillationParams& p, double tau)
    {
        const double e = std::exp(-p(3) * tau);
        const double c = std::cos(p(4) * tau), s = std::sin(p(4) * tau);
        Eigen::Matrix<double, 1, 5> g;
        g << 1.0, e * c, e * s, -tau * e * (p(1) * c + p(2) * s), tau * e * (-p(1) * s + p(2) * c);
        return g;
    }
};

inline double sum_of_squares(const std::vector<double>& tau, const std::vector<double>& y, const OscillationParams& p)
{
    double sum = 0;
    for (std::size_t i = 0; i < tau.size(); ++i) {
        const double r = OscillationModel::value(p, tau[i]) - y[i];
        sum += r * r;
    }
    return sum;
}

/// Variable projection: for fixed (σ, ω_d), (c, P, Q) by linear least squares.
/// Returns the full parameter vector; `cost` receives the sum of squares.
inline OscillationParams linear_parameters(const std::vector<double>& tau, const std::vector<double>& y,
                                           double decay_rate, double damped_frequency, double& cost)
{
    Eigen::Matrix3d normal = Eigen::Matrix3d::Zero();
    Eigen::Vector3d rhs = Eigen::Vector3d::Zero();
    for (std::size_t i = 0; i < tau.size(); ++i) {
        const double e = std::exp(-decay_rate * tau[i]);
        const Eigen::Vector3d basis(1.0, e * std::cos(damped_frequency * tau[i]),
                                    e * std::sin(damped_frequency * tau[i]));
        normal += basis * basis.transpose();
        rhs += basis * y[i];
    }
    const Eigen::Vector3d x = normal.ldlt().solve(rhs);
    OscillationParams p;
    p << x(0), x(1), x(2), decay_rate, damped_frequency;
    cost = x.allFinite() ? sum_of_squares(tau, y, p) : std::numeric_limits<double>::infinity();
    return p;
}

inline double median(std::vector<double> values)
{
    const std::size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
    return values[mid];
}

/// Crossings of the level c with a hysteresis band, and the extremum of each
/// half-cycle between them.
struct CrossingAnalysis {
    std::vector<double> crossing_times;
    std::vector<double> extremum_times;
    std::vector<double> extremum_values;
};

inline CrossingAnalysis analyze_crossings(const std::vector<double>& tau, const std::vector<double>& y, double level,
                                          double band)
{
    CrossingAnalysis out;
    int sign = 0;                 // side of the band the signal was last confirmed on
    std::size_t last_change = 0;  // index after which the signal last crossed `level`
    std::size_t segment_begin = 0;
    // An extremum on the first or last sample may be a cut half-cycle: skipped.
    auto record_extremum = [&](std::size_t begin, std::size_t end, int side) {
        std::size_t best = begin;
        for (std::size_t j = begin; j < end; ++j) {
            if (side * (y[j] - level) > side * (y[best] - level)) best = j;
        }
        if (best == 0 || best + 1 == y.size()) return;
        out.extremum_times.push_back(tau[best]);
        out.extremum_values.push_back(y[best]);
    };
    for (std::size_t i = 0; i < y.size(); ++i) {
        if (i > 0 && (y[i] - level) * (y[i - 1] - level) <= 0 && y[i] != y[i - 1]) last_change = i - 1;
        const int side = y[i] > level + band ? 1 : (y[i] < level - band ? -1 : 0);
        if (side == 0 || side == sign) continue;
        if (sign != 0) {
            // Linear interpolation of the last crossing of `level` before confirmation.
            const std::size_t j = last_change;
            const double frac = (level - y[j]) / (y[j + 1] - y[j]);
            out.crossing_times.push_back(tau[j] + frac * (tau[j + 1] - tau[j]));
            record_extremum(segment_begin, j + 1, sign);
            segment_begin = j + 1;
        }
        sign = side;
    }
    if (sign != 0 && segment_begin < y.size()) record_extremum(segment_begin, y.size(), sign);
    return out;
}

/// Shanks' estimate of the limit of alternating extrema y₁, y₂, y₃ of a
/// geometric decay: c = (y₁ y₃ − y₂²)/(y₁ + y₃ − 2 y₂). Median over triples.
inline bool shanks_offset(const std::vector<double>& extrema, double& offset)
{
    std::vector<double> estimates;
    for (std::size_t k = 0; k + 2 < extrema.size(); ++k) {
        const double y1 = extrema[k], y2 = extrema[k + 1], y3 = extrema[k + 2];
        const double denominator = y1 + y3 - 2.0 * y2;
        if (std::abs(denominator) <= 1e-12 * (std::abs(y1) + std::abs(y2) + std::abs(y3))) continue;
        const double c = (y1 * y3 - y2 * y2) / denominator;
        if (std::isfinite(c)) estimates.push_back(c);
    }
    if (estimates.empty()) return false;
    offset = median(estimates);
    return true;
}

inline std::string describe_count(const char* what, std::size_t count, const char* requirement)
{
    std::ostringstream os;
    os << what << " " << count << " " << requirement;
    return os.str();
}

}  // namespace detail::oscillation_fit

/// Fits a damped oscillation to (time, values). See the file comment.
/// @param[in] time    sample times, strictly increasing, finite
/// @param[in] values  samples, same size as `time`, finite
/// @throws InvalidInput for mismatched sizes, fewer than 8 samples after the
///         start time, non-finite or non-increasing data, or a series that does
///         not oscillate (fewer than two crossings of its offset, ζ ≥ 1, or a
///         fit that explains less than `min_explained_variance` of the variance)
inline DampedOscillationFit fit_damped_oscillation(const std::vector<double>& time, const std::vector<double>& values,
                                                   const DampingRatioFitOptions& options = {})
{
    constexpr std::size_t min_samples = 8;
    if (time.size() != values.size()) {
        throw InvalidInput("invalid time series: " + std::to_string(time.size()) + " times but " +
                           std::to_string(values.size()) + " values");
    }
    if (options.start_time) require_finite("start time", *options.start_time);
    if (options.max_iterations < 1) {
        throw InvalidInput("invalid max_iterations = " + std::to_string(options.max_iterations) + ": must be >= 1");
    }
    for (std::size_t i = 0; i < time.size(); ++i) {
        if (!std::isfinite(time[i])) {
            throw InvalidInput("invalid time series: time[" + std::to_string(i) + "] is not finite");
        }
        if (!std::isfinite(values[i])) {
            throw InvalidInput("invalid time series: value[" + std::to_string(i) + "] is not finite");
        }
        if (i > 0 && !(time[i] > time[i - 1])) {
            throw InvalidInput("invalid time series: time[" + std::to_string(i) + "] = " + std::to_string(time[i]) +
                               " is not greater than the previous time");
        }
    }

    namespace osc = detail::oscillation_fit;
    using osc::OscillationParams;
    DampedOscillationFit fit;
    std::vector<double> tau, y;
    for (std::size_t i = 0; i < time.size(); ++i) {
        if (options.start_time && time[i] < *options.start_time) continue;
        tau.push_back(time[i]);
        y.push_back(values[i]);
    }
    if (y.size() < min_samples) {
        throw InvalidInput(osc::describe_count("time series too short:", y.size(),
                                               "samples at or after the start time (need at least 8)"));
    }
    fit.time_origin = options.start_time ? *options.start_time : tau.front();
    for (double& t : tau) t -= fit.time_origin;
    fit.samples = static_cast<int>(y.size());
    const std::size_t n = y.size();

    // Noise from second differences: for white noise var(Δ²y) = 6 σ²; the
    // median absolute deviation keeps the (smooth) signal from inflating it.
    std::vector<double> second_differences;
    for (std::size_t i = 1; i + 1 < n; ++i) second_differences.push_back(std::abs(y[i + 1] - 2.0 * y[i] + y[i - 1]));
    const double noise = 1.4826 * osc::median(second_differences) / std::sqrt(6.0);
    const auto [y_min, y_max] = std::minmax_element(y.begin(), y.end());
    const double range = *y_max - *y_min;
    const double band = 3.0 * noise + 1e-12 * range;

    // 1. Offset, crossings, extrema; the offset refined twice by Shanks' formula.
    double offset = 0;
    for (std::size_t i = n / 2; i < n; ++i) offset += y[i];
    offset /= static_cast<double>(n - n / 2);
    osc::CrossingAnalysis crossings = osc::analyze_crossings(tau, y, offset, band);
    for (int pass = 0; pass < 2; ++pass) {
        double refined;
        if (!osc::shanks_offset(crossings.extremum_values, refined)) break;
        if (!(refined > *y_min && refined < *y_max)) break;
        offset = refined;
        crossings = osc::analyze_crossings(tau, y, offset, band);
    }
    fit.zero_crossings = static_cast<int>(crossings.crossing_times.size());
    if (crossings.crossing_times.size() < 2) {
        throw InvalidInput(
            osc::describe_count("time series does not oscillate: found", crossings.crossing_times.size(),
                                "crossing(s) of its mean value beyond the noise band (need at least 2)"));
    }
    const double half_period = (crossings.crossing_times.back() - crossings.crossing_times.front()) /
                               static_cast<double>(crossings.crossing_times.size() - 1);
    const double damped_frequency_guess = Constants<double>::pi / half_period;

    // Logarithmic decrement: ln|y_k − c| = ln a₀ − σ t_k, least squares over
    // the half-cycle extrema that stand out of the noise band.
    double decay_guess = 0;
    {
        double st = 0, sl = 0, stt = 0, stl = 0;
        int count = 0;
        for (std::size_t k = 0; k < crossings.extremum_values.size(); ++k) {
            const double a = std::abs(crossings.extremum_values[k] - offset);
            if (!(a > band)) continue;
            const double t = crossings.extremum_times[k], l = std::log(a);
            st += t;
            sl += l;
            stt += t * t;
            stl += t * l;
            ++count;
        }
        const double denominator = count * stt - st * st;
        if (count >= 2 && denominator > 0) decay_guess = -(count * stl - st * sl) / denominator;
    }

    // 2. Grid over (σ, ω_d) around the guess with (c, P, Q) solved linearly.
    double best_cost = std::numeric_limits<double>::infinity();
    OscillationParams p = OscillationParams::Zero();
    const double decay_scale = std::max(std::abs(decay_guess), 0.05 * damped_frequency_guess);
    for (int i = -10; i <= 10; ++i) {
        const double omega = damped_frequency_guess * (1.0 + 0.02 * i);
        for (int j = -4; j <= 8; ++j) {
            const double sigma = decay_guess + 0.25 * j * decay_scale;
            double cost;
            const OscillationParams candidate = osc::linear_parameters(tau, y, sigma, omega, cost);
            if (cost < best_cost) {
                best_cost = cost;
                p = candidate;
            }
        }
    }
    if (!std::isfinite(best_cost)) {
        throw InvalidInput("time series does not oscillate: no damped oscillation fits the initial guess");
    }

    // 3. Levenberg–Marquardt: (JᵀJ + λ diag JᵀJ) δ = −Jᵀr.
    double cost = best_cost;
    double lambda = 1e-3;
    for (int iteration = 0; iteration < options.max_iterations; ++iteration) {
        Eigen::Matrix<double, 5, 5> jtj = Eigen::Matrix<double, 5, 5>::Zero();
        Eigen::Matrix<double, 5, 1> jtr = Eigen::Matrix<double, 5, 1>::Zero();
        for (std::size_t i = 0; i < n; ++i) {
            const Eigen::Matrix<double, 1, 5> g = osc::OscillationModel::gradient(p, tau[i]);
            const double r = osc::OscillationModel::value(p, tau[i]) - y[i];
            jtj += g.transpose() * g;
            jtr += g.transpose() * r;
        }
        fit.iterations = iteration + 1;
        bool accepted = false;
        bool converged = false;
        while (lambda < 1e16) {
            Eigen::Matrix<double, 5, 5> a = jtj;
            for (int k = 0; k < 5; ++k) a(k, k) += lambda * std::max(jtj(k, k), 1e-300);
            const OscillationParams step = a.ldlt().solve(-jtr);
            const OscillationParams trial = p + step;
            const double trial_cost =
                step.allFinite() ? osc::sum_of_squares(tau, y, trial) : std::numeric_limits<double>::infinity();
            if (trial_cost <= cost) {
                converged = cost - trial_cost <= 1e-15 * cost || step.norm() <= 1e-13 * (p.norm() + 1e-300);
                p = trial;
                cost = trial_cost;
                lambda = std::max(lambda * 0.1, 1e-12);
                accepted = true;
                break;
            }
            lambda *= 10.0;
        }
        if (!accepted || converged) break;
    }

    // Back to the physical parameters; cos is even, so ω_d < 0 flips Q.
    double omega_d = p(4), q_coefficient = p(2);
    if (omega_d < 0) {
        omega_d = -omega_d;
        q_coefficient = -q_coefficient;
    }
    fit.offset = p(0);
    fit.decay_rate = p(3);
    fit.damped_frequency = omega_d;
    fit.natural_frequency = std::sqrt(p(3) * p(3) + omega_d * omega_d);
    fit.damping_ratio = fit.natural_frequency > 0 ? p(3) / fit.natural_frequency : 0.0;
    fit.amplitude = std::hypot(p(1), q_coefficient);
    fit.phase = std::atan2(-q_coefficient, p(1));
    fit.rms_residual = std::sqrt(cost / static_cast<double>(n));

    double mean = 0, variance = 0;
    for (double v : y) mean += v;
    mean /= static_cast<double>(n);
    for (double v : y) variance += (v - mean) * (v - mean);
    const double explained = variance > 0 ? 1.0 - cost / variance : 0.0;
    if (!(omega_d > 0) || !(fit.damping_ratio < 1.0) || !(explained >= options.min_explained_variance)) {
        std::ostringstream os;
        os.precision(6);
        os << "time series does not oscillate: the fit (zeta = " << fit.damping_ratio
           << ", omega_n = " << fit.natural_frequency << ") explains " << 100.0 * explained
           << "% of the variance (need " << 100.0 * options.min_explained_variance << "%)";
        throw InvalidInput(os.str());
    }
    return fit;
}

}  // namespace weft
