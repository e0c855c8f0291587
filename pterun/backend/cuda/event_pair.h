#pragma once

// Two CUDA events around work on a stream (its device time), destroyed
// however the timing ends: a failed call or a thrown error included.

#include <cuda_runtime_api.h>

namespace pterun::cuda {

struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;

  EventPair() = default;
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
  }

  /// Creates both events: cudaSuccess, or the first error.
  cudaError_t create() {
    const cudaError_t first = cudaEventCreate(&start);
    return first != cudaSuccess ? first : cudaEventCreate(&stop);
  }
};

}  // namespace pterun::cuda
