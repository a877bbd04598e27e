#pragma once
/// @file woven.hpp
/// Builder of a rectangular woven patch: u-yarns along the first in-plane
/// axis and v-yarns along the second, crossing on a regular grid; each
/// crossing is a 5-DoF node (x, u, v) (Cirio et al. 2014, 2017 Sec. 3).
///
/// Grid: node (i, j), i = 0..nx−1 along the first axis, j = 0..ny−1 along the
/// second; index = j·nx + i. u-yarn j runs through nodes (·, j), v-yarn i
/// through (i, ·). At a yarn's two ends its arc-length coordinate is fixed
/// ("yarn-end nodes"). The weave pattern (plain, twill) only decides which
/// yarn lies on top at each crossing (`over`), used when rendering; the
/// mechanics of this model does not depend on it.

#include <cmath>
#include <string>
#include <vector>

#include <weft/core/error.hpp>
#include <weft/core/math.hpp>
#include <weft/model/yarn_model.hpp>

namespace weft {

enum class WeavePattern { plain, twill };
enum class ClothPlane { xy, xz };

struct WovenPatch {
    int nx = 2;              ///< nodes along the first axis (= number of v-yarns)
    int ny = 2;              ///< nodes along the second axis (= number of u-yarns)
    double spacing = 1e-3;   ///< rest distance between neighbouring crossings (m)
    double radius = 2.5e-4;  ///< yarn radius (m)
    double density = 130.0;  ///< yarn material density (kg/m³)
    std::array<double, 3> center{0, 0, 0};
    ClothPlane plane = ClothPlane::xy;
    WeavePattern pattern = WeavePattern::plain;
    /// In-plane rotation (degrees, counter-clockwise about axis1 × axis2)
    /// of the whole grid about `center`; 0 puts the u-yarns along axis1.
    double rotation = 0;
};

/// In-plane axes of a patch: first axis, second axis (unit vectors).
inline void plane_axes(ClothPlane plane, Vec3<double>& axis1, Vec3<double>& axis2)
{
    axis1 = Vec3<double>(1, 0, 0);
    axis2 = plane == ClothPlane::xy ? Vec3<double>(0, 1, 0) : Vec3<double>(0, 0, 1);
}

/// The directions of a patch's u-yarns (`along_u`) and v-yarns (`along_v`):
/// the plane's axes rotated by `rotation` degrees about their normal.
inline void patch_axes(const WovenPatch& p, Vec3<double>& along_u, Vec3<double>& along_v)
{
    Vec3<double> a1, a2;
    plane_axes(p.plane, a1, a2);
    const double angle = p.rotation * (3.14159265358979323846 / 180.0);
    const double c = std::cos(angle), s = std::sin(angle);
    along_u = c * a1 + s * a2;
    along_v = -s * a1 + c * a2;
}

/// Appends a woven patch to `model` (its material must already be set).
/// Returns the index of the patch's first node.
template <typename T>
int add_woven_patch(YarnModel<T>& model, const WovenPatch& p)
{
    if (p.nx < 2) throw InvalidInput(detail::describe("yarns[0]", p.nx, "need at least 2 nodes per yarn"));
    if (p.ny < 2) throw InvalidInput(detail::describe("yarns[1]", p.ny, "need at least 2 nodes per yarn"));
    require_positive("spacing", p.spacing);
    require_positive("radius", p.radius);
    require_positive("density", p.density);
    if (!std::isfinite(p.rotation))
        throw InvalidInput(detail::describe("rotation", p.rotation, "must be a finite angle in degrees"));

    const int first = model.node_count();
    Vec3<double> a1, a2;
    patch_axes(p, a1, a2);
    const Vec3<double> c(p.center[0], p.center[1], p.center[2]);
    const double w = (p.nx - 1) * p.spacing;
    const double h = (p.ny - 1) * p.spacing;
    auto id = [&](int i, int j) { return first + j * p.nx + i; };

    for (int j = 0; j < p.ny; ++j) {
        for (int i = 0; i < p.nx; ++i) {
            const Vec3<double> x = c + (i * p.spacing - 0.5 * w) * a1 + (j * p.spacing - 0.5 * h) * a2;
            const double u = i * p.spacing;
            const double v = j * p.spacing;
            for (int k = 0; k < 3; ++k) model.q.push_back(T(x(k)));
            model.q.push_back(T(u));
            model.q.push_back(T(v));
            for (int k = 0; k < yarn_node_dofs; ++k) model.v.push_back(T(0));
            // Yarn ends keep their arc-length coordinate fixed.
            const bool u_end = (i == 0 || i == p.nx - 1);
            const bool v_end = (j == 0 || j == p.ny - 1);
            for (int k = 0; k < 3; ++k) model.free_dof.push_back(1);
            model.free_dof.push_back(u_end ? 0 : 1);
            model.free_dof.push_back(v_end ? 0 : 1);
            model.anchors.push_back(T(u));
            model.anchors.push_back(T(v));
            // plain: over/under alternates at every crossing; 2/2 twill: in
            // runs of two, shifted by one crossing per yarn (diagonal ribs).
            const int run = p.pattern == WeavePattern::plain ? 1 : 2;
            model.over.push_back(static_cast<unsigned char>(((i + j) / run) % 2 == 0 ? 1 : 0));
        }
    }
    for (int j = 0; j < p.ny; ++j) {  // u-yarns
        std::vector<int> nodes;
        for (int i = 0; i < p.nx; ++i) nodes.push_back(id(i, j));
        model.yarns.push_back(nodes);
        model.yarn_coordinate.push_back(3);
    }
    for (int i = 0; i < p.nx; ++i) {  // v-yarns
        std::vector<int> nodes;
        for (int j = 0; j < p.ny; ++j) nodes.push_back(id(i, j));
        model.yarns.push_back(nodes);
        model.yarn_coordinate.push_back(4);
    }
    for (int j = 0; j < p.ny; ++j)
        for (int i = 0; i + 1 < p.nx; ++i) model.segments.push_back({id(i, j), id(i + 1, j), 3});
    for (int i = 0; i < p.nx; ++i)
        for (int j = 0; j + 1 < p.ny; ++j) model.segments.push_back({id(i, j), id(i, j + 1), 4});
    for (int j = 0; j < p.ny; ++j)
        for (int i = 1; i + 1 < p.nx; ++i) model.bends.push_back({id(i - 1, j), id(i, j), id(i + 1, j), 3});
    for (int i = 0; i < p.nx; ++i)
        for (int j = 1; j + 1 < p.ny; ++j) model.bends.push_back({id(i, j - 1), id(i, j), id(i, j + 1), 4});
    for (int j = 0; j + 1 < p.ny; ++j)
        for (int i = 0; i + 1 < p.nx; ++i) model.shears.push_back({id(i, j), id(i + 1, j), id(i, j + 1), p.spacing});
    model.radius = T(p.radius);
    return first;
}

/// Named node sets of a patch ("top-edge", "bottom-edge", "left-edge",
/// "right-edge", "corners"); top/bottom are the extremes of the second axis.
inline std::vector<int> woven_node_set(const WovenPatch& p, int first, const std::string& name)
{
    std::vector<int> out;
    auto id = [&](int i, int j) { return first + j * p.nx + i; };
    if (name == "top-edge") {
        for (int i = 0; i < p.nx; ++i) out.push_back(id(i, p.ny - 1));
    } else if (name == "bottom-edge") {
        for (int i = 0; i < p.nx; ++i) out.push_back(id(i, 0));
    } else if (name == "left-edge") {
        for (int j = 0; j < p.ny; ++j) out.push_back(id(0, j));
    } else if (name == "right-edge") {
        for (int j = 0; j < p.ny; ++j) out.push_back(id(p.nx - 1, j));
    } else if (name == "corners") {
        out = {id(0, 0), id(p.nx - 1, 0), id(0, p.ny - 1), id(p.nx - 1, p.ny - 1)};
    } else {
        throw InvalidInput("invalid pin set \"" + name +
                           "\": expected top-edge, bottom-edge, left-edge, right-edge or corners");
    }
    return out;
}

/// Pins the position DoFs of the given nodes (arc lengths stay free to slide).
template <typename T>
void pin_nodes(YarnModel<T>& model, const std::vector<int>& nodes)
{
    for (int n : nodes) {
        if (n < 0 || n >= model.node_count())
            throw InvalidInput(detail::describe("pins[] node index", n, "out of range"));
        for (int k = 0; k < 3; ++k) model.free_dof[yarn_node_dofs * n + k] = 0;
    }
}

/// Sets a rigid initial velocity v = v_lin + ω × (x − c) on the nodes
/// [first, first + count), c their centroid.
template <typename T>
void set_rigid_velocity(YarnModel<T>& model, int first, int count, const Vec3<T>& linear, const Vec3<T>& angular)
{
    Vec3<T> c = Vec3<T>::Zero();
    for (int n = first; n < first + count; ++n) c += model.position(n);
    c /= T(count);
    for (int n = first; n < first + count; ++n) {
        const Vec3<T> vel = linear + angular.cross(model.position(n) - c);
        for (int k = 0; k < 3; ++k) model.v[yarn_node_dofs * n + k] = vel(k);
    }
}

}  // namespace weft
