#pragma once

// float -> integer quantization one element or one run at a time, as
// ExecuTorch's quantize_per_tensor computes it (multiply by the float32
// reciprocal of the scale, round half to even, add the zero point,
// clamp): quantize_per_tensor's kernel (quant.cpp) and the quantized
// linear layer's float32 input (quant_nn.cpp) share it.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "pterun/backend/cpu/engine/x86_intrinsics.h"

namespace pterun::cpu {

template <typename Out>
Out clamp_to(double s, int64_t quant_min, int64_t quant_max) {
  // NaN fails both tests and gives quant_min.
  if (!(s >= static_cast<double>(quant_min))) return static_cast<Out>(quant_min);
  if (s > static_cast<double>(quant_max)) return static_cast<Out>(quant_max);
  return static_cast<Out>(static_cast<int64_t>(s));
}

/// ExecuTorch's quantize_val for one element.
template <typename In, typename Out>
Out quantize_one(In v, float inv, float zp, int64_t quant_min, int64_t quant_max) {
  float p;
  if constexpr (std::is_same_v<In, double>) {
    p = static_cast<float>(static_cast<double>(inv) * v);
  } else {
    p = inv * static_cast<float>(v);
  }
  return clamp_to<Out>(zp + std::nearbyint(p), quant_min, quant_max);
}

#if defined(__AVX512F__)
/// quantize_one of 16 float32 lanes into int8 or uint8 bytes, with the
/// same results in one step fewer: the product is clamped to [lo - zp,
/// hi - zp] before it is rounded (rounding keeps those integer bounds and
/// the order of values, so clamping first changes nothing; max(NaN, lo -
/// zp) is lo - zp, as max(NaN, lo) was lo), then rounded half to even as
/// it becomes an integer, which the zero point is added to. lo, hi and zp
/// are integers; callers hold them in vectors, so the differences are
/// made once per loop.
template <typename Out>
inline __m128i quantize16(__m512 x, __m512 inv, __m512 zp, __m512 lo, __m512 hi) {
  __m512 p = _mm512_mul_ps(x, inv);
  p = _mm512_min_ps(_mm512_max_ps(p, _mm512_sub_ps(lo, zp)), _mm512_sub_ps(hi, zp));
  const __m512i q =
      _mm512_add_epi32(_mm512_cvt_roundps_epi32(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                       _mm512_cvtps_epi32(zp));
  return std::is_same_v<Out, int8_t> ? _mm512_cvtsepi32_epi8(q) : _mm512_cvtusepi32_epi8(q);
}
#endif

#if defined(__AVX2__)
/// float32 -> int8/uint8 with one parameter pair, 8 or 16 lanes at a time;
/// the same operations as quantize_one (multiply, round to nearest even,
/// add the zero point, clamp), so the results are identical. Returns how
/// many elements it did.
template <typename Out>
int64_t quantize_f32_vec(const float* in, Out* out, int64_t n, float inv, float zp, float lo,
                         float hi) {
  int64_t i = 0;
#if defined(__AVX512F__)
  const __m512 vinv = _mm512_set1_ps(inv), vzp = _mm512_set1_ps(zp);
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  for (; i + 16 <= n; i += 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     quantize16<Out>(_mm512_loadu_ps(in + i), vinv, vzp, vlo, vhi));
  }
#else
  const __m256 vinv = _mm256_set1_ps(inv), vzp = _mm256_set1_ps(zp);
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  for (; i + 8 <= n; i += 8) {
    __m256 p = _mm256_mul_ps(_mm256_loadu_ps(in + i), vinv);
    p = _mm256_round_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    p = _mm256_add_ps(vzp, p);
    p = _mm256_min_ps(_mm256_max_ps(p, vlo), vhi);
    alignas(32) int32_t q[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(q), _mm256_cvtps_epi32(p));
    for (int j = 0; j < 8; ++j) out[i + j] = static_cast<Out>(q[j]);
  }
#endif
  return i;
}
#endif

/// out[0, n) = quantize_one(in[i], inv, zp, lo, hi), vectorised where the
/// build allows.
template <typename Out>
void quantize_floats(const float* in, Out* out, int64_t n, float inv, float zp, int64_t lo,
                     int64_t hi) {
  int64_t i = 0;
#if defined(__AVX2__)
  if constexpr (std::is_same_v<Out, int8_t> || std::is_same_v<Out, uint8_t>) {
    i = quantize_f32_vec(in, out, n, inv, zp, static_cast<float>(lo), static_cast<float>(hi));
  }
#endif
  for (; i < n; ++i) out[i] = quantize_one<float, Out>(in[i], inv, zp, lo, hi);
}

}  // namespace pterun::cpu
