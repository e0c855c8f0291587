// View-style shape ops: each output is a view of its input (permuted,
// sliced, offset, broadcast or re-strided) materialised by one strided copy.
// Concatenation and splitting live in shape_concat.cpp, data rearrangement
// (repeat, flip, roll, pad ...) in shape_rearrange.cpp.

#include <algorithm>
#include <limits>
#include <utility>

#include "pterun/core/checked_math.h"
#include "pterun/core/error.h"
#include "pterun/core/value.h"
#include "pterun/ops/shape.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::ops {
namespace {

using kernels::Shape;
using kernels::wrap_dim;

/// `size` with its one allowed -1 inferred so that it holds `numel`
/// elements (view / reshape rules).
Shape infer_size(std::span<const int64_t> size, int64_t numel, const char* op) {
  Shape s;
  int64_t known = 1;
  size_t infer_at = size.size();
  for (size_t i = 0; i < size.size(); ++i) {
    int64_t d = size[i];
    if (d == -1) {
      PTERUN_CHECK(infer_at == size.size(), ErrorCode::InvalidArgument, op,
                   ": only one dimension can be inferred (-1)");
      infer_at = i;
    } else {
      PTERUN_CHECK(d >= 0, ErrorCode::InvalidArgument, op, ": invalid size ", d, " in dimension ",
                   i);
      auto next = checked_mul(static_cast<uint64_t>(known), static_cast<uint64_t>(d));
      PTERUN_CHECK(next && *next <= uint64_t(std::numeric_limits<int64_t>::max()),
                   ErrorCode::InvalidArgument, op, ": size overflows");
      known = static_cast<int64_t>(*next);
    }
    s.push_back(d);
  }
  if (infer_at < size.size()) {
    PTERUN_CHECK(known != 0 && numel % known == 0, ErrorCode::InvalidArgument, op,
                 ": cannot infer the -1 dimension to hold ", numel, " elements");
    s.dims[infer_at] = numel / known;
  } else {
    PTERUN_CHECK(known == numel, ErrorCode::InvalidArgument, op, ": size holds ", known,
                 " elements, the input has ", numel);
  }
  return s;
}

}  // namespace

// view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out)
void view_copy_out(KernelContext& ctx, const Tensor& in, IntList size_arg, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::view_copy.out";
  check_same_dtype(out, in, "out", op);
  Shape size = infer_size(size_arg, in.numel(), op);
  kernels::resize_output(out, size.span(), op);
  reshape_copy(ctx, out, in, m);
}

// permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out)
void permute_copy_out(KernelContext& ctx, const Tensor& in, IntList dims, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::permute_copy.out";
  const auto rank = static_cast<int64_t>(in.dim());
  PTERUN_CHECK(int64_t(dims.size()) == rank, ErrorCode::InvalidArgument, op, ": ", dims.size(),
               " dims given for ", describe(in));
  View v;
  uint32_t seen = 0;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, rank, op);
    PTERUN_CHECK(!(seen & (1u << w)), ErrorCode::InvalidArgument, op, ": dimension ", w,
                 " repeats in dims");
    seen |= 1u << w;
    v.push_back(in.size(w), in.stride(w));
  }
  copy_view_into(ctx, out, in, v, op, m);
}

// expand_copy.out(Tensor self, SymInt[] size, *, bool implicit=False, Tensor(a!) out)
void expand_copy_out(KernelContext& ctx, const Tensor& in, IntList size, const Value& /*implicit*/,
                     Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::expand_copy.out";
  PTERUN_CHECK(size.size() >= in.dim(), ErrorCode::InvalidArgument, op, ": cannot expand ",
               describe(in), " to ", size.size(), " dimensions");
  const size_t lead = size.size() - in.dim();
  View v;
  for (size_t d = 0; d < size.size(); ++d) {
    int64_t s = size[d];
    if (d < lead) {
      PTERUN_CHECK(s >= 0, ErrorCode::InvalidArgument, op, ": size ", s,
                   " is not allowed in a new leading dimension");
      v.push_back(s, 0);
      continue;
    }
    int64_t have = in.size(d - lead);
    if (s == -1) s = have;
    PTERUN_CHECK(s >= 0 && (s == have || have == 1), ErrorCode::InvalidArgument, op,
                 ": cannot expand size ", have, " to ", s, " in dimension ", d);
    v.push_back(s, have == s ? in.stride(d - lead) : 0);
  }
  copy_view_into(ctx, out, in, v, op, m);
}

// unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out)
void unsqueeze_copy_out(KernelContext& ctx, const Tensor& in, int64_t dim_arg, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::unsqueeze_copy.out";
  int64_t dim = wrap_dim(dim_arg, int64_t(in.dim()) + 1, op);
  View v = view_of(in);
  View u;
  for (size_t d = 0; d <= in.dim(); ++d) {
    if (int64_t(d) == dim) u.push_back(1, 0);
    if (d < in.dim()) u.push_back(v.sizes.dims[d], v.strides.dims[d]);
  }
  copy_view_into(ctx, out, in, u, op, m);
}

namespace {

/// The view of `in` without the dimensions flagged in `drop` that have
/// size 1.
View squeezed(const Tensor& in, uint32_t drop) {
  View v;
  for (size_t d = 0; d < in.dim(); ++d) {
    if ((drop & (1u << d)) && in.size(d) == 1) continue;
    v.push_back(in.size(d), in.stride(d));
  }
  return v;
}

}  // namespace

// squeeze_copy.dim_out(Tensor self, int dim, *, Tensor(a!) out)
void squeeze_copy_dim_out(KernelContext& ctx, const Tensor& in, int64_t dim_arg, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::squeeze_copy.dim_out";
  int64_t dim = wrap_dim(dim_arg, int64_t(in.dim()), op);
  copy_view_into(ctx, out, in, squeezed(in, in.dim() == 0 ? 0 : 1u << dim), op, m);
}

// squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out)
void squeeze_copy_dims_out(KernelContext& ctx, const Tensor& in, IntList dim, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::squeeze_copy.dims_out";
  uint32_t drop = 0;
  for (int64_t d : dim) {
    int64_t w = wrap_dim(d, int64_t(in.dim()), op);
    PTERUN_CHECK(in.dim() == 0 || !(drop & (1u << w)), ErrorCode::InvalidArgument, op,
                 ": dimension ", w, " repeats in dim");
    if (in.dim() > 0) drop |= 1u << w;
  }
  copy_view_into(ctx, out, in, squeezed(in, drop), op, m);
}

// squeeze_copy.out(Tensor self, *, Tensor(a!) out): drops every size-1 dim.
void squeeze_copy_out(KernelContext& ctx, const Tensor& in, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::squeeze_copy.out";
  copy_view_into(ctx, out, in, squeezed(in, ~0u), op, m);
}

namespace {

/// Python slice bound: negative counts from the end, then clamped.
int64_t clamp_bound(int64_t v, int64_t size) {
  if (v < 0) v += size;
  return v < 0 ? 0 : (v > size ? size : v);
}

}  // namespace

// slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None,
//                       SymInt step=1, *, Tensor(a!) out)
void slice_copy_out(KernelContext& ctx, const Tensor& in, int64_t dim_arg,
                    std::optional<int64_t> start_arg, std::optional<int64_t> end_arg, int64_t step,
                    Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::slice_copy.Tensor_out";
  PTERUN_CHECK(in.dim() > 0, ErrorCode::InvalidArgument, op,
               ": cannot slice a 0-dimensional tensor");
  int64_t dim = wrap_dim(dim_arg, int64_t(in.dim()), op);
  PTERUN_CHECK(step >= 1, ErrorCode::InvalidArgument, op, ": step must be positive, got ", step);
  const int64_t size = in.size(dim);
  int64_t start = clamp_bound(start_arg.value_or(0), size);
  int64_t end = clamp_bound(end_arg.value_or(size), size);
  int64_t len = end > start ? (end - start - 1) / step + 1 : 0;
  View v = view_of(in);
  v.sizes.dims[dim] = len;
  v.strides.dims[dim] = in.stride(dim) * step;
  v.offset = len > 0 ? start * in.stride(dim) : 0;
  copy_view_into(ctx, out, in, v, op, m);
}

