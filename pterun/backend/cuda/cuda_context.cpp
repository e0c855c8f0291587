#include "pterun/backend/cuda/cuda_context.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "pterun/backend/cuda/cuda_state.h"
#include "pterun/core/str_cat.h"

namespace pterun::cuda {

void check_cuda(cudaError_t status, const char* expr, const char* file, int line) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so later calls start clean
  // Out of memory is not sticky: the device stays usable, and Python sees
  // a MemoryError.
  throw Error(
      status == cudaErrorMemoryAllocation ? ErrorCode::MemoryAllocationFailed : ErrorCode::Internal,
      str_cat("CUDA error ", cudaGetErrorName(status), " (", cudaGetErrorString(status), ") in ",
              expr, " at ", file, ":", line));
}

void check_cublas(cublasStatus_t status, const char* expr, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(status == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::MemoryAllocationFailed
                                                   : ErrorCode::Internal,
              str_cat("cuBLAS error ", cublasGetStatusName(status), " (",
                      cublasGetStatusString(status), ") in ", expr, " at ", file, ":", line));
}

void check_launch(const char* op) {
  cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return;
  throw Error(ErrorCode::Internal,
              str_cat(op, ": CUDA kernel launch failed: ", cudaGetErrorName(status), " (",
                      cudaGetErrorString(status), ")"));
}

MethodState& state(const kernels::KernelContext& context) {
  PTERUN_CHECK(context.device == Device::CUDA && context.backend != nullptr, ErrorCode::Internal,
               "a CUDA kernel ran without a CUDA method context");
  return *static_cast<MethodState*>(context.backend.get());
}

cudaStream_t stream(const kernels::KernelContext& context) {
  return state(context).stream;
}

int device(const kernels::KernelContext& context) {
  return state(context).device;
}

cublasHandle_t cublas(kernels::KernelContext& context) {
  MethodState& s = state(context);
  if (s.cublas == nullptr) {
    PTERUN_CUDA_CHECK(cudaSetDevice(s.device));
    PTERUN_CUBLAS_CHECK(cublasCreate(&s.cublas));
    PTERUN_CUBLAS_CHECK(cublasSetStream(s.cublas, s.stream));
    // A workspace of our own, so cuBLAS never allocates during a call (or
    // a CUDA graph capture).
    s.cublas_workspace = backend::DeviceBuffer(s.device, kCublasWorkspaceBytes);
    PTERUN_CUBLAS_CHECK(
        cublasSetWorkspace(s.cublas, s.cublas_workspace.data(), s.cublas_workspace.size()));
  }
  return s.cublas;
}

CublasLt cublas_lt(kernels::KernelContext& context) {
  cublas(context);  // the workspace
  MethodState& s = state(context);
  if (s.cublas_lt == nullptr) PTERUN_CUBLAS_CHECK(cublasLtCreate(&s.cublas_lt));
  return {s.cublas_lt, s.cublas_workspace.data(), s.cublas_workspace.size()};
}

void* scratch(kernels::KernelContext& context, size_t bytes) {
  MethodState& s = state(context);
  if (bytes > s.scratch.size()) {
    size_t size = (bytes + 255) / 256 * 256;
    // The old scratch may still be read by queued kernels: wait for them
    // before it is freed (this happens only while the size grows).
    PTERUN_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    s.scratch = backend::DeviceBuffer(s.device, size);
    ++s.scratch_epoch;
  }
  return s.scratch.data();
}

MethodState::~MethodState() {
  // The method's memory goes after this: let queued work finish first,
  // with our GPU current for every call below.
  cudaSetDevice(device);
  if (stream != nullptr) cudaStreamSynchronize(stream);
  cudnn.reset();
  if (cublas_lt != nullptr) cublasLtDestroy(cublas_lt);
  if (cublas != nullptr) cublasDestroy(cublas);
  if (producer_done != nullptr) cudaEventDestroy(producer_done);
  if (stream != nullptr) cudaStreamDestroy(stream);
}

bool allow_dynamic_shared(const void* kernel, int device, size_t bytes) {
  if (bytes <= 48 * 1024) return true;
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, size_t> allowed;  // kernel, device -> bytes
  static std::map<int, size_t> limits;                           // device -> opt-in limit
  const std::lock_guard<std::mutex> lock(mutex);
  auto limit = limits.find(device);
  if (limit == limits.end()) {
    int value = 0;
    PTERUN_CUDA_CHECK(
        cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    limit = limits.emplace(device, static_cast<size_t>(value)).first;
  }
  if (bytes > limit->second) return false;
  size_t& done = allowed[{kernel, device}];
  if (bytes > done) {
    PTERUN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes)));
    done = bytes;
  }
  return true;
}

kernels::DeviceCheck* device_check(kernels::KernelContext& context) {
  MethodState& s = state(context);
  if (s.check.data() == nullptr) {
    PTERUN_CUDA_CHECK(cudaSetDevice(s.device));
    backend::DeviceBuffer word(s.device, sizeof(kernels::DeviceCheck));
    backend::PinnedBuffer host(sizeof(kernels::DeviceCheck));
    std::memset(host.data(), 0, sizeof(kernels::DeviceCheck));
    PTERUN_CUDA_CHECK(cudaMemsetAsync(word.data(), 0, sizeof(kernels::DeviceCheck), s.stream));
    s.check = std::move(word);
    s.check_host = std::move(host);
  }
  return static_cast<kernels::DeviceCheck*>(s.check.data());
}

}  // namespace pterun::cuda
