#pragma once

// Helpers shared by the shape, copy and creation front-ends. Every op that
// moves bytes is expressed as strided copies from a view of its input
// (sizes, strides in elements, an offset) into its output, done by the
// device's Mover (shape.h); dtype changes go through Mover::convert.

#include <cstdint>
#include <optional>
#include <span>

#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/kernels/kernel.h"
#include "pterun/ops/checks.h"
#include "pterun/ops/shape.h"

namespace pterun::ops {

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

/// Copies `n` consecutive `element_size`-byte elements from src to dst
/// with `m`.
void copy_dense(const Mover& m, const kernels::KernelContext& ctx, void* dst, const void* src,
                int64_t n, size_t element_size);

/// The view that presents `t` as it is.
View view_of(const Tensor& t);

/// Resizes `out` to the view's shape and copies the view of `in` into it
/// (same dtype; out keeps its dim order).
void copy_view_into(const kernels::KernelContext& ctx, Tensor& out, const Tensor& in,
                    const View& view, const char* op, const Mover& m);

/// Copies all of `src` into the region of a tensor starting at `dst`
/// (strides `dst_strides` over src's shape, elements of `dst_dtype`),
/// converting the dtype through scratch memory when it differs.
void copy_into_region(kernels::KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides,
                      DType dst_dtype, const Tensor& src, const char* op, const Mover& m);

/// Error InvalidArgument naming `op` unless `src` broadcasts to `sizes`
/// (NumPy's rule, src's dimensions aligned at the end).
void check_broadcasts_to(const Tensor& src, std::span<const int64_t> sizes, const char* op);

/// out = src broadcast to out's shape, converted to out's dtype, in out's
/// dim order. A plain strided copy when the dtypes agree.
void convert_copy(const kernels::KernelContext& ctx, Tensor& out, const Tensor& src, const char* op,
                  const Mover& m);

/// Copies `in` into `out` (same numel, same dtype) in logical row-major
/// order: the data movement of a reshape, for any dim orders.
void reshape_copy(kernels::KernelContext& ctx, Tensor& out, const Tensor& in, const Mover& m);

/// Row-major (contiguous) strides for `sizes`; zero sizes count as 1.
inline kernels::Shape contiguous_strides(std::span<const int64_t> sizes) {
  kernels::Shape s;
  s.rank = sizes.size();
  pterun::contiguous_strides(sizes, std::span<int64_t>(s.dims.data(), s.rank));
  return s;
}

/// The address of element `offset` (in elements) of `t`'s data.
inline char* element_at(const Tensor& t, int64_t offset) {
  return static_cast<char*>(t.data()) + offset * static_cast<int64_t>(t.element_size());
}

/// `v` (sizes or strides) without entry `skip`.
inline kernels::Shape without(std::span<const int64_t> v, size_t skip) {
  kernels::Shape s;
  for (size_t d = 0; d < v.size(); ++d) {
    if (d != skip) s.push_back(v[d]);
  }
  return s;
}

/// True when t's elements lie in logical row-major order (dim order may
/// differ only in size-1 dimensions).
bool is_row_major(const Tensor& t);

/// Writes every element of `out` as `value` converted to out's dtype.
/// Error InvalidArgument when an integer output cannot hold the value.
void fill_scalar(const kernels::KernelContext& ctx, Tensor& out, const Scalar& value,
                 const char* op, const Mover& m);

/// Checks an optional MemoryFormat argument (0 contiguous, 1 preserve,
/// 2 channels-last, 3 channels-last 3d) against out's dim order.
void check_memory_format(std::optional<int64_t> memory_format, const Tensor& out, const char* op);

/// Checks an optional dim_order argument: it must equal out's dim order.
void check_dim_order_arg(std::optional<std::span<const int64_t>> dim_order, const Tensor& out,
                         const char* op);

}  // namespace pterun::ops
