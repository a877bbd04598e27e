#pragma once
/// @file implicit_stepper.hpp
/// Backward Euler on the Thrust backend, shared by every model (yarn-level
/// cloth with 5-DoF nodes, triangle cloth with 3-DoF nodes): device state,
/// deterministic assembly, filtered PCG, Newton iterations and time-step
/// halving. A model supplies its element kernels through CRTP.
///
/// One step (DESIGN.md, "One time step"):
///   element kernels write their local A, b, f blocks to contribution buffers
///   → deterministic gather assembly into BSR (assembly.hpp) → filtered PCG
///   for Δv (pcg.hpp), warm-started from the previous step's Δv → v += Δv,
///   q = q_n + h v → the model's after-step update (e.g. friction anchors).
///
/// Newton: backward Euler solves M (v − v_n) = h f(q_n + h v, v) for v. The
/// first iteration linearizes about (q_n, v_n): A Δv = h (f + h K v_n), the
/// one-step scheme of 2017 Sec. 6 (`newton_iterations = 1`). Later iterations
/// linearize about the iterate (q_k = q_n + h v_k, v_k) with
/// b_k = h f_k − M (v_k − v_n), the residual of the nonlinear equations; the
/// iteration stops when ‖S b_k‖ ≤ newton_tolerance · max(‖S b_0‖, h ‖S f_k‖)
/// (S the DoF filter; the force term keeps the test meaningful when b_0 ≈ 0,
/// e.g. a free rigid rotation of an unstressed sheet), or when ‖S b_k‖ is
/// below the rounding noise of the forces (`resolution_floor`: a body at rest).
///
/// Globalized Newton (`newton_iterations` > 1; DESIGN.md "Solver
/// principles"): the iteration starts at the predictor v = v_n on the
/// manifold q = q_n + h v (not at (q_n, v_n) like the one-step scheme), so
/// that every iterate has a residual; strain rates are taken in incremental-
/// potential form ε̇ = (ε(q) − ε(q_n))/h (`set_incremental_rate`), which
/// makes the damping Jacobian symmetric and exact. Every update v_k + α Δv
/// is first capped by the model's feasibility bound α ≤
/// `feasible_step_fraction` (no EoL segment inverts, no EIL interpolation
/// weight leaves its bracket, no node enters a collider deeper than half its
/// contact offset), then α is backtracked (halved, at most
/// `line_search_cuts` times) until the incremental potential
///   E(v) = ½ (v − v_n)ᵀ M (v − v_n) + V(q) + h Σ Ω Ψ_d(ε̇) + h Σ D_friction,
/// q = q_n + h v, decreases by the Armijo fraction 10⁻⁴ α bᵀΔv. A full
/// update that decreased E by more than twice its quadratic model predicts
/// (negative curvature: a yarn buckling within the step) is doubled while E
/// keeps falling, at most `line_search_expansions` times (`expand`). Each
/// iteration solves first with the exact element Hessians
/// (`exact_hessians`): A is then the true Jacobian,
/// and Newton converges quadratically wherever the mass keeps A positive
/// definite although single elements are not (compressed or bent yarns);
/// where PCG meets negative curvature, fails within twice the iterations of
/// the step's last converged solve, or Δv does not descend E, the iteration
/// is solved again with the PSD-projected Hessians. Its
/// v-gradient is −b(v) where every force is a gradient (incremental strain
/// rates, lagged friction: a convex friction potential that the residual
/// norm does not follow through stick–slip transitions), so the Newton
/// direction of the positive definite A descends it. Where that search fails
/// or Δv does not descend E, a second search asks the norm ‖S b(v)‖ of the
/// nonlinear residual b(v) = h f(q_n + h v, v) − M (v − v_n) to decrease
/// instead (it covers the terms that are not exact gradients: the consistent
/// yarn mass M(q), yarn bending's rate, Rayleigh damping). The trial point's
/// evaluation is the next iteration's system, so a full step costs nothing
/// extra. An update that would change E by less than round-off in its terms
/// ends the iteration as converged. Collider friction
/// is lagged at the step start in this mode (`NewtonInputs::lagged_positions`,
/// `lagged_friction`), so the force is a gradient within the step and its
/// Jacobian the true one. The one-step scheme (`newton_iterations` 1) takes
/// the full linearized step, unchanged.
///
/// A step whose PCG fails, whose Newton iteration does not converge
/// within `newton_iterations` (when > 1), whose state turns non-finite, whose
/// fastest DoF exceeds `max_speed` (a blow-up that stays finite) or that the
/// model rejects (`accept_step`) is undone and retried as two steps of h/2,
/// down to `max_halvings` halvings (2018 Sec. 5); beyond that the failure is
/// reported, never hidden.
///
/// Prescribed DoFs (pins, yarn-end arc lengths) are filtered: their Δv is 0,
/// so a pin keeps its velocity (zero, or the velocity of a moving pin) and
/// q += h v moves it along.
///
/// What a model (the `Derived` class) provides:
///   void evaluate_elements(T h, const NewtonInputs<T>&, const ElementBuffers<T>&)
///       runs its kernels at (q, v), filling the contribution buffers in the
///       order given to `build_assembly` and one ElementEnergies per entry;
///   void after_step()        state updates after an accepted step (may be empty);
///   void save_extra(), restore_extra()  model state beyond (q, v) that a
///                            failed step must undo (may be empty);
///   PcgOptions<T> pcg_options() const   the PCG settings of a solve.
/// and may provide (the defaults do nothing):
///   void begin_attempt(T h)  before every attempt at a (sub)step, before its
///                            start state is saved (e.g. a discretization update);
///   bool accept_step(std::string& why)  after the update: false rejects the
///                            (sub)step with the reason in `why`;
///   bool retry_attempt()     after a failed attempt: true to redo it at the
///                            same size (up to `max_retries` times, before any
///                            halving), e.g. after revising a discretization.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/scatter.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>

#include <weft/backend/assembly.hpp>
#include <weft/backend/bsr_matrix.hpp>
#include <weft/backend/direct_solver.hpp>
#include <weft/backend/multilevel_preconditioner.hpp>
#include <weft/backend/pcg.hpp>
#include <weft/backend/vector_ops.hpp>
#include <weft/core/error.hpp>
#include <weft/element/collider.hpp>
#include <weft/element/implicit_system.hpp>

