#include "pterun/kernels/common/copy_plan.h"

#include <algorithm>
#include <array>

#include "pterun/core/error.h"
#include "pterun/core/tensor.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::kernels {

CopyPlan make_copy_plan(std::span<const int64_t> dst_strides, std::span<const int64_t> src_strides,
                        std::span<const int64_t> sizes, size_t es) {
  const size_t rank = sizes.size();
  PTERUN_CHECK(rank <= kMaxRank && dst_strides.size() == rank && src_strides.size() == rank,
               ErrorCode::InvalidArgument, "strided copy: rank mismatch");
  // Order dimensions by decreasing |destination stride| (outermost first).
  std::array<size_t, kMaxRank> order{};
  for (size_t i = 0; i < rank; ++i) order[i] = i;
  sort_dims_by_stride(order.data(), rank, [&](size_t d) { return std::abs(dst_strides[d]); });
  CopyPlan p;
  for (size_t i = 0; i < rank; ++i) {
    size_t d = order[i];
    if (sizes[d] == 1) continue;
    int64_t ds = dst_strides[d] * static_cast<int64_t>(es);
    int64_t ss = src_strides[d] * static_cast<int64_t>(es);
    if (p.rank > 0) {
      size_t q = p.rank - 1;
      if (p.dst[q] == ds * sizes[d] && p.src[q] == ss * sizes[d]) {
        p.sizes[q] *= sizes[d];
        p.dst[q] = ds;
        p.src[q] = ss;
        continue;
      }
    }
    p.sizes[p.rank] = sizes[d];
    p.dst[p.rank] = ds;
    p.src[p.rank] = ss;
    ++p.rank;
  }
  return p;
}

}  // namespace pterun::kernels
