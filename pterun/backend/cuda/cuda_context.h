#pragma once

// What CUDA kernels (backend/cuda/ops/*.cu) use from the runtime: the
// method's stream, its cuBLAS handle, device scratch, and error checks.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "pterun/core/dtype.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/device_check.h"
#include "pterun/kernels/kernel.h"

namespace pterun::cuda {

/// Throws pterun::Error (Internal; MemoryAllocationFailed when the device
/// is out of memory) naming the failed call, the CUDA error and the source
/// location when `expr` does not return cudaSuccess.
#define PTERUN_CUDA_CHECK(expr) ::pterun::cuda::check_cuda((expr), #expr, __FILE__, __LINE__)
/// The same for cuBLAS / cuBLASLt calls.
#define PTERUN_CUBLAS_CHECK(expr) ::pterun::cuda::check_cublas((expr), #expr, __FILE__, __LINE__)

void check_cuda(cudaError_t status, const char* expr, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* expr, const char* file, int line);

/// After a kernel launch: throws when the launch failed (bad configuration,
/// no kernel image for this GPU), naming `op`.
void check_launch(const char* op);

/// The stream every kernel of the method runs on.
cudaStream_t stream(const kernels::KernelContext& context);

/// The GPU index of the method.
int device(const kernels::KernelContext& context);

/// The method's cuBLAS handle, bound to its stream, with a workspace set
/// (created on first use).
cublasHandle_t cublas(kernels::KernelContext& context);

/// The compute type of a cuBLAS product of `dtype` operands: float32
/// accumulation, and for float32 operands TF32 tensor-core inputs only
/// where the method allows it (MethodOptions::allow_tf32).
inline cublasComputeType_t gemm_compute(const kernels::KernelContext& context, DType dtype) {
  return dtype == DType::Float32 && context.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                       : CUBLAS_COMPUTE_32F;
}

/// The method's cuBLASLt handle (created on first use) and the workspace
/// it shares with the cuBLAS handle: one stream runs one product at a
/// time.
struct CublasLt {
  cublasLtHandle_t handle;
  void* workspace;
  size_t workspace_bytes;
};
CublasLt cublas_lt(kernels::KernelContext& context);

/// At least `bytes` of 256-byte-aligned device scratch, valid for the
/// current kernel (stream-ordered: reused by the next kernel on the same
/// stream). Grows only when a larger size is asked for than ever before.
void* scratch(kernels::KernelContext& context, size_t bytes);

/// Lets `kernel` launch with `bytes` of dynamic shared memory per block on
/// `device` (the current device): cudaFuncSetAttribute once per kernel,
/// device and larger size, as the attribute is the device's. False,
/// changing nothing, when the device cannot give a block that much.
bool allow_dynamic_shared(const void* kernel, int device, size_t bytes);

/// The method's device-check word (kernels/common/device_check.h), zeroed,
/// in device memory: a kernel that finds a bad position or index records it
/// there, and the method's next wait (backend::synchronize) raises it.
/// Allocated on first use (not during a CUDA graph capture: the first call
/// of a method is never captured).
kernels::DeviceCheck* device_check(kernels::KernelContext& context);

/// Blocks for 1-D launches over `n` items: min(ceil(n / threads), cap).
inline unsigned blocks_for(long long n, unsigned threads, unsigned cap = 65535u * 8u) {
  long long b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  return static_cast<unsigned>(b < cap ? b : cap);
}

/// True when `p` is a multiple of `bytes` (a vector access's alignment).
inline bool aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

}  // namespace pterun::cuda
