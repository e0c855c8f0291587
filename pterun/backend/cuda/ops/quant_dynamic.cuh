#pragma once

// What the two files of XNNPACK's dynamically quantized fully connected
// layer on CUDA share: the launch struct, a row's quantization parameters,
// the 4-bit unpacking and the output's finish. quant_dynamic.cu holds the
// kernels for any number of rows; quant_decode.cu the one-launch kernel of
// decode steps.

#include <cuda_runtime.h>

#include <cstdint>

#include "pterun/kernels/common/device_check.h"
#include "pterun/kernels/common/quant_math.h"

namespace pterun::cuda::quant {

/// One row's quantization (x ~ (q - zero_point) * scale), and whether the
/// row's slice held NaN or an infinity (its values then stored as zeros).
struct RowParams : kernels::Qd8Params {
  int32_t zeros;
};

/// The parameters that store a non-finite slice as zeros: its outputs are
/// the bias alone.
__device__ constexpr RowParams zero_row() {
  return {{0.0f, 1.0f, 0}, 1};
}

/// What a slice's quantization needs of its values: the least and greatest
/// (NaN left out, as fminf and fmaxf do) and whether one was NaN or an
/// infinity. An aggregate, so that it can live in shared memory.
struct Range {
  float lo, hi;
  int bad;

  __device__ static Range empty() { return {INFINITY, -INFINITY, 0}; }
  __device__ void add(float v) {
    lo = fminf(lo, v);
    hi = fmaxf(hi, v);
    bad |= isfinite(v) ? 0 : 1;
  }
  __device__ void add(const Range& o) {
    lo = fminf(lo, o.lo);
    hi = fmaxf(hi, o.hi);
    bad |= o.bad;
  }
  /// Every lane of the warp gets the warp's range.
  __device__ void warp_combine() {
    for (int o = 16; o > 0; o >>= 1) {
      add(Range{__shfl_xor_sync(0xffffffffu, lo, o), __shfl_xor_sync(0xffffffffu, hi, o),
                __shfl_xor_sync(0xffffffffu, bad, o)});
    }
  }
  /// XNNPACK's parameters for the range, or zero_row() for a bad one.
  __device__ RowParams params() const {
    return bad != 0 ? zero_row() : RowParams{kernels::choose_qd8(lo, hi), 0};
  }
};

struct DqLaunch {
  const float* in;
  const uint8_t* weight;        // n rows of row_bytes
  const float* scales;          // [n, blocks] float32, or nullptr when bf16_scales holds them
  const uint16_t* bf16_scales;  // [n, blocks] bfloat16 (4-bit weights), or nullptr
  const void* sums;             // int32 (8-bit) or float32 (4-bit) [n]
  const float* bias;            // or nullptr
  int8_t* q;                    // [m, k] scratch
  RowParams* params;            // [m] scratch
  kernels::DeviceCheck* check;
  int bits;
  bool interleave;  // groups of 8 stored evens then odds (the 4-bit vector kernels)
  int64_t m, n, k, blocks, block_size, slice_rows, row_bytes;
  float out_min, out_max;
  float* out;
};

/// Scale i of the [n, blocks] block scales, as stored (bfloat16 or float).
__device__ inline float block_scale(const DqLaunch& l, int64_t i) {
  if (l.bf16_scales != nullptr) return __uint_as_float(unsigned{__ldg(l.bf16_scales + i)} << 16);
  return __ldg(l.scales + i);
}

/// Records slice `slice` as non-finite in the method's device-check word
/// (the first record wins; raised as ValueError at the next wait).
__device__ inline void record_nonfinite(const DqLaunch& l, int64_t slice) {
  if (atomicCAS(reinterpret_cast<int*>(&l.check->failed), 0, 1) == 0) {
    l.check->kind = static_cast<int32_t>(kernels::DeviceCheckKind::NonFiniteSlice);
    l.check->op = static_cast<int32_t>(kernels::DeviceCheckOp::FullyConnectedDq);
    l.check->value = slice;
    l.check->limit = l.m / l.slice_rows;
    l.check->extra = 0;
  }
}

/// Four stored nibbles (w + 8, each in the low half of a byte) as signed
/// bytes w: 0x80 + w per byte (no borrow), then the top bit flipped back.
__device__ inline int signed_nibbles(unsigned x) {
  return static_cast<int>(((x | 0x80808080u) - 0x08080808u) ^ 0x80808080u);
}

/// Output j of a row: the scaled sum plus the bias (when there is one),
/// clamped.
__device__ inline float finish(const DqLaunch& l, float total, const RowParams& p, float bias) {
  float y = __fmul_rn(total, p.scale);
  if (l.bias != nullptr) y = __fadd_rn(y, bias);
  return fminf(fmaxf(y, l.out_min), l.out_max);
}

/// What a column's output needs besides its products: its weight sum
/// (int32 for 8-bit weights, float for 4-bit ones), its scale (8-bit
/// weights: one per column) and its bias.
struct ColumnConsts {
  int32_t isum = 0;
  float fsum = 0.0f;
  float scale = 0.0f;
  float bias = 0.0f;
};

template <int Bits>
__device__ inline ColumnConsts column_consts(const DqLaunch& l, int64_t j) {
  ColumnConsts c;
  if constexpr (Bits == 8) {
    c.isum = __ldg(static_cast<const int32_t*>(l.sums) + j);
    c.scale = __ldg(l.scales + j);
  } else {
    c.fsum = __ldg(static_cast<const float*>(l.sums) + j);
  }
  if (l.bias != nullptr) c.bias = __ldg(l.bias + j);
  return c;
}

/// The sum of a column's products with a row, less the row's zero point
/// times the column's weight sum: 8-bit weights sum exactly in int32, 4-bit
/// ones arrive already scaled per block in float.
template <int Bits>
__device__ inline float column_total(int iacc, float facc, const RowParams& p,
                                     const ColumnConsts& c) {
  if constexpr (Bits == 8) {
    const int64_t exact = int64_t{iacc} - int64_t{p.zero_point} * c.isum;
    return __fmul_rn(static_cast<float>(exact), c.scale);
  } else {
    return __fsub_rn(facc, __fmul_rn(static_cast<float>(p.zero_point), c.fsum));
  }
}

/// A lane's 16 bytes of a column's weights (chunk c of its row) and what
/// multiplying them needs: for 4-bit weights (32 of them, 4 groups of 8)
/// the scale of each group's block and which groups start a block.
struct WeightChunk {
  uint4 w;
  float scale[4];
  unsigned starts;  // bit t: group t (t >= 1) starts a new block
};

template <int Bits>
__device__ inline WeightChunk load_chunk(const DqLaunch& l, int64_t j, int64_t c) {
  WeightChunk ch;
  ch.w = __ldg(reinterpret_cast<const uint4*>(l.weight + j * l.row_bytes) + c);
  ch.starts = 0;
  if constexpr (Bits == 4) {
    // 32-bit: the vector kernels take rows of fewer than 2^31 weights.
    const unsigned e0 = static_cast<unsigned>(c) * 32u, size = static_cast<unsigned>(l.block_size);
    const int64_t row = j * l.blocks;
#pragma unroll
    for (unsigned t = 0; t < 4; ++t) {
      const unsigned e = e0 + 8u * t;
      ch.scale[t] = block_scale(l, row + e / size);
      if (t > 0 && e % size == 0) ch.starts |= 1u << t;
    }
  }
  return ch;
}

/// A column's running sums for up to R rows: float (4-bit weights, scaled
/// per block) or int32 (8-bit weights, exact).
template <int R>
struct ColumnSums {
  float f[R];
  int i[R];
  __device__ ColumnSums() {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      f[r] = 0.0f;
      i[r] = 0;
    }
  }
};

