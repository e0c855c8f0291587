// Elementwise binary arithmetic on the CPU: one lambda per op code over the
// shared elementwise engine. The front-ends (ops/elementwise_binary.cpp)
// have checked, promoted and resized; integer division by a zero tensor
// element is this backend's error (ops/elementwise.h).

#include <cmath>
#include <type_traits>

#include "pterun/backend/cpu/engine/elementwise.h"
#include "pterun/backend/cpu/ops/elementwise_compute.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/ops/elementwise.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;
using ops::BinaryFn;
using ops::ScalarFn;
namespace math = kernels::math;

/// What a functor maker returns for a compute type its op code never runs
/// in (the front-end does not pass it).
struct Unused {};

/// out = f(a, b) in C, the compute type of a.compute (of kFamily), with f
/// = make.template operator()<C>().
template <Family kFamily, typename Make>
void map_tensors(KernelContext& ctx, const ops::BinaryArgs& a, Make&& make) {
  kernels::visit(a.compute, kFamily, a.op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    auto f = make.template operator()<C>();
    if constexpr (!std::is_same_v<decltype(f), Unused>) {
      cpu::map_elements<C, C, 2>(ctx, a.out, {&a.a, &a.b}, f, a.op);
    }
  });
}

/// out = f(a) for a tensor-scalar op, the same way.
template <Family kFamily, typename Make>
void map_scalar(KernelContext& ctx, const ops::BinaryScalarArgs& a, Make&& make) {
  kernels::visit(a.compute, kFamily, a.op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    auto f = make.template operator()<C>();
    if constexpr (!std::is_same_v<decltype(f), Unused>) {
      cpu::map_elements<C, C, 1>(ctx, a.out, {&a.a}, f, a.op);
    }
  });
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

}  // namespace

void elementwise::binary(KernelContext& ctx, const ops::BinaryArgs& a) {
  switch (a.fn) {
    case BinaryFn::Add:
      return map_tensors<Family::RealHBF16>(
          ctx, a, [&]<typename C>() { return [](C x, C y) { return math::add(x, y); }; });
    case BinaryFn::AddAlpha:
      return map_tensors<Family::RealHBBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_same_v<C, bool>) {
          // Bool math uses & and |: GCC vectorises those, not && and ||.
          const bool al = a.alpha.to_int() != 0;
          return [al](C x, C y) { return x | (al & y); };
        } else {
          const C al = math::scalar_as<C>(a.alpha);
          return [al](C x, C y) { return math::add(x, math::mul(al, y)); };
        }
      });
    case BinaryFn::Sub:
      return map_tensors<Family::RealHBF16>(
          ctx, a, [&]<typename C>() { return [](C x, C y) { return math::sub(x, y); }; });
    case BinaryFn::SubAlpha:
      return map_tensors<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        const C al = math::scalar_as<C>(a.alpha);
        return [al](C x, C y) { return math::sub(x, math::mul(al, y)); };
      });
    case BinaryFn::Mul:
      return map_tensors<Family::RealHBBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_same_v<C, bool>) {
          return [](C x, C y) { return x & y; };
        } else {
          return [](C x, C y) { return math::mul(x, y); };
        }
      });
    case BinaryFn::Div:
      return map_tensors<Family::FloatHBF16>(
          ctx, a, [&]<typename C>() { return [](C x, C y) { return x / y; }; });
    case BinaryFn::TruncDiv:
      return map_tensors<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_integral_v<C>) {
          check_no_zero(a.b, a.out, a.op);
          return [](C x, C y) { return math::trunc_div(x, y); };
        } else {
          return [](C x, C y) { return std::trunc(x / y); };
        }
      });
    case BinaryFn::FloorDiv:
      return map_tensors<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_integral_v<C>) {
          check_no_zero(a.b, a.out, a.op);
          return [](C x, C y) { return math::floor_div(x, y); };
        } else {
          return [](C x, C y) { return math::floor_div_float(x, y); };
        }
      });
    case BinaryFn::Remainder:
      return map_tensors<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_integral_v<C>) {
          check_no_zero(a.b, a.out, a.op);
          return [](C x, C y) { return math::remainder(x, y); };
        } else {
          return [](C x, C y) { return math::remainder_float(x, y); };
        }
      });
    case BinaryFn::Fmod:
      return map_tensors<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_integral_v<C>) {
          check_no_zero(a.b, a.out, a.op);
          return [](C x, C y) { return math::fmod_int(x, y); };
        } else {
          return [](C x, C y) { return std::fmod(x, y); };
        }
      });
    case BinaryFn::Pow:
      return map_tensors<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_integral_v<C>) {
          return [](C x, C y) { return math::int_pow(x, y); };
        } else {
          return [](C x, C y) { return std::pow(x, y); };
        }
      });
    case BinaryFn::Maximum:
      return map_tensors<Family::RealHBBF16>(
          ctx, a, [&]<typename C>() { return [](C x, C y) { return math::max_nan(x, y); }; });
    case BinaryFn::Minimum:
      return map_tensors<Family::RealHBBF16>(
          ctx, a, [&]<typename C>() { return [](C x, C y) { return math::min_nan(x, y); }; });
    case BinaryFn::Atan2:
      return map_tensors<Family::FloatHBF16>(
          ctx, a, [&]<typename C>() { return [](C y, C x) { return std::atan2(y, x); }; });
    case BinaryFn::Prelu:
      return map_tensors<Family::FloatHBF16>(ctx, a, [&]<typename C>() {
        return [](C x, C slope) { return x < C(0) ? x * slope : x; };
      });
    case BinaryFn::BitwiseAnd:
      return map_tensors<Family::RealHBBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_integral_v<C>) {
          return [](C x, C y) { return C(x & y); };
        } else {
          return Unused{};
        }
      });
    case BinaryFn::BitwiseOr:
      return map_tensors<Family::RealHBBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_integral_v<C>) {
          return [](C x, C y) { return C(x | y); };
        } else {
          return Unused{};
        }
      });
    case BinaryFn::BitwiseXor:
      return map_tensors<Family::RealHBBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_integral_v<C>) {
          return [](C x, C y) { return C(x ^ y); };
        } else {
          return Unused{};
        }
      });
  }
}

