// 4-bit weights of XNNPACK's dynamically quantized fully connected layer on
// the CPU (quant_dynamic.cpp quantizes the activations). With AVX2 or
// AVX-512 VNNI: each chunk of 64 (AVX2) or 128 (AVX-512) inputs of an
// activation row is stored as
// uint8 (q + 128), its even elements first, then its odd ones, so that one
// load of weight bytes, split into low and high nibbles, lines up with it;
// vpmaddubsw (AVX2) or vpdpbusd (AVX-512) multiplies them by the nibbles
// as stored (w, 0..15) without saturating (4 * 255 * 15 fits int16), each
// int32 sum starting from -8 times the activations it covers (made once
// per row), so that it ends as the sum of (q + 128)(w - 8). Lane L of the
// int32 sums covers inputs 8L..8L+7 of the chunk's even or odd half, so
// each block of 32 inputs or more has lanes of its own: its int32 sum is
// scaled once, by a vector of the blocks' scales. The shift by 128 and the
// activations' zero point come back once per output, through the weights'
// scaled block sums (weight_sums).
//
// Tiles of four activation rows by two outputs reuse each unpacked chunk
// of weights for four rows (prefill). The last rows (a decode step's one)
// take one output after the other: the weights, read once, are then one
// sequential stream from memory, which is what bounds a decode step.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "pterun/backend/cpu/engine/fetch_ahead.h"
#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/backend/cpu/ops/quant_dynamic.h"
#include "pterun/backend/cpu/ops/quant_gemm.h"
#include "pterun/backend/cpu/ops/quant_util.h"
#include "pterun/core/error.h"
#include "pterun/core/half.h"
#include "pterun/core/str_cat.h"
#include "pterun/kernels/common/device_check.h"
#include "pterun/kernels/common/quant_math.h"
#include "pterun/ops/quant.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;
using kernels::quantize_qd8;
using qdyn::kChunk;
using qdyn::RowBytes;
using qdyn::RowQuant;

using qdyn::finish;
using qdyn::quantize_rows;

/// Any k and block size: one output at a time (w_zp 8, plain int8 rows).
/// S: the block scales' type, float or BFloat16.
template <typename S>
void linear_4bit_scalar(KernelContext& ctx, const ops::QDynLinearArgs& a, const int8_t* q,
                        const RowQuant* params) {
  const int64_t n = a.n, k = a.k, bs = k / a.blocks, row_bytes = (k + 1) / 2;
  const uint8_t* w = a.weight.data_as<const uint8_t>();
  const S* scales = a.weight_scales.data_as<const S>();
  float* out = a.out.data_as<float>();
  parallel_for(ctx, n, a.m * k, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      const uint8_t* wj = w + j * row_bytes;
      for (int64_t i = 0; i < a.m; ++i) {
        const int8_t* qi = q + i * k;
        const int32_t zp = params[i].zero_point;
        float acc = 0;
        for (int64_t b = 0; b < a.blocks; ++b) {
          int32_t s = 0;
          for (int64_t e = b * bs; e < (b + 1) * bs; ++e) {
            const int32_t v = (e % 2 == 0 ? wj[e / 2] & 0x0F : wj[e / 2] >> 4) - 8;
            s += (qi[e] - zp) * v;
          }
          acc += static_cast<float>(s) * static_cast<float>(scales[j * a.blocks + b]);
        }
        out[i * n + j] = finish(acc, a, params[i], j);
      }
    }
  });
}

/// Where the 4-bit vector kernels apply: whole chunks, and blocks of whole
/// chunks or of a multiple of 32 inputs dividing a chunk.
bool vector_4bit(int64_t k, int64_t bs) {
#if (defined(__AVX2__) && defined(__FMA__)) || (defined(__AVX512VNNI__) && defined(__AVX512BW__))
  return k % kChunk == 0 && bs % 32 == 0 && (bs % kChunk == 0 || kChunk % bs == 0);
#else
  (void)k;
  (void)bs;
  return false;
#endif
}

