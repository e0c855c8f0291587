#pragma once

// The matmul family: mm, bmm, addmm and linear. The front-ends (matmul.cpp)
// check shapes and dtypes, resize out and describe each product as a
// GemmProblem over strided views of the operands, read in place (transposed
// and column-major operands need no copies); a backend computes it.

#include <cstddef>
#include <cstdint>
#include <span>

#include "pterun/core/dtype.h"
#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

/// A batch of strided matrices inside one dense tensor (strides in
/// elements, never negative).
struct MatrixView {
  const void* data = nullptr;
  int64_t batch_stride = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

/// c[i] = alpha * a[i] @ b[i] + bias + beta * c[i] for i < batch, where a is
/// m x k, b is k x n, c is m x n, all of `dtype` (one of RealHBF16,
/// checked). `bias` (n contiguous elements, or null) is added to every row;
/// the beta term only when `accumulate` (so NaNs in c do not leak through
/// beta = 0). bias and accumulate are exclusive. `addend` (or null; only for
/// a backend whose `adds` is true, batch 1): an m x n matrix laid out as c
/// (c itself, or memory that overlaps none of c) added after the bias, the
/// sum rounded once: c = alpha * a @ b + bias + addend. Exclusive with
/// accumulate.
struct GemmProblem {
  DType dtype = DType::Float32;
  int64_t batch = 1, m = 0, k = 0, n = 0;
  MatrixView a, b, c;
  const void* bias = nullptr;
  const void* addend = nullptr;
  Scalar alpha = Scalar::from_int(1);
  Scalar beta = Scalar::from_int(0);
  bool accumulate = false;
  /// Only for a backend whose `clamps` is true, float32 only: c clamped to
  /// [clamp_lo, clamp_hi] after everything above, NaN kept (as clamp).
  bool clamp = false;
  float clamp_lo = 0, clamp_hi = 0;
};

struct MatmulBackend {
  /// Computes `p`; errors name `op`. May use scratch memory.
  void (*gemm)(KernelContext& ctx, const GemmProblem& p, const char* op);
  /// A strided copy (strides in elements, 0 broadcasts):
  /// addmm's beta * self starts in out through it.
  void (*copy)(KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides, const void* src,
               std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
               size_t element_size);
  /// Whether `gemm` takes GemmProblem::clamp (the CPU: on rows still in
  /// cache, without a step of its own; CUDA: [0, inf) in cuBLASLt's ReLU
  /// epilogue, other bounds by a clamp kernel after the product).
  bool clamps = false;
  /// Whether `gemm` takes GemmProblem::addend (CUDA: cuBLASLt's C operand).
  bool adds = false;
};

// mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out)
void mm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out);
// bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out)
void bmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out);
// addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1,
//   Tensor(a!) out)
void addmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat1, const Tensor& mat2,
               Scalar beta, Scalar alpha, Tensor& out);
// linear.out(Tensor input, Tensor weight, Tensor? bias=None, *, Tensor(a!) out)
void linear_out(KernelContext& ctx, const Tensor& in, const Tensor& weight, const Tensor* bias,
                Tensor& out);

// ---- internal kernel (kernels/internal_ops.h) ----
// pterun::gemm_add.out(Tensor mat1, Tensor mat2, Tensor? bias, Tensor other, *,
//   Tensor(a!) out) -> Tensor(a!): out = other + (mat1 @ mat2 + bias), mat1 [m, k], mat2
//   [k, n], bias [n] or None, other of m * n elements whose last dim is n, contiguous; out
//   takes other's sizes and is other itself or overlaps none of the operands. The sum is
//   rounded once (the unfused addmm and add round twice in float16 and bfloat16). For a
//   backend whose `adds` is true.
void gemm_add_out(KernelContext& ctx, const Tensor& mat1, const Tensor& mat2, const Tensor* bias,
                  const Tensor& other, Tensor& out);

}  // namespace pterun::ops
