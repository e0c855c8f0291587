// Creation ops on CUDA, mirroring backend/cpu/ops/creation.cpp: fills
// (full, zeros, ones, fill, scalar_tensor and the *_like forms), empty
// (shape only) and ranges (arange, linspace). The fill value is checked and
// converted on the host by the CPU's fill_scalar (into one host element),
// then repeated on the device.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/convert_copy.h"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/creation_util.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::kernels::cuda_ops {
namespace {

constexpr unsigned kThreads = 256;

/// 16 bytes of copies of one element.
template <typename U>
struct alignas(16) Fill16 {
  U v[16 / sizeof(U)];
};

/// out[0, n) = value; 16-byte stores when out is 16-byte aligned.
template <typename U>
__global__ void fill_kernel(U* out, int64_t n, U value) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  constexpr int kPer = 16 / sizeof(U);
  int64_t head = 0;
  if (reinterpret_cast<uintptr_t>(out) % 16 == 0) {
    Fill16<U> f;
    for (int e = 0; e < kPer; ++e) f.v[e] = value;
    const int64_t nvec = n / kPer;
    for (int64_t j = tid; j < nvec; j += step) reinterpret_cast<Fill16<U>*>(out)[j] = f;
    head = nvec * kPer;
  }
  for (int64_t i = head + tid; i < n; i += step) out[i] = value;
}

template <typename U>
void launch_fill(KernelContext& ctx, Tensor& out, const unsigned char* element) {
  U v;
  std::memcpy(&v, element, sizeof(U));
  const int64_t n = out.numel();
  const int64_t items = (n + 16 / sizeof(U) - 1) / (16 / sizeof(U));
  fill_kernel<U><<<cuda::blocks_for(items, kThreads), kThreads, 0, cuda::stream(ctx)>>>(
      static_cast<U*>(out.data()), n, v);
}

/// Writes every element of `out` as `value` converted to out's dtype, with
/// the shared checks (Error InvalidArgument when an integer output cannot
/// hold the value), through the CUDA Mover's fill.
void fill_scalar(KernelContext& ctx, Tensor& out, const Scalar& value, const char* op) {
  ops::fill_scalar(ctx, out, value, op, cuda_mover());
}

// full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out)
void full_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::full.out";
  Tensor& out = args[2]->to_tensor();
  resize_output(out, args[0]->to_int_list(), op);
  fill_scalar(ctx, out, args[1]->to_scalar(), op);
}

// full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None,
//               Tensor(a!) out)
void full_like_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::full_like.out";
  const Tensor& self = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  ops::check_memory_format(args[2]->to_optional_int(), out, op);
  resize_output(out, self.sizes(), op);
  fill_scalar(ctx, out, args[1]->to_scalar(), op);
}

// scalar_tensor.out(Scalar s, *, Tensor(a!) out): a 0-dim tensor holding s.
void scalar_tensor_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::scalar_tensor.out";
  Tensor& out = args[1]->to_tensor();
  resize_output(out, {}, op);
  fill_scalar(ctx, out, args[0]->to_scalar(), op);
}

// zeros.out / ones.out (SymInt[] size, *, Tensor(a!) out)
template <int kValue>
void constant_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kValue == 0 ? "aten::zeros.out" : "aten::ones.out";
  Tensor& out = args[1]->to_tensor();
  resize_output(out, args[0]->to_int_list(), op);
  fill_scalar(ctx, out, Scalar::from_int(kValue), op);
}

// zeros_like.out / ones_like.out (Tensor self, *, MemoryFormat? memory_format=None,
//                                 Tensor(a!) out)
template <int kValue>
void constant_like_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kValue == 0 ? "aten::zeros_like.out" : "aten::ones_like.out";
  const Tensor& self = args[0]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  ops::check_memory_format(args[1]->to_optional_int(), out, op);
  resize_output(out, self.sizes(), op);
  fill_scalar(ctx, out, Scalar::from_int(kValue), op);
}

// empty.out(SymInt[] size, *, MemoryFormat? memory_format=None, Tensor(a!) out): shape only.
void empty_out(KernelContext& /*ctx*/, std::span<Value* const> args) {
  const char* op = "aten::empty.out";
  Tensor& out = args[2]->to_tensor();
  ops::check_memory_format(args[1]->to_optional_int(), out, op);
  resize_output(out, args[0]->to_int_list(), op);
}

