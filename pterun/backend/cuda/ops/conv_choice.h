#pragma once

#include "pterun/kernels/kernel.h"
#include "pterun/ops/conv.h"

namespace pterun::cuda::nn {

/// A way to run a convolution problem on the method's stream.
using ConvRun = void (*)(kernels::KernelContext& ctx, const ops::ConvProblem& q);

/// Whether pterun's own kernel (`own`) should run `q` rather than the
/// vendor's path (`vendor`: cuDNN, else im2col + cuBLAS, else the direct
/// kernel). Chosen once per problem (shape, strides, dtype, epilogue,
/// TF32 permission) and kept for the process: on the first call outside a
/// CUDA graph capture both are timed on the call's own tensors and the
/// faster wins; inside a capture, without a choice yet, small problems go
/// to `own` (nothing is kept then). PTERUN_CONV_OWN=1 or 0 forces the
/// answer (tests, comparisons).
bool own_conv_faster(kernels::KernelContext& ctx, const ops::ConvProblem& q, bool fused,
                     ConvRun vendor, ConvRun own);

/// False when PTERUN_CONV_OWN=0 keeps every problem on the vendor's path
/// (for the untimed uses of pterun's kernel).
bool own_conv_allowed();

}  // namespace pterun::cuda::nn
