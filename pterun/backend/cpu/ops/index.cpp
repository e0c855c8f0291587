// Indexing on the CPU: embedding, index_select, gather, scatter (src /
// value / add), masked_fill and advanced indexing (index.Tensor, index_put)
// over kernels/common/index_util.h; the checks are the front-ends'
// (pterun/ops/index.cpp). Every index is data: all of them are
// range-checked here before anything is written, and outside parallel
// regions (an exception must not cross one).

#include <cstring>

#include "pterun/backend/cpu/engine/elementwise.h"
#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/strided_copy.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/kernels/common/index_util.h"
#include "pterun/ops/index.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;
using kernels::Odometer;

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

// ---- embedding -----------------------------------------------------------

void embedding_out(KernelContext& ctx, const ops::EmbeddingArgs& a) {
  const char* op = "aten::embedding.out";
  const Tensor& weight = a.weight;
  const Tensor& indices = a.indices;
  Tensor& out = a.out;
  check_all_in_range(indices, weight.size(0), op);
  const size_t k = indices.dim();
  Odometer<2> rows;
  for (size_t d = 0; d < k; ++d) rows.push(indices.size(d), {indices.stride(d), out.stride(d)});
  const int64_t dim = weight.size(1);
  const size_t es = weight.element_size();
  cpu::parallel_for(ctx, indices.numel(), dim, [&](int64_t b, int64_t e) {
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

void index_select_out(KernelContext& ctx, const ops::IndexSelectArgs& a) {
  const char* op = "aten::index_select.out";
  const Tensor& self = a.self;
  const int64_t rank = static_cast<int64_t>(self.dim());
  const Tensor& index = a.index;
  Tensor& out = a.out;
  const size_t dim = a.dim;
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
  cpu::parallel_for(ctx, n, slice_numel, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t v = kernels::read_index(index, i * index_stride);
      cpu::strided_copy(byte_ptr(out, i * stride_at(out, dim)), out.strides(),
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

void gather_out(KernelContext& ctx, const ops::GatherArgs& a) {
  const char* op = "aten::gather.out";
  const Tensor& self = a.self;
  const Tensor& index = a.index;
  Tensor& out = a.out;
  const size_t dim = a.dim;
  check_all_in_range(index, size_at(self, dim), op);
  const Odometer<3> walk = index_walk(index, dim, self, &out);
  const size_t es = self.element_size();
  const int64_t step = stride_at(self, dim);
  cpu::parallel_for(ctx, index.numel(), 1, [&](int64_t b, int64_t e) {
    auto od = walk;
    od.seek(b);
    for (int64_t i = b; i < e; ++i, od.next()) {
      int64_t v = kernels::read_index(index, od.offset[0]);
      std::memcpy(byte_ptr(out, od.offset[2]), byte_ptr(self, od.offset[1] + v * step), es);
    }
  });
}

/// out = self, then src's elements (value, or their sums) written at the
/// indexed positions, repeated positions in index order.
template <ops::ScatterMode kMode>
void scatter(KernelContext& ctx, const ops::ScatterArgs& a, const char* op) {
  const Tensor& self = a.self;
  const Tensor& index = a.index;
  const Tensor* src = a.src;
  Tensor& out = a.out;
  check_all_in_range(index, size_at(self, a.dim), op);
  cpu::strided_copy(ctx, out.data(), out.strides(), self.data(), self.strides(), self.sizes(),
                    self.element_size());
  Odometer<3> od = index_walk(index, a.dim, out, src);
  const int64_t step = stride_at(out, a.dim);
  kernels::visit(self.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    T* o = out.data_as<T>();
    const T* s = src != nullptr ? src->data_as<const T>() : nullptr;
    T value{};
    if constexpr (kMode == ops::ScatterMode::Value) {
      const Scalar& v = a.value;
      value =
          v.is_floating() ? kernels::convert<T>(v.to_double()) : kernels::convert<T>(v.to_int());
    }
    for (int64_t i = 0; i < index.numel(); ++i, od.next()) {
      T& dst = o[od.offset[1] + kernels::read_index(index, od.offset[0]) * step];
      if constexpr (kMode == ops::ScatterMode::Value) {
        dst = value;
      } else if constexpr (kMode == ops::ScatterMode::Src) {
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

void scatter_out(KernelContext& ctx, const ops::ScatterArgs& a) {
  switch (a.mode) {
    case ops::ScatterMode::Src:
      return scatter<ops::ScatterMode::Src>(ctx, a, "aten::scatter.src_out");
    case ops::ScatterMode::Value:
      return scatter<ops::ScatterMode::Value>(ctx, a, "aten::scatter.value_out");
    case ops::ScatterMode::Add:
      return scatter<ops::ScatterMode::Add>(ctx, a, "aten::scatter_add.out");
  }
}

// ---- masked_fill -----------------------------------------------------

void masked_fill_out(KernelContext& ctx, const ops::MaskedFillArgs& a) {
  const char* op = "aten::masked_fill.Scalar_out";
  const Tensor& self = a.self;
  const Tensor& mask = a.mask;
  const Scalar& value = a.value;
  Tensor& out = a.out;
  kernels::visit(self.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    const C v = value.is_floating() ? kernels::convert<C>(value.to_double())
                                    : kernels::convert<C>(value.to_int());
    cpu::map_elements<C, C, 2>(
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

int64_t count_mask(const Tensor& mask, const char* /*op*/) {
  return kernels::count_true(mask);
}

void index_tensor_out(KernelContext& ctx, const ops::IndexTensorArgs& a) {
  const char* op = "aten::index.Tensor_out";
  const Tensor& self = a.self;
  const kernels::IndexPlan& plan = a.plan;
  Tensor& out = a.out;
  const int64_t* offsets =
      kernels::run_index_plan(plan, self, self.strides(), ctx.scratch(plan.scratch_bytes()), op);
  if (out.numel() == 0) return;
  ResultWalk w = result_walk(plan, self.strides(), out.strides());
  const size_t es = self.element_size();
  cpu::parallel_for(ctx, w.rows.count(), w.n, [&](int64_t b, int64_t e) {
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
                const Tensor& values, std::span<const int64_t> value_strides, bool accumulate,
                const char* op) {
  if (plan.result.numel() == 0) return;
  ResultWalk w = result_walk(plan, target.strides(), value_strides);
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

void index_put(KernelContext& ctx, const ops::IndexPutArgs& a) {
  const char* op = a.in_place ? "aten::index_put_" : "aten::index_put.out";
  const Tensor& self = a.self;
  Tensor& target = a.target;
  const int64_t* offsets = kernels::run_index_plan(a.plan, self, target.strides(),
                                                   ctx.scratch(a.plan.scratch_bytes()), op);
  if (!a.in_place) {
    cpu::strided_copy(ctx, target.data(), target.strides(), self.data(), self.strides(),
                      self.sizes(), self.element_size());
  }
  put_values(a.plan, target, offsets, a.values, a.value_strides, a.accumulate, op);
}

}  // namespace

const ops::IndexBackend& index_backend() {
  static constexpr ops::IndexBackend kIndex = PTERUN_INDEX_BACKEND();
  return kIndex;
}

}  // namespace pterun::cpu
