// bench_triangle: a 1 m × 1 m StVK sheet hanging in its own (vertical) plane
// from its two top corners under gravity, at several resolutions of the same
// sheet, stepped by the Thrust backend (TriangleStepper): one-step backward
// Euler (one Newton iteration per time step), block-Jacobi PCG to 1e-5
// relative to ‖S b‖, warm-started from the previous step's Δv.
//
// Material (a light cloth, 1 mm thick, 200 kg/m³): λh = 2000 N/m,
// μh = 1000 N/m (E ≈ 2.7 MPa, ν = 1/3), ρh = 0.2 kg/m², hinge bending
// k = 1e-4 N·m (or, with --bending plate, plate bending with D = 1e-4 N·m, ν = 0); strain-rate damping matched to
// Rayleigh β = 0.15 s through 2018 Eq. (12): λ_d = βλ, μ_d = βμ, and k_d = βk on the hinges. Alternating diagonals (no
// preferred shear direction).
//
//   bench_triangle [--sizes 100,300] [--steps N] [--warmup W] [--dt SECONDS]
//                  [--damping strain-rate|rayleigh|none] [--table] [--spmv-repeats R]
//                  [--no-cholmod] [--preconditioner block-jacobi|multilevel]
//                  [--multilevel-refresh off|on-growth|every-prepare]
//                  [--multilevel-refresh-tolerance TAU]
//                  [--multilevel-rebuild rent-or-buy|growth]
//                  [--bending dihedral|plate] [--estimate-spectrum]
//                  [--slowest-mode DIR] [--slowest-mode-iterations N]
//
// --sizes gives N for N × N vertices. Prints one JSON object on stdout, or
// with --table one Markdown row per size (the columns of benchmarks/RESULTS.md).
// Threads: OMP_NUM_THREADS. Peak RSS is the process high-water mark (VmHWM),
// so with several sizes it is that of the largest size run so far.
// bench_triangle_cuda is the same program on the CUDA system (the GPU). Each
// size also times the system matrix's SpMV alone (median of R products, 0 to
// skip) with its bandwidth over the bytes it must move (JSON: beside the
// STREAM triad bandwidth of the device system, `stream_triad_gb_per_s`), and on
// the GPU reports
// the device memory in use after the timed steps. Where the build links
// CHOLMOD, each timed step's system is also factorized by it (bench_common.hpp,
// CholmodBaseline; JSON only): --no-cholmod skips it. With --preconditioner
// multilevel, --slowest-mode DIR adds the slowest mode of a hierarchy built
// afresh for each size's last timed system (JSON only; slowest_mode_fields in
// bench_common.hpp, the mode in DIR/slowest_mode_N.csv, each cycled coarse
// level's in DIR/slowest_mode_N_levelL.csv), after the size's
// peak RSS is read.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <weft/backend/triangle_stepper.hpp>
#include <weft/core/solver_words.hpp>
#include <weft/model/triangle_mesh.hpp>
#include <weft/model/triangle_model.hpp>

#include "bench_common.hpp"

