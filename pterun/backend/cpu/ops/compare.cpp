// Comparisons (eq ne lt le gt ge, tensor and scalar), logical ops and
// where, over the shared elementwise engine. Comparisons run in the
// promoted type and write bool, which the engine casts to any real out.

#include <cstdint>
#include <functional>
#include <type_traits>

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/elementwise.h"
#include "pterun/kernels/common/elementwise_checks.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/kernels/common/elementwise_util.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::cpu {
namespace {

using kernels::check_dtype;
using kernels::Family;
using kernels::KernelContext;
using kernels::OpName;
namespace math = kernels::math;

/// Calls f.template operator()<C>() with C the compute type of `d`.
template <typename F>
void visit_compute(DType d, const char* op, F&& f) {
  kernels::visit(d, Family::RealHBBF16, op,
                 [&]<typename T>() { f.template operator()<kernels::ComputeOf<T>>(); });
}

// <cmp>.Tensor_out(self, other, *, out).
template <OpName kName, typename Cmp>
void compare_tensor_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  check_dtype(a, Family::RealHBBF16, op, "self");
  check_dtype(b, Family::RealHBBF16, op, "other");
  check_dtype(out, Family::RealHBBF16, op, "out");
  DType common = kernels::promote_types(a.dtype(), b.dtype(), op);
  kernels::resize_to_broadcast(out, {&a, &b}, op);
  visit_compute(common, op, [&]<typename C>() {
    kernels::map_elements<C, bool, 2>(
        ctx, out, {&a, &b}, [](C x, C y) { return Cmp{}(x, y); }, op);
  });
}

// <cmp>.Scalar_out(self, other, *, out). The scalar is converted to the
// compute type first, so an integer out of an integer tensor's range wraps
// (uint8 < -2 compares against 254), as in ExecuTorch and PyTorch.
template <OpName kName, typename Cmp>
void compare_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& a = args[0]->to_tensor();
  Scalar s = args[1]->to_scalar();
  Tensor& out = args[2]->to_tensor();
  check_dtype(a, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::RealHBBF16, op, "out");
  DType common = kernels::promote_with_scalar(a.dtype(), s);
  kernels::resize_output(out, a.sizes(), op);
  visit_compute(common, op, [&]<typename C>() {
    C v = math::scalar_as<C>(s);
    kernels::map_elements<C, bool, 1>(
        ctx, out, {&a}, [v](C x) { return Cmp{}(x, v); }, op);
  });
}

// logical_not.out(self, *, out): truthiness, nonzero -> false. Bool input
// is read as uint8, where the loop vectorises.
void logical_not_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::logical_not.out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  check_dtype(in, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::RealHBBF16, op, "out");
  kernels::resize_output(out, in.sizes(), op);
  if (in.dtype() == DType::Bool) {
    const Tensor bits = kernels::bits_view(in);
    kernels::map_elements<uint8_t, bool, 1>(
        ctx, out, {&bits}, [](uint8_t x) { return x == 0; }, op);
    return;
  }
  visit_compute(in.dtype(), op, [&]<typename C>() {
    kernels::map_elements<C, bool, 1>(
        ctx, out, {&in}, [](C x) { return x == C(0); }, op);
  });
}

// logical_{and,or,xor}.out(self, other, *, out): on truthiness.
template <OpName kName, typename Fn>
void logical_binary_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  check_dtype(a, Family::RealHBBF16, op, "self");
  check_dtype(b, Family::RealHBBF16, op, "other");
  check_dtype(out, Family::RealHBBF16, op, "out");
  kernels::resize_to_broadcast(out, {&a, &b}, op);
  kernels::map_elements<bool, bool, 2>(
      ctx, out, {&a, &b}, [](bool x, bool y) -> bool { return Fn{}(x, y); }, op);
}

// The logical functions, as bitwise ops on bools so the loops vectorise
// (GCC does not vectorise && and ||).
struct LogicalAnd {
  bool operator()(bool x, bool y) const { return x & y; }
};
struct LogicalOr {
  bool operator()(bool x, bool y) const { return x | y; }
};
struct LogicalXor {
  bool operator()(bool x, bool y) const { return x != y; }
};

