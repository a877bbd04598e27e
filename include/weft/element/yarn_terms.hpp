#pragma once
/// @file yarn_terms.hpp
/// The non-strain terms of the Eulerian-on-Lagrangian (EoL) yarn model:
/// consistent segment mass, gravity with its Eulerian component, the
/// parallel-yarn contact penalty on Δs, the friction anchor spring on a
/// sliding coordinate (penalty colliders live in collider.hpp). Segment DoFs are q = [x₀, s₀, x₁, s₁] (8), as in
/// stretch.

#include <cmath>
#include <limits>

#include <weft/core/types.hpp>
#include <weft/element/collider.hpp>
#include <weft/element/implicit_system.hpp>
#include <weft/element/mollified_friction.hpp>

namespace weft {

/// Consistent mass of one yarn segment over (x₀, s₀, x₁, s₁). A material point
/// at parameter t moves with (1−t)(ẋ₀ − w ṡ₀) + t(ẋ₁ − w ṡ₁), w = Δx/Δs, so
/// M = ρΔs/6 · [[2J, J], [J, 2J]], J = [[I₃, −w], [−wᵀ, wᵀw]] (DESIGN.md).
/// The dependence of M on q (the ∇T and Ṁq̇ terms of 2017 Eq. 1) is neglected
/// in the forces; full Newton's matrix takes its product's derivative
/// (segment_mass_derivative).
/// @param[in] linear_density  mass per unit arc length ρ (kg/m)
template <typename T>
WEFT_HD inline Mat<T, 8, 8> segment_mass(const Vec<T, 8>& q, T linear_density)
{
    const T ds = q(7) - q(3);
    const Vec3<T> w = (q.template segment<3>(4) - q.template segment<3>(0)) / ds;
    Mat<T, 4, 4> j;
    j.template block<3, 3>(0, 0).setIdentity();
    j.template block<3, 1>(0, 3) = -w;
    j.template block<1, 3>(3, 0) = -w.transpose();
    j(3, 3) = w.squaredNorm();
    const T c = linear_density * ds / T(6);
    Mat<T, 8, 8> m;
    m.template block<4, 4>(0, 0) = T(2) * c * j;
    m.template block<4, 4>(4, 4) = T(2) * c * j;
    m.template block<4, 4>(0, 4) = c * j;
    m.template block<4, 4>(4, 0) = c * j;
    return m;
}

/// ∂(M(q) u)/∂q for a fixed u: how the consistent mass's product with u
/// changes with the segment's configuration (8 × 8, not symmetric). Full
/// Newton's residual carries −M(q) (v − v_n) with q = q_n + h v, so its exact
/// v-Jacobian has −M − h ∂(M(q) u)/∂q at u = v − v_n; without that term A is
/// not the Jacobian where crossings slide fast through their yarns.
/// With a = 2u₀ + u₁, b = u₀ + 2u₁ (u = [u₀, u₁], 4 each), M u = ρ/6 [F(a); F(b)],
/// F(z) = [Δs z_x − Δx z_s; −Δx·z_x + |Δx|² z_s / Δs].
template <typename T>
WEFT_HD inline Mat<T, 8, 8> segment_mass_derivative(const Vec<T, 8>& q, T linear_density, const Vec<T, 8>& u)
{
    const T ds = q(7) - q(3);
    const Vec3<T> dx = q.template segment<3>(4) - q.template segment<3>(0);
    const T c = linear_density / T(6);
    const Vec<T, 4> a = T(2) * u.template segment<4>(0) + u.template segment<4>(4);
    const Vec<T, 4> b = u.template segment<4>(0) + T(2) * u.template segment<4>(4);
    Mat<T, 8, 8> g = Mat<T, 8, 8>::Zero();
    for (int half = 0; half < 2; ++half) {
        const Vec<T, 4>& z = half == 0 ? a : b;
        const Vec3<T> zx = z.template segment<3>(0);
        const T zs = z(3);
        // ∂F/∂Δx (4 × 3) and ∂F/∂Δs (4)
        Mat<T, 4, 3> d_dx = Mat<T, 4, 3>::Zero();
        d_dx.template block<3, 3>(0, 0) = -zs * Mat3<T>::Identity();
        d_dx.template block<1, 3>(3, 0) = (-zx + (T(2) * zs / ds) * dx).transpose();
        Vec<T, 4> d_ds;
        d_ds.template segment<3>(0) = zx;
        d_ds(3) = -zs * dx.squaredNorm() / (ds * ds);
        // Δx = x₁ − x₀, Δs = s₁ − s₀
        g.template block<4, 3>(4 * half, 0) = -c * d_dx;
        g.template block<4, 1>(4 * half, 3) = -c * d_ds;
        g.template block<4, 3>(4 * half, 4) = c * d_dx;
        g.template block<4, 1>(4 * half, 7) = c * d_ds;
    }
    return g;
}

/// Gravity on a segment: V = −ρ Δs g·(x₀ + x₁)/2. It depends on s through
/// Δs (the Eulerian component): sliding material towards the lower node
/// lowers the energy. Forces: f_x = ρΔs g/2 per node, f_{s₀} = −ρ g·x̄,
/// f_{s₁} = ρ g·x̄, x̄ the segment midpoint.
template <typename T>
WEFT_HD inline LocalTerms<T, 8> segment_gravity(const Vec<T, 8>& q, T linear_density, const Vec3<T>& gravity)
{
    LocalTerms<T, 8> t = LocalTerms<T, 8>::zero();
    const T ds = q(7) - q(3);
    const Vec3<T> mid = T(0.5) * (q.template segment<3>(0) + q.template segment<3>(4));
    const T g_mid = gravity.dot(mid);
    t.energy = -linear_density * ds * g_mid;
    const Vec3<T> fx = T(0.5) * linear_density * ds * gravity;
    t.force.template segment<3>(0) = fx;
    t.force.template segment<3>(4) = fx;
    t.force(3) = -linear_density * g_mid;
    t.force(7) = linear_density * g_mid;
    // ∂f_x/∂s and ∂f_s/∂x are mirror images (−∇²V is symmetric).
    const Vec3<T> c = T(0.5) * linear_density * gravity;
    for (int node = 0; node < 2; ++node) {
        t.df_dq.template block<3, 1>(4 * node, 3) = -c;
        t.df_dq.template block<3, 1>(4 * node, 7) = c;
        t.df_dq.template block<1, 3>(3, 4 * node) = -c.transpose();
        t.df_dq.template block<1, 3>(7, 4 * node) = c.transpose();
    }
    return t;
}

/// Parallel-yarn contact between consecutive nodes on one yarn: a penalty on
/// Δs = s₁ − s₀ below `min_distance` (a few yarn radii),
/// V = ½ k (d_min − Δs)² for Δs < d_min, 0 otherwise. DoFs (s₀, s₁).
template <typename T>
WEFT_HD inline LocalTerms<T, 2> parallel_contact(T s0, T s1, T stiffness, T min_distance)
{
    LocalTerms<T, 2> t = LocalTerms<T, 2>::zero();
    const T gap = min_distance - (s1 - s0);
    if (gap <= T(0)) return t;
    t.energy = T(0.5) * stiffness * gap * gap;
    // ∂V/∂s₀ = k·gap, ∂V/∂s₁ = −k·gap
    t.force(0) = -stiffness * gap;
    t.force(1) = stiffness * gap;
    t.df_dq << -stiffness, stiffness, stiffness, -stiffness;
    return t;
}

/// Friction anchor on one sliding coordinate: V = ½ k_f (s − s̄)² (DESIGN.md).
/// The anchor s̄ is updated after each step by `drag_anchor`.
template <typename T>
WEFT_HD inline LocalTerms<T, 1> anchor_spring(T s, T anchor, T stiffness)
{
    LocalTerms<T, 1> t = LocalTerms<T, 1>::zero();
    const T d = s - anchor;
    t.energy = T(0.5) * stiffness * d * d;
    t.force(0) = -stiffness * d;
    t.df_dq(0, 0) = -stiffness;
    return t;
}

/// Coulomb stick/slip of an anchor: if |k_f (s − s̄)| > `limit` (μ F_n) the
/// anchor is dragged so that the spring force sits exactly at the limit.
template <typename T>
WEFT_HD inline T drag_anchor_to_limit(T s, T anchor, T stiffness, T limit)
{
    const T force = stiffness * (s - anchor);
    if (force > limit) return s - limit / stiffness;
    if (force < -limit) return s + limit / stiffness;
    return anchor;
}

/// `drag_anchor_to_limit` with the limit μ F_n.
template <typename T>
WEFT_HD inline T drag_anchor(T s, T anchor, T stiffness, T friction_coefficient, T normal_force)
{
    return drag_anchor_to_limit<T>(s, anchor, stiffness, friction_coefficient * normal_force);
}

/// Whether a friction anchor is at its Coulomb limit: |k_f (s − s̄)| ≥
/// (1 − 10⁻⁶) limit − 2 k_f ε (|s| + |s̄|), i.e. it was dragged after the last
/// step (the contact is slipping). The drag s̄ = s ∓ limit/k_f rounds to half
/// an ulp of s, which for light contacts (limit/k_f ~ 10⁻¹⁵ m against
/// s ~ 10⁻² m) is a sizable fraction of the deflection itself.
template <typename T>
WEFT_HD inline bool anchor_at_limit(T s, T anchor, T stiffness, T limit)
{
    const T spring = stiffness * (s - anchor);
    const T magnitude = spring < T(0) ? -spring : spring;
    const T scale = (s < T(0) ? -s : s) + (anchor < T(0) ? -anchor : anchor);
    const T rounding = T(2) * stiffness * std::numeric_limits<T>::epsilon() * scale;
    return !(magnitude < (T(1) - T(1e-6)) * limit - rounding);
}

/// Friction anchor under AnchorFriction::slip_in_step (yarn_model.hpp) in the
/// one-step scheme: the spring `anchor_spring` below the limit; at the limit
/// (`anchor_at_limit`) the constant kinetic friction f = −limit · sign(s − s̄),
/// with no stiffness, and V = limit |s − s̄| − limit²/(2 k_f), continuous with
/// the spring's energy.
template <typename T>
WEFT_HD inline LocalTerms<T, 1> slipping_anchor(T s, T anchor, T stiffness, T limit)
{
    if (!anchor_at_limit<T>(s, anchor, stiffness, limit)) return anchor_spring<T>(s, anchor, stiffness);
    LocalTerms<T, 1> t = LocalTerms<T, 1>::zero();
    const T d = s - anchor;
    const T distance = d < T(0) ? -d : d;
    t.energy = stiffness > T(0) ? limit * distance - limit * limit / (T(2) * stiffness) : limit * distance;
    t.force(0) = d > T(0) ? -limit : (d < T(0) ? limit : T(0));
    return t;
}

/// The slip velocity ε of a slipping friction anchor in full Newton. Its
/// floor is limit / (k_f h), the sliding rate at which the anchor spring
/// reaches the Coulomb limit within one step (below it `lagged_anchor_friction`
/// is as stiff as the spring: 2 k_f h² in the step's merit against k_f h²).
/// A coordinate already sliding at the step's start at |ṡ_n| gets up to
/// min(|ṡ_n|, limit · h / m), m the node's lumped mass at the step's start:
/// limit · h / m is the rate the friction removes from m in one step
/// (`collider_slip_velocity`, collider.hpp: rates below it are not told
/// apart by one backward-Euler step, and the friction's stiffness h · 2
/// limit/ε stays at most 2m, the node's own mass term), so a contact that
/// slows to a stop or turns within the step meets a law smooth on that scale,
/// not one that turns over within 1e-10 m/s. The rate at the start bounds it
/// so that a coordinate at rest keeps the full limit at any rate it starts
/// to slide with: a larger ε at rest makes the friction viscous (limit ṡ/ε)
/// at small rates, the slipping contacts give their load to the sticking
/// ones, and a layer loaded beyond its Coulomb limit holds (measured on
/// friction_incline, docs/scenes.md). m = 0 or ṡ_n = 0: the floor alone.
template <typename T>
WEFT_HD inline T anchor_slip_velocity(T stiffness, T limit, T h, T mass = T(0), T start_rate = T(0))
{
    const T spring = limit / (stiffness * h);
    if (!(mass > T(0))) return spring;
    const T resolved = limit * h / mass;
    const T moving = start_rate < T(0) ? -start_rate : start_rate;
    const T slip = moving < resolved ? moving : resolved;
    return slip > spring ? slip : spring;
}

/// Friction of a slipping anchor (`anchor_at_limit` at the start of the step)
/// in full Newton: Coulomb's law on the sliding rate ṡ of the coordinate as
/// the gradient of IPC's mollified dissipation potential
/// (mollified_friction.hpp), D(ṡ) = limit f₀(|ṡ|), f = −limit f₁(|ṡ|)
/// sign(ṡ), ∂f/∂ṡ = −limit f₁′(|ṡ|) ≤ 0, with the limit (μF_n) lagged at the
/// start of the step: unlike the constant force of `slipping_anchor`, a
/// gradient with stiffness near ṡ = 0, so the merit of full Newton's line
/// search is the potential of the force it balances (docs/scenes.md,
/// "Crossing friction as a potential in full Newton").
/// DoF: ṡ (1); only `force`, `df_dv` and `energy` (= D) are set.
template <typename T>
WEFT_HD inline LocalTerms<T, 1> lagged_anchor_friction(T rate, T limit, T slip_velocity)
{
    LocalTerms<T, 1> t = LocalTerms<T, 1>::zero();
    if (!(limit > T(0))) return t;
    const MollifiedCoulomb<T> m = mollified_coulomb<T>(rate < T(0) ? -rate : rate, slip_velocity);
    t.force(0) = -limit * m.ratio * rate;
    t.df_dv(0, 0) = -limit * m.slope;
    t.energy = limit * m.potential;
    return t;
}

/// The anchor after a full-Newton step in which it slipped (`anchor_at_limit`
/// at the step's start, `lagged_anchor_friction` during the step): Coulomb's
/// stick test at the end of the step. `force` is the total force on the
/// coordinate at the end of the step (the assembled f of the converged
/// iterate, friction included); F = force − f(ṡ) is then what the rest of the
/// system (elastic, gravity, damping) pulls on it with. The contact sticks
/// where its rate is below the slip velocity ε (rates one step does not tell
/// from rest) and |F| stays below the limit: s̄ is set so that the spring
/// carries −F (what holds it at rest), and the next step starts from the
/// spring. Without this a contact loaded below its limit creeps at the rate
/// where f(ṡ) balances its load and is dragged after every step. Otherwise it
/// is dragged to the limit (`drag_anchor_to_limit`). The assembled force,
/// not a lumped mass times the rate's change, gives F: EoL's mass matrix
/// couples a sliding coordinate to its node's position, so the coordinate's
/// own inertia says nothing about its load.
template <typename T>
WEFT_HD inline T settle_slipping_anchor(T s, T anchor, T rate, T force, T stiffness, T limit, T slip_velocity)
{
    const T magnitude = rate < T(0) ? -rate : rate;
    if (!(magnitude < slip_velocity) || !(stiffness > T(0)))
        return drag_anchor_to_limit<T>(s, anchor, stiffness, limit);
    const T other = force - lagged_anchor_friction<T>(rate, limit, slip_velocity).force(0);
    const T held = other < T(0) ? -other : other;
    if (!(held < limit)) return drag_anchor_to_limit<T>(s, anchor, stiffness, limit);
    return s - other / stiffness;  // −k_f (s − s̄) = −F
}

}  // namespace weft
