// Register-blocked f32 GEMM for small products (a few 10^4 multiply-adds:
// MLP layers at batch 8, attention heads), where oneDNN's fixed per-call
// cost (its gemm driver's setup and buffers) would dominate, and for
// narrow ones (classifier heads of at most 16 columns). Blocks of 4 rows x
// 16 columns of c (8 rows x 32 columns with AVX-512) live in registers; b
// is read in place when its rows are contiguous and packed once
// otherwise. With many rows, the last columns (fewer than a vector) come
// from a zero-padded copy of them (a panel), else from scalar loops.

#include <algorithm>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/vec_float.h"
#include "pterun/backend/cpu/ops/matmul_gemm.h"

// Without AVX the 32-byte vectors below are passed differently; they never
// cross a translation unit, so GCC's ABI note does not apply.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pterun::cpu {
namespace {

using vec::kWide;
using vec::load;
using vec::store;
using vec::V16;
using vec::V8;

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

/// The last columns of b from `at` on, zero-padded to `width` (8 or 16)
/// in k rows of `width` floats; width 0: none (scalar loops instead).
struct Panel {
  const float* data = nullptr;
  int64_t at = 0, width = 0;
};

/// c[0..R) x [p.at, n) from a (R rows) and the panel: one vector per row,
/// of which the first n - p.at lanes are stored.
template <typename V, int R>
void panel_block(const float* a, int64_t a_rs, int64_t a_cs, const Panel& p, int64_t k, int64_t n,
                 float* c, int64_t c_rs, int64_t c_cs, const Epilogue& e) {
  constexpr int L = sizeof(V) / sizeof(float);
  V acc[R] = {};
  for (int64_t kk = 0; kk < k; ++kk) {
    const V bv = load<V>(p.data + kk * L);
    for (int r = 0; r < R; ++r) acc[r] += a[r * a_rs + kk * a_cs] * bv;
  }
  float out[R][L];
  for (int r = 0; r < R; ++r) store(out[r], acc[r] * e.alpha);
  for (int r = 0; r < R; ++r) {
    for (int64_t col = p.at; col < n; ++col) {
      float res = out[r][col - p.at];
      if (e.bias != nullptr) res += e.bias[col];
      float& dst = c[r * c_rs + col * c_cs];
      dst = e.accumulate ? res + e.beta * dst : res;
    }
  }
}

template <int R>
void rows(const float* a, int64_t a_rs, int64_t a_cs, const float* b, int64_t ldb, int64_t k,
          int64_t n, float* c, int64_t c_rs, int64_t c_cs, const Epilogue& e, const Panel& p) {
  const int64_t whole = p.width != 0 ? p.at : n;  // columns of whole vector blocks
  int64_t j = 0;
  if constexpr (kWide) {
    for (; j + 32 <= whole; j += 32)
      block<V16, R, 2>(a, a_rs, a_cs, b + j, ldb, k, c, c_rs, c_cs, j, e);
    for (; j + 16 <= whole; j += 16)
      block<V16, R, 1>(a, a_rs, a_cs, b + j, ldb, k, c, c_rs, c_cs, j, e);
  } else {
    for (; j + 16 <= whole; j += 16)
      block<V8, R, 2>(a, a_rs, a_cs, b + j, ldb, k, c, c_rs, c_cs, j, e);
  }
  for (; j + 8 <= whole; j += 8) block<V8, R, 1>(a, a_rs, a_cs, b + j, ldb, k, c, c_rs, c_cs, j, e);
  if (p.width == 16) {
    if constexpr (kWide) panel_block<V16, R>(a, a_rs, a_cs, p, k, n, c, c_rs, c_cs, e);
  } else if (p.width == 8) {
    panel_block<V8, R>(a, a_rs, a_cs, p, k, n, c, c_rs, c_cs, e);
  } else if (j < n) {
    tail(a, a_rs, a_cs, b, ldb, k, c, c_rs, c_cs, R, j, n, e);
  }
}

/// Rows per register block: 8 with AVX-512's 32 registers, else 4.
constexpr int64_t kBlockRows = kWide ? 8 : 4;

/// Rows [begin, end) of one matrix of the batch, in register blocks.
void row_range(const float* a, int64_t ars, int64_t acs, const float* b, int64_t ldb, int64_t k,
               int64_t n, float* c, int64_t crs, int64_t ccs, const Epilogue& e, const Panel& p,
               int64_t begin, int64_t end) {
  int64_t i = begin;
  if constexpr (kWide) {
    for (; i + 8 <= end; i += 8)
      rows<8>(a + i * ars, ars, acs, b, ldb, k, n, c + i * crs, crs, ccs, e, p);
  }
  for (; i + 4 <= end; i += 4)
    rows<4>(a + i * ars, ars, acs, b, ldb, k, n, c + i * crs, crs, ccs, e, p);
  switch (end - i) {
    case 3: rows<3>(a + i * ars, ars, acs, b, ldb, k, n, c + i * crs, crs, ccs, e, p); break;
    case 2: rows<2>(a + i * ars, ars, acs, b, ldb, k, n, c + i * crs, crs, ccs, e, p); break;
    case 1: rows<1>(a + i * ars, ars, acs, b, ldb, k, n, c + i * crs, crs, ccs, e, p); break;
    default: break;
  }
}

/// Rows from which the last columns go through a panel: its copy then
/// costs less than scalar loops over them.
constexpr int64_t kPanelRows = 16;

/// Multiply-adds from which row blocks are split over the threads (about
/// 20-40 us of work, as dnnl_util::kMinParallelWork).
constexpr double kParallelWork = 1 << 20;

}  // namespace

