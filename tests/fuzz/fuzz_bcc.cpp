// libFuzzer harness: BCC bytes -> parse_bcc, and what parses is written back
// with write_bcc and read again (scripts/fuzz.sh). Bad input must end in
// weft::InvalidInput with a message; a file that parses must round-trip.
#include <unistd.h>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include <weft/io/frame_writers.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    weft::BccCurves curves;
    try {
        curves = weft::parse_bcc(std::string(reinterpret_cast<const char*>(data), size), "<fuzz>");
    } catch (const weft::InvalidInput& e) {
        if (std::string(e.what()).empty()) __builtin_trap();
        return 0;
    }
    weft::CurvePoints points;
    weft::CurveIndices lines;
    for (const auto& curve : curves.curves) {
        lines.emplace_back();
        for (const auto& p : curve) {
            lines.back().push_back(static_cast<weft::Index>(points.size()));
            points.push_back({p[0], p[1], p[2]});
        }
    }
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("weft_fuzz_bcc_" + std::to_string(::getpid()) + ".bcc");
    try {
        weft::write_bcc(path, points, lines, curves.closed, curves.up_dimension, curves.type);
    } catch (const weft::InvalidInput&) {
        return 0;  // e.g. reflected handles beyond float range: refused with a message
    }
    const weft::BccCurves back = weft::read_bcc(path);
    if (back.curves != curves.curves || back.closed != curves.closed || back.type != curves.type) __builtin_trap();
    return 0;
}
