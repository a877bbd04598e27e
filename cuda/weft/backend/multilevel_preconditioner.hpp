#pragma once
/// @file multilevel_preconditioner.hpp
/// Smoothed-aggregation algebraic multigrid (Vaněk, Mandel & Brezina 1996),
/// as Tamstorf, Jones & McCormick (2015) use it for cloth, applied as the
/// preconditioner of the filtered PCG of pcg.hpp: one symmetric V-cycle per
/// PCG iteration.
///
/// Filter. PCG solves S A x = S b on the free DoFs (Baraff–Witkin). The
/// hierarchy is built for the prefiltered matrix Â = S A S + (I − S): the
/// near-null-space vectors are zeroed on constrained DoFs, so the prolongators
/// have zero rows there, and every smoother leaves constrained DoFs at zero.
/// z = M⁻¹ r is therefore zero wherever S is, as PCG requires.
///
/// Near-null space, per node of the finest level: the six rigid-body modes
/// (three translations, three rotations about the axes through the centroid
/// of the nodes) on the position DoFs, and one unit mode for each further
/// DoF of a node (the arc lengths s_a, s_b of a 5-DoF yarn node). So the
/// coarse levels carry K = 6 (triangles) or K = 8 (yarns) DoFs per aggregate.
///
/// Setup (host, Eigen): strength of connection between node blocks,
/// ‖Â_ij‖_F ≥ θ √(‖Â_ii‖_F ‖Â_jj‖_F); greedy aggregation in three passes;
/// the tentative prolongator from a QR factorization of each aggregate's
/// near-null rows (the R factors are the next level's near-null space); the
/// prolongator smoothed by one damped block-Jacobi step,
/// P = (I − ω D⁻¹ Â) P_tent with ω = 4 / (3 λ_max(D⁻¹ Â)); the Galerkin
/// coarse matrix Pᵀ Â P; the coarsest matrix inverted densely.
///
/// Apply (device, Thrust; one source for CUDA and CPU threads): a V-cycle
/// with Chebyshev smoothing on block-Jacobi D⁻¹Â (the same polynomial before
/// and after the coarse correction) over [λ / ratio, λ], λ = ‖D⁻¹Â‖_∞ ≥ λ_max. With
/// the same symmetric smoother before and after, the V-cycle is symmetric,
/// and it is positive definite whenever each smoother converges in the
/// energy norm of its level, for any positive definite coarse operator.
///
/// Yarn-line smoothing (MultilevelOptions::smoother = yarn_lines, with a
/// LineSet given by set_lines()): on the finest level the Chebyshev smoother
/// is replaced by block Gauss–Seidel by yarns: exact solves of the warp
/// yarns, then the weft yarns, each family split into colour classes of
/// mutually uncoupled yarns (colored_line_set, once per pattern), a forward
/// sweep before the coarse correction and the backward sweep after it
/// (sweep_lines). Stretch ties a yarn's nodes far more strongly along it
/// than to the neighbouring yarns, and a point smoother leaves the error
/// that is smooth along each yarn and varies from yarn to yarn
/// (benchmarks/RESULTS.md, "Why the yarn iterations grow"); a line solve
/// removes it. Each class update is an exact subspace correction, so the
/// sweep contracts in Â's energy norm and the V-cycle (backward sweep the
/// adjoint of the forward one) stays symmetric positive definite, whatever
/// the coupling between yarns. (Block Jacobi across all the yarns of a
/// family, as in PCG's yarn_lines_symmetric, need not contract: on a
/// woven patch it made the V-cycle indefinite.) The coarse levels keep
/// Chebyshev. On CPU threads prepare() also copies the rows of the yarns
/// that run across the node order (the weft, when nodes are numbered warp
/// yarn by warp yarn) in line order (order_line_rows), so that each sweep
/// thread streams its yarn's rows instead of missing the cache on every row
/// (benchmarks/RESULTS.md "Line-ordered rows"); the square levels below
/// copy the rows of their columns of squares in the same way.
///
/// Yarn coarse space (MultilevelOptions::coarse_space = yarns, with the
/// LineSet given by set_lines(); 5-DoF yarn nodes). The error that survives
/// the yarn-line smoother is each yarn sliding and stretching on its own,
/// and the cloth's out-of-plane motion; node aggregates with rigid-body
/// modes represent neither well. The first coarse level instead takes runs of
/// `yarn_run` nodes along each yarn (two modes: the displacement along the
/// yarn's tangent and a unit change of its arc length) and squares of
/// `yarn_square` × `yarn_square` crossings (the displacement along the
/// normal times 1, u, v, u², uv, v²), the families' columns overlapping on
/// the positions (yarn_aggregates). Coarser levels join 2 runs of 2
/// neighbouring yarns, and 3 × 3 squares (join_yarn_aggregates). Each coarse
/// level's basis is changed so that its aggregates' diagonal blocks are the
/// identity (block_energy_basis): the coarse levels' Chebyshev on point
/// Jacobi is then Chebyshev on the aggregates' block Jacobi. The design and
/// its measurements outside weft: scripts/coarse_space_study.py and
/// benchmarks/RESULTS.md ("Coarse spaces that follow the yarns"); in weft
/// ("The yarn coarse space in the backend") it takes about as many
/// iterations as node aggregates on the sphere drop at a higher cost per
/// iteration, so nodes stay the default.
///
/// Square coarse space (MultilevelOptions::coarse_space = squares, with the
/// LineSet given by set_lines(); 5-DoF yarn nodes). The first coarse level
/// takes squares of `square_side` × `square_side` crossings from the lines
/// (the node on line a of family 0 and line b of family 1 at (a, b); lines
/// left over at a side, fewer than half a side, join the last full square:
/// LinePlaces::cell), with
/// nine modes each: the six rigid-body modes, the two arc lengths, and the
/// in-plane shear t_a v + t_b u (square_aggregates). The yarn-line smoother
/// leaves each yarn family sliding along itself by an amount that varies
/// smoothly across its yarns; with the rotation about the normal the shear
/// spans that sliding on a flat patch, which rigid-body aggregates miss.
/// Coarser levels join `square_join` × `square_join` squares, 2 × 2 by
/// default (the R factors carry the modes); below the first coarse level
/// each prolongator is then smoothed by the couplings of neighbouring
/// squares only (square_neighbour_couplings), so that every level's lines
/// of squares couple at most two aggregates apart, as the finest level's
/// yarns do. Every
/// coarse level but the coarsest is smoothed as the finest is, by block
/// Gauss–Seidel by lines: exact solves of the rows of squares, then of the
/// columns, each coloured into classes of uncoupled lines (colored_line_set
/// on a copy of the level in 9 × 9 blocks; a forward sweep before the coarse
/// correction, the backward one after it), so the V- and W-cycles stay
/// symmetric positive definite. A Chebyshev point smoother on the coarse
/// levels leaves the sliding error between neighbouring rows of squares as
/// the point smoother does on the finest level. The design and its
/// measurements outside weft: scripts/coarse_space_study.py and
/// benchmarks/RESULTS.md ("Which sliding modes the coarse space needs", "W-
/// cycles and K-cycles with the shear mode"); in weft: "The square coarse
/// space in the backend".
///
/// W-cycle (MultilevelOptions::cycle = w): each coarse level above the
/// coarsest is cycled twice per visit of the level above, the second time
/// on the residual the first left, and the two corrections summed. With
/// symmetric smoothing this is (I − (I − B A)²) A⁻¹ for the level's cycle B,
/// symmetric and positive definite whenever B is and ‖I − BA‖_A < 1.
///
/// Reuse. The finest level always uses the current matrix (its block
/// inverses are refreshed at each prepare()); the coarse levels are kept while
/// the sparsity pattern and the filter are unchanged, and rebuilt when the
/// pattern changes (or the filter, with refresh off), when a solve with them
/// failed, or when a solve needed more than `rebuild_growth` times the
/// iterations of the first solve after the last build. Where the solves'
/// times are known (record_solve's `seconds`), a slow solve rebuilds only
/// once the stale hierarchy has cost as much as a build: the time of the
/// iterations above the first solve's count, summed over the solves since
/// the last build, must reach that build's time (the rent-or-buy rule,
/// which spends at most twice the least possible time in builds and stale
/// iterations together). On the GPU a yarn build takes
/// seconds on the host against milliseconds per iteration, and rebuilding on
/// iteration growth alone made the builds most of each step. builds() counts
/// the builds.
///
/// Keeping the coarse levels across patterns
/// (MultilevelOptions::keep_across_patterns). A new pattern or filter of the
/// same size may instead keep the coarse levels as they are: the finest
/// level's smoother is made for the new matrix (lines coloured again), and
/// only a slow solve rebuilds. The V-cycle stays symmetric positive definite
/// with coarse levels of an older matrix: with the pre-smoother M and the
/// post-smoother Mᵀ on the current Â, the two-level operator is
/// M⁻ᵀ(M + Mᵀ − Â)M⁻¹ + (I − M⁻ᵀÂ) P A_c⁻¹ Pᵀ (I − ÂM⁻¹), whose first term
/// is positive definite for a convergent smoother (block Gauss–Seidel, or
/// Chebyshev bounded by the current λ_max) and whose second is positive
/// semidefinite for any SPD A_c, Galerkin or not; the coarse correction is
/// added on the current free DoFs only. pattern_keeps() counts these.
///
/// Refresh (MultilevelOptions::refresh, default on_growth). While the pattern
/// and filter stay, what goes stale is the coarse matrices' values, not the
/// aggregates: a slow solve first renews only the values, A_l = P_lᵀ Â_{l−1}
/// P_l with the kept prolongators, on the device (fixed-pattern products, the
/// same source for CUDA and CPU threads; only the coarsest dense inverse,
/// at most coarse_dofs DoFs, is formed on the host), at the refresh's own
/// price in the rent-or-buy rule. With timed solves a refresh is also bought,
/// below the growth limit, once the iterations above the first solve after
/// the last build or refresh have cost as much as the last refresh (the
/// coarse values drift as contacts stiffen the cloth); the first refresh,
/// whose price is not known yet, is bought at the first slow solve. Where the
/// first solve after a refresh is still slow and no faster than the one that
/// asked for it (the aggregates or the near-null space no longer fit, e.g. a
/// sheet that rotated), the next slow solve rebuilds. refreshes() counts them.
/// A refresh's price is what it adds to a prepare(): the coarse levels'
/// products and inverses, not the finest level's renewal every prepare() makes.
///
/// Refreshing ahead. Rent or buy spends at most twice the least time where
/// the drift builds up over several solves; where one prepare's drift already
/// costs more than a refresh, it pays a stale solve for every refresh it buys.
/// So the first stale solve after each renewal (the second solve; the first
/// is fresh) is weighed on its own: where its iterations above the fresh
/// solve's cost at least the last refresh, every later prepare() refreshes
/// (refreshing_ahead(), refreshes_ahead()), as every_prepare does, and a slow
/// solve, which then has fresh values, rebuilds at the build's price. After
/// 4 fresh solves (or as many as the refreshes that stale solve cost, at
/// most 32) one prepare() keeps the values, and the stale solve after it
/// measures the drift again: it stays, and the interval doubles (or becomes
/// the refreshes this probe cost, if more; at most 32), or it ends, back to
/// rent or buy. A probe's stale solve thus costs no more than the refreshes
/// before it: at 400² in the drape a stale solve took 27–77 iterations
/// more than a fresh one, 6–17 s against a 0.44–0.66 s refresh
/// (benchmarks/RESULTS.md, "The sphere drop at 400² in the drape"). On the
/// 400² sphere drop in its first steps of contact, once the sphere presses,
/// the first stale solve after a refresh took 9–11
/// iterations more than the fresh one, 1.8–2.0 s against a 0.8–0.9 s
/// refresh; at 200², 1–2 iterations (45–110 ms) against 0.18–0.22 s
/// (benchmarks/RESULTS.md, "Refreshing ahead"). A refresh by rows (below)
/// that cost less than one iteration of the last timed solve (few rows
/// moved) is bought at every prepare() too, without probes:
/// it costs less than the least drift a stale solve can show, and where
/// nothing moved, at most that one iteration per solve. The first refresh
/// by rows, whose price is not known yet, is bought at the first timed
/// solve, so that a contact that starts later meets fresh coarse values.
/// Refreshing ahead, a refresh
/// resets the stale time at every prepare(), and what the fresh solves take
/// above the first after the build is the hierarchy's age (aggregates and
/// near-null modes made for the build's geometry): once it has cost a
/// build (aged_seconds()), the hierarchy is rebuilt, below the growth limit
/// too (aged_builds()). An aged build is judged by its first
/// aged_judged_solves fresh solves: where their mean is not below the mean
/// of the last as many fresh solves before it, the rebuild did not lower the
/// iterations (the cloth itself got harder, not the hierarchy older), and
/// the next aged build waits for twice the age (age_price_builds(), up to
/// max_age_price_builds builds); one that did lower them sets it back to one
/// build.
///
/// Renewing the modes (MultilevelOptions::renew_modes, square coarse space).
/// What ages is the first coarse level's near-null modes: each square's
/// rotations and sliding modes are computed from the node positions at the
/// build, and the cloth bends and turns away from them (benchmarks/RESULTS.md,
/// "What ages in the hierarchy"). So where the age asks for a build, the
/// hierarchy first renews what depends on the geometry, on its kept
/// aggregates and patterns (renew_tentatives, renew_prolongator): the
/// squares' modes for the current positions, orthonormalized per square, and
/// every coarser level's tentative prolongator from the R factors as a build
/// forms them (host, a few Gram–Schmidt passes per aggregate); then level by
/// level, as a refresh goes, each prolongator smoothed again,
/// P = T − ω D⁻¹ Â T with the build's ω and the level above's current matrix
/// (for levels below the first the couplings square_neighbour_couplings
/// keeps), on P's kept block pattern (device block products), R = Pᵀ, and
/// the level's Galerkin product with every row, whose diagonal decides again
/// which coarse DoFs are active (a mode dependent on the others in its
/// aggregate, e.g. a rotation about a line of nodes left free, changes with
/// the line's direction). The result is the build's hierarchy for the
/// current positions and matrix, but for ω below the first level (the
/// build's power iteration on the coarse matrices then) and the patterns
/// (the build's): with the same matrix the first level's prolongator and
/// coarse matrix are a fresh build's to round-off, and a woven patch turned
/// as a whole takes a fresh build's PCG iterations (27; 197 with the old
/// modes; test_line_preconditioner). A renewal is priced
/// as the age's build was, at its own last time (a refresh's before the
/// first), and judged the same way; while a build or renewal is judged, the
/// age buys nothing. One whose first fresh solves are no faster than those
/// before it sends the next aged renewal to a build, after which renewals
/// resume. mode_renewals() counts them.
/// A square coarse level (its aggregates all square_modes wide) refreshes in
/// blocks: Â P in (the level above's block) × 9 blocks and Pᵀ(Â P) in 9 × 9
/// blocks, straight into the level's blocked copy on the structural pattern
/// of the block product (BlockFixedPatternProduct): a refresh 3.5–4.9× faster on CPU
/// threads than the scalar products.
///
/// Refresh by rows (MultilevelOptions::refresh_tolerance, default 1e-2). Most
/// of a cloth's matrix does not change from one step to the next beyond
/// round-off: on the sphere drop the entries that move by more than 1 % of
/// their diagonal's scale per step lie in the contact region, a few percent
/// of the rows. A square level keeps the values of Â (the finest matrix, or
/// the level above's blocked copy) as each row was last taken; a refresh
/// takes again only the rows in which some entry moved by more than
/// τ sqrt(|Â_rr| |Â_cc|), recomputes their rows of Â P, and the rows of
/// Pᵀ (Â P) that sum one of them (the restriction's row reaches it), then
/// completes those rows, mirrors their blocks into the rows left of them,
/// and factors again only the coarse lines whose values that changed. The
/// coarse matrix is then Pᵀ Ã P (mirrored from its upper blocks) for an Ã
/// each of whose rows is within τ of Â's on the diagonal's scale: symmetric
/// by construction, and positive definite while those differences stay
/// small against Â's smallest eigenvalue, which the mass term bounds from
/// below; a level that fails to factor rebuilds the hierarchy as a failed
/// refresh always has. τ = 0 recomputes exactly the rows that changed, with
/// the same bits as recomputing every row. A new filter recomputes every
/// row. The comparison keeps one more copy of Â's values per square level
/// (about 0.6 GB on the 400² sphere drop, made after the host build, whose
/// peak memory it does not raise). refreshed_row_share()
/// counts the rows recomputed; benchmarks/RESULTS.md "Refresh by rows" has
/// the measurements.
///
/// Line factors by rows (MultilevelOptions::line_factor_tolerance, default
/// 1e-3). With yarn-line smoothing a prepare() factored every yarn line of
/// the finest level for the current matrix, although between two steps most
/// rows of A barely move on their diagonal's scale. It now factors
/// again only the lines with a node whose row of A has an entry that moved
/// by more than τ sqrt(|A_rr| |A_cc|) since that row was last taken
/// (TakeMovedRow on a float copy of A's values; factor_fine_lines); the
/// other lines keep their factors. A kept line's factors are then those of
/// an Ã_l within 2τ of A_l on the diagonal's scale (τ since its rows were
/// last taken, τ between that and the values the line was factored from),
/// while the sweeps' residuals read A itself. The backward sweep stays the
/// adjoint of the forward one, so the V-cycle stays symmetric; each line
/// update z ← z + Ã_l⁻¹ S (r − A z)_l contracts in A's energy norm, and the
/// V-cycle stays positive definite, while 2 Ã_l − A_l is positive definite:
/// while the differences are small against the line's smallest eigenvalue
/// on the diagonal's scale, which the mass term bounds from below and a
/// stiff yarn makes small. (On the woven patch of
/// test_line_preconditioner every entry moved by up to 1e-2 of itself left
/// a V-cycle that PCG found indefinite; 1e-3 did not.) Hence the default
/// 1e-3, and a fallback: a solve that fails with kept line factors
/// (kept_line_factors()) is the caller's to redo after factor_kept_lines(),
/// which factors every line and sets the tolerance aside for good;
/// solve_filtered_pcg_multilevel, the steppers' solve, does this
/// (line_factor_fallbacks()). A build, new coloured lines,
/// a new filter or a failed factorization factors every line.
/// line_refactor_share() counts the lines factored; benchmarks/RESULTS.md
/// "Line factors by rows" has the measurements.
///
/// Exact retakes (MultilevelOptions::exact_ritz_bound, default 2). With
/// current values the cycle's error propagation
/// E = (I − Sᵀ A)(I − P M_c⁻¹ Pᵀ A)(I − S A) is positive semidefinite in A's
/// inner product: the line sweeps contract in A's energy norm, the forward
/// and backward sweeps are adjoint, and each coarse level is the Galerkin
/// product under a cycle with the same property, down to the exact coarsest
/// solve. So M⁻¹ A = I − E has its eigenvalues in (0, 1]. Rows kept from
/// older matrices break that: the near-null modes' energy is a cancellation
/// of stiff terms far below the diagonal's scale that the tolerances
/// compare with, and a mix of rows from different matrices can leave a
/// coarse direction with far too little energy, which the cycle then
/// over-corrects. On a 400² patch hanging from one edge PCG's Ritz values
/// reached 933 (2.7e8 with a refresh at every prepare) and 21.6 iterations
/// per step, against 1.42 and 16.1 with every row refreshed
/// (benchmarks/RESULTS.md, "Exact retakes"). PCG's Lanczos matrix gives the
/// largest Ritz value of each solve at the cost of two scalars per
/// iteration (solve_filtered_pcg_multilevel asks for it and hands it over
/// by record_spectrum()); one above the bound, after a prepare that kept
/// rows or line factors of older matrices, makes the next prepare refresh
/// every coarse row and factor every finest line, and that solve is not
/// charged to the hierarchy's drift or age. exact_retakes() counts them.
/// That retake comes after the solve that shows the mix, which still pays
/// for it (on the hanging patch one such solve cost about 50 iterations).
/// So solve_filtered_pcg_multilevel also stops PCG at the first diagonal
/// entry of its Lanczos matrix above the bound (PcgOptions::ritz_stop: each
/// is a Rayleigh quotient of M⁻¹ S A S, so one above the bound proves an
/// eigenvalue above it), where the cycle kept rows or line factors
/// (retakable()); retake_exact() then takes every row at once and the
/// solve starts again from the same start. The stop sees the mix within
/// the first iterations where its outlying eigenvalue is well represented
/// in the right-hand side; the Ritz value at the solve's end catches the rest.
///
/// A new filter on the same pattern (EIL tags set or cleared, a pin) is
/// taken by a refresh too, where refreshes are on: the V-cycle adds the
/// coarse correction on the free DoFs only, so its first prolongator acts as
/// P' = S P, and the refresh forms the Galerkin P'ᵀ Â P' (FixedPatternProduct).
/// The V-cycle stays symmetric positive definite for any filter. DoFs freed
/// since the build have zero rows in P and are left to the smoother; the
/// growth rule rebuilds once that slows the solves. A coarse DoF whose
/// prolongator column the filter empties leaves a zero pivot, the refresh
/// fails and the hierarchy is rebuilt. filter_refreshes() counts them.
///
/// Single precision (MultilevelOptions::single_precision_matrix). The finest
/// level dominates a V-cycle's memory traffic (operator complexity about
/// 1.25 on the yarn sphere drop), so only it goes to float: prepare() rounds
/// the matrix's values, and with the yarn-line smoother the line factors, to
/// float copies; the smoother's residuals and the residual restricted to the
/// coarse level widen each float entry before its product, in T sums. The
/// V-cycle is then the symmetric one of a matrix within float rounding of
/// Â, its line solves within that rounding times the line's condition
/// number: symmetric by construction, and positive definite while those
/// errors stay small against the smoother's margin (test_line_preconditioner
/// checks both on a woven patch). PCG with PcgOptions::single_precision_matrix
/// iterates with the same float copy (matrix_values_single()). benchmarks/RESULTS.md "Single precision in the
/// V-cycle" has the measurements.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/gather.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <Eigen/Dense>
#include <Eigen/Sparse>

#include <weft/backend/bsr_matrix.hpp>
#include <weft/backend/device.hpp>
#include <weft/backend/line_preconditioner.hpp>
#include <weft/backend/pcg.hpp>
#include <weft/backend/slowest_mode.hpp>
#include <weft/backend/vector_ops.hpp>
#include <weft/core/config.hpp>
#include <weft/core/error.hpp>
#include <weft/core/solver_words.hpp>

namespace weft {

/// How the coarse levels follow a matrix whose values change while its
/// pattern and filter stay.
enum class MultilevelRefresh {
    /// Never: a slow solve rebuilds the hierarchy (aggregates, prolongators,
    /// coarse matrices) on the host.
    off,
    /// A slow solve (the rule of `rebuild_growth`) recomputes the coarse
    /// matrices' values P_lᵀ Â_{l−1} P_l on the device with the kept
    /// prolongators; it rebuilds only when the first solve after such a
    /// refresh is still slow.
    on_growth,
    /// Every prepare() recomputes the coarse matrices' values (the coarse
    /// levels always see the current matrix).
    every_prepare,
};

/// The smoother of the finest level (MultilevelOptions::smoother; scene key
/// solver.multilevel_smoother): Chebyshev on block Jacobi, or one symmetric
/// sweep of exact yarn-line solves (needs the yarns' LineSet, set_lines()).
enum class MultilevelSmoother { chebyshev, yarn_lines };

/// The aggregates of the coarse levels (MultilevelOptions::coarse_space;
/// scene key solver.multilevel_coarse_space): greedy aggregates of nodes
/// with the rigid-body and arc-length modes; runs along the yarns and
/// squares of crossings (see "Yarn coarse space" in the file comment); or
/// squares of crossings with the rigid-body, arc-length and in-plane shear
/// modes, smoothed on the coarse levels by lines of squares (see "Square
/// coarse space"). The last two need the yarns' LineSet, set_lines(), and
/// 5-DoF nodes.
enum class MultilevelCoarseSpace { nodes, yarns, squares };

/// The cycle (MultilevelOptions::cycle; scene key solver.multilevel_cycle):
/// a V-cycle visits each coarse level once per visit of the level above, a
/// W-cycle twice, the second time on the residual the first left.
enum class MultilevelCycle { v, w };

/// Settings of the smoothed-aggregation hierarchy.
struct MultilevelOptions {
    /// The finest level's smoother (see the file comment); the coarse levels use Chebyshev.
    MultilevelSmoother smoother = MultilevelSmoother::chebyshev;
    /// The coarse levels' aggregates (see MultilevelCoarseSpace).
    MultilevelCoarseSpace coarse_space = MultilevelCoarseSpace::nodes;
    /// Yarn coarse space: nodes per run along a yarn, and crossings per side
    /// of a square, on the first coarse level.
    int yarn_run = 8;
    int yarn_square = 4;
    /// Square coarse space: crossings per side of a square on the first
    /// coarse level (coarser levels join square_join × square_join squares). At least 3, so that
    /// each line of squares couples at most two squares apart (bending
    /// couples nodes two apart) and its exact solve is block-banded. Scene
    /// key solver.multilevel_square_side.
    int square_side = 3;
    /// Square coarse space: squares per side joined into each aggregate of
    /// the coarse levels below the first (at least 2). With 2 the
    /// prolongators below the first coarse level are smoothed by the
    /// couplings of neighbouring squares only, so that each level's lines of
    /// squares still couple at most two aggregates apart
    /// (square_neighbour_couplings). Scene key solver.multilevel_square_join.
    int square_join = 2;
    /// V- or W-cycle (see MultilevelCycle).
    MultilevelCycle cycle = MultilevelCycle::v;
    /// θ of the strength of connection on the finest level; 0 makes every
    /// stored coupling strong. Coarser levels always take θ = 0 (with θ > 0
    /// there, coarsening stalled on the sphere drop: singleton aggregates).
    double strength_threshold = 0.0;
    /// Coarsening stops at or below this many DoFs (the coarsest level is
    /// inverted densely, about n³ flops at every build and refresh: with 600
    /// a refresh of the 1,089-node stvk_swing sheet spent half its time
    /// there and cost six block-Jacobi steps; benchmarks/RESULTS.md).
    Index coarse_dofs = 150;
    /// At most this many levels, the finest included.
    int max_levels = 12;
    /// Chebyshev degree of each smoothing (pre and post); 1 is damped block Jacobi.
    int smoother_degree = 2;
    /// The Chebyshev interval is [λ / smoother_ratio, λ], λ = ‖D⁻¹Â‖_∞ ≥ λ_max(D⁻¹Â).
    double smoother_ratio = 8.0;
    /// Power iterations of the λ_max(D⁻¹Â) estimate that damps the prolongator (host).
    int power_iterations = 15;
    /// Keep the coarse levels across solves while the pattern is unchanged.
    bool reuse = true;
    /// Rebuild when a solve takes more than this factor times the iterations
    /// of the first solve after the last build (and at least 5 more), and,
    /// where solve times are known, the stale hierarchy's extra iterations
    /// have cost as much as the last build.
    double rebuild_growth = 1.5;
    /// A new sparsity pattern or filter of the same size (contacts made or
    /// detached, EIL brackets moved): false rebuilds the hierarchy; true
    /// keeps its coarse levels as they are and renews only the finest
    /// level's smoother on the new matrix, until the growth rule asks for a
    /// renewal (then a build: a kept hierarchy is not refreshed). Scene key
    /// solver.multilevel_pattern_change ("rebuild", "keep"); see Reuse in
    /// the file comment for why the V-cycle stays positive definite.
    bool keep_across_patterns = false;
    /// Weigh slow solves' measured wall time against the build's (the
    /// rent-or-buy rule of the file comment). false: iteration growth alone
    /// decides, so when the hierarchy is rebuilt does not depend on the
    /// machine's speed and a run repeats bit for bit (more builds where a
    /// build is dear against an iteration, e.g. on a GPU).
    bool timed_rebuild = true;
    /// What a slow solve renews while the pattern and filter stay (see Reuse
    /// in the file comment).
    MultilevelRefresh refresh = MultilevelRefresh::on_growth;
    /// Square coarse space, refreshing ahead: where the hierarchy's age
    /// asks for a build, first renew the squares' near-null modes for the
    /// current node positions, every level's tentative prolongator formed
    /// from them as a build does, and smooth every prolongator again on its
    /// kept pattern, with a refresh of the coarse values (0.35 s
    /// against a 2.4 s build on the 200² sphere drop, CPU threads, huge
    /// pages); a build only where such a renewal did not lower the
    /// iterations (see "Renewing the modes" in the file comment). false:
    /// the age always buys a build. Scene key solver.multilevel_renew_modes.
    bool renew_modes = true;
    /// Which rows a refresh of the square levels recomputes (scene key
    /// solver.multilevel_refresh_tolerance): a row of Â (the finest matrix,
    /// or the level above's) is taken again when one of its entries has moved
    /// by more than refresh_tolerance · sqrt(|Â_rr| |Â_cc|) (its diagonal's
    /// scale) since the refresh that last took it, and only the coarse rows
    /// such rows reach are recomputed (see "Refresh by rows" in the file
    /// comment). 0: every row that changed at all (the same bits as
    /// recomputing every row); negative: every row at every refresh, without
    /// the copy of each square level's Â that the comparison keeps.
    double refresh_tolerance = 1e-2;
    /// Which of the finest level's yarn lines a prepare() factors again
    /// (yarn-line smoothing; scene key solver.multilevel_line_factor_tolerance,
    /// default 1e-3):
    /// only those with a node whose row of A has an entry that moved by more
    /// than line_factor_tolerance · sqrt(|A_rr| |A_cc|) (its diagonal's scale)
    /// since that row was last taken; the other lines keep their factors (see
    /// "Line factors by rows" in the file comment). 0 or negative: every line
    /// at every prepare(), without the float copy of A's values that the
    /// comparison keeps.
    double line_factor_tolerance = 1e-3;
    /// A solve whose largest Ritz value (PCG's Lanczos estimate from inside
    /// of λ_max(M⁻¹ S A S), see pcg.hpp) exceeds this bound makes the next
    /// prepare() take every row: every coarse row refreshed from the current
    /// matrix and every finest yarn line factored (see "Exact retakes" in
    /// the file comment; exact_retakes() counts them); in
    /// solve_filtered_pcg_multilevel a Lanczos diagonal entry above it
    /// stops the solve, which is retaken so at once. 0 or negative: off,
    /// and solve_filtered_pcg_multilevel estimates no spectrum for it. Scene
    /// key solver.multilevel_exact_ritz_bound.
    double exact_ritz_bound = 2.0;
    /// The finest level's products in the V-cycle (the smoother's residuals
    /// and the residual restricted to the coarse level) with a float copy of
    /// the matrix's values, and the yarn-line smoother's solves with float
    /// copies of its factors; vectors, sums and the coarse levels stay T. No
    /// effect when T is float. Scene key solver.matrix_precision ("single"
    /// sets this and PcgOptions::single_precision_matrix).
    bool single_precision_matrix = false;
    /// With the yarn-line smoother on CPU threads: copy the rows of the yarns
    /// that run across the node order in line order at each prepare()
    /// (order_line_rows), trading that copy's memory (a second copy of the
    /// matrix values on a woven cloth, whose every node lies on such a yarn;
    /// float with single_precision_matrix) for faster sweeps. With the
    /// square coarse space the same holds on each square level smoothed by
    /// lines: its columns of squares are copied at each build and refresh.
    /// No effect on a GPU.
    bool line_ordered_rows = true;
};

/// MultilevelOptions::refresh named in the words of the scene key
/// solver.multilevel_refresh ("off", "on-growth", "every-prepare").
/// @throws InvalidInput naming the word and the accepted ones
inline MultilevelRefresh multilevel_refresh_named(const std::string& name)
{
    return static_cast<MultilevelRefresh>(
        solver_words::index_of(name, solver_words::multilevel_refresh(), "multilevel refresh"));
}

/// MultilevelOptions::smoother named in the words of the scene key
/// solver.multilevel_smoother ("chebyshev", "yarn-lines").
/// @throws InvalidInput naming the word and the accepted ones
inline MultilevelSmoother multilevel_smoother_named(const std::string& name)
{
    return static_cast<MultilevelSmoother>(
        solver_words::index_of(name, solver_words::multilevel_smoother(), "multilevel smoother"));
}

/// MultilevelOptions::coarse_space named in the words of the scene key
/// solver.multilevel_coarse_space ("nodes", "yarns").
/// @throws InvalidInput naming the word and the accepted ones
inline MultilevelCoarseSpace multilevel_coarse_space_named(const std::string& name)
{
    return static_cast<MultilevelCoarseSpace>(
        solver_words::index_of(name, solver_words::multilevel_coarse_space(), "multilevel coarse space"));
}

/// Whether the word "auto" of solver.multilevel_smoother and
/// solver.multilevel_coarse_space stands for the yarn design (the yarn-line
/// smoother and the square coarse space) for a model of `yarns` (5-DoF nodes
/// with their LineSet) on this build's device system: on CPU threads it is
/// the fastest multilevel design on every shipped yarn scene of more than a
/// few hundred nodes and on the sphere drop at every size
/// (benchmarks/RESULTS.md, "The multilevel design chosen by the cloth"). On a
/// GPU each line solve runs on one thread and a V-cycle with squares costs
/// hundreds of milliseconds ("The GPU at commit f5d31d2"), so there, and for
/// triangle cloth, "auto" stands for Chebyshev on block Jacobi and node
/// aggregates.
constexpr bool multilevel_auto_follows_yarns(bool yarns)
{
    return yarns && !backend_is_cuda();
}

/// MultilevelOptions::smoother named in the words of solver.multilevel_smoother,
/// "auto" included (multilevel_auto_follows_yarns), for a model of `yarns`.
/// @throws InvalidInput naming the word and the accepted ones
inline MultilevelSmoother multilevel_smoother_named(const std::string& name, bool yarns)
{
    const int index = solver_words::index_of(name, solver_words::multilevel_smoother_choices(), "multilevel smoother");
    if (index > 0) return static_cast<MultilevelSmoother>(index - 1);
    return multilevel_auto_follows_yarns(yarns) ? MultilevelSmoother::yarn_lines : MultilevelSmoother::chebyshev;
}

/// MultilevelOptions::coarse_space named in the words of
/// solver.multilevel_coarse_space, "auto" included
/// (multilevel_auto_follows_yarns), for a model of `yarns`.
/// @throws InvalidInput naming the word and the accepted ones
inline MultilevelCoarseSpace multilevel_coarse_space_named(const std::string& name, bool yarns)
{
    const int index =
        solver_words::index_of(name, solver_words::multilevel_coarse_space_choices(), "multilevel coarse space");
    if (index > 0) return static_cast<MultilevelCoarseSpace>(index - 1);
    return multilevel_auto_follows_yarns(yarns) ? MultilevelCoarseSpace::squares : MultilevelCoarseSpace::nodes;
}

/// MultilevelOptions::cycle named in the words of the scene key
/// solver.multilevel_cycle ("v", "w").
/// @throws InvalidInput naming the word and the accepted ones
inline MultilevelCycle multilevel_cycle_named(const std::string& name)
{
    return static_cast<MultilevelCycle>(
        solver_words::index_of(name, solver_words::multilevel_cycle(), "multilevel cycle"));
}

/// MultilevelOptions::timed_rebuild named in the words of the scene key
/// solver.multilevel_rebuild ("rent-or-buy": true, "growth": false).
/// @throws InvalidInput naming the word and the accepted ones
inline bool multilevel_timed_rebuild_named(const std::string& name)
{
    return solver_words::index_of(name, solver_words::multilevel_rebuild(), "multilevel rebuild rule") == 0;
}

/// MultilevelOptions::keep_across_patterns named in the words of the scene
/// key solver.multilevel_pattern_change ("rebuild": false, "keep": true).
/// @throws InvalidInput naming the word and the accepted ones
inline bool multilevel_keep_across_patterns_named(const std::string& name)
{
    return solver_words::index_of(name, solver_words::multilevel_pattern_change(), "multilevel pattern change") == 1;
}

/// Checks the settings; throws InvalidInput naming the field and the value.
inline void validate(const MultilevelOptions& o)
{
    if (!(o.strength_threshold >= 0.0 && o.strength_threshold < 1.0)) {
        throw InvalidInput(
            detail::describe("MultilevelOptions strength_threshold", o.strength_threshold, "must be in [0, 1)"));
    }
    if (o.yarn_run < 1) throw InvalidInput(detail::describe("MultilevelOptions yarn_run", o.yarn_run, "must be >= 1"));
    if (o.yarn_square < 1)
        throw InvalidInput(detail::describe("MultilevelOptions yarn_square", o.yarn_square, "must be >= 1"));
    if (o.square_side < 3)
        throw InvalidInput(detail::describe("MultilevelOptions square_side", o.square_side, "must be >= 3"));
    if (o.square_join < 2)
        throw InvalidInput(detail::describe("MultilevelOptions square_join", o.square_join, "must be >= 2"));
    if (o.cycle != MultilevelCycle::v && o.cycle != MultilevelCycle::w)
        throw InvalidInput(detail::describe("MultilevelOptions cycle", static_cast<int>(o.cycle), "must be v or w"));
    if (o.coarse_dofs < 1)
        throw InvalidInput(detail::describe("MultilevelOptions coarse_dofs", o.coarse_dofs, "must be >= 1"));
    if (o.max_levels < 1)
        throw InvalidInput(detail::describe("MultilevelOptions max_levels", o.max_levels, "must be >= 1"));
    if (o.smoother_degree < 1 || o.smoother_degree > 8) {
        throw InvalidInput(
            detail::describe("MultilevelOptions smoother_degree", o.smoother_degree, "must be in [1, 8]"));
    }
    if (!(o.smoother_ratio > 1.0 && std::isfinite(o.smoother_ratio))) {
        throw InvalidInput(
            detail::describe("MultilevelOptions smoother_ratio", o.smoother_ratio, "must be finite and > 1"));
    }
    if (o.power_iterations < 1) {
        throw InvalidInput(detail::describe("MultilevelOptions power_iterations", o.power_iterations, "must be >= 1"));
    }
    if (!(o.rebuild_growth >= 1.0)) {
        throw InvalidInput(detail::describe("MultilevelOptions rebuild_growth", o.rebuild_growth, "must be >= 1"));
    }
    if (!std::isfinite(o.refresh_tolerance)) {
        throw InvalidInput(
            detail::describe("MultilevelOptions refresh_tolerance", o.refresh_tolerance, "must be finite"));
    }
    if (!std::isfinite(o.line_factor_tolerance)) {
        throw InvalidInput(
            detail::describe("MultilevelOptions line_factor_tolerance", o.line_factor_tolerance, "must be finite"));
    }
    if (!std::isfinite(o.exact_ritz_bound)) {
        throw InvalidInput(
            detail::describe("MultilevelOptions exact_ritz_bound", o.exact_ritz_bound, "must be finite"));
    }
}

namespace multilevel_detail {

template <typename T>
using HostMatrix = Eigen::SparseMatrix<T, Eigen::RowMajor, Index>;

// Host algebra of the setup, written out rather than taken from Eigen's
// dense LLT and sparse product: Eigen marks those __host__ __device__ and
// they call host-only code, so nvcc warns (20014, "calling a __host__
// function from a __host__ __device__ function") in every CUDA program that
// includes this header. Those warnings carry no source position, so a
// `#pragma nv_diag_suppress` cannot scope them (tried: around the include,
// around the use, at the end of the file); only a command-line suppression
// could, and it would hide the same warning in the user's own code.

/// The Cholesky factor of the symmetric positive definite dense matrix `a`
/// (n × n, row-major): a = L Lᵀ, L lower triangular (row-major in `l`).
/// @return false when `a` is not positive definite (a pivot ≤ 0 or not finite)
template <typename T>
bool cholesky(const std::vector<T>& a, std::size_t n, std::vector<T>& l)
{
    using std::sqrt;
    l.assign(n * n, T(0));
    for (std::size_t j = 0; j < n; ++j) {
        for (std::size_t i = j; i < n; ++i) {
            T sum = a[i * n + j];
            for (std::size_t k = 0; k < j; ++k) sum -= l[i * n + k] * l[j * n + k];
            if (i == j) {
                if (!(sum > T(0)) || !std::isfinite(static_cast<double>(sum))) return false;
                l[j * n + j] = sqrt(sum);
            } else {
                l[i * n + j] = sum / l[j * n + j];
            }
        }
    }
    return true;
}

/// W = L⁻¹ of a lower-triangular n × n matrix L with a positive diagonal
/// (row-major), row by row.
template <typename T>
void lower_inverse(const std::vector<T>& l, std::size_t n, std::vector<T>& w)
{
    w.assign(n * n, T(0));
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j <= i; ++j) {
            T sum = i == j ? T(1) : T(0);
            for (std::size_t k = j; k < i; ++k) sum -= l[i * n + k] * w[k * n + j];
            w[i * n + j] = sum / l[i * n + i];
        }
    }
}

