#pragma once
/// @file bench_common.hpp
/// Helpers shared by the benchmarks: peak memory, timing and command-line
/// parsing. Parse errors are weft::InvalidInput, which main() prints.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <thrust/device_vector.h>
#include <thrust/transform.h>

#include <weft/backend/bsr_matrix.hpp>
#include <weft/backend/device.hpp>
#include <weft/backend/direct_solver.hpp>
#include <weft/backend/multilevel_preconditioner.hpp>
#include <weft/backend/pcg.hpp>
#include <weft/backend/slowest_mode.hpp>
#include <weft/core/config.hpp>
#include <weft/core/error.hpp>
#include <weft/core/solver_words.hpp>
#include <weft/core/version.hpp>

#include "../examples/cli_common.hpp"

#if THRUST_DEVICE_SYSTEM != THRUST_DEVICE_SYSTEM_CUDA
#include <omp.h>
#endif

namespace weft::bench {

/// STREAM's triad b + s c (stream_triad_gb_per_s).
struct Triad {
    double s;
    WEFT_HD double operator()(double b, double c) const { return b + s * c; }
};

/// The process high-water mark of resident memory (VmHWM, MB), or -1 where
/// /proc/self/status does not list it.
inline double peak_rss_mb()
{
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
    return -1;
}

/// Host threads the backend runs on (OpenMP), or 1 for the CUDA system,
/// whose work runs on the GPU.
inline int backend_threads()
{
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
    return 1;
#else
    return omp_get_max_threads();
#endif
}

/// Device memory in use now (MB), or -1 on CPU threads (see weft/backend/device.hpp).
inline double device_memory_in_use_mb()
{
    const double bytes = device_memory_in_use_bytes();
    return bytes < 0 ? -1 : bytes / (1024.0 * 1024.0);
}

/// A sparse matrix–vector product y = A x timed alone: the median of `repeats`
/// products, each synchronized, and the bandwidth it achieves over the fewest
/// bytes one product must move (every stored block value and column index,
/// the row pointers, x and y once each; a lower bound, so the rate is too).
struct SpmvTiming {
    double ms = 0;
    double gb_per_s = 0;
    double bytes = 0;
};

template <typename T, int B>
SpmvTiming time_spmv(const BsrMatrix<T, B>& a, int repeats)
{
    thrust::device_vector<T> x(static_cast<std::size_t>(a.cols()));
    thrust::device_vector<T> y(static_cast<std::size_t>(a.rows()));
    // A non-trivial x: 1 + (i mod 7) / 7.
    const std::vector<T> host = [&] {
        std::vector<T> v(x.size());
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = T(1) + T(i % 7) / T(7);
        return v;
    }();
    thrust::copy(host.begin(), host.end(), x.begin());
    spmv(a, x, y);  // warm-up
    device_synchronize();
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        spmv(a, x, y);
        device_synchronize();
        times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    SpmvTiming t;
    t.ms = times.empty() ? 0 : times[times.size() / 2];
    const double blocks = static_cast<double>(a.col_idx().size());
    t.bytes = blocks * (B * B * sizeof(T) + sizeof(Index)) + (a.block_rows() + 1.0) * sizeof(Index) +
              (static_cast<double>(a.cols()) + a.rows()) * sizeof(T);
    t.gb_per_s = t.ms > 0 ? t.bytes / (t.ms * 1e6) : 0;
    return t;
}

/// One OpenMP thread while in scope (the previous count restored after).
struct SingleThread {
#if THRUST_DEVICE_SYSTEM != THRUST_DEVICE_SYSTEM_CUDA
    int previous = omp_get_max_threads();
    SingleThread()
    {
        omp_set_num_threads(1);
    }
    ~SingleThread()
    {
        omp_set_num_threads(previous);
    }
#endif
};

/// The CHOLMOD baseline of a benchmark: each timed step's filtered system
/// (the stepper's matrix and right-hand side after its last solve) factorized
/// by CHOLMOD's supernodal Cholesky on the host, as `solver.linear:
/// "cholmod"` would. The symbolic analysis runs once per pattern and is timed
/// apart (`analysis_ms`); `ms` is the mean of the numerical factorization and
/// solve per step, with the matrix copied to the host and filtered.
/// CHOLMOD runs with one OpenMP thread (so one thread of an OpenMP BLAS such
/// as Debian's OpenBLAS): on the 2-core VM its supernodal factorization of a
/// 100² patch took 0.5–1.1 s with one BLAS thread and 12–16 s with two
/// (OpenBLAS, OpenMP and pthread builds alike; reference BLAS: 2.0 s), so one
/// thread is its fastest configuration there.
template <int B>
class CholmodBaseline {
public:
    /// `free`: the stepper's current filter (free_dofs()), which EIL tags
    /// and contacts may change from step to step.
    void solve(const BsrMatrix<double, B>& a, const thrust::device_vector<double>& rhs,
               const thrust::device_vector<std::uint8_t>& free)
    {
        SingleThread single;
        (void)single;
        m_x.resize(rhs.size());
        if (m_solver.analyses() == 0) {  // the analysis alone: a first solve, timed apart
            const auto t0 = std::chrono::steady_clock::now();
            m_solver.solve(a, rhs, free, m_x);
            m_analysis_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        }
        thrust::fill(m_x.begin(), m_x.end(), 0.0);
        const auto t0 = std::chrono::steady_clock::now();
        const PcgResult<double> r = m_solver.solve(a, rhs, free, m_x);
        m_total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (!r.converged) throw std::runtime_error(std::string("CHOLMOD baseline failed: ") + to_string(r.status));
        m_worst_residual = std::max(m_worst_residual, double(r.relative_residual));
        ++m_solves;
    }

