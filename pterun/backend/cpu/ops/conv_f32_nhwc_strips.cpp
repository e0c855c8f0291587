// Strips of the dense channels-last f32 convolution (conv_f32_nhwc.cpp
// describes the whole): R pixels of one output row whose inputs lie a
// compile-time step apart, for layers of few input channels (a stem's
// three, 16, 32; an NCHW image's planes). They read the input where it
// lies (with at most one column of padding, whose taps they leave out) or
// a padded copy of it, made by each thread for the rows it runs.

#include <algorithm>
#include <cstdint>
#include <utility>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/ops/conv_f32_nhwc_tiles.h"

namespace pterun::cpu::nhwc {
namespace {

// Without predictive commoning: it sees that a pixel's input at c + STEP
// is the next pixel's at c and keeps loaded floats in the stack across
// iterations, where a broadcast from the image costs less.
#if defined(__GNUC__) && !defined(__clang__)
#define PTERUN_NO_PREDICTIVE_COMMONING [[gnu::optimize("no-predictive-commoning")]]
#else
#define PTERUN_NO_PREDICTIVE_COMMONING
#endif

/// True when pixel `i / nv` of a strip is one of pixels [first, end).
constexpr bool in_span(size_t i, int nv, int first, int end) {
  const int pixel = static_cast<int>(i) / nv;
  return pixel >= first && pixel < end;
}

/// Pixels [F, E) of a strip take `n` floats of a kernel row: pixel r's from
/// `b + (r - F) * STEP`, their weights from `wt` (`block` floats apart).
template <typename V, int NV, int STEP, int F, int E, size_t... I>
[[gnu::always_inline]] PTERUN_NO_PREDICTIVE_COMMONING inline void strip_span(
    V* acc, const float* b, const float* wt, int64_t n, int64_t block, std::index_sequence<I...>) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  for (int64_t c = 0; c < n; ++c, wt += block) {
    V w[NV];
    for (int v = 0; v < NV; ++v) w[v] = load<V>(wt + v * L);
    ((in_span(I, NV, F, E)
          ? void(acc[I] += b[c + (static_cast<int64_t>(I / NV) - F) * STEP] * w[I % NV])
          : void()),
     ...);
  }
}

/// Which ends of an output row a strip holds when the input is read where
/// it lies with one column of padding: the first pixel's first tap is
/// left of column 0, the last pixel's last tap right of the last column.
/// Those taps read nothing (zeros), so no padded copy is needed.
enum StripEdge : int { kInside = 0, kLeft = 1, kRight = 2 };

/// A strip: R pixels of one output row whose inputs lie STEP floats apart
/// (stride x ic, or the stride in a plane; known at compile time). Each
/// kernel row (of each channel's plane in a planar plan) is one pointer for
/// the whole strip (`rows[g]`, null over the top or bottom padding:
/// skipped) and the pixels are its displacements, so no pointer per pixel
/// is set up or held: strips are twice as wide as tiles, and the few
/// multiply-adds per pixel of a stem or a 16-channel layer are not
/// outweighed by the setup. `rows[g]` is the first pixel's first tap, or
/// with kLeft column 0 (its second tap); kLeft and kRight leave out the
/// `tap` floats (ic, or 1 in a plane) of the tap over the padding.
template <typename V, int R, int NV, int STEP, int EDGE, size_t... I>
PTERUN_NO_PREDICTIVE_COMMONING void strip_tile_impl(const Tile& t, const float* const* rows,
                                                    int64_t tap, std::index_sequence<I...> seq) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  V acc[R * NV];
  ((acc[I] = load<V>(t.bias + (I % NV) * L)), ...);
  for (int64_t g = 0; g < t.groups; ++g) {
    const float* b = rows[g];
    if (b == nullptr) continue;
    const float* wt = t.w + g * t.run * t.block;
    int64_t n = t.run;
    if constexpr ((EDGE & kLeft) != 0) {
      // The first tap of pixels 1.. (pixel 1's lies STEP - tap floats on).
      strip_span<V, NV, STEP, 1, R>(acc, b + (STEP - tap), wt, tap, t.block, seq);
      wt += tap * t.block;
      n -= tap;
    }
    if constexpr ((EDGE & kRight) != 0) {
      strip_span<V, NV, STEP, 0, R>(acc, b, wt, n - tap, t.block, seq);
      strip_span<V, NV, STEP, 0, R - 1>(acc, b + (n - tap), wt + (n - tap) * t.block, tap, t.block,
                                        seq);
    } else {
      strip_span<V, NV, STEP, 0, R>(acc, b, wt, n, t.block, seq);
    }
  }
  tile_store<V, R, NV, true>(acc, t, seq);
}

