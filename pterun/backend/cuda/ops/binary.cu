// Elementwise binary arithmetic on CUDA: add, sub, rsub, mul, div and the
// rounding divisions, max/min and atan2. Host checks, promotion and
// resizing are the CPU kernels' (kernels/common/elementwise_checks.h); the
// per-element functors mirror backend/cpu/ops/binary.cpp. Division-like
// ops (remainder, fmod, pow, bitwise) are in binary_ext.cu.
//
// One difference: the CPU rejects an integer division by a zero tensor
// element, which needs the divisor's values on the host; on CUDA that
// would cost a device wait per call (B19), so integer division by zero
// gives 0 instead of an error.

#include <optional>
#include <string_view>
#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/binary_functors.cuh"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/elementwise_checks.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun::kernels::cuda_ops {
namespace {

using cuda::DeviceComputeOf;
using cuda::elementwise_same;
using cuda::visit_real_dtype;
using namespace cuda::binary;  // NOLINT: the functors

// add.out(self, other, *, alpha, out) and sub.out: self +/- alpha * other.
template <bool kSubtract>
void add_sub_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kSubtract ? "aten::sub.out" : "aten::add.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Scalar alpha = args[2]->to_scalar();
  Tensor& out = args[3]->to_tensor();
  DType common = prepare_binary(a, b, out, op, !kSubtract);
  check_alpha(alpha, common, op);
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (std::is_same_v<C, bool>) {
      if constexpr (!kSubtract) {
        bool al = alpha.to_int() != 0;
        elementwise_same<S, 2>(ctx, out, {&a, &b}, AddAlpha<C, false>{al}, op);
      }
    } else {
      C al = math::scalar_as<C>(alpha);
      if (al == C(1)) {
        elementwise_same<S, 2>(ctx, out, {&a, &b}, AddSub<C, kSubtract>{}, op);
      } else {
        elementwise_same<S, 2>(ctx, out, {&a, &b}, AddAlpha<C, kSubtract>{al}, op);
      }
    }
  });
}

// add.Scalar_out(self, other, alpha, *, out) and sub.Scalar_out.
template <bool kSubtract>
void add_sub_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kSubtract ? "aten::sub.Scalar_out" : "aten::add.Scalar_out";
  const Tensor& a = args[0]->to_tensor();
  Scalar s = args[1]->to_scalar();
  Scalar alpha = args[2]->to_scalar();
  Tensor& out = args[3]->to_tensor();
  DType common = prepare_scalar(a, s, out, op, !kSubtract, /*exact_out=*/true);
  check_alpha(alpha, common, op);
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (std::is_same_v<C, bool>) {
      if constexpr (!kSubtract) {
        bool v = alpha.to_int() != 0 && s.to_int() != 0;
        elementwise_same<S, 1>(ctx, out, {&a}, AddConst<C, false>{v}, op);
      }
    } else {
      C v = C(math::scalar_as<C>(alpha) * math::scalar_as<C>(s));
      elementwise_same<S, 1>(ctx, out, {&a}, AddConst<C, kSubtract>{v}, op);
    }
  });
}

// rsub.Scalar_out(self, other, alpha, *, out): other - alpha * self.
void rsub_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::rsub.Scalar_out";
  const Tensor& a = args[0]->to_tensor();
  Scalar s = args[1]->to_scalar();
  Scalar alpha = args[2]->to_scalar();
  Tensor& out = args[3]->to_tensor();
  check_dtype(a, Family::RealHBF16, op, "self");
  DType common = prepare_scalar(a, s, out, op, false, /*exact_out=*/true);
  check_alpha(alpha, common, op);
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (!std::is_same_v<C, bool>) {
      elementwise_same<S, 1>(ctx, out, {&a},
                             RsubConst<C>{math::scalar_as<C>(s), math::scalar_as<C>(alpha)}, op);
    }
  });
}

// mul.out(self, other, *, out).
void mul_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::mul.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_binary(a, b, out, op);
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    elementwise_same<S, 2>(ctx, out, {&a, &b}, Mul<C>{}, op);
  });
}

// mul.Scalar_out(self, other, *, out).
void mul_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::mul.Scalar_out";
  const Tensor& a = args[0]->to_tensor();
  Scalar s = args[1]->to_scalar();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_scalar(a, s, out, op, true, /*exact_out=*/true);
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    elementwise_same<S, 1>(ctx, out, {&a}, MulConst<C>{math::scalar_as<C>(s)}, op);
  });
}

// ---- mul then add, fused ----------------------------------------------------

