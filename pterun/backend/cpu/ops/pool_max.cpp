// max_pool2d_with_indices: values and torch's flat H*W indices.

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "pterun/backend/cpu/ops/pool_util.h"
#include "pterun/kernels/common/dtype_util.h"

// The 32-byte vectors below never cross a translation unit, so GCC's note
// about their ABI without AVX does not apply.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pterun::cpu::pool {
namespace {

/// Takes v over (best, index) when it is larger or NaN (the last NaN of a
/// window wins, as in torch); branch-free so the loops vectorise.
template <typename C>
inline void take_max(C v, int64_t i, C& best, int64_t& index) {
  bool take = v > best;
  if constexpr (std::is_floating_point_v<C>) take = take || v != v;
  best = take ? v : best;
  index = take ? i : index;
}

// Vectors of L floats / int32 (AVX or SSE registers). GCC ignores
// vector_size in alias templates, hence one typedef per width.
typedef float V8f __attribute__((vector_size(32)));
typedef int32_t V8i __attribute__((vector_size(32)));
typedef float V4f __attribute__((vector_size(16)));
typedef int32_t V4i __attribute__((vector_size(16)));
template <int L>
struct Vec;
template <>
struct Vec<8> {
  using F = V8f;
  using I = V8i;
};
template <>
struct Vec<4> {
  using F = V4f;
  using I = V4i;
};
template <int L>
using VecF = typename Vec<L>::F;
template <int L>
using VecI = typename Vec<L>::I;

/// Even (odd) lanes of the 2L floats at p.
template <int L>
inline VecF<L> lanes(const float* p, int odd) {
  VecF<L> a, b;
  std::memcpy(&a, p, sizeof a);
  std::memcpy(&b, p + L, sizeof b);
  if constexpr (L == 8) {
    return odd ? __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15)
               : __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
  } else {
    return odd ? __builtin_shufflevector(a, b, 1, 3, 5, 7)
               : __builtin_shufflevector(a, b, 0, 2, 4, 6);
  }
}

