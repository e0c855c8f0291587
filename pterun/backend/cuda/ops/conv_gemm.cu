// Convolution as im2col + cuBLAS on CUDA, for the problems where a GEMM
// pays: f32 / f16 / bf16, not transposed, enough output channels and a
// long enough reduction. Per group and chunk of images, a kernel gathers
// the input patches into dense scratch (zeros where the window leaves the
// padded input), then one strided-batched cublasGemmEx (float32
// accumulation; TF32 only where the method allows it, like the matmuls:
// gemm_compute) multiplies them with the weight straight into
// the output. The patch matrix is laid out so that the product lands in
// out's own layout:
//  - out NCHW-like (each image's [oc, oh*ow] plane dense over oh*ow):
//    patches [k][p]; C^T = patches^T · W^T in cuBLAS's column-major terms;
//  - out channels-last (each image's [oh*ow, oc] plane, channels unit
//    stride): patches [p][k]; C^T = W · patches.
// The reduction index k follows the weight's memory order over
// (in-channel, ky, kx), so a channels-last weight is read in place too.
// Anything else (integers, f64, transposed, depthwise, small problems,
// other layouts) returns false and takes the direct kernel (conv.cu).

#include <algorithm>
#include <climits>
#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/conv_gemm.h"
#include "pterun/backend/cuda/strided_copy.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::cuda::nn {
namespace {

/// Scratch the patches of one chunk of images may take.
constexpr int64_t kPatchBytes = int64_t{64} << 20;
/// Below these the direct kernel is as fast and needs no scratch.
constexpr int64_t kMinChannels = 8, kMinReduction = 8;

struct Im2Col {
  ops::ConvProblem q;  // plain data: geometry, strides, pointers
  void* col;
  int64_t n0, c0;  // first image and first channel of the group
  int64_t k, p;    // reduction length, output pixels
  // k = sum of idx[which[j]] * (product of sizes after j): the weight's
  // memory order over (channel, ky, kx), outermost first.
  int which[3];
  int64_t sizes[3];
  bool pixel_major;  // patches [p][k] (else [k][p])
};

template <typename U>
__global__ void im2col_kernel(Im2Col a, int64_t total) {
  const ops::ConvProblem& q = a.q;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t img = e / (a.k * a.p);
    const int64_t r = e - img * a.k * a.p;
    const int64_t kk = a.pixel_major ? r % a.k : r / a.p;
    const int64_t pp = a.pixel_major ? r / a.k : r % a.p;
    int64_t idx[3];
    int64_t rest = kk;
    for (int j = 2; j >= 0; --j) {
      idx[a.which[j]] = rest % a.sizes[j];
      rest /= a.sizes[j];
    }
    const int64_t y = pp / q.ow, x = pp - (pp / q.ow) * q.ow;
    const int64_t iy = y * q.stride[0] - q.pad[0] + idx[1] * q.dilation[0];
    const int64_t ix = x * q.stride[1] - q.pad[1] + idx[2] * q.dilation[1];
    U v = 0;  // all-zero bits: 0.0 in every float format
    if (iy >= 0 && iy < q.ih && ix >= 0 && ix < q.iw) {
      v = static_cast<const U*>(
          q.in)[(a.n0 + img) * q.in_strides[0] + (a.c0 + idx[0]) * q.in_strides[1] +
                iy * q.in_strides[2] + ix * q.in_strides[3]];
    }
    static_cast<U*>(a.col)[e] = v;
  }
}

bool fits_int(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

/// The weight's (channel, ky, kx) dims in memory order (outermost first)
/// when each output channel's weights are dense; false otherwise.
bool reduction_order(const ops::ConvProblem& q, int64_t icg, Im2Col& a) {
  const int64_t sizes[3] = {icg, q.kh, q.kw};
  int order[3] = {0, 1, 2};
  std::sort(order, order + 3, [&](int x, int y) {
    // Size-1 dims first (their stride is meaningless), then by stride,
    // largest first.
    if ((sizes[x] == 1) != (sizes[y] == 1)) return sizes[x] == 1;
    return q.w_strides[x + 1] > q.w_strides[y + 1];
  });
  int64_t expected = 1;
  for (int j = 2; j >= 0; --j) {
    const int d = order[j];
    if (sizes[d] != 1 && q.w_strides[d + 1] != expected) return false;
    expected *= sizes[d];
    a.which[j] = d;
    a.sizes[j] = sizes[d];
  }
  return q.oc == 1 || q.w_strides[0] == expected;
}

}  // namespace

