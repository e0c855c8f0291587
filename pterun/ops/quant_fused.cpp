// Front-ends of the integer kernels the loader runs in place of
// dequantize -> op -> quantize chains (quant.h, executor/quant_fusion.h):
// shapes, dtypes, layouts and scalar parameters, checked for every backend.

#include <algorithm>
#include <array>
#include <optional>

#include "pterun/core/checked_math.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/checks.h"
#include "pterun/ops/quant.h"
#include "pterun/ops/quant_checks.h"

namespace pterun::ops {
namespace {

const QuantBackend& quant(const KernelContext& ctx) {
  return *backend(ctx).quant;
}

bool is_q8(DType d) {
  return d == DType::Int8 || d == DType::UInt8;
}

/// The largest K whose products (|x - zp| <= 255, |w| <= 128) keep every
/// int32 partial sum exact.
constexpr int64_t kMaxDepth = 65536;

/// Checks an activation's per-tensor parameters and returns them as float32;
/// `as` is the activation's integer dtype (t's own, or int8 for a float32
/// side of quantized_linear_float.out).
QTensorParams activation_params(const Tensor& t, double scale, int64_t zero_point, const char* what,
                                const char* op, std::optional<DType> as_dtype = std::nullopt) {
  const DType as = as_dtype.value_or(t.dtype());
  PTERUN_CHECK(is_q8(as), ErrorCode::InvalidArgument, op, ": ", what,
               " must be int8 or uint8, got ", describe(t));
  // The messages' names are built only for a failure (a call per layer
  // and run would otherwise allocate them).
  if (!valid_scale(scale)) [[unlikely]] {
    check_scale(scale, str_cat(what, " scale").c_str(), op);
  }
  const int64_t lo = dtype_lowest(as), hi = dtype_highest(as);
  if (zero_point < lo || zero_point > hi) [[unlikely]] {
    check_zero_point(zero_point, lo, hi, str_cat(what, " zero point").c_str(), op);
  }
  return {static_cast<float>(scale), static_cast<int32_t>(zero_point)};
}

/// The output clamp [out_min, out_max], inside out's dtype.
void check_out_clamp(const Tensor& out, int64_t out_min, int64_t out_max, const char* op) {
  check_quant_range(out_min, out_max, out.dtype(), op);
}

/// Weight scales (one per output channel, or one), weight sums and bias.
void check_weight_terms(const Tensor& weight_scales, const Tensor& weight_sums, const Tensor* bias,
                        int64_t n, const char* op) {
  PTERUN_CHECK(weight_scales.dtype() == DType::Float32 || weight_scales.dtype() == DType::Float64,
               ErrorCode::InvalidArgument, op, ": weight_scales must be float32 or float64, got ",
               describe(weight_scales));
  PTERUN_CHECK(weight_scales.numel() == n || weight_scales.numel() == 1, ErrorCode::InvalidArgument,
               op, ": weight_scales ", describe(weight_scales), " should hold 1 or ", n, " values");
  PTERUN_CHECK(weight_sums.dtype() == DType::Int32 && weight_sums.numel() == n,
               ErrorCode::InvalidArgument, op, ": weight_sums ", describe(weight_sums),
               " should be int32 of ", n, " values");
  if (bias != nullptr) {
    PTERUN_CHECK(bias->dtype() == DType::Float32 && bias->numel() == n, ErrorCode::InvalidArgument,
                 op, ": bias ", describe(*bias), " should be float32 of ", n, " values");
  }
}

Requantize requantize(QTensorParams in_q, const Tensor& weight_scales, const Tensor* bias,
                      const Tensor& out, double out_scale, int64_t out_zero_point, int64_t out_min,
                      int64_t out_max, const char* op, std::optional<DType> as = std::nullopt) {
  const QTensorParams out_q = activation_params(out, out_scale, out_zero_point, "out", op, as);
  check_quant_range(out_min, out_max, as.value_or(out.dtype()), op);
  return {in_q,
          weight_scales,
          bias,
          out_q,
          static_cast<int32_t>(out_min),
          static_cast<int32_t>(out_max)};
}

}  // namespace

void quantized_weight_sums_out(KernelContext& ctx, const Tensor& weight, Tensor& out) {
  const char* op = "pterun::quantized_weight_sums.out";
  PTERUN_CHECK(weight.dtype() == DType::Int8 && weight.dim() >= 1, ErrorCode::InvalidArgument, op,
               ": weight must be int8 of at least one dim, got ", describe(weight));
  PTERUN_CHECK(weight.is_contiguous_order() || weight.is_channels_last_order(),
               ErrorCode::NotSupported, op, ": weight ", describe(weight),
               " must be contiguous or channels-last");
  PTERUN_CHECK(out.dtype() == DType::Int32, ErrorCode::InvalidArgument, op,
               ": out must be int32, got ", describe(out));
  const int64_t n = weight.size(0);
  const std::array<int64_t, 1> shape = {n};
  kernels::resize_output(out, shape, op);
  if (weight.numel() == 0) return;
  quant(ctx).weight_sums(ctx, weight, n, weight.numel() / n, out);
}

namespace {

/// quantized_linear.out and, with `float_io`, quantized_linear_float.out:
/// a float32 input or out stands for int8 (quantized first, dequantized
/// after; at least one of them float32).
void linear_out(KernelContext& ctx, const Tensor& in, double in_scale, int64_t in_zero_point,
                const Tensor& weight, const Tensor& weight_scales, const Tensor& weight_sums,
                const Tensor* bias, double out_scale, int64_t out_zero_point, int64_t out_min,
                int64_t out_max, Tensor& out, bool float_io, const char* op) {
  const bool float_in = float_io && in.dtype() == DType::Float32;
  const bool float_out = float_io && out.dtype() == DType::Float32;
  PTERUN_CHECK(!float_io || float_in || float_out, ErrorCode::InvalidArgument, op,
               ": the input or out must be float32, got ", describe(in), " and ", describe(out));
  // A float32 side stands for int8: its parameters are checked as int8's.
  const QTensorParams in_q =
      activation_params(in, in_scale, in_zero_point, "input", op,
                        float_in ? std::optional(DType::Int8) : std::nullopt);
  PTERUN_CHECK(in.dim() >= 1 && in.is_contiguous_order(), ErrorCode::InvalidArgument, op,
               ": input must be contiguous with at least one dim, got ", describe(in));
  PTERUN_CHECK(weight.dtype() == DType::Int8 && weight.dim() == 2 && weight.is_contiguous_order(),
               ErrorCode::InvalidArgument, op, ": weight must be contiguous int8 [N, K], got ",
               describe(weight));
  const int64_t k = in.size(in.dim() - 1);
  const int64_t n = weight.size(0);
  PTERUN_CHECK(weight.size(1) == k, ErrorCode::InvalidArgument, op, ": weight ", describe(weight),
               " does not match the input's last dim ", k);
  PTERUN_CHECK(k >= 1 && k <= kMaxDepth, ErrorCode::NotSupported, op, ": ", k,
               " input features (1 to ", kMaxDepth, ", where the int32 sums are exact)");
  check_weight_terms(weight_scales, weight_sums, bias, n, op);
  PTERUN_CHECK((is_q8(out.dtype()) || float_out) && out.is_contiguous_order(),
               ErrorCode::InvalidArgument, op, ": out must be contiguous ",
               float_io ? "float32, int8 or uint8" : "int8 or uint8", ", got ", describe(out));
  const Requantize rq =
      requantize(in_q, weight_scales, bias, out, out_scale, out_zero_point, out_min, out_max, op,
                 float_out ? std::optional(DType::Int8) : std::nullopt);
  kernels::Shape shape;
  for (size_t d = 0; d + 1 < in.dim(); ++d) shape.push_back(in.size(d));
  shape.push_back(n);
  kernels::resize_output(out, shape.span(), op);
  if (out.numel() == 0) return;
  const int64_t m = in.numel() / k;
  quant(ctx).linear(ctx, {in, weight, weight_sums, rq, m, n, k, out});
}

}  // namespace

void quantized_linear_out(KernelContext& ctx, const Tensor& in, double in_scale,
                          int64_t in_zero_point, const Tensor& weight, const Tensor& weight_scales,
                          const Tensor& weight_sums, const Tensor* bias, double out_scale,
                          int64_t out_zero_point, int64_t out_min, int64_t out_max, Tensor& out) {
  linear_out(ctx, in, in_scale, in_zero_point, weight, weight_scales, weight_sums, bias, out_scale,
             out_zero_point, out_min, out_max, out, false, "pterun::quantized_linear.out");
}

void quantized_linear_float_out(KernelContext& ctx, const Tensor& in, double in_scale,
                                int64_t in_zero_point, const Tensor& weight,
                                const Tensor& weight_scales, const Tensor& weight_sums,
                                const Tensor* bias, double out_scale, int64_t out_zero_point,
                                int64_t out_min, int64_t out_max, Tensor& out) {
  linear_out(ctx, in, in_scale, in_zero_point, weight, weight_scales, weight_sums, bias, out_scale,
             out_zero_point, out_min, out_max, out, true, "pterun::quantized_linear_float.out");
}

namespace {

/// quantized_conv2d.out and, with `float_in`, quantized_conv2d_float.out:
/// a float32 input stands for int8 (quantized first).
void conv_out(KernelContext& ctx, const Tensor& in, double in_scale, int64_t in_zero_point,
              const Tensor& weight, const Tensor& weight_scales, const Tensor& weight_sums,
              const Tensor* bias, IntList stride, IntList padding, IntList dilation, int64_t groups,
              double out_scale, int64_t out_zero_point, int64_t out_min, int64_t out_max,
              Tensor& out, bool float_in, const char* op) {
  PTERUN_CHECK(!float_in || in.dtype() == DType::Float32, ErrorCode::InvalidArgument, op,
               ": input must be float32, got ", describe(in));
  const QTensorParams in_q =
      activation_params(in, in_scale, in_zero_point, "input", op,
                        float_in ? std::optional(DType::Int8) : std::nullopt);
  check_rank(in, 4, "input", op);
  check_rank(weight, 4, "weight", op);
  PTERUN_CHECK(in.is_contiguous_order() || in.is_channels_last_order(), ErrorCode::NotSupported, op,
               ": input ", describe(in), " must be contiguous or channels-last");
  PTERUN_CHECK(weight.dtype() == DType::Int8 &&
                   (weight.is_contiguous_order() || weight.is_channels_last_order()),
               ErrorCode::InvalidArgument, op,
               ": weight must be int8, contiguous or channels-last, got ", describe(weight));
  PTERUN_CHECK(stride.size() == 2 && padding.size() == 2 && dilation.size() == 2,
               ErrorCode::InvalidArgument, op,
               ": stride, padding and dilation must have 2 values each");
  for (size_t i = 0; i < 2; ++i) {
    PTERUN_CHECK(stride[i] >= 1 && dilation[i] >= 1 && padding[i] >= 0, ErrorCode::InvalidArgument,
                 op, ": stride and dilation must be positive and padding not negative");
  }
  const int64_t channels = in.size(1), out_channels = weight.size(0);
  PTERUN_CHECK(groups >= 1 && channels % groups == 0 && out_channels % groups == 0 &&
                   weight.size(1) * groups == channels,
               ErrorCode::InvalidArgument, op, ": weight ", describe(weight), " and ", groups,
               " groups do not match the input ", describe(in));
  int64_t k = 0;
  const bool k_fits = mul_i64(weight.size(1), weight.size(2), k) && mul_i64(k, weight.size(3), k);
  PTERUN_CHECK(k_fits && k >= 1 && k <= kMaxDepth, ErrorCode::NotSupported, op, ": a window of ", k,
               " values (at most ", kMaxDepth, ")");
  std::array<int64_t, 4> shape = {in.size(0), out_channels, 0, 0};
  for (size_t i = 0; i < 2; ++i) {
    int64_t span = 0, padded = 0;
    const bool fits = mul_i64(dilation[i], weight.size(2 + i) - 1, span) &&
                      add_i64(span, 1, span) && mul_i64(padding[i], 2, padded) &&
                      add_i64(padded, in.size(2 + i), padded);
    PTERUN_CHECK(fits && padded >= span, ErrorCode::InvalidArgument, op, ": the kernel ",
                 describe(weight), " is larger than the padded input ", describe(in));
    shape[2 + i] = (padded - span) / stride[i] + 1;
  }
  check_weight_terms(weight_scales, weight_sums, bias, out_channels, op);
  PTERUN_CHECK(is_q8(out.dtype()), ErrorCode::InvalidArgument, op,
               ": out must be int8 or uint8, got ", describe(out));
  const Requantize rq =
      requantize(in_q, weight_scales, bias, out, out_scale, out_zero_point, out_min, out_max, op);
  kernels::resize_output(out, shape, op);
  if (out.numel() == 0) return;
  QConv2dArgs args{in,
                   weight,
                   weight_sums,
                   rq,
                   {stride[0], stride[1]},
                   {padding[0], padding[1]},
                   {dilation[0], dilation[1]},
                   groups,
                   out};
  quant(ctx).conv2d(ctx, args);
}

}  // namespace

void quantized_conv2d_out(KernelContext& ctx, const Tensor& in, double in_scale,
                          int64_t in_zero_point, const Tensor& weight, const Tensor& weight_scales,
                          const Tensor& weight_sums, const Tensor* bias, IntList stride,
                          IntList padding, IntList dilation, int64_t groups, double out_scale,
                          int64_t out_zero_point, int64_t out_min, int64_t out_max, Tensor& out) {
  conv_out(ctx, in, in_scale, in_zero_point, weight, weight_scales, weight_sums, bias, stride,
           padding, dilation, groups, out_scale, out_zero_point, out_min, out_max, out, false,
           "pterun::quantized_conv2d.out");
}

void quantized_conv2d_float_out(KernelContext& ctx, const Tensor& in, double in_scale,
                                int64_t in_zero_point, const Tensor& weight,
                                const Tensor& weight_scales, const Tensor& weight_sums,
                                const Tensor* bias, IntList stride, IntList padding,
                                IntList dilation, int64_t groups, double out_scale,
                                int64_t out_zero_point, int64_t out_min, int64_t out_max,
                                Tensor& out) {
  conv_out(ctx, in, in_scale, in_zero_point, weight, weight_scales, weight_sums, bias, stride,
           padding, dilation, groups, out_scale, out_zero_point, out_min, out_max, out, true,
           "pterun::quantized_conv2d_float.out");
}

void quantized_mean_out(KernelContext& ctx, const Tensor& in, double in_scale,
                        int64_t in_zero_point, IntList dims, double out_scale,
                        int64_t out_zero_point, int64_t out_min, int64_t out_max, Tensor& out) {
  const char* op = "pterun::quantized_mean.out";
  const QTensorParams in_q = activation_params(in, in_scale, in_zero_point, "input", op);
  const QTensorParams out_q = activation_params(out, out_scale, out_zero_point, "out", op);
  check_out_clamp(out, out_min, out_max, op);
  const auto rank = static_cast<int64_t>(in.dim());
  std::array<bool, kMaxRank> reduced{};
  PTERUN_CHECK(!dims.empty(), ErrorCode::InvalidArgument, op, ": no dims to reduce");
  for (int64_t d : dims) {
    const auto w = static_cast<size_t>(kernels::wrap_dim(d, rank, op));
    PTERUN_CHECK(!reduced[w], ErrorCode::InvalidArgument, op, ": dim ", d, " repeats");
    reduced[w] = true;
  }
  // The reduced dims must be one run of the memory order.
  int64_t outer = 1, reduce = 1, inner = 1;
  int state = 0;  // 0: before the run, 1: in it, 2: after it
  for (size_t i = 0; i < in.dim(); ++i) {
    const uint8_t d = in.dim_order()[i];
    if (reduced[d]) {
      PTERUN_CHECK(state < 2, ErrorCode::NotSupported, op, ": the reduced dims of ", describe(in),
                   " are not adjacent in memory");
      state = 1;
      reduce *= in.size(d);
    } else {
      if (state == 1) state = 2;
      (state == 0 ? outer : inner) *= in.size(d);
    }
  }
  kernels::Shape shape;
  for (size_t d = 0; d < in.dim(); ++d) shape.push_back(reduced[d] ? 1 : in.size(d));
  kernels::resize_output(out, shape.span(), op);
  PTERUN_CHECK(std::equal(out.dim_order().begin(), out.dim_order().end(), in.dim_order().begin(),
                          in.dim_order().end()),
               ErrorCode::InvalidArgument, op, ": out ", describe(out),
               " has another dim order than the input");
  PTERUN_CHECK(reduce > 0 || out.numel() == 0, ErrorCode::InvalidArgument, op,
               ": the mean of no values");
  if (out.numel() == 0) return;
  quant(ctx).mean(ctx, {in, in_q, outer, reduce, inner, out, out_q, static_cast<int32_t>(out_min),
                        static_cast<int32_t>(out_max)});
}

}  // namespace pterun::ops