/// The ends of row i's outputs [j0, j0 + n) from their totals: the shift
/// by 128 and the zero point taken back (sum_b s_b * sum (q + 128)(w - 8)
/// - (128 + zp) * weight_sums[j]), then `finish`'s scale, bias and clamp
/// in the same order, as one loop GCC vectorises.
void finish_4bit_run(const ops::QDynLinearArgs& a, const RowQuant& p, int64_t i, int64_t j0,
                     int64_t n, const float* totals) {
  const float* zp_terms = a.weight_sums.data_as<const float>() + j0;
  const float* bias = a.bias != nullptr ? a.bias->data_as<const float>() + j0 : nullptr;
  const float shift = static_cast<float>(128 + p.zero_point), scale = p.scale;
  const float lo = a.out_min, hi = a.out_max;
  float* out = a.out.data_as<float>() + i * a.n + j0;
  if (bias != nullptr) {
    for (int64_t c = 0; c < n; ++c) {
      const float y = (totals[c] - shift * zp_terms[c]) * scale + bias[c];
      out[c] = std::min(std::max(y, lo), hi);
    }
  } else {
    for (int64_t c = 0; c < n; ++c) {
      out[c] = std::min(std::max((totals[c] - shift * zp_terms[c]) * scale, lo), hi);
    }
  }
}

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)

/// The 4-bit kernel's vectors: AVX-512, vpdpbusd.
struct Isa {
  using F = __m512;
  using I = __m512i;
  static constexpr int kLanes = 16;
  static F fzero() { return _mm512_setzero_ps(); }
  static I izero() { return _mm512_setzero_si512(); }
  /// Chunk bytes as the stored weights w (0..15): low nibbles, high ones.
  static void unpack(const uint8_t* p, I& lo, I& hi) {
    const I bytes = _mm512_loadu_si512(p), mask = _mm512_set1_epi8(0x0F);
    lo = _mm512_and_si512(bytes, mask);
    hi = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), mask);
  }
  static I set1(int8_t v) { return _mm512_set1_epi8(v); }
  static I load(const I* p) { return _mm512_load_si512(p); }
  static void store(I* p, I v) { _mm512_store_si512(p, v); }
  /// acc + the products of a chunk's activations (even, odd) and weights.
  static I dot(I acc, const uint8_t* q, I lo, I hi) {
    acc = _mm512_dpbusd_epi32(acc, _mm512_load_si512(q), lo);
    return _mm512_dpbusd_epi32(acc, _mm512_load_si512(q + kChunk / 2), hi);
  }
  /// Which of a step's scales each lane takes: the first `per_chunk`
  /// loaded (at least one), lane L taking lane_block[L] of them.
  struct Lanes {
    I index;
    __mmask16 first;
  };
  static Lanes lanes(int64_t per_chunk, const int32_t* lane_block) {
    return {_mm512_load_si512(lane_block),
            static_cast<__mmask16>((1u << std::max<int64_t>(per_chunk, 1)) - 1)};
  }
  /// The lanes' scales from `s`.
  static F scales(const float* s, const Lanes& l) {
    return _mm512_permutexvar_ps(l.index, _mm512_maskz_loadu_ps(l.first, s));
  }
  /// The same from bfloat16 scales: each widened to the top of a float.
  static F scales(const BFloat16* s, const Lanes& l) {
    const __m256i bits = _mm256_maskz_loadu_epi16(l.first, s);
    const F wide = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
    return _mm512_permutexvar_ps(l.index, wide);
  }
  static F fma(I acc, F scale, F facc) {
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), scale, facc);
  }
  static float sum(F v) { return _mm512_reduce_add_ps(v); }
};

#elif defined(__AVX2__) && defined(__FMA__)

