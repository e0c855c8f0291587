// The depthwise part of the channels-last f32 convolution
// (conv_f32_nhwc.cpp describes it): vectors of channels, four pixels per
// step.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/ops/conv_f32_nhwc_shared.h"
#include "pterun/backend/cpu/ops/plan_cache.h"

namespace pterun::cpu::nhwc {
namespace {

// ---- depthwise: vectors of channels ---------------------------------------------------------

struct DepthwisePlan {
  const ConvProblem* p;
  int64_t padded;  // channels rounded up to whole vectors (the packed row)
  const float* w;  // [tap][padded]
  const float* bias;
  Epilogue e;
  // Output columns [x_lo, x_hi) read every kernel column inside the image.
  int64_t x_lo, x_hi;
};

/// Channels [c0, c0 + width) of output row (n, y), width <= L lanes of V
/// (a narrower last group goes lane by lane through a vector's worth of
/// scratch).
template <typename V>
void depthwise_channels(const DepthwisePlan& dp, int64_t n, int64_t y, int64_t c0, int64_t width) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  const ConvProblem& p = *dp.p;
  const int64_t* is = p.in_strides;
  const int64_t* os = p.out_strides;
  const int64_t* rs = p.residual_strides;
  const float* image = static_cast<const float*>(p.in) + n * is[0] + c0;
  float* orow = static_cast<float*>(p.out) + n * os[0] + y * os[2] + c0;
  const float* rrow = p.residual != nullptr
                          ? static_cast<const float*>(p.residual) + n * rs[0] + y * rs[2] + c0
                          : nullptr;
  const bool whole = width == L;
  auto in_at = [&](const float* at) {
    if (whole) return load<V>(at);
    float part[L] = {};
    for (int64_t l = 0; l < width; ++l) part[l] = at[l];
    return load<V>(part);
  };
  auto out_at = [&](int64_t x, V v) {
    if (rrow != nullptr) v += in_at(rrow + x * rs[3]);
    v = finish(v, dp.e);
    float* d = orow + x * os[3];
    if (whole) return store(d, v);
    float part[L];
    store(part, v);
    for (int64_t l = 0; l < width; ++l) d[l] = part[l];
  };
  // Kernel rows inside the image.
  int64_t ky0 = 0, ky1 = 0;
  for (int64_t ky = 0; ky < p.kh; ++ky) {
    const int64_t iy = y * p.stride[0] - p.pad[0] + ky * p.dilation[0];
    if (iy < 0 || iy >= p.ih) continue;
    if (ky1 == 0) ky0 = ky;
    ky1 = ky + 1;
  }
  const V b = load<V>(dp.bias + c0);
  const int64_t sw = p.stride[1], pw = p.pad[1], dw = p.dilation[1];
  const int64_t x_lo = dp.x_lo, x_hi = dp.x_hi;
  // A pixel near the left or right edge: its kernel columns inside the
  // image, [kx0, kx1), found once, then no test per tap.
  const int64_t kw = p.kw, iw = p.iw, col = is[3], row_stride = is[2], padded = dp.padded;
  const float* first_row = image + (y * p.stride[0] - p.pad[0]) * row_stride;
  const int64_t row_step = p.dilation[0] * row_stride;
  auto one = [&](int64_t x) {
    const int64_t ix0 = x * sw - pw;
    int64_t kx0 = 0, kx1 = kw;
    while (kx0 < kx1 && ix0 + kx0 * dw < 0) ++kx0;
    while (kx1 > kx0 && ix0 + (kx1 - 1) * dw >= iw) --kx1;
    V acc = b;
    for (int64_t ky = ky0; ky < ky1; ++ky) {
      const float* row = first_row + ky * row_step + ix0 * col;
      const float* wk = dp.w + ky * kw * padded + c0;
      for (int64_t kx = kx0; kx < kx1; ++kx) {
        acc += in_at(row + kx * dw * col) * load<V>(wk + kx * padded);
      }
    }
    out_at(x, acc);
  };
  for (int64_t x = 0; x < x_lo; ++x) one(x);
  int64_t x = x_lo;
  if (whole && p.kh == 3 && p.kw == 3 && p.dilation[0] == 1 && dw == 1 && ky0 == 0 && ky1 == 3) {
    // 3x3, every kernel row inside the image: the nine taps' weights stay
    // in registers across the row, eight pixels a step.
    V w[9];
    for (int t = 0; t < 9; ++t) w[t] = load<V>(dp.w + t * dp.padded + c0);
    const int64_t px = sw * col;
    const float* rows[3];
    for (int ky = 0; ky < 3; ++ky) rows[ky] = image + (y * p.stride[0] - p.pad[0] + ky) * is[2];
    auto pixels = [&]<int P>(int64_t at) {
      V acc[P];
      for (int j = 0; j < P; ++j) acc[j] = b;
      const int64_t first = (at * sw - pw) * col;
#pragma GCC unroll 3
      for (int ky = 0; ky < 3; ++ky) {
        const float* r = rows[ky] + first;
#pragma GCC unroll 3
        for (int kx = 0; kx < 3; ++kx) {
#pragma GCC unroll 8
          for (int j = 0; j < P; ++j) acc[j] += load<V>(r + j * px + kx * col) * w[ky * 3 + kx];
        }
      }
      for (int j = 0; j < P; ++j) out_at(at + j, acc[j]);
    };
    for (; x + 8 <= x_hi; x += 8) pixels.template operator()<8>(x);
    for (; x + 4 <= x_hi; x += 4) pixels.template operator()<4>(x);
  }
  for (; x + 4 <= x_hi; x += 4) {
    V a0 = b, a1 = b, a2 = b, a3 = b;
    const int64_t step = sw * is[3];
    for (int64_t ky = ky0; ky < ky1; ++ky) {
      const float* row =
          image + (y * p.stride[0] - p.pad[0] + ky * p.dilation[0]) * is[2] + (x * sw - pw) * is[3];
      const float* wk = dp.w + ky * p.kw * dp.padded + c0;
      for (int64_t kx = 0; kx < p.kw; ++kx, row += dw * is[3], wk += dp.padded) {
        const V w = load<V>(wk);
        a0 += in_at(row) * w;
        a1 += in_at(row + step) * w;
        a2 += in_at(row + 2 * step) * w;
        a3 += in_at(row + 3 * step) * w;
      }
    }
    out_at(x, a0);
    out_at(x + 1, a1);
    out_at(x + 2, a2);
    out_at(x + 3, a3);
  }
  for (; x < p.ow; ++x) one(x);
}

void depthwise_rows(const DepthwisePlan& dp, int64_t begin, int64_t end) {
  const ConvProblem& p = *dp.p;
  int64_t n = begin / p.oh, y = begin % p.oh;  // row, stepped
  for (int64_t row = begin; row < end; ++row, y = y + 1 == p.oh ? (++n, 0) : y + 1) {
    int64_t c = 0;
    for (; c + kLanes <= p.oc; c += kLanes) {
      if constexpr (kWide) {
        depthwise_channels<V16>(dp, n, y, c, 16);
      } else {
        depthwise_channels<V8>(dp, n, y, c, 8);
      }
    }
    if (kWide && c + 8 <= p.oc) {
      depthwise_channels<V8>(dp, n, y, c, 8);
      c += 8;
    }
    if (c < p.oc) depthwise_channels<V8>(dp, n, y, c, p.oc - c);
  }
}

}  // namespace

