#pragma once
/// @file frame_writers.hpp
/// Writers for yarn curves (frames) and time series. Host-only.
///
/// Curves are given as shared points plus polylines of point indices:
///   @param points     #points positions (m), CurvePoints = vector of {x, y, z}
///   @param polylines  #curves lists of indices into `points`, in order along
///                     the curve, at least 2 each (a yarn is one polyline)
///
/// Every writer creates missing parent directories, checks its input first
/// (a non-finite coordinate or an index out of range throws InvalidInput
/// naming the file and the offending item, before anything is written: a
/// frame never carries a silent NaN), and throws std::runtime_error naming
/// the file when the file cannot be created or written.
///
/// Formats:
/// - write_vtk_polylines: legacy VTK 3.0 ASCII POLYDATA with LINES (+ optional
///   point scalars). ParaView opens numbered files as a series, but a .pvd
///   collection cannot list legacy files (ParaView's collection reader only
///   instantiates XML readers), hence:
/// - write_vtp_polylines: the same data as VTK XML PolyData (.vtp), binary
///   (appended raw data) or ASCII;
/// - PvdWriter: a ParaView .pvd time collection of .vtp (or other XML) files;
/// - write_obj_polylines: Wavefront OBJ `v` + `l` records;
/// - write_bcc / read_bcc: Cem Yuksel's binary curve collection (BCC) of the
///   yarn-model data sets: 64-byte header, then per curve an int32 point count
///   (negative = closed curve) and float32 xyz per point, all little-endian;
///   polylines ("PL") by default;
/// - CsvWriter: a time series, one row of doubles per call, flushed per row.

#include <array>
#include <cctype>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <locale>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <weft/core/config.hpp>
#include <weft/core/error.hpp>

namespace weft {

/// #points positions {x, y, z}.
using CurvePoints = std::vector<std::array<double, 3>>;
/// #curves polylines, each a list of indices into CurvePoints.
using CurveIndices = std::vector<std::vector<Index>>;

/// A named per-point scalar field (#points values), e.g. "arc_length".
/// Names are non-empty and contain no whitespace (VTK reads names as tokens).
struct PointScalars {
    std::string name;
    std::vector<double> values;
};

namespace io_detail {

inline std::string quoted(const std::filesystem::path& path)
{
    return "\"" + path.string() + "\"";
}

/// Opens `path` for writing, creating its parent directories.
inline std::ofstream open_for_writing(const std::filesystem::path& path, std::ios::openmode mode = std::ios::out)
{
    const std::filesystem::path parent = path.parent_path();
    if (!parent.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(parent, ec);
        if (ec)
            throw std::runtime_error(quoted(path) + ": cannot create directory " + quoted(parent) + " (" +
                                     ec.message() + ")");
    }
    errno = 0;
    std::ofstream out(path, mode | std::ios::out | std::ios::trunc);
    if (!out) {
        const std::string reason = errno ? std::strerror(errno) : "unknown error";
        throw std::runtime_error(quoted(path) + ": cannot open for writing (" + reason + ")");
    }
    out.imbue(std::locale::classic());
    out.precision(std::numeric_limits<double>::max_digits10);
    return out;
}

/// Writes the shortest text that reads back as exactly `value`.
inline void put_number(std::ostream& out, double value)
{
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
    char buffer[32];
    const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.write(buffer, r.ptr - buffer);
#else
    out << value;  // the stream's precision is max_digits10: exact, if longer
#endif
}

inline void put_point(std::ostream& out, const std::array<double, 3>& p)
{
    put_number(out, p[0]);
    out << ' ';
    put_number(out, p[1]);
    out << ' ';
    put_number(out, p[2]);
}

inline void finish_writing(std::ofstream& out, const std::filesystem::path& path)
{
    out.flush();
    if (!out) throw std::runtime_error(quoted(path) + ": write failed (disk full or file system error?)");
    out.close();
    if (out.fail()) throw std::runtime_error(quoted(path) + ": closing the file failed");
}

/// Checks coordinates and indices; `closed` may be empty (all open).
inline void check_curves(const std::filesystem::path& path, const CurvePoints& points, const CurveIndices& polylines,
                         const std::vector<bool>& closed = {})
{
    for (std::size_t i = 0; i < points.size(); ++i)
        for (int k = 0; k < 3; ++k)
            if (!std::isfinite(points[i][k])) {
                std::ostringstream os;
                os << quoted(path) << ": point " << i << " has a non-finite coordinate (" << points[i][0] << ", "
                   << points[i][1] << ", " << points[i][2] << "); refusing to write it";
                throw InvalidInput(os.str());
            }
    if (!closed.empty() && closed.size() != polylines.size())
        throw InvalidInput(quoted(path) + ": " + std::to_string(closed.size()) + " closed flags for " +
                           std::to_string(polylines.size()) + " polylines");
    for (std::size_t c = 0; c < polylines.size(); ++c) {
        const std::size_t minimum = (!closed.empty() && closed[c]) ? 3 : 2;
        if (polylines[c].size() < minimum)
            throw InvalidInput(quoted(path) + ": polyline " + std::to_string(c) + " has " +
                               std::to_string(polylines[c].size()) + " points, needs at least " +
                               std::to_string(minimum));
        for (const Index i : polylines[c])
            if (i < 0 || std::size_t(i) >= points.size())
                throw InvalidInput(quoted(path) + ": polyline " + std::to_string(c) + " refers to point " +
                                   std::to_string(i) + ", but there are " + std::to_string(points.size()) + " points");
    }
}

inline void check_scalars(const std::filesystem::path& path, const std::vector<PointScalars>& scalars,
                          std::size_t point_count)
{
    for (std::size_t s = 0; s < scalars.size(); ++s) {
        const PointScalars& field = scalars[s];
        bool bad_name = field.name.empty();
        for (const char ch : field.name)
            bad_name = bad_name || std::isspace(static_cast<unsigned char>(ch)) || ch == '"';
        if (bad_name)
            throw InvalidInput(quoted(path) + ": point scalar name \"" + field.name +
                               "\" must be non-empty, without whitespace or quotes");
        for (std::size_t t = 0; t < s; ++t)
            if (scalars[t].name == field.name)
                throw InvalidInput(quoted(path) + ": point scalar \"" + field.name + "\" is given twice");
        if (field.values.size() != point_count)
            throw InvalidInput(quoted(path) + ": point scalar \"" + field.name + "\" has " +
                               std::to_string(field.values.size()) + " values for " + std::to_string(point_count) +
                               " points");
        for (std::size_t i = 0; i < field.values.size(); ++i)
            if (!std::isfinite(field.values[i]))
                throw InvalidInput(quoted(path) + ": point scalar \"" + field.name + "\" is non-finite at point " +
                                   std::to_string(i) + "; refusing to write it");
    }
}

inline std::string xml_escape(const std::string& text)
{
    std::string out;
    for (const char ch : text) {
        switch (ch) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            default:
                out += ch;
        }
    }
    return out;
}

inline void put_u32(std::string& bytes, std::uint32_t v)
{
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>((v >> (8 * b)) & 0xffu));
}

