// The int8 matrix product on packed weights (quant_gemm.h, qgemm_packed),
// AVX-512 VNNI only: the weights of 16 output channels are interleaved so
// that one 64-byte load holds 4 consecutive inputs of each of them, and
// vpdpbusd multiplies it by 4 activation bytes broadcast to every lane.
// Every lane is then one output of its own (no sums across lanes at the
// end), K needs padding only to a multiple of 4 (not of 64, as the dot
// products of qgemm), and a tile of 8 rows x 32 channels keeps its 32
// weight bytes per step in two registers for 16 multiplies.
//
// vpdpbusd takes its first operand unsigned. uint8 activations go in as
// they are, against the weights. int8 activations cannot, so the packed
// weights are stored + 128 (uint8) and the activations go in as the signed
// operand: d = sum_k (w + 128) * a = sum_k w * a + 128 * sum_k a, taken back
// through each row's sum of activations.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/backend/cpu/ops/quant_gemm.h"
#include "pterun/backend/cpu/ops/quant_keep.h"
#include "pterun/backend/cpu/ops/quant_requant.h"
#include "pterun/core/error.h"

namespace pterun::cpu {

// k / 4 + 1 groups of 4 inputs: the last one partial (its missing inputs
// packed as zeros), or unused when k is a multiple of 4; rounded up to 16
// groups, the depth of an AMX step.
int64_t qgemm_panel_bytes(int64_t k) {
  return (k / 4 + 16) / 16 * 16 * 64;
}

bool qgemm_packs() {
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
  return true;
#else
  return false;
#endif
}

size_t qgemm_rows_bytes(int64_t m, int64_t k) {
  if (!qgemm_packs() || m < kQgemmPackRows) return 0;
  return static_cast<size_t>((m + 15) / 16 * qgemm_panel_bytes(k));
}

void qgemm_pack(const int8_t* w, int64_t ldw, int64_t n, int64_t k, bool shift128,
                int64_t panel_begin, int64_t panel_end, uint8_t* out) {
  const int64_t panel_bytes = qgemm_panel_bytes(k), whole = k / 4;
  // + 128 of a byte is a flip of its top bit. Padding is 0 (not the
  // shifted 0): whatever the other operand holds there adds nothing.
  const uint32_t flip = shift128 ? 0x80808080u : 0u;
  const int shift = shift128 ? 0x80 : 0;
  for (int64_t panel = panel_begin; panel < panel_end; ++panel) {
    uint8_t* dst = out + panel * panel_bytes;
    std::memset(dst, 0, static_cast<size_t>(panel_bytes));
    for (int64_t c = 0; c < 16 && panel * 16 + c < n; ++c) {
      const int8_t* row = w + (panel * 16 + c) * ldw;
      for (int64_t q = 0; q < whole; ++q) {
        uint32_t v;
        std::memcpy(&v, row + 4 * q, 4);
        v ^= flip;
        std::memcpy(dst + q * 64 + c * 4, &v, 4);
      }
      for (int64_t kk = whole * 4; kk < k; ++kk) {
        dst[whole * 64 + c * 4 + (kk - whole * 4)] = static_cast<uint8_t>(row[kk] ^ shift);
      }
    }
  }
}

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)

