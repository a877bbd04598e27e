#pragma once
/// @file json_reader.hpp
/// The strict JSON reader under weft's file formats (scenes, tabulated
/// materials): typed readers that take a value and its full key path, an
/// `Object` with the strict unknown-key check, and text/file parsing that
/// rejects duplicate keys. Every error is a weft::InvalidInput that names the
/// key path and the offending value, e.g. `cloth[0].spacing: must be > 0,
/// got -0.001`; no NaN or infinity gets through. Host-only.

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <locale>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <weft/core/error.hpp>

namespace weft {
namespace json_reader {

using json = nlohmann::json;

inline std::string child_path(const std::string& parent, const std::string& key)
{
    return parent.empty() ? key : parent + "." + key;
}

inline std::string element_path(const std::string& parent, std::size_t index)
{
    return parent + "[" + std::to_string(index) + "]";
}

/// The shortest of 15..17 significant digits that reads back as `value`.
inline std::string format_number(double value)
{
    std::string text;
    for (int digits = 15; digits <= 17; ++digits) {
        std::ostringstream os;
        os.imbue(std::locale::classic());
        os.precision(digits);
        os << value;
        text = os.str();
        std::istringstream back(text);
        back.imbue(std::locale::classic());
        double read = 0;
        if (!std::isfinite(value) || ((back >> read) && read == value)) break;
    }
    return text;
}

/// "string \"fast\"", "number -0.001", "array of 2 elements", ... for messages.
inline std::string describe_value(const json& j)
{
    switch (j.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::boolean:
            return std::string("boolean ") + (j.get<bool>() ? "true" : "false");
        case json::value_t::string:
            return "string " + j.dump();
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
            return "number " + j.dump();
        case json::value_t::number_float:
            return "number " + format_number(j.get<double>());
        case json::value_t::array:
            return "array of " + std::to_string(j.size()) + (j.size() == 1 ? " element" : " elements");
        case json::value_t::object:
            return "object";
        default:
            return j.type_name();
    }
}

[[noreturn]] inline void fail(const std::string& path, const std::string& problem)
{
    throw InvalidInput(path + ": " + problem);
}

inline std::size_t edit_distance(const std::string& a, const std::string& b)
{
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

inline std::string quoted_list(const std::vector<std::string>& items)
{
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", \"" : "\"") + items[i] + "\"";
    return out;
}

// ---------------------------------------------------------------------------
// Scalar readers: each takes the value and its full path.

inline double read_number(const json& j, const std::string& path)
{
    if (!j.is_number()) fail(path, "expected a number, got " + describe_value(j));
    const double value = j.get<double>();
    if (!std::isfinite(value)) fail(path, "must be a finite number, got " + format_number(value));
    return value;
}

inline double read_positive(const json& j, const std::string& path)
{
    const double value = read_number(j, path);
    if (!(value > 0)) fail(path, "must be > 0, got " + format_number(value));
    return value;
}

inline double read_non_negative(const json& j, const std::string& path)
{
    const double value = read_number(j, path);
    if (!(value >= 0)) fail(path, "must be >= 0, got " + format_number(value));
    return value;
}

inline int read_integer(const json& j, const std::string& path, int minimum)
{
    if (!j.is_number_integer()) {
        const std::string what = j.is_number_float() ? " (write integers without a decimal point or exponent)" : "";
        fail(path, "expected an integer, got " + describe_value(j) + what);
    }
    const bool too_large = j.is_number_unsigned()
                               ? j.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<int>::max())
                               : j.get<std::int64_t>() > std::numeric_limits<int>::max();
    const bool too_small = !j.is_number_unsigned() && j.get<std::int64_t>() < std::numeric_limits<int>::min();
    if (too_large || too_small) fail(path, "integer out of range, got " + j.dump());
    const int value = j.get<int>();
    if (value < minimum) fail(path, "must be >= " + std::to_string(minimum) + ", got " + std::to_string(value));
    return value;
}

inline bool read_bool(const json& j, const std::string& path)
{
    if (!j.is_boolean()) fail(path, "expected a boolean (true or false), got " + describe_value(j));
    return j.get<bool>();
}

inline std::string read_string(const json& j, const std::string& path)
{
    if (!j.is_string()) fail(path, "expected a string, got " + describe_value(j));
    return j.get<std::string>();
}

inline std::string read_non_empty_string(const json& j, const std::string& path)
{
    std::string value = read_string(j, path);
    if (value.empty()) fail(path, "must be a non-empty string");
    return value;
}

inline std::string read_choice(const json& j, const std::string& path, const std::vector<std::string>& choices,
                               const char* what)
{
    const std::string value = read_string(j, path);
    if (std::find(choices.begin(), choices.end(), value) == choices.end())
        fail(path,
             std::string("unknown ") + what + " \"" + value + "\" (expected one of " + quoted_list(choices) + ")");
    return value;
}

inline std::array<double, 3> read_vector3(const json& j, const std::string& path)
{
    if (!j.is_array() || j.size() != 3) fail(path, "expected an array of 3 numbers, got " + describe_value(j));
    std::array<double, 3> v{};
    for (std::size_t k = 0; k < 3; ++k) v[k] = read_number(j[k], element_path(path, k));
    return v;
}

// ---------------------------------------------------------------------------

/// A JSON object at a known path: lookups by key, and the strict unknown-key
/// check, which runs before any value is read so that a misspelt key is
/// reported as such rather than as a missing one.
class Object {
public:
    Object(const json& j, std::string path) : m_json(j), m_path(std::move(path))
    {
        if (!j.is_object()) fail(m_path.empty() ? "scene" : m_path, "expected an object, got " + describe_value(j));
    }

