// Elementwise unary math on CUDA, mirroring backend/cpu/ops/unary.cpp:
// floating ops (exp, sin, rsqrt ...) read any real or bool dtype and write a
// floating one, computing in double for double input and in float
// otherwise; the others (neg, abs, floor, sign ...) keep the dtype. The
// front-ends are ops/elementwise_unary.cpp.

#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/device_math.cuh"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/elementwise_compute.h"
#include "pterun/ops/elementwise.h"

namespace pterun::kernels::cuda_ops {
namespace {

namespace dmath = cuda::dmath;
using cuda::DeviceComputeOf;
using Fn = ops::UnaryFn;

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

// A floating function: the fast path applies when out has in's floating
// dtype.
template <Fn kFn>
void float_unary(KernelContext& ctx, const ops::UnaryArgs& a) {
  const Tensor& in = a.in;
  switch (in.dtype()) {
    case DType::Float64:
      return cuda::elementwise_same<double, 1>(ctx, a.out, {&in}, FloatFn<double, kFn>{}, a.op);
    case DType::Float32:
      return cuda::elementwise_same<float, 1>(ctx, a.out, {&in}, FloatFn<float, kFn>{}, a.op);
    case DType::Float16:
      return cuda::elementwise_same<__half, 1>(ctx, a.out, {&in}, FloatFn<float, kFn>{}, a.op);
    case DType::BFloat16:
      return cuda::elementwise_same<__nv_bfloat16, 1>(ctx, a.out, {&in}, FloatFn<float, kFn>{},
                                                      a.op);
    default:
      return cuda::elementwise_strided<float, 1>(ctx, a.out, {&in}, FloatFn<float, kFn>{}, a.op);
  }
}

template <typename C, Fn kFn>
struct SameFn {
  __device__ C operator()(C x) const {
    constexpr bool kFloat = std::is_floating_point_v<C>;
    if constexpr (kFn == Fn::Neg) {
      return math::neg(x);
    } else if constexpr (kFn == Fn::Abs) {
      if constexpr (kFloat)
        return dmath::fabs(x);
      else if constexpr (std::is_signed_v<C>)
        return x < 0 ? math::neg(x) : x;
      else
        return x;
    } else if constexpr (kFn == Fn::Sign) {
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
    } else if constexpr (kFn == Fn::Floor) {
      return dmath::floor(x);
    } else if constexpr (kFn == Fn::Ceil) {
      return dmath::ceil(x);
    } else if constexpr (kFn == Fn::Trunc) {
      return dmath::trunc(x);
    } else {
      return dmath::rint(x);  // half to even, as nearbyint on the CPU
    }
  }
};

// Out of the input's dtype.
template <Fn kFn>
void same_type_unary(KernelContext& ctx, const ops::UnaryArgs& a) {
  cuda::visit_real_dtype(a.compute, a.op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (!std::is_same_v<C, bool> || kFn == Fn::Sign) {
      cuda::elementwise_same<S, 1>(ctx, a.out, {&a.in}, SameFn<C, kFn>{}, a.op);
    }
  });
}

template <typename C, bool kInf>
struct FloatClass {
  __device__ bool operator()(C x) const { return kInf ? dmath::is_inf(x) : dmath::is_nan(x); }
};

// isnan / isinf: bool out.
template <bool kInf>
void float_class(KernelContext& ctx, const ops::UnaryArgs& a) {
  const Tensor& in = a.in;
  if (!is_floating(in.dtype())) {  // never NaN or infinite
    cuda::elementwise_strided<float, 1>(ctx, a.out, {&in}, FloatClass<float, kInf>{}, a.op);
    return;
  }
  cuda::visit_float_dtype(in.dtype(), a.op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    cuda::elementwise_same<S, 1>(ctx, a.out, {&in}, FloatClass<C, kInf>{}, a.op);
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

// Integers and bool (logical not).
void bitwise_not(KernelContext& ctx, const ops::UnaryArgs& a) {
  cuda::visit_real_dtype(a.compute, a.op, [&]<typename S>() {
    if constexpr (std::is_integral_v<S>) {
      cuda::elementwise_same<S, 1>(ctx, a.out, {&a.in}, BitNot<S>{}, a.op);
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

// log(x / (1 - x)), x first clamped to [eps, 1 - eps] for LogitEps.
void logit(KernelContext& ctx, const ops::UnaryArgs& a) {
  const Tensor& in = a.in;
  Tensor& out = a.out;
  const bool clamp = a.fn == Fn::LogitEps;
  const double eps = a.eps;
  if (a.compute == DType::Float64) {
    cuda::elementwise_strided<double, 1>(ctx, out, {&in}, Logit<double>{eps, 1 - eps, clamp}, a.op);
  } else if (in.dtype() == out.dtype() && is_floating(in.dtype())) {
    Logit<float> f{float(eps), float(1 - eps), clamp};
    cuda::visit_float_dtype(in.dtype(), a.op, [&]<typename S>() {
      if constexpr (!std::is_same_v<S, double>)
        cuda::elementwise_same<S, 1>(ctx, out, {&in}, f, a.op);
    });
  } else {
    cuda::elementwise_strided<float, 1>(ctx, out, {&in},
                                        Logit<float>{float(eps), float(1 - eps), clamp}, a.op);
  }
}

}  // namespace

void elementwise::unary(KernelContext& ctx, const ops::UnaryArgs& a) {
  switch (a.fn) {
    case Fn::Exp: return float_unary<Fn::Exp>(ctx, a);
    case Fn::Expm1: return float_unary<Fn::Expm1>(ctx, a);
    case Fn::Log: return float_unary<Fn::Log>(ctx, a);
    case Fn::Log1p: return float_unary<Fn::Log1p>(ctx, a);
    case Fn::Log2: return float_unary<Fn::Log2>(ctx, a);
    case Fn::Log10: return float_unary<Fn::Log10>(ctx, a);
    case Fn::Sqrt: return float_unary<Fn::Sqrt>(ctx, a);
    case Fn::Rsqrt: return float_unary<Fn::Rsqrt>(ctx, a);
    case Fn::Reciprocal: return float_unary<Fn::Reciprocal>(ctx, a);
    case Fn::Sin: return float_unary<Fn::Sin>(ctx, a);
    case Fn::Cos: return float_unary<Fn::Cos>(ctx, a);
    case Fn::Tan: return float_unary<Fn::Tan>(ctx, a);
    case Fn::Asin: return float_unary<Fn::Asin>(ctx, a);
    case Fn::Acos: return float_unary<Fn::Acos>(ctx, a);
    case Fn::Atan: return float_unary<Fn::Atan>(ctx, a);
    case Fn::Sinh: return float_unary<Fn::Sinh>(ctx, a);
    case Fn::Cosh: return float_unary<Fn::Cosh>(ctx, a);
    case Fn::Tanh: return float_unary<Fn::Tanh>(ctx, a);
    case Fn::Asinh: return float_unary<Fn::Asinh>(ctx, a);
    case Fn::Acosh: return float_unary<Fn::Acosh>(ctx, a);
    case Fn::Atanh: return float_unary<Fn::Atanh>(ctx, a);
    case Fn::Erf: return float_unary<Fn::Erf>(ctx, a);
    case Fn::Sigmoid: return float_unary<Fn::Sigmoid>(ctx, a);
    case Fn::Logit:
    case Fn::LogitEps: return logit(ctx, a);
    case Fn::Neg: return same_type_unary<Fn::Neg>(ctx, a);
    case Fn::Abs: return same_type_unary<Fn::Abs>(ctx, a);
    case Fn::Floor: return same_type_unary<Fn::Floor>(ctx, a);
    case Fn::Ceil: return same_type_unary<Fn::Ceil>(ctx, a);
    case Fn::Round: return same_type_unary<Fn::Round>(ctx, a);
    case Fn::Trunc: return same_type_unary<Fn::Trunc>(ctx, a);
    case Fn::Sign: return same_type_unary<Fn::Sign>(ctx, a);
    case Fn::BitwiseNot: return bitwise_not(ctx, a);
    case Fn::IsNan: return float_class<false>(ctx, a);
    case Fn::IsInf: return float_class<true>(ctx, a);
  }
}

}  // namespace pterun::kernels::cuda_ops
