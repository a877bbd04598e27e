#pragma once
/// The bad-settings checks that triangle and yarn collision share: each
/// refusal names its setting, and nothing is refused while collision is off.

#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include <weft/core/error.hpp>

namespace weft_test {

/// True when `build(model)` (a stepper's constructor) throws InvalidInput,
/// whose message must then contain `words`.
template <class Model, class Build>
bool refused(const Model& model, const std::string& words, const Build& build)
{
    try {
        build(model);
    } catch (const weft::InvalidInput& e) {
        INFO(e.what());
        CHECK(std::string(e.what()).find(words) != std::string::npos);
        return true;
    }
    return false;
}

/// The refusals of a model's `collision` settings: a negative thickness, a
/// thickness of `too_thick` (above what the geometry allows; the message
/// holds `too_thick_words`), a NaN stiffness, a negative friction; none for
/// `good`, nor for a bad thickness while collision is off; a parallel
/// angle (radians) that is negative, NaN or not below pi/2, and for
/// triangle cloth (`yarns` false) any nonzero one.
template <class Model, class Build>
void check_collision_settings(const Model& good, double too_thick, const std::string& too_thick_words,
                              const Build& build, bool yarns)
{
    for (const double angle : {-0.1, std::nan(""), 1.5707963267948966, 2.0}) {
        Model m = good;
        m.collision.parallel_angle = angle;
        INFO("parallel_angle " << angle);
        CHECK(refused(m, "collision.parallel_angle", build));
    }
    {
        Model m = good;
        m.collision.parallel_angle = 0.1;
        if (yarns)
            CHECK_FALSE(refused(m, "", build));
        else
            CHECK(refused(m, "collision.parallel_angle", build));
    }
    CHECK_FALSE(refused(good, "", build));
    Model m = good;
    m.collision.thickness = -1e-3;
    CHECK(refused(m, "collision.thickness", build));
    m = good;
    m.collision.thickness = too_thick;
    CHECK(refused(m, too_thick_words, build));
    m = good;
    m.collision.stiffness = std::nan("");
    CHECK(refused(m, "collision.stiffness", build));
    m = good;
    m.collision.friction = -0.1;
    CHECK(refused(m, "collision.friction", build));
    m = good;
    m.collision.enabled = false;
    m.collision.thickness = -1;  // ignored when off
    CHECK_FALSE(refused(m, "", build));
}

/// The most that a patch resting on a slope of angle `theta` (radians)
/// may creep down it in `duration` s while it sticks, friction μ, steps of
/// h: below its slip velocity (contact_slip_velocity) the mollified
/// friction lets a loaded contact creep, and for a pair whose nodes are each
/// pressed by their own weight that velocity is 2 h μ g cos θ.
inline double sticking_creep_bound(double h, double mu, double theta, double duration)
{
    return duration * 2 * h * mu * 9.81 * std::cos(theta);
}

}  // namespace weft_test
