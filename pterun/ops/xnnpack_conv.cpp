// The convolution xnnpack:: operators (xnnpack.h): NHWC activations and
// XNNPACK's filter layouts handed to the conv family as one ConvProblem
// over the same bytes, strided as torch's (N, C, H, W) and weight layouts
// expect, so nothing is copied or re-laid out.

#include <array>
#include <limits>

#include "pterun/core/error.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/conv.h"
#include "pterun/ops/xnnpack.h"
#include "pterun/ops/xnnpack_layout.h"

namespace pterun::ops {
namespace {

using xnn::check_float;
using xnn::check_list;
using xnn::In;
using xnn::Out;
using xnn::resize_memory;

/// Checks the arguments every convolution node shares, then that input and
/// filter (memory order) are 4-D.
void check_args(const char* op, const Tensor& in, const Tensor& filter, const Tensor* bias,
                const Tensor& out, IntList padding, IntList stride, IntList dilation) {
  check_float(in, "input", op);
  check_float(filter, "filter", op, &in);
  check_float(out, "out", op, &in);
  if (bias != nullptr) check_float(*bias, "bias", op, &in);
  check_list(padding, 2, 0, "padding", op);
  check_list(stride, 2, 1, "stride", op);
  check_list(dilation, 2, 1, "dilation", op);
  PTERUN_CHECK(in.dim() == 4 && filter.dim() == 4, ErrorCode::InvalidArgument, op,
               ": input and filter must be 4-D (NHWC and [O, KH, KW, I]), got ", describe(in),
               " and ", describe(filter));
}

void check_bias(const char* op, const Tensor* bias, int64_t oc) {
  PTERUN_CHECK(bias == nullptr || bias->numel() == oc, ErrorCode::InvalidArgument, op, ": bias ",
               describe(*bias), " must have ", oc, " elements");
}

/// The problem's sizes and the NHWC strides of input and output (the
/// input's NCHW ones when `nchw_in`: its memory-order dims [N, C, H, W]).
ConvProblem nhwc_problem(const Tensor& in, const Tensor& out, int64_t kh, int64_t kw,
                         IntList padding, IntList stride, IntList dilation, bool nchw_in = false) {
  ConvProblem p;
  p.dtype = in.dtype();
  p.n = in.size(0);
  p.ih = in.size(nchw_in ? 2 : 1);
  p.iw = in.size(nchw_in ? 3 : 2);
  p.ic = in.size(nchw_in ? 1 : 3);
  p.oh = out.size(1);
  p.ow = out.size(2);
  p.oc = out.size(3);
  p.kh = kh;
  p.kw = kw;
  for (size_t i = 0; i < 2; ++i) {
    p.stride[i] = stride[i];
    p.pad[i] = padding[i];
    p.dilation[i] = dilation[i];
  }
  const int64_t is[4] = {p.ih * p.iw * p.ic, 1, p.iw * p.ic, p.ic};
  const int64_t is_nchw[4] = {p.ic * p.ih * p.iw, p.ih * p.iw, p.iw, 1};
  const int64_t os[4] = {p.oh * p.ow * p.oc, 1, p.ow * p.oc, p.oc};
  std::copy(nchw_in ? is_nchw : is, (nchw_in ? is_nchw : is) + 4, p.in_strides);
  std::copy(os, os + 4, p.out_strides);
  p.in = in.data();
  p.out = out.data();
  return p;
}

/// Makes `c` p's fused activation: a clamp, or none when both bounds are
/// infinite.
void clamp_in_stores(ConvProblem& p, const xnn::OutputClamp& c) {
  if (!c.lo && !c.hi) return;
  p.activation = ConvActivation::Clamp;
  p.clamp_min = c.lo.value_or(-std::numeric_limits<double>::infinity());
  p.clamp_max = c.hi.value_or(std::numeric_limits<double>::infinity());
}

/// Runs `p` and clamps its output to [out_min, out_max]: float32 in the
/// convolution's stores when the backend fuses activations (the same
/// result: a float32 output is clamped after its one rounding either way),
/// else by a pass over the output.
void run_clamped(KernelContext& ctx, ConvProblem& p, Tensor& out, double out_min, double out_max,
                 const char* op) {
  const xnn::OutputClamp c = xnn::output_clamp(out_min, out_max);
  const auto& conv = *backend(ctx).conv;
  if ((c.lo || c.hi) && p.dtype == DType::Float32 && conv.convolution_fused != nullptr) {
    clamp_in_stores(p, c);
    conv.convolution_fused(ctx, p);
    return;
  }
  conv.convolution(ctx, p);
  xnn::clamp_output(ctx, out, out_min, out_max, op);
}

/// Runs `p` with its output clamp, then hardswish on `out` when `hardswish`
/// (a HardSwish node that alone reads the convolution's output): in the
/// convolution's stores for an unclamped float32 output where the backend
/// fuses activations, else as a pass over the output.
void run_activated(KernelContext& ctx, ConvProblem& p, Tensor& out, double out_min, double out_max,
                   bool hardswish, const char* op) {
  const xnn::OutputClamp c = xnn::output_clamp(out_min, out_max);
  const auto& conv = *backend(ctx).conv;
  if (hardswish && !c.lo && !c.hi && p.dtype == DType::Float32 &&
      conv.convolution_fused != nullptr) {
    p.activation = ConvActivation::Hardswish;
    conv.convolution_fused(ctx, p);
    return;
  }
  run_clamped(ctx, p, out, out_min, out_max, op);
  if (hardswish) {
    backend(ctx).elementwise->activation(
        ctx, {.fn = ActivationFn::Hardswish, .in = out, .out = out, .op = op});
  }
}

/// Runs `p` plus `residual` (out's memory-order shape and dtype), then the
/// output clamp: in the convolution's stores for float32 where the backend
/// fuses activations, else the convolution, an add and the clamp as passes.
void run_residual(KernelContext& ctx, ConvProblem& p, const Tensor& residual, Tensor& out,
                  double out_min, double out_max, const char* op) {
  PTERUN_CHECK(residual.dtype() == out.dtype() && kernels::same_dims(residual.sizes(), out.sizes()),
               ErrorCode::InvalidArgument, op, ": the residual ", describe(residual),
               " must have the output's shape and dtype, ", describe(out));
  const auto* r0 = static_cast<const uint8_t*>(residual.data());
  const auto* o0 = static_cast<const uint8_t*>(out.data());
  PTERUN_CHECK(r0 + residual.nbytes() <= o0 || o0 + out.nbytes() <= r0, ErrorCode::InvalidArgument,
               op, ": the residual must not share the output's bytes");
  const auto& conv = *backend(ctx).conv;
  if (p.dtype == DType::Float32 && conv.convolution_fused != nullptr) {
    p.residual = residual.data();
    const int64_t rs[4] = {p.oh * p.ow * p.oc, 1, p.ow * p.oc, p.oc};
    std::copy(rs, rs + 4, p.residual_strides);
    clamp_in_stores(p, xnn::output_clamp(out_min, out_max));
    conv.convolution_fused(ctx, p);
    return;
  }
  conv.convolution(ctx, p);
  backend(ctx).elementwise->binary(
      ctx, {BinaryFn::Add, out.dtype(), out, residual, Scalar::from_int(1), out, op});
  xnn::clamp_output(ctx, out, out_min, out_max, op);
}

}  // namespace

namespace {

void conv2d(KernelContext& ctx, const Tensor& in, const Tensor& filter, const Tensor* bias,
            IntList padding, IntList stride, IntList dilation, int64_t groups, double out_min,
            double out_max, bool hardswish, Tensor& out, const char* op,
            const Tensor* residual = nullptr, bool nchw_in = false) {
  check_args(op, in, filter, bias, out, padding, stride, dilation);
  const In iv(in), fv(filter);
  const Tensor& vi = *iv;
  const Tensor& vf = *fv;
  const int64_t oc = vf.size(0), kh = vf.size(1), kw = vf.size(2);
  const int64_t icg = vf.size(3);
  // The input's dims in memory order: [N, H, W, C], or [N, C, H, W].
  const size_t hd = nchw_in ? 2 : 1, wd = hd + 1, cd = nchw_in ? 1 : 3;
  PTERUN_CHECK(groups >= 1 && oc % groups == 0 && vi.size(cd) == groups * icg,
               ErrorCode::InvalidArgument, op, ": input ", describe(vi), ", filter ", describe(vf),
               " and ", groups, " groups do not match");
  check_bias(op, bias, oc);
  const std::array<int64_t, 4> dims{
      vi.size(0), xnn::conv_size(op, vi.size(hd), kh, padding[0], stride[0], dilation[0]),
      xnn::conv_size(op, vi.size(wd), kw, padding[1], stride[1], dilation[1]), oc};
  const Out ov = resize_memory(out, dims, op);
  Tensor& vo = *ov;
  if (vo.numel() == 0) return;
  ConvProblem p = nhwc_problem(vi, vo, kh, kw, padding, stride, dilation, nchw_in);
  p.groups = groups;
  // Filter [OC, KH, KW, IC/g] seen as torch's [OC, IC/g, KH, KW].
  const int64_t ws[4] = {kh * kw * icg, 1, kw * icg, icg};
  std::copy(ws, ws + 4, p.w_strides);
  p.weight = vf.data();
  p.weight_id = vf.constant_id();
  p.bias = bias != nullptr ? bias->data() : nullptr;
  if (vi.numel() == 0 || vf.numel() == 0) p.ic = 0;
  if (residual != nullptr) {
    const In rv(*residual);
    run_residual(ctx, p, *rv, vo, out_min, out_max, op);
    return;
  }
  run_activated(ctx, p, vo, out_min, out_max, hardswish, op);
}

void depthwise_conv2d(KernelContext& ctx, const Tensor& in, const Tensor& filter,
                      const Tensor* bias, IntList padding, IntList stride, IntList dilation,
                      double out_min, double out_max, bool hardswish, Tensor& out, const char* op) {
  check_args(op, in, filter, bias, out, padding, stride, dilation);
  const In iv(in), fv(filter);
  const Tensor& vi = *iv;
  const Tensor& vf = *fv;
  const int64_t c = vi.size(3), kh = vf.size(1), kw = vf.size(2);
  const int64_t oc = vf.size(3);
  PTERUN_CHECK(vf.size(0) == 1 && c > 0 && oc % c == 0, ErrorCode::InvalidArgument, op, ": filter ",
               describe(vf), " must be [1, KH, KW, C * multiplier] for input ", describe(vi));
  check_bias(op, bias, oc);
  const std::array<int64_t, 4> dims{
      vi.size(0), xnn::conv_size(op, vi.size(1), kh, padding[0], stride[0], dilation[0]),
      xnn::conv_size(op, vi.size(2), kw, padding[1], stride[1], dilation[1]), oc};
  const Out ov = resize_memory(out, dims, op);
  Tensor& vo = *ov;
  if (vo.numel() == 0) return;
  ConvProblem p = nhwc_problem(vi, vo, kh, kw, padding, stride, dilation);
  p.groups = c;
  // Filter [1, KH, KW, OC] seen as torch's [OC, 1, KH, KW].
  const int64_t ws[4] = {1, kh * kw * oc, kw * oc, oc};
  std::copy(ws, ws + 4, p.w_strides);
  p.weight = vf.data();
  p.weight_id = vf.constant_id();
  p.bias = bias != nullptr ? bias->data() : nullptr;
  if (vi.numel() == 0) p.ic = 0;
  run_activated(ctx, p, vo, out_min, out_max, hardswish, op);
}

}  // namespace

void xnn_conv2d(KernelContext& ctx, const Tensor& in, const Tensor& filter, const Tensor* bias,
                IntList padding, IntList stride, IntList dilation, int64_t groups, double out_min,
                double out_max, Tensor& out) {
  conv2d(ctx, in, filter, bias, padding, stride, dilation, groups, out_min, out_max, false, out,
         "xnnpack::conv2d");
}

void xnn_conv2d_nchw(KernelContext& ctx, const Tensor& in, const Tensor& filter, const Tensor* bias,
                     IntList padding, IntList stride, IntList dilation, int64_t groups,
                     double out_min, double out_max, Tensor& out) {
  conv2d(ctx, in, filter, bias, padding, stride, dilation, groups, out_min, out_max, false, out,
         "xnnpack::conv2d_nchw", nullptr, true);
}

void xnn_conv2d_hardswish(KernelContext& ctx, const Tensor& in, const Tensor& filter,
                          const Tensor* bias, IntList padding, IntList stride, IntList dilation,
                          int64_t groups, double out_min, double out_max, Tensor& out) {
  conv2d(ctx, in, filter, bias, padding, stride, dilation, groups, out_min, out_max, true, out,
         "xnnpack::conv2d_hardswish");
}

void xnn_conv2d_add(KernelContext& ctx, const Tensor& in, const Tensor& filter, const Tensor* bias,
                    IntList padding, IntList stride, IntList dilation, int64_t groups,
                    const Tensor& residual, double out_min, double out_max, Tensor& out) {
  const char* op = "xnnpack::conv2d_add";
  check_float(residual, "residual", op, &in);
  conv2d(ctx, in, filter, bias, padding, stride, dilation, groups, out_min, out_max, false, out, op,
         &residual);
}

void xnn_depthwise_conv2d(KernelContext& ctx, const Tensor& in, const Tensor& filter,
                          const Tensor* bias, IntList padding, IntList stride, IntList dilation,
                          double out_min, double out_max, Tensor& out) {
  depthwise_conv2d(ctx, in, filter, bias, padding, stride, dilation, out_min, out_max, false, out,
                   "xnnpack::depthwise_conv2d");
}

void xnn_depthwise_conv2d_hardswish(KernelContext& ctx, const Tensor& in, const Tensor& filter,
                                    const Tensor* bias, IntList padding, IntList stride,
                                    IntList dilation, double out_min, double out_max, Tensor& out) {
  depthwise_conv2d(ctx, in, filter, bias, padding, stride, dilation, out_min, out_max, true, out,
                   "xnnpack::depthwise_conv2d_hardswish");
}

void xnn_conv_transpose2d(KernelContext& ctx, const Tensor& in, const Tensor& filter,
                          const Tensor* bias, IntList padding, IntList adjustment, IntList stride,
                          IntList dilation, int64_t groups, double out_min, double out_max,
                          Tensor& out) {
  const char* op = "xnnpack::conv_transpose2d";
  check_args(op, in, filter, bias, out, padding, stride, dilation);
  const In iv(in), fv(filter);
  const Tensor& vi = *iv;
  const Tensor& vf = *fv;
  check_list(adjustment, 2, 0, "adjustment", op);
  const int64_t oc = vf.size(0), kh = vf.size(1), kw = vf.size(2);
  const int64_t icg = vf.size(3);
  PTERUN_CHECK(groups >= 1 && oc % groups == 0 && vi.size(3) == groups * icg,
               ErrorCode::InvalidArgument, op, ": input ", describe(vi), ", filter ", describe(vf),
               " and ", groups, " groups do not match");
  check_bias(op, bias, oc);
  std::array<int64_t, 4> dims{vi.size(0), 0, 0, oc};
  const int64_t k[2] = {kh, kw};
  for (size_t i = 0; i < 2; ++i) {
    PTERUN_CHECK(adjustment[i] < stride[i], ErrorCode::InvalidArgument, op, ": adjustment ",
                 adjustment[i], " must be smaller than the stride ", stride[i]);
    const int64_t size = vi.size(1 + i);
    dims[1 + i] =
        (size - 1) * stride[i] + dilation[i] * (k[i] - 1) + 1 + adjustment[i] - 2 * padding[i];
    PTERUN_CHECK(size == 0 || dims[1 + i] > 0, ErrorCode::InvalidArgument, op, ": output size ",
                 dims[1 + i], " is not positive");
    if (size == 0) dims[1 + i] = 0;
  }
  const Out ov = resize_memory(out, dims, op);
  Tensor& vo = *ov;
  if (vo.numel() == 0) return;
  // One problem per group: the filter of group g is rows [g * OCg, (g + 1) *
  // OCg) of [OC, KH, KW, ICg], seen as torch's transposed [ICg, OCg, KH, KW].
  const int64_t ocg = oc / groups;
  const size_t esize = in.element_size();
  for (int64_t g = 0; g < groups; ++g) {
    ConvProblem p = nhwc_problem(vi, vo, kh, kw, padding, stride, dilation);
    p.transposed = true;
    p.groups = 1;
    p.ic = icg;
    p.oc = ocg;
    p.out_pad[0] = adjustment[0];
    p.out_pad[1] = adjustment[1];
    const int64_t ws[4] = {1, kh * kw * icg, kw * icg, icg};
    std::copy(ws, ws + 4, p.w_strides);
    p.in = static_cast<const char*>(vi.data()) + g * icg * esize;
    p.out = static_cast<char*>(vo.data()) + g * ocg * esize;
    p.weight = static_cast<const char*>(vf.data()) + g * ocg * kh * kw * icg * esize;
    p.weight_id = vf.constant_id();
    p.bias = bias != nullptr ? static_cast<const char*>(bias->data()) + g * ocg * esize : nullptr;
    if (vi.numel() == 0) p.ic = 0;
    backend(ctx).conv->convolution(ctx, p);
  }
  xnn::clamp_output(ctx, vo, out_min, out_max, op);
}

}  // namespace pterun::ops
