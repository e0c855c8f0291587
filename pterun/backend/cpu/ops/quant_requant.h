#pragma once

// The requantization of int8 products (quant_nn.cpp, quant_conv.cpp): an
// output channel's int32 sum times input scale x weight scale, plus the
// bias, quantized as ExecuTorch rounds. Include only from files built with
// -ffp-contract=off (backend/cpu/CMakeLists.txt): one rounding per float32
// multiply and add.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/backend/cpu/ops/quant_gemm.h"
#include "pterun/backend/cpu/ops/quant_quantize.h"
#include "pterun/backend/cpu/ops/quant_util.h"
#include "pterun/core/tensor.h"
#include "pterun/ops/quant.h"
#include "pterun/ops/quant_checks.h"

namespace pterun::cpu {

inline Requant requant_terms(const ops::Requantize& rq, int64_t n, void* memory) {
  auto* mult = static_cast<float*>(memory);
  float* bias = mult + n;
  const Tensor& s = rq.weight_scales;
  ops::check_scales(s.data(), s.dtype(), s.numel(), "quantized weight");
  if (s.dtype() == DType::Float32 && s.numel() == n) {
    // The common case, per channel in float32, as vectors of 16 and the rest.
    using V = float __attribute__((vector_size(64)));
    const float* ws = s.data_as<const float>();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
      V w;
      std::memcpy(&w, ws + j, sizeof w);
      w *= rq.in_q.scale;
      std::memcpy(mult + j, &w, sizeof w);
    }
    for (; j < n; ++j) mult[j] = rq.in_q.scale * ws[j];
  } else {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = s.numel() == 1 ? 0 : j;
      const float ws = s.dtype() == DType::Float64
                           ? static_cast<float>(s.data_as<const double>()[at])
                           : s.data_as<const float>()[at];
      mult[j] = rq.in_q.scale * ws;
    }
  }
  if (rq.bias != nullptr) {
    std::memcpy(bias, rq.bias->data_as<const float>(), static_cast<size_t>(n) * sizeof(float));
  } else {
    std::memset(bias, 0, static_cast<size_t>(n) * sizeof(float));
  }
  return {mult,       bias,      1.0f / rq.out_q.scale, static_cast<float>(rq.out_q.zero_point),
          rq.out_min, rq.out_max};
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
/// The per-call terms of a requantization as vectors (RequantLanes::bytes).
struct RequantLanes {
  __m512 inv, zero_point, lo, hi;

  explicit RequantLanes(const Requant& t)
      : inv(_mm512_set1_ps(t.inv)),
        zero_point(_mm512_set1_ps(t.zero_point)),
        lo(_mm512_set1_ps(static_cast<float>(t.lo))),
        hi(_mm512_set1_ps(static_cast<float>(t.hi))) {}

  /// 16 sums requantized to Out bytes: each sum times its mult, plus its
  /// bias, then quantized (quantize16: times inv, rounded half to even,
  /// plus the zero point, clamped to [lo, hi]).
  template <typename Out>
  [[gnu::always_inline]] __m128i bytes(__m512i sums, __m512 mult, __m512 bias) const {
    const __m512 y = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(sums), mult), bias);
    return quantize16<Out>(y, inv, zero_point, lo, hi);
  }
};
#endif

/// out[j] = quantize(float(acc[j]) * mult[j] + bias[j]) for n channels
/// from channel0 on, in one contiguous run.
template <typename Out>
inline void requantize_run(const int32_t* acc, int64_t n, const Requant& t, int64_t channel0,
                           Out* out) {
  const float* mult = t.mult + channel0;
  const float* bias = t.bias + channel0;
  int64_t j = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const RequantLanes lanes(t);
  for (; j + 16 <= n; j += 16) {
    const __m128i b = lanes.bytes<Out>(_mm512_loadu_si512(acc + j), _mm512_loadu_ps(mult + j),
                                       _mm512_loadu_ps(bias + j));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), b);
  }
  if (j < n) {  // the last few channels, masked
    const __mmask16 m = static_cast<__mmask16>((1u << (n - j)) - 1);
    const __m128i b =
        lanes.bytes<Out>(_mm512_maskz_loadu_epi32(m, acc + j), _mm512_maskz_loadu_ps(m, mult + j),
                         _mm512_maskz_loadu_ps(m, bias + j));
    _mm_mask_storeu_epi8(out + j, m, b);
    j = n;
  }
#endif
  for (; j < n; ++j) {
    const float y = static_cast<float>(acc[j]) * mult[j] + bias[j];
    out[j] = static_cast<Out>(requantize(y, t.inv, t.zero_point, t.lo, t.hi));
  }
}

/// requantize_run over `rows` pixels of `width` channels each, stored one
/// after another at `out` (and read so from acc): with AVX-512 and a width
/// that divides 16, whole vectors hold 16 / width pixels (the terms
/// repeated across the lanes), instead of a masked vector per pixel.
template <typename Out>
inline void requantize_pixels(const int32_t* acc, int64_t rows, int64_t width, const Requant& t,
                              int64_t channel0, Out* out) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
  if (width < 16 && 16 % width == 0) {
    alignas(64) float mult[16], bias[16];
    for (int64_t l = 0; l < 16; l += width) {  // the block's channels, 16 / width times
      std::memcpy(mult + l, t.mult + channel0, static_cast<size_t>(width) * sizeof(float));
      std::memcpy(bias + l, t.bias + channel0, static_cast<size_t>(width) * sizeof(float));
    }
    const __m512 vm = _mm512_load_ps(mult), vb = _mm512_load_ps(bias);
    const RequantLanes lanes(t);
    const int64_t n = rows * width;
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m =
          n - j >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (n - j)) - 1);
      const __m128i b = lanes.bytes<Out>(_mm512_maskz_loadu_epi32(m, acc + j), vm, vb);
      _mm_mask_storeu_epi8(out + j, m, b);
    }
    return;
  }
#endif
  for (int64_t r = 0; r < rows; ++r) {
    requantize_run(acc + r * width, width, t, channel0, out + r * width);
  }
}

}  // namespace pterun::cpu
