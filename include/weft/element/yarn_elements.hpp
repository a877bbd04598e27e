#pragma once
/// @file yarn_elements.hpp
/// The elements of yarn-level cloth evaluated into their backward-Euler
/// contributions on 5-DoF nodes (x, u, v). One function per element kind;
/// both the Thrust backend and the Eigen reference path call these, so the
/// physics lives in exactly one place.
///
/// Damping per mode goes through the generic dissipation layer
/// (element/dissipation.hpp) with k_d per mode (2017 Eq. 6); the Rayleigh
/// baseline uses D = −β K_e per element (2017 Eq. 4, α = 0).

#include <weft/element/bending_element.hpp>
#include <weft/element/difference_projection.hpp>
#include <weft/element/dissipation.hpp>
#include <weft/element/elastic.hpp>
#include <weft/element/implicit_system.hpp>
#include <weft/element/rayleigh_damping.hpp>
#include <weft/element/yarn_element_types.hpp>
#include <weft/element/yarn_terms.hpp>
#include <weft/potential/quadratic.hpp>
#include <weft/strain/shear.hpp>
#include <weft/strain/stretch.hpp>

namespace weft {

/// Read the (x, s) DoFs of `count` nodes into a stacked 4·count vector.
template <typename T, int Count>
WEFT_HD inline Vec<T, 4 * Count> gather_xs(const T* q, const int (&nodes)[Count], int coordinate)
{
    Vec<T, 4 * Count> out;
    for (int k = 0; k < Count; ++k) {
        const T* node = q + yarn_node_dofs * nodes[k];
        out(4 * k + 0) = node[0];
        out(4 * k + 1) = node[1];
        out(4 * k + 2) = node[2];
        out(4 * k + 3) = coordinate >= 0 ? node[coordinate] : T(0);
    }
    return out;
}

/// Local DoF → (node slot, component) tables for (x, s) stacks.
template <int Count>
struct XsLayout {
    int slot[4 * Count];
    int component[4 * Count];
    WEFT_HD XsLayout(int coordinate)
    {
        for (int k = 0; k < Count; ++k) {
            for (int c = 0; c < 3; ++c) {
                slot[4 * k + c] = k;
                component[4 * k + c] = c;
            }
            slot[4 * k + 3] = k;
            component[4 * k + 3] = coordinate;  // −1 drops the s DoF
        }
    }
};

/// Whether the element stiffnesses stay unprojected (NewtonInputs::exact_hessians,
/// or NewtonInputs::forces_only: nothing uses them then): not with Rayleigh
/// damping, whose force is built from the projected stiffness.
template <typename T>
WEFT_HD inline bool exact_stiffness(const YarnMaterial<T>& mat, const NewtonInputs<T>& newton)
{
    return (newton.exact_hessians || newton.forces_only) && mat.damping != DampingModel::rayleigh;
}

/// The projection of a yarn element's stiffness where it is not exact:
/// negative eigenvalues to zero, or in full Newton with
/// NewtonInputs::absolute_eigenvalues to their absolute values. Rayleigh
/// damping always clamps: its force is built from the projected stiffness,
/// and the filter must not change a force.
template <typename T>
WEFT_HD inline PsdProjection yarn_projection(const YarnMaterial<T>& mat, const NewtonInputs<T>& newton)
{
    return newton.full_newton && newton.absolute_eigenvalues && mat.damping != DampingModel::rayleigh
               ? PsdProjection::absolute
               : PsdProjection::on;
}

/// Segment element: stretch (2017 Eq. 12–14) with its damping, consistent
/// mass, gravity with its Eulerian component, parallel-yarn contact on Δs.
/// The elastic stiffness is PSD-projected in (Δx, Δs) (difference_projection.hpp);
/// the Rayleigh baseline uses that same projected stiffness.
template <typename T>
WEFT_HD inline void evaluate_yarn_segment(const T* q, const T* v, const YarnSegment& seg, const YarnMaterial<T>& mat,
                                          const Vec3<T>& gravity, T h, NodeBlocks<T, 2, yarn_node_dofs>& out,
                                          ElementEnergies<T>& energy, const NewtonInputs<T>& newton = {},
                                          bool with_parallel_contact = true)
{
    const int nodes[2] = {seg.node0, seg.node1};
    const Vec<T, 8> ql = gather_xs<T, 2>(q, nodes, seg.coordinate);
    const Vec<T, 8> vl = gather_xs<T, 2>(v, nodes, seg.coordinate);
    const StretchEval<T> e = stretch_strain<T>(ql, vl);
    // Damping reads ε̇ = ∇ε(q)·v, or in full Newton the incremental rate with
    // Ω = Δs frozen at the start of the step (`incremental_dissipation_eval`).
    const StretchEval<T> rate_eval =
        newton.rate_start ? incremental_dissipation_eval(
                                e, stretch_strain<T>(gather_xs<T, 2>(newton.rate_start, nodes, seg.coordinate), vl), h)
                          : e;

    const QuadraticDensity<T, 1> elastic{mat.stretch_stiffness};
    Vec<T, 8> force = elastic_force(e, elastic);
    // −∂f/∂q of stretch and its damping, projected together in (Δx, Δs): the
    // clamped ∂f_d/∂q = −Ω max(S_d, 0) Hε is indefinite too, since the
    // Eulerian stretch strain has an indefinite Hessian (large strain rates at
    // impacts made A's diagonal blocks indefinite without this).
    Mat<T, 8, 8> hessian = -elastic_force_jacobian(e, elastic);
    Mat<T, 8, 8> df_dv = Mat<T, 8, 8>::Zero();
    energy.elastic = elastic_energy(e, elastic);
    energy.dissipation = T(0);
    const bool strain_rate = mat.damping == DampingModel::strain_rate && mat.stretch_damping > T(0);
    if (strain_rate) {
        const QuadraticDensity<T, 1> damping{mat.stretch_damping};
        force += dissipative_force(rate_eval, damping);
        // Full Newton: the exact stiffness of the incremental potential (the
        // projection below keeps the sum PSD); the one-step scheme clamps.
        hessian -= dissipative_force_jacobian(rate_eval, damping, DiffWrt::positions,
                                              newton.rate_start ? StressClamp::off : StressClamp::on);
        df_dv += dissipative_force_jacobian(rate_eval, damping, DiffWrt::velocities);
        energy.dissipation = dissipation_potential(rate_eval, damping);
    }
    Mat<T, 8, 8> df_dq = exact_stiffness(mat, newton)
                             ? Mat<T, 8, 8>(-hessian)
                             : Mat<T, 8, 8>(-project_segment_hessian<T>(
                                   hessian, Vec3<T>(ql.template segment<3>(4) - ql.template segment<3>(0)),
                                   yarn_projection(mat, newton) == PsdProjection::absolute));
    if (!strain_rate && mat.damping == DampingModel::rayleigh && mat.rayleigh_beta > T(0)) {
        // df_dq is the projected elastic stiffness here.
        energy.dissipation = add_rayleigh_damping<T, 8>(df_dq, mat.rayleigh_beta, vl, force, df_dv);
    }

    const LocalTerms<T, 8> g = segment_gravity<T>(ql, mat.linear_density, gravity);
    force += g.force;
    df_dq += g.df_dq;
    energy.gravity = g.energy;

    if (with_parallel_contact && mat.contact_stiffness > T(0)) {
        const LocalTerms<T, 2> c = parallel_contact<T>(ql(3), ql(7), mat.contact_stiffness, mat.contact_min_distance);
        const int idx[2] = {3, 7};
        for (int a = 0; a < 2; ++a) {
            force(idx[a]) += c.force(a);
            for (int b = 0; b < 2; ++b) df_dq(idx[a], idx[b]) += c.df_dq(a, b);
        }
        energy.elastic += c.energy;
    }

    const Mat<T, 8, 8> mass = segment_mass<T>(ql, mat.linear_density);
    energy.kinetic = T(0.5) * vl.dot(mass * vl);
    // Full Newton: b carries −M(q) (v − v_n), whose v-Jacobian has
    // −h ∂(M(q) u)/∂q besides −M (segment_mass_derivative); its symmetric
    // part enters A through ∂f/∂v (A = M − h ∂f/∂v − h² ∂f/∂q). Measured on
    // tablecloth_friction's first 0.2 s: 7.12 → 6.33 Newton iterations per
    // step (docs/scenes.md). Left out of the projected retry, whose A must be
    // positive definite.
    if (newton.mass_velocity && newton.exact_hessians) {
        const Mat<T, 8, 8> g = segment_mass_derivative<T>(ql, mat.linear_density,
                                                          gather_xs<T, 2>(newton.mass_velocity, nodes, seg.coordinate));
        df_dv -= T(0.5) * (g + g.transpose());
    }
    const XsLayout<2> layout(seg.coordinate);
    const Vec<T, 8> wl =
        newton.stiffness_velocity ? gather_xs<T, 2>(newton.stiffness_velocity, nodes, seg.coordinate) : vl;
    const Vec<T, 8> ml =
        newton.mass_velocity ? gather_xs<T, 2>(newton.mass_velocity, nodes, seg.coordinate) : Vec<T, 8>::Zero().eval();
    scatter_implicit<T, 8, 2, yarn_node_dofs>(out, layout.slot, layout.component, mass, force, df_dq, df_dv, wl, h, ml);
}

/// Parallel-yarn contact of two consecutive crossings of one fabric on a yarn
/// (Cirio et al. 2014; the penalty of `parallel_contact` on Δs = s₁ − s₀),
/// as an element of its own: used where the pair is not a stretch segment,
/// i.e. where contacts with another fabric or EIL nodes lie between the two
/// crossings. No mass, gravity or damping.
template <typename T>
WEFT_HD inline void evaluate_parallel_pair(const T* q, const T* v, const YarnParallelPair& pair,
                                           const YarnMaterial<T>& mat, T h, NodeBlocks<T, 2, yarn_node_dofs>& out,
                                           ElementEnergies<T>& energy, const NewtonInputs<T>& newton = {})
{
    const int c = pair.coordinate;
    const std::size_t i0 = yarn_node_dofs * static_cast<std::size_t>(pair.node0) + static_cast<std::size_t>(c);
    const std::size_t i1 = yarn_node_dofs * static_cast<std::size_t>(pair.node1) + static_cast<std::size_t>(c);
    energy = ElementEnergies<T>{T(0), T(0), T(0), T(0)};
    if (!(mat.contact_stiffness > T(0))) return;
    const LocalTerms<T, 2> t = parallel_contact<T>(q[i0], q[i1], mat.contact_stiffness, mat.contact_min_distance);
    energy.elastic = t.energy;
    const int slot[2] = {0, 1};
    const int component[2] = {c, c};
    const T* w = newton.stiffness_velocity ? newton.stiffness_velocity : v;
    const Vec<T, 2> wl(w[i0], w[i1]);
    scatter_implicit<T, 2, 2, yarn_node_dofs>(out, slot, component, Mat<T, 2, 2>::Zero(), t.force, t.df_dq,
                                              Mat<T, 2, 2>::Zero(), wl, h);
}

/// Whether bending and shear take the Gauss–Newton stiffness for these
/// element inputs (StiffnessApproximation; `automatic` picks it for the
/// one-step scheme, whose inputs carry no step start).
template <typename T>
WEFT_HD inline bool gauss_newton_stiffness(const YarnMaterial<T>& mat, const NewtonInputs<T>& newton)
{
    return mat.stiffness_approximation == StiffnessApproximation::gauss_newton ||
           (mat.stiffness_approximation == StiffnessApproximation::automatic && newton.rate_start == nullptr);
}

/// Whether an element may take its forces alone, without its strain
/// Hessians or any Jacobian: a line-search trial (NewtonInputs::forces_only)
/// reads no Jacobian, and where the element's w (`wl`) is zero its
/// b = h (f + h K w) has no K in it either, so the forces alone give the
/// exact evaluation's forces and b, to the bit, up to the sign of an exact
/// zero. Not with Rayleigh damping, whose force is built from K.
template <typename T, int N>
WEFT_HD inline bool forces_alone(const YarnMaterial<T>& mat, const NewtonInputs<T>& newton, const Vec<T, N>& wl)
{
    if (!newton.forces_only || !exact_stiffness(mat, newton)) return false;
    for (int i = 0; i < N; ++i)
        if (wl(i) != T(0)) return false;
    return true;
}

/// Bending element at a node (2017 Sec. 5.2, blended small-angle form). Its
/// stiffness must be PSD (the exact bending Hessian is indefinite even near
/// θ = 0, which makes A indefinite and PCG diverge): Gauss–Newton, or the
/// projected exact one; by default Gauss–Newton in the one-step scheme and
/// projected in full Newton (YarnMaterial::stiffness_approximation,
/// `gauss_newton_stiffness`).
template <typename T>
WEFT_HD inline void evaluate_yarn_bend(const T* q, const T* v, const YarnBend& bend, const YarnMaterial<T>& mat, T h,
                                       NodeBlocks<T, 3, yarn_node_dofs>& out, ElementEnergies<T>& energy,
                                       const NewtonInputs<T>& newton = {})
{
    const int nodes[3] = {bend.prev, bend.node, bend.next};
    const Vec<T, 12> ql = gather_xs<T, 3>(q, nodes, bend.coordinate);
    const Vec<T, 12> vl = gather_xs<T, 3>(v, nodes, bend.coordinate);
    const T kd = mat.damping == DampingModel::strain_rate ? mat.bending_damping : T(0);
    const auto densities = quadratic_bending_densities<T>(mat.bending_stiffness, kd);
    const Vec<T, 12> wl =
        newton.stiffness_velocity ? gather_xs<T, 3>(newton.stiffness_velocity, nodes, bend.coordinate) : vl;
    const BendingElementEval<T> r =
        forces_alone(mat, newton, wl) ? evaluate_bending_forces<T>(ql, vl, densities)
        : gauss_newton_stiffness(mat, newton)
            ? evaluate_bending_gauss_newton<T>(ql, vl, densities)
            : evaluate_bending<T>(ql, vl, densities,
                                  exact_stiffness(mat, newton) ? PsdProjection::off : yarn_projection(mat, newton),
                                  newton.forces_only ? StressClamp::off : StressClamp::on);
    Vec<T, 12> force = r.elastic_force + r.dissipative_force;
    Mat<T, 12, 12> df_dq = r.elastic_force_jacobian + r.dissipative_force_jacobian_positions;
    Mat<T, 12, 12> df_dv = r.dissipative_force_jacobian_velocities;
    energy.kinetic = T(0);
    energy.gravity = T(0);
    energy.elastic = r.energy;
    energy.dissipation = r.dissipation_potential;
    if (mat.damping == DampingModel::rayleigh && mat.rayleigh_beta > T(0))
        energy.dissipation = add_rayleigh_damping<T, 12>(r.elastic_force_jacobian, mat.rayleigh_beta, vl, force, df_dv);
    const XsLayout<3> layout(bend.coordinate);
    scatter_implicit<T, 12, 3, yarn_node_dofs>(out, layout.slot, layout.component, Mat<T, 12, 12>::Zero(), force, df_dq,
                                               df_dv, wl, h);
}

/// Shear element at a crossing (2017 Eq. 22–23); elastic stiffness
/// Gauss–Newton or PSD-projected in (x₁ − x₀, x₂ − x₀)
/// (YarnMaterial::stiffness_approximation).
template <typename T>
WEFT_HD inline void evaluate_yarn_shear(const T* q, const T* v, const YarnShear& shear, const YarnMaterial<T>& mat, T h,
                                        NodeBlocks<T, 3, yarn_node_dofs>& out, ElementEnergies<T>& energy,
                                        const NewtonInputs<T>& newton = {})
{
    const int nodes[3] = {shear.node, shear.along_u, shear.along_v};
    const Vec<T, 12> ql = gather_xs<T, 3>(q, nodes, -1);
    const Vec<T, 12> vl = gather_xs<T, 3>(v, nodes, -1);
    const Vec<T, 12> wl = newton.stiffness_velocity ? gather_xs<T, 3>(newton.stiffness_velocity, nodes, -1) : vl;
    // Gauss–Newton: Ω ∇ε k ∇εᵀ, and ∂f_d/∂q omitted as for bending; no strain Hessian is read.
    // Projected: the exact elastic and clamped dissipative stiffness, projected together.
    // A trial that takes the forces alone (`forces_alone`) forms no Jacobian.
    const bool alone = forces_alone(mat, newton, wl);
    const bool gauss_newton = gauss_newton_stiffness(mat, newton);
    auto e = shear_strain<T>(ql, vl, T(shear.rest_spacing),
                             gauss_newton || alone ? StrainDerivatives::gradients : StrainDerivatives::hessians);
    if (newton.rate_start)
        set_incremental_rate(e,
                             shear_strain<T>(gather_xs<T, 3>(newton.rate_start, nodes, -1), vl, T(shear.rest_spacing),
                                             StrainDerivatives::gradients),
                             h);
    const QuadraticDensity<T, 1> elastic{mat.shear_stiffness};
    Vec<T, 12> force = elastic_force(e, elastic);
    Mat<T, 12, 12> hessian =
        alone          ? Mat<T, 12, 12>::Zero().eval()
        : gauss_newton ? Mat<T, 12, 12>(e.size * sandwich<T, 12, 1, 12>(e.gradient, elastic.stress_derivative(e.strain),
                                                                        e.gradient))
                       : Mat<T, 12, 12>(-elastic_force_jacobian(e, elastic));
    Mat<T, 12, 12> df_dv = Mat<T, 12, 12>::Zero();
    energy.elastic = elastic_energy(e, elastic);
    energy.dissipation = T(0);
    const bool strain_rate = mat.damping == DampingModel::strain_rate && mat.shear_damping > T(0);
    if (strain_rate) {
        const QuadraticDensity<T, 1> damping{mat.shear_damping};
        force += dissipative_force(e, damping);
        if (!gauss_newton && !alone)
            hessian -= dissipative_force_jacobian(e, damping, DiffWrt::positions,
                                                  newton.rate_start ? StressClamp::off : StressClamp::on);
        if (!alone) df_dv += dissipative_force_jacobian(e, damping, DiffWrt::velocities);
        energy.dissipation = dissipation_potential(e, damping);
    }
    Mat<T, 12, 12> df_dq = gauss_newton || exact_stiffness(mat, newton)
                               ? Mat<T, 12, 12>(-hessian)
                               : Mat<T, 12, 12>(-project_crossing_hessian<T>(
                                     hessian, yarn_projection(mat, newton) == PsdProjection::absolute));
    if (!strain_rate && mat.damping == DampingModel::rayleigh && mat.rayleigh_beta > T(0))
        energy.dissipation = add_rayleigh_damping<T, 12>(df_dq, mat.rayleigh_beta, vl, force, df_dv);
    energy.kinetic = T(0);
    energy.gravity = T(0);
    const XsLayout<3> layout(-1);
    scatter_implicit<T, 12, 3, yarn_node_dofs>(out, layout.slot, layout.component, Mat<T, 12, 12>::Zero(), force, df_dq,
                                               df_dv, wl, h);
}

/// ½ ρ_l |Δs| of segment g: its share of lumped mass at either end node.
template <typename T>
WEFT_HD inline T half_segment_mass(const T* q, const YarnSegment& g, T linear_density)
{
    const T span = q[yarn_node_dofs * g.node1 + g.coordinate] - q[yarn_node_dofs * g.node0 + g.coordinate];
    return T(0.5) * linear_density * (span < T(0) ? -span : span);
}

/// The lumped mass of a node at state q: ½ ρ_l |Δs| over its EoL segments.
template <typename T>
WEFT_HD inline T yarn_node_mass(const T* q, const YarnSegment* segments, const NodeSegments& at, T linear_density)
{
    T mass = T(0);
    for (int k = 0; k < 4; ++k)
        if (at.segment[k] >= 0) mass += half_segment_mass<T>(q, segments[at.segment[k]], linear_density);
    return mass;
}

/// Whether the friction anchors of `node` act, and their Coulomb limit μF_n:
/// the material's (active when μ > 0) without per-node limits, else
/// `friction_limit[node]` (active when > 0); see YarnModel::friction_limit.
template <typename T>
WEFT_HD inline bool node_friction(const YarnMaterial<T>& mat, const T* friction_limit, int node, T& limit)
{
    if (friction_limit == nullptr) {
        limit = mat.friction_coefficient * mat.normal_force;
        return mat.anchor_stiffness > T(0) && mat.friction_coefficient > T(0);
    }
    limit = friction_limit[node];
    return mat.anchor_stiffness > T(0) && limit > T(0);
}

/// Per-node terms: friction anchors on the free sliding coordinates and
/// collider contacts.
/// @param[in] friction_limit  nullptr (the material's μF_n) or #nodes Coulomb
///            limits (YarnModel::friction_limit)
/// @param[in] node_mass  the node's lumped mass at the start of the step, for
///            the slip velocities of the colliders' lagged friction and the
///            slipping anchors' friction in full Newton
///            (`collider_slip_velocity`, `anchor_slip_velocity`); 0: the
///            1 mm/s floor, and the anchor spring's rate, alone
template <typename T>
WEFT_HD inline void evaluate_yarn_node(const T* q, const T* v, const unsigned char* free_dof, const T* anchors,
                                       const T* friction_limit, int node, const YarnMaterial<T>& mat,
                                       const Collider<T>* colliders, int collider_count, T radius, T h,
                                       NodeBlocks<T, 1, yarn_node_dofs>& out, ElementEnergies<T>& energy,
                                       const NewtonInputs<T>& newton = {}, T node_mass = T(0))
{
    Vec<T, 5> force = Vec<T, 5>::Zero();
    Mat<T, 5, 5> df_dq = Mat<T, 5, 5>::Zero();
    Mat<T, 5, 5> df_dv = Mat<T, 5, 5>::Zero();
    const T* qn = q + yarn_node_dofs * node;
    const T* vn = v + yarn_node_dofs * node;
    energy = ElementEnergies<T>{T(0), T(0), T(0), T(0)};
    T limit = T(0);
    if (node_friction<T>(mat, friction_limit, node, limit)) {
        const bool slip = mat.anchor_friction == AnchorFriction::slip_in_step;
        for (int c = 0; c < 2; ++c) {
            if (!free_dof[yarn_node_dofs * node + 3 + c]) continue;
            const T s = qn[3 + c];
            const T anchor = anchors[2 * node + c];
            if (slip && newton.lagged_positions) {
                // full Newton: the regime of the step start, one smooth potential per anchor for the step
                const T s0 = newton.lagged_positions[yarn_node_dofs * node + 3 + c];
                if (anchor_at_limit<T>(s0, anchor, mat.anchor_stiffness, limit)) {
                    const LocalTerms<T, 1> f = lagged_anchor_friction<T>(
                        vn[3 + c], limit,
                        anchor_slip_velocity<T>(
                            mat.anchor_stiffness, limit, h, node_mass,
                            newton.lagged_velocities ? newton.lagged_velocities[yarn_node_dofs * node + 3 + c] : T(0)));
                    force(3 + c) += f.force(0);
                    df_dv(3 + c, 3 + c) += f.df_dv(0, 0);
                    energy.dissipation += f.energy;
                    continue;
                }
            }
            const LocalTerms<T, 1> a = slip && !newton.lagged_positions
                                           ? slipping_anchor<T>(s, anchor, mat.anchor_stiffness, limit)
                                           : anchor_spring<T>(s, anchor, mat.anchor_stiffness);
            force(3 + c) += a.force(0);
            df_dq(3 + c, 3 + c) += a.df_dq(0, 0);
            energy.elastic += a.energy;
        }
    }
    const Vec3<T> x(qn[0], qn[1], qn[2]);
    const Vec3<T> xv(vn[0], vn[1], vn[2]);
    Vec3<T> fx = Vec3<T>::Zero();
    Mat3<T> kx = Mat3<T>::Zero(), dx = Mat3<T>::Zero();
    const T* lagged = newton.lagged_positions ? newton.lagged_positions + yarn_node_dofs * node : nullptr;
    add_collider_terms<T>(colliders, collider_count, x, xv, lagged, radius, T(1e-3), fx, kx, dx, energy.elastic,
                          energy.dissipation, node_mass, h, newton.exact_hessians);
    force.template head<3>() += fx;
    df_dq.template block<3, 3>(0, 0) += kx;
    df_dv.template block<3, 3>(0, 0) += dx;
    const T* wn = newton.stiffness_velocity ? newton.stiffness_velocity + yarn_node_dofs * node : vn;
    Vec<T, 5> wl;
    for (int k = 0; k < 5; ++k) wl(k) = wn[k];
    const int slot[5] = {0, 0, 0, 0, 0};
    const int component[5] = {0, 1, 2, 3, 4};
    scatter_implicit<T, 5, 1, yarn_node_dofs>(out, slot, component, Mat<T, 5, 5>::Zero(), force, df_dq, df_dv, wl, h);
}

namespace layer_contact_detail {

template <typename T>
WEFT_HD inline Vec3<T> position(const T* q, int n)
{
    return Vec3<T>(q[yarn_node_dofs * n], q[yarn_node_dofs * n + 1], q[yarn_node_dofs * n + 2]);
}

/// The chord between the neighbours of `node` on the segments `segment`
/// (x_after − x_before, the node itself where one is missing); false when
/// both are missing.
template <typename T>
WEFT_HD inline bool chord(const T* q, const YarnSegment* segments, int node, const int (&segment)[2], Vec3<T>& t)
{
    int before = node, after = node;
    for (int k = 0; k < 2; ++k) {
        if (segment[k] < 0) continue;
        const YarnSegment& g = segments[segment[k]];
        if (g.node1 == node) before = g.node0;
        if (g.node0 == node) after = g.node1;
    }
    if (before == after) return false;
    t = position<T>(q, after) - position<T>(q, before);
    return true;
}

/// The force of one yarn's segments and bends (indices, −1 none) on the x
/// of `node`, and ½ ρ_l × the arc-length span of those segments (the yarn's
/// lumped mass at the node, added to `mass`).
template <typename T>
WEFT_HD inline Vec3<T> yarn_force(const T* q, const T* v, int node, const int (&segment)[2], const int (&bend)[3],
                                  const YarnSegment* segments, const YarnBend* bends, const YarnMaterial<T>& mat,
                                  const Vec3<T>& gravity, T& mass)
{
    Vec3<T> f = Vec3<T>::Zero();
    ElementEnergies<T> energy;
    for (int k = 0; k < 2; ++k) {
        if (segment[k] < 0) continue;
        const YarnSegment& g = segments[segment[k]];
        NodeBlocks<T, 2, yarn_node_dofs> blocks;
        blocks.set_zero();
        evaluate_yarn_segment<T>(q, v, g, mat, gravity, T(0), blocks, energy, NewtonInputs<T>{}, false);
        f += blocks.f[g.node0 == node ? 0 : 1].template head<3>();
        mass += half_segment_mass<T>(q, g, mat.linear_density);
    }
    for (int k = 0; k < 3; ++k) {
        if (bend[k] < 0) continue;
        const YarnBend& b = bends[bend[k]];
        NodeBlocks<T, 3, yarn_node_dofs> blocks;
        blocks.set_zero();
        evaluate_yarn_bend<T>(q, v, b, mat, T(0), blocks, energy);
        f += blocks.f[b.prev == node ? 0 : (b.node == node ? 1 : 2)].template head<3>();
    }
    return f;
}

/// The colliders' force on the x of `node` (penalty and friction).
template <typename T>
WEFT_HD inline Vec3<T> collider_force(const T* q, const T* v, int node, const Collider<T>* colliders,
                                      int collider_count, T radius)
{
    Vec3<T> f = Vec3<T>::Zero();
    if (collider_count == 0) return f;
    Mat3<T> kx = Mat3<T>::Zero(), dx = Mat3<T>::Zero();
    T elastic = T(0), dissipation = T(0);
    const Vec3<T> xv(v[yarn_node_dofs * node], v[yarn_node_dofs * node + 1], v[yarn_node_dofs * node + 2]);
    add_collider_terms<T>(colliders, collider_count, position<T>(q, node), xv, nullptr, radius, T(1e-3), f, kx, dx,
                          elastic, dissipation);
    return f;
}

}  // namespace layer_contact_detail

/// Normal force between two fabric layers at their contact node (thesis
/// Sec. 4.4; Cirio et al. 2014): the force with which the top yarn presses
/// on the bottom one there. The node is shared, so the force R the layers
/// exchange is not a DoF; it follows from the node's balance once the node's
/// mass m = m_t + m_b (½ ρ_l × the arc-length span of each yarn's EoL
/// segments at the node) and the forces on x are attributed to the two
/// sides: the top yarn's elements f_t (stretch and bending with their
/// damping, and gravity) to the top; the bottom yarn's elements f_b and the
/// colliders f_c (a collider under the stack touches the bottom layer) to the
/// bottom. Both sides move with the node, a = (f_t + f_b + f_c)/m, so the top
/// side's balance m_t a = f_t + R gives
///     N = n · R = n · (m_t (f_b + f_c) − m_b f_t) / m  +  Σ_o n · f_c(o) / share(o)
/// with n = unit(t_u × t_v), t_u and t_v the tangents of the node's u- and
/// v-yarns (chords of the neighbouring EoL nodes), which for patches stacked
/// by `add_contact_layer` points from the bottom layer to the top one (axis1
/// × axis2). Gravity cancels (layers falling together exchange no force);
/// at rest on a fixed layer N = −n · f_t. The sum is over the top yarn's
/// neighbours o that rest on the layer below (a crossing of the top fabric,
/// or a contact of the top yarn with a layer above): the layers have no
/// thickness in the model, so a collider under the stack pushes such a node
/// directly, where in the cloth that load reaches the collider through the
/// layer below, i.e. through the `share(o)` contacts next to o
/// (LayerContactStencil). On a flat stack at rest the normal forces then sum
/// to the weight of the part of the upper layer that lies on the lower one.
/// N > 0 pushes the layers apart; N < 0 pulls them together (the top yarn
/// would accelerate away from the bottom one), and the thesis then removes
/// the contact. EIL contact springs on x are not counted.
/// @param[in] segments, bends  the current element lists the stencil indexes
/// @param[in] colliders, collider_count, radius  the colliders and the node radius
/// @param[out] normal_force    N (N); untouched when false is returned
/// @param[out] magnitude       optional: the sum of the magnitudes of the
///             terms of N (its round-off scale: layers at rest in free fall
///             exchange N ≈ 10⁻¹⁶ × this)
/// @return false when the stencil has no segment or no tangent on a yarn
///         (the node is EIL there, or off the yarns) or the tangents are
///         parallel: N is undefined at this step
template <typename T>
WEFT_HD inline bool layer_contact_normal_force(const T* q, const T* v, const LayerContactStencil& s,
                                               const YarnSegment* segments, const YarnBend* bends,
                                               const YarnMaterial<T>& mat, const Vec3<T>& gravity,
                                               const Collider<T>* colliders, int collider_count, T radius,
                                               T& normal_force, T* magnitude = nullptr)
{
    using layer_contact_detail::collider_force;
    using layer_contact_detail::yarn_force;
    Vec3<T> t_top, t_bottom;
    if (!layer_contact_detail::chord<T>(q, segments, s.node, s.top_segment, t_top) ||
        !layer_contact_detail::chord<T>(q, segments, s.node, s.bottom_segment, t_bottom))
        return false;
    Vec3<T> n = s.top_coordinate == 3 ? t_top.cross(t_bottom) : t_bottom.cross(t_top);
    const T length = n.norm();
    using std::sqrt;
    if (!(length > T(1e-12) * sqrt(t_top.squaredNorm() * t_bottom.squaredNorm()))) return false;
    n /= length;

    T m_top = T(0), m_bottom = T(0);
    const Vec3<T> f_top = yarn_force<T>(q, v, s.node, s.top_segment, s.top_bend, segments, bends, mat, gravity, m_top);
    const Vec3<T> f_bottom =
        yarn_force<T>(q, v, s.node, s.bottom_segment, s.bottom_bend, segments, bends, mat, gravity, m_bottom);
    const T mass = m_top + m_bottom;
    if (!(mass > T(0))) return false;
    const Vec3<T> f_collider = collider_force<T>(q, v, s.node, colliders, collider_count, radius);
    T load = T(0);
    for (int k = 0; k < 2; ++k)
        if (s.load_node[k] >= 0 && s.load_share[k] > 0)
            load +=
                n.dot(collider_force<T>(q, v, s.load_node[k], colliders, collider_count, radius)) / T(s.load_share[k]);
    const T pushed = n.dot(m_top * (f_bottom + f_collider)) / mass, pulled = n.dot(m_bottom * f_top) / mass;
    normal_force = pushed - pulled + load;
    if (magnitude)
        *magnitude =
            (pushed < T(0) ? -pushed : pushed) + (pulled < T(0) ? -pulled : pulled) + (load < T(0) ? -load : load);
    return true;
}

}  // namespace weft
