#pragma once
/// @file dense_integrators.hpp
/// Time integrators for small dense systems M q̈ = f(q, q̇) (host only): the
/// reference integrators of the solver layer, used by the examples and as an
/// oracle for the sparse/backend solvers.
///
/// A system is a callable `forces(q, v)` returning a `DenseForces` (the force
/// f, ∂f/∂q and ∂f/∂v), a mass matrix M and a per-DoF `fixed` mask. Fixed DoFs
/// keep their velocity (Δv = 0 through the Baraff–Witkin filter S: the rows
/// and columns of a fixed DoF in the linear system are replaced by identity,
/// and its right-hand side by zero); their positions still follow q += h v.
///
/// Integrators:
/// - symplectic Euler: v₁ = v₀ + h M⁻¹ f(q₀, v₀), q₁ = q₀ + h v₁ (explicit);
/// - RK4 on (q, v) (explicit reference);
/// - implicit Newmark, average acceleration (γ = ½, β = ¼):
///   q₁ = q₀ + h v₀ + h²/4 (a₀ + a₁), v₁ = v₀ + h/2 (a₀ + a₁), i.e. the
///   trapezoidal rule, which conserves the energy of a linear undamped system;
/// - backward Euler: q₁ = q₀ + h v₁, M (v₁ − v₀) = h f(q₁, v₁).
///
/// Both implicit schemes are the θ-scheme q₁ = q₀ + h((1−θ)v₀ + θv₁),
/// M (v₁ − v₀) = h (1−θ) f(q₀, v₀) + h θ f(q₁, v₁) (θ = 1 backward Euler,
/// θ = ½ Newmark) and are solved for v₁ by Newton's method on the residual
/// r(v₁) = M (v₁ − v₀) − h (1−θ) f₀ − h θ f(q₁, v₁) with the Jacobian
/// A = M − h θ ∂f/∂v − h² θ² ∂f/∂q.
/// The first Newton iteration linearizes f about the start of the step
/// (q₀, v₀); for backward Euler this is exactly the Baraff–Witkin system
/// (cloth-simulation-lecture-slides, "Implicit integration"; Baraff & Witkin
/// 1998):
///   A = M − h ∂f/∂v − h² ∂f/∂q,   b = h (f₀ + h ∂f/∂q v₀),   A Δv = b.
/// `DenseNewtonMode::single_step` stops there (the one-Newton-step variant the
/// 2018 paper compares against, Sec. 3.4/3.6); `DenseNewtonMode::full` iterates
/// with f and its Jacobians evaluated at the current iterate until
/// ‖S r‖ ≤ absolute_tolerance + tolerance · (‖S M (v₁ − v₀)‖ + ‖S h f̄‖),
/// f̄ = (1−θ) f₀ + θ f(q₁, v₁) (the two terms whose difference r is), or
/// until ‖S r‖ is at the round-off level of evaluating f (64 ε_mach times
/// those terms plus h θ (‖∂f/∂q‖ ‖q₁‖ + ‖∂f/∂v‖ ‖v₁‖)), which matters only
/// near rest, where f is a difference of large, nearly equal terms.
///
/// Failures are reported in `DenseStepResult::status`, never hidden: a Newton
/// solve that reaches `max_iterations` without meeting the tolerance is
/// `newton_not_converged`; a singular system is `singular_system`; a NaN or
/// infinity in a force, a Jacobian or the new state is `non_finite`. On any
/// failure the state is left exactly as it was, so the caller can stop,
/// retry with a smaller step, or accept the last iterate knowingly.

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include <Eigen/Dense>

#include <weft/core/error.hpp>
#include <weft/core/types.hpp>

