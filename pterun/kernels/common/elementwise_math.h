#pragma once

// Per-element math of the elementwise kernels that is more than one
// operator: Python-style division and remainder, NaN-propagating min/max,
// exact integer powers, and Scalar conversion to a compute type. The
// integer helpers (wrapping arithmetic, division, remainder, powers) are
// defined in core/math.h, shared with CUDA device code, and named here too.

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "pterun/core/math.h"
#include "pterun/core/scalar.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::kernels::math {

// The integer helpers live in core/math.h, which CUDA device code shares.
using pterun::math::add;
using pterun::math::floor_div;
using pterun::math::fmod_int;
using pterun::math::int_pow;
using pterun::math::kSignedInt;
using pterun::math::mul;
using pterun::math::neg;
using pterun::math::remainder;
using pterun::math::sub;
using pterun::math::trunc_div;
using pterun::math::WrapType;

/// The Scalar converted to the compute type C (float->integer saturates
/// like every other float->integer conversion of the engine).
template <typename C>
C scalar_as(const Scalar& s) {
  return s.is_floating() ? convert<C>(s.to_double()) : convert<C>(s.to_int());
}

/// Floating x // y as Python and PyTorch define it: consistent with
/// remainder() so that x == (x // y) * y + x % y holds as far as rounding
/// allows; y == 0 gives x / y (inf or nan).
template <typename T>
T floor_div_float(T x, T y) {
  if (y == 0) return x / y;
  T mod = std::fmod(x, y);
  T div = (x - mod) / y;
  if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1;
  if (div == 0) return std::copysign(T(0), x / y);
  T floored = std::floor(div);
  if (div - floored > T(0.5)) floored += 1;
  return floored;
}

/// Floating remainder with the divisor's sign.
template <typename T>
T remainder_float(T x, T y) {
  T mod = std::fmod(x, y);
  return (mod != 0 && ((y < 0) != (mod < 0))) ? mod + y : mod;
}

/// std::isnan for any compute type (false for integers and bool).
template <typename T>
constexpr bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

/// max / min that return NaN when either operand is NaN; plain compares
/// and selects, so loops over them vectorise.
template <typename T>
constexpr T max_nan(T x, T y) {
  return (x > y || is_nan(x)) ? x : y;
}
template <typename T>
constexpr T min_nan(T x, T y) {
  return (x < y || is_nan(x)) ? x : y;
}

/// True when the Scalar's value lies outside what T can hold (finite
/// floats only; infinities fit floating types).
template <typename T>
bool scalar_overflows(const Scalar& s) {
  if constexpr (std::is_same_v<T, bool>) {
    return false;
  } else if constexpr (std::is_integral_v<T>) {
    if (s.is_floating()) {
      double v = s.to_double();
      return !(v >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
               v <= static_cast<double>(std::numeric_limits<T>::max()));
    }
    int64_t v = s.to_int();
    if constexpr (std::is_unsigned_v<T>) {
      return v < 0 || static_cast<uint64_t>(v) > std::numeric_limits<T>::max();
    } else {
      return v < std::numeric_limits<T>::lowest() || v > std::numeric_limits<T>::max();
    }
  } else {
    double v = s.to_double();
    double limit = std::is_same_v<T, Half>       ? 65504.0
                   : std::is_same_v<T, BFloat16> ? 3.3895313892515355e38
                   : std::is_same_v<T, double>
                       ? std::numeric_limits<double>::max()
                       : static_cast<double>(std::numeric_limits<float>::max());
    return std::isfinite(v) && (v > limit || v < -limit);
  }
}

}  // namespace pterun::kernels::math
