#pragma once

// The quantization family: the quantized_decomposed operators a PT2E
// program without a delegate calls (quantize and dequantize per tensor,
// channel, token and channel group; choose_qparams; the quantized add),
// and the integer kernels the loader runs in place of dequantize -> op ->
// quantize chains (executor/quant_fusion.h): linear, 2-D convolution and
// mean. The front-ends (quant.cpp, quant_fused.cpp) check arguments and
// the scalar quantization parameters; a backend computes from these
// argument structs. docs/quantization.md states the arithmetic.
//
// Parameters held in tensors are data: the loader checks constant ones
// (executor/quant_check.h); otherwise the CPU raises InvalidArgument for a
// bad scale or zero point before writing anything, while CUDA, which would
// need a host wait to raise, computes with them as they are (a non-finite
// or non-positive scale gives quant_min or NaN, never undefined behaviour).

#include <cstddef>
#include <cstdint>
#include <optional>

#include "pterun/core/dtype.h"
#include "pterun/core/tensor.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

/// Quantization parameters: one (scale, zero point) per group of `inner`
/// consecutive elements in memory, taken in turn from `channels` entries:
/// element m uses entry (m / inner) % channels. Entries come from host
/// numbers (scales == nullptr: every entry is `scale`; zero_points ==
/// nullptr: every entry is `zero_point`) or from tensors of `channels`
/// values on the device the op runs on.
struct QParams {
  double scale = 1.0;
  int64_t zero_point = 0;
  const Tensor* scales = nullptr;       // Float64, Float32, Float16 or BFloat16
  const Tensor* zero_points = nullptr;  // Int64 or Int32
  int64_t channels = 1;
  int64_t inner = 1;
};

/// How a value is rounded to its quantized integer.
enum class QRounding : uint8_t {
  /// ExecuTorch's kernels: zero_point + nearbyint(x * (1.0f / float(scale))),
  /// in float32 (the product in double for a float64 input, then float).
  ExecuTorch,
  /// torch's quantize_per_channel_group: nearbyint(x * (1 / scale) +
  /// zero_point), in float32 (float64 when the input or the scales are).
  ZeroPointFirst,
};

/// out = clamp(round(in), quant_min, quant_max) as QRounding says; in is
/// floating, out an integer dtype; both dense with one dim order and the
/// same sizes (checked). NaN gives quant_min; values beyond the range
/// saturate.
struct QuantizeArgs {
  const Tensor& in;
  Tensor& out;
  QParams q;
  int64_t quant_min;
  int64_t quant_max;
  QRounding rounding;
};

/// out = (in - zero_point) * scale converted to out's floating dtype: the
/// product in float32 with the scale rounded to float32 first (ExecuTorch),
/// or in float64 when `wide`; with `round_to` Float16 or BFloat16 it is
/// rounded to that dtype before the conversion (torch's
/// dequantize_per_channel_group with 16-bit scales; Float32: no rounding).
struct DequantizeArgs {
  const Tensor& in;
  Tensor& out;
  QParams q;
  bool wide;
  DType round_to;
};

/// ExecuTorch's choose_qparams (fbgemm's rule) over `rows` rows of
/// `row_size` consecutive floats of `in` (float32): scale_out (float64)
/// and zero_point_out (int64), `rows` values each. A row with a NaN or an
/// infinity has no valid parameters: the CPU raises, CUDA writes NaN and
/// quant_min.
struct ChooseQParamsArgs {
  const Tensor& in;
  int64_t rows;
  int64_t row_size;
  int64_t quant_min;
  int64_t quant_max;
  Tensor& scale_out;
  Tensor& zero_point_out;
};

/// One quantized operand's per-tensor parameters, the scale as float32.
struct QTensorParams {
  float scale;
  int32_t zero_point;
};

/// Elementwise out = quantize(dequantize(a) + dequantize(b)), exactly as
/// ExecuTorch's dequantize -> add -> quantize: each operand dequantized in
/// float32, one float32 add, then ExecuTorch's rounding, clamped to
/// [out_min, out_max]. a, b and out: one integer dtype, one shape and dim
/// order (checked).
struct QuantizedAddArgs {
  const Tensor& a;
  QTensorParams a_q;
  const Tensor& b;
  QTensorParams b_q;
  Tensor& out;
  QTensorParams out_q;
  int32_t out_min;
  int32_t out_max;
};

