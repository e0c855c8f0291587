// Comparisons (eq ne lt le gt ge, tensor and scalar), logical ops and
// where on CUDA, mirroring backend/cpu/ops/compare.cpp: comparisons run in
// the promoted type and give bool, which the engine casts to any real out.
// The front-ends are ops/elementwise_compare.cpp.

#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/elementwise_compute.h"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/ops/elementwise.h"

namespace pterun::kernels::cuda_ops {
namespace {

using cuda::DeviceComputeOf;
using Cmp = ops::CompareFn;
using Logic = ops::LogicalFn;

template <Cmp kCmp, typename C>
__device__ __forceinline__ bool compare(C x, C y) {
  if constexpr (kCmp == Cmp::Eq)
    return x == y;
  else if constexpr (kCmp == Cmp::Ne)
    return x != y;
  else if constexpr (kCmp == Cmp::Lt)
    return x < y;
  else if constexpr (kCmp == Cmp::Le)
    return x <= y;
  else if constexpr (kCmp == Cmp::Gt)
    return x > y;
  else
    return x >= y;
}

template <typename C, Cmp kCmp>
struct Compare {
  __device__ bool operator()(C x, C y) const { return compare<kCmp>(x, y); }
};

template <typename C, Cmp kCmp>
struct CompareConst {
  C v;
  __device__ bool operator()(C x) const { return compare<kCmp>(x, v); }
};

/// out = a <cmp> b, or a <cmp> s with s in the compute type (an integer
/// out of range wraps), as on the CPU.
template <Cmp kCmp>
void compare_with(KernelContext& ctx, const ops::CompareArgs& a) {
  cuda::visit_real_dtype(a.compute, a.op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if (a.b != nullptr) {
      cuda::elementwise_same<S, 2>(ctx, a.out, {&a.a, a.b}, Compare<C, kCmp>{}, a.op);
    } else {
      cuda::elementwise_same<S, 1>(ctx, a.out, {&a.a},
                                   CompareConst<C, kCmp>{math::scalar_as<C>(a.s)}, a.op);
    }
  });
}

template <typename C>
struct LogicalNot {
  __device__ bool operator()(C x) const { return x == C(0); }
};

template <Logic kOp>
struct Logical {
  __device__ bool operator()(bool x, bool y) const {
    if constexpr (kOp == Logic::And)
      return x && y;
    else if constexpr (kOp == Logic::Or)
      return x || y;
    else
      return x != y;
  }
};

template <typename C>
struct Select {
  __device__ C operator()(C m, C p, C q) const { return m != C(0) ? p : q; }
};

}  // namespace

void elementwise::compare(KernelContext& ctx, const ops::CompareArgs& a) {
  switch (a.fn) {
    case Cmp::Eq: return compare_with<Cmp::Eq>(ctx, a);
    case Cmp::Ne: return compare_with<Cmp::Ne>(ctx, a);
    case Cmp::Lt: return compare_with<Cmp::Lt>(ctx, a);
    case Cmp::Le: return compare_with<Cmp::Le>(ctx, a);
    case Cmp::Gt: return compare_with<Cmp::Gt>(ctx, a);
    case Cmp::Ge: return compare_with<Cmp::Ge>(ctx, a);
  }
}

// On truthiness: not (nonzero -> false), and, or, xor.
void elementwise::logical(KernelContext& ctx, const ops::LogicalArgs& a) {
  switch (a.fn) {
    case Logic::Not:
      return cuda::visit_real_dtype(a.a.dtype(), a.op, [&]<typename S>() {
        using C = DeviceComputeOf<S>;
        cuda::elementwise_same<S, 1>(ctx, a.out, {&a.a}, LogicalNot<C>{}, a.op);
      });
    case Logic::And:
      return cuda::elementwise<bool, bool, 2>(ctx, a.out, {&a.a, a.b}, Logical<Logic::And>{}, a.op);
    case Logic::Or:
      return cuda::elementwise<bool, bool, 2>(ctx, a.out, {&a.a, a.b}, Logical<Logic::Or>{}, a.op);
    case Logic::Xor:
      return cuda::elementwise<bool, bool, 2>(ctx, a.out, {&a.a, a.b}, Logical<Logic::Xor>{}, a.op);
  }
}

// Selects in the compute type of out's dtype; every value of it
// round-trips exactly through C.
void elementwise::where(KernelContext& ctx, const ops::WhereArgs& a) {
  cuda::visit_real_dtype(a.compute, a.op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    cuda::elementwise_strided<C, 3>(ctx, a.out, {&a.cond, &a.a, &a.b}, Select<C>{}, a.op);
  });
}

}  // namespace pterun::kernels::cuda_ops
