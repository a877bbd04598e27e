# The backend targets: which Thrust device system a program steps on.
#   weft::omp  : Thrust on CPU threads (OpenMP), compiled by the C++ compiler;
#                the CCCL headers (thrust/, cub/, cuda/) from the CUDA toolkit
#                or any CCCL install, found by WEFT_THRUST_INCLUDE_DIR
#   weft::cuda : Thrust on the GPU, for sources compiled by nvcc; defined when
#                the CUDA language is enabled before this file is read
# Both link weft::weft. weft's own build includes this file (and makes the
# targets GLOBAL, so a project that add_subdirectory()s weft sees them); the
# installed package config includes it after weft::weft is imported, so a
# project's find_package(weft) gets the same targets, found on its machine.
# A target whose requirements are missing is not defined; WEFT_OMP_MISSING /
# WEFT_CUDA_MISSING then say why.

if(WEFT_BACKENDS_GLOBAL)
  set(_weft_scope GLOBAL)
else()
  set(_weft_scope "")
endif()

if(NOT TARGET weft::omp)
  set(WEFT_OMP_MISSING "")
  find_package(OpenMP QUIET COMPONENTS CXX)
  find_path(WEFT_THRUST_INCLUDE_DIR thrust/device_vector.h
    HINTS ${CUDAToolkit_ROOT}/include/cccl /usr/local/cuda/include/cccl /usr/local/cuda/include /usr/include
    DOC "directory that holds thrust/, cub/ and cuda/ (CCCL)")
  if(NOT OpenMP_CXX_FOUND)
    set(WEFT_OMP_MISSING "OpenMP for C++ not found")
  elseif(NOT WEFT_THRUST_INCLUDE_DIR)
    set(WEFT_OMP_MISSING "Thrust (CCCL) headers not found: set WEFT_THRUST_INCLUDE_DIR to the folder holding thrust/device_vector.h")
  else()
    add_library(weft::omp INTERFACE IMPORTED ${_weft_scope})
    set_target_properties(weft::omp PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${WEFT_THRUST_INCLUDE_DIR}"
      INTERFACE_COMPILE_DEFINITIONS "THRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_OMP;WEFT_BACKEND_NAME=\"omp\""
      INTERFACE_LINK_LIBRARIES "weft::weft;OpenMP::OpenMP_CXX")
    # CHOLMOD (SuiteSparse, Debian libsuitesparse-dev), optional: the direct
    # linear solver `solver.linear: "cholmod"` (weft/backend/direct_solver.hpp).
    # WEFT_USE_CHOLMOD=OFF leaves it out even where it is installed.
    if(NOT DEFINED WEFT_USE_CHOLMOD OR WEFT_USE_CHOLMOD)
      find_path(WEFT_CHOLMOD_INCLUDE_DIR cholmod.h PATH_SUFFIXES suitesparse DOC "directory that holds cholmod.h")
      find_library(WEFT_CHOLMOD_LIBRARY cholmod DOC "the CHOLMOD library (SuiteSparse)")
      if(WEFT_CHOLMOD_INCLUDE_DIR AND WEFT_CHOLMOD_LIBRARY)
        set_property(TARGET weft::omp APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${WEFT_CHOLMOD_INCLUDE_DIR}")
        set_property(TARGET weft::omp APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS WEFT_WITH_CHOLMOD)
        set_property(TARGET weft::omp APPEND PROPERTY INTERFACE_LINK_LIBRARIES "${WEFT_CHOLMOD_LIBRARY}")
        set(WEFT_CHOLMOD_FOUND ON)
      endif()
    endif()
  endif()
endif()

if(NOT TARGET weft::cuda)
  set(WEFT_CUDA_MISSING "")
  get_property(_weft_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "CUDA" IN_LIST _weft_languages)
    set(WEFT_CUDA_MISSING "the CUDA language is not enabled (enable_language(CUDA) before find_package(weft))")
  else()
    find_package(CUDAToolkit QUIET)
    if(NOT CUDAToolkit_FOUND)
      set(WEFT_CUDA_MISSING "the CUDA toolkit (CUDA::cudart) was not found")
    else()
      add_library(weft::cuda INTERFACE IMPORTED ${_weft_scope})
      set_target_properties(weft::cuda PROPERTIES
        INTERFACE_COMPILE_DEFINITIONS "WEFT_BACKEND_NAME=\"cuda\""
        # Thrust functors with WEFT_HD members and device lambdas. No warning is
        # suppressed here: a suppression on this target would also hide the
        # user's own warnings (the host algebra of the multilevel setup is
        # written out for that reason, multilevel_preconditioner.hpp).
        INTERFACE_COMPILE_OPTIONS
          "$<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr;--extended-lambda>"
        INTERFACE_COMPILE_FEATURES "cuda_std_17"
        INTERFACE_LINK_LIBRARIES "weft::weft;CUDA::cudart")
    endif()
  endif()
endif()
unset(_weft_scope)
