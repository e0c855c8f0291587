#pragma once

// The CPU's batched matrix product behind mm, bmm, addmm, linear (and the
// convolution fallback): oneDNN's matmul for f32 (and f16/bf16 where this
// CPU has them, else through f32 copies), our own blocked loops for f64 and
// integers (same-dtype wraparound arithmetic, as torch).

#include "pterun/kernels/kernel.h"
#include "pterun/ops/matmul.h"

namespace pterun::cpu {

using ops::GemmProblem;
using ops::MatrixView;

/// Computes `p` (pterun/ops/matmul.h); errors name `op`. Uses ctx.scratch().
void gemm(kernels::KernelContext& ctx, const GemmProblem& p, const char* op);

/// Rows [begin, end) of a float32 matrix c (row and column strides in
/// elements) clamped to [lo, hi] in place, NaN kept: GemmProblem::clamp
/// over rows a product has written.
inline void clamp_rows(float* c, int64_t c_rs, int64_t c_cs, int64_t n, int64_t begin, int64_t end,
                       float lo, float hi) {
  for (int64_t i = begin; i < end; ++i) {
    float* row = c + i * c_rs;
    for (int64_t j = 0; j < n; ++j) {
      float& v = row[j * c_cs];
      v = v < lo ? lo : v;
      v = v > hi ? hi : v;
    }
  }
}

/// gemm() for small or narrow f32 products (matmul_small.cpp):
/// register-blocked loops without oneDNN's per-call cost and allocation;
/// row blocks over the threads above 2^20 multiply-adds.
void gemm_small_f32(kernels::KernelContext& ctx, const GemmProblem& p);

/// True when `p` suits gemv(): f32/f16/bf16, one batch, at most 8 rows, b
/// the transpose of a weight with contiguous rows (a linear layer's weight
/// read in place), no accumulation into c.
bool gemv_applies(const GemmProblem& p);

/// Computes such a product weight row by weight row (matmul_gemv.cpp),
/// converting f16/bf16 weights in registers, columns split over the threads.
void gemv(kernels::KernelContext& ctx, const GemmProblem& p);

}  // namespace pterun::cpu