namespace {

constexpr int kRows = 8;

/// The bytes of row `a` from input 4 * (k / 4) on (fewer than 4; zeros
/// past k).
inline int32_t tail(const uint8_t* a, int64_t k) {
  // Fixed-size loads (a copy of k % 4 bytes into a word went through the
  // stack, byte by byte, and cost as much as the whole groups before it).
  const uint8_t* p = a + k / 4 * 4;
  uint16_t two = 0;
  switch (k % 4) {
    case 1: return p[0];
    case 2: std::memcpy(&two, p, 2); return two;
    case 3: std::memcpy(&two, p, 2); return two | int32_t{p[2]} << 16;
    default: return 0;
  }
}

/// One step: acc[r][c] += the 4 activation bytes b[r] times the 4 weight
/// bytes of each of panel c's 16 channels.
template <int R, int P, bool Flip>
[[gnu::always_inline]] inline void step(__m512i (&acc)[R][P], const uint8_t* panel,
                                        int64_t panel_bytes, int64_t q, const int32_t (&b)[R]) {
  __m512i w[P];
#pragma GCC unroll 2
  for (int c = 0; c < P; ++c) w[c] = _mm512_loadu_si512(panel + c * panel_bytes + q * 64);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512i v = _mm512_set1_epi32(b[r]);
#pragma GCC unroll 2
    for (int c = 0; c < P; ++c) {
      acc[r][c] =
          Flip ? _mm512_dpbusd_epi32(acc[r][c], w[c], v) : _mm512_dpbusd_epi32(acc[r][c], v, w[c]);
    }
  }
}

/// One tile: R rows read in place (4 bytes broadcast per step) against P
/// packed panels of 16 lanes. Output (x, y), row x of the tile and lane y,
/// goes to out[x * row_stride + y * lane_stride]; the accumulators start at
/// -(base[x] + lane_term[y]) (what the raw products owe; int32 arithmetic
/// wraps, and the exact result fits), so the tile stores finished sums.
struct Tile {
  const uint8_t* rows;  // the first row
  int64_t ld;
  const uint8_t* const* row_ptrs;  // Gather: each row's base
  const int32_t* groups;           // Gather: each group's offset from it
  int64_t k;
  const uint8_t* panels;  // the first panel
  int64_t panel_bytes;
  int lanes;                 // valid lanes, up to 16 * P
  const int32_t* base;       // [R]
  const int32_t* lane_term;  // [lanes], or nullptr for 0
  int32_t* out;
  int64_t row_stride;
  int64_t lane_stride;
  // Requantized stores instead of `out` (not transposed): row x's lane y
  // to requant->rows[row0 + x] + col0 + y.
  const QGemmOut* requant = nullptr;
  int64_t row0 = 0;
  int64_t col0 = 0;
};

/// The requantized stores (QGemmOut): RequantLanes::bytes, as
/// requantize_run (this file is built with -ffp-contract=off), into Out
/// bytes. The rows' addresses are read before the first store (a byte
/// store may alias them, and would make each one read again).
template <int R, int P, typename Out>
[[gnu::always_inline]] inline void requant_stores(const Tile& t, const __m512i (&acc)[R][P],
                                                  const __mmask16 (&masks)[P]) {
  const QGemmOut& o = *t.requant;
  const Requant& rq = o.terms;
  const RequantLanes lanes(rq);
  uint8_t* rows[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) rows[r] = o.rows[t.row0 + r] + t.col0;
  const float* mults = rq.mult + t.col0;
  const float* biases = rq.bias + t.col0;
#pragma GCC unroll 2
  for (int q = 0; q < P; ++q) {
    const __m512 mult = _mm512_maskz_loadu_ps(masks[q], mults + 16 * q);
    const __m512 bias = _mm512_maskz_loadu_ps(masks[q], biases + 16 * q);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      _mm_mask_storeu_epi8(rows[r] + 16 * q, masks[q], lanes.bytes<Out>(acc[r][q], mult, bias));
    }
  }
}

/// The transposed stores: lane y of row x to out[x * row_stride + y *
/// lane_stride].
template <int R, int P>
[[gnu::always_inline]] inline void scatter(const Tile& t, const __m512i (&acc)[R][P],
                                           const __mmask16 (&masks)[P]) {
  const __m512i lane =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int32_t>(t.lane_stride)));
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) {
      _mm512_mask_i32scatter_epi32(t.out + r * t.row_stride + 16 * q * t.lane_stride, masks[q],
                                   lane, acc[r][q], 4);
    }
  }
}

