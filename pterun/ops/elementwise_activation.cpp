// Front-ends of the activations (elementwise.h): relu, hardtanh and clamp
// for any real dtype; gelu, silu, elu and the other floating ones with out
// of the input's dtype; glu, whose two inputs are halves of one tensor.

#include "pterun/core/error.h"
#include "pterun/core/text.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/elementwise.h"
#include "pterun/ops/elementwise_checks.h"

namespace pterun::ops {
namespace {

using kernels::Family;

const ElementwiseBackend& elementwise(const KernelContext& ctx) {
  return *backend(ctx).elementwise;
}

/// A floating activation without parameters.
void float_activation(KernelContext& ctx, const Tensor& self, Tensor& out, ActivationFn fn,
                      const char* op) {
  prepare_same_type(self, out, Family::FloatHBF16, op);
  elementwise(ctx).activation(ctx, {.fn = fn, .in = self, .out = out, .op = op});
}

}  // namespace

// NaN stays NaN.
void relu_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  const char* op = "aten::relu.out";
  prepare_same_type(self, out, Family::RealHBF16, op);
  elementwise(ctx).activation(ctx, {.fn = ActivationFn::Relu, .in = self, .out = out, .op = op});
}

void hardtanh_out(KernelContext& ctx, const Tensor& self, Scalar min_val, Scalar max_val,
                  Tensor& out) {
  const char* op = "aten::hardtanh.out";
  prepare_same_type(self, out, Family::RealHBF16, op);
  check_scalar_fits(min_val, self.dtype(), op, "min_val");
  check_scalar_fits(max_val, self.dtype(), op, "max_val");
  elementwise(ctx).clamp(ctx, {self, min_val, max_val, self.dtype(), out, op});
}

// out has exactly the type of self promoted with the given scalars.
void clamp_out(KernelContext& ctx, const Tensor& self, std::optional<Scalar> min,
               std::optional<Scalar> max, Tensor& out) {
  const char* op = "aten::clamp.out";
  PTERUN_CHECK(min || max, ErrorCode::InvalidArgument, op, ": min and max are both None");
  check_dtype(self, Family::RealHBBF16, op, "self");
  DType common = self.dtype();
  if (min) common = kernels::promote_with_scalar(common, *min);
  if (max) common = kernels::promote_with_scalar(common, *max);
  PTERUN_CHECK(out.dtype() == common, ErrorCode::InvalidArgument, op, ": out must be ",
               dtype_name(common), ", got ", dtype_name(out.dtype()));
  if (min) check_scalar_fits(*min, common, op, "min");
  if (max) check_scalar_fits(*max, common, op, "max");
  kernels::resize_output(out, self.sizes(), op);
  elementwise(ctx).clamp(ctx, {self, min, max, common, out, op});
}

// Broadcast over the present tensors; a NaN anywhere gives NaN.
void clamp_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor* min, const Tensor* max,
                      Tensor& out) {
  const char* op = "aten::clamp.Tensor_out";
  PTERUN_CHECK(min || max, ErrorCode::InvalidArgument, op, ": min and max are both None");
  check_dtype(self, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::RealHBBF16, op, "out");
  DType common = self.dtype();
  if (min) {
    check_dtype(*min, Family::RealHBBF16, op, "min");
    common = kernels::promote_types(common, min->dtype(), op);
  }
  if (max) {
    check_dtype(*max, Family::RealHBBF16, op, "max");
    common = kernels::promote_types(common, max->dtype(), op);
  }
  kernels::check_can_cast(common, out.dtype(), op);
  if (min && max) {
    kernels::resize_to_broadcast(out, {&self, min, max}, op);
  } else {
    kernels::resize_to_broadcast(out, {&self, min ? min : max}, op);
  }
  elementwise(ctx).clamp_tensor(ctx, {self, min, max, common, out, op});
}

// The erf form, or the tanh approximation.
void gelu_out(KernelContext& ctx, const Tensor& self, std::string_view approximate, Tensor& out) {
  const char* op = "aten::gelu.out";
  PTERUN_CHECK(approximate == "none" || approximate == "tanh", ErrorCode::InvalidArgument, op,
               ": approximate must be 'none' or 'tanh', got '", printable(approximate), "'");
  float_activation(ctx, self, out,
                   approximate == "tanh" ? ActivationFn::GeluTanh : ActivationFn::Gelu, op);
}

void leaky_relu_out(KernelContext& ctx, const Tensor& self, Scalar negative_slope, Tensor& out) {
  const char* op = "aten::leaky_relu.out";
  prepare_same_type(self, out, Family::FloatHBF16, op);
  check_scalar_fits(negative_slope, self.dtype(), op, "negative_slope");
  elementwise(ctx).activation(ctx, {.fn = ActivationFn::LeakyRelu,
                                    .in = self,
                                    .out = out,
                                    .negative_slope = negative_slope,
                                    .op = op});
}