inline void put_u64(std::string& bytes, std::uint64_t v)
{
    for (int b = 0; b < 8; ++b) bytes.push_back(static_cast<char>((v >> (8 * b)) & 0xffu));
}

inline void put_f32(std::string& bytes, float f)
{
    static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559, "BCC needs IEEE-754 binary32 floats");
    std::uint32_t v;
    std::memcpy(&v, &f, 4);
    put_u32(bytes, v);
}

}  // namespace io_detail

/// How a VTK XML file (.vtp) stores its arrays.
enum class VtpEncoding {
    binary,  ///< raw little-endian bytes in an appended block (64-bit block sizes), as ParaView writes them
    ascii,   ///< text inside each DataArray, every double exact (17 significant digits at most)
};

namespace io_detail {

/// Polydata cells: open polylines or polygons (triangles of a cloth mesh).
enum class CellKind { lines, polygons };

inline void write_vtk_cells(const std::filesystem::path& path, const CurvePoints& points, const CurveIndices& polylines,
                            const std::vector<PointScalars>& point_scalars, CellKind kind)
{
    check_curves(path, points, polylines);
    io_detail::check_scalars(path, point_scalars, points.size());
    std::ofstream out = io_detail::open_for_writing(path);
    out << "# vtk DataFile Version 3.0\n"
        << (kind == CellKind::lines ? "weft yarn curves\n" : "weft triangle mesh\n") << "ASCII\n"
        << "DATASET POLYDATA\n"
        << "POINTS " << points.size() << " double\n";
    for (const auto& p : points) {
        io_detail::put_point(out, p);
        out << '\n';
    }
    std::size_t size = 0;
    for (const auto& line : polylines) size += line.size() + 1;
    out << (kind == CellKind::lines ? "LINES " : "POLYGONS ") << polylines.size() << ' ' << size << '\n';
    for (const auto& line : polylines) {
        out << line.size();
        for (const Index i : line) out << ' ' << i;
        out << '\n';
    }
    if (!point_scalars.empty()) {
        out << "POINT_DATA " << points.size() << '\n';
        for (const PointScalars& field : point_scalars) {
            out << "SCALARS " << field.name << " double 1\nLOOKUP_TABLE default\n";
            for (const double v : field.values) {
                io_detail::put_number(out, v);
                out << '\n';
            }
        }
    }
    io_detail::finish_writing(out, path);
}

/// A VTK XML data array, written inline as text or into the appended block.
struct VtpArrays {
    VtpEncoding encoding;
    std::string appended;  ///< raw appended data: per array a UInt64 byte count, then the bytes

