#pragma once

// Integer arithmetic with Python's and PyTorch's rules, as constexpr
// functions of the standard library alone, so that host code (through
// kernels/common/elementwise_math.h) and CUDA device code
// (backend/cuda/device/, which calls them as they are with
// --expt-relaxed-constexpr) share one definition: wrapping add, sub, mul
// and negation, Python-style division and remainder, exact powers. They
// never hit undefined behaviour (INT_MIN / -1 traps on x86); callers reject
// division by zero before they run.

#include <cstdint>
#include <type_traits>

namespace pterun::math {

template <typename T>
constexpr bool kSignedInt = std::is_integral_v<T>&& std::is_signed_v<T>;

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

/// Integer remainder with the dividend's sign (C's %, fmod); y != 0.
template <typename T>
constexpr T fmod_int(T x, T y) {
  if constexpr (kSignedInt<T>) {
    if (y == T(-1)) return 0;
  }
  return static_cast<T>(x % y);
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

/// v converted to To with PyTorch's rules, for the standard arithmetic
/// types (callers convert 16-bit floats through float first): to bool,
/// v != 0; a floating value to an integer through int64, NaN giving 0 and
/// values beyond int64 clamped to its ends, with no undefined behaviour.
template <typename To, typename From>
constexpr To convert_standard(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (!(v == v)) return To(0);
    if (v >= static_cast<From>(9.2233720368547758e18)) return static_cast<To>(INT64_MAX);
    if (v <= static_cast<From>(-9.2233720368547758e18)) return static_cast<To>(INT64_MIN);
    return static_cast<To>(static_cast<int64_t>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace pterun::math