/// The 4-bit kernel's vectors: AVX2, vpmaddubsw (4 * 255 * 15 fits int16).
struct Isa {
  using F = __m256;
  using I = __m256i;
  static constexpr int kLanes = 8;
  static F fzero() { return _mm256_setzero_ps(); }
  static I izero() { return _mm256_setzero_si256(); }
  static void unpack(const uint8_t* p, I& lo, I& hi) {
    const I bytes = _mm256_loadu_si256(reinterpret_cast<const I*>(p));
    const I mask = _mm256_set1_epi8(0x0F);
    lo = _mm256_and_si256(bytes, mask);
    hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), mask);
  }
  static I set1(int8_t v) { return _mm256_set1_epi8(v); }
  static I load(const I* p) { return _mm256_load_si256(p); }
  static void store(I* p, I v) { _mm256_store_si256(p, v); }
  static I dot(I acc, const uint8_t* q, I lo, I hi) {
    const I even = _mm256_load_si256(reinterpret_cast<const I*>(q));
    const I odd = _mm256_load_si256(reinterpret_cast<const I*>(q + kChunk / 2));
    const I p16 = _mm256_add_epi16(_mm256_maddubs_epi16(even, lo), _mm256_maddubs_epi16(odd, hi));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
  }
  /// per_chunk is 2 (blocks of 32: two scales, each to four lanes) or 0
  /// (one for the whole chunk).
  struct Lanes {
    I index;
    bool two;
  };
  static Lanes lanes(int64_t per_chunk, const int32_t* lane_block) {
    return {_mm256_load_si256(reinterpret_cast<const I*>(lane_block)), per_chunk == 2};
  }
  static F scales(const float* s, const Lanes& l) {
    if (!l.two) return _mm256_set1_ps(*s);
    const F two = _mm256_castpd_ps(_mm256_broadcast_sd(reinterpret_cast<const double*>(s)));
    return _mm256_permutevar8x32_ps(two, l.index);
  }
  static F scales(const BFloat16* s, const Lanes& l) {
    if (!l.two) return _mm256_set1_ps(static_cast<float>(*s));
    // Two bfloat16 in every 32-bit lane: the first widened into the even
    // lanes, the second (already on top) kept in the odd ones.
    int32_t pair;
    std::memcpy(&pair, s, 4);
    const I both = _mm256_set1_epi32(pair);
    const I two = _mm256_blend_epi32(_mm256_slli_epi32(both, 16),
                                     _mm256_and_si256(both, _mm256_set1_epi32(-65536)), 0xAA);
    return _mm256_permutevar8x32_ps(_mm256_castsi256_ps(two), l.index);
  }
  static F fma(I acc, F scale, F facc) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), scale, facc);
  }
  static float sum(F v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
};

#endif

#if (defined(__AVX2__) && defined(__FMA__)) || (defined(__AVX512VNNI__) && defined(__AVX512BW__))

/// What every tile of one call shares.
struct Plan4 {
  int64_t steps;            // scale steps per row: blocks, or chunks when blocks are smaller
  int64_t per_chunk;        // blocks per chunk (blocks smaller than a chunk), else 0
  int64_t chunks_per_step;  // 1 when blocks are smaller than a chunk
  alignas(64) int32_t lane_block[Isa::kLanes];  // lane -> block within the chunk
};

Plan4 plan_4bit(int64_t k, int64_t bs) {
  Plan4 p{};
  p.per_chunk = bs < kChunk ? kChunk / bs : 0;
  p.chunks_per_step = bs < kChunk ? 1 : bs / kChunk;
  p.steps = k / kChunk / p.chunks_per_step;
  // Lane L covers inputs 8L..8L+7 of each half of the chunk.
  for (int l = 0; l < Isa::kLanes; ++l) {
    p.lane_block[l] = p.per_chunk > 0 ? static_cast<int32_t>(8 * l / bs) : 0;
  }
  return p;
}

/// Each row's lanes of -8 * sum (q + 128) per scale step, in the lanes of
/// Isa::dot: where the integer sums start, so that the products can take
/// the stored nibbles w as they are and still sum (q + 128)(w - 8).
void lane_offsets(KernelContext& ctx, const ops::QDynLinearArgs& a, const Plan4& plan,
                  const uint8_t* q, Isa::I* init) {
  parallel_for(ctx, a.m, a.k, [&](int64_t begin, int64_t end) {
    const Isa::I minus8 = Isa::set1(-8);
    for (int64_t i = begin; i < end; ++i) {
      const uint8_t* qi = q + i * a.k;
      for (int64_t st = 0; st < plan.steps; ++st) {
        Isa::I acc = Isa::izero();
        for (int64_t cc = 0; cc < plan.chunks_per_step; ++cc) {
          acc = Isa::dot(acc, qi + (st * plan.chunks_per_step + cc) * kChunk, minus8, minus8);
        }
        Isa::store(init + i * plan.steps + st, acc);
      }
    }
  });
}