    void put_f64(double x)
    {
        std::uint64_t v;
        std::memcpy(&v, &x, 8);
        put_u64(appended, v);
    }

    /// Writes one DataArray element; `attributes` without the format.
    template <typename Values, typename Put>
    void write(std::ostream& out, const std::string& attributes, const Values& values, std::size_t count, Put put)
    {
        out << "        <DataArray " << attributes;
        if (encoding == VtpEncoding::binary) {
            out << " format=\"appended\" offset=\"" << appended.size() << "\"/>\n";
            put_u64(appended, 0);  // the byte count, set below
            const std::size_t start = appended.size();
            for (std::size_t i = 0; i < count; ++i) put(values, i, *this, nullptr);
            const std::uint64_t size = appended.size() - start;
            for (int b = 0; b < 8; ++b)
                appended[start - 8 + std::size_t(b)] = static_cast<char>((size >> (8 * b)) & 0xffu);
            return;
        }
        out << " format=\"ascii\">\n";
        for (std::size_t i = 0; i < count; ++i) put(values, i, *this, &out);
        out << "        </DataArray>\n";
    }
};

inline void write_vtp_cells(const std::filesystem::path& path, const CurvePoints& points, const CurveIndices& polylines,
                            const std::vector<PointScalars>& point_scalars, CellKind kind, VtpEncoding encoding)
{
    check_curves(path, points, polylines);
    io_detail::check_scalars(path, point_scalars, points.size());
    std::ofstream out = io_detail::open_for_writing(path, std::ios::binary);
    // Version 1.0 with 64-bit block headers in the appended data.
    out << "<?xml version=\"1.0\"?>\n"
        << "<VTKFile type=\"PolyData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
        << "  <PolyData>\n"
        << "    <Piece NumberOfPoints=\"" << points.size() << "\" NumberOfVerts=\"0\" NumberOfLines=\""
        << (kind == CellKind::lines ? polylines.size() : 0) << "\" NumberOfStrips=\"0\" NumberOfPolys=\""
        << (kind == CellKind::polygons ? polylines.size() : 0) << "\">\n";
    const char* cells = kind == CellKind::lines ? "Lines" : "Polys";
    VtpArrays arrays{encoding, {}};
    const auto put_double = [](const std::vector<double>& values, std::size_t i, VtpArrays& a, std::ostream* text) {
        if (!text) return a.put_f64(values[i]);
        *text << "          ";
        put_number(*text, values[i]);
        *text << '\n';
    };
    if (!point_scalars.empty()) {
        out << "      <PointData Scalars=\"" << point_scalars.front().name << "\">\n";
        for (const PointScalars& field : point_scalars)
            arrays.write(out, "type=\"Float64\" Name=\"" + field.name + "\"", field.values, field.values.size(),
                         put_double);
        out << "      </PointData>\n";
    }
    out << "      <Points>\n";
    arrays.write(out, "type=\"Float64\" NumberOfComponents=\"3\"", points, points.size(),
                 [](const CurvePoints& p, std::size_t i, VtpArrays& a, std::ostream* text) {
                     if (!text) {
                         for (int k = 0; k < 3; ++k) a.put_f64(p[i][k]);
                         return;
                     }
                     *text << "          ";
                     put_point(*text, p[i]);
                     *text << '\n';
                 });
    out << "      </Points>\n"
        << "      <" << cells << ">\n";
    arrays.write(out, "type=\"Int64\" Name=\"connectivity\"", polylines, polylines.size(),
                 [](const CurveIndices& lines, std::size_t c, VtpArrays& a, std::ostream* text) {
                     if (!text) {
                         for (const Index i : lines[c]) put_u64(a.appended, static_cast<std::uint64_t>(i));
                         return;
                     }
                     *text << "         ";
                     for (const Index i : lines[c]) *text << ' ' << i;
                     *text << '\n';
                 });
    std::vector<std::uint64_t> offsets(polylines.size());
    std::uint64_t offset = 0;
    for (std::size_t c = 0; c < polylines.size(); ++c) offsets[c] = offset += polylines[c].size();
    arrays.write(out, "type=\"Int64\" Name=\"offsets\"", offsets, offsets.size(),
                 [](const std::vector<std::uint64_t>& o, std::size_t c, VtpArrays& a, std::ostream* text) {
                     if (!text) return put_u64(a.appended, o[c]);
                     *text << "          " << o[c] << '\n';
                 });
    out << "      </" << cells << ">\n"
        << "    </Piece>\n"
        << "  </PolyData>\n";
    if (encoding == VtpEncoding::binary) {
        out << "  <AppendedData encoding=\"raw\">\n   _";
        out.write(arrays.appended.data(), static_cast<std::streamsize>(arrays.appended.size()));
        out << "\n  </AppendedData>\n";
    }
    out << "</VTKFile>\n";
    io_detail::finish_writing(out, path);
}

inline void write_obj_cells(const std::filesystem::path& path, const CurvePoints& points, const CurveIndices& polylines,
                            CellKind kind)
{
    check_curves(path, points, polylines);
    std::ofstream out = open_for_writing(path);
    out << (kind == CellKind::lines ? "# weft yarn curves: " : "# weft triangle mesh: ") << points.size() << " points, "
        << polylines.size() << (kind == CellKind::lines ? " polylines\n" : " faces\n");
    for (const auto& p : points) {
        out << "v ";
        io_detail::put_point(out, p);
        out << '\n';
    }
    for (const auto& line : polylines) {
        out << (kind == CellKind::lines ? 'l' : 'f');
        for (const Index i : line) out << ' ' << (i + 1);
        out << '\n';
    }
    finish_writing(out, path);
}

}  // namespace io_detail

