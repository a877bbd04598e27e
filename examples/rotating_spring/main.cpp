// rotating_spring: the damped rotating spring of 2018 Sec. 3.6 (Fig. 2).
// Run with --help for the options. Exit codes: 0 success, 1 simulation or
// output failure, 2 invalid command line.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "rotating_spring.hpp"

namespace {

using weft::DenseIntegrator;
using weft::examples::RotatingSpringOptions;
using weft::examples::RotatingSpringParameters;
using weft::examples::RotatingSpringRun;
using weft::examples::SpringDamping;

/// β values of the plot: from barely visible (0.01) to settled within a
/// couple of seconds (0.1), as in the paper's Fig. 2.
const std::vector<double> plot_betas = {0.01, 0.05, 0.1};

/// Prints the failed step and returns false when the run stopped early.
bool report_failure(const RotatingSpringRun& run, const std::string& label)
{
    if (run.ok()) return true;
    if (run.energies_overflowed) {
        std::cerr << "rotating_spring: " << label << ": the energies overflowed at t = " << run.overflow_time
                  << " (the motion diverged)\n";
        return false;
    }
    std::cerr << "rotating_spring: " << label << ": step at t = " << run.summary.failure_time
              << " failed: " << weft::to_string(run.summary.status) << " (Newton iterations "
              << run.summary.failed_step.newton_iterations << ", residual " << run.summary.failed_step.residual_norm
              << ")\n";
    return false;
}

bool write_csv(const RotatingSpringRun& run, const std::string& path)
{
    std::ofstream out(path);
    if (!out) {
        std::cerr << "rotating_spring: cannot open --csv file '" << path << "' for writing\n";
        return false;
    }
    out << "time,kinetic_energy,elastic_energy,radius\n";
    out << std::setprecision(12);
    for (const auto& s : run.samples) {
        out << s.time << ',' << s.kinetic_energy << ',' << s.elastic_energy << ',' << s.radius << '\n';
    }
    out.close();
    if (!out) {
        std::cerr << "rotating_spring: writing --csv file '" << path << "' failed\n";
        return false;
    }
    return true;
}

struct PlotCurve {
    std::string title;
    std::string style;
    RotatingSpringRun run;
};

/// Single-quoted gnuplot string (doubling embedded quotes).
std::string gnuplot_string(const std::string& s)
{
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
}

bool write_plot(const RotatingSpringOptions& options, const std::string& path)
{
    if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
        std::cerr << "rotating_spring: --plot needs gnuplot on PATH, and it was not found "
                     "(Debian/Ubuntu: apt-get install gnuplot-nox)\n";
        return false;
    }
    std::vector<PlotCurve> curves;
    auto add = [&](SpringDamping damping, double beta, const std::string& title, const std::string& style) {
        RotatingSpringParameters p = options.spring;
        p.damping = damping;
        p.beta = beta;
        PlotCurve c{title, style,
                    weft::examples::simulate_rotating_spring(p, options.integrator, options.dt, options.duration)};
        if (!report_failure(c.run, title)) return false;
        curves.push_back(std::move(c));
        return true;
    };
    if (!add(SpringDamping::none, 0.0, "no damping", "lc rgb '#888888' lw 1.5")) return false;
    const char* blues[] = {"#9ecae1", "#4292c6", "#08306b"};
    const char* reds[] = {"#fc9272", "#ef3b2c", "#67000d"};
    for (std::size_t i = 0; i < plot_betas.size(); ++i) {
        std::ostringstream beta;
        beta << plot_betas[i];
        if (!add(SpringDamping::strain_rate, plot_betas[i], "strain rate, β = " + beta.str(),
                 std::string("lc rgb '") + blues[i % 3] + "' lw 2")) {
            return false;
        }
        if (!add(SpringDamping::rayleigh, plot_betas[i], "Rayleigh, β = " + beta.str(),
                 std::string("lc rgb '") + reds[i % 3] + "' lw 2 dt 2")) {
            return false;
        }
    }

