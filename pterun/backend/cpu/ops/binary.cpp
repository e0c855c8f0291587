// Elementwise binary arithmetic: one functor per op over the shared
// elementwise engine, with ExecuTorch's promotion and cast rules (ops.md 3).

#include <cmath>
#include <optional>
#include <string_view>

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/elementwise.h"
#include "pterun/kernels/common/elementwise_checks.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::cpu {
namespace {

using kernels::check_alpha;
using kernels::check_bitwise_type;
using kernels::check_dtype;
using kernels::Family;
using kernels::KernelContext;
using kernels::prepare_binary;
using kernels::prepare_scalar;
using kernels::rounding_mode;
using kernels::true_division_type;
namespace math = kernels::math;

/// Calls f.template operator()<C>() with C the compute type of `common`.
template <typename F>
void visit_compute(DType common, Family family, const char* op, F&& f) {
  kernels::visit(common, family, op,
                 [&]<typename T>() { f.template operator()<kernels::ComputeOf<T>>(); });
}

/// Error InvalidArgument when a divisor tensor holds a zero. Tensors are
/// dense, so its storage is exactly its numel elements.
void check_no_zero(const Tensor& divisor, const Tensor& out, const char* op) {
  if (out.numel() == 0) return;
  bool zero = kernels::visit(divisor.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
    if constexpr (std::is_integral_v<T>) {
      const T* p = divisor.data_as<T>();
      bool any = false;
      for (int64_t i = 0; i < divisor.numel(); ++i) any |= p[i] == T(0);
      return any;
    } else {
      return false;
    }
  });
  PTERUN_CHECK(!zero, ErrorCode::InvalidArgument, op, ": integer division by zero");
}

// ---- add, sub, mul ---------------------------------------------------------

// add.out(self, other, *, alpha, out) and sub.out: self +/- alpha * other.
template <bool kSubtract>
void add_sub_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kSubtract ? "aten::sub.out" : "aten::add.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Scalar alpha = args[2]->to_scalar();
  Tensor& out = args[3]->to_tensor();
  DType common = prepare_binary(a, b, out, op, !kSubtract);
  check_alpha(alpha, common, op);
  visit_compute(common, Family::RealHBBF16, op, [&]<typename C>() {
    if constexpr (std::is_same_v<C, bool>) {
      // Bool math uses & and |: GCC vectorises those, not && and ||.
      bool al = alpha.to_int() != 0;
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b}, [al](C x, C y) { return x | (al & y); }, op);
    } else {
      C al = math::scalar_as<C>(alpha);
      if (al == C(1)) {
        kernels::map_elements<C, C, 2>(
            ctx, out, {&a, &b}, [](C x, C y) { return kSubtract ? C(x - y) : C(x + y); }, op);
      } else {
        kernels::map_elements<C, C, 2>(
            ctx, out, {&a, &b},
            [al](C x, C y) { return kSubtract ? C(x - al * y) : C(x + al * y); }, op);
      }
    }
  });
}

// add.Scalar_out(self, other, alpha, *, out) and sub.Scalar_out.
template <bool kSubtract>
void add_sub_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kSubtract ? "aten::sub.Scalar_out" : "aten::add.Scalar_out";
  const Tensor& a = args[0]->to_tensor();
  Scalar s = args[1]->to_scalar();
  Scalar alpha = args[2]->to_scalar();
  Tensor& out = args[3]->to_tensor();
  DType common = prepare_scalar(a, s, out, op, !kSubtract, /*exact_out=*/true);
  check_alpha(alpha, common, op);
  visit_compute(common, Family::RealHBBF16, op, [&]<typename C>() {
    if constexpr (std::is_same_v<C, bool>) {
      bool v = alpha.to_int() != 0 && s.to_int() != 0;
      kernels::map_elements<C, C, 1>(
          ctx, out, {&a}, [v](C x) { return x | v; }, op);
    } else {
      C v = C(math::scalar_as<C>(alpha) * math::scalar_as<C>(s));
      kernels::map_elements<C, C, 1>(
          ctx, out, {&a}, [v](C x) { return kSubtract ? C(x - v) : C(x + v); }, op);
    }
  });
}