template <int R, int P, bool Flip, bool Transposed, bool Gather>
void tile(const Tile& t) {
  __m512i acc[R][P];
  __mmask16 masks[P];
#pragma GCC unroll 2
  for (int q = 0; q < P; ++q) {
    const int left = t.lanes - 16 * q;
    masks[q] = left >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << left) - 1);
    const __m512i owed = t.lane_term != nullptr
                             ? _mm512_maskz_loadu_epi32(masks[q], t.lane_term + 16 * q)
                             : _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      acc[r][q] = _mm512_sub_epi32(_mm512_sub_epi32(_mm512_setzero_si512(), owed),
                                   _mm512_set1_epi32(t.base[r]));
    }
  }
  const int64_t whole = t.k / 4, ld = t.ld;
  const uint8_t* a = t.rows;
  int32_t b[R];
  // Whole groups of 4 inputs, one step each; then rows in place take one
  // step more for the fewer than 4 inputs left, if any (gathered rows have
  // none).
  for (int64_t g = 0; g < whole; ++g) {
    if constexpr (Gather) {
      const int64_t at = t.groups[g];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) std::memcpy(&b[r], t.row_ptrs[r] + at, 4);
    } else {
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) std::memcpy(&b[r], a + r * ld + 4 * g, 4);
    }
    step<R, P, Flip>(acc, t.panels, t.panel_bytes, g, b);
  }
  if (!Gather && t.k % 4 != 0) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) b[r] = tail(a + r * ld, t.k);
    step<R, P, Flip>(acc, t.panels, t.panel_bytes, whole, b);
  }
  keep_in_place<R, P>(acc);
  // One way out per instantiation (two would keep copies of the
  // accumulators through the loop).
  if constexpr (!Transposed) {
    if (t.requant != nullptr) {
      if (t.requant->is_unsigned) {
        requant_stores<R, P, uint8_t>(t, acc, masks);
      } else {
        requant_stores<R, P, int8_t>(t, acc, masks);
      }
      return;
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
      for (int q = 0; q < P; ++q) {
        _mm512_mask_storeu_epi32(t.out + r * t.row_stride + 16 * q, masks[q], acc[r][q]);
      }
    }
  } else {
    scatter<R, P>(t, acc, masks);
  }
}

using TileFn = void (*)(const Tile&);

template <int R, bool Flip, bool Transposed, bool Gather>
TileFn tile_of(int panels) {
  return panels == 1 ? &tile<R, 1, Flip, Transposed, Gather>
                     : &tile<R, 2, Flip, Transposed, Gather>;
}

template <bool Flip, bool Transposed, bool Gather>
TileFn tile_for(int rows, int panels) {
  switch (rows) {
    case 1: return tile_of<1, Flip, Transposed, Gather>(panels);
    case 2: return tile_of<2, Flip, Transposed, Gather>(panels);
    case 3: return tile_of<3, Flip, Transposed, Gather>(panels);
    case 4: return tile_of<4, Flip, Transposed, Gather>(panels);
    case 5: return tile_of<5, Flip, Transposed, Gather>(panels);
    case 6: return tile_of<6, Flip, Transposed, Gather>(panels);
    case 7: return tile_of<7, Flip, Transposed, Gather>(panels);
    default: return tile_of<8, Flip, Transposed, Gather>(panels);
  }
}

/// The tile for rows broadcast against panels: int8 rows (flip) against
/// packed weights, stored in place, the rows contiguous or gathered; or
/// weight rows against packed activations (always the flipped form),
/// stored transposed.
TileFn tile_fn(bool flip, bool transposed, bool gather, int rows, int lanes) {
  const int panels = lanes > 16 ? 2 : 1;
  if (transposed) return tile_for<true, true, false>(rows, panels);
  if (gather) {
    return flip ? tile_for<true, false, true>(rows, panels)
                : tile_for<false, false, true>(rows, panels);
  }
  return flip ? tile_for<true, false, false>(rows, panels)
              : tile_for<false, false, false>(rows, panels);
}

