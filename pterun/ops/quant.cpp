// Front-ends of the quantized_decomposed operators (quant.h): dtypes,
// shapes, quant ranges and the scalar parameters, checked once for every
// backend; the per-channel, per-token and per-group variants become one
// QParams layout.

#include "pterun/ops/quant.h"

#include <algorithm>
#include <array>

#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/checks.h"
#include "pterun/ops/quant_checks.h"

namespace pterun::ops {
namespace {

const QuantBackend& quant(const KernelContext& ctx) {
  return *backend(ctx).quant;
}

bool same_order(const Tensor& a, const Tensor& b) {
  return std::equal(a.dim_order().begin(), a.dim_order().end(), b.dim_order().begin(),
                    b.dim_order().end());
}

/// out resized to in's sizes, with in's dim order (the kernels walk both in
/// memory order).
void resize_like(Tensor& out, const Tensor& in, const char* op) {
  kernels::resize_output(out, in.sizes(), op);
  PTERUN_CHECK(same_order(out, in), ErrorCode::InvalidArgument, op, ": out ", describe(out),
               " has another dim order than the input ", describe(in));
}

void check_float_input(const Tensor& in, const char* op) {
  PTERUN_CHECK(kernels::is_floating(in.dtype()), ErrorCode::InvalidArgument, op,
               ": input must be floating, got ", describe(in));
}

/// The quantized dtype `dtype` names, which `t` (the input or out) must have.
DType check_quant_tensor(const Tensor& t, int64_t dtype, const char* what, const char* op) {
  const DType d = quant_dtype(dtype, "dtype", op);
  PTERUN_CHECK(t.dtype() == d, ErrorCode::InvalidArgument, op, ": ", what, " ", describe(t),
               " does not match dtype ", dtype_name(d));
  return d;
}

void check_float_out(const Tensor& out, std::optional<int64_t> out_dtype, const char* op) {
  PTERUN_CHECK(kernels::is_floating(out.dtype()), ErrorCode::InvalidArgument, op,
               ": out must be floating, got ", describe(out));
  if (out_dtype) {
    const DType d = float_dtype(*out_dtype, "out_dtype", op);
    PTERUN_CHECK(out.dtype() == d, ErrorCode::InvalidArgument, op, ": out ", describe(out),
                 " does not match out_dtype ", dtype_name(d));
  }
}

/// A parameter tensor of `count` values of one of `dtypes`.
void check_param(const Tensor& t, int64_t count, std::initializer_list<DType> dtypes,
                 const char* what, const char* op) {
  PTERUN_CHECK(std::find(dtypes.begin(), dtypes.end(), t.dtype()) != dtypes.end(),
               ErrorCode::InvalidArgument, op, ": ", what, " ", describe(t),
               " has an unsupported dtype");
  PTERUN_CHECK(t.numel() == count, ErrorCode::InvalidArgument, op, ": ", what, " ", describe(t),
               " should hold ", count, " values");
}

constexpr std::initializer_list<DType> kDouble = {DType::Float64};
constexpr std::initializer_list<DType> kDoubleOrFloat = {DType::Float64, DType::Float32};
constexpr std::initializer_list<DType> kAnyFloat = {DType::Float64, DType::Float32, DType::Float16,
                                                    DType::BFloat16};
constexpr std::initializer_list<DType> kLong = {DType::Int64};
constexpr std::initializer_list<DType> kLongOrInt = {DType::Int64, DType::Int32};

/// The parameter layout of `channels` groups of `inner` consecutive elements.
QParams tensor_params(const Tensor& scales, const Tensor* zero_points, int64_t channels,
                      int64_t inner) {
  QParams q;
  q.scales = &scales;
  q.zero_points = zero_points;
  q.channels = channels;
  q.inner = std::max<int64_t>(inner, 1);
  return q;
}

void run_quantize(KernelContext& ctx, const Tensor& in, Tensor& out, const QParams& q,
                  int64_t quant_min, int64_t quant_max, QRounding rounding) {
  if (in.numel() == 0) return;
  quant(ctx).quantize(ctx, {in, out, q, quant_min, quant_max, rounding});
}

void run_dequantize(KernelContext& ctx, const Tensor& in, Tensor& out, const QParams& q,
                    bool wide = false, DType round_to = DType::Float32) {
  if (in.numel() == 0) return;
  quant(ctx).dequantize(ctx, {in, out, q, wide, round_to});
}

/// Tokens of a per-token op: every dim but the last, in a contiguous tensor.
int64_t token_count(const Tensor& in, const char* op) {
  PTERUN_CHECK(in.dim() >= 1, ErrorCode::InvalidArgument, op,
               ": input must have at least one dim, got ", describe(in));
  PTERUN_CHECK(in.is_contiguous_order(), ErrorCode::NotSupported, op,
               ": input must be contiguous, got ", describe(in));
  const int64_t last = in.size(in.dim() - 1);
  return last == 0 ? 0 : in.numel() / last;
}

/// The effective group size of a per-channel-group op on a contiguous 2-D
/// input (torch widens a group larger than a row to the row when each row
/// has one scale).
int64_t group_layout(const Tensor& in, const Tensor& scales, int64_t group_size, const char* op) {
  check_rank(in, 2, "input", op);
  PTERUN_CHECK(in.is_contiguous_order(), ErrorCode::NotSupported, op,
               ": input must be contiguous, got ", describe(in));
  PTERUN_CHECK(group_size > 1, ErrorCode::InvalidArgument, op, ": group_size ", group_size,
               " must be greater than 1");
  const int64_t row = in.size(1);
  if (group_size > row && scales.dim() >= 1 && scales.size(scales.dim() - 1) == 1) {
    group_size = row;
  }
  PTERUN_CHECK(group_size > 0 && row % group_size == 0, ErrorCode::InvalidArgument, op,
               ": rows of ", row, " values do not split into groups of ", group_size);
  return group_size;
}

}  // namespace

void quantize_per_tensor_out(KernelContext& ctx, const Tensor& in, double scale, int64_t zero_point,
                             int64_t quant_min, int64_t quant_max, int64_t dtype, Tensor& out) {
  const char* op = "quantized_decomposed::quantize_per_tensor.out";
  check_float_input(in, op);
  const DType d = check_quant_tensor(out, dtype, "out", op);
  check_quant_range(quant_min, quant_max, d, op);
  check_scale(scale, "scale", op);
  check_zero_point(zero_point, quant_min, quant_max, "zero_point", op);
  resize_like(out, in, op);
  QParams q;
  q.scale = scale;
  q.zero_point = zero_point;
  q.inner = std::max<int64_t>(in.numel(), 1);  // one block: the whole tensor
  run_quantize(ctx, in, out, q, quant_min, quant_max, QRounding::ExecuTorch);
}

void quantize_per_tensor_tensor_out(KernelContext& ctx, const Tensor& in, const Tensor& scale,
                                    const Tensor& zero_point, int64_t quant_min, int64_t quant_max,
                                    int64_t dtype, Tensor& out) {
  const char* op = "quantized_decomposed::quantize_per_tensor.Tensor_out";
  check_float_input(in, op);
  const DType d = check_quant_tensor(out, dtype, "out", op);
  check_quant_range(quant_min, quant_max, d, op);
  check_param(scale, 1, kDouble, "scale", op);
  check_param(zero_point, 1, kLong, "zero_point", op);
  resize_like(out, in, op);
  run_quantize(ctx, in, out, tensor_params(scale, &zero_point, 1, in.numel()), quant_min, quant_max,
               QRounding::ExecuTorch);
}

void dequantize_per_tensor_out(KernelContext& ctx, const Tensor& in, double scale,
                               int64_t zero_point, int64_t quant_min, int64_t quant_max,
                               int64_t dtype, std::optional<int64_t> out_dtype, Tensor& out) {
  const char* op = "quantized_decomposed::dequantize_per_tensor.out";
  const DType d = check_quant_tensor(in, dtype, "input", op);
  check_quant_range(quant_min, quant_max, d, op);
  check_scale(scale, "scale", op);
  check_zero_point(zero_point, quant_min, quant_max, "zero_point", op);
  check_float_out(out, out_dtype, op);
  resize_like(out, in, op);
  QParams q;
  q.scale = scale;
  q.zero_point = zero_point;
  q.inner = std::max<int64_t>(in.numel(), 1);  // one block: the whole tensor
  run_dequantize(ctx, in, out, q);
}

void dequantize_per_tensor_tensor_out(KernelContext& ctx, const Tensor& in, const Tensor& scale,
                                      const Tensor& zero_point, int64_t quant_min,
                                      int64_t quant_max, int64_t dtype,
                                      std::optional<int64_t> out_dtype, Tensor& out) {
  const char* op = "quantized_decomposed::dequantize_per_tensor.Tensor_out";
  const DType d = check_quant_tensor(in, dtype, "input", op);
  check_quant_range(quant_min, quant_max, d, op);
  check_param(scale, 1, kDouble, "scale", op);
  check_param(zero_point, 1, kLong, "zero_point", op);
  check_float_out(out, out_dtype, op);
  resize_like(out, in, op);
  run_dequantize(ctx, in, out, tensor_params(scale, &zero_point, 1, in.numel()));
}

void quantize_per_channel_out(KernelContext& ctx, const Tensor& in, const Tensor& scales,
                              const Tensor& zero_points, int64_t axis, int64_t quant_min,
                              int64_t quant_max, int64_t dtype, Tensor& out) {
  const char* op = "quantized_decomposed::quantize_per_channel.out";
  check_float_input(in, op);
  PTERUN_CHECK(in.dim() >= 1, ErrorCode::InvalidArgument, op,
               ": input must have at least one dim, got ", describe(in));
  const auto ax = static_cast<size_t>(kernels::wrap_dim(axis, static_cast<int64_t>(in.dim()), op));
  const DType d = check_quant_tensor(out, dtype, "out", op);
  check_quant_range(quant_min, quant_max, d, op);
  check_param(scales, in.size(ax), kDouble, "scales", op);
  check_param(zero_points, in.size(ax), kLong, "zero_points", op);
  resize_like(out, in, op);
  run_quantize(ctx, in, out, tensor_params(scales, &zero_points, in.size(ax), in.stride(ax)),
               quant_min, quant_max, QRounding::ExecuTorch);
}

void dequantize_per_channel_out(KernelContext& ctx, const Tensor& in, const Tensor& scales,
                                const Tensor* zero_points, int64_t axis, int64_t quant_min,
                                int64_t quant_max, int64_t dtype, std::optional<int64_t> out_dtype,
                                Tensor& out) {
  const char* op = "quantized_decomposed::dequantize_per_channel.out";
  PTERUN_CHECK(in.dim() >= 1, ErrorCode::InvalidArgument, op,
               ": input must have at least one dim, got ", describe(in));
  const auto ax = static_cast<size_t>(kernels::wrap_dim(axis, static_cast<int64_t>(in.dim()), op));
  const DType d = check_quant_tensor(in, dtype, "input", op);
  check_quant_range(quant_min, quant_max, d, op);
  check_param(scales, in.size(ax), kDoubleOrFloat, "scales", op);
  if (zero_points != nullptr) check_param(*zero_points, in.size(ax), kLongOrInt, "zero_points", op);
  check_float_out(out, out_dtype, op);
  resize_like(out, in, op);
  run_dequantize(ctx, in, out, tensor_params(scales, zero_points, in.size(ax), in.stride(ax)));
}

void quantize_per_token_out(KernelContext& ctx, const Tensor& in, const Tensor& scales,
                            const Tensor& zero_points, int64_t quant_min, int64_t quant_max,
                            int64_t dtype, Tensor& out) {
  const char* op = "quantized_decomposed::quantize_per_token.out";
  check_float_input(in, op);
  const int64_t tokens = token_count(in, op);
  const DType d = check_quant_tensor(out, dtype, "out", op);
  check_quant_range(quant_min, quant_max, d, op);
  check_param(scales, tokens, kDouble, "scales", op);
  check_param(zero_points, tokens, kLong, "zero_points", op);
  resize_like(out, in, op);
  run_quantize(ctx, in, out, tensor_params(scales, &zero_points, tokens, in.size(in.dim() - 1)),
               quant_min, quant_max, QRounding::ExecuTorch);
}

void dequantize_per_token_out(KernelContext& ctx, const Tensor& in, const Tensor& scales,
                              const Tensor& zero_points, int64_t quant_min, int64_t quant_max,
                              int64_t dtype, int64_t output_dtype, Tensor& out) {
  const char* op = "quantized_decomposed::dequantize_per_token.out";
  const int64_t tokens = token_count(in, op);
  const DType d = check_quant_tensor(in, dtype, "input", op);
  check_quant_range(quant_min, quant_max, d, op);
  check_param(scales, tokens, kDoubleOrFloat, "scales", op);
  check_param(zero_points, tokens, kLongOrInt, "zero_points", op);
  check_float_out(out, output_dtype, op);
  resize_like(out, in, op);
  run_dequantize(ctx, in, out, tensor_params(scales, &zero_points, tokens, in.size(in.dim() - 1)));
}

void quantize_per_channel_group_out(KernelContext& ctx, const Tensor& in, const Tensor& scales,
                                    const Tensor& zero_points, int64_t quant_min, int64_t quant_max,
                                    int64_t dtype, int64_t group_size, Tensor& out) {
  const char* op = "quantized_decomposed::quantize_per_channel_group.out";
  check_float_input(in, op);
  const int64_t group = group_layout(in, scales, group_size, op);
  const DType d = check_quant_tensor(out, dtype, "out", op);
  check_quant_range(quant_min, quant_max, d, op);
  const int64_t groups = in.numel() / group;
  check_param(scales, groups, kAnyFloat, "scales", op);
  check_param(zero_points, groups, kLongOrInt, "zero_points", op);
  resize_like(out, in, op);
  run_quantize(ctx, in, out, tensor_params(scales, &zero_points, groups, group), quant_min,
               quant_max, QRounding::ZeroPointFirst);
}

void dequantize_per_channel_group_out(KernelContext& ctx, const Tensor& in, const Tensor& scales,
                                      const Tensor* zero_points, int64_t quant_min,
                                      int64_t quant_max, int64_t dtype, int64_t group_size,
                                      int64_t output_dtype, Tensor& out) {
  const char* op = "quantized_decomposed::dequantize_per_channel_group.out";
  const int64_t group = group_layout(in, scales, group_size, op);
  const DType d = check_quant_tensor(in, dtype, "input", op);
  check_quant_range(quant_min, quant_max, d, op);
  const int64_t groups = in.numel() / group;
  check_param(scales, groups, kAnyFloat, "scales", op);
  if (zero_points != nullptr) check_param(*zero_points, groups, kLongOrInt, "zero_points", op);
  check_float_out(out, output_dtype, op);
  resize_like(out, in, op);
  const DType s = scales.dtype();
  const bool narrow = s == DType::Float16 || s == DType::BFloat16;
  run_dequantize(ctx, in, out, tensor_params(scales, zero_points, groups, group),
                 s == DType::Float64, narrow ? s : DType::Float32);
}

namespace {

void choose_qparams(KernelContext& ctx, const Tensor& in, int64_t rows, int64_t quant_min,
                    int64_t quant_max, Tensor& scale_out, Tensor& zero_point_out, const char* op) {
  PTERUN_CHECK(in.dtype() == DType::Float32, ErrorCode::InvalidArgument, op,
               ": input must be float32, got ", describe(in));
  PTERUN_CHECK(quant_min < quant_max, ErrorCode::InvalidArgument, op, ": quant_min ", quant_min,
               " must be less than quant_max ", quant_max);
  PTERUN_CHECK(scale_out.dtype() == DType::Float64, ErrorCode::InvalidArgument, op,
               ": scale_out must be float64, got ", describe(scale_out));
  PTERUN_CHECK(zero_point_out.dtype() == DType::Int64, ErrorCode::InvalidArgument, op,
               ": zero_point_out must be int64, got ", describe(zero_point_out));
  if (rows == 0) return;
  const int64_t row_size = in.numel() / rows;
  quant(ctx).choose_qparams(ctx,
                            {in, rows, row_size, quant_min, quant_max, scale_out, zero_point_out});
}

}  // namespace

void choose_qparams_tensor_out(KernelContext& ctx, const Tensor& in, int64_t quant_min,
                               int64_t quant_max, double /*eps: ExecuTorch ignores it*/,
                               int64_t dtype, Tensor& scale_out, Tensor& zero_point_out) {
  const char* op = "quantized_decomposed::choose_qparams.Tensor_out";
  const DType d = quant_dtype(dtype, "dtype", op);
  check_quant_range(quant_min, quant_max, d, op);
  const std::array<int64_t, 1> one = {1};
  PTERUN_CHECK(scale_out.numel() == 1 || scale_out.dim() == 1, ErrorCode::InvalidArgument, op,
               ": scale_out ", describe(scale_out), " should hold one value");
  PTERUN_CHECK(zero_point_out.numel() == 1 || zero_point_out.dim() == 1, ErrorCode::InvalidArgument,
               op, ": zero_point_out ", describe(zero_point_out), " should hold one value");
  if (scale_out.dim() == 1) kernels::resize_output(scale_out, one, op);
  if (zero_point_out.dim() == 1) kernels::resize_output(zero_point_out, one, op);
  // An empty input has no range: choose from [0, 0], as a row of zeros would.
  choose_qparams(ctx, in, 1, quant_min, quant_max, scale_out, zero_point_out, op);
}

void choose_qparams_per_token_asymmetric_out(KernelContext& ctx, const Tensor& in, int64_t dtype,
                                             Tensor& scale_out, Tensor& zero_point_out) {
  const char* op = "quantized_decomposed::choose_qparams_per_token_asymmetric.out";
  quant_dtype(dtype, "dtype", op);
  const int64_t tokens = token_count(in, op);
  kernels::Shape shape;
  for (size_t i = 0; i + 1 < in.dim(); ++i) shape.push_back(in.size(i));
  shape.push_back(1);
  kernels::resize_output(scale_out, shape.span(), op);
  kernels::resize_output(zero_point_out, shape.span(), op);
  // ExecuTorch fixes the range to int8's whatever `dtype` says.
  choose_qparams(ctx, in, tokens, -128, 127, scale_out, zero_point_out, op);
}

void quantized_add_out(KernelContext& ctx, const Tensor& a, double a_scale, int64_t a_zero_point,
                       int64_t a_quant_min, int64_t a_quant_max, const Tensor& b, double b_scale,
                       int64_t b_zero_point, int64_t b_quant_min, int64_t b_quant_max,
                       double out_scale, int64_t out_zero_point, int64_t out_quant_min,
                       int64_t out_quant_max, Tensor& out) {
  const char* op = "quantized_decomposed::add.out";
  const DType t = a.dtype();
  PTERUN_CHECK(t == DType::UInt8 || t == DType::Int8 || t == DType::Int16 || t == DType::Int32,
               ErrorCode::InvalidArgument, op, ": a must be uint8, int8, int16 or int32, got ",
               describe(a));
  check_same_dtype(b, a, "b", op);
  check_same_dtype(out, a, "out", op);
  PTERUN_CHECK(std::equal(a.sizes().begin(), a.sizes().end(), b.sizes().begin(), b.sizes().end()) &&
                   same_order(a, b),
               ErrorCode::InvalidArgument, op, ": a ", describe(a), " and b ", describe(b),
               " differ in shape or dim order");
  struct Operand {
    const char* name;
    double scale;
    int64_t zero_point, quant_min, quant_max;
  };
  for (const Operand& o :
       {Operand{"a", a_scale, a_zero_point, a_quant_min, a_quant_max},
        Operand{"b", b_scale, b_zero_point, b_quant_min, b_quant_max},
        Operand{"out", out_scale, out_zero_point, out_quant_min, out_quant_max}}) {
    check_quant_range(o.quant_min, o.quant_max, a.dtype(), op);
    check_scale(o.scale, str_cat(o.name, "_scale").c_str(), op);
    check_zero_point(o.zero_point, o.quant_min, o.quant_max, str_cat(o.name, "_zero_point").c_str(),
                     op);
  }
  resize_like(out, a, op);
  if (a.numel() == 0) return;
  auto params = [](double s, int64_t z) {
    return QTensorParams{static_cast<float>(s), static_cast<int32_t>(z)};
  };
  quant(ctx).add(ctx, {a, params(a_scale, a_zero_point), b, params(b_scale, b_zero_point), out,
                       params(out_scale, out_zero_point), static_cast<int32_t>(out_quant_min),
                       static_cast<int32_t>(out_quant_max)});
}

}  // namespace pterun::ops
