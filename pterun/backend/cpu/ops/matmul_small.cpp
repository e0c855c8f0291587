// Register-blocked f32 GEMM for small products (a few 10^4 multiply-adds:
// MLP layers at batch 8, attention heads), where oneDNN's fixed per-call
// cost (its gemm driver's setup and buffers) would dominate, and for
// narrow ones (classifier heads of at most 16 columns). Blocks of 4 rows x
// 16 columns of c (8 rows x 32 columns with AVX-512) live in registers; b
// is read in place when its rows are contiguous and packed once
// otherwise; its last columns come from a zero-padded panel.

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "pterun/backend/cpu/ops/matmul_gemm.h"
#include "pterun/kernels/common/parallel.h"

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

/// Multiply-adds above which row blocks are split over the threads (about
/// 20-40 us of work, as dnnl_util::kMinParallelWork).
constexpr double kParallelWork = 1 << 20;

struct Epilogue {
  float alpha, beta;
  bool accumulate;
  const float* bias;  // indexed by column, or null
};

/// c[0..R) x [j, j + cols) from a (R rows) and b (row-major, leading
/// dimension ldb, already offset to column j), in N vectors V per row;
/// cols is N * lanes except in a zero-padded last panel of b.
template <typename V, int R, int N>
void block(const float* a, int64_t a_rs, int64_t a_cs, const float* b, int64_t ldb, int64_t k,
           float* c, int64_t c_rs, int64_t c_cs, int64_t j, int64_t cols, const Epilogue& e) {
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
      const int64_t lanes = std::min<int64_t>(L, cols - L * v);
      if (lanes <= 0) break;
      V res = acc[r][v] * e.alpha;
      float* dst = c + r * c_rs + (j + L * v) * c_cs;
      if (c_cs == 1 && lanes == L) {
        if (e.bias != nullptr) res += load<V>(e.bias + j + L * v);
        if (e.accumulate) res += e.beta * load<V>(dst);
        store(dst, res);
      } else {
        float part[L];
        store(part, res);
        for (int64_t l = 0; l < lanes; ++l) {
          float x = part[l];
          if (e.bias != nullptr) x += e.bias[j + L * v + l];
          dst[l * c_cs] = e.accumulate ? x + e.beta * dst[l * c_cs] : x;
        }
      }
    }
  }
}

/// Rows [0, R) of c: whole vector blocks of b in place up to column
/// panel_at, then the last columns from `panel` (k rows of panel_width
/// floats, zero-padded).
template <int R>
void rows(const float* a, int64_t a_rs, int64_t a_cs, const float* b, int64_t ldb, int64_t k,
          int64_t n, float* c, int64_t c_rs, int64_t c_cs, const Epilogue& e, const float* panel,
          int64_t panel_at, int64_t panel_width) {
  int64_t j = 0;
  if constexpr (kWide) {
    for (; j + 32 <= panel_at; j += 32)
      block<V16, R, 2>(a, a_rs, a_cs, b + j, ldb, k, c, c_rs, c_cs, j, 32, e);
    for (; j + 16 <= panel_at; j += 16)
      block<V16, R, 1>(a, a_rs, a_cs, b + j, ldb, k, c, c_rs, c_cs, j, 16, e);
  } else {
    for (; j + 16 <= panel_at; j += 16)
      block<V8, R, 2>(a, a_rs, a_cs, b + j, ldb, k, c, c_rs, c_cs, j, 16, e);
  }
  for (; j + 8 <= panel_at; j += 8)
    block<V8, R, 1>(a, a_rs, a_cs, b + j, ldb, k, c, c_rs, c_cs, j, 8, e);
  if (panel_at < n) {
    if (kWide && panel_width == 16) {
      block<V16, R, 1>(a, a_rs, a_cs, panel, 16, k, c, c_rs, c_cs, panel_at, n - panel_at, e);
    } else {
      block<V8, R, 1>(a, a_rs, a_cs, panel, 8, k, c, c_rs, c_cs, panel_at, n - panel_at, e);
    }
  }
}

/// Columns that whole vector blocks cover (panel_at), and the width of the
/// zero-padded panel for the rest (0 when there is none).
void split_columns(int64_t n, int64_t& panel_at, int64_t& panel_width) {
  panel_at = n / 8 * 8;
  if (kWide && n % 16 > 8) panel_at = n / 16 * 16;  // one 16-wide panel, not 8 + a panel
  const int64_t rest = n - panel_at;
  panel_width = rest == 0 ? 0 : rest > 8 ? 16 : 8;
}

}  // namespace

void gemm_small_f32(kernels::KernelContext& ctx, const GemmProblem& p) {
  const int64_t m = p.m, k = p.k, n = p.n;
  const Epilogue e{static_cast<float>(p.alpha.to_double()), static_cast<float>(p.beta.to_double()),
                   p.accumulate, static_cast<const float*>(p.bias)};
  const bool b_rows_contiguous = p.b.col_stride == 1 || n == 1;
  int64_t panel_at, panel_width;
  split_columns(n, panel_at, panel_width);
  // Scratch: b packed row-major (when its rows are not contiguous), then
  // the zero-padded panel of its last columns.
  const size_t packed_floats = b_rows_contiguous ? 0 : static_cast<size_t>((k * n + 15) / 16 * 16);
  float* scratch = static_cast<float*>(
      ctx.scratch(std::max<size_t>(64, (packed_floats + k * panel_width) * sizeof(float))));
  float* packed = scratch;
  float* panel = scratch + packed_floats;
  constexpr int64_t kRows = kWide ? 8 : 4;  // 32 registers: 8 rows of accumulators
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
    for (int64_t kk = 0; kk < k; ++kk) {
      for (int64_t j = 0; j < panel_width; ++j) {
        panel[kk * panel_width + j] = panel_at + j < n ? b[kk * ldb + panel_at + j] : 0.0f;
      }
    }
    const int64_t ars = p.a.row_stride, acs = p.a.col_stride;
    const int64_t crs = p.c.row_stride, ccs = p.c.col_stride;
    auto row_blocks = [&](int64_t begin, int64_t end) {
      int64_t i = begin * kRows;
      const int64_t stop = std::min(m, end * kRows);
      auto at = [&]<int R>(std::integral_constant<int, R>) {
        rows<R>(a + i * ars, ars, acs, b, ldb, k, n, c + i * crs, crs, ccs, e, panel, panel_at,
                panel_width);
        i += R;
      };
      if constexpr (kWide) {
        while (i + 8 <= stop) at(std::integral_constant<int, 8>{});
      }
      while (i + 4 <= stop) at(std::integral_constant<int, 4>{});
      switch (stop - i) {
        case 3: at(std::integral_constant<int, 3>{}); break;
        case 2: at(std::integral_constant<int, 2>{}); break;
        case 1: at(std::integral_constant<int, 1>{}); break;
        default: break;
      }
    };
    // Blocks of rows over the threads when the product is large.
    const int64_t blocks = (m + kRows - 1) / kRows;
    if (static_cast<double>(m) * k * n < kParallelWork) {
      row_blocks(0, blocks);
    } else {
      kernels::parallel_for(ctx, blocks, kRows * k * n, row_blocks);
    }
  }
}

}  // namespace pterun::cpu
