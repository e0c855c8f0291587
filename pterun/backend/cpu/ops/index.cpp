// Indexing: embedding, index_select, gather, scatter (src / value / add),
// slice and select scatter, masked_fill and advanced indexing
// (index.Tensor, index_put) over kernels/common/index_util.h.
// Every index is data: all of them are range-checked before anything is
// written, and outside parallel regions (an exception must not cross one).

#include <cstring>

#include "pterun/backend/cpu/ops/index_prepare.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/elementwise.h"
#include "pterun/kernels/common/index_util.h"
#include "pterun/kernels/common/strided_copy.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;
using kernels::Odometer;

using indexing::check_index_dtype;
using indexing::check_same_dtype;

int64_t size_at(const Tensor& t, size_t d) {
  return t.dim() == 0 ? 1 : t.size(d);
}
int64_t stride_at(const Tensor& t, size_t d) {
  return t.dim() == 0 ? 0 : t.stride(d);
}

/// Copies n elements of `es` bytes between strided runs (strides in
/// elements).
void copy_run(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t n,
              size_t es) {
  if (dst_stride == 1 && src_stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
    return;
  }
  const int64_t ds = dst_stride * static_cast<int64_t>(es);
  const int64_t ss = src_stride * static_cast<int64_t>(es);
  switch (es) {
    case 1:
      for (int64_t i = 0; i < n; ++i) dst[i * ds] = src[i * ss];
      break;
    case 2:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, 2);
      break;
    case 4:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, 4);
      break;
    case 8:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, 8);
      break;
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, es);
  }
}

/// Error IndexOutOfRange unless 0 <= v < size.
inline void check_in_range(int64_t v, int64_t size, const char* op) {
  PTERUN_CHECK(v >= 0 && v < size, ErrorCode::IndexOutOfRange, op, ": index ", v,
               " is out of range for a dimension of size ", size);
}

/// Checks every element of `index` against [0, size).
void check_all_in_range(const Tensor& index, int64_t size, const char* op) {
  Odometer<1> od;
  for (size_t d = 0; d < index.dim(); ++d) od.push(index.size(d), {index.stride(d)});
  od.seek(0);
  for (int64_t i = 0; i < index.numel(); ++i, od.next()) {
    check_in_range(kernels::read_index(index, od.offset[0]), size, op);
  }
}

char* byte_ptr(const Tensor& t, int64_t offset) {
  return static_cast<char*>(t.data()) + offset * static_cast<int64_t>(t.element_size());
}

}  // namespace

namespace indexing {

void check_index_dtype(const Tensor& index, const char* op) {
  PTERUN_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
               ErrorCode::InvalidType, op, ": indices must be int64 or int32, not ",
               dtype_name(index.dtype()));
}

void check_same_dtype(const Tensor& a, const Tensor& self, const char* what, const char* op) {
  PTERUN_CHECK(a.dtype() == self.dtype(), ErrorCode::InvalidArgument, op, ": ", what, " dtype ",
               dtype_name(a.dtype()), " differs from self's ", dtype_name(self.dtype()));
}

namespace {

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

}  // namespace

void prepare_embedding(const Tensor& weight, const Tensor& indices, Tensor& out, const char* op) {
  PTERUN_CHECK(weight.dim() == 2, ErrorCode::InvalidArgument, op, ": weight must be 2-D, got ",
               describe(weight));
  check_index_dtype(indices, op);
  check_same_dtype(out, weight, "out", op);
  kernels::Shape shape;
  for (int64_t s : indices.sizes()) shape.push_back(s);
  shape.push_back(weight.size(1));
  kernels::resize_output(out, shape.span(), op);
}

