// Activations on CUDA, mirroring backend/cpu/ops/activation.cpp: relu,
// hardtanh and clamp for any real dtype; gelu, silu, elu and the other
// floating ones with out of the input's dtype (f16/bf16 computed in float);
// glu with its own kernel, since its two inputs are halves of one tensor.

#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/device_math.cuh"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/core/text.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/elementwise_checks.h"
#include "pterun/kernels/common/elementwise_util.h"

namespace pterun::kernels::cuda_ops {
namespace {

namespace dmath = cuda::dmath;
using cuda::DeviceComputeOf;

template <typename C>
struct Relu {
  __device__ C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else {
      return x < C(0) ? C(0) : x;  // NaN stays NaN
    }
  }
};

// relu.out(self, *, out).
void relu_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::relu.out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  prepare_same_type(in, out, Family::RealHBF16, op);
  cuda::visit_real_dtype(in.dtype(), op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (!std::is_same_v<C, bool>)
      cuda::elementwise_same<S, 1>(ctx, out, {&in}, Relu<C>{}, op);
  });
}

/// max(x, lo) then min(., hi); a NaN bound makes every element NaN.
template <typename C>
struct ClampScalar {
  C lo, hi;
  bool nan;
  __device__ C operator()(C x) const {
    if (nan) return lo + hi;
    C v = x < lo ? lo : x;
    return v > hi ? hi : v;
  }
};

template <typename S>
void clamp_scalar(KernelContext& ctx, const Tensor& in, Tensor& out, DeviceComputeOf<S> lo,
                  DeviceComputeOf<S> hi, const char* op) {
  using C = DeviceComputeOf<S>;
  bool nan = math::is_nan(lo) || math::is_nan(hi);
  cuda::elementwise_same<S, 1>(ctx, out, {&in}, ClampScalar<C>{lo, hi, nan}, op);
}

// hardtanh.out(self, Scalar min_val=-1, Scalar max_val=1, *, out).
void hardtanh_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::hardtanh.out";
  const Tensor& in = args[0]->to_tensor();
  Scalar lo = args[1]->to_scalar();
  Scalar hi = args[2]->to_scalar();
  Tensor& out = args[3]->to_tensor();
  prepare_same_type(in, out, Family::RealHBF16, op);
  check_scalar_fits(lo, in.dtype(), op, "min_val");
  check_scalar_fits(hi, in.dtype(), op, "max_val");
  cuda::visit_real_dtype(in.dtype(), op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (!std::is_same_v<C, bool>) {
      clamp_scalar<S>(ctx, in, out, math::scalar_as<C>(lo), math::scalar_as<C>(hi), op);
    }
  });
}

// clamp.out(self, Scalar? min=None, Scalar? max=None, *, out): out has
// exactly the type of self promoted with the given scalars.
void clamp_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::clamp.out";
  const Tensor& in = args[0]->to_tensor();
  std::optional<Scalar> lo = args[1]->to_optional_scalar();
  std::optional<Scalar> hi = args[2]->to_optional_scalar();
  Tensor& out = args[3]->to_tensor();
  PTERUN_CHECK(lo || hi, ErrorCode::InvalidArgument, op, ": min and max are both None");
  check_dtype(in, Family::RealHBBF16, op, "self");
  DType common = in.dtype();
  if (lo) common = promote_with_scalar(common, *lo);
  if (hi) common = promote_with_scalar(common, *hi);
  PTERUN_CHECK(out.dtype() == common, ErrorCode::InvalidArgument, op, ": out must be ",
               dtype_name(common), ", got ", dtype_name(out.dtype()));
  if (lo) check_scalar_fits(*lo, common, op, "min");
  if (hi) check_scalar_fits(*hi, common, op, "max");
  resize_output(out, in.sizes(), op);
  cuda::visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    using Limits = std::numeric_limits<C>;
    C low = Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
    C high = Limits::has_infinity ? Limits::infinity() : Limits::max();
    clamp_scalar<S>(ctx, in, out, lo ? math::scalar_as<C>(*lo) : low,
                    hi ? math::scalar_as<C>(*hi) : high, op);
  });
}

template <typename C, int kWhich>  // 0: min and max, 1: min only, 2: max only
struct ClampTensor {
  __device__ C operator()(C x, C l, C h) const { return dmath::min_nan(dmath::max_nan(x, l), h); }
  __device__ C operator()(C x, C b) const {
    return kWhich == 1 ? dmath::max_nan(x, b) : dmath::min_nan(x, b);
  }
};

