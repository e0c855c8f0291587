#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>

#include "pterun/backend/device.h"
#include "pterun/kernels/kernel.h"

namespace pterun::cuda {

constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

/// Per-method CUDA state kept in KernelContext::backend; single owner of
/// the stream, the cuBLAS handle and the device scratch.
struct MethodState {
  MethodState() = default;
  MethodState(const MethodState&) = delete;
  MethodState& operator=(const MethodState&) = delete;
  ~MethodState();

  int device = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t producer_done = nullptr;  // order_after_stream(), created on first use
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t cublas_lt = nullptr;  // shares cublas_workspace
  backend::DeviceBuffer cublas_workspace;
  // The cuDNN handle (cudnn_api.h), created on first use; its deleter
  // destroys it.
  std::shared_ptr<void> cudnn;
  backend::DeviceBuffer scratch;
  uint64_t scratch_epoch = 0;  // counts the moves of `scratch` (backend::scratch_epoch)
  // The device-check word (kernels/common/device_check.h) kernels report
  // bad positions and indices in, and its host copy, read after each wait;
  // allocated by the first kernel that checks.
  backend::DeviceBuffer check;
  backend::PinnedBuffer check_host;
};

/// The state of a CUDA method's context; Error Internal when `context` is
/// not one.
MethodState& state(const kernels::KernelContext& context);

}  // namespace pterun::cuda
