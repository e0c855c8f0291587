#include "pterun/kernels/common/index_util.h"

#include <algorithm>

#include "pterun/core/error.h"

namespace pterun::kernels {
namespace {

bool is_mask(DType d) {
  return d == DType::Bool || d == DType::UInt8;
}

/// Logical-order odometer over every dim of `t`.
Odometer<1> logical_odometer(const Tensor& t) {
  Odometer<1> od;
  for (size_t d = 0; d < t.dim(); ++d) od.push(t.size(d), {t.stride(d)});
  od.seek(0);
  return od;
}

}  // namespace

int64_t count_true(const Tensor& mask) {
  const uint8_t* m = mask.data_as<const uint8_t>();
  Odometer<1> od = logical_odometer(mask);
  int64_t n = 0;
  for (int64_t i = 0; i < mask.numel(); ++i, od.next()) n += m[od.offset[0]] != 0;
  return n;
}

IndexPlan make_index_plan(const Tensor& self, std::span<Tensor* const> indices,
                          MaskCounter count_mask, const char* op) {
  IndexPlan p;
  const size_t rank = self.dim();
  size_t dim = 0;
  for (const Tensor* t : indices) {
    if (t == nullptr) {
      ++dim;
      continue;
    }
    if (is_mask(t->dtype())) {
      PTERUN_CHECK(t->dim() >= 1, ErrorCode::NotSupported, op,
                   ": a 0-dim mask index is not supported");
      PTERUN_CHECK(dim + t->dim() <= rank, ErrorCode::IndexOutOfRange, op,
                   ": too many indices for ", describe(self));
      for (size_t i = 0; i < t->dim(); ++i) {
        PTERUN_CHECK(t->size(i) == self.size(dim + i), ErrorCode::IndexOutOfRange, op, ": mask ",
                     describe(*t), " does not match ", describe(self), " at dim ", dim + i);
      }
      const int64_t count = count_mask(*t, op);
      for (size_t i = 0; i < t->dim(); ++i) {
        IndexSource& s = p.sources[p.num_sources++];
        s.tensor = t;
        s.mask_dim = static_cast<int64_t>(i);
        s.mask_count = count;
        s.coords_at = p.mask_coords + static_cast<int64_t>(i) * count;
        s.self_dim = dim + i;
        p.indexed.set(dim + i);
      }
      p.mask_coords += static_cast<int64_t>(t->dim()) * count;
      dim += t->dim();
      continue;
    }
    PTERUN_CHECK(t->dtype() == DType::Int64 || t->dtype() == DType::Int32, ErrorCode::InvalidType,
                 op, ": index tensors must be int64, int32, bool or uint8, not ",
                 dtype_name(t->dtype()));
    PTERUN_CHECK(dim < rank, ErrorCode::IndexOutOfRange, op, ": too many indices for ",
                 describe(self));
    IndexSource& s = p.sources[p.num_sources++];
    s.tensor = t;
    s.self_dim = dim;
    p.indexed.set(dim);
    ++dim;
  }
  PTERUN_CHECK(dim <= rank, ErrorCode::IndexOutOfRange, op, ": too many indices for ",
               describe(self));

  // Broadcast shape of the sources, right-aligned.
  for (size_t k = 0; k < p.num_sources; ++k) {
    const IndexSource& s = p.sources[k];
    const size_t r = s.mask_dim >= 0 ? 1 : s.tensor->dim();
    p.index_shape.rank = std::max(p.index_shape.rank, r);
  }
  for (size_t i = 0; i < p.index_shape.rank; ++i) p.index_shape.dims[i] = 1;
  for (size_t k = 0; k < p.num_sources; ++k) {
    const IndexSource& s = p.sources[k];
    const size_t r = s.mask_dim >= 0 ? 1 : s.tensor->dim();
    for (size_t i = 0; i < r; ++i) {
      int64_t size = s.mask_dim >= 0 ? s.mask_count : s.tensor->size(i);
      int64_t& b = p.index_shape.dims[p.index_shape.rank - r + i];
      if (size == b || size == 1) continue;
      PTERUN_CHECK(b == 1, ErrorCode::IndexOutOfRange, op,
                   ": index tensors cannot be broadcast together (size ", size, " against ", b,
                   ")");
      b = size;
    }
  }
  p.index_numel = p.index_shape.numel();

  // Result: index dims in place of adjacent indexed dims, else first.
  size_t first = rank, last = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (!p.indexed.test(d)) continue;
    first = std::min(first, d);
    last = std::max(last, d);
  }
  const bool adjacent = p.indexed.none() || last - first + 1 == p.indexed.count();
  auto push_self = [&](size_t d) {
    p.result_self_dim[p.result.rank] = static_cast<int>(d);
    p.result.push_back(self.size(d));
  };
  auto push_index = [&]() {
    p.insert_at = p.result.rank;
    for (size_t i = 0; i < p.index_shape.rank; ++i) {
      p.result_self_dim[p.result.rank] = -1;
      p.result_index_dim[p.result.rank] = static_cast<int>(i);
      p.result.push_back(p.index_shape.dims[i]);
    }
  };
  if (p.indexed.none()) {
    for (size_t d = 0; d < rank; ++d) push_self(d);
  } else if (adjacent) {
    for (size_t d = 0; d < first; ++d) push_self(d);
    push_index();
    for (size_t d = last + 1; d < rank; ++d) push_self(d);
  } else {
    push_index();
    for (size_t d = 0; d < rank; ++d) {
      if (!p.indexed.test(d)) push_self(d);
    }
  }
  return p;
}

