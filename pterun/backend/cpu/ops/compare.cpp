// Comparisons (eq ne lt le gt ge, tensor and scalar), logical ops and
// where on the CPU, over the shared elementwise engine. Comparisons run in
// the promoted type and write bool, which the engine casts to any real out.
// The front-ends are ops/elementwise_compare.cpp.

#include <cstdint>
#include <functional>
#include <type_traits>

#include "pterun/backend/cpu/ops/elementwise_compute.h"
#include "pterun/kernels/common/elementwise.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/kernels/common/elementwise_util.h"
#include "pterun/ops/elementwise.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;
using ops::CompareFn;
using ops::LogicalFn;
namespace math = kernels::math;

/// Calls f.template operator()<C>() with C the compute type of `d`.
template <typename F>
void visit_compute(DType d, const char* op, F&& f) {
  kernels::visit(d, Family::RealHBBF16, op,
                 [&]<typename T>() { f.template operator()<kernels::ComputeOf<T>>(); });
}

/// out = Cmp{}(a, b), or Cmp{}(a, s) with s in the compute type.
template <typename Cmp>
void compare_with(KernelContext& ctx, const ops::CompareArgs& a) {
  visit_compute(a.compute, a.op, [&]<typename C>() {
    if (a.b != nullptr) {
      kernels::map_elements<C, bool, 2>(
          ctx, a.out, {&a.a, a.b}, [](C x, C y) { return Cmp{}(x, y); }, a.op);
    } else {
      C v = math::scalar_as<C>(a.s);
      kernels::map_elements<C, bool, 1>(
          ctx, a.out, {&a.a}, [v](C x) { return Cmp{}(x, v); }, a.op);
    }
  });
}

/// out = Fn{}(a, b) on truthiness.
template <typename Fn>
void logical_with(KernelContext& ctx, const ops::LogicalArgs& a) {
  kernels::map_elements<bool, bool, 2>(
      ctx, a.out, {&a.a, a.b}, [](bool x, bool y) -> bool { return Fn{}(x, y); }, a.op);
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

// Truthiness, nonzero -> false. Bool input is read as uint8, where the
// loop vectorises.
void logical_not(KernelContext& ctx, const ops::LogicalArgs& a) {
  if (a.a.dtype() == DType::Bool) {
    const Tensor bits = kernels::bits_view(a.a);
    kernels::map_elements<uint8_t, bool, 1>(
        ctx, a.out, {&bits}, [](uint8_t x) { return x == 0; }, a.op);
    return;
  }
  visit_compute(a.a.dtype(), a.op, [&]<typename C>() {
    kernels::map_elements<C, bool, 1>(
        ctx, a.out, {&a.a}, [](C x) { return x == C(0); }, a.op);
  });
}

}  // namespace

void elementwise::compare(KernelContext& ctx, const ops::CompareArgs& a) {
  switch (a.fn) {
    case CompareFn::Eq: return compare_with<std::equal_to<>>(ctx, a);
    case CompareFn::Ne: return compare_with<std::not_equal_to<>>(ctx, a);
    case CompareFn::Lt: return compare_with<std::less<>>(ctx, a);
    case CompareFn::Le: return compare_with<std::less_equal<>>(ctx, a);
    case CompareFn::Gt: return compare_with<std::greater<>>(ctx, a);
    case CompareFn::Ge: return compare_with<std::greater_equal<>>(ctx, a);
  }
}

void elementwise::logical(KernelContext& ctx, const ops::LogicalArgs& a) {
  switch (a.fn) {
    case LogicalFn::Not: return logical_not(ctx, a);
    case LogicalFn::And: return logical_with<LogicalAnd>(ctx, a);
    case LogicalFn::Or: return logical_with<LogicalOr>(ctx, a);
    case LogicalFn::Xor: return logical_with<LogicalXor>(ctx, a);
  }
}

// When self and other already have out's dtype the select moves bit
// patterns of the dtype's width, so no value is converted; otherwise it
// runs in the compute type.
void elementwise::where(KernelContext& ctx, const ops::WhereArgs& a) {
  const Tensor c = kernels::bits_view(a.cond);
  if (a.a.dtype() == a.compute && a.b.dtype() == a.compute) {
    const Tensor x = kernels::bits_view(a.a), y = kernels::bits_view(a.b);
    Tensor o = kernels::bits_view(a.out);
    auto select = [&]<typename U>() {
      kernels::map_elements<U, U, 3>(
          ctx, o, {&c, &x, &y}, [](U m, U p, U q) { return m != 0 ? p : q; }, a.op);
    };
    switch (a.out.element_size()) {
      case 1: return select.template operator()<uint8_t>();
      case 2: return select.template operator()<uint16_t>();
      case 4: return select.template operator()<uint32_t>();
      default: return select.template operator()<uint64_t>();
    }
  }
  visit_compute(a.compute, a.op, [&]<typename C>() {
    kernels::map_elements<C, C, 3>(
        ctx, a.out, {&c, &a.a, &a.b}, [](C m, C p, C q) { return m != C(0) ? p : q; }, a.op);
  });
}

}  // namespace pterun::cpu
