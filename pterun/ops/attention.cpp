// Front-ends of the attention family (attention.h): shapes, dtypes and the
// positions the host knows, checked once for every backend.

#include "pterun/ops/attention.h"

#include <cmath>

#include "pterun/core/error.h"
#include "pterun/kernels/common/device_check.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/checks.h"
#include "pterun/ops/kv_cache.h"

namespace pterun::ops {
namespace {

using kernels::DeviceCheckOp;

const AttentionBackend& attention(const KernelContext& ctx) {
  return *backend(ctx).attention;
}

bool attention_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

/// Error NotSupported unless the last dim of `t` (head_dim) is unit-stride:
/// the kernels read each head's vector as one run.
void check_unit_head_dim(const Tensor& t, const char* what, const char* op) {
  PTERUN_CHECK(t.size(3) <= 1 || t.stride(3) == 1, ErrorCode::NotSupported, op, ": ", what, " ",
               describe(t), " must have a unit-stride last dim (head_dim)");
}

/// The checks shared by every sdpa front-end: q [B, S, H, D] and caches
/// k, v [B, capacity, H_kv, D] of one attention dtype, H a multiple of
/// H_kv; out resized to q. Returns the scale.
float check_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, std::optional<double> scale,
                 Tensor& out, const char* op) {
  check_rank(q, 4, "a query [batch, seq, heads, head_dim]", op);
  check_rank(k, 4, "a key cache [batch, seq, kv_heads, head_dim]", op);
  check_rank(v, 4, "a value cache [batch, seq, kv_heads, head_dim]", op);
  PTERUN_CHECK(attention_dtype(q.dtype()), ErrorCode::InvalidArgument, op, ": dtype ",
               dtype_name(q.dtype()), " is not supported (float32, float64, float16, bfloat16)");
  check_same_dtype(k, q, "key", op);
  check_same_dtype(v, q, "value", op);
  check_same_dtype(out, q, "out", op);
  PTERUN_CHECK(k.size(0) == q.size(0) && v.size(0) == q.size(0) && k.size(3) == q.size(3) &&
                   v.size(3) == q.size(3),
               ErrorCode::InvalidArgument, op, ": query ", describe(q), ", key ", describe(k),
               " and value ", describe(v), " differ in batch or head_dim");
  PTERUN_CHECK(k.size(1) == v.size(1) && k.size(2) == v.size(2), ErrorCode::InvalidArgument, op,
               ": key ", describe(k), " and value ", describe(v), " differ in length or heads");
  const int64_t heads = q.size(2), kv_heads = k.size(2);
  PTERUN_CHECK((kv_heads > 0 && heads % kv_heads == 0) || (heads == 0 && kv_heads == 0),
               ErrorCode::InvalidArgument, op, ": ", heads, " query heads are not a multiple of ",
               kv_heads, " key/value heads");
  check_unit_head_dim(q, "query", op);
  check_unit_head_dim(k, "key", op);
  check_unit_head_dim(v, "value", op);
  kernels::resize_output(out, q.sizes(), op);
  check_unit_head_dim(out, "out", op);
  const double s = scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  return static_cast<float>(s);
}

/// Error unless `t` holds one int64 or int32 element (a position).
void check_position_tensor(const Tensor& t, const char* what, const char* op) {
  PTERUN_CHECK(t.dtype() == DType::Int64 || t.dtype() == DType::Int32, ErrorCode::InvalidType, op,
               ": ", what, " must be int64 or int32, not ", dtype_name(t.dtype()));
  PTERUN_CHECK(t.numel() == 1, ErrorCode::InvalidArgument, op, ": ", what,
               " must hold one element, got ", describe(t));
}

/// custom_sdpa with a host start_pos: the keys used and the mask's shape
/// are known here.
void run_sdpa(KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
              int64_t start_pos, const Tensor* mask, bool causal, std::optional<double> scale,
              Tensor& out, const char* op, DeviceCheckOp check_op) {
  const float s = check_sdpa(q, k, v, scale, out, op);
  PTERUN_CHECK(mask == nullptr || !causal, ErrorCode::InvalidArgument, op,
               ": attn_mask and is_causal cannot be set at the same time");
  const int64_t tokens = q.size(1);
  check_cache_positions(start_pos, tokens, k.size(1), check_op);
  if (mask != nullptr) {
    PTERUN_CHECK(mask->dim() == 2 && mask->size(0) == tokens && mask->size(1) == start_pos + tokens,
                 ErrorCode::InvalidArgument, op, ": attn_mask ", describe(*mask), " must be [",
                 tokens, ", ", start_pos + tokens, "] (queries, keys used)");
    PTERUN_CHECK(mask->dtype() == q.dtype() || mask->dtype() == DType::Float32,
                 ErrorCode::InvalidArgument, op, ": attn_mask dtype ", dtype_name(mask->dtype()),
                 " must be the query's (", dtype_name(q.dtype()), ") or float32");
  }
  if (out.numel() == 0) return;
  attention(ctx).sdpa(
      ctx, {q, k, v, mask, nullptr, start_pos, causal, s, static_cast<int32_t>(check_op), out});
}

}  // namespace

