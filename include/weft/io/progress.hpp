#pragma once
/// @file progress.hpp
/// Progress reporting for long runs. Host-only.
///
/// A status line reads
///   step 1200 | t 0.12/1 s (12.0%) | 4.21 ms/step | newton 1.00 | pcg 87.3 | ETA 0:03:42
/// where ms/step and the Newton/PCG iterations are means per step since the
/// previous line, and the ETA extrapolates the simulated time reached per
/// wall-clock second since the start (adaptive time steps make the step count
/// a poor measure of progress).
///
/// On a terminal the line is rewritten in place with '\r' (at most every
/// `redraw_seconds`); elsewhere (a log file, CI) plain lines are printed: the
/// first step, then whenever `plain_every_seconds` have passed or
/// `plain_every_steps` steps were taken (either may be 0 = off; both off =
/// every step). The stream, the terminal flag and the clock are injected, so
/// the behaviour is testable.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <ostream>
#include <string>
#include <utility>

#if defined(_WIN32)
#include <io.h>
#else
#include <unistd.h>
#endif

#include <weft/core/error.hpp>

namespace weft {

/// Whether standard error is an interactive terminal (decides '\r' redraws).
inline bool stderr_is_terminal()
{
#if defined(_WIN32)
    return _isatty(2) != 0;
#else
    return isatty(STDERR_FILENO) != 0;
#endif
}

/// Seconds on a monotonic clock, the default clock of ProgressReporter.
inline double steady_clock_seconds()
{
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

struct ProgressOptions {
    bool terminal = false;             ///< rewrite one line with '\r' instead of printing lines
    double redraw_seconds = 0.1;       ///< terminal: minimal wall time between redraws
    double plain_every_seconds = 2.0;  ///< plain: a line once this much wall time has passed (0 = off)
    long plain_every_steps = 0;        ///< plain: a line every this many steps (0 = off)
};

class ProgressReporter {
public:
    using Clock = std::function<double()>;  ///< wall-clock seconds, monotonic

    /// @param out       where lines go (typically std::cerr)
    /// @param duration  simulated time of the whole run (s), > 0
    ProgressReporter(std::ostream& out, double duration, ProgressOptions options = {},
                     Clock clock = steady_clock_seconds)
        : m_out(out),
          m_duration(require_positive("progress duration", duration)),
          m_options(options),
          m_clock(std::move(clock))
    {
        m_start = m_last_line_time = m_interval_start = m_clock();
    }

    ProgressReporter(const ProgressReporter&) = delete;
    ProgressReporter& operator=(const ProgressReporter&) = delete;

    /// Ends a half-drawn terminal line so later output starts on a new line.
    ~ProgressReporter()
    {
        if (m_line_open) m_out << '\n' << std::flush;
    }

    /// Call after every completed step.
    /// @param step               steps completed so far (1 after the first)
    /// @param time               simulated time reached (s)
    /// @param newton_iterations  Newton iterations of this step
    /// @param pcg_iterations     PCG iterations of this step (all Newton iterations)
    void update(long step, double time, int newton_iterations, int pcg_iterations)
    {
        const double now = m_clock();
        m_step = step;
        m_time = time;
        m_interval_steps += 1;
        m_interval_newton += newton_iterations;
        m_interval_pcg += pcg_iterations;
        m_total_steps += 1;
        m_total_newton += newton_iterations;
        m_total_pcg += pcg_iterations;

        const bool first = m_lines == 0;
        bool due;
        if (m_options.terminal) {
            due = first || m_redraw || now - m_last_line_time >= m_options.redraw_seconds;
        } else {
            const bool by_time =
                m_options.plain_every_seconds > 0 && now - m_last_line_time >= m_options.plain_every_seconds;
            const bool by_steps =
                m_options.plain_every_steps > 0 && step - m_last_line_step >= m_options.plain_every_steps;
            const bool every_step = m_options.plain_every_seconds <= 0 && m_options.plain_every_steps <= 0;
            due = first || by_time || by_steps || every_step;
        }
        if (!due) return;

        const std::string line = status_line(now);
        emit(line);
        m_last_line_time = now;
        m_last_line_step = step;
        m_interval_steps = 0;
        m_interval_newton = 0;
        m_interval_pcg = 0;
        m_interval_start = now;
    }

    /// Prints a one-off message (e.g. "dt halved to 5e-4 s") on its own line;
    /// on a terminal the status line is cleared first and redrawn on the next
    /// update.
    void message(const std::string& text)
    {
        if (m_line_open) {
            m_out << '\r' << std::string(m_last_width, ' ') << '\r';
            m_line_open = false;
            m_last_width = 0;
            m_redraw = true;
        }
        m_out << text << '\n' << std::flush;
    }

    /// Prints the summary of the run (once).
    void finish()
    {
        if (m_finished) return;
        m_finished = true;
        const double wall = m_clock() - m_start;
        const double steps = double(m_total_steps);
        std::string line = "done: " + std::to_string(m_total_steps) + " steps, t " + format("%.6g", m_time) +
                           " s, wall " + format_duration(wall);
        if (m_total_steps > 0)
            line += ", " + format_amount(1000 * wall / steps) + " ms/step, newton " +
                    format_amount(m_total_newton / steps) + "/step, pcg " + format_amount(m_total_pcg / steps) +
                    "/step";
        if (m_options.terminal) {
            emit(line);
            m_out << '\n' << std::flush;
            m_line_open = false;
        } else {
            emit(line);
        }
    }

    /// Status lines printed so far (redraws included).
    long lines_written() const { return m_lines; }

private:
    static std::string format(const char* spec, double value)
    {
        char buffer[64];
        std::snprintf(buffer, sizeof buffer, spec, value);
        return buffer;
    }

    /// Three significant digits without switching to exponent notation.
    static std::string format_amount(double value)
    {
        return std::abs(value) >= 100 ? format("%.0f", value) : format("%.3g", value);
    }

    /// H:MM:SS.
    static std::string format_duration(double seconds)
    {
        if (!std::isfinite(seconds) || seconds < 0) return "--:--:--";
        const long total = static_cast<long>(std::lround(seconds));
        char buffer[64];
        std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", total / 3600, (total / 60) % 60, total % 60);
        return buffer;
    }

    std::string status_line(double now) const
    {
        const double steps = double(m_interval_steps);
        const double percent = 100 * m_time / m_duration;
        const double elapsed = now - m_start;
        // Simulated seconds per wall second so far extrapolate the rest.
        const double eta = m_time > 0 ? elapsed * (m_duration - m_time) / m_time : -1;
        return "step " + std::to_string(m_step) + " | t " + format("%.6g", m_time) + "/" + format("%.6g", m_duration) +
               " s (" + format("%.1f", percent) + "%) | " + format_amount(1000 * (now - m_interval_start) / steps) +
               " ms/step | newton " + format("%.2f", m_interval_newton / steps) + " | pcg " +
               format("%.1f", m_interval_pcg / steps) + " | ETA " + format_duration(m_time >= m_duration ? 0.0 : eta);
    }

    void emit(const std::string& line)
    {
        if (m_options.terminal) {
            // Pad with spaces to erase what is left of a longer previous line.
            const std::size_t pad = m_last_width > line.size() ? m_last_width - line.size() : 0;
            m_out << '\r' << line << std::string(pad, ' ') << std::flush;
            m_last_width = line.size();
            m_line_open = true;
            m_redraw = false;
        } else {
            m_out << line << '\n' << std::flush;
        }
        ++m_lines;
    }

    std::ostream& m_out;
    double m_duration;
    ProgressOptions m_options;
    Clock m_clock;

    double m_start = 0;
    double m_last_line_time = 0;
    double m_interval_start = 0;
    long m_last_line_step = 0;
    long m_step = 0;
    double m_time = 0;
    long m_interval_steps = 0;
    double m_interval_newton = 0;
    double m_interval_pcg = 0;
    long m_total_steps = 0;
    double m_total_newton = 0;
    double m_total_pcg = 0;
    long m_lines = 0;
    std::size_t m_last_width = 0;
    bool m_line_open = false;
    bool m_redraw = false;
    bool m_finished = false;
};

}  // namespace weft