/// The requantization of an int32 accumulator `acc` of output channel n:
/// y = float(acc) * (input_scale * weight_scale[n]) [+ bias[n]], then
/// ExecuTorch's rounding to out's parameters, clamped to [out_min,
/// out_max] (the fused activation's bounds are folded in).
struct Requantize {
  QTensorParams in_q;
  const Tensor& weight_scales;  // Float32 or Float64, N values (or 1: per tensor)
  const Tensor* bias;           // Float32, N values, or nullptr
  QTensorParams out_q;
  int32_t out_min;
  int32_t out_max;
};

/// out[m, n] = requantize(sum_k (in[m, k] - in_zero_point) * weight[n, k])
/// for M rows of `in` (int8 or uint8, contiguous, last dim K) and
/// `weight` int8 [N, K] contiguous, symmetric (zero point 0);
/// `weight_sums` int32 [N] holds sum_k weight[n, k]
/// (QuantBackend::weight_sums). out: in's leading dims + [N], contiguous,
/// int8 or uint8.
struct QLinearArgs {
  const Tensor& in;
  const Tensor& weight;
  const Tensor& weight_sums;
  Requantize rq;
  int64_t m;
  int64_t n;
  int64_t k;
  Tensor& out;
};
// Where QuantBackend::float_io, `in` may also be float32 (quantized to int8
// first: in_q's zero point + round-half-even(x / in_q.scale), clamped to
// [-128, 127]) and `out` float32 (each requantized int8 value q then
// (q - out_q.zero_point) * out_q.scale); `in` and `out` may overlap.
// QConv2dArgs' `in` may be float32 likewise (NCHW or channels-last).

/// 2-D convolution of `in` (int8/uint8 [N, C, H, W], contiguous or
/// channels-last) with `weight` (int8 [OC, C / groups, KH, KW], contiguous
/// or channels-last, symmetric) into `out` (int8/uint8 [N, OC, OH, OW], any
/// dense dim order): padding reads the input's zero point (a real 0).
/// `weight_sums` int32 [OC] as for QLinearArgs.
struct QConv2dArgs {
  const Tensor& in;
  const Tensor& weight;
  const Tensor& weight_sums;
  Requantize rq;
  int64_t stride[2];
  int64_t padding[2];
  int64_t dilation[2];
  int64_t groups;
  Tensor& out;
};

/// The sizes of a quantized 2-D convolution, as both backends' kernels
/// use them (worked out from QConv2dArgs by qconv_shape).
struct QConvShape {
  int64_t batch, channels, height, width;  // input [N, C, H, W]
  int64_t out_channels, out_height, out_width;
  int64_t kh, kw, groups, cg, og;  // cg / og: input / output channels per group
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t k;                  // cg * kh * kw
  bool weight_channels_last;  // weight rows are [kh][kw][cg], else [cg][kh][kw]
};

inline QConvShape qconv_shape(const QConv2dArgs& a) {
  const int64_t channels = a.in.size(1), out_channels = a.out.size(1);
  const int64_t kh = a.weight.size(2), kw = a.weight.size(3), cg = channels / a.groups;
  return {.batch = a.in.size(0),
          .channels = channels,
          .height = a.in.size(2),
          .width = a.in.size(3),
          .out_channels = out_channels,
          .out_height = a.out.size(2),
          .out_width = a.out.size(3),
          .kh = kh,
          .kw = kw,
          .groups = a.groups,
          .cg = cg,
          .og = out_channels / a.groups,
          .sh = a.stride[0],
          .sw = a.stride[1],
          .ph = a.padding[0],
          .pw = a.padding[1],
          .dh = a.dilation[0],
          .dw = a.dilation[1],
          .k = cg * kh * kw,
          .weight_channels_last = !a.weight.is_contiguous_order()};
}

/// out[o, i] = quantize(mean over r of dequantize(in[o, r, i])) for in
/// viewed as [outer, reduce, inner] (a dense tensor whose reduced dims are
/// one run in memory), out as [outer, inner]: the integer sum, then
/// y = float(sum - reduce * in_zero_point) * in_scale / reduce, rounded
/// as ExecuTorch rounds, clamped to [out_min, out_max].
struct QMeanArgs {
  const Tensor& in;
  QTensorParams in_q;
  int64_t outer;
  int64_t reduce;
  int64_t inner;
  Tensor& out;
  QTensorParams out_q;
  int32_t out_min;
  int32_t out_max;
};

