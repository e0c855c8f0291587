// cuBLAS, loaded on first use. pterun's CUDA build does not link libcublas:
// it defines the few cuBLAS entry points it calls (with the header's own
// declarations, so the signatures are checked) and forwards each one to the
// library found at run time. A CUDA build therefore imports and runs CPU
// methods, and CUDA methods without matrix products, where cuBLAS is not
// installed (docs/python-api.md, B25); the `pterun[cuda]` extra installs it (the nvidia-cublas
// wheel), the way torch and JAX get their CUDA libraries.

#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>

#include "pterun/backend/cuda/cuda_library.h"
#include "pterun/core/error.h"
#include "pterun/core/str_cat.h"

namespace pterun::cuda {
namespace {

constexpr const char* kLibrary = "libcublas.so.13";

struct Library {
  void* handle = nullptr;
  std::string error;  // why it could not be loaded
};

Library load() {
  Library lib;
  lib.handle = open_cuda_library(kLibrary, PTERUN_CUBLAS_BUILD_LIBDIR, lib.error);
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