size_t prepare_index_select(const Tensor& self, int64_t dim_arg, const Tensor& index, Tensor& out,
                            const char* op) {
  const int64_t rank = static_cast<int64_t>(self.dim());
  const size_t dim = static_cast<size_t>(kernels::wrap_dim(dim_arg, rank, op));
  check_index_dtype(index, op);
  PTERUN_CHECK(index.dim() <= 1, ErrorCode::InvalidArgument, op, ": index must be 0-D or 1-D, got ",
               describe(index));
  check_same_dtype(out, self, "out", op);
  const int64_t n = index.numel();
  PTERUN_CHECK(rank > 0 || n == 1, ErrorCode::InvalidArgument, op,
               ": indexing a 0-dim tensor needs exactly one index");
  kernels::Shape shape;
  for (size_t d = 0; d < self.dim(); ++d) shape.push_back(d == dim ? n : self.size(d));
  kernels::resize_output(out, shape.span(), op);
  return dim;
}

size_t prepare_gather(const Tensor& self, int64_t dim_arg, const Tensor& index, Tensor& out,
                      const char* op) {
  const size_t dim =
      static_cast<size_t>(kernels::wrap_dim(dim_arg, static_cast<int64_t>(self.dim()), op));
  check_index_dtype(index, op);
  check_same_dtype(out, self, "out", op);
  check_gather_shapes(self, dim, index, nullptr, op);
  kernels::resize_output(out, index.sizes(), op);
  return dim;
}

size_t prepare_scatter(const Tensor& self, int64_t dim_arg, const Tensor& index, const Tensor* src,
                       Tensor& out, const char* op) {
  const size_t dim =
      static_cast<size_t>(kernels::wrap_dim(dim_arg, static_cast<int64_t>(self.dim()), op));
  check_index_dtype(index, op);
  check_same_dtype(out, self, "out", op);
  if (src != nullptr) check_same_dtype(*src, self, "src", op);
  check_gather_shapes(self, dim, index, src, op);
  kernels::resize_output(out, self.sizes(), op);
  return dim;
}

void prepare_masked_fill(const Tensor& self, const Tensor& mask, Tensor& out, const char* op) {
  PTERUN_CHECK(mask.dtype() == DType::Bool, ErrorCode::InvalidArgument, op,
               ": mask must be bool, not ", dtype_name(mask.dtype()));
  check_same_dtype(out, self, "out", op);
  kernels::resize_to_broadcast(out, {&self, &mask}, op);
}

void check_index_put(const Tensor& self, const Tensor& values, const Tensor& target,
                     bool accumulate, const char* op) {
  check_same_dtype(values, self, "values", op);
  check_same_dtype(target, self, "out", op);
  PTERUN_CHECK(!accumulate || kernels::in_family(self.dtype(), Family::RealHBBF16),
               ErrorCode::InvalidArgument, op, ": accumulate is not supported for ",
               dtype_name(self.dtype()));
}

kernels::Shape put_value_strides(const kernels::IndexPlan& plan, const Tensor& values,
                                 const char* op) {
  // values' strides over the result dims, right-aligned with broadcasting.
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

}  // namespace indexing

namespace {

// ---- embedding -----------------------------------------------------------

// embedding.out(weight, indices, SymInt padding_idx=-1, bool
//   scale_grad_by_freq=False, bool sparse=False, *, out)
void embedding_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::embedding.out";
  const Tensor& weight = args[0]->to_tensor();
  const Tensor& indices = args[1]->to_tensor();
  Tensor& out = args[5]->to_tensor();
  indexing::prepare_embedding(weight, indices, out, op);
  check_all_in_range(indices, weight.size(0), op);
  const size_t k = indices.dim();
  Odometer<2> rows;
  for (size_t d = 0; d < k; ++d) rows.push(indices.size(d), {indices.stride(d), out.stride(d)});
  const int64_t dim = weight.size(1);
  const size_t es = weight.element_size();
  kernels::parallel_for(ctx, indices.numel(), dim, [&](int64_t b, int64_t e) {
    auto od = rows;
    od.seek(b);
    for (int64_t i = b; i < e; ++i, od.next()) {
      int64_t row = kernels::read_index(indices, od.offset[0]);
      copy_run(byte_ptr(out, od.offset[1]), out.stride(k), byte_ptr(weight, row * weight.stride(0)),
               weight.stride(1), dim, es);
    }
  });
}

// ---- index_select ------------------------------------------------------

