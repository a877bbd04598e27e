#pragma once
/// @file collider.hpp
/// Penalty colliders (sphere, plane, box) seen by the nodes of any model — yarn
/// crossings and triangle-mesh vertices alike — with regularized Coulomb
/// friction. DoFs: the node position x (3).

#include <cmath>
#include <sstream>
#include <string>

#include <weft/core/error.hpp>
#include <weft/core/types.hpp>
#include <weft/element/implicit_system.hpp>
#include <weft/element/mollified_friction.hpp>
#include <weft/element/penalty.hpp>

namespace weft {

/// The shape of a collider.
enum class ColliderShape : int { sphere = 0, plane = 1, box = 2 };

/// A collider seen by the node kernel; each shape reads its own named fields
/// (build one with `sphere_collider`, `plane_collider` or `box_collider`,
/// which validate them).
template <typename T>
struct Collider {
    ColliderShape shape = ColliderShape::plane;
    Vec3<T> center = Vec3<T>::Zero();        ///< sphere, box: centre; plane: a point of the plane (m)
    Vec3<T> normal = Vec3<T>::UnitZ();       ///< plane: unit normal, pointing to the free side
    Vec3<T> half_extents = Vec3<T>::Zero();  ///< box: half edge lengths along x, y, z (m)
    T radius = T(0);                         ///< sphere: radius (m)
    T rounding = T(0);   ///< box: radius ρ of its edges and corners (< every half extent), 0: sharp
    T stiffness = T(0);  ///< penalty stiffness k (N/m)
    T friction = T(0);   ///< Coulomb μ

    WEFT_HD void distance(const Vec3<T>& x, T& phi, Vec3<T>& n) const
    {
        if (shape == ColliderShape::sphere) {
            const Vec3<T> d = x - center;
            const T len = d.norm();
            n = len > T(0) ? Vec3<T>(d / len) : Vec3<T>(T(0), T(0), T(1));
            phi = len - radius;
        } else if (shape == ColliderShape::plane) {
            n = normal;
            phi = normal.dot(x - center);
        } else {
            // Box: q = |x − c| − e per axis; outside, φ = |max(q, 0)| and n
            // points from the nearest surface point; inside, φ = max_k q_k < 0
            // and n is the normal of the nearest face. Rounded by ρ: the box
            // of half extents e − ρ, inflated by ρ (φ − ρ, same n), so the
            // normal turns smoothly over an edge of radius ρ.
            const Vec3<T> d = x - center;
            Vec3<T> q;
            const Vec3<T> outside = box_excess(d, q);
            const T len = outside.norm();
            if (len > T(0)) {
                n = outside / len;
                phi = len;
            } else {
                int face = 0;
                for (int k = 1; k < 3; ++k)
                    if (q(k) > q(face)) face = k;
                n = Vec3<T>::Zero();
                n(face) = d(face) < T(0) ? T(-1) : T(1);
                phi = q(face);
            }
            phi -= rounding;
        }
    }

    /// Box: for x − c = d, q_k = |d_k| − (e_k − ρ) (beyond the shrunk box
    /// where > 0) and the vector from the shrunk box's nearest point to x
    /// (sign(d_k) q_k where q_k > 0, else 0).
    WEFT_HD Vec3<T> box_excess(const Vec3<T>& d, Vec3<T>& q) const
    {
        Vec3<T> outside;
        for (int k = 0; k < 3; ++k) {
            q(k) = (d(k) < T(0) ? -d(k) : d(k)) - (half_extents(k) - rounding);
            outside(k) = q(k) > T(0) ? (d(k) < T(0) ? -q(k) : q(k)) : T(0);
        }
        return outside;
    }

