#pragma once
/// @file memory_estimate.hpp
/// A scene's memory, estimated before anything is allocated, so that a scene
/// too large for the machine (e.g. `"yarns": [40000, 40000]`) is refused with
/// the estimate instead of being killed by the kernel halfway through its
/// allocation. Host-only.
///
/// The estimate is a lower bound from measured peak resident memory per node
/// (benchmarks/RESULTS.md, CPU threads): about 13 KB per yarn node (sphere
/// drop at 400², yarn-line preconditioner), 8 KB per triangle vertex with
/// dihedral bending (StVK sheet at 300²) and 20 KB with plate bending (its
/// stencils of up to 12 vertices; StVK sheet at 200²), of which it takes three
/// quarters, so that no scene that runs is refused.

#include <cstdint>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include <weft/core/error.hpp>
#include <weft/io/scene_description.hpp>

namespace weft {

/// Bytes per yarn node and per triangle vertex that a step needs at least.
constexpr double yarn_node_bytes = 10e3;
constexpr double triangle_vertex_bytes = 6e3;         ///< dihedral bending, or none
constexpr double plate_triangle_vertex_bytes = 15e3;  ///< plate bending

/// Nodes and bytes a scene needs at least (a mesh's vertex count is not
/// known before the file is read, and counts as zero).
struct MemoryEstimate {
    double yarn_nodes = 0;
    double triangle_vertices = 0;
    double triangle_bytes = 0;  ///< the triangle vertices' share of `bytes`
    double bytes = 0;
};

inline MemoryEstimate estimate_memory(const SceneDescription& scene)
{
    MemoryEstimate e;
    for (const ClothDescription& c : scene.cloth) {
        if (c.type == "woven") {
            e.yarn_nodes += double(c.yarns[0]) * double(c.yarns[1]);
        } else if (c.type == "triangle" && c.triangle.mesh.empty()) {
            const double vertices = double(c.triangle.resolution[0]) * double(c.triangle.resolution[1]);
            const bool plate = c.triangle.bending_model == "plate" && (c.triangle.bending > 0 || c.damping.bending > 0);
            e.triangle_vertices += vertices;
            e.triangle_bytes += vertices * (plate ? plate_triangle_vertex_bytes : triangle_vertex_bytes);
        }
    }
    e.bytes = e.yarn_nodes * yarn_node_bytes + e.triangle_bytes;
    return e;
}

/// The machine's physical memory in bytes (0 where it cannot be queried).
inline double physical_memory_bytes()
{
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) return double(pages) * double(page);
#endif
    return 0;
}

/// Refuses a scene whose estimate exceeds `available` bytes (the machine's
/// physical memory by default; unchecked where that is unknown).
/// @throws InvalidInput with the node counts, the estimate and the memory.
inline void require_fits_in_memory(const SceneDescription& scene, double available = physical_memory_bytes())
{
    const MemoryEstimate e = estimate_memory(scene);
    if (!(available > 0) || e.bytes <= available) return;
    const auto gb = [](double bytes) {
        const long tenths = static_cast<long>(bytes / 1e8 + 0.5);
        return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " GB";
    };
    std::string nodes;
    if (e.yarn_nodes > 0) nodes = std::to_string(static_cast<long long>(e.yarn_nodes)) + " yarn nodes";
    if (e.triangle_vertices > 0)
        nodes += (nodes.empty() ? "" : " and ") + std::to_string(static_cast<long long>(e.triangle_vertices)) +
                 " triangle vertices";
    throw InvalidInput("invalid cloth: the scene has " + nodes + ", which need at least " + gb(e.bytes) +
                       " of memory (" + std::to_string(static_cast<int>(yarn_node_bytes / 1e3)) +
                       " KB per yarn node, " + std::to_string(static_cast<int>(triangle_vertex_bytes / 1e3)) +
                       " KB per triangle vertex, " +
                       std::to_string(static_cast<int>(plate_triangle_vertex_bytes / 1e3)) +
                       " KB with plate bending), more than this machine's " + gb(available));
}

}  // namespace weft
