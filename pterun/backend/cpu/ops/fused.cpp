// Fused elementwise programs on the CPU (ops/fused.h). The output is walked
// in its memory order, as the elementwise engine walks it, in tiles of up to
// kTile elements of its innermost run: each input's tile is loaded as
// float, each step runs over whole tiles (plain loops of the per-element
// functions the unfused kernels use, elementwise_fns.h) and rounds its tile
// to its dtype, and the last tile is stored.

#include <algorithm>
#include <array>
#include <cmath>

#include "pterun/backend/cpu/engine/elementwise.h"
#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/ops/elementwise_compute.h"
#include "pterun/backend/cpu/ops/elementwise_fns.h"
#include "pterun/core/half.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/ops/fused.h"

namespace pterun::cpu {
namespace {

using ops::ActivationFn;
using ops::BinaryFn;
using ops::FusedKind;
using ops::FusedStep;
using ops::ScalarFn;
using ops::UnaryFn;
namespace math = kernels::math;

constexpr int64_t kTile = 256;

template <typename F>
inline void map1(const float* a, float* d, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) d[i] = f(a[i]);
}

template <typename F>
inline void map2(const float* a, const float* b, float* d, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) d[i] = f(a[i], b[i]);
}

void unary(UnaryFn fn, const float* a, float* d, int64_t n) {
  switch (fn) {
#define PTERUN_FLOAT_FN(name) \
  case UnaryFn::name:         \
    return map1(a, d, n, [](float x) { return fns::unary_float<UnaryFn::name>(x); });
    PTERUN_FLOAT_UNARY_FNS(PTERUN_FLOAT_FN)
#undef PTERUN_FLOAT_FN
    case UnaryFn::Neg: return map1(a, d, n, [](float x) { return math::neg(x); });
    case UnaryFn::Abs: return map1(a, d, n, [](float x) { return std::abs(x); });
    default: return;  // the front-end admits no other
  }
}

void activation(ActivationFn fn, const float* a, float* d, int64_t n) {
  switch (fn) {
    case ActivationFn::Relu: return map1(a, d, n, [](float x) { return fns::relu(x); });
    case ActivationFn::Silu: return map1(a, d, n, [](float x) { return fns::silu(x); });
    case ActivationFn::Hardsigmoid:
      return map1(a, d, n, [](float x) { return fns::hardsigmoid(x); });
    case ActivationFn::Hardswish: return map1(a, d, n, [](float x) { return fns::hardswish(x); });
    case ActivationFn::Gelu: return map1(a, d, n, [](float x) { return fns::gelu_erf(x); });
    case ActivationFn::GeluTanh: return map1(a, d, n, [](float x) { return fns::gelu_tanh(x); });
    default: return;
  }
}

void binary(const FusedStep& s, const float* a, const float* b, float* d, int64_t n) {
  const float alpha = static_cast<float>(s.s0);
  switch (static_cast<BinaryFn>(s.fn)) {
    case BinaryFn::Add: return map2(a, b, d, n, [](float x, float y) { return math::add(x, y); });
    case BinaryFn::AddAlpha:
      return map2(a, b, d, n,
                  [alpha](float x, float y) { return math::add(x, math::mul(alpha, y)); });
    case BinaryFn::Sub: return map2(a, b, d, n, [](float x, float y) { return math::sub(x, y); });
    case BinaryFn::SubAlpha:
      return map2(a, b, d, n,
                  [alpha](float x, float y) { return math::sub(x, math::mul(alpha, y)); });
    case BinaryFn::Mul: return map2(a, b, d, n, [](float x, float y) { return math::mul(x, y); });
    case BinaryFn::Div: return map2(a, b, d, n, [](float x, float y) { return x / y; });
    case BinaryFn::Maximum:
      return map2(a, b, d, n, [](float x, float y) { return math::max_nan(x, y); });
    case BinaryFn::Minimum:
      return map2(a, b, d, n, [](float x, float y) { return math::min_nan(x, y); });
    case BinaryFn::Pow: return map2(a, b, d, n, [](float x, float y) { return std::pow(x, y); });
    default: return;
  }
}

void scalar(const FusedStep& s, const float* a, float* d, int64_t n) {
  const float v = static_cast<float>(s.s0), alpha = static_cast<float>(s.s1);
  switch (static_cast<ScalarFn>(s.fn)) {
    case ScalarFn::Add: {
      const float c = math::mul(alpha, v);
      return map1(a, d, n, [c](float x) { return math::add(x, c); });
    }
    case ScalarFn::Sub: {
      const float c = math::mul(alpha, v);
      return map1(a, d, n, [c](float x) { return math::sub(x, c); });
    }
    case ScalarFn::Rsub:
      return map1(a, d, n, [v, alpha](float x) { return math::sub(v, math::mul(alpha, x)); });
    case ScalarFn::Mul: return map1(a, d, n, [v](float x) { return math::mul(x, v); });
    case ScalarFn::Div: return map1(a, d, n, [v](float x) { return x / v; });
    case ScalarFn::Pow: return map1(a, d, n, [v](float x) { return std::pow(x, v); });
    case ScalarFn::PowSquare: return map1(a, d, n, [](float x) { return x * x; });
    case ScalarFn::PowCube: return map1(a, d, n, [](float x) { return x * x * x; });
    case ScalarFn::PowIdentity: return map1(a, d, n, [](float x) { return x; });
    case ScalarFn::PowSqrt: return map1(a, d, n, [](float x) { return std::sqrt(x); });
    case ScalarFn::PowReciprocal: return map1(a, d, n, [](float x) { return 1.0f / x; });
    default: return;
  }
}

