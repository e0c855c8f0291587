#pragma once

// Byte copies that stage images for the quantized convolution
// (quant_conv.cpp): runs of bytes, and pixels widened by a few channels.
// With Flip every copied byte is + 128 (int8 stored as uint8).

#include <cstdint>
#include <cstring>

#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/backend/cpu/ops/quant_quantize.h"

namespace pterun::cpu {

/// dst[0, n) = src[0, n) (Flip: each byte + 128, int8 as uint8): vector
/// moves of 64 bytes, the last one masked, or two words for a short run
/// (no call, no byte past either end touched).
template <bool Flip>
inline void copy_run(uint8_t* dst, const uint8_t* src, int64_t n) {
  // Runs of 4 to 16 bytes (a tap or kernel row of a few channels): two
  // overlapping words, no masked vector (whose 64 bytes straddle lines).
  if (n >= 4 && n <= 16) {
    auto move = [&]<typename W>(W flip) {
      W head, tail;
      std::memcpy(&head, src, sizeof(W));
      std::memcpy(&tail, src + n - sizeof(W), sizeof(W));
      if constexpr (Flip) {
        head ^= flip;
        tail ^= flip;
      }
      std::memcpy(dst, &head, sizeof(W));
      std::memcpy(dst + n - sizeof(W), &tail, sizeof(W));
    };
    if (n >= 8) {
      move(uint64_t{0x8080808080808080u});
    } else {
      move(uint32_t{0x80808080u});
    }
    return;
  }
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const __m512i top = _mm512_set1_epi8(static_cast<char>(Flip ? 0x80 : 0));
  int64_t e = 0;
  for (; e + 64 <= n; e += 64) {
    __m512i v = _mm512_loadu_si512(src + e);
    if constexpr (Flip) v = _mm512_xor_si512(v, top);
    _mm512_storeu_si512(dst + e, v);
  }
  if (e < n) {
    const __mmask64 m = (__mmask64{1} << (n - e)) - 1;
    __m512i v = _mm512_maskz_loadu_epi8(m, src + e);
    if constexpr (Flip) v = _mm512_xor_si512(v, top);
    _mm512_mask_storeu_epi8(dst + e, m, v);
  }
#else
  for (int64_t e = 0; e < n; ++e) dst[e] = Flip ? static_cast<uint8_t>(src[e] ^ 0x80) : src[e];
#endif
}

/// Copies pixels of `channels` bytes (one after another in the source)
/// into pixels of `width` bytes (width > channels), the bytes past each
/// pixel's channels set to `fill`. Built once per call: the byte shuffle
/// of a vector's worth of pixels is worked out here.
class WidenPixels {
 public:
  WidenPixels(int64_t channels, int64_t width, uint8_t fill)
      : channels_(channels), width_(width), fill_(fill) {
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
    if (width <= channels) return;  // nothing to widen: not used
    per_vector_ = width <= 64 ? 64 / width : 0;
    alignas(64) uint8_t index[64] = {};
    for (int64_t pixel = 0; pixel < per_vector_; ++pixel) {
      for (int64_t ch = 0; ch < channels; ++ch) {
        index[pixel * width + ch] = static_cast<uint8_t>(pixel * channels + ch);
        keep_ |= __mmask64{1} << (pixel * width + ch);
      }
    }
    index_ = _mm512_load_si512(index);
#endif
  }