/// Outputs of rows [i0, i0 + R) x columns [j0, j0 + C): each chunk of
/// weights is unpacked once for the R rows, each chunk of activations
/// loaded once for the C columns.
template <typename S, int R, int C>
void tile_4bit(const ops::QDynLinearArgs& a, const Plan4& plan, const uint8_t* q,
               const Isa::I* init, const RowQuant* params, int64_t i0, int64_t j0) {
  const int64_t k = a.k;
  const uint8_t* w = a.weight.data_as<const uint8_t>() + j0 * (k / 2);
  const S* scales = a.weight_scales.data_as<const S>() + j0 * a.blocks;
  const Isa::Lanes lanes = Isa::lanes(plan.per_chunk, plan.lane_block);
  Isa::F facc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) facc[r][c] = Isa::fzero();
  }
  for (int64_t st = 0; st < plan.steps; ++st) {
    Isa::I iacc[R][C];
    for (int r = 0; r < R; ++r) {
      const Isa::I start = Isa::load(init + (i0 + r) * plan.steps + st);
      for (int c = 0; c < C; ++c) iacc[r][c] = start;
    }
    for (int64_t ch = st * plan.chunks_per_step; ch < (st + 1) * plan.chunks_per_step; ++ch) {
      Isa::I lo[C], hi[C];
      for (int c = 0; c < C; ++c) {
        const uint8_t* wc = w + c * (k / 2) + ch * (kChunk / 2);
        // Several rows read side by side are streams the hardware does not
        // follow: fetch the same place of the next tile's rows. One row is
        // one sequential stream, which it follows better than this.
        if constexpr (C > 1) {
          _mm_prefetch(reinterpret_cast<const char*>(wc + 2 * C * (k / 2)), _MM_HINT_T0);
        }
        Isa::unpack(wc, lo[c], hi[c]);
      }
      for (int r = 0; r < R; ++r) {
        const uint8_t* qc = q + (i0 + r) * k + ch * kChunk;
        for (int c = 0; c < C; ++c) iacc[r][c] = Isa::dot(iacc[r][c], qc, lo[c], hi[c]);
      }
    }
    const int64_t first = plan.per_chunk > 0 ? st * plan.per_chunk : st;
    for (int c = 0; c < C; ++c) {
      const Isa::F scale = Isa::scales(scales + c * a.blocks + first, lanes);
      for (int r = 0; r < R; ++r) facc[r][c] = Isa::fma(iacc[r][c], scale, facc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r) {
    float totals[C];
    for (int c = 0; c < C; ++c) totals[c] = Isa::sum(facc[r][c]);
    finish_4bit_run(a, params[i0 + r], i0 + r, j0, C, totals);
  }
}

constexpr int64_t kPanel = 8;  // columns per task

/// Row `qi` (its lane offsets `init_i`) against the column whose weight
/// row starts at `w` and scales at `s`: its float total. The weights are
/// read start to end, each line fetched well ahead (fetch_ahead_deep).
/// Reading two or four columns side by side was no faster from memory.
template <typename S>
float column_4bit(const Plan4& plan, const Isa::Lanes& lanes, const uint8_t* qi,
                  const Isa::I* init_i, const uint8_t* w, const S* s) {
  const int64_t cps = plan.chunks_per_step, steps = plan.steps;
  const int64_t scale_step = plan.per_chunk > 0 ? plan.per_chunk : 1;
  Isa::F facc = Isa::fzero();
  auto step = [&](int64_t st, int64_t ch0, int64_t ch1) {
    Isa::I acc = Isa::load(init_i + st);
    for (int64_t ch = ch0; ch < ch1; ++ch) {
      const uint8_t* wc = w + ch * (kChunk / 2);
      Isa::I lo, hi;
      fetch_ahead_deep(wc);
      Isa::unpack(wc, lo, hi);
      acc = Isa::dot(acc, qi + ch * kChunk, lo, hi);
    }
    facc = Isa::fma(acc, Isa::scales(s + st * scale_step, lanes), facc);
  };
  // One chunk a scale step (blocks no larger than a chunk: 32 to 128
  // inputs with AVX-512, 32 or 64 with AVX2) as a loop of its own, which
  // the compiler keeps in registers.
  if (cps == 1) {
    for (int64_t st = 0; st < steps; ++st) step(st, st, st + 1);
  } else {
    for (int64_t st = 0; st < steps; ++st) step(st, st * cps, (st + 1) * cps);
  }
  return Isa::sum(facc);
}

/// Row i (a decode step's one) against columns [j0, j1), at most kPanel,
/// one column after the other: the panel's weights (and its scales) are
/// read from memory as sequential streams; the ends of the columns are
/// finished together.
template <typename S>
void row_4bit(const ops::QDynLinearArgs& a, const Plan4& plan, const uint8_t* q, const Isa::I* init,
              const RowQuant& p, int64_t i, int64_t j0, int64_t j1) {
  const int64_t row_bytes = a.k / 2;
  const uint8_t* w = a.weight.data_as<const uint8_t>();
  const S* s = a.weight_scales.data_as<const S>();
  const Isa::Lanes lanes = Isa::lanes(plan.per_chunk, plan.lane_block);
  float totals[kPanel];
  for (int64_t j = j0; j < j1; ++j) {
    totals[j - j0] = column_4bit<S>(plan, lanes, q + i * a.k, init + i * plan.steps,
                                    w + j * row_bytes, s + j * a.blocks);
  }
  finish_4bit_run(a, p, i, j0, j1 - j0, totals);
}

/// Columns [j0, j1) of every row: 4-row tiles two columns wide (the
/// panel's weights stay in cache across the row tiles), then the last
/// rows one at a time.
template <typename S>
void panel_4bit(const ops::QDynLinearArgs& a, const Plan4& plan, const uint8_t* q,
                const Isa::I* init, const RowQuant* params, int64_t j0, int64_t j1) {
  int64_t i = 0;
  for (; i + 4 <= a.m; i += 4) {
    int64_t j = j0;
    for (; j + 2 <= j1; j += 2) tile_4bit<S, 4, 2>(a, plan, q, init, params, i, j);
    for (; j < j1; ++j) tile_4bit<S, 4, 1>(a, plan, q, init, params, i, j);
  }
  for (; i < a.m; ++i) row_4bit<S>(a, plan, q, init, params[i], i, j0, j1);
}

#endif

/// Whether linear_4bit_rows takes a layer: the packed kernel, many rows,
/// blocks of whole groups of 4 inputs.
bool packed_4bit(const ops::QDynLinearArgs& a) {
  const int64_t bs = a.k / a.blocks;
  return qgemm_packs() && a.m >= kQgemmPackRows && a.k % a.blocks == 0 && bs % 4 == 0;
}

/// Nibbles of one weight row (k / 2 bytes, low nibble first) as k int8
/// values w - 8.
void expand_4bit(const uint8_t* row, int64_t k, int8_t* out) {
  int64_t e = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const __m128i mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  for (; e + 32 <= k; e += 32) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + e / 2));
    const __m128i lo = _mm_and_si128(bytes, mask);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + e),
                     _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), eight));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + e + 16),
                     _mm_sub_epi8(_mm_unpackhi_epi8(lo, hi), eight));
  }