/// The inverse of the symmetric positive definite dense matrix `a` (n × n,
/// row-major in `a`), by Cholesky factorization a = L Lᵀ: A⁻¹ = L⁻ᵀ L⁻¹.
/// @return false when `a` is not positive definite (a pivot ≤ 0 or not finite)
template <typename T>
bool spd_inverse(const std::vector<T>& a, std::size_t n, std::vector<T>& inverse)
{
    std::vector<T> l, w;
    if (!cholesky(a, n, l)) return false;
    lower_inverse(l, n, w);
    inverse.assign(n * n, T(0));  // A⁻¹ = Wᵀ W, symmetric by construction
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j <= i; ++j) {
            T sum = T(0);
            for (std::size_t k = i; k < n; ++k) sum += w[k * n + i] * w[k * n + j];
            inverse[i * n + j] = sum;
            inverse[j * n + i] = sum;
        }
    }
    return true;
}

/// Dense DoFs × K near-null-space rows, row-major.
template <typename T>
struct NearNull {
    Index dofs = 0;
    int k = 0;
    std::vector<T> rows;
    T& at(Index dof, int c) { return rows[static_cast<std::size_t>(dof) * k + c]; }
    T at(Index dof, int c) const { return rows[static_cast<std::size_t>(dof) * k + c]; }
};

/// f(k) for each k in [0, count): on the CPU threads where the backend runs
/// there (the host is its device), one after another on the host where the
/// backend is a GPU. For the host setup's loops whose iterations write
/// disjoint data.
template <typename F>
void for_each_on_host(Index count, F f)
{
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
    for (Index k = 0; k < count; ++k) f(k);
#else
    thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(count), f);
#endif
}

/// Â = S A S + (I − S) of a BSR matrix, on the host, written straight into
/// the compressed arrays (each row's columns in order): row sizes, their
/// offsets, then the rows, block row by block row on the CPU threads
/// (for_each_on_host).
template <typename T, int B>
HostMatrix<T> filtered_host_matrix(const BsrMatrix<T, B>& a, const std::vector<std::uint8_t>& free)
{
    const HostView<Index> row_ptr(a.row_ptr());
    const HostView<Index> col_idx(a.col_idx());
    const HostView<T> values(a.values());
    const Index block_rows = a.block_rows();
    HostMatrix<T> result(a.rows(), a.cols());
    Index* outer = result.outerIndexPtr();
    outer[0] = 0;
    for_each_on_host(block_rows, [&](Index i) {
        Index count = 0;  // the free columns of block row i
        for (Index k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
            for (int c = 0; c < B; ++c) count += free[static_cast<std::size_t>(B * col_idx[k] + c)] ? 1 : 0;
        }
        for (int r = 0; r < B; ++r) outer[B * i + r + 1] = free[static_cast<std::size_t>(B * i + r)] ? count : 1;
    });
    for (Index row = 0; row < a.rows(); ++row) outer[row + 1] += outer[row];
    result.resizeNonZeros(outer[a.rows()]);
    Index* inner = result.innerIndexPtr();
    T* stored = result.valuePtr();
    for_each_on_host(block_rows, [&](Index i) {
        for (int r = 0; r < B; ++r) {
            const Index row = B * i + r;
            Index at = outer[row];
            if (!free[static_cast<std::size_t>(row)]) {
                inner[at] = row;
                stored[at] = T(1);
                continue;
            }
            for (Index k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
                for (int c = 0; c < B; ++c) {
                    const Index col = B * col_idx[k] + c;
                    if (!free[static_cast<std::size_t>(col)]) continue;
                    inner[at] = col;
                    stored[at] = values[static_cast<std::size_t>(k) * (B * B) + r * B + c];
                    ++at;
                }
            }
        }
    });
    return result;
}

/// Per node: its stored neighbour blocks (j ≠ i) and their Frobenius norms,
/// and the norm of the diagonal block.
template <typename T>
void block_norms(const HostMatrix<T>& a, int bs, std::vector<std::vector<std::pair<Index, T>>>& neighbours,
                 std::vector<T>& diagonal)
{
    const Index nodes = static_cast<Index>(a.rows() / bs);
    neighbours.assign(static_cast<std::size_t>(nodes), {});
    diagonal.assign(static_cast<std::size_t>(nodes), T(0));
    std::vector<std::pair<Index, T>> entries;
    for (Index i = 0; i < nodes; ++i) {
        entries.clear();
        for (int r = 0; r < bs; ++r) {
            for (typename HostMatrix<T>::InnerIterator it(a, bs * i + r); it; ++it) {
                entries.emplace_back(static_cast<Index>(it.col() / bs), it.value() * it.value());
            }
        }
        std::sort(entries.begin(), entries.end(),
                  [](const std::pair<Index, T>& x, const std::pair<Index, T>& y) { return x.first < y.first; });
        auto& list = neighbours[static_cast<std::size_t>(i)];
        for (std::size_t e = 0; e < entries.size();) {
            const Index j = entries[e].first;
            T sum = T(0);
            for (; e < entries.size() && entries[e].first == j; ++e) sum += entries[e].second;
            using std::sqrt;
            if (j == i) {
                diagonal[static_cast<std::size_t>(i)] = sqrt(sum);
            } else if (sum > T(0)) {
                list.emplace_back(j, sqrt(sum));
            }
        }
    }
}

/// Greedy aggregation (Vaněk et al. 1996) of the active nodes over the strong
/// couplings: (1) a node whose strong neighbourhood is wholly unaggregated
/// starts an aggregate with it; (2) a remaining node joins the aggregate of
/// its strongest aggregated neighbour; (3) what is left forms aggregates with
/// its unaggregated strong neighbours. Inactive nodes get −1.
/// @return the aggregate of each node; `count` receives the number of aggregates
template <typename T>
std::vector<Index> aggregate(const HostMatrix<T>& a, int bs, const std::vector<std::uint8_t>& active, T theta,
                             Index& count)
{
    std::vector<std::vector<std::pair<Index, T>>> neighbours;
    std::vector<T> diagonal;
    block_norms(a, bs, neighbours, diagonal);
    const Index nodes = static_cast<Index>(neighbours.size());
    using std::sqrt;
    std::vector<std::vector<std::pair<Index, T>>> strong(static_cast<std::size_t>(nodes));
    for (Index i = 0; i < nodes; ++i) {
        if (!active[static_cast<std::size_t>(i)]) continue;
        for (const auto& [j, norm] : neighbours[static_cast<std::size_t>(i)]) {
            if (!active[static_cast<std::size_t>(j)]) continue;
            if (norm >= theta * sqrt(diagonal[static_cast<std::size_t>(i)] * diagonal[static_cast<std::size_t>(j)])) {
                strong[static_cast<std::size_t>(i)].emplace_back(j, norm);
            }
        }
    }
    std::vector<Index> owner(static_cast<std::size_t>(nodes), Index(-1));
    count = 0;
    for (Index i = 0; i < nodes; ++i) {  // pass 1
        if (!active[static_cast<std::size_t>(i)] || owner[static_cast<std::size_t>(i)] >= 0) continue;
        bool free_neighbourhood = true;
        for (const auto& s : strong[static_cast<std::size_t>(i)]) {
            if (owner[static_cast<std::size_t>(s.first)] >= 0) {
                free_neighbourhood = false;
                break;
            }
        }
        if (!free_neighbourhood || strong[static_cast<std::size_t>(i)].empty()) continue;
        owner[static_cast<std::size_t>(i)] = count;
        for (const auto& s : strong[static_cast<std::size_t>(i)]) owner[static_cast<std::size_t>(s.first)] = count;
        ++count;
    }
    const std::vector<Index> first_pass = owner;
    for (Index i = 0; i < nodes; ++i) {  // pass 2
        if (!active[static_cast<std::size_t>(i)] || owner[static_cast<std::size_t>(i)] >= 0) continue;
        T best = T(-1);
        for (const auto& [j, norm] : strong[static_cast<std::size_t>(i)]) {
            if (first_pass[static_cast<std::size_t>(j)] >= 0 && norm > best) {
                best = norm;
                owner[static_cast<std::size_t>(i)] = first_pass[static_cast<std::size_t>(j)];
            }
        }
    }
    for (Index i = 0; i < nodes; ++i) {  // pass 3
        if (!active[static_cast<std::size_t>(i)] || owner[static_cast<std::size_t>(i)] >= 0) continue;
        owner[static_cast<std::size_t>(i)] = count;
        for (const auto& s : strong[static_cast<std::size_t>(i)]) {
            if (owner[static_cast<std::size_t>(s.first)] < 0) owner[static_cast<std::size_t>(s.first)] = count;
        }
        ++count;
    }
    return owner;
}

/// N = Q R of an aggregate's near-null rows by modified Gram–Schmidt
/// (twice): `q` holds N on entry and Q on return; returns R. A column that is
/// dependent on the earlier ones (‖residual‖ ≤ 1e-10 ‖column‖) gets a zero Q
/// column and a zero R row, i.e. a coarse DoF that is inactive.
template <typename T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> orthonormalize(Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>& q)
{
    const Index k = static_cast<Index>(q.cols());
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> rf = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>::Zero(k, k);
    for (Index c = 0; c < k; ++c) {
        const T original = q.col(c).norm();
        for (int pass = 0; pass < 2; ++pass) {
            for (Index p = 0; p < c; ++p) {
                const T projection = q.col(p).dot(q.col(c));
                rf(p, c) += projection;
                q.col(c) -= projection * q.col(p);
            }
        }
        const T norm = q.col(c).norm();
        if (norm > T(1e-10) * original && norm > T(0)) {
            q.col(c) /= norm;
            rf(c, c) = norm;
        } else {
            q.col(c).setZero();
            rf.row(c).setZero();
        }
    }
    return rf;
}

/// The tentative prolongator (fine DoFs × K·#aggregates) and the coarse near
/// null space: for each aggregate, its near-null rows N = Q R by modified
/// Gram–Schmidt (twice); a column that is dependent on the earlier ones
/// (‖residual‖ ≤ 1e-10 ‖column‖) gets a zero Q column and a zero R row, i.e. a
/// coarse DoF that is inactive.
template <typename T>
HostMatrix<T> tentative_prolongator(const NearNull<T>& fine, int bs, const std::vector<Index>& owner, Index aggregates,
                                    NearNull<T>& coarse)
{
    const int k = fine.k;
    coarse.dofs = aggregates * k;
    coarse.k = k;
    coarse.rows.assign(static_cast<std::size_t>(coarse.dofs) * k, T(0));
    std::vector<std::vector<Index>> members(static_cast<std::size_t>(aggregates));
    for (Index i = 0; i < static_cast<Index>(owner.size()); ++i) {
        if (owner[static_cast<std::size_t>(i)] >= 0)
            members[static_cast<std::size_t>(owner[static_cast<std::size_t>(i)])].push_back(i);
    }
    std::vector<Eigen::Triplet<T, Index>> triplets;
    triplets.reserve(fine.rows.size());
    using Dense = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
    for (Index g = 0; g < aggregates; ++g) {
        const auto& nodes = members[static_cast<std::size_t>(g)];
        const Index rows = static_cast<Index>(nodes.size()) * bs;
        Dense q(rows, k);
        for (std::size_t n = 0; n < nodes.size(); ++n) {
            for (int r = 0; r < bs; ++r) {
                for (int c = 0; c < k; ++c) q(static_cast<Index>(n) * bs + r, c) = fine.at(nodes[n] * bs + r, c);
            }
        }
        const Dense rf = orthonormalize(q);
        for (std::size_t n = 0; n < nodes.size(); ++n) {
            for (int r = 0; r < bs; ++r) {
                for (int c = 0; c < k; ++c) {
                    const T value = q(static_cast<Index>(n) * bs + r, c);
                    if (value != T(0)) triplets.emplace_back(nodes[n] * bs + r, g * k + c, value);
                }
            }
        }
        for (int r = 0; r < k; ++r) {
            for (int c = 0; c < k; ++c) coarse.at(g * k + r, c) = rf(r, c);
        }
    }
    HostMatrix<T> p(fine.dofs, coarse.dofs);
    p.setFromTriplets(triplets.begin(), triplets.end());
    return p;
}

/// An aggregate of the coarse space that follows the yarns
/// (MultilevelCoarseSpace::yarns): a run of nodes along one yarn (`family`
/// 0 or 1, the LineSet's families), a square of crossings (family 2), or a
/// node on no yarn (family 3); where it lies (`key`: the line and the run
/// along it, or the square's row and column, or the node); its DoFs on the
/// level it aggregates and their near-null rows (DoFs × modes).
template <typename T>
struct YarnAggregate {
    int family = 0;
    Index key[2] = {0, 0};
    std::vector<Index> dofs;
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> near_null;
};

/// Where each node lies on the LineSet's first two families, and the yarns'
/// unit tangents there (5-DoF yarn nodes; `state` holds the nodes' values,
/// positions first): place[f][node] = (line within family f, position along
/// it), (−1, −1) off the family; tangent[f][node] the chord between the
/// node's neighbours on its line of family f (one-sided at the ends),
/// normalized, zero off the family. square(node, side) is the square of
/// side × side crossings a node belongs to: the node on line a of family 0
/// and line b of family 1 lies at (a, b), a node on the line of one family
/// only at (line, position along it) in that family's order; (−1, −1) for a
/// node on no line.
template <typename T>
struct LinePlaces {
    using Vector3 = Eigen::Matrix<T, 3, 1>;
    static constexpr int bs = 5;
    std::vector<std::vector<std::pair<Index, Index>>> place;
    std::vector<std::vector<Vector3>> tangent;
    std::vector<Index> line_count;                ///< lines of each family
    std::vector<std::vector<Index>> line_length;  ///< [f][node]: nodes on the node's line of family f
    const std::vector<T>* state = nullptr;

    LinePlaces(const LineSet& lines, const std::vector<T>& values)
        : place(2, std::vector<std::pair<Index, Index>>(static_cast<std::size_t>(lines.node_count()),
                                                        {Index(-1), Index(-1)})),
          tangent(2, std::vector<Vector3>(static_cast<std::size_t>(lines.node_count()), Vector3::Zero())),
          line_count(2, 0),
          line_length(2, std::vector<Index>(static_cast<std::size_t>(lines.node_count()), 0)),
          state(&values)
    {
        const std::vector<Index>& line_ptr = lines.host_line_ptr();
        const std::vector<Index>& line_nodes = lines.host_line_nodes();
        for (int f = 0; f < families(lines); ++f) {
            line_count[static_cast<std::size_t>(f)] = lines.family_first_line(f + 1) - lines.family_first_line(f);
            for (Index l = lines.family_first_line(f); l < lines.family_first_line(f + 1); ++l) {
                const Index first = line_ptr[static_cast<std::size_t>(l)];
                const Index length = line_ptr[static_cast<std::size_t>(l) + 1] - first;
                const auto node_at = [&](Index i) { return line_nodes[static_cast<std::size_t>(first + i)]; };
                for (Index i = 0; i < length; ++i) {
                    const Index node = node_at(i);
                    place[f][static_cast<std::size_t>(node)] = {l - lines.family_first_line(f), i};
                    line_length[f][static_cast<std::size_t>(node)] = length;
                    const Vector3 chord =
                        position(node_at(std::min(i + 1, length - 1))) - position(node_at(std::max(i - 1, Index(0))));
                    const T norm = chord.norm();
                    if (norm > T(0)) tangent[f][static_cast<std::size_t>(node)] = chord / norm;
                }
            }
        }
    }

    static int families(const LineSet& lines) { return std::min(lines.family_count(), 2); }

    Vector3 position(Index node) const
    {
        const std::size_t o = static_cast<std::size_t>(node) * bs;
        return Vector3((*state)[o], (*state)[o + 1], (*state)[o + 2]);
    }

    std::pair<Index, Index> square(Index node, int side) const
    {
        const auto& p0 = place[0][static_cast<std::size_t>(node)];
        const auto& p1 = place[1][static_cast<std::size_t>(node)];
        const std::size_t n = static_cast<std::size_t>(node);
        if (p0.first >= 0 && p1.first >= 0) {
            return {cell(p0.first, line_count[0], side), cell(p1.first, line_count[1], side)};
        } else if (p0.first >= 0) {
            return {cell(p0.first, line_count[0], side), cell(p0.second, line_length[0][n], side)};
        } else if (p1.first >= 0) {
            return {cell(p1.second, line_length[1][n], side), cell(p1.first, line_count[1], side)};
        }
        return {Index(-1), Index(-1)};
    }

    /// The square along one side that the index-th of `count` lines (or
    /// nodes) falls in: index / side, except that a remainder of fewer than
    /// half a side joins the last full square. A square one crossing wide
    /// holds collinear nodes, whose rotations and shear are dependent or
    /// nearly so; on a 400² patch with squares of 3 its edge left the
    /// V-cycle's slowest mode (benchmarks/RESULTS.md, "Squares at the edges").
    static Index cell(Index index, Index count, int side)
    {
        const Index full = count / side;
        const Index remainder = count % side;
        const Index at = index / side;
        return full > 0 && 2 * remainder < side && at >= full ? full - 1 : at;
    }
};

/// The DoFs of `members`, node after node (bs per node).
inline std::vector<Index> node_dofs(const std::vector<Index>& members, int bs)
{
    std::vector<Index> dofs;
    dofs.reserve(members.size() * static_cast<std::size_t>(bs));
    for (const Index node : members) {
        for (int c = 0; c < bs; ++c) dofs.push_back(node * bs + c);
    }
    return dofs;
}

/// An aggregate of `members` (family, key), its DoFs node after node (bs
/// per node); the caller sets its near-null rows.
template <typename T>
YarnAggregate<T> member_aggregate(int family, Index key0, Index key1, const std::vector<Index>& members, int bs)
{
    YarnAggregate<T> g;
    g.family = family;
    g.key[0] = key0;
    g.key[1] = key1;
    g.dofs = node_dofs(members, bs);
    return g;
}

/// Zero near-null rows on the constrained DoFs of an aggregate.
template <typename T>
void zero_constrained_rows(YarnAggregate<T>& g, const std::vector<std::uint8_t>& free)
{
    for (std::size_t r = 0; r < g.dofs.size(); ++r) {
        if (!free[static_cast<std::size_t>(g.dofs[r])]) g.near_null.row(static_cast<Index>(r)).setZero();
    }
}

/// The nodes of each square of side × side crossings (LinePlaces::square),
/// squares in row-major order of their place: (place, members); the nodes
/// on no line in `alone`.
template <typename T>
std::vector<std::pair<std::pair<Index, Index>, std::vector<Index>>> node_squares(const LinePlaces<T>& places,
                                                                                 Index nodes, int side,
                                                                                 std::vector<Index>& alone)
{
    std::vector<std::pair<std::pair<Index, Index>, Index>> placed;
    alone.clear();
    for (Index node = 0; node < nodes; ++node) {
        const std::pair<Index, Index> at = places.square(node, side);
        if (at.first < 0) {
            alone.push_back(node);
        } else {
            placed.push_back({at, node});
        }
    }
    std::sort(placed.begin(), placed.end());
    std::vector<std::pair<std::pair<Index, Index>, std::vector<Index>>> result;
    for (const auto& [at, node] : placed) {
        if (result.empty() || result.back().first != at) result.push_back({at, {}});
        result.back().second.push_back(node);
    }
    return result;
}

/// The first coarse space that follows the yarns, for 5-DoF yarn nodes
/// (position, then the arc lengths of the LineSet's families 0 and 1 as
/// coordinates 3 and 4; `state` holds the nodes' values, positions first):
///  - runs of `run` consecutive nodes along each line of families 0 and 1,
///    with two modes: the displacement along the yarn's tangent, and a unit
///    change of the family's arc length. These are the slow modes that a
///    node aggregate smears out: each yarn sliding and stretching on its own;
///  - squares of `side` × `side` crossings (the node on line a of family 0
///    and line b of family 1 lies at (a, b); a node on the line of one
///    family only at (line, position along it), in that family's order),
///    with the displacement along the cloth's normal times 1, u, v, u², uv,
///    v² (u, v: the square's in-plane coordinates): out-of-plane translation,
///    tilts and bending. Where a square has no normal (one family only), its
///    three translations;
///  - a node on no line: its own aggregate, the unit modes of its DoFs.
/// The families' columns overlap on the positions. Constrained DoFs get zero
/// rows. (benchmarks/RESULTS.md, "Coarse spaces that follow the yarns".)
template <typename T>
std::vector<YarnAggregate<T>> yarn_aggregates(const LineSet& lines, const std::vector<T>& state,
                                              const std::vector<std::uint8_t>& free, int run, int side)
{
    using Vector3 = Eigen::Matrix<T, 3, 1>;
    using Dense = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
    constexpr int bs = 5;
    const Index nodes = lines.node_count();
    const auto zero_constrained = [&](YarnAggregate<T>& g) { zero_constrained_rows(g, free); };
    const int families = LinePlaces<T>::families(lines);
    const LinePlaces<T> places(lines, state);
    const auto& tangent = places.tangent;
    const auto position = [&](Index node) { return places.position(node); };
    std::vector<YarnAggregate<T>> result;
    const std::vector<Index>& line_ptr = lines.host_line_ptr();
    const std::vector<Index>& line_nodes = lines.host_line_nodes();
    for (int f = 0; f < families; ++f) {
        for (Index l = lines.family_first_line(f); l < lines.family_first_line(f + 1); ++l) {
            const Index first = line_ptr[static_cast<std::size_t>(l)];
            const Index length = line_ptr[static_cast<std::size_t>(l) + 1] - first;
            const Index local = l - lines.family_first_line(f);
            const auto node_at = [&](Index i) { return line_nodes[static_cast<std::size_t>(first + i)]; };
            for (Index start = 0; start < length; start += run) {
                std::vector<Index> members;
                for (Index i = start; i < std::min(length, start + run); ++i) members.push_back(node_at(i));
                YarnAggregate<T> g = member_aggregate<T>(f, local, start / run, members, bs);
                g.near_null = Dense::Zero(static_cast<Index>(g.dofs.size()), 2);
                for (std::size_t m = 0; m < members.size(); ++m) {
                    const Index o = static_cast<Index>(m) * bs;
                    g.near_null.block(o, 0, 3, 1) = tangent[f][static_cast<std::size_t>(members[m])];
                    g.near_null(o + 3 + f, 1) = T(1);
                }
                zero_constrained(g);
                result.push_back(std::move(g));
            }
        }
    }
    // Squares, in row-major order of their place; nodes on no line alone.
    std::vector<Index> alone;
    const auto squares = node_squares(places, nodes, side, alone);
    for (const Index node : alone) {
        YarnAggregate<T> g = member_aggregate<T>(3, node, 0, {node}, bs);
        g.near_null = Dense::Identity(bs, bs);
        zero_constrained(g);
        result.push_back(std::move(g));
    }
    for (const auto& [at, members] : squares) {
        YarnAggregate<T> g = member_aggregate<T>(2, at.first, at.second, members, bs);
        // The square's frame: mean tangents, orthonormalized; its normal.
        Vector3 mean[2] = {Vector3::Zero(), Vector3::Zero()};
        Vector3 center = Vector3::Zero();
        for (const Index node : members) {
            for (int f = 0; f < 2; ++f) mean[f] += tangent[f][static_cast<std::size_t>(node)];
            center += position(node);
        }
        center /= T(members.size());
        const T norm0 = mean[0].norm();
        const Vector3 e0 = norm0 > T(0) ? Vector3(mean[0] / norm0) : Vector3::Zero();
        Vector3 e1 = mean[1] - mean[1].dot(e0) * e0;
        const T norm1 = e1.norm();
        e1 = norm1 > T(0) ? Vector3(e1 / norm1) : Vector3::Zero();
        const Vector3 normal = e0.cross(e1);
        if (!(normal.norm() > T(0.5))) {  // no frame: the three translations
            g.near_null = Dense::Zero(static_cast<Index>(g.dofs.size()), 3);
            for (std::size_t m = 0; m < members.size(); ++m) {
                g.near_null.block(static_cast<Index>(m) * bs, 0, 3, 3).setIdentity();
            }
            zero_constrained(g);
            result.push_back(std::move(g));
            continue;
        }
        T extent = T(0);
        for (const Index node : members) {
            const Vector3 d = position(node) - center;
            extent = std::max({extent, std::abs(d.dot(e0)), std::abs(d.dot(e1))});
        }
        if (!(extent > T(0))) extent = T(1);
        g.near_null = Dense::Zero(static_cast<Index>(g.dofs.size()), 6);
        for (std::size_t m = 0; m < members.size(); ++m) {
            const Index node = members[m];
            // The node's own normal where both its tangents are known, turned to the square's side.
            Vector3 n = tangent[0][static_cast<std::size_t>(node)].cross(tangent[1][static_cast<std::size_t>(node)]);
            const T length = n.norm();
            n = length > T(0.5) ? Vector3(n / length) : normal;
            if (n.dot(normal) < T(0)) n = -n;
            const Vector3 d = position(node) - center;
            const T u = d.dot(e0) / extent;
            const T v = d.dot(e1) / extent;
            const T modes[6] = {T(1), u, v, u * u, u * v, v * v};
            for (int c = 0; c < 6; ++c) g.near_null.block(static_cast<Index>(m) * bs, c, 3, 1) = n * modes[c];
        }
        zero_constrained(g);
        result.push_back(std::move(g));
    }
    return result;
}

