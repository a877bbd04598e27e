#pragma once
/// @file rotating_spring.hpp
/// The rotating spring of 2018 Sec. 3.6 (Fig. 2): a mass on a linear spring in
/// a horizontal plane, one end fixed at the origin, started undeformed with a
/// velocity tangent to the spring. Shared by the `rotating_spring` example and
/// its test (tests/examples/test_rotating_spring.cpp), so both run this code.
///
/// The spring is one stretch element of weft (2017 Eq. 12–14) with DoFs
/// q = [x₀, s₀, x₁, s₁]; node 0 (x₀, s₀) and the arc length s₁ are fixed by the
/// Baraff–Witkin filter, so s₁ − s₀ = L and the strain is the Lagrangian
/// ε = |x₁|/L − 1 of the paper. Forces and Jacobians come from the generic
/// layer:
/// - elastic: V_e = Ω ½ k_e ε² = ½ L k_e ε² (Ω = Δs = L);
/// - strain-rate damping: the Rayleigh analogy k_d = β k_e (2018 Eq. 12),
///   V_d = ½ L k_d ε̇², f_d = −Ω ∇ε k_d ε̇ (2018 Eq. 7), symmetric clamped ∂f_d/∂q;
/// - Rayleigh damping: f_R = −β (∂²V_e/∂x²) v (2018 Eq. 11), ∂f_R/∂q neglected.

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/element/dissipation.hpp>
#include <weft/element/elastic.hpp>
#include <weft/element/rayleigh_damping.hpp>
#include <weft/potential/quadratic.hpp>
#include <weft/potential/rayleigh_analogy.hpp>
#include <weft/solver/dense_integrators.hpp>
#include <weft/strain/stretch.hpp>

#include "../cli_common.hpp"

namespace weft::examples {

/// "invalid FIELD = VALUE: REQUIREMENT", the message style of core/error.hpp.
inline std::string invalid_value(const std::string& field, double value, const char* requirement)
{
    std::ostringstream os;
    os.precision(17);
    os << "invalid " << field << " = " << value << ": " << requirement;
    return os.str();
}

enum class SpringDamping { none, strain_rate, rayleigh };

inline const char* to_string(SpringDamping d)
{
    switch (d) {
        case SpringDamping::none:
            return "none";
        case SpringDamping::strain_rate:
            return "strain-rate";
        case SpringDamping::rayleigh:
            return "rayleigh";
    }
    return "unknown";
}

/// Physical parameters; defaults are the paper's (L = 2, k_e = 100, m = 1, speed 20).
struct RotatingSpringParameters {
    double rest_length = 2.0;        ///< L (m)
    double stiffness = 100.0;        ///< k_e (N): V_e = ½ L k_e ε²
    double mass = 1.0;               ///< m (kg) of the moving end point
    double tangential_speed = 20.0;  ///< v₀ (m/s), perpendicular to the spring at t = 0
    double initial_strain = 0.0;     ///< ε at t = 0 (the spring starts with length L (1 + ε))
    SpringDamping damping = SpringDamping::none;
    double beta = 0.1;  ///< β (s): k_d = β k_e (strain rate) or f = −β K v (Rayleigh)
};

/// The spring as a dense system: callable (q, v) → f, ∂f/∂q, ∂f/∂v.
class RotatingSpring {
public:
    using Vec8 = Vec<double, 8>;
    using State = DenseState<double, 8>;

    /// @throws InvalidInput for L, k_e, m ≤ 0, β < 0, ε₀ ≤ −1 or non-finite values
    explicit RotatingSpring(const RotatingSpringParameters& p) : m_p(p)
    {
        require_positive("rest_length", p.rest_length);
        require_positive("stiffness", p.stiffness);
        require_positive("mass", p.mass);
        require_finite("tangential_speed", p.tangential_speed);
        require_finite("initial_strain", p.initial_strain);
        if (!(p.initial_strain > -1.0)) {
            throw InvalidInput(invalid_value("initial_strain", p.initial_strain, "must be > -1"));
        }
        require_non_negative("beta", p.beta);
    }

    const RotatingSpringParameters& parameters() const { return m_p; }

