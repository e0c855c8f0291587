#pragma once

#include "pterun/kernels/kernel.h"
#include "pterun/ops/conv.h"

namespace pterun::cuda::nn {

/// Whether conv_tiled takes `q`: a forward float32 / float16 / bfloat16
/// convolution with input channels, whose sizes and element counts fit
/// 32-bit indices.
bool conv_tiled_takes(const ops::ConvProblem& q);

/// Runs `q` (conv_tiled_takes) on pterun's own kernels, in one launch:
/// an implicit GEMM tiled through shared memory (output pixels by output
/// channels of each group, over input channels and kernel taps), or, when
/// each group has one input channel (depthwise), a kernel with one thread
/// per output in the output's memory order. The bias is added to the
/// float sum; with `fused`, q's residual and activation are applied in the
/// stores (a residual that shares out's bytes must be out itself).
void conv_tiled(kernels::KernelContext& ctx, const ops::ConvProblem& q, bool fused, const char* op);

}  // namespace pterun::cuda::nn