/// Where the input rows of one image lie for strip_rows: row iy (from
/// `first`, a multiple of `stride` floats apart) at `base`, channel c's
/// plane `plane` floats on in a planar plan; the padding along the width
/// that is left is at most one column.
struct ImageRows {
  const float* base;
  int64_t first, stride;
  int64_t plane;  // floats from one channel's plane to the next (planar plans)
};

/// Output rows [y0, y1) of image n as strips (strip_tile_impl): each row
/// whole strips of R pixels, every column inside `rows` but, with one
/// column of padding, the first pixel's first tap and the last one's last.
template <typename V, int NV, int R, int STEP>
PTERUN_NO_PREDICTIVE_COMMONING void strip_rows(const DensePlan& dp, const ImageRows& in, int64_t n,
                                               int64_t y0, int64_t y1) {
  const ConvProblem& p = *dp.p;
  const auto [unused, out, residual, is, os, rs] = buffers(p);
  // Floats of one tap in a kernel row; kernel rows per output row.
  const int64_t pad = p.pad[1], tap = dp.planar ? 1 : p.ic, planes = dp.planar ? p.ic : 1;
  const bool right_edge = pad > 0 && (p.ow - 1) * p.stride[1] - pad + dp.reach >= p.iw;
  const float* rows[kMaxTaps];
  const float* shifted[kMaxTaps];
  float* dst[R];
  const float* res[R];
  for (int64_t y = y0; y < y1; ++y) {
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = y * p.stride[0] - p.pad[0] + ky * p.dilation[0];
      for (int64_t c = 0; c < planes; ++c) {
        rows[ky * planes + c] =
            iy >= 0 && iy < p.ih ? in.base + c * in.plane + (iy - in.first) * in.stride : nullptr;
      }
    }
    for (int64_t x = 0; x < p.ow; x += R) {
      const int edge =
          (pad > 0 && x == 0 ? kLeft : kInside) | (right_edge && x + R == p.ow ? kRight : kInside);
      // The first pixel's first tap (column x * stride - pad), or column 0
      // at the left edge.
      const int64_t from = (edge & kLeft) != 0 ? 0 : x * STEP - pad * tap;
      for (int64_t g = 0; g < p.kh * planes; ++g) {
        shifted[g] = rows[g] != nullptr ? rows[g] + from : nullptr;
      }
      for (int64_t block = 0; block < dp.blocks; ++block) {
        const int64_t co0 = block * dp.block;
        Tile t =
            block_tile(dp, block, p.kh * planes, nullptr, dst, residual != nullptr ? res : nullptr);
        t.dst0 = out + n * os[0] + y * os[2] + x * os[3] + co0;
        t.dst_step = os[3];
        if (residual != nullptr) {
          t.res0 = residual + n * rs[0] + y * rs[2] + x * rs[3] + co0;
          t.res_step = rs[3];
        }
        if (t.lanes < dp.block) {
          // A partial block goes pixel by pixel through the lists.
          for (int r = 0; r < R; ++r) {
            dst[r] = t.dst0 + r * os[3];
            res[r] = residual != nullptr ? t.res0 + r * rs[3] : nullptr;
          }
        }
        constexpr auto seq = std::make_index_sequence<R * NV>{};
        switch (edge) {
          case kInside: strip_tile_impl<V, R, NV, STEP, kInside>(t, shifted, tap, seq); break;
          case kLeft: strip_tile_impl<V, R, NV, STEP, kLeft>(t, shifted, tap, seq); break;
          case kRight: strip_tile_impl<V, R, NV, STEP, kRight>(t, shifted, tap, seq); break;
          default: strip_tile_impl<V, R, NV, STEP, kLeft | kRight>(t, shifted, tap, seq); break;
        }
      }
    }
  }
}

/// Pixels per strip: 16 x 1 vector or 8 x 2 with 32 registers, 8 x 1 or
/// 4 x 2 with 16 (a whole number of them per output row, else tiles).
template <int NV>
constexpr int kStripPixels = (kWide ? 16 : 8) / NV;

/// Runs strip_rows<STEP> for the plan's vectors per block (nv).
template <int64_t STEP>
void strips_of_step(const DensePlan& dp, int nv, const ImageRows& in, int64_t n, int64_t y0,
                    int64_t y1) {
  if (nv == 2) return strip_rows<VL, 2, kStripPixels<2>, STEP>(dp, in, n, y0, y1);
  strip_rows<VL, 1, kStripPixels<1>, STEP>(dp, in, n, y0, y1);
}

