// Reductions (sum, mean, prod, amax/amin, any/all, var) over the shared
// reduction engine, arg-reductions and max/min with indices, and cumsum.

#include <cmath>
#include <limits>
#include <optional>

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/backend/cpu/ops/reduce_args.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/reduce_util.h"

namespace pterun::cpu {
namespace {

using kernels::DimMask;
using kernels::Family;
using kernels::KernelContext;

/// Sums into `out` with an accumulator chosen by out's dtype: float for
/// f16/bf16/f32, double for f64, wrapping 64-bit for integers, "any" for
/// bool.
template <template <typename> class Op>
void run_additive(KernelContext& ctx, const Tensor& in, Tensor& out, const kernels::ReducePlan& p) {
  const DType od = out.dtype();
  if (od == DType::Float64 || (in.dtype() == DType::Float64 && kernels::is_floating(od))) {
    Op<double> op;
    if constexpr (requires { op.denom; }) op.denom = static_cast<double>(p.count);
    kernels::reduce(ctx, in, out, p, op);
  } else if (kernels::is_floating(od)) {
    Op<float> op;
    if constexpr (requires { op.denom; }) op.denom = static_cast<float>(p.count);
    kernels::reduce(ctx, in, out, p, op);
  } else if (od == DType::Bool) {
    kernels::reduce(ctx, in, out, p, kernels::AnyOp{});
  } else {
    kernels::reduce(ctx, in, out, p, Op<uint64_t>{});
  }
}

// sum.IntList_out(self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype, out)
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
  DimMask mask = kernels::reduce_dim_mask(dims, static_cast<int64_t>(in.dim()), op);
  run_additive<kernels::SumOp>(ctx, in, out, prepare_reduction(in, out, mask, keepdim, op));
}

// sum.out(self, *, ScalarType? dtype, out): the whole tensor.
void sum_all_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::sum.out";
  const Tensor& in = args[0]->to_tensor();
  std::optional<DType> dtype = optional_dtype(*args[1], op);
  Tensor& out = args[2]->to_tensor();
  check_dtype_arg(dtype, out, op);
  check_real(in, Family::RealHBBF16, "input", op);
  check_real(out, Family::RealHBBF16, "out", op);
  DimMask mask = kernels::reduce_dim_mask(std::nullopt, static_cast<int64_t>(in.dim()), op);
  run_additive<kernels::SumOp>(ctx, in, out, prepare_reduction(in, out, mask, false, op));
}

void mean_impl(KernelContext& ctx, const Tensor& in, std::optional<std::span<const int64_t>> dims,
               bool keepdim, std::optional<DType> dtype, Tensor& out, const char* op) {
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
  run_additive<kernels::MeanOp>(ctx, in, out, prepare_reduction(in, out, mask, keepdim, op));
}

// mean.out(self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype, out)
void mean_dim_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::mean.out";
  mean_impl(ctx, args[0]->to_tensor(), args[1]->to_optional_int_list(), args[2]->to_bool(),
            optional_dtype(*args[3], op), args[4]->to_tensor(), op);
}

// mean.dtype_out(self, *, ScalarType? dtype, out): the whole tensor.
void mean_dtype_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::mean.dtype_out";
  mean_impl(ctx, args[0]->to_tensor(), std::nullopt, false, optional_dtype(*args[1], op),
            args[2]->to_tensor(), op);
}

// prod.out(self, *, dtype, out) / prod.int_out(self, dim, keepdim, *, dtype, out).
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
  } else if (kernels::is_integral(in.dtype(), true)) {
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
    mask = kernels::reduce_dim_mask(std::span<const int64_t>(&dim, 1), rank, op);
  } else {
    mask = kernels::reduce_dim_mask(std::nullopt, rank, op);
  }
  kernels::ReducePlan p = prepare_reduction(in, out, mask, keepdim, op);
  if (out.dtype() == DType::Bool) {
    kernels::reduce(ctx, in, out, p, kernels::AllOp{});
  } else {
    run_additive<kernels::ProdOp>(ctx, in, out, p);
  }
}

