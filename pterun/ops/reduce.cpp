// Front-ends of the reduce family (reduce.h): the dtype argument, dtype
// checks, output resizing, the walk and the accumulator, decided once for
// every backend.

#include "pterun/ops/reduce.h"

#include "pterun/core/dtype.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/checks.h"

namespace pterun::ops {
namespace {

using kernels::DimMask;
using kernels::Family;
using kernels::ReducePlan;

const ReduceBackend& reduce_backend(const KernelContext& ctx) {
  return *backend(ctx).reduce;
}

/// A `ScalarType? dtype` argument.
std::optional<DType> optional_dtype(std::optional<int64_t> n, const char* op) {
  if (!n.has_value()) return std::nullopt;
  std::optional<DType> d = dtype_from_number(static_cast<int>(*n));
  PTERUN_CHECK(d.has_value(), ErrorCode::InvalidArgument, op, ": unknown dtype number ", *n);
  return d;
}

void check_dtype_arg(std::optional<DType> dtype, const Tensor& out, const char* op) {
  PTERUN_CHECK(!dtype.has_value() || *dtype == out.dtype(), ErrorCode::InvalidArgument, op,
               ": out has dtype ", dtype_name(out.dtype()), " but dtype=", dtype_name(*dtype),
               " was requested");
}

void check_real(const Tensor& t, Family family, const char* what, const char* op) {
  PTERUN_CHECK(kernels::in_family(t.dtype(), family), ErrorCode::InvalidArgument, op, ": ", what,
               " dtype ", dtype_name(t.dtype()), " is not supported");
}

/// Resizes `out` for a reduction of `in` over `mask` and plans the walk.
ReducePlan prepare_reduction(const Tensor& in, Tensor& out, DimMask mask, bool keepdim,
                             const char* op) {
  kernels::Shape shape = kernels::reduced_shape(in, mask, keepdim);
  kernels::resize_output(out, shape.span(), op);
  return kernels::make_reduce_plan(in, out, mask, keepdim);
}

DimMask one_dim_mask(int64_t dim, const Tensor& in, const char* op) {
  return kernels::reduce_dim_mask(IntList(&dim, 1), static_cast<int64_t>(in.dim()), op);
}

DimMask all_dims_mask(const Tensor& in, const char* op) {
  return kernels::reduce_dim_mask(std::nullopt, static_cast<int64_t>(in.dim()), op);
}

/// A sum, mean or product: the accumulator follows out's dtype (reduce.h).
void additive(KernelContext& ctx, const Tensor& in, Tensor& out, const ReducePlan& p,
              ReduceKind kind, const char* op) {
  const DType od = out.dtype();
  ReduceAcc acc;
  if (od == DType::Float64 || (in.dtype() == DType::Float64 && kernels::is_floating(od))) {
    acc = ReduceAcc::F64;
  } else if (kernels::is_floating(od)) {
    acc = ReduceAcc::F32;
  } else if (od == DType::Bool) {
    kind = kind == ReduceKind::Prod ? ReduceKind::All : ReduceKind::Any;
    acc = ReduceAcc::Bool;
  } else {
    acc = ReduceAcc::U64;
  }
  reduce_backend(ctx).reduce(ctx, {in, out, p, kind, acc, op});
}

/// The accumulator of an extreme of `d` (reduce.h).
ReduceAcc extreme_acc(DType d) {
  if (d == DType::Float64) return ReduceAcc::F64;
  if (kernels::is_floating(d)) return ReduceAcc::F32;
  return ReduceAcc::I64;
}

void sum_any(KernelContext& ctx, const Tensor& in, std::optional<IntList> dims, bool keepdim,
             std::optional<int64_t> dtype_arg, Tensor& out, const char* op) {
  std::optional<DType> dtype = optional_dtype(dtype_arg, op);
  check_dtype_arg(dtype, out, op);
  check_real(in, Family::RealHBBF16, "input", op);
  check_real(out, Family::RealHBBF16, "out", op);
  DimMask mask = kernels::reduce_dim_mask(dims, static_cast<int64_t>(in.dim()), op);
  additive(ctx, in, out, prepare_reduction(in, out, mask, keepdim, op), ReduceKind::Sum, op);
}

void mean_any(KernelContext& ctx, const Tensor& in, std::optional<IntList> dims, bool keepdim,
              std::optional<int64_t> dtype_arg, Tensor& out, const char* op) {
  std::optional<DType> dtype = optional_dtype(dtype_arg, op);
  if (dtype.has_value()) {
    PTERUN_CHECK(kernels::is_floating(*dtype), ErrorCode::InvalidArgument, op,
                 ": dtype must be floating, not ", dtype_name(*dtype));
    check_dtype_arg(dtype, out, op);
    check_real(in, Family::RealHBBF16, "input", op);
  } else {
    PTERUN_CHECK(kernels::is_floating(in.dtype()) && kernels::is_floating(out.dtype()),
                 ErrorCode::InvalidArgument, op, ": input ", describe(in), " and out ",
                 describe(out), " must be floating (or pass a floating dtype)");
  }
  DimMask mask = kernels::reduce_dim_mask(dims, static_cast<int64_t>(in.dim()), op);
  additive(ctx, in, out, prepare_reduction(in, out, mask, keepdim, op), ReduceKind::Mean, op);
}

/// prod's dtype rules: dtype= if given, else int64 for integral inputs and
/// the input's dtype otherwise.
void check_prod_dtypes(const Tensor& in, std::optional<int64_t> dtype_arg, const Tensor& out,
                       const char* op) {
  std::optional<DType> dtype = optional_dtype(dtype_arg, op);
  check_real(in, Family::RealHBBF16, "input", op);
  if (dtype.has_value()) {
    check_dtype_arg(dtype, out, op);
  } else if (kernels::is_integral(in.dtype(), true)) {
    PTERUN_CHECK(out.dtype() == DType::Int64, ErrorCode::InvalidArgument, op,
                 ": the product of an integral tensor is int64, not ", dtype_name(out.dtype()));
  } else {
    PTERUN_CHECK(out.dtype() == in.dtype(), ErrorCode::InvalidArgument, op, ": out dtype ",
                 dtype_name(out.dtype()), " differs from the input's ", dtype_name(in.dtype()));
  }
  check_real(out, Family::RealHBBF16, "out", op);
}

/// any / all over `mask`; out is bool or uint8.
void any_all(KernelContext& ctx, const Tensor& in, DimMask mask, bool keepdim, Tensor& out,
             bool any, const char* op) {
  check_real(in, Family::RealHBBF16, "input", op);
  PTERUN_CHECK(out.dtype() == DType::Bool || out.dtype() == DType::UInt8,
               ErrorCode::InvalidArgument, op, ": out must be bool or uint8, not ",
               dtype_name(out.dtype()));
  ReducePlan p = prepare_reduction(in, out, mask, keepdim, op);
  reduce_backend(ctx).reduce(
      ctx, {in, out, p, any ? ReduceKind::Any : ReduceKind::All, ReduceAcc::Bool, op});
}

constexpr const char* kAnyAllNames[2][3] = {
    {"aten::all.out", "aten::all.dims_out", "aten::all.all_out"},
    {"aten::any.out", "aten::any.dims_out", "aten::any.all_out"}};

void variance(KernelContext& ctx, const Tensor& in, std::optional<IntList> dims, double correction,
              bool keepdim, Tensor& out, Tensor* mean_out, const char* op) {
  PTERUN_CHECK(kernels::is_floating(in.dtype()) && kernels::is_floating(out.dtype()),
               ErrorCode::InvalidArgument, op, ": input ", describe(in), " and out ", describe(out),
               " must be floating");
  PTERUN_CHECK(mean_out == nullptr || kernels::is_floating(mean_out->dtype()),
               ErrorCode::InvalidArgument, op, ": the mean out must be floating");
  DimMask mask = kernels::reduce_dim_mask(dims, static_cast<int64_t>(in.dim()), op);
  ReducePlan p = prepare_reduction(in, out, mask, keepdim, op);
  if (mean_out != nullptr) {
    ReducePlan pm = prepare_reduction(in, *mean_out, mask, keepdim, op);
    reduce_backend(ctx).variance(ctx, {in, out, mean_out, p, pm, correction, op});
  } else {
    reduce_backend(ctx).variance(ctx, {in, out, nullptr, p, p, correction, op});
  }
}

double correction_of(const std::optional<Scalar>& c) {
  return c.has_value() ? c->to_double() : 1.0;
}

/// max.dim / min.dim and argmax / argmin with a dim: the dim wrapped, non-empty
/// (unless the input is 0-dim), the outs resized.
size_t prepare_arg_dim(const Tensor& in, int64_t dim, bool keepdim, Tensor* values, Tensor& indices,
                       const char* op) {
  const int64_t rank = static_cast<int64_t>(in.dim());
  const auto d = static_cast<size_t>(kernels::wrap_dim(dim, rank, op));
  PTERUN_CHECK(rank == 0 || in.size(d) > 0, ErrorCode::InvalidArgument, op,
               ": cannot reduce over the empty dimension ", dim, " of ", describe(in));
  DimMask mask = one_dim_mask(dim, in, op);
  kernels::Shape shape = kernels::reduced_shape(in, mask, keepdim);
  if (values != nullptr) kernels::resize_output(*values, shape.span(), op);
  kernels::resize_output(indices, shape.span(), op);
  return d;
}

}  // namespace

void sum_dim_out(KernelContext& ctx, const Tensor& in, std::optional<IntList> dim, bool keepdim,
                 std::optional<int64_t> dtype, Tensor& out) {
  sum_any(ctx, in, dim, keepdim, dtype, out, "aten::sum.IntList_out");
}

void sum_out(KernelContext& ctx, const Tensor& in, std::optional<int64_t> dtype, Tensor& out) {
  sum_any(ctx, in, std::nullopt, false, dtype, out, "aten::sum.out");
}

void mean_dim_out(KernelContext& ctx, const Tensor& in, std::optional<IntList> dim, bool keepdim,
                  std::optional<int64_t> dtype, Tensor& out) {
  mean_any(ctx, in, dim, keepdim, dtype, out, "aten::mean.out");
}

void mean_dtype_out(KernelContext& ctx, const Tensor& in, std::optional<int64_t> dtype,
                    Tensor& out) {
  mean_any(ctx, in, std::nullopt, false, dtype, out, "aten::mean.dtype_out");
}

void prod_out(KernelContext& ctx, const Tensor& in, std::optional<int64_t> dtype, Tensor& out) {
  const char* op = "aten::prod.out";
  check_prod_dtypes(in, dtype, out, op);
  DimMask mask = all_dims_mask(in, op);
  additive(ctx, in, out, prepare_reduction(in, out, mask, false, op), ReduceKind::Prod, op);
}

void prod_int_out(KernelContext& ctx, const Tensor& in, int64_t dim, bool keepdim,
                  std::optional<int64_t> dtype, Tensor& out) {
  const char* op = "aten::prod.int_out";
  check_prod_dtypes(in, dtype, out, op);
  DimMask mask = one_dim_mask(dim, in, op);
  additive(ctx, in, out, prepare_reduction(in, out, mask, keepdim, op), ReduceKind::Prod, op);
}

template <bool kAny>
void any_all_dim_out(KernelContext& ctx, const Tensor& in, int64_t dim, bool keepdim, Tensor& out) {
  const char* op = kAnyAllNames[kAny][0];
  any_all(ctx, in, one_dim_mask(dim, in, op), keepdim, out, kAny, op);
}

template <bool kAny>
void any_all_dims_out(KernelContext& ctx, const Tensor& in, std::optional<IntList> dim,
                      bool keepdim, Tensor& out) {
  const char* op = kAnyAllNames[kAny][1];
  // An explicitly empty list reduces nothing here (unlike sum's).
  DimMask mask;
  if (!dim.has_value() || !dim->empty()) {
    mask = kernels::reduce_dim_mask(dim, static_cast<int64_t>(in.dim()), op);
  }
  any_all(ctx, in, mask, keepdim, out, kAny, op);
}

template <bool kAny>
void any_all_all_out(KernelContext& ctx, const Tensor& in, Tensor& out) {
  const char* op = kAnyAllNames[kAny][2];
  any_all(ctx, in, all_dims_mask(in, op), false, out, kAny, op);
}

template <bool kMax>
void amax_amin_out(KernelContext& ctx, const Tensor& in, IntList dim, bool keepdim, Tensor& out) {
  const char* op = kMax ? "aten::amax.out" : "aten::amin.out";
  PTERUN_CHECK(out.dtype() == in.dtype(), ErrorCode::InvalidArgument, op, ": out dtype ",
               dtype_name(out.dtype()), " differs from the input's ", dtype_name(in.dtype()));
  DimMask mask = kernels::reduce_dim_mask(dim, static_cast<int64_t>(in.dim()), op);
  PTERUN_CHECK(kernels::reduced_count(in, mask) > 0, ErrorCode::InvalidArgument, op,
               ": cannot reduce over an empty dimension of ", describe(in));
  ReducePlan p = prepare_reduction(in, out, mask, keepdim, op);
  check_dtype_in(in.dtype(), Family::RealHBBF16, op);
  reduce_backend(ctx).reduce(
      ctx, {in, out, p, kMax ? ReduceKind::Max : ReduceKind::Min, extreme_acc(in.dtype()), op});
}

template <bool kMax>
void max_min_unary_out(KernelContext& ctx, const Tensor& in, Tensor& out) {
  const char* op = kMax ? "aten::max.unary_out" : "aten::min.unary_out";
  check_real(in, Family::RealHBBF16, "input", op);
  check_real(out, Family::RealHBBF16, "out", op);
  kernels::check_can_cast(in.dtype(), out.dtype(), op);
  PTERUN_CHECK(in.numel() > 0, ErrorCode::InvalidArgument, op,
               ": the input is empty; specify a dim");
  ReducePlan p = prepare_reduction(in, out, all_dims_mask(in, op), false, op);
  reduce_backend(ctx).reduce(
      ctx, {in, out, p, kMax ? ReduceKind::Max : ReduceKind::Min, extreme_acc(in.dtype()), op});
}

void var_correction_out(KernelContext& ctx, const Tensor& in, std::optional<IntList> dim,
                        std::optional<Scalar> correction, bool keepdim, Tensor& out) {
  variance(ctx, in, dim, correction_of(correction), keepdim, out, nullptr,
           "aten::var.correction_out");
}

void var_out(KernelContext& ctx, const Tensor& in, std::optional<IntList> dim, bool unbiased,
             bool keepdim, Tensor& out) {
  variance(ctx, in, dim, unbiased ? 1.0 : 0.0, keepdim, out, nullptr, "aten::var.out");
}

void var_mean_correction_out(KernelContext& ctx, const Tensor& in, std::optional<IntList> dim,
                             std::optional<Scalar> correction, bool keepdim, Tensor& out0,
                             Tensor& out1) {
  variance(ctx, in, dim, correction_of(correction), keepdim, out0, &out1,
           "aten::var_mean.correction_out");
}

template <bool kMax>
void argmax_argmin_out(KernelContext& ctx, const Tensor& in, std::optional<int64_t> dim,
                       bool keepdim, Tensor& out) {
  const char* op = kMax ? "aten::argmax.out" : "aten::argmin.out";
  PTERUN_CHECK(out.dtype() == DType::Int64, ErrorCode::InvalidArgument, op,
               ": out must be int64, not ", dtype_name(out.dtype()));
  std::optional<size_t> d;
  if (dim.has_value()) {
    d = prepare_arg_dim(in, *dim, keepdim, nullptr, out, op);
  } else {
    PTERUN_CHECK(in.numel() > 0, ErrorCode::InvalidArgument, op,
                 ": the input is empty; specify a dim");
    kernels::Shape shape = kernels::reduced_shape(in, all_dims_mask(in, op), keepdim);
    kernels::resize_output(out, shape.span(), op);
  }
  check_dtype_in(in.dtype(), Family::RealHBF16, op);
  reduce_backend(ctx).arg_reduce(ctx, {in, d, keepdim, kMax, nullptr, out, op});
}

template <bool kMax>
void max_min_dim_out(KernelContext& ctx, const Tensor& in, int64_t dim, bool keepdim,
                     Tensor& values, Tensor& indices) {
  const char* op = kMax ? "aten::max.dim_max" : "aten::min.dim_min";
  PTERUN_CHECK(values.dtype() == in.dtype(), ErrorCode::InvalidArgument, op, ": values dtype ",
               dtype_name(values.dtype()), " differs from the input's ", dtype_name(in.dtype()));
  PTERUN_CHECK(indices.dtype() == DType::Int64, ErrorCode::InvalidArgument, op,
               ": indices must be int64, not ", dtype_name(indices.dtype()));
  const size_t d = prepare_arg_dim(in, dim, keepdim, &values, indices, op);
  check_dtype_in(in.dtype(), Family::RealHBBF16, op);
  reduce_backend(ctx).arg_reduce(ctx, {in, d, keepdim, kMax, &values, indices, op});
}

void cumsum_out(KernelContext& ctx, const Tensor& in, int64_t dim, std::optional<int64_t> dtype_arg,
                Tensor& out) {
  const char* op = "aten::cumsum.out";
  std::optional<DType> dtype = optional_dtype(dtype_arg, op);
  check_dtype_arg(dtype, out, op);
  check_real(in, Family::RealHBBF16, "input", op);
  check_real(out, Family::RealHBBF16, "out", op);
  const auto d = static_cast<size_t>(kernels::wrap_dim(dim, static_cast<int64_t>(in.dim()), op));
  kernels::resize_output(out, in.sizes(), op);
  if (in.numel() == 0) return;
  const DType od = out.dtype();
  const ReduceAcc acc = od == DType::Float64       ? ReduceAcc::F64
                        : kernels::is_floating(od) ? ReduceAcc::F32
                                                   : ReduceAcc::U64;
  reduce_backend(ctx).cumsum(ctx, {in, d, acc, out, op});
}

template void any_all_dim_out<true>(KernelContext&, const Tensor&, int64_t, bool, Tensor&);
template void any_all_dim_out<false>(KernelContext&, const Tensor&, int64_t, bool, Tensor&);
template void any_all_dims_out<true>(KernelContext&, const Tensor&, std::optional<IntList>, bool,
                                     Tensor&);
template void any_all_dims_out<false>(KernelContext&, const Tensor&, std::optional<IntList>, bool,
                                      Tensor&);
template void any_all_all_out<true>(KernelContext&, const Tensor&, Tensor&);
template void any_all_all_out<false>(KernelContext&, const Tensor&, Tensor&);
template void amax_amin_out<true>(KernelContext&, const Tensor&, IntList, bool, Tensor&);
template void amax_amin_out<false>(KernelContext&, const Tensor&, IntList, bool, Tensor&);
template void max_min_unary_out<true>(KernelContext&, const Tensor&, Tensor&);
template void max_min_unary_out<false>(KernelContext&, const Tensor&, Tensor&);
template void argmax_argmin_out<true>(KernelContext&, const Tensor&, std::optional<int64_t>, bool,
                                      Tensor&);
template void argmax_argmin_out<false>(KernelContext&, const Tensor&, std::optional<int64_t>, bool,
                                       Tensor&);
template void max_min_dim_out<true>(KernelContext&, const Tensor&, int64_t, bool, Tensor&, Tensor&);
template void max_min_dim_out<false>(KernelContext&, const Tensor&, int64_t, bool, Tensor&,
                                     Tensor&);

}  // namespace pterun::ops
