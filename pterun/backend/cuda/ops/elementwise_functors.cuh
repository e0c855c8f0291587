#pragma once

// Per-element functors of the CUDA unary and activation kernels (unary.cu,
// activation.cu), shared with the fused elementwise programs (fused.cu), so
// that a fused chain computes what its operators compute one by one. The
// floating functions themselves are device/float_fns.cuh's, which the
// generated fused kernels compile too. C is the compute type (float for
// f16/bf16).

#include <type_traits>

#include "pterun/backend/cuda/device/device_math.cuh"
#include "pterun/core/math.h"
#include "pterun/ops/elementwise.h"

namespace pterun::cuda::functors {

namespace dmath = cuda::dmath;
namespace fns = cuda::fns;
namespace math = pterun::math;
using Fn = ops::UnaryFn;
using Act = ops::ActivationFn;

/// The floating functions (PTERUN_FLOAT_UNARY_FNS), each fns::<name>.
template <typename C, Fn kFn>
struct FloatFn {
  __device__ C operator()(C x) const {
#define PTERUN_FLOAT_FN(name) \
  if constexpr (kFn == Fn::name) return fns::name(x);
    PTERUN_FLOAT_UNARY_FNS(PTERUN_FLOAT_FN)
#undef PTERUN_FLOAT_FN
    return x;  // the front-end admits no other op code here
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
      return fns::Relu(x);
    }
  }
};

/// max(x, lo) then min(., hi); a NaN bound makes every element NaN.
template <typename C>
struct ClampScalar {
  C lo, hi;
  bool nan;
  __device__ C operator()(C x) const { return fns::clamp(x, lo, hi, nan); }
};

template <typename C, Act kAct>
struct FloatAct {
  __device__ C operator()(C x) const {
    if constexpr (kAct == Act::Silu) {
      return fns::Silu(x);
    } else if constexpr (kAct == Act::Hardsigmoid) {
      return fns::Hardsigmoid(x);
    } else {
      return fns::Hardswish(x);
    }
  }
};

template <typename C, bool kTanh>
struct Gelu {
  __device__ C operator()(C x) const {
    if constexpr (kTanh) {
      return fns::GeluTanh(x);
    } else {
      return fns::Gelu(x);
    }
  }
};

}  // namespace pterun::cuda::functors