// any / all in their three overloads: .out (one dim), .dims_out (int[]?),
// .all_out (everything). out is bool or uint8.
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
    mask = kernels::reduce_dim_mask(std::span<const int64_t>(&dim, 1), rank, op);
    keepdim = args[2]->to_bool();
    out_index = 3;
  } else if constexpr (kDims == DimArg::List) {
    auto dims = args[1]->to_optional_int_list();
    // An explicitly empty list reduces nothing here (unlike sum's).
    if (dims.has_value() && dims->empty()) {
      mask = DimMask();
    } else {
      mask = kernels::reduce_dim_mask(dims, rank, op);
    }
    keepdim = args[2]->to_bool();
    out_index = 3;
  } else {
    mask = kernels::reduce_dim_mask(std::nullopt, rank, op);
  }
  Tensor& out = args[out_index]->to_tensor();
  check_real(in, Family::RealHBBF16, "input", op);
  PTERUN_CHECK(out.dtype() == DType::Bool || out.dtype() == DType::UInt8,
               ErrorCode::InvalidArgument, op, ": out must be bool or uint8, not ",
               dtype_name(out.dtype()));
  kernels::ReducePlan p = prepare_reduction(in, out, mask, keepdim, op);
  if constexpr (kAny) {
    kernels::reduce(ctx, in, out, p, kernels::AnyOp{});
  } else {
    kernels::reduce(ctx, in, out, p, kernels::AllOp{});
  }
}

// amax.out / amin.out(self, int[1] dim=[], bool keepdim=False, *, out).
template <bool kMax>
void amax_amin_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kMax ? "aten::amax.out" : "aten::amin.out";
  const Tensor& in = args[0]->to_tensor();
  std::span<const int64_t> dims = args[1]->to_int_list();
  bool keepdim = args[2]->to_bool();
  Tensor& out = args[3]->to_tensor();
  PTERUN_CHECK(out.dtype() == in.dtype(), ErrorCode::InvalidArgument, op, ": out dtype ",
               dtype_name(out.dtype()), " differs from the input's ", dtype_name(in.dtype()));
  DimMask mask = kernels::reduce_dim_mask(dims, static_cast<int64_t>(in.dim()), op);
  PTERUN_CHECK(kernels::reduced_count(in, mask) > 0, ErrorCode::InvalidArgument, op,
               ": cannot reduce over an empty dimension of ", describe(in));
  kernels::ReducePlan p = prepare_reduction(in, out, mask, keepdim, op);
  kernels::visit(in.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
    kernels::reduce(ctx, in, out, p, kernels::ExtremeOp<kernels::ComputeOf<T>, kMax>{});
  });
}

// max.unary_out / min.unary_out(self, *, out): rank-0 result of any castable
// dtype.
template <bool kMax>
void max_min_unary_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kMax ? "aten::max.unary_out" : "aten::min.unary_out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  check_real(in, Family::RealHBBF16, "input", op);
  check_real(out, Family::RealHBBF16, "out", op);
  kernels::check_can_cast(in.dtype(), out.dtype(), op);
  PTERUN_CHECK(in.numel() > 0, ErrorCode::InvalidArgument, op,
               ": the input is empty; specify a dim");
  DimMask mask = kernels::reduce_dim_mask(std::nullopt, static_cast<int64_t>(in.dim()), op);
  kernels::ReducePlan p = prepare_reduction(in, out, mask, false, op);
  kernels::visit(in.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
    kernels::reduce(ctx, in, out, p, kernels::ExtremeOp<kernels::ComputeOf<T>, kMax>{});
  });
}

// ---- variance ------------------------------------------------------------

