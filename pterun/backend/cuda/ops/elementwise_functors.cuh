#pragma once

// Per-element functors of the CUDA unary and activation kernels (unary.cu,
// activation.cu), shared with the fused elementwise programs (fused.cu), so
// that a fused chain computes what its operators compute one by one. C is
// the compute type (float for f16/bf16).

#include <type_traits>

#include "pterun/backend/cuda/device/device_math.cuh"
#include "pterun/core/math.h"
#include "pterun/ops/elementwise.h"

namespace pterun::cuda::functors {

namespace dmath = cuda::dmath;
namespace math = pterun::math;
using Fn = ops::UnaryFn;
using Act = ops::ActivationFn;

template <typename C, Fn kFn>
struct FloatFn {
  __device__ C operator()(C x) const {
    if constexpr (kFn == Fn::Exp)
      return dmath::exp(x);
    else if constexpr (kFn == Fn::Expm1)
      return dmath::expm1(x);
    else if constexpr (kFn == Fn::Log)
      return dmath::log(x);
    else if constexpr (kFn == Fn::Log1p)
      return dmath::log1p(x);
    else if constexpr (kFn == Fn::Log2)
      return dmath::log2(x);
    else if constexpr (kFn == Fn::Log10)
      return dmath::log10(x);
    else if constexpr (kFn == Fn::Sqrt)
      return dmath::sqrt(x);
    else if constexpr (kFn == Fn::Rsqrt)
      return C(1) / dmath::sqrt(x);
    else if constexpr (kFn == Fn::Reciprocal)
      return C(1) / x;
    else if constexpr (kFn == Fn::Sin)
      return dmath::sin(x);
    else if constexpr (kFn == Fn::Cos)
      return dmath::cos(x);
    else if constexpr (kFn == Fn::Tan)
      return dmath::tan(x);
    else if constexpr (kFn == Fn::Asin)
      return dmath::asin(x);
    else if constexpr (kFn == Fn::Acos)
      return dmath::acos(x);
    else if constexpr (kFn == Fn::Atan)
      return dmath::atan(x);
    else if constexpr (kFn == Fn::Sinh)
      return dmath::sinh(x);
    else if constexpr (kFn == Fn::Cosh)
      return dmath::cosh(x);
    else if constexpr (kFn == Fn::Tanh)
      return dmath::tanh(x);
    else if constexpr (kFn == Fn::Asinh)
      return dmath::asinh(x);
    else if constexpr (kFn == Fn::Acosh)
      return dmath::acosh(x);
    else if constexpr (kFn == Fn::Atanh)
      return dmath::atanh(x);
    else if constexpr (kFn == Fn::Erf)
      return dmath::erf(x);
    else
      return C(1) / (C(1) + dmath::exp(-x));
  }
};

template <typename C, Fn kFn>
struct SameFn {
  __device__ C operator()(C x) const {
    constexpr bool kFloat = std::is_floating_point_v<C>;
    if constexpr (kFn == Fn::Neg) {
      return math::neg(x);
    } else if constexpr (kFn == Fn::Abs) {
      if constexpr (kFloat)
        return dmath::fabs(x);
      else if constexpr (std::is_signed_v<C>)
        return x < 0 ? math::neg(x) : x;
      else
        return x;
    } else if constexpr (kFn == Fn::Sign) {
      if constexpr (std::is_same_v<C, bool>)
        return x;
      else if constexpr (kFloat)
        return dmath::is_nan(x) ? x : C((x > 0) - (x < 0));
      else if constexpr (std::is_unsigned_v<C>)
        return C(x != 0);
      else
        return C((x > 0) - (x < 0));
    } else if constexpr (!kFloat) {
      return x;  // integers pass through the rounding ops
    } else if constexpr (kFn == Fn::Floor) {
      return dmath::floor(x);
    } else if constexpr (kFn == Fn::Ceil) {
      return dmath::ceil(x);
    } else if constexpr (kFn == Fn::Trunc) {
      return dmath::trunc(x);
    } else {
      return dmath::rint(x);  // half to even, as nearbyint on the CPU
    }
  }
};

template <typename C>
struct Relu {
  __device__ C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else {
      return x < C(0) ? C(0) : x;  // NaN stays NaN
    }
  }
};

/// max(x, lo) then min(., hi); a NaN bound makes every element NaN.
template <typename C>
struct ClampScalar {
  C lo, hi;
  bool nan;
  __device__ C operator()(C x) const {
    if (nan) return lo + hi;
    C v = x < lo ? lo : x;
    return v > hi ? hi : v;
  }
};

template <typename C>
__device__ __forceinline__ C hardsigmoid(C x) {
  C v = x + C(3);
  v = v < C(0) ? C(0) : v;
  return (v > C(6) ? C(6) : v) / C(6);
}

template <typename C, Act kAct>
struct FloatAct {
  __device__ C operator()(C x) const {
    if constexpr (kAct == Act::Silu) {
      return x / (C(1) + dmath::exp(-x));
    } else if constexpr (kAct == Act::Hardsigmoid) {
      return hardsigmoid(x);
    } else {
      return x * hardsigmoid(x);
    }
  }
};

template <typename C, bool kTanh>
struct Gelu {
  __device__ C operator()(C x) const {
    if (dmath::is_inf(x)) return x > 0 ? x : C(0);
    if constexpr (kTanh) {
      constexpr C kBeta = C(0.7978845608028654);  // sqrt(2 / pi)
      constexpr C kKappa = C(0.044715);
      return C(0.5) * x * (C(1) + dmath::tanh(kBeta * (x + kKappa * x * x * x)));
    } else {
      constexpr C kSqrtHalf = C(0.7071067811865476);
      return C(0.5) * x * (C(1) + dmath::erf(x * kSqrtHalf));
    }
  }
};

}  // namespace pterun::cuda::functors