// dropout_p is ignored, as ExecuTorch's kernel ignores it (inference).
void custom_sdpa_out(KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                     int64_t start_pos, const Tensor* attn_mask, double /*dropout_p*/,
                     bool is_causal, std::optional<double> scale, Tensor& out) {
  run_sdpa(ctx, q, k, v, start_pos, attn_mask, is_causal, scale, out, "llama::custom_sdpa.out",
           DeviceCheckOp::CustomSdpa);
}

// Both caches take the new tokens at start_pos, then custom_sdpa runs over
// them. seq_len must be the query's length.
void sdpa_with_kv_cache_out(KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                            Tensor& key_cache, Tensor& value_cache, int64_t start_pos,
                            int64_t seq_len, const Tensor* attn_mask, double /*dropout_p*/,
                            bool is_causal, std::optional<double> scale, Tensor& out) {
  const char* op = "llama::sdpa_with_kv_cache.out";
  check_rank(q, 4, "a query [batch, seq, heads, head_dim]", op);
  PTERUN_CHECK(seq_len == q.size(1), ErrorCode::InvalidArgument, op, ": seq_len ", seq_len,
               " differs from the query's ", q.size(1), " tokens");
  check_cache_args(k, key_cache, op, true);
  check_cache_args(v, value_cache, op, true);
  PTERUN_CHECK(k.size(1) == seq_len && v.size(1) == seq_len, ErrorCode::InvalidArgument, op,
               ": key ", describe(k), " and value ", describe(v), " must hold ", seq_len,
               " tokens");
  // Everything the attention checks, before either cache changes.
  check_sdpa(q, key_cache, value_cache, scale, out, op);
  check_cache_positions(start_pos, seq_len, key_cache.size(1), DeviceCheckOp::SdpaWithKvCache);
  write_cache_tokens(ctx, k, key_cache, start_pos, op, DeviceCheckOp::SdpaWithKvCache);
  write_cache_tokens(ctx, v, value_cache, start_pos, op, DeviceCheckOp::SdpaWithKvCache);
  run_sdpa(ctx, q, key_cache, value_cache, start_pos, attn_mask, is_causal, scale, out, op,
           DeviceCheckOp::SdpaWithKvCache);
}

// Token (b, s) goes to cache[b, indices[b, s]]; start_pos is not used (as in
// ExecuTorch's kernel). Every index is checked before anything is written.
void update_cache_with_indices_out(KernelContext& ctx, const Tensor& value, Tensor& cache,
                                   int64_t /*start_pos*/, const Tensor& indices, Tensor& /*out*/) {
  const char* op = "llama::update_cache_with_indices.out";
  check_cache_args(value, cache, op, false);
  PTERUN_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32,
               ErrorCode::InvalidType, op, ": indices must be int64 or int32, not ",
               dtype_name(indices.dtype()));
  PTERUN_CHECK(
      indices.dim() == 2 && indices.size(0) == value.size(0) && indices.size(1) == value.size(1),
      ErrorCode::InvalidArgument, op, ": indices ", describe(indices), " must be [", value.size(0),
      ", ", value.size(1), "] (batch, tokens of value)");
  if (value.numel() == 0) return;
  attention(ctx).write_cache(ctx, {value, cache, indices, true,
                                   static_cast<int32_t>(DeviceCheckOp::UpdateCacheWithIndices)});
}

