#pragma once

// Runs of float16 / bfloat16 / float32 elements to and from float, eight
// at a time (F16C and AVX2 where the build has them), and short float
// vector helpers (dot product, axpy) for the kernels that work on rows:
// attention over a KV cache and matrix-vector products.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pterun/backend/cpu/engine/reduce.h"
#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/core/half.h"

namespace pterun::cpu::vec {

using F8 = Simd<float>::V;  // eight floats
typedef uint16_t U16x8 __attribute__((vector_size(16)));
typedef uint32_t U32x8 __attribute__((vector_size(32)));

/// Eight elements of `T` (float, Half, BFloat16) from unaligned memory as floats.
template <typename T>
inline F8 load8(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return load_vec<F8>(p);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    U16x8 h;
    std::memcpy(&h, p, sizeof h);
    U32x8 w = __builtin_convertvector(h, U32x8) << 16;
    F8 f;
    std::memcpy(&f, &w, sizeof f);
    return f;
  } else {
    static_assert(std::is_same_v<T, Half>);
#if defined(__F16C__)
    __m128i h;
    std::memcpy(&h, p, sizeof h);
    __m256 f = _mm256_cvtph_ps(h);
    F8 r;
    std::memcpy(&r, &f, sizeof r);
    return r;
#else
    F8 r;
    for (int i = 0; i < 8; ++i) r[i] = static_cast<float>(p[i]);
    return r;
#endif
  }
}

/// n elements of `T` as floats into dst.
template <typename T>
inline void to_float(const T* src, float* dst, int64_t n) {
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  } else {
    for (; i + 8 <= n; i += 8) store_vec(dst + i, load8(src + i));
    for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
  }
}

/// n floats rounded to `T` into dst.
template <typename T>
inline void from_float(const float* src, T* dst, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = T(src[i]);
  }
}

/// The sum of a vector's lanes.
inline float hsum(F8 v) {
  float s = 0;
  for (int i = 0; i < 8; ++i) s += v[i];
  return s;
}

/// sum_i a[i] * b[i] over n floats.
inline float dot(const float* a, const float* b, int64_t n) {
  F8 s0{}, s1{};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 += load_vec<F8>(a + i) * load_vec<F8>(b + i);
    s1 += load_vec<F8>(a + i + 8) * load_vec<F8>(b + i + 8);
  }
  for (; i + 8 <= n; i += 8) s0 += load_vec<F8>(a + i) * load_vec<F8>(b + i);
  float s = hsum(s0 + s1);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

/// y[i] = y[i] * c + p * x[i] over n floats.
inline void scale_add(float* y, float c, float p, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    store_vec(y + i, load_vec<F8>(y + i) * c + load_vec<F8>(x + i) * p);
  }
  for (; i < n; ++i) y[i] = y[i] * c + p * x[i];
}

}  // namespace pterun::cpu::vec
