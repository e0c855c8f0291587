#pragma once

#include "pterun/backend/cpu/ops/conv_problem.h"
#include "pterun/kernels/kernel.h"

namespace pterun::cuda::nn {

/// Runs `q` as im2col + cuBLAS when that suits it (conv_gemm.cu says when);
/// false otherwise, having launched nothing.
bool conv_gemm(kernels::KernelContext& ctx, const cpu::ConvProblem& q, const char* op);

}  // namespace pterun::cuda::nn
