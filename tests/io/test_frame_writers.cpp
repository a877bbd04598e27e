#include <weft/io/frame_writers.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path;
    TempDir()
    {
        std::random_device rd;
        path = fs::temp_directory_path() / ("weft_test_frames_" + std::to_string(rd()) + std::to_string(rd()));
        fs::create_directories(path);
    }
    ~TempDir()
    {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::string read_file(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// Two yarns sharing no points, coordinates that need all 17 digits.
struct Curves {
    weft::CurvePoints points{{0.1, 0.2, 0.3}, {1.0 / 3.0, -2e-7, 5}, {2, 0, 0}, {-1, -1, -1}, {0, 1e-300, 7}};
    weft::CurveIndices polylines{{0, 1, 2}, {3, 4}};
    std::vector<weft::PointScalars> scalars{{"arc_length", {0, 0.5, 1, 0, 0.25}}};
};

// ---------------------------------------------------------------------------
// A small, strict XML reader for the tests: elements, attributes in double
// quotes, self-closing tags, text, the <?xml?> declaration. Throws on anything
// malformed (unclosed or mismatched tags, bad attributes, stray '<' or '&').

struct XmlElement {
    std::string name;
    std::map<std::string, std::string> attributes;
    std::vector<XmlElement> children;
    std::string text;

    std::vector<const XmlElement*> find_all(const std::string& child_name) const
    {
        std::vector<const XmlElement*> out;
        for (const auto& c : children)
            if (c.name == child_name) out.push_back(&c);
        return out;
    }
    const XmlElement& child(const std::string& child_name) const
    {
        const auto all = find_all(child_name);
        if (all.size() != 1) throw std::runtime_error("expected one <" + child_name + "> in <" + name + ">");
        return *all.front();
    }
};

class XmlReader {
public:
    explicit XmlReader(std::string text) : m_text(std::move(text)) {}

    XmlElement document()
    {
        skip_space();
        if (m_text.compare(m_pos, 5, "<?xml") == 0) {
            const std::size_t end = m_text.find("?>", m_pos);
            if (end == std::string::npos) fail("unterminated declaration");
            m_pos = end + 2;
        }
        skip_space();
        XmlElement root = element();
        skip_space();
        if (m_pos != m_text.size()) fail("content after the root element");
        return root;
    }

private:
    [[noreturn]] void fail(const std::string& what) const
    {
        throw std::runtime_error("XML error at byte " + std::to_string(m_pos) + ": " + what);
    }
    void skip_space()
    {
        while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) ++m_pos;
    }
    std::string name()
    {
        const std::size_t start = m_pos;
        while (m_pos < m_text.size() && (std::isalnum(static_cast<unsigned char>(m_text[m_pos])) ||
                                         m_text[m_pos] == '_' || m_text[m_pos] == '-' || m_text[m_pos] == ':'))
            ++m_pos;
        if (m_pos == start) fail("expected a name");
        return m_text.substr(start, m_pos - start);
    }
    std::string unescape(const std::string& raw) const
    {
        std::string out;
        for (std::size_t i = 0; i < raw.size(); ++i) {
            if (raw[i] == '<') fail("'<' in text or attribute");
            if (raw[i] != '&') {
                out += raw[i];
                continue;
            }
            const std::size_t end = raw.find(';', i);
            if (end == std::string::npos) fail("unterminated entity");
            const std::string entity = raw.substr(i + 1, end - i - 1);
            static const std::map<std::string, char> entities{
                {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
            const auto it = entities.find(entity);
            if (it == entities.end()) fail("unknown entity &" + entity + ";");
            out += it->second;
            i = end;
        }
        return out;
    }
    XmlElement element()
    {
        if (m_text[m_pos] != '<') fail("expected '<'");
        ++m_pos;
        XmlElement e;
        e.name = name();
        for (;;) {
            skip_space();
            if (m_pos >= m_text.size()) fail("unterminated tag");
            if (m_text.compare(m_pos, 2, "/>") == 0) {
                m_pos += 2;
                return e;
            }
            if (m_text[m_pos] == '>') {
                ++m_pos;
                break;
            }
            const std::string attribute = name();
            skip_space();
            if (m_text[m_pos] != '=') fail("expected '=' after attribute " + attribute);
            ++m_pos;
            skip_space();
            if (m_text[m_pos] != '"') fail("attribute value not in double quotes");
            const std::size_t end = m_text.find('"', m_pos + 1);
            if (end == std::string::npos) fail("unterminated attribute value");
            if (e.attributes.count(attribute)) fail("duplicate attribute " + attribute);
            e.attributes[attribute] = unescape(m_text.substr(m_pos + 1, end - m_pos - 1));
            m_pos = end + 1;
        }
        for (;;) {
            const std::size_t next = m_text.find('<', m_pos);
            if (next == std::string::npos) fail("unclosed <" + e.name + ">");
            e.text += unescape(m_text.substr(m_pos, next - m_pos));
            m_pos = next;
            if (m_text.compare(m_pos, 2, "</") == 0) {
                m_pos += 2;
                if (name() != e.name) fail("mismatched closing tag for <" + e.name + ">");
                skip_space();
                if (m_text[m_pos] != '>') fail("expected '>'");
                ++m_pos;
                return e;
            }
            e.children.push_back(element());
        }
    }

    std::string m_text;
    std::size_t m_pos = 0;
};

XmlElement parse_xml_file(const fs::path& path)
{
    return XmlReader(read_file(path)).document();
}

template <typename T>
std::vector<T> numbers_in(const std::string& text)
{
    std::istringstream in(text);
    std::vector<T> out;
    for (T v; in >> v;) out.push_back(v);
    return out;
}

std::uint64_t read_u64(const std::string& bytes, std::size_t at)
{
    std::uint64_t v = 0;
    for (int b = 7; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(bytes[at + b]);
    return v;
}

std::int32_t read_i32(const std::string& bytes, std::size_t at)
{
    std::uint32_t v = 0;
    for (int b = 3; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(bytes[at + b]);
    std::int32_t s;
    std::memcpy(&s, &v, 4);
    return s;
}

float read_f32(const std::string& bytes, std::size_t at)
{
    const std::int32_t i = read_i32(bytes, at);
    float f;
    std::memcpy(&f, &i, 4);
    return f;
}

}  // namespace

TEST_CASE("vtk: legacy polydata has the right counts and reads back exactly", "[io][frames][vtk]")
{
    TempDir dir;
    const Curves c;
    const fs::path path = dir.path / "a" / "b" / "frame.vtk";  // parents are created
    weft::write_vtk_polylines(path, c.points, c.polylines, c.scalars);

    const std::vector<std::string> lines = lines_of(read_file(path));
    REQUIRE(lines.size() >= 5);
    CHECK(lines[0] == "# vtk DataFile Version 3.0");
    CHECK(lines[2] == "ASCII");
    CHECK(lines[3] == "DATASET POLYDATA");
    CHECK(lines[4] == "POINTS 5 double");

    std::istringstream in(read_file(path));
    std::string token;
    while (in >> token && token != "POINTS") {
    }
    std::size_t n = 0;
    in >> n >> token;
    REQUIRE(n == c.points.size());
    for (const auto& p : c.points)
        for (int k = 0; k < 3; ++k) {
            double v = 0;
            in >> v;
            CHECK(v == p[k]);  // max_digits10: bit-exact round trip
        }
    std::size_t cells = 0, size = 0;
    in >> token >> cells >> size;
    CHECK(token == "LINES");
    CHECK(cells == 2);
    CHECK(size == (3 + 1) + (2 + 1));
    for (const auto& line : c.polylines) {
        std::size_t count = 0;
        in >> count;
        REQUIRE(count == line.size());
        for (const weft::Index i : line) {
            weft::Index read = -1;
            in >> read;
            CHECK(read == i);
        }
    }
    std::string name, type;
    in >> token >> n;
    CHECK(token == "POINT_DATA");
    CHECK(n == 5);
    in >> token >> name >> type >> n;
    CHECK(token == "SCALARS");
    CHECK(name == "arc_length");
    CHECK(type == "double");
    in >> token >> name;
    CHECK(token == "LOOKUP_TABLE");
    for (const double expected : c.scalars[0].values) {
        double v = -1;
        in >> v;
        CHECK(v == expected);
    }
    CHECK_FALSE(in >> token);  // nothing after the data
}

/// A .vtp file as the tests read it: the XML (with a binary file's appended
/// block cut out) and the appended bytes after the '_' marker.
struct VtpFile {
    XmlElement root;
    std::string appended;

    /// A DataArray's values: its text (ascii), or its block in the appended
    /// data (a UInt64 byte count, then 8-byte values) at its offset.
    template <typename T>
    std::vector<T> values(const XmlElement& array) const
    {
        if (array.attributes.at("format") == "ascii") return numbers_in<T>(array.text);
        REQUIRE(array.attributes.at("format") == "appended");
        const std::size_t at = std::stoul(array.attributes.at("offset"));
        REQUIRE(at + 8 <= appended.size());
        const std::uint64_t size = read_u64(appended, at);
        REQUIRE(size % 8 == 0);
        REQUIRE(at + 8 + size <= appended.size());
        std::vector<T> out(size / 8);
        for (std::size_t i = 0; i < out.size(); ++i) {
            const std::uint64_t word = read_u64(appended, at + 8 + 8 * i);
            if constexpr (std::is_floating_point_v<T>)
                std::memcpy(&out[i], &word, 8);
            else
                out[i] = static_cast<T>(static_cast<std::int64_t>(word));
        }
        return out;
    }
};

VtpFile read_vtp(const fs::path& path)
{
    std::string text = read_file(path);
    VtpFile f;
    const std::string open = "<AppendedData encoding=\"raw\">";
    const std::size_t block = text.find(open);
    if (block != std::string::npos) {
        const std::size_t marker = text.find('_', block + open.size());
        REQUIRE(marker != std::string::npos);
        const std::string close = "\n  </AppendedData>\n</VTKFile>\n";
        REQUIRE(text.size() >= marker + 1 + close.size());
        REQUIRE(text.compare(text.size() - close.size(), close.size(), close) == 0);
        f.appended = text.substr(marker + 1, text.size() - close.size() - marker - 1);
        text = text.substr(0, block) + "</VTKFile>\n";
    }
    f.root = XmlReader(text).document();
    return f;
}

TEST_CASE("vtp: XML polydata is well formed with matching counts and offsets", "[io][frames][vtp]")
{
    TempDir dir;
    const Curves c;
    int encodings = 0;
    for (const auto encoding : {weft::VtpEncoding::binary, weft::VtpEncoding::ascii}) {
        const fs::path path = dir.path / "frame.vtp";
        if (encoding == weft::VtpEncoding::binary)
            weft::write_vtp_polylines(path, c.points, c.polylines, c.scalars);  // binary is the default
        else
            weft::write_vtp_polylines(path, c.points, c.polylines, c.scalars, encoding);
        const VtpFile f = read_vtp(path);
        CHECK(f.appended.empty() == (encoding == weft::VtpEncoding::ascii));
        const XmlElement& root = f.root;
        CHECK(root.name == "VTKFile");
        CHECK(root.attributes.at("type") == "PolyData");
        CHECK(root.attributes.at("header_type") == "UInt64");
        const XmlElement& piece = root.child("PolyData").child("Piece");
        CHECK(piece.attributes.at("NumberOfPoints") == "5");
        CHECK(piece.attributes.at("NumberOfLines") == "2");

        const auto coordinates = f.values<double>(piece.child("Points").child("DataArray"));
        REQUIRE(coordinates.size() == 15);
        for (std::size_t i = 0; i < 5; ++i)
            for (int k = 0; k < 3; ++k) CHECK(coordinates[3 * i + k] == c.points[i][k]);

        const auto arrays = piece.child("Lines").find_all("DataArray");
        REQUIRE(arrays.size() == 2);
        CHECK(arrays[0]->attributes.at("Name") == "connectivity");
        CHECK(f.values<long>(*arrays[0]) == std::vector<long>{0, 1, 2, 3, 4});
        CHECK(arrays[1]->attributes.at("Name") == "offsets");
        CHECK(f.values<long>(*arrays[1]) == std::vector<long>{3, 5});

        const XmlElement& scalars = piece.child("PointData").child("DataArray");
        CHECK(scalars.attributes.at("Name") == "arc_length");
        CHECK(f.values<double>(scalars) == c.scalars[0].values);
        ++encodings;
    }
    CHECK(encodings == 2);
}

TEST_CASE("vtp: binary triangle frames hold the faces and exact coordinates", "[io][frames][vtp]")
{
    TempDir dir;
    const weft::CurvePoints points{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1.0 / 3.0, 1, 1e-300}};
    const weft::CurveIndices faces{{0, 1, 2}, {1, 3, 2}};
    const fs::path path = dir.path / "mesh.vtp";
    weft::write_vtp_triangles(path, points, faces, {{"cloth", {0, 0, 1, 1}}});
    const VtpFile f = read_vtp(path);
    const XmlElement& piece = f.root.child("PolyData").child("Piece");
    CHECK(piece.attributes.at("NumberOfPolys") == "2");
    CHECK(piece.attributes.at("NumberOfLines") == "0");
    const auto xyz = f.values<double>(piece.child("Points").child("DataArray"));
    REQUIRE(xyz.size() == 12);
    for (std::size_t i = 0; i < 4; ++i)
        for (int k = 0; k < 3; ++k) CHECK(xyz[3 * i + k] == points[i][k]);
    const auto arrays = piece.child("Polys").find_all("DataArray");
    REQUIRE(arrays.size() == 2);
    CHECK(f.values<long>(*arrays[0]) == std::vector<long>{0, 1, 2, 1, 3, 2});
    CHECK(f.values<long>(*arrays[1]) == std::vector<long>{3, 6});
    CHECK(f.values<double>(piece.child("PointData").child("DataArray")) == std::vector<double>{0, 0, 1, 1});
}

TEST_CASE("obj: one v record per point and one l record per polyline, 1-based", "[io][frames][obj]")
{
    TempDir dir;
    const Curves c;
    const fs::path path = dir.path / "frame.obj";
    weft::write_obj_polylines(path, c.points, c.polylines);

    std::vector<std::array<double, 3>> vertices;
    std::vector<std::vector<long>> lines;
    for (const std::string& line : lines_of(read_file(path))) {
        std::istringstream in(line);
        std::string record;
        in >> record;
        if (record == "v") {
            std::array<double, 3> p{};
            in >> p[0] >> p[1] >> p[2];
            REQUIRE(in);
            vertices.push_back(p);
        } else if (record == "l") {
            lines.push_back(numbers_in<long>(line.substr(1)));
        } else {
            CHECK(record == "#");
        }
    }
    CHECK(vertices == c.points);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == std::vector<long>{1, 2, 3});
    CHECK(lines[1] == std::vector<long>{4, 5});
}

TEST_CASE("bcc: header bytes and sizes are exact", "[io][frames][bcc]")
{
    TempDir dir;
    const Curves c;
    const fs::path path = dir.path / "frame.bcc";
    weft::write_bcc(path, c.points, c.polylines);

    const std::string bytes = read_file(path);
    // 64-byte header + per curve a 4-byte count and 12 bytes per point.
    REQUIRE(bytes.size() == 64 + (4 + 3 * 12) + (4 + 2 * 12));
    CHECK(bytes.substr(0, 3) == "BCC");
    CHECK(static_cast<unsigned char>(bytes[3]) == 0x44);
    CHECK(bytes.substr(4, 2) == "PL");                     // polylines: the nodes are the curve's vertices
    CHECK(static_cast<int>(bytes[6]) == 3);                // dimensions
    CHECK(static_cast<int>(bytes[7]) == 2);                // up: z (the default)
    CHECK(read_u64(bytes, 8) == 2);                        // curves
    CHECK(read_u64(bytes, 16) == 5);                       // points
    CHECK(bytes.substr(24, 40) == std::string(40, '\0'));  // file info zeroed

    std::size_t at = 64;
    for (const auto& line : c.polylines) {
        REQUIRE(read_i32(bytes, at) == static_cast<std::int32_t>(line.size()));
        at += 4;
        for (const weft::Index i : line)
            for (int k = 0; k < 3; ++k, at += 4) CHECK(read_f32(bytes, at) == static_cast<float>(c.points[i][k]));
    }
    CHECK(at == bytes.size());
}

TEST_CASE("bcc: Catmull-Rom curves get reflected end points and pass through every node", "[io][frames][bcc]")
{
    TempDir dir;
    const Curves c;
    const fs::path path = dir.path / "cr.bcc";
    weft::write_bcc(path, c.points, c.polylines, {}, 2, weft::BccCurveType::catmull_rom);
    const std::string bytes = read_file(path);
    CHECK(bytes.substr(4, 2) == "C0");
    CHECK(read_u64(bytes, 16) == 5 + 2 * 2);
    REQUIRE(bytes.size() == 64 + (4 + 5 * 12) + (4 + 4 * 12));
    REQUIRE(read_i32(bytes, 64) == 5);
    // First handle 2 p0 - p1, last 2 p2 - p1 of the first curve.
    for (int k = 0; k < 3; ++k) {
        CHECK(read_f32(bytes, 68 + 4 * k) == static_cast<float>(2 * c.points[0][k] - c.points[1][k]));
        CHECK(read_f32(bytes, 68 + 48 + 4 * k) == static_cast<float>(2 * c.points[2][k] - c.points[1][k]));
    }
    // A uniform Catmull-Rom segment between control points 1 and 2 at
    // parameter 0 is control point 1: the curve starts at the first node.
    const weft::BccCurves back = weft::read_bcc(path);
    CHECK(back.type == weft::BccCurveType::catmull_rom);
    REQUIRE(back.curves.size() == 2);
    REQUIRE(back.curves[0].size() == 3);
    REQUIRE(back.curves[1].size() == 2);
    for (std::size_t j = 0; j < c.polylines.size(); ++j)
        for (std::size_t i = 0; i < c.polylines[j].size(); ++i)
            for (int k = 0; k < 3; ++k)
                CHECK(back.curves[j][i][k] == static_cast<float>(c.points[std::size_t(c.polylines[j][i])][k]));
    // Closed curves pass through their control points: no handles.
    weft::write_bcc(path, c.points, {{0, 1, 2}, {3, 4}}, {true, false}, 1, weft::BccCurveType::catmull_rom);
    const weft::BccCurves mixed = weft::read_bcc(path);
    CHECK(read_i32(read_file(path), 64) == -3);
    CHECK(mixed.up_dimension == 1);
    CHECK(mixed.closed == std::vector<bool>{true, false});
    CHECK(mixed.curves[0].size() == 3);
    CHECK(mixed.curves[1].size() == 2);
}

TEST_CASE("bcc: what is written reads back (round trip)", "[io][frames][bcc]")
{
    TempDir dir;
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> coord(-2, 2);
    weft::CurvePoints points(200);
    for (auto& p : points)
        for (double& x : p) x = coord(rng);
    weft::CurveIndices lines;
    std::vector<bool> closed;
    for (int c = 0, at = 0; c < 12; ++c) {
        const int n = 3 + c % 5;
        lines.emplace_back();
        for (int i = 0; i < n; ++i) lines.back().push_back((at + 7 * i) % 200);
        at += n;
        closed.push_back(c % 4 == 1);
    }
    std::size_t checked = 0;
    for (const auto type : {weft::BccCurveType::polyline, weft::BccCurveType::catmull_rom}) {
        const fs::path path = dir.path / "round.bcc";
        weft::write_bcc(path, points, lines, closed, 2, type);
        const weft::BccCurves back = weft::read_bcc(path);
        CHECK(back.type == type);
        CHECK(back.up_dimension == 2);
        CHECK(back.closed == closed);
        REQUIRE(back.curves.size() == lines.size());
        for (std::size_t c = 0; c < lines.size(); ++c) {
            REQUIRE(back.curves[c].size() == lines[c].size());
            for (std::size_t i = 0; i < lines[c].size(); ++i)
                for (int k = 0; k < 3; ++k, ++checked)
                    CHECK(back.curves[c][i][k] == static_cast<float>(points[std::size_t(lines[c][i])][k]));
        }
    }
    CHECK(checked == 2 * 3 * 57);  // 57 points on the 12 curves
}

TEST_CASE("bcc: the reader refuses malformed files with a message", "[io][frames][bcc]")
{
    TempDir dir;
    const Curves c;
    const fs::path good = dir.path / "good.bcc";
    weft::write_bcc(good, c.points, c.polylines);
    const std::string bytes = read_file(good);
    const fs::path bad = dir.path / "bad.bcc";
    const auto refused = [&](std::string content, const std::string& message) {
        std::ofstream(bad, std::ios::binary) << content;
        CHECK_THROWS_WITH(weft::read_bcc(bad), Contains(message) && Contains(bad.string()));
    };
    refused(bytes.substr(0, 40), "not a BCC file");
    refused("XCC" + bytes.substr(3), "not a BCC file");
    std::string t = bytes;
    t[3] = 0x48;
    refused(t, "4-byte");
    t = bytes;
    t[4] = 'B';
    t[5] = 'Z';
    refused(t, "curve type \"BZ\"");
    t = bytes;
    t[6] = 2;
    refused(t, "dimensions 2");
    refused(bytes.substr(0, bytes.size() - 5), "more than the file holds");
    refused(bytes + "xx", "2 bytes after the last curve");
    t = bytes;
    t[16] = 4;  // 4 points in the header, 5 in the curves
    refused(t, "the header counts 4 points, the curves hold 5");
    t = bytes;
    t[15] = 1;  // 2^56 + 2 curves
    refused(t, "do not fit the file");
    t = bytes;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(&t[68], &nan, 4);
    refused(t, "curve 0 point 0 is not finite");
    CHECK_THROWS_AS(weft::read_bcc(dir.path / "missing.bcc"), std::runtime_error);
}

TEST_CASE("bcc: closed curves have negative counts and the up dimension is a parameter", "[io][frames][bcc]")
{
    TempDir dir;
    const Curves c;
    const fs::path path = dir.path / "closed.bcc";
    weft::write_bcc(path, c.points, {{0, 1, 2}, {3, 4}}, {true, false}, 0);
    const std::string bytes = read_file(path);
    CHECK(static_cast<int>(bytes[7]) == 0);
    CHECK(read_i32(bytes, 64) == -3);
    CHECK(read_i32(bytes, 64 + 4 + 36) == 2);
    // A closed loop needs three points; the flags must match the polylines.
    CHECK_THROWS_AS(weft::write_bcc(path, c.points, {{3, 4}}, {true}), weft::InvalidInput);
    CHECK_THROWS_AS(weft::write_bcc(path, c.points, c.polylines, {true}), weft::InvalidInput);
    CHECK_THROWS_AS(weft::write_bcc(path, c.points, c.polylines, {}, 3), weft::InvalidInput);
}

TEST_CASE("pvd: the collection is valid XML listing every frame, rewritten after each", "[io][frames][pvd]")
{
    TempDir dir;
    const fs::path path = dir.path / "run" / "frames.pvd";
    weft::PvdWriter pvd(path);
    REQUIRE(fs::exists(path));  // written at once, empty
    CHECK(parse_xml_file(path).child("Collection").children.empty());

    const std::vector<double> times{0.0, 0.01, 0.02};
    for (std::size_t f = 0; f < times.size(); ++f) {
        pvd.add_frame(times[f], "frame_" + std::to_string(f) + ".vtp");
        // After every frame the file on disk is complete and lists all frames so far.
        const XmlElement root = parse_xml_file(path);
        CHECK(root.name == "VTKFile");
        CHECK(root.attributes.at("type") == "Collection");
        const auto datasets = root.child("Collection").find_all("DataSet");
        REQUIRE(datasets.size() == f + 1);
        for (std::size_t g = 0; g <= f; ++g) {
            CHECK(std::stod(datasets[g]->attributes.at("timestep")) == times[g]);
            CHECK(datasets[g]->attributes.at("file") == "frame_" + std::to_string(g) + ".vtp");
        }
    }
    CHECK(pvd.frame_count() == 3);
    CHECK_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST_CASE("pvd: file names are escaped and absolute paths made relative", "[io][frames][pvd]")
{
    TempDir dir;
    const fs::path path = dir.path / "frames.pvd";
    weft::PvdWriter pvd(path);
    pvd.add_frame(0.5, "a&b <\"x\">.vtp");
    pvd.add_frame(1.0, dir.path / "sub" / "f.vtp");
    const XmlElement root = parse_xml_file(path);
    const auto datasets = root.child("Collection").find_all("DataSet");
    REQUIRE(datasets.size() == 2);
    CHECK(datasets[0]->attributes.at("file") == "a&b <\"x\">.vtp");
    CHECK(datasets[1]->attributes.at("file") == "sub/f.vtp");
}

TEST_CASE("pvd: legacy .vtk files, non-finite and non-increasing times are rejected", "[io][frames][pvd]")
{
    TempDir dir;
    weft::PvdWriter pvd(dir.path / "frames.pvd");
    CHECK_THROWS_WITH(pvd.add_frame(0, "frame.vtk"), Contains("frames.pvd") && Contains("not a VTK XML file"));
    pvd.add_frame(0.1, "f1.vtp");
    CHECK_THROWS_WITH(pvd.add_frame(0.1, "f2.vtp"), Contains("frame times must increase"));
    CHECK_THROWS_AS(pvd.add_frame(std::nan(""), "f2.vtp"), weft::InvalidInput);
    CHECK(pvd.frame_count() == 1);
}

TEST_CASE("csv: the header is exact and each row is flushed as written", "[io][csv]")
{
    TempDir dir;
    const fs::path path = dir.path / "out" / "energy.csv";
    weft::CsvWriter csv(path, {"time", "kinetic_energy", "elastic_energy"});
    CHECK(read_file(path) == "time,kinetic_energy,elastic_energy\n");
    csv.write_row({0.001, 0.5, 1.0 / 3.0});
    csv.write_row({0.002, 0, -2e-300});
    // Readable before the writer is closed: every row is flushed.
    const std::vector<std::string> lines = lines_of(read_file(path));
    REQUIRE(lines.size() == 3);
    CHECK(lines[0] == "time,kinetic_energy,elastic_energy");
    std::istringstream row(lines[1]);
    std::vector<double> values;
    for (std::string cell; std::getline(row, cell, ',');) values.push_back(std::stod(cell));
    CHECK(values == std::vector<double>{0.001, 0.5, 1.0 / 3.0});
    CHECK(lines[2] == "0.002,0,-2e-300");  // shortest exact text
    CHECK(csv.row_count() == 2);
}

TEST_CASE("csv: a non-finite value is rejected naming its column and nothing is written", "[io][csv][nan]")
{
    TempDir dir;
    const fs::path path = dir.path / "energy.csv";
    weft::CsvWriter csv(path, {"time", "kinetic_energy", "elastic_energy"});
    csv.write_row({0, 1, 2});
    const std::string before = read_file(path);
    CHECK_THROWS_WITH(csv.write_row({0.1, 1, std::nan("")}),
                      Contains("energy.csv") && Contains("column \"elastic_energy\"") && Contains("non-finite"));
    CHECK_THROWS_WITH(csv.write_row({0.1, std::numeric_limits<double>::infinity(), 0}),
                      Contains("column \"kinetic_energy\""));
    CHECK_THROWS_AS(csv.write_row({0.1, 1}), weft::InvalidInput);
    CHECK(read_file(path) == before);
    CHECK(csv.row_count() == 1);
}

TEST_CASE("csv: column names must be non-empty, unique and need no quoting", "[io][csv]")
{
    TempDir dir;
    const fs::path path = dir.path / "bad.csv";
    CHECK_THROWS_AS(weft::CsvWriter(path, {}), weft::InvalidInput);
    CHECK_THROWS_WITH(weft::CsvWriter(path, {"time", "a,b"}), Contains("a,b"));
    CHECK_THROWS_WITH(weft::CsvWriter(path, {"time", "time"}), Contains("\"time\" is listed twice"));
    CHECK_THROWS_AS(weft::CsvWriter(path, {"time", ""}), weft::InvalidInput);
}

TEST_CASE("frames: bad input is rejected naming the file before anything is written", "[io][frames][validation]")
{
    TempDir dir;
    Curves c;
    const fs::path path = dir.path / "bad.vtk";
    SECTION("a NaN coordinate")
    {
        c.points[3][1] = std::nan("");
        CHECK_THROWS_WITH(weft::write_vtk_polylines(path, c.points, c.polylines),
                          Contains("bad.vtk") && Contains("point 3 has a non-finite coordinate"));
        CHECK_THROWS_AS(weft::write_bcc(path, c.points, c.polylines), weft::InvalidInput);
        CHECK_THROWS_AS(weft::write_obj_polylines(path, c.points, c.polylines), weft::InvalidInput);
        CHECK_THROWS_AS(weft::write_vtp_polylines(path, c.points, c.polylines), weft::InvalidInput);
    }
    SECTION("an index out of range")
    {
        c.polylines[1].push_back(5);
        CHECK_THROWS_WITH(weft::write_obj_polylines(path, c.points, c.polylines),
                          Contains("polyline 1 refers to point 5"));
    }
    SECTION("a polyline with one point")
    {
        c.polylines[0] = {0};
        CHECK_THROWS_WITH(weft::write_vtk_polylines(path, c.points, c.polylines), Contains("polyline 0 has 1 points"));
    }
    SECTION("scalars of the wrong size or with a bad name")
    {
        c.scalars[0].values.pop_back();
        CHECK_THROWS_WITH(weft::write_vtk_polylines(path, c.points, c.polylines, c.scalars),
                          Contains("\"arc_length\" has 4 values for 5 points"));
        CHECK_THROWS_AS(weft::write_vtk_polylines(path, c.points, c.polylines, {{"arc length", {0, 0, 0, 0, 0}}}),
                        weft::InvalidInput);
    }
    SECTION("a coordinate too large for a float in BCC")
    {
        c.points[0][0] = 1e300;
        CHECK_THROWS_WITH(weft::write_bcc(path, c.points, c.polylines), Contains("does not fit a 32-bit float"));
    }
    CHECK_FALSE(fs::exists(path));
}

TEST_CASE("frames: an unwritable path throws naming it", "[io][frames][validation]")
{
    TempDir dir;
    const Curves c;
    const fs::path blocker = dir.path / "blocker";
    std::ofstream(blocker) << "a file, not a directory";
    const fs::path path = blocker / "frame.vtk";
    CHECK_THROWS_WITH(weft::write_vtk_polylines(path, c.points, c.polylines), Contains(path.string()));
    CHECK_THROWS_AS(weft::write_bcc(path, c.points, c.polylines), std::runtime_error);
    CHECK_THROWS_AS(weft::CsvWriter(blocker / "e.csv", {"t"}), std::runtime_error);
    CHECK_THROWS_AS(weft::PvdWriter(blocker / "f.pvd"), std::runtime_error);
}