    /// The JSON fields of this baseline (with a leading comma).
    std::string fields(double pcg_ms_per_step) const
    {
        std::ostringstream out;
        const double ms = m_solves > 0 ? m_total_ms / m_solves : 0;
        out << ", \"cholmod_ms\": " << ms << ", \"cholmod_analysis_ms\": " << m_analysis_ms
            << ", \"cholmod_analyses\": " << m_solver.analyses() << ", \"cholmod_worst_residual\": " << m_worst_residual
            << ", \"pcg_speedup_vs_cholmod\": " << (pcg_ms_per_step > 0 ? ms / pcg_ms_per_step : 0);
        return out.str();
    }

private:
    thrust::device_vector<double> m_x;
    CholmodSolver<double, B> m_solver;
    double m_analysis_ms = 0, m_total_ms = 0, m_worst_residual = 0;
    int m_solves = 0;
};

/// The machine's streaming bandwidth on the backend's device system, as
/// STREAM's triad measures it: a = b + s c over three arrays of n doubles
/// (32 M by default, 768 MB: far beyond any cache), 24 bytes moved per
/// element; the best of `repeats` runs, in GB/s. The ceiling the SpMV's
/// `spmv_gb_per_s` is compared with (benchmarks/RESULTS.md).
inline double stream_triad_gb_per_s(std::size_t n = std::size_t(1) << 25, int repeats = 10)
{
    thrust::device_vector<double> a(n, 0.0), b(n, 1.0), c(n, 2.0);
    double best_ms = 0;
    for (int r = 0; r < repeats; ++r) {
        device_synchronize();
        const auto t0 = std::chrono::steady_clock::now();
        thrust::transform(b.begin(), b.end(), c.begin(), a.begin(), Triad{3.0});
        device_synchronize();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (r == 0 || ms < best_ms) best_ms = ms;
    }
    return best_ms > 0 ? 24.0 * static_cast<double>(n) / (best_ms * 1e6) : 0;
}

/// Writes `values` as a NumPy .npy file (format 1.0, little-endian, one
/// dimension, or two with `columns` > 0): numpy.load reads it as it is.
/// @throws std::runtime_error naming the path when it cannot be written
template <typename V>
void write_npy(const std::string& path, const std::vector<V>& values, std::size_t columns = 0)
{
    static_assert(std::is_arithmetic_v<V>, "write_npy: numbers only");
    const char* descr = std::is_floating_point_v<V> ? (sizeof(V) == 8 ? "<f8" : "<f4")
                        : std::is_signed_v<V>       ? (sizeof(V) == 8   ? "<i8"
                                                       : sizeof(V) == 4 ? "<i4"
                                                                        : "|i1")
                                                    : (sizeof(V) == 8   ? "<u8"
                                                       : sizeof(V) == 4 ? "<u4"
                                                                        : "|u1");
    const std::string shape = columns > 0
                                  ? "(" + std::to_string(values.size() / columns) + ", " + std::to_string(columns) + ")"
                                  : "(" + std::to_string(values.size()) + ",)";
    std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    header.append(63 - (header.size() + 10) % 64, ' ');  // magic, version and length: 10 bytes; total % 64 == 0
    header += '\n';
    std::ofstream out(path, std::ios::binary);
    const std::uint16_t length = static_cast<std::uint16_t>(header.size());
    out.write("\x93NUMPY\x01\x00", 8);
    out.put(static_cast<char>(length & 0xff));
    out.put(static_cast<char>(length >> 8));
    out << header;
    out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(V)));
    if (!out) throw std::runtime_error("cannot write " + path);
}

