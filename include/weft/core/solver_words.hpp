#pragma once
/// @file solver_words.hpp
/// The words that name solver settings in scenes (`solver` keys,
/// docs/scenes.md) and on the benchmarks' command lines: one list per
/// setting, in the order of the enum it names where there is one, so that
/// the parser, the mapping to stepper options and the command lines accept
/// the same words. Host-only.

#include <string>
#include <vector>

#include <weft/core/error.hpp>

namespace weft {
namespace solver_words {

/// solver.preconditioner (PcgPreconditioner's scene choices).
inline const std::vector<std::string>& preconditioner()
{
    static const std::vector<std::string> words{"block-jacobi", "yarn-lines", "multilevel"};
    return words;
}

/// solver.multilevel_refresh, in the order of MultilevelRefresh.
inline const std::vector<std::string>& multilevel_refresh()
{
    static const std::vector<std::string> words{"off", "on-growth", "every-prepare"};
    return words;
}

/// solver.multilevel_rebuild: "rent-or-buy" (MultilevelOptions::timed_rebuild) or "growth".
inline const std::vector<std::string>& multilevel_rebuild()
{
    static const std::vector<std::string> words{"rent-or-buy", "growth"};
    return words;
}

/// solver.multilevel_pattern_change: "rebuild" or "keep" (MultilevelOptions::keep_across_patterns).
inline const std::vector<std::string>& multilevel_pattern_change()
{
    static const std::vector<std::string> words{"rebuild", "keep"};
    return words;
}

/// solver.multilevel_smoother, in the order of MultilevelSmoother.
inline const std::vector<std::string>& multilevel_smoother()
{
    static const std::vector<std::string> words{"chebyshev", "yarn-lines"};
    return words;
}

/// solver.multilevel_coarse_space, in the order of MultilevelCoarseSpace.
inline const std::vector<std::string>& multilevel_coarse_space()
{
    static const std::vector<std::string> words{"nodes", "yarns", "squares"};
    return words;
}

/// "auto" followed by `words`: what a scene key accepts whose default is
/// resolved when the stepper is made (index i + 1 names words[i]).
inline std::vector<std::string> auto_then(const std::vector<std::string>& words)
{
    std::vector<std::string> choices{"auto"};
    choices.insert(choices.end(), words.begin(), words.end());
    return choices;
}

/// The words solver.multilevel_smoother accepts: "auto" (the default, which
/// stepper_options resolves by the scene's cloth and the device system;
/// multilevel_smoother_named in multilevel_preconditioner.hpp) and
/// multilevel_smoother()'s.
inline const std::vector<std::string>& multilevel_smoother_choices()
{
    static const std::vector<std::string> words = auto_then(multilevel_smoother());
    return words;
}

/// The words solver.multilevel_coarse_space accepts: "auto" (as for the
/// smoother) and multilevel_coarse_space()'s.
inline const std::vector<std::string>& multilevel_coarse_space_choices()
{
    static const std::vector<std::string> words = auto_then(multilevel_coarse_space());
    return words;
}

/// solver.multilevel_cycle, in the order of MultilevelCycle.
inline const std::vector<std::string>& multilevel_cycle()
{
    static const std::vector<std::string> words{"v", "w"};
    return words;
}

/// solver.matrix_precision: "double" (the matrix as assembled) or "single"
/// (PcgOptions::single_precision_matrix).
inline const std::vector<std::string>& matrix_precision()
{
    static const std::vector<std::string> words{"double", "single"};
    return words;
}

/// solver.hessian_projection, in the order of HessianProjection.
inline const std::vector<std::string>& hessian_projection()
{
    static const std::vector<std::string> words{"clamp", "absolute", "adaptive"};
    return words;
}

/// The words joined by ", " (for messages).
inline std::string joined(const std::vector<std::string>& words)
{
    std::string out;
    for (const std::string& w : words) out += (out.empty() ? "" : ", ") + w;
    return out;
}

/// Position of `word` in `words`.
/// @throws InvalidInput "unknown WHAT \"word\" (expected one of ...)"
inline int index_of(const std::string& word, const std::vector<std::string>& words, const char* what)
{
    for (std::size_t i = 0; i < words.size(); ++i)
        if (words[i] == word) return static_cast<int>(i);
    throw InvalidInput(std::string("unknown ") + what + " \"" + word + "\" (expected one of " + joined(words) + ")");
}

}  // namespace solver_words
}  // namespace weft
