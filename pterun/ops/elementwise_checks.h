#pragma once

// Argument checks of the elementwise front-ends (elementwise_*.cpp):
// dtypes, promotion and output resizing, each raising Error
// InvalidArgument with a message that starts with the operator's name.

#include <optional>
#include <string_view>

#include "pterun/core/error.h"
#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/core/text.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::ops {

/// Error InvalidArgument unless t's dtype is in `family` ("op: what has
/// unsupported dtype ...").
inline void check_dtype(const Tensor& t, kernels::Family family, const char* op, const char* what) {
  PTERUN_CHECK(kernels::in_family(t.dtype(), family), ErrorCode::InvalidArgument, op, ": ", what,
               " has unsupported dtype ", dtype_name(t.dtype()));
}

/// Checks of a tensor-tensor op whose result has the promoted type: input
/// dtypes, the promoted type (never bool unless `bool_ok`), castable into
/// out; resizes out to the broadcast shape. Returns the promoted type.
inline DType prepare_binary(const Tensor& a, const Tensor& b, Tensor& out, const char* op,
                            bool bool_ok = true) {
  check_dtype(a, kernels::Family::RealHBBF16, op, "self");
  check_dtype(b, kernels::Family::RealHBBF16, op, "other");
  check_dtype(out, kernels::Family::RealHBBF16, op, "out");
  DType common = kernels::promote_types(a.dtype(), b.dtype(), op);
  PTERUN_CHECK(bool_ok || common != DType::Bool, ErrorCode::InvalidArgument, op,
               ": bool tensors are not supported");
  kernels::check_can_cast(common, out.dtype(), op);
  kernels::resize_to_broadcast(out, {&a, &b}, op);
  return common;
}

/// The same for a tensor-scalar op: the type is promote_with_scalar, and
/// with `exact_out` out must have exactly that type.
inline DType prepare_scalar(const Tensor& a, const Scalar& s, Tensor& out, const char* op,
                            bool bool_ok, bool exact_out) {
  check_dtype(a, kernels::Family::RealHBBF16, op, "self");
  check_dtype(out, kernels::Family::RealHBBF16, op, "out");
  DType common = kernels::promote_with_scalar(a.dtype(), s);
  PTERUN_CHECK(bool_ok || common != DType::Bool, ErrorCode::InvalidArgument, op,
               ": bool tensors are not supported");
  if (exact_out) {
    PTERUN_CHECK(out.dtype() == common, ErrorCode::InvalidArgument, op, ": out must be ",
                 dtype_name(common), ", got ", dtype_name(out.dtype()));
  } else {
    kernels::check_can_cast(common, out.dtype(), op);
  }
  kernels::resize_output(out, a.sizes(), op);
  return common;
}

/// Error InvalidArgument for a float alpha with an integral result.
inline void check_alpha(const Scalar& alpha, DType common, const char* op) {
  PTERUN_CHECK(!(alpha.is_floating() && kernels::is_integral(common, true)),
               ErrorCode::InvalidArgument, op, ": a float alpha needs a floating result, not ",
               dtype_name(common));
}

/// Error InvalidArgument unless div's rounding_mode is None, "trunc" or
/// "floor".
inline void check_rounding_mode(std::optional<std::string_view> mode, const char* op) {
  PTERUN_CHECK(!mode || *mode == "trunc" || *mode == "floor", ErrorCode::InvalidArgument, op,
               ": rounding_mode must be 'trunc', 'floor' or None, got '", printable(*mode), "'");
}

/// True division's type: integer inputs divide in float32.
inline DType true_division_type(DType a, DType b, const char* op) {
  bool fa = kernels::is_floating(a), fb = kernels::is_floating(b);
  if (fa && fb) return kernels::promote_types(a, b, op);
  if (fa) return a;
  if (fb) return b;
  return DType::Float32;
}

/// Error InvalidArgument unless a bitwise op's type is integral or bool.
inline void check_bitwise_type(DType common, const char* op) {
  PTERUN_CHECK(kernels::is_integral(common, true), ErrorCode::InvalidArgument, op,
               ": needs integer or bool operands, got ", dtype_name(common));
}

/// Error InvalidArgument unless out has in's dtype.
inline void check_out_same_dtype(const Tensor& in, const Tensor& out, const char* op) {
  PTERUN_CHECK(in.dtype() == out.dtype(), ErrorCode::InvalidArgument, op,
               ": out must have the input's dtype ", dtype_name(in.dtype()), ", got ",
               dtype_name(out.dtype()));
}

/// Input of `family`, out of the same dtype, out resized to the input.
inline void prepare_same_type(const Tensor& in, Tensor& out, kernels::Family family,
                              const char* op) {
  check_dtype(in, family, op, "self");
  check_out_same_dtype(in, out, op);
  kernels::resize_output(out, in.sizes(), op);
}

/// Error InvalidArgument when the Scalar does not fit dtype `d`.
inline void check_scalar_fits(const Scalar& s, DType d, const char* op, const char* what) {
  bool overflows = kernels::visit(d, kernels::Family::RealHBBF16, op, [&]<typename T>() {
    return kernels::math::scalar_overflows<T>(s);
  });
  PTERUN_CHECK(!overflows, ErrorCode::InvalidArgument, op, ": ", what, " ", s.to_double(),
               " is out of range for ", dtype_name(d));
}

}  // namespace pterun::ops
