#pragma once

// The elementwise family: binary arithmetic, unary math, comparisons and
// logical ops, where and activations. The front-ends
// (elementwise_*.cpp) check, promote and resize once, then resolve each call
// into an op code, the dtype it computes in and its scalars; a backend's
// compute function maps the op code to its per-element functor in one
// switch per call.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "pterun/core/dtype.h"
#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

// ---- binary ----------------------------------------------------------------

/// Tensor-tensor arithmetic, out = fn(a, b). Integer division by a zero
/// element (TruncDiv, FloorDiv, Remainder, Fmod): the CPU backend raises
/// InvalidArgument ("op: integer division by zero"), having the divisor's
/// values at hand; the CUDA backend gives 0, as checking would cost a
/// device wait per call.
enum class BinaryFn : uint8_t {
  Add,         // a + b
  AddAlpha,    // a + alpha * b; bool: a | (alpha & b)
  Sub,         // a - b
  SubAlpha,    // a - alpha * b
  Mul,         // bool: a & b
  Div,         // a / b, floating compute
  TruncDiv,    // a / b rounded toward zero
  FloorDiv,    // a / b rounded toward -inf (Python's //)
  Remainder,   // the divisor's sign (Python's %)
  Fmod,        // the dividend's sign (C's %)
  Pow,         // a ** b
  Maximum,     // NaN wins
  Minimum,     // NaN wins
  Atan2,       // atan2(a, b), floating compute
  BitwiseAnd,  // integral or bool compute
  BitwiseOr,
  BitwiseXor,
  Prelu,  // a < 0 ? a * b : a, floating compute (XNNPACK's PReLU)
};

/// out = fn(a, b) broadcast, inputs converted to the compute type of
/// `compute` (float for f16/bf16), the result converted to out's dtype.
/// out has the broadcast shape; `compute` is one fn takes (checked).
struct BinaryArgs {
  BinaryFn fn;
  DType compute;
  const Tensor& a;
  const Tensor& b;
  Scalar alpha;  // AddAlpha, SubAlpha
  Tensor& out;
  const char* op;
};

/// Tensor-scalar arithmetic, out = fn(a, s); s != 0 for the integral
/// divisions (checked).
enum class ScalarFn : uint8_t {
  Add,       // a + alpha * s, the product rounded to the compute type;
             // bool: a | (alpha && s)
  Sub,       // a - alpha * s
  Rsub,      // s - alpha * a
  Mul,       // bool: a & s
  Div,       // a / s, floating compute
  TruncDiv,  // as BinaryFn
  FloorDiv,
  Remainder,
  Fmod,
  Pow,        // a ** s; integral compute: exact power by s.to_int()
  PowSquare,  // a ** s for a floating compute type and s, in that
  PowCube,    // type, 2, 3, 1, 0.5 or -1, as plain arithmetic
  PowIdentity,
  PowSqrt,
  PowReciprocal,
  PowBase,     // s ** a (pow.Scalar_out)
  BitwiseAnd,  // integral or bool compute
  BitwiseOr,
  BitwiseXor,
};

/// out = fn(a, s) with out of a's shape; as BinaryArgs otherwise.
struct BinaryScalarArgs {
  ScalarFn fn;
  DType compute;
  const Tensor& a;
  Scalar s;
  Scalar alpha;  // Add, Sub, Rsub
  Tensor& out;
  const char* op;
};

// ---- unary -----------------------------------------------------------------

enum class UnaryFn : uint8_t {
  // Floating functions: any real or bool input, floating out, computed in
  // `compute` (Float64 or Float32).
  Exp,
  Expm1,
  Log,
  Log1p,
  Log2,
  Log10,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Tanh,
  Asinh,
  Acosh,
  Atanh,
  Erf,
  Sigmoid,
  Logit,     // log(x / (1 - x))
  LogitEps,  // the same, x first clamped to [eps, 1 - eps]
  // Out of the input's dtype (`compute`); integers pass through the
  // rounding ones.
  Neg,
  Abs,
  Floor,
  Ceil,
  Round,  // half to even
  Trunc,
  Sign,
  BitwiseNot,  // integral; bool: logical not
  // Bool out, any real or bool input (`compute`).
  IsNan,
  IsInf,
};