namespace weft {

/// How full Newton's projected element stiffnesses treat negative
/// eigenvalues (StepperOptions::hessian_projection): `clamp` sets them to
/// zero, `absolute` to their absolute values (the eigenvalue filter of Chen
/// et al. 2024), `adaptive` takes the absolute values only while the last
/// accepted Newton update was cut by the line search (its quadratic model
/// reached too far), and clamps otherwise.
enum class HessianProjection { clamp, absolute, adaptive };

template <typename T>
struct StepperOptions {
    int newton_iterations = 12;    ///< > 1: full Newton to newton_tolerance; 1: the one-step scheme
    T newton_tolerance = T(1e-4);  ///< relative residual ‖S b_k‖ / max(‖S b_0‖, h ‖S f_k‖)
    int max_halvings = 0;          ///< how often a failed step may be halved (0: never)
    /// A step after which some velocity DoF exceeds this in magnitude (m/s for
    /// positions and arc lengths alike) fails: it catches blow-ups that stay
    /// finite. Default 1000 m/s, far above any cloth motion; +inf switches it off.
    T max_speed = T(1000);
    int max_retries = 4;  ///< same-size retries a model may ask for after a failed attempt
    /// Full Newton only: how often the line search may halve an update before
    /// the attempt fails (then the step is halved).
    int line_search_cuts = 8;
    /// Full Newton only: how often the line search may double a full update
    /// that decreased the incremental potential by more than twice what its
    /// quadratic model predicts (negative curvature along it, see
    /// `ImplicitStepper::expand`); 0 switches the expansion off.
    int line_search_expansions = 4;
    /// Full Newton only: each iteration first solves with the exact element Hessians
    /// (NewtonInputs::exact_hessians), and redoes the solve with the
    /// PSD-projected ones where PCG meets negative curvature, fails (within
    /// twice the iterations of the step's last converged solve), or gives an
    /// update that does not descend. Near a solution where A is positive
    /// definite thanks to the mass (a compressed yarn, a bent sheet) Newton
    /// then converges quadratically instead of linearly, and the element
    /// kernels skip the eigen-decompositions of the projection: on the
    /// stacked-layer tablecloths, about the same iterations in 20–35 % less
    /// time per step (docs/scenes.md, "Buckling within a step"); false:
    /// projected always.
    bool exact_hessians = true;
    /// Full Newton only: how the projected stiffnesses (always, or in the
    /// retry after exact ones) treat the negative eigenvalues of each yarn
    /// element's Hessian (NewtonInputs::absolute_eigenvalues; scene key
    /// `solver.hessian_projection`).
    HessianProjection hessian_projection = HessianProjection::absolute;
    /// The linear solver of each Newton iteration: filtered PCG with the
    /// settings below, or CHOLMOD's direct factorization on the host
    /// (direct_solver.hpp; needs a build that links it, `cholmod_available()`).
    LinearSolver linear = LinearSolver::pcg;
    /// PCG settings; with PcgPreconditioner::yarn_lines(_symmetric) the yarn
    /// stepper supplies the line set of the model's yarns (pcg.lines is ignored).
    PcgOptions<T> pcg{T(1e-5), 2000, PcgPreconditioner::block_jacobi};
    /// The hierarchy of PcgPreconditioner::multilevel (multilevel_preconditioner.hpp);
    /// pcg.custom is ignored: the stepper supplies its own, prepared for each solve.
    MultilevelOptions multilevel;
    /// Full Newton only, a diagnostic (weft-run `--jacobian-check`): after
    /// each Newton solve, check the matrix against central differences of the
    /// residual along the solved update and record it in the step report
    /// (`JacobianCheck`). Costs four more evaluations per iteration and
    /// changes nothing else: the iterate, its buffers and the trajectory stay
    /// as without it.
    bool jacobian_check = false;
};

/// One full-Newton iteration's directional finite-difference check of its
/// matrix (StepperOptions::jacobian_check). With Δv the solved update at the
/// iterate v, d_ε = −(b(v + εΔv) − b(v − εΔv)) / (2ε) is the central
/// difference of the residual b along Δv, and the mismatch
/// ‖A Δv − d_ε‖ / ‖A Δv‖ (free DoFs) is taken at ε = 1e-2 and 1e-4:
/// - both small: A is the derivative of the residual;
/// - both large and alike: A lacks or misstates a term (or a projection
///   changed it: `exact_hessians` false);
/// - only ε = 1e-2 large: the residual's derivative changes within 1 % of
///   the update, i.e. a kink or something that switches on (a penalty's
///   onset, a contact), which no Jacobian linearizes.
/// The residual's own distribution says where Newton has work left: the
/// share of ‖S b‖² in its 8 largest rows and the largest row.
struct JacobianCheck {
    /// The same check for one kind of element (the model's
    /// `contribution_terms`): A_t Δv and d_ε,t from that kind's contributions
    /// alone, so the term that misstates A is named. Both norms are relative
    /// to the whole ‖A Δv‖, so the terms compare with each other and with
    /// `mismatch`; the last term, "rest", holds what no kind's contributions
    /// hold (zero unless the matrix or residual gains something after assembly).
    struct Term {
        std::string name;
        double product = 0;                 ///< ‖A_t Δv‖ / ‖A Δv‖
        double mismatch[2] = {0, 0};        ///< ‖A_t Δv − d_ε,t‖ / ‖A Δv‖ at ε = 1e-2 and 1e-4
        long worst_node[2] = {-1, -1};      ///< per ε: the node of the term's largest |A_t Δv − d_ε,t|
        int worst_component[2] = {-1, -1};  ///< per ε: its DoF within the node
        /// Per ε, the term's element whose own ‖A_e Δv − d_ε,e‖ (its
        /// contributions alone, over its free rows) is largest: its index
        /// among the term's elements in contribution order (a contact pair,
        /// a segment), or −1 where the term has no element or its elements
        /// differ in node count (ContributionTerm::nodes 0; "rest").
        long worst_element[2] = {-1, -1};
        double element_mismatch[2] = {0, 0};  ///< its ‖A_e Δv − d_ε,e‖ / ‖A Δv‖
        std::vector<long> element_nodes[2];   ///< its nodes, in the element's order
    };
    int attempt = 0;                    ///< index into the step's attempts (BackendStepReport::attempts)
    int iteration = 0;                  ///< Newton iteration of the attempt (0: the first solve)
    bool exact_hessians = false;        ///< A held the exact element Hessians (else the projected ones)
    double update_norm = 0;             ///< ‖S Δv‖
    double mismatch[2] = {0, 0};        ///< at ε = 1e-2 and ε = 1e-4
    long worst_node[2] = {-1, -1};      ///< per ε: the node of the largest |A Δv − d_ε|
    int worst_component[2] = {-1, -1};  ///< per ε: its DoF within the node
    double residual_norm = 0;           ///< ‖S b‖ at the iterate
    double top_share = 0;               ///< share of ‖S b‖² in its 8 largest rows
    long largest_node = -1;             ///< the node of the largest |b_i|
    int largest_component = -1;         ///< its DoF within the node
    std::vector<Term> terms;            ///< per kind of element; empty for a model without `contribution_terms`
};

/// One kind of element in the stepper's contribution buffers (see
/// assembly.hpp), for JacobianCheck::terms: its matrix contributions
/// [matrix_begin, matrix_end) and vector contributions [vector_begin,
/// vector_end), counted in blocks.
struct ContributionTerm {
    const char* name;
    std::size_t matrix_begin, matrix_end;
    std::size_t vector_begin, vector_end;
    /// Nodes per element (K² blocks, K vectors each), for the per-element
    /// check (JacobianCheck::Term::worst_element); 0: the term holds
    /// elements of different node counts, or its model did not say.
    std::size_t nodes = 0;
};

/// One kind of element for `contribution_terms_of`: its name, how many
/// elements it has and how many nodes each couples.
struct ElementKind {
    const char* name;
    std::size_t count;
    std::size_t nodes;
};

/// The ContributionTerms of element kinds laid out one after the other in
/// the contribution buffers (an element of n nodes: n² blocks, n vectors);
/// consecutive kinds of the same name form one term (its `nodes` 0 where
/// two of them with elements have different node counts).
inline std::vector<ContributionTerm> contribution_terms_of(std::initializer_list<ElementKind> kinds)
{
    std::vector<ContributionTerm> terms;
    std::size_t matrix = 0, vector = 0;
    for (const ElementKind& k : kinds) {
        const std::size_t blocks = k.count * k.nodes * k.nodes, vectors = k.count * k.nodes;
        if (terms.empty() || std::string(terms.back().name) != k.name) {
            terms.push_back({k.name, matrix, matrix, vector, vector, k.nodes});
        } else if (k.count > 0) {
            ContributionTerm& t = terms.back();
            // The kinds before held no element: this one's count; another count: 0 from then on.
            t.nodes = t.vector_end == t.vector_begin || t.nodes == k.nodes ? k.nodes : 0;
        }
        matrix += blocks;
        vector += vectors;
        terms.back().matrix_end = matrix;
        terms.back().vector_end = vector;
    }
    return terms;
}

/// The ε of JacobianCheck::mismatch.
constexpr double jacobian_check_steps[2] = {1e-2, 1e-4};

/// Full Newton (inexact Newton, Eisenstat & Walker 1994, "Globally
/// convergent inexact Newton methods"): a linear solve that PCG stopped at
/// `pcg.max_iterations` is still used when its relative residual
/// ‖A Δv − b‖ / ‖b‖ is at most this and Δv descends E (bᵀΔv > 0). Such an
/// update reduces the linearized residual to 1 % of ‖b‖, a forcing term far
/// below 1 (what inexact Newton's convergence needs); the line search then
/// accepts or cuts it, and the step converges on the nonlinear residual as
/// before. Refusing it failed and halved whole steps whose solves stopped a
/// few times above `pcg_tolerance` (1.3e-5 to 8e-5 against 1e-5, measured on
/// tablecloth_three with collision). The one-step scheme has no later
/// iteration to correct a solve, so it keeps requiring convergence.
template <typename T>
constexpr T inexact_solve_limit()
{
    return T(1e-2);
}

/// Refuses a full-Newton diagnostic (`what`: the option that asked for it,
/// `does`: what it does) for the one-step scheme, naming the scene key.
/// @throws InvalidInput when newton_iterations ≤ 1
inline void require_full_newton(const std::string& what, int newton_iterations, const std::string& does)
{
    if (newton_iterations > 1) return;
    throw InvalidInput("invalid " + what + ": solver.newton_iterations is " + std::to_string(newton_iterations) +
                       " (the one-step scheme); " + does + " (newton_iterations > 1)");
}

/// One attempt of full Newton at a (sub)step (`newton_iterations` > 1), as
/// weft-run's `--newton-trace` writes it: its size, how it ended, the
/// relative residual after each iteration and the step fraction each update
/// took (the line search's α, after the feasibility bound).
struct NewtonAttempt {
    double h = 0;                   ///< the (sub)step's size (s)
    int halvings = 0;               ///< h = dt / 2^halvings
    int iterations = 0;             ///< Newton iterations (linear solves) of the attempt
    bool converged = false;         ///< Newton met its tolerance (or round-off ended it)
    bool accepted = false;          ///< converged and the model accepted the step
    std::vector<double> residuals;  ///< ‖S b_k‖ / max(‖S b_0‖, h ‖S f_k‖) after iteration k = 1, 2, …
    std::vector<double> fractions;  ///< the step fraction of update 0, 1, … (one per Newton iteration)
    std::vector<int> pcg;           ///< PCG iterations of each Newton iteration's solve (a projected retry's included)
    std::string message;            ///< why it failed (empty when accepted)
};

/// What one call of step() did.
struct BackendStepReport {
    bool ok = true;
    int substeps = 0;                ///< successful (sub)steps taken (1 without halving)
    int halvings = 0;                ///< deepest halving used (dt / 2^halvings)
    int retries = 0;                 ///< attempts redone at the same size on the model's request
    int newton_iterations = 0;       ///< summed over substeps
    int line_search_cuts = 0;        ///< halvings of Newton updates by the line search, summed
    int line_search_expansions = 0;  ///< doublings of full Newton updates along negative curvature, summed
    int projected_solves = 0;        ///< full Newton solves redone with projected Hessians (exact ones failed), summed
    int feasibility_limits = 0;      ///< Newton updates shortened by the model's feasibility bound
    int inexact_solves = 0;          ///< full Newton solves used though PCG stopped at its limit (inexact_solve_limit)
    int rebrackets = 0;              ///< Newton iterates at which the model moved EIL brackets (rebracket_within_step)
    int pcg_iterations = 0;          ///< summed over substeps and Newton iterations
    int multilevel_builds = 0;       ///< hierarchies built by the multilevel preconditioner (0 with the others)
    int multilevel_refreshes = 0;    ///< refreshes of its coarse values (MultilevelRefresh; 0 with the others)
    int multilevel_pattern_keeps = 0;  ///< its coarse levels kept across a new pattern (keep_across_patterns)
    double max_speed = 0;        ///< largest |v| of a DoF at the end of the step (m/s; positions and arc-length rates)
    double pcg_residual = 0;     ///< relative residual of the last PCG solve
    double newton_residual = 0;  ///< ‖S b_k‖ / max(‖S b_0‖, h ‖S f_k‖) at the end (0 for one-step)
    PcgStatus pcg_status = PcgStatus::converged;  ///< status of the last PCG solve
    /// PcgOptions::estimate_spectrum: the PCG solves of the step that gave an
    /// estimate, the smallest of their PcgResult::ritz_min and the largest of
    /// their ritz_max (both 0 when none did).
    int pcg_spectrum_solves = 0;
    double pcg_ritz_min = 0;
    double pcg_ritz_max = 0;
    std::string message;          ///< why the step failed (empty when ok)
    std::string first_failure;    ///< why the first failed attempt failed (empty when none did): why a step was halved
    double assembly_seconds = 0;  ///< element kernels + assembly
    double solve_seconds = 0;     ///< PCG
    double total_seconds = 0;     ///< the whole call
    std::vector<NewtonAttempt> attempts;  ///< full Newton: every attempt of the step, in order (empty for one-step)
    std::vector<JacobianCheck> jacobian_checks;  ///< StepperOptions::jacobian_check: one per Newton solve, in order
};

/// Raw pointers to the contribution buffers an element kernel writes.
template <typename T>
struct ElementBuffers {
    T* matrix;                     ///< B×B blocks, one per matrix contribution
    T* rhs;                        ///< B-vectors, one per vector contribution
    T* force;                      ///< B-vectors, one per vector contribution
    ElementEnergies<T>* energies;  ///< one per element entry
};

namespace stepper_detail {

/// Copy one element's node blocks into the contribution buffers: matrix
/// block (i, j) at contribution `matrix_first + i·K + j`, vector i at
/// `vector_first + i`.
template <typename T, int K, int B>
WEFT_HD inline void write_blocks(const NodeBlocks<T, K, B>& blocks, const ElementBuffers<T>& out,
                                 std::size_t matrix_first, std::size_t vector_first)
{
    for (int i = 0; i < K; ++i) {
        for (int j = 0; j < K; ++j) {
            T* a = out.matrix + (matrix_first + static_cast<std::size_t>(i * K + j)) * B * B;
            for (int r = 0; r < B; ++r)
                for (int c = 0; c < B; ++c) a[r * B + c] = blocks.a[i][j](r, c);
        }
        T* rb = out.rhs + (vector_first + static_cast<std::size_t>(i)) * B;
        T* fb = out.force + (vector_first + static_cast<std::size_t>(i)) * B;
        for (int r = 0; r < B; ++r) {
            rb[r] = blocks.b[i](r);
            fb[r] = blocks.f[i](r);
        }
    }
}

/// One thread per element of a kind with K nodes: its K×K matrix blocks go
/// to contributions matrix_base + K²·k + …, its K vectors to
/// vector_base + K·k + …, its energies to energy_base + k. `Inputs` carries
/// the model's pointers and constants plus `out` (ElementBuffers); the local
/// system comes from the model's `evaluate_element(in, element, blocks,
/// energies)` overload, found by argument-dependent lookup.
template <typename T, int B, class Inputs, class Element, int K>
struct ElementKernel {
    Inputs in;
    const Element* elements;
    std::size_t matrix_base;
    std::size_t vector_base;
    std::size_t energy_base;
    WEFT_HD void operator()(Index k) const
    {
        NodeBlocks<T, K, B> blocks;
        blocks.set_zero();
        ElementEnergies<T> e;
        evaluate_element(in, elements[k], blocks, e);
        const std::size_t element = static_cast<std::size_t>(k);
        write_blocks<T, K, B>(blocks, in.out, matrix_base + K * K * element, vector_base + K * element);
        in.out.energies[energy_base + element] = e;
    }
};

template <typename T>
struct PlusEnergies {
    WEFT_HD ElementEnergies<T> operator()(const ElementEnergies<T>& a, const ElementEnergies<T>& b) const
    {
        return ElementEnergies<T>{a.kinetic + b.kinetic, a.elastic + b.elastic, a.gravity + b.gravity,
                                  a.dissipation + b.dissipation};
    }
};

/// ‖S x‖² share of one DoF.
template <typename T>
struct FilteredSquare {
    WEFT_HD T operator()(const thrust::tuple<T, std::uint8_t>& x_free) const
    {
        const T x = thrust::get<0>(x_free);
        return thrust::get<1>(x_free) ? x * x : T(0);
    }
};

/// v_k = v_base + α Δv (v_base may be v itself; α < 1: a line-search trial
/// point); q_k = q_n + h v_k, so w = (q_n + h v_k − q_k)/h = 0 after the
/// update; v_k − v_n for the mass term.
template <typename T>
struct NewtonUpdate {
    T h;
    const T* q_start;
    const T* v_start;
    const T* dv;
    T* q;
    T* v;
    T* mass_velocity;
    const T* v_base;
    T alpha;
    WEFT_HD void operator()(std::size_t i) const
    {
        const T vi = v_base[i] + alpha * dv[i];
        v[i] = vi;
        q[i] = q_start[i] + h * vi;
        mass_velocity[i] = vi - v_start[i];
    }
};

/// collider_step_fraction of node i of a model with B-DoF nodes (x first).
template <typename T, int B>
struct ColliderStepFraction {
    const T* q;
    const T* dv;
    T h;
    const Collider<T>* colliders;
    int collider_count;
    T offset;
    WEFT_HD T operator()(Index i) const
    {
        const std::size_t a = static_cast<std::size_t>(B) * static_cast<std::size_t>(i);
        const Vec3<T> x(q[a], q[a + 1], q[a + 2]);
        const Vec3<T> dx(h * dv[a], h * dv[a + 1], h * dv[a + 2]);
        return collider_step_fraction<T>(colliders, collider_count, x, dx, offset, T(0.5) * offset);
    }
};

/// What full Newton's per-node collider kernels (ColliderPredictor,
/// ColliderOnsetCorrection) read and write: the iterate q, the DoF filter,
/// the step h, the colliders with the contact offset, and the update dv.
template <typename T>
struct NodeColliderArgs {
    const T* q;
    const std::uint8_t* free;
    T h;
    const Collider<T>* colliders;
    int collider_count;
    T offset;
    T* dv;
};

/// Full Newton's contact-aware predictor, one node per thread (see
/// ImplicitStepper::collider_predictor). A node in a collider's contact band
/// at the start of the step (depth d₀ > 0) is moved along the collider's
/// normal at its predictor position x = x_n + h v_n to the depth the last
/// step's depth change extrapolates to, but no deeper than d₀:
/// d₀ − max(d_{n−1} − d₀, 0), with d_{n−1} the depth at x_n − h v_n (the
/// previous position: backward Euler's x_n = x_{n−1} + h v_n). Depths, not
/// positions, are extrapolated, so a node sliding along a curved surface at
/// a constant depth stays at it (the straight line x_n + h v_n leaves a
/// convex surface by about (h |v|)² / 2R), a node leaving it keeps leaving,
/// and a landing node is not predicted deeper. Writes the velocity change
/// to dv (x DoFs; zero elsewhere and on nodes with a prescribed x DoF).
template <typename T, int B>
struct ColliderPredictor {
    const T* q_start;
    NodeColliderArgs<T> args;
    WEFT_HD void operator()(Index i) const
    {
        const std::size_t a = static_cast<std::size_t>(B) * static_cast<std::size_t>(i);
        for (int c = 0; c < B; ++c) args.dv[a + c] = T(0);
        if (!(args.free[a] && args.free[a + 1] && args.free[a + 2])) return;
        const Vec3<T> x0(q_start[a], q_start[a + 1], q_start[a + 2]);
        Vec3<T> x(args.q[a], args.q[a + 1], args.q[a + 2]);
        const Vec3<T> previous = x0 - (x - x0);
        for (int k = 0; k < args.collider_count; ++k) {
            T phi0;
            Vec3<T> n0;
            args.colliders[k].distance(x0, phi0, n0);
            const T depth0 = args.offset - phi0;
            if (!(depth0 > T(0))) continue;
            T phi, phi_previous;
            Vec3<T> n, n_previous;
            args.colliders[k].distance(x, phi, n);
            args.colliders[k].distance(previous, phi_previous, n_previous);
            const T depth = args.offset - phi;
            const T lost = phi0 - phi_previous;  // the depth lost in the last step, d_{n−1} − d₀
            const T target = lost > T(0) ? depth0 - lost : depth0;
            x += (depth - target) * n;
        }
        for (int c = 0; c < 3; ++c) args.dv[a + c] = (x(c) - args.q[a + c]) / args.h;
    }
};

/// Full Newton's update of a node inside a collider's penalty onset, one node
/// per thread (see ImplicitStepper::collider_onset_correction).
template <typename T, int B>
struct ColliderOnsetCorrection {
    BsrConstView<T, B> a;
    NodeColliderArgs<T> args;
    WEFT_HD void operator()(Index i) const
    {
        using std::sqrt;
        const std::size_t o = static_cast<std::size_t>(B) * static_cast<std::size_t>(i);
        if (!(args.free[o] && args.free[o + 1] && args.free[o + 2])) return;
        const T onset = T(collider_onset_fraction) * args.offset;
        const Vec3<T> x(args.q[o], args.q[o + 1], args.q[o + 2]);
        int touching = -1;
        T depth = T(0);
        Vec3<T> n = Vec3<T>::Zero();
        for (int k = 0; k < args.collider_count; ++k) {
            T phi;
            Vec3<T> nk;
            args.colliders[k].distance(x, phi, nk);
            if (!(args.offset - phi > T(0))) continue;
            if (touching >= 0) return;  // two contacts: their quadratic terms couple, keep the linear update
            touching = k;
            depth = args.offset - phi;
            n = nk;
        }
        if (touching < 0 || !(depth < onset)) return;
        const Index k = bsr_find_block(a.row_ptr, a.col_idx, i, i);
        if (k < 0) return;
        const T* block = a.values + static_cast<std::size_t>(k) * (B * B);
        T normal_stiffness = T(0);  // nᵀ A_ii n
        for (int r = 0; r < 3; ++r) {
            for (int c = 0; c < 3; ++c) normal_stiffness += n(r) * block[r * B + c] * n(c);
        }
        // The linear update's depth change Δd_lin, and c = h² F''(d).
        const T linear = -args.h * (n(0) * args.dv[o] + n(1) * args.dv[o + 1] + n(2) * args.dv[o + 2]);
        const T curvature = args.h * args.h * args.colliders[touching].stiffness / onset;
        const T discriminant = normal_stiffness * normal_stiffness + T(2) * curvature * normal_stiffness * linear;
        if (!(normal_stiffness > T(0)) || !(discriminant >= T(0))) return;
        const T corrected = T(2) * normal_stiffness * linear / (normal_stiffness + sqrt(discriminant));
        if (!(depth + corrected > T(0) && depth + corrected < onset)) return;
        const T change = -(corrected - linear) / args.h;  // along n
        for (int c = 0; c < 3; ++c) args.dv[o + c] += change * n(c);
    }
};

/// g · scale on free DoFs, 0 on prescribed ones.
template <typename T>
struct ScaledFiltered {
    T scale;
    WEFT_HD T operator()(const T& g, const std::uint8_t& is_free) const { return is_free ? scale * g : T(0); }
};

template <typename T>
struct IsNonFinite {
    WEFT_HD int operator()(const T& x) const { return (x - x == T(0)) ? 0 : 1; }
};

template <typename T>
struct Magnitude {
    WEFT_HD T operator()(const T& x) const { return x < T(0) ? -x : x; }
};

template <typename T>
struct Maximum {
    WEFT_HD T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};

/// (v − v_n)_i (h f_i − b_i): at a Newton iterate b = h f − M (v − v_n), so
/// the sum is (v − v_n)ᵀ M (v − v_n) with M the assembled mass.
template <typename T>
struct MassProduct {
    T h;
    const T* mass_velocity;
    const T* force;
    const T* rhs;
    WEFT_HD T operator()(std::size_t i) const { return mass_velocity[i] * (h * force[i] - rhs[i]); }
};

template <typename T>
struct Minimum {
    WEFT_HD T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};

/// The largest α ≤ 1 for which an oriented difference d₀ + α δ keeps its
/// sign with a margin: it may lose at most `keep`'s complement of its size
/// in one update (α ≤ (1 − keep)·d₀/(−δ) when δ moves it towards 0). A zero
/// d₀ constrains nothing (an update cannot be told apart from a flip there).
template <typename T>
WEFT_HD inline T sign_keeping_fraction(T d0, T delta, T keep)
{
    if (d0 == T(0) || delta == T(0) || (d0 > T(0)) == (delta > T(0))) return T(1);
    const T reach = -(T(1) - keep) * d0 / delta;
    return reach < T(1) ? reach : T(1);
}

inline double seconds_since(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// x with three significant digits (for failure messages).
inline std::string short_number(double x)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", x);
    return text;
}

/// Host-side checks shared by the steppers' constructors.
template <typename T>
inline void validate_state(const char* model, const std::vector<T>& q, const std::vector<T>& v,
                           const std::vector<unsigned char>& free_dof, int block, const StepperOptions<T>& options)
{
    const std::string name(model);
    const std::string per_node = "must be " + std::to_string(block) + " x #nodes";
    if (q.size() % static_cast<std::size_t>(block) != 0)
        throw InvalidInput(detail::describe((name + " q.size()").c_str(), q.size(), per_node.c_str()));
    if (v.size() != q.size())
        throw InvalidInput(detail::describe((name + " v.size()").c_str(), v.size(), "must equal q.size()"));
    if (free_dof.size() != q.size())
        throw InvalidInput(
            detail::describe((name + " free_dof.size()").c_str(), free_dof.size(), "must equal q.size()"));
    if (options.newton_iterations < 1)
        throw InvalidInput(detail::describe("solver.newton_iterations", options.newton_iterations, "must be >= 1"));
    if (options.max_halvings < 0 || options.max_halvings > 30)
        throw InvalidInput(detail::describe("max_halvings", options.max_halvings, "must be in [0, 30]"));
    require_non_negative("solver.newton_tolerance", options.newton_tolerance);
    if (options.line_search_cuts < 0 || options.line_search_cuts > 30)
        throw InvalidInput(detail::describe("solver.line_search_cuts", options.line_search_cuts, "must be in [0, 30]"));
    if (options.line_search_expansions < 0 || options.line_search_expansions > 30)
        throw InvalidInput(
            detail::describe("solver.line_search_expansions", options.line_search_expansions, "must be in [0, 30]"));
    if (options.max_retries < 0)
        throw InvalidInput(detail::describe("solver.max_retries", options.max_retries, "must be >= 0"));
    require_linear_solver(options.linear);
    if (options.pcg.preconditioner == PcgPreconditioner::multilevel) validate(options.multilevel);
    if (!(options.max_speed > T(0)))
        throw InvalidInput(detail::describe("solver.max_speed", options.max_speed, "must be > 0"));
    for (const T x : q)
        if (!std::isfinite(static_cast<double>(x))) throw InvalidInput("invalid " + name + " q: non-finite value");
    for (const T x : v)
        if (!std::isfinite(static_cast<double>(x))) throw InvalidInput("invalid " + name + " v: non-finite value");
}

}  // namespace stepper_detail

/// The model-independent part of a backward-Euler stepper with B-DoF nodes.
template <typename T, int B, class Derived>
class ImplicitStepper {
public:
    using Report = BackendStepReport;

