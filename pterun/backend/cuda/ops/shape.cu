// The CUDA backend's Mover (pterun/ops/shape.h), under the shape, copy and
// creation front-ends: the device strided copy, device scratch, and small
// kernels for fills, dtype conversion and tril/triu masking.

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/backend/cuda/strided_copy.h"
#include "pterun/ops/shape.h"

namespace pterun::kernels::cuda_ops {
namespace {

using ops::Mover;

constexpr unsigned kThreads = 256;

template <typename T>
__global__ void fill_kernel(T* __restrict__ data, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    data[i] = value;
  }
}

/// An element pattern of any size up to 16 bytes, passed by value.
struct Pattern {
  unsigned char bytes[16];
};

__global__ void fill_bytes_kernel(unsigned char* __restrict__ data, int64_t n, int es, Pattern p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    for (int k = 0; k < es; ++k) data[i * es + k] = p.bytes[k];
  }
}

template <typename T>
void launch_fill(cudaStream_t stream, void* data, int64_t n, const void* element) {
  T v;
  std::memcpy(&v, element, sizeof(T));
  fill_kernel<T>
      <<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(static_cast<T*>(data), n, v);
}

// Every element of a dense tensor lies in [data, data + nbytes) whatever
// its dim order, so the fill ignores the layout (as the CPU's does).
void cuda_fill(const KernelContext& ctx, Tensor& out, const void* element) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cudaStream_t stream = cuda::stream(ctx);
  const size_t es = out.element_size();
  const size_t nbytes = out.nbytes();
  // Whole 16-byte stores of the repeated element where they tile the data
  // (one 4-byte store per thread wrote at half a copy's bandwidth).
  if (16 % es == 0 && nbytes % 16 == 0 && reinterpret_cast<uintptr_t>(out.data()) % 16 == 0) {
    unsigned char bytes[16];
    for (size_t k = 0; k < 16; k += es) std::memcpy(bytes + k, element, es);
    launch_fill<uint4>(stream, out.data(), static_cast<int64_t>(nbytes / 16), bytes);
    cuda::check_launch("fill");
    return;
  }
  switch (es) {
    case 1: launch_fill<uint8_t>(stream, out.data(), n, element); break;
    case 2: launch_fill<uint16_t>(stream, out.data(), n, element); break;
    case 4: launch_fill<uint32_t>(stream, out.data(), n, element); break;
    case 8: launch_fill<uint64_t>(stream, out.data(), n, element); break;
    default: {
      PTERUN_CHECK(es <= sizeof(Pattern), ErrorCode::NotSupported, "fill: ", es,
                   "-byte elements are not supported on CUDA");
      Pattern p{};
      std::memcpy(p.bytes, element, es);
      fill_bytes_kernel<<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(
          static_cast<unsigned char*>(out.data()), n, static_cast<int>(es), p);
    }
  }
  cuda::check_launch("fill");
}

// The store is the only conversion: elements are read in the source's type
// (as the CPU's convert_copy does).
template <typename S>
__global__ void convert_kernel(void* __restrict__ out, DType out_dtype, const S* __restrict__ src,
                               cuda::StridedIndexer<2> ix, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[2];
    ix.offsets(i, off);
    cuda::store_as(out, out_dtype, off[0], src[off[1]]);
  }
}

void cuda_convert(const KernelContext& ctx, Tensor& out, const Tensor& src, const char* op) {
  const int64_t n = out.numel();
  cuda::StridedIndexer<2> ix = cuda::make_indexer<2>(out, {&src}, op);
  // Validate the output dtype on the host (store_as skips unknown ones).
  cuda::visit_dtype(out.dtype(), op, [&]<typename>() {});
  if (n == 0) return;
  cudaStream_t stream = cuda::stream(ctx);
  cuda::visit_dtype(src.dtype(), op, [&]<typename S>() {
    convert_kernel<S><<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(
        out.data(), out.dtype(), static_cast<const S*>(src.data()), ix, n);
  });
  cuda::check_launch(op);
}

/// out's logical shape and strides for the triangle kernel.
struct TriangleParams {
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  int64_t diagonal = 0;
  bool upper = false;
};

// tril zeroes j > i + diagonal, triu zeroes j < i + diagonal (i, j: the
// last two coordinates).
template <typename T>
__global__ void zero_triangle_kernel(T* __restrict__ data, TriangleParams p, int64_t n) {
  for (int64_t lin = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; lin < n;
       lin += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = lin, off = 0, i = 0, j = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t q = rem / p.sizes[d];
      const int64_t k = rem - q * p.sizes[d];
      rem = q;
      off += k * p.strides[d];
      if (d == p.rank - 1) j = k;
      if (d == p.rank - 2) i = k;
    }
    const bool zero = p.upper ? j < i + p.diagonal : j > i + p.diagonal;
    if (zero) data[off] = T{};
  }
}

template <typename T>
void launch_zero_triangle(cudaStream_t stream, void* data, const TriangleParams& p, int64_t n,
                          int64_t scale) {
  TriangleParams q = p;  // strides in units of T: `scale` units per element
  for (int d = 0; d < q.rank; ++d) q.strides[d] *= scale;
  zero_triangle_kernel<T>
      <<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(static_cast<T*>(data), q, n);
}

void cuda_zero_triangle(const KernelContext& ctx, Tensor& out, int64_t diagonal, bool upper) {
  const int64_t n = out.numel();
  if (n == 0) return;
  TriangleParams p;
  p.rank = static_cast<int>(out.dim());
  for (int d = 0; d < p.rank; ++d) {
    p.sizes[d] = out.size(d);
    p.strides[d] = out.stride(d);
  }
  p.diagonal = diagonal;
  p.upper = upper;
  cudaStream_t stream = cuda::stream(ctx);
  switch (out.element_size()) {
    case 1: launch_zero_triangle<uint8_t>(stream, out.data(), p, n, 1); break;
    case 2: launch_zero_triangle<uint16_t>(stream, out.data(), p, n, 1); break;
    case 4: launch_zero_triangle<uint32_t>(stream, out.data(), p, n, 1); break;
    case 8: launch_zero_triangle<uint64_t>(stream, out.data(), p, n, 1); break;
    default: {
      // Wider elements (complex): zero each 8-byte part in its own pass.
      const size_t es = out.element_size();
      PTERUN_CHECK(es % 8 == 0, ErrorCode::NotSupported, "tril/triu: ", es,
                   "-byte elements are not supported on CUDA");
      const int64_t parts = static_cast<int64_t>(es / 8);
      for (int64_t k = 0; k < parts; ++k) {
        launch_zero_triangle<uint64_t>(stream, static_cast<uint64_t*>(out.data()) + k, p, n, parts);
      }
    }
  }
  cuda::check_launch("tril/triu");
}

void cuda_copy(const KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides,
               const void* src, std::span<const int64_t> src_strides,
               std::span<const int64_t> sizes, size_t element_size) {
  cuda::device_strided_copy(ctx, dst, dst_strides, src, src_strides, sizes, element_size);
}

void* cuda_scratch(KernelContext& ctx, size_t bytes) {
  return cuda::scratch(ctx, bytes);
}

}  // namespace

const Mover& mover() {
  static constexpr Mover kMover{&cuda_copy, &cuda_scratch, &cuda_fill, &cuda_convert,
                                &cuda_zero_triangle};
  return kMover;
}

}  // namespace pterun::kernels::cuda_ops
