// bench_yarn: the sphere drop of 2017 Fig. 4 (examples/scenes/sphere_drop.json)
// at several resolutions of the same 11.5 × 11.5 cm patch, stepped by the
// Thrust backend; every timed step's linear system is also solved by Eigen's
// ConjugateGradient (diagonal preconditioner, same tolerance, same threads),
// the solver of the 2017 paper, so the ratio comes from one run.
//
//   bench_yarn [--sizes 50,100,200] [--steps N] [--warmup W] [--no-eigen]
//              [--scene FILE] [--preconditioner block-jacobi|yarn-lines|multilevel]
//              [--multilevel-refresh off|on-growth|every-prepare]
//              [--multilevel-refresh-tolerance TAU]
//              [--multilevel-rebuild rent-or-buy|growth]
//              [--multilevel-smoother auto|chebyshev|yarn-lines]
//              [--multilevel-coarse-space auto|nodes|yarns|squares] [--multilevel-cycle v|w]
//              [--multilevel-square-side N] [--no-line-ordered-rows]
//              [--spmv-repeats R] [--pcg-max-iterations N] [--no-cholmod]
//              [--write-system DIR] [--estimate-spectrum]
//              [--slowest-mode DIR] [--slowest-mode-iterations N]
//
// Prints one JSON object on stdout. Threads: OMP_NUM_THREADS (Eigen uses the
// same count through Eigen::setNbThreads). The program runs itself again
// with its heap in transparent huge pages where it can (run_with_huge_pages,
// device.hpp; `"huge_pages": true` in the output; WEFT_HUGE_PAGES=0 not).
// bench_yarn_cuda is the same program on the CUDA system (the GPU); Eigen's
// CG still runs on the host.
// Each size also times the system matrix's SpMV alone (median of R products)
// and reports its bandwidth over the bytes it must move (beside the STREAM
// triad bandwidth of the same device system, `stream_triad_gb_per_s`, measured
// once after the sizes); on the GPU, the
// device memory in use after the timed steps. Where the build links CHOLMOD
// (`"cholmod": true` in the output), each timed step's system is also
// factorized by it (bench_common.hpp, CholmodBaseline): the direct-solver
// columns beside Eigen's CG; --no-cholmod skips them. --write-system DIR
// writes each size's last timed system as DIR/yarn_N_*.npy (write_system in
// bench_common.hpp), for studying preconditioners outside weft. With
// --preconditioner multilevel each size adds the hierarchy's fields
// (multilevel_fields in bench_common.hpp), among them the timed steps'
// cycles and their ms per cycle on each level (`level_cycle_ms`), and
// --slowest-mode DIR the slowest mode of a hierarchy built afresh for each
// size's last timed system (slowest_mode_fields in bench_common.hpp): its
// eigenvalue in the JSON, the mode in DIR/slowest_mode_N.csv, and the
// slowest mode of each cycled coarse level's own cycle (JSON
// slowest_mode_level_*, DIR/slowest_mode_N_levelL.csv). It runs after
// the size's memory fields are read; its hierarchy can raise the peak RSS
// reported for the sizes after it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <Eigen/IterativeLinearSolvers>
#include <Eigen/Sparse>

#include <weft/backend/yarn_stepper.hpp>
#include <weft/core/solver_words.hpp>
#include <weft/io/scene.hpp>
#include <weft/io/scene_model.hpp>

#include "bench_common.hpp"

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

