#pragma once
/// @file cloth_contact.hpp
/// Self- and cloth–cloth contact of triangle cloth as an element of the
/// implicit system (docs/collision.md): a point–triangle or edge–edge pair
/// closer than the cloth thickness r gets the penalty V = ½ k (r − d)² of
/// segment_contact.hpp (the thesis' stiff penalty for non-persistent
/// contacts, Sec. 4.4) with its Gauss–Newton stiffness k ∇d ∇dᵀ (PSD) in the
/// system matrix, plus Coulomb friction as a potential (`contact_friction`,
/// IPC's mollified law with the normal force, normal and closest-point
/// coefficients lagged at the start of the step). The stepper decides which
/// pairs are elements (a broad phase with a margin, refreshed before every
/// attempt at a step); a pair farther than r contributes nothing.
///
/// Nearly parallel edges. The distance of two segments has a kink where
/// they are parallel (tilting one about its middle moves the closest points
/// from one end to the other), so a plain edge–edge penalty is not C¹ there,
/// and two sheets lying flat on each other have many such pairs: full
/// Newton stalled on a sheet sliding over another (measured, tests/backend/
/// test_cloth_collision.cpp). As in IPC (Li et al. 2020, Incremental
/// Potential Contact), the edge–edge penalty is multiplied by the mollifier
///     m(c) = (2 − c/ε×) c/ε× for c < ε×, 1 beyond,  c = |u × w|²,
/// u, w the two edges and ε× = 10⁻³ |ū|² |w̄|² with ū, w̄ the edges in the
/// model's initial shape (ClothContactFinder): it vanishes with its derivative for parallel edges,
/// whose contact the point–triangle pairs carry. Force −(m ∇V + V ∇m); the
/// stiffness in A is m k ∇d ∇dᵀ (PSD) and the Coulomb limit of the pair's
/// friction μ m λ.

#include <weft/core/error.hpp>
#include <weft/element/collider.hpp>
#include <weft/element/segment_contact.hpp>
#include <weft/element/triangle_elements.hpp>

