// Comparisons (eq ne lt le gt ge, tensor and scalar), logical ops and
// where on CUDA, mirroring backend/cpu/ops/compare.cpp: comparisons run in
// the promoted type and give bool, which the engine casts to any real out.

#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/elementwise_checks.h"
#include "pterun/kernels/common/elementwise_util.h"

namespace pterun::kernels::cuda_ops {
namespace {

using cuda::DeviceComputeOf;

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge };

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

// <cmp>.Tensor_out(self, other, *, out).
template <OpName kName, Cmp kCmp>
void compare_tensor_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  check_dtype(a, Family::RealHBBF16, op, "self");
  check_dtype(b, Family::RealHBBF16, op, "other");
  check_dtype(out, Family::RealHBBF16, op, "out");
  DType common = promote_types(a.dtype(), b.dtype(), op);
  resize_to_broadcast(out, {&a, &b}, op);
  cuda::visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    cuda::elementwise_same<S, 2>(ctx, out, {&a, &b}, Compare<C, kCmp>{}, op);
  });
}

// <cmp>.Scalar_out(self, other, *, out). The scalar is converted to the
// compute type first (an integer out of range wraps), as on the CPU.
template <OpName kName, Cmp kCmp>
void compare_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& a = args[0]->to_tensor();
  Scalar s = args[1]->to_scalar();
  Tensor& out = args[2]->to_tensor();
  check_dtype(a, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::RealHBBF16, op, "out");
  DType common = promote_with_scalar(a.dtype(), s);
  resize_output(out, a.sizes(), op);
  cuda::visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    cuda::elementwise_same<S, 1>(ctx, out, {&a}, CompareConst<C, kCmp>{math::scalar_as<C>(s)}, op);
  });
}

template <typename C>
struct LogicalNot {
  __device__ bool operator()(C x) const { return x == C(0); }
};

// logical_not.out(self, *, out): truthiness, nonzero -> false.
void logical_not_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::logical_not.out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  check_dtype(in, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::RealHBBF16, op, "out");
  resize_output(out, in.sizes(), op);
  cuda::visit_real_dtype(in.dtype(), op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    cuda::elementwise_same<S, 1>(ctx, out, {&in}, LogicalNot<C>{}, op);
  });
}

enum class Logic { And, Or, Xor };

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

// logical_{and,or,xor}.out(self, other, *, out): on truthiness.
template <OpName kName, Logic kOp>
void logical_binary_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  check_dtype(a, Family::RealHBBF16, op, "self");
  check_dtype(b, Family::RealHBBF16, op, "other");
  check_dtype(out, Family::RealHBBF16, op, "out");
  resize_to_broadcast(out, {&a, &b}, op);
  cuda::elementwise<bool, bool, 2>(ctx, out, {&a, &b}, Logical<kOp>{}, op);
}

template <typename C>
struct Select {
  __device__ C operator()(C m, C p, C q) const { return m != C(0) ? p : q; }
};

// where.self_out(condition, self, other, *, out): 3-way broadcast; out has
// exactly the promoted type of self and other. Selects in the compute type
// of that type; every value of it round-trips exactly through C.
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
  DType common = promote_types(a.dtype(), b.dtype(), op);
  PTERUN_CHECK(out.dtype() == common, ErrorCode::InvalidArgument, op, ": out must be ",
               dtype_name(common), ", got ", dtype_name(out.dtype()));
  resize_to_broadcast(out, {&cond, &a, &b}, op);
  cuda::visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    cuda::elementwise_strided<C, 3>(ctx, out, {&cond, &a, &b}, Select<C>{}, op);
  });
}

}  // namespace

void register_compare_ops(KernelRegistry& r) {
  r.add("aten::eq.Tensor_out", Device::CUDA, &compare_tensor_out<"aten::eq.Tensor_out", Cmp::Eq>);
  r.add("aten::ne.Tensor_out", Device::CUDA, &compare_tensor_out<"aten::ne.Tensor_out", Cmp::Ne>);
  r.add("aten::lt.Tensor_out", Device::CUDA, &compare_tensor_out<"aten::lt.Tensor_out", Cmp::Lt>);
  r.add("aten::le.Tensor_out", Device::CUDA, &compare_tensor_out<"aten::le.Tensor_out", Cmp::Le>);
  r.add("aten::gt.Tensor_out", Device::CUDA, &compare_tensor_out<"aten::gt.Tensor_out", Cmp::Gt>);
  r.add("aten::ge.Tensor_out", Device::CUDA, &compare_tensor_out<"aten::ge.Tensor_out", Cmp::Ge>);
  r.add("aten::eq.Scalar_out", Device::CUDA, &compare_scalar_out<"aten::eq.Scalar_out", Cmp::Eq>);
  r.add("aten::ne.Scalar_out", Device::CUDA, &compare_scalar_out<"aten::ne.Scalar_out", Cmp::Ne>);
  r.add("aten::lt.Scalar_out", Device::CUDA, &compare_scalar_out<"aten::lt.Scalar_out", Cmp::Lt>);
  r.add("aten::le.Scalar_out", Device::CUDA, &compare_scalar_out<"aten::le.Scalar_out", Cmp::Le>);
  r.add("aten::gt.Scalar_out", Device::CUDA, &compare_scalar_out<"aten::gt.Scalar_out", Cmp::Gt>);
  r.add("aten::ge.Scalar_out", Device::CUDA, &compare_scalar_out<"aten::ge.Scalar_out", Cmp::Ge>);
  r.add("aten::logical_not.out", Device::CUDA, &logical_not_out);
  r.add("aten::logical_and.out", Device::CUDA,
        &logical_binary_out<"aten::logical_and.out", Logic::And>);
  r.add("aten::logical_or.out", Device::CUDA,
        &logical_binary_out<"aten::logical_or.out", Logic::Or>);
  r.add("aten::logical_xor.out", Device::CUDA,
        &logical_binary_out<"aten::logical_xor.out", Logic::Xor>);
  r.add("aten::where.self_out", Device::CUDA, &where_out);
}

}  // namespace pterun::kernels::cuda_ops
