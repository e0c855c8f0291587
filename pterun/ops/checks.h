#pragma once

// Argument checks that operator front-ends of several families share. Each
// raises Error InvalidArgument with a message that starts with the
// operator's name.

#include <cstddef>

#include "pterun/core/tensor.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::ops {

/// Unless `t` (the argument called `what`: "out", "weight" ...) has the
/// dtype of `ref`, the operator's input.
void check_same_dtype(const Tensor& t, const Tensor& ref, const char* what, const char* op);

/// The same for an optional argument (nullptr passes).
inline void check_same_dtype(const Tensor* t, const Tensor& ref, const char* what, const char* op) {
  if (t != nullptr) check_same_dtype(*t, ref, what, op);
}

/// Unless `t` has rank `rank`.
void check_rank(const Tensor& t, size_t rank, const char* what, const char* op);

/// Unless `dtype` belongs to `family` ("op: dtype int32 is not supported",
/// what kernels::visit says for the same case).
void check_dtype_in(DType dtype, kernels::Family family, const char* op);

}  // namespace pterun::ops
