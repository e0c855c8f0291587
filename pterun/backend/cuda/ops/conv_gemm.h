#pragma once

#include "pterun/kernels/kernel.h"
#include "pterun/ops/conv.h"

namespace pterun::cuda::nn {

/// Runs `q` as im2col + cuBLAS when that suits it (conv_gemm.cu says when);
/// false otherwise, having launched nothing.
bool conv_gemm(kernels::KernelContext& ctx, const ops::ConvProblem& q, const char* op);

}  // namespace pterun::cuda::nn
