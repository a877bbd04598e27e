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
};

inline std::string rotating_spring_usage()
{
    return "usage: rotating_spring [options]\n"
           "  A mass on a spring in a plane, one end fixed at the origin (2018 Sec. 3.6, Fig. 2).\n"
           "  --rest-length L         spring rest length (default 2)\n"
           "  --stiffness K           elastic stiffness k_e, V = 1/2 L k_e eps^2 (default 100)\n"
           "  --mass M                mass of the moving end (default 1)\n"
           "  --tangential-speed V    initial speed perpendicular to the spring (default 20)\n"
           "  --initial-strain E0     initial strain of the spring, > -1 (default 0)\n"
           "  --damping none|strain-rate|rayleigh\n"
           "                          strain-rate: k_d = beta k_e (2018 Eq. 12); rayleigh: f = -beta K v\n"
           "                          (default none)\n"
           "  --beta B                damping coefficient beta >= 0, seconds (default 0.1)\n"
           "  --integrator symplectic-euler|newmark|backward-euler\n"
           "                          newmark and backward-euler use a full Newton solve\n"
           "                          (default symplectic-euler)\n"
           "  --dt H                  time step > 0 (default 0.01)\n"
           "  --duration T            simulated time > 0 (default 10)\n"
           "  --csv FILE              write time,kinetic_energy,elastic_energy,radius per step\n"
           "  --plot FILE.png         plot kinetic energy for no damping, strain-rate and Rayleigh\n"
           "                          damping at beta = 0.01, 0.05, 0.1 (needs gnuplot)\n"
           "  --help                  print this message\n";
}

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

}  // namespace cli

/// Parses the arguments after the program name.
/// @throws InvalidInput naming the flag and the value: unknown flag, missing
///         value, non-numeric value, unknown enum value, or a value out of range
inline RotatingSpringOptions parse_rotating_spring_options(const std::vector<std::string>& args)
{
    RotatingSpringOptions o;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& flag = args[i];
        if (flag == "--help" || flag == "-h") {
            o.help = true;
            continue;
        }
        auto value = [&]() -> const std::string& {
            if (i + 1 >= args.size()) throw InvalidInput("missing value for " + flag);
            return args[++i];
        };
        auto number = [&]() { return cli::parse_number(flag, value()); };
        if (flag == "--rest-length") {
            o.spring.rest_length = require_positive("--rest-length", number());
        } else if (flag == "--stiffness") {
            o.spring.stiffness = require_positive("--stiffness", number());
        } else if (flag == "--mass") {
            o.spring.mass = require_positive("--mass", number());
        } else if (flag == "--tangential-speed") {
            o.spring.tangential_speed = number();
        } else if (flag == "--initial-strain") {
            o.spring.initial_strain = number();
            if (!(o.spring.initial_strain > -1.0)) {
                throw InvalidInput(invalid_value("--initial-strain", o.spring.initial_strain, "must be > -1"));
            }
        } else if (flag == "--damping") {
            const std::string& v = value();
            if (v == "none") {
                o.spring.damping = SpringDamping::none;
            } else if (v == "strain-rate") {
                o.spring.damping = SpringDamping::strain_rate;
            } else if (v == "rayleigh") {
                o.spring.damping = SpringDamping::rayleigh;
            } else {
                throw InvalidInput("invalid --damping = '" + v + "': expected none, strain-rate or rayleigh");
            }
        } else if (flag == "--beta") {
            o.spring.beta = require_non_negative("--beta", number());
        } else if (flag == "--integrator") {
            const std::string& v = value();
            if (v == "symplectic-euler") {
                o.integrator = DenseIntegrator::symplectic_euler;
            } else if (v == "newmark") {
                o.integrator = DenseIntegrator::newmark;
            } else if (v == "backward-euler") {
                o.integrator = DenseIntegrator::backward_euler;
            } else {
                throw InvalidInput("invalid --integrator = '" + v +
                                   "': expected symplectic-euler, newmark or backward-euler");
            }
        } else if (flag == "--dt") {
            o.dt = require_positive("--dt", number());
        } else if (flag == "--duration") {
            o.duration = require_positive("--duration", number());
        } else if (flag == "--csv") {
            o.csv_path = value();
            if (o.csv_path.empty()) throw InvalidInput("invalid --csv = '': empty file name");
        } else if (flag == "--plot") {
            o.plot_path = value();
            if (o.plot_path.empty()) throw InvalidInput("invalid --plot = '': empty file name");
        } else {
            throw InvalidInput("unknown option '" + flag + "' (see --help)");
        }
    }
    if (!o.help && !(std::round(o.duration / o.dt) <= 1e8)) {
        throw InvalidInput(invalid_value("--duration / --dt", o.duration / o.dt, "must be at most 1e8 steps"));
    }
    return o;
}

}  // namespace weft::examples