/// XNNPACK's dynamically quantized fully connected layer (qd8 activations
/// with 8-bit per-channel or 4-bit per-channel / blockwise weights):
/// each run of `slice_rows` consecutive rows of `in` (float32 [m, k]) is
/// quantized to int8 with its own asymmetric parameters (XNNPACK's
/// rule, docs/quantization.md), then
///   out[i, j] = row_scale(i) * sum_b weight_scales[j, b] *
///               sum_{k in block b} (q[i, k] - row_zero_point(i)) * (w[j, k] - w_zp)
///               + bias[j],
/// clamped to [out_min, out_max], out float32 [m, n]. The weight is int8
/// [n, k] (bits 8, w_zp 0) or bytes [n, ceil(k / 2)] of two 4-bit values
/// each, element 2i in the low nibble, stored as w + 8 (bits 4, w_zp 8);
/// `blocks` blocks of k / blocks inputs per output (1: per channel; 8-bit
/// weights have 1). weight_scales float32 [n, blocks], or bfloat16 with
/// 4-bit weights (XNNPACK's blockwise scales, kept as stored: half the
/// bytes a decode step streams besides the weights). weight_sums [n]:
/// int32 sum_k w[j, k] for 8-bit weights; float32 sum_b weight_scales[j, b] *
/// sum_{k in block b} (w[j, k] - 8) for 4-bit ones (what the zero points
/// take back). bias float32 [n] or nullptr. All contiguous (checked).
struct QDynLinearArgs {
  const Tensor& in;
  const Tensor& weight;
  const Tensor& weight_scales;
  const Tensor& weight_sums;
  const Tensor* bias;
  int bits;
  int64_t m;
  int64_t n;
  int64_t k;
  int64_t blocks;
  int64_t slice_rows;
  float out_min;
  float out_max;
  Tensor& out;
};

struct QuantBackend {
  void (*quantize)(KernelContext& ctx, const QuantizeArgs& a);
  void (*dequantize)(KernelContext& ctx, const DequantizeArgs& a);
  void (*choose_qparams)(KernelContext& ctx, const ChooseQParamsArgs& a);
  void (*add)(KernelContext& ctx, const QuantizedAddArgs& a);
  /// out[n] = sum_k weight[n, k] of an int8 weight seen as [N, K]
  /// contiguous (out int32 [N]).
  void (*weight_sums)(KernelContext& ctx, const Tensor& weight, int64_t n, int64_t k, Tensor& out);
  void (*linear)(KernelContext& ctx, const QLinearArgs& a);
  void (*conv2d)(KernelContext& ctx, const QConv2dArgs& a);
  void (*mean)(KernelContext& ctx, const QMeanArgs& a);
  /// Optional (a backend without it leaves it null, and the XNNPACK
  /// operator that calls it is not registered for its device).
  void (*dynamic_linear)(KernelContext& ctx, const QDynLinearArgs& a) = nullptr;
  /// Whether `linear` takes float32 inputs and outputs and `conv2d` float32
  /// inputs (QLinearArgs); kQuantizedLinearFloatKernel and
  /// kQuantizedConv2dFloatKernel are registered only where they do.
  bool float_io = false;
};

/// A QuantBackend of the compute functions quantize, dequantize,
/// choose_qparams, quantized_add, weight_sums, quantized_linear,
/// quantized_conv2d and quantized_mean, found where the macro is used:
/// both backends name them so.
#define PTERUN_QUANT_BACKEND()                                                           \
  ::pterun::ops::QuantBackend {                                                          \
    .quantize = &quantize, .dequantize = &dequantize, .choose_qparams = &choose_qparams, \
    .add = &quantized_add, .weight_sums = &weight_sums, .linear = &quantized_linear,     \
    .conv2d = &quantized_conv2d, .mean = &quantized_mean,                                \
  }

// ---- quantized_decomposed operators (quant.cpp) ---------------------------------

// quantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min,
//   int quant_max, ScalarType dtype, *, Tensor(a!) out)
void quantize_per_tensor_out(KernelContext& ctx, const Tensor& in, double scale, int64_t zero_point,
                             int64_t quant_min, int64_t quant_max, int64_t dtype, Tensor& out);
