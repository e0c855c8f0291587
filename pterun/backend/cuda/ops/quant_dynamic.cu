// XNNPACK's dynamically quantized fully connected layer on CUDA
// (ops::QDynLinearArgs). Decode steps (at most 4 rows of one slice each)
// run quant_decode.cu's one launch; other shapes two kernels here:
//
//  1. quantize_slices: one block per slice of rows finds the slice's range
//     and quantizes it to int8 with XNNPACK's rule, the same functions as
//     the CPU (kernels/common/quant_math.h), into
//     scratch with each row's scale and zero point. A slice holding NaN or
//     an infinity is recorded in the method's device-check word (raised as
//     ValueError at the next wait, as the CPU raises it at once) and reads
//     as zeros.
//  2. A warp per output column and a few rows: each lane streams 16 bytes
//     of the weight row at a time (32 4-bit or 16 8-bit weights) and
//     multiplies them with __dp4a against the int8 activations; the lanes'
//     sums meet by shuffles (quant_dynamic.cuh). 4-bit weights (stored
//     w + 8, element 2i in the low nibble) are turned into signed bytes in
//     registers, the low nibbles of a 32-bit word holding elements 0, 2, 4,
//     6 of a group of 8, the high ones 1, 3, 5, 7: the activations are
//     stored in that order (each group of 8: its even elements, then its
//     odd ones). A block's int32 sum is scaled once; the activations' zero
//     point comes back per output through the weights' sums, as on the CPU.
//
// Shapes the vector kernels do not take (depths not a multiple of 32 for
// 4-bit or 16 for 8-bit weights, blocks not a multiple of 8, unaligned
// weights) run a plain kernel of one thread per output.

#include <cuda_runtime.h>

#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/backend/cuda/ops/quant_dynamic.cuh"
#include "pterun/backend/cuda/ops/quant_launch.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/device_check.h"
#include "pterun/kernels/common/quant_math.h"
#include "pterun/ops/quant.h"

namespace pterun::cuda::quant {

constexpr int kQuantThreads = 256;
constexpr int kWarps = 8;  // output columns per block of the vector kernel

/// Where element e of a row goes in the stored activations.
__device__ inline int64_t stored_at(int64_t e, bool interleave) {
  if (!interleave) return e;
  const int64_t w = e & 7;
  return (e & ~int64_t{7}) + ((w & 1) != 0 ? 4 + (w >> 1) : (w >> 1));
}

/// The parameters of `count` values at x, computed by the whole block
/// (every thread gets them; blockDim.x a multiple of 32, at most 1024). A
/// slice holding NaN or an infinity is recorded in the device-check word as
/// slice `slice` and gets parameters that store zeros.
__device__ RowParams block_params(const DqLaunch& l, const float* x, int64_t count, int64_t slice) {
  __shared__ Range s_range[32];
  __shared__ RowParams s_p;
  Range range = Range::empty();
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x) range.add(x[e]);
  range.warp_combine();
  if (threadIdx.x % 32 == 0) s_range[threadIdx.x / 32] = range;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) range.add(s_range[w]);
    s_p = range.params();
    if (range.bad != 0) record_nonfinite(l, slice);
  }
  __syncthreads();
  const RowParams p = s_p;
  __syncthreads();  // s_p may be written again by the next call
  return p;
}

/// Stores rows [0, rows) of k values at x, quantized with p, at q (row
/// stride k, stored_at's order).
__device__ void quantize_into(const DqLaunch& l, const float* x, int64_t rows, const RowParams& p,
                              int8_t* q) {
  const int64_t count = rows * l.k;
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
    const int64_t row = e / l.k, col = e - row * l.k;
    q[row * l.k + stored_at(col, l.interleave)] =
        static_cast<int8_t>(p.zeros != 0 ? 0 : kernels::quantize_qd8(x[e], p));
  }
}

__global__ void __launch_bounds__(kQuantThreads) quantize_slices(DqLaunch l) {
  const int64_t slice = blockIdx.x;
  const int64_t count = l.slice_rows * l.k;
  const float* x = l.in + slice * count;
  const RowParams p = block_params(l, x, count, slice);
  for (int64_t r = threadIdx.x; r < l.slice_rows; r += blockDim.x) {
    l.params[slice * l.slice_rows + r] = p;
  }
  quantize_into(l, x, l.slice_rows, p, l.q + slice * count);
}

/// The vector kernel: warp w of block (x, y) computes column x * kWarps + w
/// for rows y * R .. y * R + R - 1.
template <int R, int Bits>
__global__ void __launch_bounds__(kWarps * 32) dq_gemv(DqLaunch l) {
  const int lane = threadIdx.x % 32;
  const int64_t j = int64_t{blockIdx.x} * kWarps + threadIdx.x / 32;
  if (j >= l.n) return;
  const int64_t i0 = int64_t{blockIdx.y} * R;
  const int rows = static_cast<int>(l.m - i0 < R ? l.m - i0 : R);
  const int8_t* q = l.q + i0 * l.k;
  ColumnSums<R> sums;
  for (int64_t c = lane; c < l.row_bytes / 16; c += 32) {
    add_chunk<R, Bits>(load_chunk<Bits>(l, j, c), c, q, l.k, rows, sums);
  }
  warp_sums<R, Bits>(sums);
  if (lane >= rows) return;
  const ColumnConsts consts = column_consts<Bits>(l, j);
  const RowParams p = l.params[i0 + lane];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (r != lane) continue;
    l.out[(i0 + r) * l.n + j] =
        finish(l, column_total<Bits>(sums.i[r], sums.f[r], p, consts), p, consts.bias);
  }
}

