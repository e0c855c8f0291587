// Activations over the shared elementwise engine: relu, hardtanh and clamp
// for any real dtype; gelu, silu, elu and the other floating ones with out
// of the input's dtype (f16/bf16 computed in float); glu by hand, since its
// two inputs are halves of one tensor.

#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/backend/cpu/ops/vec_math.h"
#include "pterun/core/text.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/elementwise.h"
#include "pterun/kernels/common/elementwise_checks.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/kernels/common/elementwise_util.h"
#include "pterun/kernels/common/parallel.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::cpu {
namespace {

using kernels::check_dtype;
using kernels::Family;
using kernels::KernelContext;
using kernels::OpName;
using kernels::prepare_same_type;
namespace math = kernels::math;

/// Calls f.template operator()<C>() with C = double for double, float for
/// the other floating dtypes.
template <typename F>
void visit_float(DType d, F&& f) {
  if (d == DType::Float64) {
    f.template operator()<double>();
  } else {
    f.template operator()<float>();
  }
}

// relu.out(self, *, out). NaN stays NaN.
void relu_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::relu.out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  prepare_same_type(in, out, Family::RealHBF16, op);
  kernels::visit(in.dtype(), Family::RealHBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    if constexpr (std::is_unsigned_v<C>) {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&in}, [](C x) { return x; }, op);
    } else {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&in}, [](C x) { return x < C(0) ? C(0) : x; }, op);
    }
  });
}

/// max(x, lo) then min(., hi) keeping NaN inputs NaN, for compute type C.
template <typename C>
void clamp_scalar(KernelContext& ctx, const Tensor& in, Tensor& out, C lo, C hi, const char* op) {
  if (math::is_nan(lo) || math::is_nan(hi)) {
    C nan = lo + hi;
    kernels::map_elements<C, C, 1>(
        ctx, out, {&in}, [nan](C) { return nan; }, op);
    return;
  }
  kernels::map_elements<C, C, 1>(
      ctx, out, {&in},
      [lo, hi](C x) {
        C v = x < lo ? lo : x;
        return v > hi ? hi : v;
      },
      op);
}

// hardtanh.out(self, Scalar min_val=-1, Scalar max_val=1, *, out).
void hardtanh_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::hardtanh.out";
  const Tensor& in = args[0]->to_tensor();
  Scalar lo = args[1]->to_scalar();
  Scalar hi = args[2]->to_scalar();
  Tensor& out = args[3]->to_tensor();
  prepare_same_type(in, out, Family::RealHBF16, op);
  kernels::check_scalar_fits(lo, in.dtype(), op, "min_val");
  kernels::check_scalar_fits(hi, in.dtype(), op, "max_val");
  kernels::visit(in.dtype(), Family::RealHBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    clamp_scalar<C>(ctx, in, out, math::scalar_as<C>(lo), math::scalar_as<C>(hi), op);
  });
}

// clamp.out(self, Scalar? min=None, Scalar? max=None, *, out): out has
// exactly the type of self promoted with the given scalars.
void clamp_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::clamp.out";
  const Tensor& in = args[0]->to_tensor();
  std::optional<Scalar> lo = args[1]->to_optional_scalar();
  std::optional<Scalar> hi = args[2]->to_optional_scalar();
  Tensor& out = args[3]->to_tensor();
  PTERUN_CHECK(lo || hi, ErrorCode::InvalidArgument, op, ": min and max are both None");
  check_dtype(in, Family::RealHBBF16, op, "self");
  DType common = in.dtype();
  if (lo) common = kernels::promote_with_scalar(common, *lo);
  if (hi) common = kernels::promote_with_scalar(common, *hi);
  PTERUN_CHECK(out.dtype() == common, ErrorCode::InvalidArgument, op, ": out must be ",
               dtype_name(common), ", got ", dtype_name(out.dtype()));
  if (lo) kernels::check_scalar_fits(*lo, common, op, "min");
  if (hi) kernels::check_scalar_fits(*hi, common, op, "max");
  kernels::resize_output(out, in.sizes(), op);
  kernels::visit(common, Family::RealHBBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    using Limits = std::numeric_limits<C>;
    C low = Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
    C high = Limits::has_infinity ? Limits::infinity() : Limits::max();
    clamp_scalar<C>(ctx, in, out, lo ? math::scalar_as<C>(*lo) : low,
                    hi ? math::scalar_as<C>(*hi) : high, op);
  });
}

