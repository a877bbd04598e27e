#pragma once
/// @file frame_output.hpp
/// The frame files of a yarn or triangle scene as weft-run writes them
/// (docs/scenes.md, "Frame files"): per frame legacy VTK, VTK XML listed in
/// .pvd series, OBJ, BCC. Shared by weft-run (scene_runner.cpp) and the
/// Python module (python/weft_python.cpp). Host-only; reads the stepper's
/// state back from the device.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <weft/backend/triangle_stepper.hpp>
#include <weft/backend/yarn_stepper.hpp>
#include <weft/io/frame_writers.hpp>
#include <weft/io/scene_description.hpp>
#include <weft/io/scene_model.hpp>
#include <weft/io/triangle_scene.hpp>

namespace weft::examples {

namespace runner_detail {

/// The yarn curves of one set (warp: u-yarns, weft: v-yarns) as polylines,
/// with the cloth entry of each.
struct YarnSets {
    CurveIndices warp;
    CurveIndices weft;
    std::vector<int> warp_cloth;
    std::vector<int> weft_cloth;
};

/// Which cloth entry each node's patch came from: node n of the patches
/// lies in cloth k where first_node[k] ≤ n < first_node[k + 1]; the
/// contact nodes between layers follow the patches (−1).
struct ClothRanges {
    std::vector<int> first_node;  ///< per cloth entry (empty: one cloth, every node)
    int end = 0;                  ///< one past the last patch node

    int cloth_of(int node) const
    {
        if (first_node.empty()) return 0;
        if (node >= end) return -1;
        return static_cast<int>(std::upper_bound(first_node.begin(), first_node.end(), node) - first_node.begin()) - 1;
    }
    /// A yarn's cloth: that of its first node that is not a contact node.
    int yarn_cloth(const std::vector<int>& yarn) const
    {
        for (const int n : yarn)
            if (cloth_of(n) >= 0) return cloth_of(n);
        return 0;
    }
};

inline YarnSets yarn_sets(const YarnModel<double>& model, const ClothRanges& ranges)
{
    YarnSets s;
    for (std::size_t k = 0; k < model.yarns.size(); ++k) {
        const bool warp = model.yarn_coordinate[k] == 3;
        (warp ? s.warp : s.weft).emplace_back(model.yarns[k].begin(), model.yarns[k].end());
        (warp ? s.warp_cloth : s.weft_cloth).push_back(ranges.yarn_cloth(model.yarns[k]));
    }
    return s;
}

inline VtpEncoding vtp_encoding_of(const OutputDescription& output)
{
    return output.vtp_encoding == "ascii" ? VtpEncoding::ascii : VtpEncoding::binary;
}

/// Writes frames in the scene's formats: per yarn set a legacy VTK file, a
/// VTK XML file listed in a .pvd series, an OBJ file; one BCC file of all
/// yarns. Point scalars (docs/scenes.md, "Frame files"): `arc_length`, the
/// `cloth` entry of the set's yarn through the point, and its `node_kind`.
class FrameOutput {
public:
    FrameOutput(std::filesystem::path dir, const OutputDescription& output, const YarnScene<double>& scene)
        : m_dir(std::move(dir)), m_formats(output.formats), m_encoding(vtp_encoding_of(output))
    {
        m_ranges.first_node = scene.first_node;
        m_ranges.end = scene.model.node_count();
        if (!scene.first_node.empty())
            m_ranges.end = scene.first_node.back() + scene.patches.back().nx * scene.patches.back().ny;
        m_sets = yarn_sets(scene.model, m_ranges);
        m_contact = scene.model.external_contact;
        std::filesystem::create_directories(m_dir);
        if (has("vtp")) {
            m_pvd.emplace("warp", std::make_unique<PvdWriter>(m_dir / "warp.pvd"));
            m_pvd.emplace("weft", std::make_unique<PvdWriter>(m_dir / "weft.pvd"));
        }
    }

    /// The yarn lists to draw from now on (a stepper that removed contacts
    /// runs on a new topology; the removed nodes are on no yarn).
    void set_yarns(const YarnModel<double>& model) { m_sets = yarn_sets(model, m_ranges); }

    /// Lists a frame that an earlier run wrote in the .pvd series again
    /// (weft-run --resume), without writing its files.
    void register_frame(int frame, double time)
    {
        char stem[32];
        std::snprintf(stem, sizeof stem, "frame_%05d", frame);
        for (const char* set : {"warp", "weft"}) {
            const bool warp = std::string(set) == "warp";
            if ((warp ? m_sets.warp : m_sets.weft).empty() || !has("vtp")) continue;
            m_pvd.at(set)->add_frame(time, std::string(stem) + "_" + set + ".vtp");
        }
    }

