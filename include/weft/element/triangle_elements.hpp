#pragma once
/// @file triangle_elements.hpp
/// The elements of triangle-mesh cloth as the backend kernels evaluate them,
/// each turned into its backward-Euler contribution on 3-DoF node blocks
/// (implicit_system.hpp):
///  - membrane triangle: Green strain (2018 Eq. 13, 17) × StVK (Eq. 13–14) or
///    a tabulated GNATV density (2019 Sec. 3), with strain-rate dissipation
///    (StVK form in ε̇, 2018 Eq. 15–16) or Rayleigh damping f = −β K v as the
///    baseline;
///  - plate triangle: Kirchhoff plate bending on the curvature of its
///    stencil (strain/shell_curvature.hpp), with strain-rate dissipation of
///    the same form (the default bending);
///  - hinge: discrete-shells dihedral bending (strain/dihedral.hpp) with its
///    own strain-rate dissipation ½ k_d ε̇²;
///  - node: lumped mass, gravity, penalty colliders.
///
/// Stiffness used in A (forces are always exact):
///  - membrane: −∂f_e/∂q ≈ Ω (∇ε C ∇εᵀ + Σ clamp(S)_k Hε_k), the exact
///    Hessian with the stress eigenvalues clamped at zero (the Green-strain
///    Hessian weighted by a stress tensor S is Dm⁻ᵀ S Dm⁻¹ ⊗ I₃, PSD iff S
///    is); C = ∂S/∂ε is PSD for StVK with λ, μ ≥ 0 and for monotone tables.
///    Exact in tension; drops the destabilizing compression term.
///  - dissipation: ∂f_d/∂v exact (2018 Eq. 8), ∂f_d/∂q with the dissipative
///    stress clamped (2018 Eq. 9 and Sec. 4).
///  - hinge and plate triangle: Gauss–Newton −∂f_e/∂q ≈ Ω ∇ε C ∇εᵀ (the
///    dihedral angle's and the curvature's Hessians are indefinite, see
///    dihedral_bending_element.hpp); ∂f_d/∂q omitted, ∂f_d/∂v exact.
///
/// The element math is not repeated here: the membrane and the hinge are the
/// finite-difference-tested elements of membrane_element.hpp
/// (`membrane_forces`) and dihedral_bending_element.hpp
/// (`dihedral_bending_forces`), called with the stiffness choices above, and
/// the Rayleigh baseline is rayleigh_damping.hpp's `add_rayleigh_damping`.
/// This file gathers the nodes, evaluates the strain once (with the
/// incremental rate in full Newton) and scatters.

#include <weft/element/collider.hpp>
#include <weft/element/dihedral_bending_element.hpp>
#include <weft/element/dissipation.hpp>
#include <weft/element/implicit_system.hpp>
#include <weft/element/membrane_element.hpp>
#include <weft/element/plate_bending_element.hpp>
#include <weft/element/rayleigh_damping.hpp>
#include <weft/potential/quadratic.hpp>
#include <weft/potential/stvk.hpp>
#include <weft/strain/dihedral.hpp>
#include <weft/strain/green_strain.hpp>
#include <weft/strain/shell_curvature.hpp>

