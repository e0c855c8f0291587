// The dense part of the channels-last f32 convolution (conv_f32_nhwc.cpp
// describes it): tiles of pixels x vectors of output channels, strips for
// layers of few input channels, and the copied input of layers with short
// kernel rows.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "pterun/backend/cpu/engine/cpu_features.h"
#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/strided_copy.h"
#include "pterun/backend/cpu/ops/conv_f32_nhwc_tiles.h"
#include "pterun/backend/cpu/ops/plan_cache.h"

namespace pterun::cpu::nhwc {
namespace {

// ---- dense: implicit GEMM over tiles of pixels ------------------------------------------------

template <typename V, int R, int NV, size_t... I>
void dense_tile_impl(const Tile& t, std::index_sequence<I...>) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  V acc[R * NV];
  ((acc[I] = load<V>(t.bias + (I % NV) * L)), ...);
  const float* wt = t.w;
  for (int64_t g = 0; g < t.groups; ++g) {
    const float* const* src = t.src + g * R;
    for (int64_t c = 0; c < t.run; ++c, wt += t.block) {
      V w[NV];
      for (int v = 0; v < NV; ++v) w[v] = load<V>(wt + v * L);
      // A float times a vector: one broadcast (AVX-512: folded into the
      // multiply-add); V{} + x would first add 0 to x, a real operation.
      ((acc[I] += src[I / NV][c] * w[I % NV]), ...);
    }
  }
  tile_store<V, R, NV>(acc, t, std::index_sequence<I...>{});
}

/// Tile shapes: with 32 registers 8 pixels x 2 vectors (or 10 x 1 for
/// layers of one vector of output channels: measured best of 6-16 pixels;
/// each pixel's input pointer wants a general register; 8 x 3 vectors of 8
/// floats for blocks of 24, three_vectors); with 16, 6 x 2 (8 x 1).
template <int NV>
constexpr int kTilePixels = kWide ? (NV == 1 ? 10 : 8) : (NV == 2 ? 6 : 8);

/// AVX-512VL gives 8-float vectors the 32 registers too (without it an
/// 8 x 3 tile would spill): blocks of 24 need it.
#if defined(__AVX512VL__)
constexpr bool kWideHalves = kWide;
#else
constexpr bool kWideHalves = false;
#endif

/// Whether output channels go in blocks of three 8-float vectors (24
/// channels) instead of two of 16: where the CPU runs a 16-float
/// multiply-add as two halves (splits_512_bit_fma), a block of 24 costs
/// three quarters of a block of 32, so layers of 17-24, 33-48, 65-72, ...
/// channels cost fewer cycles so (MobileNet's 24-channel layers ran on two
/// 16-float vectors, a quarter of the lanes empty). 8 pixels x 3 vectors
/// keep 24 accumulators of the 32 registers.
bool three_vectors(int64_t oc) {
  if (!kWideHalves || oc <= kLanes || !splits_512_bit_fma()) return false;
  return 3 * ((oc + 23) / 24) < 4 * ((oc + 31) / 32);
}

/// 8 x 1 tiles for rows a whole number of 8 pixels wide (with 32 registers):
/// every tile then lies in one row and steps its pointers (a 32-pixel stem
/// ran 28 us so against 29 in 10-pixel tiles, a 16x16 layer 24 against 25).
constexpr int kAlignedTilePixels = 8;

/// Border copies of kernel rows (floats) a tile may need in row mode.
constexpr int64_t kMaxBorderFloats = int64_t{1} << 18;

/// Longest kernel row (floats) of the layers that read a padded copy of
/// their input (copies_input), and the largest such copy.
constexpr int64_t kMaxPaddedRun = 64;
constexpr int64_t kMaxPadded = int64_t{1} << 20;

/// Most channels of an input that is not channels-last which the copy
/// takes (an image's; more are a transpose the NCHW kernel avoids).
constexpr int64_t kMaxCopiedChannels = 4;

template <typename V, int NV, int R = kTilePixels<NV>>
void dense_items(const DensePlan& dp, int64_t begin, int64_t end) {
  const ConvProblem& p = *dp.p;
  const auto [in, out, residual, is, os, rs] = buffers(p);
  const float* src[kMaxTaps * R];
  // Row mode: a pixel whose kernel rows cross the left or right border
  // reads copies of them with zeros for the padding, in this thread's slot
  // of the call's scratch.
  float* const border = dp.border + (dp.split ? parallel_thread_index() : 0) * dp.border_floats;
  float* dst[R];
  const float* res[R];
  // Pixels past the end write here and read zeros.
  alignas(64) float sink[R][NV * sizeof(V) / sizeof(float)];
  int64_t tile_ready = -1;
  // The coordinates of the pixel after the last tile set up.
  int64_t next_x = 0, next_y = 0, next_n = 0;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t tile = dp.blocks == 1 ? item : item / dp.blocks;
    const int64_t block = dp.blocks == 1 ? 0 : item % dp.blocks;
    if (tile != tile_ready) {
      // Pixel coordinates stepped from the tile's first (no divisions per
      // pixel, none per tile after the first).
      const int64_t first = tile * R;
      int64_t x = next_x, y = next_y, n = next_n;
      if (tile != tile_ready + 1 || tile_ready < 0) {
        x = first % p.ow;
        y = first / p.ow % p.oh;
        n = first / (p.ow * p.oh);
      }
      // Pixels from `run_start` on (all of their columns inside the image)
      // take run_start's pointers, a pixel step further each: no pointer
      // waits for the one just written.
      int run_start = -1;
      // Most tiles lie in one output row with every column inside: only
      // pixel 0 is worked out, the others step from it.
      const int64_t ix_first = x * p.stride[1] - p.pad[1];
      const bool one_row = x + R <= p.ow && first + R <= dp.pixels && ix_first >= 0 &&
                           ix_first + (R - 1) * p.stride[1] + dp.reach < p.iw;
      const int worked_out = one_row ? 1 : R;
      for (int r = 0; r < worked_out; ++r) {
        if (first + r >= dp.pixels) {
          for (int64_t k = 0; k < dp.groups; ++k) src[k * R + r] = dp.zeros;
          dst[r] = sink[r];
          res[r] = dp.zeros;
          continue;
        }
        if (r > 0 && ++x == p.ow) {
          x = 0;
          if (++y == p.oh) {
            y = 0;
            ++n;
          }
        }
        // Pixel r's runs: a row over the padding reads zeros; a row whose
        // columns are all inside the image (most) is one base and steps.
        const float* image = in + n * is[0];
        const int64_t ix0 = x * p.stride[1] - p.pad[1];
        const bool columns_inside = ix0 >= 0 && ix0 + dp.reach < p.iw;
        const float** at = src + r;
        dst[r] = out + n * os[0] + y * os[2] + x * os[3];
        res[r] = residual != nullptr ? residual + n * rs[0] + y * rs[2] + x * rs[3] : nullptr;
        // The next pixel of a row, both inside on the left and right: its
        // pointers are the previous pixel's, a stride further (rows over the
        // padding stay zeros).
        if (run_start >= 0 && x > 0 && columns_inside) {
          const int64_t step = (r - run_start) * dp.pixel_step;
          for (int64_t k = 0; k < dp.groups; ++k) {
            const float* base = src[k * R + run_start];
            at[k * R] = base == dp.zeros ? base : base + step;
          }
          continue;
        }
        run_start = columns_inside ? r : -1;
        if (dp.rows) {
          for (int64_t ky = 0; ky < p.kh; ++ky, at += R) {
            const int64_t iy = y * p.stride[0] - p.pad[0] + ky * p.dilation[0];
            if (iy < 0 || iy >= p.ih) {
              *at = dp.zeros;
              continue;
            }
            const float* row = image + iy * is[2];
            if (columns_inside) {
              *at = row + ix0 * p.ic;
              continue;
            }
            float* copy = border + (r * p.kh + ky) * dp.run;
            // Element by element: runs of a few channels (a stem's three)
            // cost less so than through memcpy and memset calls.
            for (int64_t kx = 0; kx < p.kw; ++kx) {
              const int64_t ix = ix0 + kx;
              float* to = copy + kx * p.ic;
              const bool inside = ix >= 0 && ix < p.iw;
              const float* from = inside ? row + ix * p.ic : nullptr;
              for (int64_t c = 0; c < p.ic; ++c) to[c] = inside ? from[c] : 0.0f;
            }
            *at = copy;
          }
          continue;
        }
        for (int64_t ky = 0; ky < p.kh; ++ky, at += p.kw * R) {
          const int64_t iy = y * p.stride[0] - p.pad[0] + ky * p.dilation[0];
          if (iy < 0 || iy >= p.ih) {
            for (int64_t kx = 0; kx < p.kw; ++kx) at[kx * R] = dp.zeros;
            continue;
          }
          const float* row = image + iy * is[2];
          if (columns_inside) {
            const float* from = row + ix0 * is[3];
            for (int64_t kx = 0; kx < p.kw; ++kx, from += dp.column_step) at[kx * R] = from;
            continue;
          }
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t ix = ix0 + kx * p.dilation[1];
            at[kx * R] = ix >= 0 && ix < p.iw ? row + ix * is[3] : dp.zeros;
          }
        }
      }
      if (one_row) {
        for (int r = 1; r < R; ++r) {
          const int64_t step = r * dp.pixel_step;
          for (int64_t k = 0; k < dp.groups; ++k) {
            const float* base = src[k * R];
            src[k * R + r] = base == dp.zeros ? base : base + step;
          }
          dst[r] = dst[0] + r * os[3];
          res[r] = residual != nullptr ? res[0] + r * rs[3] : nullptr;
        }
        x += R - 1;
      }
      tile_ready = tile;
      if (++x == p.ow) {
        x = 0;
        if (++y == p.oh) {
          y = 0;
          ++n;
        }
      }
      next_x = x;
      next_y = y;
      next_n = n;
    }
    const int64_t co0 = block * dp.block;
    float* tile_dst[R];
    const float* tile_res[R];
    for (int r = 0; r < R; ++r) {
      const bool real = dst[r] != sink[r];
      tile_dst[r] = real ? dst[r] + co0 : sink[r];
      tile_res[r] = residual == nullptr ? nullptr : real ? res[r] + co0 : dp.zeros;
    }
    // A pixel past the end stores whole vectors into its sink.
    const Tile t =
        block_tile(dp, block, dp.groups, src, tile_dst, residual != nullptr ? tile_res : nullptr);
    dense_tile_impl<V, R, NV>(t, std::make_index_sequence<R * NV>{});
  }
}