// clamp.Tensor_out(self, Tensor? min=None, Tensor? max=None, *, out):
// broadcast over the present tensors; a NaN anywhere gives NaN.
void clamp_tensor_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::clamp.Tensor_out";
  const Tensor& in = args[0]->to_tensor();
  const Tensor* lo = args[1]->to_optional_tensor();
  const Tensor* hi = args[2]->to_optional_tensor();
  Tensor& out = args[3]->to_tensor();
  PTERUN_CHECK(lo || hi, ErrorCode::InvalidArgument, op, ": min and max are both None");
  check_dtype(in, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::RealHBBF16, op, "out");
  DType common = in.dtype();
  if (lo) {
    check_dtype(*lo, Family::RealHBBF16, op, "min");
    common = kernels::promote_types(common, lo->dtype(), op);
  }
  if (hi) {
    check_dtype(*hi, Family::RealHBBF16, op, "max");
    common = kernels::promote_types(common, hi->dtype(), op);
  }
  kernels::check_can_cast(common, out.dtype(), op);
  if (lo && hi) {
    kernels::resize_to_broadcast(out, {&in, lo, hi}, op);
  } else {
    kernels::resize_to_broadcast(out, {&in, lo ? lo : hi}, op);
  }
  kernels::visit(common, Family::RealHBBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    if (lo && hi) {
      kernels::map_elements<C, C, 3>(
          ctx, out, {&in, lo, hi},
          [](C x, C l, C h) { return math::min_nan(math::max_nan(x, l), h); }, op);
    } else if (lo) {
      kernels::map_elements<C, C, 2>(
          ctx, out, {&in, lo}, [](C x, C l) { return math::max_nan(x, l); }, op);
    } else {
      kernels::map_elements<C, C, 2>(
          ctx, out, {&in, hi}, [](C x, C h) { return math::min_nan(x, h); }, op);
    }
  });
}

// <op>.out(self, *, out) for a floating activation without parameters.
template <OpName kName, auto kFn>
void float_activation_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  prepare_same_type(in, out, Family::FloatHBF16, op);
  visit_float(in.dtype(), [&]<typename C>() {
    kernels::map_elements<C, C, 1>(
        ctx, out, {&in}, [](C x) { return C(kFn(x)); }, op);
  });
}

// gelu.out(self, *, str approximate='none', out): the erf form, or the
// tanh approximation.
void gelu_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::gelu.out";
  const Tensor& in = args[0]->to_tensor();
  std::string_view approximate = args[1]->to_string();
  Tensor& out = args[2]->to_tensor();
  PTERUN_CHECK(approximate == "none" || approximate == "tanh", ErrorCode::InvalidArgument, op,
               ": approximate must be 'none' or 'tanh', got '", printable(approximate), "'");
  prepare_same_type(in, out, Family::FloatHBF16, op);
  visit_float(in.dtype(), [&]<typename C>() {
    if (approximate == "tanh") {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&in},
          [](C x) {
            constexpr C kBeta = C(0.7978845608028654);  // sqrt(2 / pi)
            constexpr C kKappa = C(0.044715);
            if (std::isinf(x)) return x > 0 ? x : C(0);
            return C(0.5) * x * (C(1) + std::tanh(kBeta * (x + kKappa * x * x * x)));
          },
          op);
    } else {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&in},
          [](C x) {
            if constexpr (std::is_same_v<C, float>) {
              return vec_math::gelu_erf(x);
            } else {
              constexpr C kSqrtHalf = C(0.7071067811865476);
              if (std::isinf(x)) return x > 0 ? x : C(0);
              return C(0.5) * x * (C(1) + std::erf(x * kSqrtHalf));
            }
          },
          op);
    }
  });
}

// leaky_relu.out(self, Scalar negative_slope=0.01, *, out).
void leaky_relu_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::leaky_relu.out";
  const Tensor& in = args[0]->to_tensor();
  Scalar slope = args[1]->to_scalar();
  Tensor& out = args[2]->to_tensor();
  prepare_same_type(in, out, Family::FloatHBF16, op);
  kernels::check_scalar_fits(slope, in.dtype(), op, "negative_slope");
  visit_float(in.dtype(), [&]<typename C>() {
    C s = math::scalar_as<C>(slope);
    kernels::map_elements<C, C, 1>(
        ctx, out, {&in}, [s](C x) { return x >= C(0) ? x : x * s; }, op);
  });
}

// elu.out(self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1, *,
// out): scale * x for x > 0, else alpha * scale * (exp(x * input_scale) - 1).
void elu_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::elu.out";
  const Tensor& in = args[0]->to_tensor();
  double alpha = args[1]->to_scalar().to_double();
  double scale = args[2]->to_scalar().to_double();
  double input_scale = args[3]->to_scalar().to_double();
  Tensor& out = args[4]->to_tensor();
  prepare_same_type(in, out, Family::FloatHBF16, op);
  visit_float(in.dtype(), [&]<typename C>() {
    C pos = C(scale), neg = C(alpha * scale), in_scale = C(input_scale);
    kernels::map_elements<C, C, 1>(
        ctx, out, {&in},
        [pos, neg, in_scale](C x) { return x > C(0) ? x * pos : std::expm1(x * in_scale) * neg; },
        op);
  });
}

