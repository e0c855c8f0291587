// The int8 matrix product of the quantized linear and convolution kernels
// (quant_gemm.h), as dot products of activation rows with weight rows: the
// weights are read as the program stores them, so nothing is packed or
// cached. Tiles of up to 4 rows x 4 weight rows accumulate in vector
// registers along K and are summed across lanes once at the end.
//
// AVX-512 VNNI: vpdpbusd multiplies uint8 by int8, so int8 activations are
// shifted to uint8 by flipping their sign bit (x + 128), and
// 128 * sum_k w[j, k] is taken back through the weight sums; a uint8
// activation goes in as it is. Without VNNI, AVX2 widens both operands to
// int16 (vpmaddwd), which cannot saturate. The sums are exact either way.

#include "pterun/backend/cpu/ops/quant_gemm.h"

#include <algorithm>

#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/backend/cpu/ops/quant_keep.h"

namespace pterun::cpu {
namespace {

constexpr int kTileRows = 4;
constexpr int kTileCols = 4;

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)

/// [sum(a), sum(b), sum(c), sum(d)] of four vectors of 16 int32.
inline __m128i sum4(__m512i a, __m512i b, __m512i c, __m512i d) {
  const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
  const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
  const __m512i abcd =
      _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
  const __m256i h =
      _mm256_add_epi32(_mm512_castsi512_si256(abcd), _mm512_extracti64x4_epi64(abcd, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/// Raw dot products d[r][c] = sum_k u[r, k] * w[c, k] of one tile, with u
/// the activation bytes (sign bit flipped when `flip`).
template <int R, int C>
void tile(const QGemm& p, int64_t i0, int64_t j0, bool flip, int32_t (&d)[kTileRows][kTileCols]) {
  __m512i acc[R][C];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_si512();
  }
  const __m512i sign = _mm512_set1_epi8(flip ? static_cast<char>(0x80) : 0);
  for (int64_t k0 = 0; k0 < p.k; k0 += 64) {
    const int64_t left = p.k - k0;
    const __mmask64 mask = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
    __m512i a[R], w[C];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      // Lanes past K load 0; flipped they hold 128, against a weight of 0.
      a[r] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, p.a + (i0 + r) * p.lda + k0), sign);
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) w[c] = _mm512_maskz_loadu_epi8(mask, p.w + (j0 + c) * p.ldw + k0);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_dpbusd_epi32(acc[r][c], a[r], w[c]);
    }
  }
  keep_in_place<R, C>(acc);
  const __m512i zero = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    alignas(16) int32_t s[4];
    _mm_store_si128(
        reinterpret_cast<__m128i*>(s),
        sum4(acc[r][0], C > 1 ? acc[r][C > 1 ? 1 : 0] : zero, C > 2 ? acc[r][C > 2 ? 2 : 0] : zero,
             C > 3 ? acc[r][C > 3 ? 3 : 0] : zero));
    for (int c = 0; c < C; ++c) d[r][c] = s[c];
  }
}

constexpr bool kFlipSigned = true;  // int8 activations go in shifted by 128

#elif defined(__AVX2__)

inline int32_t hsum(__m256i v) {
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1))));
}

template <bool Unsigned>
inline __m256i widen(const uint8_t* p) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return Unsigned ? _mm256_cvtepu8_epi16(b) : _mm256_cvtepi8_epi16(b);
}

template <int R, int C, bool Unsigned>
void tile_typed(const QGemm& p, int64_t i0, int64_t j0, int32_t (&d)[kTileRows][kTileCols]) {
  __m256i acc[R][C];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_si256();
  }
  const int64_t k16 = p.k / 16 * 16;
  for (int64_t k0 = 0; k0 < k16; k0 += 16) {
    __m256i a[R], w[C];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) a[r] = widen<Unsigned>(p.a + (i0 + r) * p.lda + k0);
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      w[c] = widen<false>(reinterpret_cast<const uint8_t*>(p.w + (j0 + c) * p.ldw + k0));
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(a[r], w[c]));
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      int32_t s = hsum(acc[r][c]);
      const uint8_t* ar = p.a + (i0 + r) * p.lda;
      const int8_t* wc = p.w + (j0 + c) * p.ldw;
      for (int64_t k = k16; k < p.k; ++k) {
        const int32_t x = Unsigned ? int32_t{ar[k]} : int32_t{static_cast<int8_t>(ar[k])};
        s += x * wc[k];
      }
      d[r][c] = s;
    }
  }
}

template <int R, int C>
void tile(const QGemm& p, int64_t i0, int64_t j0, bool /*flip*/,
          int32_t (&d)[kTileRows][kTileCols]) {
  if (p.a_unsigned) {
    tile_typed<R, C, true>(p, i0, j0, d);
  } else {
    tile_typed<R, C, false>(p, i0, j0, d);
  }
}

constexpr bool kFlipSigned = false;

#else

template <int R, int C>
void tile(const QGemm& p, int64_t i0, int64_t j0, bool /*flip*/,
          int32_t (&d)[kTileRows][kTileCols]) {
  for (int r = 0; r < R; ++r) {
    const uint8_t* ar = p.a + (i0 + r) * p.lda;
    for (int c = 0; c < C; ++c) {
      const int8_t* wc = p.w + (j0 + c) * p.ldw;
      int32_t s = 0;
      for (int64_t k = 0; k < p.k; ++k) {
        const int32_t x = p.a_unsigned ? int32_t{ar[k]} : int32_t{static_cast<int8_t>(ar[k])};
        s += x * wc[k];
      }
      d[r][c] = s;
    }
  }
}

constexpr bool kFlipSigned = false;

#endif

using TileFn = void (*)(const QGemm&, int64_t, int64_t, bool, int32_t (&)[kTileRows][kTileCols]);

template <int R>
constexpr TileFn tile_of(int cols) {
  switch (cols) {
    case 1: return &tile<R, 1>;
    case 2: return &tile<R, 2>;
    case 3: return &tile<R, 3>;
    default: return &tile<R, 4>;
  }
}

TileFn tile_for(int rows, int cols) {
  switch (rows) {
    case 1: return tile_of<1>(cols);
    case 2: return tile_of<2>(cols);
    case 3: return tile_of<3>(cols);
    default: return tile_of<4>(cols);
  }
}

}  // namespace

void qgemm(const QGemm& p, int32_t* c, int64_t ldc) {
  // d = sum_k u * w with u = x + shift; the product wanted is
  // sum_k (x - zp) * w = d - (shift + zp) * sum_k w.
  const bool flip = kFlipSigned && !p.a_unsigned;
  const int32_t shift = flip ? 128 : 0;
  const int64_t bias_rows = int64_t{shift} + p.a_zero_point;
  int32_t d[kTileRows][kTileCols];
  for (int64_t i0 = 0; i0 < p.m; i0 += kTileRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kTileRows, p.m - i0));
    for (int64_t j0 = 0; j0 < p.n; j0 += kTileCols) {
      const int cols = static_cast<int>(std::min<int64_t>(kTileCols, p.n - j0));
      tile_for(rows, cols)(p, i0, j0, flip, d);
      for (int r = 0; r < rows; ++r) {
        for (int q = 0; q < cols; ++q) {
          c[(i0 + r) * ldc + j0 + q] =
              static_cast<int32_t>(d[r][q] - bias_rows * int64_t{p.w_sums[j0 + q]});
        }
      }
    }
  }
}

const char* qgemm_isa() {
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
  return "avx512-vnni";
#elif defined(__AVX2__)
  return "avx2";
#else
  return "scalar";
#endif
}

}  // namespace pterun::cpu
