#pragma once

// The CUDA counterpart of ops::convert_copy (pterun/ops/shape_copy.h),
// implemented in copy.cu: the copy table's convert_copy, and the creation
// table's fill.Tensor_out.

#include "pterun/core/tensor.h"
#include "pterun/kernels/kernel.h"

namespace pterun::cuda {

/// out = src broadcast to out's shape, converted to out's dtype (the CPU
/// engine's conversion rules), in out's dim order; both on the device. A
/// plain strided copy (or one cudaMemcpyAsync) when the dtypes agree.
/// Error NotSupported naming `op` for complex or other non-real dtypes,
/// InvalidArgument when src does not broadcast to out.
void convert_copy(const kernels::KernelContext& ctx, Tensor& out, const Tensor& src,
                  const char* op);

}  // namespace pterun::cuda
