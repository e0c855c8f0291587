#include "pterun/ops/checks.h"

#include "pterun/core/error.h"

namespace pterun::ops {

void check_same_dtype(const Tensor& t, const Tensor& ref, const char* what, const char* op) {
  PTERUN_CHECK(t.dtype() == ref.dtype(), ErrorCode::InvalidArgument, op, ": ", what, " dtype ",
               dtype_name(t.dtype()), " differs from the input's ", dtype_name(ref.dtype()));
}

void check_rank(const Tensor& t, size_t rank, const char* what, const char* op) {
  PTERUN_CHECK(t.dim() == rank, ErrorCode::InvalidArgument, op, ": expected ", what, " of rank ",
               rank, ", got ", describe(t));
}

void check_dtype_in(DType dtype, kernels::Family family, const char* op) {
  PTERUN_CHECK(kernels::in_family(dtype, family), ErrorCode::InvalidArgument, op, ": dtype ",
               dtype_name(dtype), " is not supported");
}

}  // namespace pterun::ops