/// Two-pass variance (and mean) in double for every output. `mean_plan`
/// walks the same kept dims as `p` in the same order, with mean_out's
/// strides.
void variance(KernelContext& ctx, const Tensor& in, Tensor* var_out, Tensor* mean_out,
              const kernels::ReducePlan& p, const kernels::ReducePlan& mean_plan,
              double correction) {
  if (p.num_out == 0) return;
  // Like torch, a correction at or above the count divides by zero.
  const double denom = std::max(0.0, static_cast<double>(p.count) - correction);
  kernels::parallel_for(
      ctx, p.num_out, std::max<int64_t>(p.count, 1) * 2, [&](int64_t b, int64_t e) {
        kernels::Odometer<2> kept = p.kept;
        kernels::Odometer<2> mean_kept = mean_plan.kept;
        kept.seek(b);
        mean_kept.seek(b);
        for (int64_t o = b; o < e; ++o) {
          double sum = kernels::detail::fold_reduced(kernels::SumOp<double>{}, 0.0, in, p,
                                                     kept.offset[0], 0, p.count);
          double mean = sum / static_cast<double>(p.count);
          kernels::SquaredDeviationOp<double> sq;
          sq.mean = mean;
          double ss = kernels::detail::fold_reduced(sq, 0.0, in, p, kept.offset[0], 0, p.count);
          double var = ss / denom;
          if (var_out != nullptr) {
            kernels::detail::store<double>(var_out->data(), var_out->dtype(), kept.offset[1], 1, 1,
                                           &var);
          }
          if (mean_out != nullptr) {
            kernels::detail::store<double>(mean_out->data(), mean_out->dtype(), mean_kept.offset[1],
                                           1, 1, &mean);
          }
          kept.next();
          mean_kept.next();
        }
      });
}

enum class VarForm { Correction, Unbiased, CorrectionWithMean };

// var.correction_out(self, int[1]? dim=None, *, Scalar? correction=None,
//   bool keepdim=False, out); var.out(self, int[1]? dim, bool unbiased=True,
//   bool keepdim=False, *, out); var_mean.correction_out(..., out0, out1).
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
  PTERUN_CHECK(kernels::is_floating(in.dtype()) && kernels::is_floating(out.dtype()),
               ErrorCode::InvalidArgument, op, ": input ", describe(in), " and out ", describe(out),
               " must be floating");
  PTERUN_CHECK(mean_out == nullptr || kernels::is_floating(mean_out->dtype()),
               ErrorCode::InvalidArgument, op, ": the mean out must be floating");
  DimMask mask = kernels::reduce_dim_mask(dims, static_cast<int64_t>(in.dim()), op);
  kernels::ReducePlan p = prepare_reduction(in, out, mask, keepdim, op);
  if (mean_out != nullptr) {
    kernels::ReducePlan pm = prepare_reduction(in, *mean_out, mask, keepdim, op);
    variance(ctx, in, &out, mean_out, p, pm, correction);
  } else {
    variance(ctx, in, &out, nullptr, p, p, correction);
  }
}

// ---- arg-reductions ------------------------------------------------------

/// True when x should replace best: strictly larger (smaller), or the first
/// NaN (NaN counts as the maximum and the minimum, like torch).
template <bool kMax, typename C>
inline bool better(C x, C best) {
  return best == best && ((kMax ? x > best : x < best) || x != x);
}