void clamp(const FusedStep& s, const float* a, float* d, int64_t n) {
  const float lo = static_cast<float>(s.s0), hi = static_cast<float>(s.s1);
  if (std::isnan(lo) || std::isnan(hi)) {
    const float nan = lo + hi;
    return map1(a, d, n, [nan](float) { return nan; });
  }
  map1(a, d, n, [lo, hi](float x) { return fns::clamp(x, lo, hi); });
}

/// d rounded to `dtype`, in place.
void round_to(DType dtype, float* d, int64_t n) {
  if (dtype == DType::BFloat16) {
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(BFloat16(d[i]));
  } else if (dtype == DType::Float16) {
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(Half(d[i]));
  }
}

void run_step(const FusedStep& s, const float* a, const float* b, float* d, int64_t n) {
  switch (s.kind) {
    case FusedKind::Unary: unary(static_cast<UnaryFn>(s.fn), a, d, n); break;
    case FusedKind::Activation: activation(static_cast<ActivationFn>(s.fn), a, d, n); break;
    case FusedKind::Binary: binary(s, a, b, d, n); break;
    case FusedKind::Scalar: scalar(s, a, d, n); break;
    case FusedKind::Clamp: clamp(s, a, d, n); break;
    case FusedKind::Cast: std::copy(a, a + n, d); break;
  }
  round_to(s.round, d, n);
}

template <size_t N>
void run_fused(const kernels::KernelContext& ctx, const ops::FusedArgs& a) {
  Tensor& out = a.out;
  const int64_t numel = out.numel();
  if (numel == 0) return;
  std::array<const Tensor*, N> ins;
  for (size_t k = 0; k < N; ++k) ins[k] = a.inputs[k];
  const detail::Plan<N> plan = detail::make_plan<N>(out, ins, a.op);
  const size_t r = plan.rank;
  const int64_t inner = r == 0 ? 1 : plan.sizes[r - 1];
  const int64_t rows = numel / inner;
  const int64_t tiles_per_row = (inner + kTile - 1) / kTile;
  const std::span<const FusedStep> steps = a.steps;

  auto run = [&](int64_t begin, int64_t end) {
    alignas(64) float regs[ops::kFusedMaxRegisters][kTile];
    const float* reg[ops::kFusedMaxRegisters];
    for (int64_t item = begin; item < end; ++item) {
      const int64_t row = item / tiles_per_row;
      const int64_t start = (item % tiles_per_row) * kTile;
      const int64_t n = std::min(kTile, inner - start);
      std::array<int64_t, N + 1> off{};
      int64_t rem = row;
      for (size_t d = r == 0 ? 0 : r - 1; d-- > 0;) {
        const int64_t i = rem % plan.sizes[d];
        rem /= plan.sizes[d];
        for (size_t k = 0; k <= N; ++k) off[k] += i * plan.strides[k][d];
      }
      for (size_t k = 0; k < N; ++k) {
        const int64_t stride = r == 0 ? 1 : plan.strides[k + 1][r - 1];
        const int64_t o = off[k + 1] + start * stride;
        if (ins[k]->dtype() == DType::Float32 && stride == 1) {
          reg[k] = ins[k]->template data_as<const float>() + o;
        } else {
          detail::load<float>(ins[k]->data(), ins[k]->dtype(), o, stride, n, regs[k]);
          reg[k] = regs[k];
        }
      }
      for (size_t j = 0; j < steps.size(); ++j) {
        const FusedStep& s = steps[j];
        float* d = regs[N + j];
        run_step(s, reg[s.a], reg[s.b], d, n);
        reg[N + j] = d;
      }
      const int64_t out_stride = r == 0 ? 1 : plan.strides[0][r - 1];
      detail::store<float>(out.data(), out.dtype(), off[0] + start * out_stride, out_stride, n,
                           reg[N + steps.size() - 1]);
    }
  };
  const int64_t cost = std::min<int64_t>(inner, kTile) * static_cast<int64_t>(steps.size());
  parallel_for(ctx, rows * tiles_per_row, cost, run);
}

static_assert(ops::kFusedMaxInputs == 8, "one case per input count below");

}  // namespace

void elementwise::fused(KernelContext& ctx, const ops::FusedArgs& a) {
  switch (a.inputs.size()) {
    case 1: return run_fused<1>(ctx, a);
    case 2: return run_fused<2>(ctx, a);
    case 3: return run_fused<3>(ctx, a);
    case 4: return run_fused<4>(ctx, a);
    case 5: return run_fused<5>(ctx, a);
    case 6: return run_fused<6>(ctx, a);
    case 7: return run_fused<7>(ctx, a);
    default: return run_fused<ops::kFusedMaxInputs>(ctx, a);
  }
}

}  // namespace pterun::cpu