/// Calls X(name) for each floating UnaryFn, Exp through Sigmoid (one case
/// per function where a backend dispatches them).
#define PTERUN_FLOAT_UNARY_FNS(X)                                                              \
  X(Exp)                                                                                       \
  X(Expm1)                                                                                     \
  X(Log) X(Log1p) X(Log2) X(Log10) X(Sqrt) X(Rsqrt) X(Reciprocal) X(Sin) X(Cos) X(Tan) X(Asin) \
      X(Acos) X(Atan) X(Sinh) X(Cosh) X(Tanh) X(Asinh) X(Acosh) X(Atanh) X(Erf) X(Sigmoid)

/// out = fn(in), out of in's shape.
struct UnaryArgs {
  UnaryFn fn;
  DType compute;
  const Tensor& in;
  Tensor& out;
  double eps;  // LogitEps
  const char* op;
};

// ---- compare, logical, where -----------------------------------------------

enum class CompareFn : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };

/// out = fn(a, b) (or fn(a, s) when b is nullptr) in the compute type of
/// `compute`, written as bool and converted to out's real dtype; s is
/// converted to the compute type first (an out-of-range integer wraps).
struct CompareArgs {
  CompareFn fn;
  DType compute;
  const Tensor& a;
  const Tensor* b;
  Scalar s;
  Tensor& out;
  const char* op;
};

enum class LogicalFn : uint8_t { Not, And, Or, Xor };

/// out = fn(a[, b]) on the truthiness of real or bool inputs, into a real
/// out; b is nullptr for Not.
struct LogicalArgs {
  LogicalFn fn;
  const Tensor& a;
  const Tensor* b;
  Tensor& out;
  const char* op;
};

/// out = cond ? a : b, broadcast over the three; cond is bool or uint8, out
/// has exactly the promoted dtype `compute` of a and b.
struct WhereArgs {
  const Tensor& cond;
  const Tensor& a;
  const Tensor& b;
  DType compute;
  Tensor& out;
  const char* op;
};

// ---- activations -----------------------------------------------------------

/// Floating activations with out of the input's floating dtype, computed in
/// double for double and float otherwise; Relu takes any real dtype.
enum class ActivationFn : uint8_t {
  Relu,  // NaN stays NaN
  Silu,
  Hardsigmoid,
  Hardswish,
  Gelu,      // the erf form
  GeluTanh,  // the tanh approximation
  LeakyRelu,
  Elu,
  Softplus,
};

struct ActivationArgs {
  ActivationFn fn;
  const Tensor& in;
  Tensor& out;
  Scalar negative_slope;  // LeakyRelu
  // Elu: x > 0 ? x * scale : (exp(x * input_scale) - 1) * negative_scale.
  double scale = 1;
  double negative_scale = 1;
  double input_scale = 1;
  // Softplus: x * beta > threshold ? x : log1p(exp(x * beta)) / beta.
  double beta = 1;
  double threshold = 20;
  const char* op = nullptr;
};

/// out = min(max(in, lo), hi) in the compute type of `compute` (in's dtype
/// promoted with the bounds; out has exactly it), an absent bound being
/// the type's extreme; a NaN bound makes every element NaN.
struct ClampArgs {
  const Tensor& in;
  std::optional<Scalar> lo;
  std::optional<Scalar> hi;
  DType compute;
  Tensor& out;
  const char* op;
};

/// out = min(max(in, lo), hi) broadcast over the given bound tensors (at
/// least one), NaN anywhere giving NaN.
struct ClampTensorArgs {
  const Tensor& in;
  const Tensor* lo;
  const Tensor* hi;
  DType compute;
  Tensor& out;
  const char* op;
};

/// out = a * sigmoid(b), a and b the first and second halves of in along
/// dim; floating dtypes, out non-empty.
struct GluArgs {
  const Tensor& in;
  size_t dim;
  Tensor& out;
  const char* op;
};

