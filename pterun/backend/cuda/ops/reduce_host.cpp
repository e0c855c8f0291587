// The CUDA reductions' table: each compute function turns the front-end's
// argument struct (pterun/ops/reduce.h: the walk as a ReducePlan, the
// accumulator chosen) into a launch description for reduce.cu /
// reduce_misc.cu. A host-compiled file, so that nvcc need not compile the
// CPU reduction engine that reduce_util.h also holds.

#include <cstdlib>

#include "pterun/backend/cuda/ops/nn_launch.h"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/kernels/common/reduce_util.h"
#include "pterun/ops/reduce.h"

namespace pterun::kernels::cuda_ops {
namespace {

using cuda::nn::AccKind;
using cuda::nn::RedKind;
using ops::ReduceAcc;
using ops::ReduceKind;

// The front-end's codes are the launch's.
static_assert(static_cast<int>(RedKind::Sum) == static_cast<int>(ReduceKind::Sum) &&
              static_cast<int>(RedKind::Mean) == static_cast<int>(ReduceKind::Mean) &&
              static_cast<int>(RedKind::Prod) == static_cast<int>(ReduceKind::Prod) &&
              static_cast<int>(RedKind::Max) == static_cast<int>(ReduceKind::Max) &&
              static_cast<int>(RedKind::Min) == static_cast<int>(ReduceKind::Min) &&
              static_cast<int>(RedKind::Any) == static_cast<int>(ReduceKind::Any) &&
              static_cast<int>(RedKind::All) == static_cast<int>(ReduceKind::All));
static_assert(static_cast<int>(AccKind::F32) == static_cast<int>(ReduceAcc::F32) &&
              static_cast<int>(AccKind::F64) == static_cast<int>(ReduceAcc::F64) &&
              static_cast<int>(AccKind::U64) == static_cast<int>(ReduceAcc::U64) &&
              static_cast<int>(AccKind::I64) == static_cast<int>(ReduceAcc::I64) &&
              static_cast<int>(AccKind::Bool) == static_cast<int>(ReduceAcc::Bool));

AccKind acc_kind(ReduceAcc acc) {
  return static_cast<AccKind>(static_cast<int>(acc));
}

void reduce_out(KernelContext& ctx, const ops::ReduceArgs& a) {
  const ReducePlan& p = a.plan;
  cuda::nn::ReduceLaunch l;
  l.in = a.in.data();
  l.in_dtype = a.in.dtype();
  l.out = a.out.data();
  l.out_dtype = a.out.dtype();
  for (size_t d = 0; d < p.kept.rank; ++d) {
    l.kept.push(p.kept.sizes[d], {p.kept.strides[0][d], p.kept.strides[1][d]});
  }
  for (size_t d = 0; d < p.reduced.rank; ++d) {
    l.red.push(p.reduced.sizes[d], {p.reduced.strides[0][d]});
  }
  l.num_out = p.num_out;
  l.count = p.count;
  l.kind = static_cast<RedKind>(static_cast<int>(a.kind));
  l.acc = acc_kind(a.acc);
  cuda::nn::launch_reduce(ctx, l, a.op);
}

void variance_out(KernelContext& ctx, const ops::VarianceArgs& a) {
  const ReducePlan& p = a.plan;
  cuda::nn::VarianceLaunch l;
  l.in = a.in.data();
  l.in_dtype = a.in.dtype();
  l.var = a.var.data();
  l.var_dtype = a.var.dtype();
  if (a.mean != nullptr) {
    l.mean = a.mean->data();
    l.mean_dtype = a.mean->dtype();
  }
  // Both plans walk the same kept dims in the same order (same input and
  // mask); only out's strides differ.
  for (size_t d = 0; d < p.kept.rank; ++d) {
    l.kept.push(p.kept.sizes[d], {p.kept.strides[0][d], p.kept.strides[1][d],
                                  a.mean != nullptr ? a.mean_plan.kept.strides[1][d] : 0});
  }
  for (size_t d = 0; d < p.reduced.rank; ++d) {
    l.red.push(p.reduced.sizes[d], {p.reduced.strides[0][d]});
  }
  l.num_out = p.num_out;
  l.count = p.count;
  l.correction = a.correction;
  cuda::nn::launch_variance(ctx, l, a.op);
}

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

void arg_reduce_out(KernelContext& ctx, const ops::ArgReduceArgs& a) {
  const Tensor& in = a.in;
  cuda::nn::ArgLaunch l;
  if (a.dim.has_value()) {
    l = arg_lines(in, *a.dim, a.keepdim, a.values, a.indices);
  } else {
    // One line over the whole tensor in row-major logical order.
    l.in = in.data();
    l.in_dtype = in.dtype();
    l.indices = a.indices.data_as<int64_t>();
    for (size_t d = 0; d < in.dim(); ++d) l.line.push(in.size(d), {in.stride(d)});
    l.len = in.numel();
    l.line_inner = true;
  }
  l.is_max = a.is_max;
  cuda::nn::launch_arg_reduce(ctx, l, a.op);
}

void cumsum_out(KernelContext& ctx, const ops::CumsumArgs& a) {
  const Tensor& in = a.in;
  Tensor& out = a.out;
  const size_t d = a.dim;
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
  l.acc = acc_kind(a.acc);
  cuda::nn::launch_cumsum(ctx, l, a.op);
}

}  // namespace

const ops::ReduceBackend& reduce_backend() {
  static constexpr ops::ReduceBackend kReduce{&reduce_out, &variance_out, &arg_reduce_out,
                                              &cumsum_out};
  return kReduce;
}

}  // namespace pterun::kernels::cuda_ops
