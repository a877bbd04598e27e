// weft-run SCENE.json [--duration T] [--output-dir DIR] [--quiet]
// Runs a yarn-level or triangle cloth scene on the Thrust backend (see scene_runner.hpp
// and docs/scenes.md). Exit status: 0 done, 1 bad arguments or scene,
// 2 a step failed (reported with the step and the solver's residual),
// 3 interrupted by SIGINT/SIGTERM after writing a checkpoint.
#include <exception>
#include <iostream>

#include <weft/backend/device.hpp>

#include "scene_runner.hpp"

int main(int argc, char** argv)
{
    using namespace weft::examples;
    weft::run_with_huge_pages(argv);  // the heap in 2 MiB pages (device.hpp)
    try {
        const RunArguments args = parse_run_arguments(argc, argv);
        if (args.help) {
            std::cout << run_usage();
            return 0;
        }
        if (args.version) {
            std::cout << "weft " << WEFT_VERSION_STRING << "\n";
            return 0;
        }
        weft::require_device();  // weft-run-cuda: "no CUDA device found (...)" rather than a Thrust error
        const RunSummary summary = run_scene(args, std::cerr);
        if (summary.interrupted) return 3;
        return summary.ok ? 0 : 2;
    } catch (const weft::InvalidInput& e) {
        std::cerr << "weft-run: " << e.what() << "\nrun 'weft-run --help' for the options\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "weft-run: " << e.what() << "\n";
        return 1;
    }
}