    FILE* gp = popen("gnuplot", "w");
    if (!gp) {
        std::cerr << "rotating_spring: could not start gnuplot\n";
        return false;
    }
    std::ostringstream script;
    script << std::setprecision(10);
    // Decimate to at most ~4000 points per curve: the PNG cannot show more.
    for (std::size_t k = 0; k < curves.size(); ++k) {
        const auto& samples = curves[k].run.samples;
        const std::size_t stride = samples.size() / 4000 + 1;
        script << "$d" << k << " << EOD\n";
        for (std::size_t i = 0; i < samples.size(); i += stride) {
            script << samples[i].time << ' ' << samples[i].kinetic_energy << '\n';
        }
        script << "EOD\n";
    }
    std::ostringstream subtitle;
    subtitle << "L = " << options.spring.rest_length << ", k_e = " << options.spring.stiffness
             << ", m = " << options.spring.mass << ", v_0 = " << options.spring.tangential_speed << ", "
             << weft::to_string(options.integrator) << ", dt = " << options.dt;
    script << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
              "  set terminal pngcairo size 1100,650 enhanced font 'sans,12'\n"
              "} else {\n"
              "  set terminal png size 1100,650\n"
              "}\n"
           << "set output " << gnuplot_string(path) << "\n"
           << "set title \"Rotating spring (2018 Sec. 3.6, Fig. 2): kinetic energy\\n{/*0.85 " << subtitle.str()
           << "}\"\n"
           << "set xlabel 'time (s)'\nset ylabel 'kinetic energy (J)'\n"
           << "set key outside right top box\nset grid\nset yrange [0:*]\n"
           << "plot ";
    for (std::size_t k = 0; k < curves.size(); ++k) {
        script << (k ? ", \\\n     " : "") << "$d" << k << " using 1:2 with lines " << curves[k].style << " title "
               << gnuplot_string(curves[k].title);
    }
    script << "\n";
    const std::string text = script.str();
    const bool written = std::fwrite(text.data(), 1, text.size(), gp) == text.size();
    const int status = pclose(gp);
    if (!written || status != 0) {
        std::cerr << "rotating_spring: gnuplot failed writing --plot file '" << path << "' (exit status " << status
                  << ")\n";
        return false;
    }
    std::cout << "wrote " << path << " (" << curves.size() << " curves)\n";
    return true;
}

}  // namespace

int main(int argc, char** argv)
{
    RotatingSpringOptions options;
    try {
        options = weft::examples::parse_rotating_spring_options(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const weft::InvalidInput& e) {
        std::cerr << "rotating_spring: " << e.what() << "\n"
                  << "run 'rotating_spring --help' for the options\n";
        return 2;
    }
    if (options.help) {
        std::cout << weft::examples::rotating_spring_usage();
        return 0;
    }
    if (options.version) {
        std::cout << "weft " << WEFT_VERSION_STRING << "\n";
        return 0;
    }

    if (options.integrator == DenseIntegrator::symplectic_euler &&
        options.dt >= weft::examples::symplectic_euler_stable_dt(options.spring)) {
        std::cerr << "rotating_spring: warning: --dt " << options.dt
                  << " is beyond the stability limit of symplectic Euler for this spring, 2/omega_n = "
                  << weft::examples::symplectic_euler_stable_dt(options.spring)
                  << "; the motion will blow up (use a smaller --dt or an implicit --integrator)\n";
    }
    try {
        const RotatingSpringRun run =
            weft::examples::simulate_rotating_spring(options.spring, options.integrator, options.dt, options.duration);
        const bool completed = report_failure(run, "simulation");
        if (!options.csv_path.empty() && !write_csv(run, options.csv_path)) return 1;

        const auto& first = run.samples.front();
        const auto& last = run.samples.back();
        std::cout << std::setprecision(8) << "integrator " << weft::to_string(options.integrator) << ", damping "
                  << weft::examples::to_string(options.spring.damping) << " (beta " << options.spring.beta << "), dt "
                  << options.dt << ", steps " << run.summary.steps_taken << ", Newton iterations "
                  << run.summary.newton_iterations << " (max " << run.summary.max_newton_iterations << " per step)\n"
                  << "t = " << last.time << ": kinetic energy " << last.kinetic_energy << " (initial "
                  << first.kinetic_energy << "), elastic energy " << last.elastic_energy << ", radius " << last.radius
                  << ", angular momentum " << last.angular_momentum << " (initial " << first.angular_momentum << ")\n";
        if (options.spring.damping == SpringDamping::strain_rate) {
            std::cout << "uniform circular motion radius (analytic): "
                      << weft::examples::circular_motion_radius(options.spring) << "\n";
        }
        if (!completed) return 1;
        if (!options.plot_path.empty() && !write_plot(options, options.plot_path)) return 1;
    } catch (const weft::InvalidInput& e) {
        std::cerr << "rotating_spring: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
