// pterun::rotary_half.out on the CPU (ops/elementwise.h, RotaryArgs). Built
// with -ffp-contract=off (backend/cpu/CMakeLists.txt): the product and the
// sum round separately, as the unfused mul and add do.

#include <type_traits>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/ops/elementwise_compute.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/ops/elementwise.h"

namespace pterun::cpu {

using kernels::Family;
using kernels::KernelContext;

// out = x * cos + rotate_half(x) * sin, a row of the last dim at a time;
// each product and the sum rounded to the dtype, as the unfused steps.
void elementwise::rotary(KernelContext& ctx, const ops::RotaryArgs& r) {
  const Tensor& x = r.x;
  Tensor& out = r.out;
  const size_t rank = x.dim();
  const int64_t width = x.size(rank - 1), half = width / 2;
  const int64_t rows = x.numel() / width;
  kernels::visit(x.dtype(), Family::FloatHBF16, r.op, [&]<typename T>() {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    auto round = [](C v) { return kernels::convert<C>(kernels::convert<T>(v)); };
    const T* xs = x.data_as<const T>();
    const T* cs = r.cos.data_as<const T>();
    const T* ss = r.sin.data_as<const T>();
    T* os = out.data_as<T>();
    const int64_t xl = x.stride(rank - 1), ol = out.stride(rank - 1);
    const int64_t cl = r.cos_strides[rank - 1], sl = r.sin_strides[rank - 1];
    cpu::parallel_for(ctx, rows, width, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        int64_t xo = 0, oo = 0, co = 0, so = 0, rem = row;
        for (size_t k = rank - 1; k-- > 0;) {
          const int64_t i = rem % x.size(k);
          rem /= x.size(k);
          xo += i * x.stride(k);
          oo += i * out.stride(k);
          co += i * r.cos_strides[k];
          so += i * r.sin_strides[k];
        }
        for (int64_t j = 0; j < width; ++j) {
          const C v = kernels::convert<C>(xs[xo + j * xl]);
          const C turned = j < half ? -kernels::convert<C>(xs[xo + (j + half) * xl])
                                    : kernels::convert<C>(xs[xo + (j - half) * xl]);
          const C a = round(v * kernels::convert<C>(cs[co + j * cl]));
          const C b = round(turned * kernels::convert<C>(ss[so + j * sl]));
          os[oo + j * ol] = kernels::convert<T>(a + b);
        }
      }
    });
  });
}

}  // namespace pterun::cpu