    Index node_count() const { return m_nodes; }
    const StepperOptions<T>& options() const { return m_options; }
    void set_options(const StepperOptions<T>& options)
    {
        m_options = options;
        m_first_iteration_ready = false;               // the first-iteration form depends on newton_iterations
        m_multilevel.set_options(options.multilevel);  // its next prepare() rebuilds
    }

    /// Advance by h (in 2^k substeps when a step had to be halved). A step
    /// that fails leaves q and v as they were, also when some of its halved
    /// substeps had succeeded.
    BackendStepReport step(T h);

    /// Assembles A, b, f at the current state (first-iteration form).
    void assemble(T h);

    /// Full Newton's system at an iterate v of a step of size h from the
    /// current state (q_n, v_n) = (positions(), velocities()), as the
    /// iterations of `step` assemble it (file comment): the residual
    /// b(v) = h f(q_n + h v, v) − M (v − v_n) in rhs(), f in force(), and the
    /// matrix A in matrix(), A = −∂b/∂v up to the model's PSD projections.
    /// The state is left as it was. For finite-difference checks of A (the
    /// proof that Newton's Jacobian is the derivative of its residual) and
    /// for diagnosing slow Newton convergence.
    void assemble_newton(T h, const std::vector<T>& v);

    /// Energies of the current state (kinetic ½vᵀMv, elastic incl. contact
    /// and colliders, gravity, dissipation potential).
    ElementEnergies<T> energies();

    const BsrMatrix<T, B>& matrix() const { return m_matrix; }
    const thrust::device_vector<T>& rhs() const { return m_rhs; }
    const thrust::device_vector<T>& force() const { return m_force; }
    const thrust::device_vector<T>& positions() const { return m_q; }
    const thrust::device_vector<T>& velocities() const { return m_v; }
    /// The current filter (1 = free, 0 = constrained, one per DoF): the
    /// model's, with the yarn steppers' EIL tags and detached contacts; that
    /// of matrix() and rhs() after a step.
    const thrust::device_vector<std::uint8_t>& free_dofs() const { return m_free; }
    const AssemblyMap<B>& assembly_map() const { return m_map; }
    /// How often the direct solver (StepperOptions::linear == cholmod) ran its
    /// symbolic analysis: once per distinct matrix pattern.
    int direct_analyses() const { return m_direct.analyses(); }
    /// Hierarchies built by the multilevel preconditioner so far (0 with the others).
    int multilevel_builds() const { return m_multilevel.builds(); }
    /// The multilevel preconditioner (levels, sizes, complexity of its last hierarchy).
    const MultilevelPreconditioner<T, B>& multilevel() const { return m_multilevel; }

    /// Overwrite the velocities (e.g. a rigid initial velocity set on the host).
    /// @throws InvalidInput for a wrong size or a non-finite value (naming its index)
    void set_velocities(const std::vector<T>& v)
    {
        require_state("set_velocities", "v", v);
        m_v.assign(v.begin(), v.end());
        m_energies_valid = false;
    }