/// sum_k a[k] of int8 bytes: vpsadbw of the bytes + 128 (as uint8; lanes
/// past k load 0 and add 128 each), less 128 per lane.
int64_t signed_sum(const uint8_t* a, int64_t k) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i s = _mm512_setzero_si512();
  int64_t lanes = 0;
  for (int64_t k0 = 0; k0 < k; k0 += 64, lanes += 64) {
    const int64_t left = k - k0;
    const __mmask64 mask = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
    const __m512i v = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, a + k0), flip);
    s = _mm512_add_epi64(s, _mm512_sad_epu8(v, _mm512_setzero_si512()));
  }
  return _mm512_reduce_add_epi64(s) - 128 * lanes;
}

/// x as int32 with wrap-around (the exact results the terms enter fit).
int32_t wrapped(int64_t x) {
  return static_cast<int32_t>(static_cast<uint64_t>(x));
}

}  // namespace

void qgemm_row_terms(const QGemm& p, int64_t i0, int count, int32_t* out) {
  for (int r = 0; r < count; ++r) {
    int64_t sum = 0;
    if (!p.a_unsigned) {
      sum = p.a_sums != nullptr ? p.a_sums[i0 + r] : signed_sum(p.a + (i0 + r) * p.lda, p.k);
    }
    out[r] = wrapped(128 * sum);
  }
}

void qgemm_channel_terms(const QGemm& p, int64_t j0, int count, int32_t* out) {
  if (p.a_zero_point == 0) {  // the dynamic layers' raw sums
    std::fill(out, out + count, 0);
    return;
  }
  for (int j = 0; j < count; ++j) out[j] = wrapped(int64_t{p.a_zero_point} * p.w_sums[j0 + j]);
}

void qgemm_weight_row_terms(const QGemm& p, int64_t j0, int count, int32_t* out) {
  const int64_t owed = (p.a_unsigned ? 0 : 128) + p.a_zero_point;
  for (int r = 0; r < count; ++r) out[r] = wrapped(owed * p.w_sums[j0 + r]);
}

namespace {

/// R rows against P panels of blockwise weights (qgemm_blocks): per block,
/// int32 sums of R x P vectors, then each scaled by its 16 columns' scales
/// into float accumulators.
template <int R, int P>
void block_tile(const QBlockGemm& p, int64_t i0) {
  const int64_t panel_bytes = qgemm_panel_bytes(p.k);
  __mmask16 masks[P];
#pragma GCC unroll 2
  for (int q = 0; q < P; ++q) {
    const int64_t left = p.n - 16 * q;
    masks[q] = left >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << left) - 1);
  }
  __m512 f[R][P];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) f[r][q] = _mm512_setzero_ps();
  }
  const uint8_t* a = p.a + i0 * p.lda;
  const int64_t groups = p.bs / 4, blocks = p.k / p.bs;
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i acc[R][P];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
      for (int q = 0; q < P; ++q) acc[r][q] = _mm512_setzero_si512();
    }
    for (int64_t g = b * groups; g < (b + 1) * groups; ++g) {
      __m512i w[P];
#pragma GCC unroll 2
      for (int q = 0; q < P; ++q) w[q] = _mm512_loadu_si512(p.panels + q * panel_bytes + g * 64);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        int32_t bytes;
        std::memcpy(&bytes, a + r * p.lda + 4 * g, 4);
        const __m512i v = _mm512_set1_epi32(bytes);
#pragma GCC unroll 2
        for (int q = 0; q < P; ++q) acc[r][q] = _mm512_dpbusd_epi32(acc[r][q], v, w[q]);
      }
    }
    keep_in_place<R, P>(acc);
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) {
      const __m512 scale = _mm512_maskz_loadu_ps(masks[q], p.scales + b * p.ld_scales + 16 * q);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        f[r][q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][q]), scale, f[r][q]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) {
      _mm512_mask_storeu_ps(p.c + (i0 + r) * p.ldc + 16 * q, masks[q], f[r][q]);
    }
  }
}