/// Writes legacy VTK (3.0, ASCII) POLYDATA: POINTS (double), LINES (one cell
/// per polyline) and, if given, POINT_DATA scalars.
inline void write_vtk_polylines(const std::filesystem::path& path, const CurvePoints& points,
                                const CurveIndices& polylines, const std::vector<PointScalars>& point_scalars = {})
{
    io_detail::write_vtk_cells(path, points, polylines, point_scalars, io_detail::CellKind::lines);
}

/// Writes VTK XML PolyData (.vtp, version 1.0): the same content as
/// write_vtk_polylines, in the format a .pvd collection can list; binary
/// (appended raw data, what ParaView writes) unless `encoding` says ascii.
inline void write_vtp_polylines(const std::filesystem::path& path, const CurvePoints& points,
                                const CurveIndices& polylines, const std::vector<PointScalars>& point_scalars = {},
                                VtpEncoding encoding = VtpEncoding::binary)
{
    io_detail::write_vtp_cells(path, points, polylines, point_scalars, io_detail::CellKind::lines, encoding);
}

/// Writes Wavefront OBJ: one `v x y z` per point, one `l i j k ...` per
/// polyline (1-based indices, as OBJ requires).
inline void write_obj_polylines(const std::filesystem::path& path, const CurvePoints& points,
                                const CurveIndices& polylines)
{
    io_detail::write_obj_cells(path, points, polylines, io_detail::CellKind::lines);
}

/// Triangle meshes: the same three formats with POLYGONS / Polys / `f` cells
/// (each index list one face, at least 3 points).
inline void write_vtk_triangles(const std::filesystem::path& path, const CurvePoints& points, const CurveIndices& faces,
                                const std::vector<PointScalars>& point_scalars = {})
{
    io_detail::write_vtk_cells(path, points, faces, point_scalars, io_detail::CellKind::polygons);
}
inline void write_vtp_triangles(const std::filesystem::path& path, const CurvePoints& points, const CurveIndices& faces,
                                const std::vector<PointScalars>& point_scalars = {},
                                VtpEncoding encoding = VtpEncoding::binary)
{
    io_detail::write_vtp_cells(path, points, faces, point_scalars, io_detail::CellKind::polygons, encoding);
}
inline void write_obj_triangles(const std::filesystem::path& path, const CurvePoints& points, const CurveIndices& faces)
{
    io_detail::write_obj_cells(path, points, faces, io_detail::CellKind::polygons);
}

