#pragma once

// KV-cache operators of ExecuTorch's LLM exports (llama::*): the new
// tokens' keys or values written into a cache tensor in place. Caches and
// values are [batch, sequence, heads, head_dim].

#include <cstdint>

#include "pterun/core/tensor.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

// llama::update_cache.out(Tensor value, Tensor(a!) cache, SymInt start_pos, *, Tensor(b!) out)
//   -> Tensor(b!)
void update_cache_out(KernelContext& ctx, const Tensor& value, Tensor& cache, int64_t start_pos,
                      Tensor& out);

}  // namespace pterun::ops