// rsub.Scalar_out(self, other, alpha, *, out): other - alpha * self.
void rsub_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::rsub.Scalar_out";
  const Tensor& a = args[0]->to_tensor();
  Scalar s = args[1]->to_scalar();
  Scalar alpha = args[2]->to_scalar();
  Tensor& out = args[3]->to_tensor();
  check_dtype(a, Family::RealHBF16, op, "self");
  DType common = prepare_scalar(a, s, out, op, false, /*exact_out=*/true);
  check_alpha(alpha, common, op);
  visit_compute(common, Family::RealHBF16, op, [&]<typename C>() {
    C v = math::scalar_as<C>(s);
    C al = math::scalar_as<C>(alpha);
    kernels::map_elements<C, C, 1>(
        ctx, out, {&a}, [v, al](C x) { return C(v - al * x); }, op);
  });
}

// mul.out(self, other, *, out).
void mul_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::mul.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_binary(a, b, out, op);
  visit_compute(common, Family::RealHBBF16, op, [&]<typename C>() {
    if constexpr (std::is_same_v<C, bool>) {
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b}, [](C x, C y) { return x & y; }, op);
    } else {
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b}, [](C x, C y) { return C(x * y); }, op);
    }
  });
}

// mul.Scalar_out(self, other, *, out).
void mul_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::mul.Scalar_out";
  const Tensor& a = args[0]->to_tensor();
  Scalar s = args[1]->to_scalar();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_scalar(a, s, out, op, true, /*exact_out=*/true);
  visit_compute(common, Family::RealHBBF16, op, [&]<typename C>() {
    C v = math::scalar_as<C>(s);
    if constexpr (std::is_same_v<C, bool>) {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&a}, [v](C x) { return x & v; }, op);
    } else {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&a}, [v](C x) { return C(x * v); }, op);
    }
  });
}

// ---- division ----------------------------------------------------------------

void true_divide(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor& out,
                 const char* op) {
  check_dtype(a, Family::RealHBBF16, op, "self");
  check_dtype(b, Family::RealHBBF16, op, "other");
  check_dtype(out, Family::FloatHBF16, op, "out");
  DType common = true_division_type(a.dtype(), b.dtype(), op);
  kernels::check_can_cast(common, out.dtype(), op);
  kernels::resize_to_broadcast(out, {&a, &b}, op);
  visit_compute(common, Family::FloatHBF16, op, [&]<typename C>() {
    kernels::map_elements<C, C, 2>(
        ctx, out, {&a, &b}, [](C x, C y) { return x / y; }, op);
  });
}

// div.out(self, other, *, out): always true division.
void div_out(KernelContext& ctx, std::span<Value* const> args) {
  true_divide(ctx, args[0]->to_tensor(), args[1]->to_tensor(), args[2]->to_tensor(),
              "aten::div.out");
}

// div.out_mode(self, other, *, rounding_mode, out).
void div_mode_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::div.out_mode";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  std::optional<std::string_view> mode = rounding_mode(*args[2], op);
  if (!mode) return true_divide(ctx, a, b, out, op);
  DType common = prepare_binary(a, b, out, op, false);
  bool trunc = *mode == "trunc";
  visit_compute(common, Family::RealHBF16, op, [&]<typename C>() {
    if constexpr (std::is_integral_v<C>) {
      check_no_zero(b, out, op);
      if (trunc) {
        kernels::map_elements<C, C, 2>(
            ctx, out, {&a, &b}, [](C x, C y) { return math::trunc_div(x, y); }, op);
      } else {
        kernels::map_elements<C, C, 2>(
            ctx, out, {&a, &b}, [](C x, C y) { return math::floor_div(x, y); }, op);
      }
    } else if (trunc) {
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b}, [](C x, C y) { return std::trunc(x / y); }, op);
    } else {
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b}, [](C x, C y) { return math::floor_div_float(x, y); }, op);
    }
  });
}

void true_divide_scalar(KernelContext& ctx, const Tensor& a, const Scalar& s, Tensor& out,
                        const char* op) {
  check_dtype(a, Family::RealHBBF16, op, "self");
  DType common = kernels::is_floating(a.dtype()) ? a.dtype() : DType::Float32;
  PTERUN_CHECK(out.dtype() == common, ErrorCode::InvalidArgument, op, ": out must be ",
               dtype_name(common), ", got ", dtype_name(out.dtype()));
  kernels::resize_output(out, a.sizes(), op);
  visit_compute(common, Family::FloatHBF16, op, [&]<typename C>() {
    C v = math::scalar_as<C>(s);
    kernels::map_elements<C, C, 1>(
        ctx, out, {&a}, [v](C x) { return x / v; }, op);
  });
}

