#include <weft/io/progress.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;

namespace {

/// A clock the test moves by hand.
struct FakeClock {
    double now = 100.0;
    weft::ProgressReporter::Clock function()
    {
        return [this] { return now; };
    }
};

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

weft::ProgressOptions plain(double seconds, long steps)
{
    weft::ProgressOptions o;
    o.terminal = false;
    o.plain_every_seconds = seconds;
    o.plain_every_steps = steps;
    return o;
}

}  // namespace

TEST_CASE("progress: plain output prints the first step, then a line every interval of wall time", "[io][progress]")
{
    std::ostringstream out;
    FakeClock clock;
    weft::ProgressReporter progress(out, 1.0, plain(2.0, 0), clock.function());
    for (int step = 1; step <= 100; ++step) {
        clock.now += 0.125;  // a line every 16 steps (binary-exact times)
        progress.update(step, step * 0.001, 1, 10);
    }
    const std::vector<std::string> lines = lines_of(out.str());
    CHECK(out.str().find('\r') == std::string::npos);
    REQUIRE(lines.size() == 7);  // steps 1, 17, 33, 49, 65, 81, 97
    CHECK_THAT(lines[0], Contains("step 1 |"));
    CHECK_THAT(lines[1], Contains("step 17 |"));
    CHECK_THAT(lines[6], Contains("step 97 |"));
    CHECK(progress.lines_written() == 7);
}

TEST_CASE("progress: plain output can print every N steps instead", "[io][progress]")
{
    std::ostringstream out;
    FakeClock clock;
    weft::ProgressReporter progress(out, 1.0, plain(0, 10), clock.function());
    for (int step = 1; step <= 35; ++step) progress.update(step, step * 0.001, 1, 5);
    const std::vector<std::string> lines = lines_of(out.str());
    REQUIRE(lines.size() == 4);
    CHECK_THAT(lines[0], Contains("step 1 |"));
    CHECK_THAT(lines[1], Contains("step 11 |"));
    CHECK_THAT(lines[2], Contains("step 21 |"));
    CHECK_THAT(lines[3], Contains("step 31 |"));
}

TEST_CASE("progress: the line reports time, ms/step, mean iterations and ETA", "[io][progress]")
{
    std::ostringstream out;
    FakeClock clock;
    weft::ProgressReporter progress(out, 1.0, plain(0, 4), clock.function());
    clock.now += 0.004;
    progress.update(1, 0.001, 1, 10);
    // Steps 2..5: 4 steps in 20 ms wall, 3 Newton and 120 PCG iterations in all.
    const int newton[] = {1, 1, 0, 1};
    const int pcg[] = {20, 40, 0, 60};
    for (int k = 0; k < 4; ++k) {
        clock.now += 0.005;
        progress.update(2 + k, 0.001 * (2 + k), newton[k], pcg[k]);
    }
    const std::vector<std::string> lines = lines_of(out.str());
    REQUIRE(lines.size() == 2);
    CHECK_THAT(lines[0], Contains("step 1 | t 0.001/1 s (0.1%) | 4 ms/step | newton 1.00 | pcg 10.0"));
    CHECK_THAT(lines[1], Contains("step 5 | t 0.005/1 s (0.5%) | 5 ms/step | newton 0.75 | pcg 30.0"));
    // 0.024 s of wall time for 0.005 s simulated: 0.995 s left takes 4.776 s.
    CHECK_THAT(lines[1], EndsWith("ETA 0:00:05"));
}

TEST_CASE("progress: the ETA extrapolates simulated time per wall second", "[io][progress]")
{
    std::ostringstream out;
    FakeClock clock;
    weft::ProgressReporter progress(out, 2.0, plain(0, 0), clock.function());
    clock.now += 600;  // 10 minutes for a quarter of the run
    progress.update(1, 0.5, 1, 1);
    CHECK_THAT(out.str(), Contains("(25.0%)") && Contains("ETA 0:30:00"));
}

