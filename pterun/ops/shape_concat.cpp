// Joining and splitting along a dimension: cat, stack, split, unbind. Each
// piece is one strided copy between an input and a region of the output
// (or the other way round).

#include <algorithm>

#include "pterun/core/error.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/ops/shape.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::ops {
namespace {

using kernels::Shape;
using kernels::wrap_dim;

/// A 1-D tensor with no elements: torch.cat skips these whatever the rank
/// of the others (legacy behaviour kept by ExecuTorch).
bool is_legacy_empty(const Tensor& t) {
  return t.dim() == 1 && t.numel() == 0;
}

}  // namespace

// cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out). Inputs of other
// dtypes are converted to out's.
void cat_out(KernelContext& ctx, TensorList tensors, int64_t dim_arg, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::cat.out";
  PTERUN_CHECK(!tensors.empty(), ErrorCode::InvalidArgument, op,
               ": expected a non-empty list of tensors");
  const Tensor* ref = nullptr;
  for (const Tensor* t : tensors) {
    kernels::check_can_cast(t->dtype(), out.dtype(), op);
    if (ref == nullptr && !is_legacy_empty(*t)) ref = t;
  }
  if (ref == nullptr) {  // only legacy empty tensors
    const int64_t zero[1] = {0};
    kernels::resize_output(out, zero, op);
    return;
  }
  PTERUN_CHECK(ref->dim() > 0, ErrorCode::InvalidArgument, op,
               ": a 0-dimensional tensor cannot be concatenated");
  const int64_t dim = wrap_dim(dim_arg, int64_t(ref->dim()), op);
  Shape size;
  for (size_t d = 0; d < ref->dim(); ++d) size.push_back(d == size_t(dim) ? 0 : ref->size(d));
  for (const Tensor* t : tensors) {
    if (is_legacy_empty(*t)) continue;
    PTERUN_CHECK(t->dim() == ref->dim(), ErrorCode::InvalidArgument, op, ": ", describe(*t),
                 " does not have the rank of ", describe(*ref));
    for (size_t d = 0; d < ref->dim(); ++d) {
      PTERUN_CHECK(d == size_t(dim) || t->size(d) == ref->size(d), ErrorCode::InvalidArgument, op,
                   ": ", describe(*t), " and ", describe(*ref), " differ in dimension ", d);
    }
    size.dims[dim] += t->size(dim);
  }
  kernels::resize_output(out, size.span(), op);
  int64_t at = 0;
  for (const Tensor* t : tensors) {
    if (is_legacy_empty(*t)) continue;
    if (t->numel() > 0) {
      copy_into_region(ctx, element_at(out, at * out.stride(dim)), out.strides(), out.dtype(), *t,
                       op, m);
    }
    at += t->size(dim);
  }
}

// stack.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out): cat along a new dimension.
void stack_out(KernelContext& ctx, TensorList tensors, int64_t dim_arg, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::stack.out";
  PTERUN_CHECK(!tensors.empty(), ErrorCode::InvalidArgument, op,
               ": expected a non-empty list of tensors");
  const Tensor& ref = *tensors[0];
  const int64_t dim = wrap_dim(dim_arg, int64_t(ref.dim()) + 1, op);
  for (const Tensor* t : tensors) {
    kernels::check_can_cast(t->dtype(), out.dtype(), op);
    bool same = t->dim() == ref.dim();
    for (size_t d = 0; same && d < ref.dim(); ++d) same = t->size(d) == ref.size(d);
    PTERUN_CHECK(same, ErrorCode::InvalidArgument, op, ": expects tensors of one shape, got ",
                 describe(*t), " and ", describe(ref));
  }
  Shape size;
  for (size_t d = 0; d <= ref.dim(); ++d) {
    if (int64_t(d) == dim) size.push_back(int64_t(tensors.size()));
    if (d < ref.dim()) size.push_back(ref.size(d));
  }
  kernels::resize_output(out, size.span(), op);
  Shape strides;  // out's strides without the new dimension
  for (size_t d = 0; d < out.dim(); ++d) {
    if (int64_t(d) != dim) strides.push_back(out.stride(d));
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i]->numel() == 0) continue;
    copy_into_region(ctx, element_at(out, int64_t(i) * out.stride(dim)), strides.span(),
                     out.dtype(), *tensors[i], op, m);
  }
}

