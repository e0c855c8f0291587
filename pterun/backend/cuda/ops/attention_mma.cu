// Attention on the tensor cores (attention_mma.h), flash-attention style,
// for float16 and bfloat16 attentions of 16 queries or more: prefill steps
// of LLM exports and torch's decomposed attention fused at load.
//
//  - A block of four warps takes 64 consecutive queries of one head of one
//    batch row; a warp owns 16 of them, held in registers as the A operand
//    of mma.sync m16n8k16 products.
//  - Keys and values go by in tiles of 64 through shared memory, the keys
//    as rows and the values transposed, so that every B operand is one
//    32-bit load; rows are padded by 8 elements, which puts the eight rows
//    a load touches in distinct banks.
//  - A warp scores its 16 queries against the tile's keys (float
//    accumulators), applies the scale, the mask and the causal limit,
//    updates each row's running maximum and sum (online softmax) in the
//    accumulators' own layout, rounds the probabilities to the input dtype
//    (as torch's flash kernels do) and multiplies them by the values.
//  - With a causal limit a block stops at its last query's last key, and a
//    warp skips the tiles past its own.
// Scores, maxima, sums and the output accumulate in float. The grid depends
// on shapes only, never on start_pos, so a step replays as a CUDA graph.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/attention_common.cuh"
#include "pterun/backend/cuda/ops/attention_mma.h"
#include "pterun/backend/cuda/ops/device_report.cuh"
#include "pterun/backend/cuda/ops/launch_util.cuh"

