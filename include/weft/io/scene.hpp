#pragma once
/// @file scene.hpp
/// The scene description read by the scene runner `weft-run`, and its strict
/// JSON parser. Host-only.
///
/// Strict means: every key is known, every value has the expected type and
/// range, and every error names the full key path and the offending value,
/// e.g. `cloth[0].stiffnes: unknown key (did you mean "stiffness"?)` or
/// `cloth[0].spacing: must be > 0, got -0.001`. Nothing is silently ignored
/// or clamped, and no NaN or infinity can get through (DESIGN.md,
/// "Non-negotiables"). Errors are weft::InvalidInput.
///
/// ## Keys (SI units). `*` = required; everything else has the default shown.
///
/// ```
/// name              string   ""            free text (JSON has no comments)
/// description       string   ""            free text
/// time_step*        number   > 0, ≤ duration (s)
/// duration*         number   > 0 (s)
/// gravity           [3]      [0, 0, -9.81] (m/s²)
/// solver            object   all defaults
///   newton_iterations   int    1      ≥ 1; 1 = one linearized step per time step
///   newton_tolerance    number 1e-3   > 0; Newton stops early once the residual
///                                     force norm has dropped by this factor
///   pcg_tolerance       number 1e-5   0 < tol < 1, relative PCG residual
///   pcg_max_iterations  int    2000   ≥ 1
///   adaptive_time_step  bool   true   redo a failed step as two of dt/2 (recursively)
///   min_time_step       number time_step / 1024 (10 halvings); 0 < min ≤ time_step
///   preconditioner      string "block-jacobi" | "yarn-lines" (banded solves along
///                              every warp and weft yarn, added) | "multilevel"
///                              (smoothed-aggregation AMG V-cycle, yarns and triangles)
///   line_search_cuts    int    8      0..30; newton_iterations > 1 only: how often
///                                     the line search may halve a Newton update
///                                     before the attempt fails (then dt is halved)
///   line_search_expansions int 4      0..30; newton_iterations > 1 only: how often
///                                     a full update may be doubled where the
///                                     incremental potential is concave along it
///                                     (e.g. a yarn buckling within the step)
///   exact_hessians      bool   true   newton_iterations > 1 only: solve each
///                                     iteration with the exact element Hessians
///                                     first, the PSD-projected ones where that
///                                     system is not positive definite
///   linear              string "pcg" | "cholmod": the linear solver of each
///                                     Newton iteration; "cholmod" (direct,
///                                     SuiteSparse, host) needs a build with
///                                     CHOLMOD, else the stepper refuses it
///   stiffness_approximation string "auto" | "gauss-newton" | "projected": the
///                                     yarn bending and shear Jacobians
///                                     (StiffnessApproximation); "auto": projected
///                                     with newton_iterations > 1, else Gauss–Newton
/// cloth*            array of cloth objects, at least one
/// colliders         array of collider objects, default []
/// output            object   nothing is written by default
/// ```
///
/// A cloth object has a `type`*; only "woven" exists today (a "triangle" type
/// is planned: it will add its own keys, so an unknown type is an error that
/// names it). Woven cloth (a rectangular patch of yarn crossings, see
/// model/woven.hpp):
///
/// ```
/// type*             "woven"
/// pattern           "plain" | "twill"      "plain"
/// yarns*            [int, int] ≥ 2 each: crossings along the first and the
///                   second in-plane axis (node (i, j) has index j·yarns[0] + i)
/// spacing*          number > 0   rest distance between crossings (m)
/// radius*           number > 0   yarn radius (m)
/// density*          number > 0   yarn material density (kg/m³)
/// center            [3]          [0, 0, 0] (m), centre of the patch
/// plane             "xy" | "xz"  "xy"; first axis is x, second y or z
/// stiffness*        {stretch*, bending*, shear*}, each ≥ 0: k_e per mode
///                   (2017 Table 1: stretch N, bending N m², shear N)
/// damping           {model*, ...}  default {"model": "none"}
///   "strain-rate"       stretch, bending, shear ≥ 0, default 0: k_d per mode (2017 Eq. 6)
///   "rayleigh"          beta* ≥ 0 (s): f = −β K v, the papers' baseline
///   "rayleigh-analogy"  beta* ≥ 0 (s): k_d = β k_e per mode (2018 Eq. 12); the
///                       parser fills stretch, bending, shear with β k_e
///   "none"              no other key
/// friction          object
///   coefficient       number ≥ 0   0.3 (Coulomb μ at crossings; 0 disables)
///   normal_force      number ≥ 0   0.01 × stiffness.stretch (N): the tension of
///                     a yarn at 1 % strain, a stand-in for the crossing
///                     pressure; calibrate with an incline test (2021 Fig. 4.3)
///   anchor_stiffness  number ≥ 0   stiffness.stretch / spacing (N/m): as stiff
///                     as one rest segment of yarn
/// contact           object (parallel-yarn contact: a penalty on Δs)
///   stiffness         number ≥ 0   1000 × stiffness.stretch / spacing (N/m),
///                     the 2021 thesis rule for soft constraints (Sec. 4.3)
///   min_distance      number ≥ 0, < spacing   2 × radius (m): crossings on one
///                     yarn cannot come closer than the crossing yarn's diameter
/// pins              array of node selectors, default []: fixed nodes
/// moving_pins       array of {nodes*: node selectors, velocity*: [3] (m/s)},
///                   default []: pins moved by a script at constant velocity
///                   (a node in both lists moves)
/// initial_velocity  {linear: [3] (m/s), angular: [3] (rad/s)}, default zeros;
///                   v(x) = linear + angular × (x − center): the patch spins
///                   about its centre
/// ```
///
/// A node selector is a node-set name — "top-edge", "bottom-edge" (the
/// extremes of the second axis), "left-edge", "right-edge" (of the first
/// axis), "corners" — or a node index local to this patch,
/// 0 ≤ index < yarns[0]·yarns[1]; names and indices may be mixed.
///
/// A collider object:
///
/// ```
/// type*        "sphere" | "plane" | "box"
/// center*, radius* (> 0)       sphere (m)
/// point*, normal* (non-zero)   plane; the normal is stored normalized and
///                              points to the free side
/// center*, size* ([3], > 0)    axis-aligned box (m), e.g. a table
/// friction     number ≥ 0      0 (Coulomb μ against the collider)
/// stiffness    number > 0      1000 × max over cloth of stiffness.stretch / spacing (N/m)
/// ```
///
/// Output (paths are used as written: relative paths are relative to the
/// working directory of the runner, not to the scene file):
///
/// ```
/// csv        string, non-empty       "" (none): energies, one row per csv_every steps
/// csv_every  int ≥ 1                 1
/// frames     string, non-empty       "" (none): directory for yarn-curve frames
/// every      int ≥ 1                 1: a frame every this many steps (needs frames)
/// formats    array of "vtk" | "vtp" | "obj" | "bcc", non-empty, no repeats
///            ["vtk", "vtp", "obj"] (needs frames): legacy VTK per yarn set and
///            frame; "vtp" adds the VTK XML files and their .pvd time series
///            (ParaView's .pvd collections can only list XML files).
/// ```

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <weft/core/error.hpp>

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
    int newton_iterations = 1;
    double newton_tolerance = 1e-3;
    double pcg_tolerance = 1e-5;
    int pcg_max_iterations = 2000;
    bool adaptive_time_step = true;
    double min_time_step = 0;  ///< s; the parser sets time_step / 1024 when not given
    std::string preconditioner = "block-jacobi";  ///< "block-jacobi" | "yarn-lines" | "multilevel"
    bool eil = false;               ///< EIL nodes for yarns (thesis Sec. 4.3), "eil": {"enabled"}
    double eil_safety_factor = 0.1;   ///< safety distance / rest segment length
    double eil_contact_factor = 1000; ///< contact spring k / (k_s / rest segment length)
    bool eil_given = false;           ///< "eil" was in the scene (else on for every yarn scene)
    bool eil_lookahead = true;        ///< "eil": {"lookahead"}, see EilOptions::lookahead
    double eil_min_segment_factor = 0.25;  ///< "eil": {"min_segment_factor"}, see EilOptions
    bool eil_reset_arc_length = false;     ///< "eil": {"reset_arc_length"}: EilOptions::reset_on_eol
    bool eil_remove_pulling_contacts = true;  ///< "eil": {"remove_pulling_contacts"}: EilOptions
    double eil_pull_threshold = 1e-3;         ///< "eil": {"pull_threshold"}: EilOptions
    double max_speed = 1000;          ///< m/s; a faster velocity DoF fails the step (StepperOptions::max_speed)
    int line_search_cuts = 8;         ///< full Newton: halvings of an update before the attempt fails
    int line_search_expansions = 4;   ///< full Newton: doublings of an update along negative curvature
    bool exact_hessians = true;       ///< full Newton: exact element Hessians first (StepperOptions)
    std::string stiffness_approximation = "auto";  ///< "auto" | "gauss-newton" | "projected" (yarns)
    std::string linear = "pcg";       ///< "pcg" | "cholmod" (StepperOptions::linear)
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
    std::array<int, 2> resolution{0, 0};       ///< vertices along the first and second axis (grid)
    std::array<double, 2> size{0, 0};          ///< grid width and height (m)
    std::string diagonals = "alternating";     ///< "alternating" | "regular" (grid)
    std::string mesh;                          ///< OBJ file (instead of a grid), relative to the scene file
    double uv_scale = 1;                       ///< metres per OBJ texture unit
    std::string material_model = "stvk";       ///< "stvk" | "tabulated"
    double lambda = 0;                         ///< λ (Pa), stvk
    double mu = 0;                             ///< μ (Pa), stvk
    std::string material_file;                 ///< tabulated curves (JSON), relative to the scene file
    double thickness = 0;                      ///< h (m)
    double density = 0;                        ///< ρ (kg/m³)
    double bending = 0;                        ///< hinge stiffness k (N m); the parser sets the default
    double collision_offset = 0;               ///< distance kept from colliders (m); default thickness / 2
};

