# Builds tests/consumer/project against weft, either after installing weft to a
# temporary prefix (MODE=find_package) or by add_subdirectory, then runs it.
file(REMOVE_RECURSE ${WORK_DIR})
set(project_dir ${CMAKE_CURRENT_LIST_DIR}/project)
if(MODE STREQUAL "find_package")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${WEFT_SOURCE_DIR} -B ${WORK_DIR}/weft-build
      -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_BENCHMARKS=OFF -DWEFT_ENABLE_CUDA=OFF
      -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${WORK_DIR}/weft-build COMMAND_ERROR_IS_FATAL ANY)
  set(extra -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DWEFT_CONSUMER_MODE=find_package)
else()
  set(extra -DWEFT_CONSUMER_MODE=add_subdirectory -DWEFT_SOURCE_DIR=${WEFT_SOURCE_DIR})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${project_dir} -B ${WORK_DIR}/consumer-build ${extra}
  COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${WORK_DIR}/consumer-build/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "stretch strain 0.5")
  message(FATAL_ERROR "consumer program failed (rc=${rc})")
endif()
