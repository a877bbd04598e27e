#pragma once
/// @file yarn_element_types.hpp
/// What the yarn elements read: the 5-DoF node layout (x, u, v), the yarn
/// material and the element descriptions (segments, parallel-yarn pairs,
/// bends, shears) of the EoL discretization (2017 Sec. 3, Cirio et al. 2014).
/// The model layer (model/yarn_model.hpp) builds its cloth from these; the
/// element layer includes only this header, not the model (DESIGN.md:
/// model above element).

namespace weft {

/// DoFs per yarn node: x (0..2), u (3), v (4).
constexpr int yarn_node_dofs = 5;

enum class DampingModel { none, strain_rate, rayleigh };

/// How the bending and shear Jacobians are formed for the implicit solve
/// (forces are identical either way). Both exact Hessians are indefinite
/// (bending even near θ = 0), which would make A indefinite and break PCG.
///  - gauss_newton: −∂f_e/∂q ≈ Ω ∇ε (∂S/∂ε) ∇εᵀ, exact at the rest state,
///    PSD by construction; bending's ∂f_d/∂q is omitted.
///  - projected: the exact stiffness projected onto the PSD cone (bending:
///    12×12, shear: 6×6 eigen-decompositions) and bending's clamped ∂f_d/∂q
///    (2018 Sec. 3.4); closer to Newton's Jacobian, ~5–15× costlier per element.
///  - automatic (default): projected in full Newton's iterations (element
///    inputs with NewtonInputs::rate_start), Gauss–Newton in the one-step
///    scheme. Full Newton needs the true Jacobian: Gauss–Newton drops the
///    bending moment times ∇²θ (and the shear stress times ∇²ε): on yarns
///    bent over a table's edge, 3 % of A's stretch-damping block, which
///    cancels along the contact nodes' sliding direction, so that A Δv was
///    off by up to 2× its size (finite differences of the residual); Newton
///    overshot and halved steps. docs/scenes.md, "The Jacobian that full
///    Newton lacked".
/// Stretch is always the exact stiffness projected in (Δx, Δs) (4×4).
enum class StiffnessApproximation { automatic, gauss_newton, projected };

/// How a friction anchor (DESIGN.md: spring k_f (s − s̄), anchor dragged to
/// the Coulomb limit μF_n after each step) acts during a step.
///  - explicit_drag (default): the spring acts with its full stiffness k_f
///    during the step and only the anchor update after it enforces the limit.
///    While slipping this adds a numerical drag k_f h per anchor (the slip
///    rate solves F − μF_n = k_f h ṡ): negligible against the yarn tensions
///    inside a fabric, but it holds light bodies, e.g. a patch resting on
///    another layer, almost still on any incline.
///  - slip_in_step: a spring already at its limit when the step starts
///    (|k_f (s − s̄)| ≥ (1 − 10⁻⁶) μF_n, i.e. it slipped in the last step)
///    exerts the constant kinetic-friction force ∓μF_n with no stiffness
///    during the step; below the limit it is the spring. The anchor update
///    is unchanged. Sliding then follows a = F/m − μF_n/m; the price is an
///    overshoot of at most one step when slipping stops (the force is not
///    reduced within the step in which the slip velocity would reverse).
///    In full Newton a slipping anchor is instead Coulomb's law on the
///    sliding rate as the gradient of IPC's mollified potential
///    (`lagged_anchor_friction`, yarn_terms.hpp), and an anchor below the
///    limit at the start of the step is the spring for the whole step.
enum class AnchorFriction { explicit_drag, slip_in_step };

/// Per-mode constants of the yarn model (SI units). Strain-rate coefficients
/// follow 2017 Eq. 6 (V_d = ½ Ω k_d ε̇²); `rayleigh_beta` is used by
/// DampingModel::rayleigh (f = −β K v, 2017 Eq. 4 with α = 0).
template <typename T>
struct YarnMaterial {
    T linear_density = T(0);     ///< ρ π r² (kg/m)
    T stretch_stiffness = T(0);  ///< k_s (N)
    T bending_stiffness = T(0);  ///< k_b (N m²)
    T shear_stiffness = T(0);    ///< k_sh (N)
    DampingModel damping = DampingModel::none;
    T stretch_damping = T(0);       ///< k_d for stretch (N s)
    T bending_damping = T(0);       ///< k_d for bending (N m² s)
    T shear_damping = T(0);         ///< k_d for shear (N s)
    T rayleigh_beta = T(0);         ///< β (s)
    T contact_stiffness = T(0);     ///< parallel-yarn penalty (N/m)
    T contact_min_distance = T(0);  ///< Δs below which the penalty acts (m)
    T friction_coefficient = T(0);  ///< μ
    T anchor_stiffness = T(0);      ///< k_f of the friction anchor springs (N/m)
    T normal_force = T(0);          ///< F_n at each crossing (N)
    AnchorFriction anchor_friction = AnchorFriction::explicit_drag;
    StiffnessApproximation stiffness_approximation = StiffnessApproximation::automatic;
};

/// A yarn segment between consecutive nodes; `coordinate` is 3 (u) or 4 (v).
struct YarnSegment {
    int node0;
    int node1;
    int coordinate;
};

/// The EoL segments that end at one node (−1: none): at most two per yarn
/// through it, and a node lies on at most two yarns (its u and v).
struct NodeSegments {
    int segment[4];
};

/// Parallel-yarn contact between two consecutive crossings of one fabric on
/// a yarn, node0 before node1 in arc length; `coordinate` is the yarn's, 3
/// (u) or 4 (v). Contacts with another fabric (`external_contact`) are
/// skipped when pairs are formed, so a pair can span them (thesis Sec. 4.3.2,
/// rule (a)); see `fabric_pairs`.
struct YarnParallelPair {
    int node0;
    int node1;
    int coordinate;
};

/// Bending at `node` between its neighbours on one yarn.
struct YarnBend {
    int prev;
    int node;
    int next;
    int coordinate;
};

/// The elements around a contact node between two fabric layers from which
/// its normal force is evaluated (`layer_contact_normal_force`): the stretch
/// segments and bends of both yarns through the node (those that act on its
/// x), and the top yarn's neighbours whose collider load the contact
/// carries. Indices into the current segment and bend lists, −1 where there
/// is none (e.g. the node is an EIL node on that yarn, or at a yarn end).
/// Built by `layer_contact_stencils` (model/layers.hpp).
struct LayerContactStencil {
    int node;
    int top_coordinate;  ///< 3 (the top yarn is the node's u-yarn) or 4
    int top_segment[2];
    int bottom_segment[2];
    int top_bend[3];
    int bottom_bend[3];
    /// Neighbours on the top yarn that rest on the layer below through the
    /// contacts next to them (a crossing of the top fabric, or a contact of
    /// the top yarn with a layer above), −1 none; and among how many such
    /// contacts each one's load is shared.
    int load_node[2];
    int load_share[2];
    /// Contacts of the other kind in the same cell of the weave (indices into
    /// the contact list, −1 none): those next to a load node on its other
    /// yarn, where the top fabric's other yarn lies on top. A 5-DoF contact
    /// joins one yarn of each fabric, so each fabric's warps carry bending
    /// load for the other's wefts at one kind of contact and the reverse at
    /// the other; the normal force used is the mean over both kinds.
    int partner[4];
};

/// Shear at a crossing `node` between its neighbours `along_u` and `along_v`.
struct YarnShear {
    int node;
    int along_u;
    int along_v;
    double rest_spacing;  ///< L of 2017 Eq. 23
};

}  // namespace weft
