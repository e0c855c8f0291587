// The int8 products on AMX tiles (quant_gemm.h), where the build targets
// AMX-INT8 and the CPU and the kernel allow it. One TDPBSUD multiplies a
// tile of 16 rows x 64 signed bytes by one of 64 x 16 unsigned bytes (16
// rows of 4-byte groups: the layout qgemm_pack makes) into 16 x 16 int32
// sums, 16,384 multiply-adds, where vpdpbusd makes 64.
//
// qgemm_rows_on_panels: the weights, read in place, are the signed tiles
// (16 output channels, 64 inputs each), the packed activation rows the
// unsigned ones; the sums come out with output channels down and rows
// across, and are transposed (16 x 16 int32, in registers) on their way to
// c. qgemm_packed: the activation rows are the tiles of 16 rows (signed
// int8 against the weights + 128, or unsigned uint8 against the weights),
// the packed weights the others, and the sums come out as c wants them.
//
// Blocks of 32 x 32 keep four sum tiles against two tiles of each operand.
// The panels hold whole steps of 64 inputs (qgemm_pack pads them with
// zeros); rows are read in place to the last step when padded to it
// (QGemm::a_padded), else their last inputs are copied out, zero-padded.
// Rows past m or n are left out of the tiles (their row counts are
// configured per block), and panel lanes past them are not stored.

#include <cstdlib>
#include <cstring>

#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/backend/cpu/ops/quant_gemm.h"

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#endif

namespace pterun::cpu {

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__)

namespace {

/// Whether the CPU has AMX-INT8 and Linux lets this process use its tile
/// registers (they need a request, once per process), unless PTERUN_AMX=0.
bool amx_available() {
  const char* env = std::getenv("PTERUN_AMX");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  if (((d >> 24) & 1) == 0 || ((d >> 25) & 1) == 0) return false;  // AMX-TILE, AMX-INT8
  constexpr long kRequestPermission = 0x1023, kTileData = 18;      // ARCH_REQ_XCOMP_PERM
  return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
}

bool amx_ready() {
  static const bool ready = amx_available();
  return ready;
}

std::atomic<int>& amx_state() {
  static std::atomic<int> state{amx_ready() ? 1 : 0};
  return state;
}

/// LDTILECFG's operand, palette 1.
struct TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// Tiles: sums 0 (channels 0-15 x rows 0-15), 1 (0-15 x 16-31), 2 (16-31 x
// 0-15), 3 (16-31 x 16-31); weights 4 (channels 0-15), 5 (16-31);
// activations 6 (rows 0-15), 7 (16-31).
void configure(int channels_lo, int channels_hi) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.bytes_per_row[t] = 64;
  }
  cfg.rows[0] = cfg.rows[1] = cfg.rows[4] = static_cast<uint8_t>(channels_lo);
  cfg.rows[2] = cfg.rows[3] = cfg.rows[5] = static_cast<uint8_t>(channels_hi);
  _tile_loadconfig(&cfg);
}

/// The 16 x 16 int32 at `src` (rows 64 bytes apart) transposed: t[j] holds
/// column j.
void transpose16(const int32_t* src, __m512i (&t)[16]) {
  __m512i r[16], u[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_load_si512(src + 16 * i);
  for (int p = 0; p < 16; p += 2) {  // pairs of rows interleaved
    u[p] = _mm512_unpacklo_epi32(r[p], r[p + 1]);
    u[p + 1] = _mm512_unpackhi_epi32(r[p], r[p + 1]);
  }
  for (int q = 0; q < 16; q += 4) {  // r[q + c] lane L: column 4L + c of rows q..q+3
    r[q] = _mm512_unpacklo_epi64(u[q], u[q + 2]);
    r[q + 1] = _mm512_unpackhi_epi64(u[q], u[q + 2]);
    r[q + 2] = _mm512_unpacklo_epi64(u[q + 1], u[q + 3]);
    r[q + 3] = _mm512_unpackhi_epi64(u[q + 1], u[q + 3]);
  }
  for (int c = 0; c < 4; ++c) {  // the four 128-bit lanes of each column gathered
    const __m512i x0 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0x44);
    const __m512i x1 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0xEE);
    const __m512i y0 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0x44);
    const __m512i y1 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0xEE);
    t[c] = _mm512_shuffle_i32x4(x0, y0, 0x88);
    t[4 + c] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
    t[8 + c] = _mm512_shuffle_i32x4(x1, y1, 0x88);
    t[12 + c] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
  }
}

struct Block {
  const uint8_t* a;  // the first row of the signed (or, Unsigned, unsigned) tiles
  int64_t lda;
  const uint8_t* panels;  // the first panel
  int64_t panel_bytes;
  int64_t whole;            // depth in whole steps of 64
  bool last;                // a step on the last, fewer than 64, inputs follows them
  const uint8_t* a_staged;  // that step's rows copied out (64 bytes apart), or null: in place
  int a_rows, b_cols;       // valid rows of the row tiles, lanes of the panels
  const int32_t* a_term;    // [32]: what each row's raw sums owe
  const int32_t* b_term;    // [32] or null: what each lane's owe
  int32_t* c;
  int64_t ldc;
};