const int64_t* run_index_plan(const IndexPlan& p, const Tensor& self,
                              std::span<const int64_t> strides, void* scratch, const char* op) {
  int64_t* coords = static_cast<int64_t*>(scratch);
  int64_t* offsets = coords + p.mask_coords;
  // Coordinates of every mask's true elements, one array per mask dim.
  for (size_t k = 0; k < p.num_sources; ++k) {
    const IndexSource& s = p.sources[k];
    if (s.mask_dim != 0) continue;
    const Tensor& mask = *s.tensor;
    const uint8_t* m = mask.data_as<const uint8_t>();
    Odometer<1> od = logical_odometer(mask);
    int64_t j = 0;
    for (int64_t i = 0; i < mask.numel(); ++i, od.next()) {
      if (m[od.offset[0]] == 0) continue;
      for (size_t d = 0; d < mask.dim(); ++d) {
        coords[s.coords_at + static_cast<int64_t>(d) * s.mask_count + j] = od.coord[d];
      }
      ++j;
    }
  }
  std::fill(offsets, offsets + p.index_numel, int64_t{0});
  const size_t ir = p.index_shape.rank;
  for (size_t k = 0; k < p.num_sources; ++k) {
    const IndexSource& s = p.sources[k];
    const int64_t size = self.size(s.self_dim);
    const int64_t stride = strides[s.self_dim];
    Odometer<1> od;
    for (size_t i = 0; i < ir; ++i) {
      int64_t st = 0;
      if (s.mask_dim >= 0) {
        st = i == ir - 1 && s.mask_count != 1 ? 1 : 0;
      } else if (i >= ir - s.tensor->dim()) {
        size_t ti = i - (ir - s.tensor->dim());
        st = s.tensor->size(ti) == 1 ? 0 : s.tensor->stride(ti);
      }
      od.push(p.index_shape.dims[i], {st});
    }
    od.seek(0);
    for (int64_t b = 0; b < p.index_numel; ++b, od.next()) {
      int64_t v = s.mask_dim >= 0 ? coords[s.coords_at + od.offset[0]]
                                  : read_index(*s.tensor, od.offset[0]);
      PTERUN_CHECK(v >= -size && v < size, ErrorCode::IndexOutOfRange, op, ": index ", v,
                   " is out of bounds for dim ", s.self_dim, " with size ", size);
      offsets[b] += (v < 0 ? v + size : v) * stride;
    }
  }
  return offsets;
}

}  // namespace pterun::kernels
