#pragma once

// Device helpers of the reduction, softmax, normalisation and pooling
// kernels: offsets in a Space, warp and block reductions of small values.
//
// Device code: files in backend/cuda/device/ include only CUDA and standard
// headers, other device/ headers, core/dtype.h and core/math.h
// (scripts/check-layers checks it).

#include <cstdint>
#include <type_traits>

#include "pterun/backend/cuda/device/device_util.cuh"
#include "pterun/backend/cuda/device/space.h"
#include "pterun/core/dtype.h"

namespace pterun::cuda::nn {

constexpr int kBlock = 256;  // threads of the block-per-row kernels
constexpr int kWarps = kBlock / 32;

/// What the normalisation kernels compute statistics in for dtype T:
/// double for double, float otherwise.
template <typename T>
using StatOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

/// a + b, as the reductions' combining function.
struct Add {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    return a + b;
  }
};

/// Element offsets of the N operands of `s` at row-major index i.
template <int N>
__device__ inline void space_offsets(const Space<N>& s, int64_t i, int64_t (&off)[N]) {
  for (int k = 0; k < N; ++k) off[k] = 0;
  if (s.rank == 1) {  // the common case, without a division
    for (int k = 0; k < N; ++k) off[k] = i * s.strides[k][0];
    return;
  }
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t size = s.sizes[d];
    const int64_t q = i / size;
    const int64_t r = i - q * size;
    i = q;
    for (int k = 0; k < N; ++k) off[k] += r * s.strides[k][d];
  }
}

__device__ inline int64_t space_offset(const Space<1>& s, int64_t i) {
  int64_t off[1];
  space_offsets(s, i, off);
  return off[0];
}

/// __shfl_down_sync for the accumulator types (bool goes as int).
template <typename A>
__device__ inline A shfl_down(A v, int delta) {
  if constexpr (std::is_same_v<A, bool>) {
    return __shfl_down_sync(0xffffffffu, static_cast<int>(v), delta) != 0;
  } else {
    return __shfl_down_sync(0xffffffffu, v, delta);
  }
}

/// Combines the values of a full warp with `f`; lane 0 gets the result.
template <typename A, typename F>
__device__ inline A warp_reduce(A v, F f) {
  for (int delta = 16; delta > 0; delta >>= 1) v = f(v, shfl_down(v, delta));
  return v;
}

/// Combines the values of a kBlock-thread block with `f`; every thread gets
/// the result. Every thread of the block must call it.
template <typename A, typename F>
__device__ inline A block_reduce(A v, F f) {
  __shared__ A partial[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_reduce(v, f);
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  A r = partial[0];
  for (int w = 1; w < kWarps; ++w) r = f(r, partial[w]);
  return r;
}

/// Loads element `off` as A: directly when the storage type is A.
template <typename A, bool kDirect>
__device__ inline A load_acc(const void* p, DType d, int64_t off) {
  if constexpr (kDirect) {
    return static_cast<const A*>(p)[off];
  } else {
    return load_as<A>(p, d, off);
  }
}

}  // namespace pterun::cuda::nn
