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
/// bytes. Shared by the CPU copy and the CUDA one (backend/cuda).
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

/// Copies a `sizes`-shaped array of `element_size`-byte elements between
/// two layouts given by strides in elements (any sign; 0 broadcasts a
/// source dimension). Walks the destination in its memory order and merges
/// contiguous runs, so layout conversions, permutes, slices, expands and
/// plain copies all reduce to the fewest memcpy calls.
void strided_copy(const KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides,
                  const void* src, std::span<const int64_t> src_strides,
                  std::span<const int64_t> sizes, size_t element_size);

/// Single-threaded overload for callers without a context.
void strided_copy(void* dst, std::span<const int64_t> dst_strides, const void* src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                  size_t element_size);

}  // namespace pterun::kernels