namespace {

struct Options {
    std::vector<int> sizes{50, 100, 200};
    int steps = 5;
    int warmup = 3;
    bool eigen = true;
    bool cholmod = weft::cholmod_available();
    std::string scene = std::string(WEFT_SOURCE_DIR) + "/examples/scenes/sphere_drop.json";
    std::string preconditioner = "block-jacobi";
    weft::bench::MultilevelRenewal renewal;
    std::string multilevel_smoother = "auto";
    std::string multilevel_coarse_space = "auto";
    std::string multilevel_cycle = "v";
    int multilevel_square_side = 3;
    int multilevel_square_join = 2;
    std::string matrix_precision = "double";
    bool line_ordered_rows = true;
    int spmv_repeats = 20;
    int pcg_max_iterations = 0;  ///< 0: the scene's solver.pcg_max_iterations
    std::string write_system;    ///< a folder for each size's last timed system; empty: none
    bool estimate_spectrum = false;
    std::string slowest_mode;  ///< a folder for each size's slowest mode; empty: none
    int slowest_mode_iterations = 200;
    weft::examples::CommandLine command = weft::examples::CommandLine::run;
    std::string help;  ///< --help's text
};

/// The command line (CLI11; --help lists every option with its default).
Options parse(int argc, char** argv)
{
    Options o;
    std::string sizes = "50,100,200";
    CLI::App app("bench_yarn", "bench_yarn");
    weft::examples::setup_app(app);
    app.description(
        "The yarn sphere drop (2017 Fig. 4) at several resolutions: ms per step, PCG iterations, "
        "against Eigen's CG and CHOLMOD; prints JSON (benchmarks/RESULTS.md).");
    weft::bench::add_common_options(app, sizes, "crossings", o.steps, o.warmup, o.spmv_repeats);
    app.add_flag("--no-eigen{false}", o.eigen, "skip Eigen's CG on the same system");
    app.add_flag("--no-cholmod{false}", o.cholmod, "skip the CHOLMOD baseline (on where SuiteSparse is found)");
    app.add_option("--scene", o.scene, "the scene whose cloth is resized")->type_name("FILE");
    app.add_option("--preconditioner", o.preconditioner, "PCG preconditioner")
        ->check(CLI::IsMember(weft::solver_words::preconditioner()))
        ->type_name("NAME");
    o.renewal.add_options(app);
    app.add_option("--multilevel-smoother", o.multilevel_smoother,
                   "the multilevel hierarchy's finest-level smoother: Chebyshev on block Jacobi, or exact solves "
                   "along the yarns (yarn-lines); auto: yarn-lines on CPU threads, chebyshev on a GPU (the JSON "
                   "names the one that ran)")
        ->check(CLI::IsMember(weft::solver_words::multilevel_smoother_choices()))
        ->type_name("NAME");
    app.add_option("--multilevel-coarse-space", o.multilevel_coarse_space,
                   "the multilevel hierarchy's coarse levels: greedy aggregates of nodes, runs along the yarns "
                   "and squares of crossings (yarns), or squares of crossings with the rigid-body, arc-length and "
                   "shear modes smoothed by lines of squares (squares); auto: squares on CPU threads, nodes on a "
                   "GPU (the JSON names the one that ran)")
        ->check(CLI::IsMember(weft::solver_words::multilevel_coarse_space_choices()))
        ->type_name("NAME");
    app.add_option("--multilevel-cycle", o.multilevel_cycle,
                   "the multilevel cycle: each coarse level visited once (v) or twice (w) per visit of the level "
                   "above")
        ->check(CLI::IsMember(weft::solver_words::multilevel_cycle()))
        ->type_name("NAME");
    app.add_option("--multilevel-square-side", o.multilevel_square_side,
                   "crossings per side of the squares of the first coarse level (coarse space squares)")
        ->check(CLI::Range(3, 1000))
        ->type_name("N");
    app.add_option("--multilevel-square-join", o.multilevel_square_join,
                   "squares per side joined into each aggregate of the coarse levels below the first (coarse space "
                   "squares)")
        ->check(CLI::Range(2, 1000))
        ->type_name("N");
    app.add_flag("--no-line-ordered-rows{false}", o.line_ordered_rows,
                 "with the yarn-line smoother or the square coarse space on CPU threads, sweep the rows in place "
                 "instead of a line-ordered copy of the rows of the yarns (and of the columns of squares) across "
                 "the node order (MultilevelOptions::line_ordered_rows)");
    weft::bench::add_matrix_precision_option(app, o.matrix_precision);
    app.add_option("--pcg-max-iterations", o.pcg_max_iterations, "PCG iteration limit")
        ->check(CLI::Range(1, 1 << 30))
        ->default_str("the scene's")
        ->type_name("N");
    app.add_option("--write-system", o.write_system,
                   "write each size's last timed linear system to DIR/yarn_N_*.npy (matrix, rhs, free DoFs, "
                   "positions)")
        ->check(CLI::ExistingDirectory)
        ->type_name("DIR");
    weft::bench::add_spectrum_option(app, o.estimate_spectrum);
    weft::bench::add_slowest_mode_options(app, o.slowest_mode, o.slowest_mode_iterations);
    o.command = weft::examples::parse_command_line(app, argc, argv);
    if (o.command == weft::examples::CommandLine::help) o.help = app.help();
    o.sizes = weft::bench::parse_sizes(sizes);
    weft::bench::require_multilevel_for_slowest_mode(o.slowest_mode, o.preconditioner);
    // "auto" for the sphere drop's yarns, named by the design it stands for.
    o.multilevel_smoother = weft::solver_words::multilevel_smoother()[static_cast<std::size_t>(
        weft::multilevel_smoother_named(o.multilevel_smoother, true))];
    o.multilevel_coarse_space = weft::solver_words::multilevel_coarse_space()[static_cast<std::size_t>(
        weft::multilevel_coarse_space_named(o.multilevel_coarse_space, true))];
    return o;
}

/// Eigen's CG on S A S + (I − S), rhs S b, from zero, diagonal preconditioner.
struct EigenSolve {
    double ms;
    int iterations;
    double error;
};

EigenSolve eigen_solve(const weft::BsrMatrix<double, 5>& bsr, const thrust::device_vector<double>& rhs,
                       const std::vector<unsigned char>& free, double tolerance, int max_iterations)
{
    using Matrix = Eigen::SparseMatrix<double, Eigen::RowMajor>;
    const Eigen::SparseMatrix<double> col = weft::to_eigen(bsr);
    const std::vector<double> b_host = weft::to_host(rhs);
    const Eigen::Index n = col.rows();
    Eigen::VectorXd filter(n), b(n);
    for (Eigen::Index i = 0; i < n; ++i) {
        filter(i) = free[i] ? 1.0 : 0.0;
        b(i) = free[i] ? b_host[i] : 0.0;
    }
    Matrix a = Matrix(filter.asDiagonal() * col * filter.asDiagonal());
    for (Eigen::Index i = 0; i < n; ++i)
        if (!free[i]) a.coeffRef(i, i) = 1.0;
    a.makeCompressed();
    Eigen::ConjugateGradient<Matrix, Eigen::Lower | Eigen::Upper, Eigen::DiagonalPreconditioner<double>> cg;
    cg.setTolerance(tolerance);
    cg.setMaxIterations(max_iterations);
    const auto t0 = std::chrono::steady_clock::now();
    cg.compute(a);
    const Eigen::VectorXd x = cg.solve(b);
    const double ms = weft::bench::elapsed_ms(t0);
    (void)x;
    return {ms, static_cast<int>(cg.iterations()), cg.error()};
}

}  // namespace