// quantize_per_tensor.Tensor_out(Tensor input, Tensor scale, Tensor zero_point,
//   int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
void quantize_per_tensor_tensor_out(KernelContext& ctx, const Tensor& in, const Tensor& scale,
                                    const Tensor& zero_point, int64_t quant_min, int64_t quant_max,
                                    int64_t dtype, Tensor& out);
// dequantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min,
//   int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None, Tensor(a!) out)
void dequantize_per_tensor_out(KernelContext& ctx, const Tensor& in, double scale,
                               int64_t zero_point, int64_t quant_min, int64_t quant_max,
                               int64_t dtype, std::optional<int64_t> out_dtype, Tensor& out);
// dequantize_per_tensor.Tensor_out(Tensor input, Tensor scale, Tensor zero_point,
//   int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None,
//   Tensor(a!) out)
void dequantize_per_tensor_tensor_out(KernelContext& ctx, const Tensor& in, const Tensor& scale,
                                      const Tensor& zero_point, int64_t quant_min,
                                      int64_t quant_max, int64_t dtype,
                                      std::optional<int64_t> out_dtype, Tensor& out);
// quantize_per_channel.out(Tensor input, Tensor scales, Tensor zero_points, int axis,
//   int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
void quantize_per_channel_out(KernelContext& ctx, const Tensor& in, const Tensor& scales,
                              const Tensor& zero_points, int64_t axis, int64_t quant_min,
                              int64_t quant_max, int64_t dtype, Tensor& out);
// dequantize_per_channel.out(Tensor input, Tensor scales, Tensor? zero_points, int axis,
//   int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None,
//   Tensor(a!) out)
void dequantize_per_channel_out(KernelContext& ctx, const Tensor& in, const Tensor& scales,
                                const Tensor* zero_points, int64_t axis, int64_t quant_min,
                                int64_t quant_max, int64_t dtype, std::optional<int64_t> out_dtype,
                                Tensor& out);
// quantize_per_token.out(Tensor input, Tensor scales, Tensor zero_points, int quant_min,
//   int quant_max, ScalarType dtype, *, Tensor(a!) out)
void quantize_per_token_out(KernelContext& ctx, const Tensor& in, const Tensor& scales,
                            const Tensor& zero_points, int64_t quant_min, int64_t quant_max,
                            int64_t dtype, Tensor& out);
// dequantize_per_token.out(Tensor input, Tensor scales, Tensor zero_points, int quant_min,
//   int quant_max, ScalarType dtype, ScalarType output_dtype, *, Tensor(a!) out)
void dequantize_per_token_out(KernelContext& ctx, const Tensor& in, const Tensor& scales,
                              const Tensor& zero_points, int64_t quant_min, int64_t quant_max,
                              int64_t dtype, int64_t output_dtype, Tensor& out);
// quantize_per_channel_group.out(Tensor input, Tensor scales, Tensor zero_points,
//   int quant_min, int quant_max, ScalarType dtype, int group_size, *, Tensor(a!) out)
void quantize_per_channel_group_out(KernelContext& ctx, const Tensor& in, const Tensor& scales,
                                    const Tensor& zero_points, int64_t quant_min, int64_t quant_max,
                                    int64_t dtype, int64_t group_size, Tensor& out);
// dequantize_per_channel_group.out(Tensor input, Tensor scales, Tensor? zero_points,
//   int quant_min, int quant_max, ScalarType dtype, int group_size,
//   ScalarType output_dtype, *, Tensor(a!) out)
void dequantize_per_channel_group_out(KernelContext& ctx, const Tensor& in, const Tensor& scales,
                                      const Tensor* zero_points, int64_t quant_min,
                                      int64_t quant_max, int64_t dtype, int64_t group_size,
                                      int64_t output_dtype, Tensor& out);
// choose_qparams.Tensor_out(Tensor input, int quant_min, int quant_max, float eps,
//   ScalarType dtype, *, Tensor(a!) scale_out, Tensor(b!) zero_point_out)
void choose_qparams_tensor_out(KernelContext& ctx, const Tensor& in, int64_t quant_min,
                               int64_t quant_max, double eps, int64_t dtype, Tensor& scale_out,
                               Tensor& zero_point_out);
// choose_qparams_per_token_asymmetric.out(Tensor input, ScalarType dtype, *,
//   Tensor(a!) scale_out, Tensor(b!) zero_point_out)
void choose_qparams_per_token_asymmetric_out(KernelContext& ctx, const Tensor& in, int64_t dtype,
                                             Tensor& scale_out, Tensor& zero_point_out);
