#pragma once

// Float32 attention of many queries on CUDA cores (attention_tiled.cu): the
// path of ops::AttentionBackend::sdpa for float32 prefill-sized attentions;
// attention.cu's kernel takes the rest.

#include "pterun/kernels/kernel.h"
#include "pterun/ops/attention.h"

namespace pterun::kernels::cuda_ops {

/// Runs `a` with the tiled kernel and returns true when it suits it:
/// float32 with a float32 mask or none, head_dim 16, 32, 64 or 128, at
/// least 64 queries (16 where the keys' capacity is at most 256), batch
/// and heads within a grid's limits, its shared
/// memory (116 KiB at head_dim 128) within the device's. False
/// (nothing launched) otherwise. `op` names the operator in errors.
bool sdpa_tiled_f32(KernelContext& ctx, const ops::SdpaArgs& a, const char* op);

}  // namespace pterun::kernels::cuda_ops
