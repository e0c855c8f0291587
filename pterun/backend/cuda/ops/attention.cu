// The attention family on CUDA (pterun/ops/attention.h): attention over a
// KV cache, cache writes at positions held in tensors, and the slice at a
// position held in a tensor. Positions and indices are read on the device
// and checked there: a bad one is recorded in the method's device-check
// word (raised at the next wait, kernels/common/device_check.h) and nothing
// is written from it.
//
// Attention (flash-decoding style; of 16 queries or more, attention_mma.cu
// takes float16 and bfloat16 attentions on the tensor cores and
// attention_tiled.cu float32 ones):
//  - a block takes one batch row and key/value head and kRows "rows", a row
//    being one query position of one of the query heads that share the
//    key/value head (grouped-query attention), so each key and value row is
//    read once for all of them; a warp owns kRowsPerWarp rows, dealt
//    round the warps (a decode step's few rows each get a warp);
//  - keys go by in tiles of 32, converted to float into shared memory; lane
//    j scores key j against each of its warp's rows, the warp reduces the
//    tile's maximum and sum (online softmax) and accumulates the weighted
//    values, each lane owning head_dim / 32 elements of each row;
//  - when a decode step has too few blocks to fill the GPU, the keys are
//    split into chunks (grid.y): each chunk writes its running maximum, sum
//    and accumulator, and a second kernel combines them.
// The grid depends on shapes only (the cache's capacity bounds the keys),
// never on start_pos, so a step replays as a CUDA graph whatever its
// position. Scores and accumulators are float for every input dtype.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/attention_common.cuh"
#include "pterun/backend/cuda/ops/attention_mma.h"
#include "pterun/backend/cuda/ops/attention_tiled.h"
#include "pterun/backend/cuda/ops/device_report.cuh"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/device_check.h"
#include "pterun/ops/attention.h"

