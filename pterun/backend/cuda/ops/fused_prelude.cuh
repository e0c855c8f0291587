#pragma once

// What a generated fused elementwise kernel (fused_codegen.cpp) builds on:
// loads and stores of float32, float16 and bfloat16 elements as float,
// vector accesses of a dense operand, the strided walk, and the rounding a
// step ends with. NVRTC compiles this text (it travels in the library as a
// string, jit_headers.cpp, generated); nvcc never does.
//
// The conversions are the instructions cuda_fp16.h and cuda_bf16.h compile
// to on sm_80 and newer (cvt.rn to narrow, exact widening), so the generated
// kernels round as the nvcc-built kernels do.

#include "pterun/backend/cuda/device/float_fns.cuh"
#include "pterun/backend/cuda/device/fused_params.h"

namespace pterun::cuda::jit {

/// Storage codes: the element type of a tensor the kernel reads or writes.
enum Storage : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

__device__ __forceinline__ float widen(unsigned short bits, int s) {
  if (s == kBF16) return __uint_as_float(static_cast<unsigned>(bits) << 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
  return f;
}

__device__ __forceinline__ unsigned short narrow(float v, int s) {
  unsigned short bits;
  if (s == kBF16) {
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(v));
  } else {
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(v));
  }
  return bits;
}

/// A step's result in its dtype. (No fma joins one step's multiply to the
/// next step's add: NVRTC compiles these kernels with --fmad=false, as the
/// operators' own kernels are built.)
template <int S>
__device__ __forceinline__ float settle(float v) {
  if constexpr (S == kF32) {
    return v;
  } else {
    return widen(narrow(v, S), S);
  }
}

template <int S>
__device__ __forceinline__ float load1(const void* base, long long i) {
  if constexpr (S == kF32) {
    return static_cast<const float*>(base)[i];
  } else {
    return widen(static_cast<const unsigned short*>(base)[i], S);
  }
}

template <int S>
__device__ __forceinline__ void store1(void* base, long long i, float v) {
  if constexpr (S == kF32) {
    static_cast<float*>(base)[i] = v;
  } else {
    static_cast<unsigned short*>(base)[i] = narrow(v, S);
  }
}

/// The 32-bit words of V elements of type S: 16 or 8 bytes a load.
template <int S, int V>
inline constexpr int kWords = S == kF32 ? V : V / 2;

template <int S, int V>
__device__ __forceinline__ void loadv(const void* base, long long i, float (&v)[V]) {
  constexpr int W = kWords<S, V>;
  unsigned w[W];
  const char* p = static_cast<const char*>(base) + i * (S == kF32 ? 4 : 2);
  if constexpr (W % 4 == 0) {
#pragma unroll
    for (int c = 0; c < W / 4; ++c) {
      const uint4 q = reinterpret_cast<const uint4*>(p)[c];
      w[4 * c] = q.x, w[4 * c + 1] = q.y, w[4 * c + 2] = q.z, w[4 * c + 3] = q.w;
    }
  } else {
    const uint2 q = *reinterpret_cast<const uint2*>(p);
    w[0] = q.x, w[1] = q.y;
  }
#pragma unroll
  for (int e = 0; e < V; ++e) {
    if constexpr (S == kF32) {
      v[e] = __uint_as_float(w[e]);
    } else {
      v[e] = widen(static_cast<unsigned short>(w[e / 2] >> (16 * (e % 2))), S);
    }
  }
}

template <int S, int V>
__device__ __forceinline__ void storev(void* base, long long i, const float (&v)[V]) {
  constexpr int W = kWords<S, V>;
  unsigned w[W];
#pragma unroll
  for (int c = 0; c < W; ++c) w[c] = 0;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    if constexpr (S == kF32) {
      w[e] = __float_as_uint(v[e]);
    } else {
      w[e / 2] |= static_cast<unsigned>(narrow(v[e], S)) << (16 * (e % 2));
    }
  }
  char* p = static_cast<char*>(base) + i * (S == kF32 ? 4 : 2);
  if constexpr (W % 4 == 0) {
#pragma unroll
    for (int c = 0; c < W / 4; ++c) {
      reinterpret_cast<uint4*>(p)[c] =
          make_uint4(w[4 * c], w[4 * c + 1], w[4 * c + 2], w[4 * c + 3]);
    }
  } else {
    *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
  }
}

/// Input k's element offset for walk index i over R dims; I is unsigned
/// when the walk fits 32 bits (a 64-bit division costs tens of
/// instructions).
template <int R, typename I>
__device__ __forceinline__ long long offset(const FusedParams& p, int k, I i) {
  long long off = 0;
#pragma unroll
  for (int d = R - 1; d > 0; --d) {
    const I size = static_cast<I>(p.size[d]);
    const I q = i / size;
    off += static_cast<long long>(i - q * size) * p.stride[k][d];
    i = q;
  }
  return off + static_cast<long long>(i) * p.stride[k][0];
}

/// The offsets of the `count` walk indices from i0: one division chain for
/// the run when it stays inside one line of the innermost dim (the usual
/// case: a bias or a row of weights broadcast over rows), else one per
/// element.
template <int R, typename I, int V>
__device__ __forceinline__ void offsets(const FusedParams& p, int k, long long i0, int count,
                                        long long (&off)[V]) {
  const I line = static_cast<I>(p.size[R - 1]);
  off[0] = offset<R, I>(p, k, static_cast<I>(i0));
  if (static_cast<I>(i0) % line + static_cast<I>(V) <= line) {
#pragma unroll
    for (int e = 1; e < V; ++e) off[e] = off[0] + e * p.stride[k][R - 1];
    return;
  }
#pragma unroll
  for (int e = 1; e < V; ++e) {
    // Indices past the end (e >= count) give offsets the caller never reads.
    off[e] = offset<R, I>(p, k, static_cast<I>(i0 + (e < count ? e : 0)));
  }
}

}  // namespace pterun::cuda::jit