template <int P>
void block_rows(const QBlockGemm& p) {
  int64_t i = 0;
  for (; i + 4 <= p.m; i += 4) block_tile<4, P>(p, i);
  for (; i < p.m; ++i) block_tile<1, P>(p, i);
}

}  // namespace

void qgemm_blocks(const QBlockGemm& p) {
  if (p.n > 16) {
    block_rows<2>(p);
  } else {
    block_rows<1>(p);
  }
}

void qgemm_pixel_sums(const uint8_t* image, int64_t stride, int64_t groups, int64_t run,
                      int64_t begin, int64_t end, int32_t* out) {
  // vpdpbusd of 1s by the bytes: each lane the sum of 4 of them.
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t i = begin; i < end; ++i) {
    const uint8_t* px = image + i * stride;
    for (int64_t g = 0; g < groups; ++g, px += run) {
      __m512i s = _mm512_setzero_si512();
      for (int64_t k0 = 0; k0 < run; k0 += 64) {
        const int64_t left = run - k0;
        const __mmask64 mask = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
        s = _mm512_dpbusd_epi32(s, ones, _mm512_maskz_loadu_epi8(mask, px + k0));
      }
      out[i * groups + g] = _mm512_reduce_add_epi32(s);
    }
  }
}

namespace {

void packed_tiles(const QGemm& p, const uint8_t* panels, int32_t* c, int64_t ldc,
                  const QGemmOut* requant) {
  // Activation rows broadcast against weight panels: int8 activations are
  // the signed operand (flip), the shift they owe 128 * sum_k a per row.
  const bool flip = !p.a_unsigned, gather = p.a_rows != nullptr;
  const int64_t panel_bytes = qgemm_panel_bytes(p.k);
  // The channels' terms once for all row blocks when there are few
  // channels (a convolution's), else again for each block of 32.
  constexpr int64_t kTermsOnce = 256;
  int32_t base[kRows], owed[kTermsOnce];
  const bool once = p.n <= kTermsOnce;
  if (once) qgemm_channel_terms(p, 0, static_cast<int>(p.n), owed);
  for (int64_t i0 = 0; i0 < p.m; i0 += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, p.m - i0));
    qgemm_row_terms(p, i0, rows, base);
    for (int64_t j0 = 0; j0 < p.n; j0 += 32) {
      const int cols = static_cast<int>(std::min<int64_t>(32, p.n - j0));
      if (!once) qgemm_channel_terms(p, j0, cols, owed);
      tile_fn(flip, false, gather, rows, cols)(
          {gather ? nullptr : p.a + i0 * p.lda, p.lda, gather ? p.a_rows + i0 : nullptr, p.a_groups,
           p.k, panels + j0 / 16 * panel_bytes, panel_bytes, cols, base, once ? owed + j0 : owed,
           requant != nullptr ? nullptr : c + i0 * ldc + j0, ldc, 1, requant, i0, j0});
    }
  }
}

}  // namespace

void qgemm_packed(const QGemm& p, const uint8_t* panels, int32_t* c, int64_t ldc) {
  packed_tiles(p, panels, c, ldc, nullptr);
}

void qgemm_packed_requant(const QGemm& p, const uint8_t* panels, const QGemmOut& out) {
  packed_tiles(p, panels, nullptr, 0, &out);
}

