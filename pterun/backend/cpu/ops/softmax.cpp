// _softmax and _log_softmax along one dim: rows that are contiguous in
// memory (the attention case) are processed one by one in place; a strided
// dim is processed as a block of lines side by side so loads stay
// unit-stride. f16/bf16 are computed in float, f64 in double.

#include <cmath>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/reduce.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/reduce_util.h"
#include "pterun/ops/softmax.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;

/// y[i] = exp(x[i] - m) for i < n (y may be nullptr or alias x); returns
/// the sum of those values.
template <typename C>
C exp_shift_sum(const C* x, C m, C* y, int64_t n) {
  int64_t i = 0;
  C sum = 0;
  if constexpr (std::is_same_v<C, float>) {
    using V = cpu::Simd<float>::V;
    constexpr int64_t kW = cpu::Simd<float>::kWidth;
    V s0 = V{}, s1 = V{};
    for (; i + 2 * kW <= n; i += 2 * kW) {
      V e0 = cpu::fast_exp(cpu::load_vec<V>(x + i) - m);
      V e1 = cpu::fast_exp(cpu::load_vec<V>(x + i + kW) - m);
      if (y != nullptr) {
        cpu::store_vec(y + i, e0);
        cpu::store_vec(y + i + kW, e1);
      }
      s0 += e0;
      s1 += e1;
    }
    s0 += s1;
    for (int64_t j = 0; j < kW; ++j) sum += s0[j];
    for (; i < n; ++i) {
      float e = cpu::fast_exp(x[i] - m);
      if (y != nullptr) y[i] = e;
      sum += e;
    }
  } else {
    for (; i < n; ++i) {
      C e = std::exp(x[i] - m);
      if (y != nullptr) y[i] = e;
      sum += e;
    }
  }
  return sum;
}

/// For each j < n: e = exp(x[j] - m[j]); s[j] += e; y[j] = e (y may be
/// nullptr or alias x).
template <typename C>
void exp_shift_accumulate(const C* x, const C* m, C* y, C* s, int64_t n) {
  int64_t j = 0;
  if constexpr (std::is_same_v<C, float>) {
    using V = cpu::Simd<float>::V;
    constexpr int64_t kW = cpu::Simd<float>::kWidth;
    for (; j + kW <= n; j += kW) {
      V e = cpu::fast_exp(cpu::load_vec<V>(x + j) - cpu::load_vec<V>(m + j));
      cpu::store_vec(s + j, cpu::load_vec<V>(s + j) + e);
      if (y != nullptr) cpu::store_vec(y + j, e);
    }
    for (; j < n; ++j) {
      float e = cpu::fast_exp(x[j] - m[j]);
      s[j] += e;
      if (y != nullptr) y[j] = e;
    }
  } else {
    for (; j < n; ++j) {
      C e = std::exp(x[j] - m[j]);
      s[j] += e;
      if (y != nullptr) y[j] = e;
    }
  }
}

/// y = softmax(x) (or log_softmax) of one contiguous row; y may alias x.
/// `safe`: a row of nothing but -inf gives zeros.
template <bool kLog, typename C>
void softmax_row(const C* x, C* y, int64_t n, bool safe) {
  const cpu::ExtremeOp<C, true> max_op;
  const C m = cpu::detail::fold(max_op, max_op.identity(), x, n);
  if (safe && m == -std::numeric_limits<C>::infinity()) {
    std::fill(y, y + n, C(0));
    return;
  }
  if constexpr (kLog) {
    const C shift = m + std::log(exp_shift_sum<C>(x, m, nullptr, n));
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] - shift;
  } else {
    const C inv = C(1) / exp_shift_sum<C>(x, m, y, n);
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
}

/// Softmax of `nb` lines side by side: element k of line j is
/// x[k * x_stride + j], written to y[k * y_stride + j] (y may alias x). m
/// and s are nb-element scratch. `safe`: a line of nothing but -inf gives
/// zeros (its max taken as 0, its exps then all 0, and its scale 0).
template <bool kLog, typename C>
void softmax_block(const C* x, int64_t x_stride, C* y, int64_t y_stride, int64_t len, int64_t nb,
                   C* m, C* s, bool safe) {
  const cpu::ExtremeOp<C, true> max_op;
  for (int64_t j = 0; j < nb; ++j) {
    m[j] = max_op.identity();
    s[j] = C(0);
  }
  for (int64_t k = 0; k < len; ++k) {
    const C* row = x + k * x_stride;
    for (int64_t j = 0; j < nb; ++j) m[j] = max_op.step(m[j], row[j]);
  }
  if (safe) {
    for (int64_t j = 0; j < nb; ++j) {
      if (m[j] == -std::numeric_limits<C>::infinity()) m[j] = C(0);
    }
  }
  for (int64_t k = 0; k < len; ++k) {
    exp_shift_accumulate<C>(x + k * x_stride, m, kLog ? nullptr : y + k * y_stride, s, nb);
  }
  for (int64_t j = 0; j < nb; ++j) {
    s[j] = kLog ? m[j] + std::log(s[j]) : (safe && s[j] == C(0)) ? C(0) : C(1) / s[j];
  }
  for (int64_t k = 0; k < len; ++k) {
    const C* xr = x + k * x_stride;
    C* yr = y + k * y_stride;
    if constexpr (kLog) {
      for (int64_t j = 0; j < nb; ++j) yr[j] = xr[j] - s[j];
    } else {
      for (int64_t j = 0; j < nb; ++j) yr[j] *= s[j];
    }
  }
}

