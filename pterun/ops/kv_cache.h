#pragma once

// KV-cache operators of ExecuTorch's LLM exports (llama::*): the new
// tokens' keys or values written into a cache tensor in place. Caches and
// values are [batch, sequence, heads, head_dim]. The operators that attend
// over a cache, or write it at positions held in tensors, are the attention
// family's (attention.h).

#include <cstdint>

#include "pterun/core/tensor.h"
#include "pterun/kernels/common/device_check.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

// llama::update_cache.out(Tensor value, Tensor(a!) cache, SymInt start_pos, *, Tensor(b!) out)
//   -> Tensor(b!)
void update_cache_out(KernelContext& ctx, const Tensor& value, Tensor& cache, int64_t start_pos,
                      Tensor& out);

/// Error InvalidArgument (naming `op`) unless `value` fits `cache`: both
/// rank 4, one dtype, the same batch, heads and head_dim; with
/// `tokens_fit`, no more tokens than the cache holds.
void check_cache_args(const Tensor& value, const Tensor& cache, const char* op, bool tokens_fit);

/// Error IndexOutOfRange (kernels::device_check_message's words for
/// `check_op`) unless tokens [start_pos, start_pos + tokens) lie inside a
/// cache of `capacity` positions.
void check_cache_positions(int64_t start_pos, int64_t tokens, int64_t capacity,
                           kernels::DeviceCheckOp check_op);

/// Copies value's tokens into cache positions [start_pos, start_pos + S)
/// through the device's Mover, after check_cache_args and
/// check_cache_positions.
void write_cache_tokens(KernelContext& ctx, const Tensor& value, Tensor& cache, int64_t start_pos,
                        const char* op, kernels::DeviceCheckOp check_op);

}  // namespace pterun::ops
