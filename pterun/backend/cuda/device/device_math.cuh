#pragma once

// Device math for the elementwise functors: float / double overloads of
// the libm functions (the accurate CUDA ones, never the __ intrinsics, so
// results stay within float32 rtol 1e-5 of the CPU), and the floating
// counterparts of kernels/common/elementwise_math.h. The integer helpers
// (neg, trunc_div, floor_div, remainder, fmod_int, int_pow) are core/math.h's
// constexpr functions, called from device code as they are
// (--expt-relaxed-constexpr), so both backends share them.
//
// Device code: files in backend/cuda/device/ include only CUDA and standard
// headers, other device/ headers, core/dtype.h and core/math.h
// (scripts/check-layers checks it).

#include <cstdint>
#include <type_traits>

#include "pterun/core/math.h"

namespace pterun::cuda::dmath {

#define PTERUN_DMATH_UNARY(name)                     \
  __device__ __forceinline__ float name(float x) {   \
    return ::name##f(x);                             \
  }                                                  \
  __device__ __forceinline__ double name(double x) { \
    return ::name(x);                                \
  }
PTERUN_DMATH_UNARY(exp)
PTERUN_DMATH_UNARY(expm1)
PTERUN_DMATH_UNARY(log)
PTERUN_DMATH_UNARY(log1p)
PTERUN_DMATH_UNARY(log2)
PTERUN_DMATH_UNARY(log10)
PTERUN_DMATH_UNARY(sqrt)
PTERUN_DMATH_UNARY(sin)
PTERUN_DMATH_UNARY(cos)
PTERUN_DMATH_UNARY(tan)
PTERUN_DMATH_UNARY(asin)
PTERUN_DMATH_UNARY(acos)
PTERUN_DMATH_UNARY(atan)
PTERUN_DMATH_UNARY(sinh)
PTERUN_DMATH_UNARY(cosh)
PTERUN_DMATH_UNARY(tanh)
PTERUN_DMATH_UNARY(asinh)
PTERUN_DMATH_UNARY(acosh)
PTERUN_DMATH_UNARY(atanh)
PTERUN_DMATH_UNARY(erf)
PTERUN_DMATH_UNARY(floor)
PTERUN_DMATH_UNARY(ceil)
PTERUN_DMATH_UNARY(trunc)
PTERUN_DMATH_UNARY(rint)
PTERUN_DMATH_UNARY(fabs)
#undef PTERUN_DMATH_UNARY

#define PTERUN_DMATH_BINARY(name)                              \
  __device__ __forceinline__ float name(float x, float y) {    \
    return ::name##f(x, y);                                    \
  }                                                            \
  __device__ __forceinline__ double name(double x, double y) { \
    return ::name(x, y);                                       \
  }
PTERUN_DMATH_BINARY(pow)
PTERUN_DMATH_BINARY(fmod)
PTERUN_DMATH_BINARY(atan2)
PTERUN_DMATH_BINARY(copysign)
#undef PTERUN_DMATH_BINARY

template <typename T>
__device__ __forceinline__ bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}

template <typename T>
__device__ __forceinline__ bool is_inf(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return isinf(x);
  } else {
    return false;
  }
}

/// max / min returning NaN when either operand is NaN (math::max_nan).
template <typename T>
__device__ __forceinline__ T max_nan(T x, T y) {
  return (x > y || is_nan(x)) ? x : y;
}
template <typename T>
__device__ __forceinline__ T min_nan(T x, T y) {
  return (x < y || is_nan(x)) ? x : y;
}

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