/// Writes one linear system of a timed step as .npy files `prefix`_NAME.npy:
/// the BSR matrix (row_ptr, col_idx, values as blocks × B·B, row-major
/// blocks), rhs, free (1 for a free DoF: the filter of the solve) and
/// positions (the state q), so that
/// solvers can be studied outside weft (scipy.sparse.bsr_matrix((values
/// reshaped to blocks × B × B, col_idx, row_ptr))).
template <typename T, int B>
void write_system(const std::string& prefix, const BsrMatrix<T, B>& a, const thrust::device_vector<T>& rhs,
                  const std::vector<unsigned char>& free, const thrust::device_vector<T>& positions)
{
    write_npy(prefix + "_row_ptr.npy", to_host(a.row_ptr()));
    write_npy(prefix + "_col_idx.npy", to_host(a.col_idx()));
    write_npy(prefix + "_values.npy", to_host(a.values()), static_cast<std::size_t>(B * B));
    write_npy(prefix + "_rhs.npy", to_host(rhs));
    write_npy(prefix + "_free.npy", free);
    write_npy(prefix + "_positions.npy", to_host(positions), static_cast<std::size_t>(B));
}

/// Milliseconds elapsed since `start` on the steady clock.
inline double elapsed_ms(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

/// Writes a mode `x` (B DoFs per node) at the nodes' positions `q` as the
/// CSV of --slowest-mode; returns the node of the largest amplitude.
template <int B>
std::size_t write_mode_csv(const std::string& path, const std::vector<double>& x, const std::vector<double>& q)
{
    std::ofstream out(path);
    if (!out) throw std::runtime_error("--slowest-mode: cannot write " + path);
    out << "node,px,py,pz";
    for (int c = 0; c < B; ++c) out << ",d" << c;
    out << ",amplitude\n";
    out.precision(9);
    std::size_t peak = 0;
    double peak_amplitude = -1.0;
    const std::size_t nodes = x.size() / B;
    for (std::size_t i = 0; i < nodes; ++i) {
        double squares = 0.0;
        out << i << "," << q[B * i] << "," << q[B * i + 1] << "," << q[B * i + 2];
        for (std::size_t c = 0; c < static_cast<std::size_t>(B); ++c) {
            out << "," << x[B * i + c];
            squares += x[B * i + c] * x[B * i + c];
        }
        const double amplitude = std::sqrt(squares);
        out << "," << amplitude << "\n";
        if (amplitude > peak_amplitude) {
            peak_amplitude = amplitude;
            peak = i;
        }
    }
    if (!out) throw std::runtime_error("--slowest-mode: writing " + path + " failed");
    return peak;
}

/// --slowest-mode: the slowest mode (slowest_mode.hpp) of a multilevel
/// hierarchy built afresh, with `options`, for the last timed system (every
/// coarse row and line factor of its values: the design's own bound, without
/// the hierarchy's age), written to `path` (`prefix`.csv) as CSV with the
/// columns node, px, py, pz (the node's position), one column per DoF of the
/// mode (d0 … d{B−1}, positions first; with ‖x‖_A = 1), amplitude (the node's
/// Euclidean norm of them). Then the slowest mode of each cycled coarse
/// level's own cycle (MultilevelPreconditioner::level_slowest_modes),
/// prolonged to the nodes, to `prefix`_level`L`.csv in the same columns.
/// Returns the JSON fields slowest_mode_eigenvalue (λ_min of M⁻¹ A),
/// slowest_mode_iterations, slowest_mode_converged, slowest_mode_change,
/// slowest_mode_ms, slowest_mode_peak_position (the position of the node of
/// the largest amplitude), and per cycled coarse level, first coarse level
/// first: slowest_mode_level_eigenvalues, slowest_mode_level_iterations,
/// slowest_mode_level_converged, with slowest_mode_level_ms for them all.
/// @param lines  the yarns' lines (set_lines) or nullptr
template <int B>
std::string slowest_mode_fields(const BsrMatrix<double, B>& a, const thrust::device_vector<std::uint8_t>& free_dofs,
                                const thrust::device_vector<double>& state, const MultilevelOptions& options,
                                const LineSet* lines, const std::string& prefix, int max_iterations)
{
    MultilevelPreconditioner<double, B> fresh(options);
    if (lines != nullptr) fresh.set_lines(lines);
    if (!fresh.prepare(a, free_dofs, state)) {
        throw std::runtime_error("--slowest-mode: no hierarchy for the last system (not positive definite)");
    }
    SlowestModeOptions<double> mode_options;
    mode_options.max_iterations = max_iterations;
    const auto start = std::chrono::steady_clock::now();
    const SlowestMode<double> mode = slowest_mode(a, free_dofs, fresh, mode_options);
    const double ms = elapsed_ms(start);
    const std::vector<double> q = to_host(state);
    const std::size_t peak = write_mode_csv<B>(prefix + ".csv", to_host(mode.vector), q);
    std::ostringstream fields;
    fields << ", \"slowest_mode_eigenvalue\": " << mode.eigenvalue
           << ", \"slowest_mode_iterations\": " << mode.iterations
           << ", \"slowest_mode_converged\": " << (mode.converged ? "true" : "false")
           << ", \"slowest_mode_change\": " << mode.change << ", \"slowest_mode_ms\": " << ms
           << ", \"slowest_mode_peak_position\": [" << q[B * peak] << ", " << q[B * peak + 1] << ", " << q[B * peak + 2]
           << "]";
    // Each cycled coarse level's own cycle on its matrix: where the finest cycle loses.
    const auto levels_start = std::chrono::steady_clock::now();
    const std::vector<SlowestMode<double>> levels = fresh.level_slowest_modes(mode_options);
    const double levels_ms = elapsed_ms(levels_start);
    for (std::size_t l = 0; l < levels.size(); ++l) {
        write_mode_csv<B>(prefix + "_level" + std::to_string(l + 1) + ".csv",
                          to_host(fresh.prolonged(l + 1, levels[l].vector)), q);
    }
    const auto list = [&](const char* key, auto value) {
        fields << ", \"" << key << "\": [";
        for (std::size_t l = 0; l < levels.size(); ++l) fields << (l > 0 ? ", " : "") << value(levels[l]);
        fields << "]";
    };
    list("slowest_mode_level_eigenvalues", [](const SlowestMode<double>& m) { return m.eigenvalue; });
    list("slowest_mode_level_iterations", [](const SlowestMode<double>& m) { return m.iterations; });
    list("slowest_mode_level_converged",
         [](const SlowestMode<double>& m) { return std::string(m.converged ? "true" : "false"); });
    fields << ", \"slowest_mode_level_ms\": " << levels_ms;
    return fields.str();
}

/// Refuses --slowest-mode DIR (non-empty `dir`) with a preconditioner other than multilevel.
inline void require_multilevel_for_slowest_mode(const std::string& dir, const std::string& preconditioner)
{
    if (!dir.empty() && preconditioner != "multilevel") {
        throw InvalidInput("invalid --slowest-mode: needs --preconditioner multilevel, not '" + preconditioner + "'");
    }
}

/// The --slowest-mode DIR and --slowest-mode-iterations N options.
inline void add_slowest_mode_options(CLI::App& app, std::string& dir, int& iterations)
{
    app.add_option("--slowest-mode", dir,
                   "with --preconditioner multilevel: after each size's timed steps, the slowest mode of a "
                   "hierarchy built afresh for the last system (power iteration on I - M^-1 A), written to "
                   "DIR/slowest_mode_N.csv, and its eigenvalue and place in the JSON (slowest_mode_*); then each "
                   "cycled coarse level's own cycle, its mode on the nodes in DIR/slowest_mode_N_levelL.csv "
                   "(slowest_mode_level_*)")
        ->check(CLI::ExistingDirectory)
        ->type_name("DIR");
    app.add_option("--slowest-mode-iterations", iterations, "power iterations of --slowest-mode at most")
        ->check(CLI::Range(1, 1 << 30))
        ->type_name("N");
}

/// The options every benchmark takes: --sizes (into `sizes`, parsed by
/// parse_sizes), --steps, --warmup, --spmv-repeats.
inline void add_common_options(CLI::App& app, std::string& sizes, const char* what, int& steps, int& warmup,
                               int& spmv_repeats)
{
    app.add_option("--sizes", sizes, std::string(what) + " per side, comma-separated, each >= 2")->type_name("N,N,...");
    app.add_option("--steps", steps, "timed steps per size")->check(CLI::Range(1, 1 << 30))->type_name("N");
    app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::Range(0, 1 << 30))->type_name("N");
    app.add_option("--spmv-repeats", spmv_repeats, "repeats of the timed SpMV (0: none)")
        ->check(CLI::Range(0, 1 << 30))
        ->type_name("N");
}