/// Coarse DoFs per aggregate of the square coarse space (square_aggregates).
constexpr int square_modes = 9;

/// The first coarse space of squares (MultilevelCoarseSpace::squares), for
/// 5-DoF yarn nodes: squares of side × side crossings (LinePlaces::square),
/// each with nine modes per node x: the three translations, the three
/// rotations ω × (x − c) about the axes through the nodes' centroid c, the
/// two arc lengths, and the in-plane shear t_a v + t_b u (t_a, t_b the
/// node's tangents on families 0 and 1, u = (x − c)·t_a, v = (x − c)·t_b):
/// the two yarn families sliding past each other by amounts linear across
/// their yarns. With the rotation about the normal it spans each family
/// sliding along itself linearly across its yarns on a flat patch: the slow
/// error that the yarn-line smoother leaves and that rigid-body aggregates
/// represent badly (benchmarks/RESULTS.md, "Which sliding modes the coarse
/// space needs"). The coordinates are global, as the rotations', so that
/// every coarser level carries the same modes through the R factors.
/// A node on no line is its own aggregate: the unit modes of its five DoFs
/// and four zero columns (inactive coarse DoFs), so that every aggregate
/// has square_modes coarse DoFs. Constrained DoFs get zero rows.
template <typename T>
std::vector<YarnAggregate<T>> square_aggregates(const LineSet& lines, const std::vector<T>& state,
                                                const std::vector<std::uint8_t>& free, int side)
{
    using Vector3 = Eigen::Matrix<T, 3, 1>;
    using Dense = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
    constexpr int bs = 5;
    const Index nodes = lines.node_count();
    const LinePlaces<T> places(lines, state);
    Vector3 center = Vector3::Zero();
    for (Index node = 0; node < nodes; ++node) center += places.position(node);
    if (nodes > 0) center /= T(nodes);
    std::vector<Index> alone;
    const auto squares = node_squares(places, nodes, side, alone);
    std::vector<YarnAggregate<T>> result;
    result.reserve(squares.size() + alone.size());
    const auto add = [&](YarnAggregate<T>& g) {
        zero_constrained_rows(g, free);
        result.push_back(std::move(g));
    };
    for (const auto& [at, members] : squares) {
        YarnAggregate<T> g = member_aggregate<T>(2, at.first, at.second, members, bs);
        g.near_null = Dense::Zero(static_cast<Index>(g.dofs.size()), square_modes);
        for (std::size_t m = 0; m < members.size(); ++m) {
            const Index node = members[m];
            const Index o = static_cast<Index>(m) * bs;
            const Vector3 d = places.position(node) - center;
            for (int c = 0; c < 3; ++c) g.near_null(o + c, c) = T(1);  // translations
            g.near_null(o + 1, 3) = -d.z();                            // rotations about e_x, e_y, e_z
            g.near_null(o + 2, 3) = d.y();
            g.near_null(o + 0, 4) = d.z();
            g.near_null(o + 2, 4) = -d.x();
            g.near_null(o + 0, 5) = -d.y();
            g.near_null(o + 1, 5) = d.x();
            g.near_null(o + 3, 6) = T(1);  // arc lengths
            g.near_null(o + 4, 7) = T(1);
            const Vector3& ta = places.tangent[0][static_cast<std::size_t>(node)];
            const Vector3& tb = places.tangent[1][static_cast<std::size_t>(node)];
            g.near_null.block(o, 8, 3, 1) = ta * d.dot(tb) + tb * d.dot(ta);  // in-plane shear
        }
        add(g);
    }
    for (const Index node : alone) {
        YarnAggregate<T> g = member_aggregate<T>(3, node, 0, {node}, bs);
        g.near_null = Dense::Zero(bs, square_modes);
        g.near_null.leftCols(bs).setIdentity();
        add(g);
    }
    return result;
}

/// The lines of a square coarse level for its smoother: the level's square
/// aggregates (family 2) as nodes, family 0 the rows of squares (key[0]
/// fixed, in the order of key[1]), family 1 the columns; the other
/// aggregates (nodes on no line) left uncovered. Bandwidth 2: a line's
/// squares couple at most two apart where the squares have at least 3
/// crossings a side and the coarser levels' prolongators are smoothed by
/// squares at most join − 1 apart (square_neighbour_couplings;
/// colored_line_set cuts a line where they couple further).
template <typename T>
LineSet square_lines(const std::vector<YarnAggregate<T>>& aggregates)
{
    std::vector<std::tuple<Index, Index, Index>> rows, columns;  // (line, along, aggregate)
    for (std::size_t i = 0; i < aggregates.size(); ++i) {
        const YarnAggregate<T>& g = aggregates[i];
        if (g.family != 2) continue;
        rows.emplace_back(g.key[0], g.key[1], static_cast<Index>(i));
        columns.emplace_back(g.key[1], g.key[0], static_cast<Index>(i));
    }
    std::vector<std::vector<std::vector<Index>>> families(2);
    for (int f = 0; f < 2; ++f) {
        auto& keyed = f == 0 ? rows : columns;
        std::sort(keyed.begin(), keyed.end());
        for (std::size_t k = 0; k < keyed.size(); ++k) {
            if (k == 0 || std::get<0>(keyed[k]) != std::get<0>(keyed[k - 1])) families[f].emplace_back();
            families[f].back().push_back(std::get<2>(keyed[k]));
        }
    }
    return LineSet(static_cast<Index>(aggregates.size()), families, 2);
}

/// The pattern of a block matrix: sorted rows of block columns.
struct BlockPattern {
    Index block_rows = 0;
    Index block_cols = 0;
    std::vector<Index> row_ptr{0};
    std::vector<Index> col_idx;
};

/// The pattern of a device BSR matrix, on the host.
template <typename T, int K>
BlockPattern pattern_of(const BsrMatrix<T, K>& m)
{
    BlockPattern p;
    p.block_rows = m.block_rows();
    p.block_cols = m.block_cols();
    p.row_ptr = to_host(m.row_ptr());
    p.col_idx = to_host(m.col_idx());
    return p;
}

/// The blocks of `rows` × `cols` scalars that hold a stored entry of a scalar
/// CSR matrix whose rows come in groups of `rows` and columns in groups of
/// `cols` (the DoFs of a level's nodes or aggregates).
template <typename T>
BlockPattern scalar_block_pattern(const HostMatrix<T>& m, int rows, int cols)
{
    if (m.rows() % rows != 0) {
        throw InvalidInput(detail::describe("scalar_block_pattern matrix rows", m.rows(),
                                            ("must be a multiple of the block rows " + std::to_string(rows)).c_str()));
    }
    if (m.cols() % cols != 0) {
        throw InvalidInput(
            detail::describe("scalar_block_pattern matrix columns", m.cols(),
                             ("must be a multiple of the block columns " + std::to_string(cols)).c_str()));
    }
    BlockPattern p;
    p.block_rows = static_cast<Index>(m.rows() / rows);
    p.block_cols = static_cast<Index>(m.cols() / cols);
    p.row_ptr.assign(static_cast<std::size_t>(p.block_rows) + 1, 0);
    for (Index br = 0; br < p.block_rows; ++br) {
        const std::size_t first = p.col_idx.size();
        for (int r = 0; r < rows; ++r) {
            for (typename HostMatrix<T>::InnerIterator it(m, br * rows + r); it; ++it) {
                p.col_idx.push_back(static_cast<Index>(it.col() / cols));
            }
        }
        const auto begin = p.col_idx.begin() + static_cast<std::ptrdiff_t>(first);
        std::sort(begin, p.col_idx.end());
        p.col_idx.erase(std::unique(begin, p.col_idx.end()), p.col_idx.end());
        p.row_ptr[static_cast<std::size_t>(br) + 1] = static_cast<Index>(p.col_idx.size());
    }
    return p;
}

/// The structural product of two block patterns: block (i, h) wherever a
/// block (i, j) of `a` meets a block (j, h) of `b`. The pattern of a block
/// product computed in full blocks (BlockFixedPatternProduct), a superset of
/// the blocks that the scalar product's entries fall in.
inline BlockPattern block_pattern_product(const BlockPattern& a, const BlockPattern& b)
{
    if (a.block_cols != b.block_rows) {
        throw InvalidInput(
            detail::describe("block_pattern_product: block rows of the right factor", b.block_rows,
                             ("must equal the left factor's block columns, " + std::to_string(a.block_cols)).c_str()));
    }
    BlockPattern c;
    c.block_rows = a.block_rows;
    c.block_cols = b.block_cols;
    c.row_ptr.assign(static_cast<std::size_t>(c.block_rows) + 1, 0);
    std::vector<Index> seen(static_cast<std::size_t>(b.block_cols), Index(-1));
    for (Index i = 0; i < a.block_rows; ++i) {
        const std::size_t first = c.col_idx.size();
        for (Index k = a.row_ptr[static_cast<std::size_t>(i)]; k < a.row_ptr[static_cast<std::size_t>(i) + 1]; ++k) {
            const std::size_t j = static_cast<std::size_t>(a.col_idx[static_cast<std::size_t>(k)]);
            for (Index e = b.row_ptr[j]; e < b.row_ptr[j + 1]; ++e) {
                const Index h = b.col_idx[static_cast<std::size_t>(e)];
                if (seen[static_cast<std::size_t>(h)] == i) continue;
                seen[static_cast<std::size_t>(h)] = i;
                c.col_idx.push_back(h);
            }
        }
        std::sort(c.col_idx.begin() + static_cast<std::ptrdiff_t>(first), c.col_idx.end());
        c.row_ptr[static_cast<std::size_t>(i) + 1] = static_cast<Index>(c.col_idx.size());
    }
    return c;
}

/// Adds to a square block pattern the diagonal blocks it lacks (rows kept sorted).
inline void with_diagonal_blocks(BlockPattern& p)
{
    BlockPattern out;
    out.block_rows = p.block_rows;
    out.block_cols = p.block_cols;
    out.row_ptr.assign(static_cast<std::size_t>(p.block_rows) + 1, 0);
    out.col_idx.reserve(p.col_idx.size());
    bool added = false;
    for (Index i = 0; i < p.block_rows; ++i) {
        const auto begin = p.col_idx.begin() + p.row_ptr[static_cast<std::size_t>(i)];
        const auto end = p.col_idx.begin() + p.row_ptr[static_cast<std::size_t>(i) + 1];
        const auto at = std::lower_bound(begin, end, i);
        out.col_idx.insert(out.col_idx.end(), begin, at);
        if (at == end || *at != i) added = true;
        out.col_idx.push_back(i);
        out.col_idx.insert(out.col_idx.end(), at == end || *at != i ? at : at + 1, end);
        out.row_ptr[static_cast<std::size_t>(i) + 1] = static_cast<Index>(out.col_idx.size());
    }
    if (added) p = std::move(out);
}

/// A scalar CSR matrix's entries written into the `rows` × `cols` blocks of
/// `pattern` (row-major blocks) at `values`, which holds the pattern's blocks
/// and is zero where no entry is stored; `position` (where given) receives
/// the place in them of each stored entry, in the compressed order. Block
/// rows on the CPU threads. Throws where the pattern misses an entry.
template <typename T>
void values_on_pattern(const HostMatrix<T>& m, const BlockPattern& pattern, int rows, int cols, T* values,
                       std::vector<Index>* position)
{
    if (m.rows() != static_cast<Eigen::Index>(pattern.block_rows) * rows) {
        throw InvalidInput(detail::describe("values_on_pattern matrix rows", m.rows(),
                                            ("must equal the pattern's block rows times " + std::to_string(rows) +
                                             ", " + std::to_string(static_cast<long long>(pattern.block_rows) * rows))
                                                .c_str()));
    }
    if (position != nullptr) position->assign(static_cast<std::size_t>(m.nonZeros()), Index(0));
    // Block rows on the CPU threads (each writes its own blocks); the first
    // scalar entry that the pattern misses is reported after the loop.
    const Index block_rows = pattern.block_rows;
    std::vector<Index> missed(static_cast<std::size_t>(block_rows), Index(-1));  // the entry, or −1
    for_each_on_host(block_rows, [&](Index br) {
        const auto begin = pattern.col_idx.begin() + pattern.row_ptr[static_cast<std::size_t>(br)];
        const auto end = pattern.col_idx.begin() + pattern.row_ptr[static_cast<std::size_t>(br) + 1];
        for (Index e = m.outerIndexPtr()[br * rows]; e < m.outerIndexPtr()[(br + 1) * rows]; ++e) {
            const Index col = m.innerIndexPtr()[e];
            const auto found = std::lower_bound(begin, end, col / cols);
            if (found == end || *found != col / cols) {
                missed[static_cast<std::size_t>(br)] = e;
                return;
            }
        }
        for (Index row = br * rows; row < (br + 1) * rows; ++row) {
            for (Index e = m.outerIndexPtr()[row]; e < m.outerIndexPtr()[row + 1]; ++e) {
                const Index col = m.innerIndexPtr()[e];
                const Index at =
                    static_cast<Index>(std::lower_bound(begin, end, col / cols) - pattern.col_idx.begin()) * rows *
                        cols +
                    (row % rows) * cols + col % cols;
                values[static_cast<std::size_t>(at)] = m.valuePtr()[e];
                if (position != nullptr) (*position)[static_cast<std::size_t>(e)] = at;
            }
        }
    });
    for (Index br = 0; br < block_rows; ++br) {
        const Index e = missed[static_cast<std::size_t>(br)];
        if (e < 0) continue;
        const Index row = static_cast<Index>(std::upper_bound(m.outerIndexPtr(), m.outerIndexPtr() + m.rows() + 1, e) -
                                             m.outerIndexPtr()) -
                          1;
        throw InvalidInput(detail::describe("values_on_pattern: the block pattern misses the entry in row", row,
                                            ("column " + std::to_string(m.innerIndexPtr()[e])).c_str()));
    }
}

/// f(p) on a device vector's storage p from the host, the vector's contents
/// kept: in place on CPU threads (the host is the device), through a host
/// copy where the device is a GPU. For arrays that the host setup fills,
/// without a second host array and a copy on CPU threads.
template <typename T, typename F>
void write_on_host(thrust::device_vector<T>& v, F f)
{
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
    std::vector<T> host(v.size());
    thrust::copy(v.begin(), v.end(), host.begin());
    f(host.data());
    thrust::copy(host.begin(), host.end(), v.begin());
#else
    f(thrust::raw_pointer_cast(v.data()));
#endif
}

/// The K × K blocks of a scalar CSR matrix whose rows and columns come in
/// groups of K (a square coarse level's aggregates), on `pattern` (nullptr:
/// the blocks holding its entries): the block matrix, and in `position` the
/// place in its values of each stored scalar entry (in the compressed order).
template <typename T, int K>
BsrMatrix<T, K> blocked_copy(const HostMatrix<T>& m, std::vector<Index>& position,
                             const BlockPattern* pattern = nullptr)
{
    const BlockPattern own = pattern == nullptr ? scalar_block_pattern(m, K, K) : BlockPattern{};
    const BlockPattern& p = pattern == nullptr ? own : *pattern;
    // A block pattern's rows are sorted and in range (scalar_block_pattern,
    // block_pattern_product): not validated again; the values start at zero.
    BsrMatrix<T, K> copy;
    copy.assign_trusted_pattern(p.block_rows, p.block_cols,
                                thrust::device_vector<Index>(p.row_ptr.begin(), p.row_ptr.end()),
                                thrust::device_vector<Index>(p.col_idx.begin(), p.col_idx.end()));
    write_on_host(copy.values(), [&](T* values) { values_on_pattern(m, p, K, K, values, &position); });
    return copy;
}

/// The scalar CSR copy on the host of a K × K block matrix on `pattern`
/// with row-major block values `values`: every entry of every block, zeros
/// included, so that the copy's pattern holds any value the blocks take later
/// (full_block_positions gives each entry's place in the blocks). `nonzeros`
/// receives the number of entries that are not zero. Rows on the CPU threads.
template <typename T, int K>
HostMatrix<T> scalar_copy_of_blocks(const BlockPattern& pattern, const T* values, Index& nonzeros)
{
    const Index rows = pattern.block_rows * K;
    HostMatrix<T> m(rows, pattern.block_cols * K);
    Index* const row_ptr = m.outerIndexPtr();
    for (Index br = 0; br < pattern.block_rows; ++br) {
        const Index width =
            (pattern.row_ptr[static_cast<std::size_t>(br) + 1] - pattern.row_ptr[static_cast<std::size_t>(br)]) * K;
        for (int i = 0; i < K; ++i) row_ptr[br * K + i + 1] = width;
    }
    row_ptr[0] = 0;
    for (Index r = 0; r < rows; ++r) row_ptr[r + 1] += row_ptr[r];
    m.resizeNonZeros(row_ptr[rows]);
    Index* const col_idx = m.innerIndexPtr();
    T* const out = m.valuePtr();
    std::vector<Index> counts(static_cast<std::size_t>(pattern.block_rows), Index(0));
    for_each_on_host(pattern.block_rows, [&](Index br) {
        Index count = 0;
        for (int i = 0; i < K; ++i) {
            Index at = row_ptr[br * K + i];
            for (Index e = pattern.row_ptr[static_cast<std::size_t>(br)];
                 e < pattern.row_ptr[static_cast<std::size_t>(br) + 1]; ++e) {
                for (int c = 0; c < K; ++c) {
                    const Index from = e * (K * K) + i * K + c;
                    col_idx[at] = pattern.col_idx[static_cast<std::size_t>(e)] * K + c;
                    out[at] = values[from];
                    count += values[from] != T(0) ? 1 : 0;
                    ++at;
                }
            }
        }
        counts[static_cast<std::size_t>(br)] = count;
    });
    nonzeros = 0;
    for (const Index count : counts) nonzeros += count;
    return m;
}

/// For the scalar copy of a K × K block matrix on `pattern` with every entry
/// of every block (scalar_copy_of_blocks), each entry's place in the block
/// values, in the copy's compressed order.
template <int K>
std::vector<Index> full_block_positions(const BlockPattern& pattern)
{
    std::vector<Index> position;
    position.reserve(pattern.col_idx.size() * (K * K));
    for (Index br = 0; br < pattern.block_rows; ++br) {
        for (int i = 0; i < K; ++i) {
            for (Index e = pattern.row_ptr[static_cast<std::size_t>(br)];
                 e < pattern.row_ptr[static_cast<std::size_t>(br) + 1]; ++e) {
                for (int c = 0; c < K; ++c) position.push_back(e * (K * K) + i * K + c);
            }
        }
    }
    return position;
}

/// A block CSR matrix of rectangular blocks (row-major) on the device: a
/// prolongator, restriction or product of a square level in blocks, for the
/// refresh's block products. The block sizes are the user's to know.
template <typename T>
struct BlockCsr {
    thrust::device_vector<Index> row_ptr;
    thrust::device_vector<Index> col_idx;
    thrust::device_vector<T> values;

    BlockCsr() = default;
    /// `pattern`, with `m`'s entries in its `rows` × `cols` blocks (zero
    /// where `m` is null).
    BlockCsr(const BlockPattern& pattern, int rows, int cols, const HostMatrix<T>* m = nullptr)
        : row_ptr(pattern.row_ptr),
          col_idx(pattern.col_idx),
          values(pattern.col_idx.size() * static_cast<std::size_t>(rows * cols), T(0))
    {
        if (m != nullptr) write_on_host(values, [&](T* v) { values_on_pattern(*m, pattern, rows, cols, v, nullptr); });
    }
    bool empty() const { return row_ptr.size() < 2; }
    Index block_rows() const { return static_cast<Index>(row_ptr.size()) - 1; }
};

/// The raw arrays of a block CSR matrix (BsrMatrix or BlockCsr) for kernels.
template <typename T>
struct BlockArrays {
    const Index* row_ptr;
    const Index* col_idx;
    const T* values;
};

template <typename T, int K>
BlockArrays<T> arrays_of(const BsrMatrix<T, K>& m)
{
    return {raw_pointer(m.row_ptr()), raw_pointer(m.col_idx()), raw_pointer(m.values())};
}

template <typename T>
BlockArrays<T> arrays_of(const BlockCsr<T>& m)
{
    return {raw_pointer(m.row_ptr), raw_pointer(m.col_idx), raw_pointer(m.values)};
}

