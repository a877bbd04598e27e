#pragma once
/// @file scene_output.hpp
/// The parser of a scene's `output` object (keys: scene_schema.hpp,
/// docs/scenes.md). Host-only.

#include <algorithm>
#include <string>

#include <weft/io/json_reader.hpp>
#include <weft/io/scene_description.hpp>
#include <weft/io/scene_schema.hpp>

namespace weft {
namespace scene_detail {

using namespace json_reader;

inline OutputDescription parse_output(const json& j, const std::string& path)
{
    const Object o(j, path);
    o.allow_only(scene_keys::output());
    OutputDescription out;
    auto at_least_one = [](const json& v, const std::string& p) { return read_integer(v, p, 1); };
    out.csv = o.get_or("csv", read_non_empty_string, std::string());
    out.csv_every = o.get_or("csv_every", at_least_one, out.csv_every);
    out.frames = o.get_or("frames", read_non_empty_string, std::string());
    out.every = o.get_or("every", at_least_one, out.every);
    if (o.has("formats")) {
        const json& formats = o.required("formats");
        const std::string formats_path = o.path("formats");
        if (!formats.is_array() || formats.empty())
            fail(formats_path, "expected a non-empty array of format names, got " + describe_value(formats));
        out.formats.clear();
        for (std::size_t k = 0; k < formats.size(); ++k) {
            const std::string item = element_path(formats_path, k);
            const std::string format = read_choice(formats[k], item, {"vtk", "vtp", "obj", "bcc"}, "frame format");
            if (std::find(out.formats.begin(), out.formats.end(), format) != out.formats.end())
                fail(item, "format \"" + format + "\" is listed twice");
            out.formats.push_back(format);
        }
    }
    out.vtp_encoding = o.get_or(
        "vtp_encoding",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, {"binary", "ascii"}, "VTK XML encoding");
        },
        out.vtp_encoding);
    if (out.frames.empty()) {
        for (const char* key : {"every", "formats", "vtp_encoding"})
            if (o.has(key)) fail(o.path(key), "given, but output.frames (the directory for frames) is not set");
    }
    if (out.csv.empty() && o.has("csv_every"))
        fail(o.path("csv_every"), "given, but output.csv (the CSV file) is not set");
    return out;
}

}  // namespace scene_detail
}  // namespace weft