/// Eight floats from unaligned memory.
inline V8f lanes_load(const float* p) {
  V8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Output columns [ox, ox + L) of 2x2, stride-2 windows without padding on
/// contiguous rows r0 / r1 (rows y0, y0 + 1 of a plane iw wide). Visits the
/// candidates in torch's order and keeps the first maximum (or last NaN).
template <int L>
inline void max2x2_s2(const float* r0, const float* r1, int64_t y0, int64_t iw, int64_t ox,
                      float* out, int64_t* idx, int64_t idx_w) {
  const int64_t x = 2 * ox;
  const VecF<L> c[4] = {lanes<L>(r0 + x, 0), lanes<L>(r0 + x, 1), lanes<L>(r1 + x, 0),
                        lanes<L>(r1 + x, 1)};
  VecF<L> best = c[0];
  VecI<L> winner = {};
  for (int32_t k = 1; k < 4; ++k) {
    const VecI<L> take = (c[k] > best) | (c[k] != c[k]);
    best = take ? c[k] : best;
    winner = take ? VecI<L>{} + k : winner;
  }
  std::memcpy(out + ox, &best, sizeof best);
  for (int l = 0; l < L; ++l) {
    const int64_t y = y0 + (winner[l] >> 1), xx = x + 2 * l + (winner[l] & 1);
    idx[(ox + l) * idx_w] = y * iw + xx;
  }
}

/// The 2x2, stride-2 windows of a row pair for output columns 0, 1, ... in
/// vectors while they stay inside the row (none with left padding pw).
/// Returns the first column left to the caller.
inline int64_t max2x2_s2_row(const float* r0, const float* r1, int64_t y0, int64_t iw, int64_t pw,
                             int64_t ow, float* out, int64_t* idx, int64_t idx_w) {
  if (pw != 0) return 0;  // left-padded rows take the general loop
  int64_t ox = 0;
  for (; ox + 8 <= ow && 2 * (ox + 8) <= iw; ox += 8)
    max2x2_s2<8>(r0, r1, y0, iw, ox, out, idx, idx_w);
  for (; ox + 4 <= ow && 2 * (ox + 4) <= iw; ox += 4)
    max2x2_s2<4>(r0, r1, y0, iw, ox, out, idx, idx_w);
  return ox;
}

/// Max pooling of one (n, c) plane. K > 0 means K x K windows without
/// dilation: those lying fully inside the plane take an unrolled loop.
template <int K, typename T, typename C>
void max_pool_plane(const Planes& g, const Window& w, const T* src, T* dst, int64_t* idx,
                    const std::array<int64_t, 4>& is, const int64_t* x_first, const int64_t* x_end,
                    C lowest) {
  // Locals, not members: the int64 index stores could alias those.
  const int64_t ih = g.ih, iw = g.iw, oh = g.oh, ow = g.ow;
  const int64_t in_h = g.in[2], in_w = g.in[3], out_h = g.out[2], out_w = g.out[3];
  const int64_t idx_h = is[2], idx_w = is[3];
  const int64_t sh = w.s[0], sw = w.s[1], ph = w.p[0], pw = w.p[1], dh = w.d[0], dw = w.d[1];
  const int64_t kh = w.k[0];
  for (int64_t oy = 0; oy < oh; ++oy) {
    const int64_t y_start = oy * sh - ph;
    int64_t y0 = y_start;
    while (y0 < 0) y0 += dh;
    const int64_t y1 = std::min(y_start + (kh - 1) * dh + 1, ih);
    const bool rows_inside = y_start >= 0 && y_start + K <= ih;
    T* out_row = dst + oy * out_h;
    int64_t* idx_row = idx + oy * idx_h;
    int64_t ox = 0;
    if constexpr (K == 2 && std::is_same_v<T, float>) {
      // Stride-2 2x2 windows over contiguous rows, 8 outputs at a time.
      if (sw == 2 && in_w == 1 && out_w == 1 && rows_inside) {
        ox = max2x2_s2_row(src + y0 * in_h, src + (y0 + 1) * in_h, y0, iw, pw, ow, out_row, idx_row,
                           idx_w);
      }
    }
    for (; ox < ow; ++ox) {
      C best = lowest;
      int64_t index;
      const int64_t x_start = ox * sw - pw;
      if (K > 0 && rows_inside && x_start >= 0 && x_start + K <= iw) {
        const int64_t base = y0 * iw + x_start;
        const T* window = src + y0 * in_h + x_start * in_w;
        index = base;
        if (in_w == 1) {  // rows contiguous (NCHW): constant offsets
          for (int ky = 0; ky < K; ++ky) {
            for (int kx = 0; kx < K; ++kx) {
              take_max(static_cast<C>(window[ky * in_h + kx]), base + ky * iw + kx, best, index);
            }
          }
        } else {
          for (int ky = 0; ky < K; ++ky) {
            for (int kx = 0; kx < K; ++kx) {
              take_max(static_cast<C>(window[ky * in_h + kx * in_w]), base + ky * iw + kx, best,
                       index);
            }
          }
        }
      } else {
        index = y0 * iw + x_first[ox];
        for (int64_t y = y0; y < y1; y += dh) {
          const T* row = src + y * in_h;
          for (int64_t x = x_first[ox]; x < x_end[ox]; x += dw) {
            take_max(static_cast<C>(row[x * in_w]), y * iw + x, best, index);
          }
        }
      }
      out_row[ox * out_w] = kernels::convert<T>(best);
      idx_row[ox * idx_w] = index;
    }
  }
}

/// Max pooling with flat H*W indices. Candidates of a window are visited in
/// torch's order (rows, then columns) and ties keep the first. Two loop
/// orders: across output columns of one plane row, or, for channels-last
/// input, across channels of one output pixel.
template <typename T>
void max_pool(KernelContext& ctx, const Planes& g, const Window& w, const T* src, T* dst,
              int64_t* idx, const std::array<int64_t, 4>& is) {
  using C = kernels::ComputeOf<T>;
  constexpr int64_t kBlock = 256;
  const C lowest = std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                        : std::numeric_limits<C>::lowest();
  // First in-bounds input coordinate of window o (the index an all-lowest
  // window reports).
  auto first = [](int64_t o, int64_t s, int64_t p, int64_t d) {
    int64_t v = o * s - p;
    while (v < 0) v += d;
    return v;
  };
  const int64_t cost = w.k[0] * w.k[1];
  if (g.channels_inner) {
    cpu::parallel_for(ctx, g.n * g.oh * g.ow, cost * g.c, [&](int64_t b, int64_t e) {
      alignas(64) C best[kBlock];
      alignas(64) int64_t index[kBlock];
      for (int64_t item = b; item < e; ++item) {
        const int64_t ox = item % g.ow, oy = (item / g.ow) % g.oh, n = item / (g.ow * g.oh);
        const int64_t y0 = first(oy, w.s[0], w.p[0], w.d[0]);
        const int64_t x0 = first(ox, w.s[1], w.p[1], w.d[1]);
        const int64_t y1 = std::min(oy * w.s[0] - w.p[0] + (w.k[0] - 1) * w.d[0] + 1, g.ih);
        const int64_t x1 = std::min(ox * w.s[1] - w.p[1] + (w.k[1] - 1) * w.d[1] + 1, g.iw);
        for (int64_t c0 = 0; c0 < g.c; c0 += kBlock) {
          const int64_t nc = std::min(kBlock, g.c - c0);
          std::fill(best, best + nc, lowest);
          std::fill(index, index + nc, y0 * g.iw + x0);
          for (int64_t y = y0; y < y1; y += w.d[0]) {
            for (int64_t x = x0; x < x1; x += w.d[1]) {
              const T* px = src + n * g.in[0] + c0 + y * g.in[2] + x * g.in[3];
              const int64_t i = y * g.iw + x;
              for (int64_t c = 0; c < nc; ++c) {
                take_max(static_cast<C>(px[c]), i, best[c], index[c]);
              }
            }
          }
          T* out_px = dst + offset(g.out, n, c0, oy, ox);
          int64_t* idx_px = idx + offset(is, n, c0, oy, ox);
          const int64_t out_c = g.out[1], idx_c = is[1];
          for (int64_t c = 0; c < nc; ++c) out_px[c * out_c] = kernels::convert<T>(best[c]);
          for (int64_t c = 0; c < nc; ++c) idx_px[c * idx_c] = index[c];
        }
      }
    });
    return;
  }
  // Window columns of every output column, computed once: [x_first, x_end)
  // in steps of the dilation.
  int64_t* x_first = static_cast<int64_t*>(ctx.scratch(2 * g.ow * sizeof(int64_t)));
  int64_t* x_end = x_first + g.ow;
  for (int64_t ox = 0; ox < g.ow; ++ox) {
    x_first[ox] = first(ox, w.s[1], w.p[1], w.d[1]);
    x_end[ox] = std::min(ox * w.s[1] - w.p[1] + (w.k[1] - 1) * w.d[1] + 1, g.iw);
  }
  auto planes = [&]<int K>() {
    cpu::parallel_for(ctx, g.n * g.c, cost * g.oh * g.ow, [&](int64_t b, int64_t e) {
      for (int64_t plane = b; plane < e; ++plane) {
        const int64_t n = plane / g.c, c = plane % g.c;
        max_pool_plane<K>(g, w, src + n * g.in[0] + c * g.in[1], dst + offset(g.out, n, c, 0, 0),
                          idx + offset(is, n, c, 0, 0), is, x_first, x_end, lowest);
      }
    });
  };
  // Unrolled windows for the usual 2x2 and 3x3 kernels without dilation.
  const bool plain = w.d[0] == 1 && w.d[1] == 1 && w.k[0] == w.k[1];
  if (plain && w.k[0] == 2) {
    planes.template operator()<2>();
  } else if (plain && w.k[0] == 3) {
    planes.template operator()<3>();
  } else {
    planes.template operator()<0>();
  }
}

void run_with_indices(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  const char* op = "aten::max_pool2d_with_indices.out";
  kernels::visit(a.in.dtype(), kernels::Family::RealHBF16, op, [&]<typename T>() {
    max_pool<T>(ctx, a.g, a.w, a.in.data_as<T>(), a.out.data_as<T>(), a.indices.data_as<int64_t>(),
                a.is);
  });
}

/// The largest of four floats, NaN if any is NaN; no branches.
inline float max4(float a, float b, float c, float d) {
  const float ab = a > b ? a : b, cd = c > d ? c : d;
  const bool nan = (a != a) | (b != b) | (c != c) | (d != d);
  return nan ? a + b + c + d : (ab > cd ? ab : cd);
}

/// max4 of the 2x2 windows of output columns [0, L) over rows r0 / r1.
template <int L>
inline void max2x2_values(const float* r0, const float* r1, float* out) {
  const VecF<L> c[4] = {lanes<L>(r0, 0), lanes<L>(r0, 1), lanes<L>(r1, 0), lanes<L>(r1, 1)};
  VecF<L> best = c[0];
  VecI<L> nan = c[0] != c[0];
  for (int k = 1; k < 4; ++k) {
    best = c[k] > best ? c[k] : best;
    nan |= c[k] != c[k];
  }
  best = nan ? c[0] + c[1] + c[2] + c[3] : best;
  std::memcpy(out, &best, sizeof best);
}

/// Values of float 2x2, stride-2 windows that lie inside planes with
/// contiguous rows; false (nothing done) for any other pooling.
bool max_pool_2x2_values(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  const Window& w = a.w;
  const Planes& g = a.g;
  if (a.in.dtype() != DType::Float32 || w.k[0] != 2 || w.k[1] != 2 || w.s[0] != 2 || w.s[1] != 2 ||
      w.p[0] != 0 || w.p[1] != 0 || w.d[0] != 1 || w.d[1] != 1 || g.channels_inner ||
      g.in[3] != 1 || g.out[3] != 1 || 2 * g.oh > g.ih || 2 * g.ow > g.iw) {
    return false;
  }
  const float* src = a.in.data_as<const float>();
  float* dst = a.out.data_as<float>();
  cpu::parallel_for(ctx, g.n * g.c, 4 * g.oh * g.ow, [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane) {
      const int64_t n = plane / g.c, c = plane % g.c;
      const float* in = src + n * g.in[0] + c * g.in[1];
      float* o = dst + n * g.out[0] + c * g.out[1];
      for (int64_t oy = 0; oy < g.oh; ++oy, in += 2 * g.in[2], o += g.out[2]) {
        const float* r1 = in + g.in[2];
        int64_t ox = 0;
        for (; ox + 8 <= g.ow; ox += 8) max2x2_values<8>(in + 2 * ox, r1 + 2 * ox, o + ox);
        for (; ox + 4 <= g.ow; ox += 4) max2x2_values<4>(in + 2 * ox, r1 + 2 * ox, o + ox);
        for (; ox < g.ow; ++ox) {
          o[ox] = max4(in[2 * ox], in[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]);
        }
      }
    }
  });
  return true;
}

