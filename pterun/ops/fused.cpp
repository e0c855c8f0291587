// The fused elementwise program's front-end (fused.h): decodes and checks
// the program, checks the inputs, resizes out to their broadcast shape and
// calls the backend.

#include "pterun/ops/fused.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/elementwise_checks.h"

namespace pterun::ops {

bool fused_op_supported(FusedKind kind, uint8_t fn) {
  switch (kind) {
    case FusedKind::Unary: {
      const auto f = static_cast<UnaryFn>(fn);
      return fn <= static_cast<uint8_t>(UnaryFn::Sigmoid) || f == UnaryFn::Neg || f == UnaryFn::Abs;
    }
    case FusedKind::Activation: {
      const auto f = static_cast<ActivationFn>(fn);
      return f == ActivationFn::Relu || f == ActivationFn::Silu || f == ActivationFn::Hardsigmoid ||
             f == ActivationFn::Hardswish || f == ActivationFn::Gelu || f == ActivationFn::GeluTanh;
    }
    case FusedKind::Binary: {
      const auto f = static_cast<BinaryFn>(fn);
      return f == BinaryFn::Add || f == BinaryFn::AddAlpha || f == BinaryFn::Sub ||
             f == BinaryFn::SubAlpha || f == BinaryFn::Mul || f == BinaryFn::Div ||
             f == BinaryFn::Maximum || f == BinaryFn::Minimum || f == BinaryFn::Pow;
    }
    case FusedKind::Scalar: {
      const auto f = static_cast<ScalarFn>(fn);
      return f == ScalarFn::Add || f == ScalarFn::Sub || f == ScalarFn::Rsub ||
             f == ScalarFn::Mul || f == ScalarFn::Div || f == ScalarFn::Pow ||
             f == ScalarFn::PowSquare || f == ScalarFn::PowCube || f == ScalarFn::PowIdentity ||
             f == ScalarFn::PowSqrt || f == ScalarFn::PowReciprocal;
    }
    case FusedKind::Clamp:
    case FusedKind::Cast: return fn == 0;
  }
  return false;
}

namespace {

bool fused_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16;
}

bool reads_b(FusedKind kind) {
  return kind == FusedKind::Binary;
}

/// A small non-negative integer stored in a double, or -1.
int64_t small_int(double v) {
  return v >= 0 && v < 256 && v == std::floor(v) ? static_cast<int64_t>(v) : -1;
}

}  // namespace

void encode_fused_step(const FusedStep& s, double (&out)[kFusedStepWidth]) {
  out[0] = static_cast<double>(s.kind);
  out[1] = s.fn;
  out[2] = s.a;
  out[3] = s.b;
  out[4] = static_cast<double>(static_cast<int>(s.round));
  out[5] = s.s0;
  out[6] = s.s1;
}

size_t decode_fused_program(DoubleList program, size_t num_inputs,
                            std::span<FusedStep, kFusedMaxSteps> steps, const char* op) {
  PTERUN_CHECK(program.size() % kFusedStepWidth == 0 && !program.empty(),
               ErrorCode::InvalidArgument, op, ": a program is ", kFusedStepWidth,
               " numbers per step, got ", program.size());
  const size_t count = program.size() / kFusedStepWidth;
  PTERUN_CHECK(count <= kFusedMaxSteps, ErrorCode::InvalidArgument, op, ": ", count,
               " steps, at most ", kFusedMaxSteps);
  for (size_t k = 0; k < count; ++k) {
    const double* f = program.data() + k * kFusedStepWidth;
    const int64_t kind = small_int(f[0]), fn = small_int(f[1]), a = small_int(f[2]),
                  b = small_int(f[3]), round = small_int(f[4]);
    const int64_t regs = static_cast<int64_t>(num_inputs + k);
    PTERUN_CHECK(kind >= 0 && kind <= static_cast<int64_t>(FusedKind::Cast) && fn >= 0,
                 ErrorCode::InvalidArgument, op, ": step ", k, " has an unknown operation");
    FusedStep& s = steps[k];
    s.kind = static_cast<FusedKind>(kind);
    s.fn = static_cast<uint8_t>(fn);
    PTERUN_CHECK(fused_op_supported(s.kind, s.fn), ErrorCode::InvalidArgument, op, ": step ", k,
                 " has an unknown operation");
    PTERUN_CHECK(a >= 0 && a < regs && (!reads_b(s.kind) || (b >= 0 && b < regs)),
                 ErrorCode::InvalidArgument, op, ": step ", k, " reads a register not yet written");
    s.a = static_cast<uint8_t>(a);
    s.b = reads_b(s.kind) ? static_cast<uint8_t>(b) : 0;
    const std::optional<DType> rounding = dtype_from_number(static_cast<int>(round));
    PTERUN_CHECK(round >= 0 && rounding && fused_dtype(*rounding), ErrorCode::InvalidArgument, op,
                 ": step ", k, " rounds to a dtype other than float32, float16 or bfloat16");
    s.round = *rounding;
    s.s0 = f[5];
    s.s1 = f[6];
  }
  return count;
}

void fused_elementwise_out(KernelContext& ctx, TensorList inputs, DoubleList program, Tensor& out) {
  const char* op = kernels::kFusedElementwiseKernel;
  PTERUN_CHECK(!inputs.empty() && inputs.size() <= kFusedMaxInputs, ErrorCode::InvalidArgument, op,
               ": takes 1 to ", kFusedMaxInputs, " inputs, got ", inputs.size());
  FusedStep steps[kFusedMaxSteps];
  const size_t count = decode_fused_program(program, inputs.size(), steps, op);
  const Tensor* ins[kFusedMaxInputs];
  for (size_t k = 0; k < inputs.size(); ++k) {
    PTERUN_CHECK(inputs[k] != nullptr, ErrorCode::InvalidArgument, op, ": input ", k, " is None");
    PTERUN_CHECK(fused_dtype(inputs[k]->dtype()), ErrorCode::InvalidArgument, op, ": input ", k,
                 " has unsupported dtype ", dtype_name(inputs[k]->dtype()));
    ins[k] = inputs[k];
  }
  PTERUN_CHECK(out.dtype() == steps[count - 1].round, ErrorCode::InvalidArgument, op,
               ": out must be ", dtype_name(steps[count - 1].round), ", got ",
               dtype_name(out.dtype()));
  const std::span<const Tensor* const> in_span(ins, inputs.size());
  // A static out keeps its shape when every input broadcasts to it: a
  // program whose layout steps expand an input (executor/rewrite.h) writes
  // more than the inputs' own broadcast shape.
  if (out.dynamism() != ShapeDynamism::Static ||
      !std::all_of(in_span.begin(), in_span.end(), [&](const Tensor* t) {
        return kernels::broadcasts_to(t->sizes(), out.sizes());
      })) {
    kernels::resize_to_broadcast(out, in_span, op);
  }
  backend(ctx).elementwise->fused(ctx,
                                  {in_span, std::span<const FusedStep>(steps, count), out, op});
}

}  // namespace pterun::ops
