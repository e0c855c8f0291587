#pragma once

// The `xnnpack::` operators: one per XNNPACK node kind, with XNNPACK's
// semantics, which an XNNPACK delegate's graph is lowered into at load
// (pterun/delegates/, docs/format.md "How delegates run"). No program names
// them; they are pterun's own.
//
// Every tensor argument is read in MEMORY ORDER, as XNNPACK sees the
// delegate's tensors: a tensor's dims are its sizes permuted by its dim
// order (an NHWC activation of a channels-last method input is [N, H, W, C]);
// a 0-d tensor is [1]. Each front-end infers its output's shape on every
// call (dynamic shapes) and resizes the output through the inverse of that
// output's dim order, as ExecuTorch's XNNPACK executor does. Float dtypes
// (float32, float16, bfloat16), one per node; the shape nodes, max pooling
// and clamp also move int8 (a static int8 graph's activations, whose
// parameters they keep; the quantized ops at the end). `out_min`/`out_max` are the
// node's fused output clamp (-inf / inf when it has none), applied in place
// after the compute. The family table each op computes through is named.

#include <cstdint>

#include "pterun/core/tensor.h"
#include "pterun/ops/elementwise.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

// ---- elementwise (xnnpack_elementwise.cpp) -----------------------------------

// xnnpack::add / subtract / multiply / divide / minimum / maximum(Tensor a, Tensor b,
//   float out_min, float out_max, *, Tensor(a!) out): NumPy broadcasting of the
//   memory-order dims; kFn one of Add, Sub, Mul, Div, Minimum, Maximum.
template <BinaryFn kFn>
void xnn_binary(KernelContext& ctx, const Tensor& a, const Tensor& b, double out_min,
                double out_max, Tensor& out);
// xnnpack::prelu(Tensor in, Tensor slope, *, Tensor(a!) out): in < 0 ? in * slope : in,
//   slope broadcast against in (one per channel, the last memory-order dim).
void xnn_prelu(KernelContext& ctx, const Tensor& in, const Tensor& slope, Tensor& out);

/// The unary node kinds without parameters.
enum class XnnUnary : uint8_t {
  Sigmoid,
  Floor,
  Ceiling,
  SquareRoot,
  ReciprocalSquareRoot,
  Abs,
  Negate,
  Square,
  Log,
  Exp,
  Tanh,
  Sin,
  Cos,
  Gelu,  // the erf form
  Hardswish,
};

// xnnpack::sigmoid, floor, ceiling, square_root, reciprocal_square_root, abs, negate,
//   square, log, exp, tanh, sin, cos, gelu, hardswish(Tensor in, *, Tensor(a!) out)
template <XnnUnary kFn>
void xnn_unary(KernelContext& ctx, const Tensor& in, Tensor& out);
// xnnpack::clamp(Tensor in, float min, float max, *, Tensor(a!) out)
void xnn_clamp(KernelContext& ctx, const Tensor& in, double min, double max, Tensor& out);
// xnnpack::leaky_relu(Tensor in, float negative_slope, *, Tensor(a!) out)
void xnn_leaky_relu(KernelContext& ctx, const Tensor& in, double negative_slope, Tensor& out);
// xnnpack::elu(Tensor in, float alpha, *, Tensor(a!) out): in > 0 ? in : alpha * (exp(in) - 1)
void xnn_elu(KernelContext& ctx, const Tensor& in, double alpha, Tensor& out);
// xnnpack::softmax(Tensor in, *, Tensor(a!) out): along the last memory-order dim (softmax)
void xnn_softmax(KernelContext& ctx, const Tensor& in, Tensor& out);

// ---- matmul (xnnpack_matmul.cpp) ----------------------------------------------

// xnnpack::fully_connected(Tensor in, Tensor filter, Tensor? bias, bool transpose_filter,
//   float out_min, float out_max, *, Tensor(a!) out): in [..., K] as rows; filter [N, K],
//   or [K, N] with transpose_filter; bias [N]; out [..., N] (matmul).
void xnn_fully_connected(KernelContext& ctx, const Tensor& in, const Tensor& filter,
                         const Tensor* bias, bool transpose_filter, double out_min, double out_max,
                         Tensor& out);