    /// ∇n = ∇²φ at x, the collider surface's shape operator carried to x
    /// (symmetric, positive semi-definite: every collider is convex). Sphere:
    /// (I − n nᵀ)/|x − c|. Plane, box face, inside a box: 0. Outside a box
    /// (the shrunk box of `distance`, at distance L from x): (P − n nᵀ)/L,
    /// P the projector onto the axes on which x lies beyond the shrunk box,
    /// so (I − n nᵀ − a aᵀ)/L beside an edge of axis a and (I − n nᵀ)/L
    /// beside a corner; a rounded edge turns its normal over L = ρ + φ.
    WEFT_HD Mat3<T> normal_gradient(const Vec3<T>& x) const
    {
        Mat3<T> g = Mat3<T>::Zero();
        if (shape == ColliderShape::plane) return g;
        Vec3<T> outside = Vec3<T>::Zero();
        if (shape == ColliderShape::sphere) {
            outside = x - center;
            for (int k = 0; k < 3; ++k) g(k, k) = T(1);
        } else {
            Vec3<T> q;
            outside = box_excess(x - center, q);
            for (int k = 0; k < 3; ++k) g(k, k) = q(k) > T(0) ? T(1) : T(0);
        }
        const T len = outside.norm();
        if (!(len > T(0))) return Mat3<T>::Zero();
        const Vec3<T> n = outside / len;
        return (g - n * n.transpose()) / len;
    }
};

/// Checks the fields that the collider's shape reads.
/// @throws InvalidInput naming the field and its value.
template <typename T>
void require_valid_collider(const Collider<T>& c)
{
    const auto finite = [](const char* what, const Vec3<T>& v) {
        for (int k = 0; k < 3; ++k) require_finite(what, double(v(k)));
    };
    finite("collider center", c.center);
    require_positive("collider stiffness", double(c.stiffness));
    require_non_negative("collider friction", double(c.friction));
    switch (c.shape) {
        case ColliderShape::sphere:
            require_positive("sphere collider radius", double(c.radius));
            break;
        case ColliderShape::plane:
            finite("plane collider normal", c.normal);
            if (!(std::abs(double(c.normal.norm()) - 1.0) <= 1e-9))
                throw InvalidInput(detail::describe("plane collider normal length", double(c.normal.norm()),
                                                    "must be 1 (plane collider normal: must have unit length; "
                                                    "plane_collider normalizes it)"));
            break;
        case ColliderShape::box: {
            for (int k = 0; k < 3; ++k) require_positive("box collider half_extents", double(c.half_extents(k)));
            require_non_negative("box collider rounding", double(c.rounding));
            const double shortest = double(c.half_extents.minCoeff());
            if (!(double(c.rounding) < shortest)) {
                std::ostringstream requirement;
                requirement.precision(17);
                requirement << "must be below the shortest half extent " << shortest;
                throw InvalidInput(
                    detail::describe("box collider rounding", double(c.rounding), requirement.str().c_str()));
            }
            break;
        }
        default:
            throw InvalidInput(detail::describe("collider shape", static_cast<int>(c.shape),
                                                "must be ColliderShape::sphere, plane or box"));
    }
}

/// A sphere of `radius` > 0 about `center`.
/// @throws InvalidInput naming the field and its value.
template <typename T>
Collider<T> sphere_collider(const Vec3<T>& center, T radius, T stiffness, T friction = T(0))
{
    Collider<T> c;
    c.shape = ColliderShape::sphere;
    c.center = center;
    c.radius = radius;
    c.stiffness = stiffness;
    c.friction = friction;
    require_valid_collider(c);
    return c;
}

/// The plane through `point` with normal `normal` (any non-zero length;
/// stored normalized), the free side on the normal's side.
template <typename T>
Collider<T> plane_collider(const Vec3<T>& point, const Vec3<T>& normal, T stiffness, T friction = T(0))
{
    Collider<T> c;
    c.shape = ColliderShape::plane;
    c.center = point;
    const T length = normal.norm();
    if (!(length > T(0)) || !std::isfinite(length))
        throw InvalidInput(detail::describe("plane collider normal length", static_cast<double>(length),
                                            "plane collider normal: must be a non-zero finite vector"));
    c.normal = normal / length;
    c.stiffness = stiffness;
    c.friction = friction;
    require_valid_collider(c);
    return c;
}

/// The axis-aligned box about `center` with half edge lengths
/// `half_extents`, its edges and corners rounded by `rounding`.
template <typename T>
Collider<T> box_collider(const Vec3<T>& center, const Vec3<T>& half_extents, T rounding, T stiffness, T friction = T(0))
{
    Collider<T> c;
    c.shape = ColliderShape::box;
    c.center = center;
    c.half_extents = half_extents;
    c.rounding = rounding;
    c.stiffness = stiffness;
    c.friction = friction;
    require_valid_collider(c);
    return c;
}

/// Onset width of the penalty: the contact stiffness grows smoothly from 0
/// to k over the first `collider_onset_fraction` × r of depth.
constexpr double collider_onset_fraction = 0.1;

/// Penalty contact of a point with a collider given by its signed distance
/// φ(x) and outward unit normal n (sphere or plane): a C² penalty of the
/// depth d = r − φ (r = the contact offset: yarn radius, or cloth
/// half-thickness), V = k d³/(6δ) for 0 < d < δ and
/// ½ k (d − δ)² + ½ k δ (d − δ) + k δ²/6 beyond (δ = 0.1 r; the plain
/// ½ k d² when r = 0), plus regularized Coulomb friction
/// f_t = −μ F_n v_t / max(|v_t|, ε_v) (a stiff viscous law below ε_v, the
/// Coulomb limit above it). The smooth onset matters to Newton: a light node
/// resting on a stiff collider sits at a depth F/k (0.06 nm for a yarn
/// crossing of a few µg against k = 1000 N/m), where the plain penalty's
/// stiffness jumps between 0 and k, so the Jacobian is discontinuous at the
/// solution and Newton stalls at a linear rate. DoFs: x (3).
template <typename T>
WEFT_HD inline LocalTerms<T, 3> collider_contact(const Vec3<T>& v, T signed_distance, const Vec3<T>& normal, T offset,
                                                 T stiffness, T friction_coefficient, T slip_velocity)
{
    using std::sqrt;
    LocalTerms<T, 3> t = LocalTerms<T, 3>::zero();
    const T depth = offset - signed_distance;
    if (depth <= T(0)) return t;
    const PenaltyTerms<T> penalty = smooth_penalty(depth, stiffness, T(collider_onset_fraction) * offset);
    t.energy = penalty.energy;
    const T normal_force = penalty.force;
    const T contact_stiffness = penalty.stiffness;
    t.force = normal_force * normal;
    // ∂(F_n(d) n)/∂x = −F_n′ n nᵀ + F_n ∇n. The curvature part F_n ∇n is
    // dropped here: for a convex collider ∇n ⪰ 0 makes it destabilizing
    // (indefinite −∂f/∂x), and it vanishes for planes. `add_collider_terms`
    // adds it where the caller asks for exact Hessians. ∂f_friction/∂x is dropped too.
    t.df_dq = -contact_stiffness * normal * normal.transpose();
    if (friction_coefficient > T(0)) {
        const Mat3<T> tangent_projector = Mat3<T>::Identity() - normal * normal.transpose();
        const Vec3<T> vt = tangent_projector * v;
        const T speed = vt.norm();
        const T limit = friction_coefficient * normal_force;
        if (speed <= slip_velocity) {
            t.force -= (limit / slip_velocity) * vt;
            t.df_dv = -(limit / slip_velocity) * tangent_projector;
        } else {
            const Vec3<T> dir = vt / speed;
            t.force -= limit * dir;
            // The exact ∂(−μF_n v̂_t)/∂v = −μF_n/|v_t| (P − v̂_t v̂_tᵀ) has no
            // component along v̂_t: the implicit step then applies the full
            // Coulomb force h μF_n/m along −v̂_t explicitly, which overshoots
            // v_t = 0 and reverses the sliding (it blew up a cloth landing on
            // a sphere). The lagged viscous form f ≈ −(μF_n/|v_t|) v_t, with
            // Jacobian −μF_n/|v_t| P, gives the same force at v and can only
            // slow the sliding down, never reverse it.
            t.df_dv = -(limit / speed) * tangent_projector;
        }
    }
    return t;
}

/// Coulomb friction of a collider contact as the gradient of a dissipation
/// potential in v, with the normal force λ and the tangent projector
/// P = I − n nᵀ frozen at the start of the step (lagged, as in IPC: Li et al.
/// 2020, Sec. 5): D(v) = μλ ε f₀(|P v| / ε), f_t = −∂D/∂v = −μλ f₁(u) P v / u,
/// u = |P v|, with the C¹ mollifier f₁(u) = 2u/ε − u²/ε² below the slip
/// velocity ε and 1 above it. Within a step the force is then a gradient and
/// its Jacobian the exact, positive semi-definite
/// ∂f_t/∂v = −μλ [f₁/u (P − v̂ v̂ᵀ) + f₁′ v̂ v̂ᵀ],  v̂ = P v / u,
/// so full Newton converges on it (the viscous form of `collider_contact`
/// does not: its Jacobian is not the derivative of its force). Used by the
/// Newton iterations (`NewtonInputs::lagged_positions`); a node that reaches
/// the collider during a step feels its friction from the next step on.
/// DoFs: x (3); only `force`, `df_dv` and `energy` (= D) are set.
template <typename T>
WEFT_HD inline LocalTerms<T, 3> lagged_friction(const Vec3<T>& v, const Vec3<T>& lagged_normal, T limit,
                                                T slip_velocity)
{
    LocalTerms<T, 3> t = LocalTerms<T, 3>::zero();
    if (!(limit > T(0))) return t;
    const Mat3<T> p = Mat3<T>::Identity() - lagged_normal * lagged_normal.transpose();
    const Vec3<T> vt = p * v;
    const T u = vt.norm();
    const MollifiedCoulomb<T> m = mollified_coulomb<T>(u, slip_velocity);
    t.force = -limit * m.ratio * vt;
    t.df_dv = -limit * m.ratio * p;
    if (u > T(0)) {
        const Vec3<T> dir = vt / u;
        t.df_dv -= limit * (m.slope - m.ratio) * (dir * dir.transpose());
    }
    t.energy = limit * m.potential;
    return t;
}

/// Full Newton's step bound for one node (a trust region on contact onset):
/// the largest α ≤ 1 for which the update x + α dx carries the node, where it
/// is outside the contact band of a collider (depth r − φ ≤ 0), at most
/// `cap` deep into it, with the depth linearized along the normal at x. The
/// penalty's stiffness is absent from the Newton matrix until a node is in
/// contact, and a light node that is barely outside (a yarn crossing of a few
/// µg, with no transverse stiffness in a flat patch) would otherwise be sent
/// through the collider by a small residual in one update.
template <typename T>
WEFT_HD inline T collider_step_fraction(const Collider<T>* colliders, int collider_count, const Vec3<T>& x,
                                        const Vec3<T>& dx, T offset, T cap)
{
    T alpha = T(1);
    for (int k = 0; k < collider_count; ++k) {
        T phi;
        Vec3<T> n;
        colliders[k].distance(x, phi, n);
        const T depth = offset - phi;
        const T deepening = -n.dot(dx);
        if (depth > T(0) || !(deepening > T(0)) || depth + deepening <= cap) continue;
        const T reach = (cap - depth) / deepening;
        alpha = reach < alpha ? reach : alpha;
    }
    return alpha;
}

/// A friction's slip velocity ε = max(ε₀, resolved): the speed a step
/// resolves (`collider_slip_velocity`, `contact_slip_velocity`), never
/// below the floor ε₀; a NaN `resolved` gives the floor.
template <typename T>
WEFT_HD inline T slip_velocity_above_floor(T floor, T resolved)
{
    return resolved > floor ? resolved : floor;
}

/// The slip velocity of a collider's lagged friction on a node of mass m
/// (full Newton): ε = max(ε₀, μλ h / m). μλh/m is the speed that the Coulomb
/// force takes from the node in one step; slower sliding is not resolved by a
/// backward-Euler step (friction stops it within the step either way), and
/// below that speed the mollified friction's stiffness h·2μλ/ε stays within
/// twice the node's own mass term m. With ε₀ alone (1 mm/s) the friction of
/// a node pressed hard on a collider (a cloth draped over a table's rounded
/// edge) turned over within ±1 mm/s, far below its velocity changes, and full
/// Newton's line search cut whole updates for it (docs/scenes.md, "Crossing
/// friction as a potential in full Newton"). m ≤ 0 or h ≤ 0: ε₀.
template <typename T>
WEFT_HD inline T collider_slip_velocity(T floor, T limit, T h, T mass)
{
    if (!(mass > T(0)) || !(h > T(0))) return floor;
    return slip_velocity_above_floor<T>(floor, limit * h / mass);
}

/// Every collider's contact on one node at position x, velocity ẋ, added to
/// a node's force and Jacobians (shared by the yarn and triangle node
/// kernels). `lagged_x` null: `collider_contact` (the one-step scheme's
/// regularized friction, normal and normal force at x). Otherwise the
/// penalty at x plus `lagged_friction` with λ and n taken at `lagged_x`
/// (the node at the start of the step). The friction potential D goes to
/// `dissipation` (a dissipation potential, not an energy of the state; the
/// Newton merit adds h D, see implicit_stepper.hpp). `node_mass` and `h` set
/// the lagged friction's slip velocity (`collider_slip_velocity`, with
/// `slip_velocity` as its floor); the mass must be frozen for the step (at
/// `lagged_x`'s state), so that the friction stays one potential.
template <typename T>
WEFT_HD inline void add_collider_terms(const Collider<T>* colliders, int collider_count, const Vec3<T>& x,
                                       const Vec3<T>& xv, const T* lagged_x, T offset, T slip_velocity, Vec3<T>& force,
                                       Mat3<T>& df_dq, Mat3<T>& df_dv, T& elastic, T& dissipation, T node_mass = T(0),
                                       T h = T(0), bool exact_curvature = false)
{
    for (int k = 0; k < collider_count; ++k) {
        const Collider<T>& c = colliders[k];
        T phi;
        Vec3<T> n;
        c.distance(x, phi, n);
        const T friction = lagged_x ? T(0) : c.friction;
        const LocalTerms<T, 3> t = collider_contact<T>(xv, phi, n, offset, c.stiffness, friction, slip_velocity);
        force += t.force;
        df_dq += t.df_dq;
        if (exact_curvature && offset - phi > T(0)) {
            // The curvature part F_n ∇n that collider_contact drops (its
            // comment): exact where the caller asks for exact Hessians (full
            // Newton; A may then be indefinite, and the stepper retries with
            // the projected form). F_n is the penalty's normal force (the
            // friction of collider_contact is tangential).
            df_dq += t.force.dot(n) * c.normal_gradient(x);
        }
        df_dv += t.df_dv;
        elastic += t.energy;
        if (lagged_x && c.friction > T(0)) {
            const Vec3<T> x0(lagged_x[0], lagged_x[1], lagged_x[2]);
            T phi0;
            Vec3<T> n0;
            c.distance(x0, phi0, n0);
            // λ: the penalty's normal force at the start of the step.
            const T lambda =
                collider_contact<T>(Vec3<T>::Zero(), phi0, n0, offset, c.stiffness, T(0), slip_velocity).force.dot(n0);
            if (lambda > T(0)) {
                const T limit = c.friction * lambda;
                const LocalTerms<T, 3> f =
                    lagged_friction<T>(xv, n0, limit, collider_slip_velocity<T>(slip_velocity, limit, h, node_mass));
                force += f.force;
                df_dv += f.df_dv;
                dissipation += f.energy;
            }
        }
    }
}

}  // namespace weft