/// Whether p's input is channels-last: channels contiguous, pixels ic
/// floats apart.
bool channels_last_input(const ConvProblem& p) {
  return p.in_strides[1] == 1 && p.in_strides[3] == p.ic;
}

void pack_dense(const ConvProblem& p, const DensePlan& dp, float* w) {
  const int64_t* ws = p.w_strides;
  const float* weight = static_cast<const float*>(p.weight);
  std::fill(w, w + dp.blocks * dp.taps * p.ic * dp.block, 0.0f);
  for (int64_t o = 0; o < p.oc; ++o) {
    const int64_t b = o / dp.block, lane = o % dp.block;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t k = ky * p.kw + kx;
        for (int64_t c = 0; c < p.ic; ++c) {
          const int64_t at =
              dp.planar ? ((b * p.kh + ky) * p.ic + c) * p.kw + kx : (b * dp.taps + k) * p.ic + c;
          w[at * dp.block + lane] = weight[o * ws[0] + c * ws[1] + ky * ws[2] + kx * ws[3]];
        }
      }
    }
  }
}

}  // namespace

/// Whether `p` reads a copy of its input, channels-last and padded left and
/// right with zeros (copy_input): layers whose kernel rows are a few floats
/// (a stem's three channels, layers of 16), where the per-pixel copies of
/// kernel rows crossing the border would cost more than the whole input
/// once, and every pixel then steps its neighbour's pointers; and such
/// layers whose input is not channels-last (an NCHW image into a
/// channels-last network's stem), which the copy makes so. dense() skips
/// the copy of a channels-last input that strips read where it lies.
bool copies_input(const ConvProblem& p) {
  const bool channels_last = channels_last_input(p);
  if (!channels_last && p.ic > kMaxCopiedChannels) return false;
  return (p.pad[1] > 0 || !channels_last) && p.groups == 1 && p.dilation[1] == 1 &&
         p.kw * p.ic <= kMaxPaddedRun && p.n * p.ih * padded_width(p) * p.ic <= kMaxPadded;
}