// xnnpack::batch_matrix_multiply(Tensor a, Tensor b, bool transpose_b, *, Tensor(a!) out):
//   a [..., M, K] x b [..., K, N] (b [..., N, K] with transpose_b), batch dims
//   broadcast; out [..., M, N] (matmul).
void xnn_batch_matrix_multiply(KernelContext& ctx, const Tensor& a, const Tensor& b,
                               bool transpose_b, Tensor& out);

// ---- convolution (xnnpack_conv.cpp) -------------------------------------------

// xnnpack::conv2d(Tensor in, Tensor filter, Tensor? bias, int[2] padding, int[2] stride,
//   int[2] dilation, int groups, float out_min, float out_max, *, Tensor(a!) out):
//   in [N, H, W, C]; filter [OC, KH, KW, C / groups]; bias [OC]; padding (top = bottom,
//   left = right); out [N, OH, OW, OC] (conv).
void xnn_conv2d(KernelContext& ctx, const Tensor& in, const Tensor& filter, const Tensor* bias,
                IntList padding, IntList stride, IntList dilation, int64_t groups, double out_min,
                double out_max, Tensor& out);
// xnnpack::depthwise_conv2d(Tensor in, Tensor filter, Tensor? bias, int[2] padding,
//   int[2] stride, int[2] dilation, float out_min, float out_max, *, Tensor(a!) out):
//   filter [1, KH, KW, C * multiplier]; output channel c * multiplier + m reads channel c.
void xnn_depthwise_conv2d(KernelContext& ctx, const Tensor& in, const Tensor& filter,
                          const Tensor* bias, IntList padding, IntList stride, IntList dilation,
                          double out_min, double out_max, Tensor& out);
// xnnpack::conv2d_hardswish and xnnpack::depthwise_conv2d_hardswish (pterun's
// own, the arguments of conv2d and depthwise_conv2d): the convolution then
// hardswish, for a HardSwish node that alone reads a convolution's output
// (the delegate's lowering fuses the two; one pass over the output).
void xnn_conv2d_hardswish(KernelContext& ctx, const Tensor& in, const Tensor& filter,
                          const Tensor* bias, IntList padding, IntList stride, IntList dilation,
                          int64_t groups, double out_min, double out_max, Tensor& out);
void xnn_depthwise_conv2d_hardswish(KernelContext& ctx, const Tensor& in, const Tensor& filter,
                                    const Tensor* bias, IntList padding, IntList stride,
                                    IntList dilation, double out_min, double out_max, Tensor& out);
// xnnpack::conv2d_nchw (pterun's own, the arguments of conv2d): conv2d whose
// input is in NCHW memory order ([N, C, H, W]; the output NHWC as
// conv2d's), for a StaticTranspose (0, 2, 3, 1) of an NCHW value that one
// Conv2d alone reads (the delegate's lowering folds the transpose into the
// convolution's reads: the delegate's input before its stem).
void xnn_conv2d_nchw(KernelContext& ctx, const Tensor& in, const Tensor& filter, const Tensor* bias,
                     IntList padding, IntList stride, IntList dilation, int64_t groups,
                     double out_min, double out_max, Tensor& out);
// xnnpack::conv2d_add(Tensor in, Tensor filter, Tensor? bias, int[2] padding, int[2] stride,
//   int[2] dilation, int groups, Tensor residual, float out_min, float out_max, *,
//   Tensor(a!) out) (pterun's own): the convolution plus `residual` (the output's shape
//   and dtype, not sharing its bytes), then clamped to [out_min, out_max]: a Conv2d
//   without an output clamp whose output an Add node alone reads (the delegate's
//   lowering fuses the two; the Add's clamp is the call's).
void xnn_conv2d_add(KernelContext& ctx, const Tensor& in, const Tensor& filter, const Tensor* bias,
                    IntList padding, IntList stride, IntList dilation, int64_t groups,
                    const Tensor& residual, double out_min, double out_max, Tensor& out);
