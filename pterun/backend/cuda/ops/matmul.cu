// The CUDA matmul table (pterun/ops/matmul.h; the front-ends of mm, bmm,
// addmm and linear are there): a gemm and a strided copy.
//
// f32 / f16 / bf16 products go to cuBLAS (cublasGemm[StridedBatched]Ex,
// CUBLAS_COMPUTE_32F, f16/bf16 outputs; no TF32 unless the method allows
// it: gemm_compute). cuBLAS is column-major,
// so a row-major C = A B is computed as C^T = B^T A^T: a row-major operand
// with unit column stride is its transpose in column-major with ld = row
// stride (op N), one with unit row stride is itself with ld = column
// stride (op T). Other layouts are copied to dense scratch first. A bias
// row is added by cuBLASLt's bias epilogue when C is written in place
// (matmul_lt.h); else it, or beta * C, is put into C before the product
// (beta = 1 / beta).
// A float32 clamp (GemmProblem::clamp, an XNNPACK FullyConnected node's
// output bounds) to [0, inf) rides in cuBLASLt's ReLU epilogue with the
// bias; any other clamp, or a product cuBLASLt does not take, is one
// clamp kernel over C after the product.
// A matrix added to the product (GemmProblem::addend: a residual) is
// cuBLASLt's C operand with beta 1, the bias in the same epilogue; where
// cuBLASLt offers no algorithm, the product is made as above and one
// kernel adds the rest.
// f64, integers (wrapping, like the CPU) and k = 0 take a simple tiled
// kernel.

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/nn_device.cuh"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/matmul_lt.h"
#include "pterun/backend/cuda/ops/nn_launch.h"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/ops/matmul.h"

namespace pterun::cuda::nn {

void cuda_gemm(kernels::KernelContext& ctx, const ops::GemmProblem& p, const char* op);
void cuda_copy(kernels::KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides,
               const void* src, std::span<const int64_t> src_strides,
               std::span<const int64_t> sizes, size_t element_size);

namespace {

// ---- strided copy ------------------------------------------------------------

template <typename E>
__global__ void copy_kernel(Space<2> s, int64_t total, void* dst, const void* src) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[2];
    space_offsets(s, i, off);
    static_cast<E*>(dst)[off[0]] = static_cast<const E*>(src)[off[1]];
  }
}

// ---- simple tiled gemm (f64, integers, k = 0) -----------------------------------

constexpr int kTile = 16;

struct SimpleGemm {
  const void* a;
  const void* b;
  void* c;
  const void* bias;
  DType dtype;
  int64_t batch, m, k, n;
  int64_t as[3], bs[3], cs[3];  // batch, row, column strides
  bool accumulate;
  double alpha_f, beta_f;
  uint64_t alpha_i, beta_i;
};