/// The keys of a "sliding-rods" entry (model/sliding_rods.hpp, thesis Fig. 4.2).
struct SlidingRodsDescription {
    double speed_b = 0.01;     ///< x velocity of rod B's end pins (m/s)
    double speed_c = -0.01;    ///< x velocity of rod C's end pins (m/s)
    double prestretch = 1.0;   ///< rod A's length over its rest length
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
    double rotation = 0;             ///< woven: in-plane rotation (degrees) about the plane normal through center
    int on_top_of = -1;              ///< woven: index of the cloth entry this one rests on (-1: none)
    double layer_friction = 0.3;     ///< woven with on_top_of: μ between this layer and the one below
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

struct OutputDescription {
    std::string csv;                          ///< energy time series; empty = none
    int csv_every = 1;                        ///< a CSV row every this many steps
    std::string frames;                       ///< frame directory; empty = none
    int every = 1;                            ///< a frame every this many steps
    std::vector<std::string> formats{"vtk", "vtp", "obj"};  ///< "vtk" | "vtp" | "obj" | "bcc"
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
    OutputDescription output;
};

namespace scene_detail {

using json = nlohmann::json;

inline std::string child_path(const std::string& parent, const std::string& key)
{
    return parent.empty() ? key : parent + "." + key;
}

inline std::string element_path(const std::string& parent, std::size_t index)
{
    return parent + "[" + std::to_string(index) + "]";
}

/// The shortest of 15..17 significant digits that reads back as `value`.
inline std::string format_number(double value)
{
    std::string text;
    for (int digits = 15; digits <= 17; ++digits) {
        std::ostringstream os;
        os.imbue(std::locale::classic());
        os.precision(digits);
        os << value;
        text = os.str();
        std::istringstream back(text);
        back.imbue(std::locale::classic());
        double read = 0;
        if (!std::isfinite(value) || ((back >> read) && read == value)) break;
    }
    return text;
}

/// "string \"fast\"", "number -0.001", "array of 2 elements", ... for messages.
inline std::string describe_value(const json& j)
{
    switch (j.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::boolean:
            return std::string("boolean ") + (j.get<bool>() ? "true" : "false");
        case json::value_t::string:
            return "string " + j.dump();
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
            return "number " + j.dump();
        case json::value_t::number_float:
            return "number " + format_number(j.get<double>());
        case json::value_t::array:
            return "array of " + std::to_string(j.size()) + (j.size() == 1 ? " element" : " elements");
        case json::value_t::object:
            return "object";
        default:
            return j.type_name();
    }
}

[[noreturn]] inline void fail(const std::string& path, const std::string& problem)
{
    throw InvalidInput(path + ": " + problem);
}

inline std::size_t edit_distance(const std::string& a, const std::string& b)
{
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

inline std::string quoted_list(const std::vector<std::string>& items)
{
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", \"" : "\"") + items[i] + "\"";
    return out;
}

// ---------------------------------------------------------------------------
// Scalar readers: each takes the value and its full path.

inline double read_number(const json& j, const std::string& path)
{
    if (!j.is_number()) fail(path, "expected a number, got " + describe_value(j));
    const double value = j.get<double>();
    if (!std::isfinite(value)) fail(path, "must be a finite number, got " + format_number(value));
    return value;
}

inline double read_positive(const json& j, const std::string& path)
{
    const double value = read_number(j, path);
    if (!(value > 0)) fail(path, "must be > 0, got " + format_number(value));
    return value;
}

inline double read_non_negative(const json& j, const std::string& path)
{
    const double value = read_number(j, path);
    if (!(value >= 0)) fail(path, "must be >= 0, got " + format_number(value));
    return value;
}

inline int read_integer(const json& j, const std::string& path, int minimum)
{
    if (!j.is_number_integer()) {
        const std::string what = j.is_number_float() ? " (write integers without a decimal point or exponent)" : "";
        fail(path, "expected an integer, got " + describe_value(j) + what);
    }
    const bool too_large = j.is_number_unsigned()
                               ? j.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<int>::max())
                               : j.get<std::int64_t>() > std::numeric_limits<int>::max();
    const bool too_small = !j.is_number_unsigned() && j.get<std::int64_t>() < std::numeric_limits<int>::min();
    if (too_large || too_small) fail(path, "integer out of range, got " + j.dump());
    const int value = j.get<int>();
    if (value < minimum) fail(path, "must be >= " + std::to_string(minimum) + ", got " + std::to_string(value));
    return value;
}

inline bool read_bool(const json& j, const std::string& path)
{
    if (!j.is_boolean()) fail(path, "expected a boolean (true or false), got " + describe_value(j));
    return j.get<bool>();
}

inline std::string read_string(const json& j, const std::string& path)
{
    if (!j.is_string()) fail(path, "expected a string, got " + describe_value(j));
    return j.get<std::string>();
}

inline std::string read_non_empty_string(const json& j, const std::string& path)
{
    std::string value = read_string(j, path);
    if (value.empty()) fail(path, "must be a non-empty string");
    return value;
}

inline std::string read_choice(const json& j, const std::string& path, const std::vector<std::string>& choices,
                               const char* what)
{
    const std::string value = read_string(j, path);
    if (std::find(choices.begin(), choices.end(), value) == choices.end())
        fail(path,
             std::string("unknown ") + what + " \"" + value + "\" (expected one of " + quoted_list(choices) + ")");
    return value;
}

inline std::array<double, 3> read_vector3(const json& j, const std::string& path)
{
    if (!j.is_array() || j.size() != 3) fail(path, "expected an array of 3 numbers, got " + describe_value(j));
    std::array<double, 3> v{};
    for (std::size_t k = 0; k < 3; ++k) v[k] = read_number(j[k], element_path(path, k));
    return v;
}

// ---------------------------------------------------------------------------

/// A JSON object at a known path: lookups by key, and the strict unknown-key
/// check, which runs before any value is read so that a misspelt key is
/// reported as such rather than as a missing one.
class Object {
public:
    Object(const json& j, std::string path) : m_json(j), m_path(std::move(path))
    {
        if (!j.is_object()) fail(m_path.empty() ? "scene" : m_path, "expected an object, got " + describe_value(j));
    }

