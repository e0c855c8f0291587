// Elementwise unary math on the CPU over the shared elementwise engine: the
// floating functions (exp, sin, rsqrt ...) in the compute type the front-end
// chose (double or float), the others (neg, abs, floor, sign ...) in the
// input's. The front-ends are ops/elementwise_unary.cpp.

#include <cmath>
#include <type_traits>

#include "pterun/backend/cpu/engine/elementwise.h"
#include "pterun/backend/cpu/engine/elementwise_util.h"
#include "pterun/backend/cpu/ops/elementwise_compute.h"
#include "pterun/backend/cpu/ops/elementwise_fns.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/ops/elementwise.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;
using ops::UnaryFn;
namespace math = kernels::math;

/// out = fn(in) in double (compute Float64) or float, fn generic over both.
template <typename Fn>
void map_float(KernelContext& ctx, const ops::UnaryArgs& a, Fn fn) {
  if (a.compute == DType::Float64) {
    cpu::map_elements<double, double, 1>(ctx, a.out, {&a.in}, fn, a.op);
  } else {
    cpu::map_elements<float, float, 1>(ctx, a.out, {&a.in}, fn, a.op);
  }
}

/// One of the floating functions (fns::unary_float), dispatched once per
/// call.
void float_fn(KernelContext& ctx, const ops::UnaryArgs& a) {
  auto run = [&]<UnaryFn kFn>() {
    map_float(ctx, a, [](auto x) { return fns::unary_float<kFn>(x); });
  };
  switch (a.fn) {
#define PTERUN_FLOAT_FN(name) \
  case UnaryFn::name: return run.template operator()<UnaryFn::name>();
    PTERUN_FLOAT_UNARY_FNS(PTERUN_FLOAT_FN)
#undef PTERUN_FLOAT_FN
    default: return;
  }
}

/// out = fn(in) in the compute type of the input's dtype (of kFamily), out
/// of that dtype; fn is generic over the compute types.
template <Family kFamily, typename Fn>
void map_same(KernelContext& ctx, const ops::UnaryArgs& a, Fn fn) {
  kernels::visit(a.compute, kFamily, a.op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    cpu::map_elements<C, C, 1>(
        ctx, a.out, {&a.in}, [fn](C x) { return C(fn(x)); }, a.op);
  });
}

/// out = fn(in) as bool, for any real or bool input.
template <typename Fn>
void map_class(KernelContext& ctx, const ops::UnaryArgs& a, Fn fn) {
  kernels::visit(a.compute, Family::RealHBBF16, a.op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    cpu::map_elements<C, bool, 1>(
        ctx, a.out, {&a.in}, [fn](C x) -> bool { return fn(x); }, a.op);
  });
}

// Integers and bool (logical not).
void bitwise_not(KernelContext& ctx, const ops::UnaryArgs& a) {
  if (a.compute == DType::Bool) {  // as uint8, where the loop vectorises
    const Tensor bits = cpu::bits_view(a.in);
    Tensor out_bits = cpu::bits_view(a.out);
    cpu::map_elements<uint8_t, uint8_t, 1>(
        ctx, out_bits, {&bits}, [](uint8_t x) { return uint8_t(x ^ 1); }, a.op);
    return;
  }
  kernels::visit(a.compute, Family::Real, a.op, [&]<typename T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      cpu::map_elements<T, T, 1>(
          ctx, a.out, {&a.in}, [](T x) { return T(~x); }, a.op);
    }
  });
}

// log(x / (1 - x)), x first clamped to [eps, 1 - eps] for LogitEps.
void logit(KernelContext& ctx, const ops::UnaryArgs& a) {
  auto run = [&]<typename C>() {
    if (a.fn == UnaryFn::LogitEps) {
      C lo = C(a.eps), hi = C(1 - a.eps);
      cpu::map_elements<C, C, 1>(
          ctx, a.out, {&a.in},
          [lo, hi](C x) {
            x = x < lo ? lo : (x > hi ? hi : x);
            return std::log(x / (C(1) - x));
          },
          a.op);
    } else {
      cpu::map_elements<C, C, 1>(
          ctx, a.out, {&a.in}, [](C x) { return std::log(x / (C(1) - x)); }, a.op);
    }
  };
  if (a.compute == DType::Float64) {
    run.template operator()<double>();
  } else {
    run.template operator()<float>();
  }
}

