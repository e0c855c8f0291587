// Values of float max pooling over channels-last inputs with dense pixels
// (channels contiguous): small square windows with a column of maxima
// carried from one output pixel to the next (AVX-512), and any window
// separably through a row buffer. pool_max.cpp's max_pool2d_values tries
// them first (max_pool_channels_last_float_values).

#include <algorithm>
#include <cstring>
#include <limits>

#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/backend/cpu/ops/pool_util.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pterun::cpu::pool {
namespace {

#if defined(__AVX512F__)

/// The largest of the K window rows' values at `at` (floats into each row),
/// sixteen channels; `nan` gets the lanes where any of them is NaN. One
/// unordered compare covers two rows.
template <int K>
[[gnu::always_inline]] inline __m512 column_max(const float* const* rows, int64_t at,
                                                __mmask16& nan) {
  __m512 v[K];
  for (int k = 0; k < K; ++k) v[k] = _mm512_loadu_ps(rows[k] + at);
  __mmask16 m = 0;
  for (int k = 0; k + 1 < K; k += 2) m |= _mm512_cmp_ps_mask(v[k], v[k + 1], _CMP_UNORD_Q);
  if constexpr (K % 2 == 1) m |= _mm512_cmp_ps_mask(v[K - 1], v[K - 1], _CMP_UNORD_Q);
  __m512 best = v[0];
  for (int k = 1; k < K; ++k) best = _mm512_max_ps(best, v[k]);
  nan = m;
  return best;
}

/// One output row of K x K windows at stride S (no dilation), sixteen
/// channels from `i`: the window rows are `rows` (K pointers; a row over
/// the padding repeats one inside, which leaves a maximum as it is), the
/// window columns of output pixel x are x * S - pad + k, clamped into the
/// input likewise. Each column's maximum over the rows is worked out once
/// and carried to the next pixel's window while it overlaps (K - S columns).
template <int K, int S>
void window_row(float* o, int64_t o_step, const float* const* rows, int64_t iw, int64_t c,
                int64_t ow, int64_t pad, int64_t i) {
  __m512 col[K];
  __mmask16 nan[K];
  auto take = [&](int64_t x, int slot) {
    x = std::clamp<int64_t>(x, 0, iw - 1);
    col[slot] = column_max<K>(rows, x * c + i, nan[slot]);
  };
  constexpr int kCarried = K > S ? K - S : 0;
  for (int k = 0; k < K; ++k) take(k - pad, k);
  const __m512 quiet_nan = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
  for (int64_t x = 0; x < ow; ++x, o += o_step) {
    if (x > 0) {
      for (int k = 0; k < kCarried; ++k) {
        col[k] = col[k + S];
        nan[k] = nan[k + S];
      }
      for (int k = kCarried; k < K; ++k) take(x * S - pad + k, k);
    }
    __m512 best = col[0];
    __mmask16 any = nan[0];
    for (int k = 1; k < K; ++k) {
      best = _mm512_max_ps(best, col[k]);
      any |= nan[k];
    }
    _mm512_storeu_ps(o + i, _mm512_mask_mov_ps(best, any, quiet_nan));
  }
}

/// Values of K x K, stride-S float max pooling without dilation whose every
/// window holds a value of the input, over channels-last pixels of a
/// multiple of 16 channels (window_row per output row). A 4 x 16 x 128 x
/// 128 input pooled 3x3 at stride 2 took 110 µs through the row buffer of
/// max_pool_channels_last_rows, which reads every value of a window row
/// again for each window column. False (nothing done) otherwise.
template <int K, int S>
bool small_windows(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  const Window& w = a.w;
  const Planes& g = a.g;
  if (w.k[0] != K || w.k[1] != K || w.s[0] != S || w.s[1] != S || w.d[0] != 1 || w.d[1] != 1) {
    return false;
  }
  // Every window reaches into the input: the first ends at or after
  // column 0, the last starts before the end.
  for (int d = 0; d < 2; ++d) {
    const int64_t in = d == 0 ? g.ih : g.iw, out = d == 0 ? g.oh : g.ow;
    if (w.p[d] > K - 1 || (out - 1) * S - w.p[d] > in - 1 || in < 1) return false;
  }
  const float* src = a.in.data_as<const float>();
  float* dst = a.out.data_as<float>();
  cpu::parallel_for(ctx, g.n * g.oh, K * g.c * g.ow, [&](int64_t b, int64_t e) {
    const float* rows[K];
    for (int64_t item = b; item < e; ++item) {
      const int64_t oy = item % g.oh, n = item / g.oh;
      for (int k = 0; k < K; ++k) {
        const int64_t y = std::clamp<int64_t>(oy * S - w.p[0] + k, 0, g.ih - 1);
        rows[k] = src + n * g.in[0] + y * g.in[2];
      }
      float* o = dst + n * g.out[0] + oy * g.out[2];
      for (int64_t i = 0; i < g.c; i += 16) {
        window_row<K, S>(o, g.out[3], rows, g.iw, g.c, g.ow, w.p[1], i);
      }
    }
  });
  return true;
}

/// small_windows for the windows it is built for: 2x2 and 3x3 at strides
/// 1 and 2.
bool small_window_values(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  const Planes& g = a.g;
  if (g.c % 16 != 0 || g.c == 0) return false;
  return small_windows<3, 2>(ctx, a) || small_windows<3, 1>(ctx, a) ||
         small_windows<2, 2>(ctx, a) || small_windows<2, 1>(ctx, a);
}

#else

bool small_window_values(KernelContext&, const ops::MaxPoolArgs&) {
  return false;
}

#endif

/// Floats of one padded row of a channels-last input that
/// max_pool_channels_last_rows keeps on its stack.
constexpr int64_t kMaxChannelsLastRow = 16384;

/// Most window rows or columns max_pool_channels_last_rows takes.
constexpr int kMaxWindowSide = 64;

typedef float V16f __attribute__((vector_size(64)));

/// The maximum of 16 floats from each of `count` places (`at(k)`, k <
/// count >= 1), NaN in a lane where any of them is NaN: a plain maximum
/// per place and NaN noted beside it, one select at the end.
template <typename At>
[[gnu::always_inline]] inline V16f max_keeping_nan(int count, At&& at) {
  V16f best, v;
  std::memcpy(&best, at(0), sizeof best);
  auto nan = best != best;
  for (int k = 1; k < count; ++k) {
    std::memcpy(&v, at(k), sizeof v);
    best = v > best ? v : best;
    nan |= v != v;
  }
  return nan ? V16f{} + std::numeric_limits<float>::quiet_NaN() : best;
}

/// dst[i] = the largest of srcs[0][i] .. srcs[count - 1][i] for i < n,
/// NaN where any of them is NaN (count >= 1), sixteen floats at a time.
inline void max_of(float* dst, const float* const* srcs, int count, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const V16f best = max_keeping_nan(count, [&](int k) { return srcs[k] + i; });
    std::memcpy(dst + i, &best, sizeof best);
  }
  for (; i < n; ++i) {
    float best = srcs[0][i];
    for (int s = 1; s < count; ++s) {
      const float v = srcs[s][i];
      best = (v > best) | (v != v) ? v : best;
    }
    dst[i] = best;
  }
}