/// A product rounded exactly (never contracted with the add after it into
/// a fused multiply-add, which the separate kernels could not do).
__device__ inline float mul_exact(float x, float y) {
  return __fmul_rn(x, y);
}
__device__ inline double mul_exact(double x, double y) {
  return __dmul_rn(x, y);
}

/// mul.out's result stored as S, then add.out's (sub.out's) alpha form.
template <typename S, bool kSubtract>
struct MulAddAlpha {
  using C = DeviceComputeOf<S>;
  C alpha;
  __device__ C operator()(C x, C m, C a) const {
    const C product = cuda::convert<C>(cuda::convert<S>(mul_exact(x, m)));
    return AddAlpha<C, kSubtract>{alpha}(product, a);
  }
};

/// The same for alpha 1 (add.out's own fast case).
template <typename S, bool kSubtract>
struct MulAdd {
  using C = DeviceComputeOf<S>;
  __device__ C operator()(C x, C m, C a) const {
    const C product = cuda::convert<C>(cuda::convert<S>(mul_exact(x, m)));
    return AddSub<C, kSubtract>{}(product, a);
  }
};

// pterun::mul_add.out(self, mul_other, add_other, alpha, *, out) and
// pterun::mul_sub.out (kernels/internal_ops.h): mul.out then add.out
// (sub.out) in one pass; the executor checked the dtypes at load.
template <bool kSubtract>
void mul_add_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kSubtract ? kernels::kMulSubKernel : kernels::kMulAddKernel;
  const Tensor& x = args[0]->to_tensor();
  const Tensor& m = args[1]->to_tensor();
  const Tensor& a = args[2]->to_tensor();
  Scalar alpha = args[3]->to_scalar();
  Tensor& out = args[4]->to_tensor();
  const DType dtype = out.dtype();
  PTERUN_CHECK(x.dtype() == dtype && m.dtype() == dtype && a.dtype() == dtype,
               ErrorCode::InvalidArgument, op, ": operands must all be ", dtype_name(dtype));
  check_alpha(alpha, dtype, op);
  resize_to_broadcast(out, {&x, &m, &a}, op);
  cuda::visit_float_dtype(dtype, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    const C al = math::scalar_as<C>(alpha);
    if (al == C(1)) {
      elementwise_same<S, 3>(ctx, out, {&x, &m, &a}, MulAdd<S, kSubtract>{}, op);
    } else {
      elementwise_same<S, 3>(ctx, out, {&x, &m, &a}, MulAddAlpha<S, kSubtract>{al}, op);
    }
  });
}

// ---- division ----------------------------------------------------------------

void true_divide(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor& out,
                 const char* op) {
  check_dtype(a, Family::RealHBBF16, op, "self");
  check_dtype(b, Family::RealHBBF16, op, "other");
  check_dtype(out, Family::FloatHBF16, op, "out");
  DType common = true_division_type(a.dtype(), b.dtype(), op);
  check_can_cast(common, out.dtype(), op);
  resize_to_broadcast(out, {&a, &b}, op);
  cuda::visit_float_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    elementwise_same<S, 2>(ctx, out, {&a, &b}, Div<C>{}, op);
  });
}

// div.out(self, other, *, out): always true division.
void div_out(KernelContext& ctx, std::span<Value* const> args) {
  true_divide(ctx, args[0]->to_tensor(), args[1]->to_tensor(), args[2]->to_tensor(),
              "aten::div.out");
}

// div.out_mode(self, other, *, rounding_mode, out).
void div_mode_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::div.out_mode";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  std::optional<std::string_view> mode = rounding_mode(*args[2], op);
  if (!mode) return true_divide(ctx, a, b, out, op);
  DType common = prepare_binary(a, b, out, op, false);
  const bool trunc = *mode == "trunc";
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (!std::is_same_v<C, bool>) {
      if (trunc) {
        elementwise_same<S, 2>(ctx, out, {&a, &b}, TruncDiv<C>{}, op);
      } else {
        elementwise_same<S, 2>(ctx, out, {&a, &b}, FloorDiv<C>{}, op);
      }
    }
  });
}

void true_divide_scalar(KernelContext& ctx, const Tensor& a, const Scalar& s, Tensor& out,
                        const char* op) {
  check_dtype(a, Family::RealHBBF16, op, "self");
  DType common = is_floating(a.dtype()) ? a.dtype() : DType::Float32;
  PTERUN_CHECK(out.dtype() == common, ErrorCode::InvalidArgument, op, ": out must be ",
               dtype_name(common), ", got ", dtype_name(out.dtype()));
  resize_output(out, a.sizes(), op);
  cuda::visit_float_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    elementwise_same<S, 1>(ctx, out, {&a}, DivConst<C>{math::scalar_as<C>(s)}, op);
  });
}

