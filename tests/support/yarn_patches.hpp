#pragma once
// Small woven patches with the parameters of the 2017 example scene, shared by
// the yarn-model tests of the Eigen path and of the backend.
#include <weft/element/collider.hpp>
#include <weft/model/woven.hpp>

#include "support/random.hpp"

namespace weft_test {

inline weft::YarnMaterial<double> example_material(const weft::WovenPatch& p)
{
    weft::YarnMaterial<double> m;
    m.linear_density = p.density * weft::Constants<double>::pi * p.radius * p.radius;
    m.stretch_stiffness = 500;
    m.bending_stiffness = 1e-5;
    m.shear_stiffness = 1e-4;
    return m;
}

/// An nx × ny patch (1 mm spacing) with per-mode damping scaled by kd_scale.
inline weft::YarnModel<double> make_patch(int nx, int ny, weft::DampingModel damping, double kd_scale = 1.0)
{
    weft::WovenPatch p;
    p.nx = nx;
    p.ny = ny;
    weft::YarnModel<double> model;
    model.material = example_material(p);
    model.material.damping = damping;
    model.material.stretch_damping = 3e-7 * kd_scale;
    model.material.bending_damping = 1e-13 * kd_scale;
    model.material.shear_damping = 1e-9 * kd_scale;
    model.material.rayleigh_beta = 4e-3;
    weft::add_woven_patch(model, p);
    return model;
}

/// Friction at the crossings with the scene defaults (k_f = k_s / spacing,
/// F_n = 0.01 k_s).
inline void enable_friction(weft::YarnModel<double>& model, double mu = 0.3, double spacing = 1e-3)
{
    model.material.friction_coefficient = mu;
    model.material.anchor_stiffness = model.material.stretch_stiffness / spacing;
    model.material.normal_force = 0.01 * model.material.stretch_stiffness;
}

/// Uniform random offsets of the positions (±dx) and free arc lengths (±ds).
inline void perturb(weft::YarnModel<double>& model, Random& rng, double dx, double ds)
{
    for (int n = 0; n < model.node_count(); ++n) {
        for (int k = 0; k < 3; ++k) model.q[5 * n + k] += rng.uniform(-dx, dx);
        for (int k = 3; k < 5; ++k)
            if (model.free_dof[5 * n + k]) model.q[5 * n + k] += rng.uniform(-ds, ds);
    }
}

/// The sphere that presses on the stepper tests' patches: radius 2 mm,
/// penalty stiffness 10⁴, friction 0.3, centred at `center`.
inline weft::Collider<double> pressing_sphere(const weft::Vec3<double>& center)
{
    return weft::sphere_collider(center, 2e-3, 1e4, 0.3);
}

}  // namespace weft_test