#endif
  for (; e < k; ++e) {
    const uint8_t byte = row[e / 2];
    out[e] = static_cast<int8_t>((e % 2 == 0 ? byte & 0x0F : byte >> 4) - 8);
  }
}

/// 4-bit layers of many rows (prefill): per task of 32 output columns,
/// the weights expanded to int8 (w - 8) and packed once, then every row
/// against them on the packed kernel (qgemm_blocks) with the activations
/// as q + 128; finish_4bit_run takes the shift and zero point back.
template <typename S>
void linear_4bit_rows(KernelContext& ctx, const ops::QDynLinearArgs& a) {
  constexpr int64_t kCols = 32;
  const int64_t m = a.m, n = a.n, k = a.k, blocks = a.blocks, row_bytes = k / 2;
  const int64_t panel_bytes = qgemm_panel_bytes(k);
  const size_t q_bytes = aligned(static_cast<size_t>(m * k));
  const size_t p_bytes = aligned(static_cast<size_t>(m) * sizeof(RowQuant));
  // Per thread: the expanded columns, their panels, their scales block by
  // block, and the float totals of every row.
  const size_t expand_bytes = aligned(static_cast<size_t>(kCols * k));
  const size_t panels_bytes = aligned(static_cast<size_t>(2 * panel_bytes));
  const size_t scales_bytes = aligned(static_cast<size_t>(blocks * kCols) * sizeof(float));
  const size_t totals_bytes = aligned(static_cast<size_t>(m * kCols) * sizeof(float));
  const size_t slot = expand_bytes + panels_bytes + scales_bytes + totals_bytes;
  const int threads = std::max(1, ctx.num_threads);
  auto* scratch = static_cast<char*>(ctx.scratch(q_bytes + p_bytes + slot * threads));
  auto* q = reinterpret_cast<uint8_t*>(scratch);
  auto* params = reinterpret_cast<RowQuant*>(scratch + q_bytes);
  quantize_rows(ctx, a, q, k, RowBytes::Shifted, params);
  const uint8_t* w = a.weight.data_as<const uint8_t>();
  const S* ws = a.weight_scales.data_as<const S>();
  const int64_t tasks = (n + kCols - 1) / kCols;
  parallel_for(ctx, tasks, m * kCols * k / 4, [&](int64_t begin, int64_t end) {
    char* mine = scratch + q_bytes + p_bytes + slot * parallel_thread_index();
    auto* expanded = reinterpret_cast<int8_t*>(mine);
    auto* panels = reinterpret_cast<uint8_t*>(mine + expand_bytes);
    auto* scales = reinterpret_cast<float*>(mine + expand_bytes + panels_bytes);
    auto* totals = reinterpret_cast<float*>(mine + expand_bytes + panels_bytes + scales_bytes);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t j0 = t * kCols, cols = std::min(kCols, n - j0);
      for (int64_t c = 0; c < cols; ++c) expand_4bit(w + (j0 + c) * row_bytes, k, expanded + c * k);
      qgemm_pack(expanded, k, cols, k, false, 0, (cols + 15) / 16, panels);
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t c = 0; c < cols; ++c) {
          scales[b * kCols + c] = static_cast<float>(ws[(j0 + c) * blocks + b]);
        }
      }
      qgemm_blocks({q, k, m, k, k / blocks, panels, cols, scales, kCols, totals, kCols});
      for (int64_t i = 0; i < m; ++i)
        finish_4bit_run(a, params[i], i, j0, cols, totals + i * kCols);
    }
  });
}

