// Host side of the CUDA reductions: the CPU kernels' argument checks and
// output resizing (reduce_args.h, reduce_util.h), then a launch description
// for reduce.cu / reduce_misc.cu.

#include <cstdlib>
#include <optional>

#include "pterun/backend/cpu/ops/reduce_args.h"
#include "pterun/backend/cuda/ops/nn_launch.h"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/reduce_util.h"

namespace pterun::kernels::cuda_ops {
namespace {

using cpu::check_dtype_arg;
using cpu::check_real;
using cpu::optional_dtype;
using cpu::prepare_reduction;
using cuda::nn::AccKind;
using cuda::nn::RedKind;

cuda::nn::ReduceLaunch launch_of(const Tensor& in, Tensor& out, const ReducePlan& p, RedKind kind,
                                 AccKind acc) {
  cuda::nn::ReduceLaunch l;
  l.in = in.data();
  l.in_dtype = in.dtype();
  l.out = out.data();
  l.out_dtype = out.dtype();
  for (size_t d = 0; d < p.kept.rank; ++d) {
    l.kept.push(p.kept.sizes[d], {p.kept.strides[0][d], p.kept.strides[1][d]});
  }
  for (size_t d = 0; d < p.reduced.rank; ++d) {
    l.red.push(p.reduced.sizes[d], {p.reduced.strides[0][d]});
  }
  l.num_out = p.num_out;
  l.count = p.count;
  l.kind = kind;
  l.acc = acc;
  return l;
}

/// The CPU's run_additive: the accumulator follows out's dtype.
void run_additive(KernelContext& ctx, const Tensor& in, Tensor& out, const ReducePlan& p,
                  RedKind kind, const char* op) {
  const DType od = out.dtype();
  AccKind acc;
  if (od == DType::Float64 || (in.dtype() == DType::Float64 && is_floating(od))) {
    acc = AccKind::F64;
  } else if (is_floating(od)) {
    acc = AccKind::F32;
  } else if (od == DType::Bool) {
    kind = kind == RedKind::Prod ? RedKind::All : RedKind::Any;
    acc = AccKind::Bool;
  } else {
    acc = AccKind::U64;
  }
  cuda::nn::launch_reduce(ctx, launch_of(in, out, p, kind, acc), op);
}

/// Accumulator of an extreme over `d`: the CPU's ComputeOf<T>.
AccKind extreme_acc(DType d) {
  if (d == DType::Float64) return AccKind::F64;
  if (is_floating(d)) return AccKind::F32;
  return AccKind::I64;
}

void check_family(DType d, Family f, const char* op) {
  PTERUN_CHECK(in_family(d, f), ErrorCode::InvalidArgument, op, ": dtype ", dtype_name(d),
               " is not supported");
}

void sum_dim_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::sum.IntList_out";
  const Tensor& in = args[0]->to_tensor();
  auto dims = args[1]->to_optional_int_list();
  bool keepdim = args[2]->to_bool();
  std::optional<DType> dtype = optional_dtype(*args[3], op);
  Tensor& out = args[4]->to_tensor();
  check_dtype_arg(dtype, out, op);
  check_real(in, Family::RealHBBF16, "input", op);
  check_real(out, Family::RealHBBF16, "out", op);
  DimMask mask = reduce_dim_mask(dims, static_cast<int64_t>(in.dim()), op);
  run_additive(ctx, in, out, prepare_reduction(in, out, mask, keepdim, op), RedKind::Sum, op);
}

void sum_all_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::sum.out";
  const Tensor& in = args[0]->to_tensor();
  std::optional<DType> dtype = optional_dtype(*args[1], op);
  Tensor& out = args[2]->to_tensor();
  check_dtype_arg(dtype, out, op);
  check_real(in, Family::RealHBBF16, "input", op);
  check_real(out, Family::RealHBBF16, "out", op);
  DimMask mask = reduce_dim_mask(std::nullopt, static_cast<int64_t>(in.dim()), op);
  run_additive(ctx, in, out, prepare_reduction(in, out, mask, false, op), RedKind::Sum, op);
}

void mean_impl(KernelContext& ctx, const Tensor& in, std::optional<std::span<const int64_t>> dims,
               bool keepdim, std::optional<DType> dtype, Tensor& out, const char* op) {
  if (dtype.has_value()) {
    PTERUN_CHECK(is_floating(*dtype), ErrorCode::InvalidArgument, op,
                 ": dtype must be floating, not ", dtype_name(*dtype));
    check_dtype_arg(dtype, out, op);
    check_real(in, Family::RealHBBF16, "input", op);
  } else {
    PTERUN_CHECK(is_floating(in.dtype()) && is_floating(out.dtype()), ErrorCode::InvalidArgument,
                 op, ": input ", describe(in), " and out ", describe(out),
                 " must be floating (or pass a floating dtype)");
  }
  DimMask mask = reduce_dim_mask(dims, static_cast<int64_t>(in.dim()), op);
  run_additive(ctx, in, out, prepare_reduction(in, out, mask, keepdim, op), RedKind::Mean, op);
}

