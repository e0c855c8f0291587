#pragma once

// Device-side strided copy, for CUDA kernels and for the executor (dim-order
// conversion of inputs on the GPU).

#include "pterun/kernels/common/copy_plan.h"

namespace pterun::cuda {

/// kernels::StridedCopyFn on device memory, on the context's stream: dense
/// copies become one cudaMemcpyAsync, transposes go through shared-memory
/// tiles.
kernels::StridedCopyFn device_strided_copy;

}  // namespace pterun::cuda
