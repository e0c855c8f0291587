#pragma once

// The per-element functions of the floating elementwise operators on CUDA,
// written once for the kernels nvcc compiles (unary.cu, activation.cu,
// binary.cu through elementwise_functors.cuh and binary_functors.cuh) and
// for the fused kernels generated at run time (backend/cuda/jit/), which
// NVRTC compiles from this very text. Both compile the same expressions,
// so a generated kernel computes each step bit for bit as its operator's
// own kernel does.
//
// NVRTC has no standard library: this file includes nothing and uses only
// the CUDA built-ins (expf and the other libm functions). C is float or
// double.

namespace pterun::cuda::dmath {

// float / double overloads of the libm functions (the accurate CUDA ones,
// never the __ intrinsics, so results stay within float32 rtol 1e-5 of the
// CPU).
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

/// NaN and infinity tests: false for every type but float and double.
template <typename T>
__device__ __forceinline__ bool is_nan(T) {
  return false;
}
__device__ __forceinline__ bool is_nan(float x) {
  return x != x;
}
__device__ __forceinline__ bool is_nan(double x) {
  return x != x;
}
template <typename T>
__device__ __forceinline__ bool is_inf(T) {
  return false;
}
__device__ __forceinline__ bool is_inf(float x) {
  return ::fabsf(x) == __int_as_float(0x7f800000);
}
__device__ __forceinline__ bool is_inf(double x) {
  return ::fabs(x) == __longlong_as_double(0x7ff0000000000000LL);
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

}  // namespace pterun::cuda::dmath

// The floating functions, named as their op codes (ops::UnaryFn,
// ops::ActivationFn), so that code can be generated from the names.
namespace pterun::cuda::fns {

#define PTERUN_FNS_LIBM(name, libm)        \
  template <typename C>                    \
  __device__ __forceinline__ C name(C x) { \
    return dmath::libm(x);                 \
  }
PTERUN_FNS_LIBM(Exp, exp)
PTERUN_FNS_LIBM(Expm1, expm1)
PTERUN_FNS_LIBM(Log, log)
PTERUN_FNS_LIBM(Log1p, log1p)
PTERUN_FNS_LIBM(Log2, log2)
PTERUN_FNS_LIBM(Log10, log10)
PTERUN_FNS_LIBM(Sqrt, sqrt)
PTERUN_FNS_LIBM(Sin, sin)
PTERUN_FNS_LIBM(Cos, cos)
PTERUN_FNS_LIBM(Tan, tan)
PTERUN_FNS_LIBM(Asin, asin)
PTERUN_FNS_LIBM(Acos, acos)
PTERUN_FNS_LIBM(Atan, atan)
PTERUN_FNS_LIBM(Sinh, sinh)
PTERUN_FNS_LIBM(Cosh, cosh)
PTERUN_FNS_LIBM(Tanh, tanh)
PTERUN_FNS_LIBM(Asinh, asinh)
PTERUN_FNS_LIBM(Acosh, acosh)
PTERUN_FNS_LIBM(Atanh, atanh)
PTERUN_FNS_LIBM(Erf, erf)
PTERUN_FNS_LIBM(Abs, fabs)
#undef PTERUN_FNS_LIBM

template <typename C>
__device__ __forceinline__ C Rsqrt(C x) {
  return C(1) / dmath::sqrt(x);
}
template <typename C>
__device__ __forceinline__ C Reciprocal(C x) {
  return C(1) / x;
}
template <typename C>
__device__ __forceinline__ C Sigmoid(C x) {
  return C(1) / (C(1) + dmath::exp(-x));
}
template <typename C>
__device__ __forceinline__ C Neg(C x) {
  return -x;
}

template <typename C>
__device__ __forceinline__ C Relu(C x) {
  return x < C(0) ? C(0) : x;  // NaN stays NaN
}
template <typename C>
__device__ __forceinline__ C Silu(C x) {
  return x / (C(1) + dmath::exp(-x));
}
template <typename C>
__device__ __forceinline__ C Hardsigmoid(C x) {
  C v = x + C(3);
  v = v < C(0) ? C(0) : v;
  return (v > C(6) ? C(6) : v) / C(6);
}
template <typename C>
__device__ __forceinline__ C Hardswish(C x) {
  return x * Hardsigmoid(x);
}
template <typename C>
__device__ __forceinline__ C Gelu(C x) {
  if (dmath::is_inf(x)) return x > 0 ? x : C(0);
  constexpr C kSqrtHalf = C(0.7071067811865476);
  return C(0.5) * x * (C(1) + dmath::erf(x * kSqrtHalf));
}
template <typename C>
__device__ __forceinline__ C GeluTanh(C x) {
  if (dmath::is_inf(x)) return x > 0 ? x : C(0);
  constexpr C kBeta = C(0.7978845608028654);  // sqrt(2 / pi)
  constexpr C kKappa = C(0.044715);
  return C(0.5) * x * (C(1) + dmath::tanh(kBeta * (x + kKappa * x * x * x)));
}

/// max(x, lo) then min(., hi); a NaN bound (`nan`) makes every element NaN.
template <typename C>
__device__ __forceinline__ C clamp(C x, C lo, C hi, bool nan) {
  if (nan) return lo + hi;
  C v = x < lo ? lo : x;
  return v > hi ? hi : v;
}

/// x ** e for a fixed floating exponent: the common exponents as plain
/// arithmetic (`mode`, chosen on the host as the CPU kernel chooses), else
/// pow.
enum PowMode : int { kPowSquare, kPowCube, kPowIdentity, kPowSqrt, kPowReciprocal, kPowGeneral };
template <typename C>
__device__ __forceinline__ C pow_scalar(C x, C e, int mode) {
  switch (mode) {
    case kPowSquare: return x * x;
    case kPowCube: return x * x * x;
    case kPowIdentity: return x;
    case kPowSqrt: return dmath::sqrt(x);
    case kPowReciprocal: return C(1) / x;
    default: return dmath::pow(x, e);
  }
}

}  // namespace pterun::cuda::fns
