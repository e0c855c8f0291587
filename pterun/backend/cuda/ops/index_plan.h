#pragma once

// The host half of the CUDA advanced-indexing kernels (index.Tensor,
// index_put): the front-end's index plan (kernels/common/index_util.h)
// turned into one kernel parameter. Compiled by the host compiler
// (index_plan.cpp) so that CUDA sources need not include the plan's
// header.

#include <cstdint>
#include <span>

#include "pterun/core/tensor.h"

namespace pterun::kernels {
struct IndexPlan;  // kernels/common/index_util.h
}  // namespace pterun::kernels

namespace pterun::kernels::cuda_ops {

/// self[indices] with integer indices, as one kernel parameter: the
/// result's dims, and for each index source its data and its strides over
/// the broadcast index shape.
struct AdvancedParams {
  int rank = 0;                   // result rank
  int64_t numel = 0;              // result elements
  int64_t sizes[kMaxRank] = {};   // result sizes
  int64_t target[kMaxRank] = {};  // self-shaped tensor's strides per result dim (0: index dim)
  int64_t other[kMaxRank] = {};   // out's (index) or values' (index_put) strides per result dim
  int index_dim[kMaxRank] = {};   // position in the index shape, or -1 for a self dim
  int index_rank = 0;
  int num_sources = 0;
  const void* data[kMaxRank] = {};
  bool is64[kMaxRank] = {};
  int64_t size[kMaxRank] = {};    // size of the indexed dim of self
  int64_t stride[kMaxRank] = {};  // the self-shaped tensor's stride along it
  int64_t source_strides[kMaxRank][kMaxRank] = {};
  int parts = 1;  // units per element (set by the launcher)
};

/// The parameter of `plan` over a tensor of self's shape with
/// `target_strides` (self for index.Tensor, the target for index_put) and
/// the other operand's strides per result dim (out's, or values').
AdvancedParams advanced_params(const IndexPlan& plan, const Tensor& self,
                               std::span<const int64_t> target_strides,
                               std::span<const int64_t> other_strides);

}  // namespace pterun::kernels::cuda_ops
