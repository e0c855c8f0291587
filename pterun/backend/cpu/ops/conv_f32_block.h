#pragma once

// The register blocks of our own f32 convolution (conv_f32.cpp): R output
// channels x N runs of L consecutive output columns accumulate in vector
// registers over the taps, get the bias, an optional residual and the fused
// activation, and are stored straight into the output in its own layout.
// Included by conv_f32.cpp only (templates over the vector type).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "pterun/backend/cpu/engine/vec_float.h"

// Without AVX the 32-byte vectors below are passed differently; they never
// cross a translation unit, so GCC's ABI note does not apply.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pterun::cpu::conv_blocks {

using vec::kWide;
using vec::load;
using vec::store;

// Block shapes (output channels x runs): registers hold the accumulators
// and a vector per run. With 32 registers: 4 x 6, 8 x 3 and 16 x 1 (one
// run: more channels share each input vector); with 16: 4 x 2. Depthwise
// layers (one channel per group) take 1 x 6 (1 x 2).
constexpr int kMaxRuns = kWide ? 6 : 2;

/// Runs per block for `left` runs still to do in a row class.
inline int runs_per_block(int64_t left) {
  if constexpr (kWide) return left >= 6 ? 6 : left >= 3 ? 3 : static_cast<int>(left);
  return left >= 2 ? 2 : 1;
}

/// Output channels per block of `runs` runs, for `left` channels still to do.
inline int rows_per_block(int runs, int64_t left) {
  const int most = !kWide ? 4 : runs == 6 ? 4 : runs == 1 ? 16 : 8;
  for (int r = most; r > 1; r /= 2) {
    if (left >= r) return r;
  }
  return 1;
}

/// One block: R output channels (channel r's weight of tap t at
/// w[t * w_stride + r]; bias[r]) over N runs, run j reading the padded
/// band at src[j] + taps[t] and writing lanes[j] columns, dst_cs apart.
struct Block {
  const float* w;
  int64_t w_stride;
  const float* bias;  // or null
  int64_t taps_count;
  const int32_t* taps;
  const float* src[kMaxRuns];
  float* dst[kMaxRuns];
  int64_t lanes[kMaxRuns];
  int64_t dst_offset, dst_rs, dst_cs;  // channel r at dst[j] + dst_offset + r * dst_rs
  // The residual added before the activation (or null): channel r of run j
  // at res[j] + res_offset + r * res_rs, columns res_cs apart.
  const float* res[kMaxRuns];
  int64_t res_offset, res_rs, res_cs;
  bool residual;
  bool whole;                // every run_whole
  bool run_whole[kMaxRuns];  // run j has L columns, and dst_cs (and res_cs) is 1
  bool hardswish;            // else clamped to [lo, hi]
  float lo, hi;              // (-inf, inf without an activation)
};

