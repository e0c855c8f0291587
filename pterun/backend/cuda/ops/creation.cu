// The CUDA creation table (pterun/ops/creation.h): the tensor fill (the
// copy table's convert_copy, broadcasting the 0-dim value) and the ranges
// (arange, linspace), with the CPU's arithmetic.

#include <cstdint>
#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/convert_copy.h"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/ops/creation.h"

namespace pterun::kernels::cuda_ops {
namespace {

constexpr unsigned kThreads = 256;

/// out[i * stride] = start + i * step; A is the arithmetic type (int64 for
/// integer outputs, float for f16/bf16, double for f32/f64, as on the CPU).
template <typename T, typename A>
__global__ void arange_kernel(T* out, int64_t n, int64_t stride, A start, A step) {
  const int64_t grid = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += grid) {
    A v;
    if constexpr (std::is_same_v<A, float>) {
      v = __fadd_rn(start, __fmul_rn(static_cast<float>(i), step));  // no FMA: as the CPU
    } else if constexpr (std::is_same_v<A, double>) {
      v = __dadd_rn(start, __dmul_rn(static_cast<double>(i), step));
    } else {
      v = start + i * step;
    }
    out[i * stride] = cuda::convert<T>(v);
  }
}

void arange(KernelContext& ctx, const ops::ArangeArgs& a) {
  const char* op = a.op;
  Tensor& out = a.out;
  const int64_t n = out.numel();
  const int64_t stride = out.stride(0);
  const unsigned blocks = cuda::blocks_for(n, kThreads);
  cuda::visit_dtype(out.dtype(), op, [&]<typename T>() {
    T* data = static_cast<T*>(out.data());
    if constexpr (std::is_same_v<T, bool>) {
      // The front-end rejects bool outputs (not in RealHBF16).
    } else if constexpr (std::is_integral_v<T>) {
      arange_kernel<T, int64_t><<<blocks, kThreads, 0, cuda::stream(ctx)>>>(
          data, n, stride, a.start.to_int(), a.step.to_int());
    } else {
      using A = std::conditional_t<sizeof(T) == 2, float, double>;
      arange_kernel<T, A><<<blocks, kThreads, 0, cuda::stream(ctx)>>>(
          data, n, stride, static_cast<A>(a.start.to_double()), static_cast<A>(a.step.to_double()));
    }
  });
  cuda::check_launch(op);
}

/// linspace: the first half counted from start, the second from end.
template <typename T, typename A>
__global__ void linspace_kernel(T* out, int64_t steps, int64_t stride, A start, A end, A step) {
  const int64_t grid = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t half = steps / 2;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < steps;
       i += grid) {
    A v;
    if (steps == 1) {
      v = start;
    } else if constexpr (std::is_same_v<A, float>) {
      v = i < half ? __fadd_rn(start, __fmul_rn(step, static_cast<float>(i)))
                   : __fsub_rn(end, __fmul_rn(step, static_cast<float>(steps - i - 1)));
    } else {
      v = i < half ? __dadd_rn(start, __dmul_rn(step, static_cast<double>(i)))
                   : __dsub_rn(end, __dmul_rn(step, static_cast<double>(steps - i - 1)));
    }
    out[i * stride] = cuda::convert<T>(v);
  }
}

void linspace(KernelContext& ctx, const ops::LinspaceArgs& a) {
  const char* op = "aten::linspace.out";
  Tensor& out = a.out;
  const int64_t steps = a.steps;
  const Scalar& start = a.start;
  const Scalar& end = a.end;
  const int64_t stride = out.stride(0);
  const unsigned blocks = cuda::blocks_for(steps, kThreads);
  cuda::visit_dtype(out.dtype(), op, [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      // Integer outputs step in double from start and end truncated to int64.
      using A =
          std::conditional_t<std::is_integral_v<T> || std::is_same_v<T, double>, double, float>;
      const A s = std::is_integral_v<T> ? A(start.to_int()) : A(start.to_double());
      const A e = std::is_integral_v<T> ? A(end.to_int()) : A(end.to_double());
      const A step = steps > 1 ? (e - s) / static_cast<A>(steps - 1) : A(0);
      linspace_kernel<T, A><<<blocks, kThreads, 0, cuda::stream(ctx)>>>(static_cast<T*>(out.data()),
                                                                        steps, stride, s, e, step);
    }
  });
  cuda::check_launch(op);
}

void fill_tensor(KernelContext& ctx, Tensor& out, const Tensor& value, const char* op) {
  cuda::convert_copy(ctx, out, value, op);
}

}  // namespace

const ops::CreationBackend& creation_backend() {
  static constexpr ops::CreationBackend kCreation{&fill_tensor, &arange, &linspace};
  return kCreation;
}

}  // namespace pterun::kernels::cuda_ops
