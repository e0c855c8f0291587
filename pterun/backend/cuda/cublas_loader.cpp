// cuBLAS and cuBLASLt, loaded on first use. pterun's CUDA build does not
// link libcublas or libcublasLt:
// it defines the few cuBLAS entry points it calls (with the header's own
// declarations, so the signatures are checked) and forwards each one to the
// library found at run time. A CUDA build therefore imports and runs CPU
// methods, and CUDA methods without matrix products, where cuBLAS is not
// installed (docs/python-api.md, B25); the `pterun[cuda]` extra installs it (the nvidia-cublas
// wheel), the way torch and JAX get their CUDA libraries.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>

#include "pterun/backend/cuda/cuda_library.h"
#include "pterun/core/error.h"
#include "pterun/core/str_cat.h"

namespace pterun::cuda {
namespace {

struct Library {
  const char* soname;
  void* handle = nullptr;
  std::string error;  // why it could not be loaded
};

Library load(const char* soname) {
  Library lib{soname};
  lib.handle = open_cuda_library(soname, PTERUN_CUBLAS_BUILD_LIBDIR, lib.error);
  return lib;
}

/// cuBLAS and cuBLASLt, both from the nvidia-cublas wheel.
const Library& cublas_library() {
  static const Library lib = load("libcublas.so.13");
  return lib;
}
const Library& cublaslt_library() {
  static const Library lib = load("libcublasLt.so.13");
  return lib;
}

/// The address of function `name`, of type F, in `lib`.
template <typename F>
F* symbol(const Library& lib, const char* name) {
  if (lib.handle == nullptr) {
    throw Error(ErrorCode::InvalidState,
                str_cat("cuBLAS is not available (", lib.error,
                        "): install it with pip install 'pterun[cuda]' (the nvidia-cublas "
                        "wheel), or put ",
                        lib.soname, " on LD_LIBRARY_PATH"));
  }
  void* f = dlsym(lib.handle, name);
  PTERUN_CHECK(f != nullptr, ErrorCode::Internal, "cuBLAS: the loaded ", lib.soname, " has no ",
               name);
  return reinterpret_cast<F*>(f);
}

}  // namespace
}  // namespace pterun::cuda

// The entry points pterun uses (cublas_v2.h maps cublasCreate and friends to
// these _v2 names), each with its C signature (C++ code also sees inline
// overloads of the two products). Each resolves its target once.
#define PTERUN_CUBLAS_FORWARD(type, name, ...)                               \
  static type* const target =                                                \
      ::pterun::cuda::symbol<type>(::pterun::cuda::cublas_library(), #name); \
  return target(__VA_ARGS__)
#define PTERUN_CUBLASLT_FORWARD(name, ...)                                               \
  static decltype(name)* const target =                                                  \
      ::pterun::cuda::symbol<decltype(name)>(::pterun::cuda::cublaslt_library(), #name); \
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

// cuBLASLt: matrix products with epilogues (matmul.cu). The descriptors
// live in pterun's memory (the _internal initialisers), so a product
// allocates nothing on the host.

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* handle) {
  PTERUN_CUBLASLT_FORWARD(cublasLtCreate, handle);
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t handle) {
  PTERUN_CUBLASLT_FORWARD(cublasLtDestroy, handle);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t desc, size_t size,
                                                            cublasComputeType_t compute,
                                                            cudaDataType_t scale) {
  PTERUN_CUBLASLT_FORWARD(cublasLtMatmulDescInit_internal, desc, size, compute, scale);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           const void* buf, size_t size) {
  PTERUN_CUBLASLT_FORWARD(cublasLtMatmulDescSetAttribute, desc, attr, buf, size);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t layout,
                                                              size_t size, cudaDataType type,
                                                              uint64_t rows, uint64_t cols,
                                                              int64_t ld) {
  PTERUN_CUBLASLT_FORWARD(cublasLtMatrixLayoutInit_internal, layout, size, type, rows, cols, ld);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref,
                                                                  size_t size) {
  PTERUN_CUBLASLT_FORWARD(cublasLtMatmulPreferenceInit_internal, pref, size);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
    size_t size) {
  PTERUN_CUBLASLT_FORWARD(cublasLtMatmulPreferenceSetAttribute, pref, attr, buf, size);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
    int* returned) {
  PTERUN_CUBLASLT_FORWARD(cublasLtMatmulAlgoGetHeuristic, handle, desc, a, b, c, d, pref, requested,
                          results, returned);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoConfigGetAttribute(
    const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
    size_t size, size_t* written) {
  PTERUN_CUBLASLT_FORWARD(cublasLtMatmulAlgoConfigGetAttribute, algo, attr, buf, size, written);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                           const void* alpha, const void* A,
                                           cublasLtMatrixLayout_t a, const void* B,
                                           cublasLtMatrixLayout_t b, const void* beta,
                                           const void* C, cublasLtMatrixLayout_t c, void* D,
                                           cublasLtMatrixLayout_t d,
                                           const cublasLtMatmulAlgo_t* algo, void* workspace,
                                           size_t workspace_bytes, cudaStream_t stream) {
  PTERUN_CUBLASLT_FORWARD(cublasLtMatmul, handle, desc, alpha, A, a, B, b, beta, C, c, D, d, algo,
                          workspace, workspace_bytes, stream);
}

}  // extern "C"
