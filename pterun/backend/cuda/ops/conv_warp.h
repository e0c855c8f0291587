#pragma once

#include "pterun/kernels/kernel.h"
#include "pterun/ops/conv.h"

namespace pterun::cuda::nn {

/// Whether conv_warp takes `q`: one conv_tiled takes that is not
/// depthwise, with a reduction of at least 8 per output and at most 2^26
/// multiply-adds in all (beyond that the tiled GEMM reuses its loads
/// better). PTERUN_CONV_WARP=0 makes it take none (comparisons).
bool conv_warp_takes(const ops::ConvProblem& q);

/// Runs `q` (conv_warp_takes) in one launch with a warp per output pixel
/// and 8 of its group's output channels: the lanes split the reduction
/// (input channels and taps, in the order the input's strides make
/// contiguous), then sum across the warp. Built for convolutions so small
/// that the tiled GEMM's steps through shared memory leave most of the GPU
/// idle. The bias, and with `fused` q's residual and activation, are
/// applied in the stores, as conv_tiled does.
void conv_warp(kernels::KernelContext& ctx, const ops::ConvProblem& q, bool fused, const char* op);

}  // namespace pterun::cuda::nn
