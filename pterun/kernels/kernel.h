#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "pterun/core/device.h"

namespace pterun {
class Value;
}

namespace pterun::kernels {

/// Per-call state a kernel may use: the thread bound and scratch memory
/// that the method keeps between calls (so steady-state calls allocate
/// nothing).
struct KernelContext {
  int num_threads = 1;

  /// Where the method runs. For CUDA: the GPU index, and `backend`, the
  /// CUDA backend's per-method state (stream, cuBLAS handle, device scratch
  /// pool; see backend/cuda/cuda_context.h). Null on the CPU.
  Device device = Device::CPU;
  int device_index = 0;
  std::shared_ptr<void> backend;
  /// CUDA: float32 products may use TF32 (MethodOptions::allow_tf32).
  bool allow_tf32 = false;

  /// At least `bytes` of 64-byte-aligned host scratch, valid until the next call
  /// of scratch() by the same kernel invocation or the next kernel. Grows
  /// (allocates) only when a larger size is asked for than ever before.
  void* scratch(size_t bytes);

 private:
  struct Aligned {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Aligned> scratch_;
  size_t scratch_size_ = 0;
};

/// A kernel: reads and writes the values named by one KernelCall's
/// arguments, in schema order with the out argument(s) last. Reports
/// failure by throwing pterun::Error.
using KernelFn = void (*)(KernelContext& context, std::span<Value* const> args);

}  // namespace pterun::kernels