/// Takes v over best when it is larger or NaN: a NaN, once taken, stays.
/// Branch-free (a data-dependent branch here mispredicts on every other
/// element).
template <typename V>
inline V take_max_value(V best, V v) {
  return (v > best) | (v != v) ? v : best;
}

/// dst[x] = take_max_value(dst[x], src[x]) for x in [0, n), or a copy when
/// `first`.
inline void max_row_into(float* dst, const float* src, int64_t n, bool first) {
  if (first) {
    std::copy(src, src + n, dst);
    return;
  }
  int64_t x = 0;
  for (; x + 8 <= n; x += 8) {
    const V8f m = take_max_value(lanes_load(dst + x), lanes_load(src + x));
    std::memcpy(dst + x, &m, sizeof m);
  }
  for (; x < n; ++x) {
    const V4f m = take_max_value(V4f{} + dst[x], V4f{} + src[x]);
    dst[x] = m[0];
  }
}

/// The maximum of a window over K vectors of eight channels, NaN if any
/// value was NaN (as take_max_value), with only a max on the dependency
/// chain of each vector.
template <int K>
struct WindowMax {
  V8f best[K];
  V8i nan[K];
  WindowMax() {
    for (int k = 0; k < K; ++k) {
      best[k] = V8f{} - std::numeric_limits<float>::infinity();
      nan[k] = V8i{};
    }
  }
  void take(const float* p) {
    for (int k = 0; k < K; ++k) {
      const V8f v = lanes_load(p + 8 * k);
      best[k] = v > best[k] ? v : best[k];
      nan[k] |= v != v;
    }
  }
  void store(float* out) const {
    for (int k = 0; k < K; ++k) {
      const V8f r = nan[k] != 0 ? V8f{} + std::numeric_limits<float>::quiet_NaN() : best[k];
      std::memcpy(out + 8 * k, &r, sizeof r);
    }
  }
};