    /// Overwrite the generalized positions (x, and for yarns the arc
    /// lengths), e.g. a state read back from a frame or set from Python. The
    /// next step starts from them; its first solve is not warm-started.
    /// @throws InvalidInput for a wrong size or a non-finite value (naming its index)
    void set_positions(const std::vector<T>& q)
    {
        require_state("set_positions", "q", q);
        m_q.assign(q.begin(), q.end());
        m_guess_step = T(0);
        m_energies_valid = false;
    }

    /// Writes the stepper's complete state, everything the next steps depend
    /// on, as named blocks "stepper.*" of a checkpoint (`Writer`: e.g.
    /// CheckpointWriter, weft/io/checkpoint.hpp): positions, velocities, the
    /// filter, the last step size, the warm start of the next solve, and the
    /// model's own state (Derived::save_extra_state). Loaded into a stepper
    /// built from the same model and options, the next steps give the same
    /// bits as this stepper's would, except with the multilevel
    /// preconditioner, whose hierarchy is rebuilt on the first solve.
    template <class Writer>
    void save_state(Writer& out) const
    {
        out.put_value("stepper.block_size", static_cast<std::int32_t>(B));
        out.put_value("stepper.nodes", static_cast<std::int64_t>(m_nodes));
        out.put("stepper.q", to_host(m_q));
        out.put("stepper.v", to_host(m_v));
        out.put("stepper.free", to_host(m_free));
        out.put("stepper.guess", to_host(m_guess));
        out.put_value("stepper.guess_step", m_guess_step);
        out.put_value("stepper.last_h", m_last_h);
        out.put_value("stepper.step_fraction", m_step_fraction);
        self().save_extra_state(out);
    }

    /// Restores a state written by save_state (`Reader`: e.g.
    /// CheckpointReader, with get/get_value/fail).
    /// @throws InvalidInput (through `in.fail`) when the state belongs to a
    ///         model of another block size or node count, or a block is missing
    template <class Reader>
    void load_state(const Reader& in)
    {
        const std::int32_t block = in.template get_value<std::int32_t>("stepper.block_size");
        const std::int64_t nodes = in.template get_value<std::int64_t>("stepper.nodes");
        if (block != B || nodes != static_cast<std::int64_t>(m_nodes))
            in.fail("holds a model of " + std::to_string(nodes) + " nodes with " + std::to_string(block) +
                    " DoFs each; this scene has " + std::to_string(m_nodes) + " nodes with " + std::to_string(B));
        const long long dofs = static_cast<long long>(m_q.size());
        const std::vector<T> q = in.template get<T>("stepper.q", dofs);
        const std::vector<T> v = in.template get<T>("stepper.v", dofs);
        const std::vector<std::uint8_t> free = in.template get<std::uint8_t>("stepper.free", dofs);
        const std::vector<T> guess = in.template get<T>("stepper.guess");
        if (!guess.empty() && guess.size() != m_q.size())
            in.fail("block \"stepper.guess\" has " + std::to_string(guess.size()) + " values, expected 0 or " +
                    std::to_string(m_q.size()));
        m_q.assign(q.begin(), q.end());
        m_v.assign(v.begin(), v.end());
        m_free.assign(free.begin(), free.end());
        m_guess.assign(guess.begin(), guess.end());
        m_guess_step = in.template get_value<T>("stepper.guess_step");
        m_last_h = in.template get_value<T>("stepper.last_h");
        m_step_fraction = in.template get_value<T>("stepper.step_fraction");
        m_energies_valid = false;
        m_first_iteration_ready = false;
        self().load_extra_state(in);
    }

    /// Moves pinned nodes along a path given by the caller, one step at a
    /// time: each listed node's prescribed position coordinates (those fixed
    /// in the model's free_dof when the stepper was built) get the velocity
    /// (target − x)/h, which carries them from where they are to `target`
    /// over the next step of size h. A prescribed DoF keeps its velocity
    /// through a step and through its halved substeps, so the node ends the
    /// step exactly at the target. Call it before every step with the path's
    /// next point; a pin given its current position stops. Free coordinates
    /// of a partly pinned node are left alone (the target's value there is
    /// ignored), and the velocity stays after the step until set again.
    /// @throws InvalidInput for a node out of range, a node with no
    ///         prescribed position coordinate, a non-finite target, h ≤ 0,
    ///         or lists of different lengths
    void set_pin_targets(const std::vector<Index>& nodes, const std::vector<Vec3<T>>& targets, T h)
    {
        require_positive("set_pin_targets h", h);
        if (nodes.size() != targets.size())
            throw InvalidInput(detail::describe("set_pin_targets targets.size()", targets.size(),
                                                ("must equal nodes.size() = " + std::to_string(nodes.size())).c_str()));
        const std::vector<T> q = to_host(m_q);
        std::vector<Index> dofs;
        std::vector<T> velocities;
        for (std::size_t k = 0; k < nodes.size(); ++k) {
            const Index n = nodes[k];
            const std::string name = "set_pin_targets nodes[" + std::to_string(k) + "]";
            if (n < 0 || n >= m_nodes)
                throw InvalidInput(detail::describe(
                    name.c_str(), n, ("must be a node index in [0, " + std::to_string(m_nodes) + ")").c_str()));
            if (!targets[k].allFinite())
                throw InvalidInput("invalid set_pin_targets targets[" + std::to_string(k) + "]: not finite");
            const std::size_t first = static_cast<std::size_t>(n) * B;
            const std::size_t before = dofs.size();
            for (int c = 0; c < 3; ++c) {
                if (m_prescribed[first + c] == 0) continue;
                dofs.push_back(static_cast<Index>(first + c));
                velocities.push_back((targets[k](c) - q[first + c]) / h);
            }
            if (dofs.size() == before)
                throw InvalidInput(detail::describe(name.c_str(), n, "is not pinned: its positions are free"));
        }
        const thrust::device_vector<Index> d_dofs(dofs.begin(), dofs.end());
        const thrust::device_vector<T> d_velocities(velocities.begin(), velocities.end());
        thrust::scatter(thrust::device, d_velocities.begin(), d_velocities.end(), d_dofs.begin(), m_v.begin());
        m_energies_valid = false;
        m_first_iteration_ready = false;
    }

protected:
    /// Default hooks (see the file comment); a model hides them with its own.
    void begin_attempt(T) {}
    bool accept_step(std::string&) { return true; }
    /// Full Newton: the largest α ∈ (0, 1] for which q_k + α h Δv is
    /// feasible for the model (e.g. no segment inverts); 1 by default.
    T feasible_step_fraction(T, const thrust::device_vector<T>&) { return T(1); }
    /// Full Newton: adjusts the predictor (q, v) of the model's nodes before
    /// the first iteration (e.g. `collider_predictor`); nothing by default.
    void adjust_predictor(T) {}
    /// Full Newton: adjusts the solved update m_dv before the line search
    /// (e.g. `collider_onset_correction`); nothing by default.
    void adjust_update(T) {}
    /// Full Newton, after each accepted update: whether the model changed
    /// its element lists at the new iterate without changing its potential
    /// (e.g. `YarnStepper::rebracket`: an EIL node's interpolation bracket
    /// follows the node past an EoL node); the iterate is then evaluated
    /// anew. No by default.
    bool rebracket_within_step() { return false; }
    bool retry_attempt() { return false; }
    /// Whether the model's element kernels honour NewtonInputs::exact_hessians
    /// (otherwise StepperOptions::exact_hessians has nothing to try); no by default.
    bool has_exact_hessians() const { return false; }
    /// Whether the model's element kernels save work under
    /// NewtonInputs::forces_only (otherwise line-search trials are always
    /// evaluated in full, to be reused as the next iterate's system); no by default.
    bool has_forces_only() const { return false; }
    /// The kinds of element in the contribution buffers, in order, for the
    /// per-term JacobianCheck; none by default (no per-term check).
    std::vector<ContributionTerm> contribution_terms() const { return {}; }
    /// The step bound of every node against the colliders (full Newton; see
    /// collider_step_fraction): an update carries no node from outside a
    /// collider's contact band deeper than half the contact offset into it.
    T collider_step_bound(T h, const thrust::device_vector<T>& dv, const thrust::device_vector<Collider<T>>& colliders,
                          T offset) const
    {
        if (colliders.empty()) return T(1);
        return thrust::transform_reduce(
            thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(m_nodes),
            stepper_detail::ColliderStepFraction<T, B>{raw(m_q), raw(dv), h, raw(colliders),
                                                       static_cast<int>(colliders.size()), offset},
            T(1), stepper_detail::Minimum<T>{});
    }
    /// Full Newton's predictor against the colliders (ColliderPredictor):
    /// a node resting in a collider's contact band keeps its depth instead
    /// of being predicted into the collider by its inward velocity, or off
    /// a curved collider by the straight line. Without the first, a node
    /// that has just landed starts Newton up to h |v·n| deep in the
    /// penalty's quadratic onset (force k d²/(2 d_on)), where each
    /// iteration only halves the excess depth: linear convergence, and the
    /// step halved (measured on `tablecloth_angle.json`: yarn crossings
    /// landing on the table's rounded edge, 23 µm deep against 0.34 µm at
    /// the solution, residual falling 4× per iteration). Without the
    /// second, a node sliding over the table's rounded edge starts Newton
    /// outside the band, where A has no penalty stiffness for it: the cloth's
    /// tension then carries it tens of µm into the collider within one
    /// update, and the line search cuts the first update of nearly every
    /// sliding step (measured on `tablecloth_friction.json`, docs/scenes.md,
    /// "The predictor on a curved collider"). The start changes, the
    /// converged step does not.
    void collider_predictor(T h, const thrust::device_vector<Collider<T>>& colliders, T offset)
    {
        if (colliders.empty()) return;
        thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(m_nodes),
                         stepper_detail::ColliderPredictor<T, B>{raw(m_q_start), collider_args(h, colliders, offset)});
        apply_update(h, m_v, T(1));
    }
    /// Full Newton's update inside the colliders' penalty onsets
    /// (ColliderOnsetCorrection), before the line search. Below the onset
    /// width δ the penalty force F(d) = k d²/(2δ) has a double root at d = 0,
    /// and Newton's linear model drops its curvature F'' = k/δ: a crossing
    /// resting on a collider under its own weight sits at d* = √(2δF/k),
    /// about 10⁻² δ, and from anywhere near δ each linear update only halves
    /// the distance to it (docs/scenes.md, "Where the iterations go with A
    /// exact"). The correction solves each such node's own normal equation
    /// with that curvature kept, the rest of the update held:
    ///     a (Δd − Δd_lin) + ½ h² (k/δ) Δd² = 0,   a = nᵀ A_ii n,
    /// Δd = −h n·Δv the node's depth change and Δd_lin the linear update's.
    /// The root that tends to Δd_lin as k/δ → 0 replaces Δd_lin. For a node
    /// whose contact dominates a, this lands on d* from any depth in the
    /// onset; for one whose inertia dominates (a node that has just arrived,
    /// F'(d) ≈ 0) it leaves the update as it is. A node with a prescribed x
    /// DoF, in two contacts, or whose corrected depth leaves the onset keeps
    /// the linear update. Nothing changes outside the onset or where no
    /// node is in contact.
    void collider_onset_correction(T h, const thrust::device_vector<Collider<T>>& colliders, T offset)
    {
        if (colliders.empty()) return;
        thrust::for_each(
            thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(m_nodes),
            stepper_detail::ColliderOnsetCorrection<T, B>{m_matrix.view(), collider_args(h, colliders, offset)});
    }
    /// The arguments of the per-node collider kernels on the current iterate and update.
    stepper_detail::NodeColliderArgs<T> collider_args(T h, const thrust::device_vector<Collider<T>>& colliders,
                                                      T offset)
    {
        return {raw(m_q), raw(m_free), h, raw(colliders), static_cast<int>(colliders.size()), offset, raw(m_dv)};
    }
    /// Positions at the start of the (sub)step being attempted.
    const thrust::device_vector<T>& attempt_start_positions() const { return m_q_start; }
    /// Velocities at the start of the (sub)step being attempted.
    const thrust::device_vector<T>& attempt_start_velocities() const { return m_v_start; }
    /// The size of the (sub)step last evaluated (the accepted one, in after_step).
    T attempt_step_size() const { return m_last_h; }

