// Our own f32 convolution (forward, any stride, padding, dilation and
// groups, depthwise included). A band of output rows of each image reads
// a band of input rows, copied into a zero-padded planar buffer where the
// columns of each row are split into `stride` phases (column x at phase
// x % stride, position x / stride): tap (c, ky, kx) of a run of L
// consecutive output columns then reads L consecutive floats, whatever
// the stride. A direct convolution with no im2col matrix: blocks of R
// output channels x N runs accumulate in vector registers, get the bias
// and the fused activation, and are stored straight into the output in its own
// layout. Columns of a run past the end of a row are computed from the
// padding and not stored. Taps that fall on padding rows are skipped
// (output rows are grouped by which kernel rows are inside the image), so
// padding rows are never read; padding columns are, as they share vectors
// with real ones. 1x1 stride-1 convolutions of whole planes read the input
// in place, as rows of a width that is a multiple of L.
//
// The register blocks are in conv_f32_block.h; this file plans the bands,
// packs the weights, pads the input and walks the blocks.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/vec_float.h"
#include "pterun/backend/cpu/ops/conv.h"
#include "pterun/backend/cpu/ops/conv_f32_block.h"
#include "pterun/backend/cpu/ops/conv_weights.h"
#include "pterun/backend/cpu/ops/plan_cache.h"

// Without AVX the 32-byte vectors below are passed differently; they never
// cross a translation unit, so GCC's ABI note does not apply.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pterun::cpu {
namespace {

using conv_blocks::Block;
using conv_blocks::block_any;
using conv_blocks::rows_per_block;
using conv_blocks::runs_per_block;
using kernels::KernelContext;

using vec::kWide;
using vec::load;
using vec::store;
using vec::V16;
using vec::V8;

/// Largest padded band (all input channels of one image) in floats: it
/// lives in per-thread scratch and should stay in L2.
constexpr int64_t kMaxBand = int64_t{1} << 17;

/// Largest packed weights (floats, all row classes) this kernel keeps.
constexpr int64_t kMaxPackedWeights = int64_t{1} << 22;

/// Small padded images run together: up to kMaxBatch of them, while they
/// fit in kBatchFloats (about half of L1).
constexpr int64_t kMaxBatch = 6;
constexpr int64_t kBatchFloats = 4096;

/// Multiply-adds from which a convolution is split over the threads
/// (about 20 us of work: less does not pay for waking a helper and the
/// halo rows copied twice).
constexpr double kParallelWork = 1 << 20;

/// The problem as the kernel walks it.
struct Plan {
  const ConvProblem* p;
  int64_t lanes;         // L: columns per run
  int64_t runs_per_row;  // ceil(ow / L)
  // The input as the taps read it: a band of padded rows (or, in place,
  // the input itself).
  bool in_place;
  int64_t phase_width;   // positions of a phase of a padded row
  int64_t row_pitch;     // floats between rows (stride[1] phases)
  int64_t plane;         // floats between channels
  int64_t band;          // output rows per band
  int64_t band_rows;     // padded rows a band holds
  int64_t image_floats;  // one image's band buffer, rounded up to 16
  int64_t icg, ocg, taps_count;
  // Output rows [row_class_begin[i], row_class_begin[i + 1]) read the taps
  // [class_taps_begin[i], class_taps_begin[i + 1]) (offsets from a run's
  // first input position): those whose kernel row falls inside the image.
  // Their weights are packed per class, group, tap, then output channel:
  // group g of class i at w + ocg * (groups * class_taps_begin[i] + g *
  // taps in class i).
  int64_t classes;
  const int64_t* row_class_begin;
  const int64_t* class_taps_begin;
  const int32_t* taps;
  const float* w;
  int64_t batch;    // images padded and run together
  int64_t oc_part;  // output channels (of a group) per work item
  bool hardswish;
  float lo, hi;
};

/// What a problem's geometry and weights give, kept between calls (per
/// thread, by geometry) while the weight bytes stay the same: constant
/// weights are packed once.
struct Prepared {
  std::vector<int64_t> row_class_begin, class_taps_begin;
  std::vector<int32_t> taps;
  std::vector<int64_t> tap_index;  // of each tap: (c * kh + ky) * kw + kx
  std::vector<float> w;
  WeightSnapshot from;  // what w was packed from
};

/// Weights in the order the blocks read them (Plan::w).
void pack_weights(const Plan& pl, const Prepared& prep, float* packed) {
  const ConvProblem& p = *pl.p;
  const float* weight = static_cast<const float*>(p.weight);
  const int64_t* ws = p.w_strides;
  for (int64_t k = 0; k + 1 < static_cast<int64_t>(prep.class_taps_begin.size()); ++k) {
    const int64_t first = prep.class_taps_begin[k], count = prep.class_taps_begin[k + 1] - first;
    for (int64_t o = 0; o < p.oc; ++o) {
      const int64_t g = o / pl.ocg;
      float* dst = packed + pl.ocg * (p.groups * first + g * count) + (o - g * pl.ocg);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t t = prep.tap_index[first + i];
        const int64_t c = t / (p.kh * p.kw), ky = t / p.kw % p.kh, kx = t % p.kw;
        dst[i * pl.ocg] = weight[o * ws[0] + c * ws[1] + ky * ws[2] + kx * ws[3]];
      }
    }
  }
}

