#pragma once
/// @file eil_elements.hpp
/// The EIL contact springs of thesis Sec. 4.3.2 evaluated into their
/// backward-Euler contributions on 5-DoF yarn nodes (x, u, v), like the
/// other yarn elements in yarn_elements.hpp. The physics (interpolation of
/// thesis Eq. 4.3, zero-rest-length spring, Gauss–Newton stiffness) lives in
/// eil_terms.hpp; this file only gathers the stacked DoFs from the node
/// arrays and scatters the local system onto node blocks.
///
/// An EIL node e on a yarn with coordinate c (3 = u, 4 = v) and bracketing
/// EoL nodes a, b on that yarn (model/eil_assignment.hpp):
///  - `EilSpring`: e is EoL on its other yarn, so its own x is the contact
///    point there; V = ½ k |x(s_e) − x_e|² over [x_a, s_a, x_b, s_b, s_e, x_e];
///  - `EilPairSpring`: e is EIL on both yarns, so its x takes no part (the
///    backend filters it); V = ½ k |x₁(s_e) − x₂(s'_e)|², each side
///    interpolated on its own yarn.
/// The springs carry no mass and no damping (thesis Eq. 4.10: EIL arc
/// lengths are governed by statics).

#include <weft/element/eil_terms.hpp>
#include <weft/element/implicit_system.hpp>
#include <weft/element/yarn_element_types.hpp>

