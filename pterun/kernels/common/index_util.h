#pragma once

// Advanced indexing (`self[indices]` with a list of optional index tensors)
// as torch defines it, planned once and shared by index.Tensor and
// index_put: int64/int32 index tensors broadcast together; a bool/uint8
// mask stands for the coordinates of its true elements; None keeps a dim
// whole. When the indexed dims are adjacent the broadcast index dims take
// their place in the result, otherwise they come first.

#include <array>
#include <cstdint>
#include <span>

#include "pterun/core/tensor.h"
#include "pterun/kernels/common/reduce_util.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::kernels {

/// An int64/int32 index tensor (or mask coordinates) seen as a broadcast
/// operand of the index shape.
struct IndexSource {
  const Tensor* tensor = nullptr;  // int64/int32 index tensor, or the mask
  int64_t mask_dim = -1;           // >= 0: coordinate `mask_dim` of the mask's true elements
  int64_t mask_count = 0;          // true elements of the mask
  int64_t coords_at = 0;           // where the mask's coordinates start in scratch (elements)
  size_t self_dim = 0;             // the dim of self it indexes
};

struct IndexPlan {
  size_t num_sources = 0;
  std::array<IndexSource, kMaxRank> sources{};
  Shape index_shape;  // broadcast shape of all sources
  int64_t index_numel = 1;
  DimMask indexed;       // dims of self with an index
  size_t insert_at = 0;  // result position of the index dims
  Shape result;          // shape of self[indices]
  /// For each result dim: the self dim it walks, or -1 for an index dim.
  std::array<int, kMaxRank> result_self_dim{};
  /// For each result dim that is an index dim: its position in index_shape.
  std::array<int, kMaxRank> result_index_dim{};
  int64_t mask_coords = 0;  // int64 scratch elements the masks need

  /// Scratch bytes for run_index_plan: mask coordinates plus one offset per
  /// index position.
  size_t scratch_bytes() const {
    return sizeof(int64_t) * static_cast<size_t>(mask_coords + index_numel);
  }
};

/// Counts a mask index's true elements (or refuses the mask, raising).
using MaskCounter = int64_t (*)(const Tensor& mask, const char* op);

/// Checks `indices` against `self` and plans the result, counting each
/// mask's true elements with `count_mask`. Errors: InvalidType for an index
/// dtype other than int64/int32/bool/uint8, IndexOutOfRange for too many
/// indices or a mask that does not match self's shape, InvalidArgument for
/// index shapes that do not broadcast.
IndexPlan make_index_plan(const Tensor& self, std::span<Tensor* const> indices,
                          MaskCounter count_mask, const char* op);

/// The number of true elements of a bool/uint8 mask in host memory.
int64_t count_true(const Tensor& mask);

/// Fills `scratch` (scratch_bytes() of it) and returns, for each index
/// position (row-major over index_shape), the element offset it selects
/// in a tensor of self's shape with `strides`. Negative indices wrap; an
/// index out of range is Error IndexOutOfRange.
const int64_t* run_index_plan(const IndexPlan& plan, const Tensor& self,
                              std::span<const int64_t> strides, void* scratch, const char* op);

/// Index `i` read from an int64 or int32 tensor's element `offset`.
inline int64_t read_index(const Tensor& t, int64_t offset) {
  return t.dtype() == DType::Int64 ? t.data_as<const int64_t>()[offset]
                                   : t.data_as<const int32_t>()[offset];
}

}  // namespace pterun::kernels
