# run_friction_incline (run_friction_incline.cpp), compiled once for the
# friction_incline example and for the tests that run it (tests/ is added
# before examples/, and either may be off).
if(NOT TARGET weft_friction_incline)
  add_library(weft_friction_incline STATIC ${CMAKE_CURRENT_LIST_DIR}/run_friction_incline.cpp)
  target_link_libraries(weft_friction_incline PUBLIC ${WEFT_OMP_STEPPERS} CLI11::CLI11)
  target_compile_options(weft_friction_incline PRIVATE -Wall -Wextra -Wpedantic)
endif()
