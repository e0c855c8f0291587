// Front-ends of the binary arithmetic operators (elementwise.h):
// ExecuTorch's promotion and cast rules (docs/operators.md, "Type
// promotion"), then one op code for
// the backend.

#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/elementwise.h"
#include "pterun/ops/elementwise_checks.h"

namespace pterun::ops {
namespace {

using kernels::Family;

const ElementwiseBackend& elementwise(const KernelContext& ctx) {
  return *backend(ctx).elementwise;
}

/// True when `s` converted to the compute type of `dtype` is 1: the alpha
/// a backend may leave out.
bool is_one_in(const Scalar& s, DType dtype, const char* op) {
  return kernels::visit(dtype, Family::RealHBBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    return kernels::math::scalar_as<C>(s) == C(1);
  });
}

// add.out and sub.out: self +/- alpha * other.
void add_sub(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha,
             Tensor& out, bool subtract) {
  const char* op = subtract ? "aten::sub.out" : "aten::add.out";
  const DType common = prepare_binary(self, other, out, op, !subtract);
  check_alpha(alpha, common, op);
  // A bool add always takes alpha: self | (alpha & other).
  const bool one = common != DType::Bool && is_one_in(alpha, common, op);
  const BinaryFn fn = subtract ? (one ? BinaryFn::Sub : BinaryFn::SubAlpha)
                               : (one ? BinaryFn::Add : BinaryFn::AddAlpha);
  elementwise(ctx).binary(ctx, {fn, common, self, other, alpha, out, op});
}

// add.Scalar_out and sub.Scalar_out.
void add_sub_scalar(KernelContext& ctx, const Tensor& self, const Scalar& other,
                    const Scalar& alpha, Tensor& out, bool subtract) {
  const char* op = subtract ? "aten::sub.Scalar_out" : "aten::add.Scalar_out";
  const DType common = prepare_scalar(self, other, out, op, !subtract, /*exact_out=*/true);
  check_alpha(alpha, common, op);
  elementwise(ctx).binary_scalar(
      ctx, {subtract ? ScalarFn::Sub : ScalarFn::Add, common, self, other, alpha, out, op});
}

/// Tensor-tensor ops whose result has the promoted type (bool only with
/// `bool_ok`).
void promoted_binary(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out,
                     BinaryFn fn, const char* op, bool bool_ok) {
  const DType common = prepare_binary(self, other, out, op, bool_ok);
  elementwise(ctx).binary(ctx, {fn, common, self, other, Scalar(), out, op});
}

/// Tensor-scalar ops whose result has the promoted type, castable to out;
/// the integral divisions reject a zero scalar.
void promoted_scalar(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out,
                     ScalarFn fn, const char* op) {
  const DType common = prepare_scalar(self, other, out, op, false, /*exact_out=*/false);
  PTERUN_CHECK(!(kernels::is_integral(common, true) && other.to_double() == 0),
               ErrorCode::InvalidArgument, op, ": integer division by zero");
  elementwise(ctx).binary_scalar(ctx, {fn, common, self, other, Scalar(), out, op});
}

/// Ops with a floating result (true division, atan2): integer inputs
/// compute in float32.
void floating_binary(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out,
                     BinaryFn fn, const char* op) {
  check_dtype(self, Family::RealHBBF16, op, "self");
  check_dtype(other, Family::RealHBBF16, op, "other");
  check_dtype(out, Family::FloatHBF16, op, "out");
  const DType common = true_division_type(self.dtype(), other.dtype(), op);
  kernels::check_can_cast(common, out.dtype(), op);
  kernels::resize_to_broadcast(out, {&self, &other}, op);
  elementwise(ctx).binary(ctx, {fn, common, self, other, Scalar(), out, op});
}

void true_divide_scalar(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out,
                        const char* op) {
  check_dtype(self, Family::RealHBBF16, op, "self");
  const DType common = kernels::is_floating(self.dtype()) ? self.dtype() : DType::Float32;
  PTERUN_CHECK(out.dtype() == common, ErrorCode::InvalidArgument, op, ": out must be ",
               dtype_name(common), ", got ", dtype_name(out.dtype()));
  kernels::resize_output(out, self.sizes(), op);
  elementwise(ctx).binary_scalar(ctx, {ScalarFn::Div, common, self, other, Scalar(), out, op});
}

/// pow.Tensor_Scalar's op code: for a floating compute type, the exponents
/// 2, 3, 1, 0.5 and -1 (compared in that type) as plain arithmetic.
ScalarFn pow_fn(const Scalar& exponent, DType common) {
  if (!kernels::is_floating(common)) return ScalarFn::Pow;
  const double e = common == DType::Float64 ? kernels::math::scalar_as<double>(exponent)
                                            : kernels::math::scalar_as<float>(exponent);
  return e == 2     ? ScalarFn::PowSquare
         : e == 3   ? ScalarFn::PowCube
         : e == 1   ? ScalarFn::PowIdentity
         : e == 0.5 ? ScalarFn::PowSqrt
         : e == -1  ? ScalarFn::PowReciprocal
                    : ScalarFn::Pow;
}

template <BinaryFn kFn>
constexpr const char* kBitwiseTensorName =
    kFn == BinaryFn::BitwiseAnd  ? "aten::bitwise_and.Tensor_out"
    : kFn == BinaryFn::BitwiseOr ? "aten::bitwise_or.Tensor_out"
                                 : "aten::bitwise_xor.Tensor_out";
template <ScalarFn kFn>
constexpr const char* kBitwiseScalarName =
    kFn == ScalarFn::BitwiseAnd  ? "aten::bitwise_and.Scalar_out"
    : kFn == ScalarFn::BitwiseOr ? "aten::bitwise_or.Scalar_out"
                                 : "aten::bitwise_xor.Scalar_out";

}  // namespace

