#pragma once

// How the xnnpack:: front-ends (xnnpack.h) see their tensors: in memory
// order, as XNNPACK does. Internal to ops/.

#include <cstdint>
#include <span>

#include "pterun/core/tensor.h"
#include "pterun/kernels/kernel.h"

namespace pterun::ops::xnn {

/// `t` with its dims in memory order (its sizes permuted by its dim order),
/// contiguous, over the same bytes; a 0-d tensor is [1].
Tensor memory_view(const Tensor& t);

/// Resizes `t` so that its dims in memory order are `dims` (through the
/// inverse of its dim order) and returns its memory-order view. Error
/// InvalidArgument (naming `op`) for another rank, or a static or bounded
/// tensor that cannot take the shape.
Tensor resize_memory(Tensor& t, std::span<const int64_t> dims, const char* op);

/// Error InvalidArgument unless `t` is float32, float16 or bfloat16 and,
/// when `like` is given, of like's dtype.
void check_float(const Tensor& t, const char* what, const char* op, const Tensor* like = nullptr);

/// Clamps `out` in place to [lo, hi], a node's fused output clamp; nothing
/// when both bounds are infinite.
void clamp_output(kernels::KernelContext& ctx, Tensor& out, double lo, double hi, const char* op);

/// Error InvalidArgument unless `list` has `n` entries, each in min..INT32_MAX
/// (XNNPACK's parameters are 32-bit, and sizes computed from them stay far
/// from overflowing).
void check_list(std::span<const int64_t> list, size_t n, int64_t min, const char* what,
                const char* op);

}  // namespace pterun::ops::xnn