// index_select.out(self, int dim, Tensor index, *, out)
void index_select_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::index_select.out";
  const Tensor& self = args[0]->to_tensor();
  const int64_t rank = static_cast<int64_t>(self.dim());
  const Tensor& index = args[2]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  const size_t dim = indexing::prepare_index_select(self, args[1]->to_int(), index, out, op);
  const int64_t n = index.numel();
  kernels::Shape shape;
  for (int64_t s : out.sizes()) shape.push_back(s);
  check_all_in_range(index, size_at(self, dim), op);
  if (out.numel() == 0) return;
  // One slice copy per index, the slice's shape being self's with dim = 1.
  kernels::Shape slice = shape;
  if (rank > 0) slice.dims[dim] = 1;
  const int64_t slice_numel = slice.numel();
  const int64_t index_stride = index.dim() == 0 ? 0 : index.stride(0);
  kernels::parallel_for(ctx, n, slice_numel, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t v = kernels::read_index(index, i * index_stride);
      kernels::strided_copy(byte_ptr(out, i * stride_at(out, dim)), out.strides(),
                            byte_ptr(self, v * stride_at(self, dim)), self.strides(), slice.span(),
                            self.element_size());
    }
  });
}

// ---- gather / scatter ----------------------------------------------------

/// Odometer over index's dims with strides {index, a (dim zeroed), b}.
Odometer<3> index_walk(const Tensor& index, size_t dim, const Tensor& a, const Tensor* b) {
  Odometer<3> od;
  for (size_t d = 0; d < index.dim(); ++d) {
    od.push(index.size(d),
            {index.stride(d), d == dim ? 0 : stride_at(a, d), b != nullptr ? stride_at(*b, d) : 0});
  }
  od.seek(0);
  return od;
}

// gather.out(self, int dim, Tensor index, *, bool sparse_grad=False, out)
void gather_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::gather.out";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& index = args[2]->to_tensor();
  Tensor& out = args[4]->to_tensor();
  const size_t dim = indexing::prepare_gather(self, args[1]->to_int(), index, out, op);
  check_all_in_range(index, size_at(self, dim), op);
  const Odometer<3> walk = index_walk(index, dim, self, &out);
  const size_t es = self.element_size();
  const int64_t step = stride_at(self, dim);
  kernels::parallel_for(ctx, index.numel(), 1, [&](int64_t b, int64_t e) {
    auto od = walk;
    od.seek(b);
    for (int64_t i = b; i < e; ++i, od.next()) {
      int64_t v = kernels::read_index(index, od.offset[0]);
      std::memcpy(byte_ptr(out, od.offset[2]), byte_ptr(self, od.offset[1] + v * step), es);
    }
  });
}

enum class Scatter { Src, Value, Add };

// scatter.src_out(self, dim, index, src, *, out), scatter.value_out(self,
// dim, index, Scalar value, *, out), scatter_add.out(self, dim, index, src,
// *, out). out = self with the src (value) elements written (added) at
// the indexed positions; repeated positions apply in index order.
template <Scatter kMode>
void scatter_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kMode == Scatter::Src     ? "aten::scatter.src_out"
                   : kMode == Scatter::Value ? "aten::scatter.value_out"
                                             : "aten::scatter_add.out";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& index = args[2]->to_tensor();
  const Tensor* src = kMode == Scatter::Value ? nullptr : &args[3]->to_tensor();
  Tensor& out = args[4]->to_tensor();
  const size_t dim = indexing::prepare_scatter(self, args[1]->to_int(), index, src, out, op);
  check_all_in_range(index, size_at(self, dim), op);
  kernels::strided_copy(ctx, out.data(), out.strides(), self.data(), self.strides(), self.sizes(),
                        self.element_size());
  Odometer<3> od = index_walk(index, dim, out, src);
  const int64_t step = stride_at(out, dim);
  kernels::visit(self.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    T* o = out.data_as<T>();
    const T* s = src != nullptr ? src->data_as<const T>() : nullptr;
    T value{};
    if constexpr (kMode == Scatter::Value) {
      Scalar v = args[3]->to_scalar();
      value =
          v.is_floating() ? kernels::convert<T>(v.to_double()) : kernels::convert<T>(v.to_int());
    }
    for (int64_t i = 0; i < index.numel(); ++i, od.next()) {
      T& dst = o[od.offset[1] + kernels::read_index(index, od.offset[0]) * step];
      if constexpr (kMode == Scatter::Value) {
        dst = value;
      } else if constexpr (kMode == Scatter::Src) {
        dst = s[od.offset[2]];
      } else if constexpr (std::is_same_v<T, bool>) {
        dst = dst || s[od.offset[2]];
      } else {
        dst =
            kernels::convert<T>(C(kernels::convert<C>(dst) + kernels::convert<C>(s[od.offset[2]])));
      }
    }
  });
}

