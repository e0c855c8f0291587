// The CUDA convolution (pterun/ops/conv.h: the front-end checks and
// describes the problem): cuDNN where it is loaded and takes the problem
// (conv_cudnn.cpp), else im2col + cuBLAS where that pays
// (conv_gemm.cu), else a direct convolution with one
// thread per output element, reading input, weight and out through their
// (N, C, H, W) strides, so NCHW, channels-last and any other dim order
// work without copies. Covers conv1d / conv2d, groups (depthwise
// included), stride / padding / dilation and transposed convolution with
// output_padding. Accumulates in float (f16/bf16/f32), double (f64) or
// wrapping 64-bit integers, as the CPU's direct kernel.

#include <cstdint>
#include <type_traits>
#include <utility>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/nn_device.cuh"
#include "pterun/backend/cuda/ops/conv_cudnn.h"
#include "pterun/backend/cuda/ops/conv_gemm.h"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/nn_launch.h"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::cuda::nn {
namespace {

// What a fused convolution does to each output after the convolution
// (ops::ConvProblem): the bias (when the convolution left it out), the
// residual, the activation; each step's result rounded to the dtype, as
// CUDA's unfused steps are (cuDNN's bias add comes after its rounding; for
// float16 and bfloat16 the CPU adds the bias before its one rounding).
struct Epilogue {
  const void* bias;      // or null
  const void* residual;  // or null
  int64_t rs[4];
  ops::ConvActivation activation;
  double lo, hi;
};

/// The dtype's rounding of v (nothing for float32 and float64).
template <typename Acc>
__device__ inline Acc rounded(Acc v, DType d) {
  if (d == DType::Float16) return convert<Acc>(convert<__half>(v));
  if (d == DType::BFloat16) return convert<Acc>(convert<__nv_bfloat16>(v));
  return v;
}

/// Output (ni, o, y, x) of value v (already rounded) after `f`.
template <typename Acc>
__device__ inline Acc finish(const Epilogue& f, DType d, Acc v, int64_t ni, int64_t o, int64_t y,
                             int64_t x) {
  if (f.bias != nullptr) v = rounded(v + load_as<Acc>(f.bias, d, o), d);
  if (f.residual != nullptr) {
    v = rounded(
        v + load_as<Acc>(f.residual, d, ni * f.rs[0] + o * f.rs[1] + y * f.rs[2] + x * f.rs[3]), d);
  }
  if (f.activation == ops::ConvActivation::Hardswish) {
    Acc t = v + Acc(3);
    t = t < Acc(0) ? Acc(0) : t;  // NaN stays NaN
    t = t > Acc(6) ? Acc(6) : t;
    return v * t / Acc(6);
  }
  if (f.activation == ops::ConvActivation::Clamp) {
    const Acc lo = static_cast<Acc>(f.lo), hi = static_cast<Acc>(f.hi);
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
  }
  return v;
}

/// Runs `f` over the output the convolution wrote (total elements).
template <typename Acc>
__global__ void conv_epilogue(Epilogue f, DType d, void* out, int64_t oc, int64_t oh, int64_t ow,
                              int64_t os0, int64_t os1, int64_t os2, int64_t os3, int64_t total) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t x = e % ow;
    const int64_t y = (e / ow) % oh;
    const int64_t o = (e / (ow * oh)) % oc;
    const int64_t ni = e / (ow * oh * oc);
    const int64_t at = ni * os0 + o * os1 + y * os2 + x * os3;
    store_as(out, d, at, finish(f, d, load_as<Acc>(out, d, at), ni, o, y, x));
  }
}

struct ConvArgs {
  DType dtype;
  bool transposed;
  int64_t groups, n, ic, oc, ih, iw, oh, ow, kh, kw;
  int64_t stride[2], pad[2], dilation[2];
  const void* in;
  const void* weight;
  const void* bias;
  void* out;
  int64_t is[4], ws[4], os[4];
  // Applied to each output in its store when `fused` (the bias is in the
  // sum already): a residual that is the output itself is read just
  // before its element is written.
  bool fused;
  Epilogue epilogue;
};

