// The rest of the CUDA binary family: remainder, fmod, pow and the bitwise
// ops, mirroring backend/cpu/ops/binary.cpp (integer division by zero gives
// 0, see binary.cu).

#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/binary_functors.cuh"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/core/value.h"
#include "pterun/kernels/common/elementwise_checks.h"

namespace pterun::kernels::cuda_ops {
namespace {

using cuda::DeviceComputeOf;
using cuda::elementwise_same;
using cuda::visit_real_dtype;
using namespace cuda::binary;  // NOLINT: the functors

template <typename C>
constexpr bool kNotBool = !std::is_same_v<C, bool>;

// remainder.Tensor_out / fmod.Tensor_out.
template <bool kPython>
void remainder_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kPython ? "aten::remainder.Tensor_out" : "aten::fmod.Tensor_out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_binary(a, b, out, op, false);
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (kNotBool<C>) {
      elementwise_same<S, 2>(ctx, out, {&a, &b}, Remainder<C, kPython>{}, op);
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
  PTERUN_CHECK(!(is_integral(common, true) && s.to_double() == 0), ErrorCode::InvalidArgument, op,
               ": integer division by zero");
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (kNotBool<C>) {
      elementwise_same<S, 1>(ctx, out, {&a},
                             WithConst<Remainder<C, kPython>, C>{{}, math::scalar_as<C>(s)}, op);
    }
  });
}

// pow.Tensor_Scalar_out(self, exponent, *, out).
void pow_tensor_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::pow.Tensor_Scalar_out";
  const Tensor& a = args[0]->to_tensor();
  Scalar e = args[1]->to_scalar();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_scalar(a, e, out, op, false, /*exact_out=*/false);
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (kNotBool<C>) {
      PowScalar<C> f{};
      if constexpr (std::is_integral_v<C>) {
        f.n = e.to_int();  // an integral common type means an int or bool exponent
      } else {
        f.e = math::scalar_as<C>(e);
        using P = PowScalar<C>;
        f.mode = f.e == C(2)     ? P::kSquare
                 : f.e == C(3)   ? P::kCube
                 : f.e == C(1)   ? P::kIdentity
                 : f.e == C(0.5) ? P::kSqrt
                 : f.e == C(-1)  ? P::kReciprocal
                                 : P::kGeneral;
      }
      elementwise_same<S, 1>(ctx, out, {&a}, f, op);
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
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (kNotBool<C>) elementwise_same<S, 2>(ctx, out, {&a, &b}, Pow<C>{}, op);
  });
}

// pow.Scalar_out(self: Scalar, exponent: Tensor, *, out).
void pow_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::pow.Scalar_out";
  Scalar s = args[0]->to_scalar();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_scalar(b, s, out, op, false, /*exact_out=*/false);
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (kNotBool<C>) {
      elementwise_same<S, 1>(ctx, out, {&b}, PowBase<C>{math::scalar_as<C>(s)}, op);
    }
  });
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
  visit_real_dtype(common, op, [&]<typename S>() {
    if constexpr (std::is_integral_v<S>) {
      elementwise_same<S, 2>(ctx, out, {&a, &b}, Bitwise<S, kOp>{}, op);
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
  visit_real_dtype(common, op, [&]<typename S>() {
    if constexpr (std::is_integral_v<S>) {
      elementwise_same<S, 1>(ctx, out, {&a},
                             WithConst<Bitwise<S, kOp>, S>{{}, math::scalar_as<S>(s)}, op);
    }
  });
}

}  // namespace

void register_binary_ext_ops(KernelRegistry& r) {
  r.add("aten::remainder.Tensor_out", Device::CUDA, &remainder_out<true>);
  r.add("aten::remainder.Scalar_out", Device::CUDA, &remainder_scalar_out<true>);
  r.add("aten::fmod.Tensor_out", Device::CUDA, &remainder_out<false>);
  r.add("aten::fmod.Scalar_out", Device::CUDA, &remainder_scalar_out<false>);
  r.add("aten::pow.Tensor_Scalar_out", Device::CUDA, &pow_tensor_scalar_out);
  r.add("aten::pow.Tensor_Tensor_out", Device::CUDA, &pow_tensor_tensor_out);
  r.add("aten::pow.Scalar_out", Device::CUDA, &pow_scalar_out);
  r.add("aten::bitwise_and.Tensor_out", Device::CUDA, &bitwise_tensor_out<BitOp::And>);
  r.add("aten::bitwise_or.Tensor_out", Device::CUDA, &bitwise_tensor_out<BitOp::Or>);
  r.add("aten::bitwise_xor.Tensor_out", Device::CUDA, &bitwise_tensor_out<BitOp::Xor>);
  r.add("aten::bitwise_and.Scalar_out", Device::CUDA, &bitwise_scalar_out<BitOp::And>);
  r.add("aten::bitwise_or.Scalar_out", Device::CUDA, &bitwise_scalar_out<BitOp::Or>);
  r.add("aten::bitwise_xor.Scalar_out", Device::CUDA, &bitwise_scalar_out<BitOp::Xor>);
}

}  // namespace pterun::kernels::cuda_ops
