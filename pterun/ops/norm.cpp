// Front-ends of the norm family (norm.h): shapes, dtypes and output sizes,
// checked once for every backend.

#include "pterun/ops/norm.h"

#include <algorithm>
#include <array>

#include "pterun/core/checked_math.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/checks.h"

namespace pterun::ops {
namespace {

const NormBackend& norm(const KernelContext& ctx) {
  return *backend(ctx).norm;
}

/// Unless every given per-channel parameter is 1-D of `channels`, with the
/// input's dtype.
void check_channel_params(std::initializer_list<const Tensor*> params, int64_t channels,
                          const Tensor& in, const char* op) {
  for (const Tensor* p : params) {
    if (p == nullptr) continue;
    PTERUN_CHECK(p->dim() == 1 && p->size(0) == channels, ErrorCode::InvalidArgument, op,
                 ": per-channel parameter ", describe(*p), " does not match ", channels,
                 " channels");
    check_same_dtype(*p, in, "parameter", op);
  }
}

}  // namespace

void native_layer_norm_out(KernelContext& ctx, const Tensor& in, IntList normalized_shape,
                           const Tensor* weight, const Tensor* bias, double eps, Tensor& out,
                           Tensor& mean, Tensor& rstd) {
  const char* op = "aten::native_layer_norm.out";
  const size_t k = normalized_shape.size();
  PTERUN_CHECK(k >= 1 && k <= in.dim(), ErrorCode::InvalidArgument, op, ": normalized_shape of ", k,
               " dims for input ", describe(in));
  const size_t lead = in.dim() - k;
  for (size_t i = 0; i < k; ++i) {
    PTERUN_CHECK(in.size(lead + i) == normalized_shape[i], ErrorCode::InvalidArgument, op,
                 ": normalized_shape does not match the trailing dims of ", describe(in));
  }
  for (const Tensor* p : {weight, bias}) {
    if (p == nullptr) continue;
    bool same = p->dim() == k;
    for (size_t i = 0; same && i < k; ++i) same = p->size(i) == normalized_shape[i];
    PTERUN_CHECK(same, ErrorCode::InvalidArgument, op, ": ", p == weight ? "weight " : "bias ",
                 describe(*p), " does not match normalized_shape");
  }
  check_same_dtype(weight, in, "weight", op);
  check_same_dtype(bias, in, "bias", op);
  check_same_dtype(out, in, "out", op);
  check_same_dtype(mean, in, "mean", op);
  check_same_dtype(rstd, in, "rstd", op);
  kernels::resize_output(out, in.sizes(), op);
  kernels::Shape stat_shape;
  for (size_t d = 0; d < in.dim(); ++d) stat_shape.push_back(d < lead ? in.size(d) : 1);
  kernels::resize_output(mean, stat_shape.span(), op);
  kernels::resize_output(rstd, stat_shape.span(), op);
  check_dtype_in(in.dtype(), kernels::Family::FloatHBF16, op);
  norm(ctx).layer_norm(ctx, {in, lead, weight, bias, eps, out, mean, rstd});
}

void batch_norm_no_training_out(KernelContext& ctx, const Tensor& in, const Tensor* weight,
                                const Tensor* bias, const Tensor& running_mean,
                                const Tensor& running_var, double /*momentum*/, double eps,
                                Tensor& out, Tensor& out1, Tensor& out2) {
  const char* op = "aten::_native_batch_norm_legit_no_training.out";
  PTERUN_CHECK(in.dim() >= 2, ErrorCode::InvalidArgument, op,
               ": input must have at least 2 dims (N, C, ...), got ", describe(in));
  check_channel_params({weight, bias, &running_mean, &running_var}, in.size(1), in, op);
  check_same_dtype(out, in, "out", op);
  kernels::resize_output(out, in.sizes(), op);
  const int64_t zero = 0;
  kernels::resize_output(out1, std::span<const int64_t>(&zero, 1), op);
  kernels::resize_output(out2, std::span<const int64_t>(&zero, 1), op);
  check_dtype_in(in.dtype(), kernels::Family::FloatHBF16, op);
  norm(ctx).batch_norm(ctx, {in, weight, bias, running_mean, running_var, eps, out});
}

void native_group_norm_out(KernelContext& ctx, const Tensor& in, const Tensor* weight,
                           const Tensor* bias, int64_t batch, int64_t channels, int64_t hxw,
                           int64_t groups, double eps, Tensor& out, Tensor& mean, Tensor& rstd) {
  const char* op = "aten::native_group_norm.out";
  const std::array<int64_t, 3> dims = {batch, channels, hxw};
  const auto expected = checked_numel(std::span<const int64_t>(dims));
  PTERUN_CHECK(in.dim() >= 2 && in.size(0) == batch && in.size(1) == channels && expected &&
                   static_cast<uint64_t>(in.numel()) == *expected,
               ErrorCode::InvalidArgument, op, ": input ", describe(in),
               " does not match N=", batch, " C=", channels, " HxW=", hxw);
  PTERUN_CHECK(groups > 0 && channels % groups == 0, ErrorCode::InvalidArgument, op, ": ", channels,
               " channels cannot be split into ", groups, " groups");
  check_channel_params({weight, bias}, channels, in, op);
  check_same_dtype(out, in, "out", op);
  check_same_dtype(mean, in, "mean", op);
  check_same_dtype(rstd, in, "rstd", op);
  kernels::resize_output(out, in.sizes(), op);
  const std::array<int64_t, 2> stat_shape = {batch, groups};
  kernels::resize_output(mean, stat_shape, op);
  kernels::resize_output(rstd, stat_shape, op);
  if (batch == 0) return;
  check_dtype_in(in.dtype(), kernels::Family::FloatHBF16, op);
  norm(ctx).group_norm(ctx, {in, weight, bias, batch, channels, groups, eps, out, mean, rstd});
}

void rms_norm_out(KernelContext& ctx, const Tensor& x, const Tensor& eps, const Tensor* weight,
                  Tensor& out) {
  const char* op = kernels::kRmsNormKernel;
  const DType s = eps.dtype();
  PTERUN_CHECK(eps.numel() == 1, ErrorCode::InvalidArgument, op, ": eps ", describe(eps),
               " must have one element");
  check_dtype_in(s, kernels::Family::FloatHBF16, op);
  // Half-precision x or out beside float32 steps: torch's x.float() and
  // .type_as(x) around the norm, exact widening and one rounding.
  auto fits = [s](DType t) {
    return t == s || (s == DType::Float32 && (t == DType::Float16 || t == DType::BFloat16));
  };
  PTERUN_CHECK(fits(x.dtype()) && fits(out.dtype()), ErrorCode::InvalidArgument, op, ": x ",
               describe(x), " and out ", describe(out), " must have eps's dtype ", dtype_name(s),
               " (or float16 / bfloat16 beside float32 steps)");
  PTERUN_CHECK(x.dim() >= 1, ErrorCode::InvalidArgument, op, ": x ", describe(x),
               " must have a dim to normalise");
  const int64_t n = x.size(x.dim() - 1);
  if (weight != nullptr) {
    PTERUN_CHECK(weight->dim() == 1 && weight->size(0) == n, ErrorCode::InvalidArgument, op,
                 ": weight ", describe(*weight), " does not match x's last dim of ", n);
    check_same_dtype(*weight, out, "weight", op);
  }
  kernels::resize_output(out, x.sizes(), op);
  // Each row is read whole before it is written: out may be x itself, not
  // another overlap of it.
  const bool same_place = out.data() == x.data() && out.element_size() == x.element_size() &&
                          std::equal(out.strides().begin(), out.strides().end(),
                                     x.strides().begin(), x.strides().end());
  PTERUN_CHECK(!share_bytes(out, x) || same_place, ErrorCode::InvalidArgument, op, ": out ",
               describe(out), " overlaps x ", describe(x), " other than element for element");
  PTERUN_CHECK(!share_bytes(out, eps) && (weight == nullptr || !share_bytes(out, *weight)),
               ErrorCode::InvalidArgument, op, ": out overlaps eps or weight");
  if (out.numel() == 0) return;
  norm(ctx).rms_norm(ctx, {x, eps, weight, out});
}

}  // namespace pterun::ops