bool depthwise(KernelContext& ctx, const ConvProblem& p, const Epilogue& e) {
  DepthwisePlan dp;
  dp.p = &p;
  dp.e = e;
  const int64_t taps = p.kh * p.kw;
  // Room for a whole vector of eight past the last channel (the tail reads
  // the packed weights and the bias as vectors).
  dp.padded = (p.oc + kLanes - 1) / kLanes * kLanes + 8;
  if (taps * dp.padded > kMaxPackedWeights) return false;
  PlanKey key;
  key.add({2, p.oc, p.kh, p.kw});
  thread_local PlanCache<Packed> cache(64);
  Packed& pk = packed_weights(cache, key, p, taps * dp.padded, [&](float* w) {
    const float* weight = static_cast<const float*>(p.weight);
    const int64_t* ws = p.w_strides;
    std::fill(w, w + taps * dp.padded, 0.0f);
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        for (int64_t c = 0; c < p.oc; ++c) {
          w[(ky * p.kw + kx) * dp.padded + c] = weight[c * ws[0] + ky * ws[2] + kx * ws[3]];
        }
      }
    }
  });
  copy_bias(p, pk, dp.padded);
  dp.w = pk.w.data();
  dp.bias = pk.bias.data();
  const int64_t sw = p.stride[1], pw = p.pad[1];
  const int64_t reach = (p.kw - 1) * p.dilation[1];
  dp.x_lo = std::min(p.ow, (pw + sw - 1) / sw);
  dp.x_hi = std::max(
      dp.x_lo, p.iw - 1 - reach + pw < 0 ? 0 : std::min(p.ow, (p.iw - 1 - reach + pw) / sw + 1));
  const int64_t rows = p.n * p.oh;
  const double work = static_cast<double>(rows) * p.ow * p.oc * taps;
  auto body = [&](int64_t b, int64_t end) { depthwise_rows(dp, b, end); };
  if (ctx.num_threads > 1 && work >= kParallelDepthwiseWork && rows > 1) {
    // A depthwise multiply-add counts as four dense ones (kParallelWork).
    cpu::parallel_for(ctx, rows, static_cast<int64_t>(4 * work / static_cast<double>(rows)), body);
  } else {
    body(0, rows);
  }
  return true;
}

}  // namespace pterun::cpu::nhwc
