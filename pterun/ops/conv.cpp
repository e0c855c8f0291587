// Front-end of the conv family (conv.h): argument checks, the output size
// and the 2-D problem, once for every backend.

#include "pterun/ops/conv.h"

#include <algorithm>
#include <array>
#include <limits>
#include <span>

#include "pterun/core/checked_math.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"

namespace pterun::ops {
namespace {

/// Element i of a parameter list of 1 or `n` entries.
int64_t param(IntList list, size_t i) {
  return list[list.size() == 1 ? 0 : i];
}

void check_param(const char* op, const char* name, IntList list, size_t n, int64_t min) {
  PTERUN_CHECK(list.size() == 1 || list.size() == n, ErrorCode::InvalidArgument, op, ": ", name,
               " must have 1 or ", n, " entries, got ", list.size());
  for (int64_t v : list) {
    PTERUN_CHECK(v >= min, ErrorCode::InvalidArgument, op, ": ", name, " entries must be >= ", min,
                 ", got ", v);
  }
}

}  // namespace

namespace {

/// The checks and the problem of every convolution front-end, with the
/// fused activation `act` (clamped to `bounds`).
void convolution(KernelContext& ctx, const char* op, const Tensor& in, const Tensor& weight,
                 const Tensor* bias, IntList stride, IntList padding, IntList dilation,
                 bool transposed, IntList output_padding, int64_t groups, Tensor& out,
                 ConvActivation act, std::array<double, 2> bounds = {},
                 const Tensor* residual = nullptr) {
  const Tensor& w = weight;
  const DType dtype = in.dtype();
  const bool fused = act != ConvActivation::None || residual != nullptr;
  const auto family = fused ? kernels::Family::FloatHBF16 : kernels::Family::RealHBF16;
  PTERUN_CHECK(kernels::in_family(dtype, family), ErrorCode::InvalidArgument, op, ": dtype ",
               dtype_name(dtype), " is not supported");
  PTERUN_CHECK(
      w.dtype() == dtype && out.dtype() == dtype && (bias == nullptr || bias->dtype() == dtype),
      ErrorCode::InvalidArgument, op, ": input, weight, bias and out must share a dtype, got ",
      describe(in), ", ", describe(w), " and out ", describe(out));
  PTERUN_CHECK(in.dim() == 3 || in.dim() == 4, ErrorCode::InvalidArgument, op,
               ": input must be 3-D (conv1d) or 4-D (conv2d), got ", describe(in));
  PTERUN_CHECK(w.dim() == in.dim(), ErrorCode::InvalidArgument, op, ": weight ", describe(w),
               " must have the input's rank ", in.dim());
  const size_t kdim = in.dim() - 2;
  check_param(op, "stride", stride, kdim, 1);
  check_param(op, "padding", padding, kdim, 0);
  check_param(op, "dilation", dilation, kdim, 1);
  if (transposed) check_param(op, "output_padding", output_padding, kdim, 0);
  PTERUN_CHECK(groups >= 1 && w.size(0) % groups == 0, ErrorCode::InvalidArgument, op, ": groups ",
               groups, " must be positive and divide weight.size(0) = ", w.size(0));

  ConvProblem p;
  p.dtype = dtype;
  p.transposed = transposed;
  p.groups = groups;
  p.n = in.size(0);
  p.ic = in.size(1);
  if (!transposed) {
    PTERUN_CHECK(p.ic == groups * w.size(1), ErrorCode::InvalidArgument, op, ": input ",
                 describe(in), " needs ", groups * w.size(1), " channels for weight ", describe(w),
                 " and groups ", groups);
    p.oc = w.size(0);
  } else {
    PTERUN_CHECK(p.ic == w.size(0), ErrorCode::InvalidArgument, op, ": input ", describe(in),
                 " must have weight.size(0) = ", w.size(0), " channels");
    p.oc = groups * w.size(1);
  }
  if (bias != nullptr) {
    PTERUN_CHECK(bias->dim() == 1 && bias->size(0) == p.oc, ErrorCode::InvalidArgument, op,
                 ": bias must be [", p.oc, "], got ", describe(*bias));
  }

  // Spatial dims: a 1-D convolution is a 2-D one of height 1.
  const bool one_d = kdim == 1;
  p.ih = one_d ? 1 : in.size(2);
  p.iw = in.size(in.dim() - 1);
  p.kh = one_d ? 1 : w.size(2);
  p.kw = w.size(w.dim() - 1);
  std::array<int64_t, 4> out_sizes{p.n, p.oc, 0, 0};
  for (size_t i = 0; i < kdim; ++i) {
    const size_t d = one_d ? 1 : i;  // slot in the 2-D problem
    const int64_t s = param(stride, i), pad = param(padding, i), dil = param(dilation, i);
    const int64_t k = w.size(2 + i), size = in.size(2 + i);
    int64_t o = 0;
    // Sizes and parameters come from the program: every step is checked,
    // so hostile values are an error, never a wrapped size.
    int64_t padded = 0, span = 0, twice_pad = 0;
    bool fits =
        mul_i64(pad, 2, twice_pad) && add_i64(size, twice_pad, padded) && mul_i64(dil, k - 1, span);
    if (!transposed) {
      int64_t room = 0;
      fits = fits && sub_i64(padded, span, room) && sub_i64(room, 1, room);
      PTERUN_CHECK(fits, ErrorCode::InvalidArgument, op, ": input size ", size, ", padding ", pad,
                   ", kernel ", k, " and dilation ", dil, " overflow the output size");
      PTERUN_CHECK(room >= 0, ErrorCode::InvalidArgument, op, ": the kernel (size ", k,
                   ", dilation ", dil, ") is larger than the padded input (", padded, ")");
      o = room / s + 1;
    } else {
      const int64_t op_pad = param(output_padding, i);
      PTERUN_CHECK(op_pad < s || op_pad < dil, ErrorCode::InvalidArgument, op,
                   ": output_padding must be smaller than stride or dilation, got ", op_pad);
      fits = fits && mul_i64(size - 1, s, o) && sub_i64(o, twice_pad, o) && add_i64(o, span, o) &&
             add_i64(o, op_pad, o) && add_i64(o, 1, o);
      PTERUN_CHECK(fits, ErrorCode::InvalidArgument, op, ": input size ", size, ", stride ", s,
                   ", padding ", pad, ", kernel ", k, " and dilation ", dil,
                   " overflow the output size");
      p.out_pad[d] = op_pad;
      PTERUN_CHECK(o > 0, ErrorCode::InvalidArgument, op, ": output size ", o, " is not positive");
    }
    p.stride[d] = s;
    p.pad[d] = pad;
    p.dilation[d] = dil;
    out_sizes[2 + i] = o;
  }
  kernels::resize_output(out, {out_sizes.data(), in.dim()}, op);
  if (residual != nullptr) {
    PTERUN_CHECK(residual->dtype() == dtype && std::ranges::equal(residual->sizes(), out.sizes()),
                 ErrorCode::InvalidArgument, op, ": the residual ", describe(*residual),
                 " must have out's dtype and shape, ", describe(out));
  }
  p.oh = one_d ? 1 : out_sizes[2];
  p.ow = out_sizes[in.dim() - 1];
  if (out.numel() == 0) return;

  // Strides over (N, C, H, W); the unit height of a 1-D convolution sits
  // just outside W in memory.
  auto strides4 = [&](const Tensor& t, int64_t* s) {
    const size_t r = t.dim();
    s[0] = t.stride(0);
    s[1] = t.stride(1);
    s[3] = t.stride(r - 1);
    s[2] = one_d ? t.stride(r - 1) * t.size(r - 1) : t.stride(2);
  };
  strides4(in, p.in_strides);
  strides4(w, p.w_strides);
  strides4(out, p.out_strides);
  p.in = in.data();
  p.weight = w.data();
  p.weight_id = w.constant_id();
  p.bias = bias != nullptr ? bias->data() : nullptr;
  p.out = out.data();

  // No input channels (or an empty kernel): every output is its bias.
  if (in.numel() == 0 || w.numel() == 0) p.ic = 0;
  if (!fused) {
    backend(ctx).conv->convolution(ctx, p);
    return;
  }
  PTERUN_CHECK(backend(ctx).conv->convolution_fused != nullptr, ErrorCode::NotImplemented, op,
               ": not available on this device");
  p.activation = act;
  p.clamp_min = bounds[0];
  p.clamp_max = bounds[1];
  if (residual != nullptr) {
    p.residual = residual->data();
    strides4(*residual, p.residual_strides);
  }
  backend(ctx).conv->convolution_fused(ctx, p);
}

}  // namespace

void convolution_out(KernelContext& ctx, const Tensor& in, const Tensor& weight, const Tensor* bias,
                     IntList stride, IntList padding, IntList dilation, bool transposed,
                     IntList output_padding, int64_t groups, Tensor& out) {
  convolution(ctx, "aten::convolution.out", in, weight, bias, stride, padding, dilation, transposed,
              output_padding, groups, out, ConvActivation::None);
}

void convolution_relu_out(KernelContext& ctx, const Tensor& in, const Tensor& weight,
                          const Tensor* bias, IntList stride, IntList padding, IntList dilation,
                          bool transposed, IntList output_padding, int64_t groups, Tensor& out) {
  convolution(ctx, "pterun::convolution_relu.out", in, weight, bias, stride, padding, dilation,
              transposed, output_padding, groups, out, ConvActivation::Clamp,
              {0.0, std::numeric_limits<double>::infinity()});
}

void convolution_hardtanh_out(KernelContext& ctx, const Tensor& in, const Tensor& weight,
                              const Tensor* bias, IntList stride, IntList padding, IntList dilation,
                              bool transposed, IntList output_padding, int64_t groups,
                              Scalar min_val, Scalar max_val, Tensor& out) {
  const char* op = "pterun::convolution_hardtanh.out";
  const std::array<double, 2> bounds{min_val.to_double(), max_val.to_double()};
  PTERUN_CHECK(bounds[0] <= bounds[1], ErrorCode::InvalidArgument, op, ": min_val ", bounds[0],
               " is above max_val ", bounds[1]);
  convolution(ctx, op, in, weight, bias, stride, padding, dilation, transposed, output_padding,
              groups, out, ConvActivation::Clamp, bounds);
}

void convolution_hardswish_out(KernelContext& ctx, const Tensor& in, const Tensor& weight,
                               const Tensor* bias, IntList stride, IntList padding,
                               IntList dilation, bool transposed, IntList output_padding,
                               int64_t groups, Tensor& out) {
  convolution(ctx, "pterun::convolution_hardswish.out", in, weight, bias, stride, padding, dilation,
              transposed, output_padding, groups, out, ConvActivation::Hardswish);
}

void convolution_add_out(KernelContext& ctx, const Tensor& in, const Tensor& weight,
                         const Tensor* bias, IntList stride, IntList padding, IntList dilation,
                         bool transposed, IntList output_padding, int64_t groups,
                         const Tensor& residual, Tensor& out) {
  convolution(ctx, "pterun::convolution_add.out", in, weight, bias, stride, padding, dilation,
              transposed, output_padding, groups, out, ConvActivation::None, {}, &residual);
}

void convolution_add_relu_out(KernelContext& ctx, const Tensor& in, const Tensor& weight,
                              const Tensor* bias, IntList stride, IntList padding, IntList dilation,
                              bool transposed, IntList output_padding, int64_t groups,
                              const Tensor& residual, Tensor& out) {
  convolution(ctx, "pterun::convolution_add_relu.out", in, weight, bias, stride, padding, dilation,
              transposed, output_padding, groups, out, ConvActivation::Clamp,
              {0.0, std::numeric_limits<double>::infinity()}, &residual);
}

}  // namespace pterun::ops