/// The next coarser level's aggregates of the yarn coarse space, from the
/// coarse aggregates of the last level (DoFs and near-null rows the R
/// factors of their QR): `run` consecutive runs of `across` neighbouring
/// lines of one family together (lines neighbour when their indices in the
/// family do), side × side squares together; a node on no line stays alone.
template <typename T>
std::vector<YarnAggregate<T>> join_yarn_aggregates(const std::vector<YarnAggregate<T>>& coarse, int run, int across,
                                                   int side)
{
    std::vector<std::tuple<int, Index, Index, std::size_t>> keyed;  // (family, key, key, index into coarse)
    for (std::size_t i = 0; i < coarse.size(); ++i) {
        const YarnAggregate<T>& g = coarse[i];
        if (g.family < 2) {
            keyed.emplace_back(g.family, g.key[0] / across, g.key[1] / run, i);
        } else if (g.family == 2) {
            keyed.emplace_back(g.family, g.key[0] / side, g.key[1] / side, i);
        } else {
            keyed.emplace_back(g.family, g.key[0], g.key[1], i);
        }
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<YarnAggregate<T>> result;
    for (std::size_t begin = 0; begin < keyed.size();) {
        std::size_t end = begin;
        YarnAggregate<T> g;
        g.family = std::get<0>(keyed[begin]);
        g.key[0] = std::get<1>(keyed[begin]);
        g.key[1] = std::get<2>(keyed[begin]);
        Index rows = 0, modes = 0;
        for (; end < keyed.size() && std::get<0>(keyed[end]) == g.family && std::get<1>(keyed[end]) == g.key[0] &&
               std::get<2>(keyed[end]) == g.key[1];
             ++end) {
            const YarnAggregate<T>& member = coarse[std::get<3>(keyed[end])];
            rows += static_cast<Index>(member.dofs.size());
            modes = std::max(modes, static_cast<Index>(member.near_null.cols()));
        }
        g.near_null = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>::Zero(rows, modes);
        Index row = 0;
        for (std::size_t k = begin; k < end; ++k) {
            const YarnAggregate<T>& member = coarse[std::get<3>(keyed[k])];
            g.dofs.insert(g.dofs.end(), member.dofs.begin(), member.dofs.end());
            g.near_null.block(row, 0, member.near_null.rows(), member.near_null.cols()) = member.near_null;
            row += static_cast<Index>(member.near_null.rows());
        }
        result.push_back(std::move(g));
        begin = end;
    }
    return result;
}

/// The tentative prolongator of a yarn coarse space (fine DoFs × Σ modes):
/// each aggregate's near-null rows N = Q R (orthonormalize), Q's columns its
/// coarse DoFs. `coarse` receives the coarse aggregates (the coarse DoFs, R
/// as near-null rows) and `starts` the first coarse DoF of each, then #coarse
/// DoFs (the blocks of the coarse level's block Jacobi).
template <typename T>
HostMatrix<T> yarn_tentative_prolongator(const std::vector<YarnAggregate<T>>& aggregates, Index fine_dofs,
                                         std::vector<YarnAggregate<T>>& coarse, std::vector<Index>& starts)
{
    coarse.clear();
    starts.assign(1, 0);
    std::vector<Eigen::Triplet<T, Index>> triplets;
    Index column = 0;
    for (const YarnAggregate<T>& g : aggregates) {
        Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> q = g.near_null;
        YarnAggregate<T> c;
        c.family = g.family;
        c.key[0] = g.key[0];
        c.key[1] = g.key[1];
        c.near_null = orthonormalize(q);
        const Index k = static_cast<Index>(q.cols());
        for (std::size_t r = 0; r < g.dofs.size(); ++r) {
            for (Index m = 0; m < k; ++m) {
                const T value = q(static_cast<Index>(r), m);
                if (value != T(0)) triplets.emplace_back(g.dofs[r], column + m, value);
            }
        }
        for (Index m = 0; m < k; ++m) c.dofs.push_back(column + m);
        column += k;
        starts.push_back(column);
        coarse.push_back(std::move(c));
    }
    HostMatrix<T> p(fine_dofs, column);
    p.setFromTriplets(triplets.begin(), triplets.end());
    return p;
}

/// How many squares apart a square level's matrix couples its aggregates
/// (its lines of squares' bandwidth): two, as bending couples nodes.
constexpr Index square_coupling_reach = 2;

/// `a` (a level of the square coarse space, aggregate g on the DoFs
/// [starts[g], starts[g + 1])) without the couplings between squares more
/// than `radius` apart along either direction of the square grid (family 2
/// aggregates, key = the square's row and column); couplings of any other
/// aggregate are kept. The matrix that smooths the prolongator below it
/// where squares are joined 2 × 2 (MultilevelOptions::square_join).
template <typename T>
HostMatrix<T> square_neighbour_couplings(const HostMatrix<T>& a, const std::vector<Index>& starts,
                                         const std::vector<YarnAggregate<T>>& aggregates, Index radius)
{
    std::vector<Index> owner(static_cast<std::size_t>(a.rows()), Index(-1));
    for (std::size_t g = 0; g + 1 < starts.size() && g < aggregates.size(); ++g) {
        for (Index d = starts[g]; d < starts[g + 1]; ++d) owner[static_cast<std::size_t>(d)] = static_cast<Index>(g);
    }
    const auto near = [&](Index r, Index c) {
        const Index i = owner[static_cast<std::size_t>(r)], j = owner[static_cast<std::size_t>(c)];
        if (i < 0 || j < 0) return true;
        const YarnAggregate<T>& u = aggregates[static_cast<std::size_t>(i)];
        const YarnAggregate<T>& v = aggregates[static_cast<std::size_t>(j)];
        if (u.family != 2 || v.family != 2) return true;
        return std::abs(u.key[0] - v.key[0]) <= radius && std::abs(u.key[1] - v.key[1]) <= radius;
    };
    HostMatrix<T> result = a;
    result.prune([&](Index r, Index c, const T&) { return near(r, c); });
    return result;
}

/// For each block of a square level's block pattern (one block row and
/// column per aggregate of `aggregates`), whether square_neighbour_couplings
/// keeps it: 1 unless both are squares more than `radius` apart.
template <typename T>
std::vector<std::uint8_t> square_neighbour_blocks(const BlockPattern& pattern,
                                                  const std::vector<YarnAggregate<T>>& aggregates, Index radius)
{
    std::vector<std::uint8_t> kept(pattern.col_idx.size(), 1);
    for (Index row = 0; row < pattern.block_rows; ++row) {
        for (Index e = pattern.row_ptr[static_cast<std::size_t>(row)];
             e < pattern.row_ptr[static_cast<std::size_t>(row) + 1]; ++e) {
            const Index col = pattern.col_idx[static_cast<std::size_t>(e)];
            if (static_cast<std::size_t>(std::max(row, col)) >= aggregates.size()) continue;
            const YarnAggregate<T>& u = aggregates[static_cast<std::size_t>(row)];
            const YarnAggregate<T>& v = aggregates[static_cast<std::size_t>(col)];
            if (u.family != 2 || v.family != 2) continue;
            const bool near = std::abs(u.key[0] - v.key[0]) <= radius && std::abs(u.key[1] - v.key[1]) <= radius;
            kept[static_cast<std::size_t>(e)] = near ? 1 : 0;
        }
    }
    return kept;
}

/// The change of coarse basis that makes each aggregate's diagonal block of
/// the coarse matrix `coarse` the identity: per block [starts[g],
/// starts[g + 1]), on its DoFs with a diagonal above `floor` (the others are
/// inactive and keep a unit column), C_gg = L Lᵀ and the block of the
/// returned matrix is L⁻ᵀ. With P ← P L⁻ᵀ the coarse level's point Jacobi is
/// its block Jacobi on the aggregates (D⁻¹C and the new C are similar), which
/// the yarn coarse space needs: its aggregates' modes (tangent and arc
/// length; normal, tilts and bending) couple strongly within an aggregate.
/// The aggregates' near-null rows R follow the basis: R ← Lᵀ R. A block that
/// is not positive definite keeps the identity.
template <typename T>
HostMatrix<T> block_energy_basis(const HostMatrix<T>& coarse, const std::vector<Index>& starts, T floor,
                                 std::vector<YarnAggregate<T>>& aggregates)
{
    std::vector<Eigen::Triplet<T, Index>> triplets;
    std::vector<T> block, l, w;
    for (std::size_t g = 0; g + 1 < starts.size(); ++g) {
        const Index first = starts[g];
        const Index size = starts[g + 1] - first;
        std::vector<Index> alive;
        for (Index r = 0; r < size; ++r) {
            if (coarse.coeff(first + r, first + r) > floor) alive.push_back(r);
        }
        const std::size_t n = alive.size();
        block.assign(n * n, T(0));
        for (std::size_t r = 0; r < n; ++r) {
            for (std::size_t c = 0; c < n; ++c) block[r * n + c] = coarse.coeff(first + alive[r], first + alive[c]);
        }
        std::vector<std::uint8_t> unit(static_cast<std::size_t>(size), 1);
        if (n > 0 && cholesky(block, n, l)) {
            lower_inverse(l, n, w);
            for (std::size_t r = 0; r < n; ++r) {
                unit[static_cast<std::size_t>(alive[r])] = 0;
                for (std::size_t c = r; c < n; ++c) {  // (L⁻ᵀ)_rc = W_cr, upper triangular
                    triplets.emplace_back(first + alive[r], first + alive[c], w[c * n + r]);
                }
            }
            auto& near_null = aggregates[g].near_null;  // R ← Lᵀ R on the alive rows
            const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> old = near_null;
            for (std::size_t r = 0; r < n; ++r) {
                near_null.row(alive[r]).setZero();
                for (std::size_t c = r; c < n; ++c) near_null.row(alive[r]) += l[c * n + r] * old.row(alive[c]);
            }
        }
        for (Index r = 0; r < size; ++r) {
            if (unit[static_cast<std::size_t>(r)]) triplets.emplace_back(first + r, first + r, T(1));
        }
    }
    HostMatrix<T> basis(coarse.rows(), coarse.cols());
    basis.setFromTriplets(triplets.begin(), triplets.end());
    return basis;
}

/// to = from without a copy: Eigen 3.4's SparseMatrix has no move
/// assignment, so `to = f()` copies what f returns (a quarter of a second for
/// Â P at 200² crossings); `from` is built in place from a temporary and swapped.
template <typename T>
void assign_by_swap(HostMatrix<T>& to, HostMatrix<T> from)
{
    to.swap(from);
}

/// A rows × cols host matrix written in two passes, each over a few
/// contiguous chunks of rows in parallel on CPU threads (for_each_on_host):
/// count_rows(first, last, sizes) sets sizes[r] to row r's entries for r in
/// [first, last); then fill_rows(first, last, row_ptr, col_idx, values)
/// writes those rows into their places in the compressed arrays. Each chunk
/// may keep scratch of its own; each row is written on its own, so the same
/// bits on any thread count.
template <typename T, typename CountRows, typename FillRows>
HostMatrix<T> compressed_in_two_passes(Index rows, Index cols, CountRows count_rows, FillRows fill_rows)
{
    const Index chunks = std::min<Index>(rows, 8);
    const auto first_row = [&](Index k) { return static_cast<Index>(static_cast<long long>(rows) * k / chunks); };
    HostMatrix<T> c(rows, cols);
    Index* const row_ptr = c.outerIndexPtr();
    row_ptr[0] = 0;
    for_each_on_host(chunks, [&](Index k) { count_rows(first_row(k), first_row(k + 1), row_ptr + 1); });
    for (Index r = 0; r < rows; ++r) row_ptr[r + 1] += row_ptr[r];
    c.resizeNonZeros(row_ptr[rows]);
    Index* const col_idx = c.innerIndexPtr();
    T* const values = c.valuePtr();
    for_each_on_host(chunks, [&](Index k) { fill_rows(first_row(k), first_row(k + 1), row_ptr, col_idx, values); });
    return c;
}

/// C = A B of two row-major host matrices: row by row with a dense
/// accumulator (Gustavson), each row's columns sorted; entries that cancel
/// stay stored, as in Eigen's product (see spd_inverse for why not Eigen's).
/// The rows' sizes, then the rows (compressed_in_two_passes).
template <typename T>
HostMatrix<T> sparse_product(const HostMatrix<T>& a, const HostMatrix<T>& b)
{
    const auto count_rows = [&](Index first, Index last, Index* sizes) {
        std::vector<Index> marker(static_cast<std::size_t>(b.cols()), Index(-1));
        for (Index r = first; r < last; ++r) {
            Index count = 0;
            for (typename HostMatrix<T>::InnerIterator ia(a, r); ia; ++ia) {
                for (typename HostMatrix<T>::InnerIterator ib(b, ia.col()); ib; ++ib) {
                    Index& mark = marker[static_cast<std::size_t>(ib.col())];
                    if (mark != r) {
                        mark = r;
                        ++count;
                    }
                }
            }
            sizes[r] = count;
        }
    };
    const auto fill_rows = [&](Index first, Index last, const Index* row_ptr, Index* col_idx, T* values) {
        std::vector<T> accumulator(static_cast<std::size_t>(b.cols()), T(0));
        std::vector<Index> marker(static_cast<std::size_t>(b.cols()), Index(-1));
        for (Index r = first; r < last; ++r) {
            Index* const cols = col_idx + row_ptr[r];
            Index count = 0;
            for (typename HostMatrix<T>::InnerIterator ia(a, r); ia; ++ia) {
                const T value = ia.value();
                for (typename HostMatrix<T>::InnerIterator ib(b, ia.col()); ib; ++ib) {
                    const std::size_t col = static_cast<std::size_t>(ib.col());
                    if (marker[col] != r) {
                        marker[col] = r;
                        accumulator[col] = T(0);
                        cols[count++] = ib.col();
                    }
                    accumulator[col] += value * ib.value();
                }
            }
            std::sort(cols, cols + count);
            for (Index e = 0; e < count; ++e) values[row_ptr[r] + e] = accumulator[static_cast<std::size_t>(cols[e])];
        }
    };
    return compressed_in_two_passes<T>(static_cast<Index>(a.rows()), static_cast<Index>(b.cols()), count_rows,
                                       fill_rows);
}

/// C = A − ω B of two row-major host matrices of one size, without the
/// entries that come out exactly zero: entry by entry a − (ω b), with a or b
/// zero where not stored, as Eigen's `(a - omega * b).prune(0, eps)` gives
/// them (the same bits, the same entries), in two passes over the rows on the
/// CPU threads (for_each_on_host) like sparse_product; Eigen's expression
/// ran on one thread and took 0.7–0.8 s for the smoothed prolongator at 200²
/// crossings.
template <typename T>
HostMatrix<T> sparse_difference_without_zeros(const HostMatrix<T>& a, T omega, const HostMatrix<T>& b)
{
    if (a.rows() != b.rows() || a.cols() != b.cols()) {
        throw InvalidInput(detail::describe(
            "sparse_difference_without_zeros: rows of the subtrahend", b.rows(),
            ("must equal the minuend's " + std::to_string(a.rows()) + " (and columns " + std::to_string(a.cols()) + ")")
                .c_str()));
    }
    // Row r merged in column order; emit(column, value) for each nonzero result.
    const auto merge_row = [&](Index r, auto emit) {
        typename HostMatrix<T>::InnerIterator ia(a, r), ib(b, r);
        while (ia || ib) {
            const bool take_a = ia && (!ib || ia.col() <= ib.col());
            const bool take_b = ib && (!ia || ib.col() <= ia.col());
            const Index col = take_a ? static_cast<Index>(ia.col()) : static_cast<Index>(ib.col());
            const T value = (take_a ? ia.value() : T(0)) - (take_b ? omega * ib.value() : T(0));
            if (value != T(0)) emit(col, value);
            if (take_a) ++ia;
            if (take_b) ++ib;
        }
    };
    return compressed_in_two_passes<T>(
        static_cast<Index>(a.rows()), static_cast<Index>(a.cols()),
        [&](Index first, Index last, Index* sizes) {
            for (Index r = first; r < last; ++r) {
                Index count = 0;
                merge_row(r, [&](Index, T) { ++count; });
                sizes[r] = count;
            }
        },
        [&](Index first, Index last, const Index* row_ptr, Index* col_idx, T* values) {
            for (Index r = first; r < last; ++r) {
                Index at = row_ptr[r];
                merge_row(r, [&](Index col, T value) {
                    col_idx[at] = col;
                    values[at] = value;
                    ++at;
                });
            }
        });
}

/// The block-diagonal inverse of Â, blocks [starts[i], starts[i + 1]) (of
/// any sizes; starts ends with #rows), restricted to the DoFs with a positive
/// diagonal (inactive DoFs get zero rows and columns). A block that is not
/// positive definite falls back to the inverse of its diagonal.
template <typename T>
HostMatrix<T> block_diagonal_inverse(const HostMatrix<T>& a, const std::vector<Index>& starts)
{
    const Index nodes = static_cast<Index>(starts.size()) - 1;
    std::vector<Eigen::Triplet<T, Index>> triplets;
    std::vector<T> block, sub, inverse;
    for (Index i = 0; i < nodes; ++i) {
        const Index first = starts[static_cast<std::size_t>(i)];
        const int bs = static_cast<int>(starts[static_cast<std::size_t>(i) + 1] - first);
        const std::size_t size = static_cast<std::size_t>(bs);
        block.assign(size * size, T(0));
        for (int r = 0; r < bs; ++r) {
            for (typename HostMatrix<T>::InnerIterator it(a, first + r); it; ++it) {
                if (it.col() >= first && it.col() < first + bs)
                    block[static_cast<std::size_t>(r) * size + (it.col() - first)] = it.value();
            }
        }
        std::vector<std::size_t> alive;
        for (std::size_t r = 0; r < size; ++r) {
            if (block[r * size + r] > T(0)) alive.push_back(r);
        }
        const std::size_t n = alive.size();
        sub.resize(n * n);
        for (std::size_t r = 0; r < n; ++r) {
            for (std::size_t c = 0; c < n; ++c) sub[r * n + c] = block[alive[r] * size + alive[c]];
        }
        if (spd_inverse(sub, n, inverse)) {
            for (std::size_t r = 0; r < n; ++r) {
                for (std::size_t c = 0; c < n; ++c) {
                    triplets.emplace_back(first + static_cast<Index>(alive[r]), first + static_cast<Index>(alive[c]),
                                          inverse[r * n + c]);
                }
            }
        } else {
            for (std::size_t r = 0; r < n; ++r) {
                const Index dof = first + static_cast<Index>(alive[r]);
                triplets.emplace_back(dof, dof, T(1) / sub[r * n + r]);
            }
        }
    }
    HostMatrix<T> result(a.rows(), a.cols());
    result.setFromTriplets(triplets.begin(), triplets.end());
    return result;
}

/// The same with uniform bs × bs blocks.
template <typename T>
HostMatrix<T> block_diagonal_inverse(const HostMatrix<T>& a, int bs)
{
    std::vector<Index> starts(static_cast<std::size_t>(a.rows() / bs) + 1);
    for (std::size_t i = 0; i < starts.size(); ++i) starts[i] = static_cast<Index>(i) * bs;
    return block_diagonal_inverse(a, starts);
}

/// λ_max of D⁻¹Â by power iteration from a fixed, deterministic start vector.
template <typename T>
T largest_eigenvalue(const HostMatrix<T>& inverse_diagonal, const HostMatrix<T>& a, int iterations)
{
    using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;
    Vector x(a.rows());
    for (Index i = 0; i < a.rows(); ++i) x[i] = T(1) + T(0.5) * std::sin(T(0.7) * T(i) + T(0.3));
    T estimate = T(0);
    for (int it = 0; it < iterations; ++it) {
        const T norm = x.norm();
        if (!(norm > T(0))) return T(1);
        x /= norm;
        Vector y = inverse_diagonal * (a * x);
        estimate = y.norm();
        x = y;
    }
    return estimate > T(0) ? estimate : T(1);
}

/// Flat device copy of a host vector.
template <typename U>
thrust::device_vector<U> to_device(const std::vector<U>& values)
{
    return thrust::device_vector<U>(values.begin(), values.end());
}

/// One Chebyshev step on one block row of a level:
///   d ← α d + β D⁻¹ S (r − Â z),   z_out = z + d
/// (z is taken as zero when `zero_start`, which skips the product).
template <typename T, int BB, typename TA = T>
struct ChebyshevStep {
    const BsrConstView<TA, BB> a;  ///< values as TA, widened to T in the products
    const std::uint8_t* const free_dofs;
    const T* const inverse;  ///< #block rows · BB·BB
    const T* const r;
    const T* const z;
    T* const d;
    T* const z_out;
    const T alpha;
    const T beta;
    const bool zero_start;

    WEFT_HD void operator()(Index row) const
    {
        T residual[BB];
        if (zero_start) {
            for (int i = 0; i < BB; ++i) residual[i] = T(0);
        } else {
            bsr_detail::block_row_product(a, z, row, residual);
        }
        const std::size_t offset = static_cast<std::size_t>(row) * BB;
        for (int i = 0; i < BB; ++i) {
            residual[i] = free_dofs[offset + i] ? r[offset + i] - residual[i] : T(0);
        }
        const T* block = inverse + static_cast<std::size_t>(row) * (BB * BB);
        for (int i = 0; i < BB; ++i) {
            T w = T(0);
            for (int j = 0; j < BB; ++j) w += block[i * BB + j] * residual[j];
            const T step = (alpha != T(0) ? alpha * d[offset + i] : T(0)) + beta * w;
            d[offset + i] = step;
            z_out[offset + i] = (zero_start ? T(0) : z[offset + i]) + step;
        }
    }
};

/// y_row += Σ_k P_row,k x_k for one scalar row of a CSR matrix.
template <typename T>
struct AddRowProduct {
    const BsrConstView<T, 1> p;
    const T* const x;
    T* const y;
    const std::uint8_t* const free_dofs = nullptr;  ///< rows left alone where 0 (nullptr: none)

    WEFT_HD void operator()(Index row) const
    {
        if (free_dofs != nullptr && !free_dofs[row]) return;
        T sum = T(0);
        for (Index k = p.row_ptr[row]; k < p.row_ptr[row + 1]; ++k) sum += p.values[k] * x[p.col_idx[k]];
        y[row] += sum;
    }
};

/// y_row = Σ_k P_row,k x_k (or y_row += …, where `add`) for one block row of
/// a matrix in R × K blocks (BlockCsr: a square level's prolongator or
/// restriction), rows left alone where `free_dofs` is 0 (nullptr: none). The
/// sums run over the block columns in order and within each block over its
/// columns: the order of the scalar row's sorted columns (AddRowProduct,
/// spmv), with the blocks' zeros between.
template <typename T, int R, int K>
struct BlockRowApply {
    const BlockArrays<T> p;
    const T* const x;
    T* const y;
    const std::uint8_t* const free_dofs;
    const bool add;

    WEFT_HD void operator()(Index row) const
    {
        T sum[R];
        for (int r = 0; r < R; ++r) sum[r] = T(0);
        for (Index k = p.row_ptr[row]; k < p.row_ptr[row + 1]; ++k) {
            const T* block = p.values + static_cast<std::size_t>(k) * (R * K);
            const T* in = x + static_cast<std::size_t>(p.col_idx[k]) * K;
            for (int r = 0; r < R; ++r) {
                for (int m = 0; m < K; ++m) sum[r] += block[r * K + m] * in[m];
            }
        }
        for (int r = 0; r < R; ++r) {
            const std::size_t i = static_cast<std::size_t>(row) * R + r;
            if (free_dofs != nullptr && !free_dofs[i]) continue;
            y[i] = add ? y[i] + sum[r] : sum[r];
        }
    }
};

/// One scalar row of C = Â X with C's pattern fixed (that of the build's
/// product, a superset of what the current values need): C_row = Σ_k Â_row,k
/// X_k,:, each product added at its column's position in C's row (binary
/// search; one thread per row, so the sums run in a fixed order). Â is the
/// level matrix `a` (block size BB); X is scalar CSR. Returns how many
/// products fell outside C's pattern (then the pattern is stale and the
/// hierarchy must be rebuilt).
///
/// Where `free_dofs` is given (the finest level, X its prolongator P), C is
/// S A S P' with P' = S P, the prolongator the V-cycle applies under the
/// current filter S (it adds the correction on free DoFs only): rows that S
/// constrains, and rows where P's own row is empty, are left zero. Both meet
/// a zero row of P' in the Galerkin product P'ᵀ C, which restriction (Pᵀ)
/// times C then gives whatever filter the hierarchy was built for. (With the
/// build's filter this is the build's Pᵀ Â P: P is zero on the DoFs it
/// constrained.)
template <typename T, int BB>
struct FixedPatternProduct {
    const BsrConstView<T, BB> a;
    const std::uint8_t* const free_dofs;  ///< nullptr: `a` as stored
    const BsrConstView<T, 1> x;
    const Index* const c_row_ptr;
    const Index* const c_col_idx;
    T* const c_values;
    /// Only C's entries on or right of the diagonal (columns ≥ row; `a` is
    /// scalar here): for a symmetric C, whose other half MirrorLower copies.
    const bool upper = false;

    WEFT_HD int add_row(Index row, Index k, T factor) const
    {
        int misses = 0;
        Index next = c_row_ptr[row + 1];  // the position after the last one found
        Index begin = x.row_ptr[k];
        if (upper) {  // X's row is sorted: skip its columns left of `row`
            Index end = x.row_ptr[k + 1];
            while (begin < end) {
                const Index middle = begin + (end - begin) / 2;
                if (x.col_idx[middle] < row) {
                    begin = middle + 1;
                } else {
                    end = middle;
                }
            }
        }
        for (Index e = begin; e < x.row_ptr[k + 1]; ++e) {
            // X's rows are sorted and run in groups of consecutive columns
            // (the K coarse DoFs of one aggregate), which C's row holds
            // together: try the next position before searching.
            const Index column = x.col_idx[e];
            const Index position = next < c_row_ptr[row + 1] && c_col_idx[next] == column
                                       ? next
                                       : bsr_find_block(c_row_ptr, c_col_idx, row, column);
            if (position < 0) {
                misses += 1;
            } else {
                c_values[position] += factor * x.values[e];
                next = position + 1;
            }
        }
        return misses;
    }

    WEFT_HD int operator()(Index row) const
    {
        for (Index e = c_row_ptr[row]; e < c_row_ptr[row + 1]; ++e) c_values[e] = T(0);
        if (free_dofs != nullptr && (!free_dofs[row] || x.row_ptr[row] == x.row_ptr[row + 1])) return 0;
        const Index block_row = row / BB;
        const int r = static_cast<int>(row % BB);
        int misses = 0;
        for (Index k = a.row_ptr[block_row]; k < a.row_ptr[block_row + 1]; ++k) {
            const T* block_values = a.values + static_cast<std::size_t>(k) * (BB * BB) + r * BB;
            for (int c = 0; c < BB; ++c) {
                const Index column = a.col_idx[k] * BB + c;
                if (block_values[c] == T(0) || (free_dofs != nullptr && !free_dofs[column])) continue;
                misses += add_row(row, column, block_values[c]);
            }
        }
        return misses;
    }
};

/// C_e = C_mirror[e] for each entry e left of the diagonal: the lower half
/// of a symmetric C from its upper half (mirror[e]: the position of the
/// transposed entry; see symmetric_mirror).
template <typename T>
struct MirrorLower {
    const Index* const row_ptr;
    const Index* const col_idx;
    const Index* const mirror;
    T* const values;

    WEFT_HD void operator()(Index row) const
    {
        for (Index e = row_ptr[row]; e < row_ptr[row + 1] && col_idx[e] < row; ++e) values[e] = values[mirror[e]];
    }
};

/// For a scalar CSR matrix with a symmetric pattern (sorted rows), the
/// position of each entry's transpose (entries right of the diagonal map
/// to themselves); empty where the pattern is not symmetric.
template <typename T>
std::vector<Index> symmetric_mirror(const HostMatrix<T>& m)
{
    std::vector<Index> mirror(static_cast<std::size_t>(m.nonZeros()));
    const Index* outer = m.outerIndexPtr();
    const Index* inner = m.innerIndexPtr();
    for (Index row = 0; row < m.rows(); ++row) {
        for (Index e = outer[row]; e < outer[row + 1]; ++e) {
            const Index col = inner[e];
            mirror[static_cast<std::size_t>(e)] = e;
            if (col >= row) continue;
            const Index* found = std::lower_bound(inner + outer[col], inner + outer[col + 1], row);
            if (found == inner + outer[col + 1] || *found != row) return {};
            mirror[static_cast<std::size_t>(e)] = static_cast<Index>(found - inner);
        }
    }
    return mirror;
}

/// C = Â X into C's fixed pattern (FixedPatternProduct); the number of
/// products that fell outside it. With `mirror` (symmetric_mirror of C's
/// pattern, for a product known to be symmetric: the Galerkin Pᵀ(Â P)),
/// only C's upper half is formed and the lower half copied from it.
template <typename T, int BB>
int fixed_pattern_product(const BsrMatrix<T, BB>& a, const std::uint8_t* free_dofs, const BsrMatrix<T, 1>& x,
                          BsrMatrix<T, 1>& c, const thrust::device_vector<Index>* mirror = nullptr)
{
    const bool upper = BB == 1 && mirror != nullptr && !mirror->empty();
    const int misses = thrust::transform_reduce(
        thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(a.rows()),
        FixedPatternProduct<T, BB>{a.view(), free_dofs, x.view(), raw_pointer(c.row_ptr()), raw_pointer(c.col_idx()),
                                   raw_pointer(c.values()), upper},
        0, thrust::plus<int>{});
    if (upper) {
        thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                         thrust::counting_iterator<Index>(c.rows()),
                         MirrorLower<T>{raw_pointer(c.row_ptr()), raw_pointer(c.col_idx()), raw_pointer(*mirror),
                                        raw_pointer(c.values())});
    }
    return misses;
}

/// A BlockCsr of `rows` × `cols` blocks as a host scalar matrix with `columns`
/// columns, every entry of its blocks stored (zeros too).
template <typename T>
HostMatrix<T> expand_blocks(const BlockCsr<T>& m, int rows, int cols, Index columns)
{
    const std::vector<Index> row_ptr = to_host(m.row_ptr);
    const std::vector<Index> col_idx = to_host(m.col_idx);
    const std::vector<T> values = to_host(m.values);
    std::vector<Eigen::Triplet<T, Index>> triplets;
    triplets.reserve(values.size());
    for (Index br = 0; br < m.block_rows(); ++br) {
        for (Index k = row_ptr[static_cast<std::size_t>(br)]; k < row_ptr[static_cast<std::size_t>(br) + 1]; ++k) {
            for (int e = 0; e < rows * cols; ++e) {
                triplets.emplace_back(br * rows + e / cols, col_idx[static_cast<std::size_t>(k)] * cols + e % cols,
                                      values[static_cast<std::size_t>(k) * rows * cols + static_cast<std::size_t>(e)]);
            }
        }
    }
    HostMatrix<T> result(m.block_rows() * rows, columns);
    result.setFromTriplets(triplets.begin(), triplets.end());
    return result;
}

/// One block row of C = A X in full blocks, C's block pattern fixed (the
/// structural block product of the build, block_pattern_product): A of R × K
/// blocks, X of K × N, C of R × N, all row-major. For each block A_ij the
/// row of X_j is merged into C's row i (both sorted), so the positions are
/// found by a forward scan, and each block product runs as dense R · K · N
/// multiply-adds. One thread per block row, the sums in a fixed order.
/// The block form of FixedPatternProduct for the square coarse space, whose
/// levels come in 9 × 9 blocks: one search per block, not per scalar.
///
/// `free_dofs` (where given; then R == K): the filter S of A's rows and
/// columns, C = S A S X (FixedPatternProduct's finest level, with X the
/// prolongator). `upper`: only C's blocks on or right of the diagonal (for a
/// symmetric C, whose other half CompleteBlockGalerkin copies).
/// `blocks_kept` (where given): per block of A, 0 where the block counts as
/// zero (the smoothing's square_neighbour_couplings). Returns the products
/// that fell outside C's pattern.
template <typename T, int R, int K, int N>
struct BlockFixedPatternProduct {
    const BlockArrays<T> a;
    const BlockArrays<T> x;
    const Index* const c_row_ptr;
    const Index* const c_col_idx;
    T* const c_values;
    const std::uint8_t* const free_dofs;
    const bool upper;
    const std::uint8_t* const rows_taken;  ///< nullptr, or per row: 0 leaves the row's values as they are
    const std::uint8_t* const blocks_kept = nullptr;

    WEFT_HD int operator()(Index row) const
    {
        if (rows_taken != nullptr && !rows_taken[row]) return 0;
        const Index c_end = c_row_ptr[row + 1];
        for (std::size_t v = static_cast<std::size_t>(c_row_ptr[row]) * (R * N);
             v < static_cast<std::size_t>(c_end) * (R * N); ++v) {
            c_values[v] = T(0);
        }
        int misses = 0;
        for (Index k = a.row_ptr[row]; k < a.row_ptr[row + 1]; ++k) {
            if (blocks_kept != nullptr && !blocks_kept[k]) continue;
            const Index j = a.col_idx[k];
            T block[R * K];
            bool any = false;
            for (int r = 0; r < R; ++r) {
                for (int m = 0; m < K; ++m) {
                    T value = a.values[static_cast<std::size_t>(k) * (R * K) + r * K + m];
                    if (free_dofs != nullptr && (!free_dofs[static_cast<std::size_t>(row) * R + r] ||
                                                 !free_dofs[static_cast<std::size_t>(j) * K + m])) {
                        value = T(0);
                    }
                    block[r * K + m] = value;
                    any = any || value != T(0);
                }
            }
            if (!any) continue;
            Index begin = x.row_ptr[j];
            const Index end = x.row_ptr[j + 1];
            if (upper) {
                while (begin < end && x.col_idx[begin] < row) ++begin;
            }
            Index position = c_row_ptr[row];
            for (Index e = begin; e < end; ++e) {
                const Index column = x.col_idx[e];
                while (position < c_end && c_col_idx[position] < column) ++position;
                if (position == c_end || c_col_idx[position] != column) {
                    misses += 1;
                    continue;
                }
                T* out = c_values + static_cast<std::size_t>(position) * (R * N);
                const T* in = x.values + static_cast<std::size_t>(e) * (K * N);
                // Each row of the product summed in a local copy (registers,
                // not a store and a reload per term: `out` may alias `in` as far
                // as the compiler knows), in the same order: the same bits.
                for (int r = 0; r < R; ++r) {
                    T sum[N];
                    for (int c = 0; c < N; ++c) sum[c] = out[r * N + c];
                    for (int m = 0; m < K; ++m) {
                        const T factor = block[r * K + m];
                        for (int c = 0; c < N; ++c) sum[c] += factor * in[m * N + c];
                    }
                    for (int c = 0; c < N; ++c) out[r * N + c] = sum[c];
                }
            }
        }
        return misses;
    }
};

/// The rest of a symmetric N × N block C of which BlockFixedPatternProduct
/// formed the blocks on and right of the diagonal: each block left of it the
/// transpose of its mirror (block_symmetric_mirror), each diagonal block's
/// lower triangle its upper one's transpose (so C is exactly symmetric), and
/// 1 added on the diagonal of the DoFs that `free_dofs` marks inactive
/// (AddInactiveUnit).
template <typename T, int N>
struct CompleteBlockGalerkin {
    const Index* const row_ptr;
    const Index* const col_idx;
    const Index* const mirror;
    const std::uint8_t* const free_dofs;
    T* const values;
    /// nullptr, or per row: whether the products recomputed it. A row they
    /// left keeps its diagonal block (completed before) and takes only the
    /// mirrors of blocks in recomputed rows.
    const std::uint8_t* const reached = nullptr;

    WEFT_HD void operator()(Index row) const
    {
        const bool whole = reached == nullptr || reached[row] != 0;
        for (Index e = row_ptr[row]; e < row_ptr[row + 1]; ++e) {
            T* block = values + static_cast<std::size_t>(e) * (N * N);
            if (!whole && (col_idx[e] >= row || !reached[col_idx[e]])) continue;
            if (col_idx[e] < row) {
                const T* from = values + static_cast<std::size_t>(mirror[e]) * (N * N);
                for (int r = 0; r < N; ++r) {
                    for (int c = 0; c < N; ++c) block[r * N + c] = from[c * N + r];
                }
            } else if (col_idx[e] == row) {
                for (int r = 0; r < N; ++r) {
                    for (int c = 0; c < r; ++c) block[r * N + c] = block[c * N + r];
                    if (!free_dofs[static_cast<std::size_t>(row) * N + r]) block[r * N + r] += T(1);
                }
            }
        }
    }
};

/// The position of block (row, col) in a block pattern (sorted rows), or −1.
inline Index block_position(const BlockPattern& p, Index row, Index col)
{
    const auto begin = p.col_idx.begin() + p.row_ptr[static_cast<std::size_t>(row)];
    const auto end = p.col_idx.begin() + p.row_ptr[static_cast<std::size_t>(row) + 1];
    const auto found = std::lower_bound(begin, end, col);
    return found == end || *found != col ? Index(-1) : static_cast<Index>(found - p.col_idx.begin());
}

/// For a block pattern that is symmetric (sorted rows), the position of
/// each block's transpose (blocks on and right of the diagonal map to
/// themselves); empty where the pattern is not symmetric.
inline std::vector<Index> block_symmetric_mirror(const BlockPattern& p)
{
    std::vector<Index> mirror(p.col_idx.size());
    for (Index row = 0; row < p.block_rows; ++row) {
        for (Index e = p.row_ptr[static_cast<std::size_t>(row)]; e < p.row_ptr[static_cast<std::size_t>(row) + 1];
             ++e) {
            const Index col = p.col_idx[static_cast<std::size_t>(e)];
            mirror[static_cast<std::size_t>(e)] = col >= row ? e : block_position(p, col, row);
            if (mirror[static_cast<std::size_t>(e)] < 0) return {};
        }
    }
    return mirror;
}

/// C = A X in blocks into C's fixed pattern (BlockFixedPatternProduct over
/// `rows` block rows; with `rows_taken`, only the rows it marks; with
/// `blocks_kept`, only A's blocks it marks); the number of products that
/// fell outside it.
template <typename T, int R, int K, int N>
int block_fixed_pattern_product(Index rows, const BlockArrays<T>& a, const std::uint8_t* free_dofs,
                                const BlockArrays<T>& x, const Index* c_row_ptr, const Index* c_col_idx, T* c_values,
                                bool upper, const std::uint8_t* rows_taken = nullptr,
                                const std::uint8_t* blocks_kept = nullptr)
{
    return thrust::transform_reduce(thrust::device, thrust::counting_iterator<Index>(0),
                                    thrust::counting_iterator<Index>(rows),
                                    BlockFixedPatternProduct<T, R, K, N>{a, x, c_row_ptr, c_col_idx, c_values,
                                                                         free_dofs, upper, rows_taken, blocks_kept},
                                    0, thrust::plus<int>{});
}

/// What a renewal of the modes keeps of one coarse level's build
/// (MultilevelOptions::renew_modes): the smoothing's ω, the tentative
/// prolongator in K × N blocks (K the level above's block size; one block
/// per row of the level above, in its aggregate's column; the first level's
/// values renewed each time, the others' the build's), for each block of
/// the restriction the prolongator's block it transposes, which blocks of
/// the level above's matrix smooth the prolongator (square_neighbour_couplings;
/// empty: all), and for the coarsest level, whose prolongator and
/// restriction the V-cycle reads as scalars, their blocks and each scalar
/// entry's place in them.
template <typename T>
struct LevelRenewal {
    T omega = T(0);
    BlockCsr<T> tentative;
    BlockPattern tentative_pattern;  ///< the tentative's pattern on the host (levels below the first)
    thrust::device_vector<Index> transpose;
    thrust::device_vector<std::uint8_t> kept_blocks;
    BlockCsr<T> block_prolongator, block_restriction;  ///< the coarsest level's only
    thrust::device_vector<Index> prolongator_positions, restriction_positions;
};

/// What a renewal of the modes keeps of a square hierarchy's build: the
/// first level's aggregates, and each coarse level's LevelRenewal.
template <typename T>
struct ModeRenewal {
    Index aggregates = 0;
    std::vector<LevelRenewal<T>> levels;
    bool empty() const { return aggregates == 0; }
};

/// Each scalar entry's place in the values of the same matrix in `rows` ×
/// `cols` blocks on `pattern`; empty where an entry's block is not in it.
template <typename T>
std::vector<Index> scalar_positions_in_blocks(const HostMatrix<T>& m, const BlockPattern& pattern, int rows, int cols)
{
    std::vector<Index> positions;
    positions.reserve(static_cast<std::size_t>(m.nonZeros()));
    for (Index r = 0; r < m.rows(); ++r) {
        for (typename HostMatrix<T>::InnerIterator it(m, r); it; ++it) {
            const Index e = block_position(pattern, r / rows, static_cast<Index>(it.col()) / cols);
            if (e < 0) return {};
            positions.push_back(e * (rows * cols) + (r % rows) * cols + static_cast<Index>(it.col()) % cols);
        }
    }
    return positions;
}

/// Block row `row` of the renewed prolongator P = T − ω D⁻¹ Â T on P's
/// kept pattern of B × N blocks (B the level above's block size), from
/// C = S A S T on the same pattern: D the row's diagonal block of
/// Â = S A S + (I − S) (the identity on its constrained DoFs, where T is
/// zero; free_dofs nullptr: every DoF free). Returns 1 where D is not
/// positive definite or T's block has no place in the pattern (the caller
/// rebuilds).
template <typename T, int B, int N>
struct RenewProlongatorRow {
    const BlockArrays<T> a;
    const std::uint8_t* const free_dofs;
    const BlockArrays<T> tentative;  ///< at most one B × N block per row
    const Index* const p_row_ptr;
    const Index* const p_col_idx;
    const T* const product;  ///< C, on P's pattern
    const T omega;
    T* const p_values;