namespace {

/// The view of `in` without dimension `dim`, at `index` along it.
View select_view(const Tensor& in, int64_t dim, int64_t index) {
  View v;
  for (size_t d = 0; d < in.dim(); ++d) {
    if (int64_t(d) != dim) v.push_back(in.size(d), in.stride(d));
  }
  v.offset = index * in.stride(dim);
  return v;
}

}  // namespace

// select_copy.int_out(Tensor self, int dim, SymInt index, *, Tensor(a!) out)
void select_copy_out(KernelContext& ctx, const Tensor& in, int64_t dim_arg, int64_t index,
                     Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::select_copy.int_out";
  PTERUN_CHECK(in.dim() > 0, ErrorCode::InvalidArgument, op,
               ": cannot select from a 0-dimensional tensor");
  int64_t dim = wrap_dim(dim_arg, int64_t(in.dim()), op);
  const int64_t size = in.size(dim);
  PTERUN_CHECK(index >= -size && index < size, ErrorCode::IndexOutOfRange, op, ": index ", index,
               " is out of range for size ", size, " in dimension ", dim);
  copy_view_into(ctx, out, in, select_view(in, dim, index < 0 ? index + size : index), op, m);
}

// narrow_copy.out(Tensor self, int dim, SymInt start, SymInt length, *, Tensor(a!) out)
void narrow_copy_out(KernelContext& ctx, const Tensor& in, int64_t dim_arg, int64_t start,
                     int64_t length, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::narrow_copy.out";
  PTERUN_CHECK(in.dim() > 0, ErrorCode::InvalidArgument, op,
               ": cannot narrow a 0-dimensional tensor");
  int64_t dim = wrap_dim(dim_arg, int64_t(in.dim()), op);
  const int64_t size = in.size(dim);
  PTERUN_CHECK(start >= -size && start <= size, ErrorCode::IndexOutOfRange, op, ": start ", start,
               " is out of range for size ", size);
  if (start < 0) start += size;
  PTERUN_CHECK(length >= 0 && length <= size - start, ErrorCode::InvalidArgument, op, ": start ",
               start, " + length ", length, " exceeds size ", size);
  View v = view_of(in);
  v.sizes.dims[dim] = length;
  v.offset = start * in.stride(dim);
  copy_view_into(ctx, out, in, v, op, m);
}

namespace {

View transposed(const Tensor& in, int64_t d0, int64_t d1) {
  View v = view_of(in);
  if (in.dim() > 0) {
    std::swap(v.sizes.dims[d0], v.sizes.dims[d1]);
    std::swap(v.strides.dims[d0], v.strides.dims[d1]);
  }
  return v;
}

}  // namespace

// transpose_copy.int_out(Tensor self, int dim0, int dim1, *, Tensor(a!) out)
void transpose_copy_out(KernelContext& ctx, const Tensor& in, int64_t dim0, int64_t dim1,
                        Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::transpose_copy.int_out";
  const auto rank = int64_t(in.dim());
  int64_t d0 = wrap_dim(dim0, rank, op);
  int64_t d1 = wrap_dim(dim1, rank, op);
  copy_view_into(ctx, out, in, transposed(in, d0, d1), op, m);
}

// t_copy.out(Tensor self, *, Tensor(a!) out): transpose of a tensor of rank <= 2.
void t_copy_out(KernelContext& ctx, const Tensor& in, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::t_copy.out";
  PTERUN_CHECK(in.dim() <= 2, ErrorCode::InvalidArgument, op,
               ": expects a tensor of rank <= 2, got ", describe(in));
  copy_view_into(ctx, out, in, transposed(in, 0, in.dim() == 2 ? 1 : 0), op, m);
}