    ImplicitStepper(const std::vector<T>& q, const std::vector<T>& v, const std::vector<unsigned char>& free_dof,
                    const StepperOptions<T>& options)
        : m_options(options), m_multilevel(options.multilevel)
    {
        m_nodes = static_cast<Index>(q.size() / B);
        m_q.assign(q.begin(), q.end());
        m_v.assign(v.begin(), v.end());
        std::vector<std::uint8_t> free(free_dof.begin(), free_dof.end());
        m_free.assign(free.begin(), free.end());
        m_prescribed.resize(free_dof.size());
        for (std::size_t i = 0; i < free_dof.size(); ++i) m_prescribed[i] = free_dof[i] == 0 ? 1 : 0;
        const std::size_t dofs = q.size();
        m_dv.assign(dofs, T(0));
        m_zero.assign(dofs, T(0));
        m_mass_velocity.assign(dofs, T(0));
        m_guess.assign(dofs, T(0));
        m_product.assign(dofs, T(0));
        m_residual.assign(dofs, T(0));
        m_correction.assign(dofs, T(0));
    }

    /// Builds the assembly map from the contributions in kernel order and
    /// sizes the buffers; `energy_entries` ElementEnergies are reduced.
    void build_assembly(const std::vector<BlockCoordinate>& blocks, const std::vector<Index>& vectors,
                        std::size_t energy_entries)
    {
        m_map = AssemblyMap<B>::build(m_nodes, blocks, vectors);
        m_matrix_contributions.resize(static_cast<std::size_t>(m_map.matrix_contributions()) * B * B);
        m_rhs_contributions.resize(static_cast<std::size_t>(m_map.vector_contributions()) * B);
        m_force_contributions.resize(m_rhs_contributions.size());
        m_energies.resize(energy_entries);
    }

    ElementBuffers<T> buffers()
    {
        return ElementBuffers<T>{raw(m_matrix_contributions), raw(m_rhs_contributions), raw(m_force_contributions),
                                 raw(m_energies)};
    }

    template <typename U>
    static U* raw(thrust::device_vector<U>& v)
    {
        return raw_pointer(v);
    }
    template <typename U>
    static const U* raw(const thrust::device_vector<U>& v)
    {
        return raw_pointer(v);
    }

    /// Forget cached element evaluations (a model that changed its element
    /// lists or contribution buffers between steps, e.g. the EIL assignment).
    void invalidate_evaluation()
    {
        m_energies_valid = false;
        m_first_iteration_ready = false;
    }

    // Hooks with empty defaults.
    void after_step() {}
    template <class Writer>
    void save_extra_state(Writer&) const
    {
    }
    template <class Reader>
    void load_extra_state(const Reader&)
    {
    }
    void save_extra() {}
    void restore_extra() {}
    PcgOptions<T> pcg_options() const { return m_options.pcg; }

    StepperOptions<T> m_options;
    Index m_nodes = 0;
    thrust::device_vector<T> m_q, m_v;
    thrust::device_vector<std::uint8_t> m_free;
    std::vector<unsigned char> m_prescribed;  ///< per DoF: fixed in the model's free_dof (pins; set_pin_targets)
    T m_last_h = T(0);

private:
    /// Checks a host state vector of B values per node, all finite.
    void require_state(const char* function, const char* name, const std::vector<T>& x) const
    {
        const std::string what = std::string(function) + " " + name;
        if (x.size() != m_q.size()) {
            const std::string per_node = "must be " + std::to_string(B) + " x #nodes = " + std::to_string(m_q.size());
            throw InvalidInput(detail::describe((what + ".size()").c_str(), x.size(), per_node.c_str()));
        }
        for (std::size_t i = 0; i < x.size(); ++i) {
            using std::isfinite;
            if (!isfinite(x[i]))
                throw InvalidInput("invalid " + what + "[" + std::to_string(i) + "] (node " + std::to_string(i / B) +
                                   ", component " + std::to_string(i % B) + "): not finite");
        }
    }

    Derived& self() { return static_cast<Derived&>(*this); }
    const Derived& self() const { return static_cast<const Derived&>(*this); }

    bool full_newton() const { return m_options.newton_iterations > 1; }

    /// Element inputs of a first Newton iteration at the current state (also
    /// for energies and `assemble`): full Newton lags friction at q itself.
    NewtonInputs<T> first_inputs()
    {
        NewtonInputs<T> in;
        if (full_newton()) {
            in.lagged_positions = raw(m_q);
            in.lagged_velocities = raw(m_v);
            in.full_newton = true;
        }
        return in;
    }
    /// Element inputs of a later Newton iteration (linearized at the iterate).
    NewtonInputs<T> iterate_inputs()
    {
        NewtonInputs<T> in;
        in.stiffness_velocity = raw(m_zero);
        in.mass_velocity = raw(m_mass_velocity);
        in.lagged_positions = raw(m_q_start);
        in.lagged_velocities = raw(m_v_start);
        in.rate_start = raw(m_q_start);
        in.full_newton = true;
        in.exact_hessians = m_exact_hessians;
        in.absolute_eigenvalues =
            m_options.hessian_projection == HessianProjection::absolute ||
            (m_options.hessian_projection == HessianProjection::adaptive && m_step_fraction < T(1));
        return in;
    }
    /// Element inputs of a line-search trial after the update of iteration k.
    /// Where this step is expected to converge at the trial (k + 1 reaches the
    /// last step's Newton iterations) and the model saves work by it
    /// (`has_forces_only`): the iterate's forces, energies and right-hand side
    /// only (NewtonInputs::forces_only); if Newton goes on after all,
    /// `newton_step` evaluates the iterate again with its Jacobians. Otherwise
    /// the full evaluation, which the next iteration reuses. On flap.json's
    /// full Newton (1.02 iterations per step) the trials' PSD projections were
    /// half of the time per step (benchmarks/RESULTS.md, "Full Newton's fixed
    /// cost").
    NewtonInputs<T> trial_inputs(int k)
    {
        NewtonInputs<T> in = iterate_inputs();
        in.forces_only = self().has_forces_only() && k + 1 >= m_expected_iterations;
        return in;
    }

    /// v = v_base + α Δv, q = q_n + h v (v_base may be m_v itself).
    void apply_update(T h, const thrust::device_vector<T>& v_base, T alpha)
    {
        thrust::for_each(thrust::device, thrust::counting_iterator<std::size_t>(0),
                         thrust::counting_iterator<std::size_t>(m_q.size()),
                         stepper_detail::NewtonUpdate<T>{h, raw(m_q_start), raw(m_v_start), raw(m_dv), raw(m_q),
                                                         raw(m_v), raw(m_mass_velocity), raw(v_base), alpha});
        m_energies_valid = false;
    }

    /// Runs every element kernel at (q, v) and fills the contribution
    /// buffers and per-element energies.
    void evaluate(T h, const NewtonInputs<T>& newton)
    {
        self().evaluate_elements(h, newton, buffers());
        m_last_h = h;
        m_jacobians_evaluated = !newton.forces_only;
        // Energies describe (q, v) whatever the Newton inputs; the
        // contributions are reusable only in the first-iteration form.
        m_energies_valid = true;
        m_first_iteration_ready = newton.stiffness_velocity == nullptr && newton.mass_velocity == nullptr &&
                                  (newton.lagged_positions != nullptr) == full_newton();
    }

    T filtered_norm(const thrust::device_vector<T>& x) const
    {
        const auto first = thrust::make_zip_iterator(thrust::make_tuple(x.begin(), m_free.begin()));
        using std::sqrt;
        return sqrt(fixed_order_transform_reduce(first, x.size(), stepper_detail::FilteredSquare<T>{}, T(0),
                                                 thrust::plus<T>{}));
    }

    bool state_finite() const
    {
        const int bad_q = thrust::transform_reduce(thrust::device, m_q.begin(), m_q.end(),
                                                   stepper_detail::IsNonFinite<T>{}, 0, thrust::plus<int>{});
        const int bad_v = thrust::transform_reduce(thrust::device, m_v.begin(), m_v.end(),
                                                   stepper_detail::IsNonFinite<T>{}, 0, thrust::plus<int>{});
        return bad_q == 0 && bad_v == 0;
    }

    /// The smallest residual ‖S b‖ that the arithmetic resolves at this step:
    /// positions are known to ε_machine max|q| only, and a position error δ
    /// in every DoF changes b by at most rowsum|A| δ / h (b = h f − M(v − v_n)
    /// with A = M − h ∂f/∂v − h² ∂f/∂q, so ∂b/∂q = −A/h), i.e.
    ///   floor = 2 ε_machine max|q| ‖S rowsum|A|‖ / h,
    /// from the first iteration's matrix. Full Newton counts an iterate whose
    /// residual is below it as converged. At rest, the residual of stiff
    /// contact and anchor springs (10⁶ N/m) is that rounding noise: on a
    /// stack of two layers in zero gravity ‖S b_k‖ = 5e-15 to 2e-14 against
    /// a floor of 4e-13 (tests/backend/test_layers.cpp, "stays at rest");
    /// the relative test compared the noise with itself (residuals 0.52,
    /// 0.14 of ‖S b_0‖), and the line search, which cannot decrease noise,
    /// failed the step. The predictor itself (iteration 0) is tested against
    /// the floor too: there the iterate has nothing to compare its residual
    /// with, and without friction at the stack's contact nodes the update
    /// solved from the noise found no decrease of E or ‖S b‖ in its line
    /// search (E ≈ 1e-30 J, whose own rounding the Armijo test cannot
    /// resolve), which failed the first step at rest. In moving scenes the
    /// floor stays below the tolerance
    /// test's bound: at most 0.05 of newton_tolerance · scale over the full-
    /// Newton iterations of the seven default-scheme scenes (0.05–0.2 s of
    /// each, docs/scenes.md "Full Newton"), so it ends none of them.
    T resolution_floor(T h)
    {
        row_abs_sums(m_matrix, m_abs_rows);
        const T largest = thrust::transform_reduce(thrust::device, m_q.begin(), m_q.end(),
                                                   stepper_detail::Magnitude<T>{}, T(0), stepper_detail::Maximum<T>{});
        return T(2) * std::numeric_limits<T>::epsilon() * largest * filtered_norm(m_abs_rows) / h;
    }

