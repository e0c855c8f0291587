// Activations on the CPU over the shared elementwise engine: relu,
// hardtanh and clamp for any real dtype; gelu, silu, elu and the other
// floating ones with out of the input's dtype (f16/bf16 computed in float);
// glu by hand, since its two inputs are halves of one tensor. The
// front-ends are ops/elementwise_activation.cpp.

#include <cmath>
#include <limits>
#include <type_traits>

#include "pterun/backend/cpu/engine/elementwise.h"
#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/vec_math.h"
#include "pterun/backend/cpu/ops/elementwise_compute.h"
#include "pterun/backend/cpu/ops/elementwise_fns.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/ops/elementwise.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;
using ops::ActivationFn;
namespace math = kernels::math;

/// out = make.template operator()<C>()(in), C double for double and float
/// for the other floating dtypes.
template <typename Make>
void map_float(KernelContext& ctx, const ops::ActivationArgs& a, Make&& make) {
  auto run = [&]<typename C>() {
    cpu::map_elements<C, C, 1>(ctx, a.out, {&a.in}, make.template operator()<C>(), a.op);
  };
  if (a.in.dtype() == DType::Float64) {
    run.template operator()<double>();
  } else {
    run.template operator()<float>();
  }
}

/// out = fn(in) for a floating activation without parameters.
template <typename Fn>
void map_float_fn(KernelContext& ctx, const ops::ActivationArgs& a, Fn fn) {
  map_float(ctx, a, [&]<typename C>() { return [fn](C x) { return C(fn(x)); }; });
}

// NaN stays NaN.
void relu(KernelContext& ctx, const ops::ActivationArgs& a) {
  kernels::visit(a.in.dtype(), Family::RealHBF16, a.op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    if constexpr (std::is_unsigned_v<C>) {
      cpu::map_elements<C, C, 1>(
          ctx, a.out, {&a.in}, [](C x) { return x; }, a.op);
    } else {
      cpu::map_elements<C, C, 1>(
          ctx, a.out, {&a.in}, [](C x) { return fns::relu(x); }, a.op);
    }
  });
}

/// max(x, lo) then min(., hi) keeping NaN inputs NaN, for compute type C.
template <typename C>
void clamp_scalar(KernelContext& ctx, const Tensor& in, Tensor& out, C lo, C hi, const char* op) {
  if (math::is_nan(lo) || math::is_nan(hi)) {
    C nan = lo + hi;
    cpu::map_elements<C, C, 1>(
        ctx, out, {&in}, [nan](C) { return nan; }, op);
    return;
  }
  cpu::map_elements<C, C, 1>(
      ctx, out, {&in}, [lo, hi](C x) { return fns::clamp(x, lo, hi); }, op);
}

}  // namespace

void elementwise::activation(KernelContext& ctx, const ops::ActivationArgs& a) {
  switch (a.fn) {
    case ActivationFn::Relu: return relu(ctx, a);
    case ActivationFn::Silu: return map_float_fn(ctx, a, [](auto x) { return fns::silu(x); });
    case ActivationFn::Hardsigmoid:
      return map_float_fn(ctx, a, [](auto x) { return fns::hardsigmoid(x); });
    case ActivationFn::Hardswish:
      return map_float_fn(ctx, a, [](auto x) { return fns::hardswish(x); });
    case ActivationFn::GeluTanh:
      return map_float_fn(ctx, a, [](auto x) { return fns::gelu_tanh(x); });
    case ActivationFn::Gelu: return map_float_fn(ctx, a, [](auto x) { return fns::gelu_erf(x); });
    case ActivationFn::LeakyRelu:
      return map_float(ctx, a, [&]<typename C>() {
        C s = math::scalar_as<C>(a.negative_slope);
        return [s](C x) { return x >= C(0) ? x : x * s; };
      });
    case ActivationFn::Elu:
      return map_float(ctx, a, [&]<typename C>() {
        C pos = C(a.scale), neg = C(a.negative_scale), in_scale = C(a.input_scale);
        return [pos, neg, in_scale](C x) {
          return x > C(0) ? x * pos : std::expm1(x * in_scale) * neg;
        };
      });
    case ActivationFn::Softplus:
      return map_float(ctx, a, [&]<typename C>() {
        C b = C(a.beta), t = C(a.threshold);
        return [b, t](C x) { return x * b > t ? x : std::log1p(std::exp(x * b)) / b; };
      });
  }
}