bool conv_gemm(kernels::KernelContext& ctx, const ops::ConvProblem& q, const char* op) {
  const bool blas_dtype =
      q.dtype == DType::Float32 || q.dtype == DType::Float16 || q.dtype == DType::BFloat16;
  if (!blas_dtype || q.transposed || q.ic == 0 || q.groups < 1) return false;
  const int64_t icg = q.ic / q.groups, ocg = q.oc / q.groups;
  const int64_t k = icg * q.kh * q.kw, p = q.oh * q.ow;
  if (ocg < kMinChannels || k < kMinReduction || p == 0 || q.n == 0) return false;
  Im2Col a{};
  if (!reduction_order(q, icg, a)) return false;
  const int64_t* os = q.out_strides;
  // Pixel p = y * ow + x must sit at p * ps within a channel.
  const bool dense_pixels = q.ow == 1 || q.oh == 1 || os[2] == q.ow * os[3];
  const int64_t ps = q.ow > 1 ? os[3] : (q.oh > 1 ? os[2] : 1);
  const bool nchw = dense_pixels && ps == 1 && (ocg == 1 || os[1] >= p);
  const bool nhwc = !nchw && dense_pixels && (q.oc == 1 || os[1] == 1) && (p == 1 || ps >= ocg);
  if (!nchw && !nhwc) return false;
  const size_t es = element_size(q.dtype);
  const int64_t per_image = k * p * static_cast<int64_t>(es);
  if (per_image > 8 * kPatchBytes) return false;
  const int64_t ld_out = nchw ? (ocg == 1 ? p : os[1]) : (p == 1 ? ocg : ps);
  if (!fits_int(k) || !fits_int(p) || !fits_int(ocg) || !fits_int(ld_out) || !fits_int(q.n)) {
    return false;
  }

  // Bias first; the products then accumulate onto it (beta = 1).
  float beta = 0.0f;
  if (q.bias != nullptr) {
    const int64_t sizes[4] = {q.n, q.oc, q.oh, q.ow};
    const int64_t bias_strides[4] = {0, 1, 0, 0};
    device_strided_copy(ctx, q.out, std::span<const int64_t>(os, 4), q.bias, bias_strides, sizes,
                        es);
    beta = 1.0f;
  }
  const float alpha = 1.0f;

  const int64_t chunk = std::clamp<int64_t>(kPatchBytes / per_image, 1, q.n);
  void* col = scratch(ctx, static_cast<size_t>(chunk * per_image));
  a.q = q;
  a.col = col;
  a.k = k;
  a.p = p;
  a.pixel_major = nhwc;
  const cudaDataType_t t = q.dtype == DType::Float32   ? CUDA_R_32F
                           : q.dtype == DType::Float16 ? CUDA_R_16F
                                                       : CUDA_R_16BF;
  cublasHandle_t h = cublas(ctx);
  cudaStream_t st = stream(ctx);
  for (int64_t g = 0; g < q.groups; ++g) {
    const char* w = static_cast<const char*>(q.weight) + g * ocg * q.w_strides[0] * es;
    for (int64_t n0 = 0; n0 < q.n; n0 += chunk) {
      const int64_t imgs = std::min(chunk, q.n - n0);
      a.n0 = n0;
      a.c0 = g * icg;
      const int64_t total = imgs * k * p;
      if (es == 4) {
        im2col_kernel<uint32_t><<<blocks_for(total, 256), 256, 0, st>>>(a, total);
      } else {
        im2col_kernel<uint16_t><<<blocks_for(total, 256), 256, 0, st>>>(a, total);
      }
      check_launch(op);
      char* c = static_cast<char*>(q.out) + (n0 * os[0] + g * ocg * os[1]) * es;
      if (nchw) {
        PTERUN_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(p), static_cast<int>(ocg),
            static_cast<int>(k), &alpha, col, t, static_cast<int>(p), k * p, w, t,
            static_cast<int>(k), 0, &beta, c, t, static_cast<int>(ld_out), os[0],
            static_cast<int>(imgs), gemm_compute(ctx, q.dtype), CUBLAS_GEMM_DEFAULT));
      } else {
        PTERUN_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(ocg), static_cast<int>(p),
            static_cast<int>(k), &alpha, w, t, static_cast<int>(k), 0, col, t, static_cast<int>(k),
            k * p, &beta, c, t, static_cast<int>(ld_out), os[0], static_cast<int>(imgs),
            gemm_compute(ctx, q.dtype), CUBLAS_GEMM_DEFAULT));
      }
    }
  }
  return true;
}

}  // namespace pterun::cuda::nn
