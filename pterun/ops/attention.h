#pragma once

// The attention family: the operators of ExecuTorch's LLM exports that
// attend over a KV cache or write it at data-dependent positions
// (llama::custom_sdpa, sdpa_with_kv_cache, update_cache_with_indices), and
// the internal kernels the executor puts in place of a decode step's
// position arithmetic so that the position is read where the cache lives
// (executor/rewrite.h, "positions on the device") or of torch's decomposed
// attention (pterun::attention.out). Layout everywhere is ExecuTorch's
// [batch, sequence, heads, head_dim].
//
// Checks of shapes and dtypes are the front-ends' (attention.cpp); checks of
// values only a kernel can read (positions and indices held in tensors) are
// the backends', with kernels/common/device_check.h's messages.

#include <cstdint>
#include <optional>

#include "pterun/core/tensor.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

/// out[b, i, h] = softmax(scale * q[b, i, h] . k[b, j, h / reps] over the
/// keys j used) @ v[b, j, h / reps], reps = heads / kv_heads. The keys used
/// are j < start_pos + S; with `causal`, query i uses j <= start_pos + i.
/// `mask` (2-D [S, start_pos + S], or null) is added to the scaled scores.
/// q, k, v, out share one floating dtype (f32, f64, f16, bf16; checked);
/// the mask is that dtype or float32. f16/bf16 accumulate in float.
///
/// When `start_pos_at` is set, start_pos is not known on the host: it is
/// the single element of that int64/int32 tensor (on the method's device),
/// which the backend reads and checks (DeviceCheckKind::CachePositions,
/// naming `check_op`); `mask` is then null.
///
/// A query row whose every key used scores -inf (after the mask) comes out
/// NaN, as softmax of nothing but -inf does, or zeros with
/// `empty_rows_zero` (torch's _safe_softmax).
struct SdpaArgs {
  const Tensor& q;  // [B, S, H, D]
  const Tensor& k;  // [B, capacity, H_kv, D]
  const Tensor& v;  // [B, capacity, H_kv, D]
  const Tensor* mask;
  const Tensor* start_pos_at;
  int64_t start_pos;
  bool causal;
  float scale;
  int32_t check_op;  // kernels::DeviceCheckOp
  Tensor& out;       // [B, S, H, D]
  bool empty_rows_zero = false;
};

/// Copies the strides a kernel walks into `p`: p.qs, p.ks, p.vs and p.os
/// the first three of q, k, v and out; p.ms the first two of the mask, if
/// any. Both backends' kernel parameters name them so.
template <typename P>
void copy_sdpa_strides(const SdpaArgs& a, P& p) {
  for (int i = 0; i < 3; ++i) {
    p.qs[i] = a.q.stride(i);
    p.ks[i] = a.k.stride(i);
    p.vs[i] = a.v.stride(i);
    p.os[i] = a.out.stride(i);
  }
  if (a.mask != nullptr) {
    p.ms[0] = a.mask->stride(0);
    p.ms[1] = a.mask->stride(1);
  }
}

/// Writes the S tokens of value[b] into cache[b]: token s to position
/// positions[b, s] (per_token: an int64/int32 [B, S] tensor), or to
/// start + s where start is the single element of `positions`. Each
/// position is checked by the backend (DeviceCheckKind::CacheIndex or
/// CachePositions, naming `check_op`) before anything is written.
struct CacheWriteArgs {
  const Tensor& value;  // [B, S, H, D]
  Tensor& cache;        // [B, capacity, H, D], value's dtype
  const Tensor& positions;
  bool per_token;
  int32_t check_op;  // kernels::DeviceCheckOp
};

/// out = self narrowed to [start, start + out.size(dim)) along `dim`, start
/// being the single element of the int64/int32 tensor `start_at`; the
/// backend checks that the slice fits (DeviceCheckKind::SliceStart).
struct NarrowAtArgs {
  const Tensor& self;
  size_t dim;
  const Tensor& start_at;
  Tensor& out;  // resized by the front-end
};

struct AttentionBackend {
  void (*sdpa)(KernelContext& ctx, const SdpaArgs& a);
  void (*write_cache)(KernelContext& ctx, const CacheWriteArgs& a);
  void (*narrow_at)(KernelContext& ctx, const NarrowAtArgs& a);
};

// llama::custom_sdpa.out(Tensor query, Tensor key, Tensor value, SymInt start_pos,
//   Tensor? attn_mask=None, float drpout_p=0.0, bool is_causal=False, float? scale=None, *,
//   Tensor(a!) out) -> Tensor(a!)
void custom_sdpa_out(KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                     int64_t start_pos, const Tensor* attn_mask, double dropout_p, bool is_causal,
                     std::optional<double> scale, Tensor& out);

// llama::sdpa_with_kv_cache.out(Tensor query, Tensor key, Tensor value, Tensor(a!) key_cache,
//   Tensor(b!) value_cache, SymInt start_pos, SymInt seq_len, Tensor? attn_mask=None,
//   float drpout_p=0.0, bool is_causal=False, float? scale=None, *, Tensor(c!) out)
//   -> Tensor(c!)
void sdpa_with_kv_cache_out(KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                            Tensor& key_cache, Tensor& value_cache, int64_t start_pos,
                            int64_t seq_len, const Tensor* attn_mask, double dropout_p,
                            bool is_causal, std::optional<double> scale, Tensor& out);

// llama::update_cache_with_indices.out(Tensor value, Tensor(a!) cache, SymInt start_pos,
//   Tensor indices, *, Tensor(b!) out) -> Tensor(b!)
void update_cache_with_indices_out(KernelContext& ctx, const Tensor& value, Tensor& cache,
                                   int64_t start_pos, const Tensor& indices, Tensor& out);

// ---- internal kernels (kernels/internal_ops.h) ----

// pterun::update_cache_at.out(Tensor value, Tensor(a!) cache, Tensor start_pos, *,
//   Tensor(b!) out): llama::update_cache.out with start_pos the element of a tensor.
void update_cache_at_out(KernelContext& ctx, const Tensor& value, Tensor& cache,
                         const Tensor& start_pos, Tensor& out);

// pterun::custom_sdpa_at.out(Tensor query, Tensor key, Tensor value, Tensor start_pos,
//   bool is_causal, float? scale, *, Tensor(a!) out): llama::custom_sdpa.out without a
//   mask, with start_pos the element of a tensor.
void custom_sdpa_at_out(KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& start_pos, bool is_causal, std::optional<double> scale,
                        Tensor& out);

// pterun::attention.out(Tensor q, Tensor k, Tensor v, Tensor? mask, float scale,
//   bool empty_rows_zero, *, Tensor(a!) out) -> Tensor(a!): torch's decomposed attention
//   (bmm, scale, additive mask, softmax or safe softmax, bmm) as one kernel. q and out
//   [B, S, H, D], k and v [B, Sk, H_kv, D] with Sk >= S; every query uses all Sk keys; mask
//   [S, Sk] or None.
void attention_out(KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                   const Tensor* mask, double scale, bool empty_rows_zero, Tensor& out);

// pterun::slice_at.out(Tensor self, int dim, Tensor start, SymInt length, *, Tensor(a!) out):
// slice_copy.Tensor_out(self, dim, start, start + length, 1) with start the element of a
// tensor; the slice must fit (no clamping).
void slice_at_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& start,
                  int64_t length, Tensor& out);

}  // namespace pterun::ops
