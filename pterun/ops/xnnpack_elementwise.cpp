// The elementwise xnnpack:: operators (xnnpack.h): binary arithmetic with
// NumPy broadcasting of the memory-order dims, PReLU, the unary nodes,
// clamp, leaky ReLU, ELU and softmax, each through one slot of its family.

#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include "pterun/core/error.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/shape.h"
#include "pterun/ops/softmax.h"
#include "pterun/ops/xnnpack.h"
#include "pterun/ops/xnnpack_layout.h"

namespace pterun::ops {
namespace {

using xnn::check_float;
using xnn::clamp_output;
using xnn::In;
using xnn::Out;
using xnn::resize_memory;

const ElementwiseBackend& elementwise(const KernelContext& ctx) {
  return *backend(ctx).elementwise;
}

constexpr const char* binary_name(BinaryFn fn) {
  switch (fn) {
    case BinaryFn::Add: return "xnnpack::add";
    case BinaryFn::Sub: return "xnnpack::subtract";
    case BinaryFn::Mul: return "xnnpack::multiply";
    case BinaryFn::Div: return "xnnpack::divide";
    case BinaryFn::Minimum: return "xnnpack::minimum";
    case BinaryFn::Maximum: return "xnnpack::maximum";
    case BinaryFn::Prelu: return "xnnpack::prelu";
    default: return "xnnpack::?";
  }
}

/// out = fn(a, b) over the broadcast memory-order shape.
void compute_binary(KernelContext& ctx, BinaryFn fn, const Tensor& a, const Tensor& b, Tensor& out,
                    double lo, double hi, const char* op) {
  if (out.numel() == 0) return;
  elementwise(ctx).binary(ctx, {fn, a.dtype(), a, b, Scalar::from_int(1), out, op});
  clamp_output(ctx, out, lo, hi, op);
}

void broadcast_binary(KernelContext& ctx, BinaryFn fn, const Tensor& a, const Tensor& b,
                      Tensor& out, double lo, double hi) {
  const char* op = binary_name(fn);
  check_float(a, "input 1", op);
  check_float(b, "input 2", op, &a);
  check_float(out, "out", op, &a);
  const In va(a), vb(b);
  // Most nodes take equal shapes: no broadcast to work out.
  if (kernels::same_dims(va->sizes(), vb->sizes())) {
    const Out vo = resize_memory(out, va->sizes(), op);
    compute_binary(ctx, fn, *va, *vb, *vo, lo, hi, op);
    return;
  }
  const kernels::Shape shape = kernels::broadcast_shapes({va->sizes(), vb->sizes()}, op);
  const Out vo = resize_memory(out, shape.span(), op);
  compute_binary(ctx, fn, *va, *vb, *vo, lo, hi, op);
}

constexpr const char* unary_name(XnnUnary fn) {
  switch (fn) {
    case XnnUnary::Sigmoid: return "xnnpack::sigmoid";
    case XnnUnary::Floor: return "xnnpack::floor";
    case XnnUnary::Ceiling: return "xnnpack::ceiling";
    case XnnUnary::SquareRoot: return "xnnpack::square_root";
    case XnnUnary::ReciprocalSquareRoot: return "xnnpack::reciprocal_square_root";
    case XnnUnary::Abs: return "xnnpack::abs";
    case XnnUnary::Negate: return "xnnpack::negate";
    case XnnUnary::Square: return "xnnpack::square";
    case XnnUnary::Log: return "xnnpack::log";
    case XnnUnary::Exp: return "xnnpack::exp";
    case XnnUnary::Tanh: return "xnnpack::tanh";
    case XnnUnary::Sin: return "xnnpack::sin";
    case XnnUnary::Cos: return "xnnpack::cos";
    case XnnUnary::Gelu: return "xnnpack::gelu";
    case XnnUnary::Hardswish: return "xnnpack::hardswish";
  }
  return "xnnpack::?";
}

/// The elementwise family's op code of a plain unary node (the floating
/// functions compute in float32, the others in the input's dtype).
constexpr UnaryFn unary_fn(XnnUnary fn) {
  switch (fn) {
    case XnnUnary::Sigmoid: return UnaryFn::Sigmoid;
    case XnnUnary::Floor: return UnaryFn::Floor;
    case XnnUnary::Ceiling: return UnaryFn::Ceil;
    case XnnUnary::SquareRoot: return UnaryFn::Sqrt;
    case XnnUnary::ReciprocalSquareRoot: return UnaryFn::Rsqrt;
    case XnnUnary::Abs: return UnaryFn::Abs;
    case XnnUnary::Negate: return UnaryFn::Neg;
    case XnnUnary::Log: return UnaryFn::Log;
    case XnnUnary::Exp: return UnaryFn::Exp;
    case XnnUnary::Tanh: return UnaryFn::Tanh;
    case XnnUnary::Sin: return UnaryFn::Sin;
    case XnnUnary::Cos: return UnaryFn::Cos;
    default: return UnaryFn::Neg;  // the others take another slot
  }
}

/// Checks in and out (one float dtype) and resizes out to in's shape.
void check_same(const Tensor& in, const Tensor& out, const char* op) {
  check_float(in, "input", op);
  check_float(out, "out", op, &in);
}

}  // namespace

template <BinaryFn kFn>
void xnn_binary(KernelContext& ctx, const Tensor& a, const Tensor& b, double out_min,
                double out_max, Tensor& out) {
  broadcast_binary(ctx, kFn, a, b, out, out_min, out_max);
}

template void xnn_binary<BinaryFn::Add>(KernelContext&, const Tensor&, const Tensor&, double,
                                        double, Tensor&);
template void xnn_binary<BinaryFn::Sub>(KernelContext&, const Tensor&, const Tensor&, double,
                                        double, Tensor&);
template void xnn_binary<BinaryFn::Mul>(KernelContext&, const Tensor&, const Tensor&, double,
                                        double, Tensor&);
template void xnn_binary<BinaryFn::Div>(KernelContext&, const Tensor&, const Tensor&, double,
                                        double, Tensor&);
template void xnn_binary<BinaryFn::Minimum>(KernelContext&, const Tensor&, const Tensor&, double,
                                            double, Tensor&);
template void xnn_binary<BinaryFn::Maximum>(KernelContext&, const Tensor&, const Tensor&, double,
                                            double, Tensor&);

void xnn_prelu(KernelContext& ctx, const Tensor& in, const Tensor& slope, Tensor& out) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  broadcast_binary(ctx, BinaryFn::Prelu, in, slope, out, -kInf, kInf);
}