    /// Throws for every key not in `allowed`, naming each and suggesting the
    /// nearest allowed key.
    void allow_only(const std::vector<std::string>& allowed, const std::string& context = "") const
    {
        std::string message;
        for (auto it = m_json.begin(); it != m_json.end(); ++it) {
            if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
            std::string best;
            std::size_t best_distance = std::numeric_limits<std::size_t>::max();
            for (const std::string& candidate : allowed) {
                const std::size_t d = edit_distance(it.key(), candidate);
                if (d < best_distance) best_distance = d, best = candidate;
            }
            if (!message.empty()) message += "; ";
            message += path(it.key()) + ": unknown key" + context;
            if (best_distance <= std::max<std::size_t>(2, it.key().size() / 3))
                message += " (did you mean \"" + best + "\"?)";
            else
                message += " (allowed: " + quoted_list(allowed) + ")";
        }
        if (!message.empty()) throw InvalidInput(message);
    }

    bool has(const std::string& key) const { return m_json.contains(key); }
    std::string path(const std::string& key) const { return child_path(m_path, key); }
    const std::string& path() const { return m_path; }

    const json& required(const std::string& key) const
    {
        const auto it = m_json.find(key);
        if (it == m_json.end()) fail(path(key), "required key is missing");
        return *it;
    }

    template <class Reader>
    auto get(const std::string& key, Reader reader) const
    {
        return reader(required(key), path(key));
    }

