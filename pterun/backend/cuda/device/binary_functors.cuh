#pragma once

// Per-element functors of the CUDA binary ops (binary.cu,
// binary_scalar.cu), the device counterparts of the lambdas in
// backend/cpu/ops/binary.cpp. C is the compute type (float for f16/bf16).
// Integer divisions by zero give 0: the CPU raises an error for them, which
// CUDA cannot do without a device wait (see binary.cu).
//
// Device code: files in backend/cuda/device/ include only CUDA and standard
// headers, other device/ headers, core/dtype.h and core/math.h
// (scripts/check-layers checks it).

#include <type_traits>

#include "pterun/backend/cuda/device/device_math.cuh"
#include "pterun/core/math.h"

namespace pterun::cuda::binary {

namespace math = pterun::math;

/// What a functor maker returns for a compute type its op code never runs
/// in (the front-end never passes it): nothing is instantiated for it.
struct Unused {};

/// F<C>, or Unused for bool (op codes the front-end refuses bool for).
template <template <typename> class F, typename C>
auto unless_bool() {
  if constexpr (std::is_same_v<C, bool>) {
    return Unused{};
  } else {
    return F<C>{};
  }
}

/// F<C> for floating C only (true division, atan2).
template <template <typename> class F, typename C>
auto if_floating() {
  if constexpr (std::is_floating_point_v<C>) {
    return F<C>{};
  } else {
    return Unused{};
  }
}

template <typename C, bool kSubtract>
struct AddSub {
  __device__ C operator()(C x, C y) const { return kSubtract ? C(x - y) : C(x + y); }
};

template <typename C, bool kSubtract>
struct AddAlpha {
  C alpha;
  __device__ C operator()(C x, C y) const {
    return kSubtract ? C(x - alpha * y) : C(x + alpha * y);
  }
};

template <typename C, bool kSubtract>
struct AddConst {
  C v;
  __device__ C operator()(C x) const { return kSubtract ? C(x - v) : C(x + v); }
};

template <typename C>
struct RsubConst {
  C v, alpha;
  __device__ C operator()(C x) const { return C(v - alpha * x); }
};

template <typename C>
struct Mul {
  __device__ C operator()(C x, C y) const { return C(x * y); }
};

template <typename C>
struct MulConst {
  C v;
  __device__ C operator()(C x) const { return C(x * v); }
};

template <typename C>
struct Div {
  __device__ C operator()(C x, C y) const { return x / y; }
};

template <typename C>
struct DivConst {
  C v;
  __device__ C operator()(C x) const { return x / v; }
};

template <typename C>
struct TruncDiv {
  __device__ C operator()(C x, C y) const {
    if constexpr (std::is_integral_v<C>) {
      return y == C(0) ? C(0) : math::trunc_div(x, y);
    } else {
      return dmath::trunc(x / y);
    }
  }
};

template <typename C>
struct FloorDiv {
  __device__ C operator()(C x, C y) const {
    if constexpr (std::is_integral_v<C>) {
      return y == C(0) ? C(0) : math::floor_div(x, y);
    } else {
      return dmath::floor_div_float(x, y);
    }
  }
};

/// remainder (kPython: the divisor's sign) or fmod (the dividend's).
template <typename C, bool kPython>
struct Remainder {
  __device__ C operator()(C x, C y) const {
    if constexpr (std::is_integral_v<C>) {
      if (y == C(0)) return C(0);
      return kPython ? math::remainder(x, y) : math::fmod_int(x, y);
    } else {
      return kPython ? dmath::remainder_float(x, y) : dmath::fmod(x, y);
    }
  }
};

/// A binary functor with its second operand fixed.
template <typename Op, typename C>
struct WithConst {
  Op op;
  C v;
  __device__ C operator()(C x) const { return op(x, v); }
};

template <typename C, bool kMax>
struct MaxMin {
  __device__ C operator()(C x, C y) const {
    return kMax ? dmath::max_nan(x, y) : dmath::min_nan(x, y);
  }
};

template <typename C>
struct Atan2 {
  __device__ C operator()(C y, C x) const { return dmath::atan2(y, x); }
};

/// XNNPACK's PReLU: x < 0 ? x * slope : x (NaN passes through).
template <typename C>
struct Prelu {
  __device__ C operator()(C x, C slope) const { return x < C(0) ? x * slope : x; }
};

/// x ** fixed exponent. Integers: exact power by `n`. Floats:
/// fns::pow_scalar with `mode` (an fns::PowMode).
template <typename C>
struct PowScalar {
  C e;
  int64_t n;
  int mode;
  __device__ C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return math::int_pow(x, n);
    } else {
      return fns::pow_scalar(x, e, mode);
    }
  }
};

template <typename C>
struct Pow {
  __device__ C operator()(C x, C y) const {
    if constexpr (std::is_integral_v<C>) {
      return math::int_pow(x, y);
    } else {
      return dmath::pow(x, y);
    }
  }
};

template <typename C>
struct PowBase {
  C base;
  __device__ C operator()(C y) const {
    if constexpr (std::is_integral_v<C>) {
      return math::int_pow(base, y);
    } else {
      return dmath::pow(base, y);
    }
  }
};

enum class BitOp { And, Or, Xor };

template <typename C, BitOp kOp>
struct Bitwise {
  __device__ C operator()(C x, C y) const {
    if constexpr (kOp == BitOp::And) {
      return C(x & y);
    } else if constexpr (kOp == BitOp::Or) {
      return C(x | y);
    } else {
      return C(x ^ y);
    }
  }
};

}  // namespace pterun::cuda::binary
