// Float32 attention of many queries on CUDA cores (attention_tiled.h):
// prefill steps and torch's decomposed attention fused at load, where the
// query-at-a-time kernel of attention.cu re-reads every key for each row.
//
//  - A block of 128 threads takes 64 consecutive queries of one head of one
//    batch row; queries, keys and values go through shared memory (queries
//    and keys transposed, [dim][row], so a thread reads its rows and keys as
//    float4s), 64 keys a tile.
//  - Thread (r, c) of a 16 x 8 grid scores queries 4r..4r+3 against keys
//    8c..8c+7 (32 products per dimension from three float4 loads), applies
//    scale, mask and causal limit, and updates the running maximum and sum
//    of its rows (online softmax; the eight threads of a row reduce with
//    shuffles). The probabilities go to shared memory, and the same thread
//    accumulates its four rows' outputs over head_dim / 8 of the
//    dimensions.
//  - With a causal limit a block stops at its last query's last key.
// Everything is float32, products and sums in the order of the direct
// definition per key tile; results match the query-at-a-time kernel to
// float rounding.

#include <cuda_runtime.h>

#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/attention_common.cuh"
#include "pterun/backend/cuda/ops/attention_tiled.h"
#include "pterun/backend/cuda/ops/device_report.cuh"
#include "pterun/backend/cuda/ops/launch_util.cuh"

namespace pterun::kernels::cuda_ops {
namespace {

constexpr int kThreads = 128;
constexpr int kQueries = 64;           // per block
constexpr int kKeys = 64;              // per tile
constexpr int kRowPad = kQueries + 4;  // floats per row of the transposed tiles
constexpr int kProbPad = kKeys + 1;    // floats per row of the probabilities
// Fewer queries go to attention.cu's kernel, which splits the keys among
// blocks (a decode step's long cache), except a short prompt over a short
// cache (kShortTokens or more queries, at most kShortKeys keys): there that
// kernel runs a head's rows one after another in a few warps (gpt's 16
// tokens: 16 us an attention on the H100), and one tile here takes them
// all at once.
constexpr int64_t kMinTokens = 64;
constexpr int64_t kShortTokens = 16;
constexpr int64_t kShortKeys = 256;
constexpr unsigned kFull = 0xffffffffu;

struct TiledParams {
  const float* q;
  const float* k;
  const float* v;
  float* out;
  const float* mask;  // [tokens, keys] float32, or null
  const void* start_at;
  bool start64;
  int64_t start;
  int64_t tokens, reps, capacity;
  int64_t qs[3], ks[3], vs[3], os[3], ms[2];
  bool causal;
  bool empty_rows_zero;
  float scale;
  DeviceCheck* check;
  int32_t check_op;
};

/// Shared memory of the kernel for head_dim D, in floats.
constexpr int64_t shared_floats(int d) {
  return int64_t{2} * d * kRowPad + int64_t{kKeys} * d + int64_t{kQueries} * kProbPad;
}

template <int D>
__global__ void __launch_bounds__(kThreads) attention_tiled_kernel(TiledParams p) {
  extern __shared__ __align__(16) float smem[];
  float* qt = smem;              // [D][kRowPad]: queries, transposed
  float* kt = qt + D * kRowPad;  // [D][kRowPad]: keys, transposed
  float* vs = kt + D * kRowPad;  // [kKeys][D]
  float* ps = vs + kKeys * D;    // [kQueries][kProbPad]: probabilities
  constexpr int kDims = D / 8;   // output dimensions per thread
  const int tid = threadIdx.x, rg = tid / 8, cg = tid % 8;
  const int64_t q0 = (gridDim.x - 1 - blockIdx.x) * int64_t{kQueries};
  const int64_t h = blockIdx.y, b = blockIdx.z, hk = h / p.reps;
  const float* q = p.q + b * p.qs[0] + h * p.qs[2];
  const float* k = p.k + b * p.ks[0] + hk * p.ks[2];
  const float* v = p.v + b * p.vs[0] + hk * p.vs[2];
  float* out = p.out + b * p.os[0] + h * p.os[2];

  int64_t start = 0;
  if (!resolve_start(p, start)) {
    // Nothing to attend to: zeros (the call raises at its wait).
    for (int x = tid; x < kQueries * D; x += kThreads) {
      const int64_t i = q0 + x / D;
      if (i < p.tokens) out[i * p.os[1] + x % D] = 0.0f;
    }
    return;
  }
  const int64_t keys = start + p.tokens;
  const int64_t block_last = lmin(p.tokens, q0 + kQueries) - 1;
  const int64_t key_end = p.causal ? lmin(keys, start + block_last + 1) : keys;

  for (int x = tid; x < kQueries * D; x += kThreads) {
    const int r = x / D, e = x % D;
    qt[e * kRowPad + r] = q0 + r < p.tokens ? q[(q0 + r) * p.qs[1] + e] : 0.0f;
  }
  // This thread's output dimensions: 4-float chunks 4 cg + 32 c, or for
  // head_dim 16 the pair 2 cg.
  auto dim_of = [&](int j) { return D >= 32 ? 4 * cg + 32 * (j / 4) + j % 4 : 2 * cg + j; };
  float o[4][kDims];
  for (auto& row : o) {
    for (float& x : row) x = 0.0f;
  }
  float m[4], l[4];
  for (int i = 0; i < 4; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
  }

  for (int64_t t0 = 0; t0 < key_end; t0 += kKeys) {
    __syncthreads();  // the previous tile and its probabilities are read
    for (int x = tid; x < kKeys * D; x += kThreads) {
      const int j = x / D, e = x % D;
      const bool in = t0 + j < key_end;
      kt[e * kRowPad + j] = in ? k[(t0 + j) * p.ks[1] + e] : 0.0f;
      vs[j * D + e] = in ? v[(t0 + j) * p.vs[1] + e] : 0.0f;
    }
    __syncthreads();

    float s[4][8];
    for (auto& row : s) {
      for (float& x : row) x = 0.0f;
    }
#pragma unroll 4
    for (int e = 0; e < D; ++e) {
      const float4 a = *reinterpret_cast<const float4*>(qt + e * kRowPad + 4 * rg);
      const float4 k0 = *reinterpret_cast<const float4*>(kt + e * kRowPad + 8 * cg);
      const float4 k1 = *reinterpret_cast<const float4*>(kt + e * kRowPad + 8 * cg + 4);
      const float qa[4] = {a.x, a.y, a.z, a.w};
      const float kb[8] = {k0.x, k0.y, k0.z, k0.w, k1.x, k1.y, k1.z, k1.w};
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 8; ++j) s[i][j] = fmaf(qa[i], kb[j], s[i][j]);
      }
    }
    for (int i = 0; i < 4; ++i) {
      const int64_t row = q0 + 4 * rg + i;
      const int64_t limit = p.causal ? lmin(keys, start + row + 1) : keys;
      float mx = -INFINITY;
      for (int j = 0; j < 8; ++j) {
        const int64_t key = t0 + 8 * cg + j;
        float x = -INFINITY;
        if (key < limit && row < p.tokens) {
          x = s[i][j] * p.scale;
          if (p.mask != nullptr) x += p.mask[row * p.ms[0] + key * p.ms[1]];
        }
        s[i][j] = x;
        mx = fmaxf(mx, x);
      }
      // The eight threads of a row are eight consecutive lanes.
      for (int off = 1; off < 8; off <<= 1) mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, off));
      const float m_new = fmaxf(m[i], mx);
      // A row with no usable key yet keeps its zeros (every p below is 0).
      const float corr = m_new == -INFINITY ? 1.0f : __expf(m[i] - m_new);
      const float base = m_new == -INFINITY ? 0.0f : m_new;
      m[i] = m_new;
      float sum = 0.0f;
      float* prow = ps + (4 * rg + i) * kProbPad + 8 * cg;
      for (int j = 0; j < 8; ++j) {
        const float pe = __expf(s[i][j] - base);
        prow[j] = pe;
        sum += pe;
      }
      l[i] = l[i] * corr + sum;
      for (float& x : o[i]) x *= corr;
    }
    __syncthreads();  // every probability of the tile is written

    const int64_t n = lmin(kKeys, key_end - t0);
    for (int j = 0; j < n; ++j) {
      float pr[4];
      for (int i = 0; i < 4; ++i) pr[i] = ps[(4 * rg + i) * kProbPad + j];
      const float* vr = vs + j * D;
      if constexpr (D >= 32) {
        for (int c = 0; c < D / 32; ++c) {
          const float4 w = *reinterpret_cast<const float4*>(vr + 4 * cg + 32 * c);
          const float wv[4] = {w.x, w.y, w.z, w.w};
          for (int i = 0; i < 4; ++i) {
            for (int e = 0; e < 4; ++e) o[i][4 * c + e] = fmaf(pr[i], wv[e], o[i][4 * c + e]);
          }
        }
      } else {
        const float2 w = *reinterpret_cast<const float2*>(vr + 2 * cg);
        for (int i = 0; i < 4; ++i) {
          o[i][0] = fmaf(pr[i], w.x, o[i][0]);
          o[i][1] = fmaf(pr[i], w.y, o[i][1]);
        }
      }
    }
  }

  for (int i = 0; i < 4; ++i) {
    float sum = l[i];
    for (int off = 1; off < 8; off <<= 1) sum += __shfl_xor_sync(kFull, sum, off);
    const int64_t row = q0 + 4 * rg + i;
    if (row >= p.tokens) continue;
    // o is 0 in a row whose every key scored -inf: zeros or NaN.
    const float inv = m[i] != -INFINITY ? 1.0f / sum : p.empty_rows_zero ? 0.0f : NAN;
    float* row_out = out + row * p.os[1];
    for (int j = 0; j < kDims; ++j) row_out[dim_of(j)] = o[i][j] * inv;
  }
}

