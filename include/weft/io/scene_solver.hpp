#pragma once
/// @file scene_solver.hpp
/// The parser of a scene's `solver` object (keys: scene_schema.hpp,
/// docs/scenes.md). Host-only.

#include <string>

#include <weft/core/solver_words.hpp>
#include <weft/io/json_reader.hpp>
#include <weft/io/scene_description.hpp>
#include <weft/io/scene_schema.hpp>

namespace weft {
namespace scene_detail {

using namespace json_reader;

/// `solver` (`time_step` bounds `min_time_step` and sets its default).
inline SolverDescription parse_solver(const json& j, const std::string& path, double time_step)
{
    const Object o(j, path);
    o.allow_only(scene_keys::solver());
    SolverDescription s;
    auto at_least_one = [](const json& v, const std::string& p) { return read_integer(v, p, 1); };
    s.newton_iterations = o.get_or("newton_iterations", at_least_one, s.newton_iterations);
    s.newton_tolerance = o.get_or("newton_tolerance", read_positive, s.newton_tolerance);
    s.pcg_tolerance = o.get_or("pcg_tolerance", read_positive, s.pcg_tolerance);
    if (!(s.pcg_tolerance < 1))
        fail(o.path("pcg_tolerance"), "must be < 1 (a relative residual), got " + format_number(s.pcg_tolerance));
    s.pcg_max_iterations = o.get_or("pcg_max_iterations", at_least_one, s.pcg_max_iterations);
    s.adaptive_time_step = o.get_or("adaptive_time_step", read_bool, s.adaptive_time_step);
    s.preconditioner = o.get_or(
        "preconditioner",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, solver_words::preconditioner(), "preconditioner");
        },
        s.preconditioner);
    s.multilevel_smoother = o.get_or(
        "multilevel_smoother",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, solver_words::multilevel_smoother_choices(), "multilevel smoother");
        },
        s.multilevel_smoother);
    s.multilevel_coarse_space = o.get_or(
        "multilevel_coarse_space",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, solver_words::multilevel_coarse_space_choices(), "multilevel coarse space");
        },
        s.multilevel_coarse_space);
    // At least 3 (MultilevelOptions::square_side): lines of narrower squares
    // would couple squares three apart.
    s.multilevel_square_side = o.get_or(
        "multilevel_square_side", [](const json& v, const std::string& p) { return read_integer(v, p, 3); },
        s.multilevel_square_side);
    // At least 2 (MultilevelOptions::square_join).
    s.multilevel_square_join = o.get_or(
        "multilevel_square_join", [](const json& v, const std::string& p) { return read_integer(v, p, 2); },
        s.multilevel_square_join);
    s.multilevel_cycle = o.get_or(
        "multilevel_cycle",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, solver_words::multilevel_cycle(), "multilevel cycle");
        },
        s.multilevel_cycle);
    s.multilevel_refresh = o.get_or(
        "multilevel_refresh",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, solver_words::multilevel_refresh(), "multilevel refresh");
        },
        s.multilevel_refresh);
    // Any finite number (MultilevelOptions::refresh_tolerance): negative
    // recomputes every row at every refresh.
    s.multilevel_refresh_tolerance =
        o.get_or("multilevel_refresh_tolerance", read_number, s.multilevel_refresh_tolerance);
    // Any finite number (MultilevelOptions::line_factor_tolerance): 0 or
    // negative factors every finest yarn line at every prepare.
    s.multilevel_line_factor_tolerance =
        o.get_or("multilevel_line_factor_tolerance", read_number, s.multilevel_line_factor_tolerance);
    // Any finite number (MultilevelOptions::exact_ritz_bound): 0 or negative
    // turns the exact retakes off.
    s.multilevel_exact_ritz_bound = o.get_or("multilevel_exact_ritz_bound", read_number, s.multilevel_exact_ritz_bound);
    s.multilevel_renew_modes = o.get_or("multilevel_renew_modes", read_bool, s.multilevel_renew_modes);
    s.multilevel_rebuild = o.get_or(
        "multilevel_rebuild",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, solver_words::multilevel_rebuild(), "multilevel rebuild rule");
        },
        s.multilevel_rebuild);
    s.multilevel_pattern_change = o.get_or(
        "multilevel_pattern_change",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, solver_words::multilevel_pattern_change(), "multilevel pattern change");
        },
        s.multilevel_pattern_change);
    s.matrix_precision = o.get_or(
        "matrix_precision",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, solver_words::matrix_precision(), "matrix precision");
        },
        s.matrix_precision);
    s.linear = o.get_or(
        "linear",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, {"pcg", "cholmod"}, "linear solver");
        },
        s.linear);
    s.stiffness_approximation = o.get_or(
        "stiffness_approximation",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, {"auto", "gauss-newton", "projected"}, "stiffness approximation");
        },
        s.stiffness_approximation);
    s.min_time_step = o.get_or("min_time_step", read_positive, time_step / 1024);
    s.max_speed = o.get_or("max_speed", read_positive, s.max_speed);
    // Line-search halvings and doublings of one Newton update: 0..30.
    auto up_to_30 = [](const json& v, const std::string& p) {
        const int count = read_integer(v, p, 0);
        if (count > 30) fail(p, "must be <= 30, got " + std::to_string(count));
        return count;
    };
    s.line_search_cuts = o.get_or("line_search_cuts", up_to_30, s.line_search_cuts);
    s.line_search_expansions = o.get_or("line_search_expansions", up_to_30, s.line_search_expansions);
    s.exact_hessians = o.get_or("exact_hessians", read_bool, s.exact_hessians);
    s.hessian_projection = o.get_or(
        "hessian_projection",
        [](const json& v, const std::string& p) {
            return read_choice(v, p, solver_words::hessian_projection(), "Hessian projection");
        },
        s.hessian_projection);
    if (o.has("eil")) {
        const Object e(o.required("eil"), o.path("eil"));
        e.allow_only(scene_keys::eil());
        s.eil = e.get_or("enabled", read_bool, true);
        s.eil_given = true;
        // Fractions below 1: the message says what each is a fraction of.
        const auto require_below_one = [&](const char* key, double value, const char* fraction_of) {
            if (!(value < 1))
                fail(e.path(key),
                     std::string("must be < 1 (a fraction of ") + fraction_of + "), got " + format_number(value));
        };
        s.eil_safety_factor = e.get_or("safety_factor", read_positive, s.eil_safety_factor);
        require_below_one("safety_factor", s.eil_safety_factor, "the rest segment length");
        s.eil_contact_factor = e.get_or("contact_factor", read_positive, s.eil_contact_factor);
        s.eil_lookahead = e.get_or("lookahead", read_bool, s.eil_lookahead);
        s.eil_min_segment_factor = e.get_or("min_segment_factor", read_positive, s.eil_min_segment_factor);
        require_below_one("min_segment_factor", s.eil_min_segment_factor, "the safety distance");
        s.eil_reset_arc_length = e.get_or("reset_arc_length", read_bool, s.eil_reset_arc_length);
        s.eil_remove_pulling_contacts = e.get_or("remove_pulling_contacts", read_bool, s.eil_remove_pulling_contacts);
        s.eil_pull_threshold = e.get_or("pull_threshold", read_non_negative, s.eil_pull_threshold);
        require_below_one("pull_threshold", s.eil_pull_threshold, "the forces a contact balances");
    }
    if (s.min_time_step > time_step)
        fail(o.path("min_time_step"),
             "must be <= time_step = " + format_number(time_step) + ", got " + format_number(s.min_time_step));
    return s;
}

}  // namespace scene_detail
}  // namespace weft
