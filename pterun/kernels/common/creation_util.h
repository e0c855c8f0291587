#pragma once

// Host-side argument checks and output sizing of the range creation ops
// (arange, linspace), shared by the CPU and CUDA kernels.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "pterun/core/error.h"
#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::kernels {

/// arange's checks and length, following ATen: integer outputs use start
/// and step truncated to int64 (int64 also sizes with them); floating
/// outputs size with ceil((end - start) / step). Resizes the 1-D `out` to
/// the length. Error InvalidArgument for bad ranges, NaN/inf bounds, a zero
/// (or truncated-to-zero) step, overflow, or an out dtype outside RealHBF16.
inline void prepare_arange(Tensor& out, const Scalar& start, const Scalar& end, const Scalar& step,
                           const char* op) {
  const double ds = start.to_double(), de = end.to_double(), dt = step.to_double();
  PTERUN_CHECK(std::isfinite(ds) && std::isfinite(de), ErrorCode::InvalidArgument, op,
               ": unsupported range ", ds, " -> ", de);
  PTERUN_CHECK(dt != 0, ErrorCode::InvalidArgument, op, ": step must be nonzero");
  PTERUN_CHECK((dt > 0 && de >= ds) || (dt < 0 && de <= ds), ErrorCode::InvalidArgument, op,
               ": upper bound and lower bound inconsistent with step sign");
  visit(out.dtype(), Family::RealHBF16, op, [&]<typename T>() {
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
    resize_output(out, n, op);
  });
}

/// linspace's checks: steps >= 0; resizes the 1-D `out` to steps.
inline void prepare_linspace(Tensor& out, int64_t steps, const char* op) {
  PTERUN_CHECK(steps >= 0, ErrorCode::InvalidArgument, op, ": steps must be >= 0, got ", steps);
  const int64_t n[1] = {steps};
  resize_output(out, n, op);
}

}  // namespace pterun::kernels
