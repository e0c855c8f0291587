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
    store_as(p.out, p.dtype, ni * p.os[0] + o * p.os[1] + y * p.os[2] + x * p.os[3], acc);
  }
}

void run_conv(kernels::KernelContext& ctx, const ops::ConvProblem& q, const char* op) {
  ConvArgs p;
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

}  // namespace

const ops::ConvBackend& conv_backend() {
  static constexpr ops::ConvBackend kConv{&convolution};
  return kConv;
}

}  // namespace pterun::kernels::cuda_ops