    /// One attempt at a step of size h; on failure the state is restored by the caller.
    bool newton_step(T h, BackendStepReport& report)
    {
        using namespace stepper_detail;
        m_q_start = m_q;
        m_v_start = m_v;
        T initial_norm = T(0);
        m_resolution_floor = T(0);
        const int iterations = m_options.newton_iterations;
        const bool newton = full_newton();
        bool evaluated = false;  // the line search already evaluated the current iterate
        report.newton_residual = 0;
        if (newton) start_from_predictor(h);
        m_exact_hessians = newton && exact_hessians_first();
        m_converged_iterations = 0;
        m_expanded_doublings = 0;
        m_expansion_ceiling = std::numeric_limits<int>::max();
        std::string trail, fractions;  // relative residuals and line-search step fractions, for the failure message
        NewtonAttempt* traced = nullptr;
        if (newton) {
            report.attempts.emplace_back();
            traced = &report.attempts.back();
            traced->h = static_cast<double>(h);
        }
        for (int k = 0; k <= iterations; ++k) {
            // Iteration k's system; k == iterations only measures the residual.
            const bool measure_only = k == iterations;
            if (measure_only && !newton) break;  // one-step scheme: no residual check
            auto t0 = std::chrono::steady_clock::now();
            // Converged at this iterate (k updates taken): the bookkeeping of both tests below.
            const auto converged = [&]() {
                if (traced) traced->converged = true;
                m_expected_iterations = k;
                report.assembly_seconds += seconds_since(t0);
            };
            if (k == 0 && !newton) {
                if (!(m_first_iteration_ready && m_energies_valid && m_last_h == h)) evaluate(h, first_inputs());
            } else if (!evaluated) {
                evaluate(h, iterate_inputs());
            }
            evaluated = false;
            m_first_iteration_ready = false;
            assemble_vector(m_map, m_rhs_contributions, m_rhs);
            const T norm = filtered_norm(m_rhs);
            if (k == 0) initial_norm = norm;
            const Merit<T> merit = newton ? incremental_potential(h) : Merit<T>{};
            if (!std::isfinite(static_cast<double>(norm))) {
                report.message = "non-finite right-hand side at Newton iteration " + std::to_string(k);
                report.assembly_seconds += seconds_since(t0);
                return false;
            }
            if (k > 0) {
                // Scale: max(‖S b_0‖, h ‖S f_k‖). b_0 = h (f_0 + h K_0 v_n) vanishes for a
                // free rigid motion of an unstressed body (nothing to correct at the
                // linearization point), while the step still balances the forces h f_k.
                // f_k: assembled at this iterate by incremental_potential above
                // (k > 0 happens in full Newton only).
                const T force_scale = h * filtered_norm(m_force);
                const T scale = initial_norm > force_scale ? initial_norm : force_scale;
                report.newton_residual = scale > T(0) ? static_cast<double>(norm / scale) : 0.0;
                trail += (k > 1 ? ", " : "") + short_number(report.newton_residual);
                if (traced) traced->residuals.push_back(report.newton_residual);
                if (norm <= m_options.newton_tolerance * scale || norm <= m_resolution_floor) {
                    converged();
                    break;
                }
                if (measure_only) {
                    report.assembly_seconds += seconds_since(t0);
                    report.message = "Newton did not converge in " + std::to_string(iterations) +
                                     " iterations (relative residual " + std::to_string(report.newton_residual) +
                                     "; after each iteration: " + trail + "; step fractions taken: " + fractions + ")";
                    return false;
                }
            }
            // The line search evaluated this iterate for its residual only.
            if (!m_jacobians_evaluated) evaluate(h, iterate_inputs());
            assemble_matrix(m_map, m_matrix_contributions, m_matrix);
            if (k == 0 && newton) {
                m_resolution_floor = resolution_floor(h);
                if (norm <= m_resolution_floor) {
                    // The predictor's residual is rounding noise already (a
                    // body at rest): converged with no update. Solving for
                    // the noise and line-searching it can fail the step.
                    converged();
                    break;
                }
            }
            report.assembly_seconds += seconds_since(t0);

            t0 = std::chrono::steady_clock::now();
            const int pcg_before = report.pcg_iterations;
            PcgResult<T> r = k == 0 ? solve_warm(h, norm) : solve_cold();
            if (m_exact_hessians && !(r.converged && descends())) {
                // The exact Hessians leave A indefinite here (or PCG failed on
                // them): this iteration again with the projected ones.
                report.pcg_iterations += r.iterations;
                report.projected_solves += 1;
                report.solve_seconds += seconds_since(t0);
                t0 = std::chrono::steady_clock::now();
                m_exact_hessians = false;
                evaluate(h, iterate_inputs());
                assemble_matrix(m_map, m_matrix_contributions, m_matrix);
                report.assembly_seconds += seconds_since(t0);
                t0 = std::chrono::steady_clock::now();
                r = k == 0 ? solve_warm(h, norm) : solve_cold();
            }
            report.solve_seconds += seconds_since(t0);
            report.pcg_iterations += r.iterations;
            if (r.converged) m_converged_iterations = r.iterations;
            report.pcg_residual = static_cast<double>(r.relative_residual);
            report.pcg_status = r.status;
            if (r.spectrum_estimated) {
                const bool first = report.pcg_spectrum_solves == 0;
                const auto low = static_cast<double>(r.ritz_min), high = static_cast<double>(r.ritz_max);
                report.pcg_ritz_min = first ? low : std::min(report.pcg_ritz_min, low);
                report.pcg_ritz_max = first ? high : std::max(report.pcg_ritz_max, high);
                report.pcg_spectrum_solves += 1;
            }
            report.newton_iterations += 1;
            if (traced) traced->pcg.push_back(report.pcg_iterations - pcg_before);
            // Full Newton: a solve stopped by the iteration limit still gives a
            // usable update when it is close (inexact Newton; see
            // `inexact_solve_limit`): the line search and the residual
            // test decide as for any other update.
            const bool inexact = newton && !r.converged && r.status == PcgStatus::max_iterations_reached &&
                                 r.relative_residual <= inexact_solve_limit<T>() && descends();
            if (inexact) report.inexact_solves += 1;
            if (!r.converged && !inexact) {
                report.message = std::string("PCG ") + to_string(r.status) + " after " + std::to_string(r.iterations) +
                                 " iterations (relative residual " +
                                 std::to_string(static_cast<double>(r.relative_residual)) + ") at Newton iteration " +
                                 std::to_string(k);
                return false;
            }
            if (!newton) {
                apply_update(h, m_v, T(1));
                continue;
            }
            if (m_options.jacobian_check)
                check_jacobian(h, k, static_cast<int>(report.attempts.size()) - 1, norm, report);
            t0 = std::chrono::steady_clock::now();
            // The next iterate's system: exact first again. (Exact only below a
            // relative residual of 1e-2 was tried: more iterations and 1.5×
            // the time per step on tablecloth_friction, docs/scenes.md.)
            m_exact_hessians = exact_hessians_first();
            self().adjust_update(h);
            const LineSearch searched = line_search(h, k, norm, merit, report);
            report.assembly_seconds += seconds_since(t0);
            if (searched == LineSearch::failed) return false;
            if (searched == LineSearch::round_off) {  // converged as far as the arithmetic resolves
                if (traced) traced->converged = true;
                m_expected_iterations = k + 1;
                break;
            }
            fractions += (k > 0 ? ", " : "") + short_number(static_cast<double>(m_step_fraction));
            if (traced) traced->fractions.push_back(static_cast<double>(m_step_fraction));
            // The same potential on new element lists: evaluate it there.
            evaluated = !self().rebracket_within_step();
            if (!evaluated) report.rebrackets += 1;
        }
        m_energies_valid = false;
        if (!state_finite()) {
            report.message = "non-finite positions or velocities after the update";
            return false;
        }
        const T speed = thrust::transform_reduce(thrust::device, m_v.begin(), m_v.end(), stepper_detail::Magnitude<T>{},
                                                 T(0), stepper_detail::Maximum<T>{});
        report.max_speed = static_cast<double>(speed);
        if (speed > m_options.max_speed) {
            report.message = "a velocity of " + std::to_string(static_cast<double>(speed)) +
                             " m/s after the update exceeds solver max_speed = " +
                             std::to_string(static_cast<double>(m_options.max_speed)) + " m/s (blow-up)";
            return false;
        }
        std::string rejected;
        if (!self().accept_step(rejected)) {
            report.message = rejected;
            return false;
        }
        // This step's v_{n+1} − v_n starts the next step's first solve.
        thrust::transform(thrust::device, m_v.begin(), m_v.end(), m_v_start.begin(), m_guess.begin(),
                          thrust::minus<T>{});
        m_guess_step = h;
        self().after_step();
        return true;
    }