/// Finds the extreme of every line along `dim` of `in`, writing its value
/// to `values` (when given) and its index to `indices` (int64). The outs
/// have in's shape reduced over dim.
template <typename T, bool kMax>
void arg_reduce_dim(KernelContext& ctx, const Tensor& in, size_t dim, bool keepdim, Tensor* values,
                    Tensor& indices) {
  using C = kernels::ComputeOf<T>;
  DimMask mask;
  if (in.dim() > 0) mask.set(dim);
  std::array<int64_t, kMaxRank> vs{};
  if (values != nullptr) vs = kernels::reduced_out_strides(in, *values, mask, keepdim);
  std::array<int64_t, kMaxRank> is = kernels::reduced_out_strides(in, indices, mask, keepdim);
  const size_t rank = in.dim();
  auto plan = kernels::make_line_plan<2>(
      in, dim,
      {std::span<const int64_t>(vs.data(), rank), std::span<const int64_t>(is.data(), rank)});
  const T* x = in.data_as<const T>();
  T* vout = values != nullptr ? values->data_as<T>() : nullptr;
  int64_t* iout = indices.data_as<int64_t>();
  const int64_t len = plan.len;
  const int64_t step = plan.in_step;

  // Lines side by side when the reduced dim is not the innermost in memory.
  constexpr int64_t kB = kernels::detail::kReduceBlock;
  const bool blocked = plan.vec > 1 && std::abs(plan.vec_in) < std::abs(step);
  const int64_t per_outer = blocked ? (plan.vec + kB - 1) / kB : plan.vec;
  const int64_t units = plan.outer.count() * per_outer;
  kernels::parallel_for(ctx, units, len * (blocked ? kB : 1), [&](int64_t b, int64_t e) {
    auto outer = plan.outer;
    alignas(64) C best[kB];
    alignas(64) int64_t where[kB];
    for (int64_t u = b; u < e; ++u) {
      outer.seek(u / per_outer);
      const int64_t j0 = (u % per_outer) * (blocked ? kB : 1);
      const int64_t nb = blocked ? std::min(kB, plan.vec - j0) : 1;
      const int64_t base = outer.offset[0] + j0 * plan.vec_in;
      if constexpr (std::is_same_v<T, C>) {
        if (!blocked && step == 1) {
          // One contiguous line: a vectorised fold finds the extreme, then
          // the first element equal to it (or the first NaN) is its index.
          const T* row = x + base;
          const kernels::ExtremeOp<C, kMax> op;
          const C extreme = kernels::detail::fold(op, op.identity(), row, len);
          int64_t k = 0;
          if (extreme != extreme) {
            while (row[k] == row[k]) ++k;
          } else {
            while (row[k] != extreme) ++k;
          }
          if (vout != nullptr) vout[outer.offset[1] + j0 * plan.vec_out[0]] = extreme;
          iout[outer.offset[2] + j0 * plan.vec_out[1]] = k;
          continue;
        }
      }
      for (int64_t j = 0; j < nb; ++j) {
        best[j] = kernels::convert<C>(x[base + j * plan.vec_in]);
        where[j] = 0;
      }
      for (int64_t k = 1; k < len; ++k) {
        const T* row = x + base + k * step;
        for (int64_t j = 0; j < nb; ++j) {
          C v = kernels::convert<C>(row[j * plan.vec_in]);
          bool take = better<kMax>(v, best[j]);
          best[j] = take ? v : best[j];
          where[j] = take ? k : where[j];
        }
      }
      for (int64_t j = 0; j < nb; ++j) {
        if (vout != nullptr) {
          vout[outer.offset[1] + (j0 + j) * plan.vec_out[0]] = kernels::convert<T>(best[j]);
        }
        iout[outer.offset[2] + (j0 + j) * plan.vec_out[1]] = where[j];
      }
    }
  });
}

/// The index of the extreme of the whole tensor, in row-major logical
/// order.
template <typename T, bool kMax>
int64_t arg_reduce_all(const Tensor& in) {
  using C = kernels::ComputeOf<T>;
  const T* x = in.data_as<const T>();
  const int64_t n = in.numel();
  C best = kernels::convert<C>(x[0]);
  int64_t where = 0;
  if (in.is_contiguous_order()) {
    for (int64_t i = 1; i < n; ++i) {
      C v = kernels::convert<C>(x[i]);
      if (better<kMax>(v, best)) {
        best = v;
        where = i;
      }
    }
    return where;
  }
  kernels::Odometer<1> od;
  for (size_t d = 0; d < in.dim(); ++d) od.push(in.size(d), {in.stride(d)});
  od.seek(0);
  for (int64_t i = 0; i < n; ++i, od.next()) {
    C v = kernels::convert<C>(x[od.offset[0]]);
    if (better<kMax>(v, best)) {
      best = v;
      where = i;
    }
  }
  return where;
}