    template <class Reader, class Value>
    Value get_or(const std::string& key, Reader reader, Value fallback) const
    {
        const auto it = m_json.find(key);
        return it == m_json.end() ? fallback : Value(reader(*it, path(key)));
    }

private:
    const json& m_json;
    std::string m_path;
};

inline const std::vector<std::string>& node_set_names()
{
    static const std::vector<std::string> names{"top-edge", "bottom-edge", "left-edge", "right-edge", "corners"};
    return names;
}

inline NodeSelection read_node_selection(const json& j, const std::string& path, int node_count)
{
    if (!j.is_array()) fail(path, "expected an array of node-set names and node indices, got " + describe_value(j));
    NodeSelection selection;
    for (std::size_t k = 0; k < j.size(); ++k) {
        const std::string item = element_path(path, k);
        if (j[k].is_string()) {
            selection.sets.push_back(read_choice(j[k], item, node_set_names(), "node set"));
        } else if (j[k].is_number_integer()) {
            const int node = read_integer(j[k], item, 0);
            if (node >= node_count)
                fail(item, "node index " + std::to_string(node) + " is out of range: the patch has " +
                               std::to_string(node_count) + " nodes (0.." + std::to_string(node_count - 1) + ")");
            selection.nodes.push_back(node);
        } else {
            fail(item, "expected a node-set name (" + quoted_list(node_set_names()) + ") or a node index, got " +
                           describe_value(j[k]));
        }
    }
    return selection;
}

inline SolverDescription parse_solver(const json& j, const std::string& path, double time_step)
{
    const Object o(j, path);
    o.allow_only({"newton_iterations", "newton_tolerance", "pcg_tolerance", "pcg_max_iterations", "adaptive_time_step",
                  "min_time_step", "preconditioner", "eil", "max_speed", "line_search_cuts", "line_search_expansions",
                  "exact_hessians", "linear", "stiffness_approximation"});
    SolverDescription s;
    auto at_least_one = [](const json& v, const std::string& p) { return read_integer(v, p, 1); };
    s.newton_iterations = o.get_or("newton_iterations", at_least_one, s.newton_iterations);
    s.newton_tolerance = o.get_or("newton_tolerance", read_positive, s.newton_tolerance);
    s.pcg_tolerance = o.get_or("pcg_tolerance", read_positive, s.pcg_tolerance);
    if (!(s.pcg_tolerance < 1))
        fail(o.path("pcg_tolerance"), "must be < 1 (a relative residual), got " + format_number(s.pcg_tolerance));
    s.pcg_max_iterations = o.get_or("pcg_max_iterations", at_least_one, s.pcg_max_iterations);
    s.adaptive_time_step = o.get_or("adaptive_time_step", read_bool, s.adaptive_time_step);
    s.preconditioner = o.get_or(
        "preconditioner",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, {"block-jacobi", "yarn-lines", "multilevel"}, "preconditioner");
        },
        s.preconditioner);
    s.linear = o.get_or(
        "linear", [](const json& v, const std::string& p) { return read_choice(v, p, {"pcg", "cholmod"}, "linear solver"); },
        s.linear);
    s.stiffness_approximation = o.get_or(
        "stiffness_approximation",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, {"auto", "gauss-newton", "projected"}, "stiffness approximation");
        },
        s.stiffness_approximation);
    s.min_time_step = o.get_or("min_time_step", read_positive, time_step / 1024);
    s.max_speed = o.get_or("max_speed", read_positive, s.max_speed);
    // Line-search halvings and doublings of one Newton update: 0..30.
    auto up_to_30 = [](const json& v, const std::string& p) {
        const int count = read_integer(v, p, 0);
        if (count > 30) fail(p, "must be <= 30, got " + std::to_string(count));
        return count;
    };
    s.line_search_cuts = o.get_or("line_search_cuts", up_to_30, s.line_search_cuts);
    s.line_search_expansions = o.get_or("line_search_expansions", up_to_30, s.line_search_expansions);
    s.exact_hessians = o.get_or("exact_hessians", read_bool, s.exact_hessians);
    if (o.has("eil")) {
        const Object e(o.required("eil"), o.path("eil"));
        e.allow_only({"enabled", "safety_factor", "contact_factor", "lookahead", "min_segment_factor",
                      "reset_arc_length", "remove_pulling_contacts", "pull_threshold"});
        s.eil = e.get_or("enabled", read_bool, true);
        s.eil_given = true;
        s.eil_safety_factor = e.get_or("safety_factor", read_positive, s.eil_safety_factor);
        if (!(s.eil_safety_factor < 1))
            fail(e.path("safety_factor"), "must be < 1 (a fraction of the rest segment length), got " +
                                              format_number(s.eil_safety_factor));
        s.eil_contact_factor = e.get_or("contact_factor", read_positive, s.eil_contact_factor);
        s.eil_lookahead = e.get_or("lookahead", read_bool, s.eil_lookahead);
        s.eil_min_segment_factor = e.get_or("min_segment_factor", read_positive, s.eil_min_segment_factor);
        if (!(s.eil_min_segment_factor < 1))
            fail(e.path("min_segment_factor"), "must be < 1 (a fraction of the safety distance), got " +
                                                   format_number(s.eil_min_segment_factor));
        s.eil_reset_arc_length = e.get_or("reset_arc_length", read_bool, s.eil_reset_arc_length);
        s.eil_remove_pulling_contacts =
            e.get_or("remove_pulling_contacts", read_bool, s.eil_remove_pulling_contacts);
        s.eil_pull_threshold = e.get_or("pull_threshold", read_non_negative, s.eil_pull_threshold);
        if (!(s.eil_pull_threshold < 1))
            fail(e.path("pull_threshold"), "must be < 1 (a fraction of the forces a contact balances), got " +
                                               format_number(s.eil_pull_threshold));
    }
    if (s.min_time_step > time_step)
        fail(o.path("min_time_step"),
             "must be <= time_step = " + format_number(time_step) + ", got " + format_number(s.min_time_step));
    return s;
}

inline StiffnessDescription parse_stiffness(const json& j, const std::string& path)
{
    const Object o(j, path);
    o.allow_only({"stretch", "bending", "shear"});
    StiffnessDescription s;
    s.stretch = o.get("stretch", read_non_negative);
    s.bending = o.get("bending", read_non_negative);
    s.shear = o.get("shear", read_non_negative);
    return s;
}

inline DampingDescription parse_damping(const json& j, const std::string& path, const StiffnessDescription& stiffness)
{
    const Object o(j, path);
    static const std::vector<std::string> models{"strain-rate", "rayleigh", "rayleigh-analogy", "none"};
    if (!o.has("model")) o.allow_only({"model", "stretch", "bending", "shear", "beta"});
    DampingDescription d;
    d.model = read_choice(o.required("model"), o.path("model"), models, "damping model");
    const std::string context = " for damping model \"" + d.model + "\"";
    if (d.model == "strain-rate") {
        o.allow_only({"model", "stretch", "bending", "shear"}, context);
        d.stretch = o.get_or("stretch", read_non_negative, 0.0);
        d.bending = o.get_or("bending", read_non_negative, 0.0);
        d.shear = o.get_or("shear", read_non_negative, 0.0);
    } else if (d.model == "rayleigh") {
        o.allow_only({"model", "beta"}, context);
        d.beta = o.get("beta", read_non_negative);
    } else if (d.model == "rayleigh-analogy") {
        o.allow_only({"model", "beta"}, context);
        d.beta = o.get("beta", read_non_negative);
        // 2018 Eq. (12): k_d = β k_e for each mode.
        d.stretch = d.beta * stiffness.stretch;
        d.bending = d.beta * stiffness.bending;
        d.shear = d.beta * stiffness.shear;
    } else {
        o.allow_only({"model"}, context);
    }
    return d;
}

inline const std::vector<std::string>& triangle_keys()
{
    static const std::vector<std::string> keys{
        "type",     "resolution", "size",    "diagonals", "mesh",        "uv_scale",        "material",
        "damping",  "center",     "plane",   "pins",      "moving_pins", "initial_velocity", "collision_offset"};
    return keys;
}

/// Shared by woven and triangle entries: pins, moving pins, initial velocity.
inline void parse_placement(const Object& o, ClothDescription& c, int node_count)
{
    if (o.has("pins")) c.pins = read_node_selection(o.required("pins"), o.path("pins"), node_count);
    if (o.has("moving_pins")) {
        const json& list = o.required("moving_pins");
        const std::string list_path = o.path("moving_pins");
        if (!list.is_array())
            fail(list_path, "expected an array of {nodes, velocity} objects, got " + describe_value(list));
        for (std::size_t k = 0; k < list.size(); ++k) {
            const Object m(list[k], element_path(list_path, k));
            m.allow_only({"nodes", "velocity"});
            MovingPins pins;
            pins.nodes = read_node_selection(m.required("nodes"), m.path("nodes"), node_count);
            pins.velocity = m.get("velocity", read_vector3);
            c.moving_pins.push_back(pins);
        }
    }
    if (o.has("initial_velocity")) {
        const Object v(o.required("initial_velocity"), o.path("initial_velocity"));
        v.allow_only({"linear", "angular"});
        c.initial_velocity.linear = v.get_or("linear", read_vector3, c.initial_velocity.linear);
        c.initial_velocity.angular = v.get_or("angular", read_vector3, c.initial_velocity.angular);
    }
}