void update_cache_at_out(KernelContext& ctx, const Tensor& value, Tensor& cache,
                         const Tensor& start_pos, Tensor& /*out*/) {
  const char* op = "llama::update_cache.out";
  check_cache_args(value, cache, op, true);
  check_position_tensor(start_pos, "start_pos", op);
  if (value.numel() == 0) return;
  attention(ctx).write_cache(
      ctx, {value, cache, start_pos, false, static_cast<int32_t>(DeviceCheckOp::UpdateCache)});
}

void custom_sdpa_at_out(KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& start_pos, bool is_causal, std::optional<double> scale,
                        Tensor& out) {
  const char* op = "llama::custom_sdpa.out";
  const float s = check_sdpa(q, k, v, scale, out, op);
  check_position_tensor(start_pos, "start_pos", op);
  PTERUN_CHECK(q.size(1) <= k.size(1), ErrorCode::InvalidArgument, op, ": ", q.size(1),
               " tokens do not fit a cache of ", k.size(1));
  if (out.numel() == 0) return;
  attention(ctx).sdpa(ctx, {q, k, v, nullptr, &start_pos, 0, is_causal, s,
                            static_cast<int32_t>(DeviceCheckOp::CustomSdpa), out});
}

// The last S of the Sk keys line up with the queries (start_pos = Sk - S),
// so the kernels' geometry is custom_sdpa's without a causal limit.
void attention_out(KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                   const Tensor* mask, double scale, bool empty_rows_zero, Tensor& out) {
  const char* op = kernels::kAttentionKernel;
  const float s = check_sdpa(q, k, v, scale, out, op);
  const int64_t tokens = q.size(1), keys = k.size(1);
  PTERUN_CHECK(tokens <= keys, ErrorCode::InvalidArgument, op, ": query ", describe(q), " has ",
               tokens, " tokens, more than the ", keys, " keys of key ", describe(k));
  if (mask != nullptr) {
    PTERUN_CHECK(mask->dim() == 2 && mask->size(0) == tokens && mask->size(1) == keys,
                 ErrorCode::InvalidArgument, op, ": mask ", describe(*mask), " must be [", tokens,
                 ", ", keys, "] (queries, keys)");
    PTERUN_CHECK(mask->dtype() == q.dtype() || mask->dtype() == DType::Float32,
                 ErrorCode::InvalidArgument, op, ": mask dtype ", dtype_name(mask->dtype()),
                 " must be the query's (", dtype_name(q.dtype()), ") or float32");
  }
  if (out.numel() == 0) return;
  attention(ctx).sdpa(ctx, {q, k, v, mask, nullptr, keys - tokens, false, s,
                            static_cast<int32_t>(DeviceCheckOp::Attention), out, empty_rows_zero});
}

void slice_at_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& start,
                  int64_t length, Tensor& out) {
  const char* op = "aten::slice_copy.Tensor_out";
  PTERUN_CHECK(self.dim() >= 1, ErrorCode::InvalidArgument, op, ": self must have a dimension");
  const auto d = static_cast<size_t>(kernels::wrap_dim(dim, static_cast<int64_t>(self.dim()), op));
  check_position_tensor(start, "start", op);
  check_same_dtype(out, self, "out", op);
  PTERUN_CHECK(length >= 0 && length <= self.size(d), ErrorCode::IndexOutOfRange, op,
               ": a slice of ", length, " elements does not fit a dimension of ", self.size(d));
  kernels::Shape sizes;
  for (size_t i = 0; i < self.dim(); ++i) sizes.push_back(i == d ? length : self.size(i));
  kernels::resize_output(out, sizes.span(), op);
  attention(ctx).narrow_at(ctx, {self, d, start, out});
}

}  // namespace pterun::ops
