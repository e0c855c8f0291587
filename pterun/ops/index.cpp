// Front-ends of the index family (index.h): dtype and shape checks, output
// resizing and the advanced-indexing plan, once for every backend. Range
// checks of index values are the backends' (they read index data).

#include "pterun/ops/index.h"

#include <algorithm>

#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/index_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/checks.h"

namespace pterun::ops {
namespace {

using kernels::Family;

const IndexBackend& index_backend(const KernelContext& ctx) {
  return *backend(ctx).index;
}

int64_t size_at(const Tensor& t, size_t d) {
  return t.dim() == 0 ? 1 : t.size(d);
}

/// Error InvalidType unless `index` is int64 or int32.
void check_index_dtype(const Tensor& index, const char* op) {
  PTERUN_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
               ErrorCode::InvalidType, op, ": indices must be int64 or int32, not ",
               dtype_name(index.dtype()));
}

/// Error InvalidArgument unless `a` (named `what`) has self's dtype.
void check_dtype_of_self(const Tensor& a, const Tensor& self, const char* what, const char* op) {
  PTERUN_CHECK(a.dtype() == self.dtype(), ErrorCode::InvalidArgument, op, ": ", what, " dtype ",
               dtype_name(a.dtype()), " differs from self's ", dtype_name(self.dtype()));
}

/// Checks index (and src) shapes for gather/scatter along `dim`: same rank
/// as self, and no larger than self (src) in any dim (other than `dim` for
/// self).
void check_gather_shapes(const Tensor& self, size_t dim, const Tensor& index, const Tensor* src,
                         const char* op) {
  const size_t rank = std::max<size_t>(self.dim(), 1);
  PTERUN_CHECK(std::max<size_t>(index.dim(), 1) == rank, ErrorCode::InvalidArgument, op, ": index ",
               describe(index), " must have as many dims as self ", describe(self));
  for (size_t d = 0; d < index.dim(); ++d) {
    PTERUN_CHECK(d == dim || index.size(d) <= size_at(self, d), ErrorCode::InvalidArgument, op,
                 ": index ", describe(index), " is larger than self ", describe(self), " at dim ",
                 d);
    PTERUN_CHECK(src == nullptr || index.size(d) <= size_at(*src, d), ErrorCode::InvalidArgument,
                 op, ": index ", describe(index), " is larger than src ", describe(*src),
                 " at dim ", d);
  }
  if (src != nullptr) {
    PTERUN_CHECK(std::max<size_t>(src->dim(), 1) == rank, ErrorCode::InvalidArgument, op, ": src ",
                 describe(*src), " must have as many dims as self");
  }
}

/// scatter.src_out / value_out / scatter_add.out (src null for value).
void scatter_any(KernelContext& ctx, const Tensor& self, int64_t dim_arg, const Tensor& index,
                 const Tensor* src, Scalar value, ScatterMode mode, Tensor& out, const char* op) {
  const auto dim =
      static_cast<size_t>(kernels::wrap_dim(dim_arg, static_cast<int64_t>(self.dim()), op));
  check_index_dtype(index, op);
  check_dtype_of_self(out, self, "out", op);
  if (src != nullptr) check_dtype_of_self(*src, self, "src", op);
  check_gather_shapes(self, dim, index, src, op);
  kernels::resize_output(out, self.sizes(), op);
  check_dtype_in(self.dtype(), Family::RealHBBF16, op);
  index_backend(ctx).scatter(ctx, {self, dim, index, src, value, mode, out});
}

/// values' strides over the dims of plan.result, right-aligned with
/// broadcasting (0 where a value repeats). Error InvalidArgument when they
/// do not broadcast.
kernels::Shape put_value_strides(const kernels::IndexPlan& plan, const Tensor& values,
                                 const char* op) {
  const size_t rr = plan.result.rank;
  PTERUN_CHECK(values.dim() <= rr, ErrorCode::InvalidArgument, op, ": values ", describe(values),
               " do not broadcast to the indexed shape");
  kernels::Shape vstrides;
  for (size_t r = 0; r < rr; ++r) {
    int64_t st = 0;
    if (r >= rr - values.dim()) {
      size_t vd = r - (rr - values.dim());
      PTERUN_CHECK(values.size(vd) == 1 || values.size(vd) == plan.result.dims[r],
                   ErrorCode::InvalidArgument, op, ": values ", describe(values),
                   " do not broadcast to the indexed shape");
      st = values.size(vd) == 1 ? 0 : values.stride(vd);
    }
    vstrides.push_back(st);
  }
  return vstrides;
}

/// index_put.out / index_put_ (target is self in place).
void index_put_any(KernelContext& ctx, const Tensor& self, OptionalTensorList indices,
                   const Tensor& values, bool accumulate, Tensor& target, bool in_place,
                   const char* op) {
  check_dtype_of_self(values, self, "values", op);
  check_dtype_of_self(target, self, "out", op);
  PTERUN_CHECK(!accumulate || kernels::in_family(self.dtype(), Family::RealHBBF16),
               ErrorCode::InvalidArgument, op, ": accumulate is not supported for ",
               dtype_name(self.dtype()));
  const IndexBackend& b = index_backend(ctx);
  kernels::IndexPlan plan = kernels::make_index_plan(self, indices, b.count_mask, op);
  if (!in_place) kernels::resize_output(target, self.sizes(), op);
  kernels::Shape vstrides = put_value_strides(plan, values, op);
  b.index_put(ctx, {self, plan, values, vstrides.span(), accumulate, in_place, target});
}

}  // namespace

