#pragma once
/// @file scene_description.hpp
/// A parsed scene: the plain structs `parse_scene` (scene.hpp) fills, every
/// default resolved. The keys they come from and their defaults are listed in
/// scene.hpp's file comment and docs/scenes.md. Host-only.

#include <array>
#include <string>
#include <vector>

namespace weft {

/// Nodes chosen by name and/or index (see the file comment).
struct NodeSelection {
    std::vector<std::string> sets;  ///< node-set names, in the order given
    std::vector<int> nodes;         ///< node indices local to the patch, in the order given

    bool empty() const { return sets.empty() && nodes.empty(); }
};

/// Pins moved at a constant velocity.
struct MovingPins {
    NodeSelection nodes;
    std::array<double, 3> velocity{0, 0, 0};  ///< m/s
};

struct SolverDescription {
    int newton_iterations = 12;
    double newton_tolerance = 1e-4;
    double pcg_tolerance = 1e-5;
    int pcg_max_iterations = 2000;
    bool adaptive_time_step = true;
    double min_time_step = 0;                      ///< s; the parser sets time_step / 1024 when not given
    std::string preconditioner = "block-jacobi";   ///< "block-jacobi" | "yarn-lines" | "multilevel"
    std::string multilevel_smoother = "auto";      ///< "auto" | "chebyshev" | "yarn-lines" (MultilevelSmoother)
    std::string multilevel_coarse_space = "auto";  ///< "auto" | "nodes" | "yarns" | "squares" (MultilevelCoarseSpace)
    int multilevel_square_side = 3;                ///< crossings a side (MultilevelOptions::square_side)
    int multilevel_square_join = 2;                ///< squares a side joined below (MultilevelOptions::square_join)
    std::string multilevel_cycle = "v";            ///< "v" | "w" (MultilevelCycle)
    std::string multilevel_refresh = "on-growth";  ///< "off" | "on-growth" | "every-prepare" (MultilevelRefresh)
    double multilevel_refresh_tolerance = 1e-2;  ///< rows a refresh takes again (MultilevelOptions::refresh_tolerance)
    double multilevel_line_factor_tolerance =
        1e-3;  ///< finest yarn lines factored again (MultilevelOptions::line_factor_tolerance)
    double multilevel_exact_ritz_bound =
        2.0;  ///< a solve's Ritz value above it takes every row again (MultilevelOptions::exact_ritz_bound)
    bool multilevel_renew_modes = true;  ///< the age renews the squares' modes first (MultilevelOptions::renew_modes)
    std::string multilevel_pattern_change =
        "rebuild";                                   ///< "rebuild" | "keep" (MultilevelOptions::keep_across_patterns)
    std::string multilevel_rebuild = "rent-or-buy";  ///< "rent-or-buy" | "growth" (MultilevelOptions::timed_rebuild)
    std::string matrix_precision = "double";         ///< "double" | "single" (PcgOptions::single_precision_matrix)
    bool eil = false;                                ///< EIL nodes for yarns (thesis Sec. 4.3), "eil": {"enabled"}
    double eil_safety_factor = 0.1;                  ///< safety distance / rest segment length
    double eil_contact_factor = 1000;                ///< contact spring k / (k_s / rest segment length)
    bool eil_given = false;                          ///< "eil" was in the scene (else on for every yarn scene)
    bool eil_lookahead = true;                       ///< "eil": {"lookahead"}, see EilOptions::lookahead
    double eil_min_segment_factor = 0.25;            ///< "eil": {"min_segment_factor"}, see EilOptions
    bool eil_reset_arc_length = false;               ///< "eil": {"reset_arc_length"}: EilOptions::reset_on_eol
    bool eil_remove_pulling_contacts = true;         ///< "eil": {"remove_pulling_contacts"}: EilOptions
    double eil_pull_threshold = 1e-3;                ///< "eil": {"pull_threshold"}: EilOptions
    double max_speed = 1000;         ///< m/s; a faster velocity DoF fails the step (StepperOptions::max_speed)
    int line_search_cuts = 8;        ///< full Newton: halvings of an update before the attempt fails
    int line_search_expansions = 4;  ///< full Newton: doublings of an update along negative curvature
    bool exact_hessians = true;      ///< full Newton: exact element Hessians first (StepperOptions)
    std::string hessian_projection = "absolute";   ///< "clamp" | "absolute" | "adaptive" (StepperOptions)
    std::string stiffness_approximation = "auto";  ///< "auto" | "gauss-newton" | "projected" (yarns)
    std::string linear = "pcg";                    ///< "pcg" | "cholmod" (StepperOptions::linear)
};

/// Elastic stiffness k_e per deformation mode.
struct StiffnessDescription {
    double stretch = 0;  ///< N
    double bending = 0;  ///< N m²
    double shear = 0;    ///< N
};

struct DampingDescription {
    std::string model = "none";  ///< "strain-rate" | "rayleigh" | "rayleigh-analogy" | "none"
    double stretch = 0;          ///< k_d, stretch (N s); also set for "rayleigh-analogy"
    double bending = 0;          ///< k_d, bending (N m² s); also set for "rayleigh-analogy"
    double shear = 0;            ///< k_d, shear (N s); also set for "rayleigh-analogy"
    double beta = 0;             ///< β (s) for "rayleigh" and "rayleigh-analogy"
};

struct FrictionDescription {
    double coefficient = 0.3;     ///< μ
    double normal_force = 0;      ///< F_n (N); the parser sets the default
    double anchor_stiffness = 0;  ///< k_f (N/m); the parser sets the default
};

struct ContactDescription {
    double stiffness = 0;     ///< N/m; the parser sets the default
    double min_distance = 0;  ///< m; the parser sets the default
};

struct InitialVelocityDescription {
    std::array<double, 3> linear{0, 0, 0};   ///< m/s
    std::array<double, 3> angular{0, 0, 0};  ///< rad/s, about the patch centre
};

/// The keys of a "triangle" cloth entry beyond the placement keys it shares
/// with woven entries (center, plane, pins, moving_pins, initial_velocity).
struct TriangleClothDescription {
    std::array<int, 2> resolution{0, 0};    ///< vertices along the first and second axis (grid)
    std::array<double, 2> size{0, 0};       ///< grid width and height (m)
    std::string diagonals = "alternating";  ///< "alternating" | "regular" (grid)
    std::string mesh;                       ///< OBJ file (instead of a grid), relative to the scene file
    double uv_scale = 1;                    ///< metres per OBJ texture unit
    std::string material_model = "stvk";    ///< "stvk" | "tabulated"
    double lambda = 0;                      ///< λ (Pa), stvk: λ h is the membrane law's first Lamé parameter (N/m)
    double mu = 0;                          ///< μ (Pa), stvk: μ h is its shear modulus (N/m)
    double young = 0;                       ///< E (Pa), stvk given by "young" and "poisson" (0 otherwise)
    double poisson = 0;                     ///< ν, stvk given by "young" and "poisson"
    std::string material_file;              ///< tabulated curves (JSON), relative to the scene file
    double thickness = 0;                   ///< h (m)
    double density = 0;                     ///< ρ (kg/m³)
    double bending = 0;                     ///< plate D or hinge k (N m); the parser sets the default
    std::string bending_model = "plate";    ///< "plate" | "dihedral" (cloth[].bending.model)
    double bending_poisson = 0;             ///< ν of plate bending; the parser sets the default
    std::string rest_shape = "flat";        ///< "flat" | "mesh": the shape in which bending is at rest
    double collision_offset = 0;            ///< distance kept from colliders (m); default thickness / 2
};

/// The keys of a "sliding-rods" entry (model/sliding_rods.hpp, thesis Fig. 4.2).
struct SlidingRodsDescription {
    double speed_b = 0.01;    ///< x velocity of rod B's end pins (m/s)
    double speed_c = -0.01;   ///< x velocity of rod C's end pins (m/s)
    double prestretch = 1.0;  ///< rod A's length over its rest length
};

/// One cloth entry. `type` decides which of the other fields are meaningful:
/// "woven" uses everything but `triangle`; "triangle" uses `triangle`,
/// `damping` (model, beta, and stretch = λ_d, shear = μ_d, bending = k_d
/// per unit thickness as parsed, see parse_triangle) and the placement keys.
struct ClothDescription {
    std::string type = "woven";
    std::string pattern = "plain";   ///< "plain" | "twill"
    std::array<int, 2> yarns{0, 0};  ///< crossings along the first and second axis
    double spacing = 0;              ///< m
    double radius = 0;               ///< m
    double density = 0;              ///< kg/m³
    std::array<double, 3> center{0, 0, 0};
    std::string plane = "xy";  ///< "xy" | "xz"
    StiffnessDescription stiffness;
    DampingDescription damping;
    FrictionDescription friction;
    ContactDescription contact;
    NodeSelection pins;
    std::vector<MovingPins> moving_pins;
    InitialVelocityDescription initial_velocity;
    double rotation = 0;          ///< woven: in-plane rotation (degrees) about the plane normal through center
    int on_top_of = -1;           ///< woven: index of the cloth entry this one rests on (-1: none)
    double layer_friction = 0.3;  ///< woven with on_top_of: μ between this layer and the one below
    /// woven with on_top_of: keep parallel-yarn contact on the segments of this
    /// layer's inter-layer contacts (true), or switch it off there as thesis
    /// Sec. 4.3.2 rule (a) does (false, the default), so that contacts slide
    /// past the crossings of the yarns they lie on.
    bool layer_parallel_contact = false;
    /// woven with on_top_of: "elements" (default): each contact's F_n is the
    /// normal force from the node's balance at the start of every step
    /// (YarnModel::layer_friction); "weight": F_n = weight of this layer and
    /// of the layers on it / #contacts, fixed (flat stacks only).
    std::string layer_normal_force = "elements";
    TriangleClothDescription triangle;  ///< "triangle" entries only
    SlidingRodsDescription rods;        ///< "sliding-rods" entries only (also spacing, radius, density, stiffness)
};

struct ColliderDescription {
    std::string type;                       ///< "sphere" | "plane"
    std::array<double, 3> center{0, 0, 0};  ///< sphere centre (m)
    double radius = 0;                      ///< sphere radius (m)
    std::array<double, 3> point{0, 0, 0};   ///< a point on the plane (m)
    std::array<double, 3> normal{0, 0, 1};  ///< unit normal of the plane
    std::array<double, 3> size{0, 0, 0};    ///< box edge lengths (m)
    double rounding = 0;                    ///< box edge and corner radius (m), below half the shortest edge
    double friction = 0;                    ///< μ
    double stiffness = 0;                   ///< penalty stiffness (N/m); the parser sets the default
};

/// Self- and cloth–cloth collision ("collision"; docs/collision.md).
struct CollisionDescription {
    bool enabled = false;
    double thickness = 0;  ///< contact distance (m); 0 until resolved: 2 x collision_offset (triangle cloth)
    double friction = 0;   ///< Coulomb coefficient between cloth surfaces
    double stiffness = 0;  ///< penalty stiffness (N/m); 0: 100 x mean node mass / time_step^2 (the model builder)
    bool create_contacts = false;  ///< yarns: collisions between layers become EoL contacts
    double parallel_angle = 0;     ///< yarns: degrees; pairs this close to parallel take their end points' parts
    double onset = 0;              ///< the penalty's onset width, a fraction of the thickness, in [0, 1)
};

struct OutputDescription {
    std::string csv;                                        ///< energy time series; empty = none
    int csv_every = 1;                                      ///< a CSV row every this many steps
    std::string frames;                                     ///< frame directory; empty = none
    int every = 1;                                          ///< a frame every this many steps
    std::vector<std::string> formats{"vtk", "vtp", "obj"};  ///< "vtk" | "vtp" | "obj" | "bcc"
    std::string vtp_encoding = "binary";                    ///< "binary" | "ascii": how .vtp frames store their arrays
};

/// A whole scene, every default resolved (no "auto" sentinels left).
struct SceneDescription {
    std::string name;
    std::string description;
    std::string source;  ///< the scene file for load_scene, empty otherwise
    double time_step = 0;
    double duration = 0;
    std::array<double, 3> gravity{0, 0, -9.81};
    SolverDescription solver;
    std::vector<ClothDescription> cloth;
    std::vector<ColliderDescription> colliders;
    CollisionDescription collision;
    OutputDescription output;
};

}  // namespace weft
