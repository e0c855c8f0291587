// Reductions on the CPU (sum, mean, prod, amax/amin, any/all, var) over the
// shared reduction engine, arg-reductions and max/min with indices, and
// cumsum. The front-ends (pterun/ops/reduce.cpp) check, resize, plan the
// walk and choose the accumulator.

#include <cmath>
#include <limits>
#include <optional>

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/kernels/common/parallel.h"
#include "pterun/kernels/common/reduce_util.h"
#include "pterun/ops/reduce.h"

namespace pterun::cpu {
namespace {

using kernels::DimMask;
using kernels::Family;
using kernels::KernelContext;

/// A sum, mean or product in the accumulator the front-end chose.
template <template <typename> class Op>
void fold_in(KernelContext& ctx, const ops::ReduceArgs& a) {
  const kernels::ReducePlan& p = a.plan;
  switch (a.acc) {
    case ops::ReduceAcc::F64: {
      Op<double> op;
      if constexpr (requires { op.denom; }) op.denom = static_cast<double>(p.count);
      return kernels::reduce(ctx, a.in, a.out, p, op);
    }
    case ops::ReduceAcc::F32: {
      Op<float> op;
      if constexpr (requires { op.denom; }) op.denom = static_cast<float>(p.count);
      return kernels::reduce(ctx, a.in, a.out, p, op);
    }
    case ops::ReduceAcc::U64: return kernels::reduce(ctx, a.in, a.out, p, Op<uint64_t>{});
    default: break;
  }
  throw_error(ErrorCode::Internal, str_cat(a.op, ": unsupported accumulator for this reduction"));
}

/// amax / amin / max / min: folded in the input's compute type (integers in
/// their own type, which gives the extreme the front-end's I64 would).
template <bool kMax>
void extreme(KernelContext& ctx, const ops::ReduceArgs& a) {
  kernels::visit(a.in.dtype(), Family::RealHBBF16, a.op, [&]<typename T>() {
    kernels::reduce(ctx, a.in, a.out, a.plan, kernels::ExtremeOp<kernels::ComputeOf<T>, kMax>{});
  });
}

void reduce_out(KernelContext& ctx, const ops::ReduceArgs& a) {
  switch (a.kind) {
    case ops::ReduceKind::Sum: return fold_in<kernels::SumOp>(ctx, a);
    case ops::ReduceKind::Mean: return fold_in<kernels::MeanOp>(ctx, a);
    case ops::ReduceKind::Prod: return fold_in<kernels::ProdOp>(ctx, a);
    case ops::ReduceKind::Max: return extreme<true>(ctx, a);
    case ops::ReduceKind::Min: return extreme<false>(ctx, a);
    case ops::ReduceKind::Any: return kernels::reduce(ctx, a.in, a.out, a.plan, kernels::AnyOp{});
    case ops::ReduceKind::All: return kernels::reduce(ctx, a.in, a.out, a.plan, kernels::AllOp{});
  }
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

void variance_out(KernelContext& ctx, const ops::VarianceArgs& a) {
  variance(ctx, a.in, &a.var, a.mean, a.plan, a.mean_plan, a.correction);
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

template <bool kMax>
void arg_reduce(KernelContext& ctx, const ops::ArgReduceArgs& a) {
  if (!a.dim.has_value()) {
    kernels::visit(a.in.dtype(), Family::RealHBF16, a.op, [&]<typename T>() {
      a.indices.data_as<int64_t>()[0] = arg_reduce_all<T, kMax>(a.in);
    });
    return;
  }
  kernels::visit(a.in.dtype(), Family::RealHBBF16, a.op, [&]<typename T>() {
    arg_reduce_dim<T, kMax>(ctx, a.in, *a.dim, a.keepdim, a.values, a.indices);
  });
}

void arg_reduce_out(KernelContext& ctx, const ops::ArgReduceArgs& a) {
  if (a.is_max) {
    arg_reduce<true>(ctx, a);
  } else {
    arg_reduce<false>(ctx, a);
  }
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

void cumsum_out(KernelContext& ctx, const ops::CumsumArgs& a) {
  switch (a.acc) {
    case ops::ReduceAcc::F64: return cumsum_lines<double>(ctx, a.in, a.out, a.dim);
    case ops::ReduceAcc::F32: return cumsum_lines<float>(ctx, a.in, a.out, a.dim);
    default: return cumsum_lines<uint64_t>(ctx, a.in, a.out, a.dim);
  }
}

}  // namespace

const ops::ReduceBackend& reduce_backend() {
  static constexpr ops::ReduceBackend kReduce{&reduce_out, &variance_out, &arg_reduce_out,
                                              &cumsum_out};
  return kReduce;
}

}  // namespace pterun::cpu