/// Positions [lo, hi) of phase q of a padded row that hold input columns.
std::pair<int64_t, int64_t> interior(const Plan& pl, int64_t q) {
  const ConvProblem& p = *pl.p;
  const int64_t s = p.stride[1], pw = p.pad[1];
  // Padded column pos * s + q holds input column pos * s + q - pw.
  const int64_t lo = pw > q ? (pw - q + s - 1) / s : 0;
  const int64_t hi = std::min(pl.phase_width, (pw + p.iw - q + s - 1) / s);
  return {lo, std::max(lo, hi)};
}

/// Strides whose phases' interiors pad_band works out once per band.
constexpr int64_t kMaxPhases = 4;

/// Copies the input rows of image `ni` that output rows from y0 on read
/// into `buf` (band row r = padded row y0 * stride + r), each row split
/// into its phases, with zeros where a row holds no input column. Band
/// rows outside the image are left as they are: no tap reads them.
void pad_band(const Plan& pl, int64_t ni, int64_t y0, float* buf) {
  const ConvProblem& p = *pl.p;
  const float* img = static_cast<const float*>(p.in) + ni * p.in_strides[0];
  const int64_t row_s = p.in_strides[2], col_s = p.in_strides[3];
  const int64_t s = p.stride[1], pw = p.pad[1];
  const int64_t first = y0 * p.stride[0];  // padded row of band row 0
  const int64_t r0 = std::max<int64_t>(0, p.pad[0] - first);
  const int64_t r1 = std::min(pl.band_rows, p.pad[0] + p.ih - first);
  const V8 zero{};
  // Stride 2 from contiguous rows: eight input pairs at a time, from the
  // first column whose padded column is even, while both phases have room.
  const int64_t x_even = pw % 2;            // first input column at phase 0
  const int64_t start = (x_even + pw) / 2;  // its position, and its right neighbour's
  const int64_t pairs = s == 2 && col_s == 1 ? std::max<int64_t>(0, (p.iw - x_even) / 2) : 0;
  int64_t vector_pairs = 0;
  if (pairs > 0) {
    const int64_t room = std::min(interior(pl, 0).second, interior(pl, 1).second) - start;
    vector_pairs = std::min(pairs, room) / 8 * 8;
  }
  int64_t phase_lo[kMaxPhases] = {}, phase_hi[kMaxPhases] = {};
  for (int64_t q = 0; q < std::min(s, kMaxPhases); ++q) {
    std::tie(phase_lo[q], phase_hi[q]) = interior(pl, q);
  }
  for (int64_t c = 0; c < p.ic; ++c) {
    const float* src_plane = img + c * p.in_strides[1];
    float* plane = buf + c * pl.plane;
    for (int64_t r = r0; r < r1; ++r) {
      const float* src = src_plane + (first + r - p.pad[0]) * row_s;
      float* dst = plane + r * pl.row_pitch;
      // Zeros first (the buffer has room past the last row for a vector),
      // then the input columns over them.
      for (int64_t x = 0; x < pl.row_pitch; x += 8) store(dst + x, zero);
      if (s == 1 && col_s == 1) {
        // Eight floats at a time: rows are short, and a memcpy call or a
        // vectorised loop's checks per row would cost more than the copy.
        float* d = dst + pw;
        int64_t x = 0;
        for (; x + 8 <= p.iw; x += 8) store(d + x, load<V8>(src + x));
        for (; x < p.iw; ++x) d[x] = src[x];
        continue;
      }
      // Positions [start, start + vector_pairs) of both phases in vectors,
      // the rest one by one.
      if (vector_pairs > 0) {
        const float* from = src + x_even;
        for (int64_t k = 0; k < vector_pairs; k += 8, from += 16) {
          const V8 a = load<V8>(from), b = load<V8>(from + 8);
          store(dst + start + k, __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14));
          store(dst + pl.phase_width + start + k,
                __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15));
        }
      }
      for (int64_t q = 0; q < s; ++q) {
        const int64_t lo = q < kMaxPhases ? phase_lo[q] : interior(pl, q).first;
        const int64_t hi = q < kMaxPhases ? phase_hi[q] : interior(pl, q).second;
        float* d = dst + q * pl.phase_width;
        const int64_t step = s * col_s;
        auto copy = [&](int64_t from_pos, int64_t to_pos) {
          const float* from = src + (from_pos * s + q - pw) * col_s;
          for (int64_t pos = from_pos; pos < to_pos; ++pos, from += step) d[pos] = *from;
        };
        if (vector_pairs == 0) {
          copy(lo, hi);
        } else {
          copy(lo, std::min(hi, start));
          copy(std::max(lo, start + vector_pairs), hi);
        }
      }
    }
  }
}

