// Elementwise unary math on CUDA, mirroring backend/cpu/ops/unary.cpp:
// floating ops (exp, sin, rsqrt ...) read any real or bool dtype and write a
// floating one, computing in double for double input and in float
// otherwise; the others (neg, abs, floor, sign ...) keep the dtype.

#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/device_math.cuh"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/elementwise_checks.h"
#include "pterun/kernels/common/elementwise_util.h"

namespace pterun::kernels::cuda_ops {
namespace {

namespace dmath = cuda::dmath;
using cuda::DeviceComputeOf;

enum class Fn {
  Exp,
  Expm1,
  Log,
  Log1p,
  Log2,
  Log10,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Tanh,
  Asinh,
  Acosh,
  Atanh,
  Erf,
  Sigmoid
};

template <typename C, Fn kFn>
struct FloatFn {
  __device__ C operator()(C x) const {
    if constexpr (kFn == Fn::Exp)
      return dmath::exp(x);
    else if constexpr (kFn == Fn::Expm1)
      return dmath::expm1(x);
    else if constexpr (kFn == Fn::Log)
      return dmath::log(x);
    else if constexpr (kFn == Fn::Log1p)
      return dmath::log1p(x);
    else if constexpr (kFn == Fn::Log2)
      return dmath::log2(x);
    else if constexpr (kFn == Fn::Log10)
      return dmath::log10(x);
    else if constexpr (kFn == Fn::Sqrt)
      return dmath::sqrt(x);
    else if constexpr (kFn == Fn::Rsqrt)
      return C(1) / dmath::sqrt(x);
    else if constexpr (kFn == Fn::Reciprocal)
      return C(1) / x;
    else if constexpr (kFn == Fn::Sin)
      return dmath::sin(x);
    else if constexpr (kFn == Fn::Cos)
      return dmath::cos(x);
    else if constexpr (kFn == Fn::Tan)
      return dmath::tan(x);
    else if constexpr (kFn == Fn::Asin)
      return dmath::asin(x);
    else if constexpr (kFn == Fn::Acos)
      return dmath::acos(x);
    else if constexpr (kFn == Fn::Atan)
      return dmath::atan(x);
    else if constexpr (kFn == Fn::Sinh)
      return dmath::sinh(x);
    else if constexpr (kFn == Fn::Cosh)
      return dmath::cosh(x);
    else if constexpr (kFn == Fn::Tanh)
      return dmath::tanh(x);
    else if constexpr (kFn == Fn::Asinh)
      return dmath::asinh(x);
    else if constexpr (kFn == Fn::Acosh)
      return dmath::acosh(x);
    else if constexpr (kFn == Fn::Atanh)
      return dmath::atanh(x);
    else if constexpr (kFn == Fn::Erf)
      return dmath::erf(x);
    else
      return C(1) / (C(1) + dmath::exp(-x));
  }
};

// <op>.out(self, *, out) for a floating function.
template <OpName kName, Fn kFn>
void float_unary_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  check_dtype(in, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::FloatHBF16, op, "out");
  resize_output(out, in.sizes(), op);
  switch (in.dtype()) {
    // Floating input: the fast path applies when out has the same dtype.
    case DType::Float64:
      return cuda::elementwise_same<double, 1>(ctx, out, {&in}, FloatFn<double, kFn>{}, op);
    case DType::Float32:
      return cuda::elementwise_same<float, 1>(ctx, out, {&in}, FloatFn<float, kFn>{}, op);
    case DType::Float16:
      return cuda::elementwise_same<__half, 1>(ctx, out, {&in}, FloatFn<float, kFn>{}, op);
    case DType::BFloat16:
      return cuda::elementwise_same<__nv_bfloat16, 1>(ctx, out, {&in}, FloatFn<float, kFn>{}, op);
    default: return cuda::elementwise_strided<float, 1>(ctx, out, {&in}, FloatFn<float, kFn>{}, op);
  }
}

enum class Same { Neg, Abs, Floor, Ceil, Trunc, Round, Sign };

template <typename C, Same kFn>
struct SameFn {
  __device__ C operator()(C x) const {
    constexpr bool kFloat = std::is_floating_point_v<C>;
    if constexpr (kFn == Same::Neg) {
      return math::neg(x);
    } else if constexpr (kFn == Same::Abs) {
      if constexpr (kFloat)
        return dmath::fabs(x);
      else if constexpr (std::is_signed_v<C>)
        return x < 0 ? math::neg(x) : x;
      else
        return x;
    } else if constexpr (kFn == Same::Sign) {
      if constexpr (std::is_same_v<C, bool>)
        return x;
      else if constexpr (kFloat)
        return dmath::is_nan(x) ? x : C((x > 0) - (x < 0));
      else if constexpr (std::is_unsigned_v<C>)
        return C(x != 0);
      else
        return C((x > 0) - (x < 0));
    } else if constexpr (!kFloat) {
      return x;  // integers pass through the rounding ops
    } else if constexpr (kFn == Same::Floor) {
      return dmath::floor(x);
    } else if constexpr (kFn == Same::Ceil) {
      return dmath::ceil(x);
    } else if constexpr (kFn == Same::Trunc) {
      return dmath::trunc(x);
    } else {
      return dmath::rint(x);  // half to even, as nearbyint on the CPU
    }
  }
};

// <op>.out(self, *, out) with out of the input's dtype.
template <OpName kName, Family kFamily, Same kFn>
void same_type_unary_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  check_dtype(in, kFamily, op, "self");
  check_out_same_dtype(in, out, op);
  resize_output(out, in.sizes(), op);
  cuda::visit_real_dtype(in.dtype(), op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (!std::is_same_v<C, bool> || kFn == Same::Sign) {
      cuda::elementwise_same<S, 1>(ctx, out, {&in}, SameFn<C, kFn>{}, op);
    }
  });
}

