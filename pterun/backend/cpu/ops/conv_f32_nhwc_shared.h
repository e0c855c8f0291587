#pragma once

// What the channels-last f32 convolution's parts share (conv_f32_nhwc.cpp:
// the entry; conv_f32_nhwc_dense.cpp, conv_f32_nhwc_depthwise.cpp): the
// epilogue of their stores, their packed weights, and the parts themselves.
// Internal to backend/cpu/ops.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "pterun/backend/cpu/engine/vec_float.h"
#include "pterun/backend/cpu/ops/conv.h"
#include "pterun/backend/cpu/ops/conv_f32_block.h"
#include "pterun/backend/cpu/ops/conv_weights.h"
#include "pterun/backend/cpu/ops/plan_cache.h"

// Vectors never cross a translation unit by value, so GCC's ABI note on
// passing them does not apply.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pterun::cpu::nhwc {

using kernels::KernelContext;
using vec::kWide;
using vec::load;
using vec::store;
using vec::V16;
using vec::V8;

/// Lanes of the widest vector this build uses.
constexpr int64_t kLanes = kWide ? 16 : 8;

/// Largest packed weights (floats) kept per layer.
constexpr int64_t kMaxPackedWeights = int64_t{1} << 22;

/// Multiply-adds from which a convolution is split over the threads: about
/// 5 µs of a dense layer (the pool's helpers spin between operators, so
/// waking one costs little). A depthwise multiply-add costs about three
/// times a dense one (a load per tap, no reuse across output channels), so
/// those split from a quarter of that.
constexpr double kParallelWork = 1 << 18;
constexpr double kParallelDepthwiseWork = 1 << 16;

/// The epilogue every store applies: residual, then clamp or hardswish.
struct Epilogue {
  bool hardswish = false;
  float lo = -INFINITY, hi = INFINITY;
};

template <typename V>
inline V finish(V v, const Epilogue& e) {
  if (e.hardswish) return conv_blocks::hardswish(v);
  return conv_blocks::clamp(v, V{} + e.lo, V{} + e.hi);
}

/// Packed weights (and the bias, copied each call into whole vectors),
/// kept per geometry and weight tensor while the weight bytes stay the same.
struct Packed {
  std::vector<float> w;
  std::vector<float> bias;
  WeightSnapshot from;       // what w was packed from
  std::vector<float> zeros;  // a row of zeros (taps over the padding)
};

/// Calls pack(w) unless the weights are the bytes packed last time.
template <typename Pack>
void refresh(const ConvProblem& p, Packed& pk, Pack&& pack) {
  if (pk.from.same(p)) return;
  pack(pk.w.data());
  pk.from.take(p);
}

/// The packed weights of `p` in `cache` under `key` (the part's geometry;
/// the weight's strides and address are added here), `floats` of them,
/// made by pack(w) unless they are the bytes packed last time.
template <typename Pack>
Packed& packed_weights(PlanCache<Packed>& cache, PlanKey key, const ConvProblem& p, int64_t floats,
                       Pack&& pack) {
  for (int64_t st : p.w_strides) key.add(st);
  key.add(static_cast<int64_t>(reinterpret_cast<uintptr_t>(p.weight)));
  Packed& pk = cache.get(key, [&] {
    Packed made;
    made.w.resize(static_cast<size_t>(floats));
    return made;
  });
  refresh(p, pk, pack);
  return pk;
}

/// The bias (or zeros) into pk.bias, padded with zeros to `padded`.
inline void copy_bias(const ConvProblem& p, Packed& pk, int64_t padded) {
  pk.bias.assign(static_cast<size_t>(padded), 0.0f);
  if (p.bias != nullptr) {
    std::memcpy(pk.bias.data(), p.bias, static_cast<size_t>(p.oc) * sizeof(float));
  }
}

/// The dense part (one group): false when the layer does not suit it.
bool dense(KernelContext& ctx, const ConvProblem& p, const Epilogue& e);

/// The Winograd part (conv_f32_nhwc_winograd.cpp): 3x3, stride 1, dilation
/// 1, one group, input and output channels whole vectors; false when the
/// layer does not suit it.
bool winograd(KernelContext& ctx, const ConvProblem& p, const Epilogue& e);

/// The depthwise part (one input channel per group, multiplier 1): false
/// when the layer does not suit it.
bool depthwise(KernelContext& ctx, const ConvProblem& p, const Epilogue& e);

/// Whether the dense part reads a channels-last, column-padded copy of p's
/// input (which then may have any layout).
bool copies_input(const ConvProblem& p);

}  // namespace pterun::cpu::nhwc
