#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace pterun {

/// a + b, or nullopt when it overflows uint64.
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// a * b, or nullopt when it overflows uint64.
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// Signed arithmetic that reports overflow instead of wrapping (undefined
/// behaviour): each returns false, leaving `out` unspecified, on overflow.
inline bool add_i64(int64_t a, int64_t b, int64_t& out) {
  return !__builtin_add_overflow(a, b, &out);
}
inline bool sub_i64(int64_t a, int64_t b, int64_t& out) {
  return !__builtin_sub_overflow(a, b, &out);
}
inline bool mul_i64(int64_t a, int64_t b, int64_t& out) {
  return !__builtin_mul_overflow(a, b, &out);
}

/// Product of non-negative sizes, or nullopt on overflow or a negative size.
template <typename T>
std::optional<uint64_t> checked_numel(std::span<const T> sizes) {
  uint64_t n = 1;
  for (T s : sizes) {
    if (s < 0) return std::nullopt;
    auto next = checked_mul(n, static_cast<uint64_t>(s));
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

}  // namespace pterun