    DenseForces<double, 8> operator()(const Vec8& q, const Vec8& v) const
    {
        const StretchEval<double> e = stretch_strain<double>(q, v);
        const QuadraticDensity<double, 1> elastic{m_p.stiffness};
        DenseForces<double, 8> out;
        out.force = elastic_force(e, elastic);
        out.force_jacobian_positions = elastic_force_jacobian(e, elastic);
        out.force_jacobian_velocities.setZero();
        if (m_p.damping == SpringDamping::strain_rate) {
            // 2018 Eq. (12): k_d = β k_e
            const QuadraticDensity<double, 1> damping = rayleigh_analogy(elastic, m_p.beta);
            out.force += dissipative_force(e, damping);
            out.force_jacobian_velocities += dissipative_force_jacobian(e, damping, DiffWrt::velocities);
            out.force_jacobian_positions += dissipative_force_jacobian(e, damping, DiffWrt::positions);
        } else if (m_p.damping == SpringDamping::rayleigh) {
            out.force += rayleigh_damping_force(e, elastic, m_p.beta, v);
            out.force_jacobian_velocities += rayleigh_damping_force_jacobian(e, elastic, m_p.beta);
        }
        return out;
    }

    /// x₀ = 0, s₀ = 0, x₁ = (L(1 + ε₀), 0, 0), s₁ = L; v₁ = (0, v₀, 0).
    State initial_state() const
    {
        State s;
        s.positions << 0, 0, 0, 0, m_p.rest_length * (1.0 + m_p.initial_strain), 0, 0, m_p.rest_length;
        s.velocities << 0, 0, 0, 0, 0, m_p.tangential_speed, 0, 0;
        s.time = 0;
        return s;
    }

    /// m on every position DoF; the fixed arc-length DoFs get 1 (filtered out).
    Mat<double, 8, 8> mass_matrix() const
    {
        Vec8 d;
        d << m_p.mass, m_p.mass, m_p.mass, 1.0, m_p.mass, m_p.mass, m_p.mass, 1.0;
        return d.asDiagonal();
    }

    /// Node 0 and both arc-length coordinates are fixed; x₁ is free.
    static DenseFixedMask<8> fixed_mask()
    {
        DenseFixedMask<8> fixed;
        fixed << true, true, true, true, false, false, false, true;
        return fixed;
    }

    DenseSystem<double, 8, RotatingSpring> system() const
    {
        return make_dense_system<double, 8>(*this, mass_matrix(), fixed_mask());
    }

