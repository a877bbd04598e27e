# run_scene (scene_runner.cpp), compiled once for weft-run and for its tests
# (tests/ is added before examples/, and either may be off).
if(NOT TARGET weft_scene_runner)
  add_library(weft_scene_runner STATIC ${CMAKE_CURRENT_LIST_DIR}/scene_runner.cpp)
  target_link_libraries(weft_scene_runner PUBLIC ${WEFT_OMP_STEPPERS} CLI11::CLI11)
  target_compile_options(weft_scene_runner PRIVATE -Wall -Wextra -Wpedantic)
endif()