// clamp.Tensor_out(self, Tensor? min=None, Tensor? max=None, *, out):
// broadcast over the present tensors; a NaN anywhere gives NaN.
void clamp_tensor_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::clamp.Tensor_out";
  const Tensor& in = args[0]->to_tensor();
  const Tensor* lo = args[1]->to_optional_tensor();
  const Tensor* hi = args[2]->to_optional_tensor();
  Tensor& out = args[3]->to_tensor();
  PTERUN_CHECK(lo || hi, ErrorCode::InvalidArgument, op, ": min and max are both None");
  check_dtype(in, Family::RealHBBF16, op, "self");
  check_dtype(out, Family::RealHBBF16, op, "out");
  DType common = in.dtype();
  if (lo) {
    check_dtype(*lo, Family::RealHBBF16, op, "min");
    common = promote_types(common, lo->dtype(), op);
  }
  if (hi) {
    check_dtype(*hi, Family::RealHBBF16, op, "max");
    common = promote_types(common, hi->dtype(), op);
  }
  check_can_cast(common, out.dtype(), op);
  if (lo && hi) {
    resize_to_broadcast(out, {&in, lo, hi}, op);
  } else {
    resize_to_broadcast(out, {&in, lo ? lo : hi}, op);
  }
  cuda::visit_real_dtype(common, op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if (lo && hi) {
      cuda::elementwise_same<S, 3>(ctx, out, {&in, lo, hi}, ClampTensor<C, 0>{}, op);
    } else if (lo) {
      cuda::elementwise_same<S, 2>(ctx, out, {&in, lo}, ClampTensor<C, 1>{}, op);
    } else {
      cuda::elementwise_same<S, 2>(ctx, out, {&in, hi}, ClampTensor<C, 2>{}, op);
    }
  });
}

enum class Act { Silu, Hardsigmoid, Hardswish };

template <typename C>
__device__ __forceinline__ C hardsigmoid(C x) {
  C v = x + C(3);
  v = v < C(0) ? C(0) : v;
  return (v > C(6) ? C(6) : v) / C(6);
}

template <typename C, Act kAct>
struct FloatAct {
  __device__ C operator()(C x) const {
    if constexpr (kAct == Act::Silu) {
      return x / (C(1) + dmath::exp(-x));
    } else if constexpr (kAct == Act::Hardsigmoid) {
      return hardsigmoid(x);
    } else {
      return x * hardsigmoid(x);
    }
  }
};

/// Runs `make.template operator()<C>()`'s functor over in -> out for a
/// floating in of out's dtype, in float (double for double).
template <typename F>
void float_map(KernelContext& ctx, const Tensor& in, Tensor& out, const char* op, F&& make) {
  cuda::visit_float_dtype(in.dtype(), op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    cuda::elementwise_same<S, 1>(ctx, out, {&in}, make.template operator()<C>(), op);
  });
}

// <op>.out(self, *, out) for a floating activation without parameters.
template <OpName kName, Act kAct>
void float_activation_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kName.value;
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  prepare_same_type(in, out, Family::FloatHBF16, op);
  float_map(ctx, in, out, op, [&]<typename C>() { return FloatAct<C, kAct>{}; });
}

template <typename C, bool kTanh>
struct Gelu {
  __device__ C operator()(C x) const {
    if (dmath::is_inf(x)) return x > 0 ? x : C(0);
    if constexpr (kTanh) {
      constexpr C kBeta = C(0.7978845608028654);  // sqrt(2 / pi)
      constexpr C kKappa = C(0.044715);
      return C(0.5) * x * (C(1) + dmath::tanh(kBeta * (x + kKappa * x * x * x)));
    } else {
      constexpr C kSqrtHalf = C(0.7071067811865476);
      return C(0.5) * x * (C(1) + dmath::erf(x * kSqrtHalf));
    }
  }
};

// gelu.out(self, *, str approximate='none', out).
void gelu_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::gelu.out";
  const Tensor& in = args[0]->to_tensor();
  std::string_view approximate = args[1]->to_string();
  Tensor& out = args[2]->to_tensor();
  PTERUN_CHECK(approximate == "none" || approximate == "tanh", ErrorCode::InvalidArgument, op,
               ": approximate must be 'none' or 'tanh', got '", printable(approximate), "'");
  prepare_same_type(in, out, Family::FloatHBF16, op);
  if (approximate == "tanh") {
    float_map(ctx, in, out, op, [&]<typename C>() { return Gelu<C, true>{}; });
  } else {
    float_map(ctx, in, out, op, [&]<typename C>() { return Gelu<C, false>{}; });
  }
}

template <typename C>
struct LeakyRelu {
  C slope;
  __device__ C operator()(C x) const { return x >= C(0) ? x : x * slope; }
};

// leaky_relu.out(self, Scalar negative_slope=0.01, *, out).
void leaky_relu_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::leaky_relu.out";
  const Tensor& in = args[0]->to_tensor();
  Scalar slope = args[1]->to_scalar();
  Tensor& out = args[2]->to_tensor();
  prepare_same_type(in, out, Family::FloatHBF16, op);
  check_scalar_fits(slope, in.dtype(), op, "negative_slope");
  float_map(ctx, in, out, op,
            [&]<typename C>() { return LeakyRelu<C>{math::scalar_as<C>(slope)}; });
}

template <typename C>
struct Elu {
  C pos, neg, in_scale;
  __device__ C operator()(C x) const {
    return x > C(0) ? x * pos : dmath::expm1(x * in_scale) * neg;
  }
};