namespace weft {

/// What a system returns for one (q, v): the force and its two Jacobians.
/// @tparam N  number of DoFs, or Eigen::Dynamic
template <typename T, int N = Eigen::Dynamic>
struct DenseForces {
    Vec<T, N> force;                         ///< f(q, v), N
    Mat<T, N, N> force_jacobian_positions;   ///< ∂f/∂q, N by N
    Mat<T, N, N> force_jacobian_velocities;  ///< ∂f/∂v, N by N
};

/// Positions, velocities and time of a dense system.
template <typename T, int N = Eigen::Dynamic>
struct DenseState {
    Vec<T, N> positions;   ///< q, N
    Vec<T, N> velocities;  ///< v = q̇, N
    T time = T(0);
};

/// Per-DoF mask: true where the DoF is fixed (filtered out of the solve).
template <int N = Eigen::Dynamic>
using DenseFixedMask = Eigen::Array<bool, N, 1>;

/// A small dense system M q̈ = f(q, q̇) with a Baraff–Witkin filter.
/// @tparam ForceFunction  callable (const Vec<T,N>& q, const Vec<T,N>& v) → DenseForces<T,N>
template <typename T, int N, class ForceFunction>
struct DenseSystem {
    ForceFunction forces;
    Mat<T, N, N> mass;        ///< M, N by N, symmetric positive definite on the free DoFs
    DenseFixedMask<N> fixed;  ///< N flags, true = fixed

    Eigen::Index dofs() const { return mass.rows(); }
};

/// Builds a DenseSystem, checking that the sizes agree and M is finite.
/// @throws InvalidInput on mismatched sizes or a non-finite mass matrix
template <typename T, int N, class ForceFunction>
DenseSystem<T, N, ForceFunction> make_dense_system(ForceFunction forces, const Mat<T, N, N>& mass,
                                                   const DenseFixedMask<N>& fixed)
{
    if (mass.rows() != mass.cols()) {
        throw InvalidInput("invalid mass matrix: " + std::to_string(mass.rows()) + " by " +
                           std::to_string(mass.cols()) + " is not square");
    }
    if (fixed.size() != mass.rows()) {
        throw InvalidInput("invalid fixed mask: size " + std::to_string(fixed.size()) + " does not match " +
                           std::to_string(mass.rows()) + " DoFs");
    }
    if (!mass.allFinite()) throw InvalidInput("invalid mass matrix: contains a non-finite entry");
    return DenseSystem<T, N, ForceFunction>{std::move(forces), mass, fixed};
}

enum class DenseIntegrator { symplectic_euler, rk4, newmark, backward_euler };

/// Full Newton solve, or the first (linearized, Baraff–Witkin) iteration only.
enum class DenseNewtonMode { full, single_step };

template <typename T>
struct DenseNewtonOptions {
    DenseNewtonMode mode = DenseNewtonMode::full;
    T tolerance = T(1e-10);       ///< relative to the size of the residual's terms
    T absolute_tolerance = T(0);  ///< in units of momentum (M v)
    int max_iterations = 25;      ///< linear solves per step, ≥ 1
};

enum class DenseStepStatus {
    ok = 0,
    newton_not_converged = 1,  ///< max_iterations reached above the tolerance
    singular_system = 2,       ///< the (filtered) Newton or mass matrix is singular
    non_finite = 3,            ///< NaN or infinity in a force, a Jacobian or the new state
};

inline const char* to_string(DenseStepStatus s)
{
    switch (s) {
        case DenseStepStatus::ok:
            return "ok";
        case DenseStepStatus::newton_not_converged:
            return "Newton solve did not converge";
        case DenseStepStatus::singular_system:
            return "singular linear system";
        case DenseStepStatus::non_finite:
            return "non-finite value (NaN or infinity)";
    }
    return "unknown";
}

inline const char* to_string(DenseIntegrator m)
{
    switch (m) {
        case DenseIntegrator::symplectic_euler:
            return "symplectic-euler";
        case DenseIntegrator::rk4:
            return "rk4";
        case DenseIntegrator::newmark:
            return "newmark";
        case DenseIntegrator::backward_euler:
            return "backward-euler";
    }
    return "unknown";
}

/// Outcome of one step. Explicit integrators report 0 Newton iterations.
template <typename T>
struct DenseStepResult {
    DenseStepStatus status = DenseStepStatus::ok;
    int newton_iterations = 0;  ///< linear solves done in this step
    T residual_norm = T(0);     ///< final ‖S r‖ of a full Newton solve (0 for explicit and single-step)
    T residual_scale = T(0);    ///< ‖S M Δv‖ + ‖S h f̄‖, what the relative tolerance multiplies

