#pragma once

// What a fused convolution does to each output after the sum
// (ops::ConvProblem): the bias (when the sum left it out), the residual,
// the activation, each step's result rounded to the dtype as CUDA's
// unfused steps are (cuDNN's bias add comes after its rounding; for
// float16 and bfloat16 the CPU adds the bias before its one rounding).
// Shared by the convolution kernels of conv.cu and conv_tiled.cu.

#include <cstdint>

#include "pterun/backend/cuda/device/nn_device.cuh"
#include "pterun/ops/conv.h"

namespace pterun::cuda::nn {

struct Epilogue {
  const void* bias;      // or null
  const void* residual;  // or null
  int64_t rs[4];
  ops::ConvActivation activation;
  double lo, hi;
};

/// q's epilogue: its residual and activation, and its bias when
/// `with_bias`.
inline Epilogue epilogue_of(const ops::ConvProblem& q, bool with_bias) {
  Epilogue f{};
  f.bias = with_bias ? q.bias : nullptr;
  f.residual = q.residual;
  for (int i = 0; i < 4; ++i) f.rs[i] = q.residual_strides[i];
  f.activation = q.activation;
  f.lo = q.clamp_min;
  f.hi = q.clamp_max;
  return f;
}

/// The dtype's rounding of v (nothing for float32 and float64).
template <typename Acc>
__device__ inline Acc rounded(Acc v, DType d) {
  if (d == DType::Float16) return convert<Acc>(convert<__half>(v));
  if (d == DType::BFloat16) return convert<Acc>(convert<__nv_bfloat16>(v));
  return v;
}

/// Output (ni, o, y, x) of value v (already rounded) after `f`.
template <typename Acc>
__device__ inline Acc finish(const Epilogue& f, DType d, Acc v, int64_t ni, int64_t o, int64_t y,
                             int64_t x) {
  if (f.bias != nullptr) v = rounded(v + load_as<Acc>(f.bias, d, o), d);
  if (f.residual != nullptr) {
    v = rounded(
        v + load_as<Acc>(f.residual, d, ni * f.rs[0] + o * f.rs[1] + y * f.rs[2] + x * f.rs[3]), d);
  }
  if (f.activation == ops::ConvActivation::Hardswish) {
    Acc t = v + Acc(3);
    t = t < Acc(0) ? Acc(0) : t;  // NaN stays NaN
    t = t > Acc(6) ? Acc(6) : t;
    return v * t / Acc(6);
  }
  if (f.activation == ops::ConvActivation::Clamp) {
    const Acc lo = static_cast<Acc>(f.lo), hi = static_cast<Acc>(f.hi);
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
  }
  return v;
}

}  // namespace pterun::cuda::nn