/// Output rows [y0, y1) of images [ni, ni + count), their bands at
/// buf + i * image_floats (or the input itself): the runs of a row class
/// in all of them form one sequence of blocks, so that classes of a row or
/// two (next to the padding) still fill wide blocks.
template <typename V>
void run_band(const Plan& pl, int64_t ni, int64_t count, int64_t y0, int64_t y1, const float* buf,
              int64_t o_begin, int64_t o_end) {
  const ConvProblem& p = *pl.p;
  const int64_t L = pl.lanes;
  const int64_t* os = p.out_strides;
  const float* bias = static_cast<const float*>(p.bias);
  const int64_t image_stride = pl.in_place ? p.in_strides[0] : pl.image_floats;
  const int64_t row_step = pl.in_place ? p.in_strides[2] : p.stride[0] * pl.row_pitch;
  const int64_t band_base = pl.in_place ? y0 : 0;  // row the band's row 0 stands for
  Block b{};
  b.dst_rs = os[1];
  b.dst_cs = os[3];
  const int64_t* rs = p.residual_strides;
  b.residual = p.residual != nullptr;
  b.res_rs = rs[1];
  b.res_cs = rs[3];
  b.hardswish = pl.hardswish;
  b.lo = pl.lo;
  b.hi = pl.hi;
  for (int64_t g = 0; g < p.groups; ++g) {
    for (int64_t k = 0; k < pl.classes; ++k) {
      const int64_t first_row = std::max(pl.row_class_begin[k], y0);
      const int64_t end_row = std::min(pl.row_class_begin[k + 1], y1);
      if (first_row >= end_row) continue;
      b.taps = pl.taps + pl.class_taps_begin[k];
      b.taps_count = pl.class_taps_begin[k + 1] - pl.class_taps_begin[k];
      b.w_stride = pl.ocg;
      const float* group_w = pl.w + pl.ocg * (p.groups * pl.class_taps_begin[k] + g * b.taps_count);
      const int64_t total = count * (end_row - first_row) * pl.runs_per_row;
      // The next run: image i, row y, column x0.
      int64_t i = 0, y = first_row, x0 = 0;
      for (int64_t r0 = 0; r0 < total;) {
        const int runs = runs_per_block(total - r0);
        const bool unit = os[3] == 1 && (!b.residual || rs[3] == 1);
        b.whole = unit;
        for (int j = 0; j < runs; ++j) {
          if (b.residual) {
            b.res[j] = static_cast<const float*>(p.residual) + (ni + i) * rs[0] +
                       g * pl.ocg * rs[1] + y * rs[2] + x0 * rs[3];
          }
          b.src[j] =
              buf + i * image_stride + g * pl.icg * pl.plane + (y - y0 + band_base) * row_step + x0;
          b.dst[j] = static_cast<float*>(p.out) + (ni + i) * os[0] + g * pl.ocg * os[1] +
                     y * os[2] + x0 * os[3];
          b.lanes[j] = std::min(L, p.ow - x0);
          b.run_whole[j] = unit && b.lanes[j] == L;
          b.whole = b.whole && b.run_whole[j];
          x0 += L;
          if (x0 >= p.ow) {
            x0 = 0;
            if (++y == end_row) {
              y = first_row;
              ++i;
            }
          }
        }
        for (int64_t o0 = o_begin; o0 < o_end;) {
          const int rows = rows_per_block(runs, o_end - o0);
          b.w = group_w + o0;
          b.bias = bias != nullptr ? bias + g * pl.ocg + o0 : nullptr;
          b.dst_offset = o0 * os[1];
          b.res_offset = o0 * rs[1];
          block_any<V>(b, rows, runs);
          o0 += rows;
        }
        r0 += runs;
      }
    }
  }
}

