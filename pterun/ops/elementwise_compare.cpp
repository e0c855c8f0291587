// Front-ends of the comparisons (eq ne lt le gt ge, tensor and scalar),
// the logical ops and where (elementwise.h). Comparisons run in the
// promoted type and write bool, which the backends convert to any real
// out.

#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/elementwise.h"
#include "pterun/ops/elementwise_checks.h"

namespace pterun::ops {
namespace {

using kernels::Family;

constexpr const char* compare_name(CompareFn fn, bool scalar) {
  switch (fn) {
    case CompareFn::Eq: return scalar ? "aten::eq.Scalar_out" : "aten::eq.Tensor_out";
    case CompareFn::Ne: return scalar ? "aten::ne.Scalar_out" : "aten::ne.Tensor_out";
    case CompareFn::Lt: return scalar ? "aten::lt.Scalar_out" : "aten::lt.Tensor_out";
    case CompareFn::Le: return scalar ? "aten::le.Scalar_out" : "aten::le.Tensor_out";
    case CompareFn::Gt: return scalar ? "aten::gt.Scalar_out" : "aten::gt.Tensor_out";
    case CompareFn::Ge: return scalar ? "aten::ge.Scalar_out" : "aten::ge.Tensor_out";
  }
  return "?";
}

constexpr const char* logical_name(LogicalFn fn) {
  switch (fn) {
    case LogicalFn::Not: return "aten::logical_not.out";
    case LogicalFn::And: return "aten::logical_and.out";
    case LogicalFn::Or: return "aten::logical_or.out";
    case LogicalFn::Xor: return "aten::logical_xor.out";
  }
  return "?";
}

}  // namespace

template <CompareFn kFn>
void compare_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  constexpr const char* op = compare_name(kFn, false);
  check_dtype(self, Family::RealHBBF16, op, "self");
  check_dtype(other, Family::RealHBBF16, op, "other");
  check_dtype(out, Family::RealHBBF16, op, "out");
  const DType common = kernels::promote_types(self.dtype(), other.dtype(), op);
  kernels::resize_to_broadcast(out, {&self, &other}, op);
  backend(ctx).elementwise->compare(ctx, {kFn, common, self, &other, Scalar(), out, op});
}

// The scalar is converted to the compute type first, so an integer out of
// an integer tensor's range wraps (uint8 < -2 compares against 254), as in
// ExecuTorch and PyTorch.
template <CompareFn kFn>
void compare_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Tensor& out) {
  constexpr const char* op = compare_name(kFn, true);
  check_dtype(self, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::RealHBBF16, op, "out");
  const DType common = kernels::promote_with_scalar(self.dtype(), other);
  kernels::resize_output(out, self.sizes(), op);
  backend(ctx).elementwise->compare(ctx, {kFn, common, self, nullptr, other, out, op});
}

// Truthiness: nonzero -> false.
void logical_not_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  constexpr const char* op = logical_name(LogicalFn::Not);
  check_dtype(self, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::RealHBBF16, op, "out");
  kernels::resize_output(out, self.sizes(), op);
  backend(ctx).elementwise->logical(ctx, {LogicalFn::Not, self, nullptr, out, op});
}

template <LogicalFn kFn>
void logical_binary_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  constexpr const char* op = logical_name(kFn);
  check_dtype(self, Family::RealHBBF16, op, "self");
  check_dtype(other, Family::RealHBBF16, op, "other");
  check_dtype(out, Family::RealHBBF16, op, "out");
  kernels::resize_to_broadcast(out, {&self, &other}, op);
  backend(ctx).elementwise->logical(ctx, {kFn, self, &other, out, op});
}

// 3-way broadcast; out has exactly the promoted type of self and other.
void where_out(KernelContext& ctx, const Tensor& condition, const Tensor& self, const Tensor& other,
               Tensor& out) {
  const char* op = "aten::where.self_out";
  PTERUN_CHECK(condition.dtype() == DType::Bool || condition.dtype() == DType::UInt8,
               ErrorCode::InvalidArgument, op, ": condition must be bool or uint8, got ",
               dtype_name(condition.dtype()));
  check_dtype(self, Family::RealHBBF16, op, "self");
  check_dtype(other, Family::RealHBBF16, op, "other");
  const DType common = kernels::promote_types(self.dtype(), other.dtype(), op);
  PTERUN_CHECK(out.dtype() == common, ErrorCode::InvalidArgument, op, ": out must be ",
               dtype_name(common), ", got ", dtype_name(out.dtype()));
  kernels::resize_to_broadcast(out, {&condition, &self, &other}, op);
  backend(ctx).elementwise->where(ctx, {condition, self, other, common, out, op});
}

template void compare_tensor_out<CompareFn::Eq>(KernelContext&, const Tensor&, const Tensor&,
                                                Tensor&);
template void compare_tensor_out<CompareFn::Ne>(KernelContext&, const Tensor&, const Tensor&,
                                                Tensor&);
template void compare_tensor_out<CompareFn::Lt>(KernelContext&, const Tensor&, const Tensor&,
                                                Tensor&);
template void compare_tensor_out<CompareFn::Le>(KernelContext&, const Tensor&, const Tensor&,
                                                Tensor&);
template void compare_tensor_out<CompareFn::Gt>(KernelContext&, const Tensor&, const Tensor&,
                                                Tensor&);
template void compare_tensor_out<CompareFn::Ge>(KernelContext&, const Tensor&, const Tensor&,
                                                Tensor&);
template void compare_scalar_out<CompareFn::Eq>(KernelContext&, const Tensor&, Scalar, Tensor&);
template void compare_scalar_out<CompareFn::Ne>(KernelContext&, const Tensor&, Scalar, Tensor&);
template void compare_scalar_out<CompareFn::Lt>(KernelContext&, const Tensor&, Scalar, Tensor&);
template void compare_scalar_out<CompareFn::Le>(KernelContext&, const Tensor&, Scalar, Tensor&);
template void compare_scalar_out<CompareFn::Gt>(KernelContext&, const Tensor&, Scalar, Tensor&);
template void compare_scalar_out<CompareFn::Ge>(KernelContext&, const Tensor&, Scalar, Tensor&);
template void logical_binary_out<LogicalFn::And>(KernelContext&, const Tensor&, const Tensor&,
                                                 Tensor&);
template void logical_binary_out<LogicalFn::Or>(KernelContext&, const Tensor&, const Tensor&,
                                                Tensor&);
template void logical_binary_out<LogicalFn::Xor>(KernelContext&, const Tensor&, const Tensor&,
                                                 Tensor&);

}  // namespace pterun::ops