/// --matrix-precision WORD (solver.matrix_precision): "double" or "single".
inline void add_matrix_precision_option(CLI::App& app, std::string& precision)
{
    app.add_option("--matrix-precision", precision,
                   "the matrix PCG iterates with: as assembled (double), or a float copy of its values (single)")
        ->check(CLI::IsMember(solver_words::matrix_precision()))
        ->type_name("WORD");
}

/// The words of the multilevel hierarchy's renewal rules that both
/// benchmarks take (scene keys solver.multilevel_refresh,
/// solver.multilevel_refresh_tolerance, solver.multilevel_rebuild,
/// solver.multilevel_pattern_change, solver.multilevel_renew_modes,
/// solver.multilevel_line_factor_tolerance, solver.multilevel_exact_ritz_bound).
struct MultilevelRenewal {
    std::string refresh = "on-growth";
    double refresh_tolerance = MultilevelOptions{}.refresh_tolerance;
    std::string rebuild = "rent-or-buy";
    std::string pattern_change = "rebuild";
    std::string renew_modes = "on";
    double line_factor_tolerance = MultilevelOptions{}.line_factor_tolerance;
    double exact_ritz_bound = MultilevelOptions{}.exact_ritz_bound;

    /// The JSON fields of these words, each after ",\n  ": multilevel_refresh,
    /// multilevel_refresh_tolerance, multilevel_rebuild,
    /// multilevel_pattern_change, multilevel_renew_modes,
    /// multilevel_line_factor_tolerance, multilevel_exact_ritz_bound.
    std::string json_fields() const
    {
        std::ostringstream out;
        out << ",\n  \"multilevel_refresh\": \"" << refresh
            << "\",\n  \"multilevel_refresh_tolerance\": " << refresh_tolerance << ",\n  \"multilevel_rebuild\": \""
            << rebuild << "\",\n  \"multilevel_pattern_change\": \"" << pattern_change
            << "\",\n  \"multilevel_renew_modes\": \"" << renew_modes
            << "\",\n  \"multilevel_line_factor_tolerance\": " << line_factor_tolerance
            << ",\n  \"multilevel_exact_ritz_bound\": " << exact_ritz_bound;
        return out.str();
    }

