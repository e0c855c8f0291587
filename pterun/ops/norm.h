#pragma once

// The norm family: layer norm over trailing dims, inference batch norm and
// group norm. The front-ends (norm.cpp) check shapes and dtypes and resize
// the outputs; a backend computes from these argument structs.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "pterun/core/tensor.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

/// Rows of dims [lead, rank) of `in` normalised: out = (in - mean) * rstd
/// [* weight] [+ bias]; mean and rstd have in's leading dims and size-1
/// trailing dims. One floating dtype throughout (checked).
struct LayerNormArgs {
  const Tensor& in;
  size_t lead;
  const Tensor* weight;  // normalized_shape, or nullptr
  const Tensor* bias;
  double eps;
  Tensor& out;
  Tensor& mean;
  Tensor& rstd;
};

/// Inference batch norm over dim 1 of (N, C, ...): out = (in - mean) /
/// sqrt(var + eps) [* weight] [+ bias], per-channel parameters of C.
struct BatchNormArgs {
  const Tensor& in;
  const Tensor* weight;
  const Tensor* bias;
  const Tensor& running_mean;
  const Tensor& running_var;
  double eps;
  Tensor& out;
};

/// Group norm of (N, C, ...) in `groups` groups of C / groups channels;
/// mean and rstd are (N, groups).
struct GroupNormArgs {
  const Tensor& in;
  const Tensor* weight;
  const Tensor* bias;
  int64_t batch;
  int64_t channels;
  int64_t groups;
  double eps;
  Tensor& out;
  Tensor& mean;
  Tensor& rstd;
};

/// RMS norm over the last dim, as torch's decomposed RMSNorm computes it
/// step by step in the dtype S of `eps` (each step's result rounded to S):
///   s = x * x; m = mean(s, -1); a = m + eps; r = rsqrt(a); y = x * r
/// then y rounded to out's dtype O and, given a weight (dtype O, the row's
/// length), out = y * weight rounded to O. x is S or, for S float32, a
/// float16 / bfloat16 tensor read as float32 (torch's `x.float()`); O is S
/// or, for S float32, float16 / bfloat16 (torch's `.type_as(x)`). The mean
/// sums in float (double for float64) in an order of the backend's
/// choosing, so results match the unfused steps within that sum's
/// rounding. out is x's shape and overlaps x exactly or not at all.
/// Whether a backend's element types X (x), S (the steps) and O (out) are
/// a combination RmsNormArgs allows: X and O are S, or narrower beside
/// float32 steps (a backend instantiates its kernel for these alone).
template <typename X, typename S, typename O>
inline constexpr bool kRmsNormTypes = (std::is_same_v<X, S> || std::is_same_v<S, float>)&&(
                                          std::is_same_v<O, S> ||
                                          std::is_same_v<S, float>)&&sizeof(X) <= sizeof(S) &&
                                      sizeof(O) <= sizeof(S);

struct RmsNormArgs {
  const Tensor& in;
  const Tensor& eps;     // one element, dtype S
  const Tensor* weight;  // [in.size(-1)] of out's dtype, or nullptr
  Tensor& out;
};

struct NormBackend {
  void (*layer_norm)(KernelContext& ctx, const LayerNormArgs& a);
  void (*batch_norm)(KernelContext& ctx, const BatchNormArgs& a);
  void (*group_norm)(KernelContext& ctx, const GroupNormArgs& a);
  void (*rms_norm)(KernelContext& ctx, const RmsNormArgs& a);
};

// native_layer_norm.out(input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias,
//   float eps, *, out0, out1, out2)
void native_layer_norm_out(KernelContext& ctx, const Tensor& in, IntList normalized_shape,
                           const Tensor* weight, const Tensor* bias, double eps, Tensor& out,
                           Tensor& mean, Tensor& rstd);
// _native_batch_norm_legit_no_training.out(input, Tensor? weight, Tensor? bias,
//   Tensor running_mean, Tensor running_var, float momentum, float eps, *, out0, out1, out2)
void batch_norm_no_training_out(KernelContext& ctx, const Tensor& in, const Tensor* weight,
                                const Tensor* bias, const Tensor& running_mean,
                                const Tensor& running_var, double momentum, double eps, Tensor& out,
                                Tensor& out1, Tensor& out2);
// native_group_norm.out(input, Tensor? weight, Tensor? bias, SymInt N, SymInt C,
//   SymInt HxW, int group, float eps, *, out0, out1, out2)
void native_group_norm_out(KernelContext& ctx, const Tensor& in, const Tensor* weight,
                           const Tensor* bias, int64_t batch, int64_t channels, int64_t hxw,
                           int64_t groups, double eps, Tensor& out, Tensor& mean, Tensor& rstd);

// pterun::rms_norm.out(Tensor x, Tensor eps, Tensor? weight, *, Tensor(a!) out) -> Tensor(a!):
// RmsNormArgs (kernels/internal_ops.h, kRmsNormKernel; made at load from
// torch's decomposed RMSNorm, executor/rewrite_norm.cpp).
void rms_norm_out(KernelContext& ctx, const Tensor& x, const Tensor& eps, const Tensor* weight,
                  Tensor& out);

}  // namespace pterun::ops