void mean_dim_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::mean.out";
  mean_impl(ctx, args[0]->to_tensor(), args[1]->to_optional_int_list(), args[2]->to_bool(),
            optional_dtype(*args[3], op), args[4]->to_tensor(), op);
}

void mean_dtype_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::mean.dtype_out";
  mean_impl(ctx, args[0]->to_tensor(), std::nullopt, false, optional_dtype(*args[1], op),
            args[2]->to_tensor(), op);
}

template <bool kWithDim>
void prod_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kWithDim ? "aten::prod.int_out" : "aten::prod.out";
  const Tensor& in = args[0]->to_tensor();
  const size_t d0 = kWithDim ? 3 : 1;
  std::optional<DType> dtype = optional_dtype(*args[d0], op);
  Tensor& out = args[d0 + 1]->to_tensor();
  check_real(in, Family::RealHBBF16, "input", op);
  if (dtype.has_value()) {
    check_dtype_arg(dtype, out, op);
  } else if (is_integral(in.dtype(), true)) {
    PTERUN_CHECK(out.dtype() == DType::Int64, ErrorCode::InvalidArgument, op,
                 ": the product of an integral tensor is int64, not ", dtype_name(out.dtype()));
  } else {
    PTERUN_CHECK(out.dtype() == in.dtype(), ErrorCode::InvalidArgument, op, ": out dtype ",
                 dtype_name(out.dtype()), " differs from the input's ", dtype_name(in.dtype()));
  }
  check_real(out, Family::RealHBBF16, "out", op);
  DimMask mask;
  bool keepdim = false;
  const int64_t rank = static_cast<int64_t>(in.dim());
  if constexpr (kWithDim) {
    int64_t dim = args[1]->to_int();
    keepdim = args[2]->to_bool();
    mask = reduce_dim_mask(std::span<const int64_t>(&dim, 1), rank, op);
  } else {
    mask = reduce_dim_mask(std::nullopt, rank, op);
  }
  run_additive(ctx, in, out, prepare_reduction(in, out, mask, keepdim, op), RedKind::Prod, op);
}

enum class DimArg { One, List, None };

template <bool kAny, DimArg kDims>
void any_all_out(KernelContext& ctx, std::span<Value* const> args) {
  constexpr const char* names[2][3] = {
      {"aten::all.out", "aten::all.dims_out", "aten::all.all_out"},
      {"aten::any.out", "aten::any.dims_out", "aten::any.all_out"}};
  const char* op = names[kAny][static_cast<int>(kDims)];
  const Tensor& in = args[0]->to_tensor();
  const int64_t rank = static_cast<int64_t>(in.dim());
  DimMask mask;
  bool keepdim = false;
  size_t out_index = 1;
  if constexpr (kDims == DimArg::One) {
    int64_t dim = args[1]->to_int();
    mask = reduce_dim_mask(std::span<const int64_t>(&dim, 1), rank, op);
    keepdim = args[2]->to_bool();
    out_index = 3;
  } else if constexpr (kDims == DimArg::List) {
    auto dims = args[1]->to_optional_int_list();
    // An explicitly empty list reduces nothing here (unlike sum's).
    if (dims.has_value() && dims->empty()) {
      mask = DimMask();
    } else {
      mask = reduce_dim_mask(dims, rank, op);
    }
    keepdim = args[2]->to_bool();
    out_index = 3;
  } else {
    mask = reduce_dim_mask(std::nullopt, rank, op);
  }
  Tensor& out = args[out_index]->to_tensor();
  check_real(in, Family::RealHBBF16, "input", op);
  PTERUN_CHECK(out.dtype() == DType::Bool || out.dtype() == DType::UInt8,
               ErrorCode::InvalidArgument, op, ": out must be bool or uint8, not ",
               dtype_name(out.dtype()));
  ReducePlan p = prepare_reduction(in, out, mask, keepdim, op);
  cuda::nn::launch_reduce(
      ctx, launch_of(in, out, p, kAny ? RedKind::Any : RedKind::All, AccKind::Bool), op);
}