/// Largest window max_pool_channels_last_values takes (a pointer per tap).
constexpr int64_t kMaxChannelsLastTaps = 256;

/// Widest row (padded) max_pool_rows_values handles with its stack buffer.
constexpr int64_t kMaxPoolRow = 4096;

/// Values of float max pooling (any window, stride, padding, dilation)
/// over planes with contiguous rows: for each output row, the maximum of
/// its window rows column by column into a padded row (-inf outside the
/// input), then the maximum over each window's columns at every padded
/// column, of which every stride-th is an output. NaN anywhere in a window
/// gives NaN. False (nothing done) when the layout or the width does not
/// suit.
bool max_pool_rows_values(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  const Window& w = a.w;
  const Planes& g = a.g;
  const int64_t starts = (g.ow - 1) * w.s[1] + 1;       // columns where a window may start
  const int64_t span = starts + (w.k[1] - 1) * w.d[1];  // padded columns read
  const int64_t width = std::max(span, w.p[1] + g.iw) + 8;
  if (a.in.dtype() != DType::Float32 || g.channels_inner || g.in[3] != 1 || g.out[3] != 1 ||
      width > kMaxPoolRow) {
    return false;
  }
  const float* src = a.in.data_as<const float>();
  float* dst = a.out.data_as<float>();
  const float lowest = -std::numeric_limits<float>::infinity();
  const int64_t sw = w.s[1], kw = w.k[1], dw = w.d[1];
  cpu::parallel_for(ctx, g.n * g.c, w.k[0] * w.k[1] * g.oh * g.ow, [&](int64_t b, int64_t e) {
    alignas(64) float row[kMaxPoolRow];
    alignas(64) float window[kMaxPoolRow];
    std::fill(row, row + width, lowest);
    float* interior = row + w.p[1];
    for (int64_t plane = b; plane < e; ++plane) {
      const int64_t n = plane / g.c, c = plane % g.c;
      const float* in = src + n * g.in[0] + c * g.in[1];
      float* o = dst + n * g.out[0] + c * g.out[1];
      for (int64_t oy = 0; oy < g.oh; ++oy, o += g.out[2]) {
        bool first = true;
        for (int64_t ky = 0; ky < w.k[0]; ++ky) {
          const int64_t y = oy * w.s[0] - w.p[0] + ky * w.d[0];
          if (y < 0 || y >= g.ih) continue;
          max_row_into(interior, in + y * g.in[2], g.iw, first);
          first = false;
        }
        if (first) std::fill(interior, interior + g.iw, lowest);
        // The window starting at every padded column, eight at a time.
        for (int64_t x = 0; x < starts; x += 8) {
          V8f best = lanes_load(row + x);
          for (int64_t kx = 1; kx < kw; ++kx)
            best = take_max_value(best, lanes_load(row + x + kx * dw));
          std::memcpy(window + x, &best, sizeof best);
        }
        for (int64_t ox = 0; ox < g.ow; ++ox) o[ox] = window[ox * sw];
      }
    }
  });
  return true;
}