template <XnnUnary kFn>
void xnn_unary(KernelContext& ctx, const Tensor& in, Tensor& out) {
  constexpr const char* op = unary_name(kFn);
  check_same(in, out, op);
  const In vi(in);
  const Out vo = resize_memory(out, vi->sizes(), op);
  if (vo->numel() == 0) return;
  if constexpr (kFn == XnnUnary::Square) {
    elementwise(ctx).binary_scalar(ctx, {ScalarFn::PowSquare, in.dtype(), *vi, Scalar::from_int(2),
                                         Scalar::from_int(1), *vo, op});
  } else if constexpr (kFn == XnnUnary::Gelu || kFn == XnnUnary::Hardswish) {
    const ActivationFn fn = kFn == XnnUnary::Gelu ? ActivationFn::Gelu : ActivationFn::Hardswish;
    elementwise(ctx).activation(ctx, {.fn = fn, .in = *vi, .out = *vo, .op = op});
  } else {
    constexpr UnaryFn fn = unary_fn(kFn);
    constexpr bool floating = fn < UnaryFn::Logit;
    const DType compute = floating ? DType::Float32 : in.dtype();
    elementwise(ctx).unary(ctx, {fn, compute, *vi, *vo, 0.0, op});
  }
}

template void xnn_unary<XnnUnary::Sigmoid>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::Floor>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::Ceiling>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::SquareRoot>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::ReciprocalSquareRoot>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::Abs>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::Negate>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::Square>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::Log>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::Exp>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::Tanh>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::Sin>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::Cos>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::Gelu>(KernelContext&, const Tensor&, Tensor&);
template void xnn_unary<XnnUnary::Hardswish>(KernelContext&, const Tensor&, Tensor&);

void xnn_clamp(KernelContext& ctx, const Tensor& in, double min, double max, Tensor& out) {
  const char* op = "xnnpack::clamp";
  PTERUN_CHECK(!(min > max), ErrorCode::InvalidArgument, op, ": min ", min, " exceeds max ", max);
  xnn::check_value(in, "input", op);
  xnn::check_value(out, "out", op, &in);
  const In vi(in);
  const Out vo = resize_memory(out, vi->sizes(), op);
  if (vo->numel() == 0) return;
  const bool has_lo = !(std::isinf(min) && min < 0);
  const bool has_hi = !(std::isinf(max) && max > 0);
  if (!has_lo && !has_hi) {
    backend(ctx).shape->copy(ctx, vo->data(), vo->strides(), vi->data(), vi->strides(), vi->sizes(),
                             vi->element_size());
    return;
  }
  std::optional<Scalar> lo, hi;
  if (has_lo) lo = Scalar::from_double(min);
  if (has_hi) hi = Scalar::from_double(max);
  elementwise(ctx).clamp(ctx, {*vi, lo, hi, in.dtype(), *vo, op});
}

void xnn_leaky_relu(KernelContext& ctx, const Tensor& in, double negative_slope, Tensor& out) {
  const char* op = "xnnpack::leaky_relu";
  check_same(in, out, op);
  const In vi(in);
  const Out vo = resize_memory(out, vi->sizes(), op);
  if (vo->numel() == 0) return;
  elementwise(ctx).activation(ctx, {.fn = ActivationFn::LeakyRelu,
                                    .in = *vi,
                                    .out = *vo,
                                    .negative_slope = Scalar::from_double(negative_slope),
                                    .op = op});
}

void xnn_elu(KernelContext& ctx, const Tensor& in, double alpha, Tensor& out) {
  const char* op = "xnnpack::elu";
  check_same(in, out, op);
  const In vi(in);
  const Out vo = resize_memory(out, vi->sizes(), op);
  if (vo->numel() == 0) return;
  elementwise(ctx).activation(
      ctx, {.fn = ActivationFn::Elu, .in = *vi, .out = *vo, .negative_scale = alpha, .op = op});
}

void xnn_softmax(KernelContext& ctx, const Tensor& in, Tensor& out) {
  const char* op = "xnnpack::softmax";
  check_same(in, out, op);
  const In vi(in);
  const Out vo = resize_memory(out, vi->sizes(), op);
  if (vo->numel() == 0) return;
  backend(ctx).softmax->softmax(ctx, {*vi, vi->dim() - 1, false, *vo});
}

}  // namespace pterun::ops