    /// --multilevel-refresh, --multilevel-refresh-tolerance, --multilevel-rebuild,
    /// --multilevel-pattern-change, --multilevel-renew-modes,
    /// --multilevel-line-factor-tolerance, --multilevel-exact-ritz-bound.
    void add_options(CLI::App& app)
    {
        app.add_option("--multilevel-renew-modes", renew_modes,
                       "with the square coarse space, what the hierarchy's age buys first: a renewal of the "
                       "squares' near-null modes for the current positions (on), or always a build (off)")
            ->check(CLI::IsMember({"on", "off"}))
            ->type_name("ON|OFF");
        app.add_option("--multilevel-refresh", refresh,
                       "what a slow solve renews in the multilevel hierarchy: the coarse values (on-growth), "
                       "nothing but rebuilds (off), or the coarse values at every solve (every-prepare)")
            ->check(CLI::IsMember(solver_words::multilevel_refresh()))
            ->type_name("WHEN");
        app.add_option("--multilevel-refresh-tolerance", refresh_tolerance,
                       "which rows a refresh of the square coarse levels recomputes: those in which an entry moved "
                       "by more than this times its diagonal's scale (0: every row that changed; negative: every "
                       "row)")
            ->check(CLI::Number)
            ->type_name("TAU");
        app.add_option("--multilevel-rebuild", rebuild,
                       "when a slow solve renews the multilevel hierarchy: once its extra iterations have cost a "
                       "build's wall time (rent-or-buy), or at once, so that runs repeat bit for bit (growth)")
            ->check(CLI::IsMember(solver_words::multilevel_rebuild()))
            ->type_name("RULE");
        app.add_option("--multilevel-pattern-change", pattern_change,
                       "what a new sparsity pattern or filter does to the multilevel hierarchy: a build (rebuild), "
                       "or nothing but a new finest-level smoother until the iterations grow (keep)")
            ->check(CLI::IsMember(solver_words::multilevel_pattern_change()))
            ->type_name("WORD");
        app.add_option("--multilevel-line-factor-tolerance", line_factor_tolerance,
                       "which of the finest level's yarn lines a prepare factors again: those with a row in which "
                       "an entry moved by more than this times its diagonal's scale since the row was last taken "
                       "(0 or negative: every line)")
            ->check(CLI::Number)
            ->type_name("TAU");
        app.add_option("--multilevel-exact-ritz-bound", exact_ritz_bound,
                       "a solve whose largest Ritz value (PCG's estimate of the preconditioned operator's largest "
                       "eigenvalue, at most 1 for a V-cycle of current values) exceeds this makes the next prepare "
                       "refresh every coarse row and factor every finest line (0 or negative: never)")
            ->check(CLI::Number)
            ->type_name("BOUND");
    }