/// The layer, its block scales of type S.
template <typename S>
void linear_4bit_as(KernelContext& ctx, const ops::QDynLinearArgs& a) {
  if (packed_4bit(a)) {
    linear_4bit_rows<S>(ctx, a);
    return;
  }
  const int64_t m = a.m, k = a.k;
  const bool fast = vector_4bit(k, k / a.blocks);
  const size_t q_bytes = aligned(static_cast<size_t>(m * k));
  const size_t p_bytes = aligned(static_cast<size_t>(m) * sizeof(RowQuant));
  // The lane offsets: a vector per row and scale step, at most one step
  // per chunk (kChunk / 2 bytes a vector), so k / 2 bytes a row.
  const size_t init_bytes = fast ? static_cast<size_t>(m * (k / 2)) : 0;
  auto* scratch = static_cast<char*>(ctx.scratch(q_bytes + p_bytes + init_bytes));
  auto* q = reinterpret_cast<uint8_t*>(scratch);
  auto* params = reinterpret_cast<RowQuant*>(scratch + q_bytes);
  // Rows of a multiple of 64 bytes stay 64-byte aligned for the loads.
  quantize_rows(ctx, a, q, k, fast ? RowBytes::Interleaved : RowBytes::Int8, params);
  if (!fast) {
    linear_4bit_scalar<S>(ctx, a, reinterpret_cast<const int8_t*>(q), params);
    return;
  }
#if (defined(__AVX2__) && defined(__FMA__)) || (defined(__AVX512VNNI__) && defined(__AVX512BW__))
  const Plan4 plan = plan_4bit(k, k / a.blocks);
  auto* init = reinterpret_cast<Isa::I*>(scratch + q_bytes + p_bytes);
  lane_offsets(ctx, a, plan, q, init);
  const int64_t panels = (a.n + kPanel - 1) / kPanel;
  // Decode rows alone (no tiles of four): two tasks per thread, each a run
  // of whole panels, so that each thread streams long stretches of the
  // filter (a stream the prefetchers have picked up is worth keeping).
  const int64_t runs = 2 * std::max(1, ctx.num_threads);
  const int64_t per_task = a.m < 4 ? (panels + runs - 1) / runs : 1;
  const int64_t tasks = (panels + per_task - 1) / per_task;
  parallel_for(ctx, tasks, per_task * kPanel * m * k / 4, [&](int64_t begin, int64_t end) {
    // Each range reads a copy of the plan on its own thread's stack. Read
    // in place (the caller's stack) at every scale step, the helper ran at
    // half speed: the cpu llama's 8da4w decode step took 4.6 ms on two
    // threads against 2.9 with the copy (5.3 on one). A gap of stack below
    // the caller's frame did not help; the cause was not pinned down.
    const Plan4 mine = plan;
    for (int64_t t = begin * per_task; t < std::min(panels, end * per_task); ++t) {
      panel_4bit<S>(a, mine, q, init, params, t * kPanel, std::min(a.n, (t + 1) * kPanel));
    }
  });
#endif
}

}  // namespace

void qdyn::linear_4bit(KernelContext& ctx, const ops::QDynLinearArgs& a) {
  if (a.weight_scales.dtype() == DType::BFloat16) {
    linear_4bit_as<BFloat16>(ctx, a);
  } else {
    linear_4bit_as<float>(ctx, a);
  }
}

}  // namespace pterun::cpu
