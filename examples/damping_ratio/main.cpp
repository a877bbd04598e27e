// damping_ratio: fits y = c + A e^{−ζ ω_n τ} cos(ω_n √(1−ζ²) τ + φ) to one
// column of a CSV file (2017 Sec. 6.2, Eq. 24) and prints the fit as JSON.
//
//   damping_ratio --csv FILE --column NAME [--time-column time] [--start T] (--help: all options)
//
// Exit codes: 0 success, 1 unreadable file / bad data / no oscillation,
// 2 invalid command line.

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/solver/damping_ratio_fit.hpp>

#include "../cli_common.hpp"

namespace {

struct Options {
    std::string csv_path;
    std::string column;
    std::string time_column = "time";
    std::optional<double> start_time;
};

/// The command line (CLI11); --help lists the options with their defaults.
void setup(CLI::App& app, Options& o, std::string& start)
{
    weft::examples::setup_app(app);
    app.description(
        "Fits y = c + A exp(-zeta omega_n tau) cos(omega_n sqrt(1 - zeta^2) tau + phi), tau = t - t0, to column "
        "NAME of FILE against its time column (2017 Sec. 6.2, Eq. 24) and prints {\"zeta\": ..., \"omega_n\": "
        "..., ...} on stdout.");
    // Required (checked after parsing, so that an unknown option is named first).
    app.add_option("--csv", o.csv_path, "CSV file with a header line (required)")->type_name("FILE");
    app.add_option("--column", o.column, "column to fit (required)")->type_name("NAME");
    app.add_option("--time-column", o.time_column, "time column")->type_name("NAME");
    app.add_option("--start", start, "ignore samples before T; t0 = T")
        ->check(weft::examples::finite_number())
        ->default_str("t0 = the first time")
        ->type_name("T");
}

std::string trim(const std::string& s)
{
    const auto begin = s.find_first_not_of(" \t\r\"");
    if (begin == std::string::npos) return "";
    const auto end = s.find_last_not_of(" \t\r\"");
    return s.substr(begin, end - begin + 1);
}

std::vector<std::string> split(const std::string& line)
{
    std::vector<std::string> fields;
    std::stringstream ss(line);
    std::string field;
    while (std::getline(ss, field, ',')) fields.push_back(trim(field));
    if (!line.empty() && line.back() == ',') fields.push_back("");
    return fields;
}

/// Reads the time and value columns; throws weft::InvalidInput naming file, line and column.
void read_columns(const Options& o, std::vector<double>& time, std::vector<double>& values)
{
    std::ifstream in(o.csv_path);
    if (!in) throw weft::InvalidInput("cannot open --csv file '" + o.csv_path + "'");
    std::string line;
    if (!std::getline(in, line)) throw weft::InvalidInput("--csv file '" + o.csv_path + "' is empty");
    const std::vector<std::string> header = split(line);
    auto find = [&](const std::string& name, const char* flag) {
        for (std::size_t k = 0; k < header.size(); ++k) {
            if (header[k] == name) return k;
        }
        std::string names;
        for (const auto& h : header) names += (names.empty() ? "" : ", ") + h;
        throw weft::InvalidInput(std::string("invalid ") + flag + " = '" + name + "': no such column in '" +
                                 o.csv_path + "' (columns: " + names + ")");
    };
    const std::size_t time_index = find(o.time_column, "--time-column");
    const std::size_t value_index = find(o.column, "--column");
    long line_number = 1;
    while (std::getline(in, line)) {
        ++line_number;
        if (trim(line).empty()) continue;
        const std::vector<std::string> fields = split(line);
        if (fields.size() != header.size()) {
            throw weft::InvalidInput(o.csv_path + ":" + std::to_string(line_number) + ": " +
                                     std::to_string(fields.size()) + " fields, header has " +
                                     std::to_string(header.size()));
        }
        auto number = [&](std::size_t k) {
            const std::string& text = fields[k];
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || end == text.c_str() || *end != '\0' || !std::isfinite(v)) {
                throw weft::InvalidInput(o.csv_path + ":" + std::to_string(line_number) + ": column '" + header[k] +
                                         "' = '" + text + "' is not a finite number");
            }
            return v;
        };
        time.push_back(number(time_index));
        values.push_back(number(value_index));
    }
}

}  // namespace

int main(int argc, char** argv)
{
    Options options;
    std::string start;
    CLI::App app("damping_ratio", "damping_ratio");
    setup(app, options, start);
    try {
        switch (weft::examples::parse_command_line(app, argc, argv)) {
            case weft::examples::CommandLine::help:
                std::cout << app.help();
                return 0;
            case weft::examples::CommandLine::version:
                std::cout << "weft " << WEFT_VERSION_STRING << "\n";
                return 0;
            case weft::examples::CommandLine::run:
                break;
        }
        if (options.csv_path.empty()) throw weft::InvalidInput("missing required option --csv");
        if (options.column.empty()) throw weft::InvalidInput("missing required option --column");
        for (const std::string* value : {&options.csv_path, &options.column, &options.time_column})
            if (value->empty()) throw weft::InvalidInput("invalid command line: an empty file or column name");
        if (!start.empty()) options.start_time = std::stod(start);
    } catch (const weft::InvalidInput& e) {
        std::cerr << "damping_ratio: " << e.what() << "\nrun 'damping_ratio --help' for the options\n";
        return 2;
    }
    try {
        std::vector<double> time, values;
        read_columns(options, time, values);
        weft::DampingRatioFitOptions fit_options;
        fit_options.start_time = options.start_time;
        const weft::DampedOscillationFit fit = weft::fit_damped_oscillation(time, values, fit_options);
        std::cout << std::setprecision(10) << "{\"zeta\": " << fit.damping_ratio
                  << ", \"omega_n\": " << fit.natural_frequency << ", \"damped_frequency\": " << fit.damped_frequency
                  << ", \"decay_rate\": " << fit.decay_rate << ", \"amplitude\": " << fit.amplitude
                  << ", \"phase\": " << fit.phase << ", \"offset\": " << fit.offset
                  << ", \"rms_residual\": " << fit.rms_residual << ", \"time_origin\": " << fit.time_origin
                  << ", \"samples\": " << fit.samples << ", \"zero_crossings\": " << fit.zero_crossings
                  << ", \"iterations\": " << fit.iterations << "}\n";
    } catch (const weft::InvalidInput& e) {
        std::cerr << "damping_ratio: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
