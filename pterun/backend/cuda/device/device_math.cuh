#pragma once

// Device math for the elementwise functors: the libm overloads, NaN tests
// and NaN-propagating max / min are float_fns.cuh's (which NVRTC compiles
// too); here are the floating counterparts of
// kernels/common/elementwise_math.h. The integer helpers (neg, trunc_div,
// floor_div, remainder, fmod_int, int_pow) are core/math.h's constexpr
// functions, called from device code as they are
// (--expt-relaxed-constexpr), so both backends share them.
//
// Device code: files in backend/cuda/device/ include only CUDA and standard
// headers, other device/ headers, core/dtype.h and core/math.h
// (scripts/check-layers checks it).

#include "pterun/backend/cuda/device/float_fns.cuh"
#include "pterun/core/math.h"

namespace pterun::cuda::dmath {

/// Python's floor division for floats (math::floor_div_float).
template <typename T>
__device__ __forceinline__ T floor_div_float(T x, T y) {
  if (y == 0) return x / y;
  T mod = fmod(x, y);
  T div = (x - mod) / y;
  if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1;
  if (div == 0) return copysign(T(0), x / y);
  T floored = floor(div);
  if (div - floored > T(0.5)) floored += 1;
  return floored;
}

/// Floating remainder with the divisor's sign (math::remainder_float).
template <typename T>
__device__ __forceinline__ T remainder_float(T x, T y) {
  T mod = fmod(x, y);
  return (mod != 0 && ((y < 0) != (mod < 0))) ? mod + y : mod;
}

}  // namespace pterun::cuda::dmath
