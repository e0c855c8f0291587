// Activations on CUDA, mirroring backend/cpu/ops/activation.cpp: relu,
// hardtanh and clamp for any real dtype; gelu, silu, elu and the other
// floating ones with out of the input's dtype (f16/bf16 computed in float);
// glu with its own kernel, since its two inputs are halves of one tensor.
// The front-ends are ops/elementwise_activation.cpp.

#include <limits>
#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/device_math.cuh"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/elementwise_compute.h"
#include "pterun/backend/cuda/ops/elementwise_functors.cuh"
#include "pterun/kernels/common/elementwise_math.h"
#include "pterun/ops/elementwise.h"

namespace pterun::kernels::cuda_ops {
namespace {

namespace dmath = cuda::dmath;
using cuda::DeviceComputeOf;
using Act = ops::ActivationFn;
using cuda::functors::ClampScalar;
using cuda::functors::FloatAct;
using cuda::functors::Gelu;
using cuda::functors::Relu;

void relu(KernelContext& ctx, const ops::ActivationArgs& a) {
  cuda::visit_real_dtype(a.in.dtype(), a.op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if constexpr (!std::is_same_v<C, bool>)
      cuda::elementwise_same<S, 1>(ctx, a.out, {&a.in}, Relu<C>{}, a.op);
  });
}

template <typename C, int kWhich>  // 0: min and max, 1: min only, 2: max only
struct ClampTensor {
  __device__ C operator()(C x, C l, C h) const { return dmath::min_nan(dmath::max_nan(x, l), h); }
  __device__ C operator()(C x, C b) const {
    return kWhich == 1 ? dmath::max_nan(x, b) : dmath::min_nan(x, b);
  }
};

/// Runs `make.template operator()<C>()`'s functor over in -> out for a
/// floating in of out's dtype, in float (double for double).
template <typename F>
void float_map(KernelContext& ctx, const ops::ActivationArgs& a, F&& make) {
  cuda::visit_float_dtype(a.in.dtype(), a.op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    cuda::elementwise_same<S, 1>(ctx, a.out, {&a.in}, make.template operator()<C>(), a.op);
  });
}

template <typename C>
struct LeakyRelu {
  C slope;
  __device__ C operator()(C x) const { return x >= C(0) ? x : x * slope; }
};

template <typename C>
struct Elu {
  C pos, neg, in_scale;
  __device__ C operator()(C x) const {
    return x > C(0) ? x * pos : dmath::expm1(x * in_scale) * neg;
  }
};

template <typename C>
struct Softplus {
  C beta, threshold;
  __device__ C operator()(C x) const {
    return x * beta > threshold ? x : dmath::log1p(dmath::exp(x * beta)) / beta;
  }
};

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

// rotary_half: out = x * cos + rotate_half(x) * sin over x's rank (at most
// kRotaryRank) dims, the last of size 2 * half; each product and the sum
// rounded to T as the unfused steps round them.
constexpr int kRotaryRank = 8;

struct RotaryGeometry {
  int rank;
  int64_t half;
  int64_t sizes[kRotaryRank];
  int64_t xs[kRotaryRank], cs[kRotaryRank], ss[kRotaryRank], os[kRotaryRank];
};

__device__ inline float mul_rn(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ inline double mul_rn(double a, double b) {
  return __dmul_rn(a, b);
}
__device__ inline float add_rn(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ inline double add_rn(double a, double b) {
  return __dadd_rn(a, b);
}

template <typename T>
__global__ void rotary_kernel(RotaryGeometry g, int64_t n, const T* x, const T* cos, const T* sin,
                              T* out) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int last = g.rank - 1;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t xo = 0, co = 0, so = 0, oo = 0, rem = i, j = 0;
    for (int d = last; d >= 0; --d) {
      const int64_t k = rem % g.sizes[d];
      rem /= g.sizes[d];
      if (d == last) j = k;
      xo += k * g.xs[d];
      co += k * g.cs[d];
      so += k * g.ss[d];
      oo += k * g.os[d];
    }
    const int64_t partner = j < g.half ? xo + g.half * g.xs[last] : xo - g.half * g.xs[last];
    const C p = cuda::convert<C>(x[partner]);
    const C turned = j < g.half ? -p : p;
    // Rounded products and sum (no fused multiply-add), as the unfused steps.
    const T a = cuda::convert<T>(mul_rn(cuda::convert<C>(x[xo]), cuda::convert<C>(cos[co])));
    const T b = cuda::convert<T>(mul_rn(turned, cuda::convert<C>(sin[so])));
    out[oo] = cuda::convert<T>(add_rn(cuda::convert<C>(a), cuda::convert<C>(b)));
  }
}

}  // namespace

