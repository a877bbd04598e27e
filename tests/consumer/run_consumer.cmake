# Builds tests/consumer/project against weft, either after installing weft to a
# temporary prefix (MODE=find_package) or by add_subdirectory, then runs it.
file(REMOVE_RECURSE ${WORK_DIR})
set(project_dir ${CMAKE_CURRENT_LIST_DIR}/project)
if(MODE STREQUAL "find_package")
  # Installs the build tree this test belongs to (WEFT_BUILD_DIR): its
  # weft::omp_steppers (WEFT_PRECOMPILED) is already compiled, in that tree's
  # build type; the rest is headers and the package files. Building weft once
  # more on its own here took two minutes of the suite for the same install.
  if(NOT WEFT_BUILD_DIR OR NOT EXISTS ${WEFT_BUILD_DIR}/CMakeCache.txt)
    message(FATAL_ERROR "WEFT_BUILD_DIR (\"${WEFT_BUILD_DIR}\") is not a configured weft build tree")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${WEFT_BUILD_DIR} --prefix ${WORK_DIR}/prefix
    OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  set(extra -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DWEFT_CONSUMER_MODE=find_package)
else()
  # The stepping program is the same source in both modes; the find_package
  # test compiles and runs it. The backend's wiring through add_subdirectory
  # is checked by consumer_backend.
  set(extra -DWEFT_CONSUMER_MODE=add_subdirectory -DWEFT_SOURCE_DIR=${WEFT_SOURCE_DIR} -DWEFT_CONSUMER_STEPPER=OFF)
endif()
if(CONSUMER_CUDA)
  # The device's own architecture: code built for nvcc's default must be
  # compiled from PTX by the driver at start; built that way, this program ran
  # over a minute on an H100 without finishing (JIT assumed, not verified).
  list(APPEND extra -DWEFT_CONSUMER_CUDA=ON)
  if(CONSUMER_CUDA_ARCHITECTURES)
    list(APPEND extra -DCMAKE_CUDA_ARCHITECTURES=${CONSUMER_CUDA_ARCHITECTURES})
  endif()
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${project_dir} -B ${WORK_DIR}/consumer-build ${extra}
  COMMAND_ERROR_IS_FATAL ANY)
# Its programs build side by side (ctest runs this test alone; 2 jobs fit 2 cores).
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build --parallel 2 COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${WORK_DIR}/consumer-build/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "stretch strain 0.5" OR NOT out MATCHES "scene time step 0.002, 1 cloth")
  message(FATAL_ERROR "consumer program failed (rc=${rc})")
endif()
# The backend through weft::omp: a dot product, and (find_package) a woven
# patch stepped 20 times.
execute_process(COMMAND ${WORK_DIR}/consumer-build/consumer_backend RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "backend omp: dot 32")
  message(FATAL_ERROR "consumer_backend (weft::omp) failed (rc=${rc})")
endif()
if(MODE STREQUAL "find_package")
  execute_process(COMMAND ${WORK_DIR}/consumer-build/consumer_stepper RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "backend omp: stepped 20 steps")
    message(FATAL_ERROR "consumer_stepper (weft::omp) failed (rc=${rc})")
  endif()
endif()
if(EXISTS ${WORK_DIR}/consumer-build/consumer_stepper_cuda)
  execute_process(COMMAND ${WORK_DIR}/consumer-build/consumer_stepper_cuda RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "backend cuda: (stepped 20 steps|skipped)")
    message(FATAL_ERROR "consumer_stepper_cuda (weft::cuda) failed (rc=${rc})")
  endif()
endif()
