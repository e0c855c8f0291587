#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "pterun/core/tensor.h"

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

}  // namespace pterun::kernels