namespace weft {

/// Collision settings of a cloth (scene key `collision`).
template <typename T>
struct ClothCollision {
    bool enabled = false;
    T thickness = T(0);         ///< contact distance r between two primitives (m)
    T stiffness = T(0);         ///< penalty stiffness k (N/m)
    T friction = T(0);          ///< Coulomb coefficient μ between cloth surfaces
    T slip_velocity = T(1e-3);  ///< floor of the friction's slip velocity (m/s), as the colliders'
};

/// The default penalty stiffness of cloth contact (triangle and yarn cloth
/// alike): 100 m̄ / h², m̄ the mean node mass, h the scene's time step. A
/// node arriving at speed v then stops within v h / 10 (½ m v² = ½ k δ²): a
/// tenth of what it moves in a step. Far stiffer penalties (the colliders'
/// default, 1000 × the membrane's stiffness) stop nothing better and make
/// full Newton chatter where layers rest on each other (docs/collision.md).
inline double default_contact_stiffness(double mean_node_mass, double time_step)
{
    return 100 * mean_node_mass / (time_step * time_step);
}

/// Checks enabled collision settings; messages name the scene keys.
template <typename T>
inline void validate_cloth_collision(const ClothCollision<T>& c)
{
    if (!c.enabled) return;
    require_positive("collision.thickness", c.thickness);
    require_positive("collision.stiffness", c.stiffness);
    require_non_negative("collision.friction", c.friction);
    require_positive("collision slip velocity", c.slip_velocity);
}

/// The two kinds of cloth contact pairs.
enum class ClothContactKind : int {
    point_triangle = 0,  ///< nodes: the point, then the triangle's three corners
    edge_edge = 1,       ///< nodes: one edge's two ends, then the other's
    /// Two yarn segments (nodes as edge_edge) whose contact is the C¹
    /// potential of `segment_pair_contact`: the segments' penalty, mollified
    /// towards parallel, where their end points' penalties take over
    /// (docs/collision.md, "Parallel yarns").
    segment_pair = 2,
};

/// One candidate contact pair of triangle cloth or of yarn segments.
template <typename T>
struct ClothContactElement {
    int nodes[4];
    int kind;        ///< ClothContactKind
    T parallel_eps;  ///< edge–edge and segment pairs: the mollifier's ε× (0: none; point–triangle pairs)
    /// A constant displacement of the second primitive (nodes 2 and 3) in
    /// every distance the pair measures: zero, except between segments of
    /// two stacked yarn layers, whose contact nodes carry no thickness
    /// (model/layers.hpp), so the layer above is a thickness along the
    /// layers' normal from where its centre lines lie in the model
    /// (docs/collision.md, "Stacked layers"). Held fixed through a Newton
    /// attempt, so that the pair's force stays the gradient of its energy.
    T offset[3] = {T(0), T(0), T(0)};
};

/// A pair's four nodes' positions (`B` DoFs per node, positions first) as
/// the pair measures them: the second primitive displaced by its offset.
template <typename T, int B>
WEFT_HD inline Vec<T, 12> gather_contact_positions(const T* q, const ClothContactElement<T>& pair)
{
    Vec<T, 12> x = gather_nodes<T, 4, B>(q, pair.nodes);
    for (int k = 6; k < 12; ++k) x(k) += pair.offset[k % 3];
    return x;
}

/// IPC's edge–edge mollifier m(c) of the squared cross product c = |u × w|²
/// of the two edges in q = [a₀, a₁, b₀, b₁], with its gradient.
template <typename T>
WEFT_HD inline T parallel_mollifier(const Vec<T, 12>& q, T eps, Vec<T, 12>& gradient)
{
    gradient.setZero();
    const Vec3<T> u = q.template segment<3>(3) - q.template segment<3>(0);
    const Vec3<T> w = q.template segment<3>(9) - q.template segment<3>(6);
    const T uu = u.dot(u), ww = w.dot(w), uw = u.dot(w);
    const T c = u.cross(w).squaredNorm();  // uu ww − uw², without the cancellation
    if (!(eps > T(0)) || !(c < eps)) return T(1);
    const T x = c / eps;
    const T slope = T(2) * (T(1) - x) / eps;  // dm/dc
    const Vec3<T> gu = slope * (T(2) * ww * u - T(2) * uw * w);
    const Vec3<T> gw = slope * (T(2) * uu * w - T(2) * uw * u);
    gradient.template segment<3>(0) = -gu;
    gradient.template segment<3>(3) = gu;
    gradient.template segment<3>(6) = -gw;
    gradient.template segment<3>(9) = gw;
    return (T(2) - x) * x;
}

/// The second derivative of `parallel_mollifier`'s m(c) in q (zero where
/// m is 1): m''(c) ∇c ∇cᵀ + m'(c) ∇²c, with ∇²c over the edges u, w
///     ∂²c/∂u² = 2 (w·w) I − 2 w wᵀ,  ∂²c/∂w² = 2 (u·u) I − 2 u uᵀ,
///     ∂²c/∂u∂w = 4 u wᵀ − 2 w uᵀ − 2 (u·w) I,
/// mapped to the end points by u = a₁ − a₀, w = b₁ − b₀.
template <typename T>
WEFT_HD inline Mat<T, 12, 12> parallel_mollifier_hessian(const Vec<T, 12>& q, T eps)
{
    Mat<T, 12, 12> out = Mat<T, 12, 12>::Zero();
    const Vec3<T> u = q.template segment<3>(3) - q.template segment<3>(0);
    const Vec3<T> w = q.template segment<3>(9) - q.template segment<3>(6);
    const T uu = u.dot(u), ww = w.dot(w), uw = u.dot(w);
    const T c = u.cross(w).squaredNorm();  // uu ww − uw², without the cancellation
    if (!(eps > T(0)) || !(c < eps)) return out;
    const T slope = T(2) * (T(1) - c / eps) / eps, curvature = T(-2) / (eps * eps);
    Vec<T, 6> gc;
    gc.template segment<3>(0) = T(2) * ww * u - T(2) * uw * w;
    gc.template segment<3>(3) = T(2) * uu * w - T(2) * uw * u;
    Mat<T, 6, 6> hc;
    const Mat3<T> I = Mat3<T>::Identity();
    hc.template block<3, 3>(0, 0) = T(2) * ww * I - T(2) * w * w.transpose();
    hc.template block<3, 3>(3, 3) = T(2) * uu * I - T(2) * u * u.transpose();
    hc.template block<3, 3>(0, 3) = T(4) * u * w.transpose() - T(2) * w * u.transpose() - T(2) * uw * I;
    hc.template block<3, 3>(3, 0) = hc.template block<3, 3>(0, 3).transpose();
    const Mat<T, 6, 6> hm = curvature * gc * gc.transpose() + slope * hc;
    // Node k enters its edge (k / 2) with the sign −1 (first end) or +1 (second).
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            const T sign = T((i % 2 == 0 ? -1 : 1) * (j % 2 == 0 ? -1 : 1));
            out.template block<3, 3>(3 * i, 3 * j) = sign * hm.template block<3, 3>(3 * (i / 2), 3 * (j / 2));
        }
    return out;
}