void elementwise::rotary(KernelContext& ctx, const ops::RotaryArgs& r) {
  const Tensor& x = r.x;
  const auto rank = static_cast<int>(x.dim());
  PTERUN_CHECK(rank <= kRotaryRank, ErrorCode::NotSupported, r.op, ": x ", describe(x),
               " has more than ", kRotaryRank, " dims");
  RotaryGeometry g{};
  g.rank = rank;
  g.half = x.size(rank - 1) / 2;
  for (int d = 0; d < rank; ++d) {
    g.sizes[d] = x.size(d);
    g.xs[d] = x.stride(d);
    g.cs[d] = r.cos_strides[d];
    g.ss[d] = r.sin_strides[d];
    g.os[d] = r.out.stride(d);
  }
  const int64_t n = x.numel();
  cuda::visit_float_dtype(x.dtype(), r.op, [&]<typename T>() {
    rotary_kernel<T><<<cuda::blocks_for(n, 256), 256, 0, cuda::stream(ctx)>>>(
        g, n, static_cast<const T*>(x.data()), static_cast<const T*>(r.cos.data()),
        static_cast<const T*>(r.sin.data()), static_cast<T*>(r.out.data()));
  });
  cuda::check_launch(r.op);
}

void elementwise::activation(KernelContext& ctx, const ops::ActivationArgs& a) {
  switch (a.fn) {
    case Act::Relu: return relu(ctx, a);
    case Act::Silu:
      return float_map(ctx, a, [&]<typename C>() { return FloatAct<C, Act::Silu>{}; });
    case Act::Hardsigmoid:
      return float_map(ctx, a, [&]<typename C>() { return FloatAct<C, Act::Hardsigmoid>{}; });
    case Act::Hardswish:
      return float_map(ctx, a, [&]<typename C>() { return FloatAct<C, Act::Hardswish>{}; });
    case Act::Gelu: return float_map(ctx, a, [&]<typename C>() { return Gelu<C, false>{}; });
    case Act::GeluTanh: return float_map(ctx, a, [&]<typename C>() { return Gelu<C, true>{}; });
    case Act::LeakyRelu:
      return float_map(
          ctx, a, [&]<typename C>() { return LeakyRelu<C>{math::scalar_as<C>(a.negative_slope)}; });
    case Act::Elu:
      return float_map(ctx, a, [&]<typename C>() {
        return Elu<C>{C(a.scale), C(a.negative_scale), C(a.input_scale)};
      });
    case Act::Softplus:
      return float_map(ctx, a, [&]<typename C>() {
        return Softplus<C>{C(a.beta), C(a.threshold)};
      });
  }
}

// hardtanh and clamp; a missing bound is the compute type's extreme.
void elementwise::clamp(KernelContext& ctx, const ops::ClampArgs& a) {
  cuda::visit_real_dtype(a.compute, a.op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    using Limits = std::numeric_limits<C>;
    const C low = Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
    const C high = Limits::has_infinity ? Limits::infinity() : Limits::max();
    const C lo = a.lo ? math::scalar_as<C>(*a.lo) : low;
    const C hi = a.hi ? math::scalar_as<C>(*a.hi) : high;
    const bool nan = math::is_nan(lo) || math::is_nan(hi);
    cuda::elementwise_same<S, 1>(ctx, a.out, {&a.in}, ClampScalar<C>{lo, hi, nan}, a.op);
  });
}

void elementwise::clamp_tensor(KernelContext& ctx, const ops::ClampTensorArgs& a) {
  const Tensor* lo = a.lo;
  const Tensor* hi = a.hi;
  cuda::visit_real_dtype(a.compute, a.op, [&]<typename S>() {
    using C = DeviceComputeOf<S>;
    if (lo && hi) {
      cuda::elementwise_same<S, 3>(ctx, a.out, {&a.in, lo, hi}, ClampTensor<C, 0>{}, a.op);
    } else if (lo) {
      cuda::elementwise_same<S, 2>(ctx, a.out, {&a.in, lo}, ClampTensor<C, 1>{}, a.op);
    } else {
      cuda::elementwise_same<S, 2>(ctx, a.out, {&a.in, hi}, ClampTensor<C, 2>{}, a.op);
    }
  });
}

// Out's shape walked with out's and in's strides: in's first half.
void elementwise::glu(KernelContext& ctx, const ops::GluArgs& g) {
  const Tensor& in = g.in;
  Tensor& out = g.out;
  const int64_t n = out.numel();
  const cuda::StridedIndexer<2> ix =
      cuda::make_indexer<2>(out.sizes(), {out.strides(), in.strides()}, out.dim_order());
  const int64_t second = out.size(g.dim) * in.stride(g.dim);
  const unsigned threads = cuda::kElementwiseThreads;
  if (in.dtype() == DType::Float64) {
    glu_kernel<double><<<cuda::blocks_for(n, threads), threads, 0, cuda::stream(ctx)>>>(
        ix, n, in.data(), in.dtype(), second, out.data(), out.dtype());
  } else {
    glu_kernel<float><<<cuda::blocks_for(n, threads), threads, 0, cuda::stream(ctx)>>>(
        ix, n, in.data(), in.dtype(), second, out.data(), out.dtype());
  }
  cuda::check_launch(g.op);
}

}  // namespace pterun::kernels::cuda_ops