    /// StepperOptions::jacobian_check at iteration k (see JacobianCheck): the
    /// residual at v ± εΔv, then the iterate restored exactly (q, v, v − v_n,
    /// the element buffers, b and f), so the run goes on as without it.
    void check_jacobian(T h, int k, int attempt, T norm, BackendStepReport& report)
    {
        const std::size_t n = m_q.size();
        JacobianCheck c;
        c.attempt = attempt;
        c.iteration = k;
        c.exact_hessians = m_exact_hessians;
        c.update_norm = static_cast<double>(filtered_norm(m_dv));
        c.residual_norm = static_cast<double>(norm);
        thrust::device_vector<T> product(n);
        spmv(m_matrix, m_dv, product);
        const std::vector<T> ad = to_host(product), b = to_host(m_rhs);
        const std::vector<unsigned char> free_dof(m_free.begin(), m_free.end());
        // Where the residual sits.
        std::vector<std::pair<double, std::size_t>> rows;
        double total = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (!free_dof[i]) continue;
            const double x = static_cast<double>(b[i]);
            rows.emplace_back(x * x, i);
            total += x * x;
        }
        const std::size_t top = std::min<std::size_t>(8, rows.size());
        std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(top), rows.end(),
                          [](const auto& x, const auto& y) { return x.first > y.first; });
        double top_sum = 0;
        for (std::size_t r = 0; r < top; ++r) top_sum += rows[r].first;
        c.top_share = total > 0 ? top_sum / total : 0.0;
        if (top > 0) {
            c.largest_node = static_cast<long>(rows[0].second / B);
            c.largest_component = static_cast<int>(rows[0].second % B);
        }
        // Per kind of element: its part of A Δv, from its matrix contributions
        // alone (before the evaluations below overwrite them); "rest" last.
        const std::vector<ContributionTerm> kinds = self().contribution_terms();
        if (!kinds.empty() && (kinds.back().matrix_end != static_cast<std::size_t>(m_map.matrix_contributions()) ||
                               kinds.back().vector_end != static_cast<std::size_t>(m_map.vector_contributions())))
            throw std::logic_error("contribution_terms() does not cover the assembly map's contributions");
        std::vector<std::vector<T>> term_ad;
        for (const ContributionTerm& t : kinds) {
            BsrMatrix<T, B> part = m_matrix;
            assemble_matrix(m_map, term_contributions(m_matrix_contributions, t.matrix_begin, t.matrix_end, B * B),
                            part);
            spmv(part, m_dv, product);
            term_ad.push_back(to_host(product));
        }
        if (!kinds.empty()) term_ad.push_back(rest_of(ad, term_ad));
        // Per element: the element contributions themselves, and the node of
        // each vector contribution (the assembly map's grouping inverted).
        const bool per_element =
            std::any_of(kinds.begin(), kinds.end(), [](const ContributionTerm& t) { return t.nodes > 0; });
        std::vector<T> element_blocks, dv;
        std::vector<Index> contribution_node;
        if (per_element) {
            element_blocks = to_host(m_matrix_contributions);
            dv = to_host(m_dv);
            contribution_node = vector_contribution_nodes(m_map);
        }
        // The central differences along Δv.
        const thrust::device_vector<T> q0 = m_q, v0 = m_v, mass_velocity0 = m_mass_velocity, rhs0 = m_rhs,
                                       force0 = m_force;
        const double ad_norm = filtered_host_norm(ad, free_dof);
        c.terms.resize(term_ad.size());
        for (std::size_t t = 0; t < term_ad.size(); ++t) {
            c.terms[t].name = t < kinds.size() ? kinds[t].name : "rest";
            c.terms[t].product = ad_norm > 0 ? filtered_host_norm(term_ad[t], free_dof) / ad_norm : 0.0;
        }
        for (int e = 0; e < 2; ++e) {
            const T eps = T(jacobian_check_steps[e]);
            std::vector<T> side[2];
            std::vector<std::vector<T>> term_side[2];
            std::vector<T> element_side[2];
            for (int sign = 0; sign < 2; ++sign) {
                apply_update(h, v0, sign == 0 ? eps : -eps);
                evaluate(h, iterate_inputs());
                assemble_vector(m_map, m_rhs_contributions, m_rhs);
                side[sign] = to_host(m_rhs);
                if (per_element) element_side[sign] = to_host(m_rhs_contributions);
                for (const ContributionTerm& t : kinds) {
                    thrust::device_vector<T> part(m_rhs.size());
                    assemble_vector(m_map, term_contributions(m_rhs_contributions, t.vector_begin, t.vector_end, B),
                                    part);
                    term_side[sign].push_back(to_host(part));
                }
                if (!kinds.empty()) term_side[sign].push_back(rest_of(side[sign], term_side[sign]));
            }
            const auto relative = [ad_norm](double x) {
                return ad_norm > 0 ? x / ad_norm : (x > 0 ? std::numeric_limits<double>::infinity() : 0.0);
            };
            c.mismatch[e] = relative(difference_norm(ad, side, eps, free_dof, c.worst_node[e], c.worst_component[e]));
            for (std::size_t t = 0; t < term_ad.size(); ++t) {
                const std::vector<T> term_sides[2] = {term_side[0][t], term_side[1][t]};
                JacobianCheck::Term& term = c.terms[t];
                term.mismatch[e] = relative(difference_norm(term_ad[t], term_sides, eps, free_dof, term.worst_node[e],
                                                            term.worst_component[e]));
                if (t >= kinds.size() || kinds[t].nodes == 0) continue;
                const ContributionTerm& kind = kinds[t];
                double worst = 0;
                term.worst_element[e] =
                    worst_element(kind, element_blocks, dv, element_side, eps, contribution_node, free_dof, worst);
                term.element_mismatch[e] = relative(worst);
                for (std::size_t i = 0; term.worst_element[e] >= 0 && i < kind.nodes; ++i)
                    term.element_nodes[e].push_back(
                        contribution_node[kind.vector_begin +
                                          static_cast<std::size_t>(term.worst_element[e]) * kind.nodes + i]);
            }
        }
        m_q = q0;
        m_v = v0;
        m_mass_velocity = mass_velocity0;
        evaluate(h, iterate_inputs());
        m_rhs = rhs0;
        m_force = force0;
        report.jacobian_checks.push_back(c);
    }

    /// check_jacobian: ‖a − d_ε‖ over the free DoFs, d_ε = −(side[0] −
    /// side[1]) / (2ε), and where |a − d_ε| is largest.
    static double difference_norm(const std::vector<T>& a, const std::vector<T> (&side)[2], T eps,
                                  const std::vector<unsigned char>& free_dof, long& worst_node, int& worst_component)
    {
        double num = 0, worst = -1;
        for (std::size_t i = 0; i < a.size(); ++i) {
            if (!free_dof[i]) continue;
            const double fd = -static_cast<double>(side[0][i] - side[1][i]) / (2 * static_cast<double>(eps));
            const double d = static_cast<double>(a[i]) - fd;
            num += d * d;
            if (std::abs(d) > worst) {
                worst = std::abs(d);
                worst_node = static_cast<long>(i / B);
                worst_component = static_cast<int>(i % B);
            }
        }
        return std::sqrt(num);
    }

    static double filtered_host_norm(const std::vector<T>& x, const std::vector<unsigned char>& free_dof)
    {
        double sum = 0;
        for (std::size_t i = 0; i < x.size(); ++i)
            if (free_dof[i]) sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
        return std::sqrt(sum);
    }

    /// check_jacobian: `whole` less the sum of `parts`.
    static std::vector<T> rest_of(const std::vector<T>& whole, const std::vector<std::vector<T>>& parts)
    {
        std::vector<T> rest = whole;
        for (const std::vector<T>& p : parts)
            for (std::size_t i = 0; i < rest.size(); ++i) rest[i] -= p[i];
        return rest;
    }

    /// check_jacobian: the node of each vector contribution (the inverse of
    /// the map's grouping by node).
    static std::vector<Index> vector_contribution_nodes(const AssemblyMap<B>& map)
    {
        const std::vector<Index> ptr = to_host(map.node_source_ptr()), sources = to_host(map.node_sources());
        std::vector<Index> node(sources.size(), Index(-1));
        for (std::size_t n = 0; n + 1 < ptr.size(); ++n)
            for (Index k = ptr[n]; k < ptr[n + 1]; ++k)
                node[static_cast<std::size_t>(sources[static_cast<std::size_t>(k)])] = static_cast<Index>(n);
        return node;
    }

    /// check_jacobian: the element of `term` (K = term.nodes nodes each)
    /// whose own ‖A_e Δv − d_ε,e‖ over its free rows is largest, with
    /// A_e Δv from its K² blocks (`blocks`, all matrix contributions) and
    /// d_ε,e = −(side[0] − side[1]) / (2ε) from its K vector contributions
    /// at v ± εΔv (`side`, all of them). Its index within the term (−1
    /// without elements); `norm` its mismatch.
    static long worst_element(const ContributionTerm& term, const std::vector<T>& blocks, const std::vector<T>& dv,
                              const std::vector<T> (&side)[2], T eps, const std::vector<Index>& contribution_node,
                              const std::vector<unsigned char>& free_dof, double& norm)
    {
        const std::size_t K = term.nodes, count = (term.vector_end - term.vector_begin) / K;
        long worst = -1;
        norm = 0;
        for (std::size_t el = 0; el < count; ++el) {
            const std::size_t first_vector = term.vector_begin + el * K, first_block = term.matrix_begin + el * K * K;
            double sum = 0;
            for (std::size_t i = 0; i < K; ++i) {
                const auto row_node = static_cast<std::size_t>(contribution_node[first_vector + i]);
                for (int r = 0; r < B; ++r) {
                    if (!free_dof[row_node * B + static_cast<std::size_t>(r)]) continue;
                    double product = 0;
                    for (std::size_t j = 0; j < K; ++j) {
                        const T* a = blocks.data() + (first_block + i * K + j) * B * B + r * B;
                        const auto col_node = static_cast<std::size_t>(contribution_node[first_vector + j]);
                        for (int c = 0; c < B; ++c)
                            product += static_cast<double>(a[c]) * static_cast<double>(dv[col_node * B + c]);
                    }
                    const std::size_t at = (first_vector + i) * B + static_cast<std::size_t>(r);
                    const double difference = -static_cast<double>(side[0][at] - side[1][at]) / (2 * double(eps));
                    sum += (product - difference) * (product - difference);
                }
            }
            if (worst < 0 || std::sqrt(sum) > norm) {
                worst = static_cast<long>(el);
                norm = std::sqrt(sum);
            }
        }
        return worst;
    }

    /// check_jacobian: a copy of the contribution buffer `all` that is zero
    /// outside its contributions [begin, end) of `stride` scalars each.
    static thrust::device_vector<T> term_contributions(const thrust::device_vector<T>& all, std::size_t begin,
                                                       std::size_t end, std::size_t stride)
    {
        thrust::device_vector<T> part(all.size(), T(0));
        const auto first = all.begin() + static_cast<std::ptrdiff_t>(begin * stride);
        const auto last = all.begin() + static_cast<std::ptrdiff_t>(end * stride);
        thrust::copy(thrust::device, first, last, part.begin() + static_cast<std::ptrdiff_t>(begin * stride));
        return part;
    }

    /// The incremental potential E(v) of the current Newton iterate (see the
    /// file comment), from the evaluated element energies and the assembled
    /// b and f (assembles f).
    template <typename U>
    struct Merit {
        U value = U(0);      ///< E(v)
        U magnitude = U(0);  ///< the sum of its terms' magnitudes (what round-off scales with)
    };
    enum class LineSearch { moved, round_off, failed };

    Merit<T> incremental_potential(T h)
    {
        assemble_vector(m_map, m_force_contributions, m_force);
        const ElementEnergies<T> e =
            fixed_order_reduce(m_energies.begin(), m_energies.size(), ElementEnergies<T>{T(0), T(0), T(0), T(0)},
                               stepper_detail::PlusEnergies<T>{});
        const T inertia = fixed_order_transform_reduce(
            thrust::counting_iterator<std::size_t>(0), m_q.size(),
            stepper_detail::MassProduct<T>{h, raw(m_mass_velocity), raw(m_force), raw(m_rhs)}, T(0), thrust::plus<T>{});
        using std::abs;
        return Merit<T>{T(0.5) * inertia + e.elastic + e.gravity + h * e.dissipation,
                        T(0.5) * abs(inertia) + abs(e.elastic) + abs(e.gravity) + h * abs(e.dissipation)};
    }

    /// Full Newton starts at the predictor v = v_n, q = q_n + h v_n (on the
    /// manifold q = q_n + h v, so every iterate has a residual to compare),
    /// with the free DoFs' v_n scaled down by the model's feasibility bound
    /// where the full predictor would invert a segment, then adjusted by the
    /// model (`adjust_predictor`: nodes resting on colliders keep their
    /// depth); prescribed DoFs keep their velocity.
    void start_from_predictor(T h)
    {
        thrust::transform(thrust::device, m_v.begin(), m_v.end(), m_free.begin(), m_dv.begin(),
                          stepper_detail::ScaledFiltered<T>{T(1)});
        const T alpha = self().feasible_step_fraction(h, m_dv);
        const T scale = alpha > T(0) ? alpha : T(0);
        apply_update(h, m_v_start, scale - T(1));  // v = v_n − (1 − α) S v_n
        self().adjust_predictor(h);
    }

    /// Full Newton's update of iteration k along m_dv (see the file comment):
    /// the feasibility cap, then backtracking until ‖S b‖ (`norm` at the
    /// current iterate) or E (`merit`) decreases. `moved`: the iterate moved
    /// and its system is evaluated (the next iteration's). `round_off`: the
    /// full update would change E by less than round-off in E's terms
    /// (|bᵀ Δv| ≤ 100 ε_machine Σ|terms|): the iterate is converged as far as
    /// the arithmetic resolves (e.g. a sheet at rest on a collider, where the
    /// residual is the rounding of large cancelling forces, amplified by the
    /// 1/h of the incremental strain rate), and stays where it is.
    LineSearch line_search(T h, int k, T norm, const Merit<T>& merit, BackendStepReport& report)
    {
        using std::abs;
        // −∇E · Δv = bᵀ Δv (Δv is 0 on prescribed DoFs): > 0 for a descent direction.
        const T slope = dot(m_rhs, m_dv);
        if (k > 0 && abs(slope) <= T(100) * std::numeric_limits<T>::epsilon() * merit.magnitude)
            return LineSearch::round_off;
        T alpha = self().feasible_step_fraction(h, m_dv);
        if (!(alpha > T(0))) {
            report.message = "no feasible Newton update at iteration " + std::to_string(k) +
                             " (the model's feasibility bound is " + std::to_string(static_cast<double>(alpha)) + ")";
            return LineSearch::failed;
        }
        if (alpha < T(1)) report.feasibility_limits += 1;
        check_expansion_reversed();
        m_v_base = m_v;
        // The incremental potential first, where Δv descends it; the residual
        // norm only if that finds no decrease (or Δv does not descend E: the
        // terms that are not exact gradients). Either merit alone, never
        // both at once: accepting whichever decreases lets the two undo each
        // other's steps (a 2-cycle between a stuck and a slipping state was
        // seen at the stick transition of friction).
        const T first_alpha = alpha;
        const int passes = slope > T(0) ? 2 : 1;
        for (int pass = 0; pass < passes; ++pass) {
            const bool by_energy = passes == 2 && pass == 0;
            alpha = first_alpha;
            for (int cut = 0;; ++cut) {
                apply_update(h, m_v_base, alpha);
                evaluate(h, trial_inputs(k));
                assemble_vector(m_map, m_rhs_contributions, m_rhs);
                const T trial = filtered_norm(m_rhs);
                if (std::isfinite(static_cast<double>(trial))) {
                    const T energy = by_energy ? incremental_potential(h).value : T(0);
                    if (by_energy ? energy <= merit.value - T(1e-4) * alpha * slope
                                  : trial <= (T(1) - T(1e-4) * alpha) * norm) {
                        m_step_fraction = alpha;
                        if (by_energy && alpha == T(1)) expand(h, k, merit.value, slope, energy, report);
                        return LineSearch::moved;
                    }
                }
                if (cut >= m_options.line_search_cuts) break;
                alpha *= T(0.5);
                report.line_search_cuts += 1;
            }
        }
        report.message =
            "Newton line search found no decrease of the incremental potential or the residual at "
            "iteration " +
            std::to_string(k) + " (step fraction down to " + std::to_string(static_cast<double>(alpha)) + ")";
        return LineSearch::failed;
    }

    /// After a full update accepted by the incremental potential: where E fell
    /// by more than bᵀΔv, twice the decrease ½ bᵀΔv of its quadratic model
    /// with the positive definite A, E is concave along Δv (A lacks that
    /// negative curvature: the element Hessians were projected onto the PSD
    /// cone, or E's curvature changes along the update). That
    /// happens when the step's own potential is not convex, e.g. when a yarn
    /// compressed within the step buckles: an update of the projected Newton
    /// iteration then grows the buckling mode by a fixed factor only (×1.3 per
    /// iteration was measured on a hanging patch whose pinned top yarn was
    /// compressed; 27 iterations to converge), while E keeps falling. Here
    /// the update is doubled while E falls by the Armijo fraction and the
    /// model's feasibility bound allows it, at most `line_search_expansions`
    /// times (a descent method with an expanding step: E still decreases
    /// monotonically). When the update after an expanded one points back
    /// against it (Δv_{k+1} · Δv_k < 0), the expansion overshot, and later
    /// expansions of the attempt stay below the multiple that overshot (one
    /// doubling fewer; each reversal lowers the ceiling again). Without that
    /// ceiling, a step of tablecloth_three with collision alternated between
    /// updates expanded 16 times and the updates that undid them (relative
    /// residual 2e-4, 3e-3, 2.5e-4, 4e-3, …, growing over 12 iterations while
    /// E fell) and failed after 10 halvings. Stopping expansions at the first
    /// reversal instead lost the buckling test's convergence (absolute
    /// eigenvalues: its first expansion, 16 times, overshoots, and later
    /// ones still help). On return the iterate is evaluated, as after
    /// `line_search`, and m_step_fraction is the update's multiple.
    void expand(T h, int k, T start_value, T slope, T energy, BackendStepReport& report)
    {
        if (!(start_value - energy > slope)) return;
        T alpha = T(1), best = energy;
        bool moved_past = false;  // the state is at 2α (rejected), not at α
        int doublings = 0;
        for (int e = 0; e < m_options.line_search_expansions && e < m_expansion_ceiling; ++e) {
            scale_update(T(2));
            if (!(self().feasible_step_fraction(h, m_dv) >= T(1))) {
                scale_update(T(0.5));
                break;
            }
            apply_update(h, m_v_base, T(1));
            evaluate(h, trial_inputs(k));
            assemble_vector(m_map, m_rhs_contributions, m_rhs);
            const T trial = filtered_norm(m_rhs);
            const T value = std::isfinite(static_cast<double>(trial)) ? incremental_potential(h).value : best;
            if (!(value < best && value <= start_value - T(1e-4) * T(2) * alpha * slope)) {
                scale_update(T(0.5));
                moved_past = true;
                break;
            }
            alpha *= T(2);
            best = value;
            ++doublings;
            report.line_search_expansions += 1;
        }
        if (moved_past) {
            apply_update(h, m_v_base, T(1));
            evaluate(h, trial_inputs(k));
        }
        m_step_fraction = alpha;
        if (doublings > 0) {
            m_expanded_update = m_dv;
            m_expanded_doublings = doublings;
        }
    }

    /// Before the line search of a new update: where it reverses the last
    /// one and that was expanded, later expansions stay below that one's
    /// doublings (see `expand`).
    void check_expansion_reversed()
    {
        if (m_expanded_doublings == 0) return;
        if (dot(m_dv, m_expanded_update) < T(0)) m_expansion_ceiling = m_expanded_doublings - 1;
        m_expanded_doublings = 0;
    }

    /// Δv ← factor Δv on the free DoFs.
    void scale_update(T factor)
    {
        thrust::transform(thrust::device, m_dv.begin(), m_dv.end(), m_free.begin(), m_dv.begin(),
                          stepper_detail::ScaledFiltered<T>{factor});
    }

    bool exact_hessians_first() const { return m_options.exact_hessians && self().has_exact_hessians(); }

    /// Whether the solved Δv descends the incremental potential: bᵀΔv > 0.
    bool descends() const { return dot(m_rhs, m_dv) > T(0); }

    /// The model's PCG settings; a solve with the exact Hessians stops at
    /// twice the iterations of this step's last converged solve (at least
    /// 100): where PCG does not meet the negative curvature of an indefinite
    /// A, it would otherwise run to its limit before the projected retry.
    PcgOptions<T> solve_options() const
    {
        PcgOptions<T> options = self().pcg_options();
        if (m_exact_hessians) {
            const int cap = 2 * m_converged_iterations > 100 ? 2 * m_converged_iterations : 100;
            if (cap < options.max_iterations) options.max_iterations = cap;
        }
        return options;
    }

    /// A Δv = b from Δv = 0 (later Newton iterations).
    PcgResult<T> solve_cold()
    {
        thrust::fill(thrust::device, m_dv.begin(), m_dv.end(), T(0));
        if (m_options.linear == LinearSolver::cholmod) return m_direct.solve(m_matrix, m_rhs, m_free, m_dv);
        return run_pcg(m_rhs, m_dv, solve_options());
    }

    /// Filtered PCG on the assembled matrix; with the multilevel
    /// preconditioner, its hierarchy is prepared first (built or reused) and
    /// told the outcome (a failed or slow solve makes the next one rebuild).
    PcgResult<T> run_pcg(const thrust::device_vector<T>& rhs, thrust::device_vector<T>& x, PcgOptions<T> options)
    {
        if (options.preconditioner != PcgPreconditioner::multilevel) {
            options.custom = nullptr;
            return solve_filtered_pcg(m_matrix, rhs, m_free, x, m_workspace, options);
        }
        m_multilevel.set_lines(options.lines);
        if (!m_multilevel.prepare(m_matrix, m_free, m_q)) {
            PcgResult<T> failed;
            failed.status = PcgStatus::indefinite_preconditioner;
            return failed;
        }
        const auto start = std::chrono::steady_clock::now();
        // A solve that failed with kept finest line factors
        // (MultilevelOptions::line_factor_tolerance) is redone with every line factored.
        const PcgResult<T> result =
            solve_filtered_pcg_multilevel(m_matrix, rhs, m_free, x, m_workspace, options, m_multilevel, m_pcg_start);
        m_multilevel.record_solve(result.converged, result.iterations,
                                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        return result;
    }

    /// First Newton iteration, warm-started from the previous step's
    /// velocity change g (scaled to this step size): solve A δ = S (b − A g)
    /// and Δv = g + δ, with the tolerance still relative to ‖S b‖. In free
    /// fall or steady motion g is nearly the answer and PCG has little left to
    /// do; a stiff cloth otherwise needs hundreds of iterations to rebuild the
    /// smooth, global part of Δv from scratch every step.
    PcgResult<T> solve_warm(T h, T rhs_norm)
    {
        if (!(m_guess_step > T(0)) || m_options.linear == LinearSolver::cholmod) return solve_cold();
        const T scale = h / m_guess_step;
        thrust::transform(thrust::device, m_guess.begin(), m_guess.end(), m_free.begin(), m_dv.begin(),
                          stepper_detail::ScaledFiltered<T>{scale});
        spmv(m_matrix, m_dv, m_product);
        const auto first =
            thrust::make_zip_iterator(thrust::make_tuple(m_rhs.begin(), m_product.begin(), m_free.begin()));
        thrust::transform(thrust::device, first, first + m_rhs.size(), m_residual.begin(),
                          pcg_detail::FilteredDifference<T>{});
        const T residual_norm = filtered_norm(m_residual);
        const T target = m_options.pcg.tolerance * rhs_norm;
        if (!(residual_norm > target)) {
            PcgResult<T> done;
            done.status = PcgStatus::converged;
            done.converged = true;
            done.iterations = 0;
            done.relative_residual = rhs_norm > T(0) ? residual_norm / rhs_norm : T(0);
            return done;
        }
        PcgOptions<T> options = solve_options();
        options.tolerance = target / residual_norm;
        thrust::fill(thrust::device, m_correction.begin(), m_correction.end(), T(0));
        PcgResult<T> r = run_pcg(m_residual, m_correction, options);
        axpy(T(1), m_correction, m_dv);
        r.relative_residual = r.relative_residual * residual_norm / rhs_norm;  // relative to ‖S b‖
        return r;
    }

    bool advance(T h, int depth, BackendStepReport& report)
    {
        for (int attempt = 0;; ++attempt) {
            self().begin_attempt(h);
            const thrust::device_vector<T> q0 = m_q;
            const thrust::device_vector<T> v0 = m_v;
            self().save_extra();
            const std::size_t traced = report.attempts.size();
            const int iterations_before = report.newton_iterations;
            const bool stepped = newton_step(h, report);
            if (report.attempts.size() > traced) {
                NewtonAttempt& a = report.attempts.back();
                a.iterations = report.newton_iterations - iterations_before;
                a.halvings = depth;
                a.accepted = stepped;
                if (!stepped) a.message = report.message;
            }
            if (stepped) {
                report.substeps += 1;
                report.halvings = depth > report.halvings ? depth : report.halvings;
                report.message.clear();
                return true;
            }
            if (report.first_failure.empty()) report.first_failure = report.message;
            m_q = q0;
            m_v = v0;
            self().restore_extra();
            m_energies_valid = false;
            m_first_iteration_ready = false;
            if (!(attempt < m_options.max_retries && self().retry_attempt())) break;
            report.retries += 1;
        }
        if (depth >= m_options.max_halvings) {
            report.halvings = depth;
            report.message += " (time step " + std::to_string(static_cast<double>(h)) + " s after " +
                              std::to_string(depth) + " halvings)";
            return false;
        }
        return advance(h / T(2), depth + 1, report) && advance(h / T(2), depth + 1, report);
    }

    AssemblyMap<B> m_map;
    thrust::device_vector<T> m_matrix_contributions, m_rhs_contributions, m_force_contributions;
    thrust::device_vector<ElementEnergies<T>> m_energies;
    BsrMatrix<T, B> m_matrix;
    thrust::device_vector<T> m_rhs, m_force;
    thrust::device_vector<T> m_dv, m_zero, m_mass_velocity, m_q_start, m_v_start, m_v_base;
    thrust::device_vector<T> m_pcg_start;         ///< run_pcg's start, kept for a redone solve
    thrust::device_vector<T> m_q_step, m_v_step;  ///< state at the start of step(), restored if it fails
    thrust::device_vector<T> m_guess, m_product, m_residual, m_correction;
    T m_guess_step = T(0);                ///< step size of m_guess; 0: no guess yet
    T m_step_fraction = T(1);             ///< the step fraction α of the last accepted line search
    bool m_exact_hessians = false;        ///< the next full-Newton evaluation takes the exact element Hessians
    bool m_jacobians_evaluated = false;   ///< the last evaluation filled the matrix contributions (not forces_only)
    int m_converged_iterations = 0;       ///< PCG iterations of this step's last converged solve
    int m_expected_iterations = 1;        ///< Newton iterations of the last converged attempt (trial_inputs)
    thrust::device_vector<T> m_abs_rows;  ///< rowsum|A| (resolution_floor)
    T m_resolution_floor = T(0);          ///< ‖S b‖ below which Newton has converged (resolution_floor)
    thrust::device_vector<T> m_expanded_update;  ///< the last update that `expand` lengthened
    int m_expanded_doublings = 0;                ///< doublings of the last accepted update (0: not expanded)
    int m_expansion_ceiling = 0;                 ///< this attempt's bound on doublings (lowered by reversals)
    PcgWorkspace<T, B> m_workspace;
    CholmodSolver<T, B> m_direct;                 ///< StepperOptions::linear == cholmod
    MultilevelPreconditioner<T, B> m_multilevel;  ///< PcgPreconditioner::multilevel, with StepperOptions::multilevel
    bool m_energies_valid = false;
    bool m_first_iteration_ready = false;
};

