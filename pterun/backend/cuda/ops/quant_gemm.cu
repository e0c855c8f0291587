// The quantized linear and 2-D convolution on CUDA (ops/quant.h): one
// int8 matrix product with __dp4a (four int8 products summed into int32 per
// instruction), tiled through shared memory; convolution gathers its
// activation tiles straight from the image (an implicit im2col). The
// weights are read as the program stores them ([N, K] rows). The
// requantization is the CPU's (backend/cpu/ops/quant_requant.h), operation
// for operation.
//
// __dp4a takes signed bytes on both sides: a uint8 activation x goes in
// as x - 128, and sum_k (x - zero_point) * w = d - (zero_point - shift) *
// sum_k w, with d the product of what went in and `shift` 128 or 0.

#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/backend/cuda/ops/quant_launch.h"
#include "pterun/ops/quant.h"

namespace pterun::cuda::quant {

constexpr int kTile = 32;           // rows and columns of a block's output tile
constexpr int kDepth = 32;          // bytes of K per step
constexpr int kQuads = kDepth / 4;  // packed int32 words per row per step
constexpr int kSide = 16;           // threads per side; each computes 2 x 2 outputs

struct GemmLaunch {
  // Activations: rows of K bytes (linear) or an image (convolution).
  const void* in;
  bool in_unsigned;
  int32_t in_zero_point;
  const int8_t* weight;  // groups * n rows of k bytes
  const int32_t* weight_sums;
  const void* weight_scales;
  bool scales_double;
  bool one_scale;
  const float* bias;  // or nullptr
  float in_scale;
  float out_inv;  // 1 / out scale
  float out_zero_point;
  int32_t out_min;
  int32_t out_max;
  void* out;
  bool out_unsigned;
  int64_t m, n, k;  // per group
  // Convolution only (conv == false: out is [m, n] row-major).
  bool conv;
  bool weight_channels_last;
  int64_t cg, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t in_strides[4];
  int64_t out_strides[4];
};

/// Activation (row r, depth kk) of group g as the signed byte that goes
/// into __dp4a; rows and depths past the end give 0.
__device__ inline int activation(const GemmLaunch& l, int64_t g, int64_t r, int64_t kk) {
  if (r >= l.m || kk >= l.k) return 0;
  int raw;
  if (!l.conv) {
    raw = l.in_unsigned ? static_cast<const uint8_t*>(l.in)[r * l.k + kk]
                        : static_cast<const int8_t*>(l.in)[r * l.k + kk];
  } else {
    const int64_t pixels = l.oh * l.ow;
    const int64_t b = r / pixels, p = r % pixels;
    const int64_t y = p / l.ow, x = p % l.ow;
    int64_t ic, i, j;
    if (l.weight_channels_last) {  // [kh][kw][cg]
      ic = kk % l.cg;
      j = (kk / l.cg) % l.kw;
      i = kk / (l.cg * l.kw);
    } else {  // [cg][kh][kw]
      j = kk % l.kw;
      i = (kk / l.kw) % l.kh;
      ic = kk / (l.kh * l.kw);
    }
    const int64_t ih = y * l.sh - l.ph + i * l.dh;
    const int64_t iw = x * l.sw - l.pw + j * l.dw;
    if (ih < 0 || ih >= l.h || iw < 0 || iw >= l.w) {
      raw = l.in_zero_point;  // padding holds a real 0
    } else {
      const int64_t at = b * l.in_strides[0] + (g * l.cg + ic) * l.in_strides[1] +
                         ih * l.in_strides[2] + iw * l.in_strides[3];
      raw = l.in_unsigned ? static_cast<const uint8_t*>(l.in)[at]
                          : static_cast<const int8_t*>(l.in)[at];
    }
  }
  return l.in_unsigned ? raw - 128 : raw;
}

__device__ inline int pack(int b0, int b1, int b2, int b3) {
  return (b0 & 0xff) | ((b1 & 0xff) << 8) | ((b2 & 0xff) << 16) | ((b3 & 0xff) << 24);
}

__global__ void __launch_bounds__(kSide* kSide) qgemm_kernel(GemmLaunch l) {
  __shared__ int a_tile[kTile][kQuads + 1];
  __shared__ int w_tile[kTile][kQuads + 1];
  const int64_t g = blockIdx.z;
  const int64_t m0 = int64_t{blockIdx.y} * kTile, n0 = int64_t{blockIdx.x} * kTile;
  const int tid = threadIdx.y * kSide + threadIdx.x;
  const int load_row = tid / kQuads, load_quad = tid % kQuads;
  const int8_t* weight = l.weight + g * l.n * l.k;
  int acc[2][2] = {{0, 0}, {0, 0}};
  for (int64_t k0 = 0; k0 < l.k; k0 += kDepth) {
    const int64_t kk = k0 + 4 * load_quad;
    const int64_t r = m0 + load_row;
    a_tile[load_row][load_quad] = pack(activation(l, g, r, kk), activation(l, g, r, kk + 1),
                                       activation(l, g, r, kk + 2), activation(l, g, r, kk + 3));
    const int64_t c = n0 + load_row;
    int wb[4];
    for (int b = 0; b < 4; ++b) {
      wb[b] = (c < l.n && kk + b < l.k) ? weight[c * l.k + kk + b] : 0;
    }
    w_tile[load_row][load_quad] = pack(wb[0], wb[1], wb[2], wb[3]);
    __syncthreads();
#pragma unroll
    for (int q = 0; q < kQuads; ++q) {
      const int a0 = a_tile[threadIdx.y * 2][q], a1 = a_tile[threadIdx.y * 2 + 1][q];
      const int w0 = w_tile[threadIdx.x * 2][q], w1 = w_tile[threadIdx.x * 2 + 1][q];
      acc[0][0] = __dp4a(a0, w0, acc[0][0]);
      acc[0][1] = __dp4a(a0, w1, acc[0][1]);
      acc[1][0] = __dp4a(a1, w0, acc[1][0]);
      acc[1][1] = __dp4a(a1, w1, acc[1][1]);
    }
    __syncthreads();
  }
  const int64_t compensation = int64_t{l.in_zero_point} - (l.in_unsigned ? 128 : 0);
  for (int i = 0; i < 2; ++i) {
    const int64_t r = m0 + threadIdx.y * 2 + i;
    if (r >= l.m) continue;
    for (int j = 0; j < 2; ++j) {
      const int64_t c = n0 + threadIdx.x * 2 + j;
      if (c >= l.n) continue;
      const int64_t channel = g * l.n + c;
      const auto total =
          static_cast<int32_t>(int64_t{acc[i][j]} - compensation * l.weight_sums[channel]);
      const int64_t at = l.one_scale ? 0 : channel;
      const float ws = l.scales_double
                           ? static_cast<float>(static_cast<const double*>(l.weight_scales)[at])
                           : static_cast<const float*>(l.weight_scales)[at];
      float y = __fmul_rn(static_cast<float>(total), __fmul_rn(l.in_scale, ws));
      if (l.bias != nullptr) y = __fadd_rn(y, l.bias[channel]);
      const float s = __fadd_rn(l.out_zero_point, rintf(__fmul_rn(y, l.out_inv)));
      int32_t q;
      if (!(s >= static_cast<float>(l.out_min))) {
        q = l.out_min;
      } else if (s > static_cast<float>(l.out_max)) {
        q = l.out_max;
      } else {
        q = static_cast<int32_t>(s);
      }
      int64_t offset;
      if (!l.conv) {
        offset = r * l.n + c;
      } else {
        const int64_t pixels = l.oh * l.ow;
        const int64_t b = r / pixels, p = r % pixels;
        offset = b * l.out_strides[0] + channel * l.out_strides[1] + (p / l.ow) * l.out_strides[2] +
                 (p % l.ow) * l.out_strides[3];
      }
      if (l.out_unsigned) {
        static_cast<uint8_t*>(l.out)[offset] = static_cast<uint8_t>(q);
      } else {
        static_cast<int8_t*>(l.out)[offset] = static_cast<int8_t>(q);
      }
    }
  }
}

}  // namespace pterun::cuda::quant