/// The curve type of a BCC file (bytes 4–5 of its header).
enum class BccCurveType {
    polyline,     ///< "PL": the points are the curve's vertices, joined by straight segments
    catmull_rom,  ///< "C0": uniform Catmull–Rom control points
};

/// Writes a BCC (binary curve collection, Cem Yuksel's yarn-model format).
/// Header (64 bytes, little-endian): "BCC", 0x44 (4-byte ints and floats),
/// the curve type ("PL" or "C0"), dimensions 3, up dimension, uint64 curve
/// count, uint64 total point count, 40 bytes of file info (all zero). Then
/// per curve an int32 point count, negative for a closed curve, and float32
/// x y z per point.
///
/// Polylines ("PL", the default) store the yarn nodes as they are. A uniform
/// Catmull–Rom curve passes through its control points except the first and
/// the last of an open curve, which readers take as end-tangent handles; with
/// `catmull_rom` every open curve therefore gets the reflected end points
/// 2p₀ − p₁ and 2pₙ₋₁ − pₙ₋₂ added, so that it runs through every node
/// (closed curves are written as they are).
/// @param closed        per polyline, whether it is a closed loop; empty = all open
///                      (closed loops need at least 3 points)
/// @param up_dimension  0 = x, 1 = y, 2 = z is "up" for viewers; weft's scenes
///                      use gravity along −z, hence 2
inline void write_bcc(const std::filesystem::path& path, const CurvePoints& points, const CurveIndices& polylines,
                      const std::vector<bool>& closed = {}, int up_dimension = 2,
                      BccCurveType type = BccCurveType::polyline)
{
    io_detail::check_curves(path, points, polylines, closed);
    if (up_dimension < 0 || up_dimension > 2)
        throw InvalidInput(io_detail::quoted(path) + ": BCC up dimension must be 0, 1 or 2, got " +
                           std::to_string(up_dimension));
    const auto is_closed = [&](std::size_t c) { return !closed.empty() && closed[c]; };
    const bool handles = type == BccCurveType::catmull_rom;
    for (std::size_t i = 0; i < points.size(); ++i)
        for (int k = 0; k < 3; ++k)
            // The reflected handles reach twice a coordinate's magnitude.
            if (std::abs(points[i][k]) > (handles ? 0.5 : 1.0) * double(FLT_MAX))
                throw InvalidInput(io_detail::quoted(path) + ": point " + std::to_string(i) +
                                   " does not fit a 32-bit float");

    std::uint64_t point_count = 0;
    for (std::size_t c = 0; c < polylines.size(); ++c) {
        const std::size_t stored = polylines[c].size() + (handles && !is_closed(c) ? 2 : 0);
        if (stored > std::size_t(std::numeric_limits<std::int32_t>::max()))
            throw InvalidInput(io_detail::quoted(path) + ": a polyline has more points than BCC can store");
        point_count += stored;
    }

    std::string bytes;
    bytes.reserve(64 + 4 * polylines.size() + 12 * point_count);
    bytes += "BCC";
    bytes.push_back(static_cast<char>(0x44));
    bytes += handles ? "C0" : "PL";
    bytes.push_back(static_cast<char>(3));
    bytes.push_back(static_cast<char>(up_dimension));
    io_detail::put_u64(bytes, polylines.size());
    io_detail::put_u64(bytes, point_count);
    bytes.append(40, '\0');
    const auto put_point = [&](const std::array<double, 3>& p) {
        for (int k = 0; k < 3; ++k) io_detail::put_f32(bytes, static_cast<float>(p[k]));
    };
    const auto reflect = [&](Index end, Index next) {
        std::array<double, 3> r;
        for (int k = 0; k < 3; ++k) r[k] = 2 * points[std::size_t(end)][k] - points[std::size_t(next)][k];
        return r;
    };
    for (std::size_t c = 0; c < polylines.size(); ++c) {
        const std::vector<Index>& line = polylines[c];
        const bool add_handles = handles && !is_closed(c);
        const auto count = static_cast<std::int32_t>(line.size() + (add_handles ? 2 : 0));
        io_detail::put_u32(bytes, static_cast<std::uint32_t>(is_closed(c) ? -count : count));
        if (add_handles) put_point(reflect(line[0], line[1]));
        for (const Index i : line) put_point(points[std::size_t(i)]);
        if (add_handles) put_point(reflect(line[line.size() - 1], line[line.size() - 2]));
    }

    std::ofstream out = io_detail::open_for_writing(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    io_detail::finish_writing(out, path);
}

/// The curves of a BCC file as `read_bcc` returns them.
struct BccCurves {
    BccCurveType type = BccCurveType::polyline;
    int up_dimension = 2;
    /// Per curve, the points it passes through: for "PL" the stored points;
    /// for an open "C0" curve the stored points without the first and the
    /// last (its end handles).
    std::vector<std::vector<std::array<float, 3>>> curves;
    std::vector<bool> closed;  ///< per curve
};

/// Parses the bytes of a BCC file of 3-dimensional "PL" or "C0" curves with
/// 4-byte ints and floats (what write_bcc writes, and the yarn-model data
/// sets); `name` (e.g. the quoted file name) starts every message.
/// @throws InvalidInput naming the file and what is wrong (another format or
///         curve type, counts that do not match the file's size, a truncated
///         file, non-finite coordinates)
inline BccCurves parse_bcc(const std::string& bytes, const std::string& name)
{
    const std::string where = name + ": ";
    const auto u8 = [&](std::size_t at) { return static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[at])); };
    const auto u32 = [&](std::size_t at) {
        std::uint32_t v = 0;
        for (int b = 0; b < 4; ++b) v |= static_cast<std::uint32_t>(u8(at + b)) << (8 * b);
        return v;
    };
    const auto u64 = [&](std::size_t at) {
        std::uint64_t v = 0;
        for (int b = 0; b < 8; ++b) v |= u8(at + b) << (8 * b);
        return v;
    };
    if (bytes.size() < 64 || bytes.compare(0, 3, "BCC") != 0)
        throw InvalidInput(where + "not a BCC file (no 64-byte header starting with \"BCC\")");
    if (u8(3) != 0x44) throw InvalidInput(where + "BCC with other than 4-byte ints and floats is not supported");
    BccCurves result;
    const std::string type = bytes.substr(4, 2);
    if (type == "PL")
        result.type = BccCurveType::polyline;
    else if (type == "C0")
        result.type = BccCurveType::catmull_rom;
    else
        throw InvalidInput(where + "curve type \"" + type + "\" is not supported (only \"PL\" and \"C0\")");
    if (u8(6) != 3) throw InvalidInput(where + "dimensions " + std::to_string(u8(6)) + ", only 3 is supported");
    if (u8(7) > 2) throw InvalidInput(where + "up dimension " + std::to_string(u8(7)) + " is not 0, 1 or 2");
    result.up_dimension = static_cast<int>(u8(7));
    const std::uint64_t curve_count = u64(8);
    const std::uint64_t point_count = u64(16);
    // Each curve takes at least 4 bytes, each point 12: counts beyond the
    // file's size are refused before anything is allocated.
    if (curve_count > (bytes.size() - 64) / 4 || point_count > (bytes.size() - 64) / 12)
        throw InvalidInput(where + "header counts " + std::to_string(curve_count) + " curves, " +
                           std::to_string(point_count) + " points do not fit the file's " +
                           std::to_string(bytes.size()) + " bytes");
    result.curves.reserve(curve_count);
    result.closed.reserve(curve_count);
    std::size_t at = 64;
    std::uint64_t points_read = 0;
    for (std::uint64_t c = 0; c < curve_count; ++c) {
        if (bytes.size() - at < 4) throw InvalidInput(where + "truncated at curve " + std::to_string(c));
        const auto count = static_cast<std::int32_t>(u32(at));
        at += 4;
        const bool closed = count < 0;
        const std::uint64_t n = closed ? std::uint64_t(-std::int64_t(count)) : std::uint64_t(count);
        if (n > (bytes.size() - at) / 12)
            throw InvalidInput(where + "curve " + std::to_string(c) + " has " + std::to_string(n) +
                               " points, more than the file holds");
        const bool handles = result.type == BccCurveType::catmull_rom && !closed;
        if (n < (handles ? 4u : closed ? 3u : 2u))
            throw InvalidInput(where + "curve " + std::to_string(c) + " has " + std::to_string(n) + " points");
        std::vector<std::array<float, 3>> curve(n);
        for (std::uint64_t i = 0; i < n; ++i)
            for (int k = 0; k < 3; ++k, at += 4) {
                const std::uint32_t word = u32(at);
                float f;
                std::memcpy(&f, &word, 4);
                if (!std::isfinite(f))
                    throw InvalidInput(where + "curve " + std::to_string(c) + " point " + std::to_string(i) +
                                       " is not finite");
                curve[i][k] = f;
            }
        points_read += n;
        if (handles) curve = std::vector<std::array<float, 3>>(curve.begin() + 1, curve.end() - 1);
        result.curves.push_back(std::move(curve));
        result.closed.push_back(closed);
    }
    if (points_read != point_count)
        throw InvalidInput(where + "the header counts " + std::to_string(point_count) + " points, the curves hold " +
                           std::to_string(points_read));
    if (at != bytes.size())
        throw InvalidInput(where + std::to_string(bytes.size() - at) + " bytes after the last curve");
    return result;
}