void gemm_small_f32(kernels::KernelContext& ctx, const GemmProblem& p) {
  const int64_t m = p.m, k = p.k, n = p.n;
  const Epilogue e{static_cast<float>(p.alpha.to_double()), static_cast<float>(p.beta.to_double()),
                   p.accumulate, static_cast<const float*>(p.bias)};
  const bool b_rows_contiguous = p.b.col_stride == 1 || n == 1;
  // The panel: one 16-wide vector where that covers the rest with fewer
  // blocks than 8-wide ones would.
  Panel panel;
  if (n % 8 != 0 && m >= kPanelRows) {
    panel.at = kWide && n % 16 > 8 ? n / 16 * 16 : n / 8 * 8;
    panel.width = n - panel.at > 8 ? 16 : 8;
  }
  // Scratch: b packed row-major (when its rows are not contiguous), then
  // the panel.
  const int64_t packed_floats = b_rows_contiguous ? 0 : (k * n + 15) / 16 * 16;
  float* packed = nullptr;
  float* panel_data = nullptr;
  if (packed_floats + panel.width > 0) {
    packed = static_cast<float*>(ctx.scratch((packed_floats + k * panel.width) * sizeof(float)));
    panel_data = packed + packed_floats;
  }
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
    if (panel.width != 0) {
      for (int64_t kk = 0; kk < k; ++kk) {
        float* row = panel_data + kk * panel.width;
        for (int64_t j = 0; j < panel.width; ++j) {
          row[j] = panel.at + j < n ? b[kk * ldb + panel.at + j] : 0.0f;
        }
      }
      panel.data = panel_data;
    }
    const int64_t ars = p.a.row_stride, acs = p.a.col_stride;
    const int64_t crs = p.c.row_stride, ccs = p.c.col_stride;
    if (static_cast<double>(m) * k * n < kParallelWork) {
      row_range(a, ars, acs, b, ldb, k, n, c, crs, ccs, e, panel, 0, m);
      // The clamp over rows still in cache (in the register blocks' stores
      // it made every product of this kernel slower).
      if (p.clamp) clamp_rows(c, crs, ccs, n, 0, m, p.clamp_lo, p.clamp_hi);
      continue;
    }
    // Blocks of rows over the threads.
    const int64_t blocks = (m + kBlockRows - 1) / kBlockRows;
    cpu::parallel_for(ctx, blocks, kBlockRows * k * n, [&](int64_t begin, int64_t end) {
      const int64_t r0 = begin * kBlockRows, r1 = std::min(m, end * kBlockRows);
      row_range(a, ars, acs, b, ldb, k, n, c, crs, ccs, e, panel, r0, r1);
      if (p.clamp) clamp_rows(c, crs, ccs, n, r0, r1, p.clamp_lo, p.clamp_hi);
    });
  }
}

}  // namespace pterun::cpu
