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
#include <weft/core/psd.hpp>
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
    /// Yarn layers only (YarnStepper): a pair of neighbouring layers that
    /// touched at the start of `create_after` consecutive steps becomes a
    /// contact between the layers again (docs/collision.md, "Contacts made
    /// where layers meet").
    bool create_contacts = false;
    int create_after = 3;
    /// Yarns only: a segment pair within this angle of parallel (radians)
    /// at the step's start is a `parallel_segment_pair` for the step (its
    /// end points' penalties), a pair beyond it a `segment_pair`; 0 makes
    /// every pair a segment_pair (docs/collision.md, "Parallel yarns").
    T parallel_angle = T(0);
    /// The width δ of the penalty's onset as a fraction of the thickness
    /// (`smooth_penalty`): 0, the penalty ½ k (r − d)², whose stiffness jumps
    /// from 0 to k at d = r; δ > 0 lets it rise from 0 over δ r
    /// (docs/collision.md, "A smooth onset of the penalty").
    T onset = T(0);
    /// δ in metres: `onset` × `thickness`.
    WEFT_HD T onset_width() const { return onset * thickness; }
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
    if (c.create_after < 1)
        throw InvalidInput(detail::describe("collision create_after", c.create_after, "must be at least 1"));
    // radians here; the scene key is in degrees (refused there at 90 and above).
    require_non_negative("collision.parallel_angle", c.parallel_angle);
    if (!(c.parallel_angle < T(1.5707963267948966)))
        throw InvalidInput(detail::describe("collision.parallel_angle", c.parallel_angle,
                                            "must be below pi/2 (radians; the scene key is in degrees, below 90)"));
    require_non_negative("collision.onset", c.onset);
    if (!(c.onset < T(1)))
        throw InvalidInput(
            detail::describe("collision.onset", c.onset, "must be below 1 (a fraction of the thickness)"));
}

/// The two kinds of cloth contact pairs.
enum class ClothContactKind : int {
    point_triangle = 0,  ///< nodes: the point, then the triangle's three corners
    edge_edge = 1,       ///< nodes: one edge's two ends, then the other's
    /// Two yarn segments (nodes as edge_edge) whose penalty acts between the
    /// points `stable_segment_parameters` chooses (`segment_contact_at`):
    /// the closest points, except for nearly parallel segments, where the
    /// middle of their overlap is blended in, so that the force stays
    /// continuous in the nodes' positions where the closest points are not
    /// unique (docs/collision.md, "Parallel yarns").
    segment_pair = 2,
    /// Two yarn segments (nodes as edge_edge) that were nearly parallel
    /// when the pair was found (`ClothCollision::parallel_angle`): the sum of
    /// four penalties of a quarter of the stiffness each, on the distance
    /// from each end point to the other segment (`end_point_contact`).
    /// Each part is C¹ in the positions at any angle, so a Newton attempt
    /// on layers lying on each other meets no jump of the force's points
    /// (docs/collision.md, "Parallel yarns"); two equal parallel segments
    /// over each other get the segment pair's penalty exactly.
    parallel_segment_pair = 3,
};

/// One candidate contact pair of triangle cloth or of yarn segments.
template <typename T>
struct ClothContactElement {
    int nodes[4];
    int kind;        ///< ClothContactKind
    T parallel_eps;  ///< edge–edge: the mollifier's ε× (0: none; point–triangle pairs)
    /// A constant displacement of the second primitive (nodes 2 and 3) in
    /// every distance the pair measures: zero, except between segments of
    /// two stacked yarn layers, whose contact nodes carry no thickness
    /// (model/layers.hpp), so the layer above is a thickness along the
    /// layers' normal from where its centre lines lie in the model
    /// (docs/collision.md, "Stacked layers"). Held fixed through a Newton
    /// attempt, so that the pair's force stays the gradient of its energy.
    T offset[3] = {T(0), T(0), T(0)};
};

/// The number of penalty parts of a contact pair: the four end points of
/// a parallel segment pair, one for every other kind.
template <typename T>
WEFT_HD inline int contact_parts(const ClothContactElement<T>& pair)
{
    return pair.kind == int(ClothContactKind::parallel_segment_pair) ? 4 : 1;
}

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
    const T c = uu * ww - uw * uw;
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