void elementwise::binary_scalar(KernelContext& ctx, const ops::BinaryScalarArgs& a) {
  switch (a.fn) {
    case ScalarFn::Add:
      return map_scalar<Family::RealHBBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_same_v<C, bool>) {
          const bool v = a.alpha.to_int() != 0 && a.s.to_int() != 0;
          return [v](C x) { return x | v; };
        } else {
          const C v = math::mul(math::scalar_as<C>(a.alpha), math::scalar_as<C>(a.s));
          return [v](C x) { return math::add(x, v); };
        }
      });
    case ScalarFn::Sub:
      return map_scalar<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        const C v = math::mul(math::scalar_as<C>(a.alpha), math::scalar_as<C>(a.s));
        return [v](C x) { return math::sub(x, v); };
      });
    case ScalarFn::Rsub:
      return map_scalar<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        const C v = math::scalar_as<C>(a.s);
        const C al = math::scalar_as<C>(a.alpha);
        return [v, al](C x) { return math::sub(v, math::mul(al, x)); };
      });
    case ScalarFn::Mul:
      return map_scalar<Family::RealHBBF16>(ctx, a, [&]<typename C>() {
        const C v = math::scalar_as<C>(a.s);
        if constexpr (std::is_same_v<C, bool>) {
          return [v](C x) { return x & v; };
        } else {
          return [v](C x) { return math::mul(x, v); };
        }
      });
    case ScalarFn::Div:
      return map_scalar<Family::FloatHBF16>(ctx, a, [&]<typename C>() {
        const C v = math::scalar_as<C>(a.s);
        return [v](C x) { return x / v; };
      });
    case ScalarFn::TruncDiv:
      return map_scalar<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        const C v = math::scalar_as<C>(a.s);
        if constexpr (std::is_integral_v<C>) {
          return [v](C x) { return math::trunc_div(x, v); };
        } else {
          return [v](C x) { return std::trunc(x / v); };
        }
      });
    case ScalarFn::FloorDiv:
      return map_scalar<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        const C v = math::scalar_as<C>(a.s);
        if constexpr (std::is_integral_v<C>) {
          return [v](C x) { return math::floor_div(x, v); };
        } else {
          return [v](C x) { return math::floor_div_float(x, v); };
        }
      });
    case ScalarFn::Remainder:
      return map_scalar<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        const C v = math::scalar_as<C>(a.s);
        if constexpr (std::is_integral_v<C>) {
          return [v](C x) { return math::remainder(x, v); };
        } else {
          return [v](C x) { return math::remainder_float(x, v); };
        }
      });
    case ScalarFn::Fmod:
      return map_scalar<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        const C v = math::scalar_as<C>(a.s);
        if constexpr (std::is_integral_v<C>) {
          return [v](C x) { return math::fmod_int(x, v); };
        } else {
          return [v](C x) { return std::fmod(x, v); };
        }
      });
    case ScalarFn::Pow:
      return map_scalar<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_integral_v<C>) {
          const int64_t n = a.s.to_int();  // an integral compute type means an int or bool s
          return [n](C x) { return math::int_pow(x, n); };
        } else {
          const C e = math::scalar_as<C>(a.s);
          return [e](C x) { return std::pow(x, e); };
        }
      });
    // The common exponents as plain arithmetic (what PyTorch does too).
    case ScalarFn::PowSquare:
      return map_scalar<Family::FloatHBF16>(
          ctx, a, [&]<typename C>() { return [](C x) { return x * x; }; });
    case ScalarFn::PowCube:
      return map_scalar<Family::FloatHBF16>(
          ctx, a, [&]<typename C>() { return [](C x) { return x * x * x; }; });
    case ScalarFn::PowIdentity:
      return map_scalar<Family::FloatHBF16>(ctx, a,
                                            [&]<typename C>() { return [](C x) { return x; }; });
    case ScalarFn::PowSqrt:
      return map_scalar<Family::FloatHBF16>(
          ctx, a, [&]<typename C>() { return [](C x) { return std::sqrt(x); }; });
    case ScalarFn::PowReciprocal:
      return map_scalar<Family::FloatHBF16>(
          ctx, a, [&]<typename C>() { return [](C x) { return C(1) / x; }; });
    case ScalarFn::PowBase:
      return map_scalar<Family::RealHBF16>(ctx, a, [&]<typename C>() {
        const C base = math::scalar_as<C>(a.s);
        if constexpr (std::is_integral_v<C>) {
          return [base](C y) { return math::int_pow(base, y); };
        } else {
          return [base](C y) { return std::pow(base, y); };
        }
      });
    case ScalarFn::BitwiseAnd:
      return map_scalar<Family::RealHBBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_integral_v<C>) {
          const C v = math::scalar_as<C>(a.s);
          return [v](C x) { return C(x & v); };
        } else {
          return Unused{};
        }
      });
    case ScalarFn::BitwiseOr:
      return map_scalar<Family::RealHBBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_integral_v<C>) {
          const C v = math::scalar_as<C>(a.s);
          return [v](C x) { return C(x | v); };
        } else {
          return Unused{};
        }
      });
    case ScalarFn::BitwiseXor:
      return map_scalar<Family::RealHBBF16>(ctx, a, [&]<typename C>() {
        if constexpr (std::is_integral_v<C>) {
          const C v = math::scalar_as<C>(a.s);
          return [v](C x) { return C(x ^ v); };
        } else {
          return Unused{};
        }
      });
  }
}

const ops::ElementwiseBackend& elementwise_backend() {
  using namespace elementwise;  // NOLINT: the compute functions
  static constexpr ops::ElementwiseBackend kElementwise = PTERUN_ELEMENTWISE_BACKEND(&fused);
  return kElementwise;
}

}  // namespace pterun::cpu
