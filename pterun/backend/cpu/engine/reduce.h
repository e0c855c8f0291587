#pragma once

// The CPU reduction engine over the plans of kernels/common/reduce_util.h:
// 32-byte SIMD vectors (Simd, load_vec, store_vec), a vectorisable expf
// (fast_exp), the reduction operators and reduce(), which folds with
// vectorisable inner loops and splits work over threads. Used by the
// reduce, softmax and norm kernels.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "pterun/backend/cpu/engine/elementwise.h"
#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/core/tensor.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/reduce_util.h"
#include "pterun/kernels/kernel.h"

namespace pterun::cpu {

// ---- explicit SIMD ------------------------------------------------------

/// 32-byte vectors of float / double (GCC vector extensions; the compiler
/// maps them to AVX2 or to pairs of SSE registers). Loops that must
/// vectorise whatever the compiler's cost model says (reductions that need
/// reassociation, exp with selects) use them directly.
template <typename A>
struct Simd;
template <>
struct Simd<float> {
  typedef float V __attribute__((vector_size(32)));
  typedef uint32_t U __attribute__((vector_size(32)));
  static constexpr int64_t kWidth = 8;
};
template <>
struct Simd<double> {
  typedef double V __attribute__((vector_size(32)));
  static constexpr int64_t kWidth = 4;
};

template <typename V, typename A>
inline V load_vec(const A* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
template <typename V, typename A>
inline void store_vec(A* p, V v) {
  std::memcpy(p, &v, sizeof(V));
}

namespace detail {

/// expf for F = float or a float vector (U its uint32 counterpart): range
/// reduction by ln2 and a degree-6 polynomial, about 2 ulp, no branches.
/// Underflow gives 0, overflow inf, NaN stays NaN (it flows through the
/// polynomial). Integer work is unsigned so no input can overflow it.
template <typename F, typename U>
inline F exp_impl(F x) {
  const F lo = F{} - 87.3f, hi = F{} + 88.72f, zero = F{}, one = F{} + 1.0f;
  const float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const uint32_t kRoundBits = 0x4B400000u;
  F xc = x < lo ? lo : x;
  xc = xc > hi ? hi : xc;
  F n = (xc * 1.44269504088896341f + kRound) - kRound;
  F r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  F p = F{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n as a product of two normal powers of two, so that n = 128 (just
  // below overflow) stays finite. Exponent fields come from the low bits
  // of n + 127 + kRound.
  const F max_exp = F{} + 127.0f;
  F n1 = n < max_exp ? n : max_exp;
  F e1 = n1 + (127.0f + kRound);
  F e2 = (n - n1) + (127.0f + kRound);
  U b1, b2;
  std::memcpy(&b1, &e1, sizeof(b1));
  std::memcpy(&b2, &e2, sizeof(b2));
  b1 = (b1 - kRoundBits) << 23;
  b2 = (b2 - kRoundBits) << 23;
  F s1, s2;
  std::memcpy(&s1, &b1, sizeof(s1));
  std::memcpy(&s2, &b2, sizeof(s2));
  F y = p * s1 * s2;
  y = y * (x < lo ? zero : one);
  y = y * (x > hi ? F{} + std::numeric_limits<float>::infinity() : one);
  return y;
}

}  // namespace detail

/// expf to about 2 ulp (see detail::exp_impl).
inline float fast_exp(float x) {
  return detail::exp_impl<float, uint32_t>(x);
}
inline Simd<float>::V fast_exp(Simd<float>::V x) {
  return detail::exp_impl<Simd<float>::V, Simd<float>::U>(x);
}

// ---- reduction operators -----------------------------------------------

/// Operators for reduce(): Acc is both the type inputs are loaded as and the
/// accumulator; step() folds one input into a partial result, combine()
/// joins two partial results, finish() turns a total into the stored value.
/// step and combine also take Simd vectors of Acc.
template <typename A>
struct SumOp {
  using Acc = A;
  A identity() const { return A(0); }
  template <typename V>
  V step(V a, V x) const {
    return V(a + x);
  }
  template <typename V>
  V combine(V a, V b) const {
    return V(a + b);
  }
  A finish(A a) const { return a; }
};

template <typename A>
struct MeanOp : SumOp<A> {
  A denom = A(1);
  A finish(A a) const { return a / denom; }
};

/// Sum of squared deviations from `mean` (the second pass of a variance).
template <typename A>
struct SquaredDeviationOp : SumOp<A> {
  A mean = A(0);
  template <typename V>
  V step(V a, V x) const {
    return a + (x - mean) * (x - mean);
  }
};

template <typename A>
struct ProdOp {
  using Acc = A;
  A identity() const { return A(1); }
  template <typename V>
  V step(V a, V x) const {
    return V(a * x);
  }
  template <typename V>
  V combine(V a, V b) const {
    return V(a * b);
  }
  A finish(A a) const { return a; }
};

/// max / min where NaN wins (torch's amax/amin).
template <typename A, bool kMax>
struct ExtremeOp {
  using Acc = A;
  A identity() const {
    if constexpr (std::numeric_limits<A>::has_infinity) {
      return kMax ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    } else {
      return kMax ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
    }
  }
  template <typename V>
  V step(V a, V x) const {
    if constexpr (std::is_floating_point_v<A>) {
      return ((kMax ? x > a : x < a) | (x != x)) ? x : a;
    } else {
      return (kMax ? x > a : x < a) ? x : a;
    }
  }
  template <typename V>
  V combine(V a, V b) const {
    return step(a, b);
  }
  A finish(A a) const { return a; }
};

struct AnyOp {
  using Acc = bool;
  bool identity() const { return false; }
  bool step(bool a, bool x) const { return a | x; }
  bool combine(bool a, bool b) const { return a | b; }
  bool finish(bool a) const { return a; }
};

struct AllOp {
  using Acc = bool;
  bool identity() const { return true; }
  bool step(bool a, bool x) const { return a & x; }
  bool combine(bool a, bool b) const { return a & b; }
  bool finish(bool a) const { return a; }
};

namespace detail {

constexpr int64_t kReduceChunk = 1024;
constexpr int64_t kReduceBlock = 256;
constexpr int64_t kSideBySideBlock = 1024;  // 4-8 KB of accumulators: stays in L1

/// acc[k] = the fold of x[k] over the reduced positions of `red` (from its
/// start, `count` of them, in order), k < K: the accumulators stay in
/// registers, where a run of outputs of any length kept them in memory, a
/// load and a store per input vector waiting on the last one (a mean over
/// the 32 x 32 pixels of 4 x 32 channels took 17 µs so). The same order of
/// steps, so the same results.
template <int K, typename Op, typename A>
void fold_columns(const Op& op, A* acc, const A* x, kernels::Odometer<1> red, int64_t count) {
  A a[K];
  for (int k = 0; k < K; ++k) a[k] = acc[k];
  for (int64_t r = 0; r < count; ++r) {
    const A* at = x + red.offset[0];
    for (int k = 0; k < K; ++k) a[k] = op.step(a[k], at[k]);
    red.next();
  }
  for (int k = 0; k < K; ++k) acc[k] = a[k];
}

/// Folds x[0..n) into acc. Floating types use four Simd accumulators
/// (reassociating, which a compiler may not do by itself); other types
/// independent lanes that the compiler vectorises.
template <typename Op, typename A>
A fold(const Op& op, A acc, const A* x, int64_t n) {
  int64_t i = 0;
  if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double>) {
    using V = typename Simd<A>::V;
    constexpr int64_t kW = Simd<A>::kWidth;
    if (n >= 4 * kW) {
      const V id = V{} + op.identity();
      V a0 = id, a1 = id, a2 = id, a3 = id;
      for (; i + 4 * kW <= n; i += 4 * kW) {
        a0 = op.step(a0, load_vec<V>(x + i));
        a1 = op.step(a1, load_vec<V>(x + i + kW));
        a2 = op.step(a2, load_vec<V>(x + i + 2 * kW));
        a3 = op.step(a3, load_vec<V>(x + i + 3 * kW));
      }
      for (; i + kW <= n; i += kW) a0 = op.step(a0, load_vec<V>(x + i));
      a0 = op.combine(op.combine(a0, a1), op.combine(a2, a3));
      for (int64_t j = 0; j < kW; ++j) acc = op.combine(acc, A(a0[j]));
    }
  } else {
    constexpr int64_t kLanes = std::max<int64_t>(1, 64 / static_cast<int64_t>(sizeof(A)));
    if (n >= kLanes) {
      A lanes[kLanes];
      for (int64_t j = 0; j < kLanes; ++j) lanes[j] = op.identity();
      for (; i + kLanes <= n; i += kLanes) {
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] = op.step(lanes[j], x[i + j]);
      }
      for (int64_t j = 0; j < kLanes; ++j) acc = op.combine(acc, lanes[j]);
    }
  }
  for (; i < n; ++i) acc = op.step(acc, x[i]);
  return acc;
}

/// Folds `n` elements of `in` from element `offset` with `stride`,
/// converting them to A in chunks unless they already are dense A.
template <typename Op, typename A = typename Op::Acc>
A fold_strided(const Op& op, A acc, const Tensor& in, int64_t offset, int64_t stride, int64_t n) {
  if (in.dtype() == kernels::dtype_of<A>() && (stride == 1 || n == 1)) {
    return fold(op, acc, in.data_as<const A>() + offset, n);
  }
  alignas(64) A buf[kReduceChunk];
  for (int64_t i = 0; i < n; i += kReduceChunk) {
    int64_t m = std::min(kReduceChunk, n - i);
    load<A>(in.data(), in.dtype(), offset + i * stride, stride, m, buf);
    acc = fold(op, acc, buf, m);
  }
  return acc;
}

/// Folds the reduced elements [begin, end) (row-major over the reduced
/// dims) of the output whose first input element is at `base`.
template <typename Op, typename A = typename Op::Acc>
A fold_reduced(const Op& op, A acc, const Tensor& in, const kernels::ReducePlan& p, int64_t base,
               int64_t begin, int64_t end) {
  const size_t rr = p.reduced.rank;
  if (begin >= end) return acc;
  if (rr == 0) return fold_strided(op, acc, in, base, 1, 1);
  const int64_t run = p.reduced.sizes[rr - 1];
  const int64_t stride = p.reduced.strides[0][rr - 1];
  if (rr == 1) return fold_strided(op, acc, in, base + begin * stride, stride, end - begin);
  kernels::Odometer<1> outer = p.reduced;
  outer.rank = rr - 1;
  outer.seek(begin / run);
  for (int64_t pos = begin; pos < end;) {
    int64_t j = pos % run;
    int64_t n = std::min(run - j, end - pos);
    acc = fold_strided(op, acc, in, base + outer.offset[0] + j * stride, stride, n);
    pos += n;
    outer.next();
  }
  return acc;
}

}  // namespace detail

/// out[o] = op.finish(fold of every input element that reduces into o).
/// Chooses between folding each output's elements in turn (when the
/// reduced dims are innermost in memory) and folding blocks of outputs
/// side by side (when a kept dim is), and splits work over threads.
template <typename Op>
void reduce(kernels::KernelContext& ctx, const Tensor& in, Tensor& out,
            const kernels::ReducePlan& p, const Op& op) {
  using A = typename Op::Acc;
  using R = decltype(op.finish(A()));
  if (p.num_out == 0) return;
  char* out_base = static_cast<char*>(out.data());
  const size_t kr = p.kept.rank;
  const size_t rr = p.reduced.rank;

  // A whole-tensor reduction is split over threads with partial results.
  if (p.num_out == 1) {
    int64_t parts = std::min<int64_t>(ctx.num_threads, p.count / kParallelGrain);
    if (parts <= 1) {
      R r = op.finish(detail::fold_reduced(op, op.identity(), in, p, 0, 0, p.count));
      detail::store<R>(out_base, out.dtype(), p.kept.offset[1], 1, 1, &r);
      return;
    }
    A* partial = static_cast<A*>(ctx.scratch(sizeof(A) * static_cast<size_t>(parts)));
    parallel_for(ctx, parts, kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        partial[t] = detail::fold_reduced(op, op.identity(), in, p, 0, p.count * t / parts,
                                          p.count * (t + 1) / parts);
      }
    });
    A acc = op.identity();
    for (int64_t t = 0; t < parts; ++t) acc = op.combine(acc, partial[t]);
    R r = op.finish(acc);
    detail::store<R>(out_base, out.dtype(), 0, 1, 1, &r);
    return;
  }

