#pragma once

// Helpers of the CPU quantization kernels (quant.cpp, quant_gemm.cpp):
// reading a QParams entry, rounding to a 16-bit float, and ExecuTorch's
// requantization of one value.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/core/half.h"
#include "pterun/kernels/common/quant_math.h"
#include "pterun/ops/quant.h"

namespace pterun::cpu {

/// `bytes` rounded up to the 64 bytes the quantization kernels' scratch
/// regions start at.
constexpr size_t aligned(size_t bytes) {
  constexpr size_t kAlign = 64;
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

/// Output channels per task of an int8 product whose rows make
/// `row_blocks` tasks: `most` on one thread; with more, fewer (a multiple
/// of 8, the packed tile's weight rows, and at least 32) where that gives
/// each thread about four tasks, so that a layer of few rows still spreads.
/// `work`: the tasks' cost all together, in parallel_for's units; a
/// product too small to be split runs in blocks of `most`.
constexpr int64_t column_block(int64_t row_blocks, int64_t n, int threads, int64_t most,
                               int64_t work) {
  if (threads <= 1 || work < kParallelGrain) return most;
  const int64_t want = 4 * threads;
  const int64_t per = (n * row_blocks + want - 1) / want;
  const int64_t block = (per + 7) / 8 * 8;
  return block < 32 ? 32 : (block > most ? most : block);
}

// The integer kernels of quant_nn.cpp and quant_conv.cpp, in the table of quant.cpp.
void quantized_linear(kernels::KernelContext& ctx, const ops::QLinearArgs& a);
void quantized_conv2d(kernels::KernelContext& ctx, const ops::QConv2dArgs& a);
void quantized_mean(kernels::KernelContext& ctx, const ops::QMeanArgs& a);
void dynamic_linear(kernels::KernelContext& ctx, const ops::QDynLinearArgs& a);

using kernels::choose_scale_and_zero_point;
using kernels::ChosenQParams;

/// Reads entry c of a QParams: the host number or the tensor's value.
class QParamReader {
 public:
  explicit QParamReader(const ops::QParams& q) : q_(q) {}

  double scale(int64_t c) const {
    if (q_.scales == nullptr) return q_.scale;
    const void* p = q_.scales->data();
    switch (q_.scales->dtype()) {
      case DType::Float64: return static_cast<const double*>(p)[c];
      case DType::Float32: return static_cast<const float*>(p)[c];
      case DType::Float16: return static_cast<float>(static_cast<const Half*>(p)[c]);
      default: return static_cast<float>(static_cast<const BFloat16*>(p)[c]);
    }
  }
  int64_t zero_point(int64_t c) const {
    if (q_.zero_points == nullptr) return q_.zero_point;
    const void* p = q_.zero_points->data();
    return q_.zero_points->dtype() == DType::Int32 ? static_cast<const int32_t*>(p)[c]
                                                   : static_cast<const int64_t*>(p)[c];
  }

 private:
  const ops::QParams& q_;
};

/// v rounded to float16 or bfloat16 (any other dtype: v).
inline float round_to_dtype(float v, DType d) {
  if (d == DType::Float16) return static_cast<float>(Half(v));
  if (d == DType::BFloat16) return static_cast<float>(BFloat16(v));
  return v;
}

/// ExecuTorch's quantization of y: zero_point + nearbyint(y * inv) in
/// float32, clamped to [lo, hi] (NaN gives lo).
inline int32_t requantize(float y, float inv, float zero_point, int32_t lo, int32_t hi) {
  const float s = zero_point + std::nearbyint(y * inv);
  if (!(s >= static_cast<float>(lo))) return lo;
  if (s > static_cast<float>(hi)) return hi;
  return static_cast<int32_t>(s);
}

}  // namespace pterun::cpu