    void write(int frame, double time, const YarnStepper<double>& stepper)
    {
        const std::vector<double> q = to_host(stepper.positions());
        const std::size_t nodes = q.size() / yarn_node_dofs;
        CurvePoints points(nodes);
        std::vector<double> u(nodes), v(nodes);
        for (std::size_t n = 0; n < nodes; ++n) {
            for (int k = 0; k < 3; ++k) points[n][k] = q[yarn_node_dofs * n + k];
            u[n] = q[yarn_node_dofs * n + 3];
            v[n] = q[yarn_node_dofs * n + 4];
        }
        const std::vector<unsigned char>& node_eil = stepper.eil_assignment().node_eil;
        char stem[32];
        std::snprintf(stem, sizeof stem, "frame_%05d", frame);
        for (const char* set : {"warp", "weft"}) {
            const bool warp = std::string(set) == "warp";
            const CurveIndices& lines = warp ? m_sets.warp : m_sets.weft;
            if (lines.empty()) continue;
            // Points off this set's yarns keep cloth −1 and kind 0.
            std::vector<double> cloth(nodes, -1.0), kind(nodes, 0.0);
            const std::vector<int>& line_cloth = warp ? m_sets.warp_cloth : m_sets.weft_cloth;
            for (std::size_t y = 0; y < lines.size(); ++y)
                for (const Index n : lines[y]) {
                    const std::size_t i = std::size_t(n);
                    cloth[i] = line_cloth[y];
                    const bool eil = 2 * i + 1 < node_eil.size() && node_eil[2 * i + (warp ? 0 : 1)] != 0;
                    const bool contact = i < m_contact.size() && m_contact[i] != 0;
                    kind[i] = (eil ? 1.0 : 0.0) + (contact ? 2.0 : 0.0);
                }
            const std::vector<PointScalars> scalars{
                {"arc_length", warp ? u : v}, {"cloth", cloth}, {"node_kind", kind}};
            const std::string base = std::string(stem) + "_" + set;
            if (has("vtk")) write_vtk_polylines(m_dir / (base + ".vtk"), points, lines, scalars);
            if (has("vtp")) {
                write_vtp_polylines(m_dir / (base + ".vtp"), points, lines, scalars, m_encoding);
                m_pvd.at(set)->add_frame(time, base + ".vtp");
            }
            if (has("obj")) write_obj_polylines(m_dir / (base + ".obj"), points, lines);
        }
        if (has("bcc")) {
            CurveIndices all = m_sets.warp;
            all.insert(all.end(), m_sets.weft.begin(), m_sets.weft.end());
            write_bcc(m_dir / (std::string(stem) + ".bcc"), points, all);
        }
    }

private:
    bool has(const std::string& f) const
    {
        for (const std::string& g : m_formats)
            if (g == f) return true;
        return false;
    }

    std::filesystem::path m_dir;
    std::vector<std::string> m_formats;
    VtpEncoding m_encoding;
    ClothRanges m_ranges;
    YarnSets m_sets;
    std::vector<unsigned char> m_contact;
    std::map<std::string, std::unique_ptr<PvdWriter>> m_pvd;
};

/// Frames of a triangle scene: frame_NNNNN_cloth.{vtk,vtp,obj} and cloth.pvd.
class TriangleFrameOutput {
public:
    TriangleFrameOutput(std::filesystem::path dir, const OutputDescription& output, const TriangleMesh& mesh)
        : m_dir(std::move(dir)), m_formats(output.formats), m_encoding(vtp_encoding_of(output))
    {
        for (const std::string& f : m_formats)
            if (f == "bcc")
                throw InvalidInput("output.formats: \"bcc\" stores yarn curves; a triangle scene cannot write it");
        for (const auto& t : mesh.triangles) m_faces.push_back({t[0], t[1], t[2]});
        std::filesystem::create_directories(m_dir);
        if (has("vtp")) m_pvd = std::make_unique<PvdWriter>(m_dir / "cloth.pvd");
    }

    /// Lists a frame that an earlier run wrote in cloth.pvd again (weft-run
    /// --resume), without writing its files.
    void register_frame(int frame, double time)
    {
        char stem[40];
        std::snprintf(stem, sizeof stem, "frame_%05d_cloth", frame);
        if (has("vtp")) m_pvd->add_frame(time, std::string(stem) + ".vtp");
    }

    void write(int frame, double time, const TriangleStepper<double>& stepper)
    {
        const std::vector<double> q = to_host(stepper.positions());
        CurvePoints points(q.size() / 3);
        for (std::size_t n = 0; n < points.size(); ++n)
            for (int k = 0; k < 3; ++k) points[n][k] = q[3 * n + k];
        char stem[40];
        std::snprintf(stem, sizeof stem, "frame_%05d_cloth", frame);
        const std::string base(stem);
        if (has("vtk")) write_vtk_triangles(m_dir / (base + ".vtk"), points, m_faces);
        if (has("vtp")) {
            write_vtp_triangles(m_dir / (base + ".vtp"), points, m_faces, {}, m_encoding);
            m_pvd->add_frame(time, base + ".vtp");
        }
        if (has("obj")) write_obj_triangles(m_dir / (base + ".obj"), points, m_faces);
    }

private:
    bool has(const std::string& f) const { return std::find(m_formats.begin(), m_formats.end(), f) != m_formats.end(); }

    std::filesystem::path m_dir;
    std::vector<std::string> m_formats;
    VtpEncoding m_encoding;
    CurveIndices m_faces;
    std::unique_ptr<PvdWriter> m_pvd;
};

}  // namespace runner_detail

using runner_detail::FrameOutput;
using runner_detail::TriangleFrameOutput;

}  // namespace weft::examples