template <typename Acc>
__global__ void conv_direct(ConvArgs p, int64_t total) {
  const int64_t icg = p.ic / p.groups, ocg = p.oc / p.groups;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // e = ((ni * oc + o) * oh + y) * ow + x
    const int64_t x = e % p.ow;
    const int64_t y = (e / p.ow) % p.oh;
    const int64_t o = (e / (p.ow * p.oh)) % p.oc;
    const int64_t ni = e / (p.ow * p.oh * p.oc);
    const int64_t g = ocg > 0 ? o / ocg : 0;
    Acc acc = p.bias != nullptr ? load_as<Acc>(p.bias, p.dtype, o) : Acc(0);
    for (int64_t c = 0; c < icg; ++c) {
      const int64_t ci = g * icg + c;
      const int64_t plane = ni * p.is[0] + ci * p.is[1];
      for (int64_t ky = 0; ky < p.kh; ++ky) {
        int64_t iy;
        if (!p.transposed) {
          iy = y * p.stride[0] - p.pad[0] + ky * p.dilation[0];
          if (iy < 0 || iy >= p.ih) continue;
        } else {
          const int64_t t = y + p.pad[0] - ky * p.dilation[0];
          if (t < 0 || t % p.stride[0] != 0 || t / p.stride[0] >= p.ih) continue;
          iy = t / p.stride[0];
        }
        for (int64_t kx = 0; kx < p.kw; ++kx) {
          int64_t ix;
          if (!p.transposed) {
            ix = x * p.stride[1] - p.pad[1] + kx * p.dilation[1];
            if (ix < 0 || ix >= p.iw) continue;
          } else {
            const int64_t t = x + p.pad[1] - kx * p.dilation[1];
            if (t < 0 || t % p.stride[1] != 0 || t / p.stride[1] >= p.iw) continue;
            ix = t / p.stride[1];
          }
          const int64_t wo =
              p.transposed ? ci * p.ws[0] + (o - g * ocg) * p.ws[1] + ky * p.ws[2] + kx * p.ws[3]
                           : o * p.ws[0] + c * p.ws[1] + ky * p.ws[2] + kx * p.ws[3];
          acc += load_as<Acc>(p.weight, p.dtype, wo) *
                 load_as<Acc>(p.in, p.dtype, plane + iy * p.is[2] + ix * p.is[3]);
        }
      }
    }
    if constexpr (std::is_floating_point_v<Acc>) {
      if (p.fused) acc = finish(p.epilogue, p.dtype, rounded(acc, p.dtype), ni, o, y, x);
    }
    store_as(p.out, p.dtype, ni * p.os[0] + o * p.os[1] + y * p.os[2] + x * p.os[3], acc);
  }
}

Epilogue epilogue_of(const ops::ConvProblem& q, bool with_bias) {
  Epilogue f{};
  f.bias = with_bias ? q.bias : nullptr;
  f.residual = q.residual;
  for (int i = 0; i < 4; ++i) f.rs[i] = q.residual_strides[i];
  f.activation = q.activation;
  f.lo = q.clamp_min;
  f.hi = q.clamp_max;
  return f;
}

/// The direct convolution of `q`, with its epilogue in the stores when
/// `fused`.
void run_conv(kernels::KernelContext& ctx, const ops::ConvProblem& q, const char* op,
              bool fused = false) {
  ConvArgs p;
  p.fused = fused;
  p.epilogue = epilogue_of(q, false);
  p.dtype = q.dtype;
  p.transposed = q.transposed;
  p.groups = q.groups;
  p.n = q.n;
  p.ic = q.ic;
  p.oc = q.oc;
  p.ih = q.ih;
  p.iw = q.iw;
  p.oh = q.oh;
  p.ow = q.ow;
  p.kh = q.kh;
  p.kw = q.kw;
  for (int i = 0; i < 2; ++i) {
    p.stride[i] = q.stride[i];
    p.pad[i] = q.pad[i];
    p.dilation[i] = q.dilation[i];
  }
  for (int i = 0; i < 4; ++i) {
    p.is[i] = q.in_strides[i];
    p.ws[i] = q.w_strides[i];
    p.os[i] = q.out_strides[i];
  }
  p.in = q.in;
  p.weight = q.weight;
  p.bias = q.bias;
  p.out = q.out;
  const int64_t total = q.n * q.oc * q.oh * q.ow;
  if (total == 0) return;
  const unsigned blocks = blocks_for(total, 128);
  if (q.dtype == DType::Float64) {
    conv_direct<double><<<blocks, 128, 0, stream(ctx)>>>(p, total);
  } else if (kernels::is_floating(q.dtype)) {
    conv_direct<float><<<blocks, 128, 0, stream(ctx)>>>(p, total);
  } else {
    conv_direct<uint64_t><<<blocks, 128, 0, stream(ctx)>>>(p, total);
  }
  check_launch(op);
}