/// Values of float max pooling of a channels-last input: for each output
/// pixel, the maximum over its window's pixels of all channels at once.
bool max_pool_channels_last_values(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  const Window& w = a.w;
  const Planes& g = a.g;
  if (a.in.dtype() != DType::Float32 || !g.channels_inner || g.in[1] != 1 || g.out[1] != 1 ||
      w.k[0] * w.k[1] > kMaxChannelsLastTaps) {
    return false;
  }
  const float* src = a.in.data_as<const float>();
  float* dst = a.out.data_as<float>();
  const float lowest = -std::numeric_limits<float>::infinity();
  // Output rows over the threads; per row, the window rows inside the input
  // once, and per pixel its taps (without checks where its columns are
  // all inside).
  cpu::parallel_for(ctx, g.n * g.oh, w.k[0] * w.k[1] * g.c * g.ow, [&](int64_t b, int64_t e) {
    const float* rows[kMaxChannelsLastTaps];
    const float* taps[kMaxChannelsLastTaps];
    for (int64_t item = b; item < e; ++item) {
      const int64_t oy = item % g.oh, n = item / g.oh;
      const int64_t row_count = window_rows(w, g, src, n, oy, rows);
      float* o = dst + n * g.out[0] + oy * g.out[2];
      for (int64_t ox = 0; ox < g.ow; ++ox, o += g.out[3]) {
        const int64_t x0 = ox * w.s[1] - w.p[1];
        const bool inside = x0 >= 0 && x0 + (w.k[1] - 1) * w.d[1] < g.iw;
        // The window's taps inside the input (the rest are -inf).
        int64_t count = 0;
        for (int64_t r = 0; r < row_count; ++r) {
          for (int64_t kx = 0; kx < w.k[1]; ++kx) {
            const int64_t x = x0 + kx * w.d[1];
            if (inside || (x >= 0 && x < g.iw)) taps[count++] = rows[r] + x * g.in[3];
          }
        }
        // Channels in registers across the taps, four vectors of eight at a
        // time, then two, then one: the running maximum is one max per tap (x86's max
        // keeps the old value when the new one is NaN) and NaN is tracked
        // beside it, so the chain a tap waits on is a single instruction.
        int64_t c = 0;
        for (; c + 32 <= g.c; c += 32) {
          WindowMax<4> m;
          for (int64_t t = 0; t < count; ++t) m.take(taps[t] + c);
          m.store(o + c);
        }
        for (; c + 16 <= g.c; c += 16) {
          WindowMax<2> m;
          for (int64_t t = 0; t < count; ++t) m.take(taps[t] + c);
          m.store(o + c);
        }
        for (; c + 8 <= g.c; c += 8) {
          WindowMax<1> m;
          for (int64_t t = 0; t < count; ++t) m.take(taps[t] + c);
          m.store(o + c);
        }
        if (c < g.c) {
          std::fill(o + c, o + g.c, lowest);
          for (int64_t t = 0; t < count; ++t) max_row_into(o + c, taps[t] + c, g.c - c, false);
        }
      }
    }
  });
  return true;
}

}  // namespace