/// The input steps (stride x input channels) strips are built for, one
/// list for the test and the dispatch.
template <int64_t... STEPS>
struct StepList {
  static bool has(int64_t step) { return ((step == STEPS) || ...); }
  /// strips_of_step<step>; `step` one of STEPS (has()).
  static void run(int64_t step, const DensePlan& dp, int nv, const ImageRows& in, int64_t n,
                  int64_t y0, int64_t y1) {
    ((step == STEPS && (strips_of_step<STEPS>(dp, nv, in, n, y0, y1), true)) || ...);
  }
};

/// An NCHW image's planes, three-channel stems and layers of 16 input
/// channels at strides 1 and 2, 32 channels at stride 1 (a 16-channel 3x3
/// layer ran at 86% of the FMA peak in 8-pixel tiles, 95% in strips of 16
/// pixels).
using StripSteps = StepList<1, 2, 3, 6, 16, 32>;

}  // namespace

bool strips_fit(const DensePlan& dp, int nv) {
  const ConvProblem& p = *dp.p;
  const int strip = nv == 2 ? kStripPixels<2> : kStripPixels<1>;
  // With one column of padding (an input read where it lies) only the
  // first tap of a row's first pixel and the last tap of its last may lie
  // outside: at least two taps, the last pixel's last at column iw or before.
  const int64_t pad = p.pad[1];
  // A one-tap row (a 1x1 layer) reads its channels as a kernel row does.
  const bool rows = dp.rows || dp.planar || (p.kw == 1 && p.in_strides[3] == p.ic);
  return nv <= 2 && rows && p.ow % strip == 0 && (pad == 0 || (pad == 1 && p.kw >= 2)) &&
         (p.ow - 1) * p.stride[1] - pad + dp.reach < p.iw + pad && StripSteps::has(dp.pixel_step);
}

/// Output rows over the threads. A layer that
/// copies its input copies, image by image, the input rows of the output
/// rows a thread runs into that thread's slot and reads them at once: no
/// serial copy of the whole input before the threads start, and the copy is
/// still in the cache of the core that reads it.
void dense_strips(KernelContext& ctx, const ConvProblem& given, bool copies, DensePlan& dp, int nv,
                  double work) {
  const ConvProblem& p = *dp.p;
  const KernelContext one_thread;  // each thread copies its own rows
  const int64_t items = p.n * p.oh;
  dp.split = ctx.num_threads > 1 && work >= kParallelWork && items > 1;
  const int64_t slot_floats = copies ? p.ih * p.iw * p.ic : 0;
  float* slots = nullptr;
  if (copies) {
    const size_t count = dp.split ? static_cast<size_t>(ctx.num_threads) : 1;
    slots =
        static_cast<float*>(ctx.scratch(count * static_cast<size_t>(slot_floats) * sizeof(float)));
  }
  const float* in = static_cast<const float*>(p.in);
  auto body = [&](int64_t b, int64_t end) {
    float* slot = copies ? slots + (dp.split ? parallel_thread_index() : 0) * slot_floats : nullptr;
    for (int64_t item = b; item < end;) {
      const int64_t n = item / p.oh, y0 = item % p.oh, y1 = std::min(p.oh, y0 + (end - item));
      ImageRows rows{in != nullptr ? in + n * p.in_strides[0] : nullptr, 0, p.in_strides[2],
                     p.in_strides[1]};
      if (copies) {
        // The input rows the output rows [y0, y1) read.
        const int64_t lo = std::max<int64_t>(0, y0 * p.stride[0] - p.pad[0]);
        const int64_t hi =
            std::min(p.ih, (y1 - 1) * p.stride[0] - p.pad[0] + (p.kh - 1) * p.dilation[0] + 1);
        if (hi > lo) copy_rows(one_thread, given, n, n + 1, lo, hi, slot);
        rows = {slot, lo, p.iw * p.ic, 0};
      }
      StripSteps::run(dp.pixel_step, dp, nv, rows, n, y0, y1);
      item += y1 - y0;
    }
  };
  if (dp.split) {
    cpu::parallel_for(ctx, items, static_cast<int64_t>(work / static_cast<double>(items)), body);
  } else {
    body(0, items);
  }
}

}  // namespace pterun::cpu::nhwc