  const int64_t kept_inner_stride = kr == 0 ? 0 : p.kept.strides[0][kr - 1];
  const int64_t red_inner_stride = rr == 0 ? 0 : p.reduced.strides[0][rr - 1];
  const int64_t vec = kr == 0 ? 1 : p.kept.sizes[kr - 1];
  const bool side_by_side =
      rr > 0 && p.count > 0 && vec >= 4 && kept_inner_stride < red_inner_stride;

  if (!side_by_side) {
    parallel_for(ctx, p.num_out, std::max<int64_t>(p.count, 1), [&](int64_t b, int64_t e) {
      kernels::Odometer<2> kept = p.kept;
      kept.seek(b);
      for (int64_t o = b; o < e; ++o) {
        R r = op.finish(detail::fold_reduced(op, op.identity(), in, p, kept.offset[0], 0, p.count));
        detail::store<R>(out_base, out.dtype(), kept.offset[1], 1, 1, &r);
        kept.next();
      }
    });
    return;
  }

  // Blocks of up to kSideBySideBlock outputs along the innermost kept dim, each
  // accumulating one input element per reduced position.
  constexpr int64_t kB = detail::kSideBySideBlock;
  const int64_t vec_in = p.kept.strides[0][kr - 1];
  const int64_t vec_out = p.kept.strides[1][kr - 1];
  kernels::Odometer<2> others = p.kept;
  others.rank = kr - 1;
  // Narrower blocks when there are too few to keep every thread busy.
  int64_t block = kB;
  const int64_t threads = std::max(1, ctx.num_threads);
  if (others.count() * ((vec + kB - 1) / kB) < threads) {
    block = std::clamp<int64_t>((vec / threads + 15) / 16 * 16, 64, kB);
  }
  const int64_t blocks = (vec + block - 1) / block;
  const bool direct = in.dtype() == kernels::dtype_of<A>() && vec_in == 1;
  constexpr int kColumns = static_cast<int>(128 / sizeof(A));
  const A* in_typed = in.data_as<const A>();
  parallel_for(
      ctx, others.count() * blocks, p.count * std::min(vec, block), [&](int64_t b, int64_t e) {
        alignas(64) A acc[kB];
        alignas(64) A buf[kB];
        alignas(64) R res[kB];
        kernels::Odometer<2> outer = others;
        for (int64_t u = b; u < e; ++u) {
          outer.seek(u / blocks);
          int64_t j0 = (u % blocks) * block;
          int64_t nb = std::min(block, vec - j0);
          int64_t base = outer.offset[0] + j0 * vec_in;
          for (int64_t j = 0; j < nb; ++j) acc[j] = op.identity();
          kernels::Odometer<1> red = p.reduced;
          red.seek(0);
          // Whole runs of kColumns outputs in registers; the rest below.
          int64_t done = 0;
          if (direct) {
            for (; done + kColumns <= nb; done += kColumns) {
              detail::fold_columns<kColumns>(op, acc + done, in_typed + base + done, red, p.count);
            }
          }
          for (int64_t r = 0; r < p.count && done < nb; ++r) {
            const A* x;
            if (direct) {
              x = in_typed + base + red.offset[0];
            } else {
              detail::load<A>(in.data(), in.dtype(), base + red.offset[0], vec_in, nb, buf);
              x = buf;
            }
            for (int64_t j = done; j < nb; ++j) acc[j] = op.step(acc[j], x[j]);
            red.next();
          }
          for (int64_t j = 0; j < nb; ++j) res[j] = op.finish(acc[j]);
          detail::store<R>(out_base, out.dtype(), outer.offset[1] + j0 * vec_out, vec_out, nb, res);
        }
      });
}

}  // namespace pterun::cpu
