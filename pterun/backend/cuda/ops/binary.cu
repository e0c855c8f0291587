// Elementwise binary arithmetic on CUDA, tensor by tensor, and the fused
// mul-add: one functor of binary_functors.cuh per op code over the CUDA
// elementwise engine. The front-ends (ops/elementwise_binary.cpp) have
// checked, promoted and resized. The tensor-scalar forms are in
// binary_scalar.cu.
//
// Integer division by zero gives 0 here: the CPU rejects a zero divisor
// element, which needs the divisor's values on the host, and on CUDA that
// would cost a device wait per call (docs/python-api.md, B19).

#include <array>
#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/binary_functors.cuh"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/elementwise_compute.h"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/ops/elementwise.h"

namespace pterun::kernels::cuda_ops {
namespace {

using cuda::DeviceComputeOf;
using cuda::elementwise_same;
using ops::BinaryFn;
using namespace cuda::binary;  // NOLINT: the functors

/// out = f(a, b) for S the storage type of a.compute and f =
/// make.template operator()<S, C>() (C its compute type); a maker returns
/// Unused for the types its op code never runs in.
template <typename Make>
void run_tensors(KernelContext& ctx, const ops::BinaryArgs& a, Make&& make) {
  cuda::visit_real_dtype(a.compute, a.op, [&]<typename S>() {
    auto f = make.template operator()<S, DeviceComputeOf<S>>();
    if constexpr (!std::is_same_v<decltype(f), Unused>) {
      elementwise_same<S, 2>(ctx, a.out, {&a.a, &a.b}, f, a.op);
    }
  });
}

template <typename C>
using RemainderF = Remainder<C, true>;
template <typename C>
using FmodF = Remainder<C, false>;
template <typename C>
using MaximumF = MaxMin<C, true>;
template <typename C>
using MinimumF = MaxMin<C, false>;

template <BitOp kOp, typename S>
auto bitwise() {
  if constexpr (std::is_integral_v<S>) {
    return Bitwise<S, kOp>{};
  } else {
    return Unused{};
  }
}

}  // namespace

void elementwise::binary(KernelContext& ctx, const ops::BinaryArgs& a) {
  switch (a.fn) {
    case BinaryFn::Add:
      return run_tensors(ctx, a, [&]<typename S, typename C>() {
        if constexpr (std::is_same_v<C, bool>) {
          return Unused{};  // bool adds take alpha
        } else {
          return AddSub<C, false>{};
        }
      });
    case BinaryFn::AddAlpha:
      return run_tensors(ctx, a, [&]<typename S, typename C>() {
        if constexpr (std::is_same_v<C, bool>) {
          return AddAlpha<C, false>{a.alpha.to_int() != 0};
        } else {
          return AddAlpha<C, false>{math::scalar_as<C>(a.alpha)};
        }
      });
    case BinaryFn::Sub:
      return run_tensors(ctx, a, [&]<typename S, typename C>() {
        if constexpr (std::is_same_v<C, bool>) {
          return Unused{};
        } else {
          return AddSub<C, true>{};
        }
      });
    case BinaryFn::SubAlpha:
      return run_tensors(ctx, a, [&]<typename S, typename C>() {
        if constexpr (std::is_same_v<C, bool>) {
          return Unused{};
        } else {
          return AddAlpha<C, true>{math::scalar_as<C>(a.alpha)};
        }
      });
    case BinaryFn::Mul:
      return run_tensors(ctx, a, [&]<typename S, typename C>() { return Mul<C>{}; });
    case BinaryFn::Div:
      return run_tensors(ctx, a, [&]<typename S, typename C>() { return if_floating<Div, C>(); });
    case BinaryFn::TruncDiv:
      return run_tensors(ctx, a,
                         [&]<typename S, typename C>() { return unless_bool<TruncDiv, C>(); });
    case BinaryFn::FloorDiv:
      return run_tensors(ctx, a,
                         [&]<typename S, typename C>() { return unless_bool<FloorDiv, C>(); });
    case BinaryFn::Remainder:
      return run_tensors(ctx, a,
                         [&]<typename S, typename C>() { return unless_bool<RemainderF, C>(); });
    case BinaryFn::Fmod:
      return run_tensors(ctx, a, [&]<typename S, typename C>() { return unless_bool<FmodF, C>(); });
    case BinaryFn::Pow:
      return run_tensors(ctx, a, [&]<typename S, typename C>() { return unless_bool<Pow, C>(); });
    case BinaryFn::Maximum:
      return run_tensors(ctx, a, [&]<typename S, typename C>() { return MaximumF<C>{}; });
    case BinaryFn::Minimum:
      return run_tensors(ctx, a, [&]<typename S, typename C>() { return MinimumF<C>{}; });
    case BinaryFn::Atan2:
      return run_tensors(ctx, a, [&]<typename S, typename C>() { return if_floating<Atan2, C>(); });
    case BinaryFn::Prelu:
      return run_tensors(ctx, a, [&]<typename S, typename C>() { return if_floating<Prelu, C>(); });
    case BinaryFn::BitwiseAnd:
      return run_tensors(ctx, a,
                         [&]<typename S, typename C>() { return bitwise<BitOp::And, S>(); });
    case BinaryFn::BitwiseOr:
      return run_tensors(ctx, a, [&]<typename S, typename C>() { return bitwise<BitOp::Or, S>(); });
    case BinaryFn::BitwiseXor:
      return run_tensors(ctx, a,
                         [&]<typename S, typename C>() { return bitwise<BitOp::Xor, S>(); });
  }
}

const ops::ElementwiseBackend& elementwise_backend() {
  using namespace elementwise;  // NOLINT: the compute functions
  static constexpr ops::ElementwiseBackend kElementwise = PTERUN_ELEMENTWISE_BACKEND(&fused);
  return kElementwise;
}

}  // namespace pterun::kernels::cuda_ops
