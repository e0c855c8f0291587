// Our own f32 convolution for forward stride-1 problems (the "same" 3x3
// layers of small CNNs). Each image is copied into a zero-padded planar
// buffer, after which tap (c, ky, kx) of a run of L consecutive output
// columns reads L consecutive floats: a direct convolution with no im2col
// matrix. Blocks of R output channels x N runs accumulate in vector
// registers and are stored straight into the output, so there is no layout
// reorder, and no oneDNN call (whose execute allocates on every call).
// Columns of a run past the end of a row are computed from the padding and
// not stored. Taps that fall on padding rows are skipped (output rows are
// grouped by which kernel rows are inside the image); padding columns are
// not, as they share vectors with real ones.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/vec_float.h"
#include "pterun/backend/cpu/ops/conv.h"
#include "pterun/backend/cpu/ops/dnnl_util.h"

// Without AVX the 32-byte vectors below are passed differently; they never
// cross a translation unit, so GCC's ABI note does not apply.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pterun::cpu {
namespace {

using kernels::KernelContext;

using vec::kWide;
using vec::load;
using vec::store;
using vec::V16;
using vec::V8;

// Block shapes (output channels x runs): registers hold the accumulators
// and a vector per run. With 32 registers: 4 x 6, 8 x 3 and 16 x 1 (one
// run: more channels share each input vector); with 16: 4 x 2.
constexpr int kMaxRuns = kWide ? 6 : 2;

/// Runs per block for `left` runs still to do in a row class.
int runs_per_block(int64_t left) {
  if constexpr (kWide) return left >= 6 ? 6 : left >= 3 ? 3 : static_cast<int>(left);
  return left >= 2 ? 2 : 1;
}

/// Output channels per block of `runs` runs, for `left` channels still to do.
int rows_per_block(int runs, int64_t left) {
  const int most = !kWide ? 4 : runs == 6 ? 4 : runs == 1 ? 16 : 8;
  for (int r = most; r > 1; r /= 2) {
    if (left >= r) return r;
  }
  return 1;
}

/// Largest padded image (all input channels) this kernel takes, in floats:
/// it lives in per-thread scratch and should stay in L2. Larger problems
/// go to oneDNN.
constexpr int64_t kMaxPaddedImage = int64_t{1} << 17;

/// Largest packed weights (floats, all row classes) this kernel keeps.
constexpr int64_t kMaxPackedWeights = int64_t{1} << 22;

/// Padded images run together: up to kMaxBatch of them, while they fit in
/// kBatchFloats (about half of L1).
constexpr int64_t kMaxBatch = 6;
constexpr int64_t kBatchFloats = 4096;

/// Multiply-adds from which images are split over the threads (about
/// 20-40 us of work: less than that does not pay for waking a helper).
constexpr double kParallelWork = 1 << 20;

/// Fewest output channels per group: below this (depthwise layers) a block
/// holds too few accumulators to hide the multiply-add latency; those
/// layers stay with oneDNN's depthwise kernels.
constexpr int64_t kMinGroupChannels = 4;

/// One block: R output channels (channel r's weight of tap t at
/// w[t * w_stride + r]; bias[r]) over N runs, run j reading the padded
/// image at src[j] + taps[t] and writing lanes[j] columns, dst_cs apart.
struct Block {
  const float* w;
  int64_t w_stride;
  const float* bias;  // or null
  int64_t taps_count;
  const int32_t* taps;
  const float* src[kMaxRuns];
  float* dst[kMaxRuns];
  int64_t lanes[kMaxRuns];
  int64_t dst_offset, dst_rs, dst_cs;  // channel r at dst[j] + dst_offset + r * dst_rs
  bool whole;                          // every run has L columns, and dst_cs is 1
};

// The R x N accumulators are indexed by constants only (pack expansions
// over I = r * N + j, no loops): GCC then keeps them in registers between
// the initial value, the taps and the stores, where loops over an array
// made it round-trip them through the stack (a third of the time of a
// 9-tap convolution).
template <typename V, int R, int N, size_t... I>
void block_impl(const Block& b, std::index_sequence<I...>) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  V acc[R * N];
  if (b.bias != nullptr) {
    ((acc[I] = V{} + b.bias[I / N]), ...);
  } else {
    ((acc[I] = V{}), ...);
  }
  const float* wt = b.w;
  for (int64_t t = 0; t < b.taps_count; ++t, wt += b.w_stride) {
    const int32_t offset = b.taps[t];
    V in[N];
    for (int j = 0; j < N; ++j) in[j] = load<V>(b.src[j] + offset);
    ((acc[I] += wt[I / N] * in[I % N]), ...);
  }
  if (b.whole) {
    (store(b.dst[I % N] + b.dst_offset + (I / N) * b.dst_rs, acc[I]), ...);
    return;
  }
  float lanes[R * N][L];
  (store(lanes[I], acc[I]), ...);
  for (size_t i = 0; i < R * N; ++i) {
    float* d = b.dst[i % N] + b.dst_offset + (i / N) * b.dst_rs;
    for (int64_t l = 0; l < b.lanes[i % N]; ++l) d[l * b.dst_cs] = lanes[i][l];
  }
}