// where.self_out(condition, self, other, *, out): 3-way broadcast; out has
// exactly the promoted type of self and other. When self and other already
// have that type the select moves bit patterns of the dtype's width, so no
// value is converted; otherwise it runs in the compute type.
void where_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::where.self_out";
  const Tensor& cond = args[0]->to_tensor();
  const Tensor& a = args[1]->to_tensor();
  const Tensor& b = args[2]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  PTERUN_CHECK(cond.dtype() == DType::Bool || cond.dtype() == DType::UInt8,
               ErrorCode::InvalidArgument, op, ": condition must be bool or uint8, got ",
               dtype_name(cond.dtype()));
  check_dtype(a, Family::RealHBBF16, op, "self");
  check_dtype(b, Family::RealHBBF16, op, "other");
  DType common = kernels::promote_types(a.dtype(), b.dtype(), op);
  PTERUN_CHECK(out.dtype() == common, ErrorCode::InvalidArgument, op, ": out must be ",
               dtype_name(common), ", got ", dtype_name(out.dtype()));
  kernels::resize_to_broadcast(out, {&cond, &a, &b}, op);
  const Tensor c = kernels::bits_view(cond);
  if (a.dtype() == common && b.dtype() == common) {
    const Tensor x = kernels::bits_view(a), y = kernels::bits_view(b);
    Tensor o = kernels::bits_view(out);
    auto select = [&]<typename U>() {
      kernels::map_elements<U, U, 3>(
          ctx, o, {&c, &x, &y}, [](U m, U p, U q) { return m != 0 ? p : q; }, op);
    };
    switch (out.element_size()) {
      case 1: return select.template operator()<uint8_t>();
      case 2: return select.template operator()<uint16_t>();
      case 4: return select.template operator()<uint32_t>();
      default: return select.template operator()<uint64_t>();
    }
  }
  visit_compute(common, op, [&]<typename C>() {
    kernels::map_elements<C, C, 3>(
        ctx, out, {&c, &a, &b}, [](C m, C p, C q) { return m != C(0) ? p : q; }, op);
  });
}

}  // namespace

void register_compare_ops(kernels::KernelRegistry& r) {
  r.add("aten::eq.Tensor_out", Device::CPU,
        &compare_tensor_out<"aten::eq.Tensor_out", std::equal_to<>>);
  r.add("aten::ne.Tensor_out", Device::CPU,
        &compare_tensor_out<"aten::ne.Tensor_out", std::not_equal_to<>>);
  r.add("aten::lt.Tensor_out", Device::CPU,
        &compare_tensor_out<"aten::lt.Tensor_out", std::less<>>);
  r.add("aten::le.Tensor_out", Device::CPU,
        &compare_tensor_out<"aten::le.Tensor_out", std::less_equal<>>);
  r.add("aten::gt.Tensor_out", Device::CPU,
        &compare_tensor_out<"aten::gt.Tensor_out", std::greater<>>);
  r.add("aten::ge.Tensor_out", Device::CPU,
        &compare_tensor_out<"aten::ge.Tensor_out", std::greater_equal<>>);
  r.add("aten::eq.Scalar_out", Device::CPU,
        &compare_scalar_out<"aten::eq.Scalar_out", std::equal_to<>>);
  r.add("aten::ne.Scalar_out", Device::CPU,
        &compare_scalar_out<"aten::ne.Scalar_out", std::not_equal_to<>>);
  r.add("aten::lt.Scalar_out", Device::CPU,
        &compare_scalar_out<"aten::lt.Scalar_out", std::less<>>);
  r.add("aten::le.Scalar_out", Device::CPU,
        &compare_scalar_out<"aten::le.Scalar_out", std::less_equal<>>);
  r.add("aten::gt.Scalar_out", Device::CPU,
        &compare_scalar_out<"aten::gt.Scalar_out", std::greater<>>);
  r.add("aten::ge.Scalar_out", Device::CPU,
        &compare_scalar_out<"aten::ge.Scalar_out", std::greater_equal<>>);
  r.add("aten::logical_not.out", Device::CPU, &logical_not_out);
  r.add("aten::logical_and.out", Device::CPU,
        &logical_binary_out<"aten::logical_and.out", LogicalAnd>);
  r.add("aten::logical_or.out", Device::CPU,
        &logical_binary_out<"aten::logical_or.out", LogicalOr>);
  r.add("aten::logical_xor.out", Device::CPU,
        &logical_binary_out<"aten::logical_xor.out", LogicalXor>);
  r.add("aten::where.self_out", Device::CPU, &where_out);
}

}  // namespace pterun::cpu