template <typename C, bool kInf>
struct FloatClass {
  __device__ bool operator()(C x) const { return kInf ? dmath::is_inf(x) : dmath::is_nan(x); }
};

// isnan.out / isinf.out(self, *, out): bool out.
template <OpName kName, bool kInf>
void float_class_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  check_dtype(in, Family::RealHBBF16, op, "self");
  PTERUN_CHECK(out.dtype() == DType::Bool, ErrorCode::InvalidArgument, op,
               ": out must be bool, got ", dtype_name(out.dtype()));
  resize_output(out, in.sizes(), op);
  if (!is_floating(in.dtype())) {  // never NaN or infinite
    cuda::elementwise_strided<float, 1>(ctx, out, {&in}, FloatClass<float, kInf>{}, op);
    return;
  }
  cuda::visit_float_dtype(in.dtype(), op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    cuda::elementwise_same<S, 1>(ctx, out, {&in}, FloatClass<C, kInf>{}, op);
  });
}

template <typename C>
struct BitNot {
  __device__ C operator()(C x) const {
    if constexpr (std::is_same_v<C, bool>) {
      return !x;
    } else {
      return C(~x);
    }
  }
};

// bitwise_not.out(self, *, out): integers and bool (logical not).
void bitwise_not_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::bitwise_not.out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  PTERUN_CHECK(is_integral(in.dtype(), true), ErrorCode::InvalidArgument, op,
               ": needs an integer or bool tensor, got ", dtype_name(in.dtype()));
  check_out_same_dtype(in, out, op);
  resize_output(out, in.sizes(), op);
  cuda::visit_real_dtype(in.dtype(), op, [&]<typename S>() {
    if constexpr (std::is_integral_v<S>) {
      cuda::elementwise_same<S, 1>(ctx, out, {&in}, BitNot<S>{}, op);
    }
  });
}

template <typename C>
struct Logit {
  C lo, hi;
  bool clamp;
  __device__ C operator()(C x) const {
    if (clamp) x = x < lo ? lo : (x > hi ? hi : x);
    return dmath::log(x / (C(1) - x));
  }
};

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
  resize_output(out, in.sizes(), op);
  if (in.dtype() == DType::Float64 || out.dtype() == DType::Float64) {
    cuda::elementwise_strided<double, 1>(ctx, out, {&in}, Logit<double>{eps, 1 - eps, clamp}, op);
  } else if (in.dtype() == out.dtype() && is_floating(in.dtype())) {
    Logit<float> f{float(eps), float(1 - eps), clamp};
    cuda::visit_float_dtype(in.dtype(), op, [&]<typename S>() {
      if constexpr (!std::is_same_v<S, double>)
        cuda::elementwise_same<S, 1>(ctx, out, {&in}, f, op);
    });
  } else {
    cuda::elementwise_strided<float, 1>(ctx, out, {&in},
                                        Logit<float>{float(eps), float(1 - eps), clamp}, op);
  }
}

}  // namespace

