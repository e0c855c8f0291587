// cuBLAS, loaded on first use. pterun's CUDA build does not link libcublas:
// it defines the few cuBLAS entry points it calls (with the header's own
// declarations, so the signatures are checked) and forwards each one to the
// library found at run time. A CUDA build therefore imports and runs CPU
// methods, and CUDA methods without matrix products, where cuBLAS is not
// installed (docs/python-api.md, B25); the `pterun[cuda]` extra installs it (the nvidia-cublas
// wheel), the way torch and JAX get their CUDA libraries.

#include <cublas_v2.h>
#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "pterun/core/error.h"
#include "pterun/core/str_cat.h"

namespace pterun::cuda {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLibrary = "libcublas.so.13";

/// Folders that may hold an installed nvidia-cublas wheel's libraries,
/// relative to the file holding this code: the Python module
/// (site-packages/pterun/) or the command (<prefix>/bin/), then the folder
/// the build found them in.
std::vector<fs::path> candidate_dirs() {
  std::vector<fs::path> homes;
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&candidate_dirs), &info) != 0 &&
      info.dli_fname != nullptr && fs::path(info.dli_fname).is_absolute()) {
    homes.push_back(fs::path(info.dli_fname).parent_path());
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) homes.push_back(exe.parent_path());

  std::vector<fs::path> dirs;
  for (const fs::path& home : homes) {
    dirs.push_back(home / ".." / "nvidia" / "cu13" / "lib");
    for (const auto& entry : fs::directory_iterator(home / ".." / "lib", ec)) {
      if (entry.path().filename().string().rfind("python3", 0) != 0) continue;
      for (const char* site : {"site-packages", "dist-packages"}) {
        dirs.push_back(entry.path() / site / "nvidia" / "cu13" / "lib");
      }
    }
  }
  const std::string built_with = PTERUN_CUBLAS_BUILD_LIBDIR;
  if (!built_with.empty()) dirs.emplace_back(built_with);
  return dirs;
}

struct Library {
  void* handle = nullptr;
  std::string error;  // why it could not be loaded
};

Library load() {
  Library lib;
  std::string tried;
  for (const fs::path& dir : candidate_dirs()) {
    const fs::path file = dir / kLibrary;
    std::error_code ec;
    if (!fs::exists(file, ec)) continue;
    lib.handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib.handle != nullptr) return lib;
    tried += str_cat(tried.empty() ? "" : "; ", dlerror());
  }
  // The loader's own search: LD_LIBRARY_PATH, the system's CUDA toolkit.
  lib.handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (lib.handle == nullptr) {
    tried += str_cat(tried.empty() ? "" : "; ", dlerror());
    lib.error = tried;
  }
  return lib;
}

const Library& library() {
  static const Library lib = load();
  return lib;
}

/// The address of cuBLAS function `name`, of type F.
template <typename F>
F* symbol(const char* name) {
  const Library& lib = library();
  if (lib.handle == nullptr) {
    throw Error(ErrorCode::InvalidState,
                str_cat("cuBLAS is not available (", lib.error,
                        "): install it with pip install 'pterun[cuda]' (the nvidia-cublas "
                        "wheel), or put ",
                        kLibrary, " on LD_LIBRARY_PATH"));
  }
  void* f = dlsym(lib.handle, name);
  PTERUN_CHECK(f != nullptr, ErrorCode::Internal, "cuBLAS: the loaded ", kLibrary, " has no ",
               name);
  return reinterpret_cast<F*>(f);
}

}  // namespace
}  // namespace pterun::cuda

// The entry points pterun uses (cublas_v2.h maps cublasCreate and friends to
// these _v2 names), each with its C signature (C++ code also sees inline
// overloads of the two products). Each resolves its target once.
#define PTERUN_CUBLAS_FORWARD(type, name, ...)                     \
  static type* const target = ::pterun::cuda::symbol<type>(#name); \
  return target(__VA_ARGS__)

namespace {
using GemmEx = cublasStatus_t(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                              const void*, const void*, cudaDataType, int, const void*,
                              cudaDataType, int, const void*, void*, cudaDataType, int,
                              cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedEx = cublasStatus_t(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int, int, int, const void*, const void*, cudaDataType,
                                            int, long long int, const void*, cudaDataType, int,
                                            long long int, const void*, void*, cudaDataType, int,
                                            long long int, int, cublasComputeType_t,
                                            cublasGemmAlgo_t);
}  // namespace

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  PTERUN_CUBLAS_FORWARD(decltype(cublasCreate_v2), cublasCreate_v2, handle);
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  PTERUN_CUBLAS_FORWARD(decltype(cublasDestroy_v2), cublasDestroy_v2, handle);
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  PTERUN_CUBLAS_FORWARD(decltype(cublasSetStream_v2), cublasSetStream_v2, handle, stream);
}

cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                                  size_t bytes) {
  PTERUN_CUBLAS_FORWARD(decltype(cublasSetWorkspace_v2), cublasSetWorkspace_v2, handle, workspace,
                        bytes);
}

const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  PTERUN_CUBLAS_FORWARD(decltype(cublasGetStatusName), cublasGetStatusName, status);
}

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  PTERUN_CUBLAS_FORWARD(decltype(cublasGetStatusString), cublasGetStatusString, status);
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const void* alpha, const void* A, cudaDataType Atype,
                                         int lda, const void* B, cudaDataType Btype, int ldb,
                                         const void* beta, void* C, cudaDataType Ctype, int ldc,
                                         cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  PTERUN_CUBLAS_FORWARD(GemmEx, cublasGemmEx, handle, transa, transb, m, n, k, alpha, A, Atype, lda,
                        B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo);
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA,
    const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  PTERUN_CUBLAS_FORWARD(GemmStridedBatchedEx, cublasGemmStridedBatchedEx, handle, transa, transb, m,
                        n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype,
                        ldc, strideC, batchCount, computeType, algo);
}

}  // extern "C"