/// v clamped to [lo, hi]; NaN stays NaN (both comparisons are false).
template <typename V>
inline V clamp(V v, V lo, V hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

/// clamp for every acc[I], without the tests of an infinite bound (a
/// ReLU's upper one; both without an activation), which change nothing: a
/// stem's output vector takes 27 multiply-adds, and a second comparison
/// per vector cost it 3%.
template <typename V, size_t... I>
[[gnu::always_inline]] inline void clamp_all(V* acc, float lo, float hi,
                                             std::index_sequence<I...>) {
  if (lo != -INFINITY) {
    const V l = V{} + lo;
    ((acc[I] = acc[I] < l ? l : acc[I]), ...);
  }
  if (hi != INFINITY) {
    const V h = V{} + hi;
    ((acc[I] = acc[I] > h ? h : acc[I]), ...);
  }
}

/// torch's hardswish decomposition, each step rounded to float as there:
/// v * clamp(v + 3, 0, 6) / 6.
template <typename V>
inline V hardswish(V v) {
  return v * clamp(v + 3.0f, V{}, V{} + 6.0f) / 6.0f;
}

template <int N, size_t... J>
inline void fill_sources(const float* (&src)[N], const Block& b, std::index_sequence<J...>) {
  ((src[J] = b.src[J]), ...);
}

template <typename V, int N, size_t... J>
inline void load_runs(V (&in)[N], const float* const (&src)[N], int32_t offset,
                      std::index_sequence<J...>) {
  ((in[J] = load<V>(src[J] + offset)), ...);
}

// The R x N accumulators are indexed by constants only (pack expansions
// over I = r * N + j, no loops): GCC then keeps them in registers between
// the initial value, the taps and the stores, where loops over an array
// made it round-trip them through the stack (a third of the time of a
// 9-tap convolution).
template <typename V, int R, int N, size_t... I>
void block_impl(const Block& b, std::index_sequence<I...>) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  V acc[R * N];
  if (b.bias != nullptr) {
    ((acc[I] = V{} + b.bias[I / N]), ...);
  } else {
    ((acc[I] = V{}), ...);
  }
  // The runs' sources and inputs by constant index too: a loop filling an
  // array of inputs left them on the stack, every multiply-add reading one
  // back (AVX-512: at an address 8 bytes off a cache line).
  const float* src[N];
  fill_sources<N>(src, b, std::make_index_sequence<N>{});
  const float* wt = b.w;
  for (int64_t t = 0; t < b.taps_count; ++t, wt += b.w_stride) {
    const int32_t offset = b.taps[t];
    V in[N];
    load_runs<V, N>(in, src, offset, std::make_index_sequence<N>{});
    ((acc[I] += wt[I / N] * in[I % N]), ...);
  }
  if (b.residual) {
    if (b.whole) {
      ((acc[I] += load<V>(b.res[I % N] + b.res_offset + (I / N) * b.res_rs)), ...);
    } else {
      auto gather = [&](size_t i) {
        const float* r = b.res[i % N] + b.res_offset + (i / N) * b.res_rs;
        if (b.run_whole[i % N]) return load<V>(r);
        float lanes[L] = {};
        for (int64_t l = 0; l < b.lanes[i % N]; ++l) lanes[l] = r[l * b.res_cs];
        return load<V>(lanes);
      };
      ((acc[I] += gather(I)), ...);
    }
  }
  if (b.hardswish) {
    ((acc[I] = hardswish(acc[I])), ...);
  } else {
    clamp_all(acc, b.lo, b.hi, std::index_sequence<I...>{});
  }
  if (b.whole) {
    (store(b.dst[I % N] + b.dst_offset + (I / N) * b.dst_rs, acc[I]), ...);
    return;
  }
  // Whole runs still as vectors (a row's last, partial run must not make
  // its block's other runs go lane by lane), the rest lane by lane.
  auto put = [&](size_t i, V v) {
    float* d = b.dst[i % N] + b.dst_offset + (i / N) * b.dst_rs;
    if (b.run_whole[i % N]) {
      store(d, v);
      return;
    }
    float lanes[L];
    store(lanes, v);
    for (int64_t l = 0; l < b.lanes[i % N]; ++l) d[l * b.dst_cs] = lanes[l];
  };
  (put(I, acc[I]), ...);
}

template <typename V, int R, int N>
void block(const Block& b) {
  block_impl<V, R, N>(b, std::make_index_sequence<R * N>{});
}

template <typename V, int N>
void block_rows(const Block& b, int rows) {
  if constexpr (kWide && N == 1) {
    if (rows == 16) return block<V, 16, 1>(b);
  }
  if constexpr (kWide && N <= 3) {
    if (rows == 8) return block<V, 8, N>(b);
  }
  if (rows == 4) return block<V, 4, N>(b);
  if (rows == 2) return block<V, 2, N>(b);
  block<V, 1, N>(b);
}

template <typename V>
void block_any(const Block& b, int rows, int runs) {
  if constexpr (kWide) {
    switch (runs) {
      case 6: return block_rows<V, 6>(b, rows);
      case 3: return block_rows<V, 3>(b, rows);
      default: break;
    }
  }
  if (runs == 2) return block_rows<V, 2>(b, rows);
  block_rows<V, 1>(b, rows);
}

}  // namespace pterun::cpu::conv_blocks