/// The signed weights c of a pair's four nodes whose sum Σ c_i p_i is the
/// difference x between its two contact points (its norm their distance):
/// the first node minus the triangle's closest point for a point–triangle
/// pair, the first segment's point minus the second's for the two edge
/// kinds. `force_points`: a segment pair takes the points its force acts
/// between (`stable_segment_parameters`, see cloth_contact below); otherwise
/// every kind takes its closest points; a parallel segment pair, the
/// points of its part `part` (`end_point_parameters`).
template <typename T>
WEFT_HD inline void contact_point_weights(const Vec3<T>& p0, const Vec3<T>& p1, const Vec3<T>& p2, const Vec3<T>& p3,
                                          int kind, bool force_points, T c[4], int part = 0)
{
    if (kind == int(ClothContactKind::point_triangle)) {
        const PointTriangleClosest<T> at = closest_point_triangle<T>(p0, p1, p2, p3);
        c[0] = T(1), c[1] = -(T(1) - at.u - at.v), c[2] = -at.u, c[3] = -at.v;
        return;
    }
    const SegmentPairClosest<T> at =
        !force_points                                          ? closest_segment_segment<T>(p0, p1, p2, p3)
        : kind == int(ClothContactKind::segment_pair)          ? stable_segment_parameters<T>(p0, p1, p2, p3)
        : kind == int(ClothContactKind::parallel_segment_pair) ? end_point_parameters<T>(p0, p1, p2, p3, part)
                                                               : closest_segment_segment<T>(p0, p1, p2, p3);
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

/// Below this fraction of the thickness r, a point–triangle pair's
/// stiffness for A (where its exact Hessian is not asked for) is its exact
/// Hessian projected onto the PSD cone (`project_to_psd`), not Gauss–Newton
/// k ∇d ∇dᵀ: the term k (r − d) ∇²d that Gauss–Newton leaves out grows as
/// (r − d) / d, and on sheet_fold.json it left the first updates of the
/// steps that failed with a contact mismatch 37–146 × ‖A Δv‖ at 10⁻⁴ of the
/// update (docs/collision.md, "Close point–triangle pairs"). Measured on
/// sheet_fold.json (1 s): Gauss–Newton 2.77 Newton iterations per step and
/// 8 steps halved; below ½ r 2.734 and 4, in about the same time (42.8 s
/// against 40.1 s, back to back); below r (every active pair) 2.712 and 4,
/// 4 % slower than ½ r.
constexpr double contact_projected_below = 0.5;

/// The contact of one pair at the stacked positions q (12), edge–edge
/// pairs mollified (energy, force, Gauss–Newton stiffness and normal force).
/// A segment pair acts between the points of `stable_segment_parameters`:
/// beyond its threshold angle its force is −∇V exactly (the closest points);
/// below it, the penalty's force at the blended points, continuous in q,
/// without the parameters' own derivatives (`parallel_blend_sine2`, 1.8°).
///
/// `exact` asks for the force's exact Jacobian in `hessian` where the force
/// is a gradient (SegmentContact::exact_hessian): a point–triangle pair, and a
/// segment pair beyond the blend, whose force is −∇V at the closest points
/// (segment_contact.hpp, with the closest points' own motion). Elsewhere
/// (`exact` false, a segment pair within the blend, an edge–edge pair, whose
/// mollifier's second derivative is not formed) `hessian` stays zero and
/// the system matrix takes the Gauss–Newton stiffness. A mollified edge
/// pair's is that of its energy m E = ½ k (√m (r − d))² as one square,
/// k ∇s ∇sᵀ with s = √m (r − d), so it stiffens the mollifier's force too.
/// A point–triangle pair closer than `contact_projected_below` × r takes its
/// exact Hessian projected onto the PSD cone instead.
///
/// A parallel segment pair returns its part `part` (0–3, `contact_parts`):
/// an end point's penalty with a quarter of the stiffness, its exact
/// Hessian where `exact` asks for it.
template <typename T>
WEFT_HD inline SegmentContact<T> cloth_contact(const Vec<T, 12>& q, const ClothContactElement<T>& pair, T stiffness,
                                               T thickness, bool exact = false, int part = 0, T onset = T(0))
{
    if (pair.kind == int(ClothContactKind::parallel_segment_pair))
        return end_point_contact<T>(q, part, T(0.25) * stiffness, thickness, exact, onset);
    if (pair.kind == int(ClothContactKind::point_triangle)) {
        SegmentContact<T> c = point_triangle_contact<T>(q, stiffness, thickness, exact, onset);
        if (exact || !c.active || c.degenerate || !(c.distance < T(contact_projected_below) * thickness)) return c;
        // Close: the exact Hessian projected onto the PSD cone in place of
        // Gauss–Newton, which leaves out F ∇²d (F the penalty's force).
        c.gauss_newton = project_to_psd<T, 12>(point_triangle_contact<T>(q, stiffness, thickness, true, onset).hessian);
        return c;
    }
    if (pair.kind == int(ClothContactKind::segment_pair)) {
        const Vec3<T> a0 = q.template segment<3>(0), a1 = q.template segment<3>(3), b0 = q.template segment<3>(6),
                      b1 = q.template segment<3>(9);
        const SegmentPairClosest<T> at = stable_segment_parameters<T>(a0, a1, b0, b1);
        if (exact) {
            // Beyond the blend the parameters are the closest points themselves.
            const SegmentPairClosest<T> closest = closest_segment_segment<T>(a0, a1, b0, b1);
            if (at.s == closest.s && at.t == closest.t) return segment_contact<T>(q, stiffness, thickness, true, onset);
        }
        return segment_contact_at<T>(q, at.s, at.t, stiffness, thickness, false, onset);
    }
    SegmentContact<T> c = segment_contact<T>(q, stiffness, thickness, false, onset);
    if (!c.active || c.degenerate) return c;
    Vec<T, 12> dm;
    const T m = parallel_mollifier<T>(q, pair.parallel_eps, dm);
    if (m == T(1)) return c;
    // V = m E(g), g = r − d. For the quadratic law E = ½ k g², V is the one
    // square ½ k s², s = √m g, and its Gauss–Newton stiffness is
    // k ∇s ∇sᵀ = k ∇V ∇Vᵀ / (m F²), F = k g: A carries the mollifier's
    // force −E ∇m too. m ∇d ∇dᵀ alone left that force, up to k r² / 2 |∇m|
    // (tens of newtons between a folded sheet's parallel edges), without
    // stiffness: docs/collision.md, "The mollified edge pairs' stiffness".
    // With an onset (`smooth_penalty`), F′ ∇V ∇Vᵀ / (m F²): PSD, rank one, and
    // F′ ∇d ∇dᵀ, the unmollified pair's stiffness, where m = 1.
    const PenaltyTerms<T> law = smooth_penalty<T>(thickness - c.distance, stiffness, onset);
    c.force = m * c.force - c.energy * dm;
    c.energy *= m;
    c.gauss_newton = m > T(0) && law.force > T(0)
                         ? Mat<T, 12, 12>(law.stiffness / (m * law.force * law.force) * c.force * c.force.transpose())
                         : Mat<T, 12, 12>(Mat<T, 12, 12>::Zero());
    c.normal_force *= m;
    return c;
}

/// The Coulomb limits that a contact pair's friction puts on its four nodes
/// at the positions q (`B` DoFs per node): load_i = Σ μλ |c_i| over its
/// parts that touch there (λ the part's normal force, c_i its point
/// weights), zero for a part out of contact. The backend sums them per node
/// over all pairs (`contact_friction_rates`) to size the friction's slip
/// velocity (`contact_slip_velocity`).
template <typename T, int B = triangle_node_dofs>
WEFT_HD inline void contact_friction_loads(const T* q, const ClothContactElement<T>& pair,
                                           const ClothCollision<T>& collision, T load[4])
{
    for (int i = 0; i < 4; ++i) load[i] = T(0);
    if (!(collision.friction > T(0))) return;
    const Vec<T, 12> x = gather_contact_positions<T, B>(q, pair);
    for (int part = 0; part < contact_parts(pair); ++part) {
        const SegmentContact<T> c =
            cloth_contact<T>(x, pair, collision.stiffness, collision.thickness, false, part, collision.onset_width());
        if (!c.active || c.degenerate) continue;
        for (int i = 0; i < 4; ++i)
            load[i] +=
                collision.friction * c.normal_force * (c.coefficient[i] < T(0) ? -c.coefficient[i] : c.coefficient[i]);
    }
}

/// The slip velocity of a contact part's friction with point weights c:
/// the floor ε₀ (ClothCollision::slip_velocity), or, where larger, the most
/// that the contact friction on its nodes can change its relative velocity
/// Σ c_i v_i in one step, h Σ |c_i| a_i, with a_i the Coulomb limits of all
/// the contact friction on node i over its mass (`friction_rate`, from the
/// attempt's start; null: the floor). Below the slip velocity the friction
/// sticks (f₁ < 1, `lagged_friction`); sized so, no full-Newton update can
/// carry a contact from slipping one way through the stick zone to slipping
/// the other, however many contacts share a node. For one pair alone,
/// h μλ Σ c_i²/m_i: the change of its relative velocity that its own
/// friction makes in a step. Sized by each contact's own mass, the zones of
/// a node pressed by several contacts (a parallel yarn pair's four parts,
/// a yarn crossing lying on several others) were a fraction of what the
/// node's update moves through them, and the updates overshot from one slip
/// to the opposite at any time step (the 80 × 40 fold with friction failed
/// down to 1 µs; benchmarks/RESULTS.md).
template <typename T>
WEFT_HD inline T contact_slip_velocity(T floor, const T coefficient[4], const int nodes[4], const T* friction_rate, T h)
{
    if (!friction_rate) return floor;
    T resolved = T(0);
    for (int i = 0; i < 4; ++i)
        resolved += (coefficient[i] < T(0) ? -coefficient[i] : coefficient[i]) * friction_rate[nodes[i]];
    return slip_velocity_above_floor<T>(floor, h * resolved);
}

/// The contact pair as an element: penalty force and its stiffness at q
/// (NewtonInputs::exact_hessians: the exact Hessian where cloth_contact has
/// one, else the Gauss–Newton stiffness), and in full Newton (`lagged_positions` set) the friction
/// of the contact as it was at the start of the step; in the one-step scheme
/// the friction of the contact at q (the step's start there). The
/// friction's slip velocity is `contact_slip_velocity` with `friction_rate`
/// (per node; null: the floor).
/// Energies: the penalty is elastic, the friction potential dissipation.
/// B is the nodes' DoF count: 3 (triangle cloth), or 5 (yarn nodes, whose
/// positions are their first three DoFs; the contact leaves their arc
/// lengths alone).
template <typename T, int B = triangle_node_dofs>
WEFT_HD inline void evaluate_cloth_contact(const T* q, const T* v, const T* friction_rate,
                                           const ClothContactElement<T>& pair, const ClothCollision<T>& collision, T h,
                                           NodeBlocks<T, 4, B>& out, ElementEnergies<T>& energy,
                                           const NewtonInputs<T>& newton = {})
{
    const Vec<T, 12> ql = gather_contact_positions<T, B>(q, pair);
    const Vec<T, 12> vl = gather_nodes<T, 4, B>(v, pair.nodes);
    const bool exact = newton.exact_hessians && !newton.forces_only;
    energy = ElementEnergies<T>{T(0), T(0), T(0), T(0)};
    Vec<T, 12> force = Vec<T, 12>::Zero();
    Mat<T, 12, 12> df_dq = Mat<T, 12, 12>::Zero(), df_dv = Mat<T, 12, 12>::Zero();
    const bool friction = collision.friction > T(0);
    // The friction's state: the step's start in full Newton, q in the one-step scheme.
    const Vec<T, 12> xl =
        friction && newton.lagged_positions ? gather_contact_positions<T, B>(newton.lagged_positions, pair) : ql;
    const int parts = contact_parts(pair);
    for (int part = 0; part < parts; ++part) {
        const SegmentContact<T> c =
            cloth_contact<T>(ql, pair, collision.stiffness, collision.thickness, exact, part, collision.onset_width());
        energy.elastic += c.energy;
        force += c.force;
        // ∂f/∂q: the exact Hessian where cloth_contact formed one, else Gauss–Newton.
        df_dq -= c.exact_hessian ? c.hessian : c.gauss_newton;
        if (!friction) continue;
        const SegmentContact<T> lagged = newton.lagged_positions
                                             ? cloth_contact<T>(xl, pair, collision.stiffness, collision.thickness,
                                                                false, part, collision.onset_width())
                                             : c;
        if (!lagged.active || lagged.degenerate) continue;
        const LocalTerms<T, 12> f = contact_friction<T>(
            lagged, vl, collision.friction,
            contact_slip_velocity<T>(collision.slip_velocity, lagged.coefficient, pair.nodes, friction_rate, h));
        force += f.force;
        df_dv += f.df_dv;
        energy.dissipation += f.energy;
    }
    scatter_nodes<T, 4, B>(out, pair.nodes, Mat<T, 12, 12>::Zero().eval(), force, df_dq, df_dv, vl, h, newton);
}

}  // namespace weft