// ---- masked_fill -----------------------------------------------------

// masked_fill.Scalar_out(self, Tensor mask, Scalar value, *, out)
void masked_fill_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::masked_fill.Scalar_out";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& mask = args[1]->to_tensor();
  Scalar value = args[2]->to_scalar();
  Tensor& out = args[3]->to_tensor();
  indexing::prepare_masked_fill(self, mask, out, op);
  kernels::visit(self.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    const C v = value.is_floating() ? kernels::convert<C>(value.to_double())
                                    : kernels::convert<C>(value.to_int());
    kernels::map_elements<C, C, 2>(
        ctx, out, {&self, &mask}, [v](C x, C m) { return m != C(0) ? v : x; }, op);
  });
}

// ---- advanced indexing ---------------------------------------------------

/// Walk over the result of `plan` (all dims but the innermost, merged where
/// possible) with strides {self-shaped target, other, index position}; the
/// innermost dim's size and strides go to `inner`.
struct ResultWalk {
  Odometer<3> rows;
  int64_t n = 1;
  std::array<int64_t, 3> inner{};
};

ResultWalk result_walk(const kernels::IndexPlan& plan, std::span<const int64_t> target_strides,
                       std::span<const int64_t> other_strides) {
  std::array<int64_t, kMaxRank> index_strides{};
  int64_t s = 1;
  for (size_t i = plan.index_shape.rank; i-- > 0;) {
    index_strides[i] = s;
    s *= plan.index_shape.dims[i];
  }
  ResultWalk w;
  for (size_t r = 0; r < plan.result.rank; ++r) {
    int sd = plan.result_self_dim[r];
    std::array<int64_t, 3> st = {sd >= 0 ? target_strides[static_cast<size_t>(sd)] : 0,
                                 other_strides[r],
                                 sd >= 0 ? 0 : index_strides[plan.result_index_dim[r]]};
    w.rows.push_merged(plan.result.dims[r], st);
  }
  if (w.rows.rank > 0) {
    size_t q = --w.rows.rank;
    w.n = w.rows.sizes[q];
    for (size_t k = 0; k < 3; ++k) w.inner[k] = w.rows.strides[k][q];
  }
  return w;
}

// index.Tensor_out(self, Tensor?[] indices, *, out)
void index_tensor_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::index.Tensor_out";
  const Tensor& self = args[0]->to_tensor();
  std::span<Tensor* const> indices = args[1]->to_optional_tensor_list();
  Tensor& out = args[2]->to_tensor();
  check_same_dtype(out, self, "out", op);
  kernels::IndexPlan plan = kernels::make_index_plan(self, indices, op);
  kernels::resize_output(out, plan.result.span(), op);
  const int64_t* offsets =
      kernels::run_index_plan(plan, self, self.strides(), ctx.scratch(plan.scratch_bytes()), op);
  if (out.numel() == 0) return;
  ResultWalk w = result_walk(plan, self.strides(), out.strides());
  const size_t es = self.element_size();
  kernels::parallel_for(ctx, w.rows.count(), w.n, [&](int64_t b, int64_t e) {
    auto od = w.rows;
    od.seek(b);
    for (int64_t r = b; r < e; ++r, od.next()) {
      char* dst = byte_ptr(out, od.offset[1]);
      if (w.inner[2] == 0) {
        copy_run(dst, w.inner[1], byte_ptr(self, od.offset[0] + offsets[od.offset[2]]), w.inner[0],
                 w.n, es);
        continue;
      }
      for (int64_t j = 0; j < w.n; ++j) {
        const int64_t src = od.offset[0] + j * w.inner[0] + offsets[od.offset[2] + j * w.inner[2]];
        std::memcpy(dst + j * w.inner[1] * static_cast<int64_t>(es), byte_ptr(self, src), es);
      }
    }
  });
}