    WEFT_HD int operator()(Index row) const
    {
        const Index k = bsr_find_block(a.row_ptr, a.col_idx, row, row);
        const std::uint8_t* is_free = free_dofs != nullptr ? free_dofs + static_cast<std::size_t>(row) * B : nullptr;
        T l[B][B];
        for (int r = 0; r < B; ++r) {
            for (int c = 0; c <= r; ++c) {
                const T stored = k >= 0 ? a.values[static_cast<std::size_t>(k) * (B * B) + r * B + c] : T(0);
                l[r][c] = is_free == nullptr || (is_free[r] && is_free[c]) ? stored : (r == c ? T(1) : T(0));
            }
        }
        T inverse[B * B];
        if (!line_detail::invert_spd_lower<T, B>(l, inverse)) return 1;
        const Index t_at = tentative.row_ptr[row];
        const bool has_t = tentative.row_ptr[row + 1] > t_at;
        const Index t_col = has_t ? tentative.col_idx[t_at] : Index(-1);
        const T* t_block = tentative.values + static_cast<std::size_t>(t_at) * (B * N);
        bool placed = !has_t;
        for (Index e = p_row_ptr[row]; e < p_row_ptr[row + 1]; ++e) {
            const bool own = p_col_idx[e] == t_col;
            placed = placed || own;
            const T* c_block = product + static_cast<std::size_t>(e) * (B * N);
            T* out = p_values + static_cast<std::size_t>(e) * (B * N);
            for (int r = 0; r < B; ++r) {
                for (int c = 0; c < N; ++c) {
                    T sum = T(0);
                    for (int m = 0; m < B; ++m) sum += inverse[r * B + m] * c_block[m * N + c];
                    out[r * N + c] = (own ? t_block[r * N + c] : T(0)) - omega * sum;
                }
            }
        }
        if (placed) return 0;
        for (int v = 0; v < B * N; ++v) {
            if (t_block[v] != T(0)) return 1;
        }
        return 0;
    }
};

/// Block e of an N × R block matrix as the transpose of the R × N block
/// `from[e]` of another (the restriction from the prolongator).
template <typename T, int R, int N>
struct TransposeBlock {
    const Index* const from;
    const T* const source;
    T* const target;

    WEFT_HD void operator()(Index e) const
    {
        const T* in = source + static_cast<std::size_t>(from[e]) * (R * N);
        T* out = target + static_cast<std::size_t>(e) * (R * N);
        for (int i = 0; i < N; ++i) {
            for (int j = 0; j < R; ++j) out[i * R + j] = in[j * N + i];
        }
    }
};

/// For each block (i, j) of `transposed`, the position of block (j, i) in
/// `pattern`; empty where one is missing.
inline std::vector<Index> transposed_block_positions(const BlockPattern& pattern, const BlockPattern& transposed)
{
    std::vector<Index> from(transposed.col_idx.size());
    for (Index row = 0; row < transposed.block_rows; ++row) {
        for (Index e = transposed.row_ptr[static_cast<std::size_t>(row)];
             e < transposed.row_ptr[static_cast<std::size_t>(row) + 1]; ++e) {
            from[static_cast<std::size_t>(e)] =
                block_position(pattern, transposed.col_idx[static_cast<std::size_t>(e)], row);
            if (from[static_cast<std::size_t>(e)] < 0) return {};
        }
    }
    return from;
}

/// |A_rr| of each DoF of a K × K block matrix whose rows all hold their
/// diagonal block (the scale of a refresh by rows).
template <typename T, int K>
struct DiagonalScale {
    const BlockArrays<T> a;
    T* const scale;  ///< #rows · K

    WEFT_HD void operator()(Index row) const
    {
        for (Index k = a.row_ptr[row]; k < a.row_ptr[row + 1]; ++k) {
            if (a.col_idx[k] != row) continue;
            for (int r = 0; r < K; ++r) {
                const T d = a.values[static_cast<std::size_t>(k) * (K * K) + r * (K + 1)];
                scale[static_cast<std::size_t>(row) * K + r] = d < T(0) ? -d : d;
            }
        }
    }
};

/// A refresh by rows (MultilevelOptions::refresh_tolerance): marks the row
/// when one of its entries has moved by more than τ sqrt(|A_rr| |A_cc|)
/// from its copy in `taken` (τ = 0: when one moved at all), and then copies
/// the row's values into `taken`. `taken` may be a float copy (TT = float,
/// for the finest line factors by rows), where only τ > 0 is meaningful.
template <typename T, int K, typename TT = T>
struct TakeMovedRow {
    const BlockArrays<T> a;
    TT* const taken;       ///< the values as the rows were last taken
    const T* const scale;  ///< DiagonalScale
    const T tolerance;
    std::uint8_t* const moved;  ///< #rows

    WEFT_HD void operator()(Index row) const
    {
        const std::size_t begin = static_cast<std::size_t>(a.row_ptr[row]) * (K * K);
        const std::size_t end = static_cast<std::size_t>(a.row_ptr[row + 1]) * (K * K);
        bool move = false;
        for (Index k = a.row_ptr[row]; k < a.row_ptr[row + 1] && !move; ++k) {
            const T* column_scale = scale + static_cast<std::size_t>(a.col_idx[k]) * K;
            const std::size_t at = static_cast<std::size_t>(k) * (K * K);
            for (int r = 0; r < K; ++r) {
                const T row_scale = tolerance * tolerance * scale[static_cast<std::size_t>(row) * K + r];
                for (int c = 0; c < K; ++c) {
                    const T d = a.values[at + r * K + c] - static_cast<T>(taken[at + r * K + c]);
                    move = move || (d != T(0) && !(d * d < row_scale * column_scale[c]));  // NaN moves
                }
            }
        }
        moved[row] = move ? 1 : 0;
        if (move) {
            for (std::size_t v = begin; v < end; ++v) taken[v] = static_cast<TT>(a.values[v]);
        }
    }
};

/// 1 for a line with a marked node (the lines factor_lines factors again
/// with those marks).
struct LineMarked {
    const Index* const line_ptr;
    const Index* const line_nodes;
    const std::uint8_t* const marked;  ///< #nodes

    WEFT_HD int operator()(Index line) const
    {
        for (Index e = line_ptr[line]; e < line_ptr[line + 1]; ++e)
            if (marked[line_nodes[e]] != 0) return 1;
        return 0;
    }
};

/// Row I of Pᵀ Â P is recomputed where a row of Â P it sums is: where the
/// restriction's row I has a block in a moved row. Returns the mark.
struct RowsReached {
    const Index* const row_ptr;  ///< the restriction's
    const Index* const col_idx;
    const std::uint8_t* const moved;  ///< the rows of Â (and Â P) taken again
    std::uint8_t* const reached;

    WEFT_HD int operator()(Index row) const
    {
        bool any = false;
        for (Index k = row_ptr[row]; k < row_ptr[row + 1] && !any; ++k) any = moved[col_idx[k]] != 0;
        reached[row] = any ? 1 : 0;
        return any ? 1 : 0;
    }
};

/// The rows of a symmetric block matrix whose values a refresh by rows
/// changes: the rows it recomputed on and right of the diagonal
/// (`reached`), and the rows holding a mirror of one of their blocks (a
/// block left of the diagonal in a reached column).
struct RowsChanged {
    const Index* const row_ptr;
    const Index* const col_idx;
    const std::uint8_t* const reached;
    std::uint8_t* const changed;

    WEFT_HD void operator()(Index row) const
    {
        bool any = reached[row] != 0;
        for (Index k = row_ptr[row]; k < row_ptr[row + 1] && !any && col_idx[k] < row; ++k)
            any = reached[col_idx[k]] != 0;
        changed[row] = any ? 1 : 0;
    }
};

/// The active DoFs of a coarse matrix by its diagonal as the Galerkin
/// products left it (before the identity on inactive DoFs): above 1e-12 of
/// the largest (a coarse DoF whose prolongator column is zero, a near-null
/// mode dependent on the others in its aggregate, is inactive).
template <typename T>
std::vector<std::uint8_t> active_dofs(const std::vector<T>& diagonal)
{
    T largest = T(0);
    for (const T d : diagonal) largest = std::max(largest, std::abs(d));
    std::vector<std::uint8_t> active(diagonal.size(), 0);
    for (std::size_t r = 0; r < diagonal.size(); ++r) active[r] = diagonal[r] > T(1e-12) * largest ? 1 : 0;
    return active;
}

/// The diagonal of a K × K block matrix whose rows all hold their diagonal block, on the host.
template <typename T, int K>
std::vector<T> diagonal_of_blocks(const BsrMatrix<T, K>& m)
{
    const std::vector<Index> row_ptr = to_host(m.row_ptr()), col_idx = to_host(m.col_idx());
    std::vector<Index> at(static_cast<std::size_t>(m.block_rows()) * K);
    for (Index br = 0; br < m.block_rows(); ++br) {
        const auto begin = col_idx.begin() + row_ptr[static_cast<std::size_t>(br)];
        const auto end = col_idx.begin() + row_ptr[static_cast<std::size_t>(br) + 1];
        const Index e = static_cast<Index>(std::lower_bound(begin, end, br) - col_idx.begin());
        for (int i = 0; i < K; ++i) at[static_cast<std::size_t>(br * K + i)] = e * (K * K) + i * (K + 1);
    }
    const thrust::device_vector<Index> positions = to_device(at);
    thrust::device_vector<T> values(positions.size());
    thrust::gather(thrust::device, positions.begin(), positions.end(), m.values().begin(), values.begin());
    return to_host(values);
}

/// C_rr += 1 on the rows that `free_dofs` marks inactive (the identity that
/// the build adds for coarse DoFs left inactive by a dependent near-null column).
template <typename T>
struct AddInactiveUnit {
    const std::uint8_t* const free_dofs;
    const Index* const row_ptr;
    const Index* const col_idx;
    T* const values;

    WEFT_HD void operator()(Index row) const
    {
        if (free_dofs[row]) return;
        const Index position = bsr_find_block(row_ptr, col_idx, row, row);
        if (position >= 0) values[position] += T(1);
    }
};

/// Σ_c |(D⁻¹ Â)_rc| for the free scalar rows r of one block row, the largest
/// of them: the row's share of ‖D⁻¹Â‖_∞, an upper bound of λ_max(D⁻¹Â).
template <typename T, int BB>
struct JacobiRowBound {
    const BsrConstView<T, BB> a;
    const std::uint8_t* const free_dofs;
    const T* const inverse;

    WEFT_HD T operator()(Index row) const
    {
        const std::size_t offset = static_cast<std::size_t>(row) * BB;
        const T* d = inverse + static_cast<std::size_t>(row) * (BB * BB);
        T sums[BB];
        for (int r = 0; r < BB; ++r) sums[r] = T(0);
        for (Index k = a.row_ptr[row]; k < a.row_ptr[row + 1]; ++k) {
            const T* block = a.values + static_cast<std::size_t>(k) * (BB * BB);
            const std::uint8_t* column_free = free_dofs + static_cast<std::size_t>(a.col_idx[k]) * BB;
            for (int r = 0; r < BB; ++r) {
                for (int c = 0; c < BB; ++c) {
                    if (!column_free[c]) continue;
                    T entry = T(0);
                    for (int m = 0; m < BB; ++m)
                        entry += free_dofs[offset + m] ? d[r * BB + m] * block[m * BB + c] : T(0);
                    sums[r] += entry < T(0) ? -entry : entry;
                }
            }
        }
        T largest = T(0);
        for (int r = 0; r < BB; ++r) {
            if (free_dofs[offset + r] && sums[r] > largest) largest = sums[r];
        }
        return largest;
    }
};

/// x ← c x.
template <typename T>
struct Scale {
    const T factor;
    WEFT_HD T operator()(const T& x) const { return factor * x; }
};

template <typename T>
struct Maximum {
    WEFT_HD T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};

/// The smoother of one level: the filtered matrix, its block-Jacobi inverse
/// and the Chebyshev interval; scratch vectors for the cycle.
template <typename T, int BB>
struct Smoother {
    thrust::device_vector<T> inverse;  ///< #block rows · BB·BB
    T lambda_max = T(1);
    thrust::device_vector<T> r, z, z_next, d, residual;

    void resize(std::size_t dofs)
    {
        r.resize(dofs);
        z.resize(dofs);
        z_next.resize(dofs);
        d.resize(dofs);
        residual.resize(dofs);
    }

    /// Block inverses of the filtered diagonal; the number of blocks that were
    /// not positive definite.
    int invert(const BsrMatrix<T, BB>& a, const thrust::device_vector<std::uint8_t>& free_dofs)
    {
        inverse.resize(static_cast<std::size_t>(a.block_rows()) * (BB * BB));
        return thrust::transform_reduce(
            thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(a.block_rows()),
            pcg_detail::InvertFilteredDiagonal<T, BB>{a.view(), raw_pointer(free_dofs), raw_pointer(inverse)}, 0,
            thrust::plus<int>{});
    }

    /// λ_max(D⁻¹ Â) bounded from above by ‖D⁻¹Â‖_∞ (after invert()). A bound,
    /// not an estimate: with the Chebyshev interval ending there, the
    /// smoother converges in the energy norm and the V-cycle stays positive
    /// definite (a power-iteration estimate, 15 iterations with a 1.1 margin,
    /// fell short on the sphere drop's contact rows and made PCG report an
    /// indefinite preconditioner).
    void bound(const BsrMatrix<T, BB>& a, const thrust::device_vector<std::uint8_t>& free_dofs)
    {
        resize(static_cast<std::size_t>(a.rows()));
        const T largest = thrust::transform_reduce(
            thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(a.block_rows()),
            JacobiRowBound<T, BB>{a.view(), raw_pointer(free_dofs), raw_pointer(inverse)}, T(0), Maximum<T>{});
        lambda_max = largest > T(0) && largest <= std::numeric_limits<T>::max() ? largest : T(1);
    }

    /// out ← out + p(D⁻¹Â) D⁻¹ S (rhs − Â out): `degree` Chebyshev steps
    /// (out is taken as zero when `zero_start`). The result lies in `out`.
    /// `a` views Â's values as TA (T, or a float copy).
    template <typename TA>
    void smooth(const BsrConstView<TA, BB>& a, const thrust::device_vector<std::uint8_t>& free_dofs,
                const thrust::device_vector<T>& rhs, thrust::device_vector<T>& out, bool zero_start, int degree,
                T ratio)
    {
        const T upper = lambda_max;
        const T lower = lambda_max / ratio;
        const T theta = (upper + lower) / T(2);
        const T delta = (upper - lower) / T(2);
        const T sigma = theta / delta;
        T rho = T(1) / sigma;
        const auto rows_first = thrust::counting_iterator<Index>(0);
        const auto rows_last = thrust::counting_iterator<Index>(a.block_rows);
        thrust::for_each(thrust::device, rows_first, rows_last,
                         ChebyshevStep<T, BB, TA>{a, raw_pointer(free_dofs), raw_pointer(inverse), raw_pointer(rhs),
                                                  raw_pointer(out), raw_pointer(d), raw_pointer(z_next), T(0),
                                                  T(1) / theta, zero_start});
        out.swap(z_next);
        for (int k = 1; k < degree; ++k) {
            const T rho_next = T(1) / (T(2) * sigma - rho);
            thrust::for_each(thrust::device, rows_first, rows_last,
                             ChebyshevStep<T, BB, TA>{a, raw_pointer(free_dofs), raw_pointer(inverse), raw_pointer(rhs),
                                                      raw_pointer(out), raw_pointer(d), raw_pointer(z_next),
                                                      rho_next * rho, T(2) * rho_next / delta, false});
            out.swap(z_next);
            rho = rho_next;
        }
    }
};

/// A coarse level: its matrix (scalar CSR), filter, smoother, and the
/// prolongator from it to the level above with its transpose.
template <typename T>
struct CoarseLevel {
    /// The level's matrix as scalars. A square level (`by_lines`) reads its
    /// blocked copy instead and keeps this one only where the level below is
    /// the coarsest, whose refresh multiplies it by the scalar prolongator;
    /// the others drop it once a level two below them exists.
    BsrMatrix<T, 1> matrix;
    Index dofs = 0;  ///< the level's DoFs (rows)
    /// The matrix's entries at the build (operator complexity): a scalar level's stored
    /// entries; a square level built in blocks, the entries of its blocks that are not zero.
    double scalar_entries = 0.0;
    thrust::device_vector<std::uint8_t> free_dofs;  ///< DoFs with a positive diagonal
    BsrMatrix<T, 1> prolongator;                    ///< rows: DoFs of the level above
    BsrMatrix<T, 1> restriction;                    ///< the prolongator's transpose
    BsrMatrix<T, 1> product;                        ///< Â P of the level above: its pattern, scratch of refresh()
    thrust::device_vector<Index> mirror;            ///< symmetric_mirror(matrix) for refresh() (empty: none)
    Smoother<T, 1> smoother;
    /// Square coarse space: the level is smoothed by lines of its square
    /// aggregates (rows, then columns), from `blocked`, the matrix in blocks
    /// of square_modes (block_position: each scalar entry's place in it).
    bool by_lines = false;
    LineSet square_lines;  ///< the rows and columns of squares (square_lines())
    LineSet lines;         ///< square_lines coloured for blocked's pattern (colored_line_set)
    BsrMatrix<T, square_modes> blocked;
    thrust::device_vector<Index> block_position;
    LineFactors<T, square_modes> factors;
    /// The refresh of a lines-smoothed level in blocks (where refreshes are
    /// on; then `product` and `mirror` stay empty): the prolongator in blocks
    /// of (the level above's block size) × square_modes, its transpose, the
    /// product Â P of the level above in the same blocks, and
    /// block_symmetric_mirror of `blocked`, whose pattern is the structural
    /// block product Pᵀ Â P.
    BlockCsr<T> block_prolongator, block_restriction, block_product;
    thrust::device_vector<Index> block_mirror;
    /// A refresh by rows (MultilevelOptions::refresh_tolerance >= 0): the
    /// values of Â (the level above's) as each row was last taken, their
    /// diagonal's scale (not the first coarse level's: the finest level's
    /// is fine_scale()), the rows of Â taken by the last refresh, and this
    /// level's rows it recomputed (`reached`) or changed by a mirror too.
    thrust::device_vector<T> taken, scale;
    thrust::device_vector<std::uint8_t> moved, reached, changed;
    /// W-cycle scratch: the level's right-hand side and its first cycle's result.
    thrust::device_vector<T> cycle_rhs, cycle_sum;
};

/// The host copy of a device CSR matrix.
template <typename T>
HostMatrix<T> to_host_csr(const BsrMatrix<T, 1>& m)
{
    const HostView<Index> row_ptr(m.row_ptr());
    const HostView<Index> col_idx(m.col_idx());
    const HostView<T> values(m.values());
    HostMatrix<T> result(m.rows(), m.cols());
    Eigen::Matrix<Index, Eigen::Dynamic, 1> per_row(m.rows());
    for (Index r = 0; r < m.rows(); ++r) per_row[r] = row_ptr[r + 1] - row_ptr[r];
    result.reserve(per_row);
    for (Index r = 0; r < m.rows(); ++r) {
        for (Index k = row_ptr[r]; k < row_ptr[r + 1]; ++k) result.insert(r, col_idx[k]) = values[k];
    }
    result.makeCompressed();
    return result;
}

/// The device copy of a host CSR matrix (rectangular allowed).
template <typename T>
BsrMatrix<T, 1> to_device_csr(const HostMatrix<T>& m)
{
    if (!m.isCompressed()) {
        HostMatrix<T> compressed = m;
        compressed.makeCompressed();
        return to_device_csr(compressed);
    }
    // A compressed Eigen matrix's rows are sorted and in range: its arrays
    // are copied as they are, values included (no zero fill first).
    BsrMatrix<T, 1> copy;
    copy.assign_trusted(static_cast<Index>(m.rows()), static_cast<Index>(m.cols()), m.outerIndexPtr(),
                        m.innerIndexPtr(), m.valuePtr());
    return copy;
}

}  // namespace multilevel_detail

/// Smoothed-aggregation AMG preconditioner for the filtered PCG (see the file
/// comment). Block size B of the finest level: 3 (triangles) or 5 (yarns).
template <typename T, int B>
class MultilevelPreconditioner final : public PreconditionerOperator<T> {
    static_assert(B >= 3, "the rigid-body near-null space needs three position DoFs per node");

public:
    /// Coarse DoFs per aggregate: six rigid-body modes plus one per extra DoF.
    static constexpr int near_null_size = 6 + (B - 3);

    MultilevelPreconditioner() = default;
    explicit MultilevelPreconditioner(const MultilevelOptions& options) : m_options(options) {}

    const MultilevelOptions& options() const { return m_options; }

    /// The yarns as node chains, for MultilevelSmoother::yarn_lines (not
    /// owned; must outlive the solves and match the matrix's node count).
    /// nullptr: Chebyshev on the finest level whatever the options say.
    void set_lines(const LineSet* lines) { m_lines = lines; }
    /// Whether the coarse levels follow the yarns (MultilevelCoarseSpace::yarns
    /// with lines given and 5-DoF nodes). prepare() refuses `yarns` where
    /// this is false (3-DoF nodes, or no lines) rather than fall back.
    bool yarn_coarse_space() const
    {
        return B == 5 && m_options.coarse_space == MultilevelCoarseSpace::yarns && m_lines != nullptr;
    }
    /// Whether the coarse levels are squares of crossings smoothed by lines
    /// (MultilevelCoarseSpace::squares with lines given and 5-DoF nodes).
    bool square_coarse_space() const
    {
        return B == 5 && m_options.coarse_space == MultilevelCoarseSpace::squares && m_lines != nullptr;
    }
    /// Whether the finest level smooths by yarn lines.
    bool line_smoothing() const { return m_options.smoother == MultilevelSmoother::yarn_lines && m_lines != nullptr; }
    /// New options: the next prepare() rebuilds, and apply() refuses to run
    /// before it (the finest level's copies follow the options, e.g. the
    /// float values of single_precision_matrix).
    void set_options(const MultilevelOptions& options)
    {
        m_options = options;
        m_built = false;
        m_ready = false;
    }

    /// Make the preconditioner ready for `a` with filter `free_dofs`: build the
    /// hierarchy where needed (see the file comment), refresh the finest
    /// level's block inverses. `state` holds B values per node, positions first
    /// (the rigid-body modes rotate about them). The matrix and filter are
    /// referenced until the next prepare() and must stay alive and unchanged;
    /// so must the state while a solve with this prepare() runs
    /// (retake_exact() reads it).
    /// @return false when the hierarchy cannot be built (a diagonal block or the
    ///         coarsest matrix is not positive definite): the matrix is not SPD
    /// @throws InvalidInput on size mismatches
    bool prepare(const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs,
                 const thrust::device_vector<T>& state)
    {
        if (a.block_rows() != a.block_cols()) {
            throw InvalidInput(
                detail::describe("MultilevelPreconditioner block columns", a.block_cols(), "must equal block rows"));
        }
        const std::size_t dofs = static_cast<std::size_t>(a.rows());
        if (free_dofs.size() != dofs || state.size() != dofs) {
            throw InvalidInput(detail::describe("MultilevelPreconditioner free_dofs/state size",
                                                free_dofs.size() != dofs ? free_dofs.size() : state.size(),
                                                ("must equal the matrix size " + std::to_string(dofs)).c_str()));
        }
        validate_options();
        if ((m_options.coarse_space == MultilevelCoarseSpace::yarns && !yarn_coarse_space()) ||
            (m_options.coarse_space == MultilevelCoarseSpace::squares && !square_coarse_space())) {
            throw InvalidInput(detail::describe(
                "MultilevelOptions coarse_space",
                solver_words::multilevel_coarse_space()[static_cast<std::size_t>(m_options.coarse_space)],
                B == 5 ? "needs the yarns' LineSet (set_lines() before prepare())"
                       : ("needs 5-DoF yarn nodes; this matrix has " + std::to_string(B) + " DoFs per node").c_str()));
        }
        m_matrix = &a;
        m_free = &free_dofs;
        m_state = &state;
        m_exact_components = false;
        const bool same_structure =
            m_built && m_pattern_free.size() == dofs && has_pattern(a, m_pattern_rows, m_pattern_cols);
        const bool same_filter =
            same_structure && thrust::equal(thrust::device, free_dofs.begin(), free_dofs.end(), m_pattern_free.begin());
        const bool same_pattern = same_structure && same_filter;
        // A new pattern or filter of the same size, where kept across
        // patterns: the coarse levels stay as they are, the finest level's
        // smoother is renewed (its lines coloured again for a new structure).
        if (m_options.keep_across_patterns && m_options.reuse && m_built && !same_pattern &&
            m_pattern_free.size() == dofs && !m_rebuild_requested && !m_refresh_requested) {
            if (!same_structure) {
                m_pattern_rows = a.row_ptr();
                m_pattern_cols = a.col_idx();
                m_colored = false;
            }
            thrust::copy(thrust::device, free_dofs.begin(), free_dofs.end(), m_pattern_free.begin());
            m_kept_pattern = true;
            m_pattern_keeps += 1;
            if (!prepare_fine(a, free_dofs)) return false;
            m_ready = true;
            return true;
        }
        // A new filter on the same pattern (EIL tags, pins): the kept hierarchy
        // with the coarse values of the new filter, where refreshes are on.
        const bool new_filter = same_structure && !same_filter && m_options.refresh != MultilevelRefresh::off;
        const bool reuse = (same_pattern || new_filter) && m_options.reuse;
        // Refreshing ahead (see refreshes_ahead()): every prepare but a probe's.
        const bool ahead = refreshing_ahead() && !m_probe_next;
        m_probe_next = false;
        // A solve's Ritz value above exact_ritz_bound: every row taken again.
        const bool exact = m_exact_requested;
        m_exact_requested = false;
        const bool refresh = reuse && !m_rebuild_requested && !m_kept_pattern &&
                             (new_filter || m_refresh_requested || ahead || exact ||
                              m_options.refresh == MultilevelRefresh::every_prepare);
        const bool asked = new_filter || m_refresh_requested;
        if (m_renew_requested && reuse && !m_rebuild_requested && !m_kept_pattern) {
            // The age asked for new modes: renewed, then every coarse row refreshed.
            m_renew_requested = false;
            const auto start = std::chrono::steady_clock::now();
            m_factor_every_line = exact;
            const bool renewed = renew_tentatives(free_dofs, state) && refresh_values(a, free_dofs, true, true);
            m_factor_every_line = false;
            m_last_renewal_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            m_renewal_seconds += m_last_renewal_seconds;
            if (renewed) {
                if (new_filter) {
                    thrust::copy(thrust::device, free_dofs.begin(), free_dofs.end(), m_pattern_free.begin());
                    m_filter_refreshes += 1;
                }
                m_mode_renewals += 1;
                m_aged_seconds = 0.0;
                m_judging_aged_build = m_aged_before >= 0.0;
                m_judging_renewal = m_judging_aged_build;
                m_recent_fresh_count = 0;
                m_exact_components = !m_fine_kept;
                if (exact) m_exact_retakes += 1;
                m_ready = true;
                return true;
            }
            // Not renewable now (a product outside the kept patterns, a level
            // not positive definite): the aged build instead.
            m_growth_builds += 1;
            m_aged_builds += 1;
            m_rebuild_requested = true;
            m_aged_requested = true;
        }
        m_renew_requested = false;
        m_factor_every_line = exact;
        const bool refreshed = refresh && !m_rebuild_requested && refresh_values(a, free_dofs, new_filter || exact);
        m_factor_every_line = false;
        if (refreshed) {
            if (new_filter) {
                thrust::copy(thrust::device, free_dofs.begin(), free_dofs.end(), m_pattern_free.begin());
                m_filter_refreshes += 1;
            }
            if (ahead && !asked && !exact) m_ahead_refreshes += 1;
            // Exact where no square level kept rows (refresh_values recomputed
            // every row: a new filter, a retake, or no refresh by rows at all).
            m_exact_components = (new_filter || exact || !refreshes_by_rows()) && !m_fine_kept;
            if (exact) m_exact_retakes += 1;
            m_ready = true;
            return true;
        }
        if (!reuse || m_rebuild_requested || refresh) {  // refresh: the refresh failed, rebuild
            if (!same_pattern) {
                m_pattern_builds += 1;
            } else if (refresh) {
                m_failure_builds += 1;
            }
            const auto start = std::chrono::steady_clock::now();
            const bool built = build(a, free_dofs, state);
            m_last_build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            m_build_seconds += m_last_build_seconds;
            if (!built) return false;
            m_exact_components = !m_fine_kept;
        } else if (!prepare_fine(a, free_dofs)) {
            return false;
        }
        m_ready = true;
        return true;
    }

    /// Tell the preconditioner how a solve with it went: a failed solve makes
    /// the next prepare() rebuild; so does one that took more than
    /// rebuild_growth times the iterations of the first solve after the last
    /// build, once (where `seconds`, the solve's wall time, is given) the extra
    /// iterations since that build have cost as much as the build itself.
    /// `seconds` < 0 (not known) or MultilevelOptions::timed_rebuild false:
    /// iteration growth alone decides.
    void record_solve(bool converged, int iterations, double seconds = -1.0)
    {
        const double ritz_max = m_last_ritz_max;
        m_last_ritz_max = 0.0;
        if (m_first_iterations < 0) m_first_iterations = iterations;
        const double limit = std::max(m_options.rebuild_growth * m_first_iterations, m_first_iterations + 5.0);
        if (m_checking_refresh) {
            // The first solve after a growth refresh: did the refresh bring the
            // iterations back within the limit? If not, the next slow solve rebuilds.
            // Fewer iterations than the solve that asked for it count as help
            // too: the cloth may have stiffened past the build's limit, where
            // a build would start from the same values.
            m_checking_refresh = false;
            m_refresh_helps = converged && (iterations <= limit || iterations < m_iterations_before_refresh);
            if (!m_refresh_helps) m_ahead = false;
        }
        if (m_rebuild_requested) return;
        if (!converged) {
            m_failure_builds += 1;
            m_rebuild_requested = true;
            m_refresh_requested = false;
            m_renew_requested = false;
            return;
        }
        // A Ritz value above the bound where the cycle had rows or line
        // factors of older matrices: the next prepare takes every row, and
        // this solve's iterations are not charged to the hierarchy's drift
        // or age, which that retake does not judge ("Exact retakes" in the
        // file comment).
        if (holds_older_components() && ritz_max > m_options.exact_ritz_bound) {
            m_exact_requested = true;
            return;
        }
        if (m_refresh_requested || m_renew_requested) return;
        const bool timed = m_options.timed_rebuild && seconds >= 0.0 && iterations > 0;
        const bool refreshes_help = refreshes_known_to_help();
        if (timed) {
            const double per_iteration = seconds / iterations;
            // A refresh by rows cheaper than one iteration (few rows moved)
            // is bought at every prepare: it costs less than the least drift
            // a stale solve can show.
            m_cheap_refresh = refreshes_help && refreshes_by_rows() && m_last_refresh_seconds >= 0.0 &&
                              m_last_refresh_seconds < per_iteration;
            m_stale_seconds += std::max(0, iterations - m_first_iterations) * per_iteration;
            if (m_fresh_iterations < 0) {
                m_fresh_iterations = iterations;
                // Refreshed ahead, the coarse values are fresh: what this solve
                // takes above the first after the build is the hierarchy's age
                // (aggregates and near-null modes made for the build's
                // matrix and geometry), paid at every solve.
                if (refreshing_ahead()) {
                    m_aged_seconds += std::max(0, iterations - m_first_iterations) * per_iteration;
                    record_fresh(iterations);
                }
                // Refreshing ahead: after this many fresh solves, the next
                // prepare keeps the values, so that one stale solve measures
                // the drift again.
                if (refreshing_ahead() && !m_cheap_refresh && ++m_ahead_solves >= m_probe_interval) {
                    m_ahead_solves = 0;
                    m_probe_next = true;
                }
            } else {
                const double extra = std::max(0, iterations - m_fresh_iterations) * per_iteration;
                m_fresh_stale_seconds += extra;
                if (m_solves_since_renewal == 1 && refreshes_help && m_last_refresh_seconds >= 0.0) {
                    // The first stale solve after a renewal measures one
                    // prepare's drift: where it costs as much as a refresh,
                    // refreshing before every solve costs less than the
                    // stale solves the rent-or-buy rule would pay for.
                    // The next probe comes after as many refreshes as this
                    // stale solve cost (at least the doubled interval where it
                    // confirms the last one): then the probes cost no more
                    // than the refreshes between them. A refresh timed at
                    // zero seconds costs nothing to repeat: the longest interval.
                    const bool confirmed = m_ahead && extra >= m_last_refresh_seconds;
                    m_ahead = extra >= m_last_refresh_seconds;
                    const double refreshes_paid =
                        m_last_refresh_seconds > 0.0 ? extra / m_last_refresh_seconds : double(max_probe_interval);
                    const int by_cost = refreshes_paid >= max_probe_interval
                                            ? max_probe_interval
                                            : static_cast<int>(std::ceil(refreshes_paid));
                    m_probe_interval = std::min(
                        std::max(confirmed ? 2 * m_probe_interval : min_probe_interval, by_cost), max_probe_interval);
                    m_ahead_solves = 0;
                }
            }
            m_solves_since_renewal += 1;
        }
        // The cheaper renewal where it is known to help, at its own price: a
        // refresh (its last time, or a build's before the first one), else a build.
        // A hierarchy kept across a pattern change (keep_across_patterns) has
        // the coarse patterns of the old one, which a refresh cannot fill.
        // Refreshing ahead, a slow solve is one with fresh values: only a
        // build can help it, as with MultilevelRefresh::every_prepare.
        const bool by_refresh = refreshes_help && !refreshing_ahead();
        const double price =
            by_refresh && m_last_refresh_seconds >= 0.0 ? m_last_refresh_seconds : m_last_build_seconds;
        // Timed, a refresh is also bought once the iterations above the first
        // solve's since the last renewal (build or refresh) have cost as much
        // as a refresh: the coarse values drift as the matrix does (contacts
        // stiffening the cloth), which a build's reference alone misses.
        const bool drifted = by_refresh && timed && m_fresh_stale_seconds >= price;
        // A refresh whose price is not known yet (none so far) is bought at the
        // first slow solve: it costs a fraction of a build, and then its price is known.
        const bool first_refresh = by_refresh && m_last_refresh_seconds < 0.0;
        // A refresh by rows costs about what moved: the first one is bought
        // at the first timed solve, so that the next prepare, one solve's
        // motion after the last, prices it before the cloth moves much.
        // Priced cheaper than an iteration, it is then made before every
        // solve (m_cheap_refresh), and the first solve of a new contact is a
        // fresh one: on the 400² sphere drop that solve took 17 iterations
        // with the values of the free fall and 6 refreshed (benchmarks/RESULTS.md,
        // "The first refresh by rows priced at once").
        const bool first_by_rows = first_refresh && timed && refreshes_by_rows();
        // Refreshing ahead, a refresh resets the stale time at every
        // prepare, so the age of the hierarchy is weighed on its own: once
        // the fresh solves' iterations above the first after the build have
        // cost a build, rebuild, below the growth limit too (rent or buy:
        // where the cloth itself got harder, the rebuilt hierarchy's first
        // solve is as slow and the age starts again from it).
        // With the square coarse space the age first buys a renewal of the
        // modes (renew_tentatives), at its own price (a refresh's before the
        // first), until one is judged not to have helped.
        const bool renew = renewal_next();
        const double age_price = renew ? (m_last_renewal_seconds >= 0.0   ? m_last_renewal_seconds
                                          : m_last_refresh_seconds >= 0.0 ? m_last_refresh_seconds
                                                                          : m_last_build_seconds)
                                       : m_age_price_builds * m_last_build_seconds;
        // A build or renewal still being judged is judged before the age buys another.
        const bool aged = timed && refreshing_ahead() && !m_judging_aged_build && iterations > m_first_iterations &&
                          m_aged_seconds >= age_price;
        if (aged) {
            if (renew) {
                m_renew_requested = true;
            } else {
                m_growth_builds += 1;
                m_aged_builds += 1;
                m_rebuild_requested = true;
                m_aged_requested = true;
            }
            // The fresh solves before this build or renewal, against which its own are judged.
            m_aged_before = m_recent_fresh_count == aged_judged_solves ? mean_recent_fresh() : -1.0;
            return;
        }
        if (drifted || first_by_rows || (iterations > limit && (!timed || first_refresh || m_stale_seconds >= price))) {
            if (by_refresh) {
                m_growth_refreshes += 1;
                m_refresh_requested = true;
                m_iterations_before_refresh = iterations;
            } else {
                m_growth_builds += 1;
                m_rebuild_requested = true;
            }
        }
    }

