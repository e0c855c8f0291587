// Elementwise binary arithmetic on CUDA, tensor by scalar: one functor of
// binary_functors.cuh per op code, the scalar converted to the compute
// type on the host. The front-ends (ops/elementwise_binary.cpp) have
// checked, promoted, resized and rejected integer division by zero.

#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/binary_functors.cuh"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/elementwise_compute.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/ops/elementwise.h"

namespace pterun::kernels::cuda_ops {
namespace {

using cuda::DeviceComputeOf;
using ops::ScalarFn;
using namespace cuda::binary;  // NOLINT: the functors
namespace fns = cuda::fns;

/// out = f(a) for S the storage type of a.compute and f =
/// make.template operator()<S, C>() (C its compute type); a maker returns
/// Unused for the types its op code never runs in.
template <typename Make>
void run_scalar(KernelContext& ctx, const ops::BinaryScalarArgs& a, Make&& make) {
  cuda::visit_real_dtype(a.compute, a.op, [&]<typename S>() {
    auto f = make.template operator()<S, DeviceComputeOf<S>>();
    if constexpr (!std::is_same_v<decltype(f), Unused>) {
      cuda::elementwise_same<S, 1>(ctx, a.out, {&a.a}, f, a.op);
    }
  });
}

/// Op(x, s) with s in C, for the op codes without bool compute.
template <typename Op, typename C>
auto with_scalar(const Scalar& s) {
  if constexpr (std::is_same_v<C, bool>) {
    return Unused{};
  } else {
    return WithConst<Op, C>{{}, math::scalar_as<C>(s)};
  }
}

template <BitOp kOp, typename S>
auto bitwise_scalar(const Scalar& s) {
  if constexpr (std::is_integral_v<S>) {
    return WithConst<Bitwise<S, kOp>, S>{{}, math::scalar_as<S>(s)};
  } else {
    return Unused{};
  }
}

}  // namespace

int elementwise::pow_mode(ScalarFn fn) {
  switch (fn) {
    case ScalarFn::PowSquare: return fns::kPowSquare;
    case ScalarFn::PowCube: return fns::kPowCube;
    case ScalarFn::PowIdentity: return fns::kPowIdentity;
    case ScalarFn::PowSqrt: return fns::kPowSqrt;
    case ScalarFn::PowReciprocal: return fns::kPowReciprocal;
    default: return fns::kPowGeneral;
  }
}

void elementwise::binary_scalar(KernelContext& ctx, const ops::BinaryScalarArgs& a) {
  switch (a.fn) {
    case ScalarFn::Add:
      return run_scalar(ctx, a, [&]<typename S, typename C>() {
        if constexpr (std::is_same_v<C, bool>) {
          return AddConst<C, false>{a.alpha.to_int() != 0 && a.s.to_int() != 0};
        } else {
          return AddConst<C, false>{C(math::scalar_as<C>(a.alpha) * math::scalar_as<C>(a.s))};
        }
      });
    case ScalarFn::Sub:
      return run_scalar(ctx, a, [&]<typename S, typename C>() {
        if constexpr (std::is_same_v<C, bool>) {
          return Unused{};
        } else {
          return AddConst<C, true>{C(math::scalar_as<C>(a.alpha) * math::scalar_as<C>(a.s))};
        }
      });
    case ScalarFn::Rsub:
      return run_scalar(ctx, a, [&]<typename S, typename C>() {
        if constexpr (std::is_same_v<C, bool>) {
          return Unused{};
        } else {
          return RsubConst<C>{math::scalar_as<C>(a.s), math::scalar_as<C>(a.alpha)};
        }
      });
    case ScalarFn::Mul:
      return run_scalar(
          ctx, a, [&]<typename S, typename C>() { return MulConst<C>{math::scalar_as<C>(a.s)}; });
    case ScalarFn::Div:
      return run_scalar(ctx, a, [&]<typename S, typename C>() {
        if constexpr (std::is_floating_point_v<C>) {
          return DivConst<C>{math::scalar_as<C>(a.s)};
        } else {
          return Unused{};
        }
      });
    case ScalarFn::TruncDiv:
      return run_scalar(ctx, a,
                        [&]<typename S, typename C>() { return with_scalar<TruncDiv<C>, C>(a.s); });
    case ScalarFn::FloorDiv:
      return run_scalar(ctx, a,
                        [&]<typename S, typename C>() { return with_scalar<FloorDiv<C>, C>(a.s); });
    case ScalarFn::Remainder:
      return run_scalar(ctx, a, [&]<typename S, typename C>() {
        return with_scalar<Remainder<C, true>, C>(a.s);
      });
    case ScalarFn::Fmod:
      return run_scalar(ctx, a, [&]<typename S, typename C>() {
        return with_scalar<Remainder<C, false>, C>(a.s);
      });
    // One functor for every exponent; the common ones as plain arithmetic
    // (the mode, chosen by the front-end).
    case ScalarFn::Pow:
    case ScalarFn::PowSquare:
    case ScalarFn::PowCube:
    case ScalarFn::PowIdentity:
    case ScalarFn::PowSqrt:
    case ScalarFn::PowReciprocal:
      return run_scalar(ctx, a, [&]<typename S, typename C>() {
        if constexpr (std::is_same_v<C, bool>) {
          return Unused{};
        } else {
          PowScalar<C> f{};
          if constexpr (std::is_integral_v<C>) {
            f.n = a.s.to_int();  // an integral compute type means an int or bool exponent
          } else {
            f.e = math::scalar_as<C>(a.s);
            f.mode = elementwise::pow_mode(a.fn);
          }
          return f;
        }
      });
    case ScalarFn::PowBase:
      return run_scalar(ctx, a, [&]<typename S, typename C>() {
        if constexpr (std::is_same_v<C, bool>) {
          return Unused{};
        } else {
          return PowBase<C>{math::scalar_as<C>(a.s)};
        }
      });
    case ScalarFn::BitwiseAnd:
      return run_scalar(
          ctx, a, [&]<typename S, typename C>() { return bitwise_scalar<BitOp::And, S>(a.s); });
    case ScalarFn::BitwiseOr:
      return run_scalar(
          ctx, a, [&]<typename S, typename C>() { return bitwise_scalar<BitOp::Or, S>(a.s); });
    case ScalarFn::BitwiseXor:
      return run_scalar(
          ctx, a, [&]<typename S, typename C>() { return bitwise_scalar<BitOp::Xor, S>(a.s); });
  }
}

}  // namespace pterun::kernels::cuda_ops
