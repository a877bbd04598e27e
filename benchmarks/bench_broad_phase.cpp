// bench_broad_phase: the sorted-grid broad phase (backend/broad_phase.hpp)
// on the yarn segments of two stacked N × N woven patches (a cloth lying on
// another, the case collision handling must find): 2·2N yarns of N − 1
// segments each, 1 mm spacing, yarn radius 0.25 mm, the upper patch 0.5 mm
// above the lower one, every box grown by a margin of one radius. Times one
// call per cell size (after an untimed call) and prints one JSON object, or
// with --table a Markdown row per (size, cell).
//
//   bench_broad_phase [--sizes 100,200] [--cells 0.5,1,2] [--repeats R] [--table]
//
// --cells are multiples of the segment length. Threads: OMP_NUM_THREADS.

#include <chrono>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <weft/backend/broad_phase.hpp>

#include "bench_common.hpp"

namespace {

struct Options {
    std::vector<int> sizes{100, 200};
    std::vector<double> cells{0.5, 1, 2};
    int repeats = 3;
    bool table = false;
    weft::examples::CommandLine command = weft::examples::CommandLine::run;
    std::string help;
};

Options parse(int argc, char** argv)
{
    Options o;
    std::string sizes = "100,200", cells = "0.5,1,2";
    CLI::App app("bench_broad_phase", "bench_broad_phase");
    weft::examples::setup_app(app);
    app.description(
        "The sorted-grid broad phase on the yarn segments of two stacked woven patches: ms per call, cell "
        "entries, candidate and overlapping pairs; prints JSON or a Markdown table (benchmarks/RESULTS.md).");
    app.add_option("--sizes", sizes, "crossings per side of each patch, comma-separated, each >= 2")
        ->type_name("N,N,...");
    app.add_option("--cells", cells, "cell sizes in segment lengths, comma-separated, each > 0")->type_name("C,C,...");
    app.add_option("--repeats", o.repeats, "timed calls per case (the fastest is reported)")
        ->check(CLI::Range(1, 1 << 20))
        ->type_name("N");
    app.add_flag("--table", o.table, "a Markdown table instead of JSON");
    o.command = weft::examples::parse_command_line(app, argc, argv);
    if (o.command == weft::examples::CommandLine::help) o.help = app.help();
    o.sizes = weft::bench::parse_sizes(sizes);
    o.cells.clear();
    std::stringstream ss(cells);
    for (std::string item; std::getline(ss, item, ',');) {
        char* end = nullptr;
        const double c = std::strtod(item.c_str(), &end);
        if (item.empty() || *end != '\0' || !(c > 0) || !std::isfinite(c))
            throw weft::InvalidInput("invalid --cells entry \"" + item + "\": need a positive number");
        o.cells.push_back(c);
    }
    if (o.sizes.empty() || o.cells.empty()) throw weft::InvalidInput("invalid --sizes or --cells: empty list");
    return o;
}

/// Boxes of the segments of two stacked n × n patches (warp along x, weft along y).
std::vector<weft::Aabb<double>> stacked_patches(int n, double spacing, double radius)
{
    std::vector<weft::Aabb<double>> boxes;
    const double margin = radius;
    for (int layer = 0; layer < 2; ++layer) {
        const double z = layer * 2 * radius;
        for (int dir = 0; dir < 2; ++dir)
            for (int yarn = 0; yarn < n; ++yarn)
                for (int k = 0; k + 1 < n; ++k) {
                    const double a = k * spacing, b = (k + 1) * spacing, c = yarn * spacing;
                    weft::Aabb<double> box;
                    const double x0 = dir == 0 ? a : c, x1 = dir == 0 ? b : c;
                    const double y0 = dir == 0 ? c : a, y1 = dir == 0 ? c : b;
                    box.lo[0] = x0 - margin;
                    box.hi[0] = x1 + margin;
                    box.lo[1] = y0 - margin;
                    box.hi[1] = y1 + margin;
                    box.lo[2] = z - margin;
                    box.hi[2] = z + margin;
                    boxes.push_back(box);
                }
    }
    return boxes;
}

}  // namespace

int main(int argc, char** argv)
{
    try {
        const Options o = parse(argc, argv);
        if (weft::bench::print_help_or_version(o.command, o.help)) return 0;
        const double spacing = 1e-3, radius = 0.25e-3;
        std::ostringstream json;
        json << "{\n  \"benchmark\": \"broad_phase\",\n  \"threads\": " << weft::bench::backend_threads()
             << ",\n  \"results\": [";
        if (o.table)
            std::cout << "| N × N (×2 layers) | segments | cell (segment lengths) | ms/call | cell entries | "
                         "candidates | pairs | peak RSS |\n|---|---|---|---|---|---|---|---|\n";
        bool first_row = true;
        for (const int n : o.sizes) {
            const std::vector<weft::Aabb<double>> host = stacked_patches(n, spacing, radius);
            const thrust::device_vector<weft::Aabb<double>> boxes(host.begin(), host.end());
            for (const double c : o.cells) {
                weft::BroadPhaseStats stats;
                weft::find_overlapping_pairs<double>(boxes, c * spacing, &stats);  // untimed
                double best = 1e300;
                for (int r = 0; r < o.repeats; ++r) {
                    const auto start = std::chrono::steady_clock::now();
                    weft::find_overlapping_pairs<double>(boxes, c * spacing, &stats);
                    best = std::min(best, weft::bench::elapsed_ms(start));
                }
                if (o.table) {
                    std::cout << "| " << n << "² | " << host.size() << " | " << c << " | " << best << " | "
                              << stats.cell_entries << " | " << stats.candidates << " | " << stats.pairs << " | "
                              << weft::bench::peak_rss_mb() << " MB |\n";
                }
                json << (first_row ? "\n" : ",\n") << "    {\"size\": " << n << ", \"segments\": " << host.size()
                     << ", \"cell\": " << c << ", \"ms\": " << best << ", \"cell_entries\": " << stats.cell_entries
                     << ", \"candidates\": " << stats.candidates << ", \"pairs\": " << stats.pairs
                     << ", \"peak_rss_mb\": " << weft::bench::peak_rss_mb() << "}";
                first_row = false;
            }
        }
        json << "\n  ]\n}\n";
        if (!o.table) std::cout << json.str();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "bench_broad_phase: " << e.what() << "\n";
        return 2;
    }
}