void embedding_out(KernelContext& ctx, const Tensor& weight, const Tensor& indices,
                   const Value& /*padding_idx*/, const Value& /*scale_grad_by_freq*/,
                   const Value& /*sparse*/, Tensor& out) {
  const char* op = "aten::embedding.out";
  PTERUN_CHECK(weight.dim() == 2, ErrorCode::InvalidArgument, op, ": weight must be 2-D, got ",
               describe(weight));
  check_index_dtype(indices, op);
  check_dtype_of_self(out, weight, "out", op);
  kernels::Shape shape;
  for (int64_t s : indices.sizes()) shape.push_back(s);
  shape.push_back(weight.size(1));
  kernels::resize_output(out, shape.span(), op);
  index_backend(ctx).embedding(ctx, {weight, indices, out});
}

void index_select_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                      Tensor& out) {
  const char* op = "aten::index_select.out";
  const int64_t rank = static_cast<int64_t>(self.dim());
  const auto d = static_cast<size_t>(kernels::wrap_dim(dim, rank, op));
  check_index_dtype(index, op);
  PTERUN_CHECK(index.dim() <= 1, ErrorCode::InvalidArgument, op, ": index must be 0-D or 1-D, got ",
               describe(index));
  check_dtype_of_self(out, self, "out", op);
  const int64_t n = index.numel();
  PTERUN_CHECK(rank > 0 || n == 1, ErrorCode::InvalidArgument, op,
               ": indexing a 0-dim tensor needs exactly one index");
  kernels::Shape shape;
  for (size_t k = 0; k < self.dim(); ++k) shape.push_back(k == d ? n : self.size(k));
  kernels::resize_output(out, shape.span(), op);
  index_backend(ctx).index_select(ctx, {self, d, index, out});
}

void gather_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                const Value& /*sparse_grad*/, Tensor& out) {
  const char* op = "aten::gather.out";
  const auto d = static_cast<size_t>(kernels::wrap_dim(dim, static_cast<int64_t>(self.dim()), op));
  check_index_dtype(index, op);
  check_dtype_of_self(out, self, "out", op);
  check_gather_shapes(self, d, index, nullptr, op);
  kernels::resize_output(out, index.sizes(), op);
  index_backend(ctx).gather(ctx, {self, d, index, out});
}

void scatter_src_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                     const Tensor& src, Tensor& out) {
  scatter_any(ctx, self, dim, index, &src, Scalar(), ScatterMode::Src, out,
              "aten::scatter.src_out");
}

void scatter_value_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                       Scalar value, Tensor& out) {
  scatter_any(ctx, self, dim, index, nullptr, value, ScatterMode::Value, out,
              "aten::scatter.value_out");
}

void scatter_add_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                     const Tensor& src, Tensor& out) {
  scatter_any(ctx, self, dim, index, &src, Scalar(), ScatterMode::Add, out,
              "aten::scatter_add.out");
}

void masked_fill_out(KernelContext& ctx, const Tensor& self, const Tensor& mask, Scalar value,
                     Tensor& out) {
  const char* op = "aten::masked_fill.Scalar_out";
  PTERUN_CHECK(mask.dtype() == DType::Bool, ErrorCode::InvalidArgument, op,
               ": mask must be bool, not ", dtype_name(mask.dtype()));
  check_dtype_of_self(out, self, "out", op);
  kernels::resize_to_broadcast(out, {&self, &mask}, op);
  check_dtype_in(self.dtype(), Family::RealHBBF16, op);
  index_backend(ctx).masked_fill(ctx, {self, mask, value, out});
}

void index_tensor_out(KernelContext& ctx, const Tensor& self, OptionalTensorList indices,
                      Tensor& out) {
  const char* op = "aten::index.Tensor_out";
  check_dtype_of_self(out, self, "out", op);
  const IndexBackend& b = index_backend(ctx);
  kernels::IndexPlan plan = kernels::make_index_plan(self, indices, b.count_mask, op);
  kernels::resize_output(out, plan.result.span(), op);
  b.index_tensor(ctx, {self, plan, out});
}

void index_put_out(KernelContext& ctx, const Tensor& self, OptionalTensorList indices,
                   const Tensor& values, bool accumulate, Tensor& out) {
  index_put_any(ctx, self, indices, values, accumulate, out, false, "aten::index_put.out");
}

void index_put_(KernelContext& ctx, Tensor& self, OptionalTensorList indices, const Tensor& values,
                bool accumulate) {
  index_put_any(ctx, self, indices, values, accumulate, self, true, "aten::index_put_");
}

}  // namespace pterun::ops