template <bool kMax>
void amax_amin_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kMax ? "aten::amax.out" : "aten::amin.out";
  const Tensor& in = args[0]->to_tensor();
  std::span<const int64_t> dims = args[1]->to_int_list();
  bool keepdim = args[2]->to_bool();
  Tensor& out = args[3]->to_tensor();
  PTERUN_CHECK(out.dtype() == in.dtype(), ErrorCode::InvalidArgument, op, ": out dtype ",
               dtype_name(out.dtype()), " differs from the input's ", dtype_name(in.dtype()));
  DimMask mask = reduce_dim_mask(dims, static_cast<int64_t>(in.dim()), op);
  PTERUN_CHECK(reduced_count(in, mask) > 0, ErrorCode::InvalidArgument, op,
               ": cannot reduce over an empty dimension of ", describe(in));
  ReducePlan p = prepare_reduction(in, out, mask, keepdim, op);
  check_family(in.dtype(), Family::RealHBBF16, op);
  cuda::nn::launch_reduce(
      ctx, launch_of(in, out, p, kMax ? RedKind::Max : RedKind::Min, extreme_acc(in.dtype())), op);
}

template <bool kMax>
void max_min_unary_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kMax ? "aten::max.unary_out" : "aten::min.unary_out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  check_real(in, Family::RealHBBF16, "input", op);
  check_real(out, Family::RealHBBF16, "out", op);
  check_can_cast(in.dtype(), out.dtype(), op);
  PTERUN_CHECK(in.numel() > 0, ErrorCode::InvalidArgument, op,
               ": the input is empty; specify a dim");
  DimMask mask = reduce_dim_mask(std::nullopt, static_cast<int64_t>(in.dim()), op);
  ReducePlan p = prepare_reduction(in, out, mask, false, op);
  cuda::nn::launch_reduce(
      ctx, launch_of(in, out, p, kMax ? RedKind::Max : RedKind::Min, extreme_acc(in.dtype())), op);
}

// ---- variance ------------------------------------------------------------------

enum class VarForm { Correction, Unbiased, CorrectionWithMean };

template <VarForm kForm>
void var_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kForm == VarForm::Correction ? "aten::var.correction_out"
                   : kForm == VarForm::Unbiased ? "aten::var.out"
                                                : "aten::var_mean.correction_out";
  const Tensor& in = args[0]->to_tensor();
  auto dims = args[1]->to_optional_int_list();
  double correction = 1.0;
  if constexpr (kForm == VarForm::Unbiased) {
    correction = args[2]->to_bool() ? 1.0 : 0.0;
  } else {
    std::optional<Scalar> c = args[2]->to_optional_scalar();
    if (c.has_value()) correction = c->to_double();
  }
  bool keepdim = args[3]->to_bool();
  Tensor& out = args[4]->to_tensor();
  Tensor* mean_out = kForm == VarForm::CorrectionWithMean ? &args[5]->to_tensor() : nullptr;
  PTERUN_CHECK(is_floating(in.dtype()) && is_floating(out.dtype()), ErrorCode::InvalidArgument, op,
               ": input ", describe(in), " and out ", describe(out), " must be floating");
  PTERUN_CHECK(mean_out == nullptr || is_floating(mean_out->dtype()), ErrorCode::InvalidArgument,
               op, ": the mean out must be floating");
  DimMask mask = reduce_dim_mask(dims, static_cast<int64_t>(in.dim()), op);
  ReducePlan p = prepare_reduction(in, out, mask, keepdim, op);
  ReducePlan pm = mean_out != nullptr ? prepare_reduction(in, *mean_out, mask, keepdim, op) : p;
  cuda::nn::VarianceLaunch l;
  l.in = in.data();
  l.in_dtype = in.dtype();
  l.var = out.data();
  l.var_dtype = out.dtype();
  if (mean_out != nullptr) {
    l.mean = mean_out->data();
    l.mean_dtype = mean_out->dtype();
  }
  // Both plans walk the same kept dims in the same order (same input and
  // mask); only out's strides differ.
  for (size_t d = 0; d < p.kept.rank; ++d) {
    l.kept.push(p.kept.sizes[d], {p.kept.strides[0][d], p.kept.strides[1][d],
                                  mean_out != nullptr ? pm.kept.strides[1][d] : 0});
  }
  for (size_t d = 0; d < p.reduced.rank; ++d) {
    l.red.push(p.reduced.sizes[d], {p.reduced.strides[0][d]});
  }
  l.num_out = p.num_out;
  l.count = p.count;
  l.correction = correction;
  cuda::nn::launch_variance(ctx, l, op);
}

// ---- arg-reductions ------------------------------------------------------------