// div.Scalar_out(self, other, *, out).
void div_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  true_divide_scalar(ctx, args[0]->to_tensor(), args[1]->to_scalar(), args[2]->to_tensor(),
                     "aten::div.Scalar_out");
}

// div.Scalar_mode_out(self, other, *, rounding_mode, out).
void div_scalar_mode_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::div.Scalar_mode_out";
  const Tensor& a = args[0]->to_tensor();
  Scalar s = args[1]->to_scalar();
  Tensor& out = args[3]->to_tensor();
  std::optional<std::string_view> mode = rounding_mode(*args[2], op);
  if (!mode) return true_divide_scalar(ctx, a, s, out, op);
  DType common = prepare_scalar(a, s, out, op, false, /*exact_out=*/false);
  PTERUN_CHECK(!(is_integral(common, true) && s.to_double() == 0), ErrorCode::InvalidArgument, op,
               ": integer division by zero");
  const bool trunc = *mode == "trunc";
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (!std::is_same_v<C, bool>) {
      C v = math::scalar_as<C>(s);
      if (trunc) {
        elementwise_same<S, 1>(ctx, out, {&a}, WithConst<TruncDiv<C>, C>{{}, v}, op);
      } else {
        elementwise_same<S, 1>(ctx, out, {&a}, WithConst<FloorDiv<C>, C>{{}, v}, op);
      }
    }
  });
}

// floor_divide.out(self, other, *, out).
void floor_divide_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::floor_divide.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_binary(a, b, out, op, false);
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (!std::is_same_v<C, bool>) {
      elementwise_same<S, 2>(ctx, out, {&a, &b}, FloorDiv<C>{}, op);
    }
  });
}

// ---- maximum, minimum, atan2 -------------------------------------------------

// maximum.out / minimum.out: NaN wins.
template <bool kMax>
void max_min_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kMax ? "aten::maximum.out" : "aten::minimum.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  DType common = prepare_binary(a, b, out, op);
  visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    elementwise_same<S, 2>(ctx, out, {&a, &b}, MaxMin<C, kMax>{}, op);
  });
}

// atan2.out(self, other, *, out): floating result, like true division.
void atan2_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::atan2.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  check_dtype(a, Family::RealHBBF16, op, "self");
  check_dtype(b, Family::RealHBBF16, op, "other");
  check_dtype(out, Family::FloatHBF16, op, "out");
  DType common = true_division_type(a.dtype(), b.dtype(), op);
  check_can_cast(common, out.dtype(), op);
  resize_to_broadcast(out, {&a, &b}, op);
  cuda::visit_float_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    elementwise_same<S, 2>(ctx, out, {&a, &b}, Atan2<C>{}, op);
  });
}

}  // namespace

void register_binary_ops(KernelRegistry& r) {
  r.add("aten::add.out", Device::CUDA, &add_sub_out<false>);
  r.add("aten::sub.out", Device::CUDA, &add_sub_out<true>);
  r.add("aten::mul.out", Device::CUDA, &mul_out);
  r.add("aten::add.Scalar_out", Device::CUDA, &add_sub_scalar_out<false>);
  r.add("aten::sub.Scalar_out", Device::CUDA, &add_sub_scalar_out<true>);
  r.add("aten::rsub.Scalar_out", Device::CUDA, &rsub_scalar_out);
  r.add("aten::mul.Scalar_out", Device::CUDA, &mul_scalar_out);
  r.add("aten::div.out", Device::CUDA, &div_out);
  r.add("aten::div.out_mode", Device::CUDA, &div_mode_out);
  r.add("aten::div.Scalar_out", Device::CUDA, &div_scalar_out);
  r.add("aten::div.Scalar_mode_out", Device::CUDA, &div_scalar_mode_out);
  r.add("aten::floor_divide.out", Device::CUDA, &floor_divide_out);
  r.add("aten::maximum.out", Device::CUDA, &max_min_out<true>);
  r.add("aten::minimum.out", Device::CUDA, &max_min_out<false>);
  r.add("aten::atan2.out", Device::CUDA, &atan2_out);
  r.add(kernels::kMulAddKernel, Device::CUDA, &mul_add_out<false>);
  r.add(kernels::kMulSubKernel, Device::CUDA, &mul_add_out<true>);
  register_binary_ext_ops(r);
}

}  // namespace pterun::kernels::cuda_ops