/// Asks for the input lines of image `ni` ahead of its copy: the previous
/// layer's output is rarely in L1, and the copy would wait on each line.
void prefetch_image(const Plan& pl, int64_t ni) {
  const ConvProblem& p = *pl.p;
  const char* img = static_cast<const char*>(p.in) + ni * p.in_strides[0] * sizeof(float);
  const int64_t row_bytes = ((p.iw - 1) * p.in_strides[3] + 1) * sizeof(float);
  for (int64_t c = 0; c < p.ic; ++c) {
    for (int64_t y = 0; y < p.ih; ++y) {
      const char* row = img + (c * p.in_strides[1] + y * p.in_strides[2]) * sizeof(float);
      for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(row + b);
      __builtin_prefetch(row + row_bytes - 1);
    }
  }
}

/// Work items [begin, end): item i is image batch i / parts / bands, output
/// rows of band i / parts % bands, output channels of part i % parts (of
/// pl.oc_part each); `buf` has room for pl.batch band buffers.
template <typename V>
void run_items(const Plan& pl, int64_t bands, int64_t parts, int64_t begin, int64_t end,
               float* buf) {
  const ConvProblem& p = *pl.p;
  int64_t padded = -1;  // the item whose band buf holds
  for (int64_t item = begin; item < end; ++item) {
    const int64_t base = item / parts, part = item % parts;
    const int64_t ni = base / bands * pl.batch, y0 = base % bands * pl.band;
    const int64_t count = std::min(pl.batch, p.n - ni);
    const int64_t o_begin = part * pl.oc_part, o_end = std::min(pl.ocg, o_begin + pl.oc_part);
    const int64_t y1 = std::min(p.oh, y0 + pl.band);
    if (pl.in_place) {
      run_band<V>(pl, ni, count, y0, y1, static_cast<const float*>(p.in) + ni * p.in_strides[0],
                  o_begin, o_end);
      continue;
    }
    if (padded != base) {
      for (int64_t i = 0; i < count; ++i) pad_band(pl, ni + i, y0, buf + i * pl.image_floats);
      if (bands == 1 && parts == 1) {
        for (int64_t i = ni + count; i < std::min(ni + 2 * count, p.n); ++i) prefetch_image(pl, i);
      }
      padded = base;
    }
    run_band<V>(pl, ni, count, y0, y1, buf, o_begin, o_end);
  }
}

/// Row classes and their taps for `pl`'s geometry; weights sized, not
/// packed (refresh_weights does that).
Prepared prepare(const Plan& pl) {
  const ConvProblem& p = *pl.p;
  const int64_t s = p.stride[1];
  Prepared prep;
  int64_t lo = -1, hi = -1;
  for (int64_t y = 0; y < p.oh; ++y) {
    // Kernel rows [l, h) inside the image (a range: the input row grows
    // with ky); a new class where they change.
    int64_t l = 0, h = 0;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = y * p.stride[0] + ky * p.dilation[0] - p.pad[0];
      if (iy < 0 || iy >= p.ih) continue;
      if (h == 0) l = ky;
      h = ky + 1;
    }
    if (l == lo && h == hi) continue;
    lo = l;
    hi = h;
    prep.row_class_begin.push_back(y);
    prep.class_taps_begin.push_back(static_cast<int64_t>(prep.taps.size()));
    for (int64_t c = 0; c < pl.icg; ++c) {
      for (int64_t ky = lo; ky < hi; ++ky) {
        for (int64_t kx = 0; kx < p.kw; ++kx) {
          const int64_t dx = kx * p.dilation[1];
          const int64_t row = ky * p.dilation[0];
          const int64_t offset =
              pl.in_place ? c * p.in_strides[1] + row * p.in_strides[2] + dx
                          : c * pl.plane + row * pl.row_pitch + dx % s * pl.phase_width + dx / s;
          prep.taps.push_back(static_cast<int32_t>(offset));
          prep.tap_index.push_back((c * p.kh + ky) * p.kw + kx);
        }
      }
    }
  }
  prep.row_class_begin.push_back(p.oh);
  prep.class_taps_begin.push_back(static_cast<int64_t>(prep.taps.size()));
  prep.w.resize(prep.taps.size() * p.oc);
  return prep;
}

