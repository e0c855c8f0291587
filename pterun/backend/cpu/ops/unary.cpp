// Elementwise unary math over the shared elementwise engine. Two shapes:
// floating ops (exp, sin, rsqrt ...) read any real or bool dtype and write a
// floating one, computing in double for double input and in float
// otherwise; the others (neg, abs, floor, sign ...) keep the dtype.

#include <cmath>
#include <type_traits>

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/backend/cpu/ops/vec_math.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/elementwise.h"
#include "pterun/kernels/common/elementwise_checks.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/kernels/common/elementwise_util.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::cpu {
namespace {

using kernels::check_dtype;
using kernels::Family;
using kernels::KernelContext;
using kernels::OpName;
namespace math = kernels::math;

// <op>.out(self, *, out) for a floating function fn, generic over float and
// double.
template <OpName kName, auto kFn>
void float_unary_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  check_dtype(in, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::FloatHBF16, op, "out");
  kernels::resize_output(out, in.sizes(), op);
  if (in.dtype() == DType::Float64) {
    kernels::map_elements<double, double, 1>(ctx, out, {&in}, kFn, op);
  } else {
    kernels::map_elements<float, float, 1>(ctx, out, {&in}, kFn, op);
  }
}

// <op>.out(self, *, out) with out of the input's dtype, for the dtypes of
// kFamily; fn is generic over the compute types.
template <OpName kName, Family kFamily, auto kFn>
void same_type_unary_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  check_dtype(in, kFamily, op, "self");
  kernels::check_out_same_dtype(in, out, op);
  kernels::resize_output(out, in.sizes(), op);
  kernels::visit(in.dtype(), kFamily, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    kernels::map_elements<C, C, 1>(
        ctx, out, {&in}, [](C x) { return C(kFn(x)); }, op);
  });
}

// isnan.out / isinf.out(self, *, out): bool out.
template <OpName kName, auto kFn>
void float_class_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  check_dtype(in, Family::RealHBBF16, op, "self");
  PTERUN_CHECK(out.dtype() == DType::Bool, ErrorCode::InvalidArgument, op,
               ": out must be bool, got ", dtype_name(out.dtype()));
  kernels::resize_output(out, in.sizes(), op);
  kernels::visit(in.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    kernels::map_elements<C, bool, 1>(
        ctx, out, {&in}, [](C x) -> bool { return kFn(x); }, op);
  });
}

// bitwise_not.out(self, *, out): integers and bool (logical not).
void bitwise_not_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::bitwise_not.out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  PTERUN_CHECK(kernels::is_integral(in.dtype(), true), ErrorCode::InvalidArgument, op,
               ": needs an integer or bool tensor, got ", dtype_name(in.dtype()));
  kernels::check_out_same_dtype(in, out, op);
  kernels::resize_output(out, in.sizes(), op);
  if (in.dtype() == DType::Bool) {  // as uint8, where the loop vectorises
    const Tensor bits = kernels::bits_view(in);
    Tensor out_bits = kernels::bits_view(out);
    kernels::map_elements<uint8_t, uint8_t, 1>(
        ctx, out_bits, {&bits}, [](uint8_t x) { return uint8_t(x ^ 1); }, op);
    return;
  }
  kernels::visit(in.dtype(), Family::Real, op, [&]<typename T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      kernels::map_elements<T, T, 1>(
          ctx, out, {&in}, [](T x) { return T(~x); }, op);
    }
  });
}

// logit.out(self, float? eps=None, *, out): log(x / (1 - x)), x first
// clamped to [eps, 1 - eps] when eps is given and not negative.
void logit_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::logit.out";
  const Tensor& in = args[0]->to_tensor();
  bool clamp = !args[1]->is_none() && args[1]->to_double() >= 0;
  double eps = clamp ? args[1]->to_double() : 0.0;
  Tensor& out = args[2]->to_tensor();
  check_dtype(in, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::FloatHBF16, op, "out");
  kernels::resize_output(out, in.sizes(), op);
  auto run = [&]<typename C>() {
    if (clamp) {
      C lo = C(eps), hi = C(1 - eps);
      kernels::map_elements<C, C, 1>(
          ctx, out, {&in},
          [lo, hi](C x) {
            x = x < lo ? lo : (x > hi ? hi : x);
            return std::log(x / (C(1) - x));
          },
          op);
    } else {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&in}, [](C x) { return std::log(x / (C(1) - x)); }, op);
    }
  };
  if (in.dtype() == DType::Float64 || out.dtype() == DType::Float64) {
    run.template operator()<double>();
  } else {
    run.template operator()<float>();
  }
}

// Per-element functions of the same-dtype ops; integers pass through the
// rounding ones unchanged.
template <typename C>
constexpr bool kFloat = std::is_floating_point_v<C>;

constexpr auto kNeg = [](auto x) { return math::neg(x); };
constexpr auto kAbs = [](auto x) {
  if constexpr (kFloat<decltype(x)>) {
    return std::abs(x);
  } else if constexpr (std::is_signed_v<decltype(x)>) {
    return x < 0 ? math::neg(x) : x;
  } else {
    return x;
  }
};
constexpr auto kFloor = [](auto x) {
  if constexpr (kFloat<decltype(x)>)
    return std::floor(x);
  else
    return x;
};
constexpr auto kCeil = [](auto x) {
  if constexpr (kFloat<decltype(x)>)
    return std::ceil(x);
  else
    return x;
};
constexpr auto kTrunc = [](auto x) {
  if constexpr (kFloat<decltype(x)>)
    return std::trunc(x);
  else
    return x;
};
// nearbyint rounds half to even in the default rounding mode.
constexpr auto kRound = [](auto x) {
  if constexpr (kFloat<decltype(x)>)
    return std::nearbyint(x);
  else
    return x;
};
constexpr auto kSign = [](auto x) {
  using C = decltype(x);
  if constexpr (std::is_same_v<C, bool>) {
    return x;
  } else if constexpr (kFloat<C>) {
    return math::is_nan(x) ? x : C((x > 0) - (x < 0));
  } else if constexpr (std::is_unsigned_v<C>) {
    return C(x != 0);
  } else {
    return C((x > 0) - (x < 0));
  }
};

}  // namespace