    /// Seconds the extra iterations of the solves since the last build cost
    /// (the rent side of the rebuild rule), and the last build's seconds.
    double stale_seconds() const { return m_stale_seconds; }
    /// Seconds the iterations above the first solve's since the last build
    /// or refresh cost (the rent side of the refresh rule).
    double fresh_stale_seconds() const { return m_fresh_stale_seconds; }
    /// Refreshing ahead: seconds the fresh solves' iterations above the first
    /// after the last build cost (the hierarchy's age, the rent side of the
    /// rebuild rule while the values are fresh), and the builds that age
    /// bought (counted in growth_builds() too).
    double aged_seconds() const { return m_aged_seconds; }
    int aged_builds() const { return m_aged_builds; }
    /// How many builds the age must cost before the next aged build: 1,
    /// doubled (up to max_age_price_builds) after each aged build whose first
    /// aged_judged_solves fresh solves took on average no fewer iterations
    /// than the last as many fresh solves before it, back to 1 after one
    /// whose solves took fewer.
    int age_price_builds() const { return m_age_price_builds; }
    /// Renewals of the squares' modes and every level's prolongator
    /// (MultilevelOptions::renew_modes, bought by the hierarchy's age
    /// instead of a build), their total and last time
    /// (the renewal and its refresh of every coarse row), whether the
    /// hierarchy can renew its modes (square coarse space built in blocks
    /// with a level below the first, MultilevelOptions::renew_modes), and
    /// whether the age buys a renewal next (renewable, and the last judged
    /// renewal lowered the iterations; a build sets this back).
    int mode_renewals() const { return m_mode_renewals; }
    double renewal_seconds() const { return m_renewal_seconds; }
    double last_renewal_seconds() const { return m_last_renewal_seconds; }
    bool modes_renewable() const
    {
        return m_options.renew_modes && !m_renewal.empty() && m_lines != nullptr &&
               m_renewal.levels.size() == m_coarse.size();
    }
    bool renewal_next() const { return modes_renewable() && m_renewals_help; }
    /// The next prepare() renews the modes (where it reuses the hierarchy
    /// and it is renewable; else it builds), as the age rule would ask.
    void request_mode_renewal() { m_renew_requested = true; }
    static constexpr int aged_judged_solves = 3;
    static constexpr int max_age_price_builds = 16;
    double last_build_seconds() const { return m_last_build_seconds; }

    /// Whether the default refresh rule (MultilevelRefresh::on_growth, timed
    /// solves) now refreshes ahead: at every prepare() but a probe's, because
    /// the last stale solve measured after a renewal cost more than a refresh.
    /// Whether a refresh goes by rows (MultilevelOptions::refresh_tolerance):
    /// refreshes are on and some coarse level is a square level that keeps
    /// the values its rows were taken from.
    bool refreshes_by_rows() const
    {
        if (m_options.refresh == MultilevelRefresh::off || m_options.refresh_tolerance < 0.0) return false;
        for (const auto& level : m_coarse) {
            if (!level.block_product.empty() && !level.taken.empty()) return true;
        }
        return false;
    }
    /// Also while the last refresh, by rows, cost less than one iteration of
    /// the last timed solve (then without probes).
    bool refreshing_ahead() const
    {
        return (m_ahead || m_cheap_refresh) && m_options.timed_rebuild && refreshes_known_to_help();
    }
    /// Refreshes made ahead (refreshing_ahead()) so far, and the fresh solves
    /// between two probes now (4, doubled by each probe that confirms the
    /// drift, at most 32).
    int refreshes_ahead() const { return m_ahead_refreshes; }
    int probe_interval() const { return m_probe_interval; }

    /// z = M⁻¹ r, one symmetric V-cycle (r and z have #DoFs entries).
    void apply(const thrust::device_vector<T>& r, thrust::device_vector<T>& z) override
    {
        if (!m_ready) throw InvalidInput("MultilevelPreconditioner::apply called before a successful prepare()");
        if (r.size() != static_cast<std::size_t>(m_matrix->rows())) {
            throw InvalidInput(
                detail::describe("MultilevelPreconditioner::apply r.size()", r.size(), "must equal the matrix size"));
        }
        z.resize(r.size());
        thrust::copy(thrust::device, r.begin(), r.end(), m_fine.r.begin());
        ++m_cycles;
        cycle_fine();
        thrust::copy(thrust::device, m_fine.z.begin(), m_fine.z.end(), z.begin());
    }

    /// The finest matrix's values as float, made by prepare() where
    /// MultilevelOptions::single_precision_matrix asks for them (PCG iterates
    /// with the same copy); nullptr otherwise.
    const thrust::device_vector<float>* matrix_values_single() const override
    {
        return m_ready && single_precision() ? &m_values_single : nullptr;
    }

    /// Hierarchy builds so far.
    int builds() const { return m_builds; }
    /// Refreshes of the coarse matrices' values so far (MultilevelRefresh), of
    /// them those asked for by a slow solve, and their seconds.
    int refreshes() const { return m_refreshes; }
    int growth_refreshes() const { return m_growth_refreshes; }
    /// Refreshes that adopted a new filter on the kept pattern (instead of a build).
    int filter_refreshes() const { return m_filter_refreshes; }
    /// Refreshes by rows whose mix of old and new rows left a level not
    /// positive definite, done again with every row (refresh_values()).
    int by_rows_retries() const { return m_by_rows_retries; }
    /// Prepares that took every row again because a solve's largest Ritz
    /// value exceeded MultilevelOptions::exact_ritz_bound ("Exact retakes"
    /// in the file comment).
    int exact_retakes() const { return m_exact_retakes; }
    /// The largest Ritz value of the solve about to be recorded (PcgResult::ritz_max
    /// where PCG estimated it; 0 or less: none), read by the next record_solve().
    void record_spectrum(double ritz_max) { m_last_ritz_max = ritz_max; }
    /// Prepares that kept the coarse levels across a new pattern or filter
    /// (MultilevelOptions::keep_across_patterns) instead of a build.
    int pattern_keeps() const { return m_pattern_keeps; }
    double refresh_seconds() const { return m_refresh_seconds; }
    /// Cycles so far (apply() calls), and the seconds they spent on each
    /// level, finest first, as level_dofs() counts the levels: a level's
    /// smoothing, its residual and the transfers to and from the next coarser
    /// level, exclusive of the visits below it; the coarsest level's direct
    /// solve. Where a cycle's time goes, level by level (the benchmarks'
    /// level_cycle_ms). Over every hierarchy so far (a rebuild with fewer
    /// levels leaves the deeper entries as they were). The host clock around
    /// each visit: on a GPU each Thrust call there waits for its kernel.
    long cycles() const { return m_cycles; }
    std::vector<double> level_cycle_seconds() const
    {
        std::vector<double> exclusive(m_visit_seconds.size());
        for (std::size_t l = 0; l < exclusive.size(); ++l)
            exclusive[l] = m_visit_seconds[l] - (l + 1 < m_visit_seconds.size() ? m_visit_seconds[l + 1] : 0.0);
        return exclusive;
    }
    /// Over the refreshes by rows so far (MultilevelOptions::refresh_tolerance),
    /// the share of the first coarse level's rows they recomputed; −1 before
    /// the first.
    double refreshed_row_share() const { return m_rows_refreshable > 0.0 ? m_rows_reached / m_rows_refreshable : -1.0; }
    /// Whether the last prepare() kept the factors of some finest yarn line
    /// (MultilevelOptions::line_factor_tolerance): those of values within
    /// the tolerance of the current ones.
    bool kept_line_factors() const { return m_ready && m_fine_kept; }
    /// After a solve that failed with kept line factors (kept_line_factors()):
    /// every finest yarn line factored for the matrix of the last prepare(),
    /// and from then on at every prepare() (the tolerance is set aside for
    /// good), so that the caller can solve again with the same hierarchy. A
    /// kept line's factors are of values near the current ones, which keeps
    /// the V-cycle positive definite only while the difference is small
    /// against the line's smallest eigenvalue: a stiff, ill-conditioned line
    /// may need less than the tolerance allowed. Counted by
    /// line_factor_fallbacks().
    /// @return false where nothing was kept or a line is not positive definite
    bool factor_kept_lines()
    {
        if (!kept_line_factors() || m_matrix == nullptr || m_free == nullptr) return false;
        m_keep_no_line_factors = true;
        m_line_factor_fallbacks += 1;
        m_fine_kept = false;
        forget_fine_taken(true);
        if (factor_lines(*m_matrix, *m_free, m_colored_lines, m_line_factors) > 0) {
            m_ready = false;
            return false;
        }
        if (single_precision()) m_line_factors.round_to_float();
        return true;
    }
    /// Whether a solve with the last prepare()'s cycle may be retaken exactly
    /// (retake_exact()): exact_ritz_bound on, refreshes on, and coarse rows or
    /// finest line factors kept from older matrices, the coarse levels not
    /// kept across a new pattern (their retake waits for the next prepare()).
    bool retakable() const { return m_ready && holds_older_components() && !m_kept_pattern; }
    /// The exact retake within a solve ("Exact retakes" in the file comment):
    /// prepare() again for the matrix, filter and state of the last one, with
    /// every coarse row refreshed and every finest line factored. For a solve
    /// whose Lanczos matrix showed an entry above exact_ritz_bound
    /// (PcgOptions::ritz_stop; solve_filtered_pcg_multilevel redoes it).
    /// Counted by exact_retakes() and refreshes().
    /// @return false where retakable() is false or the hierarchy cannot be made (as prepare())
    bool retake_exact()
    {
        if (!retakable()) return false;
        m_exact_requested = true;
        return prepare(*m_matrix, *m_free, *m_state);
    }
    /// Solves redone by factor_kept_lines() (0 or 1: it sets the tolerance aside).
    int line_factor_fallbacks() const { return m_line_factor_fallbacks; }
    /// Over the prepares so far with yarn-line smoothing, the share of the
    /// finest level's lines factored (MultilevelOptions::line_factor_tolerance:
    /// 1 where every prepare factors every line); −1 before the first.
    double line_refactor_share() const
    {
        return m_fine_lines_seen > 0.0 ? m_fine_lines_factored / m_fine_lines_seen : -1.0;
    }
    /// The last refresh's seconds (< 0 before the first).
    double last_refresh_seconds() const { return m_last_refresh_seconds; }
    /// Seconds spent in builds so far (host setup and uploads).
    double build_seconds() const { return m_build_seconds; }
    /// Builds so far caused by a changed pattern or filter (the first included),
    /// by a failed solve or refresh, by a slow solve.
    int pattern_builds() const { return m_pattern_builds; }
    int failure_builds() const { return m_failure_builds; }
    int growth_builds() const { return m_growth_builds; }
    /// Levels of the current hierarchy, the finest included.
    int levels() const { return m_ready ? 1 + static_cast<int>(m_coarse.size()) : 0; }
    /// DoFs of each level, finest first.
    std::vector<Index> level_dofs() const
    {
        std::vector<Index> result;
        if (!m_ready) return result;
        result.push_back(m_matrix->rows());
        for (const auto& level : m_coarse) result.push_back(level.dofs);
        return result;
    }
    /// Host copies of coarse level `level`'s matrix (level 1 is the first
    /// coarse level, as in level_dofs()) and of its prolongator from the level
    /// above, for inspection and tests. A square level that keeps no scalar
    /// copy (level_keeps_scalar_matrix) gives its blocked copy without its
    /// exact zeros.
    multilevel_detail::HostMatrix<T> level_matrix(std::size_t level) const
    {
        if (!level_keeps_scalar_matrix(level)) {
            multilevel_detail::HostMatrix<T> m = level_blocked_matrix(level);
            m.prune([](Index, Index, const T& value) { return value != T(0); });
            return m;
        }
        return multilevel_detail::to_host_csr(coarse_level(level).matrix);
    }
    /// z = the cycle of coarse level `level` applied to r, on that level's
    /// DoFs: the V- or W-cycle that the finest level's cycle runs from there
    /// down, the preconditioner of that level's matrix (level_matrix). Levels
    /// 1 to levels() − 2; the coarsest is inverted, not cycled. Not counted
    /// in cycles() or level_cycle_seconds(). For inspection:
    /// level_slowest_modes(), and the tests that each level's cycle is
    /// symmetric positive definite.
    /// @throws InvalidInput before a successful prepare(), for a level out of
    ///         range, or for r of another size than the level's DoFs
    void apply_level(std::size_t level, const thrust::device_vector<T>& r, thrust::device_vector<T>& z)
    {
        if (!m_ready || level < 1 || level + 1 > m_coarse.size()) {
            throw InvalidInput(detail::describe(
                "MultilevelPreconditioner::apply_level level", level,
                ("must be a cycled coarse level, 1 to " + std::to_string(m_coarse.empty() ? 0 : m_coarse.size() - 1) +
                 ", of a prepared hierarchy")
                    .c_str()));
        }
        auto& self = m_coarse[level - 1];
        if (r.size() != static_cast<std::size_t>(self.dofs)) {
            throw InvalidInput(detail::describe("MultilevelPreconditioner::apply_level r.size()", r.size(),
                                                ("must equal the level's DoFs " + std::to_string(self.dofs)).c_str()));
        }
        const std::vector<double> visits = m_visit_seconds;
        self.smoother.r.resize(r.size());
        thrust::copy(thrust::device, r.begin(), r.end(), self.smoother.r.begin());
        cycle<1>(self.matrix, self.free_dofs, self.smoother, level);
        m_visit_seconds = visits;
        z.resize(r.size());
        thrust::copy(thrust::device, self.smoother.z.begin(), self.smoother.z.end(), z.begin());
    }
    /// Coarse level `level`'s filter: 1 on its DoFs with a positive diagonal.
    std::vector<std::uint8_t> level_free_dofs(std::size_t level) const
    {
        return to_host(coarse_level(level).free_dofs);
    }
    /// x of coarse level `level` prolonged to the finest DoFs, P_1 ⋯ P_level x
    /// (zero on the finest level's constrained DoFs): a coarse level's mode
    /// seen on the nodes.
    thrust::device_vector<T> prolonged(std::size_t level, const thrust::device_vector<T>& x)
    {
        if (x.size() != static_cast<std::size_t>(coarse_level(level).dofs)) {
            throw InvalidInput(detail::describe(
                "MultilevelPreconditioner::prolonged x.size()", x.size(),
                ("must equal level " + std::to_string(level) + "'s DoFs " + std::to_string(coarse_level(level).dofs))
                    .c_str()));
        }
        thrust::device_vector<T> current = x, above;
        for (std::size_t k = level; k >= 1; --k) {
            const Index rows = k == 1 ? m_matrix->rows() : m_coarse[k - 2].dofs;
            above.assign(static_cast<std::size_t>(rows), T(0));
            add_prolonged(k - 1, current, above, k == 1 ? raw_pointer(*m_free) : nullptr);
            current.swap(above);
        }
        return current;
    }
    /// The slowest mode of each cycled coarse level (apply_level), levels 1
    /// to levels() − 2: slowest_mode on the level's matrix (its copy in
    /// blocks on a square level) and filter with that level's cycle as M.
    /// The finest cycle's λ_min is at most about the smallest of these where
    /// a level's mode is near the range of the prolongators above it; a level
    /// as low as the finest cycle's says that its loss lies at or below that
    /// level (bench_yarn --slowest-mode, benchmarks/RESULTS.md).
    /// @throws InvalidInput before a successful prepare(), or as slowest_mode
    std::vector<SlowestMode<T>> level_slowest_modes(const SlowestModeOptions<T>& options = {})
    {
        if (!m_ready) throw InvalidInput("MultilevelPreconditioner::level_slowest_modes called before prepare()");
        std::vector<SlowestMode<T>> modes;
        for (std::size_t level = 1; level + 1 <= m_coarse.size(); ++level) {
            LevelCycle cycle(*this, level);
            const auto& self = m_coarse[level - 1];
            modes.push_back(self.by_lines ? slowest_mode(self.blocked, self.free_dofs, cycle, options)
                                          : slowest_mode(self.matrix, self.free_dofs, cycle, options));
        }
        return modes;
    }
    /// Whether coarse level `level` keeps its matrix as scalars beside its
    /// blocks: every level but the square levels more than one above the
    /// coarsest (CoarseLevel::matrix).
    bool level_keeps_scalar_matrix(std::size_t level) const
    {
        const auto& l = coarse_level(level);
        return l.matrix.rows() == l.dofs;
    }
    multilevel_detail::HostMatrix<T> level_prolongator(std::size_t level) const
    {
        const auto& l = coarse_level(level);
        if (l.block_prolongator.empty()) return multilevel_detail::to_host_csr(l.prolongator);
        const int above = level == 1 ? B : multilevel_detail::square_modes;
        return multilevel_detail::expand_blocks(l.block_prolongator, above, multilevel_detail::square_modes, l.dofs);
    }
    /// Coarse level `level`'s copy in blocks of square_modes (every block of
    /// its pattern, as scalars), which its line smoother and residual read;
    /// empty where the level keeps none.
    multilevel_detail::HostMatrix<T> level_blocked_matrix(std::size_t level) const
    {
        const auto& blocked = coarse_level(level).blocked;
        constexpr int K = multilevel_detail::square_modes;
        multilevel_detail::BlockCsr<T> copy;
        copy.row_ptr = blocked.row_ptr();
        copy.col_idx = blocked.col_idx();
        copy.values = blocked.values();
        return multilevel_detail::expand_blocks(copy, K, K, blocked.block_cols() * K);
    }
    /// Whether coarse level `level` (1 is the first coarse level) is smoothed
    /// by lines of squares (MultilevelCoarseSpace::squares; the coarsest level
    /// is inverted instead), and its sweep classes (coloured rows and columns).
    bool level_smoothed_by_lines(std::size_t level) const { return coarse_level(level).by_lines; }
    int level_line_classes(std::size_t level) const
    {
        return coarse_level(level).by_lines ? coarse_level(level).lines.sweep_family_count() : 0;
    }
    /// The 9 × 9 blocks of coarse level `level`'s rows that its sweeps read
    /// from a line-ordered copy (order_rows: the rows of the lines of
    /// squares across the level's node order), 0 where they read the rows in
    /// place (on a GPU, without line_ordered_rows, or a level not smoothed by
    /// lines).
    Index level_line_ordered_blocks(std::size_t level) const
    {
        const auto& factors = coarse_level(level).factors;
        using Ordered = typename LineFactors<T, multilevel_detail::square_modes>::OrderedRows;
        if (factors.ordered_rows != Ordered::double_rows || factors.ordered_row_ptr.empty()) return 0;
        return factors.ordered_row_ptr.back();
    }
    /// Operator complexity: stored scalars of all level matrices over those of the finest.
    double operator_complexity() const
    {
        if (!m_ready) return 0.0;
        const double fine = static_cast<double>(m_matrix->nonzero_blocks()) * B * B;
        double total = fine;
        for (const auto& level : m_coarse) total += level.scalar_entries;
        return total / fine;
    }

private:
    /// Whether exact retakes are on (exact_ritz_bound and refreshes) and the
    /// last prepare() left coarse rows or finest line factors of older
    /// matrices: the after-solve retake's test (record_solve()) and, for a
    /// prepare that did not keep the coarse levels across a pattern, the
    /// within-solve one (retakable()).
    bool holds_older_components() const
    {
        return m_options.exact_ritz_bound > 0.0 && m_options.refresh != MultilevelRefresh::off && !m_exact_components;
    }

    /// A fresh solve's iterations into the ring of the last ones; the
    /// aged_judged_solves-th since an aged build judges that build.
    void record_fresh(int iterations)
    {
        m_recent_fresh[static_cast<std::size_t>(m_recent_fresh_next)] = iterations;
        m_recent_fresh_next = (m_recent_fresh_next + 1) % aged_judged_solves;
        m_recent_fresh_count = std::min(m_recent_fresh_count + 1, aged_judged_solves);
        if (!m_judging_aged_build || m_recent_fresh_count < aged_judged_solves) return;
        m_judging_aged_build = false;
        const bool helped = mean_recent_fresh() < m_aged_before;
        if (m_judging_renewal) {
            // A renewal that did not help: the age left is not the modes'; the next one buys a build.
            m_judging_renewal = false;
            m_renewals_help = helped;
        } else {
            m_age_price_builds = helped ? 1 : std::min(2 * m_age_price_builds, max_age_price_builds);
        }
        m_aged_before = -1.0;
    }

    double mean_recent_fresh() const
    {
        return std::accumulate(m_recent_fresh.begin(), m_recent_fresh.end(), 0.0) / aged_judged_solves;
    }

    void validate_options() const { validate(m_options); }

    const multilevel_detail::CoarseLevel<T>& coarse_level(std::size_t level) const
    {
        if (!m_ready || level < 1 || level > m_coarse.size()) {
            throw InvalidInput(detail::describe(
                "MultilevelPreconditioner level", level,
                ("must be a coarse level, 1 to " + std::to_string(m_coarse.size()) + ", of a prepared hierarchy")
                    .c_str()));
        }
        return m_coarse[level - 1];
    }

    /// The near-null space of the finest level (zero on constrained DoFs).
    multilevel_detail::NearNull<T> fine_near_null(const std::vector<std::uint8_t>& free,
                                                  const std::vector<T>& state) const
    {
        const Index nodes = m_matrix->block_rows();
        T center[3] = {T(0), T(0), T(0)};
        for (Index i = 0; i < nodes; ++i) {
            for (int c = 0; c < 3; ++c) center[c] += state[static_cast<std::size_t>(i) * B + c];
        }
        for (int c = 0; c < 3; ++c) center[c] /= nodes > 0 ? T(nodes) : T(1);
        multilevel_detail::NearNull<T> n;
        n.dofs = nodes * B;
        n.k = near_null_size;
        n.rows.assign(static_cast<std::size_t>(n.dofs) * n.k, T(0));
        for (Index i = 0; i < nodes; ++i) {
            const T x = state[static_cast<std::size_t>(i) * B + 0] - center[0];
            const T y = state[static_cast<std::size_t>(i) * B + 1] - center[1];
            const T z = state[static_cast<std::size_t>(i) * B + 2] - center[2];
            const Index o = i * B;
            for (int c = 0; c < 3; ++c) n.at(o + c, c) = T(1);  // translations
            // rotations ω × (x − center) about e_x, e_y, e_z
            n.at(o + 1, 3) = -z;
            n.at(o + 2, 3) = y;
            n.at(o + 0, 4) = z;
            n.at(o + 2, 4) = -x;
            n.at(o + 0, 5) = -y;
            n.at(o + 1, 5) = x;
            for (int e = 3; e < B; ++e) n.at(o + e, 6 + (e - 3)) = T(1);  // extra DoFs (arc lengths)
            for (int r = 0; r < B; ++r) {
                if (!free[static_cast<std::size_t>(o + r)]) {
                    for (int c = 0; c < n.k; ++c) n.at(o + r, c) = T(0);
                }
            }
        }
        return n;
    }