/// Reads a BCC file (parse_bcc).
/// @throws InvalidInput as parse_bcc, naming the file; std::runtime_error if
///         it cannot be read
inline BccCurves read_bcc(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(io_detail::quoted(path) + ": cannot open for reading");
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw std::runtime_error(io_detail::quoted(path) + ": read failed");
    return parse_bcc(bytes, io_detail::quoted(path));
}

/// A ParaView .pvd collection: (time, data file) pairs. The file is rewritten
/// after every frame (through a temporary file and a rename), so a partial or
/// interrupted run always leaves a complete, readable collection.
class PvdWriter {
public:
    /// Writes an empty collection at once, so an unwritable path fails before
    /// the simulation starts.
    explicit PvdWriter(std::filesystem::path path) : m_path(std::move(path)) { write(); }

    /// Adds a frame. `dataset` is relative to the .pvd's directory (an
    /// absolute path is made relative to it where possible) and must be a VTK
    /// XML file (.vtp, .vtu, ...): ParaView's collection reader cannot read
    /// legacy .vtk files. Times must be finite and strictly increasing.
    void add_frame(double time, const std::filesystem::path& dataset)
    {
        const std::string where = io_detail::quoted(m_path) + ": ";
        if (!std::isfinite(time)) throw InvalidInput(where + "frame time must be finite, got " + std::to_string(time));
        if (!m_frames.empty() && !(time > m_frames.back().first)) {
            std::ostringstream os;
            os.precision(17);
            os << where << "frame times must increase: " << time << " after " << m_frames.back().first;
            throw InvalidInput(os.str());
        }
        const std::string extension = dataset.extension().string();
        static const char* const xml_extensions[] = {".vtp", ".vtu", ".vti", ".vtr", ".vts", ".vtm"};
        bool xml = false;
        for (const char* e : xml_extensions) xml = xml || extension == e;
        if (!xml)
            throw InvalidInput(where + "\"" + dataset.string() +
                               "\" is not a VTK XML file (.vtp, .vtu, .vti, .vtr, .vts, .vtm); ParaView's .pvd "
                               "reader cannot read legacy .vtk files, which open as a numbered file series instead");
        std::filesystem::path relative = dataset;
        if (dataset.is_absolute()) {
            const std::filesystem::path base = std::filesystem::absolute(m_path).parent_path();
            const std::filesystem::path r = dataset.lexically_relative(base);
            if (!r.empty()) relative = r;
        }
        m_frames.emplace_back(time, relative.generic_string());
        write();
    }