namespace pterun::kernels::cuda_ops {
namespace {

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 4;
constexpr int kRows = kWarps * kRowsPerWarp;  // rows per block
constexpr int kKeyTile = 32;                  // one key per lane
constexpr int kMaxDim = 256;
constexpr int kPerLane = kMaxDim / 32;
constexpr unsigned kFull = 0xffffffffu;

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
  return v;
}
__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

// ---- attention -----------------------------------------------------------------

struct SdpaParams {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  const void* mask;
  bool mask_f32;
  const void* start_at;  // the position on the device, or null: `start`
  bool start64;
  int64_t start;
  int64_t tokens, kv_heads, dim, reps, capacity;
  int64_t qs[3], ks[3], vs[3], os[3], ms[2];  // batch, sequence, head strides; mask rows, cols
  bool causal;
  bool empty_rows_zero;  // a row whose every key scored -inf: zeros, not NaN
  float scale;
  int64_t row_blocks;  // blocks of kRows rows per (batch row, kv head)
  int64_t chunk;       // keys per split
  int splits;
  float* partial;  // splits > 1: [block][split][row] x (max, sum, dim accumulators)
  DeviceCheck* check;
  int32_t check_op;
};

template <typename T>
__device__ inline void store_row_value(const SdpaParams& p, int64_t b, int64_t row, int e,
                                       float x) {
  const int64_t i = row / p.reps;
  const int64_t h = (blockIdx.x / p.row_blocks % p.kv_heads) * p.reps + row % p.reps;
  static_cast<T*>(p.out)[b * p.os[0] + i * p.os[1] + h * p.os[2] + e] = cuda::convert<T>(x);
}

template <typename T>
__global__ void __launch_bounds__(kWarps * 32) sdpa_kernel(SdpaParams p) {
  extern __shared__ float smem[];
  const int64_t dim = p.dim;
  float* q_tile = smem;                           // kRows x dim
  float* k_tile = q_tile + kRows * dim;           // kKeyTile x (dim + 1)
  float* v_tile = k_tile + kKeyTile * (dim + 1);  // kKeyTile x dim
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t block = blockIdx.x;
  const int64_t rb = block % p.row_blocks;
  const int64_t hk = block / p.row_blocks % p.kv_heads;
  const int64_t b = block / p.row_blocks / p.kv_heads;
  const int64_t rows = p.tokens * p.reps;
  const int64_t r0 = rb * kRows;
  const int split = blockIdx.y;

  int64_t start = 0;
  const bool valid = resolve_start(p, start);
  if (!valid) {
    // Nothing to attend to: zeros (the call raises at its wait).
    if (p.splits == 1) {
      for (int64_t x = threadIdx.x; x < kRows * dim; x += blockDim.x) {
        const int64_t row = r0 + x / dim;
        if (row < rows) store_row_value<T>(p, b, row, static_cast<int>(x % dim), 0.0f);
      }
    }
    return;
  }
  const int64_t keys = start + p.tokens;
  const int64_t last_row = lmin(rows, r0 + kRows) - 1;
  const int64_t block_keys = p.causal ? lmin(keys, start + last_row / p.reps + 1) : keys;
  const int64_t key_begin = split * p.chunk;
  const int64_t key_end = lmin(block_keys, key_begin + p.chunk);

  // The block's query rows, in float.
  const T* q = static_cast<const T*>(p.q);
  for (int64_t x = threadIdx.x; x < kRows * dim; x += blockDim.x) {
    const int64_t row = r0 + x / dim, e = x % dim;
    float val = 0.0f;
    if (row < rows) {
      const int64_t i = row / p.reps, h = hk * p.reps + row % p.reps;
      val = cuda::convert<float>(q[b * p.qs[0] + i * p.qs[1] + h * p.qs[2] + e]);
    }
    q_tile[x] = val;
  }

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kPerLane];
  for (int t = 0; t < kRowsPerWarp; ++t) {
    m[t] = -INFINITY;
    l[t] = 0.0f;
    for (int c = 0; c < kPerLane; ++c) acc[t][c] = 0.0f;
  }
  const T* k = static_cast<const T*>(p.k) + b * p.ks[0] + hk * p.ks[2];
  const T* v = static_cast<const T*>(p.v) + b * p.vs[0] + hk * p.vs[2];
  for (int64_t t0 = key_begin; t0 < key_end; t0 += kKeyTile) {
    const int64_t n = lmin(kKeyTile, key_end - t0);
    __syncthreads();  // the previous tile is no longer read (and q_tile is written)
    for (int64_t x = threadIdx.x; x < kKeyTile * dim; x += blockDim.x) {
      const int64_t j = x / dim, e = x % dim;
      float kv = 0.0f, vv = 0.0f;
      if (j < n) {
        kv = cuda::convert<float>(k[(t0 + j) * p.ks[1] + e]);
        vv = cuda::convert<float>(v[(t0 + j) * p.vs[1] + e]);
      }
      k_tile[j * (dim + 1) + e] = kv;
      v_tile[j * dim + e] = vv;
    }
    __syncthreads();
    for (int t = 0; t < kRowsPerWarp; ++t) {
      const int local = t * kWarps + warp;  // rows dealt round the warps
      const int64_t row = r0 + local;
      if (row >= rows) break;  // uniform over the warp
      const int64_t i = row / p.reps;
      const int64_t limit = p.causal ? lmin(keys, start + i + 1) : keys;
      const int64_t key = t0 + lane;
      const bool use = lane < n && key < limit;
      float s = -INFINITY;
      if (use) {
        const float* qr = q_tile + local * dim;
        const float* kr = k_tile + lane * (dim + 1);
        float d = 0.0f;
        for (int64_t e = 0; e < dim; ++e) d = fmaf(qr[e], kr[e], d);
        s = d * p.scale;
        if (p.mask != nullptr) {
          const int64_t off = i * p.ms[0] + key * p.ms[1];
          s += p.mask_f32 ? static_cast<const float*>(p.mask)[off]
                          : cuda::convert<float>(static_cast<const T*>(p.mask)[off]);
        }
      }
      const float m_new = fmaxf(m[t], warp_max(s));
      if (m_new == -INFINITY) continue;  // nothing usable yet (uniform)
      const float e_p = use ? __expf(s - m_new) : 0.0f;
      const float corr = __expf(m[t] - m_new);
      l[t] = l[t] * corr + warp_sum(e_p);
      m[t] = m_new;
      for (int c = 0; c < kPerLane; ++c) acc[t][c] *= corr;
      for (int j = 0; j < n; ++j) {
        const float pj = __shfl_sync(kFull, e_p, j);
        const float* vr = v_tile + j * dim;
        for (int c = 0; c < kPerLane; ++c) {
          const int64_t e = lane + 32 * c;
          if (e < dim) acc[t][c] = fmaf(pj, vr[e], acc[t][c]);
        }
      }
    }
  }
  for (int t = 0; t < kRowsPerWarp; ++t) {
    const int local = t * kWarps + warp;  // rows dealt round the warps
    const int64_t row = r0 + local;
    if (row >= rows) break;
    if (p.splits == 1) {
      // acc is 0 in a row whose every key scored -inf: zeros or NaN.
      const float inv = m[t] != -INFINITY ? 1.0f / l[t] : p.empty_rows_zero ? 0.0f : NAN;
      for (int c = 0; c < kPerLane; ++c) {
        const int64_t e = lane + 32 * c;
        if (e < dim) store_row_value<T>(p, b, row, static_cast<int>(e), acc[t][c] * inv);
      }
    } else {
      float* part = p.partial + ((block * p.splits + split) * kRows + local) * (dim + 2);
      if (lane == 0) {
        part[0] = m[t];
        part[1] = l[t];
      }
      for (int c = 0; c < kPerLane; ++c) {
        const int64_t e = lane + 32 * c;
        if (e < dim) part[2 + e] = acc[t][c];
      }
    }
  }
}