// as_strided_copy.out(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None,
//                     *, Tensor(a!) out). The strides address the input's storage: its
// elements in memory order, whatever its dim order.
void as_strided_copy_out(KernelContext& ctx, const Tensor& in, IntList size, IntList stride,
                         std::optional<int64_t> storage_offset, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::as_strided_copy.out";
  int64_t offset = storage_offset.value_or(0);
  PTERUN_CHECK(size.size() == stride.size(), ErrorCode::InvalidArgument, op, ": ", size.size(),
               " sizes but ", stride.size(), " strides");
  PTERUN_CHECK(offset >= 0, ErrorCode::InvalidArgument, op, ": negative storage offset ", offset);
  View v;
  v.offset = offset;
  bool empty = false;
  uint64_t last = static_cast<uint64_t>(offset);  // highest element read
  bool overflow = false;
  for (size_t d = 0; d < size.size(); ++d) {
    PTERUN_CHECK(size[d] >= 0 && stride[d] >= 0, ErrorCode::InvalidArgument, op,
                 ": negative size or stride in dimension ", d);
    v.push_back(size[d], stride[d]);
    if (size[d] == 0) {
      empty = true;
      continue;
    }
    auto span = checked_mul(uint64_t(size[d] - 1), uint64_t(stride[d]));
    auto next = span ? checked_add(last, *span) : std::nullopt;
    overflow = overflow || !next;
    if (next) last = *next;
  }
  PTERUN_CHECK(empty || (!overflow && last < uint64_t(in.numel())), ErrorCode::IndexOutOfRange, op,
               ": the view reaches outside the input's ", in.numel(), " elements");
  copy_view_into(ctx, out, in, v, op, m);
}

// alias_copy.out / detach_copy.out (Tensor self, *, Tensor(a!) out): a plain copy.
void alias_copy_out(KernelContext& ctx, const Tensor& in, Tensor& arg1) {
  const Mover& m = mover(ctx);
  copy_view_into(ctx, arg1, in, view_of(in), "aten::alias_copy.out", m);
}

void detach_copy_out(KernelContext& ctx, const Tensor& in, Tensor& arg1) {
  const Mover& m = mover(ctx);
  copy_view_into(ctx, arg1, in, view_of(in), "aten::detach_copy.out", m);
}

// unfold_copy.out(Tensor self, int dimension, int size, int step, *, Tensor(a!) out):
// windows of `size` every `step` along `dimension`, as a new last dimension.
void unfold_copy_out(KernelContext& ctx, const Tensor& in, int64_t dimension, int64_t size,
                     int64_t step, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::unfold_copy.out";
  int64_t dim = wrap_dim(dimension, int64_t(in.dim()), op);
  const int64_t have = in.dim() == 0 ? 1 : in.size(dim);
  PTERUN_CHECK(size >= 0 && size <= have, ErrorCode::InvalidArgument, op, ": window size ", size,
               " does not fit size ", have);
  PTERUN_CHECK(step > 0, ErrorCode::InvalidArgument, op, ": step must be positive, got ", step);
  View v;
  if (in.dim() == 0) {
    v.push_back(size, 1);
  } else {
    v = view_of(in);
    v.sizes.dims[dim] = (have - size) / step + 1;
    v.strides.dims[dim] = in.stride(dim) * step;
    v.push_back(size, in.stride(dim));
  }
  copy_view_into(ctx, out, in, v, op, m);
}

// diagonal_copy.out(Tensor self, int offset=0, int dim1=0, int dim2=1, *, Tensor(a!) out)
void diagonal_copy_out(KernelContext& ctx, const Tensor& in, int64_t offset, int64_t dim1,
                       int64_t dim2, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::diagonal_copy.out";
  PTERUN_CHECK(in.dim() >= 2, ErrorCode::InvalidArgument, op, ": expects rank >= 2, got ",
               describe(in));
  int64_t d1 = wrap_dim(dim1, int64_t(in.dim()), op);
  int64_t d2 = wrap_dim(dim2, int64_t(in.dim()), op);
  PTERUN_CHECK(d1 != d2, ErrorCode::InvalidArgument, op, ": dim1 and dim2 are both ", d1);
  int64_t n1 = in.size(d1), n2 = in.size(d2);
  int64_t len = 0, start = 0;
  if (offset >= 0 && offset < n2) {
    len = std::min(n1, n2 - offset);
    start = offset * in.stride(d2);
  } else if (offset < 0 && offset > -n1) {
    len = std::min(n1 + offset, n2);
    start = -offset * in.stride(d1);
  }
  View v;
  for (size_t d = 0; d < in.dim(); ++d) {
    if (int64_t(d) != d1 && int64_t(d) != d2) v.push_back(in.size(d), in.stride(d));
  }
  v.push_back(len, in.stride(d1) + in.stride(d2));
  v.offset = len > 0 ? start : 0;
  copy_view_into(ctx, out, in, v, op, m);
}

}  // namespace pterun::ops