namespace {

/// `p` over copy_input's copy (its data still to be set): channels-last,
/// no padding left to do along the width.
ConvProblem copied_problem(const ConvProblem& p) {
  const int64_t width = padded_width(p);
  ConvProblem q = p;
  q.in = nullptr;
  q.iw = width;
  q.pad[1] = 0;
  q.in_strides[0] = p.ih * width * p.ic;
  q.in_strides[1] = 1;
  q.in_strides[2] = width * p.ic;
  q.in_strides[3] = p.ic;
  return q;
}

}  // namespace

// Copies through the strided copy: whole rows when the input is
// channels-last, the narrow transpose from NCHW.
void copy_rows(const KernelContext& ctx, const ConvProblem& p, int64_t n0, int64_t n1, int64_t lo,
               int64_t hi, float* buffer) {
  const int64_t width = padded_width(p), left = p.pad[1], ic = p.ic;
  const int64_t images = n1 - n0, rows = hi - lo;
  float* row = buffer;
  for (int64_t r = 0; r < images * rows; ++r, row += width * ic) {
    std::fill(row, row + left * ic, 0.0f);
    std::fill(row + (left + p.iw) * ic, row + width * ic, 0.0f);
  }
  // (N, C, H, W) in the copy, as copied_problem gives its strides.
  const int64_t strides[4] = {rows * width * ic, 1, width * ic, ic};
  const int64_t sizes[4] = {images, ic, rows, p.iw};
  const float* from = static_cast<const float*>(p.in) + n0 * p.in_strides[0] + lo * p.in_strides[2];
  cpu::strided_copy(ctx, buffer + left * ic, strides, from, p.in_strides, sizes, sizeof(float));
}