namespace {

struct Options {
    std::vector<int> sizes{100, 300};
    int steps = 5;
    int warmup = 3;
    double dt = 2e-3;
    std::string damping = "strain-rate";
    std::string bending = "dihedral";
    bool table = false;
    int spmv_repeats = 20;
    bool cholmod = weft::cholmod_available();
    std::string preconditioner = "block-jacobi";
    weft::bench::MultilevelRenewal renewal;
    std::string matrix_precision = "double";
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
    std::string sizes = "100,300";
    CLI::App app("bench_triangle", "bench_triangle");
    weft::examples::setup_app(app);
    app.description(
        "A hanging StVK sheet (1 m, two top corners pinned) at several resolutions: ms per step, PCG "
        "iterations, against CHOLMOD; prints JSON or a Markdown table (benchmarks/RESULTS.md).");
    weft::bench::add_common_options(app, sizes, "grid vertices", o.steps, o.warmup, o.spmv_repeats);
    app.add_option("--dt", o.dt, "time step (s)")->check(weft::examples::positive_number())->type_name("H");
    app.add_option("--damping", o.damping, "damping model")
        ->check(CLI::IsMember({"strain-rate", "rayleigh", "none"}))
        ->type_name("MODEL");
    app.add_option("--bending", o.bending,
                   "bending model (dihedral: the hinges of the figures in benchmarks/RESULTS.md; plate: the "
                   "library's default, Kirchhoff plate bending on curvature stencils)")
        ->check(CLI::IsMember({"dihedral", "plate"}))
        ->type_name("MODEL");
    app.add_option("--preconditioner", o.preconditioner, "PCG preconditioner")
        ->check(CLI::IsMember({"block-jacobi", "multilevel"}))
        ->type_name("NAME");
    o.renewal.add_options(app);
    weft::bench::add_matrix_precision_option(app, o.matrix_precision);
    weft::bench::add_spectrum_option(app, o.estimate_spectrum);
    weft::bench::add_slowest_mode_options(app, o.slowest_mode, o.slowest_mode_iterations);
    app.add_flag("--table", o.table, "a Markdown table instead of JSON");
    app.add_flag("--no-cholmod{false}", o.cholmod, "skip the CHOLMOD baseline (on where SuiteSparse is found)");
    o.command = weft::examples::parse_command_line(app, argc, argv);
    if (o.command == weft::examples::CommandLine::help) o.help = app.help();
    o.sizes = weft::bench::parse_sizes(sizes);
    if (o.sizes.empty()) throw weft::InvalidInput("invalid --sizes: need at least one size");
    weft::bench::require_multilevel_for_slowest_mode(o.slowest_mode, o.preconditioner);
    return o;
}

weft::TriangleMaterial<double> cloth_material(const std::string& damping, const std::string& bending_model)
{
    const double thickness = 1e-3;        // m
    const double lambda = 2e6, mu = 1e6;  // Pa
    const double density = 200;           // kg/m³
    const double bending = 1e-4;          // N·m
    const double beta = 0.15;             // s, the Rayleigh β the strain-rate damping is matched to
    weft::TriangleMaterial<double> m;
    m.membrane = weft::MembraneModel::stvk;
    m.stvk = weft::StVKDensity<double>{lambda * thickness, mu * thickness};
    m.areal_density = density * thickness;
    m.bending = bending_model == "plate" ? weft::BendingModel::plate : weft::BendingModel::dihedral;
    m.bending_stiffness = bending;
    if (damping == "strain-rate") {
        m.damping = weft::TriangleDamping::strain_rate;
        // 2018 Eq. (12): λ_d = βλ, μ_d = βμ
        m.membrane_damping = weft::StVKDensity<double>{beta * lambda * thickness, beta * mu * thickness};
        m.bending_damping = beta * bending;
    } else if (damping == "rayleigh") {
        m.damping = weft::TriangleDamping::rayleigh;
        m.rayleigh_beta = beta;
    }
    return m;
}

struct SizeResult {
    int n = 0;
    int vertices = 0, triangles = 0, hinges = 0;
    double ms_per_step = 0, assembly_ms = 0, pcg_ms = 0, rest_ms = 0;
    double pcg_iterations = 0, substeps = 0;
    int pcg_iterations_max = 0;
    double setup_ms = 0;
    double lowest_y = 0;  ///< lowest vertex after the timed steps (m); the sheet starts at −0.5
    double peak_rss_mb = 0;
    long matrix_blocks = 0;
    weft::bench::SpmvTiming spmv;
    std::string cholmod_fields;       ///< the CHOLMOD baseline's JSON fields, or empty
    std::string multilevel_fields;    ///< the multilevel hierarchy's JSON fields, or empty
    std::string spectrum_fields;      ///< the spectrum estimate's JSON fields, or empty
    std::string slowest_mode_fields;  ///< --slowest-mode's JSON fields, or empty
    double device_memory_mb = -1;
};

SizeResult run_size(int n, const Options& opt)
{
    using clock = std::chrono::steady_clock;
    const auto setup_start = clock::now();
    const double side = 1.0;
    const weft::TriangleMesh mesh = weft::make_triangle_grid(n, n, side, side, weft::DiagonalPattern::alternating);
    weft::TriangleModel<double> model =
        weft::build_triangle_model<double>(mesh, cloth_material(opt.damping, opt.bending));
    // The grid lies in the xy-plane; gravity along −y hangs it in its own plane
    // from the two top corners, vertices (0, n−1) and (n−1, n−1).
    for (const int corner : {(n - 1) * n, n * n - 1})
        for (int c = 0; c < weft::triangle_node_dofs; ++c) model.free_dof[weft::triangle_node_dofs * corner + c] = 0;
    const weft::Vec3<double> gravity(0, -9.81, 0);
    weft::StepperOptions<double> options;
    options.newton_iterations = 1;
    options.max_halvings = 0;  // a failed step is reported, never hidden
    options.pcg.tolerance = 1e-5;
    options.pcg.max_iterations = 20000;
    options.pcg.preconditioner = weft::bench::parse_preconditioner(opt.preconditioner, {"block-jacobi", "multilevel"});
    opt.renewal.apply(options.multilevel);
    options.pcg.single_precision_matrix = opt.matrix_precision == "single";
    options.pcg.estimate_spectrum = opt.estimate_spectrum;
    options.multilevel.single_precision_matrix = options.pcg.single_precision_matrix;
    weft::TriangleStepper<double> stepper(model, {}, gravity, options);

    SizeResult r;
    r.n = n;
    r.vertices = model.node_count();
    r.triangles = static_cast<int>(model.triangles.size());
    r.hinges = static_cast<int>(model.hinges.size());
    r.setup_ms = weft::bench::elapsed_ms(setup_start);

    for (int s = 0; s < opt.warmup; ++s) {
        const weft::BackendStepReport report = stepper.step(opt.dt);
        if (!report.ok)
            throw std::runtime_error("warm-up step " + std::to_string(s) + " failed at n = " + std::to_string(n) +
                                     ": " + report.message);
    }
    double total = 0, assembly = 0, solve = 0;
    long pcg_iterations = 0, substeps = 0, multilevel_builds = 0;
    weft::bench::CholmodBaseline<3> cholmod;
    weft::bench::SpectrumEstimate spectrum;
    const weft::bench::LevelCycles cycles_before = weft::bench::LevelCycles::of(stepper);
    for (int s = 0; s < opt.steps; ++s) {
        const weft::BackendStepReport report = stepper.step(opt.dt);
        if (!report.ok)
            throw std::runtime_error("step " + std::to_string(s) + " failed at n = " + std::to_string(n) + ": " +
                                     report.message);
        total += report.total_seconds;
        assembly += report.assembly_seconds;
        solve += report.solve_seconds;
        pcg_iterations += report.pcg_iterations;
        r.pcg_iterations_max = std::max(r.pcg_iterations_max, report.pcg_iterations);
        substeps += report.substeps;
        multilevel_builds += report.multilevel_builds;
        spectrum.add(report);
        if (opt.cholmod) cholmod.solve(stepper.matrix(), stepper.rhs(), stepper.free_dofs());
    }
    const double steps = opt.steps;
    r.ms_per_step = 1e3 * total / steps;
    r.assembly_ms = 1e3 * assembly / steps;
    r.pcg_ms = 1e3 * solve / steps;
    r.rest_ms = 1e3 * (total - assembly - solve) / steps;
    if (opt.cholmod) r.cholmod_fields = cholmod.fields(r.pcg_ms);
    r.multilevel_fields =
        weft::bench::multilevel_fields(stepper, options.pcg.preconditioner, multilevel_builds, cycles_before);
    r.spectrum_fields = spectrum.fields(opt.estimate_spectrum);
    r.pcg_iterations = pcg_iterations / steps;
    r.substeps = substeps / steps;
    stepper.download(model);
    r.lowest_y = 0.5 * side;
    for (int i = 0; i < model.node_count(); ++i)
        r.lowest_y = std::min(r.lowest_y, model.q[weft::triangle_node_dofs * i + 1]);
    r.peak_rss_mb = weft::bench::peak_rss_mb();
    r.device_memory_mb = weft::bench::device_memory_in_use_mb();
    r.matrix_blocks = static_cast<long>(stepper.matrix().col_idx().size());
    if (opt.spmv_repeats > 0) r.spmv = weft::bench::time_spmv(stepper.matrix(), opt.spmv_repeats);
    if (!opt.slowest_mode.empty()) {
        r.slowest_mode_fields = weft::bench::slowest_mode_fields(
            stepper.matrix(), stepper.free_dofs(), stepper.positions(), stepper.multilevel().options(), nullptr,
            opt.slowest_mode + "/slowest_mode_" + std::to_string(n), opt.slowest_mode_iterations);
    }
    return r;
}

}  // namespace