inline const std::vector<std::string>& woven_keys()
{
    static const std::vector<std::string> keys{"type",     "pattern", "yarns", "spacing",     "radius",
                                               "density",  "center",  "plane", "stiffness",   "damping",
                                               "friction", "contact", "pins",  "moving_pins", "initial_velocity",
                                               "on_top_of", "layer_friction", "layer_parallel_contact", "layer_normal_force",
                                               "rotation"};
    return keys;
}

inline ClothDescription parse_woven(const Object& o)
{
    o.allow_only(woven_keys());
    ClothDescription c;
    c.type = "woven";
    c.pattern = o.get_or(
        "pattern",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, {"plain", "twill"}, "weave pattern");
        },
        std::string("plain"));

    const json& yarns = o.required("yarns");
    const std::string yarns_path = o.path("yarns");
    if (!yarns.is_array() || yarns.size() != 2)
        fail(yarns_path, "expected an array of 2 integers (crossings along the first and second axis), got " +
                             describe_value(yarns));
    for (std::size_t k = 0; k < 2; ++k) c.yarns[k] = read_integer(yarns[k], element_path(yarns_path, k), 2);
    if (std::int64_t(c.yarns[0]) * c.yarns[1] > std::numeric_limits<int>::max())
        fail(yarns_path, "too many nodes: " + std::to_string(c.yarns[0]) + " x " + std::to_string(c.yarns[1]));
    const int node_count = c.yarns[0] * c.yarns[1];

    c.spacing = o.get("spacing", read_positive);
    c.radius = o.get("radius", read_positive);
    c.density = o.get("density", read_positive);
    c.center = o.get_or("center", read_vector3, c.center);
    c.plane = o.get_or(
        "plane",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, {"xy", "xz"}, "plane");
        },
        std::string("xy"));
    c.rotation = o.get_or("rotation", read_number, c.rotation);
    c.stiffness = o.get("stiffness", parse_stiffness);
    if (o.has("damping")) c.damping = parse_damping(o.required("damping"), o.path("damping"), c.stiffness);

    // Defaults derived from the stiffness and the geometry (see the file comment).
    const double segment_stiffness = c.stiffness.stretch / c.spacing;
    c.friction.normal_force = 0.01 * c.stiffness.stretch;
    c.friction.anchor_stiffness = segment_stiffness;
    if (o.has("friction")) {
        const Object f(o.required("friction"), o.path("friction"));
        f.allow_only({"coefficient", "normal_force", "anchor_stiffness"});
        c.friction.coefficient = f.get_or("coefficient", read_non_negative, c.friction.coefficient);
        c.friction.normal_force = f.get_or("normal_force", read_non_negative, c.friction.normal_force);
        c.friction.anchor_stiffness = f.get_or("anchor_stiffness", read_non_negative, c.friction.anchor_stiffness);
    }

    c.contact.stiffness = 1000 * segment_stiffness;
    c.contact.min_distance = 2 * c.radius;
    bool min_distance_given = false;
    if (o.has("contact")) {
        const Object k(o.required("contact"), o.path("contact"));
        k.allow_only({"stiffness", "min_distance"});
        c.contact.stiffness = k.get_or("stiffness", read_non_negative, c.contact.stiffness);
        min_distance_given = k.has("min_distance");
        c.contact.min_distance = k.get_or("min_distance", read_non_negative, c.contact.min_distance);
    }
    if (!(c.contact.min_distance < c.spacing)) {
        const std::string path = child_path(o.path("contact"), "min_distance");
        const std::string value = format_number(c.contact.min_distance);
        fail(path, (min_distance_given ? "got " + value : "the default 2 x radius = " + value) +
                       ", which is not below spacing = " + format_number(c.spacing) +
                       ": the contact penalty would push at rest" + (min_distance_given ? "" : "; set it explicitly"));
    }

    parse_placement(o, c, node_count);
    if (o.has("on_top_of")) c.on_top_of = o.get("on_top_of", [](const json& v, const std::string& p) {
        return read_integer(v, p, 0);
    });
    if (o.has("layer_friction")) {
        if (c.on_top_of < 0) fail(o.path("layer_friction"), "needs \"on_top_of\" (the layer below)");
        c.layer_friction = o.get("layer_friction", read_non_negative);
    }
    if (o.has("layer_parallel_contact")) {
        if (c.on_top_of < 0) fail(o.path("layer_parallel_contact"), "needs \"on_top_of\" (the layer below)");
        c.layer_parallel_contact = o.get("layer_parallel_contact", read_bool);
    }
    if (o.has("layer_normal_force")) {
        if (c.on_top_of < 0) fail(o.path("layer_normal_force"), "needs \"on_top_of\" (the layer below)");
        c.layer_normal_force = o.get("layer_normal_force", [](const json& v, const std::string& p) {
            return read_choice(v, p, {"elements", "weight"}, "normal force rule");
        });
    }
    return c;
}

