// friction_incline --angle DEG --friction MU --duration T --csv FILE: the
// friction-incline validation of thesis Fig. 4.3 (friction_incline.hpp).
// Exit status: 0 done, 1 bad arguments or output, 2 a step failed.
#include <exception>
#include <iostream>

#include "friction_incline.hpp"

int main(int argc, char** argv)
{
    using namespace weft::examples;
    try {
        const InclineOptions options = parse_incline_arguments(argc, argv);
        if (options.help) {
            std::cout << incline_usage();
            return 0;
        }
        if (options.version) {
            std::cout << "weft " << WEFT_VERSION_STRING << "\n";
            return 0;
        }
        const InclineRun run = run_friction_incline(options);
        if (!options.csv.empty()) write_incline_csv(run, options.csv);
        if (!options.quiet) std::cout << incline_summary(options, run) << "\n";
        if (!run.ok) {
            std::cerr << "friction_incline: step failed: " << run.message << "\n";
            return 2;
        }
        return 0;
    } catch (const weft::InvalidInput& e) {
        std::cerr << "friction_incline: " << e.what() << "\nrun 'friction_incline --help' for the options\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "friction_incline: " << e.what() << "\n";
        return 1;
    }
}