    /// Throws for every key not in `allowed`, naming each and suggesting the
    /// nearest allowed key.
    void allow_only(const std::vector<std::string>& allowed, const std::string& context = "") const
    {
        std::string message;
        for (auto it = m_json.begin(); it != m_json.end(); ++it) {
            if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
            std::string best;
            std::size_t best_distance = std::numeric_limits<std::size_t>::max();
            for (const std::string& candidate : allowed) {
                const std::size_t d = edit_distance(it.key(), candidate);
                if (d < best_distance) best_distance = d, best = candidate;
            }
            if (!message.empty()) message += "; ";
            message += path(it.key()) + ": unknown key" + context;
            if (best_distance <= std::max<std::size_t>(2, it.key().size() / 3))
                message += " (did you mean \"" + best + "\"?)";
            else
                message += " (allowed: " + quoted_list(allowed) + ")";
        }
        if (!message.empty()) throw InvalidInput(message);
    }

    bool has(const std::string& key) const { return m_json.contains(key); }
    std::string path(const std::string& key) const { return child_path(m_path, key); }
    const std::string& path() const { return m_path; }

    const json& required(const std::string& key) const
    {
        const auto it = m_json.find(key);
        if (it == m_json.end()) fail(path(key), "required key is missing");
        return *it;
    }

    template <class Reader>
    auto get(const std::string& key, Reader reader) const
    {
        return reader(required(key), path(key));
    }

    template <class Reader, class Value>
    Value get_or(const std::string& key, Reader reader, Value fallback) const
    {
        const auto it = m_json.find(key);
        return it == m_json.end() ? fallback : Value(reader(*it, path(key)));
    }

private:
    const json& m_json;
    std::string m_path;
};

/// Tracks the key path while nlohmann parses text, to reject duplicate keys
/// (nlohmann keeps the last one silently) and to name the key whose number
/// overflows a double.
class KeyPathTracker {
public:
    bool operator()(int /*depth*/, json::parse_event_t event, json& parsed)
    {
        switch (event) {
            case json::parse_event_t::object_start:
            case json::parse_event_t::array_start:
                m_frames.push_back(Frame{event == json::parse_event_t::object_start, value_path(), {}, {}, 0});
                break;
            case json::parse_event_t::object_end:
            case json::parse_event_t::array_end:
                m_frames.pop_back();
                break;
            case json::parse_event_t::key: {
                Frame& f = m_frames.back();
                const std::string key = parsed.get<std::string>();
                if (std::find(f.keys.begin(), f.keys.end(), key) != f.keys.end())
                    fail(child_path(f.path, key), "duplicate key (JSON objects keep only one value per key)");
                f.keys.push_back(key);
                f.key = key;
                break;
            }
            case json::parse_event_t::value:
                value_path();
                break;
        }
        return true;
    }

    /// The path of the value being read when parsing stopped.
    std::string current_path() const
    {
        if (m_frames.empty()) return "scene";
        const Frame& f = m_frames.back();
        if (f.object) return f.key.empty() ? (f.path.empty() ? "scene" : f.path) : child_path(f.path, f.key);
        return element_path(f.path, f.next_index);
    }

private:
    struct Frame {
        bool object;
        std::string path;
        std::vector<std::string> keys;
        std::string key;
        std::size_t next_index;
    };

    // Path of a value that starts now; advances the parent array's index.
    std::string value_path()
    {
        if (m_frames.empty()) return "";
        Frame& f = m_frames.back();
        if (f.object) return child_path(f.path, f.key);
        return element_path(f.path, f.next_index++);
    }

    std::vector<Frame> m_frames;
};

/// Parses JSON text, rejecting duplicate keys (which JSON libraries keep
/// silently). `source` names the text in errors: "<source>: JSON syntax
/// error at byte N: ..." or "<source>: <key path>: <problem>".
inline json parse_json_text(const std::string& text, const std::string& source)
{
    KeyPathTracker tracker;
    try {
        return json::parse(text, std::ref(tracker));
    } catch (const json::parse_error& e) {
        throw InvalidInput(source + ": JSON syntax error at byte " + std::to_string(e.byte) + ": " + e.what());
    } catch (const json::out_of_range& e) {
        // nlohmann rejects numbers that overflow a double (e.g. 1e999).
        throw InvalidInput(source + ": " + tracker.current_path() + ": must be a finite number (" + e.what() + ")");
    } catch (const json::exception& e) {
        throw InvalidInput(source + ": " + tracker.current_path() + ": " + e.what());
    } catch (const InvalidInput& e) {
        throw InvalidInput(source + ": " + e.what());
    }
}

/// Returns `validate()`, prefixing the InvalidInput it throws with "<source>: ".
template <class Validate>
auto validate_from(const std::string& source, Validate&& validate) -> decltype(validate())
{
    try {
        return validate();
    } catch (const InvalidInput& e) {
        throw InvalidInput(source + ": " + e.what());
    }
}

/// Reads and parses a JSON file (see parse_json_text). `what` names the kind
/// of file in errors about the file itself, e.g. `scene file "a.json": no
/// such file`; syntax errors are prefixed with the path alone.
inline json read_json_file(const std::filesystem::path& path, const std::string& what)
{
    const std::string name = path.string();
    const std::string file = what + " file \"" + name + "\": ";
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) throw InvalidInput(file + "no such file");
    if (std::filesystem::is_directory(status)) throw InvalidInput(file + "is a directory, not a file");
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const std::string reason = errno ? std::strerror(errno) : "unknown error";
        throw InvalidInput(file + "cannot be opened for reading (" + reason + ")");
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw InvalidInput(file + "read error");
    return parse_json_text(text, name);
}

}  // namespace json_reader
}  // namespace weft
