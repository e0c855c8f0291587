// Elementwise binary arithmetic: one functor per op over the shared
// elementwise engine, with ExecuTorch's promotion and cast rules (ops.md 3).

#include <cmath>

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/elementwise.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;

// add.out(self, other, *, alpha, out) and sub.out: self +/- alpha * other.
template <bool kSubtract>
void add_sub_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kSubtract ? "aten::sub.out" : "aten::add.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Scalar alpha = args[2]->to_scalar();
  Tensor& out = args[3]->to_tensor();
  DType common = kernels::promote_types(a.dtype(), b.dtype(), op);
  kernels::check_can_cast(common, out.dtype(), op);
  PTERUN_CHECK(!(kSubtract && common == DType::Bool), ErrorCode::InvalidArgument, op,
               ": subtraction of bool tensors is not supported");
  PTERUN_CHECK(!(alpha.is_floating() && kernels::is_integral(common, true)),
               ErrorCode::InvalidArgument, op, ": a float alpha needs a floating result, not ",
               dtype_name(common));
  kernels::resize_to_broadcast(out, {&a, &b}, op);
  kernels::visit(common, Family::RealHBBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    if constexpr (std::is_same_v<C, bool>) {
      bool al = alpha.to_int() != 0;
      kernels::map_elements<C, C, 2>(ctx, out, {&a, &b}, [al](C x, C y) { return x || (al && y); },
                                     op);
    } else {
      C al = alpha.to<C>();
      if (al == C(1)) {
        kernels::map_elements<C, C, 2>(
            ctx, out, {&a, &b}, [](C x, C y) { return kSubtract ? C(x - y) : C(x + y); }, op);
      } else {
        kernels::map_elements<C, C, 2>(
            ctx, out, {&a, &b},
            [al](C x, C y) { return kSubtract ? C(x - al * y) : C(x + al * y); }, op);
      }
    }
  });
}

// mul.out(self, other, *, out).
void mul_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::mul.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = kernels::promote_types(a.dtype(), b.dtype(), op);
  kernels::check_can_cast(common, out.dtype(), op);
  kernels::resize_to_broadcast(out, {&a, &b}, op);
  kernels::visit(common, Family::RealHBBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    if constexpr (std::is_same_v<C, bool>) {
      kernels::map_elements<C, C, 2>(ctx, out, {&a, &b}, [](C x, C y) { return x && y; }, op);
    } else {
      kernels::map_elements<C, C, 2>(ctx, out, {&a, &b}, [](C x, C y) { return C(x * y); }, op);
    }
  });
}

}  // namespace

void register_binary_ops(kernels::KernelRegistry& r) {
  using kernels::Device;
  r.add("aten::add.out", Device::CPU, &add_sub_out<false>);
  r.add("aten::sub.out", Device::CPU, &add_sub_out<true>);
  r.add("aten::mul.out", Device::CPU, &mul_out);
}

}  // namespace pterun::cpu
