#pragma once
// The degenerate-sliding setup of thesis Fig. 4.2c/d: the library builder
// (include/weft/model/sliding_rods.hpp) under the names the tests use.
#include <weft/model/sliding_rods.hpp>

namespace weft_test {

using weft::make_sliding_rods;
using weft::SlidingRods;

}  // namespace weft_test
