#pragma once
/// @file cli_common.hpp
/// The command lines of weft's programs (weft-run, the examples, the
/// benchmarks), parsed with CLI11 (Debian: libcli11-dev): `--help` lists
/// every option with its default, `--version` prints weft's version, and an
/// unknown option or a bad value is an error that names it.

#include <cmath>
#include <string>

#include <CLI/CLI.hpp>

#include <weft/core/error.hpp>
#include <weft/core/version.hpp>

namespace weft::examples {

/// What a command line asks for.
enum class CommandLine {
    run,      ///< the program's work
    help,     ///< print app.help() and exit 0
    version,  ///< print the version line and exit 0
};

/// An App with `--help`/`-h` and `--version`, options' defaults shown.
inline void setup_app(CLI::App& app)
{
    app.set_version_flag("--version", std::string("weft ") + WEFT_VERSION_STRING);
    app.get_formatter()->column_width(34);
    app.option_defaults()->always_capture_default();
}

/// Parses argv into `app`'s bound variables. CLI11's errors (unknown option,
/// missing or bad value, missing required argument) become InvalidInput
/// carrying CLI11's message, which names the option and the value.
inline CommandLine parse_command_line(CLI::App& app, int argc, const char* const* argv)
{
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        return CommandLine::help;
    } catch (const CLI::CallForAllHelp&) {
        return CommandLine::help;
    } catch (const CLI::CallForVersion&) {
        return CommandLine::version;
    } catch (const CLI::ParseError& e) {
        throw InvalidInput(e.what());
    }
    return CommandLine::run;
}

/// parse_command_line for option structs with `help` and `version` flags:
/// sets them and returns true when the program is to run.
template <class Options>
bool parse_options(CLI::App& app, int argc, const char* const* argv, Options& o)
{
    const CommandLine what = parse_command_line(app, argc, argv);
    o.help = what == CommandLine::help;
    o.version = what == CommandLine::version;
    return what == CommandLine::run;
}

/// A finite number > 0 (CLI11's message names the option and the value).
inline CLI::Validator positive_number()
{
    return CLI::Validator(
        [](std::string& text) -> std::string {
            double value = 0;
            if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value) || !(value > 0))
                return "\"" + text + "\" is not a positive number";
            return std::string();
        },
        "POSITIVE");
}

/// A finite number (any sign).
inline CLI::Validator finite_number()
{
    return CLI::Validator(
        [](std::string& text) -> std::string {
            double value = 0;
            if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value))
                return "\"" + text + "\" is not a finite number";
            return std::string();
        },
        "NUMBER");
}

}  // namespace weft::examples
