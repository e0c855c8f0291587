#pragma once

// Attention on the tensor cores (attention_mma.cu): the path of
// ops::AttentionBackend::sdpa for prefill-sized float16 and bfloat16
// attentions; attention.cu's kernel takes the rest.

#include "pterun/kernels/kernel.h"
#include "pterun/ops/attention.h"

namespace pterun::kernels::cuda_ops {

/// Runs `a` with the tensor-core kernel and returns true when it suits it:
/// float16 or bfloat16, head_dim 16, 32, 64 or 128, at least 16 queries, q,
/// k, v and out walked in pairs of elements (even strides, 4-byte aligned
/// data), batch and heads within a grid's limits, a device of compute
/// capability 8.0 or later. False (nothing launched) otherwise. `op` names
/// the operator in errors.
bool sdpa_tensor_cores(KernelContext& ctx, const ops::SdpaArgs& a, const char* op);

}  // namespace pterun::kernels::cuda_ops