/// out[row][e] from the splits' partial results: sum_s e^(m_s - M) acc_s[e]
/// / sum_s e^(m_s - M) l_s, M the largest m_s.
template <typename T>
__global__ void sdpa_combine_kernel(SdpaParams p, int64_t blocks) {
  const int64_t dim = p.dim;
  const int64_t total = blocks * kRows * dim;
  for (int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; x < total;
       x += int64_t(gridDim.x) * blockDim.x) {
    const int64_t e = x % dim, local = x / dim % kRows, block = x / dim / kRows;
    const int64_t row = block % p.row_blocks * kRows + local;
    if (row >= p.tokens * p.reps) continue;
    const int64_t b = block / p.row_blocks / p.kv_heads;
    const int64_t i = row / p.reps;
    const int64_t h = (block / p.row_blocks % p.kv_heads) * p.reps + row % p.reps;
    T* out = static_cast<T*>(p.out) + b * p.os[0] + i * p.os[1] + h * p.os[2] + e;
    int64_t start = 0;
    const bool ok = p.start_at == nullptr || [&] {
      start = read_position(p.start_at, p.start64);
      return start >= 0 && start <= p.capacity && p.tokens <= p.capacity - start;
    }();
    if (!ok) {
      *out = cuda::convert<T>(0.0f);
      continue;
    }
    float big = -INFINITY;
    for (int s = 0; s < p.splits; ++s) {
      big = fmaxf(big, p.partial[((block * p.splits + s) * kRows + local) * (dim + 2)]);
    }
    if (big == -INFINITY) {  // every key of the row scored -inf
      *out = cuda::convert<T>(p.empty_rows_zero ? 0.0f : NAN);
      continue;
    }
    float num = 0.0f, den = 0.0f;
    for (int s = 0; s < p.splits; ++s) {
      const float* part = p.partial + ((block * p.splits + s) * kRows + local) * (dim + 2);
      if (part[0] == -INFINITY) continue;  // a chunk with no usable key
      const float w = __expf(part[0] - big);
      num += w * part[2 + e];
      den += w * part[1];
    }
    *out = cuda::convert<T>(num / den);
  }
}

