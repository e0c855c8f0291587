#pragma once

// Per-element math of the elementwise kernels that is more than one
// operator: Python-style division and remainder, NaN-propagating min/max,
// exact integer powers, and Scalar conversion to a compute type. Integer
// helpers never hit undefined behaviour (INT_MIN / -1 traps on x86);
// callers reject division by zero before they run.

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "pterun/core/scalar.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::kernels::math {

template <typename T>
constexpr bool kSignedInt = std::is_integral_v<T>&& std::is_signed_v<T>;

/// The Scalar converted to the compute type C (float->integer saturates
/// like every other float->integer conversion of the engine).
template <typename C>
C scalar_as(const Scalar& s) {
  return s.is_floating() ? convert<C>(s.to_double()) : convert<C>(s.to_int());
}

/// -x, wrapping at the minimum of a signed integer type.
template <typename T>
constexpr T neg(T x) {
  if constexpr (kSignedInt<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(U{0} - static_cast<U>(x)));
  } else {
    return -x;
  }
}

/// The unsigned type integer T's wrapping arithmetic computes in: at least
/// as wide as unsigned int, so that narrow types are not promoted to int
/// (65535 * 65535 overflows int).
template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

/// x + y, x - y and x * y; integers wrap modulo 2^bits (as in PyTorch)
/// instead of overflowing, which is undefined for signed types.
template <typename T>
constexpr T add(T x, T y) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = WrapType<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(x) + static_cast<U>(y)));
  } else {
    return static_cast<T>(x + y);
  }
}

template <typename T>
constexpr T sub(T x, T y) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = WrapType<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(x) - static_cast<U>(y)));
  } else {
    return static_cast<T>(x - y);
  }
}

template <typename T>
constexpr T mul(T x, T y) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = WrapType<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(x) * static_cast<U>(y)));
  } else {
    return static_cast<T>(x * y);
  }
}

/// Integer x / y rounded toward zero; y != 0.
template <typename T>
constexpr T trunc_div(T x, T y) {
  if constexpr (kSignedInt<T>) {
    if (y == T(-1)) return neg(x);
  }
  return static_cast<T>(x / y);
}

/// Integer x / y rounded toward -inf (Python's //); y != 0.
template <typename T>
constexpr T floor_div(T x, T y) {
  if constexpr (kSignedInt<T>) {
    if (y == T(-1)) return neg(x);
    T q = static_cast<T>(x / y);
    T r = static_cast<T>(x % y);
    return (r != 0 && ((r < 0) != (y < 0))) ? static_cast<T>(q - 1) : q;
  } else {
    return static_cast<T>(x / y);
  }
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

/// Integer remainder with the divisor's sign (Python's %); y != 0.
template <typename T>
constexpr T remainder(T x, T y) {
  if constexpr (kSignedInt<T>) {
    if (y == T(-1)) return 0;
    T r = static_cast<T>(x % y);
    return (r != 0 && ((r < 0) != (y < 0))) ? static_cast<T>(r + y) : r;
  } else {
    return static_cast<T>(x % y);
  }
}

/// Floating remainder with the divisor's sign.
template <typename T>
T remainder_float(T x, T y) {
  T mod = std::fmod(x, y);
  return (mod != 0 && ((y < 0) != (mod < 0))) ? mod + y : mod;
}

/// Integer remainder with the dividend's sign (C's %, fmod); y != 0.
template <typename T>
constexpr T fmod_int(T x, T y) {
  if constexpr (kSignedInt<T>) {
    if (y == T(-1)) return 0;
  }
  return static_cast<T>(x % y);
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

/// base ** exp for integers, wrapping on overflow like PyTorch; a negative
/// exponent gives 1 for base 1, +-1 for base -1 and 0 otherwise.
template <typename T, typename E>
constexpr T int_pow(T base, E exp) {
  if constexpr (std::is_signed_v<E>) {
    if (exp < 0) {
      if (base == T(1)) return T(1);
      if constexpr (kSignedInt<T>) {
        if (base == T(-1)) return (exp & 1) ? T(-1) : T(1);
      }
      return T(0);
    }
  }
  // Unsigned 64-bit products wrap without UB and truncate to T's wrap.
  uint64_t result = 1;
  uint64_t b = static_cast<uint64_t>(static_cast<int64_t>(base));
  auto e = static_cast<uint64_t>(exp);
  while (e != 0) {
    if (e & 1) result *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<T>(result);
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