/// Adds chunk c of a column times `rows` (at most R) rows of stored int8
/// activations at q (row stride k, stored_at's order for 4-bit weights):
/// 8-bit weights into iacc exactly, 4-bit ones into facc, each block's
/// int32 sum scaled once.
template <int R, int Bits>
__device__ inline void add_chunk(const WeightChunk& ch, int64_t c, const int8_t* q, int64_t k,
                                 int rows, ColumnSums<R>& sums) {
  float(&facc)[R] = sums.f;
  int(&iacc)[R] = sums.i;
  const unsigned words[4] = {ch.w.x, ch.w.y, ch.w.z, ch.w.w};
  constexpr int kElems = Bits == 4 ? 32 : 16;  // weights per 16 bytes
  const int64_t e0 = c * kElems;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    const int4* qp = reinterpret_cast<const int4*>(q + r * k + e0);
    if constexpr (Bits == 8) {
      const int4 qv = qp[0];
      int d = __dp4a(qv.x, static_cast<int>(words[0]), iacc[r]);
      d = __dp4a(qv.y, static_cast<int>(words[1]), d);
      d = __dp4a(qv.z, static_cast<int>(words[2]), d);
      iacc[r] = __dp4a(qv.w, static_cast<int>(words[3]), d);
    } else {
      const int4 qa = qp[0], qb = qp[1];
      const int qw[8] = {qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, qb.w};
      int block_sum = 0;
      float scale = ch.scale[0];
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        if ((ch.starts >> t) & 1u) {
          facc[r] = fmaf(scale, static_cast<float>(block_sum), facc[r]);
          block_sum = 0;
          scale = ch.scale[t];
        }
        const int even = signed_nibbles(words[t] & 0x0F0F0F0Fu);
        const int odd = signed_nibbles((words[t] >> 4) & 0x0F0F0F0Fu);
        block_sum = __dp4a(even, qw[2 * t], __dp4a(odd, qw[2 * t + 1], block_sum));
      }
      facc[r] = fmaf(scale, static_cast<float>(block_sum), facc[r]);
    }
  }
}

/// Sums each row's accumulator over the warp's lanes (every lane gets it).
template <int R, int Bits>
__device__ inline void warp_sums(ColumnSums<R>& sums) {
  float(&facc)[R] = sums.f;
  int(&iacc)[R] = sums.i;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    for (int o = 16; o > 0; o >>= 1) {
      if constexpr (Bits == 8) {
        iacc[r] += __shfl_xor_sync(0xffffffffu, iacc[r], o);
      } else {
        facc[r] += __shfl_xor_sync(0xffffffffu, facc[r], o);
      }
    }
  }
}

/// Whether launch_decode takes these rows: one slice per row, at most 4
/// rows of 16 KiB in all, weights the vector kernels read.
bool decode_fits(const DqLaunch& l, bool vector);

/// Decode steps in one launch: every block quantizes the rows itself into
/// shared memory (quant_decode.cu).
void launch_decode(const DqLaunch& l, cudaStream_t s);

}  // namespace pterun::cuda::quant