/// Any shape: one thread per output, plain int8 activation rows, a block's
/// exact sum of (q - zero point) * (w - w_zp) scaled once (the CPU's scalar
/// path).
__global__ void dq_plain(DqLaunch l) {
  const int64_t total_outputs = l.m * l.n;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < total_outputs;
       o += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = o / l.n, j = o - i * l.n;
    const RowParams p = l.params[i];
    const int8_t* qi = l.q + i * l.k;
    const uint8_t* wj = l.weight + j * l.row_bytes;
    float acc = 0.0f;
    for (int64_t b = 0; b < l.blocks; ++b) {
      int32_t s = 0;
      for (int64_t e = b * l.block_size; e < (b + 1) * l.block_size; ++e) {
        const int32_t w = l.bits == 8 ? static_cast<int32_t>(static_cast<int8_t>(wj[e]))
                                      : ((e % 2 == 0 ? wj[e / 2] & 0x0F : wj[e / 2] >> 4) - 8);
        s += (qi[e] - p.zero_point) * w;
      }
      acc = fmaf(static_cast<float>(s), block_scale(l, j * l.blocks + b), acc);
    }
    l.out[o] = finish(l, acc, p, l.bias != nullptr ? l.bias[j] : 0.0f);
  }
}

}  // namespace pterun::cuda::quant

namespace pterun::kernels::cuda_ops {
namespace {

using namespace pterun::cuda;         // NOLINT: stream, scratch, check_launch
using namespace pterun::cuda::quant;  // NOLINT: this file's kernels

template <int R>
void launch_vector(const DqLaunch& l, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((l.n + kWarps - 1) / kWarps),
                  static_cast<unsigned>((l.m + R - 1) / R));
  if (l.bits == 4) {
    dq_gemv<R, 4><<<grid, kWarps * 32, 0, s>>>(l);
  } else {
    dq_gemv<R, 8><<<grid, kWarps * 32, 0, s>>>(l);
  }
}

}  // namespace

void dynamic_linear(KernelContext& ctx, const ops::QDynLinearArgs& a) {
  const char* op = "xnnpack::fully_connected_dq";
  DqLaunch l{};
  l.in = a.in.data_as<const float>();
  l.weight = static_cast<const uint8_t*>(a.weight.data());
  if (a.weight_scales.dtype() == DType::BFloat16) {
    l.bf16_scales = a.weight_scales.data_as<const uint16_t>();
  } else {
    l.scales = a.weight_scales.data_as<const float>();
  }
  l.sums = a.weight_sums.data();
  l.bias = a.bias != nullptr ? a.bias->data_as<const float>() : nullptr;
  l.bits = a.bits;
  l.m = a.m;
  l.n = a.n;
  l.k = a.k;
  l.blocks = a.blocks;
  l.block_size = a.k / a.blocks;
  l.slice_rows = a.slice_rows;
  l.row_bytes = a.bits == 8 ? a.k : (a.k + 1) / 2;
  l.out_min = a.out_min;
  l.out_max = a.out_max;
  l.out = a.out.data_as<float>();
  const bool aligned = reinterpret_cast<uintptr_t>(l.weight) % 16 == 0;
  const bool vector = aligned && a.k <= 0x7fffffff &&
                      (a.bits == 8 ? a.k % 16 == 0 : a.k % 32 == 0 && l.block_size % 8 == 0);
  l.interleave = vector && a.bits == 4;
  l.check = device_check(ctx);
  cudaStream_t s = stream(ctx);
  if (decode_fits(l, vector)) {
    launch_decode(l, s);
    check_launch(op);
    return;
  }
  const size_t q_bytes = (static_cast<size_t>(a.m * a.k) + 255) / 256 * 256;
  auto* buffer =
      static_cast<char*>(scratch(ctx, q_bytes + static_cast<size_t>(a.m) * sizeof(RowParams)));
  l.q = reinterpret_cast<int8_t*>(buffer);
  l.params = reinterpret_cast<RowParams*>(buffer + q_bytes);
  const int64_t slices = a.m / a.slice_rows;
  PTERUN_CHECK(slices <= 0x7fffffff, ErrorCode::NotSupported, op, ": ", slices,
               " input slices exceed one launch");
  quantize_slices<<<static_cast<unsigned>(slices), kQuantThreads, 0, s>>>(l);
  check_launch(op);
  if (!vector) {
    dq_plain<<<blocks_for(a.m * a.n, 256), 256, 0, s>>>(l);
  } else {
    const int rows = a.m <= 4 ? 4 : 8;
    PTERUN_CHECK((a.m + rows - 1) / rows <= 65535, ErrorCode::NotSupported, op, ": ", a.m,
                 " input rows exceed one launch");
    if (rows == 4) {
      launch_vector<4>(l, s);
    } else {
      launch_vector<8>(l, s);
    }
  }
  check_launch(op);
}

}  // namespace pterun::kernels::cuda_ops