// elu.out(self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1, *, out).
void elu_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::elu.out";
  const Tensor& in = args[0]->to_tensor();
  double alpha = args[1]->to_scalar().to_double();
  double scale = args[2]->to_scalar().to_double();
  double input_scale = args[3]->to_scalar().to_double();
  Tensor& out = args[4]->to_tensor();
  prepare_same_type(in, out, Family::FloatHBF16, op);
  float_map(ctx, in, out, op, [&]<typename C>() {
    return Elu<C>{C(scale), C(alpha * scale), C(input_scale)};
  });
}

template <typename C>
struct Softplus {
  C beta, threshold;
  __device__ C operator()(C x) const {
    return x * beta > threshold ? x : dmath::log1p(dmath::exp(x * beta)) / beta;
  }
};

// softplus.out(self, Scalar beta=1, Scalar threshold=20, *, out).
void softplus_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::softplus.out";
  const Tensor& in = args[0]->to_tensor();
  double beta = args[1]->to_scalar().to_double();
  double threshold = args[2]->to_scalar().to_double();
  Tensor& out = args[3]->to_tensor();
  prepare_same_type(in, out, Family::FloatHBF16, op);
  float_map(ctx, in, out, op, [&]<typename C>() { return Softplus<C>{C(beta), C(threshold)}; });
}

// glu: out[i] = a / (1 + exp(-b)) with a, b the two halves of in along dim.
template <typename C>
__global__ void glu_kernel(cuda::StridedIndexer<2> ix, int64_t n, const void* in, DType in_dtype,
                           int64_t second, void* out, DType out_dtype) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[2];
    ix.offsets(i, off);
    C a = cuda::load_as<C>(in, in_dtype, off[1]);
    C b = cuda::load_as<C>(in, in_dtype, off[1] + second);
    cuda::store_as(out, out_dtype, off[0], a / (C(1) + dmath::exp(-b)));
  }
}

// glu.out(self, int dim=-1, *, out).
void glu_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::glu.out";
  const Tensor& in = args[0]->to_tensor();
  int64_t dim_arg = args[1]->to_int();
  Tensor& out = args[2]->to_tensor();
  check_dtype(in, Family::FloatHBF16, op, "self");
  check_dtype(out, Family::FloatHBF16, op, "out");
  PTERUN_CHECK(in.dim() >= 1, ErrorCode::InvalidArgument, op, ": self must have at least 1 dim");
  const auto dim = static_cast<size_t>(wrap_dim(dim_arg, in.dim(), op));
  const int64_t half = in.size(dim) / 2;
  PTERUN_CHECK(in.size(dim) % 2 == 0, ErrorCode::InvalidArgument, op, ": dim ", dim, " of self ",
               describe(in), " has odd size");
  Shape shape;
  for (size_t d = 0; d < in.dim(); ++d) shape.push_back(d == dim ? half : in.size(d));
  resize_output(out, shape.span(), op);
  const int64_t n = out.numel();
  if (n == 0) return;
  // Out's shape walked with out's and in's strides: in's first half.
  const cuda::StridedIndexer<2> ix =
      cuda::make_indexer<2>(out.sizes(), {out.strides(), in.strides()}, out.dim_order());
  const int64_t second = half * in.stride(dim);
  const unsigned threads = cuda::kElementwiseThreads;
  if (in.dtype() == DType::Float64) {
    glu_kernel<double><<<cuda::blocks_for(n, threads), threads, 0, cuda::stream(ctx)>>>(
        ix, n, in.data(), in.dtype(), second, out.data(), out.dtype());
  } else {
    glu_kernel<float><<<cuda::blocks_for(n, threads), threads, 0, cuda::stream(ctx)>>>(
        ix, n, in.data(), in.dtype(), second, out.data(), out.dtype());
  }
  cuda::check_launch(op);
}

}  // namespace

void register_activation_ops(KernelRegistry& r) {
  r.add("aten::relu.out", Device::CUDA, &relu_out);
  r.add("aten::hardtanh.out", Device::CUDA, &hardtanh_out);
  r.add("aten::clamp.out", Device::CUDA, &clamp_out);
  r.add("aten::clamp.Tensor_out", Device::CUDA, &clamp_tensor_out);
  r.add("aten::gelu.out", Device::CUDA, &gelu_out);
  r.add("aten::leaky_relu.out", Device::CUDA, &leaky_relu_out);
  r.add("aten::elu.out", Device::CUDA, &elu_out);
  r.add("aten::softplus.out", Device::CUDA, &softplus_out);
  r.add("aten::silu.out", Device::CUDA, &float_activation_out<"aten::silu.out", Act::Silu>);
  r.add("aten::hardsigmoid.out", Device::CUDA,
        &float_activation_out<"aten::hardsigmoid.out", Act::Hardsigmoid>);
  r.add("aten::hardswish.out", Device::CUDA,
        &float_activation_out<"aten::hardswish.out", Act::Hardswish>);
  r.add("aten::glu.out", Device::CUDA, &glu_out);
}

}  // namespace pterun::kernels::cuda_ops
