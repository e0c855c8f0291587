#include "pterun/backend/cpu/engine/strided_copy.h"

#include <cstring>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/kernels/common/copy_plan.h"

namespace pterun::cpu {

namespace {

void copy_rows(const kernels::CopyPlan& p, char* dst, const char* src, size_t es, int64_t begin,
               int64_t end) {
  // The innermost dimension is copied as one memcpy when both sides are
  // dense there, element by element otherwise.
  const size_t r = p.rank;
  const int64_t inner = r == 0 ? 1 : p.sizes[r - 1];
  const int64_t dst_inner = r == 0 ? static_cast<int64_t>(es) : p.dst[r - 1];
  const int64_t src_inner = r == 0 ? static_cast<int64_t>(es) : p.src[r - 1];
  const bool dense = dst_inner == static_cast<int64_t>(es) && src_inner == static_cast<int64_t>(es);
  for (int64_t row = begin; row < end; ++row) {
    int64_t doff = 0, soff = 0, rem = row;
    for (size_t d = r == 0 ? 0 : r - 1; d-- > 0;) {
      int64_t i = rem % p.sizes[d];
      rem /= p.sizes[d];
      doff += i * p.dst[d];
      soff += i * p.src[d];
    }
    char* dr = dst + doff;
    const char* sr = src + soff;
    if (dense) {
      std::memcpy(dr, sr, static_cast<size_t>(inner) * es);
    } else if (es == 4) {
      for (int64_t i = 0; i < inner; ++i) std::memcpy(dr + i * dst_inner, sr + i * src_inner, 4);
    } else if (es == 2) {
      for (int64_t i = 0; i < inner; ++i) std::memcpy(dr + i * dst_inner, sr + i * src_inner, 2);
    } else if (es == 8) {
      for (int64_t i = 0; i < inner; ++i) std::memcpy(dr + i * dst_inner, sr + i * src_inner, 8);
    } else {
      for (int64_t i = 0; i < inner; ++i) std::memcpy(dr + i * dst_inner, sr + i * src_inner, es);
    }
  }
}

}  // namespace

void strided_copy(const kernels::KernelContext& ctx, void* dst,
                  std::span<const int64_t> dst_strides, const void* src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                  size_t element_size) {
  if (kernels::has_zero_extent(sizes)) return;
  kernels::CopyPlan p = kernels::make_copy_plan(dst_strides, src_strides, sizes, element_size);
  int64_t inner = p.rank == 0 ? 1 : p.sizes[p.rank - 1];
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < p.rank; ++i) rows *= p.sizes[i];
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  parallel_for(ctx, rows, inner * static_cast<int64_t>(element_size) / 4 + 1,
               [&](int64_t b, int64_t e) { copy_rows(p, d, s, element_size, b, e); });
}

void strided_copy(void* dst, std::span<const int64_t> dst_strides, const void* src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                  size_t element_size) {
  kernels::KernelContext ctx;
  strided_copy(ctx, dst, dst_strides, src, src_strides, sizes, element_size);
}

}  // namespace pterun::cpu
