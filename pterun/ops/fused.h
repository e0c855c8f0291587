#pragma once

// Fused elementwise programs: a chain (a tree) of elementwise operators
// that the executor found at load (executor/fuse_elementwise.h) runs as one
// kernel, pterun::fused_elementwise.out, one pass over memory instead of one
// per operator and one launch instead of many.
//
// The program is a list of steps over float registers. Registers 0 .. n-1
// hold the n input tensors' elements (broadcast to out's shape, converted to
// float); step k computes one elementwise operation of earlier registers
// and writes register n + k; out gets the last step's register. Each step
// rounds its result to its own dtype (`round`: the dtype the unfused
// operator wrote), so a fused chain gives the unfused chain's values: the
// per-element functions are the backend's own.
//
// The executor passes the program as a float list of kFusedStepWidth
// numbers per step, { kind, fn, a, b, round dtype, s0, s1 }; the front-end
// decodes and checks it, so a damaged program raises InvalidArgument.

#include <cstddef>
#include <cstdint>
#include <span>

#include "pterun/core/dtype.h"
#include "pterun/core/tensor.h"
#include "pterun/ops/elementwise.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

inline constexpr size_t kFusedMaxInputs = 8;
inline constexpr size_t kFusedMaxSteps = 24;
inline constexpr size_t kFusedMaxRegisters = kFusedMaxInputs + kFusedMaxSteps;
inline constexpr size_t kFusedStepWidth = 7;

/// What a step computes (`fn` is an op code of the family).
enum class FusedKind : uint8_t {
  Unary,       // UnaryFn of a: the floating functions (Exp .. Sigmoid), Neg, Abs
  Activation,  // ActivationFn of a: Relu, Silu, Hardsigmoid, Hardswish, Gelu, GeluTanh
  Binary,      // BinaryFn of a and b: Add, AddAlpha (alpha s0), Sub, SubAlpha, Mul, Div,
               // Maximum, Minimum, Pow
  Scalar,      // ScalarFn of a and the scalar s0: Add and Sub (s0 + alpha s1 as the
               // unfused kernel forms it), Rsub (s0 - s1 * a), Mul, Div, Pow and its
               // plain-arithmetic exponents
  Clamp,       // min(max(a, s0), s1); a NaN bound gives NaN
  Cast,        // a, rounded to `round`
};

struct FusedStep {
  FusedKind kind = FusedKind::Cast;
  uint8_t fn = 0;
  uint8_t a = 0;
  uint8_t b = 0;
  DType round = DType::Float32;  // Float32, Float16 or BFloat16
  double s0 = 0;
  double s1 = 0;
};

/// out = the program's last register, for every element of out (the
/// broadcast shape of the inputs, which the front-end resized it to).
/// Inputs are float32, float16 or bfloat16 of any strides; out has the
/// last step's dtype.
struct FusedArgs {
  std::span<const Tensor* const> inputs;
  std::span<const FusedStep> steps;
  Tensor& out;
  const char* op;
};

/// The float list a program travels in, and back. decode_fused_program
/// checks every field (Error InvalidArgument naming the step): known kind
/// and op code, registers read before written, at most kFusedMaxSteps,
/// registers below num_inputs + step; returns the number of steps written
/// to `steps`.
void encode_fused_step(const FusedStep& s, double (&out)[kFusedStepWidth]);
size_t decode_fused_program(DoubleList program, size_t num_inputs,
                            std::span<FusedStep, kFusedMaxSteps> steps, const char* op);

/// Whether the fused kernels compute this operation (the op codes listed
/// at FusedKind).
bool fused_op_supported(FusedKind kind, uint8_t fn);

// pterun::fused_elementwise.out(Tensor[] inputs, float[] program, *, Tensor(a!) out)
// (kernels/internal_ops.h)
void fused_elementwise_out(KernelContext& ctx, TensorList inputs, DoubleList program, Tensor& out);

}  // namespace pterun::ops
