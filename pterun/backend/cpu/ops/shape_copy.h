#pragma once

// Helpers shared by the shape, copy and creation kernels. Every op that
// moves bytes is expressed as one strided copy from a view of its input
// (sizes, strides in elements, an offset) into its output; dtype changes go
// through the elementwise engine.

#include <cstdint>
#include <optional>
#include <span>

#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/kernels/kernel.h"
#include "pterun/kernels/registry.h"

namespace pterun::cpu {

/// A strided view of a tensor's elements: the shape it presents, the
/// strides (in elements) and the element offset where it starts.
struct View {
  kernels::Shape sizes;
  kernels::Shape strides;
  int64_t offset = 0;

  void push_back(int64_t size, int64_t stride) {
    sizes.push_back(size);
    strides.push_back(stride);
  }
};

/// The data movement a shape kernel needs, for the memory its tensors live
/// in. The shape kernels (shape_kernels.h) are written once over a Mover:
/// the CPU backend passes cpu_mover(), the CUDA backend its own, so both
/// share the argument checks, view arithmetic and output resizing.
struct Mover {
  /// kernels::strided_copy's contract.
  void (*copy)(const kernels::KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides,
               const void* src, std::span<const int64_t> src_strides,
               std::span<const int64_t> sizes, size_t element_size);
  /// Scratch memory next to the tensors (KernelContext::scratch's contract).
  void* (*scratch)(kernels::KernelContext& ctx, size_t bytes);
  /// Writes the element_size-byte pattern `element` (host memory) into
  /// every element of `out`.
  void (*fill)(const kernels::KernelContext& ctx, Tensor& out, const void* element);
  /// out = src broadcast to out's shape, converted to out's (different) dtype.
  void (*convert)(const kernels::KernelContext& ctx, Tensor& out, const Tensor& src,
                  const char* op);
  /// Zeroes the elements of out's last two dims above (`upper` false: tril)
  /// or below (`upper` true: triu) the diagonal `diagonal`, already clamped
  /// to [-rows - 1, cols + 1].
  void (*zero_triangle)(const kernels::KernelContext& ctx, Tensor& out, int64_t diagonal,
                        bool upper);
};

/// The CPU backend's movers.
const Mover& cpu_mover();

/// Copies `n` consecutive `element_size`-byte elements from src to dst
/// with `m`.
void copy_dense(const Mover& m, const kernels::KernelContext& ctx, void* dst, const void* src,
                int64_t n, size_t element_size);

/// The view that presents `t` as it is.
View view_of(const Tensor& t);

/// Error InvalidArgument unless `in` and `out` have the same dtype.
void check_same_dtype(const Tensor& in, const Tensor& out, const char* op);

/// Error InvalidArgument unless `t` has rank `rank`.
void check_rank(const Tensor& t, size_t rank, const char* what, const char* op);

/// Resizes `out` to the view's shape and copies the view of `in` into it
/// (same dtype; out keeps its dim order).
void copy_view_into(const kernels::KernelContext& ctx, Tensor& out, const Tensor& in,
                    const View& view, const char* op, const Mover& m = cpu_mover());

/// Copies all of `src` into the region of a tensor starting at `dst`
/// (strides `dst_strides` over src's shape, elements of `dst_dtype`),
/// converting the dtype through scratch memory when it differs.
void copy_into_region(kernels::KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides,
                      DType dst_dtype, const Tensor& src, const char* op,
                      const Mover& m = cpu_mover());

/// out = src broadcast to out's shape, converted to out's dtype, in out's
/// dim order. A plain strided copy when the dtypes agree.
void convert_copy(const kernels::KernelContext& ctx, Tensor& out, const Tensor& src, const char* op,
                  const Mover& m = cpu_mover());

/// Copies `in` into `out` (same numel, same dtype) in logical row-major
/// order: the data movement of a reshape, for any dim orders.
void reshape_copy(kernels::KernelContext& ctx, Tensor& out, const Tensor& in,
                  const Mover& m = cpu_mover());

/// Row-major (contiguous) strides for `sizes`; zero sizes count as 1.
kernels::Shape contiguous_strides(std::span<const int64_t> sizes);

/// True when t's elements lie in logical row-major order (dim order may
/// differ only in size-1 dimensions).
bool is_row_major(const Tensor& t);

/// Writes every element of `out` as `value` converted to out's dtype.
/// Error InvalidArgument when an integer output cannot hold the value.
void fill_scalar(const kernels::KernelContext& ctx, Tensor& out, const Scalar& value,
                 const char* op, const Mover& m = cpu_mover());

/// Writes the `element_size`-byte pattern `element` into every element of
/// `out`.
void fill_bytes(const kernels::KernelContext& ctx, Tensor& out, const void* element);

/// Checks an optional MemoryFormat argument (0 contiguous, 1 preserve,
/// 2 channels-last, 3 channels-last 3d) against out's dim order.
void check_memory_format(std::optional<int64_t> memory_format, const Tensor& out, const char* op);

/// Checks an optional dim_order argument: it must equal out's dim order.
void check_dim_order_arg(std::optional<std::span<const int64_t>> dim_order, const Tensor& out,
                         const char* op);

}  // namespace pterun::cpu