/// c[x][y] (or, Transposed, c[y][x]) = the sum of row x of the row tiles
/// by lane y of the panels, less a_term[x] and b_term[y], for Hi + 1 tiles
/// of 16 rows and Right + 1 panels.
template <bool Unsigned, bool Transposed, int Hi, int Right>
void block(const Block& b) {
  alignas(64) int32_t sums[4][256];
  _tile_zero(0);
  if constexpr (Right) _tile_zero(1);
  if constexpr (Hi) _tile_zero(2);
  if constexpr (Hi && Right) _tile_zero(3);
  auto step = [] {
    if constexpr (Unsigned) {
      _tile_dpbusd(0, 4, 6);
      if constexpr (Right) _tile_dpbusd(1, 4, 7);
      if constexpr (Hi) _tile_dpbusd(2, 5, 6);
      if constexpr (Hi && Right) _tile_dpbusd(3, 5, 7);
    } else {
      _tile_dpbsud(0, 4, 6);
      if constexpr (Right) _tile_dpbsud(1, 4, 7);
      if constexpr (Hi) _tile_dpbsud(2, 5, 6);
      if constexpr (Hi && Right) _tile_dpbsud(3, 5, 7);
    }
  };
  const uint8_t* a = b.a;
  const uint8_t* panel = b.panels;
  for (int64_t s = 0; s < b.whole; ++s, a += 64, panel += 16 * 64) {
    _tile_loadd(4, a, b.lda);
    if constexpr (Hi) _tile_loadd(5, a + 16 * b.lda, b.lda);
    _tile_loadd(6, panel, 64);
    if constexpr (Right) _tile_loadd(7, panel + b.panel_bytes, 64);
    step();
  }
  if (b.last) {  // `a` and `panel` are at the last step
    const uint8_t* rows = b.a_staged != nullptr ? b.a_staged : a;
    const int64_t ld = b.a_staged != nullptr ? 64 : b.lda;
    _tile_loadd(4, rows, ld);
    if constexpr (Hi) _tile_loadd(5, rows + 16 * ld, ld);
    _tile_loadd(6, panel, 64);
    if constexpr (Right) _tile_loadd(7, panel + b.panel_bytes, 64);
    step();
  }
  _tile_stored(0, sums[0], 64);
  if constexpr (Right) _tile_stored(1, sums[1], 64);
  if constexpr (Hi) _tile_stored(2, sums[2], 64);
  if constexpr (Hi && Right) _tile_stored(3, sums[3], 64);
  for (int hi = 0; hi <= Hi; ++hi) {
    const int rows = std::min(16, b.a_rows - 16 * hi);
    for (int right = 0; right <= Right; ++right) {
      const int lanes = std::min(16, b.b_cols - 16 * right);
      const int32_t* tile = sums[2 * hi + right];
      if constexpr (Transposed) {  // c[y][x]: a vector of 16 rows x per lane y
        const __mmask16 mask = static_cast<__mmask16>((1u << rows) - 1);
        const __m512i owed = _mm512_maskz_loadu_epi32(mask, b.a_term + 16 * hi);
        __m512i t[16];
        transpose16(tile, t);
        int32_t* out = b.c + 16 * right * b.ldc + 16 * hi;
        for (int y = 0; y < lanes; ++y) {
          _mm512_mask_storeu_epi32(out + y * b.ldc, mask, _mm512_sub_epi32(t[y], owed));
        }
      } else {  // c[x][y]: a vector of 16 lanes y per row x
        const __mmask16 mask = static_cast<__mmask16>((1u << lanes) - 1);
        const __m512i owed = b.b_term != nullptr
                                 ? _mm512_maskz_loadu_epi32(mask, b.b_term + 16 * right)
                                 : _mm512_setzero_si512();
        int32_t* out = b.c + 16 * hi * b.ldc + 16 * right;
        for (int x = 0; x < rows; ++x) {
          const __m512i v = _mm512_sub_epi32(_mm512_load_si512(tile + 16 * x), owed);
          _mm512_mask_storeu_epi32(out + x * b.ldc, mask,
                                   _mm512_sub_epi32(v, _mm512_set1_epi32(b.a_term[16 * hi + x])));
        }
      }
    }
  }
}

template <bool Unsigned, bool Transposed>
void run_block(const Block& b) {
  if (b.a_rows > 16) {
    b.b_cols > 16 ? block<Unsigned, Transposed, 1, 1>(b) : block<Unsigned, Transposed, 1, 0>(b);
  } else {
    b.b_cols > 16 ? block<Unsigned, Transposed, 0, 1>(b) : block<Unsigned, Transposed, 0, 0>(b);
  }
}

