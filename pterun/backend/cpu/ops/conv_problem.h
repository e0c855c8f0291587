#pragma once

// One 2-D convolution (1-D ones arrive with a height of 1), as the oneDNN
// path and our own direct kernel both take it.

#include <cstdint>
#include <span>

#include "pterun/core/dtype.h"
#include "pterun/core/value.h"
#include "pterun/kernels/kernel.h"

namespace pterun::cpu {

struct ConvProblem {
  DType dtype = DType::Float32;  // of input, weight, bias and out
  bool transposed = false;
  int64_t groups = 1;
  int64_t n = 0, ic = 0, oc = 0;  // batch, input and output channels
  int64_t ih = 0, iw = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0;
  int64_t stride[2] = {1, 1}, pad[2] = {0, 0}, dilation[2] = {1, 1}, out_pad[2] = {0, 0};
  // Strides in elements over (N, C, H, W) for in/out; the weight's are over
  // torch's layout: [oc, ic/groups, kh, kw], or [ic, oc/groups, kh, kw] when
  // transposed.
  const void* in = nullptr;
  int64_t in_strides[4] = {};
  const void* weight = nullptr;
  int64_t w_strides[4] = {};
  const void* bias = nullptr;  // oc contiguous elements, or null
  void* out = nullptr;
  int64_t out_strides[4] = {};
};

/// Checks the arguments of convolution.out(input, weight, bias?, stride,
/// padding, dilation, transposed, output_padding, groups, *, out) (errors
/// name `op`), resizes out and describes the problem in `p` (p.ic = 0 when
/// the input or weight is empty: every output is its bias). Returns false
/// when out is empty and there is nothing to compute. Shared by the CPU and
/// CUDA kernels.
bool make_conv_problem(std::span<Value* const> args, const char* op, ConvProblem& p);

/// Runs `p` with our own f32 kernel (conv_f32.cpp) when it takes it:
/// forward, stride 1, at least 4 output channels per group, a padded image
/// that fits in L2; false otherwise, having done nothing. Allocation-free
/// once scratch has grown. Uses ctx.scratch().
bool conv_f32(kernels::KernelContext& ctx, const ConvProblem& p);

/// Runs `p` with oneDNN when it has an optimised implementation for it
/// (f32, and f16/bf16 natively or through f32 copies); false otherwise,
/// having done nothing. Uses ctx.scratch().
bool conv_dnnl(kernels::KernelContext& ctx, const ConvProblem& p, const char* op);

}  // namespace pterun::cpu
