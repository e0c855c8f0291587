// conv_tiled (conv_tiled.h): pterun's own forward convolution for small and
// mid-sized problems, where cuDNN's kernels cost more in latency than in
// arithmetic (a few thousand output pixels: its float32 NHWC kernels took
// 8.6 µs a convolution on an H100 for 0.01 GFLOP). conv.cu times it against
// cuDNN on each problem's first call and keeps the faster.
//
// Inputs, weights and outputs are read through their (N, C, H, W) strides,
// so NCHW, channels-last and XNNPACK's filter layouts need no copies. The
// sums are in float.

#include "pterun/backend/cuda/ops/conv_tiled.h"

#include <climits>
#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/conv_own.cuh"

namespace pterun::cuda::nn {
namespace {

constexpr int kThreads = 256;  // a 16 x 16 grid of threads
constexpr int kTileK = 16;     // GEMM depth staged per step

/// The implicit GEMM: block (bx, by, g) computes output pixels
/// [bx * 16TM, +16TM) by channels [by * 16TN, +16TN) of group g; each
/// thread a TM x TN tile of them, strided by 16 in both directions. Depth
/// step k is input channel k / (kh kw), tap k % (kh kw).
template <typename T, int TM, int TN>
__global__ void __launch_bounds__(kThreads) conv_gemm_tiles(OwnConvArgs a) {
  constexpr int kM = 16 * TM, kN = 16 * TN;
  __shared__ float as[kTileK][kM];
  __shared__ float bs[kTileK][kN];
  const int t = static_cast<int>(threadIdx.x);
  const int tx = t % 16, ty = t / 16;
  const int m0 = static_cast<int>(blockIdx.x) * kM, n0 = static_cast<int>(blockIdx.y) * kN;
  const int g = static_cast<int>(blockIdx.z);
  const int khw = a.kh * a.kw;

  // kM and kN divide kThreads, so each thread stages the same pixel (row
  // of A) and the same channel (column of B) at every step.
  const int am = m0 + t % kM;
  const bool a_live = am < a.m;
  int64_t a_base = 0;
  int iy0 = 0, ix0 = 0;
  if (a_live) {
    const int x = am % a.ow, y = (am / a.ow) % a.oh, ni = am / (a.ow * a.oh);
    a_base = ni * a.is[0] + static_cast<int64_t>(g) * a.icg * a.is[1];
    iy0 = y * a.stride[0] - a.pad[0];
    ix0 = x * a.stride[1] - a.pad[1];
  }
  const int bn = n0 + t % kN;
  const bool b_live = bn < a.ocg;
  const int64_t b_base = static_cast<int64_t>(g * a.ocg + (b_live ? bn : 0)) * a.ws[0];

  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < a.k; k0 += kTileK) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int kk = t / kM + i * (kThreads / kM);
      const int k = k0 + kk;
      float v = 0.0f;
      if (a_live && k < a.k) {
        const int c = k / khw, r = k - c * khw;
        const int ky = r / a.kw, kx = r - ky * a.kw;
        const int iy = iy0 + ky * a.dilation[0], ix = ix0 + kx * a.dilation[1];
        if (iy >= 0 && iy < a.ih && ix >= 0 && ix < a.iw) {
          v = load<T>(a.in, a_base + c * a.is[1] + iy * a.is[2] + ix * a.is[3]);
        }
      }
      as[kk][t % kM] = v;
    }
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int kk = t / kN + j * (kThreads / kN);
      const int k = k0 + kk;
      float v = 0.0f;
      if (b_live && k < a.k) {
        const int c = k / khw, r = k - c * khw;
        const int ky = r / a.kw, kx = r - ky * a.kw;
        v = load<T>(a.weight, b_base + c * a.ws[1] + ky * a.ws[2] + kx * a.ws[3]);
      }
      bs[kk][t % kN] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      float av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) av[i] = as[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < TN; ++j) bv[j] = bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + ty + 16 * i;
    if (m >= a.m) continue;
    const int x = m % a.ow, y = (m / a.ow) % a.oh, ni = m / (a.ow * a.oh);
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int n = n0 + tx + 16 * j;
      if (n < a.ocg) store<T>(a, acc[i][j], ni, g * a.ocg + n, y, x);
    }
  }
}

