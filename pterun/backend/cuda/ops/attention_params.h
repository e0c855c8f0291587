#pragma once

// What the CUDA attention kernels' parameter structs (attention.cu,
// attention_mma.cu, attention_tiled.cu) take alike from ops::SdpaArgs.

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/core/dtype.h"
#include "pterun/ops/attention.h"

namespace pterun::kernels::cuda_ops {

/// Fills p's q, k, v, out and mask (as p's pointer types), the position
/// (given, or the tensor that holds it and its width, with the method's
/// device-check word to report a bad one), the strides (copy_sdpa_strides),
/// causal, empty_rows_zero, scale and the op named in checks.
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
  ops::copy_sdpa_strides(a, p);
  p.causal = a.causal;
  p.empty_rows_zero = a.empty_rows_zero;
  p.scale = a.scale;
  if (p.start_at != nullptr) p.check = cuda::device_check(ctx);
  p.check_op = a.check_op;
}

}  // namespace pterun::kernels::cuda_ops