// div.Scalar_out(self, other, *, out).
void div_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  true_divide_scalar(ctx, args[0]->to_tensor(), args[1]->to_scalar(), args[2]->to_tensor(),
                     "aten::div.Scalar_out");
}

// div.Scalar_mode_out(self, other, *, rounding_mode, out).
void div_scalar_mode_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::div.Scalar_mode_out";
  const Tensor& a = args[0]->to_tensor();
  Scalar s = args[1]->to_scalar();
  Tensor& out = args[3]->to_tensor();
  std::optional<std::string_view> mode = rounding_mode(*args[2], op);
  if (!mode) return true_divide_scalar(ctx, a, s, out, op);
  DType common = prepare_scalar(a, s, out, op, false, /*exact_out=*/false);
  PTERUN_CHECK(!(kernels::is_integral(common, true) && s.to_double() == 0),
               ErrorCode::InvalidArgument, op, ": integer division by zero");
  bool trunc = *mode == "trunc";
  visit_compute(common, Family::RealHBF16, op, [&]<typename C>() {
    C v = math::scalar_as<C>(s);
    if constexpr (std::is_integral_v<C>) {
      if (trunc) {
        kernels::map_elements<C, C, 1>(
            ctx, out, {&a}, [v](C x) { return math::trunc_div(x, v); }, op);
      } else {
        kernels::map_elements<C, C, 1>(
            ctx, out, {&a}, [v](C x) { return math::floor_div(x, v); }, op);
      }
    } else if (trunc) {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&a}, [v](C x) { return std::trunc(x / v); }, op);
    } else {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&a}, [v](C x) { return math::floor_div_float(x, v); }, op);
    }
  });
}

// floor_divide.out(self, other, *, out).
void floor_divide_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::floor_divide.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_binary(a, b, out, op, false);
  visit_compute(common, Family::RealHBF16, op, [&]<typename C>() {
    if constexpr (std::is_integral_v<C>) {
      check_no_zero(b, out, op);
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b}, [](C x, C y) { return math::floor_div(x, y); }, op);
    } else {
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b}, [](C x, C y) { return math::floor_div_float(x, y); }, op);
    }
  });
}

// remainder.Tensor_out / fmod.Tensor_out: Python's sign rule (the
// divisor's) or C's (the dividend's).
template <bool kPython>
void remainder_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kPython ? "aten::remainder.Tensor_out" : "aten::fmod.Tensor_out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_binary(a, b, out, op, false);
  visit_compute(common, Family::RealHBF16, op, [&]<typename C>() {
    if constexpr (std::is_integral_v<C>) {
      check_no_zero(b, out, op);
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b},
          [](C x, C y) { return kPython ? math::remainder(x, y) : math::fmod_int(x, y); }, op);
    } else if constexpr (kPython) {
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b}, [](C x, C y) { return math::remainder_float(x, y); }, op);
    } else {
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b}, [](C x, C y) { return std::fmod(x, y); }, op);
    }
  });
}

// remainder.Scalar_out / fmod.Scalar_out.
template <bool kPython>
void remainder_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kPython ? "aten::remainder.Scalar_out" : "aten::fmod.Scalar_out";
  const Tensor& a = args[0]->to_tensor();
  Scalar s = args[1]->to_scalar();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_scalar(a, s, out, op, false, /*exact_out=*/false);
  PTERUN_CHECK(!(kernels::is_integral(common, true) && s.to_double() == 0),
               ErrorCode::InvalidArgument, op, ": integer division by zero");
  visit_compute(common, Family::RealHBF16, op, [&]<typename C>() {
    C v = math::scalar_as<C>(s);
    if constexpr (std::is_integral_v<C>) {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&a},
          [v](C x) { return kPython ? math::remainder(x, v) : math::fmod_int(x, v); }, op);
    } else {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&a},
          [v](C x) { return kPython ? math::remainder_float(x, v) : std::fmod(x, v); }, op);
    }
  });
}

// ---- pow ---------------------------------------------------------------------