void register_unary_ops(kernels::KernelRegistry& r) {
  constexpr Family kRealH = Family::RealHBF16;
  r.add("aten::exp.out", Device::CPU,
        &float_unary_out<"aten::exp.out", [](auto x) { return std::exp(x); }>);
  r.add("aten::expm1.out", Device::CPU,
        &float_unary_out<"aten::expm1.out", [](auto x) { return std::expm1(x); }>);
  r.add("aten::log.out", Device::CPU,
        &float_unary_out<"aten::log.out", [](auto x) { return std::log(x); }>);
  r.add("aten::log1p.out", Device::CPU,
        &float_unary_out<"aten::log1p.out", [](auto x) { return std::log1p(x); }>);
  r.add("aten::log2.out", Device::CPU,
        &float_unary_out<"aten::log2.out", [](auto x) { return std::log2(x); }>);
  r.add("aten::log10.out", Device::CPU,
        &float_unary_out<"aten::log10.out", [](auto x) { return std::log10(x); }>);
  r.add("aten::sqrt.out", Device::CPU,
        &float_unary_out<"aten::sqrt.out", [](auto x) { return std::sqrt(x); }>);
  r.add("aten::rsqrt.out", Device::CPU,
        &float_unary_out<"aten::rsqrt.out", [](auto x) { return decltype(x)(1) / std::sqrt(x); }>);
  r.add("aten::reciprocal.out", Device::CPU,
        &float_unary_out<"aten::reciprocal.out", [](auto x) { return decltype(x)(1) / x; }>);
  r.add("aten::sin.out", Device::CPU,
        &float_unary_out<"aten::sin.out", [](auto x) { return std::sin(x); }>);
  r.add("aten::cos.out", Device::CPU,
        &float_unary_out<"aten::cos.out", [](auto x) { return std::cos(x); }>);
  r.add("aten::tan.out", Device::CPU,
        &float_unary_out<"aten::tan.out", [](auto x) { return std::tan(x); }>);
  r.add("aten::asin.out", Device::CPU,
        &float_unary_out<"aten::asin.out", [](auto x) { return std::asin(x); }>);
  r.add("aten::acos.out", Device::CPU,
        &float_unary_out<"aten::acos.out", [](auto x) { return std::acos(x); }>);
  r.add("aten::atan.out", Device::CPU,
        &float_unary_out<"aten::atan.out", [](auto x) { return std::atan(x); }>);
  r.add("aten::sinh.out", Device::CPU,
        &float_unary_out<"aten::sinh.out", [](auto x) { return std::sinh(x); }>);
  r.add("aten::cosh.out", Device::CPU,
        &float_unary_out<"aten::cosh.out", [](auto x) { return std::cosh(x); }>);
  r.add("aten::tanh.out", Device::CPU,
        &float_unary_out<"aten::tanh.out", [](auto x) { return std::tanh(x); }>);
  r.add("aten::asinh.out", Device::CPU,
        &float_unary_out<"aten::asinh.out", [](auto x) { return std::asinh(x); }>);
  r.add("aten::acosh.out", Device::CPU,
        &float_unary_out<"aten::acosh.out", [](auto x) { return std::acosh(x); }>);
  r.add("aten::atanh.out", Device::CPU,
        &float_unary_out<"aten::atanh.out", [](auto x) { return std::atanh(x); }>);
  r.add("aten::erf.out", Device::CPU,
        &float_unary_out<"aten::erf.out", [](auto x) { return std::erf(x); }>);
  r.add("aten::sigmoid.out", Device::CPU, &float_unary_out<"aten::sigmoid.out", [](auto x) {
          if constexpr (std::is_same_v<decltype(x), float>) {
            return vec_math::sigmoid(x);
          } else {
            return decltype(x)(1) / (decltype(x)(1) + std::exp(-x));
          }
        }>);

  r.add("aten::neg.out", Device::CPU, &same_type_unary_out<"aten::neg.out", kRealH, kNeg>);
  r.add("aten::abs.out", Device::CPU, &same_type_unary_out<"aten::abs.out", kRealH, kAbs>);
  r.add("aten::floor.out", Device::CPU, &same_type_unary_out<"aten::floor.out", kRealH, kFloor>);
  r.add("aten::ceil.out", Device::CPU, &same_type_unary_out<"aten::ceil.out", kRealH, kCeil>);
  r.add("aten::round.out", Device::CPU, &same_type_unary_out<"aten::round.out", kRealH, kRound>);
  r.add("aten::trunc.out", Device::CPU, &same_type_unary_out<"aten::trunc.out", kRealH, kTrunc>);
  r.add("aten::sign.out", Device::CPU,
        &same_type_unary_out<"aten::sign.out", Family::RealHBBF16, kSign>);

  r.add("aten::bitwise_not.out", Device::CPU, &bitwise_not_out);
  r.add("aten::isnan.out", Device::CPU,
        &float_class_out<"aten::isnan.out", [](auto x) { return math::is_nan(x); }>);
  r.add("aten::isinf.out", Device::CPU, &float_class_out<"aten::isinf.out", [](auto x) {
          if constexpr (kFloat<decltype(x)>) {
            return std::isinf(x);
          } else {
            return false;
          }
        }>);
  r.add("aten::logit.out", Device::CPU, &logit_out);
}

}  // namespace pterun::cpu