/// The penalty contact of node `point` (0–3) of a pair's q with the segment
/// of nodes `first`, `first` + 1 (segment_contact.hpp with the point as a
/// segment of zero length, whose closest parameters are unique wherever the
/// segment has a length, so V is C¹), as a contact of the pair's four nodes
/// (the node in neither role has zero coefficient, force and Hessian).
template <typename T>
WEFT_HD inline SegmentContact<T> point_segment_contact(const Vec<T, 12>& q, int point, int first, T stiffness,
                                                       T thickness, bool exact)
{
    Vec<T, 12> local;
    local.template segment<3>(0) = q.template segment<3>(3 * point);
    local.template segment<3>(3) = q.template segment<3>(3 * point);
    local.template segment<6>(6) = q.template segment<6>(3 * first);
    const SegmentContact<T> c = segment_contact<T>(local, stiffness, thickness, exact);
    SegmentContact<T> out = c;
    out.force.setZero();
    out.hessian.setZero();
    out.gauss_newton.setZero();
    // Local slot 1 (the point's copy at s = 1) carries nothing: s = 0.
    const int slot[3] = {point, first, first + 1}, from[3] = {0, 2, 3};
    for (T& x : out.coefficient) x = T(0);
    for (int i = 0; i < 3; ++i) {
        out.coefficient[slot[i]] = c.coefficient[from[i]];
        out.force.template segment<3>(3 * slot[i]) = c.force.template segment<3>(3 * from[i]);
        for (int j = 0; j < 3; ++j) {
            out.hessian.template block<3, 3>(3 * slot[i], 3 * slot[j]) =
                c.hessian.template block<3, 3>(3 * from[i], 3 * from[j]);
            out.gauss_newton.template block<3, 3>(3 * slot[i], 3 * slot[j]) =
                c.gauss_newton.template block<3, 3>(3 * from[i], 3 * from[j]);
        }
    }
    return out;
}

/// The band of a yarn segment pair's mollifier: ε× = band × |u|² |w|²
/// (YarnContactFinder, with the segments' lengths when the pair is made),
/// so the end points take over from the segments' contact below sin² =
/// band of their angle. The mollifier's curvature, about 4 / (band |u|²)
/// times the difference S of the two forms' energies, is the price of a
/// narrow band. Measured on fold.json (Newton it./step, steps halved):
/// 10⁻² 3.52, 25; 0.1 3.01, 14; 0.3 2.94, 14; 1 2.62, 11; the blend of
/// stable_segment_parameters 2.37, 5.
constexpr double segment_pair_parallel_band = 0.1;

