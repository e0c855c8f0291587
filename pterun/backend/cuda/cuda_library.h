#pragma once

// The NVIDIA libraries pterun loads at run time instead of linking them
// (cuBLAS, cublas_loader.cpp; NVRTC, jit/nvrtc.cpp), so that a CUDA build
// imports and runs CPU methods where they are not installed.

#include <string>

namespace pterun::cuda {

/// dlopen's handle of `soname` (e.g. "libcublas.so.13"), looked for in an
/// installed NVIDIA wheel (nvidia/cu13/lib in the site-packages holding
/// the pterun module, or beside the prefix of the running command), then
/// in the folders of `built_with` (where the build found NVIDIA's
/// libraries; colon-separated, may be empty), then by the
/// loader's own search (LD_LIBRARY_PATH, the system's toolkit). Null when
/// none loads, with every dlopen error in `error`.
void* open_cuda_library(const char* soname, const std::string& built_with, std::string& error);

}  // namespace pterun::cuda
