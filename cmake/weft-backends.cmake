# Targets that pick a Thrust device system for weft's own executables.
#   weft_backend_omp  : Thrust on CPU threads (OpenMP), compiled by the C++ compiler
#   weft_backend_cuda : Thrust on the GPU, compiled by nvcc (when WEFT_ENABLE_CUDA)
find_package(OpenMP REQUIRED COMPONENTS CXX)

find_path(WEFT_THRUST_INCLUDE_DIR thrust/device_vector.h
  HINTS ${CUDAToolkit_ROOT}/include/cccl /usr/local/cuda/include/cccl /usr/local/cuda/include /usr/include
  DOC "directory that holds thrust/, cub/ and cuda/ (CCCL)")
if(NOT WEFT_THRUST_INCLUDE_DIR)
  message(FATAL_ERROR "Thrust (CCCL) headers not found: set WEFT_THRUST_INCLUDE_DIR to the folder holding thrust/device_vector.h")
endif()

add_library(weft_backend_omp INTERFACE)
target_include_directories(weft_backend_omp SYSTEM INTERFACE ${WEFT_THRUST_INCLUDE_DIR})
target_compile_definitions(weft_backend_omp INTERFACE
  THRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_OMP WEFT_BACKEND_NAME="omp")
target_link_libraries(weft_backend_omp INTERFACE weft::weft OpenMP::OpenMP_CXX)

if(WEFT_ENABLE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # H100/H200 by default; pass -DCMAKE_CUDA_ARCHITECTURES=native (or a list) for other GPUs.
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  add_library(weft_backend_cuda INTERFACE)
  target_compile_definitions(weft_backend_cuda INTERFACE WEFT_BACKEND_NAME="cuda")
  target_compile_options(weft_backend_cuda INTERFACE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr --extended-lambda -diag-suppress=20012,20011,20014>)
  target_link_libraries(weft_backend_cuda INTERFACE weft::weft CUDA::cudart)
  set(CMAKE_CUDA_STANDARD 17)
endif()
