#pragma once

#include <cstddef>
#include <span>

#include "pterun/kernels/kernel.h"
#include "pterun/ops/conv.h"

namespace pterun::cuda::nn {

/// A way to run a convolution problem on the method's stream.
using ConvRun = void (*)(kernels::KernelContext& ctx, const ops::ConvProblem& q);

/// The fastest of `runs` for `q`: runs[0] is the vendor's path (cuDNN,
/// else im2col + cuBLAS, else the direct kernel), the others pterun's own
/// kernels (runs[1] the tiled GEMM, conv_tiled.h). Chosen once per problem
/// (shape, strides, dtype, epilogue, TF32 permission) and kept for the
/// process: on the first call outside a CUDA graph capture each is timed
/// on the call's own tensors (device time, time_runs.h) and the fastest
/// wins; inside a capture, without a choice yet, small problems go to
/// runs[1] (nothing is kept then). PTERUN_CONV_OWN forces the answer
/// (tests, comparisons): 0 the vendor's, 1 the tiled GEMM, 2 the last of
/// `runs` (conv_warp.h where it takes the problem).
size_t fastest_conv(kernels::KernelContext& ctx, const ops::ConvProblem& q, bool fused,
                    std::span<const ConvRun> runs);

/// False when PTERUN_CONV_OWN=0 keeps every problem on the vendor's path
/// (for the untimed uses of pterun's kernel).
bool own_conv_allowed();

}  // namespace pterun::cuda::nn