/// The parts of a yarn segment pair's contact (`segment_pair_contact`):
/// part 0 the segments' contact, parts 1–4 those of a₀ and a₁ with segment
/// b and of b₀ and b₁ with segment a.
constexpr int segment_pair_parts = 5;

template <typename T>
WEFT_HD inline SegmentContact<T> segment_pair_part(const Vec<T, 12>& q, int part, T stiffness, T thickness, bool exact)
{
    if (part == 0) return segment_contact<T>(q, stiffness, thickness, exact);
    return point_segment_contact<T>(q, part - 1, part <= 2 ? 2 : 0, stiffness, thickness, exact);
}

/// The weights of the parts: m(c) for the segments' contact, (1 − m) / 4
/// for each end point's (`parallel_mollifier`, ε× = `eps`).
template <typename T>
WEFT_HD inline T segment_pair_weight(T mollifier, int part)
{
    return part == 0 ? mollifier : (T(1) - mollifier) / T(4);
}

/// The contact of two yarn segments (`ClothContactKind::segment_pair`) as
/// one potential (docs/collision.md, "Parallel yarns"):
///     V = m(c) V_ss + (1 − m(c)) ¼ Σ_k V_k,
/// V_ss the penalty of the segments' distance, V_k that of end point k's
/// distance to the other segment (a₀, a₁ to b; b₀, b₁ to a), m IPC's
/// mollifier of c = |u × w|² (`parallel_mollifier`). The segments' distance
/// has a kink where they are parallel (its closest points jump from one end
/// of the overlap to the other), but m and ∇m vanish there; the end points'
/// distances have none, so V is C¹ in q at every angle, its force −∇V is
/// exact, and its Hessian is formed in full where asked for (`exact`):
///     ∇²V = Σ w_i ∇²V_i + ∇m gᵀ + g ∇mᵀ + S ∇²m,
/// S = V_ss − ¼ Σ V_k, g = ∇V_ss − ¼ Σ ∇V_k. For parallel segments on each
/// other the four end points carry the contact, each a quarter, so two
/// equal overlapping segments at distance d get the segments' own V(d).
/// The system matrix's Gauss–Newton stiffness is Σ w_i k ∇d_i ∇d_iᵀ (PSD).
/// Fields other than energy, force, Hessians, `active` and `normal_force`
/// (Σ w_i λ_i) are those of the segments' contact; friction acts per part
/// (evaluate_cloth_contact).
template <typename T>
WEFT_HD inline SegmentContact<T> segment_pair_contact(const Vec<T, 12>& q, T eps, T stiffness, T thickness, bool exact)
{
    Vec<T, 12> dm;
    const T m = parallel_mollifier<T>(q, eps, dm);
    SegmentContact<T> out = segment_contact<T>(q, stiffness, thickness, exact);
    const bool touching = out.active && !out.degenerate;
    if (m == T(1)) return out;
    // Part 0 weighted by m; S and g accumulate the mollifier's partners.
    T S = out.energy;
    Vec<T, 12> g = -out.force;
    out.energy *= m;
    out.force *= m;
    out.hessian *= m;
    out.gauss_newton *= m;
    out.normal_force *= m;
    bool active = touching, exact_all = !touching || out.exact_hessian;
    const T quarter = (T(1) - m) / T(4);
    for (int part = 1; part < segment_pair_parts; ++part) {
        const SegmentContact<T> c = segment_pair_part<T>(q, part, stiffness, thickness, exact);
        if (!c.active || c.degenerate) continue;
        active = true;
        exact_all = exact_all && c.exact_hessian;
        S -= c.energy / T(4);
        g += c.force / T(4);
        out.energy += quarter * c.energy;
        out.force += quarter * c.force;
        out.hessian += quarter * c.hessian;
        out.gauss_newton += quarter * c.gauss_newton;
        out.normal_force += quarter * c.normal_force;
    }
    out.active = active;
    out.degenerate = out.degenerate && !active;
    if (!active) return out;
    out.force -= S * dm;
    out.exact_hessian = exact && exact_all;
    if (out.exact_hessian)
        out.hessian += dm * g.transpose() + g * dm.transpose() + S * parallel_mollifier_hessian<T>(q, eps);
    else
        out.hessian.setZero();
    return out;
}

