#pragma once

// Device-side strided copy, for CUDA kernels and for the executor (dim-order
// conversion of inputs on the GPU).

#include <cstddef>
#include <cstdint>
#include <span>

#include "pterun/kernels/kernel.h"

namespace pterun::cuda {

/// Copies a `sizes`-shaped array of `element_size`-byte elements between two
/// device layouts given by strides in elements (any sign; 0 broadcasts a
/// source dimension), on the context's stream. Same contract as
/// cpu::strided_copy: dimensions are coalesced and walked in the
/// destination's memory order; dense copies become one cudaMemcpyAsync,
/// transposes go through shared-memory tiles. Nothing is launched for an
/// empty shape.
void device_strided_copy(const kernels::KernelContext& ctx, void* dst,
                         std::span<const int64_t> dst_strides, const void* src,
                         std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                         size_t element_size);

}  // namespace pterun::cuda