// scale * x for x > 0, else alpha * scale * (exp(x * input_scale) - 1).
void elu_out(KernelContext& ctx, const Tensor& self, Scalar alpha, Scalar scale, Scalar input_scale,
             Tensor& out) {
  const char* op = "aten::elu.out";
  prepare_same_type(self, out, Family::FloatHBF16, op);
  elementwise(ctx).activation(ctx, {.fn = ActivationFn::Elu,
                                    .in = self,
                                    .out = out,
                                    .scale = scale.to_double(),
                                    .negative_scale = alpha.to_double() * scale.to_double(),
                                    .input_scale = input_scale.to_double(),
                                    .op = op});
}

// log(1 + exp(beta * x)) / beta, or x where beta * x > threshold.
void softplus_out(KernelContext& ctx, const Tensor& self, Scalar beta, Scalar threshold,
                  Tensor& out) {
  const char* op = "aten::softplus.out";
  prepare_same_type(self, out, Family::FloatHBF16, op);
  elementwise(ctx).activation(ctx, {.fn = ActivationFn::Softplus,
                                    .in = self,
                                    .out = out,
                                    .beta = beta.to_double(),
                                    .threshold = threshold.to_double(),
                                    .op = op});
}

void silu_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  float_activation(ctx, self, out, ActivationFn::Silu, "aten::silu.out");
}

void hardsigmoid_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  float_activation(ctx, self, out, ActivationFn::Hardsigmoid, "aten::hardsigmoid.out");
}

void hardswish_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  float_activation(ctx, self, out, ActivationFn::Hardswish, "aten::hardswish.out");
}

// a * sigmoid(b) where a and b are the first and second halves of self
// along dim.
void glu_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out) {
  const char* op = "aten::glu.out";
  check_dtype(self, Family::FloatHBF16, op, "self");
  check_dtype(out, Family::FloatHBF16, op, "out");
  PTERUN_CHECK(self.dim() >= 1, ErrorCode::InvalidArgument, op, ": self must have at least 1 dim");
  const auto d = static_cast<size_t>(kernels::wrap_dim(dim, self.dim(), op));
  const int64_t half = self.size(d) / 2;
  PTERUN_CHECK(self.size(d) % 2 == 0, ErrorCode::InvalidArgument, op, ": dim ", d, " of self ",
               describe(self), " has odd size");
  kernels::Shape shape;
  for (size_t k = 0; k < self.dim(); ++k) shape.push_back(k == d ? half : self.size(k));
  kernels::resize_output(out, shape.span(), op);
  if (out.numel() == 0) return;
  elementwise(ctx).glu(ctx, {self, d, out, op});
}

// out = x * cos + rotate_half(x) * sin (RotaryArgs).
void rotary_half_out(KernelContext& ctx, const Tensor& x, const Tensor& cos, const Tensor& sin,
                     Tensor& out) {
  const char* op = kernels::kRotaryHalfKernel;
  check_dtype(x, Family::FloatHBF16, op, "x");
  for (const Tensor* t : {&cos, &sin, static_cast<const Tensor*>(&out)}) {
    PTERUN_CHECK(t->dtype() == x.dtype(), ErrorCode::InvalidArgument, op, ": ", describe(*t),
                 " must have x's dtype ", dtype_name(x.dtype()));
  }
  const size_t rank = x.dim();
  PTERUN_CHECK(rank >= 1 && x.size(rank - 1) % 2 == 0, ErrorCode::InvalidArgument, op, ": x ",
               describe(x), " must have a last dim of even size");
  // cos and sin against x's dims, right-aligned, 0 where they broadcast.
  auto broadcast = [&](const Tensor& t, const char* name) {
    std::array<int64_t, kMaxRank> strides{};
    PTERUN_CHECK(t.dim() <= rank, ErrorCode::InvalidArgument, op, ": ", name, " ", describe(t),
                 " does not broadcast to x ", describe(x));
    for (size_t i = 0; i < t.dim(); ++i) {
      const size_t d = rank - t.dim() + i;
      PTERUN_CHECK(t.size(i) == x.size(d) || t.size(i) == 1, ErrorCode::InvalidArgument, op, ": ",
                   name, " ", describe(t), " does not broadcast to x ", describe(x));
      strides[d] = t.size(i) == 1 ? 0 : t.stride(i);
    }
    return strides;
  };
  const auto cos_strides = broadcast(cos, "cos");
  const auto sin_strides = broadcast(sin, "sin");
  kernels::resize_output(out, x.sizes(), op);
  // Each out element reads x half a row away: out may not overlap x.
  PTERUN_CHECK(!share_bytes(out, x) && !share_bytes(out, cos) && !share_bytes(out, sin),
               ErrorCode::InvalidArgument, op, ": out overlaps an input");
  if (out.numel() == 0) return;
  elementwise(ctx).rotary(ctx, {x, cos, sin, cos_strides, sin_strides, out, op});
}

}  // namespace pterun::ops
