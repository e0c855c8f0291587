#pragma once

// What pterun's own forward convolution kernels share (conv_tiled.cu, the
// implicit GEMM and the per-output kernel; conv_warp.cu, a warp per output
// pixel): the problem in 32-bit sizes, reading through (N, C, H, W)
// strides, and the store that finishes each output. Internal to ops/.

#include <atomic>
#include <climits>
#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/conv_epilogue.cuh"

namespace pterun::cuda::nn {

struct OwnConvArgs {
  DType dtype;
  const void* in;
  const void* weight;
  const void* bias;
  void* out;
  int n, ih, iw, oh, ow, kh, kw, icg, ocg, groups;
  int stride[2], pad[2], dilation[2];
  int m;  // output pixels: n * oh * ow
  int k;  // reduction per output: icg * kh * kw
  int64_t is[4], ws[4], os[4];
  bool fused;
  Epilogue epilogue;  // without the bias, which is in the sum
};

/// `q` (conv_tiled_takes) as the kernels' arguments.
inline OwnConvArgs own_conv_args(const ops::ConvProblem& q, bool fused) {
  OwnConvArgs a{};
  a.dtype = q.dtype;
  a.in = q.in;
  a.weight = q.weight;
  a.bias = q.bias;
  a.out = q.out;
  auto i32 = [](int64_t v) { return static_cast<int>(v); };
  a.n = i32(q.n);
  a.ih = i32(q.ih);
  a.iw = i32(q.iw);
  a.oh = i32(q.oh);
  a.ow = i32(q.ow);
  a.kh = i32(q.kh);
  a.kw = i32(q.kw);
  a.groups = i32(q.groups);
  a.icg = i32(q.ic / q.groups);
  a.ocg = i32(q.oc / q.groups);
  for (int i = 0; i < 2; ++i) {
    a.stride[i] = i32(q.stride[i]);
    a.pad[i] = i32(q.pad[i]);
    a.dilation[i] = i32(q.dilation[i]);
  }
  for (int i = 0; i < 4; ++i) {
    a.is[i] = q.in_strides[i];
    a.ws[i] = q.w_strides[i];
    a.os[i] = q.out_strides[i];
  }
  a.m = i32(q.n * q.oh * q.ow);
  a.k = a.icg * a.kh * a.kw;
  a.fused = fused;
  a.epilogue = epilogue_of(q, false);
  return a;
}

template <typename T>
__device__ inline float load(const void* p, int64_t i) {
  return convert<float>(static_cast<const T*>(p)[i]);
}

/// Output (ni, o, y, x) of sum v: the bias, the dtype's rounding, the
/// epilogue when fused, then the store.
template <typename T>
__device__ inline void store(const OwnConvArgs& a, float v, int ni, int o, int y, int x) {
  if (a.bias != nullptr) v += load<T>(a.bias, o);
  v = rounded(v, a.dtype);
  if (a.fused) v = finish(a.epilogue, a.dtype, v, ni, o, y, x);
  static_cast<T*>(a.out)[ni * a.os[0] + o * a.os[1] + y * a.os[2] + x * a.os[3]] = convert<T>(v);
}

/// The multiprocessors of `device` (asked once per device).
inline int multiprocessors(int device) {
  static std::atomic<int> counts[64] = {};
  if (device < 0 || device >= 64) return 132;
  int c = counts[device].load(std::memory_order_relaxed);
  if (c == 0) {
    if (cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        c <= 0) {
      cudaGetLastError();
      c = 132;
    }
    counts[device].store(c, std::memory_order_relaxed);
  }
  return c;
}

/// Launches `launch.template operator()<T>()` with T the storage type of
/// `dtype` (float16, bfloat16, else float32).
template <typename F>
void with_storage_type(DType dtype, F&& launch) {
  if (dtype == DType::Float16) {
    launch.template operator()<__half>();
  } else if (dtype == DType::BFloat16) {
    launch.template operator()<__nv_bfloat16>();
  } else {
    launch.template operator()<float>();
  }
}

}  // namespace pterun::cuda::nn