template <typename T>
void launch_sdpa(KernelContext& ctx, SdpaParams& p, int64_t blocks, const char* op) {
  const size_t smem = sizeof(float) * static_cast<size_t>(kRows * p.dim + kKeyTile * (p.dim + 1) +
                                                          kKeyTile * p.dim);
  PTERUN_CHECK(cuda::allow_dynamic_shared(reinterpret_cast<const void*>(sdpa_kernel<T>),
                                          cuda::device(ctx), smem),
               ErrorCode::NotSupported, op, ": head_dim ", p.dim,
               " needs more shared memory than this GPU gives a block");
  cudaStream_t stream = cuda::stream(ctx);
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(p.splits));
  sdpa_kernel<T><<<grid, kWarps * 32, smem, stream>>>(p);
  cuda::check_launch(op);
  if (p.splits > 1) {
    const int64_t total = blocks * kRows * p.dim;
    sdpa_combine_kernel<T><<<cuda::blocks_for(total, 256), 256, 0, stream>>>(p, blocks);
    cuda::check_launch(op);
  }
}

void sdpa(KernelContext& ctx, const ops::SdpaArgs& a) {
  const char* op = kernels::device_check_op_name(static_cast<DeviceCheckOp>(a.check_op));
  if (sdpa_tensor_cores(ctx, a, op) || sdpa_tiled_f32(ctx, a, op)) return;
  SdpaParams p{};
  fill_sdpa_params(ctx, a, p);
  p.mask_f32 = a.mask != nullptr && a.mask->dtype() == DType::Float32;
  const int64_t batch = a.q.size(0);
  p.kv_heads = a.k.size(2);
  p.dim = a.q.size(3);
  PTERUN_CHECK(p.dim <= kMaxDim, ErrorCode::NotSupported, op, ": head_dim ", p.dim,
               " is above the CUDA kernel's ", kMaxDim);
  p.row_blocks = (p.tokens * p.reps + kRows - 1) / kRows;
  const int64_t blocks = batch * p.kv_heads * p.row_blocks;
  PTERUN_CHECK(blocks <= INT32_MAX, ErrorCode::NotSupported, op, ": too many rows for CUDA");
  // Enough blocks to fill the GPU: split the keys (the capacity bounds them,
  // so the grid does not depend on start_pos) into chunks of at least one
  // tile of 32.
  const int64_t max_keys = std::max<int64_t>(1, p.capacity);
  int64_t splits = std::max<int64_t>(1, 256 / std::max<int64_t>(1, blocks));
  splits = std::min(splits, (max_keys + kKeyTile - 1) / kKeyTile);
  splits = std::min<int64_t>(splits, 64);
  p.chunk = (max_keys + splits - 1) / splits;
  p.chunk = (p.chunk + kKeyTile - 1) / kKeyTile * kKeyTile;
  p.splits = static_cast<int>((max_keys + p.chunk - 1) / p.chunk);
  if (p.splits > 1) {
    const size_t floats = static_cast<size_t>(blocks * p.splits * kRows * (p.dim + 2));
    p.partial = static_cast<float*>(cuda::scratch(ctx, floats * sizeof(float)));
  }
  switch (a.q.dtype()) {
    case DType::Float32: launch_sdpa<float>(ctx, p, blocks, op); break;
    case DType::Float16: launch_sdpa<__half>(ctx, p, blocks, op); break;
    case DType::BFloat16: launch_sdpa<__nv_bfloat16>(ctx, p, blocks, op); break;
    case DType::Float64: launch_sdpa<double>(ctx, p, blocks, op); break;
    default:
      throw_error(ErrorCode::NotSupported,
                  str_cat(op, ": dtype ", dtype_name(a.q.dtype()), " is not supported on CUDA"));
  }
}

