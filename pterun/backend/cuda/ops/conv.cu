// The CUDA convolution (pterun/ops/conv.h: the front-end checks and
// describes the problem): pterun's own kernels (conv_tiled.cu,
// conv_warp.cu) where they time faster on the problem's first call (conv_choice.h), else cuDNN
// where it is loaded and takes the problem (conv_cudnn.cpp), else im2col +
// cuBLAS where that pays (conv_gemm.cu), else a direct convolution with one
// thread per output element, reading input, weight and out through their
// (N, C, H, W) strides, so NCHW, channels-last and any other dim order
// work without copies. Covers conv1d / conv2d, groups (depthwise
// included), stride / padding / dilation and transposed convolution with
// output_padding. Accumulates in float (f16/bf16/f32), double (f64) or
// wrapping 64-bit integers, as the CPU's direct kernel.

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/nn_device.cuh"
#include "pterun/backend/cuda/ops/conv_choice.h"
#include "pterun/backend/cuda/ops/conv_cudnn.h"
#include "pterun/backend/cuda/ops/conv_epilogue.cuh"
#include "pterun/backend/cuda/ops/conv_gemm.h"
#include "pterun/backend/cuda/ops/conv_tiled.h"
#include "pterun/backend/cuda/ops/conv_warp.h"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/nn_launch.h"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::cuda::nn {
namespace {

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

constexpr const char* kOp = "aten::convolution.out";

/// cuDNN, else im2col + cuBLAS, else the direct kernel.
void vendor_conv(KernelContext& ctx, const ops::ConvProblem& p) {
  if (cuda::nn::cudnn_conv(ctx, p, kOp)) return;
  if (cuda::nn::conv_gemm(ctx, p, kOp)) return;
  cuda::nn::run_conv(ctx, p, kOp);
}

void tiled_conv(KernelContext& ctx, const ops::ConvProblem& p) {
  cuda::nn::conv_tiled(ctx, p, false, kOp);
}

void warp_conv(KernelContext& ctx, const ops::ConvProblem& p) {
  cuda::nn::conv_warp(ctx, p, false, kOp);
}

/// Runs the fastest for `p` of `vendor` and, where they take it, pterun's
/// two kernels (conv_choice.h).
void run_fastest(KernelContext& ctx, const ops::ConvProblem& p, bool fused,
                 cuda::nn::ConvRun vendor, cuda::nn::ConvRun tiled, cuda::nn::ConvRun warp) {
  if (!cuda::nn::conv_tiled_takes(p)) {
    vendor(ctx, p);
    return;
  }
  const cuda::nn::ConvRun runs[] = {vendor, tiled, warp};
  const size_t count = cuda::nn::conv_warp_takes(p) ? 3 : 2;
  runs[cuda::nn::fastest_conv(ctx, p, fused, {runs, count})](ctx, p);
}

void convolution(KernelContext& ctx, const ops::ConvProblem& p) {
  run_fastest(ctx, p, false, &vendor_conv, &tiled_conv, &warp_conv);
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

/// The vendor's fused convolution of a problem whose residual is apart
/// from its output: cuDNN's or the im2col product, then one pass over the
/// output for what they leave (cuDNN: the bias too, in place of its own
/// add); else the direct kernel with the epilogue in its stores.
void vendor_fused(KernelContext& ctx, const ops::ConvProblem& p) {
  ops::ConvProblem q = p;
  q.residual = nullptr;
  q.activation = ops::ConvActivation::None;
  q.bias = nullptr;
  if (cuda::nn::cudnn_conv(ctx, q, kOp)) {
    cuda::nn::run_epilogue(ctx, p, true, kOp);
    return;
  }
  q.bias = p.bias;
  if (cuda::nn::conv_gemm(ctx, q, kOp)) {
    cuda::nn::run_epilogue(ctx, p, false, kOp);
    return;
  }
  cuda::nn::run_conv(ctx, p, kOp, true);
}

void tiled_fused(KernelContext& ctx, const ops::ConvProblem& p) {
  cuda::nn::conv_tiled(ctx, p, true, kOp);
}

void warp_fused(KernelContext& ctx, const ops::ConvProblem& p) {
  cuda::nn::conv_warp(ctx, p, true, kOp);
}

/// A convolution with its bias, residual and activation (ops::ConvProblem):
/// the faster of the vendor's path and pterun's own kernel (conv_choice.h);
/// with a residual that shares the output's bytes, a kernel that reads
/// each residual element just before it writes that output (untimed: the
/// timing's repeated runs would add the residual again).
void convolution_fused(KernelContext& ctx, const ops::ConvProblem& p) {
  if (residual_overlaps(p)) {
    // pterun's kernels read and write each element in one thread too, but
    // only a residual that is the output itself lines the two up.
    const bool same = p.residual == p.out &&
                      std::equal(p.residual_strides, p.residual_strides + 4, p.out_strides);
    if (same && cuda::nn::conv_tiled_takes(p) && cuda::nn::own_conv_allowed()) {
      tiled_fused(ctx, p);
    } else {
      cuda::nn::run_conv(ctx, p, kOp, true);
    }
    return;
  }
  run_fastest(ctx, p, true, &vendor_fused, &tiled_fused, &warp_fused);
}

}  // namespace

const ops::ConvBackend& conv_backend() {
  static constexpr ops::ConvBackend kConv{&convolution, &convolution_fused};
  return kConv;
}

}  // namespace pterun::kernels::cuda_ops
