#pragma once

// The tiles of the dense channels-last f32 convolution and what its two
// drivers share: conv_f32_nhwc_dense.cpp (tiles of pixels, each with
// pointers of its own) and conv_f32_nhwc_strips.cpp (strips of one output
// row). Internal to backend/cpu/ops.

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "pterun/backend/cpu/ops/conv_f32_nhwc_shared.h"

namespace pterun::cpu::nhwc {

/// The widest vector this build uses.
using VL = std::conditional_t<kWide, V16, V8>;

/// Taps (kh * kw) the dense kernel takes: each tile keeps a pointer per tap
/// and pixel.
constexpr int64_t kMaxTaps = 64;

/// One tile: R pixels x NV vectors of output channels from `co0`.
struct Tile {
  const float* const* src;  // src[g * R + r]: pixel r's run of inputs number g
  int64_t groups, run;      // runs per pixel, floats per run
  const float* w;           // the channel block's packed weights
  int64_t block;            // floats per input channel in w (NV * lanes)
  const float* bias;        // block's bias, NV vectors
  float* const* dst;        // pixel r's output channels from co0
  const float* const* res;  // pixel r's residual from co0 (or null: none)
  int64_t lanes;            // output channels of the block that exist
  Epilogue e;
  // Strips (tile_store's kStrided): pixel r's output from co0 at dst0 + r *
  // dst_step (its residual at res0 + r * res_step), which blocks of whole
  // vectors store through instead of dst and res (GCC reloaded dst[r]
  // before every store, since a store might change it).
  float* dst0 = nullptr;
  const float* res0 = nullptr;
  int64_t dst_step = 0, res_step = 0;
};

/// The epilogue of a tile: residual, activation, stores (partial vectors
/// past the last output channel lane by lane). Blocks of whole vectors, the
/// common case, load and store with no test per vector.
template <typename V, int R, int NV, bool kStrided = false, size_t... I>
[[gnu::always_inline]] inline void tile_store(V* acc, const Tile& t, std::index_sequence<I...>) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  const bool whole = t.lanes >= NV * L;
  // Lanes of vector i of a pixel that exist.
  auto lanes = [&](size_t i) {
    return std::min<int64_t>(L, t.lanes - static_cast<int64_t>(i % NV) * L);
  };
  if (t.res != nullptr) {
    auto residual = [&](size_t i) {
      const float* r = t.res[i / NV] + (i % NV) * L;
      const int64_t n = lanes(i);
      if (n >= L) return load<V>(r);
      float part[L] = {};
      for (int64_t l = 0; l < n; ++l) part[l] = r[l];
      return load<V>(part);
    };
    if (kStrided && whole) {
      const float* const r0 = t.res0;
      const int64_t step = t.res_step;
      ((acc[I] += load<V>(r0 + static_cast<int64_t>(I / NV) * step + (I % NV) * L)), ...);
    } else if (whole) {
      ((acc[I] += load<V>(t.res[I / NV] + (I % NV) * L)), ...);
    } else {
      ((acc[I] += residual(I)), ...);
    }
  }
  // finish() with its test and bounds out of the fold (GCC left a test
  // per vector: 1% of resnet_32).
  if (t.e.hardswish) {
    ((acc[I] = conv_blocks::hardswish(acc[I])), ...);
  } else {
    conv_blocks::clamp_all(acc, t.e.lo, t.e.hi, std::index_sequence<I...>{});
  }
  if (kStrided && whole) {
    float* const d0 = t.dst0;
    const int64_t step = t.dst_step;
    (store(d0 + static_cast<int64_t>(I / NV) * step + (I % NV) * L, acc[I]), ...);
    return;
  }
  if (whole) {
    (store(t.dst[I / NV] + (I % NV) * L, acc[I]), ...);
    return;
  }
  auto put = [&](size_t i, V v) {
    float* d = t.dst[i / NV] + (i % NV) * L;
    const int64_t n = lanes(i);
    if (n >= L) {
      store(d, v);
      return;
    }
    float part[L];
    store(part, v);
    for (int64_t l = 0; l < n; ++l) d[l] = part[l];
  };
  (put(I, acc[I]), ...);
}