TEST_CASE("progress: on a terminal one line is rewritten in place, at most every redraw interval",
          "[io][progress][terminal]")
{
    std::ostringstream out;
    FakeClock clock;
    weft::ProgressOptions options;
    options.terminal = true;
    options.redraw_seconds = 0.1;
    {
        weft::ProgressReporter progress(out, 1.0, options, clock.function());
        for (int step = 1; step <= 100; ++step) {
            clock.now += 0.01;
            progress.update(step, step * 0.001, 1, 3);
        }
        const std::string text = out.str();
        CHECK(text.find('\n') == std::string::npos);  // no new lines while running
        const long redraws = std::count(text.begin(), text.end(), '\r');
        CHECK(redraws == progress.lines_written());
        CHECK(redraws >= 9);
        CHECK(redraws <= 11);  // 1 s of wall time at one redraw per 0.1 s
        progress.finish();
        CHECK_THAT(out.str(), Contains("\rdone: 100 steps") && EndsWith("\n"));
    }
    // finish() closed the line: the destructor adds nothing.
    CHECK(out.str().back() == '\n');
    CHECK(out.str()[out.str().size() - 2] != '\n');
}

TEST_CASE("progress: a shorter terminal line is padded over a longer one", "[io][progress][terminal]")
{
    std::ostringstream out;
    FakeClock clock;
    weft::ProgressOptions options;
    options.terminal = true;
    options.redraw_seconds = 0;
    weft::ProgressReporter progress(out, 1.0, options, clock.function());
    clock.now += 1;
    progress.update(1000, 0.5, 12, 12345);  // long line
    clock.now += 1;
    progress.update(1001, 0.6, 1, 1);  // shorter line
    const std::string text = out.str();
    const std::size_t second = text.rfind('\r');
    const std::size_t first_length = second - 1;      // the first '\r' is at 0
    CHECK(text.size() - second - 1 == first_length);  // same width, trailing spaces erase the rest
    CHECK(text.back() == ' ');
}

TEST_CASE("progress: a message on a terminal clears the line and the status is redrawn after it",
          "[io][progress][terminal]")
{
    std::ostringstream out;
    FakeClock clock;
    weft::ProgressOptions options;
    options.terminal = true;
    options.redraw_seconds = 10;
    weft::ProgressReporter progress(out, 1.0, options, clock.function());
    progress.update(1, 0.001, 1, 1);
    progress.message("dt halved to 0.0005 s");
    clock.now += 0.001;  // well within the redraw interval, yet redrawn after a message
    progress.update(2, 0.0015, 2, 2);
    const std::string text = out.str();
    CHECK_THAT(text, Contains("dt halved to 0.0005 s\n\rstep 2 |"));
    CHECK(progress.lines_written() == 2);
}

TEST_CASE("progress: destroying a reporter ends a half-drawn terminal line", "[io][progress][terminal]")
{
    std::ostringstream out;
    FakeClock clock;
    weft::ProgressOptions options;
    options.terminal = true;
    {
        weft::ProgressReporter progress(out, 1.0, options, clock.function());
        progress.update(1, 0.001, 1, 1);
        REQUIRE(out.str().back() != '\n');
    }
    CHECK(out.str().back() == '\n');
}

TEST_CASE("progress: plain finish prints a summary line once", "[io][progress]")
{
    std::ostringstream out;
    FakeClock clock;
    weft::ProgressReporter progress(out, 1.0, plain(1e9, 0), clock.function());
    for (int step = 1; step <= 4; ++step) {
        clock.now += 0.5;
        progress.update(step, 0.25 * step, 2, 8);
    }
    progress.finish();
    progress.finish();
    const std::vector<std::string> lines = lines_of(out.str());
    REQUIRE(lines.size() == 2);
    CHECK(lines[1] == "done: 4 steps, t 1 s, wall 0:00:02, 500 ms/step, newton 2/step, pcg 8/step");
}

TEST_CASE("progress: a non-positive duration is rejected", "[io][progress]")
{
    std::ostringstream out;
    CHECK_THROWS_AS(weft::ProgressReporter(out, 0.0), weft::InvalidInput);
    CHECK_THROWS_AS(weft::ProgressReporter(out, std::nan("")), weft::InvalidInput);
}
