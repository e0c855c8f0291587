#pragma once

// The index space of the reduction, softmax, normalisation and pooling
// kernels: a kernel parameter that the host halves fill (ops/nn_launch.h)
// and device code walks (device/nn_device.cuh). Plain C++, so that host
// files compiled without nvcc include it too.
//
// Device code: files in backend/cuda/device/ include only CUDA and standard
// headers, other device/ headers, core/dtype.h and core/math.h
// (scripts/check-layers checks it).

#include <array>
#include <cstdint>

#include "pterun/backend/cuda/device/max_rank.h"

namespace pterun::cuda::nn {

/// An index space of up to kDeviceMaxRank dims (outermost first) with N stride
/// sets (element strides of N operands).
template <int N>
struct Space {
  int rank = 0;
  int64_t sizes[kDeviceMaxRank] = {};
  int64_t strides[N][kDeviceMaxRank] = {};

  void push(int64_t size, const std::array<int64_t, N>& s) {
    sizes[rank] = size;
    for (int k = 0; k < N; ++k) strides[k][rank] = s[k];
    ++rank;
  }
  int64_t count() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= sizes[d];
    return n;
  }
};

}  // namespace pterun::cuda::nn