    bool build(const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs,
               const thrust::device_vector<T>& state)
    {
        using namespace multilevel_detail;
        m_ready = false;
        m_built = false;
        m_coarse.clear();
        // Room for every level: a reallocation would copy the levels'
        // device vectors (CoarseLevel's move may throw, so std::vector copies).
        m_coarse.reserve(static_cast<std::size_t>(std::max(m_options.max_levels, 1)));
        m_builds += 1;
        m_first_iterations = -1;
        m_stale_seconds = 0.0;
        m_fresh_iterations = -1;
        m_fresh_stale_seconds = 0.0;
        m_aged_seconds = 0.0;
        // Only an aged build is judged by its first fresh solves; any other
        // build drops a judgement still open.
        m_judging_aged_build = m_aged_requested && m_aged_before >= 0.0;
        m_aged_requested = false;
        if (!m_judging_aged_build) m_aged_before = -1.0;
        m_recent_fresh_count = 0;
        m_solves_since_renewal = 0;
        m_probe_next = false;
        m_cheap_refresh = false;
        m_rebuild_requested = false;
        m_refresh_requested = false;
        m_checking_refresh = false;
        m_refresh_helps = true;
        m_pattern_rows = a.row_ptr();
        m_pattern_cols = a.col_idx();
        m_pattern_free = free_dofs;
        m_kept_pattern = false;

        m_colored = false;  // a new pattern: colour the lines again
        m_renewal = multilevel_detail::ModeRenewal<T>();
        m_renew_requested = false;
        m_renewals_help = true;
        m_judging_renewal = false;
        if (!prepare_fine(a, free_dofs)) return false;

        const std::vector<std::uint8_t> free = to_host(free_dofs);
        HostMatrix<T> level_matrix = filtered_host_matrix(a, free);
        const std::vector<T> host_state = to_host(state);
        const bool by_squares = square_coarse_space();
        const bool by_yarns = yarn_coarse_space() || by_squares;  // aggregates from the lines
        if (by_yarns && m_lines->node_count() != a.block_rows()) {
            throw InvalidInput(detail::describe(
                "MultilevelPreconditioner yarn coarse space: the matrix's block rows", a.block_rows(),
                ("must equal LineSet node_count() = " + std::to_string(m_lines->node_count())).c_str()));
        }
        NearNull<T> near_null;
        if (!by_yarns) near_null = fine_near_null(free, host_state);
        std::vector<std::uint8_t> level_free = free;
        int bs = B;
        // Yarn coarse space: the aggregates of the last coarse level, and its
        // blocks (one per aggregate) for the prolongator's Jacobi smoothing.
        std::vector<YarnAggregate<T>> yarn_level;
        std::vector<Index> yarn_blocks;
        // Â P and P of the last level (the coarsest keeps them as scalars: its refresh's pattern, its cycle)
        HostMatrix<T> last_product, last_prolongator;
        HostMatrix<T> above_matrix;  // the last level's Â (the level above it), for its scalar Â P
        while (static_cast<int>(m_coarse.size()) + 1 < m_options.max_levels &&
               level_matrix.rows() > m_options.coarse_dofs) {
            HostMatrix<T> tentative;
            LevelRenewal<T> renewal_level;
            NearNull<T> coarse_near_null;
            std::vector<YarnAggregate<T>> coarse_yarn_level;
            std::vector<Index> coarse_yarn_blocks;
            if (by_yarns) {
                // The first coarse level from the lines; coarser ones join 2 runs
                // of 2 neighbouring yarns and 3 × 3 squares (the study's best design).
                // Squares: the first level from the lines, coarser ones join
                // square_join × square_join squares.
                const std::vector<YarnAggregate<T>> aggregates =
                    !m_coarse.empty() ? join_yarn_aggregates(yarn_level, 2, 2, by_squares ? m_options.square_join : 3)
                    : by_squares
                        ? square_aggregates(*m_lines, host_state, free, m_options.square_side)
                        : yarn_aggregates(*m_lines, host_state, free, m_options.yarn_run, m_options.yarn_square);
                tentative = yarn_tentative_prolongator(aggregates, static_cast<Index>(level_matrix.rows()),
                                                       coarse_yarn_level, coarse_yarn_blocks);
                if (tentative.cols() == 0 || tentative.cols() >= level_matrix.rows()) break;  // no coarsening
                if (by_squares) {  // what a renewal of the modes keeps: the tentative prolongator in blocks
                    if (m_coarse.empty()) {
                        renewal_level.tentative = keep_renewal_basis(aggregates, coarse_yarn_level, a.block_rows());
                    } else {
                        renewal_level.tentative_pattern = scalar_block_pattern(tentative, square_modes, square_modes);
                        renewal_level.tentative =
                            BlockCsr<T>(renewal_level.tentative_pattern, square_modes, square_modes, &tentative);
                    }
                }
            } else {
                const Index nodes = static_cast<Index>(level_matrix.rows() / bs);
                std::vector<std::uint8_t> active(static_cast<std::size_t>(nodes), 0);
                for (Index i = 0; i < nodes; ++i) {
                    for (int r = 0; r < bs; ++r)
                        active[static_cast<std::size_t>(i)] |= level_free[static_cast<std::size_t>(i * bs + r)];
                }
                Index aggregates = 0;
                const std::vector<Index> owner =
                    aggregate(level_matrix, bs, active,
                              m_coarse.empty() ? static_cast<T>(m_options.strength_threshold) : T(0), aggregates);
                if (aggregates == 0 || aggregates * near_null_size >= level_matrix.rows()) break;  // no coarsening
                tentative = tentative_prolongator(near_null, bs, owner, aggregates, coarse_near_null);
            }
            // Below the first square level, joins of fewer than 3 × 3 squares
            // smooth by the couplings of squares at most join − 1 apart: Â
            // couples squares two apart, and a prolongator smoothed by all of
            // Â would reach two squares beyond its aggregate, so that the
            // next level couples aggregates three apart, beyond its lines'
            // band (colored_line_set would cut its lines into short pieces).
            // With a reach of join − 1 the next level's couplings stay within
            // two aggregates. Pᵀ Â P keeps all of Â (positive definite).
            HostMatrix<T> neighbour_matrix;
            const bool neighbours_only =
                by_squares && !m_coarse.empty() && m_options.square_join - 1 < square_coupling_reach;
            if (neighbours_only) {
                neighbour_matrix = square_neighbour_couplings(level_matrix, yarn_blocks, yarn_level,
                                                              static_cast<Index>(m_options.square_join - 1));
            }
            const HostMatrix<T>& smoothing_matrix = neighbours_only ? neighbour_matrix : level_matrix;
            const HostMatrix<T> inverse_diagonal = by_yarns && !m_coarse.empty()
                                                       ? block_diagonal_inverse(level_matrix, yarn_blocks)
                                                       : block_diagonal_inverse(level_matrix, bs);
            const T lambda = largest_eigenvalue(inverse_diagonal, smoothing_matrix, m_options.power_iterations);
            const T omega = T(4) / (T(3) * lambda);
            renewal_level.omega = omega;
            if (neighbours_only) {  // the blocks of the level above's matrix that smooth its prolongator
                renewal_level.kept_blocks = to_device(square_neighbour_blocks(
                    pattern_of(m_coarse.back().blocked), yarn_level, static_cast<Index>(m_options.square_join - 1)));
            }
            // P = (I − ω D⁻¹Â) T, formed as T − ω D⁻¹ (Â T): D⁻¹Â would be a
            // matrix as large as Â, Â T has the few columns of T.
            HostMatrix<T> prolongator = sparse_difference_without_zeros(
                tentative, omega, sparse_product(inverse_diagonal, sparse_product(smoothing_matrix, tentative)));
            HostMatrix<T> restriction = prolongator.transpose();
            const bool refreshes = m_options.refresh != MultilevelRefresh::off;
            HostMatrix<T> product, coarse;  // Â P (not formed in blocks) and Pᵀ Â P as scalars
            std::vector<std::uint8_t> coarse_free;
            if (by_squares && refreshes) {
                std::vector<Index> transpose;
                build_square_level_in_blocks(a, free_dofs, prolongator, restriction, coarse_yarn_level, coarse,
                                             coarse_free, transpose);
                if (!transpose.empty() && !renewal_level.tentative.empty()) {
                    renewal_level.transpose = to_device(transpose);
                    m_renewal.levels.push_back(std::move(renewal_level));
                }
            } else {
                CoarseLevel<T> level;
                assign_by_swap(product, sparse_product(level_matrix, prolongator));
                assign_by_swap(coarse, sparse_product(restriction, product));
                T largest = T(0);
                for (Index r = 0; r < coarse.rows(); ++r) largest = std::max(largest, std::abs(coarse.coeff(r, r)));
                if (by_yarns &&
                    !by_squares) {  // the coarse level's point Jacobi becomes block Jacobi on its aggregates
                    const HostMatrix<T> basis =
                        block_energy_basis(coarse, coarse_yarn_blocks, T(1e-12) * largest, coarse_yarn_level);
                    assign_by_swap(prolongator, sparse_product(prolongator, basis));
                    restriction = prolongator.transpose();
                    assign_by_swap(product, sparse_product(product, basis));
                    assign_by_swap(coarse, sparse_product(restriction, product));
                    largest = T(0);
                    for (Index r = 0; r < coarse.rows(); ++r) largest = std::max(largest, std::abs(coarse.coeff(r, r)));
                }
                // Coarse DoFs left inactive by a dependent near-null column: identity, filtered out.
                coarse_free.assign(static_cast<std::size_t>(coarse.rows()), 0);
                std::vector<Eigen::Triplet<T, Index>> identity;
                for (Index r = 0; r < coarse.rows(); ++r) {
                    coarse_free[static_cast<std::size_t>(r)] = coarse.coeff(r, r) > T(1e-12) * largest ? 1 : 0;
                    if (!coarse_free[static_cast<std::size_t>(r)]) identity.emplace_back(r, r, T(1));
                }
                if (!identity.empty()) {
                    HostMatrix<T> unit(coarse.rows(), coarse.cols());
                    unit.setFromTriplets(identity.begin(), identity.end());
                    coarse = coarse + unit;
                }
                level.matrix = to_device_csr(coarse);
                level.dofs = static_cast<Index>(coarse.rows());
                level.scalar_entries = static_cast<double>(level.matrix.nonzero_blocks());
                level.free_dofs = to_device(coarse_free);
                coarse.makeCompressed();
                if (by_squares) {
                    // Refreshes off (with them on, build_square_level_in_blocks
                    // forms the level): blocks of square_modes for the prolongator
                    // and restriction (the scalar copies only for the coarsest
                    // level, below) and for the matrix, on its own pattern.
                    const int above = m_coarse.empty() ? B : square_modes;
                    const BlockPattern p_pattern = scalar_block_pattern(prolongator, above, square_modes);
                    const BlockPattern r_pattern = scalar_block_pattern(restriction, square_modes, above);
                    level.block_prolongator = BlockCsr<T>(p_pattern, above, square_modes, &prolongator);
                    level.block_restriction = BlockCsr<T>(r_pattern, square_modes, above, &restriction);
                    std::vector<Index> position;
                    level.blocked = blocked_copy<T, square_modes>(coarse, position);
                    level.block_position = to_device(position);
                    level.square_lines = square_lines(coarse_yarn_level);
                    level.by_lines = true;
                } else {
                    level.prolongator = to_device_csr(prolongator);
                    level.restriction = to_device_csr(restriction);
                    if (refreshes) {
                        level.product = to_device_csr(product);
                        level.mirror = to_device(symmetric_mirror(coarse));
                    }
                }
                m_coarse.push_back(std::move(level));
            }
            if (m_coarse.size() >= 3 && m_coarse[m_coarse.size() - 3].by_lines) {
                // Two levels below it exist, so it is not the coarsest's
                // neighbour: its scalar copy is not read again.
                CoarseLevel<T>& above_two = m_coarse[m_coarse.size() - 3];
                above_two.matrix = BsrMatrix<T, 1>();
                above_two.block_position = thrust::device_vector<Index>();
            }
            // Eigen 3.4's SparseMatrix has no move assignment: std::move would
            // copy these (a quarter of a second for Â P at 200² crossings).
            last_product.swap(product);
            last_prolongator.swap(prolongator);
            above_matrix.swap(level_matrix);
            level_matrix.swap(coarse);
            level_free = std::move(coarse_free);
            near_null = std::move(coarse_near_null);
            yarn_level = std::move(coarse_yarn_level);
            yarn_blocks = std::move(coarse_yarn_blocks);
            bs = near_null_size;
        }
        // Smoothers of the coarse levels but the last; the last is inverted densely.
        for (std::size_t l = 0; l < m_coarse.size(); ++l) {
            CoarseLevel<T>& level = m_coarse[l];
            if (l + 1 == m_coarse.size()) {  // the coarsest: no smoother, scalar products
                if (level.matrix.rows() != level.dofs) level.matrix = to_device_csr(level_matrix);  // built in blocks
                if (level.by_lines) {
                    level.prolongator = to_device_csr(last_prolongator);
                    level.restriction = to_device_csr(HostMatrix<T>(last_prolongator.transpose()));
                    keep_coarsest_renewal(level, last_prolongator);
                    if (m_options.refresh != MultilevelRefresh::off) {
                        // A level built in blocks has no scalar Â P: formed here, for the coarsest only.
                        if (last_product.rows() == 0)
                            assign_by_swap(last_product, sparse_product(above_matrix, last_prolongator));
                        level.product = to_device_csr(last_product);
                        level.mirror = to_device(symmetric_mirror(level_matrix));
                    }
                }
                level.by_lines = false;
                level.blocked = BsrMatrix<T, square_modes>();
                level.block_position.clear();
                level.block_prolongator = BlockCsr<T>();
                level.block_restriction = BlockCsr<T>();
                level.block_product = BlockCsr<T>();
                level.block_mirror.clear();
            } else if (level.by_lines) {
                if (l + 2 == m_coarse.size() && level.matrix.rows() != level.dofs) {
                    // Built in blocks, the coarsest's neighbour: its scalar copy (above_matrix,
                    // every entry of its blocks), which the coarsest level's refresh reads.
                    level.matrix = to_device_csr(above_matrix);
                    level.block_position = to_device(full_block_positions<square_modes>(pattern_of(level.blocked)));
                }
                level.lines = colored_line_set(level.blocked, level.square_lines);
                level.smoother.resize(static_cast<std::size_t>(level.dofs));
                if (factor_lines(level.blocked, level.free_dofs, level.lines, level.factors) > 0) return false;
                order_rows(level.blocked, level.lines, level.factors, nullptr, false);
            } else {
                if (level.smoother.invert(level.matrix, level.free_dofs) > 0) return false;
                level.smoother.bound(level.matrix, level.free_dofs);
            }
        }
        if (!invert_coarsest(level_matrix, level_free)) return false;
        for (std::size_t l = 0; l < m_coarse.size(); ++l) {
            if (!m_coarse[l].block_product.empty()) take_every_row(l, a);
        }
        // The modes are renewed level by level: none unless every coarse level
        // kept what that needs, with a level below the first.
        if (m_coarse.size() < 2 || m_renewal.levels.size() != m_coarse.size() ||
            m_renewal.levels.back().prolongator_positions.empty()) {
            m_renewal = multilevel_detail::ModeRenewal<T>();
        }
        m_built = true;
        return true;
    }

    /// Keeps what a renewal of the modes needs of the first square level's
    /// build: its aggregates' count and each node's aggregate, as the pattern
    /// of its tentative prolongator in blocks (returned; values zero).
    /// Nothing where a node has no aggregate or an aggregate is not
    /// square_modes wide.
    multilevel_detail::BlockCsr<T> keep_renewal_basis(
        const std::vector<multilevel_detail::YarnAggregate<T>>& aggregates,
        const std::vector<multilevel_detail::YarnAggregate<T>>& coarse, Index nodes)
    {
        using namespace multilevel_detail;
        constexpr int N = square_modes;
        m_renewal = ModeRenewal<T>();
        BlockCsr<T> tentative;
        if (aggregates.size() != coarse.size()) return tentative;
        std::vector<Index> owner(static_cast<std::size_t>(nodes), Index(-1));
        for (std::size_t g = 0; g < aggregates.size(); ++g) {
            if (coarse[g].near_null.cols() != N || aggregates[g].near_null.cols() != N) return tentative;
            for (const Index dof : aggregates[g].dofs) owner[static_cast<std::size_t>(dof / B)] = static_cast<Index>(g);
        }
        std::vector<Index> row_ptr(static_cast<std::size_t>(nodes) + 1);
        for (Index i = 0; i <= nodes; ++i) row_ptr[static_cast<std::size_t>(i)] = i;
        for (const Index o : owner) {
            if (o < 0) return tentative;
        }
        tentative.row_ptr = to_device(row_ptr);
        tentative.col_idx = to_device(owner);
        tentative.values.assign(static_cast<std::size_t>(nodes) * (B * N), T(0));
        m_renewal.aggregates = static_cast<Index>(coarse.size());
        return tentative;
    }

    /// The coarsest level, built in blocks and read as scalars: its blocked
    /// prolongator and restriction kept for a renewal of the modes, with the place of
    /// each scalar entry (of `prolongator` and its transpose) in them.
    void keep_coarsest_renewal(multilevel_detail::CoarseLevel<T>& level,
                               const multilevel_detail::HostMatrix<T>& prolongator)
    {
        using namespace multilevel_detail;
        constexpr int N = square_modes;
        if (m_renewal.levels.size() != m_coarse.size()) return;
        LevelRenewal<T>& kept = m_renewal.levels.back();
        const int above = m_coarse.size() == 1 ? B : N;
        const auto host_pattern = [](const BlockCsr<T>& m) {
            BlockPattern p;
            p.block_rows = m.block_rows();
            p.row_ptr = to_host(m.row_ptr);
            p.col_idx = to_host(m.col_idx);
            return p;
        };
        const std::vector<Index> p_positions =
            scalar_positions_in_blocks(prolongator, host_pattern(level.block_prolongator), above, N);
        const std::vector<Index> r_positions = scalar_positions_in_blocks(
            HostMatrix<T>(prolongator.transpose()), host_pattern(level.block_restriction), N, above);
        if (p_positions.empty() || r_positions.empty()) return;
        kept.prolongator_positions = to_device(p_positions);
        kept.restriction_positions = to_device(r_positions);
        kept.block_prolongator = std::move(level.block_prolongator);
        kept.block_restriction = std::move(level.block_restriction);
    }

    /// Every coarse level's tentative prolongator for the node positions in
    /// `state`, on its kept pattern, as a build of the same aggregates makes
    /// it: the squares' near-null modes (square_aggregates) orthonormalized
    /// per square (N = Q R, T = Q), their R the coarse near-null rows, which
    /// the next level's joined aggregates orthonormalize again
    /// (join_yarn_aggregates, yarn_tentative_prolongator), and so on down.
    /// false where the hierarchy keeps no renewal, or the aggregates or a
    /// tentative no longer fit the kept ones (the caller builds).
    bool renew_tentatives(const thrust::device_vector<std::uint8_t>& free_dofs, const thrust::device_vector<T>& state)
    {
        using namespace multilevel_detail;
        constexpr int N = square_modes;
        if (!modes_renewable()) return false;
        std::vector<YarnAggregate<T>> aggregates =
            square_aggregates(*m_lines, to_host(state), to_host(free_dofs), m_options.square_side);
        if (static_cast<Index>(aggregates.size()) != m_renewal.aggregates) return false;
        BlockCsr<T>& first = m_renewal.levels[0].tentative;
        const std::vector<Index> owner = to_host(first.col_idx);
        std::vector<YarnAggregate<T>> coarse(aggregates.size());
        std::vector<std::uint8_t> misfit(aggregates.size(), 0);
        write_on_host(first.values, [&](T* values) {
            for_each_on_host(m_renewal.aggregates, [&](Index g) {
                YarnAggregate<T>& aggregate = aggregates[static_cast<std::size_t>(g)];
                YarnAggregate<T>& c = coarse[static_cast<std::size_t>(g)];
                c.family = aggregate.family;
                c.key[0] = aggregate.key[0];
                c.key[1] = aggregate.key[1];
                c.near_null = orthonormalize(aggregate.near_null);  // the near-null rows become Q
                for (Index m = 0; m < N; ++m) c.dofs.push_back(g * N + m);
                if (aggregate.near_null.cols() != N) misfit[static_cast<std::size_t>(g)] = 1;
                for (std::size_t d = 0; d < aggregate.dofs.size() && !misfit[static_cast<std::size_t>(g)]; ++d) {
                    const Index node = aggregate.dofs[d] / B;
                    if (owner[static_cast<std::size_t>(node)] != g) misfit[static_cast<std::size_t>(g)] = 1;
                    T* block = values + static_cast<std::size_t>(node) * (B * N) +
                               static_cast<std::size_t>(aggregate.dofs[d] % B) * N;
                    for (int m = 0; m < N; ++m) block[m] = aggregate.near_null(static_cast<Index>(d), m);
                }
            });
        });
        if (std::find(misfit.begin(), misfit.end(), std::uint8_t(1)) != misfit.end()) return false;
        for (std::size_t l = 1; l < m_renewal.levels.size(); ++l) {
            LevelRenewal<T>& kept = m_renewal.levels[l];
            std::vector<YarnAggregate<T>> next;
            std::vector<Index> starts;
            const HostMatrix<T> tentative =
                yarn_tentative_prolongator(join_yarn_aggregates(coarse, 2, 2, m_options.square_join),
                                           kept.tentative_pattern.block_rows * N, next, starts);
            if (tentative.cols() != kept.tentative_pattern.block_cols * N) return false;
            try {
                write_on_host(kept.tentative.values, [&](T* values) {
                    std::fill(values, values + kept.tentative.values.size(), T(0));
                    values_on_pattern(tentative, kept.tentative_pattern, N, N, values, nullptr);
                });
            } catch (const InvalidInput&) {  // an entry outside the kept pattern
                return false;
            }
            coarse = std::move(next);
        }
        return true;
    }

    /// Coarse level l's prolongator smoothed again from its kept tentative
    /// prolongator with the current matrix of the level above (the finest
    /// under the filter, or level l − 1's blocks as the refresh just left
    /// them, without the blocks square_neighbour_couplings drops):
    /// P = T − ω D⁻¹ Â T with the build's ω on P's kept block pattern
    /// (BlockFixedPatternProduct, RenewProlongatorRow), R = Pᵀ
    /// (TransposeBlock), and for the coarsest level the scalar copies the
    /// V-cycle reads. false where P leaves its pattern or a diagonal block is
    /// not positive definite (the caller builds; P may have changed).
    /// Â T is held in the level's Â P blocks, which the renewal's Galerkin
    /// product recomputes in full next (their rows are P's, their pattern
    /// Â P's, which holds P's): no allocation here. A fresh buffer of that
    /// size (55 MB at 200² crossings) cost more in page faults on the 2-core
    /// VM than the product written into it (125 against 28 ms).
    bool renew_prolongator(std::size_t l, const BsrMatrix<T, B>& a,
                           const thrust::device_vector<std::uint8_t>& free_dofs)
    {
        using namespace multilevel_detail;
        constexpr int N = square_modes;
        LevelRenewal<T>& kept = m_renewal.levels[l];
        CoarseLevel<T>& level = m_coarse[l];
        const bool coarsest = l + 1 == m_coarse.size();
        BlockCsr<T>& p = coarsest ? kept.block_prolongator : level.block_prolongator;
        BlockCsr<T>& r = coarsest ? kept.block_restriction : level.block_restriction;
        thrust::device_vector<T> own;  // the coarsest level's, which keeps no Â P blocks
        thrust::device_vector<T>& scratch = level.block_product.values;
        const bool borrow = scratch.size() >= p.values.size() && level.block_product.block_rows() == p.block_rows();
        if (!borrow) own.resize(p.values.size());
        T* const product = borrow ? raw_pointer(scratch) : raw_pointer(own);
        const std::uint8_t* const blocks_kept = kept.kept_blocks.empty() ? nullptr : raw_pointer(kept.kept_blocks);
        const auto smooth = [&](auto above, const BlockArrays<T>& matrix, const std::uint8_t* filter) {
            constexpr int K = decltype(above)::value;
            int misses = block_fixed_pattern_product<T, K, K, N>(
                p.block_rows(), matrix, filter, arrays_of(kept.tentative), raw_pointer(p.row_ptr),
                raw_pointer(p.col_idx), product, false, nullptr, blocks_kept);
            misses += thrust::transform_reduce(
                thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(p.block_rows()),
                RenewProlongatorRow<T, K, N>{matrix, filter, arrays_of(kept.tentative), raw_pointer(p.row_ptr),
                                             raw_pointer(p.col_idx), product, kept.omega, raw_pointer(p.values)},
                0, thrust::plus<int>{});
            thrust::for_each(
                thrust::device, thrust::counting_iterator<Index>(0),
                thrust::counting_iterator<Index>(static_cast<Index>(kept.transpose.size())),
                TransposeBlock<T, K, N>{raw_pointer(kept.transpose), raw_pointer(p.values), raw_pointer(r.values)});
            return misses;
        };
        int misses = 0;
        if (l == 0) {
            misses = smooth(std::integral_constant<int, B>{}, arrays_of(a), raw_pointer(free_dofs));
        } else {
            misses = smooth(std::integral_constant<int, N>{}, arrays_of(m_coarse[l - 1].blocked), nullptr);
        }
        if (misses != 0) return false;
        if (coarsest) {
            thrust::gather(thrust::device, kept.prolongator_positions.begin(), kept.prolongator_positions.end(),
                           p.values.begin(), level.prolongator.values().begin());
            thrust::gather(thrust::device, kept.restriction_positions.begin(), kept.restriction_positions.end(),
                           r.values.begin(), level.restriction.values().begin());
        }
        return true;
    }

    /// The coarse matrices' values for the current fine matrix with the kept
    /// aggregates and prolongators: A_l = R_l (Â_{l−1} P_l) level by level on
    /// the device (two fixed-pattern products per level, the second, symmetric
    /// one formed on and right of the diagonal and mirrored; then the identity
    /// on inactive coarse DoFs as in build()), the smoothers' block inverses
    /// and bounds, and the coarsest level's dense inverse (on the host: at
    /// most coarse_dofs DoFs). The near-null space is the build's (positions
    /// at the build). The stale time summed so far starts again from zero;
    /// the reference iterations stay the build's.
    /// @return false when a product leaves the kept pattern or a level is not
    ///         positive definite (then the caller rebuilds)
    /// `every_row`: the square levels recompute every row whatever
    /// refresh_tolerance says (a new filter changes Â where no value moved).
    /// A refresh by rows mixes rows of Â taken at different times (those
    /// that drifted less than the tolerance keep their old values), and that
    /// mix need not be positive definite: where a level's line factors then
    /// fail, the refresh is done again with every row (exact Galerkin
    /// products, positive definite), counted by by_rows_retries(), before
    /// the caller resorts to a build.
    bool refresh_values(const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs, bool every_row,
                        bool renew = false)
    {
        using namespace multilevel_detail;
        const bool asked = m_refresh_requested;
        m_refresh_requested = false;
        m_ready = false;
        bool ok = prepare_fine(a, free_dofs);
        // The refresh's price: what it adds to a prepare (which always
        // renews the finest level), the coarse levels' products and inverses.
        const auto start = std::chrono::steady_clock::now();
        if (ok) {
            bool by_rows_failed = false;
            ok = refresh_coarse(a, free_dofs, every_row, by_rows_failed, renew);
            if (!ok && by_rows_failed && !renew) {
                m_by_rows_retries += 1;
                ok = refresh_coarse(a, free_dofs, true, by_rows_failed);
            }
        }
        m_last_refresh_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        m_refresh_seconds += m_last_refresh_seconds;
        if (!ok) return false;
        m_refreshes += 1;
        m_stale_seconds = 0.0;
        m_fresh_iterations = -1;
        m_fresh_stale_seconds = 0.0;
        m_solves_since_renewal = 0;
        m_checking_refresh = asked;
        return true;
    }

    /// refresh_values()'s coarse levels, in order: the square levels by rows
    /// unless `every_row`; `by_rows_failed` tells whether a level failed to
    /// factor or invert at or below a level refreshed by rows. @return false
    /// on the first level that fails (a product outside its pattern, a
    /// failed factor or inverse)
    bool refresh_coarse(const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs, bool every_row,
                        bool& by_rows_failed, bool renew = false)
    {
        using namespace multilevel_detail;
        by_rows_failed = false;
        bool mixed = false;      // a level so far was refreshed by rows
        if (m_coarse.empty()) {  // one level: the coarsest inverse is the finest matrix's
            const std::vector<std::uint8_t> free = to_host(free_dofs);
            return invert_coarsest(filtered_host_matrix(a, free), free);
        }
        for (std::size_t l = 0; l < m_coarse.size(); ++l) {
            CoarseLevel<T>& level = m_coarse[l];
            if (renew && !renew_prolongator(l, a, free_dofs)) return false;
            if (!level.block_product.empty()) {  // a square level: its Galerkin product in blocks, its line factors
                // By rows where the level keeps the values its rows were taken from.
                const bool by_rows =
                    !every_row && m_options.refresh_tolerance >= 0.0 &&
                    level.taken.size() == (l == 0 ? a.values() : m_coarse[l - 1].blocked.values()).size();
                int misses = 0;
                if (renew) {  // new tentatives: which coarse DoFs are active is decided again, as a build does
                    misses = galerkin_in_blocks(l, a, free_dofs);
                    level.free_dofs = to_device(active_dofs(diagonal_of_blocks(level.blocked)));
                    complete_in_blocks(level);
                } else {
                    misses = by_rows ? refresh_by_rows(l, a, free_dofs) : refresh_in_blocks(l, a, free_dofs);
                }
                if (!by_rows) take_every_row(l, a);
                mixed = mixed || by_rows;
                const thrust::device_vector<std::uint8_t>* changed = by_rows ? &level.changed : nullptr;
                if (misses != 0) return false;
                if (factor_lines(level.blocked, level.free_dofs, level.lines, level.factors, changed) != 0) {
                    by_rows_failed = mixed;
                    return false;
                }
                order_rows(level.blocked, level.lines, level.factors, nullptr, true, changed);
                continue;
            }
            if (level.product.rows() == 0 || level.product.rows() != level.prolongator.rows()) {
                return false;  // built without refresh
            }
            const int misses =
                l == 0 ? fixed_pattern_product(a, raw_pointer(free_dofs), level.prolongator, level.product)
                       : fixed_pattern_product(m_coarse[l - 1].matrix, nullptr, level.prolongator, level.product);
            if (misses != 0 ||
                fixed_pattern_product(level.restriction, nullptr, level.product, level.matrix, &level.mirror) != 0)
                return false;
            if (renew) {
                const HostMatrix<T> galerkin = to_host_csr(level.matrix);
                std::vector<T> diagonal(static_cast<std::size_t>(galerkin.rows()));
                for (Index r = 0; r < galerkin.rows(); ++r)
                    diagonal[static_cast<std::size_t>(r)] = galerkin.coeff(r, r);
                level.free_dofs = to_device(active_dofs(diagonal));
            }
            thrust::for_each(
                thrust::device, thrust::counting_iterator<Index>(0),
                thrust::counting_iterator<Index>(level.matrix.rows()),
                AddInactiveUnit<T>{raw_pointer(level.free_dofs), raw_pointer(level.matrix.row_ptr()),
                                   raw_pointer(level.matrix.col_idx()), raw_pointer(level.matrix.values())});
            const bool inverted = l + 1 < m_coarse.size()
                                      ? level.smoother.invert(level.matrix, level.free_dofs) == 0
                                      : invert_coarsest(to_host_csr(level.matrix), to_host(level.free_dofs));
            if (!inverted) {
                by_rows_failed = mixed;
                return false;
            }
            if (l + 1 < m_coarse.size()) level.smoother.bound(level.matrix, level.free_dofs);
        }
        return true;
    }

    /// A square level built as a refresh renews it (refreshes on): the
    /// prolongator P and restriction R in blocks, the structural block
    /// patterns of Â P and Pᵀ Â P, and Pᵀ Â P formed by the refresh's block
    /// products (galerkin_in_blocks) instead of two scalar products on the
    /// host; its inactive DoFs (a diagonal at most 1e-12 of the largest) get
    /// the identity (complete_in_blocks). Pushes the level; `coarse` receives
    /// its scalar copy on the host (every entry of every block: the next
    /// level's Â), `coarse_free` its active DoFs. The scalar copy on the
    /// device is made by build() only for the coarsest level's neighbour,
    /// the one level that reads it.
    void build_square_level_in_blocks(const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs,
                                      const multilevel_detail::HostMatrix<T>& prolongator,
                                      const multilevel_detail::HostMatrix<T>& restriction,
                                      const std::vector<multilevel_detail::YarnAggregate<T>>& coarse_yarn_level,
                                      multilevel_detail::HostMatrix<T>& coarse, std::vector<std::uint8_t>& coarse_free,
                                      std::vector<Index>& transpose)
    {
        using namespace multilevel_detail;
        constexpr int N = square_modes;
        const int above = m_coarse.empty() ? B : N;
        CoarseLevel<T> level;
        const BlockPattern p_pattern = scalar_block_pattern(prolongator, above, N);
        const BlockPattern r_pattern = scalar_block_pattern(restriction, N, above);
        level.block_prolongator = BlockCsr<T>(p_pattern, above, N, &prolongator);
        level.block_restriction = BlockCsr<T>(r_pattern, N, above, &restriction);
        transpose = transposed_block_positions(p_pattern, r_pattern);
        const BlockPattern c_pattern =
            block_pattern_product(m_coarse.empty() ? pattern_of(a) : pattern_of(m_coarse.back().blocked), p_pattern);
        BlockPattern pattern = block_pattern_product(r_pattern, c_pattern);
        with_diagonal_blocks(pattern);  // where the identity of an inactive aggregate goes
        level.block_product = BlockCsr<T>(c_pattern, above, N);
        level.block_mirror = to_device(block_symmetric_mirror(pattern));
        level.blocked.assign_trusted_pattern(pattern.block_rows, pattern.block_cols, to_device(pattern.row_ptr),
                                             to_device(pattern.col_idx));
        level.dofs = pattern.block_rows * N;
        m_coarse.push_back(std::move(level));
        multilevel_detail::CoarseLevel<T>& built = m_coarse.back();
        if (galerkin_in_blocks(m_coarse.size() - 1, a, free_dofs) > 0) {
            throw std::logic_error(
                "MultilevelPreconditioner::build: a Galerkin block product fell outside its "
                "structural pattern");
        }
        // The diagonal as the products left it: the active DoFs, as the scalar build chose them.
        coarse_free = active_dofs(diagonal_of_blocks(built.blocked));
        built.free_dofs = to_device(coarse_free);
        complete_in_blocks(built);  // no scalar copy on the device: build() makes the one that is read
        Index nonzeros = 0;
        {
            const HostView<T> values(built.blocked.values());
            assign_by_swap(coarse, scalar_copy_of_blocks<T, N>(pattern, values.data(), nonzeros));
        }
        built.scalar_entries = static_cast<double>(nonzeros);
        built.square_lines = square_lines(coarse_yarn_level);
        built.by_lines = true;
    }

    /// Level l's coarse matrix Pᵀ Â P for the current values in blocks (a
    /// square level: BlockFixedPatternProduct, with Â the finest matrix under
    /// the filter `free_dofs` or the level above's blocked copy), completed
    /// by CompleteBlockGalerkin, and its scalar copy (where it keeps one)
    /// gathered from the blocks. Returns the products that fell outside the
    /// kept patterns.
    int refresh_in_blocks(std::size_t l, const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs)
    {
        const int misses = galerkin_in_blocks(l, a, free_dofs);
        complete_in_blocks(m_coarse[l]);
        return misses;
    }

