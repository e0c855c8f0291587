#pragma once

// Argument checks that operator front-ends of several families share. Each
// raises Error InvalidArgument with a message that starts with the
// operator's name.

#include <cstddef>

#include "pterun/core/error.h"
#include "pterun/core/tensor.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::ops {

/// Unless `t` (the argument called `what`: "out", "weight" ...) has the
/// dtype of `ref`, the operator's input.
inline void check_same_dtype(const Tensor& t, const Tensor& ref, const char* what, const char* op) {
  PTERUN_CHECK(t.dtype() == ref.dtype(), ErrorCode::InvalidArgument, op, ": ", what, " dtype ",
               dtype_name(t.dtype()), " differs from the input's ", dtype_name(ref.dtype()));
}

/// The same for an optional argument (nullptr passes).
inline void check_same_dtype(const Tensor* t, const Tensor& ref, const char* what, const char* op) {
  if (t != nullptr) check_same_dtype(*t, ref, what, op);
}

/// Unless `t` has rank `rank`.
inline void check_rank(const Tensor& t, size_t rank, const char* what, const char* op) {
  PTERUN_CHECK(t.dim() == rank, ErrorCode::InvalidArgument, op, ": expected ", what, " of rank ",
               rank, ", got ", describe(t));
}

/// Unless `dtype` belongs to `family` ("op: dtype int32 is not supported",
/// what kernels::visit says for the same case).
inline void check_dtype_in(DType dtype, kernels::Family family, const char* op) {
  PTERUN_CHECK(kernels::in_family(dtype, family), ErrorCode::InvalidArgument, op, ": dtype ",
               dtype_name(dtype), " is not supported");
}

}  // namespace pterun::ops