    double kinetic_energy(const State& s) const { return 0.5 * m_p.mass * s.velocities.segment<3>(4).squaredNorm(); }
    double elastic_energy(const State& s) const
    {
        const double strain = radius(s) / m_p.rest_length - 1.0;
        return 0.5 * m_p.rest_length * m_p.stiffness * strain * strain;
    }
    static double radius(const State& s) { return (s.positions.segment<3>(4) - s.positions.segment<3>(0)).norm(); }
    /// z component of m x₁ × v₁ (about the fixed end at the origin).
    double angular_momentum(const State& s) const
    {
        return m_p.mass * s.positions.segment<3>(4).cross(s.velocities.segment<3>(4))(2);
    }

private:
    RotatingSpringParameters m_p;
};

/// Radius of the uniform circular motion the strain-rate damped spring settles
/// to: the elastic force is the centripetal force, h²/(m r³) = k_e (r/L − 1),
/// with h = m L (1 + ε₀) v₀ conserved (bisection; r ∈ (L, L + h²/(m k_e L²)]).
inline double circular_motion_radius(const RotatingSpringParameters& p)
{
    const double h = p.mass * p.rest_length * (1.0 + p.initial_strain) * p.tangential_speed;
    auto g = [&](double r) { return h * h / (p.mass * r * r * r) - p.stiffness * (r / p.rest_length - 1.0); };
    double lo = p.rest_length, hi = p.rest_length + h * h / (p.mass * p.stiffness * p.rest_length * p.rest_length);
    if (!(hi > lo)) return p.rest_length;
    for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; ++i) {
        const double mid = 0.5 * (lo + hi);
        (g(mid) > 0 ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

/// Largest stable time step of symplectic Euler for the spring's radial
/// oscillation, 2/ω_n with ω_n = √(k_e/(m L)) (undamped; damping and the
/// centrifugal stiffening of a rotating spring lower it further).
inline double symplectic_euler_stable_dt(const RotatingSpringParameters& p)
{
    return 2.0 / std::sqrt(p.stiffness / (p.mass * p.rest_length));
}

/// One row of the time series.
struct RotatingSpringSample {
    double time;
    double kinetic_energy;
    double elastic_energy;
    double radius;
    double angular_momentum;
};

struct RotatingSpringRun {
    std::vector<RotatingSpringSample> samples;  ///< the initial state, then one per step, all finite
    DenseIntegrationSummary<double> summary;    ///< failure (if any) and Newton statistics
    /// A diverging (unstable) run can keep a finite state whose energies
    /// overflow; samples stop before the first such state.
    bool energies_overflowed = false;
    double overflow_time = 0;

    bool ok() const { return summary.ok() && !energies_overflowed; }
};

/// Number of steps of size dt that cover `duration` (rounded to nearest).
/// @throws InvalidInput for dt ≤ 0, duration ≤ 0 or more than 10⁸ steps
inline long step_count(double dt, double duration)
{
    require_positive("dt", dt);
    require_positive("duration", duration);
    const double steps = std::round(duration / dt);
    if (!(steps <= 1e8)) {
        throw InvalidInput(invalid_value("duration / dt", duration / dt, "must be at most 1e8 steps"));
    }
    return steps < 1 ? 1 : static_cast<long>(steps);
}

/// Simulates the spring; stops early (reported in `summary`) if a step fails.
inline RotatingSpringRun simulate_rotating_spring(const RotatingSpringParameters& p, DenseIntegrator integrator,
                                                  double dt, double duration,
                                                  const DenseNewtonOptions<double>& newton = {})
{
    const RotatingSpring spring(p);
    const long steps = step_count(dt, duration);
    const auto system = spring.system();
    RotatingSpring::State state = spring.initial_state();
    RotatingSpringRun run;
    run.samples.reserve(static_cast<std::size_t>(steps) + 1);
    auto record = [&](const RotatingSpring::State& s) {
        if (run.energies_overflowed) return;
        const RotatingSpringSample sample{s.time, spring.kinetic_energy(s), spring.elastic_energy(s),
                                          RotatingSpring::radius(s), spring.angular_momentum(s)};
        if (!(std::isfinite(sample.kinetic_energy) && std::isfinite(sample.elastic_energy) &&
              std::isfinite(sample.radius) && std::isfinite(sample.angular_momentum))) {
            run.energies_overflowed = true;
            run.overflow_time = s.time;
            return;
        }
        run.samples.push_back(sample);
    };
    record(state);
    run.summary = integrate(system, state, dt, steps, integrator, newton, record);
    return run;
}

// ---------------------------------------------------------------------------
// Command line

struct RotatingSpringOptions {
    RotatingSpringParameters spring;
    DenseIntegrator integrator = DenseIntegrator::symplectic_euler;
    double dt = 0.01;       ///< time step (s)
    double duration = 10;   ///< simulated time (s)
    std::string csv_path;   ///< empty: no CSV
    std::string plot_path;  ///< empty: no plot
    bool help = false;
    bool version = false;  ///< --version
};

namespace cli {

/// Parses a whole argument as a finite double; the message names flag and value.
inline double parse_number(const std::string& flag, const std::string& text)
{
    const char* begin = text.c_str();
    char* end = nullptr;
    const double value = std::strtod(begin, &end);
    if (text.empty() || end == begin || *end != '\0') {
        throw InvalidInput("invalid " + flag + " = '" + text + "': not a number");
    }
    if (!std::isfinite(value)) throw InvalidInput("invalid " + flag + " = '" + text + "': must be a finite number");
    return value;
}

/// The options as given (text), checked after CLI11 has matched them.
struct RotatingSpringText {
    std::string rest_length, stiffness, mass, tangential_speed, initial_strain, damping, beta, integrator, dt, duration,
        csv, plot;
};

/// The command line (CLI11) with its defaults shown by --help.
inline void setup_app(CLI::App& app, RotatingSpringText& t)
{
    examples::setup_app(app);
    app.description("A mass on a spring in a plane, one end fixed at the origin (2018 Sec. 3.6, Fig. 2).");
    const auto option = [&](const char* name, std::string& value, const char* help, const char* fallback,
                            const char* type) {
        app.add_option(name, value, help)->default_str(fallback)->type_name(type);
    };
    option("--rest-length", t.rest_length, "spring rest length (m), > 0", "2", "L");
    option("--stiffness", t.stiffness, "elastic stiffness k_e, V = 1/2 L k_e eps^2, > 0", "100", "K");
    option("--mass", t.mass, "mass of the moving end (kg), > 0", "1", "M");
    option("--tangential-speed", t.tangential_speed, "initial speed perpendicular to the spring (m/s)", "20", "V");
    option("--initial-strain", t.initial_strain, "initial strain of the spring, > -1", "0", "E0");
    option("--damping", t.damping,
           "none | strain-rate | rayleigh; strain-rate: k_d = beta k_e (2018 Eq. 12), rayleigh: f = -beta K v", "none",
           "MODEL");
    option("--beta", t.beta, "damping coefficient beta (s), >= 0", "0.1", "B");
    option("--integrator", t.integrator,
           "symplectic-euler | newmark | backward-euler (the last two with a full Newton solve)", "symplectic-euler",
           "NAME");
    option("--dt", t.dt, "time step (s), > 0", "0.01", "H");
    option("--duration", t.duration, "simulated time (s), > 0", "10", "T");
    option("--csv", t.csv, "write time,kinetic_energy,elastic_energy,radius per step", "none", "FILE");
    option("--plot", t.plot,
           "plot kinetic energy for no damping, strain-rate and Rayleigh damping at beta = 0.01, 0.05, 0.1 "
           "(needs gnuplot)",
           "none", "FILE.png");
}

}  // namespace cli

inline std::string rotating_spring_usage()
{
    cli::RotatingSpringText t;
    CLI::App app("rotating_spring", "rotating_spring");
    cli::setup_app(app, t);
    return app.help();
}

/// Parses the arguments after the program name (CLI11).
/// @throws InvalidInput naming the flag and the value: unknown flag, missing
///         value, non-numeric value, unknown enum value, or a value out of range
inline RotatingSpringOptions parse_rotating_spring_options(const std::vector<std::string>& args)
{
    RotatingSpringOptions o;
    cli::RotatingSpringText t;
    CLI::App app("rotating_spring", "rotating_spring");
    cli::setup_app(app, t);
    std::vector<const char*> argv{"rotating_spring"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    if (!parse_options(app, static_cast<int>(argv.size()), argv.data(), o)) return o;
    const auto given = [&](const char* flag) { return app.count(flag) > 0; };
    const auto number = [&](const char* flag, const std::string& text) { return cli::parse_number(flag, text); };
    if (given("--rest-length"))
        o.spring.rest_length = require_positive("--rest-length", number("--rest-length", t.rest_length));
    if (given("--stiffness")) o.spring.stiffness = require_positive("--stiffness", number("--stiffness", t.stiffness));
    if (given("--mass")) o.spring.mass = require_positive("--mass", number("--mass", t.mass));
    if (given("--tangential-speed")) o.spring.tangential_speed = number("--tangential-speed", t.tangential_speed);
    if (given("--initial-strain")) {
        o.spring.initial_strain = number("--initial-strain", t.initial_strain);
        if (!(o.spring.initial_strain > -1.0))
            throw InvalidInput(invalid_value("--initial-strain", o.spring.initial_strain, "must be > -1"));
    }
    if (given("--damping")) {
        if (t.damping == "none")
            o.spring.damping = SpringDamping::none;
        else if (t.damping == "strain-rate")
            o.spring.damping = SpringDamping::strain_rate;
        else if (t.damping == "rayleigh")
            o.spring.damping = SpringDamping::rayleigh;
        else
            throw InvalidInput("invalid --damping = '" + t.damping + "': expected none, strain-rate or rayleigh");
    }
    if (given("--beta")) o.spring.beta = require_non_negative("--beta", number("--beta", t.beta));
    if (given("--integrator")) {
        if (t.integrator == "symplectic-euler")
            o.integrator = DenseIntegrator::symplectic_euler;
        else if (t.integrator == "newmark")
            o.integrator = DenseIntegrator::newmark;
        else if (t.integrator == "backward-euler")
            o.integrator = DenseIntegrator::backward_euler;
        else
            throw InvalidInput("invalid --integrator = '" + t.integrator +
                               "': expected symplectic-euler, newmark or backward-euler");
    }
    if (given("--dt")) o.dt = require_positive("--dt", number("--dt", t.dt));
    if (given("--duration")) o.duration = require_positive("--duration", number("--duration", t.duration));
    if (given("--csv")) {
        o.csv_path = t.csv;
        if (o.csv_path.empty()) throw InvalidInput("invalid --csv = '': empty file name");
    }
    if (given("--plot")) {
        o.plot_path = t.plot;
        if (o.plot_path.empty()) throw InvalidInput("invalid --plot = '': empty file name");
    }
    if (!(std::round(o.duration / o.dt) <= 1e8)) {
        throw InvalidInput(invalid_value("--duration / --dt", o.duration / o.dt, "must be at most 1e8 steps"));
    }
    return o;
}

}  // namespace weft::examples