/// The window maxima along a row of max_pool_channels_last_rows (its
/// window rows' maxima, `row`, of pixels of c floats, c a multiple of 16):
/// output pixel x (at o + x * o_step) of window columns row + x * step +
/// k * gap, k < kw. Sixteen channels at a time as in max_of, without
/// max_of's list of sources per pixel (a
/// 4 x 16 x 128 x 128 pool took 178 µs so, 110 this way).
inline void window_columns(float* o, const float* row, int64_t ow, int64_t c, int64_t step,
                           int64_t gap, int kw, int64_t o_step) {
  for (int64_t x = 0; x < ow; ++x, row += step, o += o_step) {
    for (int64_t i = 0; i < c; i += 16) {
      const V16f best = max_keeping_nan(kw, [&](int k) { return row + k * gap + i; });
      std::memcpy(o + i, &best, sizeof best);
    }
  }
}

/// Values of float max pooling of a channels-last input with dense pixels
/// (channels contiguous, pixels c floats apart), separably: for each output
/// row, the maximum of its window rows over every pixel and channel into a
/// padded row (-inf outside the input), then for each output pixel the
/// maximum of its window's columns of that row. A 3x3 window reads each
/// value of the row 3 times instead of each input value 9 times through a
/// list of taps. NaN anywhere in a window gives NaN. Of equal values the
/// one kept may not be the window's first (only -0 beside +0 can tell),
/// as in max_pool_rows_values. Takes what max_pool_channels_last_float_values
/// lets through; false (nothing done) when the width or the window does not
/// suit.
bool max_pool_channels_last_rows(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  const Window& w = a.w;
  const Planes& g = a.g;
  const int64_t c = g.c;
  const int64_t starts = (g.ow - 1) * w.s[1] + 1;
  const int64_t span = starts + (w.k[1] - 1) * w.d[1];  // padded pixels read
  const int64_t width = std::max(span, w.p[1] + g.iw);  // padded pixels held
  if (width * c > kMaxChannelsLastRow || w.k[0] > kMaxWindowSide || w.k[1] > kMaxWindowSide) {
    return false;
  }
  const float* src = a.in.data_as<const float>();
  float* dst = a.out.data_as<float>();
  const float lowest = -std::numeric_limits<float>::infinity();
  const int64_t sw = w.s[1], dw = w.d[1];
  const int kw = static_cast<int>(w.k[1]);
  cpu::parallel_for(ctx, g.n * g.oh, (w.k[0] + w.k[1]) * c * g.iw, [&](int64_t b, int64_t e) {
    alignas(64) float row[kMaxChannelsLastRow];
    std::fill(row, row + width * c, lowest);  // the padding stays -inf
    float* interior = row + w.p[1] * c;
    const float* taps[kMaxWindowSide];
    for (int64_t item = b; item < e; ++item) {
      const int64_t oy = item % g.oh, n = item / g.oh;
      const int count = window_rows(w, g, src, n, oy, taps);
      if (count == 0) {
        std::fill(interior, interior + g.iw * c, lowest);
      } else {
        max_of(interior, taps, count, g.iw * c);
      }
      float* o = dst + n * g.out[0] + oy * g.out[2];
      if (c % 16 == 0) {
        window_columns(o, row, g.ow, c, sw * c, dw * c, kw, g.out[3]);
        continue;
      }
      for (int64_t ox = 0; ox < g.ow; ++ox, o += g.out[3]) {
        const float* p = row + ox * sw * c;
        for (int kx = 0; kx < kw; ++kx) taps[kx] = p + kx * dw * c;
        max_of(o, taps, kw, c);
      }
    }
  });
  return true;
}

}  // namespace

bool max_pool_channels_last_float_values(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  const Planes& g = a.g;
  if (a.in.dtype() != DType::Float32 || !g.channels_inner || g.in[1] != 1 || g.out[1] != 1 ||
      g.in[3] != g.c) {
    return false;
  }
  return small_window_values(ctx, a) || max_pool_channels_last_rows(ctx, a);
}

}  // namespace pterun::cpu::pool