template <typename V, int R, int N>
void block(const Block& b) {
  block_impl<V, R, N>(b, std::make_index_sequence<R * N>{});
}

template <typename V, int N>
void block_rows(const Block& b, int rows) {
  if constexpr (kWide && N == 1) {
    if (rows == 16) return block<V, 16, 1>(b);
  }
  if constexpr (kWide && N <= 3) {
    if (rows == 8) return block<V, 8, N>(b);
  }
  if (rows == 4) return block<V, 4, N>(b);
  if (rows == 2) return block<V, 2, N>(b);
  block<V, 1, N>(b);
}

template <typename V>
void block_any(const Block& b, int rows, int runs) {
  if constexpr (kWide) {
    switch (runs) {
      case 6: return block_rows<V, 6>(b, rows);
      case 3: return block_rows<V, 3>(b, rows);
      default: break;
    }
  }
  if (runs == 2) return block_rows<V, 2>(b, rows);
  block_rows<V, 1>(b, rows);
}

/// The problem as the kernel walks it.
struct Plan {
  const ConvProblem* p;
  int64_t lanes;          // L: columns per run
  int64_t runs_per_row;   // ceil(ow / L)
  int64_t width, height;  // of a padded plane
  int64_t plane;          // width * height
  int64_t icg, ocg, taps_count;
  // Output rows [row_class_begin[i], row_class_begin[i + 1]) read the taps
  // [class_taps_begin[i], class_taps_begin[i + 1]) (offsets in a group's
  // padded planes from a run's first column): those whose kernel row falls
  // inside the image, so that padding rows cost nothing. Their weights are
  // packed per class, group, tap, then output channel: group g of class i
  // at w + ocg * (groups * class_taps_begin[i] + g * taps in class i).
  int64_t classes;
  const int64_t* row_class_begin;
  const int64_t* class_taps_begin;
  const int32_t* taps;
  const float* w;
  int64_t batch;  // images padded and run together
};

