// Front-ends of the softmax family (softmax.h).

#include "pterun/ops/softmax.h"

#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/checks.h"

namespace pterun::ops {
namespace {

void softmax_any(KernelContext& ctx, const Tensor& in, int64_t dim, bool half_to_float, Tensor& out,
                 bool log, bool safe = false) {
  const char* op = log    ? "aten::_log_softmax.out"
                   : safe ? kernels::kSafeSoftmaxKernel
                          : "aten::_softmax.out";
  PTERUN_CHECK(!half_to_float, ErrorCode::InvalidArgument, op,
               ": half_to_float=True is not supported");
  PTERUN_CHECK(kernels::is_floating(in.dtype()), ErrorCode::InvalidArgument, op, ": input dtype ",
               dtype_name(in.dtype()), " is not floating");
  check_same_dtype(out, in, "out", op);
  const auto d = static_cast<size_t>(kernels::wrap_dim(dim, static_cast<int64_t>(in.dim()), op));
  kernels::resize_output(out, in.sizes(), op);
  if (in.numel() == 0) return;
  backend(ctx).softmax->softmax(ctx, {in, d, log, out, safe});
}

}  // namespace

void softmax_out(KernelContext& ctx, const Tensor& in, int64_t dim, bool half_to_float,
                 Tensor& out) {
  softmax_any(ctx, in, dim, half_to_float, out, false);
}

void safe_softmax_out(KernelContext& ctx, const Tensor& in, int64_t dim, bool half_to_float,
                      Tensor& out) {
  softmax_any(ctx, in, dim, half_to_float, out, false, true);
}

void log_softmax_out(KernelContext& ctx, const Tensor& in, int64_t dim, bool half_to_float,
                     Tensor& out) {
  softmax_any(ctx, in, dim, half_to_float, out, true);
}

}  // namespace pterun::ops
