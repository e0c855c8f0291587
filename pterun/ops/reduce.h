#pragma once

// The reduce family: folds over dims (sum, mean, prod, any/all, amax/amin,
// max/min of everything), variance, arg-reductions (argmax/argmin, max/min
// with indices) and cumsum. The front-ends (reduce.cpp) check dtypes, resize
// the outputs, plan the walk and choose the accumulator; a backend computes
// from these argument structs.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/kernels/common/reduce_util.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

/// What a fold computes. A sum or mean into a bool out arrives as Any, a
/// product as All.
enum class ReduceKind : uint8_t { Sum, Mean, Prod, Max, Min, Any, All };

/// What a fold accumulates in: float, double, wrapping 64-bit integer,
/// int64, bool. Sums, means and products follow out's dtype (F64 for an f64
/// out or an f64 input into a floating out, F32 for other floating outs,
/// U64 for integral outs, Bool for All / Any); Max / Min follow the input's
/// (F64, F32 for f16/bf16/f32, I64 for integers and bool: any type that
/// holds the input gives the same extreme).
enum class ReduceAcc : uint8_t { F32, F64, U64, I64, Bool };

/// out[o] = the fold of the elements of `in` that `plan` maps to output o
/// (a Mean divides by plan.count). out is resized; plan.num_out may be 0.
struct ReduceArgs {
  const Tensor& in;
  Tensor& out;
  const kernels::ReducePlan& plan;
  ReduceKind kind;
  ReduceAcc acc;
  const char* op;
};

/// Two-pass variance (and mean) in double over what `plan` reduces:
/// var = sum((x - mean)^2) / max(0, count - correction). Floating dtypes
/// (checked). `mean_plan` walks the same kept dims in the same order with
/// mean's strides (it is `plan` when there is no mean out).
struct VarianceArgs {
  const Tensor& in;
  Tensor& var;
  Tensor* mean;  // var_mean's second out, or nullptr
  const kernels::ReducePlan& plan;
  const kernels::ReducePlan& mean_plan;
  double correction;
  const char* op;
};

/// The index (int64) and, with `values`, the value of the extreme of each
/// line along `dim` of `in` (the first on ties; NaN counts as the maximum
/// and the minimum, the first NaN winning). Without a dim, the index in
/// row-major order of the extreme of the whole non-empty tensor, and no
/// values. Along a dim, that dim is non-empty (or the input is 0-dim); the
/// outs are resized to in reduced over dim.
struct ArgReduceArgs {
  const Tensor& in;
  std::optional<size_t> dim;
  bool keepdim;
  bool is_max;
  Tensor* values;  // max.dim_max / min.dim_min: of in's dtype; else nullptr
  Tensor& indices;
  const char* op;
};

/// out = the running sum of `in` along `dim`, accumulated in `acc` (F64,
/// F32 or U64, by out's dtype); out resized to in, which is non-empty.
struct CumsumArgs {
  const Tensor& in;
  size_t dim;
  ReduceAcc acc;
  Tensor& out;
  const char* op;
};

struct ReduceBackend {
  void (*reduce)(KernelContext& ctx, const ReduceArgs& a);
  void (*variance)(KernelContext& ctx, const VarianceArgs& a);
  void (*arg_reduce)(KernelContext& ctx, const ArgReduceArgs& a);
  void (*cumsum)(KernelContext& ctx, const CumsumArgs& a);
};

// sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None,
//   Tensor(a!) out)
void sum_dim_out(KernelContext& ctx, const Tensor& in, std::optional<IntList> dim, bool keepdim,
                 std::optional<int64_t> dtype, Tensor& out);
// sum.out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)
void sum_out(KernelContext& ctx, const Tensor& in, std::optional<int64_t> dtype, Tensor& out);
// mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None,
//   Tensor(a!) out)
void mean_dim_out(KernelContext& ctx, const Tensor& in, std::optional<IntList> dim, bool keepdim,
                  std::optional<int64_t> dtype, Tensor& out);
// mean.dtype_out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)
void mean_dtype_out(KernelContext& ctx, const Tensor& in, std::optional<int64_t> dtype,
                    Tensor& out);
// prod.out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)
void prod_out(KernelContext& ctx, const Tensor& in, std::optional<int64_t> dtype, Tensor& out);
// prod.int_out(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None,
//   Tensor(a!) out)
void prod_int_out(KernelContext& ctx, const Tensor& in, int64_t dim, bool keepdim,
                  std::optional<int64_t> dtype, Tensor& out);

// any.out / all.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out)
template <bool kAny>
void any_all_dim_out(KernelContext& ctx, const Tensor& in, int64_t dim, bool keepdim, Tensor& out);
// any.dims_out / all.dims_out(Tensor self, int[1]? dim=None, bool keepdim=False, *,
//   Tensor(a!) out)
template <bool kAny>
void any_all_dims_out(KernelContext& ctx, const Tensor& in, std::optional<IntList> dim,
                      bool keepdim, Tensor& out);
// any.all_out / all.all_out(Tensor self, *, Tensor(a!) out)
template <bool kAny>
void any_all_all_out(KernelContext& ctx, const Tensor& in, Tensor& out);

// amax.out / amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out)
template <bool kMax>
void amax_amin_out(KernelContext& ctx, const Tensor& in, IntList dim, bool keepdim, Tensor& out);
// max.unary_out / min.unary_out(Tensor self, *, Tensor(a!) out)
template <bool kMax>
void max_min_unary_out(KernelContext& ctx, const Tensor& in, Tensor& out);

// var.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None,
//   bool keepdim=False, Tensor(a!) out)
void var_correction_out(KernelContext& ctx, const Tensor& in, std::optional<IntList> dim,
                        std::optional<Scalar> correction, bool keepdim, Tensor& out);
// var.out(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False, *, Tensor(a!) out)
void var_out(KernelContext& ctx, const Tensor& in, std::optional<IntList> dim, bool unbiased,
             bool keepdim, Tensor& out);
// var_mean.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None,
//   bool keepdim=False, Tensor(a!) out0, Tensor(b!) out1)
void var_mean_correction_out(KernelContext& ctx, const Tensor& in, std::optional<IntList> dim,
                             std::optional<Scalar> correction, bool keepdim, Tensor& out0,
                             Tensor& out1);

// argmax.out / argmin.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out)
template <bool kMax>
void argmax_argmin_out(KernelContext& ctx, const Tensor& in, std::optional<int64_t> dim,
                       bool keepdim, Tensor& out);
// max.dim_max / min.dim_min(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) values,
//   Tensor(b!) indices)
template <bool kMax>
void max_min_dim_out(KernelContext& ctx, const Tensor& in, int64_t dim, bool keepdim,
                     Tensor& values, Tensor& indices);

// cumsum.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out)
void cumsum_out(KernelContext& ctx, const Tensor& in, int64_t dim, std::optional<int64_t> dtype,
                Tensor& out);

}  // namespace pterun::ops
