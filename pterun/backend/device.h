#pragma once

#include <cstddef>
#include <memory>

#include "pterun/kernels/kernel.h"

namespace pterun::backend {

/// Bytes owned on one GPU (cudaMalloc'd; freed by the destructor, with the
/// device made current). Move-only; a single owner. In a build without CUDA
/// it can only be empty.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Allocates `bytes` on GPU `device` and counts it in
  /// stats::DeviceAllocs. Error MemoryAllocationFailed (with the size and
  /// the device) when the GPU has no room, InvalidState when CUDA is
  /// unavailable.
  DeviceBuffer(int device, size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  int device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  int device_ = -1;
};

/// The CUDA backend's per-method state for `context` on GPU `device`: a
/// stream of its own, a cuBLAS handle bound to it, and a stream-ordered
/// scratch pool. Stored in KernelContext::backend. Error InvalidState when
/// CUDA is unavailable (the message says why).
std::shared_ptr<void> make_cuda_method_state(int device);

/// Copies between host and the GPU of `context` (a CUDA method's context),
/// in stream order. Counted in stats (HostToDeviceCopies, ...).
void copy_host_to_device(const kernels::KernelContext& context, void* dst, const void* src,
                         size_t bytes);
void copy_device_to_host(const kernels::KernelContext& context, void* dst, const void* src,
                         size_t bytes);
void copy_device_to_device(const kernels::KernelContext& context, void* dst, const void* src,
                           size_t bytes);

/// Waits for all work queued on the context's stream (counted in
/// stats::DeviceSyncs). Errors from kernels that ran asynchronously surface
/// here, as Error with code Internal naming the CUDA error.
void synchronize(const kernels::KernelContext& context);

}  // namespace pterun::backend
