#pragma once

// The host's strided copy: the CPU backend's, and the executor's, the
// Python module's and the CLI's for host buffers.

#include <cstddef>
#include <cstdint>
#include <span>

#include "pterun/kernels/kernel.h"

namespace pterun::cpu {

/// Copies a `sizes`-shaped array of `element_size`-byte elements between
/// two layouts given by strides in elements (any sign; 0 broadcasts a
/// source dimension). Walks the destination in its memory order and merges
/// contiguous runs, so layout conversions, permutes, slices, expands and
/// plain copies all reduce to the fewest memcpy calls.
void strided_copy(const kernels::KernelContext& ctx, void* dst,
                  std::span<const int64_t> dst_strides, const void* src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                  size_t element_size);

/// Single-threaded overload for callers without a context.
void strided_copy(void* dst, std::span<const int64_t> dst_strides, const void* src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                  size_t element_size);

}  // namespace pterun::cpu