/// What a problem's geometry and weights give, kept between calls (per
/// thread, by geometry) while the weight bytes stay the same: constant
/// weights are packed once.
struct Prepared {
  std::vector<int64_t> row_class_begin, class_taps_begin;
  std::vector<int32_t> taps;
  std::vector<int64_t> tap_index;  // of each tap: (c * kh + ky) * kw + kx
  std::vector<float> w;
  std::vector<char> weight_bytes;  // what w was packed from
  const void* weight_at = nullptr;
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

/// Copies image `ni` into the interior of `padded` ([ic][height][width]),
/// whose borders are zero already: they never change between images.
void pad_image(const Plan& pl, int64_t ni, float* padded) {
  const ConvProblem& p = *pl.p;
  const float* img = static_cast<const float*>(p.in) + ni * p.in_strides[0];
  const int64_t iw = p.iw, width = pl.width;
  const int64_t row_s = p.in_strides[2], col_s = p.in_strides[3];
  const int64_t rows = p.ih;
  float* first = padded + p.pad[0] * width + p.pad[1];
  for (int64_t c = 0; c < p.ic; ++c) {
    const float* src = img + c * p.in_strides[1];
    float* dst = first + c * pl.plane;
    if (col_s != 1) {
      for (int64_t y = 0; y < rows; ++y) {
        for (int64_t x = 0; x < iw; ++x) dst[y * width + x] = src[y * row_s + x * col_s];
      }
      continue;
    }
    // Eight floats at a time: rows are short, and a memcpy call or a
    // vectorised loop's checks per row would cost more than the copy.
    for (int64_t y = 0; y < rows; ++y, src += row_s, dst += width) {
      int64_t x = 0;
      for (; x + 8 <= iw; x += 8) store(dst + x, load<V8>(src + x));
      for (; x < iw; ++x) dst[x] = src[x];
    }
  }
}

/// Images [ni, ni + count), padded at padded + i * image_floats: the
/// runs of a row class in all of them form one sequence of blocks, so that
/// classes of a row or two (next to the padding) still fill wide blocks.
template <typename V>
void run_batch(const Plan& pl, int64_t ni, int64_t count, const float* padded,
               int64_t image_floats) {
  const ConvProblem& p = *pl.p;
  const int64_t L = pl.lanes;
  const int64_t* os = p.out_strides;
  const float* bias = static_cast<const float*>(p.bias);
  Block b{};
  b.dst_rs = os[1];
  b.dst_cs = os[3];
  for (int64_t g = 0; g < p.groups; ++g) {
    for (int64_t k = 0; k < pl.classes; ++k) {
      b.taps = pl.taps + pl.class_taps_begin[k];
      b.taps_count = pl.class_taps_begin[k + 1] - pl.class_taps_begin[k];
      b.w_stride = pl.ocg;
      const float* group_w = pl.w + pl.ocg * (p.groups * pl.class_taps_begin[k] + g * b.taps_count);
      const int64_t first_row = pl.row_class_begin[k], end_row = pl.row_class_begin[k + 1];
      const int64_t total = count * (end_row - first_row) * pl.runs_per_row;
      // The next run: image i, row y, column x0.
      int64_t i = 0, y = first_row, x0 = 0;
      for (int64_t r0 = 0; r0 < total;) {
        const int runs = runs_per_block(total - r0);
        b.whole = os[3] == 1;
        for (int j = 0; j < runs; ++j) {
          b.src[j] = padded + i * image_floats + g * pl.icg * pl.plane + y * pl.width + x0;
          b.dst[j] = static_cast<float*>(p.out) + (ni + i) * os[0] + g * pl.ocg * os[1] +
                     y * os[2] + x0 * os[3];
          b.lanes[j] = std::min(L, p.ow - x0);
          b.whole = b.whole && b.lanes[j] == L;
          x0 += L;
          if (x0 >= p.ow) {
            x0 = 0;
            if (++y == end_row) {
              y = first_row;
              ++i;
            }
          }
        }
        for (int64_t o0 = 0; o0 < pl.ocg;) {
          const int rows = rows_per_block(runs, pl.ocg - o0);
          b.w = group_w + o0;
          b.bias = bias != nullptr ? bias + g * pl.ocg + o0 : nullptr;
          b.dst_offset = o0 * os[1];
          block_any<V>(b, rows, runs);
          o0 += rows;
        }
        r0 += runs;
      }
    }
  }
}

/// Asks for image `ni`'s input lines ahead of pad_image(): the previous
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

/// Images [begin, end) in batches of pl.batch, padded into `padded`
/// (room for pl.batch images of image_floats).
template <typename V>
void run_images(const Plan& pl, int64_t begin, int64_t end, float* padded, int64_t image_floats) {
  std::fill(padded, padded + pl.batch * image_floats, 0.0f);
  for (int64_t ni = begin; ni < end; ni += pl.batch) {
    const int64_t count = std::min(pl.batch, end - ni);
    for (int64_t i = 0; i < count; ++i) pad_image(pl, ni + i, padded + i * image_floats);
    for (int64_t i = count; i < std::min(2 * count, end - ni); ++i) prefetch_image(pl, ni + i);
    run_batch<V>(pl, ni, count, padded, image_floats);
  }
}

/// Elements between the first and the last weight, plus one.
int64_t weight_span(const Plan& pl) {
  const ConvProblem& p = *pl.p;
  const int64_t* ws = p.w_strides;
  return 1 + (p.oc - 1) * ws[0] + (pl.icg - 1) * ws[1] + (p.kh - 1) * ws[2] + (p.kw - 1) * ws[3];
}

/// Row classes and their taps for `pl`'s geometry; weights sized, not
/// packed (refresh_weights does that).
Prepared prepare(const Plan& pl) {
  const ConvProblem& p = *pl.p;
  Prepared prep;
  int64_t lo = -1, hi = -1;
  for (int64_t y = 0; y < p.oh; ++y) {
    // Kernel rows [l, h) inside the image (a range: the input row grows
    // with ky); a new class where they change.
    int64_t l = 0, h = 0;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = y + ky * p.dilation[0] - p.pad[0];
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
          const int64_t offset = c * pl.plane + ky * p.dilation[0] * pl.width + kx * p.dilation[1];
          prep.taps.push_back(static_cast<int32_t>(offset));
          prep.tap_index.push_back((c * p.kh + ky) * p.kw + kx);
        }
      }
    }
  }
  prep.row_class_begin.push_back(p.oh);
  prep.class_taps_begin.push_back(static_cast<int64_t>(prep.taps.size()));
  prep.w.resize(prep.taps.size() * p.oc);
  prep.weight_bytes.resize(static_cast<size_t>(weight_span(pl)) * sizeof(float));
  return prep;
}