    /// The rules set in `options`.
    void apply(MultilevelOptions& options) const
    {
        options.refresh = multilevel_refresh_named(refresh);
        options.refresh_tolerance = refresh_tolerance;
        options.timed_rebuild = multilevel_timed_rebuild_named(rebuild);
        options.keep_across_patterns = multilevel_keep_across_patterns_named(pattern_change);
        options.renew_modes = renew_modes == "on";
        options.line_factor_tolerance = line_factor_tolerance;
        options.exact_ritz_bound = exact_ritz_bound;
    }
};

/// --help and --version (cli_common.hpp): prints and returns true.
inline bool print_help_or_version(examples::CommandLine command, const std::string& help)
{
    if (command == examples::CommandLine::help) std::cout << help;
    if (command == examples::CommandLine::version) std::cout << "weft " << WEFT_VERSION_STRING << "\n";
    return command != examples::CommandLine::run;
}

/// A comma-separated list of sizes ("--sizes 50,100"), each an integer >= 2;
/// an empty list is returned as such.
inline std::vector<int> parse_sizes(const std::string& list)
{
    std::vector<int> sizes;
    std::stringstream ss(list);
    for (std::string item; std::getline(ss, item, ',');) {
        char* end = nullptr;
        const long n = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || n < 2 || n > 1000000)
            throw InvalidInput("invalid --sizes entry \"" + item + "\": need an integer in [2, 1000000]");
        sizes.push_back(static_cast<int>(n));
    }
    return sizes;
}