  template <bool Flip>
  void operator()(uint8_t* dst, const uint8_t* src, int64_t pixels) const {
    int64_t x = 0;
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
    if (per_vector_ > 0) {
      const __m512i fill = _mm512_set1_epi8(static_cast<char>(fill_));
      const __m512i top = _mm512_set1_epi8(static_cast<char>(0x80));
      for (; x < pixels; x += per_vector_) {
        const int64_t n = pixels - x < per_vector_ ? pixels - x : per_vector_;
        __m512i v = _mm512_maskz_loadu_epi8(bytes(n * channels_), src + x * channels_);
        if constexpr (Flip) v = _mm512_xor_si512(v, top);
        v = _mm512_mask_blend_epi8(keep_, fill, _mm512_permutexvar_epi8(index_, v));
        _mm512_mask_storeu_epi8(dst + x * width_, bytes(n * width_), v);
      }
      return;
    }
#endif
    for (; x < pixels; ++x) {
      for (int64_t ch = 0; ch < channels_; ++ch) {
        const uint8_t b = src[x * channels_ + ch];
        dst[x * width_ + ch] = Flip ? static_cast<uint8_t>(b ^ 0x80) : b;
      }
      std::memset(dst + x * width_ + channels_, fill_, static_cast<size_t>(width_ - channels_));
    }
  }

 private:
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
  static __mmask64 bytes(int64_t n) {
    return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
  }
  int64_t per_vector_ = 0;
  __m512i index_;
  __mmask64 keep_ = 0;
#endif
  int64_t channels_, width_;
  uint8_t fill_;
};

/// One row of `width` pixels of a float32 image quantized to int8 as
/// quantize_per_tensor does (quantize_one, quantize16) and stored + 128, `pc` bytes a pixel:
/// channel ch of pixel x from src[ch * cs + x * xs]; channels [channels, pc) hold `fill`.
inline void stage_floats(uint8_t* dst, const float* src, int64_t width, int64_t channels,
                         int64_t cs, int64_t xs, int64_t pc, float inv, float zp, uint8_t fill) {
  int64_t x = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  if (xs == 1 && pc == 4 && channels <= 4) {
    // Sixteen pixels a step: each channel's sixteen values quantized in one
    // vector, then interleaved into pixels of four bytes.
    const __m512 vinv = _mm512_set1_ps(inv), vzp = _mm512_set1_ps(zp);
    const __m512 lo = _mm512_set1_ps(-128.0f), hi = _mm512_set1_ps(127.0f);
    const __m128i top = _mm_set1_epi8(static_cast<char>(0x80));
    for (; x < width; x += 16) {
      const int64_t n = width - x < 16 ? width - x : 16;
      const auto m = static_cast<__mmask16>((1u << n) - 1);
      __m128i c[4];
      for (int64_t ch = 0; ch < 4; ++ch) {
        if (ch >= channels) {
          c[ch] = _mm_set1_epi8(static_cast<char>(fill));
          continue;
        }
        const __m512 v = _mm512_maskz_loadu_ps(m, src + ch * cs + x);
        c[ch] = _mm_xor_si128(quantize16<int8_t>(v, vinv, vzp, lo, hi), top);
      }
      const __m128i a = _mm_unpacklo_epi8(c[0], c[1]), b = _mm_unpackhi_epi8(c[0], c[1]);
      const __m128i e = _mm_unpacklo_epi8(c[2], c[3]), f = _mm_unpackhi_epi8(c[2], c[3]);
      __m512i z = _mm512_castsi128_si512(_mm_unpacklo_epi16(a, e));
      z = _mm512_inserti32x4(z, _mm_unpackhi_epi16(a, e), 1);
      z = _mm512_inserti32x4(z, _mm_unpacklo_epi16(b, f), 2);
      z = _mm512_inserti32x4(z, _mm_unpackhi_epi16(b, f), 3);
      const __mmask64 bytes = n == 16 ? ~__mmask64{0} : (__mmask64{1} << (4 * n)) - 1;
      _mm512_mask_storeu_epi8(dst + 4 * x, bytes, z);
    }
    return;
  }
#endif
  for (; x < width; ++x) {
    for (int64_t ch = 0; ch < channels; ++ch) {
      const int8_t q = quantize_one<float, int8_t>(src[ch * cs + x * xs], inv, zp, -128, 127);
      dst[x * pc + ch] = static_cast<uint8_t>(q + 128);
    }
    for (int64_t ch = channels; ch < pc; ++ch) dst[x * pc + ch] = fill;
  }
}

}  // namespace pterun::cpu
