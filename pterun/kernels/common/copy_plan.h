#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "pterun/core/tensor.h"
#include "pterun/kernels/kernel.h"

namespace pterun::kernels {

/// A strided copy reduced to its essentials: dimensions ordered by
/// decreasing |destination stride| (outermost first), size-1 dimensions
/// dropped and neighbours merged where both sides stay regular. Strides in
/// bytes. Shared by the CPU copy (backend/cpu/engine/strided_copy.h) and
/// the CUDA one (backend/cuda/strided_copy.h).
struct CopyPlan {
  size_t rank = 0;
  std::array<int64_t, kMaxRank> sizes{};
  std::array<int64_t, kMaxRank> dst{};  // strides in bytes
  std::array<int64_t, kMaxRank> src{};
};

/// The plan of a copy of a `sizes`-shaped array of `element_size`-byte
/// elements; Error InvalidArgument when the ranks differ or exceed kMaxRank.
CopyPlan make_copy_plan(std::span<const int64_t> dst_strides, std::span<const int64_t> src_strides,
                        std::span<const int64_t> sizes, size_t element_size);

/// A backend's strided copy, the one contract of cpu::strided_copy (host
/// memory) and cuda::device_strided_copy (device memory, on the context's
/// stream): copies a `sizes`-shaped array of `element_size`-byte elements
/// between two layouts given by strides in elements (any sign; 0
/// broadcasts a source dimension), walking the destination in its memory
/// order with dimensions merged as make_copy_plan merges them, so layout
/// conversions, permutes, slices, expands and plain copies take the fewest
/// block copies. Nothing happens for an empty shape.
using StridedCopyFn = void(const KernelContext& ctx, void* dst,
                           std::span<const int64_t> dst_strides, const void* src,
                           std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                           size_t element_size);

/// True when some extent of `sizes` is 0: the copy has nothing to move.
inline bool has_zero_extent(std::span<const int64_t> sizes) {
  for (int64_t s : sizes) {
    if (s == 0) return true;
  }
  return false;
}

}  // namespace pterun::kernels