/// The PCG preconditioner named by --preconditioner (`allowed`: the names the
/// benchmark accepts, in the words of the scene key solver.preconditioner).
inline PcgPreconditioner parse_preconditioner(const std::string& name, const std::vector<std::string>& allowed)
{
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string list;
        for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
        throw InvalidInput("invalid --preconditioner \"" + name + "\": expected one of " + list);
    }
    if (name == "yarn-lines") return PcgPreconditioner::yarn_lines;
    if (name == "multilevel") return PcgPreconditioner::multilevel;
    return PcgPreconditioner::block_jacobi;
}

/// The multilevel cycles so far and their seconds on each level
/// (MultilevelPreconditioner::cycles() and level_cycle_seconds()): taken
/// before the timed steps, so that multilevel_fields reports theirs alone.
struct LevelCycles {
    long cycles = 0;
    std::vector<double> seconds;  ///< per level, finest first, exclusive of the levels below

    template <class Stepper>
    static LevelCycles of(const Stepper& stepper)
    {
        return {stepper.multilevel().cycles(), stepper.multilevel().level_cycle_seconds()};
    }
};

/// JSON fields of the multilevel hierarchy after the timed steps (empty for
/// the other preconditioners): builds during the timed steps, the mean time
/// of a build (the whole run), builds by cause (the whole run: pattern or
/// filter changed, failed solve, slow solve), of the slow-solve builds those
/// the hierarchy's age bought (aged_builds(), the whole run) and the builds'
/// time the next such build waits for (age_price_builds()), the renewals of
/// the squares' modes the age bought first and their mean time (mode_renewals(),
/// the whole run), refreshes of the coarse values
/// (of them those made ahead of the solves, refreshes_ahead()) and their mean
/// time (the whole run), the refreshes by rows done again with every row
/// (by_rows_retries()), the share of the first coarse level's rows the
/// refreshes by rows recomputed (refreshed_row_share(), −1: none), the share
/// of the finest level's yarn lines the prepares factored
/// (line_refactor_share(), −1: none; the whole run) and the solves redone
/// after kept line factors failed (line_factor_fallbacks()), the prepares
/// that took every row after a solve's Ritz value passed exact_ritz_bound
/// (exact_retakes()), levels,
/// DoFs per level, operator complexity; the cycles of the timed steps
/// (`cycles`, the preconditioner's applications) and their mean ms per cycle
/// on each level, finest first, exclusive of the levels below
/// (`level_cycle_ms`; `start`: LevelCycles::of before the timed steps).
template <class Stepper>
std::string multilevel_fields(const Stepper& stepper, PcgPreconditioner preconditioner, long builds,
                              const LevelCycles& start)
{
    if (preconditioner != PcgPreconditioner::multilevel) return "";
    const auto& m = stepper.multilevel();
    std::ostringstream out;
    out << ", \"multilevel_builds\": " << builds
        << ", \"build_ms\": " << (m.builds() > 0 ? 1e3 * m.build_seconds() / m.builds() : 0.0)
        << ", \"builds_by_cause\": {\"pattern\": " << m.pattern_builds() << ", \"failure\": " << m.failure_builds()
        << ", \"growth\": " << m.growth_builds() << "}, \"aged_builds\": " << m.aged_builds()
        << ", \"age_price_builds\": " << m.age_price_builds() << ", \"mode_renewals\": " << m.mode_renewals()
        << ", \"renewal_ms\": " << (m.mode_renewals() > 0 ? 1e3 * m.renewal_seconds() / m.mode_renewals() : 0.0)
        << ", \"pattern_keeps\": " << m.pattern_keeps() << ", \"refreshes\": " << m.refreshes()
        << ", \"refreshes_ahead\": " << m.refreshes_ahead()
        << ", \"refresh_ms\": " << (m.refreshes() > 0 ? 1e3 * m.refresh_seconds() / m.refreshes() : 0.0)
        << ", \"refresh_retries\": " << m.by_rows_retries() << ", \"refreshed_row_share\": " << m.refreshed_row_share()
        << ", \"line_refactor_share\": " << m.line_refactor_share()
        << ", \"line_factor_fallbacks\": " << m.line_factor_fallbacks() << ", \"exact_retakes\": " << m.exact_retakes()
        << ", \"levels\": " << stepper.multilevel().levels() << ", \"level_dofs\": [";
    const std::vector<Index> dofs = stepper.multilevel().level_dofs();
    for (std::size_t l = 0; l < dofs.size(); ++l) out << (l ? ", " : "") << dofs[l];
    out << "], \"operator_complexity\": " << stepper.multilevel().operator_complexity();
    const LevelCycles now = LevelCycles::of(stepper);
    const long cycles = now.cycles - start.cycles;
    out << ", \"cycles\": " << cycles << ", \"level_cycle_ms\": [";
    for (std::size_t l = 0; l < now.seconds.size(); ++l) {
        const double seconds = now.seconds[l] - (l < start.seconds.size() ? start.seconds[l] : 0.0);
        out << (l ? ", " : "") << (cycles > 0 ? 1e3 * seconds / static_cast<double>(cycles) : 0.0);
    }
    out << "]";
    return out.str();
}

