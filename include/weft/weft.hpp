#pragma once
/// @file weft.hpp
/// Umbrella header: the header-only core of weft. Not included here: the
/// Thrust backend (<weft/backend/...>), the host-only I/O (<weft/io/...>,
/// which needs nlohmann-json), and the damping-ratio fit of measured
/// oscillations (<weft/solver/damping_ratio_fit.hpp>: its non-template
/// least-squares code tripled the time every file including weft.hpp took
/// to compile; measured with g++ 12 -O3 on a busy 2-core machine, 5.4-5.9 s
/// per file without it against 17.9-18.4 s with it).

#include <weft/core/config.hpp>
#include <weft/core/error.hpp>
#include <weft/core/math.hpp>
#include <weft/core/psd.hpp>
#include <weft/core/solver_words.hpp>
#include <weft/core/types.hpp>
#include <weft/core/version.hpp>

#include <weft/strain/bending.hpp>
#include <weft/strain/dihedral.hpp>
#include <weft/strain/green_strain.hpp>
#include <weft/strain/shear.hpp>
#include <weft/strain/shell_curvature.hpp>
#include <weft/strain/strain_eval.hpp>
#include <weft/strain/stretch.hpp>

#include <weft/potential/quadratic.hpp>
#include <weft/potential/rayleigh_analogy.hpp>
#include <weft/potential/stress_kind.hpp>
#include <weft/potential/stvk.hpp>
#include <weft/potential/tabulated.hpp>

#include <weft/element/bending_element.hpp>
#include <weft/element/cloth_contact.hpp>
#include <weft/element/collider.hpp>
#include <weft/element/dihedral_bending_element.hpp>
#include <weft/element/dissipation.hpp>
#include <weft/element/eil_terms.hpp>
#include <weft/element/elastic.hpp>
#include <weft/element/implicit_system.hpp>
#include <weft/element/jacobian_options.hpp>
#include <weft/element/membrane_element.hpp>
#include <weft/element/penalty.hpp>
#include <weft/element/plate_bending_element.hpp>
#include <weft/element/proximity.hpp>
#include <weft/element/rayleigh_damping.hpp>
#include <weft/element/segment_contact.hpp>
#include <weft/element/stress_hessian.hpp>
#include <weft/element/triangle_elements.hpp>
#include <weft/element/yarn_elements.hpp>
#include <weft/element/yarn_terms.hpp>

#include <weft/model/curvature_stencils.hpp>
#include <weft/model/eil_assignment.hpp>
#include <weft/model/triangle_mesh.hpp>
#include <weft/model/triangle_model.hpp>
#include <weft/model/woven.hpp>
#include <weft/model/yarn_model.hpp>

#include <weft/solver/dense_integrators.hpp>
#include <weft/solver/eigen_yarn_system.hpp>