// add.out(Tensor a, float a_scale, int a_zero_point, int a_quant_min, int a_quant_max,
//   Tensor b, float b_scale, int b_zero_point, int b_quant_min, int b_quant_max,
//   float out_scale, int out_zero_point, int out_quant_min, int out_quant_max, *,
//   Tensor(a!) out)
void quantized_add_out(KernelContext& ctx, const Tensor& a, double a_scale, int64_t a_zero_point,
                       int64_t a_quant_min, int64_t a_quant_max, const Tensor& b, double b_scale,
                       int64_t b_zero_point, int64_t b_quant_min, int64_t b_quant_max,
                       double out_scale, int64_t out_zero_point, int64_t out_quant_min,
                       int64_t out_quant_max, Tensor& out);

// ---- the loader's integer kernels (quant_fused.cpp; kernels/internal_ops.h) ------

// pterun::quantized_weight_sums.out(Tensor weight, *, Tensor(a!) out): out int32
// [weight.size(0)], the sum of each output channel's int8 weights.
void quantized_weight_sums_out(KernelContext& ctx, const Tensor& weight, Tensor& out);
// pterun::quantized_linear.out(Tensor input, float input_scale, int input_zero_point,
//   Tensor weight, Tensor weight_scales, Tensor weight_sums, Tensor? bias,
//   float out_scale, int out_zero_point, int out_min, int out_max, *, Tensor(a!) out)
void quantized_linear_out(KernelContext& ctx, const Tensor& in, double in_scale,
                          int64_t in_zero_point, const Tensor& weight, const Tensor& weight_scales,
                          const Tensor& weight_sums, const Tensor* bias, double out_scale,
                          int64_t out_zero_point, int64_t out_min, int64_t out_max, Tensor& out);
// pterun::quantized_linear_float.out: quantized_linear.out's arguments, with a
// float32 input (quantized to int8 first) and/or a float32 out (dequantized).
void quantized_linear_float_out(KernelContext& ctx, const Tensor& in, double in_scale,
                                int64_t in_zero_point, const Tensor& weight,
                                const Tensor& weight_scales, const Tensor& weight_sums,
                                const Tensor* bias, double out_scale, int64_t out_zero_point,
                                int64_t out_min, int64_t out_max, Tensor& out);
// quantized_conv2d.out's arguments with a float32 input, quantized to int8
// first as quantize_per_tensor does (where QuantBackend::float_io; the
// front-end of xnnpack::quantized_conv2d_float).
void quantized_conv2d_float_out(KernelContext& ctx, const Tensor& in, double in_scale,
                                int64_t in_zero_point, const Tensor& weight,
                                const Tensor& weight_scales, const Tensor& weight_sums,
                                const Tensor* bias, IntList stride, IntList padding,
                                IntList dilation, int64_t groups, double out_scale,
                                int64_t out_zero_point, int64_t out_min, int64_t out_max,
                                Tensor& out);
// pterun::quantized_conv2d.out(Tensor input, float input_scale, int input_zero_point,
//   Tensor weight, Tensor weight_scales, Tensor weight_sums, Tensor? bias, int[] stride,
//   int[] padding, int[] dilation, int groups, float out_scale, int out_zero_point,
//   int out_min, int out_max, *, Tensor(a!) out)
void quantized_conv2d_out(KernelContext& ctx, const Tensor& in, double in_scale,
                          int64_t in_zero_point, const Tensor& weight, const Tensor& weight_scales,
                          const Tensor& weight_sums, const Tensor* bias, IntList stride,
                          IntList padding, IntList dilation, int64_t groups, double out_scale,
                          int64_t out_zero_point, int64_t out_min, int64_t out_max, Tensor& out);
// pterun::quantized_mean.out(Tensor input, float input_scale, int input_zero_point,
//   int[] dims, float out_scale, int out_zero_point, int out_min, int out_max, *,
//   Tensor(a!) out): the mean over `dims` (kept as size 1), which must be one run
//   in memory.
void quantized_mean_out(KernelContext& ctx, const Tensor& in, double in_scale,
                        int64_t in_zero_point, IntList dims, double out_scale,
                        int64_t out_zero_point, int64_t out_min, int64_t out_max, Tensor& out);

}  // namespace pterun::ops