namespace pterun::kernels::cuda_ops {
namespace {

using namespace pterun::cuda;         // NOLINT: stream, check_launch
using namespace pterun::cuda::quant;  // NOLINT: this file's kernel

GemmLaunch launch_of(const Tensor& in, const Tensor& weight, const Tensor& weight_sums,
                     const ops::Requantize& rq, Tensor& out) {
  GemmLaunch l{};
  l.in = in.data();
  l.in_unsigned = in.dtype() == DType::UInt8;
  l.in_zero_point = rq.in_q.zero_point;
  l.weight = weight.data_as<const int8_t>();
  l.weight_sums = weight_sums.data_as<const int32_t>();
  l.weight_scales = rq.weight_scales.data();
  l.scales_double = rq.weight_scales.dtype() == DType::Float64;
  l.one_scale = rq.weight_scales.numel() == 1;
  l.bias = rq.bias != nullptr ? rq.bias->data_as<const float>() : nullptr;
  l.in_scale = rq.in_q.scale;
  l.out_inv = 1.0f / rq.out_q.scale;  // IEEE division on the host, as on the CPU
  l.out_zero_point = static_cast<float>(rq.out_q.zero_point);
  l.out_min = rq.out_min;
  l.out_max = rq.out_max;
  l.out = out.data();
  l.out_unsigned = out.dtype() == DType::UInt8;
  return l;
}

void launch(KernelContext& ctx, const GemmLaunch& l, int64_t groups, const char* op) {
  const dim3 grid(static_cast<unsigned>((l.n + kTile - 1) / kTile),
                  static_cast<unsigned>((l.m + kTile - 1) / kTile), static_cast<unsigned>(groups));
  PTERUN_CHECK(grid.y <= 65535u && grid.z <= 65535u, ErrorCode::NotSupported, op, ": ", l.m,
               " rows in ", groups, " groups exceed one launch");
  qgemm_kernel<<<grid, dim3(kSide, kSide), 0, stream(ctx)>>>(l);
  check_launch(op);
}

}  // namespace

void quantized_linear(KernelContext& ctx, const ops::QLinearArgs& a) {
  GemmLaunch l = launch_of(a.in, a.weight, a.weight_sums, a.rq, a.out);
  l.m = a.m;
  l.n = a.n;
  l.k = a.k;
  launch(ctx, l, 1, "pterun::quantized_linear.out");
}

void quantized_conv2d(KernelContext& ctx, const ops::QConv2dArgs& a) {
  GemmLaunch l = launch_of(a.in, a.weight, a.weight_sums, a.rq, a.out);
  const ops::QConvShape c = ops::qconv_shape(a);
  l.conv = true;
  l.weight_channels_last = c.weight_channels_last;
  l.cg = c.cg;
  l.h = c.height;
  l.w = c.width;
  l.oh = c.out_height;
  l.ow = c.out_width;
  l.kh = c.kh;
  l.kw = c.kw;
  l.sh = c.sh;
  l.sw = c.sw;
  l.ph = c.ph;
  l.pw = c.pw;
  l.dh = c.dh;
  l.dw = c.dw;
  for (int i = 0; i < 4; ++i) {
    l.in_strides[i] = a.in.stride(i);
    l.out_strides[i] = a.out.stride(i);
  }
  l.m = c.batch * c.out_height * c.out_width;
  l.n = c.og;
  l.k = c.k;
  launch(ctx, l, a.groups, "pterun::quantized_conv2d.out");
}

}  // namespace pterun::kernels::cuda_ops