template <typename Acc>
__global__ void simple_gemm_kernel(SimpleGemm g) {
  __shared__ Acc ta[kTile][kTile + 1];
  __shared__ Acc tb[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t bi = blockIdx.z;
  const int64_t i = blockIdx.y * static_cast<int64_t>(kTile) + ty;
  const int64_t j = blockIdx.x * static_cast<int64_t>(kTile) + tx;
  Acc acc = Acc(0);
  for (int64_t k0 = 0; k0 < g.k; k0 += kTile) {
    const int64_t ka = k0 + tx, kb = k0 + ty;
    ta[ty][tx] = i < g.m && ka < g.k
                     ? load_as<Acc>(g.a, g.dtype, bi * g.as[0] + i * g.as[1] + ka * g.as[2])
                     : Acc(0);
    tb[ty][tx] = kb < g.k && j < g.n
                     ? load_as<Acc>(g.b, g.dtype, bi * g.bs[0] + kb * g.bs[1] + j * g.bs[2])
                     : Acc(0);
    __syncthreads();
    for (int q = 0; q < kTile; ++q) acc += ta[ty][q] * tb[q][tx];
    __syncthreads();
  }
  if (i >= g.m || j >= g.n) return;
  const Acc alpha =
      std::is_floating_point_v<Acc> ? static_cast<Acc>(g.alpha_f) : static_cast<Acc>(g.alpha_i);
  const Acc beta =
      std::is_floating_point_v<Acc> ? static_cast<Acc>(g.beta_f) : static_cast<Acc>(g.beta_i);
  Acc r = alpha * acc;
  if (g.bias != nullptr) r += load_as<Acc>(g.bias, g.dtype, j);
  const int64_t co = bi * g.cs[0] + i * g.cs[1] + j * g.cs[2];
  if (g.accumulate) r += beta * load_as<Acc>(g.c, g.dtype, co);
  store_as(g.c, g.dtype, co, r);
}

void simple_gemm(kernels::KernelContext& ctx, const ops::GemmProblem& p, const char* op) {
  SimpleGemm g;
  g.a = p.a.data;
  g.b = p.b.data;
  g.c = const_cast<void*>(p.c.data);
  g.bias = p.bias;
  g.dtype = p.dtype;
  g.batch = p.batch;
  g.m = p.m;
  g.k = p.k;
  g.n = p.n;
  const ops::MatrixView* views[3] = {&p.a, &p.b, &p.c};
  int64_t* strides[3] = {g.as, g.bs, g.cs};
  for (int v = 0; v < 3; ++v) {
    strides[v][0] = views[v]->batch_stride;
    strides[v][1] = views[v]->row_stride;
    strides[v][2] = views[v]->col_stride;
  }
  g.accumulate = p.accumulate;
  g.alpha_f = p.alpha.to_double();
  g.beta_f = p.beta.to_double();
  g.alpha_i = static_cast<uint64_t>(p.alpha.to_int());
  g.beta_i = static_cast<uint64_t>(p.beta.to_int());
  PTERUN_CHECK(p.batch <= 65535 && (p.m + kTile - 1) / kTile <= 65535, ErrorCode::NotSupported, op,
               ": product too large for the CUDA fallback kernel (batch ", p.batch, ", m ", p.m,
               ")");
  const dim3 grid(static_cast<unsigned>((p.n + kTile - 1) / kTile),
                  static_cast<unsigned>((p.m + kTile - 1) / kTile), static_cast<unsigned>(p.batch));
  const dim3 block(kTile, kTile);
  if (p.dtype == DType::Float64) {
    simple_gemm_kernel<double><<<grid, block, 0, stream(ctx)>>>(g);
  } else if (kernels::is_floating(p.dtype)) {
    simple_gemm_kernel<float><<<grid, block, 0, stream(ctx)>>>(g);
  } else {
    simple_gemm_kernel<uint64_t><<<grid, block, 0, stream(ctx)>>>(g);
  }
  check_launch(op);
}

// ---- output clamp (GemmProblem::clamp) -----------------------------------------

/// c[b, i, j] clamped to [lo, hi] in place, NaN kept (float32).
__global__ void clamp_kernel(float* c, int64_t m, int64_t n, int64_t bs, int64_t rs, int64_t cs,
                             int64_t total, float lo, float hi) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = e % n, i = (e / n) % m, b = e / (n * m);
    float& v = c[b * bs + i * rs + j * cs];
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
  }
}

void clamp_output(kernels::KernelContext& ctx, const ops::GemmProblem& p, const char* op) {
  const int64_t total = p.batch * p.m * p.n;
  const int blocks = static_cast<int>(std::min<int64_t>((total + 255) / 256, 4096));
  clamp_kernel<<<blocks, 256, 0, stream(ctx)>>>(static_cast<float*>(const_cast<void*>(p.c.data)),
                                                p.m, p.n, p.c.batch_stride, p.c.row_stride,
                                                p.c.col_stride, total, p.clamp_lo, p.clamp_hi);
  check_launch(op);
}

// ---- addend and bias after the product (GemmProblem::addend without cuBLASLt) ----

/// c[i, j] += addend[i, j] (if any) + bias[j] (if any), c dense [m, n],
/// summed in float and rounded once.
__global__ void add_after_kernel(void* c, const void* addend, const void* bias, DType dtype,
                                 int64_t n, int64_t total) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float r = load_as<float>(c, dtype, e);
    if (addend != nullptr) r += load_as<float>(addend, dtype, e);
    if (bias != nullptr) r += load_as<float>(bias, dtype, e % n);
    store_as(c, dtype, e, r);
  }
}

void add_after(kernels::KernelContext& ctx, const ops::GemmProblem& p, const void* addend,
               const void* bias, const char* op) {
  const int64_t total = p.m * p.n;
  const int blocks = static_cast<int>(std::min<int64_t>((total + 255) / 256, 4096));
  add_after_kernel<<<blocks, 256, 0, stream(ctx)>>>(const_cast<void*>(p.c.data), addend, bias,
                                                    p.dtype, p.n, total);
  check_launch(op);
}

/// Whether the clamp is a ReLU (cuBLASLt's epilogue takes it).
bool relu_clamp(const ops::GemmProblem& p) {
  return p.clamp && p.clamp_lo == 0.0f && p.clamp_hi == std::numeric_limits<float>::infinity();
}

// ---- cuBLAS ------------------------------------------------------------------

/// A row-major R x C operand (strides rs, cs) seen by cuBLAS as its
/// transpose: op N with ld = rs when columns are unit-stride, op T with
/// ld = cs when rows are. ok = false when neither fits.
struct ColMajor {
  bool ok = false;
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t ld = 1;
};