void register_unary_ops(KernelRegistry& r) {
  constexpr Family kRealH = Family::RealHBF16;
  r.add("aten::exp.out", Device::CUDA, &float_unary_out<"aten::exp.out", Fn::Exp>);
  r.add("aten::expm1.out", Device::CUDA, &float_unary_out<"aten::expm1.out", Fn::Expm1>);
  r.add("aten::log.out", Device::CUDA, &float_unary_out<"aten::log.out", Fn::Log>);
  r.add("aten::log1p.out", Device::CUDA, &float_unary_out<"aten::log1p.out", Fn::Log1p>);
  r.add("aten::log2.out", Device::CUDA, &float_unary_out<"aten::log2.out", Fn::Log2>);
  r.add("aten::log10.out", Device::CUDA, &float_unary_out<"aten::log10.out", Fn::Log10>);
  r.add("aten::sqrt.out", Device::CUDA, &float_unary_out<"aten::sqrt.out", Fn::Sqrt>);
  r.add("aten::rsqrt.out", Device::CUDA, &float_unary_out<"aten::rsqrt.out", Fn::Rsqrt>);
  r.add("aten::reciprocal.out", Device::CUDA,
        &float_unary_out<"aten::reciprocal.out", Fn::Reciprocal>);
  r.add("aten::sin.out", Device::CUDA, &float_unary_out<"aten::sin.out", Fn::Sin>);
  r.add("aten::cos.out", Device::CUDA, &float_unary_out<"aten::cos.out", Fn::Cos>);
  r.add("aten::tan.out", Device::CUDA, &float_unary_out<"aten::tan.out", Fn::Tan>);
  r.add("aten::asin.out", Device::CUDA, &float_unary_out<"aten::asin.out", Fn::Asin>);
  r.add("aten::acos.out", Device::CUDA, &float_unary_out<"aten::acos.out", Fn::Acos>);
  r.add("aten::atan.out", Device::CUDA, &float_unary_out<"aten::atan.out", Fn::Atan>);
  r.add("aten::sinh.out", Device::CUDA, &float_unary_out<"aten::sinh.out", Fn::Sinh>);
  r.add("aten::cosh.out", Device::CUDA, &float_unary_out<"aten::cosh.out", Fn::Cosh>);
  r.add("aten::tanh.out", Device::CUDA, &float_unary_out<"aten::tanh.out", Fn::Tanh>);
  r.add("aten::asinh.out", Device::CUDA, &float_unary_out<"aten::asinh.out", Fn::Asinh>);
  r.add("aten::acosh.out", Device::CUDA, &float_unary_out<"aten::acosh.out", Fn::Acosh>);
  r.add("aten::atanh.out", Device::CUDA, &float_unary_out<"aten::atanh.out", Fn::Atanh>);
  r.add("aten::erf.out", Device::CUDA, &float_unary_out<"aten::erf.out", Fn::Erf>);
  r.add("aten::sigmoid.out", Device::CUDA, &float_unary_out<"aten::sigmoid.out", Fn::Sigmoid>);

  r.add("aten::neg.out", Device::CUDA, &same_type_unary_out<"aten::neg.out", kRealH, Same::Neg>);
  r.add("aten::abs.out", Device::CUDA, &same_type_unary_out<"aten::abs.out", kRealH, Same::Abs>);
  r.add("aten::floor.out", Device::CUDA,
        &same_type_unary_out<"aten::floor.out", kRealH, Same::Floor>);
  r.add("aten::ceil.out", Device::CUDA, &same_type_unary_out<"aten::ceil.out", kRealH, Same::Ceil>);
  r.add("aten::round.out", Device::CUDA,
        &same_type_unary_out<"aten::round.out", kRealH, Same::Round>);
  r.add("aten::trunc.out", Device::CUDA,
        &same_type_unary_out<"aten::trunc.out", kRealH, Same::Trunc>);
  r.add("aten::sign.out", Device::CUDA,
        &same_type_unary_out<"aten::sign.out", Family::RealHBBF16, Same::Sign>);

  r.add("aten::bitwise_not.out", Device::CUDA, &bitwise_not_out);
  r.add("aten::isnan.out", Device::CUDA, &float_class_out<"aten::isnan.out", false>);
  r.add("aten::isinf.out", Device::CUDA, &float_class_out<"aten::isinf.out", true>);
  r.add("aten::logit.out", Device::CUDA, &logit_out);
}

}  // namespace pterun::kernels::cuda_ops
