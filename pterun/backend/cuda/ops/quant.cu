// Quantization on CUDA (ops/quant.h): quantize, dequantize, choose_qparams,
// the quantized add, weight sums and the quantized mean, each the CPU
// kernel's arithmetic operation for operation (backend/cpu/ops/quant.cpp):
// products and sums through __fmul_rn / __fadd_rn so that nvcc never fuses
// them into multiply-adds, which would round differently. The integer
// matrix products are in quant_gemm.cu.
//
// Parameters held in device tensors are used as they are (the front-ends
// and the loader check what the host can see): a NaN or non-positive scale
// quantizes to quant_min or dequantizes to NaN, never anything undefined.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/nn_device.cuh"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/backend/cuda/ops/quant_launch.h"
#include "pterun/kernels/common/dtype_visit.h"
#include "pterun/kernels/common/quant_math.h"
#include "pterun/ops/quant.h"

namespace pterun::cuda::quant {

// ---- parameters ----------------------------------------------------------------

__device__ inline double param_scale(const QParamsLaunch& q, int64_t c) {
  if (q.scales == nullptr) return q.scale;
  switch (q.scale_dtype) {
    case DType::Float64: return static_cast<const double*>(q.scales)[c];
    case DType::Float32: return static_cast<const float*>(q.scales)[c];
    case DType::Float16: return __half2float(static_cast<const __half*>(q.scales)[c]);
    default: return __bfloat162float(static_cast<const __nv_bfloat16*>(q.scales)[c]);
  }
}

__device__ inline int64_t param_zero_point(const QParamsLaunch& q, int64_t c) {
  if (q.zero_points == nullptr) return q.zero_point;
  return q.zp_dtype == DType::Int32 ? static_cast<const int32_t*>(q.zero_points)[c]
                                    : static_cast<const int64_t*>(q.zero_points)[c];
}

/// v rounded to float16 or bfloat16 (any other dtype: v).
__device__ inline float round_to(float v, DType d) {
  if (d == DType::Float16) return __half2float(__float2half_rn(v));
  if (d == DType::BFloat16) return __bfloat162float(float_to_bf16(v));
  return v;
}

/// s clamped to [lo, hi]; NaN gives lo.
template <typename Out>
__device__ inline Out clamp_to(double s, int64_t lo, int64_t hi) {
  if (!(s >= static_cast<double>(lo))) return static_cast<Out>(lo);
  if (s > static_cast<double>(hi)) return static_cast<Out>(hi);
  return static_cast<Out>(static_cast<int64_t>(s));
}

__device__ inline float to_float(float v) {
  return v;
}
__device__ inline float to_float(__half v) {
  return __half2float(v);
}
__device__ inline float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

// ---- quantize -------------------------------------------------------------------

template <typename In, typename Out>
__global__ void quantize_kernel(QuantizeLaunch l) {
  const In* in = static_cast<const In*>(l.in);
  Out* out = static_cast<Out*>(l.out);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < l.n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i / l.q.inner) % l.q.channels;
    const double scale = param_scale(l.q, c);
    const auto zp = static_cast<int32_t>(param_zero_point(l.q, c));
    double s;
    if (!l.zero_point_first) {
      const float inv = __fdiv_rn(1.0f, static_cast<float>(scale));
      float p;
      if constexpr (std::is_same_v<In, double>) {
        p = static_cast<float>(__dmul_rn(static_cast<double>(inv), in[i]));
      } else {
        p = __fmul_rn(inv, to_float(in[i]));
      }
      s = __fadd_rn(static_cast<float>(zp), rintf(p));
    } else if (l.wide) {
      s = rint(__dadd_rn(__dmul_rn(static_cast<double>(in[i]), __ddiv_rn(1.0, scale)),
                         static_cast<double>(zp)));
    } else {
      float inv = __fdiv_rn(1.0f, static_cast<float>(scale));
      if (l.q.scales != nullptr) inv = round_to(inv, l.q.scale_dtype);
      float v;
      if constexpr (std::is_same_v<In, double>) {
        v = static_cast<float>(in[i]);
      } else {
        v = to_float(in[i]);
      }
      s = rintf(__fadd_rn(__fmul_rn(v, inv), static_cast<float>(zp)));
    }
    out[i] = clamp_to<Out>(s, l.quant_min, l.quant_max);
  }
}

// ---- dequantize -----------------------------------------------------------------