int main(int argc, char** argv)
{
    weft::run_with_huge_pages(argv);  // the heap in 2 MiB pages (device.hpp)
    try {
        const Options opt = parse(argc, argv);
        if (weft::bench::print_help_or_version(opt.command, opt.help)) return 0;
        weft::require_device();
        const weft::SceneDescription base = weft::load_scene(opt.scene);
        const int threads = weft::bench::backend_threads();
        Eigen::setNbThreads(threads);
        std::ostringstream json;
        json << "{\n  \"benchmark\": \"bench_yarn\",\n  \"scene\": \"" << opt.scene << "\",\n  \"threads\": " << threads
             << ",\n  \"huge_pages\": " << (weft::heap_huge_pages_advised() ? "true" : "false")
             << ",\n  \"backend\": \"" << WEFT_BACKEND_NAME << "\",\n  \"preconditioner\": \"" << opt.preconditioner
             << "\"" << opt.renewal.json_fields() << ",\n  \"multilevel_smoother\": \"" << opt.multilevel_smoother
             << "\",\n  \"multilevel_coarse_space\": \"" << opt.multilevel_coarse_space
             << "\",\n  \"multilevel_cycle\": \"" << opt.multilevel_cycle
             << "\",\n  \"multilevel_square_side\": " << opt.multilevel_square_side
             << ",\n  \"multilevel_square_join\": " << opt.multilevel_square_join << ",\n  \"matrix_precision\": \""
             << opt.matrix_precision << "\",\n  \"line_ordered_rows\": " << (opt.line_ordered_rows ? "true" : "false")
             << ",\n  \"cholmod\": " << (opt.cholmod ? "true" : "false") << ",\n  \"steps\": " << opt.steps
             << ",\n  \"warmup\": " << opt.warmup << ",\n  \"results\": [";
        bool first = true;
        for (int n : opt.sizes) {
            weft::SceneDescription scene = base;
            weft::ClothDescription& c = scene.cloth.at(0);
            // Same physical patch, n x n crossings; the values that follow
            // the spacing follow it (the contact's reach keeps its share).
            weft::refine_woven(c, {n, n});
            // The sphere's top 0.1 mm below the yarns: contact starts within the first steps.
            for (weft::ColliderDescription& k : scene.colliders)
                if (k.type == "sphere") k.center[2] = c.center[2] - c.radius - 1e-4 - k.radius;
            weft::YarnScene<double> built = weft::build_yarn_scene<double>(scene);
            weft::YarnStepperOptions<double> options;
            options.newton_iterations = scene.solver.newton_iterations;
            options.newton_tolerance = scene.solver.newton_tolerance;
            options.max_halvings = weft::max_halvings(scene);
            options.pcg.tolerance = scene.solver.pcg_tolerance;
            options.pcg.max_iterations =
                opt.pcg_max_iterations > 0 ? opt.pcg_max_iterations : scene.solver.pcg_max_iterations;
            options.pcg.preconditioner =
                weft::bench::parse_preconditioner(opt.preconditioner, {"block-jacobi", "yarn-lines", "multilevel"});
            opt.renewal.apply(options.multilevel);
            options.multilevel.smoother = weft::multilevel_smoother_named(opt.multilevel_smoother);
            options.multilevel.coarse_space = weft::multilevel_coarse_space_named(opt.multilevel_coarse_space);
            options.multilevel.cycle = weft::multilevel_cycle_named(opt.multilevel_cycle);
            options.multilevel.square_side = opt.multilevel_square_side;
            options.multilevel.square_join = opt.multilevel_square_join;
            options.pcg.single_precision_matrix = opt.matrix_precision == "single";
            options.pcg.estimate_spectrum = opt.estimate_spectrum;
            options.multilevel.single_precision_matrix = options.pcg.single_precision_matrix;
            options.multilevel.line_ordered_rows = opt.line_ordered_rows;
            weft::YarnStepper<double> stepper(built.model, built.colliders, built.gravity, options);
            const double h = scene.time_step;
            for (int s = 0; s < opt.warmup; ++s) {
                const weft::YarnStepReport r = stepper.step(h);
                if (!r.ok)
                    throw std::runtime_error("warm-up step failed at n = " + std::to_string(n) + ": " + r.message);
            }
            double total = 0, assembly = 0, solve = 0, eigen_ms = 0;
            long pcg_iterations = 0, eigen_iterations = 0, substeps = 0, multilevel_builds = 0, newton_iterations = 0;
            double eigen_worst_error = 0;
            weft::bench::CholmodBaseline<5> cholmod;
            std::string first_failure;  ///< why the first halved timed step was halved
            weft::bench::SpectrumEstimate spectrum;
            const weft::bench::LevelCycles cycles_before = weft::bench::LevelCycles::of(stepper);
            for (int s = 0; s < opt.steps; ++s) {
                const weft::YarnStepReport r = stepper.step(h);
                if (!r.ok) throw std::runtime_error("step failed at n = " + std::to_string(n) + ": " + r.message);
                total += r.total_seconds;
                assembly += r.assembly_seconds;
                solve += r.solve_seconds;
                pcg_iterations += r.pcg_iterations;
                newton_iterations += r.newton_iterations;
                substeps += r.substeps;
                multilevel_builds += r.multilevel_builds;
                spectrum.add(r);
                if (!r.first_failure.empty() && first_failure.empty()) first_failure = r.first_failure;
                if (opt.eigen) {
                    const EigenSolve e = eigen_solve(stepper.matrix(), stepper.rhs(),
                                                     weft::to_host(stepper.free_dofs()), options.pcg.tolerance, 100000);
                    eigen_ms += e.ms;
                    eigen_iterations += e.iterations;
                    eigen_worst_error = std::max(eigen_worst_error, e.error);
                }
                if (opt.cholmod) cholmod.solve(stepper.matrix(), stepper.rhs(), stepper.free_dofs());
            }
            if (!opt.write_system.empty()) {
                weft::bench::write_system(opt.write_system + "/yarn_" + std::to_string(n), stepper.matrix(),
                                          stepper.rhs(), weft::to_host(stepper.free_dofs()), stepper.positions());
            }
            const double steps = opt.steps;
            std::ostringstream record;
            record << "{\"n\": " << n << ", \"nodes\": " << n * n << ", \"dofs\": " << 5 * n * n
                   << ", \"ms_per_step\": " << 1e3 * total / steps << ", \"assembly_ms\": " << 1e3 * assembly / steps
                   << ", \"pcg_ms\": " << 1e3 * solve / steps
                   << ", \"rest_ms\": " << 1e3 * (total - assembly - solve) / steps
                   << ", \"pcg_iterations\": " << pcg_iterations / steps
                   << ", \"newton_iterations\": " << static_cast<double>(newton_iterations) / steps
                   << ", \"pcg_iterations_per_newton\": "
                   << (newton_iterations > 0 ? static_cast<double>(pcg_iterations) / newton_iterations : 0.0)
                   << ", \"substeps\": " << substeps / steps
                   << ", \"us_per_node_step\": " << 1e6 * total / steps / (n * n)
                   << weft::bench::multilevel_fields(stepper, options.pcg.preconditioner, multilevel_builds,
                                                     cycles_before)
                   << spectrum.fields(opt.estimate_spectrum);
            if (opt.eigen) {
                record << ", \"eigen_cg_ms\": " << eigen_ms / steps
                       << ", \"eigen_cg_iterations\": " << eigen_iterations / steps
                       << ", \"eigen_cg_worst_error\": " << eigen_worst_error
                       << ", \"pcg_speedup_vs_eigen\": " << (eigen_ms / steps) / (1e3 * solve / steps);
            }
            if (opt.cholmod) record << cholmod.fields(1e3 * solve / steps);
            if (opt.spmv_repeats > 0) {
                const weft::bench::SpmvTiming t = weft::bench::time_spmv(stepper.matrix(), opt.spmv_repeats);
                record << ", \"matrix_blocks\": " << stepper.matrix().col_idx().size() << ", \"spmv_ms\": " << t.ms
                       << ", \"spmv_gb_per_s\": " << t.gb_per_s;
            }
            record << ", \"device_memory_mb\": " << weft::bench::device_memory_in_use_mb()
                   << ", \"peak_rss_mb\": " << weft::bench::peak_rss_mb();
            if (!opt.slowest_mode.empty()) {
                record << weft::bench::slowest_mode_fields(stepper.matrix(), stepper.free_dofs(), stepper.positions(),
                                                           stepper.multilevel().options(), &stepper.lines(),
                                                           opt.slowest_mode + "/slowest_mode_" + std::to_string(n),
                                                           opt.slowest_mode_iterations);
            }
            record << "}";
            json << (first ? "\n    " : ",\n    ") << record.str();
            first = false;
            std::cerr << "bench_yarn: " << record.str() << "\n";  // each size as soon as it is done
            if (!first_failure.empty())
                std::cerr << "bench_yarn: n = " << n << ": a step was halved: " << first_failure << "\n";
        }
        // After the sizes: its 768 MB of arrays would raise their peak RSS (VmHWM).
        json << "\n  ],\n  \"stream_triad_gb_per_s\": " << weft::bench::stream_triad_gb_per_s() << "\n}\n";
        std::cout << json.str();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "bench_yarn: " << e.what() << "\n";
        return 1;
    }
}