template <bool kLog, typename T>
void softmax_impl(KernelContext& ctx, const Tensor& in, Tensor& out, size_t dim, bool safe) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  auto plan = kernels::make_line_plan<1>(in, dim, {out.strides()});
  const int64_t len = plan.len;
  const int64_t step = plan.in_step;
  const int64_t out_step = plan.out_step[0];
  constexpr bool kSameType = std::is_same_v<T, C>;
  // Lines side by side when the softmax dim is not innermost in memory;
  // read and written in place when the types and the inner strides allow,
  // else through a per-thread buffer.
  const bool blocked = plan.vec > 1 && std::abs(plan.vec_in) < std::abs(step);
  const bool direct = kSameType && (blocked ? plan.vec_in == 1 && plan.vec_out[0] == 1
                                            : step == 1 && out_step == 1);
  const int64_t block = !blocked ? 1
                        : direct ? std::min<int64_t>(plan.vec, 64)
                                 : std::clamp<int64_t>(16384 / std::max<int64_t>(len, 1), 8, 256);
  const int64_t per_outer = (plan.vec + block - 1) / block;
  const int64_t units = plan.outer.count() * per_outer;

  // Per-thread scratch: the block statistics, plus the lines when buffered.
  const int threads = std::max(1, ctx.num_threads);
  const int64_t slot = 2 * block + 16 + (direct ? 0 : len * block);
  C* scratch = static_cast<C*>(
      ctx.scratch(sizeof(C) * static_cast<size_t>(slot) * static_cast<size_t>(threads)));
  const T* x = in.data_as<const T>();
  T* y = out.data_as<T>();

  cpu::parallel_for(ctx, units, len * block * 8, [&](int64_t b, int64_t e) {
    C* stats = scratch + slot * cpu::parallel_thread_index();
    C* buf = stats + 2 * block + 16;
    auto outer = plan.outer;
    for (int64_t u = b; u < e; ++u) {
      outer.seek(u / per_outer);
      const int64_t j0 = (u % per_outer) * block;
      const int64_t in_base = outer.offset[0] + j0 * plan.vec_in;
      const int64_t out_base = outer.offset[1] + j0 * plan.vec_out[0];
      const int64_t nb = std::min(block, plan.vec - j0);
      if constexpr (kSameType) {
        if (direct && !blocked) {
          softmax_row<kLog, C>(x + in_base, y + out_base, len, safe);
          continue;
        }
        if (direct) {
          softmax_block<kLog, C>(x + in_base, step, y + out_base, out_step, len, nb, stats,
                                 stats + block, safe);
          continue;
        }
      }
      if (!blocked) {
        cpu::detail::load<C>(x, in.dtype(), in_base, step, len, buf);
        softmax_row<kLog, C>(buf, buf, len, safe);
        cpu::detail::store<C>(y, out.dtype(), out_base, out_step, len, buf);
        continue;
      }
      for (int64_t k = 0; k < len; ++k) {
        cpu::detail::load<C>(x, in.dtype(), in_base + k * step, plan.vec_in, nb, buf + k * nb);
      }
      softmax_block<kLog, C>(buf, nb, buf, nb, len, nb, stats, stats + block, safe);
      for (int64_t k = 0; k < len; ++k) {
        cpu::detail::store<C>(y, out.dtype(), out_base + k * out_step, plan.vec_out[0], nb,
                              buf + k * nb);
      }
    }
  });
}

void softmax_out(KernelContext& ctx, const ops::SoftmaxArgs& a) {
  const char* op = a.log ? "aten::_log_softmax.out" : "aten::_softmax.out";
  kernels::visit(a.in.dtype(), kernels::Family::FloatHBF16, op, [&]<typename T>() {
    if (a.log) {
      softmax_impl<true, T>(ctx, a.in, a.out, a.dim, false);
    } else {
      softmax_impl<false, T>(ctx, a.in, a.out, a.dim, a.safe);
    }
  });
}

}  // namespace

const ops::SoftmaxBackend& softmax_backend() {
  static constexpr ops::SoftmaxBackend kSoftmax{&softmax_out};
  return kSoftmax;
}

}  // namespace pterun::cpu