struct DensePlan {
  const ConvProblem* p;
  int64_t taps;  // kh * kw
  // A pixel reads `groups` runs of `run` consecutive floats: a kernel row
  // each (kw * ic floats, row mode: unit dilation and pixels of exactly ic
  // floats), or a tap each (ic floats); or, `planar` (strips over an image
  // whose channels are planes), a kernel row of each channel (kw floats,
  // the weights packed [block][ky][c][kx][lanes]).
  bool rows;
  bool planar = false;
  int64_t groups, run;
  int64_t block;   // output channels per block (NV * lanes)
  int64_t blocks;  // channel blocks
  int64_t pixels;  // n * oh * ow
  int64_t tiles;
  int64_t reach;        // input columns from a pixel's first tap to its last, less one
  int64_t column_step;  // floats between the columns of consecutive taps
  int64_t pixel_step;   // floats between the inputs of consecutive pixels of a row
  const float* w;
  const float* bias;
  const float* zeros;
  float* border;          // row mode: a slot of border_floats per thread
  int64_t border_floats;  // tile pixels x kh x run
  bool split;             // over the threads (slot parallel_thread_index())
  Epilogue e;
};

/// The tile of channel block `block` for pixels reading `groups` runs each
/// through `src`, writing `dst` and adding `res` (null: no residual), each
/// from the block's first channel.
inline Tile block_tile(const DensePlan& dp, int64_t block, int64_t groups, const float* const* src,
                       float* const* dst, const float* const* res) {
  const ConvProblem& p = *dp.p;
  const int64_t co0 = block * dp.block;
  Tile t;
  t.src = src;
  t.groups = groups;
  t.run = dp.run;
  t.w = dp.w + block * dp.taps * p.ic * dp.block;
  t.block = dp.block;
  t.bias = dp.bias + co0;
  t.dst = dst;
  t.res = res;
  t.lanes = std::min(dp.block, p.oc - co0);
  t.e = dp.e;
  return t;
}

/// A problem's data and strides as the dense kernels read them.
struct Buffers {
  const float* in;
  float* out;
  const float* residual;
  const int64_t *is, *os, *rs;
};
inline Buffers buffers(const ConvProblem& p) {
  return {static_cast<const float*>(p.in),
          static_cast<float*>(p.out),
          static_cast<const float*>(p.residual),
          p.in_strides,
          p.out_strides,
          p.residual_strides};
}

/// The input's width with the zeros of a padded copy (copy_rows): the left padding, and on the
/// right up to the last column the last pixel's last tap reads.
inline int64_t padded_width(const ConvProblem& p) {
  const int64_t reached = (p.ow - 1) * p.stride[1] - p.pad[1] + p.kw;  // columns, from 0
  return p.pad[1] + std::max(p.iw, reached);
}

/// Writes input rows [lo, hi) of images [n0, n1) of `p` into `buffer` as
/// copied_problem(p) lays them out (rows of padded_width channels-last
/// pixels, the column padding as zeros; the images hi - lo rows apart),
/// split over ctx's threads when large.
void copy_rows(const KernelContext& ctx, const ConvProblem& p, int64_t n0, int64_t n1, int64_t lo,
               int64_t hi, float* buffer);

/// Whether the layer `dp` plans (nv vectors per block of output channels)
/// runs as strips (conv_f32_nhwc_strips.cpp): every output row whole
/// strips, an input step strips are built for, every column inside the
/// input or at most one column of padding on each side (read where the
/// input lies, the taps over it left out).
bool strips_fit(const DensePlan& dp, int nv);

/// Runs the layer `given` as strips (dp planned over copied_problem(given)
/// when it `copies`, else over `given` itself, read where it lies);
/// `work` is its multiply-adds.
void dense_strips(KernelContext& ctx, const ConvProblem& given, bool copies, DensePlan& dp, int nv,
                  double work);

}  // namespace pterun::cpu::nhwc