/// The signed weights c of a pair's four nodes whose sum Σ c_i p_i is the
/// difference x between its two closest points (its norm their distance):
/// the first node minus the triangle's closest point for a point–triangle
/// pair, the first segment's point minus the second's for the two edge
/// kinds.
template <typename T>
WEFT_HD inline void contact_point_weights(const Vec3<T>& p0, const Vec3<T>& p1, const Vec3<T>& p2, const Vec3<T>& p3,
                                          int kind, T c[4])
{
    if (kind == int(ClothContactKind::point_triangle)) {
        const PointTriangleClosest<T> at = closest_point_triangle<T>(p0, p1, p2, p3);
        c[0] = T(1), c[1] = -(T(1) - at.u - at.v), c[2] = -at.u, c[3] = -at.v;
        return;
    }
    const SegmentPairClosest<T> at = closest_segment_segment<T>(p0, p1, p2, p3);
    c[0] = T(1) - at.s, c[1] = at.s, c[2] = -(T(1) - at.t), c[3] = -at.t;
}

/// Σ c_i p_i over a pair's four nodes: with `contact_point_weights` the
/// difference between its contact points, or with velocities their relative
/// velocity.
template <typename T>
WEFT_HD inline Vec3<T> weighted_sum(const T c[4], const Vec3<T>& p0, const Vec3<T>& p1, const Vec3<T>& p2,
                                    const Vec3<T>& p3)
{
    return c[0] * p0 + c[1] * p1 + c[2] * p2 + c[3] * p3;
}

/// The contact of one pair at the stacked positions q (12): energy, force,
/// Gauss–Newton stiffness and normal force; edge–edge pairs mollified (the
/// mollifier's second derivative is not formed), yarn segment pairs the
/// potential of `segment_pair_contact`.
///
/// `exact` asks for the force's exact Jacobian in `hessian`
/// (SegmentContact::exact_hessian): a point–triangle pair and a segment
/// pair. An edge–edge pair (or `exact` false) leaves `hessian` zero, and
/// the system matrix takes the Gauss–Newton stiffness.
template <typename T>
WEFT_HD inline SegmentContact<T> cloth_contact(const Vec<T, 12>& q, const ClothContactElement<T>& pair, T stiffness,
                                               T thickness, bool exact = false)
{
    if (pair.kind == int(ClothContactKind::point_triangle))
        return point_triangle_contact<T>(q, stiffness, thickness, exact);
    if (pair.kind == int(ClothContactKind::segment_pair))
        return segment_pair_contact<T>(q, pair.parallel_eps, stiffness, thickness, exact);
    SegmentContact<T> c = segment_contact<T>(q, stiffness, thickness, false);
    if (!c.active || c.degenerate) return c;
    Vec<T, 12> dm;
    const T m = parallel_mollifier<T>(q, pair.parallel_eps, dm);
    if (m == T(1)) return c;
    c.force = m * c.force - c.energy * dm;
    c.energy *= m;
    c.gauss_newton *= m;
    c.normal_force *= m;
    return c;
}