namespace weft {

/// Contact spring of an EIL node on one yarn, its partner being its own x.
///
/// The bracket (a, b) is the assignment's, made at the start of a step. A
/// Newton iteration within the step may slide s past a or b (an EoL node and
/// the EIL node pass each other, e.g. the crossings of two stacked fabrics):
/// the interpolation then continues on the neighbouring EoL segment
/// (outer_before, a) or (b, outer_after) of the same polyline, so that x(s)
/// stays on the yarn and every weight inside its segment (no extrapolation;
/// V is continuous in s, its s-derivative jumps at a and b by k |gap| times
/// the yarn's turn there). Full Newton (NewtonInputs::full_newton) rounds
/// those two corners (`eil_corner_interpolation`): with the jump, a contact
/// whose equilibrium lies at an EoL node's arc length never converges; the
/// one-step scheme keeps the polyline of thesis Eq. (4.3). −1: there is
/// no such segment (the yarn's EoL chain ends at a or b); the interpolation
/// on (a, b) then extrapolates past that end, as far as the Newton step's
/// feasibility bound lets s go (one bracket span, yarn_stepper.hpp).
struct EilSpring {
    int before;             ///< EoL node before `node` on the yarn (a of thesis Eq. 4.3)
    int after;              ///< EoL node after `node` on the yarn (b of thesis Eq. 4.3)
    int node;               ///< the EIL node
    int coordinate;         ///< 3 (u) or 4 (v): the yarn's arc-length coordinate
    int outer_before = -1;  ///< EoL node before `before` on the yarn, −1: none
    int outer_after = -1;   ///< EoL node after `after` on the yarn, −1: none
};

/// The 5 node ids of an EIL spring's stencil, in slot order
/// (a, b, e, outer_before, outer_after); a missing outer node repeats a or b
/// (its slot then receives nothing).
WEFT_HD inline void eil_spring_stencil(const EilSpring& s, int (&nodes)[5])
{
    nodes[0] = s.before;
    nodes[1] = s.after;
    nodes[2] = s.node;
    nodes[3] = s.outer_before >= 0 ? s.outer_before : s.before;
    nodes[4] = s.outer_after >= 0 ? s.outer_after : s.after;
}

/// Contact spring of a node that is EIL on both of its yarns: index 0 is its
/// u-yarn (coordinate 3), index 1 its v-yarn (coordinate 4). Each
/// interpolation continues on its yarn's neighbouring EoL segment as in
/// `EilSpring`.
struct EilPairSpring {
    int before[2];
    int after[2];
    int node;
    int outer_before[2] = {-1, -1};  ///< EoL node before `before[i]` on yarn i, −1: none
    int outer_after[2] = {-1, -1};   ///< EoL node after `after[i]` on yarn i, −1: none
};

/// The 9 node ids of an EIL pair spring's stencil, in slot order
/// (a_u, b_u, e, a_v, b_v, outer_before_u, outer_after_u, outer_before_v,
/// outer_after_v); a missing outer node repeats its bracket node.
WEFT_HD inline void eil_pair_spring_stencil(const EilPairSpring& p, int (&nodes)[9])
{
    nodes[0] = p.before[0];
    nodes[1] = p.after[0];
    nodes[2] = p.node;
    nodes[3] = p.before[1];
    nodes[4] = p.after[1];
    for (int i = 0; i < 2; ++i) {
        nodes[5 + 2 * i] = p.outer_before[i] >= 0 ? p.outer_before[i] : p.before[i];
        nodes[6 + 2 * i] = p.outer_after[i] >= 0 ? p.outer_after[i] : p.after[i];
    }
}

namespace eil_element_detail {

/// Local DoF → (slot, component) of one interpolation [x_a, s_a, x_b, s_b, s]
/// starting at local index `first`, slots (slot_a, slot_b, slot_e).
template <int N>
WEFT_HD inline void interpolation_layout(int (&slot)[N], int (&component)[N], int first, int slot_a, int slot_b,
                                         int slot_e, int coordinate)
{
    for (int c = 0; c < 3; ++c) {
        slot[first + c] = slot_a;
        component[first + c] = c;
        slot[first + 4 + c] = slot_b;
        component[first + 4 + c] = c;
    }
    slot[first + 3] = slot_a;
    component[first + 3] = coordinate;
    slot[first + 7] = slot_b;
    component[first + 7] = coordinate;
    slot[first + 8] = slot_e;
    component[first + 8] = coordinate;
}

/// The slots (slot_a, slot_b) of the EoL segment that holds the EIL node's
/// arc length s: the bracket (a, b), or its neighbour before a or after b
/// where s has left the bracket and the yarn has one (outer slot ≥ 0).
template <typename T, int K>
WEFT_HD inline void segment_holding(const T* q, const int (&nodes)[K], int coordinate, int slot_e, int slot_before,
                                    int slot_after, int slot_outer_before, int slot_outer_after, bool has_before,
                                    bool has_after, int& slot_a, int& slot_b)
{
    const T s = q[yarn_node_dofs * nodes[slot_e] + coordinate];
    slot_a = slot_before;
    slot_b = slot_after;
    if (has_before && s < q[yarn_node_dofs * nodes[slot_before] + coordinate]) {
        slot_a = slot_outer_before;
        slot_b = slot_before;
    } else if (has_after && s > q[yarn_node_dofs * nodes[slot_after] + coordinate]) {
        slot_a = slot_after;
        slot_b = slot_outer_after;
    }
}

template <typename T, int N, int K>
WEFT_HD inline Vec<T, N> gather_layout(const T* values, const int (&nodes)[K], const int (&slot)[N],
                                       const int (&component)[N])
{
    Vec<T, N> out;
    for (int i = 0; i < N; ++i) out(i) = values[yarn_node_dofs * nodes[slot[i]] + component[i]];
    return out;
}

/// Full Newton's layout and interpolation of one yarn side: 13 local DoFs
/// from `first`, [x_a, s_a, x_b, s_b, x_c, s_c, s] of
/// `eil_corner_interpolation`, across the corner at the bracket's start
/// (outer_before, before, after) while s lies in the bracket's first half,
/// at its end (before, after, outer_after) in the second half (the corner
/// windows end before the bracket's midpoint, so the switch is seamless).
/// Where the yarn has no EoL node beyond that end, Eq. (4.3) on the bracket,
/// extrapolating past the end (the third node's DoFs take no part).
template <typename T, int N, int K>
WEFT_HD inline EilCornerInterpolation<T> corner_side(const T* q, const int (&nodes)[K], int coordinate, int slot_e,
                                                     int slot_before, int slot_after, int slot_outer_before,
                                                     int slot_outer_after, bool has_before, bool has_after, int first,
                                                     int (&slot)[N], int (&component)[N])
{
    const T s = q[yarn_node_dofs * nodes[slot_e] + coordinate];
    const T middle = T(0.5) * (q[yarn_node_dofs * nodes[slot_before] + coordinate] +
                               q[yarn_node_dofs * nodes[slot_after] + coordinate]);
    const bool at_start = s <= middle;
    const bool corner = at_start ? has_before : has_after;
    int ends[3] = {slot_before, slot_after, slot_after};
    if (corner && at_start) {
        ends[0] = slot_outer_before;
        ends[1] = slot_before;
        ends[2] = slot_after;
    } else if (corner) {
        ends[2] = slot_outer_after;
    }
    for (int n = 0; n < 3; ++n)
        for (int c = 0; c < 4; ++c) {
            slot[first + 4 * n + c] = ends[n];
            component[first + 4 * n + c] = corner || n < 2 ? (c < 3 ? c : coordinate) : -1;
        }
    slot[first + 12] = slot_e;
    component[first + 12] = coordinate;
    Vec<T, eil_corner_dofs> ql;
    for (int i = 0; i < eil_corner_dofs; ++i) {
        const int c = component[first + i];
        ql(i) = c < 0 ? T(0) : q[yarn_node_dofs * nodes[slot[first + i]] + c];
    }
    return corner ? eil_corner_interpolation<T>(ql) : eil_segment_interpolation<T>(ql, 0);
}

/// Full Newton's spring stiffness: the exact Hessian where the iteration asks
/// for exact Hessians (NewtonInputs::exact_hessians; the stepper retries
/// with Gauss–Newton where that leaves A indefinite), else Gauss–Newton.
/// Gauss–Newton drops k Σ_c r_c ∇²x_c, which the gap r = F/k of a spring
/// that carries a force F makes F ∇²x, whatever k: where the yarn turns
/// under a loaded contact (a cloth draped over an edge) A was then 2–10 %
/// off the Jacobian of the residual (docs/scenes.md, "The EIL springs'
/// exact Hessian").
template <typename T>
WEFT_HD inline EilSpringHessian spring_hessian(const NewtonInputs<T>& newton)
{
    return newton.exact_hessians ? EilSpringHessian::exact : EilSpringHessian::gauss_newton;
}

/// Velocities (or w) in a layout that may hold unused DoFs (component −1).
template <typename T, int N, int K>
WEFT_HD inline Vec<T, N> gather_partial(const T* values, const int (&nodes)[K], const int (&slot)[N],
                                        const int (&component)[N])
{
    Vec<T, N> out;
    for (int i = 0; i < N; ++i)
        out(i) = component[i] < 0 ? T(0) : values[yarn_node_dofs * nodes[slot[i]] + component[i]];
    return out;
}

/// Sets a contact spring's energy and scatters its local terms (no mass, no
/// damping) onto the node blocks; w is the Newton stiffness velocity (v on
/// a first iteration).
template <typename T, int N, int K>
WEFT_HD inline void scatter_spring(const EilContactEval<T, N>& e, const T* v, const NewtonInputs<T>& newton,
                                   const int (&nodes)[K], const int (&slot)[N], const int (&component)[N], T h,
                                   NodeBlocks<T, K, yarn_node_dofs>& out, ElementEnergies<T>& energy)
{
    energy = ElementEnergies<T>{T(0), e.terms.energy, T(0), T(0)};
    const Vec<T, N> wl =
        gather_partial<T, N, K>(newton.stiffness_velocity ? newton.stiffness_velocity : v, nodes, slot, component);
    scatter_implicit<T, N, K, yarn_node_dofs>(out, slot, component, Mat<T, N, N>::Zero(), e.terms.force, e.terms.df_dq,
                                              e.terms.df_dv, wl, h);
}

}  // namespace eil_element_detail

/// EIL–EoL contact spring (thesis Sec. 4.3.2) on node slots
/// (a, b, e, outer_before, outer_after), see `eil_spring_stencil`: the
/// interpolation runs on the EoL segment that holds s (a, b) at the start of
/// a step, (outer_before, a) once s < s_a, (b, outer_after) once s > s_b.
/// @param[in] q, v       5 × #nodes positions and velocities
/// @param[in] stiffness  k (N/m), see `eil_contact_stiffness`
template <typename T>
WEFT_HD inline void evaluate_eil_spring(const T* q, const T* v, const EilSpring& spring, T stiffness, T h,
                                        NodeBlocks<T, 5, yarn_node_dofs>& out, ElementEnergies<T>& energy,
                                        const NewtonInputs<T>& newton = {})
{
    using namespace eil_element_detail;
    int nodes[5];
    eil_spring_stencil(spring, nodes);
    const int c = spring.coordinate;
    if (newton.full_newton) {
        // Rounded corners at the bracket ends (eil_corner_interpolation).
        int slot[16];
        int component[16];
        const EilCornerInterpolation<T> x = corner_side<T, 16, 5>(q, nodes, c, 2, 0, 1, 3, 4, spring.outer_before >= 0,
                                                                  spring.outer_after >= 0, 0, slot, component);
        for (int k = 0; k < 3; ++k) {
            slot[13 + k] = 2;
            component[13 + k] = k;
        }
        const T* xe = q + yarn_node_dofs * nodes[2];
        const EilContactEval<T, 16> e =
            eil_corner_contact_spring<T>(x, Vec3<T>(xe[0], xe[1], xe[2]), stiffness, spring_hessian(newton));
        scatter_spring<T, 16, 5>(e, v, newton, nodes, slot, component, h, out, energy);
        return;
    }
    int slot_a = 0;
    int slot_b = 1;
    segment_holding<T, 5>(q, nodes, c, 2, 0, 1, 3, 4, spring.outer_before >= 0, spring.outer_after >= 0, slot_a,
                          slot_b);
    int slot[12];
    int component[12];
    interpolation_layout<12>(slot, component, 0, slot_a, slot_b, 2, c);
    for (int k = 0; k < 3; ++k) {
        slot[9 + k] = 2;
        component[9 + k] = k;
    }
    const Vec<T, 12> ql = gather_layout<T, 12, 5>(q, nodes, slot, component);
    const EilContactEval<T, 12> e = eil_contact_spring<T>(ql, stiffness, EilSpringHessian::gauss_newton);
    scatter_spring<T, 12, 5>(e, v, newton, nodes, slot, component, h, out, energy);
}

/// EIL–EIL contact spring (thesis Sec. 4.3.2) on the node slots of
/// `eil_pair_spring_stencil`; each interpolation runs on the EoL segment of
/// its yarn that holds its arc length, as in `evaluate_eil_spring`. The x
/// DoFs of e take no part.
template <typename T>
WEFT_HD inline void evaluate_eil_pair_spring(const T* q, const T* v, const EilPairSpring& spring, T stiffness, T h,
                                             NodeBlocks<T, 9, yarn_node_dofs>& out, ElementEnergies<T>& energy,
                                             const NewtonInputs<T>& newton = {})
{
    using namespace eil_element_detail;
    int nodes[9];
    eil_pair_spring_stencil(spring, nodes);
    if (newton.full_newton) {
        int slot[26];
        int component[26];
        EilCornerInterpolation<T> x[2];
        for (int i = 0; i < 2; ++i)
            x[i] =
                corner_side<T, 26, 9>(q, nodes, 3 + i, 2, 3 * i, 3 * i + 1, 5 + 2 * i, 6 + 2 * i,
                                      spring.outer_before[i] >= 0, spring.outer_after[i] >= 0, 13 * i, slot, component);
        const EilContactEval<T, 26> e =
            eil_corner_pair_contact_spring<T>(x[0], x[1], stiffness, spring_hessian(newton));
        scatter_spring<T, 26, 9>(e, v, newton, nodes, slot, component, h, out, energy);
        return;
    }
    int slot[18];
    int component[18];
    for (int i = 0; i < 2; ++i) {
        int slot_a = 0;
        int slot_b = 0;
        segment_holding<T, 9>(q, nodes, 3 + i, 2, 3 * i, 3 * i + 1, 5 + 2 * i, 6 + 2 * i, spring.outer_before[i] >= 0,
                              spring.outer_after[i] >= 0, slot_a, slot_b);
        interpolation_layout<18>(slot, component, 9 * i, slot_a, slot_b, 2, 3 + i);
    }
    const Vec<T, 18> ql = gather_layout<T, 18, 9>(q, nodes, slot, component);
    const EilContactEval<T, 18> e = eil_pair_contact_spring<T>(ql, stiffness, EilSpringHessian::gauss_newton);
    scatter_spring<T, 18, 9>(e, v, newton, nodes, slot, component, h, out, energy);
}

}  // namespace weft