/// A "triangle" cloth entry (see docs/triangles.md). Moduli are 3D (Pa,
/// Pa·s) and are multiplied by the thickness when the model is built;
/// damping is stored in DampingDescription as stretch = λ_d, shear = μ_d
/// (Pa·s) and bending = k_d (N m s).
inline ClothDescription parse_triangle(const Object& o)
{
    o.allow_only(triangle_keys());
    ClothDescription c;
    c.type = "triangle";
    TriangleClothDescription& t = c.triangle;
    const bool grid = o.has("resolution") || o.has("size");
    if (o.has("mesh") && grid)
        fail(o.path("mesh"), "give either \"mesh\" or \"resolution\" and \"size\", not both");
    int node_count = std::numeric_limits<int>::max();  // a mesh's vertex count is checked when it is loaded
    if (o.has("mesh")) {
        t.mesh = o.get("mesh", read_non_empty_string);
        t.uv_scale = o.get_or("uv_scale", read_positive, t.uv_scale);
        if (o.has("diagonals")) fail(o.path("diagonals"), "applies to grids (resolution, size), not to a mesh");
    } else {
        const json& res = o.required("resolution");
        const std::string res_path = o.path("resolution");
        if (!res.is_array() || res.size() != 2)
            fail(res_path, "expected an array of 2 integers (vertices along the first and second axis), got " +
                               describe_value(res));
        for (std::size_t k = 0; k < 2; ++k) t.resolution[k] = read_integer(res[k], element_path(res_path, k), 2);
        if (std::int64_t(t.resolution[0]) * t.resolution[1] > std::numeric_limits<int>::max() / 3)
            fail(res_path, "too many vertices: " + std::to_string(t.resolution[0]) + " x " +
                               std::to_string(t.resolution[1]));
        node_count = t.resolution[0] * t.resolution[1];
        const json& size = o.required("size");
        const std::string size_path = o.path("size");
        if (!size.is_array() || size.size() != 2)
            fail(size_path, "expected an array of 2 numbers (width, height in m), got " + describe_value(size));
        for (std::size_t k = 0; k < 2; ++k) t.size[k] = read_positive(size[k], element_path(size_path, k));
        t.diagonals = o.get_or(
            "diagonals",
            [](const json& v, const std::string& p) {
                return read_choice(v, p, {"alternating", "regular"}, "diagonal pattern");
            },
            t.diagonals);
        if (o.has("uv_scale")) fail(o.path("uv_scale"), "applies to a mesh, not to a grid");
    }
    c.center = o.get_or("center", read_vector3, c.center);
    c.plane = o.get_or(
        "plane",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, {"xy", "xz"}, "plane");
        },
        std::string("xy"));

    const Object m(o.required("material"), o.path("material"));
    static const std::vector<std::string> models{"stvk", "tabulated"};
    if (!m.has("model")) m.allow_only({"model", "lambda", "mu", "thickness", "density", "bending", "file"});
    t.material_model = read_choice(m.required("model"), m.path("model"), models, "material model");
    const std::string context = " for material model \"" + t.material_model + "\"";
    t.thickness = m.get("thickness", read_positive);
    t.density = m.get("density", read_positive);
    if (t.material_model == "stvk") {
        m.allow_only({"model", "lambda", "mu", "thickness", "density", "bending"}, context);
        t.lambda = m.get("lambda", read_number);
        t.mu = m.get("mu", read_non_negative);
        if (!(t.lambda + t.mu >= 0))
            fail(m.path("lambda"), "lambda + mu must be >= 0 (a convex StVK density), got lambda = " +
                                       format_number(t.lambda) + ", mu = " + format_number(t.mu));
        // Plate bending stiffness D = E h³ / (12 (1 − ν²)) from the Lamé parameters.
        const double e = t.lambda + t.mu > 0 ? t.mu * (3 * t.lambda + 2 * t.mu) / (t.lambda + t.mu) : 0.0;
        const double nu = t.lambda + t.mu > 0 ? t.lambda / (2 * (t.lambda + t.mu)) : 0.0;
        t.bending = e * t.thickness * t.thickness * t.thickness / (12 * (1 - nu * nu));
    } else {
        m.allow_only({"model", "file", "thickness", "density", "bending"}, context);
        t.material_file = m.get("file", read_non_empty_string);
        t.bending = 0;
        if (!m.has("bending"))
            fail(m.path("bending"), "is required for the tabulated model (no Lamé parameters to derive it from)");
    }
    t.bending = m.get_or("bending", read_non_negative, t.bending);
    t.collision_offset = o.get_or("collision_offset", read_non_negative, t.thickness / 2);

    if (o.has("damping")) {
        const Object d(o.required("damping"), o.path("damping"));
        static const std::vector<std::string> damping_models{"strain-rate", "rayleigh", "rayleigh-analogy", "none"};
        if (!d.has("model")) d.allow_only({"model", "lambda", "mu", "bending", "beta"});
        c.damping.model = read_choice(d.required("model"), d.path("model"), damping_models, "damping model");
        const std::string dcontext = " for damping model \"" + c.damping.model + "\"";
        if (c.damping.model == "strain-rate") {
            d.allow_only({"model", "lambda", "mu", "bending"}, dcontext);
            c.damping.stretch = d.get_or("lambda", read_number, 0.0);
            c.damping.shear = d.get_or("mu", read_non_negative, 0.0);
            c.damping.bending = d.get_or("bending", read_non_negative, 0.0);
            if (!(c.damping.stretch + c.damping.shear >= 0))
                fail(d.path("lambda"), "lambda + mu must be >= 0 (a convex dissipation potential), got lambda = " +
                                           format_number(c.damping.stretch) + ", mu = " + format_number(c.damping.shear));
        } else if (c.damping.model == "rayleigh" || c.damping.model == "rayleigh-analogy") {
            d.allow_only({"model", "beta"}, dcontext);
            c.damping.beta = d.get("beta", read_non_negative);
            if (c.damping.model == "rayleigh-analogy") {
                if (t.material_model != "stvk")
                    fail(d.path("model"), "\"rayleigh-analogy\" needs an stvk material (its λ, μ), got \"" +
                                              t.material_model + "\"; use \"strain-rate\" with explicit values");
                // 2018 Eq. (12): (λ_d, μ_d) = β (λ, μ); membrane only, like the Rayleigh baseline
                c.damping.stretch = c.damping.beta * t.lambda;
                c.damping.shear = c.damping.beta * t.mu;
            }
        } else {
            d.allow_only({"model"}, dcontext);
        }
    }
    parse_placement(o, c, node_count);
    return c;
}

/// A "sliding-rods" entry: the degenerate-sliding setup (model/sliding_rods.hpp).
inline ClothDescription parse_sliding_rods(const Object& o)
{
    o.allow_only({"type", "spacing", "radius", "density", "stiffness", "speed_b", "speed_c", "prestretch"});
    ClothDescription c;
    c.type = "sliding-rods";
    c.spacing = o.get_or("spacing", read_positive, 1e-3);
    c.radius = o.get_or("radius", read_positive, 2.5e-4);
    c.density = o.get_or("density", read_positive, 130.0);
    c.stiffness = o.has("stiffness") ? parse_stiffness(o.required("stiffness"), o.path("stiffness"))
                                     : StiffnessDescription{500, 1e-5, 0};
    c.rods.speed_b = o.get_or("speed_b", read_number, c.rods.speed_b);
    c.rods.speed_c = o.get_or("speed_c", read_number, c.rods.speed_c);
    if (!(c.rods.speed_b > c.rods.speed_c))
        fail(o.path("speed_b"), "must exceed speed_c so that rods B and C approach each other, got speed_b = " +
                                    format_number(c.rods.speed_b) + ", speed_c = " + format_number(c.rods.speed_c));
    c.rods.prestretch = o.get_or("prestretch", read_positive, c.rods.prestretch);
    c.friction.coefficient = 0;
    return c;
}