// argmax.out / argmin.out(self, int? dim=None, bool keepdim=False, *, out).
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
    DimMask mask = kernels::reduce_dim_mask(std::nullopt, rank, op);
    kernels::Shape shape = kernels::reduced_shape(in, mask, keepdim);
    kernels::resize_output(out, shape.span(), op);
    kernels::visit(in.dtype(), Family::RealHBF16, op,
                   [&]<typename T>() { out.data_as<int64_t>()[0] = arg_reduce_all<T, kMax>(in); });
    return;
  }
  size_t d = static_cast<size_t>(kernels::wrap_dim(*dim, rank, op));
  PTERUN_CHECK(rank == 0 || in.size(d) > 0, ErrorCode::InvalidArgument, op,
               ": cannot reduce over the empty dimension ", *dim, " of ", describe(in));
  DimMask mask = kernels::reduce_dim_mask(std::span<const int64_t>(&*dim, 1), rank, op);
  kernels::Shape shape = kernels::reduced_shape(in, mask, keepdim);
  kernels::resize_output(out, shape.span(), op);
  kernels::visit(in.dtype(), Family::RealHBF16, op,
                 [&]<typename T>() { arg_reduce_dim<T, kMax>(ctx, in, d, keepdim, nullptr, out); });
}

// max.dim_max / min.dim_min(self, int dim, bool keepdim=False, *, values, indices).
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
  size_t d = static_cast<size_t>(kernels::wrap_dim(dim, rank, op));
  PTERUN_CHECK(rank == 0 || in.size(d) > 0, ErrorCode::InvalidArgument, op,
               ": cannot reduce over the empty dimension ", dim, " of ", describe(in));
  DimMask mask = kernels::reduce_dim_mask(std::span<const int64_t>(&dim, 1), rank, op);
  kernels::Shape shape = kernels::reduced_shape(in, mask, keepdim);
  kernels::resize_output(values, shape.span(), op);
  kernels::resize_output(indices, shape.span(), op);
  kernels::visit(in.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
    arg_reduce_dim<T, kMax>(ctx, in, d, keepdim, &values, indices);
  });
}

// ---- cumsum --------------------------------------------------------------

template <typename A>
void cumsum_lines(KernelContext& ctx, const Tensor& in, Tensor& out, size_t dim) {
  auto plan = kernels::make_line_plan<1>(in, dim, {out.strides()});
  const int64_t len = plan.len;
  constexpr int64_t kB = kernels::detail::kReduceBlock;
  constexpr int64_t kChunk = kernels::detail::kReduceChunk;
  const bool blocked = plan.vec > 1 && std::abs(plan.vec_in) < std::abs(plan.in_step);
  const int64_t per_outer = blocked ? (plan.vec + kB - 1) / kB : plan.vec;
  kernels::parallel_for(
      ctx, plan.outer.count() * per_outer, len * (blocked ? kB : 1), [&](int64_t b, int64_t e) {
        auto outer = plan.outer;
        alignas(64) A buf[kChunk];
        alignas(64) A acc[kB];
        for (int64_t u = b; u < e; ++u) {
          outer.seek(u / per_outer);
          const int64_t j0 = (u % per_outer) * (blocked ? kB : 1);
          const int64_t in_base = outer.offset[0] + j0 * plan.vec_in;
          const int64_t out_base = outer.offset[1] + j0 * plan.vec_out[0];
          if (blocked) {
            const int64_t nb = std::min(kB, plan.vec - j0);
            for (int64_t j = 0; j < nb; ++j) acc[j] = A(0);
            for (int64_t k = 0; k < len; ++k) {
              kernels::detail::load<A>(in.data(), in.dtype(), in_base + k * plan.in_step,
                                       plan.vec_in, nb, buf);
              for (int64_t j = 0; j < nb; ++j) acc[j] = A(acc[j] + buf[j]);
              kernels::detail::store<A>(out.data(), out.dtype(), out_base + k * plan.out_step[0],
                                        plan.vec_out[0], nb, acc);
            }
            continue;
          }
          A run = A(0);
          if (in.dtype() == kernels::dtype_of<A>() && out.dtype() == in.dtype() &&
              plan.in_step == 1 && plan.out_step[0] == 1) {
            const A* x = in.data_as<const A>() + in_base;
            A* y = out.data_as<A>() + out_base;
            for (int64_t k = 0; k < len; ++k) {
              run = A(run + x[k]);
              y[k] = run;
            }
            continue;
          }
          for (int64_t k = 0; k < len; k += kChunk) {
            const int64_t m = std::min(kChunk, len - k);
            kernels::detail::load<A>(in.data(), in.dtype(), in_base + k * plan.in_step,
                                     plan.in_step, m, buf);
            for (int64_t i = 0; i < m; ++i) {
              run = A(run + buf[i]);
              buf[i] = run;
            }
            kernels::detail::store<A>(out.data(), out.dtype(), out_base + k * plan.out_step[0],
                                      plan.out_step[0], m, buf);
          }
        }
      });
}

