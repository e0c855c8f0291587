#pragma once

// CUDA C++ compiled at run time: NVRTC (loaded on first use from the
// nvidia-cuda-nvrtc wheel or the toolkit, like cuBLAS) turns a source into
// machine code for one GPU architecture, and the CUDA runtime loads it as
// a library whose kernels launch like any other.

#include <span>
#include <string>

namespace pterun::cuda::jit {

/// A header a generated source may #include by `name` (NVRTC reads no
/// files): the project's NVRTC-safe headers, embedded in the library at
/// build time (jit_headers.cpp, generated).
struct Header {
  const char* name;
  const char* text;
};
std::span<const Header> embedded_headers();

/// Machine code (a cubin) of `source` for compute capability `arch` (e.g.
/// 90), which may #include the embedded headers. Error NotSupported when
/// NVRTC is not installed, Internal with NVRTC's log when the source does
/// not compile.
std::string compile(const std::string& source, const char* name, int arch);

/// Whether NVRTC can be loaded; when not, why in `why`.
bool nvrtc_available(std::string* why);

/// What compile's result depends on besides the source and headers:
/// NVRTC's version and the options compile passes for `arch` (one line).
std::string compiler_identity(int arch);

}  // namespace pterun::cuda::jit