inline ClothDescription parse_cloth(const json& j, const std::string& path)
{
    const Object o(j, path);
    // Without a type we cannot know the allowed keys; check against the woven
    // ones so that a misspelt "type" is reported as such.
    if (!o.has("type")) o.allow_only(woven_keys());
    const std::string type = o.get("type", read_string);
    if (type == "woven") return parse_woven(o);
    if (type == "triangle") return parse_triangle(o);
    if (type == "sliding-rods") return parse_sliding_rods(o);
    fail(o.path("type"), "unknown cloth type \"" + type + "\" (supported: \"woven\", \"triangle\", \"sliding-rods\")");
}

inline ColliderDescription parse_collider(const json& j, const std::string& path, double default_stiffness)
{
    const Object o(j, path);
    static const std::vector<std::string> types{"sphere", "plane", "box"};
    if (!o.has("type"))
        o.allow_only({"type", "center", "radius", "point", "normal", "size", "rounding", "friction", "stiffness"});
    ColliderDescription c;
    c.type = read_choice(o.required("type"), o.path("type"), types, "collider type");
    const std::string context = " for collider type \"" + c.type + "\"";
    if (c.type == "sphere") {
        o.allow_only({"type", "center", "radius", "friction", "stiffness"}, context);
        c.center = o.get("center", read_vector3);
        c.radius = o.get("radius", read_positive);
    } else if (c.type == "box") {
        o.allow_only({"type", "center", "size", "rounding", "friction", "stiffness"}, context);
        c.center = o.get("center", read_vector3);
        const json& size = o.required("size");
        const std::string size_path = o.path("size");
        if (!size.is_array() || size.size() != 3)
            fail(size_path, "expected an array of 3 positive numbers (edge lengths in m), got " + describe_value(size));
        for (std::size_t k = 0; k < 3; ++k) c.size[k] = read_positive(size[k], element_path(size_path, k));
        c.rounding = o.get_or("rounding", read_non_negative, 0.0);
        const double shortest = std::min(c.size[0], std::min(c.size[1], c.size[2]));
        if (!(c.rounding < 0.5 * shortest))
            fail(o.path("rounding"), "must be below half the shortest box edge (" + format_number(0.5 * shortest) +
                                         " m), got " + format_number(c.rounding));
    } else {
        o.allow_only({"type", "point", "normal", "friction", "stiffness"}, context);
        c.point = o.get("point", read_vector3);
        const std::array<double, 3> n = o.get("normal", read_vector3);
        const double length = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (!(length > 0) || !std::isfinite(length))
            fail(o.path("normal"), "must be a non-zero finite vector, got [" + format_number(n[0]) + ", " +
                                       format_number(n[1]) + ", " + format_number(n[2]) + "]");
        c.normal = {n[0] / length, n[1] / length, n[2] / length};
    }
    c.friction = o.get_or("friction", read_non_negative, 0.0);
    if (o.has("stiffness")) {
        c.stiffness = o.get("stiffness", read_positive);
    } else {
        if (!(default_stiffness > 0))
            fail(o.path("stiffness"),
                 "the default (1000 x stretch stiffness / spacing of the stiffest woven cloth, 1000 x (lambda + "
                 "2 mu) x thickness of the stiffest stvk cloth) is 0 here (zero stiffness, or only tabulated "
                 "materials); set it explicitly");
        c.stiffness = default_stiffness;
    }
    return c;
}

inline OutputDescription parse_output(const json& j, const std::string& path)
{
    const Object o(j, path);
    o.allow_only({"csv", "csv_every", "frames", "every", "formats"});
    OutputDescription out;
    auto at_least_one = [](const json& v, const std::string& p) { return read_integer(v, p, 1); };
    out.csv = o.get_or("csv", read_non_empty_string, std::string());
    out.csv_every = o.get_or("csv_every", at_least_one, out.csv_every);
    out.frames = o.get_or("frames", read_non_empty_string, std::string());
    out.every = o.get_or("every", at_least_one, out.every);
    if (o.has("formats")) {
        const json& formats = o.required("formats");
        const std::string formats_path = o.path("formats");
        if (!formats.is_array() || formats.empty())
            fail(formats_path, "expected a non-empty array of format names, got " + describe_value(formats));
        out.formats.clear();
        for (std::size_t k = 0; k < formats.size(); ++k) {
            const std::string item = element_path(formats_path, k);
            const std::string format = read_choice(formats[k], item, {"vtk", "vtp", "obj", "bcc"}, "frame format");
            if (std::find(out.formats.begin(), out.formats.end(), format) != out.formats.end())
                fail(item, "format \"" + format + "\" is listed twice");
            out.formats.push_back(format);
        }
    }
    if (out.frames.empty()) {
        for (const char* key : {"every", "formats"})
            if (o.has(key)) fail(o.path(key), "given, but output.frames (the directory for frames) is not set");
    }
    if (out.csv.empty() && o.has("csv_every"))
        fail(o.path("csv_every"), "given, but output.csv (the CSV file) is not set");
    return out;
}

/// Tracks the key path while nlohmann parses text, to reject duplicate keys
/// (nlohmann keeps the last one silently) and to name the key whose number
/// overflows a double.
class KeyPathTracker {
public:
    bool operator()(int /*depth*/, json::parse_event_t event, json& parsed)
    {
        switch (event) {
            case json::parse_event_t::object_start:
            case json::parse_event_t::array_start:
                m_frames.push_back(Frame{event == json::parse_event_t::object_start, value_path(), {}, {}, 0});
                break;
            case json::parse_event_t::object_end:
            case json::parse_event_t::array_end:
                m_frames.pop_back();
                break;
            case json::parse_event_t::key: {
                Frame& f = m_frames.back();
                const std::string key = parsed.get<std::string>();
                if (std::find(f.keys.begin(), f.keys.end(), key) != f.keys.end())
                    fail(child_path(f.path, key), "duplicate key (JSON objects keep only one value per key)");
                f.keys.push_back(key);
                f.key = key;
                break;
            }
            case json::parse_event_t::value:
                value_path();
                break;
        }
        return true;
    }

    /// The path of the value being read when parsing stopped.
    std::string current_path() const
    {
        if (m_frames.empty()) return "scene";
        const Frame& f = m_frames.back();
        if (f.object) return f.key.empty() ? (f.path.empty() ? "scene" : f.path) : child_path(f.path, f.key);
        return element_path(f.path, f.next_index);
    }

private:
    struct Frame {
        bool object;
        std::string path;
        std::vector<std::string> keys;
        std::string key;
        std::size_t next_index;
    };

