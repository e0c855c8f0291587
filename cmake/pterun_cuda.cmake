# Decides whether the CUDA backend is built: it needs a CUDA compiler and
# cuBLAS's headers (cuBLAS itself is loaded at run time, see
# pterun/backend/cuda/cublas_loader.cpp). Sets PTERUN_HAS_CUDA,
# PTERUN_CUBLAS_INCLUDE_DIR, PTERUN_CUBLAS_LIBDIR (where the build found the
# libraries, searched at run time after the installed locations) and
# PTERUN_CUDA_STATUS (why, in words).
#
# cuBLAS: the toolkit's, else the one in the nvidia-cublas wheel (the build
# backend asks for it in isolated builds; scripts/install-deps installs it),
# else -DPTERUN_CUBLAS_ROOT=DIR holding include/ and lib/.

set(PTERUN_HAS_CUDA OFF)
set(PTERUN_CUBLAS_LIBDIR "")
if(NOT PTERUN_ENABLE_CUDA)
  set(PTERUN_CUDA_STATUS "switched off (PTERUN_ENABLE_CUDA=OFF)")
  return()
endif()

include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  set(PTERUN_CUDA_STATUS "no CUDA compiler found (put nvcc on PATH or set CUDACXX)")
  return()
endif()

find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  set(PTERUN_CUDA_STATUS "${CMAKE_CUDA_COMPILER} found, but not the CUDA toolkit around it")
  return()
endif()

if(NOT PTERUN_CUBLAS_ROOT)
  find_package(Python COMPONENTS Interpreter QUIET)
  if(Python_EXECUTABLE)
    execute_process(
      COMMAND ${Python_EXECUTABLE} -c "import nvidia.cu13 as m; print(list(m.__path__)[0])"
      OUTPUT_VARIABLE PTERUN_CUBLAS_ROOT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
endif()
# An isolated build (pip) finds the wheel in a temporary environment that
# is gone by the next build in the same folder: search again then.
if(PTERUN_CUBLAS_INCLUDE AND NOT EXISTS "${PTERUN_CUBLAS_INCLUDE}/cublas_v2.h")
  unset(PTERUN_CUBLAS_INCLUDE CACHE)
endif()
if(PTERUN_CUBLAS_LIB AND NOT EXISTS "${PTERUN_CUBLAS_LIB}")
  unset(PTERUN_CUBLAS_LIB CACHE)
endif()
find_path(PTERUN_CUBLAS_INCLUDE cublas_v2.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} ${PTERUN_CUBLAS_ROOT}/include NO_DEFAULT_PATH)
if(NOT PTERUN_CUBLAS_INCLUDE)
  set(PTERUN_CUDA_STATUS "${CMAKE_CUDA_COMPILER} found, but not cuBLAS (pip install "
    "'nvidia-cublas>=13,<14', or -DPTERUN_CUBLAS_ROOT=DIR)")
  unset(PTERUN_CUBLAS_INCLUDE CACHE)
  return()
endif()
# The wheel's headers are copied to a fixed place in the build folder, so
# that a new temporary environment does not change every compile command.
set(PTERUN_CUBLAS_INCLUDE_DIR ${PTERUN_CUBLAS_INCLUDE})
if(PTERUN_CUBLAS_ROOT AND PTERUN_CUBLAS_INCLUDE STREQUAL "${PTERUN_CUBLAS_ROOT}/include")
  file(GLOB PTERUN_CUBLAS_HEADERS "${PTERUN_CUBLAS_INCLUDE}/cublas*.h")
  file(COPY ${PTERUN_CUBLAS_HEADERS} DESTINATION ${CMAKE_BINARY_DIR}/cublas-include)
  set(PTERUN_CUBLAS_INCLUDE_DIR ${CMAKE_BINARY_DIR}/cublas-include)
endif()
find_file(PTERUN_CUBLAS_LIB NAMES libcublas.so.13
  HINTS ${CUDAToolkit_LIBRARY_DIR} ${PTERUN_CUBLAS_ROOT}/lib NO_DEFAULT_PATH)
if(PTERUN_CUBLAS_LIB)
  get_filename_component(PTERUN_CUBLAS_LIBDIR ${PTERUN_CUBLAS_LIB} DIRECTORY)
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
enable_language(CUDA)
set(PTERUN_HAS_CUDA ON)
set(PTERUN_CUDA_STATUS "${CMAKE_CUDA_COMPILER} ${CMAKE_CUDA_COMPILER_VERSION}, sm_${CMAKE_CUDA_ARCHITECTURES}, cuBLAS headers in ${PTERUN_CUBLAS_INCLUDE}")