/// Packs the weights into prep.w unless they are the bytes packed last time.
void refresh_weights(const Plan& pl, Prepared& prep) {
  if (prep.from.same(*pl.p)) return;
  pack_weights(pl, prep, prep.w.data());
  prep.from.take(*pl.p);
}

/// A 1x1, stride-1, unpadded convolution of planes whose rows follow each
/// other in memory, seen as one over rows of a width that is a multiple of
/// `lanes` (so runs are whole and read the input in place); false when the
/// planes do not allow it.
bool as_wide_rows(ConvProblem& q, int64_t lanes) {
  if (q.kh != 1 || q.kw != 1 || q.stride[0] != 1 || q.stride[1] != 1 || q.pad[0] != 0 ||
      q.pad[1] != 0 || q.in_strides[3] != 1 || q.in_strides[2] != q.iw ||
      q.out_strides[2] != q.ow * q.out_strides[3] ||
      (q.residual != nullptr && q.residual_strides[2] != q.ow * q.residual_strides[3])) {
    return false;
  }
  const int64_t hw = q.ih * q.iw;
  if (hw % lanes != 0) return false;
  int64_t width = lanes;
  for (int64_t w = lanes; w <= 256; w += lanes) {
    if (hw % w == 0) width = w;
  }
  q.iw = q.ow = width;
  q.ih = q.oh = hw / width;
  q.in_strides[2] = width;
  q.out_strides[2] = width * q.out_strides[3];
  q.residual_strides[2] = width * q.residual_strides[3];
  return true;
}

}  // namespace