/// --estimate-spectrum: PCG estimates the extreme eigenvalues of the
/// preconditioned operator from its coefficients at every solve
/// (PcgOptions::estimate_spectrum).
inline void add_spectrum_option(CLI::App& app, bool& estimate)
{
    app.add_flag("--estimate-spectrum", estimate,
                 "estimate the preconditioned operator's extreme eigenvalues from each PCG solve's coefficients "
                 "(Lanczos Ritz values): adds pcg_ritz_min, pcg_ritz_max and pcg_condition_estimate");
}

/// The timed steps' spectrum estimates (BackendStepReport::pcg_ritz_min,
/// pcg_ritz_max): the smallest and largest Ritz values over the steps and
/// the mean over the steps of each step's ratio, the condition number PCG
/// saw in that step.
struct SpectrumEstimate {
    int steps = 0;
    double ritz_min = 0;
    double ritz_max = 0;
    double condition_sum = 0;

    template <class Report>
    void add(const Report& r)
    {
        if (r.pcg_spectrum_solves == 0) return;
        ritz_min = steps == 0 ? r.pcg_ritz_min : std::min(ritz_min, r.pcg_ritz_min);
        ritz_max = steps == 0 ? r.pcg_ritz_max : std::max(ritz_max, r.pcg_ritz_max);
        condition_sum += r.pcg_ritz_max / r.pcg_ritz_min;
        ++steps;
    }

    /// The JSON fields (none when the option is off): pcg_ritz_min,
    /// pcg_ritz_max, pcg_condition_estimate and the steps estimated.
    std::string fields(bool estimated) const
    {
        if (!estimated) return "";
        std::ostringstream out;
        out << ", \"pcg_ritz_min\": " << ritz_min << ", \"pcg_ritz_max\": " << ritz_max
            << ", \"pcg_condition_estimate\": " << (steps > 0 ? condition_sum / steps : 0.0)
            << ", \"spectrum_steps\": " << steps;
        return out.str();
    }
};

}  // namespace weft::bench
