#pragma once

// Per-element functions the CPU's elementwise kernels share: the unary and
// activation kernels (unary.cpp, activation.cpp) and the fused elementwise
// programs (fused.cpp) call the same ones, so a fused chain gives the values
// of its operators run one by one. C is the compute type (float or
// double).

#include <cmath>
#include <type_traits>

#include "pterun/backend/cpu/engine/vec_math.h"
#include "pterun/ops/elementwise.h"

namespace pterun::cpu::fns {

/// The floating UnaryFn functions, Exp through Sigmoid.
template <ops::UnaryFn kFn, typename C>
inline C unary_float(C x) {
  using F = ops::UnaryFn;
  if constexpr (kFn == F::Exp) return std::exp(x);
  if constexpr (kFn == F::Expm1) return std::expm1(x);
  if constexpr (kFn == F::Log) return std::log(x);
  if constexpr (kFn == F::Log1p) return std::log1p(x);
  if constexpr (kFn == F::Log2) return std::log2(x);
  if constexpr (kFn == F::Log10) return std::log10(x);
  if constexpr (kFn == F::Sqrt) return std::sqrt(x);
  if constexpr (kFn == F::Rsqrt) return C(1) / std::sqrt(x);
  if constexpr (kFn == F::Reciprocal) return C(1) / x;
  if constexpr (kFn == F::Sin) return std::sin(x);
  if constexpr (kFn == F::Cos) return std::cos(x);
  if constexpr (kFn == F::Tan) return std::tan(x);
  if constexpr (kFn == F::Asin) return std::asin(x);
  if constexpr (kFn == F::Acos) return std::acos(x);
  if constexpr (kFn == F::Atan) return std::atan(x);
  if constexpr (kFn == F::Sinh) return std::sinh(x);
  if constexpr (kFn == F::Cosh) return std::cosh(x);
  if constexpr (kFn == F::Tanh) {
    if constexpr (std::is_same_v<C, float>) {
      return vec_math::tanh(x);
    } else {
      return std::tanh(x);
    }
  }
  if constexpr (kFn == F::Asinh) return std::asinh(x);
  if constexpr (kFn == F::Acosh) return std::acosh(x);
  if constexpr (kFn == F::Atanh) return std::atanh(x);
  if constexpr (kFn == F::Erf) return std::erf(x);
  if constexpr (kFn == F::Sigmoid) {
    if constexpr (std::is_same_v<C, float>) {
      return vec_math::sigmoid(x);
    } else {
      return C(1) / (C(1) + std::exp(-x));
    }
  }
}

template <typename C>
inline C silu(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return x * vec_math::sigmoid(x);
  } else {
    return x / (C(1) + std::exp(-x));
  }
}

template <typename C>
inline C hardsigmoid(C x) {
  C v = x + C(3);
  v = v < C(0) ? C(0) : v;
  return (v > C(6) ? C(6) : v) / C(6);
}

template <typename C>
inline C hardswish(C x) {
  return x * hardsigmoid(x);
}

template <typename C>
inline C gelu_tanh(C x) {
  constexpr C kBeta = C(0.7978845608028654);  // sqrt(2 / pi)
  constexpr C kKappa = C(0.044715);
  if (std::isinf(x)) return x > 0 ? x : C(0);
  const C inner = kBeta * (x + kKappa * x * x * x);
  if constexpr (std::is_same_v<C, float>) {
    return C(0.5) * x * (C(1) + vec_math::tanh(inner));
  } else {
    return C(0.5) * x * (C(1) + std::tanh(inner));
  }
}

template <typename C>
inline C gelu_erf(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return vec_math::gelu_erf(x);
  } else {
    constexpr C kSqrtHalf = C(0.7071067811865476);
    if (std::isinf(x)) return x > 0 ? x : C(0);
    return C(0.5) * x * (C(1) + std::erf(x * kSqrtHalf));
  }
}

/// relu for a signed or floating C: NaN stays NaN.
template <typename C>
inline C relu(C x) {
  return x < C(0) ? C(0) : x;
}

/// max(x, lo) then min(., hi), NaN bounds already handled by the caller.
template <typename C>
inline C clamp(C x, C lo, C hi) {
  C v = x < lo ? lo : x;
  return v > hi ? hi : v;
}

}  // namespace pterun::cpu::fns