// ---- cache writes ----------------------------------------------------------------

struct CacheWriteParams {
  const void* value;
  void* cache;
  const void* positions;
  bool pos64;
  bool per_token;
  int64_t batch, tokens, heads, dim, capacity;
  int64_t vs[4], cs[4], ps[2];
  DeviceCheck* check;
  int32_t check_op;
};

__device__ inline int64_t token_position(const CacheWriteParams& p, int64_t b, int64_t s) {
  if (!p.per_token) return read_position(p.positions, p.pos64) + s;
  const int64_t off = b * p.ps[0] + s * p.ps[1];
  return p.pos64 ? static_cast<const int64_t*>(p.positions)[off]
                 : static_cast<int64_t>(static_cast<const int32_t*>(p.positions)[off]);
}

/// Checks every position before any element is written (per-token indices).
__global__ void check_positions_kernel(CacheWriteParams p) {
  const int64_t n = p.batch * p.tokens;
  for (int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; x < n;
       x += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pos = token_position(p, x / p.tokens, x % p.tokens);
    if (pos < 0 || pos >= p.capacity) {
      report(p.check, DeviceCheckKind::CacheIndex, p.check_op, pos, p.capacity, 0);
    }
  }
}

template <typename U>
__global__ void write_cache_kernel(CacheWriteParams p) {
  if (p.per_token) {
    if (p.check->failed != 0) return;  // a bad index: nothing is written
  } else {
    const int64_t start = read_position(p.positions, p.pos64);
    if (start < 0 || start > p.capacity || p.tokens > p.capacity - start) {
      if (blockIdx.x == 0 && threadIdx.x == 0) {
        report(p.check, DeviceCheckKind::CachePositions, p.check_op, start, p.capacity, p.tokens);
      }
      return;
    }
  }
  const int64_t n = p.batch * p.tokens * p.heads * p.dim;
  for (int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; x < n;
       x += int64_t(gridDim.x) * blockDim.x) {
    const int64_t e = x % p.dim, h = x / p.dim % p.heads, s = x / p.dim / p.heads % p.tokens;
    const int64_t b = x / p.dim / p.heads / p.tokens;
    const int64_t pos = token_position(p, b, s);
    static_cast<U*>(p.cache)[b * p.cs[0] + pos * p.cs[1] + h * p.cs[2] + e * p.cs[3]] =
        static_cast<const U*>(p.value)[b * p.vs[0] + s * p.vs[1] + h * p.vs[2] + e * p.vs[3]];
  }
}

void write_cache(KernelContext& ctx, const ops::CacheWriteArgs& a) {
  const char* op = kernels::device_check_op_name(static_cast<DeviceCheckOp>(a.check_op));
  CacheWriteParams p{};
  p.value = a.value.data();
  p.cache = a.cache.data();
  p.positions = a.positions.data();
  p.pos64 = a.positions.dtype() == DType::Int64;
  p.per_token = a.per_token;
  p.batch = a.value.size(0);
  p.tokens = a.value.size(1);
  p.heads = a.value.size(2);
  p.dim = a.value.size(3);
  p.capacity = a.cache.size(1);
  for (int i = 0; i < 4; ++i) {
    p.vs[i] = a.value.stride(i);
    p.cs[i] = a.cache.stride(i);
  }
  if (a.per_token) {
    p.ps[0] = a.positions.stride(0);
    p.ps[1] = a.positions.stride(1);
  }
  p.check = cuda::device_check(ctx);
  p.check_op = a.check_op;
  cudaStream_t stream = cuda::stream(ctx);
  if (a.per_token) {
    check_positions_kernel<<<cuda::blocks_for(p.batch * p.tokens, 256), 256, 0, stream>>>(p);
    cuda::check_launch(op);
  }
  const int64_t n = a.value.numel();
  const unsigned blocks = cuda::blocks_for(n, 256);
  switch (a.value.element_size()) {
    case 1: write_cache_kernel<uint8_t><<<blocks, 256, 0, stream>>>(p); break;
    case 2: write_cache_kernel<uint16_t><<<blocks, 256, 0, stream>>>(p); break;
    case 4: write_cache_kernel<uint32_t><<<blocks, 256, 0, stream>>>(p); break;
    case 8: write_cache_kernel<uint64_t><<<blocks, 256, 0, stream>>>(p); break;
    default:
      throw_error(ErrorCode::NotSupported,
                  str_cat(op, ": element size ", a.value.element_size(), " is not supported"));
  }
  cuda::check_launch(op);
}

