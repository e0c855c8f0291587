// Register-blocked f32 GEMM for small products (a few 10^4 multiply-adds:
// MLP layers at batch 8, attention heads), where oneDNN's fixed per-call
// cost (its gemm driver's setup and buffers) would dominate. Blocks of 4
// rows x 16 columns of c (8 rows x 32 columns with AVX-512) live in
// registers; b is read in place when its rows are contiguous and packed
// once otherwise.

#include <algorithm>
#include <cstring>

#include "pterun/backend/cpu/ops/matmul_gemm.h"

// Without AVX the 32-byte vectors below are passed differently; they never
// cross a translation unit, so GCC's ABI note does not apply.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pterun::cpu {
namespace {

// Eight and sixteen floats; GCC/Clang lower them to one AVX / AVX-512
// register each (or pairs of narrower ones). The sixteen-wide blocks are
// used only where the build targets AVX-512.
typedef float V8 __attribute__((vector_size(32)));
typedef float V16 __attribute__((vector_size(64)));
#if defined(__AVX512F__)
constexpr bool kWide = true;
#else
constexpr bool kWide = false;
#endif

template <typename V>
inline V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename V>
inline void store(float* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

struct Epilogue {
  float alpha, beta;
  bool accumulate;
  const float* bias;  // indexed by column, or null
};

/// c[0..R) x [j, j + N * lanes) from a (R rows) and b (row-major, leading
/// dimension ldb, already offset to column j), in N vectors V per row.
template <typename V, int R, int N>
void block(const float* a, int64_t a_rs, int64_t a_cs, const float* b, int64_t ldb, int64_t k,
           float* c, int64_t c_rs, int64_t c_cs, int64_t j, const Epilogue& e) {
  constexpr int L = sizeof(V) / sizeof(float);
  V acc[R][N] = {};
  for (int64_t kk = 0; kk < k; ++kk) {
    V bv[N];
    for (int v = 0; v < N; ++v) bv[v] = load<V>(b + kk * ldb + L * v);
    for (int r = 0; r < R; ++r) {
      const float av = a[r * a_rs + kk * a_cs];
      for (int v = 0; v < N; ++v) acc[r][v] += av * bv[v];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < N; ++v) {
      V res = acc[r][v] * e.alpha;
      if (e.bias != nullptr) res += load<V>(e.bias + j + L * v);
      float* dst = c + r * c_rs + (j + L * v) * c_cs;
      if (c_cs == 1) {
        if (e.accumulate) res += e.beta * load<V>(dst);
        store(dst, res);
      } else {
        for (int l = 0; l < L; ++l) {
          dst[l * c_cs] = e.accumulate ? res[l] + e.beta * dst[l * c_cs] : res[l];
        }
      }
    }
  }
}

/// Columns [j, n) (fewer than 8) of rows [0, rows), one at a time.
void tail(const float* a, int64_t a_rs, int64_t a_cs, const float* b, int64_t ldb, int64_t k,
          float* c, int64_t c_rs, int64_t c_cs, int64_t rows, int64_t j, int64_t n,
          const Epilogue& e) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t col = j; col < n; ++col) {
      float acc = 0;
      for (int64_t kk = 0; kk < k; ++kk) acc += a[r * a_rs + kk * a_cs] * b[kk * ldb + col];
      float res = acc * e.alpha;
      if (e.bias != nullptr) res += e.bias[col];
      float& dst = c[r * c_rs + col * c_cs];
      dst = e.accumulate ? res + e.beta * dst : res;
    }
  }
}

template <int R>
void rows(const float* a, int64_t a_rs, int64_t a_cs, const float* b, int64_t ldb, int64_t k,
          int64_t n, float* c, int64_t c_rs, int64_t c_cs, const Epilogue& e) {
  int64_t j = 0;
  if constexpr (kWide) {
    for (; j + 32 <= n; j += 32)
      block<V16, R, 2>(a, a_rs, a_cs, b + j, ldb, k, c, c_rs, c_cs, j, e);
    for (; j + 16 <= n; j += 16)
      block<V16, R, 1>(a, a_rs, a_cs, b + j, ldb, k, c, c_rs, c_cs, j, e);
  } else {
    for (; j + 16 <= n; j += 16) block<V8, R, 2>(a, a_rs, a_cs, b + j, ldb, k, c, c_rs, c_cs, j, e);
  }
  for (; j + 8 <= n; j += 8) block<V8, R, 1>(a, a_rs, a_cs, b + j, ldb, k, c, c_rs, c_cs, j, e);
  if (j < n) tail(a, a_rs, a_cs, b, ldb, k, c, c_rs, c_cs, R, j, n, e);
}

}  // namespace

void gemm_small_f32(kernels::KernelContext& ctx, const GemmProblem& p) {
  const int64_t m = p.m, k = p.k, n = p.n;
  const Epilogue e{static_cast<float>(p.alpha.to_double()), static_cast<float>(p.beta.to_double()),
                   p.accumulate, static_cast<const float*>(p.bias)};
  const bool b_rows_contiguous = p.b.col_stride == 1 || n == 1;
  float* packed = b_rows_contiguous ? nullptr : static_cast<float*>(ctx.scratch(k * n * 4));
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    const float* a = static_cast<const float*>(p.a.data) + bi * p.a.batch_stride;
    const float* b = static_cast<const float*>(p.b.data) + bi * p.b.batch_stride;
    float* c = static_cast<float*>(const_cast<void*>(p.c.data)) + bi * p.c.batch_stride;
    int64_t ldb = p.b.row_stride;
    if (!b_rows_contiguous) {
      // Read b along its contiguous dimension (usually k: a transposed weight).
      const int64_t rs = p.b.row_stride, cs = p.b.col_stride;
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t kk = 0; kk < k; ++kk) packed[kk * n + j] = b[kk * rs + j * cs];
      }
      b = packed;
      ldb = n;
    }
    const int64_t ars = p.a.row_stride, acs = p.a.col_stride;
    const int64_t crs = p.c.row_stride, ccs = p.c.col_stride;
    int64_t i = 0;
    if constexpr (kWide) {  // 32 registers: 8 rows of accumulators
      for (; i + 8 <= m; i += 8)
        rows<8>(a + i * ars, ars, acs, b, ldb, k, n, c + i * crs, crs, ccs, e);
    }
    for (; i + 4 <= m; i += 4)
      rows<4>(a + i * ars, ars, acs, b, ldb, k, n, c + i * crs, crs, ccs, e);
    switch (m - i) {
      case 3: rows<3>(a + i * ars, ars, acs, b, ldb, k, n, c + i * crs, crs, ccs, e); break;
      case 2: rows<2>(a + i * ars, ars, acs, b, ldb, k, n, c + i * crs, crs, ccs, e); break;
      case 1: rows<1>(a + i * ars, ars, acs, b, ldb, k, n, c + i * crs, crs, ccs, e); break;
      default: break;
    }
  }
}

}  // namespace pterun::cpu
