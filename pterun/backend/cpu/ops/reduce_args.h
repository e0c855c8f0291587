#pragma once

// Argument handling shared by the CPU and CUDA reduction kernels: the
// optional dtype argument, dtype-family checks, and output resizing plus
// the iteration plan of a reduction.

#include <optional>

#include "pterun/core/error.h"
#include "pterun/core/tensor.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/reduce_util.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::cpu {

/// A `ScalarType? dtype` argument.
inline std::optional<DType> optional_dtype(const Value& v, const char* op) {
  std::optional<int64_t> n = v.to_optional_int();
  if (!n.has_value()) return std::nullopt;
  std::optional<DType> d = dtype_from_number(static_cast<int>(*n));
  PTERUN_CHECK(d.has_value(), ErrorCode::InvalidArgument, op, ": unknown dtype number ", *n);
  return d;
}

inline void check_dtype_arg(std::optional<DType> dtype, const Tensor& out, const char* op) {
  PTERUN_CHECK(!dtype.has_value() || *dtype == out.dtype(), ErrorCode::InvalidArgument, op,
               ": out has dtype ", dtype_name(out.dtype()), " but dtype=", dtype_name(*dtype),
               " was requested");
}

inline void check_real(const Tensor& t, kernels::Family family, const char* what, const char* op) {
  PTERUN_CHECK(kernels::in_family(t.dtype(), family), ErrorCode::InvalidArgument, op, ": ", what,
               " dtype ", dtype_name(t.dtype()), " is not supported");
}

/// Resizes `out` for a reduction of `in` over `mask` and plans the walk.
inline kernels::ReducePlan prepare_reduction(const Tensor& in, Tensor& out, kernels::DimMask mask,
                                             bool keepdim, const char* op) {
  kernels::Shape shape = kernels::reduced_shape(in, mask, keepdim);
  kernels::resize_output(out, shape.span(), op);
  return kernels::make_reduce_plan(in, out, mask, keepdim);
}

}  // namespace pterun::cpu