// cumsum.out(self, int dim, *, ScalarType? dtype=None, out)
void cumsum_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::cumsum.out";
  const Tensor& in = args[0]->to_tensor();
  int64_t dim = args[1]->to_int();
  std::optional<DType> dtype = optional_dtype(*args[2], op);
  Tensor& out = args[3]->to_tensor();
  check_dtype_arg(dtype, out, op);
  check_real(in, Family::RealHBBF16, "input", op);
  check_real(out, Family::RealHBBF16, "out", op);
  size_t d = static_cast<size_t>(kernels::wrap_dim(dim, static_cast<int64_t>(in.dim()), op));
  kernels::resize_output(out, in.sizes(), op);
  if (in.numel() == 0) return;
  const DType od = out.dtype();
  if (od == DType::Float64) {
    cumsum_lines<double>(ctx, in, out, d);
  } else if (kernels::is_floating(od)) {
    cumsum_lines<float>(ctx, in, out, d);
  } else {
    cumsum_lines<uint64_t>(ctx, in, out, d);
  }
}

}  // namespace

void register_reduce_ops(kernels::KernelRegistry& r) {
  r.add("aten::sum.IntList_out", Device::CPU, &sum_dim_out);
  r.add("aten::sum.out", Device::CPU, &sum_all_out);
  r.add("aten::mean.out", Device::CPU, &mean_dim_out);
  r.add("aten::mean.dtype_out", Device::CPU, &mean_dtype_out);
  r.add("aten::prod.out", Device::CPU, &prod_out<false>);
  r.add("aten::prod.int_out", Device::CPU, &prod_out<true>);
  r.add("aten::any.out", Device::CPU, &any_all_out<true, DimArg::One>);
  r.add("aten::any.dims_out", Device::CPU, &any_all_out<true, DimArg::List>);
  r.add("aten::any.all_out", Device::CPU, &any_all_out<true, DimArg::None>);
  r.add("aten::all.out", Device::CPU, &any_all_out<false, DimArg::One>);
  r.add("aten::all.dims_out", Device::CPU, &any_all_out<false, DimArg::List>);
  r.add("aten::all.all_out", Device::CPU, &any_all_out<false, DimArg::None>);
  r.add("aten::amax.out", Device::CPU, &amax_amin_out<true>);
  r.add("aten::amin.out", Device::CPU, &amax_amin_out<false>);
  r.add("aten::max.unary_out", Device::CPU, &max_min_unary_out<true>);
  r.add("aten::min.unary_out", Device::CPU, &max_min_unary_out<false>);
  r.add("aten::argmax.out", Device::CPU, &argmax_argmin_out<true>);
  r.add("aten::argmin.out", Device::CPU, &argmax_argmin_out<false>);
  r.add("aten::max.dim_max", Device::CPU, &max_min_dim_out<true>);
  r.add("aten::min.dim_min", Device::CPU, &max_min_dim_out<false>);
  r.add("aten::var.correction_out", Device::CPU, &var_out<VarForm::Correction>);
  r.add("aten::var.out", Device::CPU, &var_out<VarForm::Unbiased>);
  r.add("aten::var_mean.correction_out", Device::CPU, &var_out<VarForm::CorrectionWithMean>);
  r.add("aten::cumsum.out", Device::CPU, &cumsum_out);
}

}  // namespace pterun::cpu