/// x ** e for floating x and a fixed exponent, with the common exponents
/// as plain arithmetic (what PyTorch does too).
template <typename C>
void pow_float_scalar_exponent(KernelContext& ctx, const Tensor& a, C e, Tensor& out,
                               const char* op) {
  if (e == C(2)) {
    kernels::map_elements<C, C, 1>(
        ctx, out, {&a}, [](C x) { return x * x; }, op);
  } else if (e == C(3)) {
    kernels::map_elements<C, C, 1>(
        ctx, out, {&a}, [](C x) { return x * x * x; }, op);
  } else if (e == C(1)) {
    kernels::map_elements<C, C, 1>(
        ctx, out, {&a}, [](C x) { return x; }, op);
  } else if (e == C(0.5)) {
    kernels::map_elements<C, C, 1>(
        ctx, out, {&a}, [](C x) { return std::sqrt(x); }, op);
  } else if (e == C(-1)) {
    kernels::map_elements<C, C, 1>(
        ctx, out, {&a}, [](C x) { return C(1) / x; }, op);
  } else {
    kernels::map_elements<C, C, 1>(
        ctx, out, {&a}, [e](C x) { return std::pow(x, e); }, op);
  }
}

// pow.Tensor_Scalar_out(self, exponent, *, out).
void pow_tensor_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::pow.Tensor_Scalar_out";
  const Tensor& a = args[0]->to_tensor();
  Scalar e = args[1]->to_scalar();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_scalar(a, e, out, op, false, /*exact_out=*/false);
  visit_compute(common, Family::RealHBF16, op, [&]<typename C>() {
    if constexpr (std::is_integral_v<C>) {
      int64_t n = e.to_int();  // an integral common type means an int or bool exponent
      kernels::map_elements<C, C, 1>(
          ctx, out, {&a}, [n](C x) { return math::int_pow(x, n); }, op);
    } else {
      pow_float_scalar_exponent<C>(ctx, a, math::scalar_as<C>(e), out, op);
    }
  });
}

// pow.Tensor_Tensor_out(self, exponent, *, out).
void pow_tensor_tensor_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::pow.Tensor_Tensor_out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_binary(a, b, out, op, false);
  visit_compute(common, Family::RealHBF16, op, [&]<typename C>() {
    if constexpr (std::is_integral_v<C>) {
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b}, [](C x, C y) { return math::int_pow(x, y); }, op);
    } else {
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b}, [](C x, C y) { return std::pow(x, y); }, op);
    }
  });
}

// pow.Scalar_out(self: Scalar, exponent: Tensor, *, out).
void pow_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::pow.Scalar_out";
  Scalar s = args[0]->to_scalar();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_scalar(b, s, out, op, false, /*exact_out=*/false);
  visit_compute(common, Family::RealHBF16, op, [&]<typename C>() {
    C base = math::scalar_as<C>(s);
    if constexpr (std::is_integral_v<C>) {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&b}, [base](C y) { return math::int_pow(base, y); }, op);
    } else {
      kernels::map_elements<C, C, 1>(
          ctx, out, {&b}, [base](C y) { return std::pow(base, y); }, op);
    }
  });
}

// ---- maximum, minimum, atan2 -------------------------------------------------

// maximum.out / minimum.out: NaN wins.
template <bool kMax>
void max_min_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kMax ? "aten::maximum.out" : "aten::minimum.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_binary(a, b, out, op);
  visit_compute(common, Family::RealHBBF16, op, [&]<typename C>() {
    kernels::map_elements<C, C, 2>(
        ctx, out, {&a, &b},
        [](C x, C y) { return kMax ? math::max_nan(x, y) : math::min_nan(x, y); }, op);
  });
}

// atan2.out(self, other, *, out): floating result, like true division.
void atan2_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::atan2.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  check_dtype(a, Family::RealHBBF16, op, "self");
  check_dtype(b, Family::RealHBBF16, op, "other");
  check_dtype(out, Family::FloatHBF16, op, "out");
  DType common = true_division_type(a.dtype(), b.dtype(), op);
  kernels::check_can_cast(common, out.dtype(), op);
  kernels::resize_to_broadcast(out, {&a, &b}, op);
  visit_compute(common, Family::FloatHBF16, op, [&]<typename C>() {
    kernels::map_elements<C, C, 2>(
        ctx, out, {&a, &b}, [](C y, C x) { return std::atan2(y, x); }, op);
  });
}

// ---- bitwise and / or / xor --------------------------------------------------

enum class BitOp { And, Or, Xor };

template <BitOp kOp, typename C>
C apply_bit_op(C x, C y) {
  if constexpr (kOp == BitOp::And) return C(x & y);
  if constexpr (kOp == BitOp::Or) return C(x | y);
  if constexpr (kOp == BitOp::Xor) return C(x ^ y);
}