/// The Coulomb friction of one contact (`contact_friction`) whose normal
/// force counts `weight` times, lagged as `lagged` says, added to `out`.
/// Its slip velocity is `collider_slip_velocity` with the contact's mass
/// Σ |c_i| m_i / 2 (the mass the relative velocity moves; `mass` per node).
template <typename T>
WEFT_HD inline void add_contact_friction(SegmentContact<T> lagged, T weight, const Vec<T, 12>& v, const T* mass,
                                         const int (&nodes)[4], const ClothCollision<T>& collision, T h,
                                         LocalTerms<T, 12>& out)
{
    if (!lagged.active || lagged.degenerate || !(weight > T(0))) return;
    lagged.normal_force *= weight;
    T pair_mass = T(0);
    for (int i = 0; i < 4; ++i)
        pair_mass += (lagged.coefficient[i] < T(0) ? -lagged.coefficient[i] : lagged.coefficient[i]) * mass[nodes[i]];
    pair_mass /= T(2);
    const T limit = collision.friction * lagged.normal_force;
    const LocalTerms<T, 12> f = contact_friction<T>(
        lagged, v, collision.friction, collider_slip_velocity<T>(collision.slip_velocity, limit, h, pair_mass));
    out.energy += f.energy;
    out.force += f.force;
    out.df_dv += f.df_dv;
}

/// The contact pair as an element: penalty force and its stiffness at q
/// (NewtonInputs::exact_hessians: the exact Hessian where cloth_contact has
/// one, else the Gauss–Newton stiffness), and in full Newton (`lagged_positions` set) the friction
/// of the contact as it was at the start of the step; in the one-step scheme
/// the friction of the contact at q (the step's start there). A segment
/// pair's friction is that of its parts (`segment_pair_contact`), each with
/// its weight's share of the normal force, all lagged alike.
/// Energies: the penalty is elastic, the friction potential dissipation.
/// B is the nodes' DoF count: 3 (triangle cloth), or 5 (yarn nodes, whose
/// positions are their first three DoFs; the contact leaves their arc
/// lengths alone).
template <typename T, int B = triangle_node_dofs>
WEFT_HD inline void evaluate_cloth_contact(const T* q, const T* v, const T* mass, const ClothContactElement<T>& pair,
                                           const ClothCollision<T>& collision, T h, NodeBlocks<T, 4, B>& out,
                                           ElementEnergies<T>& energy, const NewtonInputs<T>& newton = {})
{
    const Vec<T, 12> ql = gather_contact_positions<T, B>(q, pair);
    const Vec<T, 12> vl = gather_nodes<T, 4, B>(v, pair.nodes);
    const bool exact = newton.exact_hessians && !newton.forces_only;
    const SegmentContact<T> c = cloth_contact<T>(ql, pair, collision.stiffness, collision.thickness, exact);
    energy = ElementEnergies<T>{T(0), c.energy, T(0), T(0)};
    LocalTerms<T, 12> friction = LocalTerms<T, 12>::zero();
    if (collision.friction > T(0)) {
        const Vec<T, 12> qf =
            newton.lagged_positions ? gather_contact_positions<T, B>(newton.lagged_positions, pair) : ql;
        if (pair.kind == int(ClothContactKind::segment_pair)) {
            Vec<T, 12> dm;
            const T m = parallel_mollifier<T>(qf, pair.parallel_eps, dm);
            for (int part = 0; part < (m == T(1) ? 1 : segment_pair_parts); ++part)
                add_contact_friction<T>(segment_pair_part<T>(qf, part, collision.stiffness, collision.thickness, false),
                                        segment_pair_weight<T>(m, part), vl, mass, pair.nodes, collision, h, friction);
        } else {
            add_contact_friction<T>(
                newton.lagged_positions ? cloth_contact<T>(qf, pair, collision.stiffness, collision.thickness) : c,
                T(1), vl, mass, pair.nodes, collision, h, friction);
        }
    }
    energy.dissipation = friction.energy;
    const Vec<T, 12> force = c.force + friction.force;
    // ∂f/∂q: the exact Hessian where cloth_contact formed one, else Gauss–Newton.
    const Mat<T, 12, 12> df_dq = c.exact_hessian ? (-c.hessian).eval() : (-c.gauss_newton).eval();
    scatter_nodes<T, 4, B>(out, pair.nodes, Mat<T, 12, 12>::Zero().eval(), force, df_dq, friction.df_dv, vl, h, newton);
}

}  // namespace weft