// xnnpack::conv_transpose2d(Tensor in, Tensor filter, Tensor? bias, int[2] padding,
//   int[2] adjustment, int[2] stride, int[2] dilation, int groups, float out_min,
//   float out_max, *, Tensor(a!) out): filter [OC, KH, KW, C / groups]; output size
//   (in - 1) * stride + dilation * (k - 1) + 1 + adjustment - 2 * padding.
void xnn_conv_transpose2d(KernelContext& ctx, const Tensor& in, const Tensor& filter,
                          const Tensor* bias, IntList padding, IntList adjustment, IntList stride,
                          IntList dilation, int64_t groups, double out_min, double out_max,
                          Tensor& out);

// ---- pooling and resizing (xnnpack_pool.cpp) ----------------------------------

// xnnpack::avg_pooling2d(Tensor in, int[4] padding, int[2] pooling, int[2] stride,
//   float out_min, float out_max, *, Tensor(a!) out): NHWC; padding (top, right,
//   bottom, left), never counted in the divisor (pool).
void xnn_avg_pooling2d(KernelContext& ctx, const Tensor& in, IntList padding, IntList pooling,
                       IntList stride, double out_min, double out_max, Tensor& out);
// xnnpack::max_pooling2d(Tensor in, int[4] padding, int[2] pooling, int[2] stride,
//   int[2] dilation, float out_min, float out_max, *, Tensor(a!) out) (pool)
void xnn_max_pooling2d(KernelContext& ctx, const Tensor& in, IntList padding, IntList pooling,
                       IntList stride, IntList dilation, double out_min, double out_max,
                       Tensor& out);
// xnnpack::argmax_pooling2d(Tensor in, int[4] padding, int[2] pooling, *, Tensor(a!) out,
//   Tensor(b!) indices): windows of stride `pooling`; indices (int32, or int64 where
//   the method's output is Long) are x * pooling_h + y within the window, the first
//   largest (pool).
void xnn_argmax_pooling2d(KernelContext& ctx, const Tensor& in, IntList padding, IntList pooling,
                          Tensor& out, Tensor& indices);
// xnnpack::global_avg_pooling2d(Tensor in, bool keep_dims, float out_min, float out_max, *,
//   Tensor(a!) out): [N, H, W, C] -> [N, 1, 1, C], or [N, C] (pool)
void xnn_global_avg_pooling2d(KernelContext& ctx, const Tensor& in, bool keep_dims, double out_min,
                              double out_max, Tensor& out);
// xnnpack::static_resize_bilinear2d(Tensor in, int new_height, int new_width,
//   bool align_corners, *, Tensor(a!) out): NHWC; half-pixel centres unless
//   align_corners (pool)
void xnn_static_resize_bilinear2d(KernelContext& ctx, const Tensor& in, int64_t new_height,
                                  int64_t new_width, bool align_corners, Tensor& out);

// ---- data movement (xnnpack_shape.cpp) ----------------------------------------

// xnnpack::static_transpose(Tensor in, int[] perm, *, Tensor(a!) out): out dim i is in
//   dim perm[i] (shape)
void xnn_static_transpose(KernelContext& ctx, const Tensor& in, IntList perm, Tensor& out);
// xnnpack::static_reshape(Tensor in, int[] new_shape, *, Tensor(a!) out): a 0 entry is
//   inferred (shape; nothing moves when out already shares in's bytes)
void xnn_static_reshape(KernelContext& ctx, const Tensor& in, IntList new_shape, Tensor& out);
// xnnpack::static_slice(Tensor in, int[] offsets, int[] sizes, *, Tensor(a!) out): a size
//   of 0 runs to the end of its dim (shape)
void xnn_static_slice(KernelContext& ctx, const Tensor& in, IntList offsets, IntList sizes,
                      Tensor& out);
// xnnpack::static_constant_pad(Tensor in, int[] pre_paddings, int[] post_paddings,
//   float padding_value, *, Tensor(a!) out) (shape)
void xnn_static_constant_pad(KernelContext& ctx, const Tensor& in, IntList pre, IntList post,
                             double padding_value, Tensor& out);