/// Packs the weights into prep.w unless they are the bytes packed last time.
void refresh_weights(const Plan& pl, Prepared& prep) {
  const ConvProblem& p = *pl.p;
  const size_t bytes = prep.weight_bytes.size();
  if (prep.weight_at == p.weight && std::memcmp(prep.weight_bytes.data(), p.weight, bytes) == 0) {
    return;
  }
  pack_weights(pl, prep, prep.w.data());
  std::memcpy(prep.weight_bytes.data(), p.weight, bytes);
  prep.weight_at = p.weight;
}

}  // namespace

bool conv_f32(KernelContext& ctx, const ConvProblem& p) {
  if (p.dtype != DType::Float32 || p.transposed || p.stride[0] != 1 || p.stride[1] != 1 ||
      p.ic == 0) {
    return false;
  }
  // Channels-last outputs (an XNNPACK graph's NHWC activations) would be
  // stored a column at a time; oneDNN's channels-last kernels store whole
  // vectors and win by 1.3-1.6x on the XNNPACK fixtures' convolutions.
  if (p.out_strides[3] != 1 && p.ow > 1) return false;
  Plan pl;
  pl.p = &p;
  pl.icg = p.ic / p.groups;
  pl.ocg = p.oc / p.groups;
  if (pl.ocg < kMinGroupChannels) return false;
  pl.lanes = kWide && p.ow > 8 ? 16 : 8;
  pl.runs_per_row = (p.ow + pl.lanes - 1) / pl.lanes;
  // Stride 1: ih + 2 * ph = oh + (kh - 1) * dh rows; the width also covers
  // the last run's columns past ow.
  pl.height = p.ih + 2 * p.pad[0];
  pl.width = pl.runs_per_row * pl.lanes + (p.kw - 1) * p.dilation[1];
  pl.plane = pl.width * pl.height;
  if (p.ic * pl.plane > kMaxPaddedImage) return false;
  pl.taps_count = pl.icg * p.kh * p.kw;
  // Weights are packed once per row class (usually 3: top, middle, bottom).
  if (std::min(p.oh, 2 * p.kh + 3) * p.oc * pl.taps_count > kMaxPackedWeights) return false;

  dnnl_util::PlanKey key;
  key.add({p.ic, p.oc, p.groups, p.ih, p.iw, p.oh, p.ow, p.kh, p.kw, p.pad[0], p.pad[1],
           p.dilation[0], p.dilation[1], pl.lanes});
  for (int64_t s : p.w_strides) key.add(s);
  thread_local dnnl_util::PlanCache<Prepared> cache(64);
  Prepared& prep = cache.get(key, [&] { return prepare(pl); });
  refresh_weights(pl, prep);
  pl.w = prep.w.data();
  pl.classes = static_cast<int64_t>(prep.row_class_begin.size()) - 1;
  pl.row_class_begin = prep.row_class_begin.data();
  pl.class_taps_begin = prep.class_taps_begin.data();
  pl.taps = prep.taps.data();

  // Scratch: a batch of padded images per thread (slot
  // parallel_thread_index()), as many as fit about half of L1.
  const int64_t image_floats = (p.ic * pl.plane + 15) / 16 * 16;
  pl.batch = std::clamp<int64_t>(kBatchFloats / image_floats, 1, kMaxBatch);
  const size_t image_bytes = static_cast<size_t>(pl.batch * image_floats) * sizeof(float);
  const int64_t per_image = p.oc * p.oh * p.ow * pl.taps_count;
  const bool parallel = static_cast<double>(per_image) * p.n >= kParallelWork;
  const int slots = parallel ? std::max(1, ctx.num_threads) : 1;
  char* images = static_cast<char*>(ctx.scratch(slots * image_bytes));

  // Images in ranges over the threads.
  auto body = [&](int64_t begin, int64_t end) {
    const int slot = parallel ? cpu::parallel_thread_index() : 0;
    float* padded = reinterpret_cast<float*>(images + slot * image_bytes);
    if (kWide && pl.lanes == 16) {
      run_images<V16>(pl, begin, end, padded, image_floats);
    } else {
      run_images<V8>(pl, begin, end, padded, image_floats);
    }
  };
  if (parallel) {
    cpu::parallel_for(ctx, p.n, per_image, body);
  } else {
    body(0, p.n);
  }
  return true;
}

}  // namespace pterun::cpu
