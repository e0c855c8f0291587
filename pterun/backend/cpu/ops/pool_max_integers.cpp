// Values of integer max pooling over a channels-last input (XNNPACK's int8
// pooling, and pterun::max_pool2d_values.out of integers): the maximum of
// each window's pixels over all channels at once; no NaN to track.

#include <algorithm>
#include <limits>
#include <type_traits>

#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/backend/cpu/ops/pool_util.h"

namespace pterun::cpu::pool {
namespace {

/// dst[0, n) = max(dst, src) elementwise for integers (no NaN to track).
template <typename T>
inline void max_integers_into(T* dst, const T* src, int64_t n) {
  int64_t c = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  if constexpr (sizeof(T) == 1) {  // 64 channels a vector, the last few masked
    for (; c < n; c += 64) {
      const __mmask64 m = n - c >= 64 ? ~__mmask64{0} : (__mmask64{1} << (n - c)) - 1;
      const __m512i a = _mm512_maskz_loadu_epi8(m, dst + c);
      const __m512i b = _mm512_maskz_loadu_epi8(m, src + c);
      const __m512i r = std::is_signed_v<T> ? _mm512_max_epi8(a, b) : _mm512_max_epu8(a, b);
      _mm512_mask_storeu_epi8(dst + c, m, r);
    }
  }
#endif
  for (; c < n; ++c) dst[c] = std::max(dst[c], src[c]);
}

/// Calls f(p) with each pixel inside the input of the window whose corner
/// is (y_start, x_start) in image n of a channels-last `src` (p its first
/// channel), rows then columns.
template <typename T, typename F>
inline void window_pixels(const Window& w, const Planes& g, const T* src, int64_t n,
                          int64_t y_start, int64_t x_start, F&& f) {
  for (int64_t ky = 0; ky < w.k[0]; ++ky) {
    const int64_t y = y_start + ky * w.d[0];
    if (y < 0 || y >= g.ih) continue;
    const T* row = src + n * g.in[0] + y * g.in[2];
    for (int64_t kx = 0; kx < w.k[1]; ++kx) {
      const int64_t x = x_start + kx * w.d[1];
      if (x >= 0 && x < g.iw) f(row + x * g.in[3]);
    }
  }
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
/// Output rows [begin, end) (n * oh + oy) of 1-byte max pooling over a
/// channels-last input of at most 64 channels: each window in a register,
/// its taps inside the input found per row and column once.
template <typename T>
void max_rows_of_bytes(const Window& w, const Planes& g, const T* src, T* dst, int64_t begin,
                       int64_t end) {
  static_assert(sizeof(T) == 1);
  const __mmask64 m = g.c == 64 ? ~__mmask64{0} : (__mmask64{1} << g.c) - 1;
  const __m512i lowest = _mm512_set1_epi8(static_cast<char>(std::numeric_limits<T>::lowest()));
  const int64_t kh = w.k[0], kw = w.k[1], dy = w.d[0] * g.in[2], dx = w.d[1] * g.in[3];
  // The taps [first, last) of a window starting at `start` that fall inside
  // [0, size), stepping by `dilation`.
  auto inside = [](int64_t start, int64_t taps, int64_t dilation, int64_t size, int64_t& first,
                   int64_t& last) {
    first = 0;
    while (first < taps && start + first * dilation < 0) ++first;
    last = taps;
    while (last > first && start + (last - 1) * dilation >= size) --last;
  };
  for (int64_t item = begin; item < end; ++item) {
    const int64_t oy = item % g.oh, n = item / g.oh;
    const int64_t y_start = oy * w.s[0] - w.p[0];
    int64_t ky0, ky1;
    inside(y_start, kh, w.d[0], g.ih, ky0, ky1);
    const int64_t rows = n * g.in[0] + y_start * g.in[2];  // may start above the input
    T* o = dst + n * g.out[0] + oy * g.out[2];
    for (int64_t ox = 0; ox < g.ow; ++ox, o += g.out[3]) {
      const int64_t x_start = ox * w.s[1] - w.p[1];
      int64_t kx0, kx1;
      inside(x_start, kw, w.d[1], g.iw, kx0, kx1);
      const int64_t corner = rows + x_start * g.in[3];
      __m512i best = lowest;
      for (int64_t ky = ky0; ky < ky1; ++ky) {
        for (int64_t kx = kx0; kx < kx1; ++kx) {
          const __m512i v = _mm512_maskz_loadu_epi8(m, src + (corner + ky * dy + kx * dx));
          best = std::is_signed_v<T> ? _mm512_max_epi8(best, v) : _mm512_max_epu8(best, v);
        }
      }
      _mm512_mask_storeu_epi8(o, m, best);
    }
  }
}
#endif

/// Values of integer max pooling of a channels-last input (XNNPACK's int8
/// pooling): for each output pixel, the maximum over its window's pixels of
/// all channels at once.
template <typename T>
void max_pool_channels_last_integers(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  const Window& w = a.w;
  const Planes& g = a.g;
  const T* src = a.in.data_as<const T>();
  T* dst = a.out.data_as<T>();
  cpu::parallel_for(ctx, g.n * g.oh, w.k[0] * w.k[1] * g.c * g.ow, [&](int64_t b, int64_t e) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
    if constexpr (sizeof(T) == 1) {
      if (g.c <= 64) {
        max_rows_of_bytes(w, g, src, dst, b, e);
        return;
      }
    }
#endif
    for (int64_t item = b; item < e; ++item) {
      const int64_t oy = item % g.oh, n = item / g.oh;
      const int64_t y_start = oy * w.s[0] - w.p[0];
      T* o = dst + n * g.out[0] + oy * g.out[2];
      for (int64_t ox = 0; ox < g.ow; ++ox, o += g.out[3]) {
        const int64_t x_start = ox * w.s[1] - w.p[1];
        bool first = true;
        window_pixels(w, g, src, n, y_start, x_start, [&](const T* px) {
          if (first) {
            std::copy(px, px + g.c, o);
            first = false;
          } else {
            max_integers_into(o, px, g.c);
          }
        });
        if (first) std::fill(o, o + g.c, std::numeric_limits<T>::lowest());
      }
    }
  });
}

}  // namespace

bool max_pool_channels_last_integer_values(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  if (!a.g.channels_inner || a.g.in[1] != 1 || a.g.out[1] != 1) return false;
  switch (a.in.dtype()) {
    case DType::Int8: max_pool_channels_last_integers<int8_t>(ctx, a); return true;
    case DType::UInt8: max_pool_channels_last_integers<uint8_t>(ctx, a); return true;
    case DType::Int16: max_pool_channels_last_integers<int16_t>(ctx, a); return true;
    case DType::Int32: max_pool_channels_last_integers<int32_t>(ctx, a); return true;
    case DType::Int64: max_pool_channels_last_integers<int64_t>(ctx, a); return true;
    default: return false;
  }
}

}  // namespace pterun::cpu::pool
