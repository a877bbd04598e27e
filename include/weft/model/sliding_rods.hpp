#pragma once
/// @file sliding_rods.hpp
/// The degenerate-sliding setup of thesis Fig. 4.2c/d as a yarn model (the
/// `"sliding-rods"` scene type, examples/scenes/sliding_rods.json): rod A
/// along x, rods B and C along y crossing A at two sliding contacts. B and C
/// are dragged along A towards each other (their end nodes are pins moving
/// in x at speed_b > 0 and speed_c < 0), so that their contact nodes on A
/// meet and cross — the case where two EoL nodes come arbitrarily close and
/// the EoL discretization degenerates unless one of them turns EIL.
///
/// Geometry (spacing L, y up, x right): rod A has Lagrangian nodes at
/// x = ±L … ±4L (arc length fixed) and the contacts P_B at x = −L/2, P_C at
/// x = +L/2 (arc lengths on A and on B/C free: 5-DoF crossings); the ends of A
/// are pinned. Rods B and C have Lagrangian nodes at y = ±L … ±3L, their ends
/// pinned and moving (B: +x, C: −x). u is the arc length on A (coordinate 3),
/// v on B or C (coordinate 4); a Lagrangian node keeps both fixed. The
/// contacts meet at t = p L / (speed_b − speed_c), p the pre-stretch of A.
/// No friction, no gravity. Rods B and C pass through each other where they
/// meet: only their contacts with A are modelled.

#include <vector>

#include <weft/core/math.hpp>
#include <weft/model/yarn_model.hpp>

namespace weft {

/// Rod material and geometry of the sliding-rods model.
struct SlidingRodsParameters {
    double spacing = 1e-3;            ///< L (m)
    double radius = 2.5e-4;           ///< yarn radius (m)
    double density = 130.0;           ///< kg/m³
    double stretch_stiffness = 500;   ///< k_s (N)
    double bending_stiffness = 1e-5;  ///< k_b (N m²)
};

struct SlidingRods {
    YarnModel<double> model;
    int contact_b = -1;  ///< node of the B–A contact
    int contact_c = -1;  ///< node of the C–A contact
    int rod_a = 0;       ///< yarn index of rod A
    double spacing = 1e-3;
};

/// @param[in] speed_b, speed_c  x velocity of B's and C's moving end pins (m/s);
///            B starts left of C, so speed_b > speed_c brings them together
/// @param[in] prestretch  A's length over its rest length (its ends are pinned)
/// @param[in] extra_b_node  if > 0, an extra Lagrangian node on B at this
///            distance (m) from the contact along B (y = +extra_b_node), which
///            puts P_B closer than the safety distance to it on B
inline SlidingRods make_sliding_rods(double speed_b, double speed_c, double prestretch = 1.0, double extra_b_node = 0,
                                     const SlidingRodsParameters& parameters = {})
{
    SlidingRods r;
    r.spacing = parameters.spacing;
    const double l = r.spacing;
    const double p = prestretch;
    YarnModel<double>& m = r.model;
    const double radius = parameters.radius, density = parameters.density;
    m.material.linear_density = density * Constants<double>::pi * radius * radius;
    m.material.stretch_stiffness = parameters.stretch_stiffness;
    m.material.bending_stiffness = parameters.bending_stiffness;
    m.material.damping = weft::DampingModel::none;
    m.radius = radius;

    // Adds a node; returns its id.
    auto add = [&](double x, double y, double u, double v, bool u_free, bool v_free, double vx) {
        const double q[5] = {x, y, 0, u, v};
        for (double c : q) m.q.push_back(c);
        const double vel[5] = {vx, 0, 0, u_free ? vx / p : 0.0, 0};  // a contact slides on A with du/dt = ẋ/p
        for (double c : vel) m.v.push_back(c);
        const unsigned char f[5] = {1, 1, 1, static_cast<unsigned char>(u_free), static_cast<unsigned char>(v_free)};
        for (unsigned char c : f) m.free_dof.push_back(c);
        m.anchors.push_back(u);
        m.anchors.push_back(v);
        m.over.push_back(1);
        return m.node_count() - 1;
    };

    // Rod A along x: arc length u = x / p + 4L.
    std::vector<int> a;
    for (int k = -4; k <= -1; ++k) a.push_back(add(p * k * l, 0, (k + 4) * l, 0, false, false, 0));
    r.contact_b = add(-0.5 * p * l, 0, 3.5 * l, 3 * l, true, true, speed_b);
    r.contact_c = add(0.5 * p * l, 0, 4.5 * l, 3 * l, true, true, speed_c);
    a.push_back(r.contact_b);
    a.push_back(r.contact_c);
    for (int k = 1; k <= 4; ++k) a.push_back(add(p * k * l, 0, (k + 4) * l, 0, false, false, 0));

    // Rods B and C along y: arc length v = y + 3L.
    auto rod = [&](int contact, double x, double vx) {
        std::vector<int> nodes;
        for (int k = -3; k <= -1; ++k) nodes.push_back(add(x, k * l, 0, (k + 3) * l, false, false, vx));
        nodes.push_back(contact);
        if (extra_b_node > 0 && contact == r.contact_b)
            nodes.push_back(add(x, extra_b_node, 0, 3 * l + extra_b_node, false, false, vx));
        for (int k = 1; k <= 3; ++k) nodes.push_back(add(x, k * l, 0, (k + 3) * l, false, false, vx));
        return nodes;
    };
    const std::vector<int> b = rod(r.contact_b, -0.5 * p * l, speed_b);
    const std::vector<int> c = rod(r.contact_c, 0.5 * p * l, speed_c);

    r.rod_a = 0;
    m.yarns = {a, b, c};
    m.yarn_coordinate = {3, 4, 4};
    for (std::size_t y = 0; y < m.yarns.size(); ++y) {
        const std::vector<int>& nodes = m.yarns[y];
        const int coordinate = m.yarn_coordinate[y];
        for (std::size_t k = 0; k + 1 < nodes.size(); ++k) m.segments.push_back({nodes[k], nodes[k + 1], coordinate});
        for (std::size_t k = 1; k + 1 < nodes.size(); ++k)
            m.bends.push_back({nodes[k - 1], nodes[k], nodes[k + 1], coordinate});
    }
    // Pins: A's ends at rest, B's and C's ends moving with their velocity.
    for (const std::vector<int>* nodes : {&m.yarns[0], &m.yarns[1], &m.yarns[2]})
        for (int end : {nodes->front(), nodes->back()})
            for (int k = 0; k < 3; ++k) m.free_dof[5 * static_cast<std::size_t>(end) + k] = 0;
    return r;
}

}  // namespace weft
