#pragma once

// The host half of the CUDA advanced-indexing kernels (index.Tensor,
// index_put): the CPU's checks and index plan (kernels/common/index_util.h)
// turned into one kernel parameter. Compiled by the host compiler
// (index_plan.cpp) so that CUDA sources need not include the CPU helpers.

#include <cstdint>
#include <span>

#include "pterun/core/tensor.h"

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

/// index.Tensor_out: the CPU kernel's checks, out resized to the result;
/// Error NotSupported for bool/uint8 mask indices (data-dependent shape).
AdvancedParams prepare_index_tensor(const Tensor& self, std::span<Tensor* const> indices,
                                    Tensor& out, const char* op);

/// index_put.out / index_put_: the CPU kernel's checks, target resized to
/// self's shape (unless in place); the same NotSupported for masks.
AdvancedParams prepare_index_put(const Tensor& self, std::span<Tensor* const> indices,
                                 const Tensor& values, Tensor& target, bool accumulate,
                                 bool in_place, const char* op);

}  // namespace pterun::kernels::cuda_ops