namespace weft {

/// DoFs per triangle-mesh node: x (3).
constexpr int triangle_node_dofs = 3;

enum class MembraneModel { stvk, tabulated };
enum class TriangleDamping { none, strain_rate, rayleigh };
/// How a triangle mesh bends: Kirchhoff plate bending on curvature stencils
/// (plate_bending_element.hpp, converges to plate theory) or discrete-shells
/// dihedral hinges (dihedral_bending_element.hpp, the 2018 paper's model).
enum class BendingModel { plate, dihedral };

/// Per-model constants of triangle cloth (SI units, per unit rest area:
/// 3D moduli are multiplied by the thickness when the model is built).
template <typename T>
struct TriangleMaterial {
    MembraneModel membrane = MembraneModel::stvk;
    StVKDensity<T> stvk{T(0), T(0)};  ///< λh, μh (N/m), used when membrane == stvk
    T areal_density = T(0);           ///< ρh (kg/m²)
    BendingModel bending = BendingModel::plate;
    /// plate: D of ½ D [(tr ε)² − 2 (1 − ν) det ε]; dihedral: k of ½ k (θ − θ̄)² |ē|²/Ā (N·m)
    T bending_stiffness = T(0);
    T bending_poisson = T(0);  ///< ν of the plate's bending density (plate only)
    TriangleDamping damping = TriangleDamping::none;
    StVKDensity<T> membrane_damping{T(0), T(0)};  ///< λ_d h, μ_d h (N·s/m), 2018 Eq. 15
    T bending_damping = T(0);  ///< D_d of the plate's Ψ_d, or k_d of ½ k_d ε̇² on the hinge strain (N·m·s)
    T rayleigh_beta = T(0);    ///< β (s) of the Rayleigh baseline (membrane only)
    T contact_offset = T(0);   ///< distance kept from colliders (m)
};

/// One membrane triangle: node indices and rest state.
template <typename T>
struct TriangleElement {
    int nodes[3];
    TriangleRest<T> rest;
};

/// One hinge: x0, (x1, x2) shared edge, x3; and its rest state.
template <typename T>
struct HingeElement {
    int nodes[4];
    HingeRest<T> rest;
};

/// One plate-bending triangle: its curvature stencil's nodes (corners
/// first, model/curvature_stencils.hpp) and rest state, in K slots (the
/// model keeps curvature_stencil_nodes; the stepper narrows each to the
/// slots it uses, `narrow_plate_element`).
template <typename T, int K = curvature_stencil_nodes>
struct PlateElement {
    int nodes[K];
    ShellCurvatureRest<T, K> rest;
};

/// The first K2 slots of a plate element whose later slots are unused.
template <int K2, typename T, int K>
inline PlateElement<T, K2> narrow_plate_element(const PlateElement<T, K>& plate)
{
    PlateElement<T, K2> out;
    out.rest = narrow_shell_curvature_rest<K2>(plate.rest);
    for (int i = 0; i < K2; ++i) out.nodes[i] = plate.nodes[i];
    return out;
}

/// Read the positions (first three DoFs) of `Count` nodes of `Stride` DoFs
/// each into a stacked vector: 3-DoF triangle nodes, or the x of 5-DoF yarn
/// nodes.
template <typename T, int Count, int Stride = triangle_node_dofs>
WEFT_HD inline Vec<T, 3 * Count> gather_nodes(const T* x, const int (&nodes)[Count])
{
    Vec<T, 3 * Count> out;
    for (int k = 0; k < Count; ++k)
        for (int c = 0; c < 3; ++c) out(3 * k + c) = x[Stride * nodes[k] + c];
    return out;
}

/// Local DoF → (node slot, component) of `Count` 3-DoF nodes.
template <int Count>
struct NodeLayout {
    int slot[3 * Count];
    int component[3 * Count];
    WEFT_HD NodeLayout()
    {
        for (int i = 0; i < 3 * Count; ++i) {
            slot[i] = i / 3;
            component[i] = i % 3;
        }
    }
};

/// Scatter an element's local system on the positions of `Count` nodes of
/// B DoFs (components 0–2; a yarn node's arc lengths get nothing), reading
/// the Newton inputs of its nodes.
template <typename T, int Count, int B = triangle_node_dofs>
WEFT_HD inline void scatter_nodes(NodeBlocks<T, Count, B>& out, const int (&nodes)[Count],
                                  const Mat<T, 3 * Count, 3 * Count>& mass, const Vec<T, 3 * Count>& force,
                                  const Mat<T, 3 * Count, 3 * Count>& df_dq, const Mat<T, 3 * Count, 3 * Count>& df_dv,
                                  const Vec<T, 3 * Count>& v, T h, const NewtonInputs<T>& newton)
{
    constexpr int N = 3 * Count;
    const NodeLayout<Count> layout;
    const Vec<T, N> w = newton.stiffness_velocity ? gather_nodes<T, Count, B>(newton.stiffness_velocity, nodes) : v;
    const Vec<T, N> m =
        newton.mass_velocity ? gather_nodes<T, Count, B>(newton.mass_velocity, nodes) : Vec<T, N>::Zero().eval();
    scatter_implicit<T, N, Count, B>(out, layout.slot, layout.component, mass, force, df_dq, df_dv, w, h, m);
}

/// Membrane triangle with any elastic density (StVK or tabulated): the
/// tested element of membrane_element.hpp (`membrane_forces`) with the
/// backend's stiffness (`backend_membrane_jacobian`), plus the Rayleigh
/// baseline (rayleigh_damping.hpp) on that stiffness.
template <typename T, class Elastic>
WEFT_HD inline void evaluate_triangle_membrane(const T* q, const T* v, const TriangleElement<T>& tri,
                                               const TriangleMaterial<T>& mat, const Elastic& elastic, T h,
                                               NodeBlocks<T, 3, triangle_node_dofs>& out, ElementEnergies<T>& energy,
                                               const NewtonInputs<T>& newton = {})
{
    const Vec<T, 9> ql = gather_nodes<T, 3>(q, tri.nodes);
    const Vec<T, 9> vl = gather_nodes<T, 3>(v, tri.nodes);
    GreenStrainEval<T> e = green_strain(tri.rest, ql, vl);
    if (newton.rate_start)
        set_incremental_rate(e, green_strain(tri.rest, gather_nodes<T, 3>(newton.rate_start, tri.nodes), vl), h);
    // f_d = −Ω ∇ε S_d(ε̇) (2018 Eq. 16), ∂f_d/∂v (Eq. 8), clamped ∂f_d/∂q (Eq. 9, Sec. 4)
    const StVKDensity<T> dissipative =
        mat.damping == TriangleDamping::strain_rate ? mat.membrane_damping : StVKDensity<T>{T(0), T(0)};
    const MembraneForces<T> m = membrane_forces(e, elastic, dissipative, backend_membrane_jacobian());
    Vec<T, 9> force = m.force();
    Mat<T, 9, 9> df_dv = m.velocity_jacobian;
    energy = ElementEnergies<T>{T(0), m.elastic_energy, T(0), m.dissipation_potential};
    // f = −β K v with K the (clamped) stiffness (2018 Eq. 10–11, the baseline)
    if (mat.damping == TriangleDamping::rayleigh && mat.rayleigh_beta > T(0))
        energy.dissipation = add_rayleigh_damping<T, 9>(m.position_jacobian, mat.rayleigh_beta, vl, force, df_dv);
    scatter_nodes<T, 3>(out, tri.nodes, Mat<T, 9, 9>::Zero().eval(), force, m.position_jacobian, df_dv, vl, h, newton);
}

/// Dihedral hinge with strain-rate bending dissipation (not damped by the
/// Rayleigh baseline, as in 2018 Fig. 3: damping acts on the membrane only):
/// the tested element of dihedral_bending_element.hpp
/// (`dihedral_bending_forces`) with the Gauss–Newton stiffness.
template <typename T>
WEFT_HD inline void evaluate_triangle_hinge(const T* q, const T* v, const HingeElement<T>& hinge,
                                            const TriangleMaterial<T>& mat, T h,
                                            NodeBlocks<T, 4, triangle_node_dofs>& out, ElementEnergies<T>& energy,
                                            const NewtonInputs<T>& newton = {})
{
    const Vec<T, 12> ql = gather_nodes<T, 4>(q, hinge.nodes);
    const Vec<T, 12> vl = gather_nodes<T, 4>(v, hinge.nodes);
    DihedralEval<T> e = dihedral_bending_strain(hinge.rest, ql, vl);
    if (newton.rate_start)
        set_incremental_rate(
            e, dihedral_bending_strain(hinge.rest, gather_nodes<T, 4>(newton.rate_start, hinge.nodes), vl), h);
    const T kd = mat.damping == TriangleDamping::strain_rate ? mat.bending_damping : T(0);
    const DihedralBendingForces<T> b = dihedral_bending_forces(
        e, QuadraticDensity<T, 1>{mat.bending_stiffness}, QuadraticDensity<T, 1>{kd}, HingeStiffness::gauss_newton);
    energy = ElementEnergies<T>{T(0), b.elastic_energy, T(0), b.dissipation_potential};
    scatter_nodes<T, 4>(out, hinge.nodes, Mat<T, 12, 12>::Zero().eval(), b.force(), b.position_jacobian,
                        b.velocity_jacobian, vl, h, newton);
}

/// Plate-bending triangle with strain-rate bending dissipation (not damped
/// by the Rayleigh baseline, like the hinge): the element of
/// plate_bending_element.hpp with the Gauss–Newton stiffness
/// (`plate_bending_forces_gauss_newton`), which needs no strain Hessians.
template <typename T, int K>
WEFT_HD inline void evaluate_triangle_plate(const T* q, const T* v, const PlateElement<T, K>& plate,
                                            const TriangleMaterial<T>& mat, T h,
                                            NodeBlocks<T, K, triangle_node_dofs>& out, ElementEnergies<T>& energy,
                                            const NewtonInputs<T>& newton = {})
{
    const Vec<T, 3 * K> ql = gather_nodes<T, K>(q, plate.nodes);
    const Vec<T, 3 * K> vl = gather_nodes<T, K>(v, plate.nodes);
    ShellCurvatureFirstOrder<T, K> e = shell_curvature_first_order(plate.rest, ql, vl);
    if (newton.rate_start)
        set_incremental_rate(
            e, shell_curvature_first_order(plate.rest, gather_nodes<T, K>(newton.rate_start, plate.nodes), vl), h);
    const T kd = mat.damping == TriangleDamping::strain_rate ? mat.bending_damping : T(0);
    const PlateBendingForces<T, K> b =
        plate_bending_forces_gauss_newton(e, plate_bending_density(mat.bending_stiffness, mat.bending_poisson),
                                          plate_bending_density(kd, mat.bending_poisson));
    energy = ElementEnergies<T>{T(0), b.elastic_energy, T(0), b.dissipation_potential};
    scatter_nodes<T, K>(out, plate.nodes, Mat<T, 3 * K, 3 * K>::Zero().eval(), b.force(), b.position_jacobian,
                        b.velocity_jacobian, vl, h, newton);
}

/// Lumped mass m, gravity m g (energy −m g·x) and penalty colliders of one node.
template <typename T>
WEFT_HD inline void evaluate_triangle_node(const T* q, const T* v, T mass, int node, const Vec3<T>& gravity,
                                           const Collider<T>* colliders, int collider_count, T offset, T h,
                                           NodeBlocks<T, 1, triangle_node_dofs>& out, ElementEnergies<T>& energy,
                                           const NewtonInputs<T>& newton = {})
{
    const int nodes[1] = {node};
    const Vec3<T> x = gather_nodes<T, 1>(q, nodes);
    const Vec3<T> xv = gather_nodes<T, 1>(v, nodes);
    Vec3<T> force = mass * gravity;
    Mat3<T> df_dq = Mat3<T>::Zero();
    Mat3<T> df_dv = Mat3<T>::Zero();
    energy = ElementEnergies<T>{T(0.5) * mass * xv.squaredNorm(), T(0), -mass * gravity.dot(x), T(0)};
    const T* lagged = newton.lagged_positions ? newton.lagged_positions + triangle_node_dofs * node : nullptr;
    add_collider_terms<T>(colliders, collider_count, x, xv, lagged, offset, T(1e-3), force, df_dq, df_dv,
                          energy.elastic, energy.dissipation, mass, h, newton.exact_hessians);
    scatter_nodes<T, 1>(out, nodes, (mass * Mat3<T>::Identity()).eval(), force, df_dq, df_dv, xv, h, newton);
}

}  // namespace weft
