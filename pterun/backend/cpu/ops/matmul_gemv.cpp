// Products with a few rows against a weight read row by row: a linear
// layer in a decode step (one token: [1, k] x [n, k]^T), where the whole
// cost is reading the weight once. Each output column is the dot product
// of the activation rows with one contiguous weight row, so the weight
// streams through in order, converted from float16 / bfloat16 in registers
// (never copied), four weight rows at a time per pass over the
// activations, or, for a single row, one weight row after the other with
// the stream fetched ahead; the columns are split over the threads.

#include <algorithm>

#include "pterun/backend/cpu/engine/fetch_ahead.h"
#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/vec_convert.h"
#include "pterun/backend/cpu/ops/matmul_gemm.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pterun::cpu {
namespace {

using vec::F8;
using vec::load8;

constexpr int64_t kMaxRows = 8;

/// out[r][0..4) = sum_k a[r][k] * w_j[k] for the four weight rows w0..w3
/// (a in float, k a multiple of 8 handled by vectors, the rest by scalars).
template <typename W>
void four_columns(const float* a, int64_t lda, int64_t rows, const W* w0, const W* w1, const W* w2,
                  const W* w3, int64_t k, float (*out)[4]) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a + r * lda;
    F8 s0{}, s1{}, s2{}, s3{};
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) {
      const F8 xv = load_vec<F8>(x + i);
      s0 += xv * load8(w0 + i);
      s1 += xv * load8(w1 + i);
      s2 += xv * load8(w2 + i);
      s3 += xv * load8(w3 + i);
    }
    float t0 = vec::hsum(s0), t1 = vec::hsum(s1), t2 = vec::hsum(s2), t3 = vec::hsum(s3);
    for (; i < k; ++i) {
      t0 += x[i] * static_cast<float>(w0[i]);
      t1 += x[i] * static_cast<float>(w1[i]);
      t2 += x[i] * static_cast<float>(w2[i]);
      t3 += x[i] * static_cast<float>(w3[i]);
    }
    out[r][0] = t0;
    out[r][1] = t1;
    out[r][2] = t2;
    out[r][3] = t3;
  }
}

/// sum_k x[k] * w[k] for one weight row: four accumulators, each 64-byte
/// line of the weight fetched ahead of its read (fetch_ahead.h).
template <typename W>
float row_dot(const float* x, const W* w, int64_t k) {
  constexpr int64_t kLineElems = 64 / sizeof(W);
  F8 s0{}, s1{}, s2{}, s3{};
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    for (int64_t e = 0; e < 32; e += kLineElems) fetch_ahead(w + i + e);
    s0 += load_vec<F8>(x + i) * load8(w + i);
    s1 += load_vec<F8>(x + i + 8) * load8(w + i + 8);
    s2 += load_vec<F8>(x + i + 16) * load8(w + i + 16);
    s3 += load_vec<F8>(x + i + 24) * load8(w + i + 24);
  }
  for (; i + 8 <= k; i += 8) s0 += load_vec<F8>(x + i) * load8(w + i);
  float t = vec::hsum((s0 + s1) + (s2 + s3));
  for (; i < k; ++i) t += x[i] * static_cast<float>(w[i]);
  return t;
}

template <typename T>
void gemv_typed(kernels::KernelContext& ctx, const GemmProblem& p) {
  const int64_t m = p.m, k = p.k, n = p.n;
  const T* a = static_cast<const T*>(p.a.data);
  const T* w = static_cast<const T*>(p.b.data);  // weight row j at w + j * col_stride
  const int64_t ldw = p.b.col_stride;
  T* c = static_cast<T*>(const_cast<void*>(p.c.data));
  const T* bias = static_cast<const T*>(p.bias);
  const float alpha = static_cast<float>(p.alpha.to_double());

  // The activation rows in float, contiguous.
  float* x = static_cast<float*>(ctx.scratch(static_cast<size_t>(m * k) * sizeof(float)));
  for (int64_t r = 0; r < m; ++r) {
    const T* src = a + r * p.a.row_stride;
    if (p.a.col_stride == 1) {
      vec::to_float(src, x + r * k, k);
    } else {
      for (int64_t i = 0; i < k; ++i) x[r * k + i] = static_cast<float>(src[i * p.a.col_stride]);
    }
  }
  auto store = [&](int64_t r, int64_t j, float v) {
    v *= alpha;
    if (bias != nullptr) v += static_cast<float>(bias[j]);
    c[r * p.c.row_stride + j * p.c.col_stride] = static_cast<T>(v);
  };
  // Ranges of four columns each; many small ranges, so that a helper the
  // OS deschedules holds back little of the weight (every column costs the
  // same, so the split needs no balancing otherwise).
  const int64_t quads = (n + 3) / 4;
  auto body = [&](int64_t begin, int64_t end) {
    if (m == 1) {
      // A decode step: the weight rows one after the other, one stream.
      for (int64_t j = 4 * begin; j < std::min(n, 4 * end); ++j) {
        store(0, j, row_dot(x, w + j * ldw, k));
      }
      return;
    }
    float out[kMaxRows][4];
    for (int64_t q = begin; q < end; ++q) {
      const int64_t j = 4 * q;
      if (j + 4 <= n) {
        four_columns(x, k, m, w + j * ldw, w + (j + 1) * ldw, w + (j + 2) * ldw, w + (j + 3) * ldw,
                     k, out);
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t u = 0; u < 4; ++u) store(r, j + u, out[r][u]);
        }
      } else {
        for (int64_t jj = j; jj < n; ++jj) {
          for (int64_t r = 0; r < m; ++r) store(r, jj, row_dot(x + r * k, w + jj * ldw, k));
        }
      }
    }
  };
  const int threads = ctx.num_threads;
  if (threads <= 1 || quads * 4 * k * m < 4 * cpu::kParallelGrain) {
    body(0, quads);
    return;
  }
  const int64_t chunks = std::min<int64_t>(quads, 16 * threads);
  using Body = decltype(body);
  cpu::detail::run_parallel(
      threads, quads, chunks,
      [](void* context, int64_t b, int64_t e) { (*static_cast<Body*>(context))(b, e); }, &body);
}

}  // namespace

bool gemv_applies(const GemmProblem& p) {
  const bool dtype =
      p.dtype == DType::Float32 || p.dtype == DType::Float16 || p.dtype == DType::BFloat16;
  return dtype && p.batch == 1 && p.m >= 1 && p.m <= kMaxRows && p.k >= 8 && p.b.row_stride == 1 &&
         !p.accumulate;
}

void gemv(kernels::KernelContext& ctx, const GemmProblem& p) {
  switch (p.dtype) {
    case DType::Float32: gemv_typed<float>(ctx, p); break;
    case DType::Float16: gemv_typed<Half>(ctx, p); break;
    case DType::BFloat16: gemv_typed<BFloat16>(ctx, p); break;
    default: break;  // gemv_applies() admits these only
  }
}

}  // namespace pterun::cpu