bool conv_f32(KernelContext& ctx, const ConvProblem& problem) {
  if (problem.dtype != DType::Float32 || problem.transposed || problem.ic == 0) return false;
  ConvProblem q = problem;
  const int64_t wide_lanes = kWide ? 16 : 8;
  Plan pl;
  pl.in_place = as_wide_rows(q, wide_lanes);
  const ConvProblem& p = q;
  pl.p = &p;
  pl.icg = p.ic / p.groups;
  pl.ocg = p.oc / p.groups;
  pl.lanes = kWide && p.ow > 8 ? 16 : 8;
  pl.runs_per_row = (p.ow + pl.lanes - 1) / pl.lanes;
  const bool clamped = p.activation == ops::ConvActivation::Clamp;
  pl.hardswish = p.activation == ops::ConvActivation::Hardswish;
  pl.lo = clamped ? static_cast<float>(p.clamp_min) : -INFINITY;
  pl.hi = clamped ? static_cast<float>(p.clamp_max) : INFINITY;
  pl.taps_count = pl.icg * p.kh * p.kw;
  // Weights are packed once per row class (usually 3: top, middle, bottom).
  if (std::min(p.oh, 2 * p.kh + 3) * p.oc * pl.taps_count > kMaxPackedWeights) return false;

  const int64_t s = p.stride[1];
  pl.phase_width = pl.runs_per_row * pl.lanes + (p.kw - 1) * p.dilation[1] / s;
  pl.row_pitch = s * pl.phase_width;
  auto rows_for = [&](int64_t band) {
    return (band - 1) * p.stride[0] + (p.kh - 1) * p.dilation[0] + 1;
  };
  auto floats_for = [&](int64_t band) { return p.ic * rows_for(band) * pl.row_pitch; };
  const double work = static_cast<double>(p.n) * p.oc * p.oh * p.ow * pl.taps_count;
  const bool parallel = ctx.num_threads > 1 && work >= kParallelWork;
  // Bands: the whole image when it fits, else as many rows as fit; with
  // threads, at least two items per thread (halo rows are copied twice).
  if (pl.in_place) {
    pl.band = p.oh;
  } else {
    if (floats_for(1) > kMaxBand) return false;
    pl.band = p.oh;
    while (pl.band > 1 && floats_for(pl.band) > kMaxBand) pl.band = (pl.band + 1) / 2;
  }
  if (parallel) {
    const int64_t wanted = 2 * static_cast<int64_t>(ctx.num_threads);
    if (p.n < wanted) pl.band = std::min(pl.band, std::max<int64_t>(1, p.oh * p.n / wanted));
  }
  pl.band_rows = rows_for(pl.band);
  pl.plane = pl.in_place ? p.in_strides[1] : pl.band_rows * pl.row_pitch;
  // Room past the last row for pad_band's vector of zeros.
  pl.image_floats = (p.ic * pl.plane + 8 + 15) / 16 * 16;
  const int64_t bands = (p.oh + pl.band - 1) / pl.band;
  pl.batch = 1;
  if (bands == 1 && !pl.in_place) {
    pl.batch = std::clamp<int64_t>(kBatchFloats / pl.image_floats, 1, kMaxBatch);
    if (parallel) {
      pl.batch = std::min(pl.batch,
                          std::max<int64_t>(1, p.n / (2 * static_cast<int64_t>(ctx.num_threads))));
    }
  } else if (bands == 1) {
    pl.batch = p.n;
    if (parallel)
      pl.batch = std::max<int64_t>(1, p.n / (2 * static_cast<int64_t>(ctx.num_threads)));
  }

  PlanKey key;
  key.add({p.ic, p.oc, p.groups, p.ih, p.iw, p.oh, p.ow, p.kh, p.kw, p.pad[0], p.pad[1],
           p.stride[0], p.stride[1], p.dilation[0], p.dilation[1], pl.lanes, pl.band,
           pl.in_place ? 1 : 0});
  if (pl.in_place) key.add({p.in_strides[1], p.in_strides[2]});
  for (int64_t st : p.w_strides) key.add(st);
  // Layers of one geometry (a network's repeated blocks) keep their packed
  // weights apart: with one plan between them, each call repacked.
  key.add(static_cast<int64_t>(reinterpret_cast<uintptr_t>(p.weight)));
  thread_local PlanCache<Prepared> cache(64);
  Prepared& prep = cache.get(key, [&] { return prepare(pl); });
  refresh_weights(pl, prep);
  pl.w = prep.w.data();
  pl.classes = static_cast<int64_t>(prep.row_class_begin.size()) - 1;
  pl.row_class_begin = prep.row_class_begin.data();
  pl.class_taps_begin = prep.class_taps_begin.data();
  pl.taps = prep.taps.data();

  // Work items: image batches x bands, and when those are too few for the
  // threads, parts of the output channels (each part pads its band again).
  int64_t items = (p.n + pl.batch - 1) / pl.batch * bands;
  int64_t parts = 1;
  pl.oc_part = pl.ocg;
  const int64_t want = 2 * static_cast<int64_t>(ctx.num_threads);
  if (parallel && items < want && p.groups == 1 && pl.ocg >= 32) {
    parts = std::min((want + items - 1) / items, pl.ocg / 16);
    pl.oc_part = ((pl.ocg + parts - 1) / parts + 7) / 8 * 8;
    parts = (pl.ocg + pl.oc_part - 1) / pl.oc_part;
  }
  items *= parts;
  // Scratch: a batch of band buffers per thread (slot parallel_thread_index()).
  const bool split = parallel && items > 1;
  const size_t buf_bytes =
      pl.in_place ? 0 : static_cast<size_t>(pl.batch * pl.image_floats) * sizeof(float);
  const int slots = split ? std::max(1, ctx.num_threads) : 1;
  char* bufs = static_cast<char*>(ctx.scratch(std::max<size_t>(64, slots * buf_bytes)));
  auto body = [&](int64_t begin, int64_t end) {
    const int slot = split ? cpu::parallel_thread_index() : 0;
    float* buf = reinterpret_cast<float*>(bufs + slot * buf_bytes);
    if (kWide && pl.lanes == 16) {
      run_items<V16>(pl, bands, parts, begin, end, buf);
    } else {
      run_items<V8>(pl, bands, parts, begin, end, buf);
    }
  };
  if (split) {
    cpu::parallel_for(ctx, items, static_cast<int64_t>(work / static_cast<double>(items)), body);
  } else {
    body(0, items);
  }
  return true;
}

}  // namespace pterun::cpu
