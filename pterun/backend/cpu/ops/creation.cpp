// The CPU's creation table (pterun/ops/creation.h): the tensor fill and the
// ranges (arange, linspace), written on threads.

#include <type_traits>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/ops/creation.h"
#include "pterun/ops/shape.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;

// The value converted to out's dtype, then repeated.
void fill_tensor(KernelContext& ctx, Tensor& out, const Tensor& value, const char* op) {
  alignas(16) unsigned char element[16] = {};
  Tensor one(out.dtype(), {});
  one.set_data(element, sizeof(element));
  ops::convert_copy(ctx, one, value, op, mover());
  mover().fill(ctx, out, element);
}

/// Writes f(i) into the 1-D tensor `out` for every i, on threads.
template <typename T, typename F>
void fill_indexed(const KernelContext& ctx, Tensor& out, F f) {
  T* data = out.data_as<T>();
  const int64_t stride = out.numel() > 0 ? out.stride(0) : 1;
  cpu::parallel_for(ctx, out.numel(), 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) data[i * stride] = f(i);
  });
}

void arange(KernelContext& ctx, const ops::ArangeArgs& a) {
  kernels::visit(a.out.dtype(), Family::RealHBF16, a.op, [&]<typename T>() {
    if constexpr (std::is_integral_v<T>) {
      const int64_t s = a.start.to_int(), st = a.step.to_int();
      fill_indexed<T>(ctx, a.out, [&](int64_t i) { return kernels::convert<T>(s + i * st); });
    } else {
      using A = std::conditional_t<sizeof(T) == 2, float, double>;
      const A s = static_cast<A>(a.start.to_double()), st = static_cast<A>(a.step.to_double());
      fill_indexed<T>(ctx, a.out, [&](int64_t i) {
        return kernels::convert<T>(static_cast<A>(s + static_cast<A>(i) * st));
      });
    }
  });
}

void linspace(KernelContext& ctx, const ops::LinspaceArgs& a) {
  const int64_t steps = a.steps;
  kernels::visit(a.out.dtype(), Family::RealHBF16, "aten::linspace.out", [&]<typename T>() {
    // Integer outputs step in double from start and end truncated to T.
    using A = std::conditional_t<std::is_integral_v<T>, double, kernels::ComputeOf<T>>;
    const A s = std::is_integral_v<T> ? A(a.start.to_int()) : A(a.start.to_double());
    const A e = std::is_integral_v<T> ? A(a.end.to_int()) : A(a.end.to_double());
    const A step = steps > 1 ? (e - s) / static_cast<A>(steps - 1) : A(0);
    const int64_t half = steps / 2;
    fill_indexed<T>(ctx, a.out, [&](int64_t i) {
      A v = i < half ? s + step * static_cast<A>(i) : e - step * static_cast<A>(steps - i - 1);
      return kernels::convert<T>(steps == 1 ? s : v);
    });
  });
}

}  // namespace

const ops::CreationBackend& creation_backend() {
  static constexpr ops::CreationBackend kCreation{&fill_tensor, &arange, &linspace};
  return kCreation;
}

}  // namespace pterun::cpu