// empty_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
void empty_like_out(KernelContext& /*ctx*/, std::span<Value* const> args) {
  const char* op = "aten::empty_like.out";
  Tensor& out = args[2]->to_tensor();
  ops::check_memory_format(args[1]->to_optional_int(), out, op);
  resize_output(out, args[0]->to_tensor().sizes(), op);
}

// fill.Scalar_out(Tensor self, Scalar value, *, Tensor(a!) out)
void fill_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::fill.Scalar_out";
  const Tensor& self = args[0]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  ops::check_same_dtype(out, self, "out", op);
  resize_output(out, self.sizes(), op);
  fill_scalar(ctx, out, args[1]->to_scalar(), op);
}

// fill.Tensor_out(Tensor self, Tensor value, *, Tensor(a!) out): value is 0-dim (on the
// device), broadcast and converted to out's dtype.
void fill_tensor_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::fill.Tensor_out";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& value = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  ops::check_same_dtype(out, self, "out", op);
  ops::check_rank(value, 0, "a value", op);
  resize_output(out, self.sizes(), op);
  cuda::convert_copy(ctx, out, value, op);
}

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

void arange_into(KernelContext& ctx, Tensor& out, const Scalar& start, const Scalar& end,
                 const Scalar& step, const char* op) {
  prepare_arange(out, start, end, step, op);
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t stride = out.stride(0);
  const unsigned blocks = cuda::blocks_for(n, kThreads);
  cuda::visit_dtype(out.dtype(), op, [&]<typename T>() {
    T* data = static_cast<T*>(out.data());
    if constexpr (std::is_same_v<T, bool>) {
      // prepare_arange rejects bool outputs (not in RealHBF16).
    } else if constexpr (std::is_integral_v<T>) {
      arange_kernel<T, int64_t><<<blocks, kThreads, 0, cuda::stream(ctx)>>>(
          data, n, stride, start.to_int(), step.to_int());
    } else {
      using A = std::conditional_t<sizeof(T) == 2, float, double>;
      arange_kernel<T, A><<<blocks, kThreads, 0, cuda::stream(ctx)>>>(
          data, n, stride, static_cast<A>(start.to_double()), static_cast<A>(step.to_double()));
    }
  });
  cuda::check_launch(op);
}

// arange.out(Scalar end, *, Tensor(a!) out)
void arange_out(KernelContext& ctx, std::span<Value* const> args) {
  arange_into(ctx, args[1]->to_tensor(), Scalar::from_int(0), args[0]->to_scalar(),
              Scalar::from_int(1), "aten::arange.out");
}

// arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out)
void arange_start_out(KernelContext& ctx, std::span<Value* const> args) {
  arange_into(ctx, args[3]->to_tensor(), args[0]->to_scalar(), args[1]->to_scalar(),
              args[2]->to_scalar(), "aten::arange.start_out");
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

// linspace.out(Scalar start, Scalar end, int steps, *, Tensor(a!) out)
void linspace_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::linspace.out";
  const Scalar start = args[0]->to_scalar(), end = args[1]->to_scalar();
  const int64_t steps = args[2]->to_int();
  Tensor& out = args[3]->to_tensor();
  prepare_linspace(out, steps, op);
  PTERUN_CHECK(in_family(out.dtype(), Family::RealHBF16), ErrorCode::InvalidArgument, op,
               ": dtype ", dtype_name(out.dtype()), " is not supported");
  if (steps == 0) return;
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

}  // namespace

void register_creation_ops(KernelRegistry& r) {
  r.add("aten::full.out", Device::CUDA, &full_out);
  r.add("aten::full_like.out", Device::CUDA, &full_like_out);
  r.add("aten::scalar_tensor.out", Device::CUDA, &scalar_tensor_out);
  r.add("aten::zeros.out", Device::CUDA, &constant_out<0>);
  r.add("aten::ones.out", Device::CUDA, &constant_out<1>);
  r.add("aten::zeros_like.out", Device::CUDA, &constant_like_out<0>);
  r.add("aten::ones_like.out", Device::CUDA, &constant_like_out<1>);
  r.add("aten::empty.out", Device::CUDA, &empty_out);
  r.add("aten::empty_like.out", Device::CUDA, &empty_like_out);
  r.add("aten::fill.Scalar_out", Device::CUDA, &fill_scalar_out);
  r.add("aten::fill.Tensor_out", Device::CUDA, &fill_tensor_out);
  r.add("aten::arange.out", Device::CUDA, &arange_out);
  r.add("aten::arange.start_out", Device::CUDA, &arange_start_out);
  r.add("aten::linspace.out", Device::CUDA, &linspace_out);
}

}  // namespace pterun::kernels::cuda_ops
