#pragma once
/// @file weft.hpp
/// Umbrella header: the whole header-only core of weft (no Thrust backend;
/// include <weft/backend/...> for that).

#include <weft/core/config.hpp>
#include <weft/core/error.hpp>
#include <weft/core/math.hpp>
#include <weft/core/psd.hpp>
#include <weft/core/types.hpp>

#include <weft/strain/strain_eval.hpp>
#include <weft/strain/stretch.hpp>

#include <weft/potential/quadratic.hpp>
#include <weft/potential/rayleigh_analogy.hpp>
#include <weft/potential/stress_kind.hpp>
#include <weft/potential/stvk.hpp>

#include <weft/element/dissipation.hpp>
#include <weft/element/elastic.hpp>
#include <weft/element/jacobian_options.hpp>
#include <weft/element/rayleigh_damping.hpp>
#include <weft/element/stress_hessian.hpp>