template <typename In, typename Out>
__global__ void dequantize_kernel(DequantizeLaunch l) {
  const In* in = static_cast<const In*>(l.in);
  Out* out = static_cast<Out*>(l.out);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < l.n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i / l.q.inner) % l.q.channels;
    const int64_t d = static_cast<int64_t>(in[i]) - param_zero_point(l.q, c);
    if (l.wide) {
      const double v = __dmul_rn(static_cast<double>(d), param_scale(l.q, c));
      out[i] = l.round_to == DType::Float32
                   ? convert<Out>(v)
                   : convert<Out>(round_to(static_cast<float>(v), l.round_to));
    } else {
      const float v = __fmul_rn(static_cast<float>(d), static_cast<float>(param_scale(l.q, c)));
      out[i] = convert<Out>(round_to(v, l.round_to));
    }
  }
}

// ---- choose_qparams -------------------------------------------------------------

struct Min {
  __device__ float operator()(float a, float b) const { return fminf(a, b); }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Or {
  __device__ int operator()(int a, int b) const { return a | b; }
};
struct SumInt {
  __device__ int32_t operator()(int32_t a, int32_t b) const { return a + b; }
};

/// One block per row: its range, then ExecuTorch's parameters. A row with
/// a NaN or an infinity gets NaN and quant_min (the CPU raises).
__global__ void choose_qparams_kernel(ChooseLaunch l) {
  for (int64_t r = blockIdx.x; r < l.rows; r += gridDim.x) {
    const float* row = l.in + r * l.row_size;
    float lo = 0.0f, hi = 0.0f;
    if (l.row_size > 0) lo = hi = row[0];
    int bad = 0;
    for (int64_t i = threadIdx.x; i < l.row_size; i += nn::kBlock) {
      lo = fminf(lo, row[i]);
      hi = fmaxf(hi, row[i]);
      bad |= isfinite(row[i]) ? 0 : 1;
    }
    lo = nn::block_reduce(lo, Min{});
    hi = nn::block_reduce(hi, Max{});
    bad = nn::block_reduce(bad, Or{});
    if (threadIdx.x == 0) {
      if (bad) {
        l.scale[r] = __longlong_as_double(0x7ff8000000000000LL);
        l.zero_point[r] = l.quant_min;
      } else {
        const kernels::ChosenQParams q = kernels::choose_scale_and_zero_point(
            lo, hi, static_cast<int32_t>(l.quant_min), static_cast<int32_t>(l.quant_max));
        l.scale[r] = q.scale;
        l.zero_point[r] = q.zero_point;
      }
    }
  }
}

// ---- quantized add --------------------------------------------------------------

template <typename T>
__global__ void add_kernel(AddLaunch l) {
  const T* a = static_cast<const T*>(l.a);
  const T* b = static_cast<const T*>(l.b);
  T* out = static_cast<T*>(l.out);
  const float inv = __fdiv_rn(1.0f, l.out_q.scale);
  const auto zp = static_cast<float>(l.out_q.zero_point);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < l.n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float fa =
        __fmul_rn(static_cast<float>(static_cast<int64_t>(a[i]) - l.a_q.zero_point), l.a_q.scale);
    const float fb =
        __fmul_rn(static_cast<float>(static_cast<int64_t>(b[i]) - l.b_q.zero_point), l.b_q.scale);
    const float s = __fadd_rn(zp, rintf(__fmul_rn(inv, __fadd_rn(fa, fb))));
    out[i] = clamp_to<T>(s, l.out_min, l.out_max);
  }
}

// ---- weight sums, mean ----------------------------------------------------------

__global__ void weight_sums_kernel(const int8_t* w, int64_t n, int64_t k, int32_t* sums) {
  for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
    int32_t s = 0;
    for (int64_t i = threadIdx.x; i < k; i += nn::kBlock) s += w[r * k + i];
    s = nn::block_reduce(s, SumInt{});
    if (threadIdx.x == 0) sums[r] = s;
  }
}

template <typename In, typename Out>
__global__ void mean_kernel(MeanLaunch l) {
  const In* in = static_cast<const In*>(l.in);
  Out* out = static_cast<Out*>(l.out);
  const float inv = __fdiv_rn(1.0f, l.out_q.scale);
  const auto zp = static_cast<float>(l.out_q.zero_point);
  const int64_t total = l.outer * l.inner;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t o = e / l.inner, i = e % l.inner;
    const In* src = in + o * l.reduce * l.inner + i;
    int64_t sum = 0;
    for (int64_t r = 0; r < l.reduce; ++r) sum += src[r * l.inner];
    const float y =
        __fdiv_rn(__fmul_rn(static_cast<float>(sum - l.reduce * l.in_q.zero_point), l.in_q.scale),
                  static_cast<float>(l.reduce));
    const float s = __fadd_rn(zp, rintf(__fmul_rn(y, inv)));
    out[e] = clamp_to<Out>(s, l.out_min, l.out_max);
  }
}

// ---- dispatch -------------------------------------------------------------------

constexpr unsigned kThreads = 256;

}  // namespace pterun::cuda::quant

