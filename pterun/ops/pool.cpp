// Front-ends of the pool family (pool.h): windows, output sizes and dtypes,
// checked once for every backend.

#include "pterun/ops/pool.h"

#include <span>

#include "pterun/core/checked_math.h"
#include "pterun/core/error.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/checks.h"

namespace pterun::ops {
namespace {

using kernels::Family;

const PoolBackend& pool(const KernelContext& ctx) {
  return *backend(ctx).pool;
}

void check_input(const char* op, const Tensor& in) {
  const size_t r = in.dim();
  PTERUN_CHECK(r == 3 || r == 4, ErrorCode::InvalidArgument, op,
               ": input must be 3-D [C, H, W] or 4-D [N, C, H, W], got ", describe(in));
  for (size_t d = r - 3; d < r; ++d) {
    PTERUN_CHECK(in.size(d) > 0, ErrorCode::InvalidArgument, op,
                 ": input needs non-empty channel and spatial dims, got ", describe(in));
  }
}

void check_out_dtype(const char* op, const Tensor& in, const Tensor& out) {
  PTERUN_CHECK(out.dtype() == in.dtype(), ErrorCode::InvalidArgument, op, ": out ", describe(out),
               " must have the input's dtype ", dtype_name(in.dtype()));
}

/// Resizes `out` (and `extra`, if given) to the input's leading dims plus
/// [oh, ow], and returns the loop geometry.
Planes make_planes(const char* op, const Tensor& in, Tensor& out, int64_t oh, int64_t ow,
                   Tensor* extra = nullptr) {
  const size_t r = in.dim();
  std::array<int64_t, 4> sizes{};
  for (size_t d = 0; d + 2 < r; ++d) sizes[d] = in.size(d);
  sizes[r - 2] = oh;
  sizes[r - 1] = ow;
  kernels::resize_output(out, {sizes.data(), r}, op);
  if (extra != nullptr) kernels::resize_output(*extra, {sizes.data(), r}, op);
  Planes g;
  g.n = r == 4 ? in.size(0) : 1;
  g.c = in.size(r - 3);
  g.ih = in.size(r - 2);
  g.iw = in.size(r - 1);
  g.oh = oh;
  g.ow = ow;
  g.in = strides4(in);
  g.out = strides4(out);
  g.channels_inner = g.c > 1 && g.in[1] == 1;
  return g;
}

int64_t at(IntList list, size_t i) {
  return list[list.size() == 1 ? 0 : i];
}

void check_list(const char* op, const char* name, IntList list, bool allow_empty, int64_t min) {
  PTERUN_CHECK(list.size() == 1 || list.size() == 2 || (allow_empty && list.empty()),
               ErrorCode::InvalidArgument, op, ": ", name, " must have ", allow_empty ? "0, " : "",
               "1 or 2 entries, got ", list.size());
  for (int64_t v : list) {
    PTERUN_CHECK(v >= min, ErrorCode::InvalidArgument, op, ": ", name, " entries must be >= ", min,
                 ", got ", v);
  }
}

Window make_window(const char* op, IntList kernel, IntList stride, IntList padding,
                   IntList dilation) {
  check_list(op, "kernel_size", kernel, false, 1);
  check_list(op, "stride", stride, true, 1);
  check_list(op, "padding", padding, false, 0);
  if (!dilation.empty()) check_list(op, "dilation", dilation, false, 1);
  Window w;
  for (size_t i = 0; i < 2; ++i) {
    w.k[i] = at(kernel, i);
    w.s[i] = stride.empty() ? w.k[i] : at(stride, i);
    w.p[i] = at(padding, i);
    w.d[i] = dilation.empty() ? 1 : at(dilation, i);
    PTERUN_CHECK(w.p[i] <= w.k[i] / 2, ErrorCode::InvalidArgument, op,
                 ": padding must be at most half the kernel size, got padding ", w.p[i],
                 " for kernel ", w.k[i]);
  }
  return w;
}

/// torch's pooling_output_shape.
int64_t pooled_size(const char* op, int64_t in, const Window& w, size_t i, bool ceil_mode) {
  const int64_t k = w.k[i], s = w.s[i], p = w.p[i], d = w.d[i];
  // Every step checked: sizes and parameters come from the program.
  int64_t num = 0, twice_p = 0, span = 0, last = 0, reach = 0;
  bool fits = mul_i64(p, 2, twice_p) && add_i64(in, twice_p, num) && mul_i64(d, k - 1, span) &&
              sub_i64(num, span, num) && sub_i64(num, 1, num) &&
              add_i64(num, ceil_mode ? s - 1 : 0, num) && add_i64(in, p, reach);
  PTERUN_CHECK(fits, ErrorCode::InvalidArgument, op, ": input size ", in,
               " and the window (kernel ", k, ", stride ", s, ", dilation ", d, ", padding ", p,
               ") overflow the output size");
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  // The last window must start inside the input or its left padding.
  if (ceil_mode && mul_i64(out - 1, s, last) && last >= reach) --out;
  PTERUN_CHECK(out > 0, ErrorCode::InvalidArgument, op, ": input size ", in,
               " is too small for the window (kernel ", k, ", dilation ", d, ", padding ", p, ")");
  return out;
}

/// The checked arguments of max_pool2d_with_indices.out.
MaxPoolArgs max_pool_args(const char* op, const Tensor& in, IntList kernel_size, IntList stride,
                          IntList padding, IntList dilation, bool ceil_mode, Tensor& out,
                          Tensor& indices) {
  const Window w = make_window(op, kernel_size, stride, padding, dilation);
  check_input(op, in);
  check_out_dtype(op, in, out);
  PTERUN_CHECK(indices.dtype() == DType::Int64, ErrorCode::InvalidArgument, op,
               ": indices must be int64, got ", describe(indices));
  const size_t r = in.dim();
  const int64_t oh = pooled_size(op, in.size(r - 2), w, 0, ceil_mode);
  const int64_t ow = pooled_size(op, in.size(r - 1), w, 1, ceil_mode);
  const Planes g = make_planes(op, in, out, oh, ow, &indices);
  check_dtype_in(in.dtype(), Family::RealHBF16, op);
  return {in, out, indices, w, g, strides4(indices)};
}

/// An upsample .vec op's input (4-D) and output size: exactly one of
/// output_size and scale_factors is given; sizes from scales truncate.
/// Resizes out.
ResampleArgs resample_args(const char* op, const Tensor& in, std::optional<IntList> size,
                           const Value& scales_arg, Tensor& out) {
  PTERUN_CHECK(in.dim() == 4, ErrorCode::InvalidArgument, op, ": input must be 4-D, got ",
               describe(in));
  check_input(op, in);
  const bool has_scales = !scales_arg.is_none();
  PTERUN_CHECK(size.has_value() != has_scales, ErrorCode::InvalidArgument, op,
               ": give exactly one of output_size and scale_factors");
  std::array<int64_t, 2> hw{};
  std::array<std::optional<double>, 2> scale;
  if (size.has_value()) {
    PTERUN_CHECK(size->size() == 2, ErrorCode::InvalidArgument, op,
                 ": output_size must have 2 entries, got ", size->size());
    hw = {(*size)[0], (*size)[1]};
  } else {
    const auto scales = scales_arg.to_double_list();
    PTERUN_CHECK(scales.size() == 2, ErrorCode::InvalidArgument, op,
                 ": scale_factors must have 2 entries, got ", scales.size());
    for (size_t i = 0; i < 2; ++i) {
      hw[i] = static_cast<int64_t>(static_cast<double>(in.size(2 + i)) * scales[i]);
      scale[i] = scales[i];
    }
  }
  PTERUN_CHECK(hw[0] > 0 && hw[1] > 0, ErrorCode::InvalidArgument, op, ": output size [", hw[0],
               ", ", hw[1], "] must be positive");
  check_out_dtype(op, in, out);
  const Planes g = make_planes(op, in, out, hw[0], hw[1]);
  return {in, out, g, scale, false};
}

}  // namespace

void max_pool2d_with_indices_out(KernelContext& ctx, const Tensor& in, IntList kernel_size,
                                 IntList stride, IntList padding, IntList dilation, bool ceil_mode,
                                 Tensor& out, Tensor& indices) {
  const char* op = "aten::max_pool2d_with_indices.out";
  pool(ctx).max_pool(
      ctx, max_pool_args(op, in, kernel_size, stride, padding, dilation, ceil_mode, out, indices));
}

void max_pool2d_values_out(KernelContext& ctx, const Tensor& in, IntList kernel_size,
                           IntList stride, IntList padding, IntList dilation, bool ceil_mode,
                           Tensor& out, Tensor& indices) {
  const char* op = "aten::max_pool2d_with_indices.out";
  pool(ctx).max_pool_values(
      ctx, max_pool_args(op, in, kernel_size, stride, padding, dilation, ceil_mode, out, indices));
}

void avg_pool2d_out(KernelContext& ctx, const Tensor& in, IntList kernel_size, IntList stride,
                    IntList padding, bool ceil_mode, bool count_include_pad,
                    std::optional<int64_t> divisor_override, Tensor& out) {
  const char* op = "aten::avg_pool2d.out";
  const Window w = make_window(op, kernel_size, stride, padding, {});
  check_input(op, in);
  check_out_dtype(op, in, out);
  PTERUN_CHECK(kernels::in_family(in.dtype(), Family::FloatHBF16) || in.dtype() == DType::Int64,
               ErrorCode::InvalidArgument, op, ": dtype ", dtype_name(in.dtype()),
               " is not supported");
  PTERUN_CHECK(!divisor_override.has_value() || *divisor_override != 0, ErrorCode::InvalidArgument,
               op, ": divisor_override must not be 0");
  const size_t r = in.dim();
  const int64_t oh = pooled_size(op, in.size(r - 2), w, 0, ceil_mode);
  const int64_t ow = pooled_size(op, in.size(r - 1), w, 1, ceil_mode);
  const Planes g = make_planes(op, in, out, oh, ow);
  pool(ctx).avg_pool(ctx, {in, out, w, g, count_include_pad, divisor_override});
}

void adaptive_avg_pool2d_out(KernelContext& ctx, const Tensor& in, IntList output_size,
                             Tensor& out) {
  const char* op = "aten::_adaptive_avg_pool2d.out";
  PTERUN_CHECK(output_size.size() == 1 || output_size.size() == 2, ErrorCode::InvalidArgument, op,
               ": output_size must have 1 or 2 entries, got ", output_size.size());
  const std::array<int64_t, 2> hw{at(output_size, 0), at(output_size, 1)};
  PTERUN_CHECK(hw[0] >= 0 && hw[1] >= 0, ErrorCode::InvalidArgument, op,
               ": output_size entries must be >= 0, got [", hw[0], ", ", hw[1], "]");
  check_input(op, in);
  check_out_dtype(op, in, out);
  const Planes g = make_planes(op, in, out, hw[0], hw[1]);
  if (out.numel() == 0) return;
  check_dtype_in(in.dtype(), Family::FloatHBF16, op);
  pool(ctx).adaptive_avg_pool(ctx, {in, out, g});
}

void upsample_nearest2d_out(KernelContext& ctx, const Tensor& in,
                            std::optional<IntList> output_size, const Value& scale_factors,
                            Tensor& out) {
  const char* op = "aten::upsample_nearest2d.vec_out";
  const ResampleArgs a = resample_args(op, in, output_size, scale_factors, out);
  check_dtype_in(in.dtype(), Family::RealHBBF16, op);
  pool(ctx).upsample_nearest(ctx, a);
}

void upsample_bilinear2d_out(KernelContext& ctx, const Tensor& in,
                             std::optional<IntList> output_size, bool align_corners,
                             const Value& scale_factors, Tensor& out) {
  const char* op = "aten::upsample_bilinear2d.vec_out";
  ResampleArgs a = resample_args(op, in, output_size, scale_factors, out);
  a.align_corners = align_corners;
  check_dtype_in(in.dtype(), Family::FloatHBF16, op);
  pool(ctx).upsample_bilinear(ctx, a);
}

}  // namespace pterun::ops
