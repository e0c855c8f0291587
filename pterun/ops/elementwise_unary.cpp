// Front-ends of the unary operators (elementwise.h). Three shapes: the
// floating functions (exp, sin, rsqrt ...) read any real or bool dtype and
// write a floating one, computing in double for double input and in float
// otherwise; the others (neg, abs, floor, sign ...) keep the dtype; isnan
// and isinf write bool.

#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/checks.h"
#include "pterun/ops/elementwise.h"
#include "pterun/ops/elementwise_checks.h"

namespace pterun::ops {
namespace {

using kernels::Family;

constexpr const char* unary_name(UnaryFn fn) {
  switch (fn) {
    case UnaryFn::Exp: return "aten::exp.out";
    case UnaryFn::Expm1: return "aten::expm1.out";
    case UnaryFn::Log: return "aten::log.out";
    case UnaryFn::Log1p: return "aten::log1p.out";
    case UnaryFn::Log2: return "aten::log2.out";
    case UnaryFn::Log10: return "aten::log10.out";
    case UnaryFn::Sqrt: return "aten::sqrt.out";
    case UnaryFn::Rsqrt: return "aten::rsqrt.out";
    case UnaryFn::Reciprocal: return "aten::reciprocal.out";
    case UnaryFn::Sin: return "aten::sin.out";
    case UnaryFn::Cos: return "aten::cos.out";
    case UnaryFn::Tan: return "aten::tan.out";
    case UnaryFn::Asin: return "aten::asin.out";
    case UnaryFn::Acos: return "aten::acos.out";
    case UnaryFn::Atan: return "aten::atan.out";
    case UnaryFn::Sinh: return "aten::sinh.out";
    case UnaryFn::Cosh: return "aten::cosh.out";
    case UnaryFn::Tanh: return "aten::tanh.out";
    case UnaryFn::Asinh: return "aten::asinh.out";
    case UnaryFn::Acosh: return "aten::acosh.out";
    case UnaryFn::Atanh: return "aten::atanh.out";
    case UnaryFn::Erf: return "aten::erf.out";
    case UnaryFn::Sigmoid: return "aten::sigmoid.out";
    case UnaryFn::Logit:
    case UnaryFn::LogitEps: return "aten::logit.out";
    case UnaryFn::Neg: return "aten::neg.out";
    case UnaryFn::Abs: return "aten::abs.out";
    case UnaryFn::Floor: return "aten::floor.out";
    case UnaryFn::Ceil: return "aten::ceil.out";
    case UnaryFn::Round: return "aten::round.out";
    case UnaryFn::Trunc: return "aten::trunc.out";
    case UnaryFn::Sign: return "aten::sign.out";
    case UnaryFn::BitwiseNot: return "aten::bitwise_not.out";
    case UnaryFn::IsNan: return "aten::isnan.out";
    case UnaryFn::IsInf: return "aten::isinf.out";
  }
  return "?";
}

/// The floating functions (UnaryFn's first block).
constexpr bool is_floating_fn(UnaryFn fn) {
  return fn < UnaryFn::Logit;
}

}  // namespace

template <UnaryFn kFn>
void unary_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  static_assert(kFn != UnaryFn::Logit && kFn != UnaryFn::LogitEps, "logit_out takes eps");
  constexpr const char* op = unary_name(kFn);
  DType compute = self.dtype();
  if constexpr (is_floating_fn(kFn)) {
    check_dtype(self, Family::RealHBBF16, op, "self");
    check_dtype(out, Family::FloatHBF16, op, "out");
    kernels::resize_output(out, self.sizes(), op);
    compute = self.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  } else if constexpr (kFn == UnaryFn::IsNan || kFn == UnaryFn::IsInf) {
    check_dtype(self, Family::RealHBBF16, op, "self");
    PTERUN_CHECK(out.dtype() == DType::Bool, ErrorCode::InvalidArgument, op,
                 ": out must be bool, got ", dtype_name(out.dtype()));
    kernels::resize_output(out, self.sizes(), op);
  } else if constexpr (kFn == UnaryFn::BitwiseNot) {
    PTERUN_CHECK(kernels::is_integral(self.dtype(), true), ErrorCode::InvalidArgument, op,
                 ": needs an integer or bool tensor, got ", dtype_name(self.dtype()));
    check_out_same_dtype(self, out, op);
    kernels::resize_output(out, self.sizes(), op);
    // uint16, uint32 and uint64 are integral but not computed.
    if (self.dtype() != DType::Bool) check_dtype_in(self.dtype(), Family::Real, op);
  } else {
    prepare_same_type(self, out, kFn == UnaryFn::Sign ? Family::RealHBBF16 : Family::RealHBF16, op);
  }
  backend(ctx).elementwise->unary(ctx, {kFn, compute, self, out, 0.0, op});
}

// Clamps x to [eps, 1 - eps] first when eps is given and not negative.
void logit_out(KernelContext& ctx, const Tensor& self, std::optional<double> eps, Tensor& out) {
  const char* op = "aten::logit.out";
  const bool clamp = eps && *eps >= 0;
  check_dtype(self, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::FloatHBF16, op, "out");
  kernels::resize_output(out, self.sizes(), op);
  const DType compute = self.dtype() == DType::Float64 || out.dtype() == DType::Float64
                            ? DType::Float64
                            : DType::Float32;
  backend(ctx).elementwise->unary(ctx, {clamp ? UnaryFn::LogitEps : UnaryFn::Logit, compute, self,
                                        out, clamp ? *eps : 0.0, op});
}

template void unary_out<UnaryFn::Exp>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Expm1>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Log>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Log1p>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Log2>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Log10>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Sqrt>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Rsqrt>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Reciprocal>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Sin>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Cos>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Tan>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Asin>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Acos>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Atan>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Sinh>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Cosh>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Tanh>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Asinh>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Acosh>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Atanh>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Erf>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Sigmoid>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Neg>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Abs>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Floor>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Ceil>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Round>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Trunc>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::Sign>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::BitwiseNot>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::IsNan>(KernelContext&, const Tensor&, Tensor&);
template void unary_out<UnaryFn::IsInf>(KernelContext&, const Tensor&, Tensor&);

}  // namespace pterun::ops