int main(int argc, char** argv)
{
    weft::run_with_huge_pages(argv);  // the heap in 2 MiB pages (device.hpp)
    try {
        const Options opt = parse(argc, argv);
        if (weft::bench::print_help_or_version(opt.command, opt.help)) return 0;
        weft::require_device();
        const int threads = weft::bench::backend_threads();
        std::ostringstream out;
        if (opt.table) {
            out << "| N × N | vertices | triangles | hinges | ms/step | assembly ms | PCG ms | PCG it./step | "
                   "µs per vertex-step | peak RSS |\n|---|---|---|---|---|---|---|---|---|---|\n";
        } else {
            out << "{\n  \"benchmark\": \"bench_triangle\",\n  \"scene\": \"hanging sheet 1 m, two top corners pinned\""
                << ",\n  \"threads\": " << threads
                << ",\n  \"huge_pages\": " << (weft::heap_huge_pages_advised() ? "true" : "false")
                << ",\n  \"backend\": \"" << WEFT_BACKEND_NAME << "\",\n  \"preconditioner\": \"" << opt.preconditioner
                << "\"" << opt.renewal.json_fields() << ",\n  \"matrix_precision\": \"" << opt.matrix_precision
                << "\",\n  \"bending\": \"" << opt.bending << "\",\n  \"damping\": \"" << opt.damping
                << "\",\n  \"dt\": " << opt.dt << ",\n  \"steps\": " << opt.steps << ",\n  \"warmup\": " << opt.warmup
                << ",\n  \"results\": [";
        }
        bool first = true;
        for (const int n : opt.sizes) {
            const SizeResult r = run_size(n, opt);
            const double us_per_vertex = 1e3 * r.ms_per_step / r.vertices;
            if (opt.table) {
                out << std::fixed << std::setprecision(1) << "| " << n << "² | " << r.vertices << " | " << r.triangles
                    << " | " << r.hinges << " | " << r.ms_per_step << " | " << r.assembly_ms << " | " << r.pcg_ms
                    << " | " << r.pcg_iterations << " | " << std::setprecision(2) << us_per_vertex << " | "
                    << std::setprecision(0) << r.peak_rss_mb << " MB |\n";
            } else {
                out << (first ? "\n" : ",\n") << "    {\"n\": " << n << ", \"vertices\": " << r.vertices
                    << ", \"triangles\": " << r.triangles << ", \"hinges\": " << r.hinges
                    << ", \"dofs\": " << 3 * r.vertices << ", \"setup_ms\": " << r.setup_ms
                    << ", \"ms_per_step\": " << r.ms_per_step << ", \"assembly_ms\": " << r.assembly_ms
                    << ", \"pcg_ms\": " << r.pcg_ms << ", \"rest_ms\": " << r.rest_ms
                    << ", \"pcg_iterations\": " << r.pcg_iterations
                    << ", \"pcg_iterations_max\": " << r.pcg_iterations_max << ", \"substeps\": " << r.substeps
                    << ", \"us_per_vertex_step\": " << us_per_vertex << ", \"lowest_y_m\": " << r.lowest_y
                    << ", \"matrix_blocks\": " << r.matrix_blocks << r.cholmod_fields << r.multilevel_fields
                    << r.spectrum_fields;
                if (opt.spmv_repeats > 0)
                    out << ", \"spmv_ms\": " << r.spmv.ms << ", \"spmv_gb_per_s\": " << r.spmv.gb_per_s;
                out << ", \"device_memory_mb\": " << r.device_memory_mb << ", \"peak_rss_mb\": " << r.peak_rss_mb
                    << r.slowest_mode_fields << "}";
            }
            first = false;
            std::cerr << "bench_triangle: n = " << n << " done (" << r.ms_per_step << " ms/step, " << r.pcg_iterations
                      << " PCG it./step)\n";
        }
        // After the sizes: its 768 MB of arrays would raise their peak RSS (VmHWM).
        if (!opt.table)
            out << "\n  ],\n  \"stream_triad_gb_per_s\": " << weft::bench::stream_triad_gb_per_s() << "\n}\n";
        std::cout << out.str();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "bench_triangle: " << e.what() << "\n";
        return 1;
    }
}