// xnnpack::concatenate(Tensor[] inputs, int axis, *, Tensor(a!) out) (shape)
void xnn_concatenate(KernelContext& ctx, TensorList inputs, int64_t axis, Tensor& out);
// xnnpack::copy(Tensor in, *, Tensor(a!) out) (shape)
void xnn_copy(KernelContext& ctx, const Tensor& in, Tensor& out);
// xnnpack::convert(Tensor in, *, Tensor(a!) out): between float dtypes (copy)
void xnn_convert(KernelContext& ctx, const Tensor& in, Tensor& out);

// ---- quantized (xnnpack_quant.cpp) ---------------------------------------------

// xnnpack::fully_connected_dq(Tensor in, Tensor weight, Tensor weight_scales,
//   Tensor weight_sums, Tensor? bias, int weight_bits, int num_nonbatch_dims,
//   float out_min, float out_max, *, Tensor(a!) out): a Convert to qdint8 and the
//   FullyConnected nodes reading it, as one op (quant's dynamic_linear; the
//   arithmetic in QDynLinearArgs). in float32 [..., K], quantized per slice of its
//   last num_nonbatch_dims dims; weight int8 [N, K] (weight_bits 8) or uint8
//   [N, ceil(K / 2)] (weight_bits 4); weight_scales float32 [N, B] for B blocks
//   of K / B inputs (bfloat16 allowed with 4-bit weights); weight_sums [N] (int32 for 8-bit
//   weights, float32 for 4-bit ones: QDynLinearArgs); bias float32 [N]; out float32 [..., N].
void xnn_fully_connected_dq(KernelContext& ctx, const Tensor& in, const Tensor& weight,
                            const Tensor& weight_scales, const Tensor& weight_sums,
                            const Tensor* bias, int64_t weight_bits, int64_t num_nonbatch_dims,
                            double out_min, double out_max, Tensor& out);
// xnnpack::quantized_conv2d(Tensor in, float in_scale, int in_zero_point, Tensor weight,
//   Tensor weight_scales, Tensor weight_sums, Tensor? bias, int[2] padding, int[2] stride,
//   int[2] dilation, int groups, float out_scale, int out_zero_point, int out_min,
//   int out_max, *, Tensor(a!) out): a static int8 Conv2d or DepthwiseConv2d node,
//   pterun::quantized_conv2d.out (quant.h) on the NHWC input and output seen as NCHW in
//   channels-last order; weight in torch's layout [OC, IC / groups, KH, KW] (contiguous
//   or channels-last), out int8 NHWC [N, OH, OW, OC].
void xnn_quantized_conv2d(KernelContext& ctx, const Tensor& in, double in_scale,
                          int64_t in_zero_point, const Tensor& weight, const Tensor& weight_scales,
                          const Tensor& weight_sums, const Tensor* bias, IntList padding,
                          IntList stride, IntList dilation, int64_t groups, double out_scale,
                          int64_t out_zero_point, int64_t out_min, int64_t out_max, Tensor& out);
// xnnpack::quantized_conv2d_float(...): xnnpack::quantized_conv2d's arguments with
//   `in` a float32 NCHW [N, C, H, W] tensor, quantized to int8 with (in_scale,
//   in_zero_point) as quantize_per_tensor does and read as the NHWC image its
//   transpose (0, 2, 3, 1) would be (kernels::kQuantizedConv2dFloatKernel; the
//   loader's, where QuantBackend::float_io).
void xnn_quantized_conv2d_float(KernelContext& ctx, const Tensor& in, double in_scale,
                                int64_t in_zero_point, const Tensor& weight,
                                const Tensor& weight_scales, const Tensor& weight_sums,
                                const Tensor* bias, IntList padding, IntList stride,
                                IntList dilation, int64_t groups, double out_scale,
                                int64_t out_zero_point, int64_t out_min, int64_t out_max,
                                Tensor& out);

}  // namespace pterun::ops
