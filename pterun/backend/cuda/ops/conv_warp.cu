// conv_warp (conv_warp.h): a warp per output pixel, for the smallest
// convolutions (a few thousand output pixels of 16-64 channels), where one
// 3x3 layer has only 8 tiles of the tiled GEMM to give 132 multiprocessors
// and each tile walks its 288-deep reduction 16 at a time.

#include "pterun/backend/cuda/ops/conv_warp.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/conv_own.cuh"
#include "pterun/backend/cuda/ops/conv_tiled.h"

namespace pterun::cuda::nn {
namespace {

constexpr int kThreads = 256;
constexpr int kBlockWarps = kThreads / 32;
constexpr int kChannels = 8;  // output channels per warp
constexpr int64_t kMaxWork = int64_t{1} << 26;

/// Item i = (pixel * groups + group) * chunks + chunk: the warps of one
/// pixel are neighbours, so its input is read from cache after the first.
/// Reduction index k is (tap, channel) with the channel fastest when
/// `channels_fastest` (a channels-last input: lanes read neighbouring
/// bytes), else (channel, tap).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    conv_warp_pixels(OwnConvArgs a, int chunks, int items, bool channels_fastest) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int khw = a.kh * a.kw;
  const int step = static_cast<int>(gridDim.x) * kBlockWarps;
  for (int item = static_cast<int>(blockIdx.x) * kBlockWarps + static_cast<int>(threadIdx.x) / 32;
       item < items; item += step) {
    const int chunk = item % chunks;
    const int rest = item / chunks;
    const int g = rest % a.groups;
    const int m = rest / a.groups;
    const int x = m % a.ow, y = (m / a.ow) % a.oh, ni = m / (a.ow * a.oh);
    const int iy0 = y * a.stride[0] - a.pad[0], ix0 = x * a.stride[1] - a.pad[1];
    const int o0 = g * a.ocg + chunk * kChannels;
    const int live = min(kChannels, a.ocg - chunk * kChannels);
    const int64_t in0 = ni * a.is[0] + static_cast<int64_t>(g) * a.icg * a.is[1];
    const int64_t w0 = o0 * a.ws[0];
    float acc[kChannels] = {};
    // Unrolled so that a lane's loads of several steps are in flight at
    // once: each step's are a few hundred cycles from L2.
#pragma unroll 4
    for (int k = lane; k < a.k; k += 32) {
      int c, tap;
      if (channels_fastest) {
        tap = k / a.icg;
        c = k - tap * a.icg;
      } else {
        c = k / khw;
        tap = k - c * khw;
      }
      const int ky = tap / a.kw, kx = tap - ky * a.kw;
      const int iy = iy0 + ky * a.dilation[0], ix = ix0 + kx * a.dilation[1];
      if (iy < 0 || iy >= a.ih || ix < 0 || ix >= a.iw) continue;
      const float v = load<T>(a.in, in0 + c * a.is[1] + iy * a.is[2] + ix * a.is[3]);
      const int64_t wk = w0 + c * a.ws[1] + ky * a.ws[2] + kx * a.ws[3];
#pragma unroll
      for (int i = 0; i < kChannels; ++i) {
        if (i < live) acc[i] = fmaf(v, load<T>(a.weight, wk + i * a.ws[0]), acc[i]);
      }
    }
#pragma unroll
    for (int i = 0; i < kChannels; ++i) {
#pragma unroll
      for (int s = 16; s > 0; s >>= 1) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], s);
    }
#pragma unroll
    for (int i = 0; i < kChannels; ++i) {
      if (lane == i && i < live) store<T>(a, acc[i], ni, o0 + i, y, x);
    }
  }
}

}  // namespace

bool conv_warp_takes(const ops::ConvProblem& q) {
  // PTERUN_CONV_WARP=0 leaves it out (comparisons).
  static const bool off = [] {
    const char* env = std::getenv("PTERUN_CONV_WARP");
    return env != nullptr && std::strcmp(env, "0") == 0;
  }();
  if (off || !conv_tiled_takes(q)) return false;
  const int64_t icg = q.ic / q.groups, ocg = q.oc / q.groups;
  const int64_t k = icg * q.kh * q.kw;
  const bool depthwise = icg == 1 && ocg < 8;
  return !depthwise && k >= 8 && q.n * q.oh * q.ow * q.oc * k <= kMaxWork;
}

void conv_warp(kernels::KernelContext& ctx, const ops::ConvProblem& q, bool fused, const char* op) {
  const OwnConvArgs a = own_conv_args(q, fused);
  const int chunks = (a.ocg + kChannels - 1) / kChannels;
  // conv_tiled_takes keeps outputs, so items, below 2^30.
  const int items = a.m * a.groups * chunks;
  if (items == 0) return;
  const bool channels_fastest = q.in_strides[1] == 1 && a.icg > 1;
  const cudaStream_t s = stream(ctx);
  const unsigned blocks = blocks_for(items, kBlockWarps);
  auto launch = [&]<typename T>() {
    conv_warp_pixels<T><<<blocks, kThreads, 0, s>>>(a, chunks, items, channels_fastest);
  };
  with_storage_type(q.dtype, launch);
  check_launch(op);
}

}  // namespace pterun::cuda::nn