namespace pterun::kernels::cuda_ops {
namespace {

constexpr int kWarps = 4;
constexpr int kQueries = 16 * kWarps;  // queries per block
constexpr int kKeys = 64;              // keys per tile
constexpr int kPad = 8;                // elements of padding per shared row
constexpr int64_t kMinTokens = 16;     // fewer queries: attention.cu's kernel
constexpr float kLog2e = 1.4426950408889634f;

struct MmaParams {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  const void* mask;  // [tokens, keys] or null
  bool mask_f32;
  const void* start_at;  // the position on the device, or null: `start`
  bool start64;
  int64_t start;
  int64_t tokens, reps, capacity;
  int64_t qs[3], ks[3], vs[3], os[3], ms[2];  // batch, sequence, head strides; mask rows, cols
  bool causal;
  bool empty_rows_zero;  // a row whose every key scored -inf: zeros, not NaN
  bool vec8;             // k and v rows load as 16-byte vectors
  float scale;
  DeviceCheck* check;
  int32_t check_op;
};

/// Two floats rounded to T, the lower column in the low half.
template <typename T>
__device__ inline uint32_t pack_pair(float lo, float hi);
template <>
__device__ inline uint32_t pack_pair<__half>(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}
template <>
__device__ inline uint32_t pack_pair<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

/// d += a (16x16, row-major) * b (16x8, column-major), float accumulators.
/// Lane l = 4g + t holds a = {(g, 2t..), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..)},
/// b = {(k 2t.., n g), (k 2t+8.., n g)} and d = {(g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)}.
template <typename T>
__device__ inline void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
template <>
__device__ inline void mma<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                   uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}
template <>
__device__ inline void mma<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

__device__ inline uint32_t load_pair(const void* p) {
  return *static_cast<const uint32_t*>(p);
}

/// Keys [t0, t0 + kKeys) of k and v into the shared tiles; keys from `end`
/// on are zeros (a value read past the keys could be NaN, and 0 * NaN is
/// NaN).
template <typename T, int D>
__device__ inline void load_tiles(const MmaParams& p, const T* k, const T* v, int64_t t0,
                                  int64_t end, T (&k_tile)[kKeys][D + kPad],
                                  T (&v_tile)[D][kKeys + kPad]) {
  if (p.vec8) {
    constexpr int kChunks = D / 8;
    for (int x = threadIdx.x; x < kKeys * kChunks; x += blockDim.x) {
      const int j = x / kChunks, c = x % kChunks * 8;
      uint4 kv = make_uint4(0, 0, 0, 0), vv = kv;
      if (t0 + j < end) {
        kv = *reinterpret_cast<const uint4*>(k + (t0 + j) * p.ks[1] + c);
        vv = *reinterpret_cast<const uint4*>(v + (t0 + j) * p.vs[1] + c);
      }
      *reinterpret_cast<uint4*>(&k_tile[j][c]) = kv;
      const T* ve = reinterpret_cast<const T*>(&vv);
      for (int e = 0; e < 8; ++e) v_tile[c + e][j] = ve[e];
    }
  } else {
    constexpr int kChunks = D / 2;
    for (int x = threadIdx.x; x < kKeys * kChunks; x += blockDim.x) {
      const int j = x / kChunks, c = x % kChunks * 2;
      uint32_t kv = 0, vv = 0;
      if (t0 + j < end) {
        kv = load_pair(k + (t0 + j) * p.ks[1] + c);
        vv = load_pair(v + (t0 + j) * p.vs[1] + c);
      }
      *reinterpret_cast<uint32_t*>(&k_tile[j][c]) = kv;
      const T* ve = reinterpret_cast<const T*>(&vv);
      v_tile[c][j] = ve[0];
      v_tile[c + 1][j] = ve[1];
    }
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(kWarps * 32) attention_mma_kernel(MmaParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __shared__ __align__(16) T k_tile[kKeys][D + kPad];
  __shared__ __align__(16) T v_tile[D][kKeys + kPad];  // transposed: [dim][key]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  // The blocks with the most keys (under a causal limit) start first.
  const int64_t q0 = (gridDim.x - 1 - blockIdx.x) * int64_t{kQueries};
  const int64_t h = blockIdx.y, b = blockIdx.z, hk = h / p.reps;
  const T* q = static_cast<const T*>(p.q) + b * p.qs[0] + h * p.qs[2];
  const T* k = static_cast<const T*>(p.k) + b * p.ks[0] + hk * p.ks[2];
  const T* v = static_cast<const T*>(p.v) + b * p.vs[0] + hk * p.vs[2];
  T* out = static_cast<T*>(p.out) + b * p.os[0] + h * p.os[2];

  int64_t start = 0;
  if (!resolve_start(p, start)) {
    // Nothing to attend to: zeros (the call raises at its wait).
    for (int x = threadIdx.x; x < kQueries * D; x += blockDim.x) {
      const int64_t i = q0 + x / D;
      if (i < p.tokens) out[i * p.os[1] + x % D] = cuda::convert<T>(0.0f);
    }
    return;
  }
  const int64_t keys = start + p.tokens;
  const int64_t block_last = lmin(p.tokens, q0 + kQueries) - 1;
  const int64_t key_end = p.causal ? lmin(keys, start + block_last + 1) : keys;
  const int64_t warp_first = q0 + warp * 16;
  const int64_t warp_last = lmin(p.tokens - 1, warp_first + 15);
  const int64_t rows[2] = {warp_first + g, warp_first + g + 8};

  // This warp's queries as A operands, zeros past the last.
  uint32_t qf[D / 16][4];
  for (int s = 0; s < D / 16; ++s) {
    const int c = s * 16 + 2 * t;
    for (int r = 0; r < 2; ++r) {
      const bool in = rows[r] < p.tokens;
      qf[s][r] = in ? load_pair(q + rows[r] * p.qs[1] + c) : 0u;
      qf[s][r + 2] = in ? load_pair(q + rows[r] * p.qs[1] + c + 8) : 0u;
    }
  }
  float o[D / 8][4];
  for (auto& x : o) x[0] = x[1] = x[2] = x[3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  for (int64_t t0 = 0; t0 < key_end; t0 += kKeys) {
    __syncthreads();  // every warp is done with the previous tile
    load_tiles<T, D>(p, k, v, t0, key_end, k_tile, v_tile);
    __syncthreads();
    if (warp_first >= p.tokens || (p.causal && t0 > start + warp_last)) continue;

    float s[kKeys / 8][4];
    for (int n = 0; n < kKeys / 8; ++n) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
      for (int c = 0; c < D / 16; ++c) {
        const T* kr = &k_tile[n * 8 + g][c * 16 + 2 * t];
        mma<T>(s[n], qf[c], load_pair(kr), load_pair(kr + 8));
      }
    }
    // Scale, mask and limits; the tile's maximum of each row.
    float mx[2] = {-INFINITY, -INFINITY};
    for (int n = 0; n < kKeys / 8; ++n) {
      for (int e = 0; e < 4; ++e) {
        const int64_t row = rows[e >> 1];
        const int64_t key = t0 + n * 8 + 2 * t + (e & 1);
        const int64_t limit = p.causal ? lmin(keys, start + row + 1) : keys;
        float x = -INFINITY;
        if (key < limit && row < p.tokens) {
          x = s[n][e] * p.scale;
          if (p.mask != nullptr) {
            const int64_t off = row * p.ms[0] + key * p.ms[1];
            x += p.mask_f32 ? static_cast<const float*>(p.mask)[off]
                            : cuda::convert<float>(static_cast<const T*>(p.mask)[off]);
          }
        }
        s[n][e] = x;
        mx[e >> 1] = fmaxf(mx[e >> 1], x);
      }
    }
    float corr[2], base[2];
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float m_new = fmaxf(m[r], mx[r]);
      // A row with no usable key yet keeps its zeros (every p below is 0).
      corr[r] = m_new == -INFINITY ? 1.0f : exp2f((m[r] - m_new) * kLog2e);
      base[r] = m_new == -INFINITY ? 0.0f : m_new * kLog2e;
      m[r] = m_new;
    }
    float sum[2] = {0.0f, 0.0f};
    for (int n = 0; n < kKeys / 8; ++n) {
      for (int e = 0; e < 4; ++e) {
        const float pe = exp2f(fmaf(s[n][e], kLog2e, -base[e >> 1]));
        s[n][e] = pe;
        sum[e >> 1] += pe;
      }
    }
    for (int r = 0; r < 2; ++r) l[r] = l[r] * corr[r] + sum[r];
    for (auto& x : o) {
      x[0] *= corr[0];
      x[1] *= corr[0];
      x[2] *= corr[1];
      x[3] *= corr[1];
    }
    // The probabilities of 16 keys (two 8-key tiles) are one A operand.
    for (int c = 0; c < kKeys / 16; ++c) {
      const uint32_t a[4] = {pack_pair<T>(s[2 * c][0], s[2 * c][1]),
                             pack_pair<T>(s[2 * c][2], s[2 * c][3]),
                             pack_pair<T>(s[2 * c + 1][0], s[2 * c + 1][1]),
                             pack_pair<T>(s[2 * c + 1][2], s[2 * c + 1][3])};
      for (int n = 0; n < D / 8; ++n) {
        const T* vr = &v_tile[n * 8 + g][c * 16 + 2 * t];
        mma<T>(o[n], a, load_pair(vr), load_pair(vr + 8));
      }
    }
  }

  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    if (rows[r] >= p.tokens) continue;
    // o is 0 in a row whose every key scored -inf: zeros or NaN.
    const float inv = m[r] != -INFINITY ? 1.0f / l[r] : p.empty_rows_zero ? 0.0f : NAN;
    T* row_out = out + rows[r] * p.os[1];
    for (int n = 0; n < D / 8; ++n) {
      row_out[n * 8 + 2 * t] = cuda::convert<T>(o[n][2 * r] * inv);
      row_out[n * 8 + 2 * t + 1] = cuda::convert<T>(o[n][2 * r + 1] * inv);
    }
  }
#endif
}

/// Whether `device` (the current device) runs the kernel's mma.sync: a
/// device of compute capability 8.0 or later, and code built for one (a
/// build for older targets only, JIT-compiled for a newer device, has an
/// empty kernel).
bool has_bf16_mma(int device) {
  constexpr int kDevices = 64;
  static std::atomic<int8_t> known[kDevices];  // 0 unknown, 1 no, 2 yes
  if (device < 0 || device >= kDevices) return false;
  int8_t k = known[device].load(std::memory_order_relaxed);
  if (k == 0) {
    int major = 0;
    PTERUN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    cudaFuncAttributes attr{};
    PTERUN_CUDA_CHECK(cudaFuncGetAttributes(&attr, attention_mma_kernel<__nv_bfloat16, 16>));
    k = major >= 8 && attr.ptxVersion >= 80 ? 2 : 1;
    known[device].store(k, std::memory_order_relaxed);
  }
  return k == 2;
}

/// Whether t's data and its first three strides suit loads of `elems`
/// elements at once.
bool walks_in(const Tensor& t, int64_t elems) {
  if (!cuda::aligned(t.data(), static_cast<size_t>(elems) * t.element_size())) return false;
  for (size_t i = 0; i < 3; ++i) {
    if (t.stride(i) % elems != 0) return false;
  }
  return true;
}

template <typename T>
void launch(cudaStream_t stream, const MmaParams& p, int64_t dim, dim3 grid) {
  const dim3 block(kWarps * 32);
  switch (dim) {
    case 16: attention_mma_kernel<T, 16><<<grid, block, 0, stream>>>(p); break;
    case 32: attention_mma_kernel<T, 32><<<grid, block, 0, stream>>>(p); break;
    case 64: attention_mma_kernel<T, 64><<<grid, block, 0, stream>>>(p); break;
    default: attention_mma_kernel<T, 128><<<grid, block, 0, stream>>>(p); break;
  }
}

}  // namespace

bool sdpa_tensor_cores(KernelContext& ctx, const ops::SdpaArgs& a, const char* op) {
  const DType dtype = a.q.dtype();
  if (dtype != DType::Float16 && dtype != DType::BFloat16) return false;
  dim3 grid;
  if (!tiled_grid(a, kMinTokens, kQueries, grid)) return false;
  for (const Tensor* x : std::array<const Tensor*, 4>{&a.q, &a.k, &a.v, &a.out}) {
    if (!walks_in(*x, 2)) return false;
  }
  if (!has_bf16_mma(cuda::device(ctx))) return false;

  MmaParams p{};
  fill_sdpa_params(ctx, a, p);
  p.mask_f32 = a.mask != nullptr && a.mask->dtype() == DType::Float32;
  p.vec8 = walks_in(a.k, 8) && walks_in(a.v, 8);
  if (dtype == DType::Float16) {
    launch<__half>(cuda::stream(ctx), p, a.q.size(3), grid);
  } else {
    launch<__nv_bfloat16>(cuda::stream(ctx), p, a.q.size(3), grid);
  }
  cuda::check_launch(op);
  return true;
}

}  // namespace pterun::kernels::cuda_ops