// XNNPACK's argmax pooling (ops::ArgMaxPoolArgs): border pixels stand in
// for positions outside the input, windows are read column by column and
// the first strictly largest value wins.
void argmax_pool2d(KernelContext& ctx, const ops::ArgMaxPoolArgs& a) {
  const char* op = "xnnpack::argmax_pooling2d";
  const Planes& g = a.g;
  const Window& w = a.w;
  const bool wide = a.indices.dtype() == DType::Int64;
  kernels::visit(a.in.dtype(), kernels::Family::FloatHBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    const T* src = a.in.data_as<const T>();
    T* dst = a.out.data_as<T>();
    for_each_output(ctx, g, w.k[0] * w.k[1],
                    [&](int64_t in_plane, int64_t n, int64_t c, int64_t oy, int64_t ox) {
                      const int64_t y_start = oy * w.k[0] - w.p[0];
                      const int64_t x_start = ox * w.k[1] - w.p[1];
                      C best = C(0);
                      int64_t index = 0;
                      for (int64_t px = 0; px < w.k[1]; ++px) {
                        const int64_t x = std::clamp<int64_t>(x_start + px, 0, g.iw - 1);
                        for (int64_t py = 0; py < w.k[0]; ++py) {
                          const int64_t y = std::clamp<int64_t>(y_start + py, 0, g.ih - 1);
                          const C v = static_cast<C>(src[in_plane + y * g.in[2] + x * g.in[3]]);
                          const int64_t k = px * w.k[0] + py;
                          if (k == 0 || v > best) {
                            best = v;
                            index = k;
                          }
                        }
                      }
                      dst[offset(g.out, n, c, oy, ox)] = kernels::convert<T>(best);
                      const int64_t at = offset(a.is, n, c, oy, ox);
                      if (wide) {
                        a.indices.data_as<int64_t>()[at] = index;
                      } else {
                        a.indices.data_as<int32_t>()[at] = static_cast<int32_t>(index);
                      }
                    });
  });
}

void max_pool2d(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  run_with_indices(ctx, a);
}

// pterun::max_pool2d_values.out (a load-time rewrite, executor/rewrite.h)
// and xnnpack::max_pooling2d: float pooling skips the indices (2x2 stride-2
// windows vectorised; other windows row by row, or for channels-last input
// row by row when its rows fit a stack buffer, else channels at once; integers of channels-last
// input likewise). Otherwise the general kernel runs, with its indices in scratch memory when the
// indices tensor has no data of its own (an XNNPACK node has no indices output).
void max_pool2d_values(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  if (max_pool_2x2_values(ctx, a) || max_pool_rows_values(ctx, a) ||
      max_pool_channels_last_float_values(ctx, a) || max_pool_channels_last_values(ctx, a) ||
      max_pool_channels_last_integer_values(ctx, a)) {
    return;
  }
  if (a.indices.data() != nullptr) {
    run_with_indices(ctx, a);
    return;
  }
  // A buffer of this thread's, grown once (steady-state calls allocate
  // nothing), for indices nobody reads, laid out contiguously.
  thread_local std::vector<int64_t> discarded;
  const auto n = static_cast<size_t>(a.out.numel());
  if (discarded.size() < n) discarded.resize(n);
  Tensor indices(DType::Int64, a.out.sizes());
  indices.set_data(discarded.data(), n * sizeof(int64_t));
  const std::array<int64_t, 4> is = {a.g.c * a.g.oh * a.g.ow, a.g.oh * a.g.ow, a.g.ow, 1};
  run_with_indices(ctx, ops::MaxPoolArgs{a.in, a.out, indices, a.w, a.g, is});
}

}  // namespace pterun::cpu::pool
