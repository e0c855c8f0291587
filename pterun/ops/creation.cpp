// Front-ends of the creation family (creation.h): output sizes, range
// checks and fill values, once for every backend.

#include "pterun/ops/creation.h"

#include <cmath>
#include <type_traits>

#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/checks.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::ops {
namespace {

using kernels::Family;

const CreationBackend& creation(const KernelContext& ctx) {
  return *backend(ctx).creation;
}

void fill(const KernelContext& ctx, Tensor& out, const Scalar& value, const char* op) {
  fill_scalar(ctx, out, value, op, mover(ctx));
}

/// arange's checks and length, following ATen: integer outputs use start
/// and step truncated to int64 (int64 also sizes with them); floating
/// outputs size with ceil((end - start) / step). Resizes the 1-D `out` to
/// the length. Error InvalidArgument for bad ranges, NaN/inf bounds, a zero
/// (or truncated-to-zero) step, overflow, or an out dtype outside RealHBF16.
void prepare_arange(Tensor& out, const Scalar& start, const Scalar& end, const Scalar& step,
                    const char* op) {
  const double ds = start.to_double(), de = end.to_double(), dt = step.to_double();
  PTERUN_CHECK(std::isfinite(ds) && std::isfinite(de), ErrorCode::InvalidArgument, op,
               ": unsupported range ", ds, " -> ", de);
  PTERUN_CHECK(dt != 0, ErrorCode::InvalidArgument, op, ": step must be nonzero");
  PTERUN_CHECK((dt > 0 && de >= ds) || (dt < 0 && de <= ds), ErrorCode::InvalidArgument, op,
               ": upper bound and lower bound inconsistent with step sign");
  kernels::visit(out.dtype(), Family::RealHBF16, op, [&]<typename T>() {
    if constexpr (std::is_integral_v<T>) {
      PTERUN_CHECK(step.to_int() != 0, ErrorCode::InvalidArgument, op, ": step ", dt,
                   " truncates to zero for an integer output");
    }
    double length;
    if constexpr (std::is_same_v<T, int64_t>) {
      const int64_t s = start.to_int(), e = end.to_int(), st = step.to_int();
      // ATen's (end - start + step - sign(step)) / step, overflow-checked.
      int64_t span = 0;
      bool overflow = __builtin_sub_overflow(e, s, &span) ||
                      __builtin_add_overflow(span, st - (st > 0 ? 1 : -1), &span);
      PTERUN_CHECK(!overflow, ErrorCode::InvalidArgument, op, ": range overflows");
      int64_t count = span / st;
      length = count < 0 ? -1.0 : static_cast<double>(count);
    } else {
      length = std::ceil((de - ds) / dt);
    }
    PTERUN_CHECK(length >= 0 && length < 9.2e18, ErrorCode::InvalidArgument, op,
                 ": invalid length ", length);
    const int64_t n[1] = {static_cast<int64_t>(length)};
    kernels::resize_output(out, n, op);
  });
}

void arange_any(KernelContext& ctx, const Scalar& start, const Scalar& end, const Scalar& step,
                Tensor& out, const char* op) {
  prepare_arange(out, start, end, step, op);
  if (out.numel() == 0) return;
  creation(ctx).arange(ctx, {out, start, step, op});
}

}  // namespace

void full_out(KernelContext& ctx, IntList size, Scalar fill_value, Tensor& out) {
  const char* op = "aten::full.out";
  kernels::resize_output(out, size, op);
  fill(ctx, out, fill_value, op);
}

void full_like_out(KernelContext& ctx, const Tensor& self, Scalar fill_value,
                   std::optional<int64_t> memory_format, Tensor& out) {
  const char* op = "aten::full_like.out";
  check_memory_format(memory_format, out, op);
  kernels::resize_output(out, self.sizes(), op);
  fill(ctx, out, fill_value, op);
}

void scalar_tensor_out(KernelContext& ctx, Scalar s, Tensor& out) {
  const char* op = "aten::scalar_tensor.out";
  kernels::resize_output(out, {}, op);
  fill(ctx, out, s, op);
}

void zeros_out(KernelContext& ctx, IntList size, Tensor& out) {
  const char* op = "aten::zeros.out";
  kernels::resize_output(out, size, op);
  fill(ctx, out, Scalar::from_int(0), op);
}

void ones_out(KernelContext& ctx, IntList size, Tensor& out) {
  const char* op = "aten::ones.out";
  kernels::resize_output(out, size, op);
  fill(ctx, out, Scalar::from_int(1), op);
}

void zeros_like_out(KernelContext& ctx, const Tensor& self, std::optional<int64_t> memory_format,
                    Tensor& out) {
  const char* op = "aten::zeros_like.out";
  check_memory_format(memory_format, out, op);
  kernels::resize_output(out, self.sizes(), op);
  fill(ctx, out, Scalar::from_int(0), op);
}

void ones_like_out(KernelContext& ctx, const Tensor& self, std::optional<int64_t> memory_format,
                   Tensor& out) {
  const char* op = "aten::ones_like.out";
  check_memory_format(memory_format, out, op);
  kernels::resize_output(out, self.sizes(), op);
  fill(ctx, out, Scalar::from_int(1), op);
}

void empty_out(KernelContext& /*ctx*/, IntList size, std::optional<int64_t> memory_format,
               Tensor& out) {
  const char* op = "aten::empty.out";
  check_memory_format(memory_format, out, op);
  kernels::resize_output(out, size, op);
}

void empty_like_out(KernelContext& /*ctx*/, const Tensor& self,
                    std::optional<int64_t> memory_format, Tensor& out) {
  const char* op = "aten::empty_like.out";
  check_memory_format(memory_format, out, op);
  kernels::resize_output(out, self.sizes(), op);
}

void fill_scalar_out(KernelContext& ctx, const Tensor& self, Scalar value, Tensor& out) {
  const char* op = "aten::fill.Scalar_out";
  check_same_dtype(out, self, "out", op);
  kernels::resize_output(out, self.sizes(), op);
  fill(ctx, out, value, op);
}

void fill_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& value, Tensor& out) {
  const char* op = "aten::fill.Tensor_out";
  check_same_dtype(out, self, "out", op);
  check_rank(value, 0, "a value", op);
  kernels::resize_output(out, self.sizes(), op);
  creation(ctx).fill_tensor(ctx, out, value, op);
}

void arange_out(KernelContext& ctx, Scalar end, Tensor& out) {
  arange_any(ctx, Scalar::from_int(0), end, Scalar::from_int(1), out, "aten::arange.out");
}

void arange_start_out(KernelContext& ctx, Scalar start, Scalar end, Scalar step, Tensor& out) {
  arange_any(ctx, start, end, step, out, "aten::arange.start_out");
}

void linspace_out(KernelContext& ctx, Scalar start, Scalar end, int64_t steps, Tensor& out) {
  const char* op = "aten::linspace.out";
  PTERUN_CHECK(steps >= 0, ErrorCode::InvalidArgument, op, ": steps must be >= 0, got ", steps);
  const int64_t n[1] = {steps};
  kernels::resize_output(out, n, op);
  check_dtype_in(out.dtype(), Family::RealHBF16, op);
  if (steps == 0) return;
  creation(ctx).linspace(ctx, {out, start, end, steps});
}

}  // namespace pterun::ops
