#pragma once
/// @file bench_common.hpp
/// Helpers shared by the benchmarks: peak memory, timing and command-line
/// parsing. Parse errors are weft::InvalidInput, which main() prints.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <weft/core/error.hpp>

namespace weft::bench {

/// The process high-water mark of resident memory (VmHWM, MB), or -1 where
/// /proc/self/status does not list it.
inline double peak_rss_mb()
{
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
    return -1;
}

/// Milliseconds elapsed since `start` on the steady clock.
inline double elapsed_ms(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

/// Walks the command line one option at a time:
/// `for (Arguments args(argc, argv); args.next();) { ... args.option() ... args.value() ... }`.
class Arguments {
public:
    Arguments(int argc, char** argv) : m_argc(argc), m_argv(argv) {}

    /// Moves to the next option; false once none is left.
    bool next()
    {
        if (++m_index >= m_argc) return false;
        m_option = m_argv[m_index];
        return true;
    }

    /// The current option, e.g. "--steps".
    const std::string& option() const { return m_option; }

    /// Consumes and returns the current option's value.
    /// @throws InvalidInput "invalid <option>: missing value" at the end of the line.
    std::string value()
    {
        if (m_index + 1 >= m_argc) throw InvalidInput("invalid " + m_option + ": missing value");
        return m_argv[++m_index];
    }

    /// @throws InvalidInput naming the current option as unknown.
    [[noreturn]] void reject() const { throw InvalidInput("invalid option \"" + m_option + "\""); }

private:
    int m_argc;
    char** m_argv;
    int m_index = 0;
    std::string m_option;
};

/// A comma-separated list of sizes ("--sizes 50,100"), each an integer >= 2
/// (read by atoi); an empty list is returned as such.
inline std::vector<int> parse_sizes(const std::string& list)
{
    std::vector<int> sizes;
    std::stringstream ss(list);
    for (std::string item; std::getline(ss, item, ',');) {
        const int n = std::atoi(item.c_str());
        if (n < 2) throw InvalidInput("invalid --sizes entry \"" + item + "\": need an integer >= 2");
        sizes.push_back(n);
    }
    return sizes;
}

/// An integer option value (read by atoi) of at least `min`.
/// @throws InvalidInput "invalid <option>: need >= <min>".
inline int parse_at_least(const std::string& option, const std::string& text, int min)
{
    const int n = std::atoi(text.c_str());
    if (n < min) throw InvalidInput("invalid " + option + ": need >= " + std::to_string(min));
    return n;
}

}  // namespace weft::bench