/// The epilogue of `q` (with its bias when `with_bias`) over the output a
/// convolution wrote.
void run_epilogue(kernels::KernelContext& ctx, const ops::ConvProblem& q, bool with_bias,
                  const char* op) {
  const Epilogue f = epilogue_of(q, with_bias);
  if (f.bias == nullptr && f.residual == nullptr && f.activation == ops::ConvActivation::None) {
    return;
  }
  const int64_t total = q.n * q.oc * q.oh * q.ow;
  if (total == 0) return;
  const int64_t* os = q.out_strides;
  const unsigned blocks = blocks_for(total, 256);
  if (q.dtype == DType::Float64) {
    conv_epilogue<double><<<blocks, 256, 0, stream(ctx)>>>(f, q.dtype, q.out, q.oc, q.oh, q.ow,
                                                           os[0], os[1], os[2], os[3], total);
  } else {
    conv_epilogue<float><<<blocks, 256, 0, stream(ctx)>>>(f, q.dtype, q.out, q.oc, q.oh, q.ow,
                                                          os[0], os[1], os[2], os[3], total);
  }
  check_launch(op);
}

}  // namespace
}  // namespace pterun::cuda::nn

namespace pterun::kernels::cuda_ops {
namespace {

void convolution(KernelContext& ctx, const ops::ConvProblem& p) {
  const char* op = "aten::convolution.out";
  if (cuda::nn::cudnn_conv(ctx, p, op)) return;
  if (cuda::nn::conv_gemm(ctx, p, op)) return;
  cuda::nn::run_conv(ctx, p, op);
}

/// True when the residual's elements and out's share bytes.
bool residual_overlaps(const ops::ConvProblem& p) {
  if (p.residual == nullptr) return false;
  const auto size = static_cast<int64_t>(element_size(p.dtype));
  auto span = [&](const void* base, const int64_t* st) {
    int64_t last = 0;
    const int64_t dims[4] = {p.n, p.oc, p.oh, p.ow};
    for (int i = 0; i < 4; ++i) last += (dims[i] - 1) * st[i];
    const auto* b = static_cast<const uint8_t*>(base);
    return std::pair<const uint8_t*, const uint8_t*>(b, b + (last + 1) * size);
  };
  const auto [r0, r1] = span(p.residual, p.residual_strides);
  const auto [o0, o1] = span(p.out, p.out_strides);
  return r0 < o1 && o0 < r1;
}

/// A convolution with its bias, residual and activation (ops::ConvProblem):
/// cuDNN's or the im2col product, then one pass over the output for what
/// they leave (cuDNN: the bias too, in place of its own add); the direct
/// kernel in its stores, which it alone can do when the residual is the
/// output itself (read just before each element is written).
void convolution_fused(KernelContext& ctx, const ops::ConvProblem& p) {
  const char* op = "aten::convolution.out";
  ops::ConvProblem q = p;
  q.residual = nullptr;
  q.activation = ops::ConvActivation::None;
  q.bias = nullptr;
  const bool apart = !residual_overlaps(p);
  if (apart && cuda::nn::cudnn_conv(ctx, q, op)) {
    cuda::nn::run_epilogue(ctx, p, true, op);
    return;
  }
  q.bias = p.bias;
  if (apart && cuda::nn::conv_gemm(ctx, q, op)) {
    cuda::nn::run_epilogue(ctx, p, false, op);
    return;
  }
  cuda::nn::run_conv(ctx, p, op, true);
}

}  // namespace

const ops::ConvBackend& conv_backend() {
  static constexpr ops::ConvBackend kConv{&convolution, &convolution_fused};
  return kConv;
}

}  // namespace pterun::kernels::cuda_ops
