#pragma once

// The CPU convolution's fast paths, tried in this order by conv.cpp before
// its direct kernel; each takes the front-end's ConvProblem
// (pterun/ops/conv.h).

#include "pterun/kernels/kernel.h"
#include "pterun/ops/conv.h"

namespace pterun::cpu {

using ops::ConvProblem;

/// Runs `p` with our own f32 kernel (conv_f32.cpp) when it takes it:
/// forward (any stride, padding, dilation, groups), a band of padded input
/// rows that fits in L2; false otherwise, having done nothing. Applies
/// p.activation. Allocation-free once scratch has grown. Uses ctx.scratch().
bool conv_f32(kernels::KernelContext& ctx, const ConvProblem& p);

/// Runs `p` with our own channels-last f32 kernel (conv_f32_nhwc.cpp) when
/// input and output hold their channels contiguously (NHWC) and it takes
/// the problem: forward, dense (one group) or depthwise (multiplier 1), any
/// stride, padding and dilation; false otherwise, having done nothing.
/// Applies p.activation and p.residual. Uses ctx.scratch(); allocation-free
/// once that has grown and the weights are packed.
bool conv_f32_nhwc(kernels::KernelContext& ctx, const ConvProblem& p);

/// Runs `p` with oneDNN when it has an optimised implementation for it
/// (f32, and f16/bf16 natively or through f32 copies); false otherwise,
/// having done nothing. Uses ctx.scratch().
bool conv_dnnl(kernels::KernelContext& ctx, const ConvProblem& p, const char* op);

}  // namespace pterun::cpu
