// compile (nvrtc.h): NVRTC's C API, resolved from libnvrtc.so.13 at run
// time. The handful of entry points is declared here with NVRTC's C
// signatures, so neither nvrtc.h nor the library is needed to build.

#include "pterun/backend/cuda/jit/nvrtc.h"

#include <cstddef>
#include <vector>

#include "pterun/backend/cuda/cuda_library.h"
#include "pterun/core/error.h"
#include "pterun/core/str_cat.h"

namespace pterun::cuda::jit {
namespace {

constexpr const char* kLibrary = "libnvrtc.so.13";

struct Program;      // nvrtcProgram points to it
using Result = int;  // nvrtcResult; 0 is NVRTC_SUCCESS

struct Api {
  void* handle = nullptr;
  std::string error;
  const char* (*error_string)(Result) = nullptr;
  Result (*create)(Program**, const char*, const char*, int, const char* const*,
                   const char* const*) = nullptr;
  Result (*destroy)(Program**) = nullptr;
  Result (*compile)(Program*, int, const char* const*) = nullptr;
  Result (*log_size)(Program*, size_t*) = nullptr;
  Result (*log)(Program*, char*) = nullptr;
  Result (*cubin_size)(Program*, size_t*) = nullptr;
  Result (*cubin)(Program*, char*) = nullptr;
  Result (*version)(int*, int*) = nullptr;
};

/// Resolves `f`; a missing entry point leaves the library unusable.
template <typename F>
void resolve(Api& api, F& f, const char* name) {
  if (api.handle == nullptr) return;
  if (!find_function(api.handle, kLibrary, name, f, api.error)) api.handle = nullptr;
}

Api load() {
  Api api;
  api.handle = open_cuda_library(kLibrary, PTERUN_CUDA_BUILD_LIBDIRS, api.error);
  resolve(api, api.error_string, "nvrtcGetErrorString");
  resolve(api, api.create, "nvrtcCreateProgram");
  resolve(api, api.destroy, "nvrtcDestroyProgram");
  resolve(api, api.compile, "nvrtcCompileProgram");
  resolve(api, api.log_size, "nvrtcGetProgramLogSize");
  resolve(api, api.log, "nvrtcGetProgramLog");
  resolve(api, api.cubin_size, "nvrtcGetCUBINSize");
  resolve(api, api.cubin, "nvrtcGetCUBIN");
  resolve(api, api.version, "nvrtcVersion");
  return api;
}

const Api& api() {
  static const Api a = load();
  return a;
}

/// Destroys the program on every way out.
struct ProgramGuard {
  const Api& api;
  Program* program = nullptr;
  ~ProgramGuard() {
    if (program != nullptr) api.destroy(&program);
  }
};

void check(const Api& a, Result r, const char* what, const char* name) {
  PTERUN_CHECK(r == 0, ErrorCode::Internal, "NVRTC: ", what, " of ", name,
               " failed: ", a.error_string(r));
}

/// The options of a compile for sm_<arch>: no fma contraction, as the
/// elementwise kernels are built (CMakeLists.txt).
std::vector<std::string> options(int arch) {
  return {str_cat("--gpu-architecture=sm_", arch), "--std=c++17", "--fmad=false", "-DNDEBUG"};
}

}  // namespace

std::string compiler_identity(int arch) {
  const Api& a = api();
  int major = 0;
  int minor = 0;
  if (a.handle != nullptr) a.version(&major, &minor);
  std::string id = str_cat("nvrtc ", major, ".", minor);
  for (const std::string& o : options(arch)) id += str_cat(" ", o);
  return id;
}

bool nvrtc_available(std::string* why) {
  const Api& a = api();
  if (a.handle == nullptr && why != nullptr) *why = a.error;
  return a.handle != nullptr;
}

std::string compile(const std::string& source, const char* name, int arch) {
  const Api& a = api();
  PTERUN_CHECK(a.handle != nullptr, ErrorCode::NotSupported, "NVRTC is not available (", a.error,
               "): install it with pip install 'pterun[cuda]' (the nvidia-cuda-nvrtc wheel)");
  std::vector<const char*> names;
  std::vector<const char*> texts;
  for (const Header& h : embedded_headers()) {
    names.push_back(h.name);
    texts.push_back(h.text);
  }
  ProgramGuard guard{a};
  check(a,
        a.create(&guard.program, source.c_str(), name, static_cast<int>(names.size()), texts.data(),
                 names.data()),
        "creating the program", name);
  const std::vector<std::string> opts = options(arch);
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  const Result compiled = a.compile(guard.program, static_cast<int>(argv.size()), argv.data());
  if (compiled != 0) {
    size_t size = 0;
    std::string log;
    if (a.log_size(guard.program, &size) == 0 && size > 1) {
      log.resize(size);
      if (a.log(guard.program, log.data()) != 0) log.clear();
    }
    throw Error(ErrorCode::Internal, str_cat("NVRTC: ", name, " does not compile for sm_", arch,
                                             " (", a.error_string(compiled), "): ", log));
  }
  size_t size = 0;
  check(a, a.cubin_size(guard.program, &size), "sizing the machine code", name);
  std::string cubin(size, '\0');
  check(a, a.cubin(guard.program, cubin.data()), "reading the machine code", name);
  return cubin;
}

}  // namespace pterun::cuda::jit