// ---- slice at a position ------------------------------------------------------------

struct NarrowParams {
  cuda::StridedIndexer<2> walk;  // over out: {out, self}
  const void* start_at;
  bool start64;
  int64_t size, length, stride;  // self's size and stride along the dim; out's length
  DeviceCheck* check;
};

template <typename U>
__global__ void narrow_at_kernel(U* out, const U* self, NarrowParams p, int64_t n) {
  const int64_t start = read_position(p.start_at, p.start64);
  if (start < 0 || start > p.size - p.length) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      report(p.check, DeviceCheckKind::SliceStart, static_cast<int32_t>(DeviceCheckOp::Slice),
             start, p.size, p.length);
    }
    return;
  }
  for (int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; x < n;
       x += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[2];
    p.walk.offsets(x, off);
    out[off[0]] = self[off[1] + start * p.stride];
  }
}

void narrow_at(KernelContext& ctx, const ops::NarrowAtArgs& a) {
  const char* op = "aten::slice_copy.Tensor_out";
  NarrowParams p{};
  p.walk =
      cuda::make_indexer<2>(a.out.sizes(), {a.out.strides(), a.self.strides()}, a.out.dim_order());
  p.start_at = a.start_at.data();
  p.start64 = a.start_at.dtype() == DType::Int64;
  p.size = a.self.size(a.dim);
  p.length = a.out.size(a.dim);
  p.stride = a.self.stride(a.dim);
  p.check = cuda::device_check(ctx);
  const int64_t n = std::max<int64_t>(1, a.out.numel());  // one thread checks an empty slice
  const unsigned blocks = cuda::blocks_for(n, 256);
  cudaStream_t stream = cuda::stream(ctx);
  const int64_t count = a.out.numel();
  switch (a.self.element_size()) {
    case 1:
      narrow_at_kernel<uint8_t>
          <<<blocks, 256, 0, stream>>>(static_cast<uint8_t*>(a.out.data()),
                                       static_cast<const uint8_t*>(a.self.data()), p, count);
      break;
    case 2:
      narrow_at_kernel<uint16_t>
          <<<blocks, 256, 0, stream>>>(static_cast<uint16_t*>(a.out.data()),
                                       static_cast<const uint16_t*>(a.self.data()), p, count);
      break;
    case 4:
      narrow_at_kernel<uint32_t>
          <<<blocks, 256, 0, stream>>>(static_cast<uint32_t*>(a.out.data()),
                                       static_cast<const uint32_t*>(a.self.data()), p, count);
      break;
    case 8:
      narrow_at_kernel<uint64_t>
          <<<blocks, 256, 0, stream>>>(static_cast<uint64_t*>(a.out.data()),
                                       static_cast<const uint64_t*>(a.self.data()), p, count);
      break;
    default:
      throw_error(ErrorCode::NotSupported,
                  str_cat(op, ": element size ", a.self.element_size(), " is not supported"));
  }
  cuda::check_launch(op);
}

}  // namespace

const ops::AttentionBackend& attention_backend() {
  static constexpr ops::AttentionBackend kAttention{&sdpa, &write_cache, &narrow_at};
  return kAttention;
}

}  // namespace pterun::kernels::cuda_ops