    /// Square level l's refresh by rows (MultilevelOptions::refresh_tolerance;
    /// "Refresh by rows" in the file comment): the rows of Â that moved
    /// beyond the tolerance since they were last taken (TakeMovedRow, which
    /// takes them), their rows of Â P, the rows of Pᵀ Â P that sum those
    /// (RowsReached), their completion and mirrors, and the rows whose values
    /// that changes (RowsChanged: level.changed, for the line factors and the
    /// line-ordered copy). Returns the products that fell outside the kept
    /// patterns.
    int refresh_by_rows(std::size_t l, const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs)
    {
        using namespace multilevel_detail;
        CoarseLevel<T>& level = m_coarse[l];
        const auto take = [&](const auto& above, const T* scale) {
            constexpr int K = std::decay_t<decltype(above)>::block_size;
            const Index rows = above.block_rows();
            level.moved.resize(static_cast<std::size_t>(rows));
            thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                             thrust::counting_iterator<Index>(rows),
                             TakeMovedRow<T, K>{arrays_of(above), raw_pointer(level.taken), scale,
                                                static_cast<T>(m_options.refresh_tolerance), raw_pointer(level.moved)});
        };
        if (l == 0) {
            take(a, fine_scale(a));  // shared with the finest line factors by rows
        } else {
            const auto& above = m_coarse[l - 1].blocked;
            constexpr int K = std::decay_t<decltype(above)>::block_size;
            level.scale.resize(static_cast<std::size_t>(above.block_rows()) * K);
            thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                             thrust::counting_iterator<Index>(above.block_rows()),
                             DiagonalScale<T, K>{arrays_of(above), raw_pointer(level.scale)});
            take(above, raw_pointer(level.scale));
        }
        const Index rows = level.blocked.block_rows();
        level.reached.resize(static_cast<std::size_t>(rows));
        level.changed.resize(static_cast<std::size_t>(rows));
        const Index reached = thrust::transform_reduce(
            thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(rows),
            RowsReached{raw_pointer(level.block_restriction.row_ptr), raw_pointer(level.block_restriction.col_idx),
                        raw_pointer(level.moved), raw_pointer(level.reached)},
            Index(0), thrust::plus<Index>{});
        thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(rows),
                         RowsChanged{raw_pointer(level.blocked.row_ptr()), raw_pointer(level.blocked.col_idx()),
                                     raw_pointer(level.reached), raw_pointer(level.changed)});
        const int misses = galerkin_in_blocks(l, a, free_dofs, raw_pointer(level.moved), raw_pointer(level.reached));
        complete_in_blocks(level, raw_pointer(level.reached));
        if (l == 0) {
            m_rows_reached += static_cast<double>(reached);
            m_rows_refreshable += static_cast<double>(rows);
        }
        return misses;
    }

    /// Square level l keeps Â's current values as the ones its rows were
    /// taken from (a refresh by rows compares with them), or none where
    /// refresh_tolerance is negative or refreshes are off.
    void take_every_row(std::size_t l, const BsrMatrix<T, B>& a)
    {
        multilevel_detail::CoarseLevel<T>& level = m_coarse[l];
        if (m_options.refresh_tolerance < 0.0 || m_options.refresh == MultilevelRefresh::off) {
            level.taken.clear();
            level.taken.shrink_to_fit();
            return;
        }
        level.taken = l == 0 ? a.values() : m_coarse[l - 1].blocked.values();
    }

    /// Level l's Â P and the blocks of Pᵀ (Â P) on and right of the
    /// diagonal (BlockFixedPatternProduct into the kept patterns), with Â the
    /// finest matrix under the filter `free_dofs` or the level above's
    /// blocked copy. Returns the products that fell outside the patterns.
    /// With `rows_taken` (per row of Â) and `rows_reached` (per row of the
    /// level), only those rows of Â P and of Pᵀ Â P (refresh_by_rows).
    int galerkin_in_blocks(std::size_t l, const BsrMatrix<T, B>& a,
                           const thrust::device_vector<std::uint8_t>& free_dofs,
                           const std::uint8_t* rows_taken = nullptr, const std::uint8_t* rows_reached = nullptr)
    {
        using namespace multilevel_detail;
        constexpr int N = square_modes;
        CoarseLevel<T>& level = m_coarse[l];
        BlockCsr<T>& c = level.block_product;
        BsrMatrix<T, N>& galerkin = level.blocked;
        const auto product = [&](auto above, const BlockArrays<T>& matrix, const std::uint8_t* filter) {
            constexpr int K = decltype(above)::value;
            int misses = block_fixed_pattern_product<T, K, K, N>(
                c.block_rows(), matrix, filter, arrays_of(level.block_prolongator), raw_pointer(c.row_ptr),
                raw_pointer(c.col_idx), raw_pointer(c.values), false, rows_taken);
            misses += block_fixed_pattern_product<T, N, K, N>(galerkin.block_rows(), arrays_of(level.block_restriction),
                                                              nullptr, arrays_of(c), raw_pointer(galerkin.row_ptr()),
                                                              raw_pointer(galerkin.col_idx()),
                                                              raw_pointer(galerkin.values()), true, rows_reached);
            return misses;
        };
        return l == 0 ? product(std::integral_constant<int, B>{}, arrays_of(a), raw_pointer(free_dofs))
                      : product(std::integral_constant<int, N>{}, arrays_of(m_coarse[l - 1].blocked), nullptr);
    }

    /// A square level's Galerkin blocks completed (CompleteBlockGalerkin: the
    /// blocks left of the diagonal mirrored, the identity on inactive DoFs),
    /// and its scalar copy (where it keeps one) gathered from them.
    void complete_in_blocks(multilevel_detail::CoarseLevel<T>& level, const std::uint8_t* reached = nullptr)
    {
        using namespace multilevel_detail;
        constexpr int N = square_modes;
        BsrMatrix<T, N>& galerkin = level.blocked;
        thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                         thrust::counting_iterator<Index>(galerkin.block_rows()),
                         CompleteBlockGalerkin<T, N>{raw_pointer(galerkin.row_ptr()), raw_pointer(galerkin.col_idx()),
                                                     raw_pointer(level.block_mirror), raw_pointer(level.free_dofs),
                                                     raw_pointer(galerkin.values()), reached});
        if (!level.block_position.empty()) {  // the scalar copy, where the level keeps one
            thrust::gather(thrust::device, level.block_position.begin(), level.block_position.end(),
                           galerkin.values().begin(), level.matrix.values().begin());
        }
    }

    /// The finest level's smoother for the current matrix: its block
    /// inverses and Chebyshev bound, or with yarn-line smoothing the coloured
    /// lines (coloured again after a build, or when the given lines changed)
    /// and their factors. false where a block or a line is not positive definite.
    bool prepare_fine(const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs)
    {
        m_fine_scale_current = false;  // a new A
        if (single_precision()) bsr_detail::round_to_float(a.values(), m_values_single);
        if (!line_smoothing()) {
            if (m_fine.invert(a, free_dofs) > 0) return false;
            m_fine.bound(a, free_dofs);
            return true;
        }
        m_fine.resize(static_cast<std::size_t>(a.rows()));
        // A new pattern means a build, which colours the lines again
        // (m_colored false): without that, the line-ordered copy's pattern stays.
        const bool recolor = !m_colored || m_colored_line_ptr != m_lines->host_line_ptr() ||
                             m_colored_line_nodes != m_lines->host_line_nodes();
        if (recolor) {
            m_ordered_pattern = false;
            // The yarns' band widened where EIL nodes couple a yarn's nodes
            // further apart than bending does, rather than the yarn cut there
            // (benchmarks/RESULTS.md, "Yarn lines widened to their couplings").
            m_colored_lines = colored_line_set(a, *m_lines, max_line_bandwidth);
            m_colored_line_ptr = m_lines->host_line_ptr();
            m_colored_line_nodes = m_lines->host_line_nodes();
            m_colored = true;
        }
        if (!factor_fine_lines(a, free_dofs, recolor)) return false;
        if (single_precision()) m_line_factors.round_to_float();
        if (order_rows(a, m_colored_lines, m_line_factors, single_precision() ? &m_values_single : nullptr,
                       m_ordered_pattern))
            m_ordered_pattern = true;
        return true;
    }

    /// The finest level's line factors for `a` (see "Line factors by rows"
    /// in the file comment): every line after a build, a recolouring, a new
    /// filter or a failed factorization, or where line_factor_tolerance is
    /// not positive; otherwise only the lines with a node whose row moved
    /// beyond the tolerance since it was last taken. false where a line's
    /// pivot is not positive definite (the next call factors every line).
    bool factor_fine_lines(const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs, bool recolor)
    {
        using namespace multilevel_detail;
        const double tolerance = m_options.line_factor_tolerance;
        const Index lines = m_colored_lines.line_count();
        // m_fine_taken is kept only while the factors are of it (forget_fine_taken
        // on every failure): a copy of A's size means factors to keep by rows.
        const bool keeping = tolerance > 0.0 && !m_keep_no_line_factors;
        const bool by_rows = keeping && !recolor && !m_factor_every_line && m_fine_taken.size() == a.values().size() &&
                             m_fine_free.size() == free_dofs.size() &&
                             thrust::equal(thrust::device, free_dofs.begin(), free_dofs.end(), m_fine_free.begin());
        m_fine_kept = false;
        m_fine_lines_seen += static_cast<double>(lines);
        if (!by_rows) {
            m_fine_lines_factored += static_cast<double>(lines);
            const bool factored = factor_lines(a, free_dofs, m_colored_lines, m_line_factors) == 0;
            if (factored && keeping) {
                bsr_detail::round_to_float(a.values(), m_fine_taken);
                m_fine_free = free_dofs;
            } else {
                forget_fine_taken(!keeping);
            }
            return factored;
        }
        const Index rows = a.block_rows();
        m_fine_moved.resize(static_cast<std::size_t>(rows));
        thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(rows),
                         TakeMovedRow<T, B, float>{arrays_of(a), raw_pointer(m_fine_taken), fine_scale(a),
                                                   static_cast<T>(tolerance), raw_pointer(m_fine_moved)});
        const Index marked = thrust::transform_reduce(
            thrust::device, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(lines),
            LineMarked{raw_pointer(m_colored_lines.line_ptr()), raw_pointer(m_colored_lines.line_nodes()),
                       raw_pointer(m_fine_moved)},
            Index(0), thrust::plus<Index>{});
        m_fine_lines_factored += static_cast<double>(marked);
        if (marked > 0 && factor_lines(a, free_dofs, m_colored_lines, m_line_factors, &m_fine_moved) > 0) {
            forget_fine_taken(false);
            return false;
        }
        m_fine_kept = marked < lines;
        return true;
    }

    /// No row taken: the next prepare factors every line. `release`: the
    /// copy's memory too (where no prepare will keep one).
    void forget_fine_taken(bool release)
    {
        m_fine_taken.clear();
        if (release) m_fine_taken.shrink_to_fit();
    }

    /// DiagonalScale of the finest matrix `a` of this prepare, computed once
    /// for the line factors by rows and the first coarse level's refresh by
    /// rows (prepare_fine marks it stale at each prepare).
    const T* fine_scale(const BsrMatrix<T, B>& a)
    {
        using namespace multilevel_detail;
        if (!m_fine_scale_current) {
            const Index rows = a.block_rows();
            m_fine_scale.resize(static_cast<std::size_t>(rows) * B);
            thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                             thrust::counting_iterator<Index>(rows),
                             DiagonalScale<T, B>{arrays_of(a), raw_pointer(m_fine_scale)});
            m_fine_scale_current = true;
        }
        return raw_pointer(m_fine_scale);
    }

    /// After a level's factor_lines (the finest level's at each prepare, a
    /// square level's at its build and each refresh): on CPU threads where
    /// line_ordered_rows is set, the rows of its lines across the node order
    /// (the weft yarns; the columns of squares) copied in line order
    /// (order_line_rows), which its sweeps then read, so that each sweep
    /// thread streams its line's rows (benchmarks/RESULTS.md "Line-ordered
    /// rows", "Line-ordered rows on the square levels"). Not on a GPU: there
    /// neighbouring threads sweep neighbouring lines, whose rows at one
    /// entry are neighbours in A and coalesce; in the copy they would lie a
    /// line's rows apart. `pattern_kept`: the copy's pattern is the level's
    /// current one, so only the values are rewritten.
    /// @return whether the copy was made
    template <int K>
    bool order_rows(const BsrMatrix<T, K>& a, const LineSet& lines, LineFactors<T, K>& factors,
                    const thrust::device_vector<float>* single_values, bool pattern_kept,
                    const thrust::device_vector<std::uint8_t>* changed_nodes = nullptr) const
    {
        if constexpr (!backend_is_cuda()) {
            if (m_options.line_ordered_rows) {
                order_line_rows(a, lines, factors, single_values, pattern_kept, changed_nodes);
                return true;
            }
        }
        return false;
    }

    /// The finest level's line smoother: before the coarse correction
    /// (`pre`, from z = 0) a forward block Gauss–Seidel sweep over the
    /// coloured line families, after it the backward sweep (sweep_lines).
    void smooth_lines(const BsrMatrix<T, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs,
                      multilevel_detail::Smoother<T, B>& s, bool pre, bool single)
    {
        sweep_lines(a, free_dofs, m_colored_lines, m_line_factors, s.r, s.z, pre, pre,
                    single ? &m_values_single : nullptr);
    }

    /// The dense inverse of the coarsest level (of the free DoFs; zero
    /// elsewhere), stored as a dense CSR matrix.
    bool invert_coarsest(const multilevel_detail::HostMatrix<T>& a, const std::vector<std::uint8_t>& free)
    {
        std::vector<Index> alive;
        for (Index r = 0; r < a.rows(); ++r) {
            if (free[static_cast<std::size_t>(r)]) alive.push_back(r);
        }
        const Index n = static_cast<Index>(alive.size());
        std::vector<Index> position(static_cast<std::size_t>(a.rows()), Index(-1));
        for (Index i = 0; i < n; ++i) position[static_cast<std::size_t>(alive[static_cast<std::size_t>(i)])] = i;
        const std::size_t size = static_cast<std::size_t>(n);
        std::vector<T> dense(size * size, T(0)), inverse;
        for (Index r = 0; r < a.rows(); ++r) {
            if (position[static_cast<std::size_t>(r)] < 0) continue;
            for (typename multilevel_detail::HostMatrix<T>::InnerIterator it(a, r); it; ++it) {
                const Index c = position[static_cast<std::size_t>(it.col())];
                if (c >= 0)
                    dense[static_cast<std::size_t>(position[static_cast<std::size_t>(r)]) * size + c] = it.value();
            }
        }
        if (!multilevel_detail::spd_inverse(dense, size, inverse)) return false;
        std::vector<Index> row_ptr(static_cast<std::size_t>(a.rows()) + 1, 0);
        std::vector<Index> col_idx;
        std::vector<T> values;
        col_idx.reserve(static_cast<std::size_t>(n) * n);
        values.reserve(static_cast<std::size_t>(n) * n);
        for (Index r = 0; r < a.rows(); ++r) {
            const Index i = position[static_cast<std::size_t>(r)];
            if (i >= 0) {
                for (Index j = 0; j < n; ++j) {
                    col_idx.push_back(alive[static_cast<std::size_t>(j)]);
                    values.push_back(inverse[static_cast<std::size_t>(i) * size + j]);
                }
            }
            row_ptr[static_cast<std::size_t>(r) + 1] = static_cast<Index>(col_idx.size());
        }
        m_coarsest_inverse =
            BsrMatrix<T, 1>(static_cast<Index>(a.rows()), static_cast<Index>(a.cols()), row_ptr, col_idx, values);
        m_coarsest_rhs.resize(static_cast<std::size_t>(a.rows()));
        m_coarsest_solution.resize(static_cast<std::size_t>(a.rows()));
        return true;
    }

    /// Whether a slow solve renews by a refresh (MultilevelRefresh::on_growth):
    /// no refresh since the last build failed to help, and the coarse levels
    /// are not kept from another pattern, whose patterns a refresh cannot fill.
    bool refreshes_known_to_help() const
    {
        return m_options.refresh == MultilevelRefresh::on_growth && m_refresh_helps && !m_kept_pattern;
    }

    /// Whether the finest level's products use the float copy of its values.
    bool single_precision() const { return m_options.single_precision_matrix && !std::is_same<T, float>::value; }

    /// One level of the V-cycle: z ≈ Â⁻¹ r, with `coarse` the index of the next
    /// coarser level in m_coarse (its restriction and prolongator connect the
    /// two). The finest level's products use the float copy of its values
    /// where MultilevelOptions::single_precision_matrix asks for it.
    template <int BB>
    void cycle(const BsrMatrix<T, BB>& a, const thrust::device_vector<std::uint8_t>& free_dofs,
               multilevel_detail::Smoother<T, BB>& s, std::size_t coarse)
    {
        if constexpr (BB == B) {
            if (coarse == 0 && single_precision()) {
                cycle_with(a, a.view_with(m_values_single), free_dofs, s, coarse);
                return;
            }
        }
        cycle_with(a, a.view(), free_dofs, s, coarse);
    }

    /// cycle() with the level's products taken through `view` (Â's values as TA).
    template <int BB, typename TA>
    void cycle_with(const BsrMatrix<T, BB>& a, const BsrConstView<TA, BB>& view,
                    const thrust::device_vector<std::uint8_t>& free_dofs, multilevel_detail::Smoother<T, BB>& s,
                    std::size_t coarse)
    {
        using namespace multilevel_detail;
        const VisitClock clock(m_visit_seconds, coarse);
        const int degree = m_options.smoother_degree;
        const T ratio = static_cast<T>(m_options.smoother_ratio);
        const auto smooth = [&](bool zero_start) {
            if constexpr (BB == B) {
                if (line_smoothing()) {
                    smooth_lines(a, free_dofs, s, zero_start, !std::is_same<TA, T>::value);
                    return;
                }
            }
            if constexpr (BB == 1) {
                if (coarse > 0 && m_coarse[coarse - 1].by_lines) {  // a square level: lines of squares
                    CoarseLevel<T>& self = m_coarse[coarse - 1];
                    sweep_lines(self.blocked, free_dofs, self.lines, self.factors, s.r, s.z, zero_start, zero_start);
                    return;
                }
            }
            s.smooth(view, free_dofs, s.r, s.z, zero_start, degree, ratio);
        };
        smooth(true);
        if (coarse < m_coarse.size()) {
            bool blocked = false;
            if constexpr (BB == 1) {
                if (coarse > 0 && m_coarse[coarse - 1].by_lines) {
                    coarse_residual(m_coarse[coarse - 1], s.r, s.z, s.residual);
                    blocked = true;
                }
            }
            if (!blocked) {
                thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                                 thrust::counting_iterator<Index>(a.block_rows()),
                                 bsr_detail::FilteredResidual<T, BB, TA>{view, raw_pointer(free_dofs), raw_pointer(s.r),
                                                                         raw_pointer(s.z), raw_pointer(s.residual)});
            }
            CoarseLevel<T>& next = m_coarse[coarse];
            const bool last = coarse + 1 == m_coarse.size();
            thrust::device_vector<T>& next_r = last ? m_coarsest_rhs : next.smoother.r;
            thrust::device_vector<T>& next_z = last ? m_coarsest_solution : next.smoother.z;
            restrict_to(coarse, s.residual, next_r);
            if (last) {
                const VisitClock coarsest(m_visit_seconds, coarse + 1);
                spmv(m_coarsest_inverse, next_r, next_z);
            } else {
                cycle<1>(next.matrix, next.free_dofs, next.smoother, coarse + 1);
                if (m_options.cycle == MultilevelCycle::w) {
                    // W-cycle: the level again, on the residual its first cycle left; the sum of the two.
                    next.cycle_rhs.resize(next_r.size());
                    next.cycle_sum.resize(next_z.size());
                    thrust::copy(thrust::device, next_r.begin(), next_r.end(), next.cycle_rhs.begin());
                    thrust::copy(thrust::device, next_z.begin(), next_z.end(), next.cycle_sum.begin());
                    coarse_residual(next, next.cycle_rhs, next.cycle_sum, next_r);
                    cycle<1>(next.matrix, next.free_dofs, next.smoother, coarse + 1);
                    thrust::transform(thrust::device, next_z.begin(), next_z.end(), next.cycle_sum.begin(),
                                      next_z.begin(), thrust::plus<T>{});
                }
            }
            // The correction on the free DoFs only: after a filter change the
            // kept prolongator may have rows on DoFs now constrained.
            add_prolonged(coarse, next_z, s.z, coarse == 0 ? raw_pointer(free_dofs) : nullptr);
        }
        smooth(false);
    }

    /// r_coarse = R r for coarse level `coarse` (index into m_coarse): in
    /// blocks on a square level, else the scalar restriction.
    void restrict_to(std::size_t coarse, const thrust::device_vector<T>& r, thrust::device_vector<T>& r_coarse)
    {
        using namespace multilevel_detail;
        const CoarseLevel<T>& level = m_coarse[coarse];
        if (level.block_restriction.empty()) {
            spmv(level.restriction, r, r_coarse);
            return;
        }
        r_coarse.resize(static_cast<std::size_t>(level.dofs));
        for_each_block_row(coarse, level.block_restriction, [&](auto above) {
            return BlockRowApply<T, square_modes, decltype(above)::value>{
                arrays_of(level.block_restriction), raw_pointer(r), raw_pointer(r_coarse), nullptr, false};
        });
    }

    /// z += P z_coarse for coarse level `coarse` on the rows `free_dofs`
    /// marks free (nullptr: all): in blocks on a square level, else the
    /// scalar prolongator.
    void add_prolonged(std::size_t coarse, const thrust::device_vector<T>& z_coarse, thrust::device_vector<T>& z,
                       const std::uint8_t* free_dofs)
    {
        using namespace multilevel_detail;
        const CoarseLevel<T>& level = m_coarse[coarse];
        if (level.block_prolongator.empty()) {
            thrust::for_each(
                thrust::device, thrust::counting_iterator<Index>(0),
                thrust::counting_iterator<Index>(level.prolongator.rows()),
                AddRowProduct<T>{level.prolongator.view(), raw_pointer(z_coarse), raw_pointer(z), free_dofs});
            return;
        }
        for_each_block_row(coarse, level.block_prolongator, [&](auto above) {
            return BlockRowApply<T, decltype(above)::value, square_modes>{
                arrays_of(level.block_prolongator), raw_pointer(z_coarse), raw_pointer(z), free_dofs, true};
        });
    }

    /// thrust::for_each over the block rows of `m` with the functor that
    /// `make` returns for the block size of the level above coarse level
    /// `coarse` (B above the first coarse level, square_modes below it), given
    /// as std::integral_constant.
    template <typename Make>
    static void for_each_block_row(std::size_t coarse, const multilevel_detail::BlockCsr<T>& m, Make make)
    {
        const auto run = [&](auto f) {
            thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                             thrust::counting_iterator<Index>(m.block_rows()), f);
        };
        if (coarse == 0) {
            run(make(std::integral_constant<int, B>{}));
        } else {
            run(make(std::integral_constant<int, multilevel_detail::square_modes>{}));
        }
    }

    /// residual = S (r − A_l z) on a coarse level, from its blocked copy
    /// where it has one (a square level: K × K blocks, the same sums in the
    /// same column order as the scalar rows, which it reads in fewer bytes).
    static void coarse_residual(const multilevel_detail::CoarseLevel<T>& level, const thrust::device_vector<T>& r,
                                const thrust::device_vector<T>& z, thrust::device_vector<T>& residual)
    {
        using multilevel_detail::square_modes;
        if (level.by_lines) {
            thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                             thrust::counting_iterator<Index>(level.blocked.block_rows()),
                             bsr_detail::FilteredResidual<T, square_modes, T>{
                                 level.blocked.view(), raw_pointer(level.free_dofs), raw_pointer(r), raw_pointer(z),
                                 raw_pointer(residual)});
            return;
        }
        thrust::for_each(thrust::device, thrust::counting_iterator<Index>(0),
                         thrust::counting_iterator<Index>(level.matrix.rows()),
                         bsr_detail::FilteredResidual<T, 1, T>{level.matrix.view(), raw_pointer(level.free_dofs),
                                                               raw_pointer(r), raw_pointer(z), raw_pointer(residual)});
    }

    /// Adds the seconds of one visit of level `level` to seconds[level]
    /// (inclusive of the levels below it) when it goes out of scope.
    class VisitClock {
    public:
        VisitClock(std::vector<double>& seconds, std::size_t level) : m_seconds(seconds), m_level(level)
        {
            if (m_seconds.size() <= level) m_seconds.resize(level + 1, 0.0);
        }
        VisitClock(const VisitClock&) = delete;
        VisitClock& operator=(const VisitClock&) = delete;
        ~VisitClock()
        {
            m_seconds[m_level] += std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
        }

    private:
        std::vector<double>& m_seconds;
        std::size_t m_level;
        std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
    };

    void cycle_fine()
    {
        if (m_coarse.empty()) {
            // One level: the coarsest inverse is the finest matrix's.
            const VisitClock only(m_visit_seconds, 0);
            spmv(m_coarsest_inverse, m_fine.r, m_fine.z);
            return;
        }
        cycle<B>(*m_matrix, *m_free, m_fine, 0);
    }

    /// apply_level(level) as a PreconditionerOperator (level_slowest_modes).
    class LevelCycle : public PreconditionerOperator<T> {
    public:
        LevelCycle(MultilevelPreconditioner& owner, std::size_t level) : m_owner(owner), m_level(level) {}
        void apply(const thrust::device_vector<T>& r, thrust::device_vector<T>& z) override
        {
            m_owner.apply_level(m_level, r, z);
        }

    private:
        MultilevelPreconditioner& m_owner;
        std::size_t m_level;
    };

    MultilevelOptions m_options;
    const BsrMatrix<T, B>* m_matrix = nullptr;
    const thrust::device_vector<std::uint8_t>* m_free = nullptr;
    const thrust::device_vector<T>* m_state = nullptr;  ///< the last prepare()'s state (retake_exact())
    multilevel_detail::Smoother<T, B> m_fine;
    const LineSet* m_lines = nullptr;  ///< set_lines(): the yarns, for MultilevelSmoother::yarn_lines
    LineSet m_colored_lines;           ///< m_lines coloured for the matrix's pattern (colored_line_set)
    bool m_colored = false;            ///< m_colored_lines is for the current pattern and the lines below
    bool m_ordered_pattern = false;    ///< m_line_factors' line-ordered rows have the current pattern
    std::vector<Index> m_colored_line_ptr, m_colored_line_nodes;  ///< the lines it was coloured from
    LineFactors<T, B> m_line_factors;
    thrust::device_vector<float> m_values_single;  ///< the finest matrix's values as float (single_precision())
    std::vector<multilevel_detail::CoarseLevel<T>> m_coarse;
    BsrMatrix<T, 1> m_coarsest_inverse;
    thrust::device_vector<T> m_coarsest_rhs, m_coarsest_solution;
    thrust::device_vector<Index> m_pattern_rows, m_pattern_cols;
    thrust::device_vector<std::uint8_t> m_pattern_free;
    bool m_built = false;
    bool m_ready = false;
    bool m_rebuild_requested = false;
    bool m_refresh_requested = false;
    bool m_checking_refresh = false;  ///< the next solve is the first after a growth refresh
    bool m_refresh_helps = true;      ///< false after a growth refresh that left the solves slow
    int m_refreshes = 0;
    int m_growth_refreshes = 0;
    int m_filter_refreshes = 0;
    int m_by_rows_retries = 0;
    int m_pattern_keeps = 0;
    // Exact retakes (MultilevelOptions::exact_ritz_bound).
    bool m_exact_requested = false;    ///< the next prepare takes every row
    bool m_exact_components = false;   ///< the last prepare left no row or line factor of an older matrix
    bool m_factor_every_line = false;  ///< factor_fine_lines factors every line (an exact retake)
    double m_last_ritz_max = 0.0;      ///< record_spectrum(): the last solve's, 0 when not estimated
    int m_exact_retakes = 0;
    bool m_kept_pattern = false;  ///< the coarse levels were kept across a pattern or filter change
    double m_refresh_seconds = 0.0;
    long m_cycles = 0;                    ///< apply() calls (cycles())
    std::vector<double> m_visit_seconds;  ///< per level, inclusive of the levels below (level_cycle_seconds())
    double m_last_refresh_seconds = -1.0;
    double m_rows_reached = 0.0;      ///< refreshed_row_share(): rows the refreshes by rows recomputed
    double m_rows_refreshable = 0.0;  ///< and the rows of the first coarse level at each of them
    // The finest level's line factors by rows (factor_fine_lines).
    thrust::device_vector<float> m_fine_taken;         ///< A's values as each row was last taken
    thrust::device_vector<std::uint8_t> m_fine_free;   ///< the filter the line factors are of
    thrust::device_vector<T> m_fine_scale;             ///< DiagonalScale of the current A
    thrust::device_vector<std::uint8_t> m_fine_moved;  ///< #nodes: rows that moved, whose lines are factored
    bool m_fine_scale_current = false;                 ///< m_fine_scale is of this prepare's A (fine_scale())
    bool m_fine_kept = false;                          ///< kept_line_factors()
    bool m_keep_no_line_factors = false;               ///< set by factor_kept_lines(): every line at every prepare
    int m_line_factor_fallbacks = 0;                   ///< line_factor_fallbacks()
    double m_fine_lines_factored = 0.0;                ///< line_refactor_share(): lines factored by the prepares
    double m_fine_lines_seen = 0.0;                    ///< and the lines at each of them
    int m_builds = 0;
    int m_pattern_builds = 0;
    int m_failure_builds = 0;
    int m_growth_builds = 0;
    double m_build_seconds = 0.0;
    double m_last_build_seconds = 0.0;
    double m_stale_seconds = 0.0;
    int m_first_iterations = -1;
    double m_fresh_stale_seconds = 0.0;  ///< the refresh rule's rent since the last build or refresh
    double m_aged_seconds = 0.0;         ///< aged_seconds()
    int m_aged_builds = 0;               ///< aged_builds()
    int m_age_price_builds = 1;          ///< age_price_builds()
    double m_aged_before = -1.0;         ///< mean of the fresh solves before the last aged build (-1: none)
    bool m_aged_requested = false;       ///< the next build is an aged build
    bool m_judging_aged_build = false;   ///< the fresh solves since the build judge it
    /// Renewals of the modes: what they keep of the build, whether the next prepare
    /// renews (the age asked for it), whether the last judged renewal
    /// lowered the iterations (else the age buys a build), whether the
    /// renewal is the one being judged, and counts and times.
    multilevel_detail::ModeRenewal<T> m_renewal;
    bool m_renew_requested = false;
    bool m_renewals_help = true;
    bool m_judging_renewal = false;
    int m_mode_renewals = 0;
    double m_renewal_seconds = 0.0;
    double m_last_renewal_seconds = -1.0;
    std::array<int, aged_judged_solves> m_recent_fresh{};  ///< the last fresh solves' iterations, a ring
    int m_recent_fresh_count = 0;                          ///< fresh solves in the ring since the build
    int m_recent_fresh_next = 0;                           ///< the ring's next slot
    int m_iterations_before_refresh = 0;                   ///< the solve that asked for the last growth refresh
    int m_fresh_iterations = -1;     ///< the first solve's iterations after the last build or refresh
    int m_solves_since_renewal = 0;  ///< timed solves since the last build or refresh
    static constexpr int min_probe_interval = 4;
    static constexpr int max_probe_interval = 32;
    bool m_ahead = false;          ///< the last drift measured cost more than a refresh (refreshing_ahead())
    bool m_probe_next = false;     ///< the next prepare() keeps the values, to measure the drift
    bool m_cheap_refresh = false;  ///< the last refresh cost less than one iteration of the last timed solve
    int m_ahead_solves = 0;        ///< fresh solves since refreshing ahead began or the last probe
    int m_probe_interval = min_probe_interval;
    int m_ahead_refreshes = 0;
};

/// Filtered PCG (solve_filtered_pcg) preconditioned by `m`, prepared for
/// `a` and `free_dofs`; a solve that fails with kept finest line factors
/// (MultilevelPreconditioner::kept_line_factors()) is redone from the same
/// start after every line is factored (factor_kept_lines()), and its
/// iterations are added to the failed solve's. The steppers solve this way.
/// @param[in,out] x        the start; on exit the solution (or the last iterate)
/// @param[in,out] start    a copy of the start, kept for a redone solve (resized)
/// @param[in]     options  PCG options; `custom` is set to &m
/// @return the (redone) solve's result
template <typename T, int B>
PcgResult<T> solve_filtered_pcg_multilevel(const BsrMatrix<T, B>& a, const thrust::device_vector<T>& b,
                                           const thrust::device_vector<std::uint8_t>& free_dofs,
                                           thrust::device_vector<T>& x, PcgWorkspace<T, B>& workspace,
                                           PcgOptions<T> options, MultilevelPreconditioner<T, B>& m,
                                           thrust::device_vector<T>& start)
{
    options.custom = &m;
    const bool asked = options.estimate_spectrum;
    options.estimate_spectrum = asked || m.options().exact_ritz_bound > 0.0;
    const bool kept = m.kept_line_factors();
    // A cycle with rows or line factors of older matrices stops at the first
    // Lanczos diagonal entry above the bound and is retaken at once.
    const bool retakable = m.retakable();
    if (retakable) options.ritz_stop = static_cast<T>(m.options().exact_ritz_bound);
    if (kept || retakable) start = x;
    PcgResult<T> result = solve_filtered_pcg(a, b, free_dofs, x, workspace, options);
    options.ritz_stop = T(0);
    if (result.status == PcgStatus::ritz_above_bound) {
        const int stopped_iterations = result.iterations;
        thrust::copy(thrust::device, start.begin(), start.end(), x.begin());
        if (!m.retake_exact()) {
            result.status = PcgStatus::indefinite_preconditioner;
            return result;
        }
        result = solve_filtered_pcg(a, b, free_dofs, x, workspace, options);
        result.iterations += stopped_iterations;
    } else if (!result.converged && kept && m.factor_kept_lines()) {
        const int failed_iterations = result.iterations;
        thrust::copy(thrust::device, start.begin(), start.end(), x.begin());
        result = solve_filtered_pcg(a, b, free_dofs, x, workspace, options);
        result.iterations += failed_iterations;
    }
    m.record_spectrum(result.spectrum_estimated ? static_cast<double>(result.ritz_max) : 0.0);
    if (!asked) {  // estimated for the exact retakes only: reported as not estimated
        result.spectrum_estimated = false;
        result.ritz_min = result.ritz_max = T(0);
    }
    return result;
}

}  // namespace weft
