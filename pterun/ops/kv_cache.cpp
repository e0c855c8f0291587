// Front-ends of the KV-cache operators (kv_cache.h). They only move bytes,
// so they run on every backend through its Mover (shape.h).

#include "pterun/ops/kv_cache.h"

#include <array>

#include "pterun/core/error.h"
#include "pterun/ops/checks.h"
#include "pterun/ops/shape.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::ops {

void check_cache_args(const Tensor& value, const Tensor& cache, const char* op, bool tokens_fit) {
  check_rank(cache, 4, "a cache [batch, seq, heads, head_dim]", op);
  check_rank(value, 4, "a value [batch, seq, heads, head_dim]", op);
  check_same_dtype(value, cache, "value", op);
  PTERUN_CHECK(value.size(0) == cache.size(0) && value.size(2) == cache.size(2) &&
                   value.size(3) == cache.size(3),
               ErrorCode::InvalidArgument, op, ": value ", describe(value),
               " does not match cache ", describe(cache), " in batch, heads or head_dim");
  PTERUN_CHECK(!tokens_fit || value.size(1) <= cache.size(1), ErrorCode::InvalidArgument, op, ": ",
               value.size(1), " tokens do not fit a cache of ", cache.size(1));
}

void check_cache_positions(int64_t start_pos, int64_t tokens, int64_t capacity,
                           kernels::DeviceCheckOp check_op) {
  // start_pos + tokens cannot overflow: both are checked against capacity first.
  if (start_pos < 0 || start_pos > capacity || tokens > capacity - start_pos) {
    kernels::throw_device_check(kernels::DeviceCheckKind::CachePositions, check_op, start_pos,
                                capacity, tokens);
  }
}

void write_cache_tokens(KernelContext& ctx, const Tensor& value, Tensor& cache, int64_t start_pos,
                        const char* op, kernels::DeviceCheckOp check_op) {
  check_cache_args(value, cache, op, true);
  check_cache_positions(start_pos, value.size(1), cache.size(1), check_op);
  if (value.numel() == 0) return;
  const std::array<int64_t, 4> sizes = {value.size(0), value.size(1), value.size(2), value.size(3)};
  mover(ctx).copy(ctx, element_at(cache, start_pos * cache.stride(1)), cache.strides(),
                  value.data(), value.strides(), std::span<const int64_t>(sizes),
                  value.element_size());
}

// The tokens go to positions start_pos .. start_pos + S - 1, which must lie
// inside the cache (ExecuTorch's kernel checks the same and never wraps).
// `out` is a placeholder the kernel does not write.
void update_cache_out(KernelContext& ctx, const Tensor& value, Tensor& cache, int64_t start_pos,
                      Tensor& /*out*/) {
  write_cache_tokens(ctx, value, cache, start_pos, "llama::update_cache.out",
                     kernels::DeviceCheckOp::UpdateCache);
}

}  // namespace pterun::ops