// Per-element functions of the same-dtype ops; integers pass through the
// rounding ones unchanged.
template <typename C>
constexpr bool kFloat = std::is_floating_point_v<C>;

constexpr auto kNeg = [](auto x) { return math::neg(x); };
constexpr auto kAbs = [](auto x) {
  if constexpr (kFloat<decltype(x)>) {
    return std::abs(x);
  } else if constexpr (std::is_signed_v<decltype(x)>) {
    return x < 0 ? math::neg(x) : x;
  } else {
    return x;
  }
};
constexpr auto kFloor = [](auto x) {
  if constexpr (kFloat<decltype(x)>)
    return std::floor(x);
  else
    return x;
};
constexpr auto kCeil = [](auto x) {
  if constexpr (kFloat<decltype(x)>)
    return std::ceil(x);
  else
    return x;
};
constexpr auto kTrunc = [](auto x) {
  if constexpr (kFloat<decltype(x)>)
    return std::trunc(x);
  else
    return x;
};
// nearbyint rounds half to even in the default rounding mode.
constexpr auto kRound = [](auto x) {
  if constexpr (kFloat<decltype(x)>)
    return std::nearbyint(x);
  else
    return x;
};
constexpr auto kSign = [](auto x) {
  using C = decltype(x);
  if constexpr (std::is_same_v<C, bool>) {
    return x;
  } else if constexpr (kFloat<C>) {
    return math::is_nan(x) ? x : C((x > 0) - (x < 0));
  } else if constexpr (std::is_unsigned_v<C>) {
    return C(x != 0);
  } else {
    return C((x > 0) - (x < 0));
  }
};

}  // namespace

void elementwise::unary(KernelContext& ctx, const ops::UnaryArgs& a) {
  constexpr Family kRealH = Family::RealHBF16;
  switch (a.fn) {
    case UnaryFn::Exp:
    case UnaryFn::Expm1:
    case UnaryFn::Log:
    case UnaryFn::Log1p:
    case UnaryFn::Log2:
    case UnaryFn::Log10:
    case UnaryFn::Sqrt:
    case UnaryFn::Rsqrt:
    case UnaryFn::Reciprocal:
    case UnaryFn::Sin:
    case UnaryFn::Cos:
    case UnaryFn::Tan:
    case UnaryFn::Asin:
    case UnaryFn::Acos:
    case UnaryFn::Atan:
    case UnaryFn::Sinh:
    case UnaryFn::Cosh:
    case UnaryFn::Tanh:
    case UnaryFn::Asinh:
    case UnaryFn::Acosh:
    case UnaryFn::Atanh:
    case UnaryFn::Erf:
    case UnaryFn::Sigmoid: return float_fn(ctx, a);
    case UnaryFn::Logit:
    case UnaryFn::LogitEps: return logit(ctx, a);
    case UnaryFn::Neg: return map_same<kRealH>(ctx, a, kNeg);
    case UnaryFn::Abs: return map_same<kRealH>(ctx, a, kAbs);
    case UnaryFn::Floor: return map_same<kRealH>(ctx, a, kFloor);
    case UnaryFn::Ceil: return map_same<kRealH>(ctx, a, kCeil);
    case UnaryFn::Round: return map_same<kRealH>(ctx, a, kRound);
    case UnaryFn::Trunc: return map_same<kRealH>(ctx, a, kTrunc);
    case UnaryFn::Sign: return map_same<Family::RealHBBF16>(ctx, a, kSign);
    case UnaryFn::BitwiseNot: return bitwise_not(ctx, a);
    case UnaryFn::IsNan: return map_class(ctx, a, [](auto x) { return math::is_nan(x); });
    case UnaryFn::IsInf:
      return map_class(ctx, a, [](auto x) {
        if constexpr (kFloat<decltype(x)>) {
          return std::isinf(x);
        } else {
          return false;
        }
      });
  }
}

}  // namespace pterun::cpu
