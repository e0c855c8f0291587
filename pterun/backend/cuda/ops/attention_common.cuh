#pragma once

// What the CUDA attention kernels (attention.cu, attention_mma.cu,
// attention_tiled.cu) share: their parameter structs' common fields filled
// from ops::SdpaArgs, the grid of the tiled kernels, and on the device the
// position of a call (given, or read and checked where it lives).

#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/device_report.cuh"
#include "pterun/core/dtype.h"
#include "pterun/ops/attention.h"

namespace pterun::kernels::cuda_ops {

/// Fills p's q, k, v, out and mask (as p's pointer types), the position
/// (given, or the tensor that holds it and its width, with the method's
/// device-check word to report a bad one), the tokens, the query heads per
/// key/value head (reps), the keys' capacity, the strides
/// (copy_sdpa_strides), causal, empty_rows_zero, scale and the op named in
/// checks. a.k.size(2) is not 0 (the front-end checks the heads).
template <typename P>
void fill_sdpa_params(kernels::KernelContext& ctx, const ops::SdpaArgs& a, P& p) {
  p.q = static_cast<decltype(p.q)>(a.q.data());
  p.k = static_cast<decltype(p.k)>(a.k.data());
  p.v = static_cast<decltype(p.v)>(a.v.data());
  p.out = static_cast<decltype(p.out)>(a.out.data());
  p.mask = a.mask != nullptr ? static_cast<decltype(p.mask)>(a.mask->data()) : nullptr;
  p.start_at = a.start_pos_at != nullptr ? a.start_pos_at->data() : nullptr;
  p.start64 = a.start_pos_at != nullptr && a.start_pos_at->dtype() == DType::Int64;
  p.start = a.start_pos;
  p.tokens = a.q.size(1);
  p.reps = a.q.size(2) / a.k.size(2);
  p.capacity = a.k.size(1);
  ops::copy_sdpa_strides(a, p);
  p.causal = a.causal;
  p.empty_rows_zero = a.empty_rows_zero;
  p.scale = a.scale;
  if (p.start_at != nullptr) p.check = cuda::device_check(ctx);
  p.check_op = a.check_op;
}

/// The grid of a tiled kernel (blocks of `queries` queries of one head of
/// one batch row: x query blocks, y heads, z batch rows) for `a`, or false
/// when `a` does not suit the tiled kernels: head_dim 16, 32, 64 or 128, at
/// least `min_tokens` queries, batch and heads within a grid's limits.
inline bool tiled_grid(const ops::SdpaArgs& a, int64_t min_tokens, int64_t queries, dim3& grid) {
  const int64_t batch = a.q.size(0), tokens = a.q.size(1), heads = a.q.size(2);
  const int64_t dim = a.q.size(3);
  if (dim != 16 && dim != 32 && dim != 64 && dim != 128) return false;
  const int64_t q_blocks = (tokens + queries - 1) / queries;
  if (tokens < min_tokens || batch > 65535 || heads > 65535 || q_blocks > INT32_MAX) return false;
  grid = dim3(static_cast<unsigned>(q_blocks), static_cast<unsigned>(heads),
              static_cast<unsigned>(batch));
  return true;
}

__device__ inline int64_t lmin(int64_t a, int64_t b) {
  return a < b ? a : b;
}

/// start_pos for this call: p.start, or the element p.start_at holds. False
/// (reported once, by the first thread of the first block) when tokens
/// from there run past the keys' capacity.
template <typename P>
__device__ inline bool resolve_start(const P& p, int64_t& start) {
  start = p.start_at != nullptr ? read_position(p.start_at, p.start64) : p.start;
  if (start >= 0 && start <= p.capacity && p.tokens <= p.capacity - start) return true;
  if (p.start_at != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 &&
      threadIdx.x == 0) {
    report(p.check, DeviceCheckKind::CachePositions, p.check_op, start, p.capacity, p.tokens);
  }
  return false;
}

}  // namespace pterun::kernels::cuda_ops
