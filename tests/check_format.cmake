# Every C++ source of the repository is formatted as .clang-format says
# (clang-format --dry-run --Werror; scripts/install-deps.sh installs it).
# Fix with: clang-format -i <file>.
# Run: cmake -DROOT=<repository root> -P tests/check_format.cmake
find_program(CLANG_FORMAT NAMES clang-format-14 clang-format)
if(NOT CLANG_FORMAT)
  message(FATAL_ERROR "clang-format not found: install it (Debian: apt-get install clang-format, "
                      "which scripts/install-deps.sh does)")
endif()
execute_process(COMMAND ${CLANG_FORMAT} --version OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE)
file(GLOB_RECURSE sources
  ${ROOT}/include/*.hpp ${ROOT}/cuda/*.hpp ${ROOT}/src/*.cpp ${ROOT}/tests/*.hpp ${ROOT}/tests/*.cpp
  ${ROOT}/tests/*.cu ${ROOT}/examples/*.hpp ${ROOT}/examples/*.cpp ${ROOT}/examples/*.cu
  ${ROOT}/benchmarks/*.hpp ${ROOT}/benchmarks/*.cpp ${ROOT}/benchmarks/*.cu ${ROOT}/python/*.cpp)
list(FILTER sources EXCLUDE REGEX "/tests/consumer/project/build")
list(LENGTH sources count)
if(count LESS 100)
  message(FATAL_ERROR "only ${count} sources found under ${ROOT}: wrong ROOT?")
endif()
execute_process(COMMAND ${CLANG_FORMAT} --style=file --dry-run --Werror ${sources}
                WORKING_DIRECTORY ${ROOT} RESULT_VARIABLE result ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
  string(REGEX MATCHALL "[^\n]*: error: code should be clang-formatted" lines "${errors}")
  set(files "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE ":[0-9]+:[0-9]+: error: code should be clang-formatted" "" file "${line}")
    list(APPEND files ${file})
  endforeach()
  list(REMOVE_DUPLICATES files)
  list(JOIN files "\n  " listed)
  message(FATAL_ERROR "not formatted as .clang-format says (${version}); run clang-format -i on:\n  ${listed}")
endif()
message(STATUS "format: ${count} sources checked with ${version}")
