#pragma once

// Byte copies that stage images for the quantized convolution
// (quant_conv.cpp): runs of bytes, and pixels widened by a few channels.
// With Flip every copied byte is + 128 (int8 stored as uint8).

#include <cstdint>
#include <cstring>

#include "pterun/backend/cpu/engine/x86_intrinsics.h"

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

}  // namespace pterun::cpu