ColMajor as_transposed(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  ColMajor r;
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= std::max<int64_t>(1, cols))) {
    r.ok = true;
    r.op = CUBLAS_OP_N;
    r.ld = rows == 1 ? std::max<int64_t>(1, cols) : rs;
  } else if ((rs == 1 || rows == 1) && (cols == 1 || cs >= std::max<int64_t>(1, rows))) {
    r.ok = true;
    r.op = CUBLAS_OP_T;
    r.ld = cols == 1 ? std::max<int64_t>(1, rows) : cs;
  }
  return r;
}

/// A dense row-major [batch, rows, cols] copy of a view.
ops::MatrixView dense_view(void* data, int64_t rows, int64_t cols) {
  return {data, rows * cols, cols, 1};
}

void copy_view(kernels::KernelContext& ctx, const ops::MatrixView& dst, const ops::MatrixView& src,
               int64_t batch, int64_t rows, int64_t cols, size_t es) {
  const int64_t sizes[3] = {batch, rows, cols};
  const int64_t ds[3] = {dst.batch_stride, dst.row_stride, dst.col_stride};
  const int64_t ss[3] = {src.batch_stride, src.row_stride, src.col_stride};
  cuda_copy(ctx, const_cast<void*>(dst.data), ds, src.data, ss, sizes, es);
}

bool fits_int(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

/// True when the product's epilogue clamped C (GemmProblem::clamp).
bool cublas_gemm(kernels::KernelContext& ctx, const ops::GemmProblem& p, const char* op) {
  const size_t es = element_size(p.dtype);
  const int64_t batch = p.batch, m = p.m, k = p.k, n = p.n;
  ColMajor ca = as_transposed(m, k, p.a.row_stride, p.a.col_stride);
  ColMajor cb = as_transposed(k, n, p.b.row_stride, p.b.col_stride);
  ColMajor cc = as_transposed(m, n, p.c.row_stride, p.c.col_stride);
  const bool c_direct = cc.ok && cc.op == CUBLAS_OP_N;

  // Dense scratch for the operands cuBLAS cannot read in place.
  auto align = [](size_t b) { return (b + 255) / 256 * 256; };
  const size_t a_bytes = ca.ok ? 0 : align(static_cast<size_t>(batch * m * k) * es);
  const size_t b_bytes = cb.ok ? 0 : align(static_cast<size_t>(batch * k * n) * es);
  const size_t c_bytes = c_direct ? 0 : align(static_cast<size_t>(batch * m * n) * es);
  char* buf = nullptr;
  if (a_bytes + b_bytes + c_bytes > 0) {
    buf = static_cast<char*>(scratch(ctx, a_bytes + b_bytes + c_bytes));
  }
  ops::MatrixView a = p.a, b = p.b, c = p.c;
  if (!ca.ok) {
    a = dense_view(buf, m, k);
    copy_view(ctx, a, p.a, batch, m, k, es);
    ca = as_transposed(m, k, k, 1);
  }
  if (!cb.ok) {
    b = dense_view(buf + a_bytes, k, n);
    copy_view(ctx, b, p.b, batch, k, n, es);
    cb = as_transposed(k, n, n, 1);
  }
  if (!c_direct) {
    c = dense_view(buf + a_bytes + b_bytes, m, n);
    cc = as_transposed(m, n, n, 1);
    if (p.accumulate) copy_view(ctx, c, p.c, batch, m, n, es);
  }

  const float alpha = static_cast<float>(p.alpha.to_double());
  cudaDataType_t t = p.dtype == DType::Float32   ? CUDA_R_32F
                     : p.dtype == DType::Float16 ? CUDA_R_16F
                                                 : CUDA_R_16BF;
  PTERUN_CHECK(fits_int(m) && fits_int(n) && fits_int(k) && fits_int(batch) && fits_int(ca.ld) &&
                   fits_int(cb.ld) && fits_int(cc.ld),
               ErrorCode::NotSupported, op, ": matrix sizes beyond cuBLAS's 32-bit limits");
  // A bias row and/or an addend with one product in place: cuBLASLt adds
  // them (C^T = op(B^T) op(A^T) + bias down the columns + addend^T).
  if ((p.bias != nullptr || p.addend != nullptr) && batch == 1 && c_direct &&
      lt_gemm_bias(ctx, t, gemm_compute(ctx, p.dtype), n, m, k, {b.data, cb.op, cb.ld},
                   {a.data, ca.op, ca.ld}, const_cast<void*>(c.data), cc.ld, p.bias, alpha,
                   relu_clamp(p), p.addend)) {
    return relu_clamp(p);
  }
  if (p.addend != nullptr) {
    // No cuBLASLt algorithm: the product (with the bias where the addend is
    // elsewhere, accumulated onto it where it is c itself), then the rest.
    PTERUN_CHECK(batch == 1 && c_direct && cc.ld == n && !p.accumulate && !p.clamp,
                 ErrorCode::Internal, op, ": an addend needs one dense product");
    ops::GemmProblem q = p;
    q.addend = nullptr;
    const bool in_place = p.addend == p.c.data;
    if (in_place) {
      q.bias = nullptr;
      q.accumulate = true;
      q.beta = Scalar::from_int(1);
    }
    cublas_gemm(ctx, q, op);
    add_after(ctx, p, in_place ? nullptr : p.addend, in_place ? p.bias : nullptr, op);
    return false;
  }
  float beta = 0.0f;
  if (p.bias != nullptr) {
    // Every row of C starts as the bias.
    const ops::MatrixView bias_rows{p.bias, 0, 0, 1};
    copy_view(ctx, c, bias_rows, batch, m, n, es);
    beta = 1.0f;
  } else if (p.accumulate) {
    beta = static_cast<float>(p.beta.to_double());
  }

  cublasHandle_t h = cublas(ctx);
  if (batch == 1) {
    PTERUN_CUBLAS_CHECK(cublasGemmEx(h, cb.op, ca.op, static_cast<int>(n), static_cast<int>(m),
                                     static_cast<int>(k), &alpha, b.data, t,
                                     static_cast<int>(cb.ld), a.data, t, static_cast<int>(ca.ld),
                                     &beta, const_cast<void*>(c.data), t, static_cast<int>(cc.ld),
                                     gemm_compute(ctx, p.dtype), CUBLAS_GEMM_DEFAULT));
  } else {
    PTERUN_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, cb.op, ca.op, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha,
        b.data, t, static_cast<int>(cb.ld), b.batch_stride, a.data, t, static_cast<int>(ca.ld),
        a.batch_stride, &beta, const_cast<void*>(c.data), t, static_cast<int>(cc.ld),
        c.batch_stride, static_cast<int>(batch), gemm_compute(ctx, p.dtype), CUBLAS_GEMM_DEFAULT));
  }
  if (!c_direct) copy_view(ctx, p.c, c, batch, m, n, es);
  return false;
}

}  // namespace