// softplus.out(self, Scalar beta=1, Scalar threshold=20, *, out):
// log(1 + exp(beta * x)) / beta, or x where beta * x > threshold.
void softplus_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::softplus.out";
  const Tensor& in = args[0]->to_tensor();
  double beta = args[1]->to_scalar().to_double();
  double threshold = args[2]->to_scalar().to_double();
  Tensor& out = args[3]->to_tensor();
  prepare_same_type(in, out, Family::FloatHBF16, op);
  visit_float(in.dtype(), [&]<typename C>() {
    C b = C(beta), t = C(threshold);
    kernels::map_elements<C, C, 1>(
        ctx, out, {&in}, [b, t](C x) { return x * b > t ? x : std::log1p(std::exp(x * b)) / b; },
        op);
  });
}

// glu.out(self, int dim=-1, *, out): a * sigmoid(b) where a and b are the
// first and second halves of self along dim. Walks out in its memory order
// with self's strides, so any dim order works without copies.
void glu_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::glu.out";
  const Tensor& in = args[0]->to_tensor();
  int64_t dim_arg = args[1]->to_int();
  Tensor& out = args[2]->to_tensor();
  check_dtype(in, Family::FloatHBF16, op, "self");
  check_dtype(out, Family::FloatHBF16, op, "out");
  PTERUN_CHECK(in.dim() >= 1, ErrorCode::InvalidArgument, op, ": self must have at least 1 dim");
  const auto dim = static_cast<size_t>(kernels::wrap_dim(dim_arg, in.dim(), op));
  const int64_t half = in.size(dim) / 2;
  PTERUN_CHECK(in.size(dim) % 2 == 0, ErrorCode::InvalidArgument, op, ": dim ", dim, " of self ",
               describe(in), " has odd size");
  kernels::Shape shape;
  for (size_t d = 0; d < in.dim(); ++d) shape.push_back(d == dim ? half : in.size(d));
  kernels::resize_output(out, shape.span(), op);
  const int64_t numel = out.numel();
  if (numel == 0) return;

  const size_t rank = out.dim();
  const size_t inner_dim = out.dim_order()[rank - 1];
  const int64_t inner = out.size(inner_dim);
  const int64_t in_inner_stride = in.stride(inner_dim);
  const int64_t out_inner_stride = out.stride(inner_dim);
  const int64_t second = half * in.stride(dim);
  kernels::visit(in.dtype(), Family::FloatHBF16, op, [&]<typename TI>() {
    kernels::visit(out.dtype(), Family::FloatHBF16, op, [&]<typename TO>() {
      using C = std::conditional_t<std::is_same_v<TI, double>, double, float>;
      const TI* src = in.data_as<const TI>();
      TO* dst = out.data_as<TO>();
      kernels::parallel_for(ctx, numel / inner, inner, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          // Offsets of this row from its index over the outer dims.
          int64_t in_off = 0, out_off = 0, rem = row;
          for (size_t k = rank - 1; k-- > 0;) {
            size_t d = out.dim_order()[k];
            int64_t i = rem % out.size(d);
            rem /= out.size(d);
            in_off += i * in.stride(d);
            out_off += i * out.stride(d);
          }
          for (int64_t j = 0; j < inner; ++j) {
            const TI* p = src + in_off + j * in_inner_stride;
            C a = kernels::convert<C>(p[0]);
            C b = kernels::convert<C>(p[second]);
            dst[out_off + j * out_inner_stride] = kernels::convert<TO>(a / (C(1) + std::exp(-b)));
          }
        }
      });
    });
  });
}

constexpr auto kSilu = [](auto x) {
  if constexpr (std::is_same_v<decltype(x), float>) {
    return x * vec_math::sigmoid(x);
  } else {
    return x / (decltype(x)(1) + std::exp(-x));
  }
};
constexpr auto kHardsigmoid = [](auto x) {
  using C = decltype(x);
  C v = x + C(3);
  v = v < C(0) ? C(0) : v;
  return (v > C(6) ? C(6) : v) / C(6);
};
constexpr auto kHardswish = [](auto x) { return x * kHardsigmoid(x); };

}  // namespace

void register_activation_ops(kernels::KernelRegistry& r) {
  r.add("aten::relu.out", Device::CPU, &relu_out);
  r.add("aten::hardtanh.out", Device::CPU, &hardtanh_out);
  r.add("aten::clamp.out", Device::CPU, &clamp_out);
  r.add("aten::clamp.Tensor_out", Device::CPU, &clamp_tensor_out);
  r.add("aten::gelu.out", Device::CPU, &gelu_out);
  r.add("aten::leaky_relu.out", Device::CPU, &leaky_relu_out);
  r.add("aten::elu.out", Device::CPU, &elu_out);
  r.add("aten::softplus.out", Device::CPU, &softplus_out);
  r.add("aten::silu.out", Device::CPU, &float_activation_out<"aten::silu.out", kSilu>);
  r.add("aten::hardsigmoid.out", Device::CPU,
        &float_activation_out<"aten::hardsigmoid.out", kHardsigmoid>);
  r.add("aten::hardswish.out", Device::CPU,
        &float_activation_out<"aten::hardswish.out", kHardswish>);
  r.add("aten::glu.out", Device::CPU, &glu_out);
}

}  // namespace pterun::cpu
