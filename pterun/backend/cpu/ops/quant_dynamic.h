#pragma once

// What the two halves of XNNPACK's dynamically quantized fully connected
// layer on the CPU share: the activations quantized per slice of rows
// (quant_dynamic.cpp, with the 8-bit weights) and the 4-bit weights'
// kernels (quant_dynamic_4bit.cpp). Internal to backend/cpu/ops/.

#include <algorithm>
#include <cstdint>

#include "pterun/kernels/common/quant_math.h"
#include "pterun/kernels/kernel.h"
#include "pterun/ops/quant.h"

namespace pterun::cpu::qdyn {

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
constexpr int64_t kChunk = 128;  // inputs per vector step of the 4-bit kernel
#else
constexpr int64_t kChunk = 64;
#endif
/// One slice's quantization (XNNPACK's qd8 rule, kernels/common/quant_math.h,
/// shared with the CUDA kernel).
using RowQuant = kernels::Qd8Params;

/// How quantize_rows stores a row's int8 values.
enum class RowBytes {
  Int8,         // plain int8
  Shifted,      // q + 128 as uint8 (the unsigned operand of the int8 products)
  Interleaved,  // Shifted, each kChunk-input chunk's even elements then its odd ones
};

/// Quantizes every row of `in` into `q` (row stride `ld` bytes), each
/// slice of `slice_rows` rows with its own parameters (params[row]), stored
/// as `bytes` says. Error InvalidArgument, before anything is written to the
/// output, when a slice holds NaN or an infinity (no scale represents it;
/// XNNPACK computes garbage).
void quantize_rows(kernels::KernelContext& ctx, const ops::QDynLinearArgs& a, uint8_t* q,
                   int64_t ld, RowBytes bytes, RowQuant* params);

/// An output from its float sum of scaled blocks: the row's scale, the
/// bias, the clamp.
inline float finish(float acc, const ops::QDynLinearArgs& a, const RowQuant& p, int64_t j) {
  float y = acc * p.scale;
  if (a.bias != nullptr) y += a.bias->data_as<const float>()[j];
  return std::min(std::max(y, a.out_min), a.out_max);
}

/// The layer with 4-bit weights (quant_dynamic_4bit.cpp).
void linear_4bit(kernels::KernelContext& ctx, const ops::QDynLinearArgs& a);

}  // namespace pterun::cpu::qdyn