void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Scalar alpha,
             Tensor& out) {
  add_sub(ctx, self, other, alpha, out, false);
}

void sub_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Scalar alpha,
             Tensor& out) {
  add_sub(ctx, self, other, alpha, out, true);
}

void mul_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  promoted_binary(ctx, self, other, out, BinaryFn::Mul, "aten::mul.out", true);
}

void add_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Scalar alpha,
                    Tensor& out) {
  add_sub_scalar(ctx, self, other, alpha, out, false);
}

void sub_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Scalar alpha,
                    Tensor& out) {
  add_sub_scalar(ctx, self, other, alpha, out, true);
}

// other - alpha * self.
void rsub_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Scalar alpha,
                     Tensor& out) {
  const char* op = "aten::rsub.Scalar_out";
  check_dtype(self, Family::RealHBF16, op, "self");
  const DType common = prepare_scalar(self, other, out, op, false, /*exact_out=*/true);
  check_alpha(alpha, common, op);
  elementwise(ctx).binary_scalar(ctx, {ScalarFn::Rsub, common, self, other, alpha, out, op});
}

void mul_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Tensor& out) {
  const char* op = "aten::mul.Scalar_out";
  const DType common = prepare_scalar(self, other, out, op, true, /*exact_out=*/true);
  elementwise(ctx).binary_scalar(ctx, {ScalarFn::Mul, common, self, other, Scalar(), out, op});
}

// Always true division.
void div_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  floating_binary(ctx, self, other, out, BinaryFn::Div, "aten::div.out");
}

void div_mode_out(KernelContext& ctx, const Tensor& self, const Tensor& other,
                  std::optional<std::string_view> rounding_mode, Tensor& out) {
  const char* op = "aten::div.out_mode";
  check_rounding_mode(rounding_mode, op);
  if (!rounding_mode) return floating_binary(ctx, self, other, out, BinaryFn::Div, op);
  const BinaryFn fn = *rounding_mode == "trunc" ? BinaryFn::TruncDiv : BinaryFn::FloorDiv;
  promoted_binary(ctx, self, other, out, fn, op, false);
}

void div_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Tensor& out) {
  true_divide_scalar(ctx, self, other, out, "aten::div.Scalar_out");
}

