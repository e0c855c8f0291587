#pragma once

// The shape family: views, concatenation and splitting, rearrangement
// (repeat, flip, roll, pad, tril/triu, pixel shuffle), slice/select
// scatter and et_copy_index. Each front-end computes a view of its input
// and moves bytes through its device's Mover.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/kernels/kernel.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

/// The data movement of the shape family, for the memory a device's tensors
/// live in.
struct Mover {
  /// cpu::strided_copy's contract: copies `sizes` elements of
  /// `element_size` bytes from src (strides in elements) to dst.
  void (*copy)(const KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides,
               const void* src, std::span<const int64_t> src_strides,
               std::span<const int64_t> sizes, size_t element_size);
  /// Scratch memory next to the tensors (KernelContext::scratch's contract).
  void* (*scratch)(KernelContext& ctx, size_t bytes);
  /// Writes the element_size-byte pattern `element` (host memory) into
  /// every element of `out`.
  void (*fill)(const KernelContext& ctx, Tensor& out, const void* element);
  /// out = src broadcast to out's shape, converted to out's (different) dtype.
  void (*convert)(const KernelContext& ctx, Tensor& out, const Tensor& src, const char* op);
  /// Zeroes the elements of out's last two dims above (`upper` false: tril)
  /// or below (`upper` true: triu) the diagonal `diagonal`, already clamped
  /// to [-rows - 1, cols + 1].
  void (*zero_triangle)(const KernelContext& ctx, Tensor& out, int64_t diagonal, bool upper);
};

/// The Mover of the device `ctx` runs on.
inline const Mover& mover(const KernelContext& ctx) {
  return *backend(ctx).shape;
}

// ---- front-ends (schema in each definition's comment) ----------------------

// shape.cpp
void view_copy_out(KernelContext& ctx, const Tensor& in, IntList size, Tensor& out);
void permute_copy_out(KernelContext& ctx, const Tensor& in, IntList dims, Tensor& out);
void expand_copy_out(KernelContext& ctx, const Tensor& in, IntList size, const Value& /*implicit*/,
                     Tensor& out);
void unsqueeze_copy_out(KernelContext& ctx, const Tensor& in, int64_t dim, Tensor& out);
void squeeze_copy_dim_out(KernelContext& ctx, const Tensor& in, int64_t dim, Tensor& out);
void squeeze_copy_dims_out(KernelContext& ctx, const Tensor& in, IntList dims, Tensor& out);
void squeeze_copy_out(KernelContext& ctx, const Tensor& in, Tensor& out);
void slice_copy_out(KernelContext& ctx, const Tensor& in, int64_t dim, std::optional<int64_t> start,
                    std::optional<int64_t> end, int64_t step, Tensor& out);
void select_copy_out(KernelContext& ctx, const Tensor& in, int64_t dim, int64_t index, Tensor& out);
void narrow_copy_out(KernelContext& ctx, const Tensor& in, int64_t dim, int64_t start,
                     int64_t length, Tensor& out);
void transpose_copy_out(KernelContext& ctx, const Tensor& in, int64_t dim0, int64_t dim1,
                        Tensor& out);
void t_copy_out(KernelContext& ctx, const Tensor& in, Tensor& out);
void as_strided_copy_out(KernelContext& ctx, const Tensor& in, IntList size, IntList stride,
                         std::optional<int64_t> storage_offset, Tensor& out);
void alias_copy_out(KernelContext& ctx, const Tensor& in, Tensor& out);
void detach_copy_out(KernelContext& ctx, const Tensor& in, Tensor& out);
void unfold_copy_out(KernelContext& ctx, const Tensor& in, int64_t dimension, int64_t size,
                     int64_t step, Tensor& out);
void diagonal_copy_out(KernelContext& ctx, const Tensor& in, int64_t offset, int64_t dim1,
                       int64_t dim2, Tensor& out);
// shape_concat.cpp
void cat_out(KernelContext& ctx, TensorList tensors, int64_t dim, Tensor& out);
void stack_out(KernelContext& ctx, TensorList tensors, int64_t dim, Tensor& out);
void split_with_sizes_copy_out(KernelContext& ctx, const Tensor& in, IntList sizes, int64_t dim,
                               TensorList outs);
void split_copy_out(KernelContext& ctx, const Tensor& in, int64_t split_size, int64_t dim,
                    TensorList outs);
void unbind_copy_out(KernelContext& ctx, const Tensor& in, int64_t dim, TensorList outs);
// shape_rearrange.cpp
void repeat_out(KernelContext& ctx, const Tensor& in, IntList repeats, Tensor& out);
void flip_out(KernelContext& ctx, const Tensor& in, IntList dims, Tensor& out);
void roll_out(KernelContext& ctx, const Tensor& in, IntList shifts, IntList dims, Tensor& out);
void tril_out(KernelContext& ctx, const Tensor& in, int64_t diagonal, Tensor& out);
void triu_out(KernelContext& ctx, const Tensor& in, int64_t diagonal, Tensor& out);
void constant_pad_nd_out(KernelContext& ctx, const Tensor& in, IntList pad, Scalar value,
                         Tensor& out);
void pixel_shuffle_out(KernelContext& ctx, const Tensor& in, int64_t upscale_factor, Tensor& out);
void pixel_unshuffle_out(KernelContext& ctx, const Tensor& in, int64_t downscale_factor,
                         Tensor& out);
// shape_scatter.cpp
void slice_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& src, int64_t dim,
                       std::optional<int64_t> start, std::optional<int64_t> end, int64_t step,
                       Tensor& out);
void select_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& src, int64_t dim,
                        int64_t index, Tensor& out);
void et_copy_index(KernelContext& ctx, Tensor& copy_to, const Tensor& copy_from, int64_t index);

}  // namespace pterun::ops