bool dense(KernelContext& ctx, const ConvProblem& given, const Epilogue& e) {
  DensePlan dp;
  ConvProblem p = given;
  dp.p = &p;
  dp.taps = p.kh * p.kw;
  if (dp.taps > kMaxTaps) return false;
  const bool blocks_of_24 = three_vectors(p.oc);
  const int nv = blocks_of_24 ? 3 : p.oc > kLanes ? 2 : 1;
  dp.block = blocks_of_24 ? 24 : nv * kLanes;
  dp.blocks = (p.oc + dp.block - 1) / dp.block;
  const int64_t packed = dp.blocks * dp.taps * p.ic * dp.block;
  if (packed > kMaxPackedWeights) return false;
  dp.pixels = p.n * p.oh * p.ow;
  const bool aligned = kWide && nv == 1 && p.ow % kAlignedTilePixels == 0;
  const int tile_pixels = blocks_of_24 ? kTilePixels<3>
                          : nv == 2    ? kTilePixels<2>
                          : aligned    ? kAlignedTilePixels
                                       : kTilePixels<1>;
  dp.tiles = (dp.pixels + tile_pixels - 1) / tile_pixels;
  dp.e = e;
  dp.reach = (p.kw - 1) * p.dilation[1];
  auto columns = [&] {
    dp.column_step = p.dilation[1] * p.in_strides[3];
    dp.pixel_step = p.stride[1] * p.in_strides[3];
    dp.rows = p.kw > 1 && p.dilation[1] == 1 && p.in_strides[3] == p.ic &&
              tile_pixels * dp.taps * p.ic <= kMaxBorderFloats;
    dp.groups = dp.rows ? p.kh : dp.taps;
    dp.run = dp.rows ? p.kw * p.ic : p.ic;
  };
  columns();
  // A channels-last input that strips read where it lies (one column of
  // padding) is not copied.
  bool copies = copies_input(given) && !(channels_last_input(p) && strips_fit(dp, nv));
  if (copies && p.in_strides[3] == 1 && p.kh * p.ic <= kMaxTaps) {
    // An image of a few channels as planes (NCHW): strips read a kernel row
    // of each plane where it lies.
    dp.planar = true;
    dp.groups = p.kh * p.ic;
    dp.run = p.kw;
    copies = !strips_fit(dp, nv);
    if (copies) {
      dp.planar = false;
      columns();
    }
  }
  if (copies) {
    p = copied_problem(given);
    columns();
  }

  PlanKey key;
  key.add({dp.planar ? 2 : 1, p.ic, p.oc, p.kh, p.kw, dp.block});
  thread_local PlanCache<Packed> cache(64);
  Packed& pk = packed_weights(cache, key, p, packed, [&](float* w) { pack_dense(p, dp, w); });
  copy_bias(p, pk, dp.blocks * dp.block);
  if (static_cast<int64_t>(pk.zeros.size()) < std::max(dp.run, dp.block)) {
    pk.zeros.assign(static_cast<size_t>(std::max(dp.run, dp.block)), 0.0f);
  }
  dp.w = pk.w.data();
  dp.bias = pk.bias.data();
  dp.zeros = pk.zeros.data();

  const double work = static_cast<double>(dp.pixels) * p.oc * p.ic * dp.taps;
  if (strips_fit(dp, nv)) {
    dense_strips(ctx, given, copies, dp, nv, work);
    return true;
  }

  const int64_t items = dp.tiles * dp.blocks;
  dp.split = ctx.num_threads > 1 && work >= kParallelWork && items > 1;
  dp.border_floats = dp.rows ? tile_pixels * p.kh * dp.run : 0;
  const size_t slots = dp.split ? static_cast<size_t>(ctx.num_threads) : 1;
  const size_t border_floats = dp.rows ? slots * static_cast<size_t>(dp.border_floats) : 0;
  const size_t copied_floats = copies ? static_cast<size_t>(p.n * p.ih * p.iw * p.ic) : 0;
  if (copied_floats + border_floats > 0) {
    auto* scratch =
        static_cast<float*>(ctx.scratch((copied_floats + border_floats) * sizeof(float)));
    if (copies) {
      copy_rows(ctx, given, 0, p.n, 0, p.ih, scratch);
      p.in = scratch;
    }
    dp.border = dp.rows ? scratch + copied_floats : nullptr;
  }
  auto body = [&](int64_t b, int64_t end) {
    if constexpr (kWide) {
      if (blocks_of_24) return dense_items<V8, 3>(dp, b, end);
      if (nv == 2) return dense_items<V16, 2>(dp, b, end);
      if (aligned) return dense_items<V16, 1, kAlignedTilePixels>(dp, b, end);
      return dense_items<V16, 1>(dp, b, end);
    } else {
      if (nv == 2) return dense_items<V8, 2>(dp, b, end);
      return dense_items<V8, 1>(dp, b, end);
    }
  };
  if (dp.split) {
    cpu::parallel_for(ctx, items, static_cast<int64_t>(work / static_cast<double>(items)), body);
  } else {
    body(0, items);
  }
  return true;
}

}  // namespace pterun::cpu::nhwc