// The entry points that instantiate the whole step are defined out of the
// class body: not inline, so that an explicit instantiation declaration
// (WEFT_PRECOMPILED_STEPPERS, yarn_stepper.hpp) keeps a program that links
// weft::omp_steppers from instantiating them again.

template <typename T, int B, class Derived>
BackendStepReport ImplicitStepper<T, B, Derived>::step(T h)
{
    const auto start = std::chrono::steady_clock::now();
    BackendStepReport report;
    require_positive("time_step", h);
    m_q_step = m_q;
    m_v_step = m_v;
    const int builds_before = m_multilevel.builds();
    const int refreshes_before = m_multilevel.refreshes();
    const int keeps_before = m_multilevel.pattern_keeps();
    report.ok = advance(h, 0, report);
    report.multilevel_builds = m_multilevel.builds() - builds_before;
    report.multilevel_refreshes = m_multilevel.refreshes() - refreshes_before;
    report.multilevel_pattern_keeps = m_multilevel.pattern_keeps() - keeps_before;
    if (!report.ok) {
        m_q = m_q_step;
        m_v = m_v_step;
        m_energies_valid = false;
        m_first_iteration_ready = false;
    }
    report.total_seconds = stepper_detail::seconds_since(start);
    return report;
}

template <typename T, int B, class Derived>
void ImplicitStepper<T, B, Derived>::assemble(T h)
{
    evaluate(h, first_inputs());
    assemble_matrix(m_map, m_matrix_contributions, m_matrix);
    assemble_vector(m_map, m_rhs_contributions, m_rhs);
    assemble_vector(m_map, m_force_contributions, m_force);
}

template <typename T, int B, class Derived>
void ImplicitStepper<T, B, Derived>::assemble_newton(T h, const std::vector<T>& v)
{
    require_positive("time_step", h);
    if (v.size() != m_v.size()) {
        const std::string per_node = "must be " + std::to_string(B) + " x #nodes";
        throw InvalidInput(detail::describe("assemble_newton v.size()", v.size(), per_node.c_str()));
    }
    m_q_start = m_q;
    m_v_start = m_v;
    m_v_base.assign(v.begin(), v.end());
    thrust::fill(thrust::device, m_dv.begin(), m_dv.end(), T(0));
    apply_update(h, m_v_base, T(0));  // v, q = q_n + h v, v − v_n
    m_exact_hessians = full_newton() && exact_hessians_first();
    evaluate(h, iterate_inputs());
    assemble_matrix(m_map, m_matrix_contributions, m_matrix);
    assemble_vector(m_map, m_rhs_contributions, m_rhs);
    assemble_vector(m_map, m_force_contributions, m_force);
    m_q = m_q_start;
    m_v = m_v_start;
    m_energies_valid = false;
    m_first_iteration_ready = false;
}

template <typename T, int B, class Derived>
ElementEnergies<T> ImplicitStepper<T, B, Derived>::energies()
{
    if (!m_energies_valid) evaluate(m_last_h > T(0) ? m_last_h : T(1e-3), first_inputs());
    return fixed_order_reduce(m_energies.begin(), m_energies.size(), ElementEnergies<T>{T(0), T(0), T(0), T(0)},
                              stepper_detail::PlusEnergies<T>{});
}

}  // namespace weft
