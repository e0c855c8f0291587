#pragma once

// The NVIDIA libraries pterun loads at run time instead of linking them
// (cuBLAS, cublas_loader.cpp; NVRTC, jit/nvrtc.cpp), so that a CUDA build
// imports and runs CPU methods where they are not installed.

#include <dlfcn.h>

#include <string>

#include "pterun/core/str_cat.h"

namespace pterun::cuda {

/// dlopen's handle of `soname` (e.g. "libcublas.so.13"), looked for in an
/// installed NVIDIA wheel (nvidia/cu13/lib in the site-packages holding
/// the pterun module, or beside the prefix of the running command), then
/// in the folders of `built_with` (where the build found NVIDIA's
/// libraries; colon-separated, may be empty), then by the
/// loader's own search (LD_LIBRARY_PATH, the system's toolkit). Null when
/// none loads, with every dlopen error in `error`.
void* open_cuda_library(const char* soname, const std::string& built_with, std::string& error);

/// Sets `f` to function `name` of `lib` (a handle open_cuda_library gave
/// for `soname`, or null). False when it is missing, with `error` saying
/// which.
template <typename F>
bool find_function(void* lib, const char* soname, const char* name, F& f, std::string& error) {
  f = lib == nullptr ? nullptr : reinterpret_cast<F>(dlsym(lib, name));
  if (f == nullptr) error = str_cat(soname, " has no ", name);
  return f != nullptr;
}

}  // namespace pterun::cuda
