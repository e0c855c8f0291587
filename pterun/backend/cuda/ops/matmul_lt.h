#pragma once

// Matrix products with an epilogue, through cuBLASLt: the bias row of
// addmm and linear is added by the product itself (CUBLASLT_EPILOGUE_BIAS)
// instead of being copied into the output first and accumulated (one
// kernel instead of two), and a ReLU after it where asked
// (CUBLASLT_EPILOGUE_RELU_BIAS: an XNNPACK FullyConnected node's clamp to
// [0, inf), without a pass of its own). A matrix added to the product
// (GemmProblem::addend, a residual) is cuBLASLt's C operand with beta 1.

#include <cublas_v2.h>
#include <library_types.h>

#include <cstdint>

#include "pterun/kernels/kernel.h"

namespace pterun::cuda::nn {

/// A column-major operand: data, op and leading dimension.
struct LtOperand {
  const void* data;
  cublasOperation_t op;
  int64_t ld;
};

/// D (rows x cols, column-major, leading dimension ldd) = alpha * op(A)
/// op(B) + bias + C, bias a vector of `rows` elements of D's type added to
/// every column (or null), C (`c_in`, or null for none) a matrix laid out as
/// D (D itself, or not overlapping it); A is rows x k after op, B k x cols. `compute` is the
/// cuBLAS compute type (float32 accumulation, TF32 inputs where allowed).
/// `relu`: D = max(D, 0) after the bias, NaN kept (tests/ops/test_xnnpack_linear.py
/// checks that on the GPU). False when cuBLASLt offers no algorithm for the problem (then nothing
/// ran). The algorithm is chosen once per problem shape and alignment and
/// kept for the process.
bool lt_gemm_bias(kernels::KernelContext& ctx, cudaDataType_t type, cublasComputeType_t compute,
                  int64_t rows, int64_t cols, int64_t k, const LtOperand& a, const LtOperand& b,
                  void* d, int64_t ldd, const void* bias, float alpha, bool relu = false,
                  const void* c_in = nullptr);

}  // namespace pterun::cuda::nn
