#pragma once

#include <cstdint>
#include <cstring>

namespace pterun {

namespace detail {
// The compiler's binary16 type for conversions. Clang before 15 has
// _Float16 on x86 only with AVX512-FP16; its storage-only __fp16 converts
// the same way (round to nearest even) everywhere.
#if defined(__clang__) && __clang_major__ < 15 && !defined(__AVX512FP16__)
using Float16 = __fp16;
#else
using Float16 = _Float16;
#endif
}  // namespace detail

/// IEEE binary16, stored as bits; arithmetic goes through float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) { bits = float_to_half_bits(f); }
  operator float() const { return half_bits_to_float(bits); }

  static uint16_t float_to_half_bits(float f) {
    detail::Float16 h = static_cast<detail::Float16>(f);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
  }
  static float half_bits_to_float(uint16_t b) {
    detail::Float16 h;
    std::memcpy(&h, &b, 2);
    return static_cast<float>(h);
  }
};

/// bfloat16 (the top half of a float32), stored as bits; rounds to nearest
/// even on conversion from float and keeps NaNs quiet.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) { bits = float_to_bits(f); }
  operator float() const { return bits_to_float(bits); }

  static uint16_t float_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
  static float bits_to_float(uint16_t b) {
    uint32_t u = uint32_t{b} << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace pterun