namespace pterun::kernels::cuda_ops {
namespace {

using namespace pterun::cuda;         // NOLINT: stream, check_launch, blocks_for
using namespace pterun::cuda::quant;  // NOLINT: this file's kernels

QParamsLaunch params_of(const ops::QParams& q) {
  QParamsLaunch l;
  l.scale = q.scale;
  l.zero_point = q.zero_point;
  l.scales = q.scales != nullptr ? q.scales->data() : nullptr;
  l.scale_dtype = q.scales != nullptr ? q.scales->dtype() : DType::Float64;
  l.zero_points = q.zero_points != nullptr ? q.zero_points->data() : nullptr;
  l.zp_dtype = q.zero_points != nullptr ? q.zero_points->dtype() : DType::Int64;
  l.channels = q.channels;
  l.inner = q.inner;
  return l;
}

void quantize(KernelContext& ctx, const ops::QuantizeArgs& a) {
  const char* op = "quantize";
  QuantizeLaunch l{a.in.data(),
                   a.out.data(),
                   a.in.numel(),
                   params_of(a.q),
                   a.quant_min,
                   a.quant_max,
                   a.rounding == ops::QRounding::ZeroPointFirst,
                   false};
  l.wide = l.zero_point_first && (a.in.dtype() == DType::Float64 ||
                                  (a.q.scales != nullptr && a.q.scales->dtype() == DType::Float64));
  kernels::visit_floating<DeviceTypes>(a.in.dtype(), op, [&]<typename In>() {
    kernels::visit_quant_int(a.out.dtype(), op, [&]<typename Out>() {
      quantize_kernel<In, Out><<<blocks_for(l.n, kThreads), kThreads, 0, stream(ctx)>>>(l);
    });
  });
  check_launch(op);
}

void dequantize(KernelContext& ctx, const ops::DequantizeArgs& a) {
  const char* op = "dequantize";
  DequantizeLaunch l{a.in.data(), a.out.data(), a.in.numel(), params_of(a.q), a.wide, a.round_to};
  kernels::visit_quant_int(a.in.dtype(), op, [&]<typename In>() {
    kernels::visit_floating<DeviceTypes>(a.out.dtype(), op, [&]<typename Out>() {
      dequantize_kernel<In, Out><<<blocks_for(l.n, kThreads), kThreads, 0, stream(ctx)>>>(l);
    });
  });
  check_launch(op);
}

void choose_qparams(KernelContext& ctx, const ops::ChooseQParamsArgs& a) {
  ChooseLaunch l{a.in.data_as<const float>(),
                 a.rows,
                 a.row_size,
                 a.quant_min,
                 a.quant_max,
                 a.scale_out.data_as<double>(),
                 a.zero_point_out.data_as<int64_t>()};
  choose_qparams_kernel<<<blocks_for(a.rows, 1), nn::kBlock, 0, stream(ctx)>>>(l);
  check_launch("choose_qparams");
}

void quantized_add(KernelContext& ctx, const ops::QuantizedAddArgs& a) {
  AddLaunch l{a.a.data(), a.b.data(), a.out.data(), a.a.numel(), a.a_q,
              a.b_q,      a.out_q,    a.out_min,    a.out_max};
  kernels::visit_quant_int(a.a.dtype(), "quantized add", [&]<typename T>() {
    add_kernel<T><<<blocks_for(l.n, kThreads), kThreads, 0, stream(ctx)>>>(l);
  });
  check_launch("quantized add");
}

void weight_sums(KernelContext& ctx, const Tensor& weight, int64_t n, int64_t k, Tensor& out) {
  weight_sums_kernel<<<blocks_for(n, 1), nn::kBlock, 0, stream(ctx)>>>(
      weight.data_as<const int8_t>(), n, k, out.data_as<int32_t>());
  check_launch("quantized weight sums");
}

void quantized_mean(KernelContext& ctx, const ops::QMeanArgs& a) {
  MeanLaunch l{a.in.data(), a.out.data(), a.outer,   a.reduce, a.inner,
               a.in_q,      a.out_q,      a.out_min, a.out_max};
  kernels::visit_q8(a.in.dtype(), [&]<typename In>() {
    kernels::visit_q8(a.out.dtype(), [&]<typename Out>() {
      mean_kernel<In, Out>
          <<<blocks_for(a.outer * a.inner, kThreads), kThreads, 0, stream(ctx)>>>(l);
    });
  });
  check_launch("quantized mean");
}

}  // namespace

const ops::QuantBackend& quant_backend() {
  static constexpr ops::QuantBackend kQuant = [] {
    ops::QuantBackend b = PTERUN_QUANT_BACKEND();
    b.dynamic_linear = &dynamic_linear;
    return b;
  }();
  return kQuant;
}

}  // namespace pterun::kernels::cuda_ops