void qgemm_rows_on_panels(const QGemm& p, const uint8_t* buffer, int32_t* c, int64_t ldc) {
  if (qgemm_amx_pays(p.n, p.k)) {
    qgemm_rows_on_panels_amx(p, buffer, c, ldc);
    return;
  }
  // Weight rows broadcast (signed) against panels of 16 activation rows
  // (unsigned: uint8 as they are, int8 + 128); the outputs come out
  // transposed, and owe (shift + zero_point) * sum_k w per weight row.
  const int64_t panel_bytes = qgemm_panel_bytes(p.k);
  int32_t base[kRows];
  for (int64_t j0 = 0; j0 < p.n; j0 += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, p.n - j0));
    qgemm_weight_row_terms(p, j0, rows, base);
    for (int64_t i0 = 0; i0 < p.m; i0 += 32) {
      const int lanes = static_cast<int>(std::min<int64_t>(32, p.m - i0));
      tile_fn(true, true, false, rows,
              lanes)({reinterpret_cast<const uint8_t*>(p.w + j0 * p.ldw), p.ldw, nullptr, nullptr,
                      p.k, buffer + i0 / 16 * panel_bytes, panel_bytes, lanes, base, nullptr,
                      c + i0 * ldc + j0, 1, ldc});
    }
  }
}

#else

void qgemm_packed(const QGemm& p, const uint8_t* /*panels*/, int32_t* c, int64_t ldc) {
  qgemm(p, c, ldc);  // no packed kernel in this build (qgemm_packs() is false)
}

void qgemm_packed_requant(const QGemm& p, const uint8_t* /*panels*/, const QGemmOut& out) {
  // No packed kernel in this build: the sums row by row, then requantized
  // (rows read in place only: callers gather rows only where qgemm_packs()).
  PTERUN_CHECK(p.a_rows == nullptr, ErrorCode::Internal,
               "qgemm_packed_requant: gathered rows need the packed kernel");
  thread_local std::vector<int32_t> sums;
  sums.resize(static_cast<size_t>(p.n));
  for (int64_t i = 0; i < p.m; ++i) {
    QGemm row = p;
    row.a = p.a + i * p.lda;
    row.m = 1;
    qgemm(row, sums.data(), p.n);
    if (out.is_unsigned) {
      requantize_run(sums.data(), p.n, out.terms, 0, out.rows[i]);
    } else {
      requantize_run(sums.data(), p.n, out.terms, 0, reinterpret_cast<int8_t*>(out.rows[i]));
    }
  }
}

void qgemm_blocks(const QBlockGemm& p) {  // plain loops over the panels' layout
  const int64_t panel_bytes = qgemm_panel_bytes(p.k);
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      const auto* panel = reinterpret_cast<const int8_t*>(p.panels + j / 16 * panel_bytes);
      float total = 0;
      for (int64_t b = 0; b < p.k / p.bs; ++b) {
        int32_t sum = 0;
        for (int64_t e = b * p.bs; e < (b + 1) * p.bs; ++e) {
          sum += int32_t{p.a[i * p.lda + e]} * panel[e / 4 * 64 + j % 16 * 4 + e % 4];
        }
        // One rounding, as the vector kernel's fused multiply-add (this
        // file is built with -ffp-contract=off).
        total = std::fma(static_cast<float>(sum), p.scales[b * p.ld_scales + j], total);
      }
      p.c[i * p.ldc + j] = total;
    }
  }
}

void qgemm_rows_on_panels(const QGemm& p, const uint8_t* /*panels*/, int32_t* c, int64_t ldc) {
  qgemm(p, c, ldc);  // nothing is packed in this build: p.a's rows as they are
}

void qgemm_pixel_sums(const uint8_t* image, int64_t stride, int64_t groups, int64_t run,
                      int64_t begin, int64_t end, int32_t* out) {
  for (int64_t i = begin; i < end; ++i) {
    const auto* px = reinterpret_cast<const int8_t*>(image + i * stride);
    for (int64_t g = 0; g < groups; ++g, px += run) {
      int32_t sum = 0;
      for (int64_t k = 0; k < run; ++k) sum += px[k];
      out[i * groups + g] = sum;
    }
  }
}

#endif

}  // namespace pterun::cpu