void div_scalar_mode_out(KernelContext& ctx, const Tensor& self, Scalar other,
                         std::optional<std::string_view> rounding_mode, Tensor& out) {
  const char* op = "aten::div.Scalar_mode_out";
  check_rounding_mode(rounding_mode, op);
  if (!rounding_mode) return true_divide_scalar(ctx, self, other, out, op);
  const ScalarFn fn = *rounding_mode == "trunc" ? ScalarFn::TruncDiv : ScalarFn::FloorDiv;
  promoted_scalar(ctx, self, other, out, fn, op);
}

void floor_divide_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  promoted_binary(ctx, self, other, out, BinaryFn::FloorDiv, "aten::floor_divide.out", false);
}

void remainder_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other,
                          Tensor& out) {
  promoted_binary(ctx, self, other, out, BinaryFn::Remainder, "aten::remainder.Tensor_out", false);
}

void remainder_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Tensor& out) {
  promoted_scalar(ctx, self, other, out, ScalarFn::Remainder, "aten::remainder.Scalar_out");
}

void fmod_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  promoted_binary(ctx, self, other, out, BinaryFn::Fmod, "aten::fmod.Tensor_out", false);
}

void fmod_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Tensor& out) {
  promoted_scalar(ctx, self, other, out, ScalarFn::Fmod, "aten::fmod.Scalar_out");
}

void pow_tensor_scalar_out(KernelContext& ctx, const Tensor& self, Scalar exponent, Tensor& out) {
  const char* op = "aten::pow.Tensor_Scalar_out";
  const DType common = prepare_scalar(self, exponent, out, op, false, /*exact_out=*/false);
  elementwise(ctx).binary_scalar(
      ctx, {pow_fn(exponent, common), common, self, exponent, Scalar(), out, op});
}

void pow_tensor_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& exponent,
                           Tensor& out) {
  promoted_binary(ctx, self, exponent, out, BinaryFn::Pow, "aten::pow.Tensor_Tensor_out", false);
}

void pow_scalar_out(KernelContext& ctx, Scalar self, const Tensor& exponent, Tensor& out) {
  const char* op = "aten::pow.Scalar_out";
  const DType common = prepare_scalar(exponent, self, out, op, false, /*exact_out=*/false);
  elementwise(ctx).binary_scalar(ctx,
                                 {ScalarFn::PowBase, common, exponent, self, Scalar(), out, op});
}

void maximum_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  promoted_binary(ctx, self, other, out, BinaryFn::Maximum, "aten::maximum.out", true);
}

void minimum_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  promoted_binary(ctx, self, other, out, BinaryFn::Minimum, "aten::minimum.out", true);
}

void atan2_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  floating_binary(ctx, self, other, out, BinaryFn::Atan2, "aten::atan2.out");
}

template <BinaryFn kFn>
void bitwise_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  const char* op = kBitwiseTensorName<kFn>;
  const DType common = prepare_binary(self, other, out, op);
  check_bitwise_type(common, op);
  elementwise(ctx).binary(ctx, {kFn, common, self, other, Scalar(), out, op});
}

template <ScalarFn kFn>
void bitwise_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Tensor& out) {
  const char* op = kBitwiseScalarName<kFn>;
  const DType common = prepare_scalar(self, other, out, op, true, /*exact_out=*/false);
  check_bitwise_type(common, op);
  elementwise(ctx).binary_scalar(ctx, {kFn, common, self, other, Scalar(), out, op});
}

template void bitwise_tensor_out<BinaryFn::BitwiseAnd>(KernelContext&, const Tensor&, const Tensor&,
                                                       Tensor&);
template void bitwise_tensor_out<BinaryFn::BitwiseOr>(KernelContext&, const Tensor&, const Tensor&,
                                                      Tensor&);
template void bitwise_tensor_out<BinaryFn::BitwiseXor>(KernelContext&, const Tensor&, const Tensor&,
                                                       Tensor&);
template void bitwise_scalar_out<ScalarFn::BitwiseAnd>(KernelContext&, const Tensor&, Scalar,
                                                       Tensor&);
template void bitwise_scalar_out<ScalarFn::BitwiseOr>(KernelContext&, const Tensor&, Scalar,
                                                      Tensor&);
template void bitwise_scalar_out<ScalarFn::BitwiseXor>(KernelContext&, const Tensor&, Scalar,
                                                       Tensor&);

}  // namespace pterun::ops
