#pragma once

// The conv family: convolution.out (conv1d / conv2d, grouped and depthwise,
// transposed with output_padding, any dim order of input, weight and out).
// The front-end (conv.cpp) checks the arguments, resizes out and describes
// the convolution as one 2-D ConvProblem; a backend computes it.

#include <cstdint>

#include "pterun/core/dtype.h"
#include "pterun/core/tensor.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

/// What runs on each output of a fused convolution (kernels/internal_ops.h),
/// in the compute type, before the output's rounding.
enum class ConvActivation : uint8_t {
  None,
  Clamp,      // to [clamp_min, clamp_max]; NaN stays NaN (relu, hardtanh)
  Hardswish,  // x * min(max(x + 3, 0), 6) / 6, rounded after each step as torch's decomposition
};

/// One 2-D convolution (1-D ones arrive with a height of 1) with a
/// non-empty output; ic = 0 when the input or weight is empty (every output
/// is then its bias).
struct ConvProblem {
  DType dtype = DType::Float32;  // of input, weight, bias and out (RealHBF16)
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
  // The weight tensor's Tensor::constant_id: nonzero when its bytes never
  // change (kernels keeping what they derive from them need not compare).
  uint64_t weight_id = 0;
  const void* bias = nullptr;  // oc contiguous elements, or null
  void* out = nullptr;
  int64_t out_strides[4] = {};
  // A tensor of out's shape added to the result before the activation
  // (strides over N, C, H, W), or null; it may be out itself.
  const void* residual = nullptr;
  int64_t residual_strides[4] = {};
  // The fused activation and its bounds.
  ConvActivation activation = ConvActivation::None;
  double clamp_min = 0, clamp_max = 0;
};

struct ConvBackend {
  void (*convolution)(KernelContext& ctx, const ConvProblem& p);
  /// Computes problems with an activation (null: the fused kernels are not
  /// registered for the device, and the load-time fusion leaves its
  /// convolutions alone).
  void (*convolution_fused)(KernelContext& ctx, const ConvProblem& p) = nullptr;
};

// convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride,
//   SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding,
//   SymInt groups, *, Tensor(a!) out)
void convolution_out(KernelContext& ctx, const Tensor& in, const Tensor& weight, const Tensor* bias,
                     IntList stride, IntList padding, IntList dilation, bool transposed,
                     IntList output_padding, int64_t groups, Tensor& out);

// pterun::convolution_relu.out, pterun::convolution_hardtanh.out and
// pterun::convolution_hardswish.out (kernels/internal_ops.h):
// convolution.out's arguments, the activation then applied to each output
// in the same pass. Floating dtypes only.
void convolution_relu_out(KernelContext& ctx, const Tensor& in, const Tensor& weight,
                          const Tensor* bias, IntList stride, IntList padding, IntList dilation,
                          bool transposed, IntList output_padding, int64_t groups, Tensor& out);
void convolution_hardtanh_out(KernelContext& ctx, const Tensor& in, const Tensor& weight,
                              const Tensor* bias, IntList stride, IntList padding, IntList dilation,
                              bool transposed, IntList output_padding, int64_t groups,
                              Scalar min_val, Scalar max_val, Tensor& out);
void convolution_hardswish_out(KernelContext& ctx, const Tensor& in, const Tensor& weight,
                               const Tensor* bias, IntList stride, IntList padding,
                               IntList dilation, bool transposed, IntList output_padding,
                               int64_t groups, Tensor& out);
// pterun::convolution_add.out and pterun::convolution_add_relu.out: the
// convolution plus `residual` (out's shape and dtype; it may be out
// itself), then relu for the second.
void convolution_add_out(KernelContext& ctx, const Tensor& in, const Tensor& weight,
                         const Tensor* bias, IntList stride, IntList padding, IntList dilation,
                         bool transposed, IntList output_padding, int64_t groups,
                         const Tensor& residual, Tensor& out);
void convolution_add_relu_out(KernelContext& ctx, const Tensor& in, const Tensor& weight,
                              const Tensor* bias, IntList stride, IntList padding, IntList dilation,
                              bool transposed, IntList output_padding, int64_t groups,
                              const Tensor& residual, Tensor& out);

}  // namespace pterun::ops
