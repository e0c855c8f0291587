#pragma once

// The host's strided copy: the CPU backend's, and the executor's, the
// Python module's and the CLI's for host buffers.

#include <cstddef>
#include <cstdint>
#include <span>

#include "pterun/kernels/common/copy_plan.h"

namespace pterun::cpu {

/// kernels::StridedCopyFn on host memory, contiguous runs as memcpy calls,
/// threaded on the context's pool for large copies.
kernels::StridedCopyFn strided_copy;

/// Single-threaded overload for callers without a context.
void strided_copy(void* dst, std::span<const int64_t> dst_strides, const void* src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                  size_t element_size);

}  // namespace pterun::cpu
