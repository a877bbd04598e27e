#pragma once
/// @file version.hpp
/// weft's version (the CMake project version; CMakeLists.txt checks that the
/// two agree when it configures).

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
#define WEFT_VERSION_STRING "0.1.0"
