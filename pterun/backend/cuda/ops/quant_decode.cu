// XNNPACK's dynamically quantized fully connected layer for decode steps
// (at most 4 rows of one slice each, 16 KiB of activations in all) in one
// launch, laid out for latency: a decode step is a chain of small launches,
// and at an LLM's sizes each is bound by its critical path, not its bytes.
//
//  1. Each warp (one output column) first loads what needs no activation:
//     up to kHeld 16-byte chunks of its weight row a lane, their block
//     scales, the column's weight sum and bias, so that these loads are in
//     flight while the block quantizes.
//  2. The block quantizes the rows into shared memory with XNNPACK's rule
//     (kernels/common/quant_math.h): one pass of 8 values a thread for each
//     row's range (shuffles, one barrier; every thread derives the
//     parameters itself), one pass storing 8 bytes a thread, for 4-bit
//     weights in the order their products read (quant_dynamic.cu). A row
//     holding NaN or an infinity is recorded in the device-check word and
//     reads as zeros, as in quant_dynamic.cu.
//  3. The held chunks, then any further ones, are multiplied with __dp4a
//     (quant_dynamic.cuh's add_chunk, as the kernel for more rows); the
//     lanes' sums meet by shuffles.

#include <cuda_runtime.h>

#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/quant_dynamic.cuh"
#include "pterun/core/error.h"

namespace pterun::cuda::quant {
namespace {

constexpr int kDecodeWarps = 8;  // output columns per block
constexpr int kHeld = 4;         // weight chunks a lane loads before quantizing
constexpr int64_t kDecodeBytes = 16 * 1024;

/// Elements 8g .. 8g + 7 of a row (vector loads when the rows are 16-byte
/// aligned).
__device__ inline void load8(const float* x, int64_t g, bool aligned, float (&v)[8]) {
  if (aligned) {
    const float4 a = reinterpret_cast<const float4*>(x)[2 * g];
    const float4 b = reinterpret_cast<const float4*>(x)[2 * g + 1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
    v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = x[8 * g + i];
  }
}

/// Quantizes rows [0, rows) of l.in into q (row stride k; 4-bit weights:
/// each group of 8 stored as its even elements, then its odd ones) and
/// gives every thread each row's parameters.
template <int R>
__device__ void quantize_rows(const DqLaunch& l, int rows, bool aligned, int8_t* q,
                              RowParams (&p)[R]) {
  __shared__ Range s_range[kDecodeWarps][R];
  const int64_t groups = l.k / 8;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  Range range[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    range[r] = Range::empty();
    if (r >= rows) continue;
    const float* x = l.in + r * l.k;
    for (int64_t g = threadIdx.x; g < groups; g += blockDim.x) {
      float v[8];
      load8(x, g, aligned, v);
#pragma unroll
      for (int i = 0; i < 8; ++i) range[r].add(v[i]);
    }
    range[r].warp_combine();
    if (lane == 0) s_range[warp][r] = range[r];
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    for (int w = 0; w < kDecodeWarps; ++w) range[r].add(s_range[w][r]);
    p[r] = range[r].params();
  }
  if (threadIdx.x == 0) {  // the first bad row, if any (unrolled: the ranges stay in registers)
    int first = -1;
#pragma unroll
    for (int r = R - 1; r >= 0; --r) {
      if (r < rows && range[r].bad != 0) first = r;
    }
    if (first >= 0) record_nonfinite(l, first);
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    const float* x = l.in + r * l.k;
    for (int64_t g = threadIdx.x; g < groups; g += blockDim.x) {
      float v[8];
      load8(x, g, aligned, v);
      unsigned b[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int32_t v8 = p[r].zeros != 0 ? 0 : kernels::quantize_qd8(v[i], p[r]);
        b[i] = static_cast<unsigned>(v8) & 0xFFu;
      }
      uint2 packed;
      if (l.interleave) {
        packed.x = b[0] | b[2] << 8 | b[4] << 16 | b[6] << 24;
        packed.y = b[1] | b[3] << 8 | b[5] << 16 | b[7] << 24;
      } else {
        packed.x = b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24;
        packed.y = b[4] | b[5] << 8 | b[6] << 16 | b[7] << 24;
      }
      reinterpret_cast<uint2*>(q + r * l.k)[g] = packed;
    }
  }
}

/// Warp w of block x computes column x * kDecodeWarps + w for every row.
template <int R, int Bits>
__global__ void __launch_bounds__(kDecodeWarps * 32) dq_decode(DqLaunch l, bool aligned) {
  extern __shared__ int4 s_rows[];
  const int lane = threadIdx.x % 32;
  const int64_t j = int64_t{blockIdx.x} * kDecodeWarps + threadIdx.x / 32;
  const bool live = j < l.n;
  const int64_t chunks = l.row_bytes / 16;
  WeightChunk held[kHeld];
  ColumnConsts consts;
  if (live) {
    consts = column_consts<Bits>(l, j);
#pragma unroll
    for (int h = 0; h < kHeld; ++h) {
      const int64_t c = lane + 32 * h;
      if (c < chunks) held[h] = load_chunk<Bits>(l, j, c);
    }
  }
  const int rows = static_cast<int>(l.m);
  auto* q = reinterpret_cast<int8_t*>(s_rows);
  RowParams p[R];
  quantize_rows<R>(l, rows, aligned, q, p);
  __syncthreads();
  if (!live) return;
  ColumnSums<R> sums;
#pragma unroll
  for (int h = 0; h < kHeld; ++h) {
    const int64_t c = lane + 32 * h;
    if (c < chunks) add_chunk<R, Bits>(held[h], c, q, l.k, rows, sums);
  }
  for (int64_t c = lane + 32 * kHeld; c < chunks; c += 32) {
    add_chunk<R, Bits>(load_chunk<Bits>(l, j, c), c, q, l.k, rows, sums);
  }
  warp_sums<R, Bits>(sums);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (r != lane || r >= rows) continue;
    l.out[r * l.n + j] =
        finish(l, column_total<Bits>(sums.i[r], sums.f[r], p[r], consts), p[r], consts.bias);
  }
}

template <int R, int Bits>
void launch(const DqLaunch& l, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>((l.n + kDecodeWarps - 1) / kDecodeWarps);
  const bool aligned = reinterpret_cast<uintptr_t>(l.in) % 16 == 0;
  dq_decode<R, Bits><<<blocks, kDecodeWarps * 32, static_cast<size_t>(l.m * l.k), s>>>(l, aligned);
}

}  // namespace

bool decode_fits(const DqLaunch& l, bool vector) {
  return vector && l.slice_rows == 1 && l.m <= 4 && l.m * l.k <= kDecodeBytes;
}

void launch_decode(const DqLaunch& l, cudaStream_t s) {
  if (l.bits == 4) {
    l.m == 1 ? launch<1, 4>(l, s) : launch<4, 4>(l, s);
  } else {
    l.m == 1 ? launch<1, 8>(l, s) : launch<4, 8>(l, s);
  }
}

}  // namespace pterun::cuda::quant