void cuda_copy(kernels::KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides,
               const void* src, std::span<const int64_t> src_strides,
               std::span<const int64_t> sizes, size_t element_size) {
  Space<2> s;
  int64_t total = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    total *= sizes[d];
    if (sizes[d] == 1) continue;
    s.push(sizes[d], {dst_strides[d], src_strides[d]});
  }
  if (total == 0) return;
  const unsigned blocks = blocks_for(total, 256);
  cudaStream_t st = stream(ctx);
  switch (element_size) {
    case 1: copy_kernel<uint8_t><<<blocks, 256, 0, st>>>(s, total, dst, src); break;
    case 2: copy_kernel<uint16_t><<<blocks, 256, 0, st>>>(s, total, dst, src); break;
    case 4: copy_kernel<uint32_t><<<blocks, 256, 0, st>>>(s, total, dst, src); break;
    case 8: copy_kernel<uint64_t><<<blocks, 256, 0, st>>>(s, total, dst, src); break;
    default:
      throw_error(ErrorCode::NotSupported,
                  str_cat("strided copy: element size ", element_size, " is not supported"));
  }
  check_launch("strided copy");
}

void cuda_gemm(kernels::KernelContext& ctx, const ops::GemmProblem& p, const char* op) {
  if (p.batch == 0 || p.m == 0 || p.n == 0) return;
  const bool blas =
      (p.dtype == DType::Float32 || p.dtype == DType::Float16 || p.dtype == DType::BFloat16) &&
      p.k > 0;
  PTERUN_CHECK(!p.clamp || p.dtype == DType::Float32, ErrorCode::Internal, op,
               ": a clamped product must be float32");
  bool clamped = false;
  if (blas) {
    clamped = cublas_gemm(ctx, p, op);
  } else {
    simple_gemm(ctx, p, op);  // the front-end admits RealHBF16 only
  }
  if (p.clamp && !clamped) clamp_output(ctx, p, op);
}

}  // namespace pterun::cuda::nn

namespace pterun::kernels::cuda_ops {

const ops::MatmulBackend& matmul_backend() {
  static constexpr ops::MatmulBackend kMatmul{&cuda::nn::cuda_gemm, &cuda::nn::cuda_copy,
                                              /*clamps=*/true, /*adds=*/true};
  return kMatmul;
}

}  // namespace pterun::kernels::cuda_ops