    std::size_t frame_count() const { return m_frames.size(); }
    const std::filesystem::path& path() const { return m_path; }

private:
    void write() const
    {
        std::filesystem::path temporary = m_path;
        temporary += ".tmp";
        {
            std::ofstream out = io_detail::open_for_writing(temporary);
            out << "<?xml version=\"1.0\"?>\n"
                << "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
                << "  <Collection>\n";
            for (const auto& frame : m_frames) {
                out << "    <DataSet timestep=\"";
                io_detail::put_number(out, frame.first);
                out << "\" group=\"\" part=\"0\" file=\"" << io_detail::xml_escape(frame.second) << "\"/>\n";
            }
            out << "  </Collection>\n"
                << "</VTKFile>\n";
            io_detail::finish_writing(out, temporary);
        }
        std::error_code ec;
        std::filesystem::rename(temporary, m_path, ec);
        if (ec)
            throw std::runtime_error(io_detail::quoted(m_path) + ": cannot replace it with " +
                                     io_detail::quoted(temporary) + " (" + ec.message() + ")");
    }

    std::filesystem::path m_path;
    std::vector<std::pair<double, std::string>> m_frames;
};

/// A CSV time series: a header line of column names, then one row of doubles
/// per write_row, flushed at once (a crashed run keeps every row written).
/// Never writes NaN or infinity: a non-finite value throws naming its column.
/// Column names are non-empty, unique and free of commas, quotes and line
/// breaks, so no quoting is needed and any CSV reader splits them exactly.
class CsvWriter {
public:
    CsvWriter(std::filesystem::path path, std::vector<std::string> columns)
        : m_path(std::move(path)), m_columns(std::move(columns))
    {
        const std::string where = io_detail::quoted(m_path) + ": ";
        if (m_columns.empty()) throw InvalidInput(where + "a CSV file needs at least one column");
        for (std::size_t c = 0; c < m_columns.size(); ++c) {
            const std::string& name = m_columns[c];
            if (name.empty() || name.find_first_of(",\"\r\n") != std::string::npos)
                throw InvalidInput(where + "column " + std::to_string(c) + " name \"" + name +
                                   "\" must be non-empty, without commas, quotes or line breaks");
            for (std::size_t d = 0; d < c; ++d)
                if (m_columns[d] == name) throw InvalidInput(where + "column \"" + name + "\" is listed twice");
        }
        m_out = io_detail::open_for_writing(m_path);
        for (std::size_t c = 0; c < m_columns.size(); ++c) m_out << (c ? "," : "") << m_columns[c];
        m_out << '\n';
        flush();
    }