namespace {

/// Writes consecutive pieces of `in` along `dim` into `outs` (same dtype);
/// piece i has length(i) elements along `dim`.
template <typename Length>
void split_into(const Mover& m, KernelContext& ctx, const Tensor& in, int64_t dim, Length length,
                std::span<Tensor* const> outs, const char* op) {
  int64_t total = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    int64_t n = length(i);
    PTERUN_CHECK(n >= 0 && n <= in.size(dim) - total, ErrorCode::InvalidArgument, op,
                 ": split sizes do not fit size ", in.size(dim), " of dimension ", dim);
    total += n;
  }
  PTERUN_CHECK(total == in.size(dim), ErrorCode::InvalidArgument, op, ": split sizes sum to ",
               total, ", dimension ", dim, " has size ", in.size(dim));
  for (const Tensor* t : outs) check_same_dtype(*t, in, "out", op);
  View v = view_of(in);
  int64_t start = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    v.sizes.dims[dim] = length(i);
    v.offset = v.sizes.dims[dim] > 0 ? start * in.stride(dim) : 0;
    copy_view_into(ctx, *outs[i], in, v, op, m);
    start += v.sizes.dims[dim];
  }
}

int64_t split_dim(const Tensor& in, int64_t dim, const char* op) {
  PTERUN_CHECK(in.dim() > 0, ErrorCode::InvalidArgument, op,
               ": cannot split a 0-dimensional tensor");
  return wrap_dim(dim, int64_t(in.dim()), op);
}

}  // namespace

// split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *, Tensor(a!)[] out)
void split_with_sizes_copy_out(KernelContext& ctx, const Tensor& in, IntList sizes, int64_t dim_arg,
                               TensorList outs) {
  const Mover& m = mover(ctx);
  const char* op = "aten::split_with_sizes_copy.out";
  int64_t dim = split_dim(in, dim_arg, op);
  PTERUN_CHECK(sizes.size() == outs.size(), ErrorCode::InvalidArgument, op, ": ", sizes.size(),
               " split sizes but ", outs.size(), " outputs");
  split_into(
      m, ctx, in, dim, [&](size_t i) { return sizes[i]; }, outs, op);
}

// split_copy.Tensor_out(Tensor self, SymInt split_size, int dim=0, *, Tensor(a!)[] out):
// pieces of split_size, the last one shorter.
void split_copy_out(KernelContext& ctx, const Tensor& in, int64_t split, int64_t dim_arg,
                    TensorList outs) {
  const Mover& m = mover(ctx);
  const char* op = "aten::split_copy.Tensor_out";
  int64_t dim = split_dim(in, dim_arg, op);
  const int64_t size = in.size(dim);
  PTERUN_CHECK(split > 0 || (split == 0 && size == 0), ErrorCode::InvalidArgument, op,
               ": split size ", split, " cannot split size ", size);
  const int64_t pieces = size == 0 ? 1 : (size - 1) / split + 1;
  PTERUN_CHECK(int64_t(outs.size()) == pieces, ErrorCode::InvalidArgument, op, ": ", pieces,
               " pieces but ", outs.size(), " outputs");
  split_into(
      m, ctx, in, dim, [&](size_t i) { return std::min(split, size - int64_t(i) * split); }, outs,
      op);
}

// unbind_copy.int_out(Tensor self, int dim=0, *, Tensor(a!)[] out): one output per index.
void unbind_copy_out(KernelContext& ctx, const Tensor& in, int64_t dim_arg, TensorList outs) {
  const Mover& m = mover(ctx);
  const char* op = "aten::unbind_copy.int_out";
  int64_t dim = split_dim(in, dim_arg, op);
  PTERUN_CHECK(int64_t(outs.size()) == in.size(dim), ErrorCode::InvalidArgument, op, ": ",
               outs.size(), " outputs for size ", in.size(dim));
  View v;
  for (size_t d = 0; d < in.dim(); ++d) {
    if (int64_t(d) != dim) v.push_back(in.size(d), in.stride(d));
  }
  for (Tensor* t : outs) check_same_dtype(*t, in, "out", op);
  for (size_t i = 0; i < outs.size(); ++i) {
    v.offset = int64_t(i) * in.stride(dim);
    copy_view_into(ctx, *outs[i], in, v, op, m);
  }
}

}  // namespace pterun::ops