/// Lines along `dim` of `in` (all dims but dim form the other space, in
/// logical order); outs' strides from reduced_out_strides.
cuda::nn::ArgLaunch arg_lines(const Tensor& in, size_t dim, bool keepdim, Tensor* values,
                              Tensor& indices) {
  DimMask mask;
  if (in.dim() > 0) mask.set(dim);
  std::array<int64_t, kMaxRank> vs{};
  if (values != nullptr) vs = reduced_out_strides(in, *values, mask, keepdim);
  std::array<int64_t, kMaxRank> is = reduced_out_strides(in, indices, mask, keepdim);
  cuda::nn::ArgLaunch l;
  l.in = in.data();
  l.in_dtype = in.dtype();
  l.values = values != nullptr ? values->data() : nullptr;
  l.indices = indices.data_as<int64_t>();
  int64_t min_other = INT64_MAX;
  for (size_t d = 0; d < in.dim(); ++d) {
    if (d == dim || in.size(d) == 1) continue;
    l.other.push(in.size(d), {in.stride(d), vs[d], is[d]});
    min_other = std::min<int64_t>(min_other, std::llabs(in.stride(d)));
  }
  if (in.dim() > 0) {
    l.len = in.size(dim);
    l.line.push(in.size(dim), {in.stride(dim)});
    // A block per line when the line is the faster walk in memory (or
    // there are few lines), else a thread per line over neighbouring lines.
    l.line_inner = std::llabs(in.stride(dim)) <= min_other || l.other.count() < 1024;
  }
  return l;
}

template <bool kMax>
void argmax_argmin_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kMax ? "aten::argmax.out" : "aten::argmin.out";
  const Tensor& in = args[0]->to_tensor();
  std::optional<int64_t> dim = args[1]->to_optional_int();
  bool keepdim = args[2]->to_bool();
  Tensor& out = args[3]->to_tensor();
  PTERUN_CHECK(out.dtype() == DType::Int64, ErrorCode::InvalidArgument, op,
               ": out must be int64, not ", dtype_name(out.dtype()));
  const int64_t rank = static_cast<int64_t>(in.dim());
  if (!dim.has_value()) {
    PTERUN_CHECK(in.numel() > 0, ErrorCode::InvalidArgument, op,
                 ": the input is empty; specify a dim");
    DimMask mask = reduce_dim_mask(std::nullopt, rank, op);
    Shape shape = reduced_shape(in, mask, keepdim);
    resize_output(out, shape.span(), op);
    check_family(in.dtype(), Family::RealHBF16, op);
    // One line over the whole tensor in row-major logical order.
    cuda::nn::ArgLaunch l;
    l.in = in.data();
    l.in_dtype = in.dtype();
    l.indices = out.data_as<int64_t>();
    for (size_t d = 0; d < in.dim(); ++d) l.line.push(in.size(d), {in.stride(d)});
    l.len = in.numel();
    l.is_max = kMax;
    l.line_inner = true;
    cuda::nn::launch_arg_reduce(ctx, l, op);
    return;
  }
  size_t d = static_cast<size_t>(wrap_dim(*dim, rank, op));
  PTERUN_CHECK(rank == 0 || in.size(d) > 0, ErrorCode::InvalidArgument, op,
               ": cannot reduce over the empty dimension ", *dim, " of ", describe(in));
  DimMask mask = reduce_dim_mask(std::span<const int64_t>(&*dim, 1), rank, op);
  Shape shape = reduced_shape(in, mask, keepdim);
  resize_output(out, shape.span(), op);
  check_family(in.dtype(), Family::RealHBF16, op);
  cuda::nn::ArgLaunch l = arg_lines(in, d, keepdim, nullptr, out);
  l.is_max = kMax;
  cuda::nn::launch_arg_reduce(ctx, l, op);
}

template <bool kMax>
void max_min_dim_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kMax ? "aten::max.dim_max" : "aten::min.dim_min";
  const Tensor& in = args[0]->to_tensor();
  int64_t dim = args[1]->to_int();
  bool keepdim = args[2]->to_bool();
  Tensor& values = args[3]->to_tensor();
  Tensor& indices = args[4]->to_tensor();
  PTERUN_CHECK(values.dtype() == in.dtype(), ErrorCode::InvalidArgument, op, ": values dtype ",
               dtype_name(values.dtype()), " differs from the input's ", dtype_name(in.dtype()));
  PTERUN_CHECK(indices.dtype() == DType::Int64, ErrorCode::InvalidArgument, op,
               ": indices must be int64, not ", dtype_name(indices.dtype()));
  const int64_t rank = static_cast<int64_t>(in.dim());
  size_t d = static_cast<size_t>(wrap_dim(dim, rank, op));
  PTERUN_CHECK(rank == 0 || in.size(d) > 0, ErrorCode::InvalidArgument, op,
               ": cannot reduce over the empty dimension ", dim, " of ", describe(in));
  DimMask mask = reduce_dim_mask(std::span<const int64_t>(&dim, 1), rank, op);
  Shape shape = reduced_shape(in, mask, keepdim);
  resize_output(values, shape.span(), op);
  resize_output(indices, shape.span(), op);
  check_family(in.dtype(), Family::RealHBBF16, op);
  cuda::nn::ArgLaunch l = arg_lines(in, d, keepdim, &values, indices);
  l.is_max = kMax;
  cuda::nn::launch_arg_reduce(ctx, l, op);
}