/// One thread per output, in the output's memory order (channels fastest
/// when `channels_last`), summing its group's few input channels and taps.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    conv_per_output(OwnConvArgs a, int total, bool channels_last) {
  const int oc = a.ocg * a.groups;
  for (int e = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); e < total;
       e += static_cast<int>(gridDim.x * blockDim.x)) {
    int o, x, y, ni;
    if (channels_last) {
      o = e % oc;
      const int p = e / oc;
      x = p % a.ow;
      y = (p / a.ow) % a.oh;
      ni = p / (a.ow * a.oh);
    } else {
      x = e % a.ow;
      y = (e / a.ow) % a.oh;
      const int p = e / (a.ow * a.oh);
      o = p % oc;
      ni = p / oc;
    }
    const int g = o / a.ocg;
    const int iy0 = y * a.stride[0] - a.pad[0], ix0 = x * a.stride[1] - a.pad[1];
    float acc = 0.0f;
    for (int c = 0; c < a.icg; ++c) {
      const int64_t ib = ni * a.is[0] + static_cast<int64_t>(g * a.icg + c) * a.is[1];
      const int64_t wb = o * a.ws[0] + c * a.ws[1];
      for (int ky = 0; ky < a.kh; ++ky) {
        const int iy = iy0 + ky * a.dilation[0];
        if (iy < 0 || iy >= a.ih) continue;
        for (int kx = 0; kx < a.kw; ++kx) {
          const int ix = ix0 + kx * a.dilation[1];
          if (ix < 0 || ix >= a.iw) continue;
          acc = fmaf(load<T>(a.weight, wb + ky * a.ws[2] + kx * a.ws[3]),
                     load<T>(a.in, ib + iy * a.is[2] + ix * a.is[3]), acc);
        }
      }
    }
    store<T>(a, acc, ni, o, y, x);
  }
}

template <typename T, int TM, int TN>
void launch_gemm(const OwnConvArgs& a, dim3 grid, cudaStream_t s) {
  conv_gemm_tiles<T, TM, TN><<<grid, kThreads, 0, s>>>(a);
}

/// The GEMM's launch with tiles of 16TM x 16TN: TN from the group's
/// channels, then the largest TM that still gives every multiprocessor a
/// block.
template <typename T>
void run_gemm(const OwnConvArgs& a, int sms, cudaStream_t s) {
  const int tn = a.ocg <= 16 ? 1 : a.ocg <= 32 ? 2 : 4;
  const int64_t col_tiles = (a.ocg + 16 * tn - 1) / (16 * tn);
  int tm = 4;
  while (tm > 1 && ((a.m + 16 * tm - 1) / (16 * tm)) * col_tiles * a.groups < sms) tm /= 2;
  const dim3 grid(static_cast<unsigned>((a.m + 16 * tm - 1) / (16 * tm)),
                  static_cast<unsigned>(col_tiles), static_cast<unsigned>(a.groups));
  switch (tm * 10 + tn) {
    case 11: launch_gemm<T, 1, 1>(a, grid, s); break;
    case 12: launch_gemm<T, 1, 2>(a, grid, s); break;
    case 14: launch_gemm<T, 1, 4>(a, grid, s); break;
    case 21: launch_gemm<T, 2, 1>(a, grid, s); break;
    case 22: launch_gemm<T, 2, 2>(a, grid, s); break;
    case 24: launch_gemm<T, 2, 4>(a, grid, s); break;
    case 41: launch_gemm<T, 4, 1>(a, grid, s); break;
    case 42: launch_gemm<T, 4, 2>(a, grid, s); break;
    default: launch_gemm<T, 4, 4>(a, grid, s); break;
  }
}

}  // namespace

bool conv_tiled_takes(const ops::ConvProblem& q) {
  const bool dtype =
      q.dtype == DType::Float32 || q.dtype == DType::Float16 || q.dtype == DType::BFloat16;
  if (!dtype || q.transposed || q.groups < 1 || q.ic <= 0 || q.ic % q.groups != 0 ||
      q.oc % q.groups != 0 || q.groups > 65535) {
    return false;
  }
  for (int64_t v : {q.n, q.ic, q.oc, q.ih, q.iw, q.oh, q.ow, q.kh, q.kw, q.stride[0], q.stride[1],
                    q.pad[0], q.pad[1], q.dilation[0], q.dilation[1]}) {
    if (v < 0 || v > INT_MAX) return false;
  }
  // Element counts (with room for a grid-stride step) and input positions
  // stay in 32 bits; the channel tiles fit a grid's second dimension.
  const int64_t outputs = q.n * q.oh * q.ow * q.oc;
  return outputs <= INT_MAX / 2 && q.ic / q.groups * q.kh * q.kw <= INT_MAX - kTileK &&
         q.oc / q.groups <= int64_t{65535} * 16 &&
         q.oh * q.stride[0] + q.kh * q.dilation[0] <= INT_MAX / 2 &&
         q.ow * q.stride[1] + q.kw * q.dilation[1] <= INT_MAX / 2;
}

void conv_tiled(kernels::KernelContext& ctx, const ops::ConvProblem& q, bool fused,
                const char* op) {
  const OwnConvArgs a = own_conv_args(q, fused);
  const int total = static_cast<int>(q.n * q.oc * q.oh * q.ow);
  if (total == 0) return;
  const cudaStream_t s = stream(ctx);
  const int sms = multiprocessors(device(ctx));
  // Depthwise: a group's GEMM would be one column wide.
  const bool per_output = a.icg == 1 && a.ocg < 8;
  auto launch = [&]<typename T>() {
    if (per_output) {
      const bool channels_last = q.out_strides[1] == 1 && q.oc > 1;
      conv_per_output<T><<<blocks_for(total, kThreads), kThreads, 0, s>>>(a, total, channels_last);
    } else {
      run_gemm<T>(a, sms, s);
    }
  };
  with_storage_type(q.dtype, launch);
  check_launch(op);
}

}  // namespace pterun::cuda::nn