/// Blocks of 32 rows (`a`, lda apart) by 32 panel lanes over the depth k,
/// rows the outer loop: Transposed, p's weight rows (read in place) against
/// panels of its activation rows; else p's activation rows against panels
/// of its weights. The panels hold whole steps of 64 inputs (qgemm_pack's
/// padding); rows not padded to them have their last inputs copied out.
template <bool Unsigned, bool Transposed>
void product(const QGemm& p, const uint8_t* panels, int32_t* c, int64_t ldc) {
  const uint8_t* a = Transposed ? reinterpret_cast<const uint8_t*>(p.w) : p.a;
  const int64_t lda = Transposed ? p.ldw : p.lda;
  const int64_t m = Transposed ? p.n : p.m, n = Transposed ? p.m : p.n;
  const int64_t panel_bytes = qgemm_panel_bytes(p.k);
  const int64_t whole = p.k / 64, tail = p.k - whole * 64;
  const bool staged = tail > 0 && (Transposed || !p.a_padded);
  alignas(64) uint8_t a_tail[2 * 16 * 64];
  int32_t a_term[32], b_term[32];
  int configured = -1;
  for (int64_t x0 = 0; x0 < m; x0 += 32) {
    const int rows = static_cast<int>(std::min<int64_t>(32, m - x0));
    const int lo = std::min(16, rows), hi = rows > 16 ? rows - 16 : 16;
    if (configured != lo * 64 + hi) {
      configure(lo, hi);
      configured = lo * 64 + hi;
    }
    if constexpr (Transposed) {
      qgemm_weight_row_terms(p, x0, rows, a_term);
    } else {
      qgemm_row_terms(p, x0, rows, a_term);
    }
    if (staged) {
      std::memset(a_tail, 0, sizeof a_tail);
      for (int r = 0; r < rows; ++r) {
        std::memcpy(a_tail + r * 64, a + (x0 + r) * lda + whole * 64, static_cast<size_t>(tail));
      }
    }
    for (int64_t y0 = 0; y0 < n; y0 += 32) {
      const int cols = static_cast<int>(std::min<int64_t>(32, n - y0));
      if constexpr (!Transposed) qgemm_channel_terms(p, y0, cols, b_term);
      const Block b{a + x0 * lda,
                    lda,
                    panels + y0 / 16 * panel_bytes,
                    panel_bytes,
                    whole,
                    tail > 0,
                    staged ? a_tail : nullptr,
                    rows,
                    cols,
                    a_term,
                    Transposed ? nullptr : b_term,
                    Transposed ? c + y0 * ldc + x0 : c + x0 * ldc + y0,
                    ldc};
      run_block<Unsigned, Transposed>(b);
    }
  }
  _tile_release();
}

}  // namespace

bool qgemm_amx() {
  return amx_state().load(std::memory_order_relaxed) == 1;
}

bool qgemm_amx_pays(int64_t n, int64_t k) {
  return qgemm_amx() && n >= 32 && k >= 64;
}

bool qgemm_use_amx(bool on) {
  const bool before = qgemm_amx();
  amx_state().store(on && amx_ready() ? 1 : 0, std::memory_order_relaxed);
  return before;
}

void qgemm_rows_on_panels_amx(const QGemm& p, const uint8_t* panels, int32_t* c, int64_t ldc) {
  if (!amx_ready()) {  // the tile registers are not this process's: the vector kernel
    qgemm_rows_on_panels(p, panels, c, ldc);
    return;
  }
  // Weight rows (signed) by panels of activation rows (unsigned: uint8 as
  // they are, int8 + 128).
  product<false, true>(p, panels, c, ldc);
}

void qgemm_packed_amx(const QGemm& p, const uint8_t* panels, int32_t* c, int64_t ldc) {
  if (!amx_ready() || p.a_rows != nullptr) {  // gathered rows: the vector kernel
    qgemm_packed(p, panels, c, ldc);
    return;
  }
  // Activation rows by packed weights: uint8 rows (unsigned) against the
  // weights as they are; int8 rows (signed) against the weights + 128.
  if (p.a_unsigned) {
    product<true, false>(p, panels, c, ldc);
  } else {
    product<false, false>(p, panels, c, ldc);
  }
}

#else

bool qgemm_amx() {
  return false;
}

bool qgemm_amx_pays(int64_t /*n*/, int64_t /*k*/) {
  return false;
}

bool qgemm_use_amx(bool /*on*/) {
  return false;
}

void qgemm_rows_on_panels_amx(const QGemm& p, const uint8_t* panels, int32_t* c, int64_t ldc) {
  qgemm_rows_on_panels(p, panels, c, ldc);  // no AMX in this build (qgemm_amx() is false)
}

void qgemm_packed_amx(const QGemm& p, const uint8_t* panels, int32_t* c, int64_t ldc) {
  qgemm_packed(p, panels, c, ldc);
}

#endif

}  // namespace pterun::cpu
