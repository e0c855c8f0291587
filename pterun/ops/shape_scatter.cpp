// Scatters that are two strided copies each: slice_scatter and
// select_scatter copy the input, then the source over a slice of it;
// et_copy_index writes one row of a growing tensor (the interpreter's
// list append).

#include <algorithm>
#include <optional>

#include "pterun/core/error.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/checks.h"
#include "pterun/ops/shape.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::ops {

// ---- slice / select scatter ----------------------------------------------

// slice_scatter.out(self, src, int dim=0, SymInt? start=None, SymInt? end=None,
//   SymInt step=1, *, out)
void slice_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& src, int64_t dim_arg,
                       std::optional<int64_t> start_arg, std::optional<int64_t> end_arg,
                       int64_t step, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::slice_scatter.out";
  const int64_t rank = static_cast<int64_t>(self.dim());
  PTERUN_CHECK(rank > 0, ErrorCode::InvalidArgument, op, ": cannot slice a 0-dim tensor");
  const size_t dim = static_cast<size_t>(kernels::wrap_dim(dim_arg, rank, op));
  PTERUN_CHECK(step >= 1, ErrorCode::InvalidArgument, op, ": step must be positive, got ", step);
  check_same_dtype(src, self, "src", op);
  check_same_dtype(out, self, "out", op);
  const int64_t size = self.size(dim);
  int64_t start = start_arg.value_or(0);
  int64_t end = end_arg.value_or(size);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, 0, size);
  const int64_t len = end > start ? (end - start + step - 1) / step : 0;
  bool match = src.dim() == self.dim();
  for (size_t d = 0; match && d < self.dim(); ++d) {
    match = src.size(d) == (d == dim ? len : self.size(d));
  }
  PTERUN_CHECK(match, ErrorCode::InvalidArgument, op, ": src ", describe(src),
               " does not match the slice of ", describe(self), " (", len, " along dim ", dim, ")");
  kernels::resize_output(out, self.sizes(), op);
  const size_t es = self.element_size();
  m.copy(ctx, out.data(), out.strides(), self.data(), self.strides(), self.sizes(), es);
  kernels::Shape dst_strides;
  for (size_t d = 0; d < out.dim(); ++d) {
    dst_strides.push_back(d == dim ? out.stride(d) * step : out.stride(d));
  }
  m.copy(ctx, element_at(out, start * out.stride(dim)), dst_strides.span(), src.data(),
         src.strides(), src.sizes(), es);
}

// select_scatter.out(self, src, int dim, SymInt index, *, out)
void select_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& src, int64_t dim_arg,
                        int64_t index, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::select_scatter.out";
  const int64_t rank = static_cast<int64_t>(self.dim());
  PTERUN_CHECK(rank > 0, ErrorCode::InvalidArgument, op, ": cannot select from a 0-dim tensor");
  const size_t dim = static_cast<size_t>(kernels::wrap_dim(dim_arg, rank, op));
  check_same_dtype(src, self, "src", op);
  check_same_dtype(out, self, "out", op);
  const int64_t size = self.size(dim);
  PTERUN_CHECK(index >= -size && index < size, ErrorCode::IndexOutOfRange, op, ": index ", index,
               " is out of range for dim ", dim, " of size ", size);
  if (index < 0) index += size;
  kernels::Shape slice = without(self.sizes(), dim);
  bool match = src.dim() == slice.rank;
  for (size_t d = 0; match && d < slice.rank; ++d) match = src.size(d) == slice.dims[d];
  PTERUN_CHECK(match, ErrorCode::InvalidArgument, op, ": src ", describe(src),
               " does not match the selected slice of ", describe(self));
  kernels::resize_output(out, self.sizes(), op);
  const size_t es = self.element_size();
  m.copy(ctx, out.data(), out.strides(), self.data(), self.strides(), self.sizes(), es);
  kernels::Shape dst_strides = without(out.strides(), dim);
  m.copy(ctx, element_at(out, index * out.stride(dim)), dst_strides.span(), src.data(),
         src.strides(), src.sizes(), es);
}

// executorch_prim::et_copy_index.tensor(Tensor copy_to, Tensor copy_from,
// int index): copy_to[index] = copy_from, growing copy_to's first dim.
void et_copy_index(KernelContext& ctx, Tensor& to, const Tensor& from, int64_t index) {
  const Mover& m = mover(ctx);
  const char* op = "executorch_prim::et_copy_index.tensor";
  PTERUN_CHECK(to.dim() == from.dim() + 1 && to.dtype() == from.dtype(), ErrorCode::InvalidArgument,
               op, ": cannot copy ", describe(from), " into ", describe(to));
  PTERUN_CHECK(to.is_contiguous_order() && from.is_contiguous_order(), ErrorCode::InvalidArgument,
               op, ": needs the default dim order");
  for (size_t d = 0; d < from.dim(); ++d) {
    PTERUN_CHECK(to.size(d + 1) == from.size(d), ErrorCode::InvalidArgument, op, ": shape of ",
                 describe(from), " does not match ", describe(to));
  }
  PTERUN_CHECK(index >= 0, ErrorCode::IndexOutOfRange, op, ": negative index ", index);
  if (index >= to.size(0)) {
    kernels::Shape s;
    for (size_t d = 0; d < to.dim(); ++d) s.push_back(d == 0 ? index + 1 : to.size(d));
    kernels::resize_output(to, s.span(), op);
  }
  const size_t row = from.nbytes();
  copy_dense(m, ctx, static_cast<char*>(to.data()) + static_cast<size_t>(index) * row, from.data(),
             from.numel(), from.element_size());
}

}  // namespace pterun::ops