template <int D>
bool launch(int device, cudaStream_t stream, const TiledParams& p, dim3 grid) {
  const auto bytes = static_cast<size_t>(shared_floats(D)) * sizeof(float);
  if (!cuda::allow_dynamic_shared(reinterpret_cast<const void*>(attention_tiled_kernel<D>), device,
                                  bytes)) {
    return false;
  }
  attention_tiled_kernel<D><<<grid, kThreads, bytes, stream>>>(p);
  return true;
}

}  // namespace

bool sdpa_tiled_f32(KernelContext& ctx, const ops::SdpaArgs& a, const char* op) {
  if (a.q.dtype() != DType::Float32) return false;
  if (a.mask != nullptr && a.mask->dtype() != DType::Float32) return false;
  dim3 grid;
  const bool short_cache = a.k.size(1) <= kShortKeys;
  if (!tiled_grid(a, short_cache ? kShortTokens : kMinTokens, kQueries, grid)) return false;

  TiledParams p{};
  fill_sdpa_params(ctx, a, p);
  cudaStream_t stream = cuda::stream(ctx);
  const int device = cuda::device(ctx);
  bool launched = false;
  switch (a.q.size(3)) {
    case 16: launched = launch<16>(device, stream, p, grid); break;
    case 32: launched = launch<32>(device, stream, p, grid); break;
    case 64: launched = launch<64>(device, stream, p, grid); break;
    default: launched = launch<128>(device, stream, p, grid); break;
  }
  if (launched) cuda::check_launch(op);
  return launched;
}

}  // namespace pterun::kernels::cuda_ops