// A missing bound is the compute type's extreme.
void elementwise::clamp(KernelContext& ctx, const ops::ClampArgs& a) {
  kernels::visit(a.compute, Family::RealHBBF16, a.op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    using Limits = std::numeric_limits<C>;
    C low = Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
    C high = Limits::has_infinity ? Limits::infinity() : Limits::max();
    clamp_scalar<C>(ctx, a.in, a.out, a.lo ? math::scalar_as<C>(*a.lo) : low,
                    a.hi ? math::scalar_as<C>(*a.hi) : high, a.op);
  });
}

void elementwise::clamp_tensor(KernelContext& ctx, const ops::ClampTensorArgs& a) {
  const Tensor* lo = a.lo;
  const Tensor* hi = a.hi;
  kernels::visit(a.compute, Family::RealHBBF16, a.op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    if (lo && hi) {
      cpu::map_elements<C, C, 3>(
          ctx, a.out, {&a.in, lo, hi},
          [](C x, C l, C h) { return math::min_nan(math::max_nan(x, l), h); }, a.op);
    } else if (lo) {
      cpu::map_elements<C, C, 2>(
          ctx, a.out, {&a.in, lo}, [](C x, C l) { return math::max_nan(x, l); }, a.op);
    } else {
      cpu::map_elements<C, C, 2>(
          ctx, a.out, {&a.in, hi}, [](C x, C h) { return math::min_nan(x, h); }, a.op);
    }
  });
}

// Walks out in its memory order with in's strides, so any dim order works
// without copies.
void elementwise::glu(KernelContext& ctx, const ops::GluArgs& g) {
  const Tensor& in = g.in;
  Tensor& out = g.out;
  const size_t dim = g.dim;
  const char* op = g.op;
  const int64_t half = out.size(dim);
  const int64_t numel = out.numel();
  const size_t rank = out.dim();
  const size_t inner_dim = out.dim_order()[rank - 1];
  const int64_t inner = out.size(inner_dim);
  const int64_t in_inner_stride = in.stride(inner_dim);
  const int64_t out_inner_stride = out.stride(inner_dim);
  const int64_t second = half * in.stride(dim);
  kernels::visit(in.dtype(), Family::FloatHBF16, op, [&]<typename TI>() {
    kernels::visit(out.dtype(), Family::FloatHBF16, op, [&]<typename TO>() {
      using C = std::conditional_t<std::is_same_v<TI, double>, double, float>;
      const TI* src = in.data_as<const TI>();
      TO* dst = out.data_as<TO>();
      cpu::parallel_for(ctx, numel / inner, inner, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          // Offsets of this row from its index over the outer dims.
          int64_t in_off = 0, out_off = 0, rem = row;
          for (size_t k = rank - 1; k-- > 0;) {
            size_t d = out.dim_order()[k];
            int64_t i = rem % out.size(d);
            rem /= out.size(d);
            in_off += i * in.stride(d);
            out_off += i * out.stride(d);
          }
          for (int64_t j = 0; j < inner; ++j) {
            const TI* p = src + in_off + j * in_inner_stride;
            C a = kernels::convert<C>(p[0]);
            C b = kernels::convert<C>(p[second]);
            dst[out_off + j * out_inner_stride] = kernels::convert<TO>(a / (C(1) + std::exp(-b)));
          }
        }
      });
    });
  });
}

}  // namespace pterun::cpu