// ---- cumsum --------------------------------------------------------------------

void cumsum_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::cumsum.out";
  const Tensor& in = args[0]->to_tensor();
  int64_t dim = args[1]->to_int();
  std::optional<DType> dtype = optional_dtype(*args[2], op);
  Tensor& out = args[3]->to_tensor();
  check_dtype_arg(dtype, out, op);
  check_real(in, Family::RealHBBF16, "input", op);
  check_real(out, Family::RealHBBF16, "out", op);
  size_t d = static_cast<size_t>(wrap_dim(dim, static_cast<int64_t>(in.dim()), op));
  resize_output(out, in.sizes(), op);
  if (in.numel() == 0) return;
  cuda::nn::CumsumLaunch l;
  l.in = in.data();
  l.in_dtype = in.dtype();
  l.out = out.data();
  l.out_dtype = out.dtype();
  for (size_t k = 0; k < in.dim(); ++k) {
    if (k == d || in.size(k) == 1) continue;
    l.other.push(in.size(k), {in.stride(k), out.stride(k)});
  }
  if (in.dim() > 0) {
    l.len = in.size(d);
    l.in_step = in.stride(d);
    l.out_step = out.stride(d);
  }
  const DType od = out.dtype();
  l.acc = od == DType::Float64 ? AccKind::F64 : is_floating(od) ? AccKind::F32 : AccKind::U64;
  cuda::nn::launch_cumsum(ctx, l, op);
}

}  // namespace

void register_reduce_ops(KernelRegistry& r) {
  r.add("aten::sum.IntList_out", Device::CUDA, &sum_dim_out);
  r.add("aten::sum.out", Device::CUDA, &sum_all_out);
  r.add("aten::mean.out", Device::CUDA, &mean_dim_out);
  r.add("aten::mean.dtype_out", Device::CUDA, &mean_dtype_out);
  r.add("aten::prod.out", Device::CUDA, &prod_out<false>);
  r.add("aten::prod.int_out", Device::CUDA, &prod_out<true>);
  r.add("aten::any.out", Device::CUDA, &any_all_out<true, DimArg::One>);
  r.add("aten::any.dims_out", Device::CUDA, &any_all_out<true, DimArg::List>);
  r.add("aten::any.all_out", Device::CUDA, &any_all_out<true, DimArg::None>);
  r.add("aten::all.out", Device::CUDA, &any_all_out<false, DimArg::One>);
  r.add("aten::all.dims_out", Device::CUDA, &any_all_out<false, DimArg::List>);
  r.add("aten::all.all_out", Device::CUDA, &any_all_out<false, DimArg::None>);
  r.add("aten::amax.out", Device::CUDA, &amax_amin_out<true>);
  r.add("aten::amin.out", Device::CUDA, &amax_amin_out<false>);
  r.add("aten::max.unary_out", Device::CUDA, &max_min_unary_out<true>);
  r.add("aten::min.unary_out", Device::CUDA, &max_min_unary_out<false>);
  r.add("aten::argmax.out", Device::CUDA, &argmax_argmin_out<true>);
  r.add("aten::argmin.out", Device::CUDA, &argmax_argmin_out<false>);
  r.add("aten::max.dim_max", Device::CUDA, &max_min_dim_out<true>);
  r.add("aten::min.dim_min", Device::CUDA, &max_min_dim_out<false>);
  r.add("aten::var.correction_out", Device::CUDA, &var_out<VarForm::Correction>);
  r.add("aten::var.out", Device::CUDA, &var_out<VarForm::Unbiased>);
  r.add("aten::var_mean.correction_out", Device::CUDA, &var_out<VarForm::CorrectionWithMean>);
  r.add("aten::cumsum.out", Device::CUDA, &cumsum_out);
}

}  // namespace pterun::kernels::cuda_ops