template <BitOp kOp>
const char* bitwise_name(bool scalar) {
  if constexpr (kOp == BitOp::And) {
    return scalar ? "aten::bitwise_and.Scalar_out" : "aten::bitwise_and.Tensor_out";
  } else if constexpr (kOp == BitOp::Or) {
    return scalar ? "aten::bitwise_or.Scalar_out" : "aten::bitwise_or.Tensor_out";
  } else {
    return scalar ? "aten::bitwise_xor.Scalar_out" : "aten::bitwise_xor.Tensor_out";
  }
}

// bitwise_{and,or,xor}.Tensor_out(self, other, *, out).
template <BitOp kOp>
void bitwise_tensor_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = bitwise_name<kOp>(false);
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_binary(a, b, out, op);
  check_bitwise_type(common, op);
  kernels::visit(common, Family::RealHBBF16, op, [&]<typename C>() {
    if constexpr (std::is_integral_v<C>) {
      kernels::map_elements<C, C, 2>(
          ctx, out, {&a, &b}, [](C x, C y) { return apply_bit_op<kOp, C>(x, y); }, op);
    }
  });
}

// bitwise_{and,or,xor}.Scalar_out(self, other, *, out).
template <BitOp kOp>
void bitwise_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = bitwise_name<kOp>(true);
  const Tensor& a = args[0]->to_tensor();
  Scalar s = args[1]->to_scalar();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_scalar(a, s, out, op, true, /*exact_out=*/false);
  check_bitwise_type(common, op);
  kernels::visit(common, Family::RealHBBF16, op, [&]<typename C>() {
    if constexpr (std::is_integral_v<C>) {
      C v = math::scalar_as<C>(s);
      kernels::map_elements<C, C, 1>(
          ctx, out, {&a}, [v](C x) { return apply_bit_op<kOp, C>(x, v); }, op);
    }
  });
}

}  // namespace

void register_binary_ops(kernels::KernelRegistry& r) {
  r.add("aten::add.out", Device::CPU, &add_sub_out<false>);
  r.add("aten::sub.out", Device::CPU, &add_sub_out<true>);
  r.add("aten::mul.out", Device::CPU, &mul_out);
  r.add("aten::add.Scalar_out", Device::CPU, &add_sub_scalar_out<false>);
  r.add("aten::sub.Scalar_out", Device::CPU, &add_sub_scalar_out<true>);
  r.add("aten::rsub.Scalar_out", Device::CPU, &rsub_scalar_out);
  r.add("aten::mul.Scalar_out", Device::CPU, &mul_scalar_out);
  r.add("aten::div.out", Device::CPU, &div_out);
  r.add("aten::div.out_mode", Device::CPU, &div_mode_out);
  r.add("aten::div.Scalar_out", Device::CPU, &div_scalar_out);
  r.add("aten::div.Scalar_mode_out", Device::CPU, &div_scalar_mode_out);
  r.add("aten::floor_divide.out", Device::CPU, &floor_divide_out);
  r.add("aten::remainder.Tensor_out", Device::CPU, &remainder_out<true>);
  r.add("aten::remainder.Scalar_out", Device::CPU, &remainder_scalar_out<true>);
  r.add("aten::fmod.Tensor_out", Device::CPU, &remainder_out<false>);
  r.add("aten::fmod.Scalar_out", Device::CPU, &remainder_scalar_out<false>);
  r.add("aten::pow.Tensor_Scalar_out", Device::CPU, &pow_tensor_scalar_out);
  r.add("aten::pow.Tensor_Tensor_out", Device::CPU, &pow_tensor_tensor_out);
  r.add("aten::pow.Scalar_out", Device::CPU, &pow_scalar_out);
  r.add("aten::maximum.out", Device::CPU, &max_min_out<true>);
  r.add("aten::minimum.out", Device::CPU, &max_min_out<false>);
  r.add("aten::atan2.out", Device::CPU, &atan2_out);
  r.add("aten::bitwise_and.Tensor_out", Device::CPU, &bitwise_tensor_out<BitOp::And>);
  r.add("aten::bitwise_or.Tensor_out", Device::CPU, &bitwise_tensor_out<BitOp::Or>);
  r.add("aten::bitwise_xor.Tensor_out", Device::CPU, &bitwise_tensor_out<BitOp::Xor>);
  r.add("aten::bitwise_and.Scalar_out", Device::CPU, &bitwise_scalar_out<BitOp::And>);
  r.add("aten::bitwise_or.Scalar_out", Device::CPU, &bitwise_scalar_out<BitOp::Or>);
  r.add("aten::bitwise_xor.Scalar_out", Device::CPU, &bitwise_scalar_out<BitOp::Xor>);
}

}  // namespace pterun::cpu
