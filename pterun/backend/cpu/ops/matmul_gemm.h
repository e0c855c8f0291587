#pragma once

// The batched matrix product behind mm, bmm, addmm, linear (and the
// convolution fallback): oneDNN's matmul for f32 (and f16/bf16 where this
// CPU has them, else through f32 copies), our own blocked loops for f64 and
// integers (same-dtype wraparound arithmetic, as torch).

#include <cstddef>
#include <cstdint>
#include <span>

#include "pterun/core/dtype.h"
#include "pterun/core/scalar.h"
#include "pterun/core/value.h"
#include "pterun/kernels/kernel.h"

namespace pterun::cpu {

/// A batch of strided matrices inside one dense tensor (strides in
/// elements, never negative).
struct MatrixView {
  const void* data = nullptr;
  int64_t batch_stride = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

/// c[i] = alpha * a[i] @ b[i] + bias + beta * c[i] for i < batch, where a is
/// m x k, b is k x n, c is m x n, all of `dtype`. `bias` (n contiguous
/// elements, or null) is added to every row; the beta term only when
/// `accumulate` (so NaNs in c do not leak through beta = 0). bias and
/// accumulate are exclusive.
struct GemmProblem {
  DType dtype = DType::Float32;
  int64_t batch = 1, m = 0, k = 0, n = 0;
  MatrixView a, b, c;
  const void* bias = nullptr;
  Scalar alpha = Scalar::from_int(1);
  Scalar beta = Scalar::from_int(0);
  bool accumulate = false;
};

/// Computes `p`; errors name `op`. Uses ctx.scratch().
void gemm(kernels::KernelContext& ctx, const GemmProblem& p, const char* op);

/// gemm() for small or narrow f32 products (matmul_small.cpp):
/// register-blocked loops without oneDNN's per-call cost and allocation;
/// row blocks over the threads above 2^20 multiply-adds.
void gemm_small_f32(kernels::KernelContext& ctx, const GemmProblem& p);

/// What the matrix ops (mm, bmm, addmm, linear in matmul.cpp) run on: the
/// CPU's gemm and strided copy, or the CUDA backend's. The ops' argument
/// checks and output resizing are shared; only these two calls differ.
struct GemmBackend {
  void (*gemm)(kernels::KernelContext& ctx, const GemmProblem& p, const char* op);
  /// kernels::strided_copy's contract (strides in elements, 0 broadcasts).
  void (*copy)(kernels::KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides,
               const void* src, std::span<const int64_t> src_strides,
               std::span<const int64_t> sizes, size_t element_size);
};

void mm_out_with(const GemmBackend& be, kernels::KernelContext& ctx, std::span<Value* const> args);
void bmm_out_with(const GemmBackend& be, kernels::KernelContext& ctx, std::span<Value* const> args);
void addmm_out_with(const GemmBackend& be, kernels::KernelContext& ctx,
                    std::span<Value* const> args);
void linear_out_with(const GemmBackend& be, kernels::KernelContext& ctx,
                     std::span<Value* const> args);

}  // namespace pterun::cpu
