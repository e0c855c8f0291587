#pragma once

// A row held in registers, for the kernels that read a contiguous row more
// than once (softmax: max, sum, write; layer norm: mean, variance, write):
// the row is read from memory once, in 16-byte packs where it is aligned,
// and every later pass works on the registers, so the kernel moves each
// element once each way, as a copy does.
//
// kThreads threads share a row (8 or 32: a group of lanes of one warp, or
// kBlock: the block); thread t holds packs t, t + kThreads, ... up to
// kSlots of them, so a row fits when it has at most kThreads * kSlots * V
// elements. Packs past the row's end are not loaded (they hold zeros).
// RowWalk visits a kernel's rows so that every lane of a warp takes part
// in each step (the reductions shuffle across the whole warp);
// for_row_shape picks (kThreads, kSlots) for a row of a given length.
//
// Device code: files in backend/cuda/device/ include only CUDA and standard
// headers, other device/ headers, core/dtype.h and core/math.h
// (scripts/check-layers checks it).

#include <cstdint>

#include "pterun/backend/cuda/device/device_util.cuh"
#include "pterun/backend/cuda/device/nn_device.cuh"

namespace pterun::cuda::nn {

/// V elements of T, moved as one aligned access.
template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <typename T, typename C, int kThreads, int kSlots, int V>
struct RowRegs {
  static constexpr int64_t kCapacity = int64_t(kThreads) * kSlots * V;
  C x[kSlots][V];

  /// Pack index of slot j for the calling thread.
  __device__ static int64_t pack(int j) { return lane() + int64_t(j) * kThreads; }
  __device__ static int lane() { return static_cast<int>(threadIdx.x % kThreads); }

  /// Loads the row's `packs` packs (its elements / V) from `row`.
  __device__ void load(const T* __restrict__ row, int64_t packs) {
#pragma unroll
    for (int j = 0; j < kSlots; ++j) {
      if (pack(j) < packs) {
        const Pack<T, V> p = reinterpret_cast<const Pack<T, V>*>(row)[pack(j)];
#pragma unroll
        for (int e = 0; e < V; ++e) x[j][e] = convert<C>(p.v[e]);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) x[j][e] = C(0);
      }
    }
  }

  /// Folds f over the held elements, starting from `init`.
  template <typename F>
  __device__ C fold(int64_t packs, C init, F f) const {
    C a = init;
#pragma unroll
    for (int j = 0; j < kSlots; ++j) {
      if (pack(j) < packs) {
#pragma unroll
        for (int e = 0; e < V; ++e) a = f(a, x[j][e]);
      }
    }
    return a;
  }

  /// Writes map(x, element index) to `row`.
  template <typename F>
  __device__ void store(T* __restrict__ row, int64_t packs, F map) const {
    store_packs(row, packs, [&](int64_t p, const C(&in)[V], C(&out)[V]) {
#pragma unroll
      for (int e = 0; e < V; ++e) out[e] = map(in[e], p * V + e);
    });
  }

  /// Writes a pack at a time: map(pack index, held values, values to
  /// write), so that the map can read a pack of per-element parameters
  /// with one access.
  template <typename F>
  __device__ void store_packs(T* __restrict__ row, int64_t packs, F map) const {
#pragma unroll
    for (int j = 0; j < kSlots; ++j) {
      if (pack(j) < packs) {
        C y[V];
        map(pack(j), x[j], y);
        Pack<T, V> p;
#pragma unroll
        for (int e = 0; e < V; ++e) p.v[e] = convert<T>(y[e]);
        reinterpret_cast<Pack<T, V>*>(row)[pack(j)] = p;
      }
    }
  }
};

/// Combines v over the kThreads threads of a row (lanes of a warp or the
/// kBlock block); every thread gets the result. Every thread of the warp
/// (of the block for kBlock) must call it.
template <int kThreads, typename A, typename F>
__device__ inline A row_reduce(A v, F f) {
  static_assert(kThreads == 8 || kThreads == 32 || kThreads == kBlock,
                "8 or 32 lanes or the block per row");
  if constexpr (kThreads <= 32) {
    for (int delta = kThreads / 2; delta > 0; delta >>= 1) {
      v = f(v, __shfl_xor_sync(0xffffffffu, v, delta));
    }
    return v;
  } else {
    return block_reduce(v, f);
  }
}

/// The rows of a grid of kBlock-thread blocks with kThreads threads per
/// row: row() for the calling thread's group, valid() while it is a row;
/// next() moves every group on together, so the lanes of a warp (and the
/// threads of a block) run the same steps.
template <int kThreads>
struct RowWalk {
  static constexpr int kRowsPerBlock = kBlock / kThreads;
  static constexpr int kRowsPerWarp = kThreads < 32 ? 32 / kThreads : 1;
  int64_t first;  // the first row of the calling thread's warp (block)
  int group;      // the calling thread's group within it
  int64_t count;

  __device__ explicit RowWalk(int64_t rows) : count(rows) {
    const int g = static_cast<int>(threadIdx.x / kThreads);
    group = g % kRowsPerWarp;
    first = int64_t(blockIdx.x) * kRowsPerBlock + (g - group);
  }
  __device__ bool more() const { return first < count; }
  __device__ void next() { first += int64_t(gridDim.x) * kRowsPerBlock; }
  __device__ int64_t row() const { return first + group; }
  __device__ bool valid() const { return row() < count; }
};

/// Whether operands [0, n) of `s` move from row to row by whole packs of
/// V elements (so each row starts on a pack when the data does).
template <int N>
bool steps_by_packs(const Space<N>& s, int n, int v) {
  for (int d = 0; d < s.rank; ++d) {
    for (int k = 0; k < n; ++k) {
      if (s.strides[k][d] % v != 0) return false;
    }
  }
  return true;
}

/// Calls launch.template operator()<kThreads, kSlots>() with the smallest
/// of the row shapes that holds `packs` packs: 8 lanes x 4, a warp x 4 or
/// x 8, the block x 2, x 4 or x 8 (fewest registers for the row; only a
/// warp x 8 and the block x 8 for single-element packs, V == 1, to keep
/// the instantiations down). False when none does.
template <int V, typename F>
bool for_row_shape(int64_t packs, F&& launch) {
  if (V > 1 && packs <= 8 * 4) return launch.template operator()<8, 4>(), true;
  if (V > 1 && packs <= 32 * 4) return launch.template operator()<32, 4>(), true;
  if (packs <= 32 * 8) return launch.template operator()<32, 8>(), true;
  if (V > 1 && packs <= int64_t(kBlock) * 2) return launch.template operator()<kBlock, 2>(), true;
  if (V > 1 && packs <= int64_t(kBlock) * 4) return launch.template operator()<kBlock, 4>(), true;
  if (packs <= int64_t(kBlock) * 8) return launch.template operator()<kBlock, 8>(), true;
  return false;
}

/// The pack width (elements) of T: 16 bytes.
template <typename T>
constexpr int kPackOf = static_cast<int>(16 / sizeof(T));

}  // namespace pterun::cuda::nn