/// torch's rotate-half rotary embedding (LLaMA as Hugging Face writes it):
/// out = x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x[..., h:],
/// x[..., :h]) along the last dim of size 2h. x, cos, sin and out share one
/// floating dtype; cos and sin broadcast to x's shape (`cos_strides`,
/// `sin_strides`: their strides against x's dims, 0 where they broadcast);
/// out is x's shape, overlapping none of the inputs. Each product and the
/// sum are rounded to the dtype as the unfused steps round them.
struct RotaryArgs {
  const Tensor& x;
  const Tensor& cos;
  const Tensor& sin;
  std::array<int64_t, kMaxRank> cos_strides;
  std::array<int64_t, kMaxRank> sin_strides;
  Tensor& out;
  const char* op;
};

struct FusedArgs;  // fused.h

/// One backend's elementwise compute. Every entry but fused is required.
struct ElementwiseBackend {
  void (*binary)(KernelContext& ctx, const BinaryArgs& a);
  void (*binary_scalar)(KernelContext& ctx, const BinaryScalarArgs& a);
  void (*unary)(KernelContext& ctx, const UnaryArgs& a);
  void (*compare)(KernelContext& ctx, const CompareArgs& a);
  void (*logical)(KernelContext& ctx, const LogicalArgs& a);
  void (*where)(KernelContext& ctx, const WhereArgs& a);
  void (*activation)(KernelContext& ctx, const ActivationArgs& a);
  void (*clamp)(KernelContext& ctx, const ClampArgs& a);
  void (*clamp_tensor)(KernelContext& ctx, const ClampTensorArgs& a);
  void (*glu)(KernelContext& ctx, const GluArgs& a);
  void (*rotary)(KernelContext& ctx, const RotaryArgs& a);
  /// nullptr where the backend has no fused elementwise programs (fused.h):
  /// pterun::fused_elementwise.out is then not registered, and the
  /// executor runs each operator of a chain on its own.
  void (*fused)(KernelContext& ctx, const FusedArgs& a);
};

/// An ElementwiseBackend of the compute functions named like its slots,
/// found where the macro is used; `fused_fn` is the fused programs'
/// kernel, or nullptr for a backend without one. Each backend states only
/// that.
#define PTERUN_ELEMENTWISE_BACKEND(fused_fn)                                                  \
  ::pterun::ops::ElementwiseBackend {                                                         \
    .binary = &binary, .binary_scalar = &binary_scalar, .unary = &unary, .compare = &compare, \
    .logical = &logical, .where = &where, .activation = &activation, .clamp = &clamp,         \
    .clamp_tensor = &clamp_tensor, .glu = &glu, .rotary = &rotary, .fused = (fused_fn),       \
  }

// ---- internal kernel (kernels/internal_ops.h; elementwise_activation.cpp) ----

// pterun::rotary_half.out(Tensor x, Tensor cos, Tensor sin, *, Tensor(a!) out) -> Tensor(a!):
// RotaryArgs.
void rotary_half_out(KernelContext& ctx, const Tensor& x, const Tensor& cos, const Tensor& sin,
                     Tensor& out);

// ---- front-ends: binary (elementwise_binary.cpp) ---------------------------

// add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)
void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Scalar alpha,
             Tensor& out);
// sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)
void sub_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Scalar alpha,
             Tensor& out);
// mul.out(Tensor self, Tensor other, *, Tensor(a!) out)
void mul_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
// add.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
void add_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Scalar alpha,
                    Tensor& out);
// sub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
void sub_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Scalar alpha,
                    Tensor& out);
// rsub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
void rsub_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Scalar alpha,
                     Tensor& out);
// mul.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
void mul_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Tensor& out);
// div.out(Tensor self, Tensor other, *, Tensor(a!) out)
void div_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
// div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out)
void div_mode_out(KernelContext& ctx, const Tensor& self, const Tensor& other,
                  std::optional<std::string_view> rounding_mode, Tensor& out);
// div.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
void div_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Tensor& out);
// div.Scalar_mode_out(Tensor self, Scalar other, *, str? rounding_mode, Tensor(a!) out)
void div_scalar_mode_out(KernelContext& ctx, const Tensor& self, Scalar other,
                         std::optional<std::string_view> rounding_mode, Tensor& out);
// floor_divide.out(Tensor self, Tensor other, *, Tensor(a!) out)
void floor_divide_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
// remainder.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
void remainder_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
// remainder.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
void remainder_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Tensor& out);
// fmod.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
void fmod_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
// fmod.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
void fmod_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Tensor& out);
// pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out)
void pow_tensor_scalar_out(KernelContext& ctx, const Tensor& self, Scalar exponent, Tensor& out);
// pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out)
void pow_tensor_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& exponent,
                           Tensor& out);
// pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out)
void pow_scalar_out(KernelContext& ctx, Scalar self, const Tensor& exponent, Tensor& out);
// maximum.out(Tensor self, Tensor other, *, Tensor(a!) out)
void maximum_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
// minimum.out(Tensor self, Tensor other, *, Tensor(a!) out)
void minimum_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
// atan2.out(Tensor self, Tensor other, *, Tensor(a!) out)
void atan2_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
// bitwise_{and,or,xor}.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out), kFn one of
// BinaryFn::Bitwise*.
template <BinaryFn kFn>
void bitwise_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
// bitwise_{and,or,xor}.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out), kFn one of
// ScalarFn::Bitwise*.
template <ScalarFn kFn>
void bitwise_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Tensor& out);
// ---- front-ends: unary (elementwise_unary.cpp) -----------------------------

// <fn>.out(Tensor self, *, Tensor(a!) out) for every UnaryFn but Logit and
// LogitEps: exp.out, neg.out, isnan.out, bitwise_not.out ...
template <UnaryFn kFn>
void unary_out(KernelContext& ctx, const Tensor& self, Tensor& out);
// logit.out(Tensor self, float? eps=None, *, Tensor(a!) out)
void logit_out(KernelContext& ctx, const Tensor& self, std::optional<double> eps, Tensor& out);

// ---- front-ends: compare, logical, where (elementwise_compare.cpp) ---------

// <fn>.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out): eq, ne, lt, le, gt, ge
template <CompareFn kFn>
void compare_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
// <fn>.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
template <CompareFn kFn>
void compare_scalar_out(KernelContext& ctx, const Tensor& self, Scalar other, Tensor& out);
// logical_not.out(Tensor self, *, Tensor(a!) out)
void logical_not_out(KernelContext& ctx, const Tensor& self, Tensor& out);
// logical_{and,or,xor}.out(Tensor self, Tensor other, *, Tensor(a!) out)
template <LogicalFn kFn>
void logical_binary_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
// where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out)
void where_out(KernelContext& ctx, const Tensor& condition, const Tensor& self, const Tensor& other,
               Tensor& out);

// ---- front-ends: activations (elementwise_activation.cpp) ------------------

// relu.out(Tensor self, *, Tensor(a!) out)
void relu_out(KernelContext& ctx, const Tensor& self, Tensor& out);
// hardtanh.out(Tensor self, Scalar min_val=-1, Scalar max_val=1, *, Tensor(a!) out)
void hardtanh_out(KernelContext& ctx, const Tensor& self, Scalar min_val, Scalar max_val,
                  Tensor& out);
// clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out)
void clamp_out(KernelContext& ctx, const Tensor& self, std::optional<Scalar> min,
               std::optional<Scalar> max, Tensor& out);
// clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out)
void clamp_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor* min, const Tensor* max,
                      Tensor& out);
// gelu.out(Tensor self, *, str approximate='none', Tensor(a!) out)
void gelu_out(KernelContext& ctx, const Tensor& self, std::string_view approximate, Tensor& out);
// leaky_relu.out(Tensor self, Scalar negative_slope=0.01, *, Tensor(a!) out)
void leaky_relu_out(KernelContext& ctx, const Tensor& self, Scalar negative_slope, Tensor& out);
// elu.out(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1, *, Tensor(a!) out)
void elu_out(KernelContext& ctx, const Tensor& self, Scalar alpha, Scalar scale, Scalar input_scale,
             Tensor& out);
// softplus.out(Tensor self, Scalar beta=1, Scalar threshold=20, *, Tensor(a!) out)
void softplus_out(KernelContext& ctx, const Tensor& self, Scalar beta, Scalar threshold,
                  Tensor& out);
// silu.out / hardsigmoid.out / hardswish.out(Tensor self, *, Tensor(a!) out)
void silu_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void hardsigmoid_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void hardswish_out(KernelContext& ctx, const Tensor& self, Tensor& out);
// glu.out(Tensor self, int dim=-1, *, Tensor(a!) out)
void glu_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out);

}  // namespace pterun::ops
