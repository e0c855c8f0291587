#include "pterun/kernels/common/reduce_util.h"

#include "pterun/core/error.h"

namespace pterun::kernels {

DimMask reduce_dim_mask(std::optional<std::span<const int64_t>> dims, int64_t rank,
                        const char* op) {
  DimMask mask;
  if (!dims.has_value() || dims->empty()) {
    for (int64_t d = 0; d < rank; ++d) mask.set(static_cast<size_t>(d));
    return mask;
  }
  for (int64_t d : *dims) {
    int64_t w = wrap_dim(d, rank, op);
    if (rank == 0) continue;
    PTERUN_CHECK(!mask.test(static_cast<size_t>(w)), ErrorCode::InvalidArgument, op, ": dimension ",
                 d, " appears more than once in the dim list");
    mask.set(static_cast<size_t>(w));
  }
  return mask;
}

Shape reduced_shape(const Tensor& in, DimMask mask, bool keepdim) {
  Shape s;
  for (size_t d = 0; d < in.dim(); ++d) {
    if (!mask.test(d)) {
      s.push_back(in.size(d));
    } else if (keepdim) {
      s.push_back(1);
    }
  }
  return s;
}

int64_t reduced_count(const Tensor& in, DimMask mask) {
  int64_t n = 1;
  for (size_t d = 0; d < in.dim(); ++d) {
    if (mask.test(d)) n *= in.size(d);
  }
  return n;
}

std::array<int64_t, kMaxRank> reduced_out_strides(const Tensor& in, const Tensor& out, DimMask mask,
                                                  bool keepdim) {
  std::array<int64_t, kMaxRank> s{};
  size_t o = 0;
  for (size_t d = 0; d < in.dim(); ++d) {
    if (!mask.test(d)) {
      s[d] = out.stride(o++);
    } else {
      s[d] = 0;
      if (keepdim) ++o;
    }
  }
  return s;
}

ReducePlan make_reduce_plan(const Tensor& in, const Tensor& out, DimMask mask, bool keepdim) {
  const size_t rank = in.dim();
  const std::array<int64_t, kMaxRank> out_strides = reduced_out_strides(in, out, mask, keepdim);
  std::array<size_t, kMaxRank> order{};
  for (size_t d = 0; d < rank; ++d) order[d] = d;
  kernels::sort_dims_by_stride(order.data(), rank, [&](size_t d) { return in.stride(d); });
  ReducePlan p;
  for (size_t i = 0; i < rank; ++i) {
    const size_t d = order[i];
    const int64_t size = in.size(d);
    if (mask.test(d)) {
      p.count *= size;
    } else {
      p.num_out *= size;
    }
    if (mask.test(d)) {
      p.reduced.push_merged(size, {in.stride(d)});
    } else {
      p.kept.push_merged(size, {in.stride(d), out_strides[d]});
    }
  }
  return p;
}

}  // namespace pterun::kernels
