// Elementwise unary math on CUDA, mirroring backend/cpu/ops/unary.cpp:
// floating ops (exp, sin, rsqrt ...) read any real or bool dtype and write a
// floating one, computing in double for double input and in float
// otherwise; the others (neg, abs, floor, sign ...) keep the dtype. The
// front-ends are ops/elementwise_unary.cpp.

#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/device_math.cuh"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/elementwise_compute.h"
#include "pterun/backend/cuda/ops/elementwise_functors.cuh"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/ops/elementwise.h"

namespace pterun::kernels::cuda_ops {
namespace {

namespace dmath = cuda::dmath;
using cuda::DeviceComputeOf;
using Fn = ops::UnaryFn;
using cuda::functors::FloatFn;
using cuda::functors::SameFn;

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
