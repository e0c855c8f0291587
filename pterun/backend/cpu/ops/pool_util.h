#pragma once

// What the CPU's 2-D pooling and resampling loops share: offsets under
// (N, C, H, W) strides and a loop over outputs in the input's memory order.
// The geometry comes from the front-ends (pterun/ops/pool.h).

#include <array>
#include <cstdint>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/kernels/kernel.h"
#include "pterun/ops/pool.h"

namespace pterun::cpu::pool {

using kernels::KernelContext;
using ops::Planes;
using ops::Window;

/// Values of integer max pooling of a channels-last input and output
/// (pool_max_integers.cpp); false (nothing done) for any other dtype or
/// layout.
bool max_pool_channels_last_integer_values(KernelContext& ctx, const ops::MaxPoolArgs& a);

/// Values of float max pooling of a channels-last input with dense pixels
/// (pool_max_channels_last.cpp): small square windows, or any window whose
/// rows fit a stack buffer; false (nothing done) for any other dtype,
/// layout or window.
bool max_pool_channels_last_float_values(KernelContext& ctx, const ops::MaxPoolArgs& a);

/// Offset of (n, c, y, x) under (N, C, H, W) strides `s`.
inline int64_t offset(const std::array<int64_t, 4>& s, int64_t n, int64_t c, int64_t y, int64_t x) {
  return n * s[0] + c * s[1] + y * s[2] + x * s[3];
}

/// Calls f(in_plane, n, c, oy, ox) for every output element, where in_plane
/// is the offset of the input's (n, c) plane, in the input's memory order:
/// planes outermost for NCHW, channels innermost for channels-last.
template <typename F>
void for_each_output(const KernelContext& ctx, const Planes& g, int64_t cost, F&& f) {
  if (g.channels_inner) {
    cpu::parallel_for(ctx, g.n * g.oh * g.ow, cost * g.c, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, n = i / (g.ow * g.oh);
        for (int64_t c = 0; c < g.c; ++c) f(n * g.in[0] + c * g.in[1], n, c, oy, ox);
      }
    });
    return;
  }
  cpu::parallel_for(ctx, g.n * g.c, cost * g.oh * g.ow, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t n = i / g.c, c = i % g.c;
      const int64_t in_plane = n * g.in[0] + c * g.in[1];
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        for (int64_t ox = 0; ox < g.ow; ++ox) f(in_plane, n, c, oy, ox);
      }
    }
  });
}

/// The rows of image n of a float channels-last input that output row oy's
/// window reads inside the input, into `rows`; returns how many.
inline int window_rows(const Window& w, const Planes& g, const float* src, int64_t n, int64_t oy,
                       const float** rows) {
  int count = 0;
  for (int64_t ky = 0; ky < w.k[0]; ++ky) {
    const int64_t y = oy * w.s[0] - w.p[0] + ky * w.d[0];
    if (y >= 0 && y < g.ih) rows[count++] = src + n * g.in[0] + y * g.in[2];
  }
  return count;
}

// Compute functions of the pool table (pool.cpp), defined in pool_max.cpp
// and pool_resample.cpp.
void max_pool2d(KernelContext& ctx, const ops::MaxPoolArgs& a);
void max_pool2d_values(KernelContext& ctx, const ops::MaxPoolArgs& a);
void argmax_pool2d(KernelContext& ctx, const ops::ArgMaxPoolArgs& a);
void upsample_nearest(KernelContext& ctx, const ops::ResampleArgs& a);
void upsample_bilinear(KernelContext& ctx, const ops::ResampleArgs& a);

}  // namespace pterun::cpu::pool
