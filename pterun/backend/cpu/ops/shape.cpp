// The CPU backend's Mover (pterun/ops/shape.h): strided copies, scratch,
// fills and dtype conversion over host memory, for the shape, copy and
// creation front-ends.

#include <algorithm>
#include <cstring>

#include "pterun/backend/cpu/engine/elementwise.h"
#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/strided_copy.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/ops/shape.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;

template <typename U>
void fill_typed(const KernelContext& ctx, U* data, int64_t n, U value) {
  cpu::parallel_for(ctx, n, 1, [&](int64_t b, int64_t e) { std::fill(data + b, data + e, value); });
}

void* cpu_scratch(KernelContext& ctx, size_t bytes) {
  return ctx.scratch(bytes);
}

void cpu_convert(const KernelContext& ctx, Tensor& out, const Tensor& src, const char* op) {
  PTERUN_CHECK(!kernels::is_complex(src.dtype()) && !kernels::is_complex(out.dtype()),
               ErrorCode::NotSupported, op, ": conversion from ", dtype_name(src.dtype()), " to ",
               dtype_name(out.dtype()), " is not supported");
  // Computing in the source's own type makes the store the only conversion.
  kernels::visit(src.dtype(), kernels::Family::All, op, [&]<typename S>() {
    cpu::map_elements<S, S, 1>(
        ctx, out, {&src}, [](S v) { return v; }, op);
  });
}

/// Zeroes `count` elements of `t` from element offset `at`, `stride` apart.
void zero_run(const Tensor& t, int64_t at, int64_t stride, int64_t count) {
  const auto es = int64_t(t.element_size());
  char* p = static_cast<char*>(t.data()) + at * es;
  if (stride == 1) {
    std::memset(p, 0, size_t(count * es));
  } else {
    for (int64_t i = 0; i < count; ++i) std::memset(p + i * stride * es, 0, size_t(es));
  }
}

void cpu_zero_triangle(const KernelContext& /*ctx*/, Tensor& out, int64_t diagonal, bool upper) {
  const size_t r = out.dim();
  const int64_t rows = out.size(r - 2), cols = out.size(r - 1);
  const int64_t row_stride = out.stride(r - 2), col_stride = out.stride(r - 1);
  const int64_t batches = out.numel() / (rows * cols);
  for (int64_t b = 0; b < batches; ++b) {
    int64_t base = 0, rem = b;
    for (size_t d = r - 2; d-- > 0;) {
      base += (rem % out.size(d)) * out.stride(d);
      rem /= out.size(d);
    }
    for (int64_t i = 0; i < rows; ++i) {
      // tril keeps columns j <= i + diagonal; triu keeps j >= i + diagonal.
      int64_t split = std::clamp(upper ? i + diagonal : i + diagonal + 1, int64_t{0}, cols);
      int64_t row = base + i * row_stride;
      if (upper) {
        zero_run(out, row, col_stride, split);
      } else {
        zero_run(out, row + split * col_stride, col_stride, cols - split);
      }
    }
  }
}

void cpu_fill(const KernelContext& ctx, Tensor& out, const void* element) {
  // Every element of a dense tensor lies in [data, data + nbytes), whatever
  // its dim order, so the fill ignores the layout.
  const int64_t n = out.numel();
  if (n == 0) return;
  const size_t es = out.element_size();
  switch (es) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, element, 1);
      fill_typed(ctx, out.data_as<uint8_t>(), n, v);
      break;
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, element, 2);
      fill_typed(ctx, out.data_as<uint16_t>(), n, v);
      break;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, element, 4);
      fill_typed(ctx, out.data_as<uint32_t>(), n, v);
      break;
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, element, 8);
      fill_typed(ctx, out.data_as<uint64_t>(), n, v);
      break;
    }
    default: {
      char* p = out.data_as<char>();
      for (int64_t i = 0; i < n; ++i) std::memcpy(p + i * int64_t(es), element, es);
    }
  }
}

}  // namespace

const ops::Mover& mover() {
  static constexpr ops::Mover kMover{
      [](const KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides, const void* src,
         std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
         size_t element_size) {
        cpu::strided_copy(ctx, dst, dst_strides, src, src_strides, sizes, element_size);
      },
      &cpu_scratch, &cpu_fill, &cpu_convert, &cpu_zero_triangle};
  return kMover;
}

}  // namespace pterun::cpu