/// Writes (or adds) `values`, broadcast to the plan's result shape, into
/// `target` (shaped like self) at the indexed positions, in order.
void put_values(const kernels::IndexPlan& plan, Tensor& target, const int64_t* offsets,
                const Tensor& values, bool accumulate, const char* op) {
  kernels::Shape vstrides = indexing::put_value_strides(plan, values, op);
  if (plan.result.numel() == 0) return;
  ResultWalk w = result_walk(plan, target.strides(), vstrides.span());
  const int64_t rows = w.rows.count();
  kernels::visit(target.dtype(), Family::All, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    T* t = target.data_as<T>();
    const T* v = values.data_as<const T>();
    auto od = w.rows;
    od.seek(0);
    for (int64_t r = 0; r < rows; ++r, od.next()) {
      for (int64_t j = 0; j < w.n; ++j) {
        T& dst = t[od.offset[0] + j * w.inner[0] + offsets[od.offset[2] + j * w.inner[2]]];
        const T& src = v[od.offset[1] + j * w.inner[1]];
        if (!accumulate) {
          dst = src;
        } else if constexpr (std::is_same_v<T, bool>) {
          dst = dst || src;
        } else if constexpr (std::is_arithmetic_v<C>) {
          dst = kernels::convert<T>(C(kernels::convert<C>(dst) + kernels::convert<C>(src)));
        }
      }
    }
  });
}

// index_put.out(self, Tensor?[] indices, Tensor values, bool accumulate=False,
//   *, out) and index_put_(self, indices, values, accumulate) in place.
template <bool kInPlace>
void index_put(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kInPlace ? "aten::index_put_" : "aten::index_put.out";
  Tensor& self = args[0]->to_tensor();
  std::span<Tensor* const> indices = args[1]->to_optional_tensor_list();
  const Tensor& values = args[2]->to_tensor();
  const bool accumulate = args[3]->to_bool();
  Tensor& target = kInPlace ? self : args[4]->to_tensor();
  indexing::check_index_put(self, values, target, accumulate, op);
  kernels::IndexPlan plan = kernels::make_index_plan(self, indices, op);
  if (!kInPlace) kernels::resize_output(target, self.sizes(), op);
  const int64_t* offsets =
      kernels::run_index_plan(plan, self, target.strides(), ctx.scratch(plan.scratch_bytes()), op);
  if (!kInPlace) {
    kernels::strided_copy(ctx, target.data(), target.strides(), self.data(), self.strides(),
                          self.sizes(), self.element_size());
  }
  put_values(plan, target, offsets, values, accumulate, op);
}

}  // namespace

void register_index_ops(kernels::KernelRegistry& r) {
  r.add("aten::embedding.out", Device::CPU, &embedding_out);
  r.add("aten::index_select.out", Device::CPU, &index_select_out);
  r.add("aten::gather.out", Device::CPU, &gather_out);
  r.add("aten::scatter.src_out", Device::CPU, &scatter_out<Scatter::Src>);
  r.add("aten::scatter.value_out", Device::CPU, &scatter_out<Scatter::Value>);
  r.add("aten::scatter_add.out", Device::CPU, &scatter_out<Scatter::Add>);
  r.add("aten::masked_fill.Scalar_out", Device::CPU, &masked_fill_out);
  r.add("aten::index.Tensor_out", Device::CPU, &index_tensor_out);
  r.add("aten::index_put.out", Device::CPU, &index_put<false>);
  r.add("aten::index_put_", Device::CPU, &index_put<true>);
}

}  // namespace pterun::cpu