    /// Continues the CSV that an earlier run wrote at `path` (weft-run's
    /// --resume): its header must name `columns`; its first `keep_rows` rows
    /// stay and any later ones are dropped, and rows are appended after them.
    /// @throws InvalidInput naming the file when it is missing, has another
    ///         header or fewer than `keep_rows` rows
    CsvWriter(std::filesystem::path path, std::vector<std::string> columns, std::size_t keep_rows)
        : m_path(std::move(path)), m_columns(std::move(columns))
    {
        const std::string where = io_detail::quoted(m_path) + ": ";
        std::ifstream in(m_path, std::ios::binary);
        if (!in) throw InvalidInput(where + "cannot be read, so the run cannot continue its CSV");
        std::string header, line;
        std::getline(in, header);
        std::string expected;
        for (std::size_t c = 0; c < m_columns.size(); ++c) expected += (c ? "," : "") + m_columns[c];
        if (header != expected)
            throw InvalidInput(where + "its header \"" + header + "\" is not this run's \"" + expected + "\"");
        std::size_t rows = 0;
        while (rows < keep_rows && std::getline(in, line)) ++rows;
        if (rows < keep_rows)
            throw InvalidInput(where + "has " + std::to_string(rows) + " rows; the run continues after row " +
                               std::to_string(keep_rows));
        const std::streamoff keep = in.tellg();
        in.close();
        std::error_code ec;
        std::filesystem::resize_file(m_path, static_cast<std::uintmax_t>(keep), ec);
        if (ec) throw std::runtime_error(where + "cannot drop the rows after row " + std::to_string(keep_rows));
        m_out.open(m_path, std::ios::binary | std::ios::app);
        if (!m_out) throw std::runtime_error(where + "cannot be opened for appending");
        m_rows = keep_rows;
    }

    /// Appends one row; `values` has one entry per column. Nothing is written
    /// if any value is rejected.
    void write_row(const std::vector<double>& values)
    {
        const std::string where = io_detail::quoted(m_path) + ": ";
        if (values.size() != m_columns.size())
            throw InvalidInput(where + "row " + std::to_string(m_rows) + " has " + std::to_string(values.size()) +
                               " values for " + std::to_string(m_columns.size()) + " columns");
        for (std::size_t c = 0; c < values.size(); ++c)
            if (!std::isfinite(values[c])) {
                std::ostringstream os;
                os << where << "column \"" << m_columns[c] << "\" (row " << m_rows << ") is " << values[c]
                   << "; refusing to write a non-finite value";
                throw InvalidInput(os.str());
            }
        for (std::size_t c = 0; c < values.size(); ++c) {
            if (c) m_out << ',';
            io_detail::put_number(m_out, values[c]);
        }
        m_out << '\n';
        flush();
        ++m_rows;
    }

    const std::filesystem::path& path() const { return m_path; }
    const std::vector<std::string>& columns() const { return m_columns; }
    std::size_t row_count() const { return m_rows; }

private:
    void flush()
    {
        m_out.flush();
        if (!m_out) throw std::runtime_error(io_detail::quoted(m_path) + ": write failed (disk full?)");
    }

    std::filesystem::path m_path;
    std::vector<std::string> m_columns;
    std::ofstream m_out;
    std::size_t m_rows = 0;
};

}  // namespace weft
