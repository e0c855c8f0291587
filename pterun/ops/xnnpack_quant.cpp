// The quantized xnnpack:: operators (xnnpack.h): checks and shapes, then the
// quant family's slot. The weights' sums are computed at load by the
// lowering (delegates/xnnpack_quant.cpp) and checked here for shape.

#include <array>
#include <cmath>
#include <limits>

#include "pterun/core/error.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/quant.h"
#include "pterun/ops/xnnpack.h"
#include "pterun/ops/xnnpack_layout.h"

namespace pterun::ops {
namespace {

// The int32 sums stay exact up to this depth: |q - zp| <= 255 and
// |w - w_zp| <= 128, so 255 * 128 * 65536 < 2^31.
constexpr int64_t kMaxDepth = 65536;

void check_dense(const Tensor& t, DType dtype, const char* what, const char* op) {
  PTERUN_CHECK(t.dtype() == dtype && t.is_contiguous_order(), ErrorCode::InvalidArgument, op, ": ",
               what, " must be contiguous ", dtype_name(dtype), ", got ", describe(t));
}

float bound(double v) {
  if (std::isnan(v)) return std::numeric_limits<float>::quiet_NaN();
  return static_cast<float>(v);
}

}  // namespace

void xnn_fully_connected_dq(KernelContext& ctx, const Tensor& in, const Tensor& weight,
                            const Tensor& weight_scales, const Tensor& weight_sums,
                            const Tensor* bias, int64_t weight_bits, int64_t num_nonbatch_dims,
                            double out_min, double out_max, Tensor& out) {
  const char* op = "xnnpack::fully_connected_dq";
  PTERUN_CHECK(in.dtype() == DType::Float32 && out.dtype() == DType::Float32,
               ErrorCode::InvalidArgument, op, ": input and out must be float32, got ",
               describe(in), " and ", describe(out));
  PTERUN_CHECK(weight_bits == 8 || weight_bits == 4, ErrorCode::InvalidArgument, op,
               ": weight_bits must be 8 or 4, got ", weight_bits);
  PTERUN_CHECK(!(out_min > out_max), ErrorCode::InvalidArgument, op, ": output range [", out_min,
               ", ", out_max, "] is empty");
  const xnn::In i_vi(in);
  const Tensor& vi = *i_vi;
  const int64_t rank = static_cast<int64_t>(vi.dim());
  PTERUN_CHECK(num_nonbatch_dims >= 1 && num_nonbatch_dims <= rank, ErrorCode::InvalidArgument, op,
               ": num_nonbatch_dims ", num_nonbatch_dims, " is not in 1..", rank, " for input ",
               describe(vi));
  const int64_t k = vi.size(rank - 1);
  check_dense(weight, weight_bits == 8 ? DType::Int8 : DType::UInt8, "weight", op);
  PTERUN_CHECK(weight.dim() == 2, ErrorCode::InvalidArgument, op, ": weight must be 2-D, got ",
               describe(weight));
  const int64_t n = weight.size(0);
  const int64_t row_bytes = weight_bits == 8 ? k : (k + 1) / 2;
  PTERUN_CHECK(weight.size(1) == row_bytes, ErrorCode::InvalidArgument, op, ": weight ",
               describe(weight), " does not hold ", weight_bits, "-bit rows of the input's ", k,
               " features");
  PTERUN_CHECK(k >= 1 && k <= kMaxDepth, ErrorCode::NotSupported, op, ": ", k,
               " input features (1 to ", kMaxDepth, ", where the int32 sums are exact)");
  // Blockwise 4-bit scales may stay bfloat16, as XNNPACK stores them.
  if (weight_bits == 4) {
    PTERUN_CHECK(
        (weight_scales.dtype() == DType::Float32 || weight_scales.dtype() == DType::BFloat16) &&
            weight_scales.is_contiguous_order(),
        ErrorCode::InvalidArgument, op,
        ": weight_scales of 4-bit weights must be contiguous float32 or bfloat16, got ",
        describe(weight_scales));
  } else {
    check_dense(weight_scales, DType::Float32, "weight_scales", op);
  }
  check_dense(weight_sums, weight_bits == 8 ? DType::Int32 : DType::Float32, "weight_sums", op);
  // No divisions on this path: a tiny layer's call is mostly its checks.
  const int64_t blocks = n > 0 && weight_scales.dim() == 2 ? weight_scales.size(1) : 1;
  PTERUN_CHECK(weight_scales.dim() == 2 && weight_scales.size(0) == n && blocks >= 1 &&
                   (blocks == 1 || k % blocks == 0),
               ErrorCode::InvalidArgument, op, ": weight_scales ", describe(weight_scales),
               " must be [", n, ", B] with B dividing ", k);
  PTERUN_CHECK(weight_sums.numel() == n, ErrorCode::InvalidArgument, op, ": weight_sums ",
               describe(weight_sums), " must have ", n, " elements");
  PTERUN_CHECK(weight_bits == 4 || blocks == 1, ErrorCode::InvalidArgument, op,
               ": 8-bit weights take one scale per output channel, got ", describe(weight_scales));
  if (bias != nullptr) {
    check_dense(*bias, DType::Float32, "bias", op);
    PTERUN_CHECK(bias->numel() == n, ErrorCode::InvalidArgument, op, ": bias ", describe(*bias),
                 " must have ", n, " elements");
  }
  // Rows: the input's dims before its last; a slice (one set of
  // quantization parameters) spans the rows of its num_nonbatch_dims - 1
  // dims before the last.
  int64_t m = 1, slice_rows = 1;
  kernels::Shape shape;
  for (int64_t d = 0; d + 1 < rank; ++d) {
    shape.push_back(vi.size(d));
    m *= vi.size(d);
    if (d >= rank - num_nonbatch_dims) slice_rows *= vi.size(d);
  }
  shape.push_back(n);
  const xnn::Out o_vo = xnn::resize_memory(out, shape.span(), op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0) return;
  backend(ctx).quant->dynamic_linear(ctx, {.in = vi,
                                           .weight = weight,
                                           .weight_scales = weight_scales,
                                           .weight_sums = weight_sums,
                                           .bias = bias,
                                           .bits = static_cast<int>(weight_bits),
                                           .m = m,
                                           .n = n,
                                           .k = k,
                                           .blocks = blocks,
                                           .slice_rows = slice_rows,
                                           .out_min = bound(out_min),
                                           .out_max = bound(out_max),
                                           .out = vo});
}

namespace {

/// xnnpack::quantized_conv2d (NHWC input) and, with `float_nchw`,
/// xnnpack::quantized_conv2d_float (a float32 NCHW input).
void xnn_conv(KernelContext& ctx, const Tensor& in, double in_scale, int64_t in_zero_point,
              const Tensor& weight, const Tensor& weight_scales, const Tensor& weight_sums,
              const Tensor* bias, IntList padding, IntList stride, IntList dilation, int64_t groups,
              double out_scale, int64_t out_zero_point, int64_t out_min, int64_t out_max,
              Tensor& out, bool float_nchw, const char* op) {
  xnn::check_list(padding, 2, 0, "padding", op);
  xnn::check_list(stride, 2, 1, "stride", op);
  xnn::check_list(dilation, 2, 1, "dilation", op);
  const xnn::In i_vi(in);
  const Tensor& vi = *i_vi;
  PTERUN_CHECK(vi.dim() == 4 && weight.dim() == 4, ErrorCode::InvalidArgument, op,
               ": input and weight must be 4-D (", float_nchw ? "NCHW" : "NHWC",
               " and [OC, IC / groups, KH, KW]), got ", describe(vi), " and ", describe(weight));
  // The image's height and width: dims 1 and 2 of NHWC, 2 and 3 of NCHW.
  const int64_t h = float_nchw ? vi.size(2) : vi.size(1), w = float_nchw ? vi.size(3) : vi.size(2);
  const int64_t oc = weight.size(0), kh = weight.size(2), kw = weight.size(3);
  const std::array<int64_t, 4> dims{
      vi.size(0), xnn::conv_size(op, h, kh, padding[0], stride[0], dilation[0]),
      xnn::conv_size(op, w, kw, padding[1], stride[1], dilation[1]), oc};
  const xnn::Out o_vo = xnn::resize_memory(out, dims, op);
  Tensor out_nchw = xnn::nchw(*o_vo);
  // The quantized convolution checks the rest (dtypes, groups, parameters).
  if (float_nchw) {
    quantized_conv2d_float_out(ctx, vi, in_scale, in_zero_point, weight, weight_scales, weight_sums,
                               bias, stride, padding, dilation, groups, out_scale, out_zero_point,
                               out_min, out_max, out_nchw);
  } else {
    quantized_conv2d_out(ctx, xnn::nchw(vi), in_scale, in_zero_point, weight, weight_scales,
                         weight_sums, bias, stride, padding, dilation, groups, out_scale,
                         out_zero_point, out_min, out_max, out_nchw);
  }
}

}  // namespace

void xnn_quantized_conv2d(KernelContext& ctx, const Tensor& in, double in_scale,
                          int64_t in_zero_point, const Tensor& weight, const Tensor& weight_scales,
                          const Tensor& weight_sums, const Tensor* bias, IntList padding,
                          IntList stride, IntList dilation, int64_t groups, double out_scale,
                          int64_t out_zero_point, int64_t out_min, int64_t out_max, Tensor& out) {
  xnn_conv(ctx, in, in_scale, in_zero_point, weight, weight_scales, weight_sums, bias, padding,
           stride, dilation, groups, out_scale, out_zero_point, out_min, out_max, out, false,
           "xnnpack::quantized_conv2d");
}

void xnn_quantized_conv2d_float(KernelContext& ctx, const Tensor& in, double in_scale,
                                int64_t in_zero_point, const Tensor& weight,
                                const Tensor& weight_scales, const Tensor& weight_sums,
                                const Tensor* bias, IntList padding, IntList stride,
                                IntList dilation, int64_t groups, double out_scale,
                                int64_t out_zero_point, int64_t out_min, int64_t out_max,
                                Tensor& out) {
  xnn_conv(ctx, in, in_scale, in_zero_point, weight, weight_scales, weight_sums, bias, padding,
           stride, dilation, groups, out_scale, out_zero_point, out_min, out_max, out, true,
           "xnnpack::quantized_conv2d_float");
}

}  // namespace pterun::ops