    // Path of a value that starts now; advances the parent array's index.
    std::string value_path()
    {
        if (m_frames.empty()) return "";
        Frame& f = m_frames.back();
        if (f.object) return child_path(f.path, f.key);
        return element_path(f.path, f.next_index++);
    }

    std::vector<Frame> m_frames;
};

/// Parses JSON text, rejecting duplicate keys (which JSON libraries keep
/// silently). `source` names the text in errors: "<source>: JSON syntax
/// error at byte N: ..." or "<source>: <key path>: <problem>".
inline json parse_json_text(const std::string& text, const std::string& source)
{
    KeyPathTracker tracker;
    try {
        return json::parse(text, std::ref(tracker));
    } catch (const json::parse_error& e) {
        throw InvalidInput(source + ": JSON syntax error at byte " + std::to_string(e.byte) + ": " + e.what());
    } catch (const json::out_of_range& e) {
        // nlohmann rejects numbers that overflow a double (e.g. 1e999).
        throw InvalidInput(source + ": " + tracker.current_path() + ": must be a finite number (" + e.what() + ")");
    } catch (const json::exception& e) {
        throw InvalidInput(source + ": " + tracker.current_path() + ": " + e.what());
    } catch (const InvalidInput& e) {
        throw InvalidInput(source + ": " + e.what());
    }
}

/// Returns `validate()`, prefixing the InvalidInput it throws with "<source>: ".
template <class Validate>
auto validate_from(const std::string& source, Validate&& validate) -> decltype(validate())
{
    try {
        return validate();
    } catch (const InvalidInput& e) {
        throw InvalidInput(source + ": " + e.what());
    }
}

/// Reads and parses a JSON file (see parse_json_text). `what` names the kind
/// of file in errors about the file itself, e.g. `scene file "a.json": no
/// such file`; syntax errors are prefixed with the path alone.
inline json read_json_file(const std::filesystem::path& path, const std::string& what)
{
    const std::string name = path.string();
    const std::string file = what + " file \"" + name + "\": ";
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) throw InvalidInput(file + "no such file");
    if (std::filesystem::is_directory(status)) throw InvalidInput(file + "is a directory, not a file");
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const std::string reason = errno ? std::strerror(errno) : "unknown error";
        throw InvalidInput(file + "cannot be opened for reading (" + reason + ")");
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw InvalidInput(file + "read error");
    return parse_json_text(text, name);
}

}  // namespace scene_detail

/// Parses and validates a scene (see the file comment for keys and defaults).
/// @throws InvalidInput naming the key path and the offending value.
inline SceneDescription parse_scene(const nlohmann::json& scene)
{
    using namespace scene_detail;
    const Object o(scene, "");
    o.allow_only({"name", "description", "time_step", "duration", "gravity", "solver", "cloth", "colliders", "output"});
    SceneDescription s;
    s.name = o.get_or("name", read_string, std::string());
    s.description = o.get_or("description", read_string, std::string());
    s.time_step = o.get("time_step", read_positive);
    s.duration = o.get("duration", read_positive);
    if (s.time_step > s.duration)
        fail("time_step", "must be <= duration = " + format_number(s.duration) + ", got " + format_number(s.time_step));
    s.gravity = o.get_or("gravity", read_vector3, s.gravity);
    s.solver = o.has("solver") ? parse_solver(o.required("solver"), "solver", s.time_step)
                               : parse_solver(json::object(), "solver", s.time_step);

    const json& cloth = o.required("cloth");
    if (!cloth.is_array()) fail("cloth", "expected an array of cloth objects, got " + describe_value(cloth));
    if (cloth.empty()) fail("cloth", "must list at least one cloth, got []");
    double stiffest_segment = 0;
    for (std::size_t k = 0; k < cloth.size(); ++k) {
        s.cloth.push_back(parse_cloth(cloth[k], element_path("cloth", k)));
        const int below = s.cloth.back().on_top_of;
        if (below >= 0 && (below >= static_cast<int>(k) || s.cloth[static_cast<std::size_t>(below)].type != "woven"))
            fail(element_path("cloth", k) + ".on_top_of",
                 "must name an earlier woven cloth entry (" +
                     (k == 0 ? std::string("none precedes cloth[0]") : "0.." + std::to_string(k - 1)) + "), got " +
                     std::to_string(below));
        const ClothDescription& c = s.cloth.back();
        if (c.type == "woven" || c.type == "sliding-rods") {
            stiffest_segment = std::max(stiffest_segment, c.stiffness.stretch / c.spacing);
        } else if (c.triangle.material_model == "stvk") {
            // (λ + 2μ) h: the membrane's stiffness per unit length, N/m
            stiffest_segment = std::max(stiffest_segment, (c.triangle.lambda + 2 * c.triangle.mu) * c.triangle.thickness);
        }
    }

    // Yarns slide at every crossing: EIL nodes (thesis Sec. 4.3) keep them
    // robust, for every yarn scene unless the scene says otherwise. A step
    // with no node near its neighbour costs the same with EIL on (no EIL node,
    // same system; measured in benchmarks/RESULTS.md).
    if (!s.solver.eil_given) s.solver.eil = s.cloth.front().type == "woven" || s.cloth.front().type == "sliding-rods";
    if (o.has("colliders")) {
        const json& colliders = o.required("colliders");
        if (!colliders.is_array())
            fail("colliders", "expected an array of collider objects, got " + describe_value(colliders));
        for (std::size_t k = 0; k < colliders.size(); ++k)
            s.colliders.push_back(parse_collider(colliders[k], element_path("colliders", k), 1000 * stiffest_segment));
    }
    if (o.has("output")) s.output = parse_output(o.required("output"), "output");
    return s;
}

/// Parses JSON text (rejecting duplicate keys, which JSON libraries keep
/// silently) and validates it as a scene. `source` names the text in errors,
/// which read "<source>: <key path>: <problem>" or "<source>: JSON syntax
/// error at byte N: ...".
inline SceneDescription parse_scene_text(const std::string& text, const std::string& source = "<scene text>")
{
    const scene_detail::json scene = scene_detail::parse_json_text(text, source);
    return scene_detail::validate_from(source, [&] { return parse_scene(scene); });
}

/// Reads and validates a scene file. Every error names the file.
inline SceneDescription load_scene(const std::filesystem::path& path)
{
    const std::string name = path.string();
    const scene_detail::json scene = scene_detail::read_json_file(path, "scene");
    SceneDescription s = scene_detail::validate_from(name, [&] { return parse_scene(scene); });
    s.source = name;
    return s;
}

}  // namespace weft
