// Front-ends of the KV-cache operators (kv_cache.h). They only move bytes,
// so they run on every backend through its Mover (shape.h).

#include "pterun/ops/kv_cache.h"

#include <algorithm>
#include <array>

#include "pterun/core/error.h"
#include "pterun/ops/checks.h"
#include "pterun/ops/shape.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::ops {
namespace {

/// Unless `value` fits `cache`: both rank 4, the same dtype, the same batch,
/// heads and head_dim, and no more tokens than the cache holds.
void check_cache_args(const Tensor& value, const Tensor& cache, const char* op) {
  check_rank(cache, 4, "a cache [batch, seq, heads, head_dim]", op);
  check_rank(value, 4, "a value [batch, seq, heads, head_dim]", op);
  check_same_dtype(value, cache, "value", op);
  PTERUN_CHECK(value.size(0) == cache.size(0) && value.size(2) == cache.size(2) &&
                   value.size(3) == cache.size(3),
               ErrorCode::InvalidArgument, op, ": value ", describe(value),
               " does not match cache ", describe(cache), " in batch, heads or head_dim");
  PTERUN_CHECK(value.size(1) <= cache.size(1), ErrorCode::InvalidArgument, op, ": ", value.size(1),
               " tokens do not fit a cache of ", cache.size(1));
}

/// Copies tokens [from, from + count) of `value` into positions
/// [at, at + count) of `cache`.
void copy_tokens(KernelContext& ctx, const Mover& m, const Tensor& value, int64_t from,
                 Tensor& cache, int64_t at, int64_t count) {
  if (count == 0 || value.numel() == 0) return;
  const std::array<int64_t, 4> sizes = {value.size(0), count, value.size(2), value.size(3)};
  m.copy(ctx, element_at(cache, at * cache.stride(1)), cache.strides(),
         element_at(value, from * value.stride(1)), value.strides(),
         std::span<const int64_t>(sizes), value.element_size());
}

}  // namespace

// The tokens go to positions start_pos, start_pos + 1, ... of the cache,
// wrapping to position 0 past its end (a ring buffer, as ExecuTorch's
// kernel does). `out` is a placeholder the kernel does not write.
void update_cache_out(KernelContext& ctx, const Tensor& value, Tensor& cache, int64_t start_pos,
                      Tensor& /*out*/) {
  const char* op = "llama::update_cache.out";
  check_cache_args(value, cache, op);
  PTERUN_CHECK(start_pos >= 0, ErrorCode::IndexOutOfRange, op, ": start_pos ", start_pos,
               " is negative");
  const int64_t capacity = cache.size(1), tokens = value.size(1);
  if (capacity == 0) return;
  const Mover& m = mover(ctx);
  const int64_t at = start_pos % capacity;
  const int64_t first = std::min(tokens, capacity - at);
  copy_tokens(ctx, m, value, 0, cache, at, first);
  copy_tokens(ctx, m, value, first, cache, 0, tokens - first);
}

}  // namespace pterun::ops
