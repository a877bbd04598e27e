# Sources that nvcc compiles for the GPU (the backend headers, the backend
# tests built for weft::cuda, the device harnesses, the CUDA benchmarks'
# sources) pass no plain lambda to a Thrust algorithm: on the GPU the
# algorithm's kernel calls it, so it must be marked WEFT_HD. A plain lambda
# compiles for CPU threads, and even nvcc's device pass accepts it, but the
# host pass then fails in nvcc's generated kernel stub (a closure type local
# to a function cannot be named there; seen with nvcc 13.0). CI compiles the
# CUDA tests' device code only, so this check stands in for the host pass.
# Run: cmake -DROOT=<repository root> -P tests/check_device_lambdas.cmake
file(GLOB_RECURSE sources ${ROOT}/cuda/weft/*.hpp)
file(GLOB backend_tests ${ROOT}/tests/backend/test_*.cpp ${ROOT}/tests/device/*.cu ${ROOT}/benchmarks/*.cpp
     ${ROOT}/benchmarks/*.hpp)
list(APPEND sources ${backend_tests})
set(calls 0)
set(violations "")
foreach(source IN LISTS sources)
  file(READ ${source} text)
  # A Thrust algorithm's call up to its first lambda introducer with no
  # semicolon between: the lambda is one of its arguments. An introducer
  # followed by WEFT_HD (or __device__) is not "](".
  string(REGEX MATCHALL "thrust::[a-z_]+\\(" found "${text}")
  list(LENGTH found n)
  math(EXPR calls "${calls} + ${n}")
  string(REGEX MATCHALL "thrust::[a-z_]+\\([^;]*\\[[^]\n]*\\][ \t\n]*\\(" bad "${text}")
  foreach(match IN LISTS bad)
    string(REGEX MATCH "thrust::[a-z_]+" algorithm "${match}")
    file(RELATIVE_PATH relative ${ROOT} ${source})
    string(APPEND violations "\n  ${relative}: a plain lambda passed to ${algorithm}")
  endforeach()
endforeach()
if(calls LESS 100)
  message(FATAL_ERROR "only ${calls} Thrust calls found under ${ROOT}: wrong ROOT?")
endif()
if(violations)
  message(FATAL_ERROR "mark these lambdas WEFT_HD (tests/check_device_lambdas.cmake says why):${violations}")
endif()
message(STATUS "device lambdas: ${calls} Thrust calls checked, none passed a plain lambda")
