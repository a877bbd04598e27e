#pragma once
/// @file error.hpp
/// Host-side input validation: every message names the field and its value.

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace weft {

/// Thrown for invalid user input (parameters, scene keys, geometry).
class InvalidInput : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

namespace detail {
template <typename T>
inline std::string describe(const char* field, T value, const char* requirement)
{
    std::ostringstream os;
    os.precision(17);
    os << "invalid " << field << " = " << value << ": " << requirement;
    return os.str();
}
}  // namespace detail

template <typename T>
inline T require_finite(const char* field, T value)
{
    if (!std::isfinite(static_cast<double>(value)))
        throw InvalidInput(detail::describe(field, value, "must be a finite number"));
    return value;
}

template <typename T>
inline T require_positive(const char* field, T value)
{
    require_finite(field, value);
    if (!(value > T(0))) throw InvalidInput(detail::describe(field, value, "must be > 0"));
    return value;
}

template <typename T>
inline T require_non_negative(const char* field, T value)
{
    require_finite(field, value);
    if (!(value >= T(0))) throw InvalidInput(detail::describe(field, value, "must be >= 0"));
    return value;
}

}  // namespace weft