    bool ok() const { return status == DenseStepStatus::ok; }
};

namespace detail::dense {

template <typename T, int N>
void require_state_size(const char* what, const Vec<T, N>& x, Eigen::Index n)
{
    if (x.size() != n) {
        throw InvalidInput(std::string("invalid ") + what + ": size " + std::to_string(x.size()) + " does not match " +
                           std::to_string(n) + " DoFs");
    }
}

template <typename T, int N, class F>
void require_compatible(const DenseSystem<T, N, F>& system, const DenseState<T, N>& state, T dt)
{
    require_positive("time step", dt);
    require_state_size("positions", state.positions, system.dofs());
    require_state_size("velocities", state.velocities, system.dofs());
    if (system.fixed.size() != system.dofs()) {
        throw InvalidInput("invalid fixed mask: size " + std::to_string(system.fixed.size()) + " does not match " +
                           std::to_string(system.dofs()) + " DoFs");
    }
}

/// Evaluates the forces, checks their sizes, and reports whether all of
/// f, ∂f/∂q, ∂f/∂v are finite.
template <typename T, int N, class F>
bool evaluate_forces(const DenseSystem<T, N, F>& system, const Vec<T, N>& q, const Vec<T, N>& v, DenseForces<T, N>& out)
{
    out = system.forces(q, v);
    const Eigen::Index n = system.dofs();
    if (out.force.size() != n || out.force_jacobian_positions.rows() != n || out.force_jacobian_positions.cols() != n ||
        out.force_jacobian_velocities.rows() != n || out.force_jacobian_velocities.cols() != n) {
        throw InvalidInput("invalid force evaluation: force or Jacobian sizes do not match " + std::to_string(n) +
                           " DoFs");
    }
    return out.force.allFinite() && out.force_jacobian_positions.allFinite() &&
           out.force_jacobian_velocities.allFinite();
}

/// Baraff–Witkin filter of a linear system: a fixed DoF's row and column
/// become identity and its right-hand side zero, so its Δv is exactly 0.
template <typename T, int N>
void filter_system(const DenseFixedMask<N>& fixed, Mat<T, N, N>& a, Vec<T, N>& b)
{
    for (Eigen::Index i = 0; i < fixed.size(); ++i) {
        if (!fixed(i)) continue;
        a.row(i).setZero();
        a.col(i).setZero();
        a(i, i) = T(1);
        b(i) = T(0);
    }
}

/// S r: the residual with its fixed components zeroed.
template <typename T, int N>
Vec<T, N> filtered(const DenseFixedMask<N>& fixed, Vec<T, N> r)
{
    for (Eigen::Index i = 0; i < fixed.size(); ++i) {
        if (fixed(i)) r(i) = T(0);
    }
    return r;
}

/// Solves the filtered system; false if it is singular or the solution is not finite.
template <typename T, int N>
bool solve_filtered(const DenseFixedMask<N>& fixed, Mat<T, N, N> a, Vec<T, N> b, Vec<T, N>& x, DenseStepStatus& status)
{
    filter_system(fixed, a, b);
    if (!a.allFinite() || !b.allFinite()) {
        status = DenseStepStatus::non_finite;
        return false;
    }
    const Eigen::FullPivLU<Mat<T, N, N>> lu(a);
    if (!lu.isInvertible()) {
        status = DenseStepStatus::singular_system;
        return false;
    }
    x = lu.solve(b);
    if (!x.allFinite()) {
        status = DenseStepStatus::non_finite;
        return false;
    }
    return true;
}

/// a = (S M S + I − S)⁻¹ S f: filtered acceleration of the explicit integrators.
template <typename T, int N, class F>
bool filtered_acceleration(const DenseSystem<T, N, F>& system, const Vec<T, N>& q, const Vec<T, N>& v,
                           Vec<T, N>& acceleration, DenseStepStatus& status)
{
    DenseForces<T, N> eval;
    if (!evaluate_forces(system, q, v, eval)) {
        status = DenseStepStatus::non_finite;
        return false;
    }
    return solve_filtered<T, N>(system.fixed, system.mass, eval.force, acceleration, status);
}

template <typename T, int N>
bool state_is_finite(const Vec<T, N>& q, const Vec<T, N>& v)
{
    return q.allFinite() && v.allFinite();
}

/// The implicit θ-scheme (θ = 1 backward Euler, θ = ½ Newmark average acceleration).
template <typename T, int N, class F>
DenseStepResult<T> theta_step(const DenseSystem<T, N, F>& system, DenseState<T, N>& state, T h, T theta,
                              const DenseNewtonOptions<T>& options)
{
    require_compatible(system, state, h);
    if (options.max_iterations < 1) {
        throw InvalidInput("invalid Newton max_iterations = " + std::to_string(options.max_iterations) +
                           ": must be >= 1");
    }
    require_non_negative("Newton tolerance", options.tolerance);
    require_non_negative("Newton absolute_tolerance", options.absolute_tolerance);

    DenseStepResult<T> result;
    const Vec<T, N>& q0 = state.positions;
    const Vec<T, N>& v0 = state.velocities;

    DenseForces<T, N> eval;
    if (!evaluate_forces(system, q0, v0, eval)) {
        result.status = DenseStepStatus::non_finite;
        return result;
    }
    const Vec<T, N> f0 = eval.force;

    // First iteration, f linearized about (q₀, v₀) with q₁ − q₀ = h v₀ + h θ Δv:
    // (M − hθ ∂f/∂v − h²θ² ∂f/∂q) Δv = h (f₀ + hθ ∂f/∂q v₀); θ = 1 is Baraff–Witkin.
    Mat<T, N, N> a = system.mass - h * theta * eval.force_jacobian_velocities -
                     h * h * theta * theta * eval.force_jacobian_positions;
    Vec<T, N> b = h * (f0 + h * theta * (eval.force_jacobian_positions * v0));
    Vec<T, N> dv;
    if (!solve_filtered<T, N>(system.fixed, a, b, dv, result.status)) return result;
    result.newton_iterations = 1;

    Vec<T, N> v1 = v0 + dv;
    Vec<T, N> q1 = q0 + h * ((T(1) - theta) * v0 + theta * v1);
    if (!state_is_finite(q1, v1)) {
        result.status = DenseStepStatus::non_finite;
        return result;
    }

    if (options.mode == DenseNewtonMode::full) {
        for (;;) {
            if (!evaluate_forces(system, q1, v1, eval)) {
                result.status = DenseStepStatus::non_finite;
                return result;
            }
            // r(v₁) = M (v₁ − v₀) − h ((1−θ) f₀ + θ f(q₁, v₁))
            const Vec<T, N> momentum_change = filtered<T, N>(system.fixed, system.mass * (v1 - v0));
            const Vec<T, N> impulse = filtered<T, N>(system.fixed, h * ((T(1) - theta) * f0 + theta * eval.force));
            const Vec<T, N> r = momentum_change - impulse;
            result.residual_norm = r.norm();
            result.residual_scale = momentum_change.norm() + impulse.norm();
            if (!std::isfinite(result.residual_norm)) {
                result.status = DenseStepStatus::non_finite;
                return result;
            }
            // Near equilibrium f is a difference of large terms (e.g. k (|x| − L))
            // and cannot be evaluated below ≈ ε_mach ‖∂f/∂q‖ ‖q‖; a residual at
            // that level is as converged as the arithmetic allows.
            const T roundoff_floor = T(64) * std::numeric_limits<T>::epsilon() *
                                     (result.residual_scale + h * theta *
                                                                  (eval.force_jacobian_positions.norm() * q1.norm() +
                                                                   eval.force_jacobian_velocities.norm() * v1.norm()));
            if (result.residual_norm <= options.absolute_tolerance + options.tolerance * result.residual_scale ||
                result.residual_norm <= roundoff_floor) {
                break;
            }
            if (result.newton_iterations >= options.max_iterations) {
                result.status = DenseStepStatus::newton_not_converged;
                return result;
            }
            // Newton: A δ = −r, A = M − hθ ∂f/∂v − h²θ² ∂f/∂q at (q₁, v₁)
            a = system.mass - h * theta * eval.force_jacobian_velocities -
                h * h * theta * theta * eval.force_jacobian_positions;
            Vec<T, N> delta;
            if (!solve_filtered<T, N>(system.fixed, a, Vec<T, N>(-r), delta, result.status)) return result;
            ++result.newton_iterations;
            v1 += delta;
            q1 = q0 + h * ((T(1) - theta) * v0 + theta * v1);
            if (!state_is_finite(q1, v1)) {
                result.status = DenseStepStatus::non_finite;
                return result;
            }
        }
    }

    state.positions = q1;
    state.velocities = v1;
    state.time += h;
    return result;
}

}  // namespace detail::dense

/// Symplectic (semi-implicit) Euler: v₁ = v₀ + h M⁻¹ S f(q₀, v₀), q₁ = q₀ + h v₁.
template <typename T, int N, class F>
DenseStepResult<T> symplectic_euler_step(const DenseSystem<T, N, F>& system, DenseState<T, N>& state, T h)
{
    detail::dense::require_compatible(system, state, h);
    DenseStepResult<T> result;
    Vec<T, N> acceleration;
    if (!detail::dense::filtered_acceleration(system, state.positions, state.velocities, acceleration, result.status)) {
        return result;
    }
    const Vec<T, N> v1 = state.velocities + h * acceleration;
    const Vec<T, N> q1 = state.positions + h * v1;
    if (!detail::dense::state_is_finite(q1, v1)) {
        result.status = DenseStepStatus::non_finite;
        return result;
    }
    state.positions = q1;
    state.velocities = v1;
    state.time += h;
    return result;
}

/// Classical fourth-order Runge–Kutta on y = (q, v), ẏ = (v, M⁻¹ S f(q, v)).
template <typename T, int N, class F>
DenseStepResult<T> rk4_step(const DenseSystem<T, N, F>& system, DenseState<T, N>& state, T h)
{
    detail::dense::require_compatible(system, state, h);
    DenseStepResult<T> result;
    const Vec<T, N>& q0 = state.positions;
    const Vec<T, N>& v0 = state.velocities;
    Vec<T, N> a1, a2, a3, a4;
    if (!detail::dense::filtered_acceleration(system, q0, v0, a1, result.status)) return result;
    const Vec<T, N> q2 = q0 + T(0.5) * h * v0, v2 = v0 + T(0.5) * h * a1;
    if (!detail::dense::filtered_acceleration(system, q2, v2, a2, result.status)) return result;
    const Vec<T, N> q3 = q0 + T(0.5) * h * v2, v3 = v0 + T(0.5) * h * a2;
    if (!detail::dense::filtered_acceleration(system, q3, v3, a3, result.status)) return result;
    const Vec<T, N> q4 = q0 + h * v3, v4 = v0 + h * a3;
    if (!detail::dense::filtered_acceleration(system, q4, v4, a4, result.status)) return result;
    const Vec<T, N> q1 = q0 + h / T(6) * (v0 + T(2) * v2 + T(2) * v3 + v4);
    const Vec<T, N> v1 = v0 + h / T(6) * (a1 + T(2) * a2 + T(2) * a3 + a4);
    if (!detail::dense::state_is_finite(q1, v1)) {
        result.status = DenseStepStatus::non_finite;
        return result;
    }
    state.positions = q1;
    state.velocities = v1;
    state.time += h;
    return result;
}

/// Implicit Newmark, average acceleration (γ = ½, β = ¼), solved by Newton.
template <typename T, int N, class F>
DenseStepResult<T> newmark_step(const DenseSystem<T, N, F>& system, DenseState<T, N>& state, T h,
                                const DenseNewtonOptions<T>& options = {})
{
    return detail::dense::theta_step(system, state, h, T(0.5), options);
}

/// Backward Euler, solved by Newton (or by its first, Baraff–Witkin, iteration
/// with `DenseNewtonMode::single_step`).
template <typename T, int N, class F>
DenseStepResult<T> backward_euler_step(const DenseSystem<T, N, F>& system, DenseState<T, N>& state, T h,
                                       const DenseNewtonOptions<T>& options = {})
{
    return detail::dense::theta_step(system, state, h, T(1), options);
}

/// One step with the chosen integrator (`options` is used by the implicit ones).
template <typename T, int N, class F>
DenseStepResult<T> integrator_step(const DenseSystem<T, N, F>& system, DenseState<T, N>& state, T h,
                                   DenseIntegrator method, const DenseNewtonOptions<T>& options = {})
{
    switch (method) {
        case DenseIntegrator::symplectic_euler:
            return symplectic_euler_step(system, state, h);
        case DenseIntegrator::rk4:
            return rk4_step(system, state, h);
        case DenseIntegrator::newmark:
            return newmark_step(system, state, h, options);
        case DenseIntegrator::backward_euler:
            return backward_euler_step(system, state, h, options);
    }
    throw InvalidInput("invalid integrator: unknown enum value");
}

/// Outcome of a run of several steps.
template <typename T>
struct DenseIntegrationSummary {
    DenseStepStatus status = DenseStepStatus::ok;  ///< status of the first failed step, or ok
    long steps_taken = 0;                          ///< successful steps
    long newton_iterations = 0;                    ///< linear solves over all steps
    int max_newton_iterations = 0;                 ///< most linear solves in one step
    T failure_time = T(0);                         ///< state time at the failed step (state left there)
    DenseStepResult<T> failed_step;                ///< the failed step's result (status ok when none failed)

    bool ok() const { return status == DenseStepStatus::ok; }
};

/// Takes `steps` steps of size h, calling `observer(state)` after each
/// successful one; stops at the first failure, leaving the state at the start
/// of the failed step, and reports it.
template <typename T, int N, class F, class Observer>
DenseIntegrationSummary<T> integrate(const DenseSystem<T, N, F>& system, DenseState<T, N>& state, T h, long steps,
                                     DenseIntegrator method, const DenseNewtonOptions<T>& options, Observer&& observer)
{
    if (steps < 0) throw InvalidInput("invalid steps = " + std::to_string(steps) + ": must be >= 0");
    DenseIntegrationSummary<T> summary;
    for (long i = 0; i < steps; ++i) {
        const DenseStepResult<T> r = integrator_step(system, state, h, method, options);
        if (!r.ok()) {
            summary.status = r.status;
            summary.failure_time = state.time;
            summary.failed_step = r;
            return summary;
        }
        ++summary.steps_taken;
        summary.newton_iterations += r.newton_iterations;
        if (r.newton_iterations > summary.max_newton_iterations) summary.max_newton_iterations = r.newton_iterations;
        observer(static_cast<const DenseState<T, N>&>(state));
    }
    return summary;
}

}  // namespace weft
