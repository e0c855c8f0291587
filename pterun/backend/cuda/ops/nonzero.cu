// nonzero.out on CUDA: int64 [count, rank] coordinates of self's true
// elements in row-major order (the checks are the front-end's,
// pterun/ops/nonzero.cpp). The count decides out's shape, so this is
// the one CUDA kernel that waits for the device (once per call, counted in
// DeviceSyncs): flags of self's elements, an inclusive prefix sum over them
// (CUB, from the CUDA toolkit) that gives each true element its row, a
// wait for the total, out resized, then each true element writes its row.

#include <cub/device/device_scan.cuh>

#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/device_util.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/backend/device.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/nonzero.h"

namespace pterun::kernels::cuda_ops {
namespace {

constexpr unsigned kThreads = 256;

/// self's logical shape and strides, for unravelling a row-major index.
struct Coords {
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

__device__ inline int64_t unravel(const Coords& c, int64_t i, int64_t* coord) {
  int64_t offset = 0;
  for (int d = c.rank - 1; d >= 0; --d) {
    const int64_t q = i / c.sizes[d];
    const int64_t x = i - q * c.sizes[d];
    if (coord != nullptr) coord[d] = x;
    offset += x * c.strides[d];
    i = q;
  }
  return offset;
}

template <typename T>
__global__ void flag_kernel(Coords c, const T* self, int64_t n, int64_t* flags) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    flags[i] = cuda::convert<bool>(self[unravel(c, i, nullptr)]) ? 1 : 0;
  }
}

__global__ void write_kernel(Coords c, const int64_t* flags, const int64_t* rows, int64_t n,
                             int64_t* out, int64_t row_stride, int64_t col_stride) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (flags[i] == 0) continue;
    int64_t coord[kMaxRank];
    unravel(c, i, coord);
    int64_t* row = out + (rows[i] - 1) * row_stride;
    for (int d = 0; d < c.rank; ++d) row[d * col_stride] = coord[d];
  }
}

size_t aligned(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

void nonzero_out(KernelContext& ctx, const ops::NonzeroArgs& a) {
  const char* op = "aten::nonzero.out";
  const Tensor& self = a.self;
  Tensor& out = a.out;
  const int64_t n = self.numel();
  const int64_t rank = static_cast<int64_t>(self.dim());
  Coords c;
  c.rank = static_cast<int>(rank);
  for (size_t d = 0; d < self.dim(); ++d) {
    c.sizes[d] = self.size(d);
    c.strides[d] = self.stride(d);
  }
  cudaStream_t st = cuda::stream(ctx);
  size_t scan_bytes = 0;
  PTERUN_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes,
                                                  static_cast<const int64_t*>(nullptr),
                                                  static_cast<int64_t*>(nullptr), n, st));
  const size_t list_bytes = aligned(static_cast<size_t>(n) * sizeof(int64_t));
  char* buf = static_cast<char*>(cuda::scratch(ctx, 2 * list_bytes + aligned(scan_bytes)));
  auto* flags = reinterpret_cast<int64_t*>(buf);
  auto* rows = reinterpret_cast<int64_t*>(buf + list_bytes);
  void* temp = buf + 2 * list_bytes;

  const unsigned blocks = cuda::blocks_for(n, kThreads);
  cuda::visit_dtype(self.dtype(), op, [&]<typename T>() {
    flag_kernel<T><<<blocks, kThreads, 0, st>>>(c, self.data_as<const T>(), n, flags);
  });
  cuda::check_launch(op);
  PTERUN_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, scan_bytes, flags, rows, n, st));

  int64_t count = 0;
  PTERUN_CUDA_CHECK(
      cudaMemcpyAsync(&count, rows + (n - 1), sizeof count, cudaMemcpyDeviceToHost, st));
  backend::synchronize(ctx);
  const std::array<int64_t, 2> shape = {count, rank};
  kernels::resize_output(out, shape, op);
  if (count == 0 || rank == 0) return;
  write_kernel<<<blocks, kThreads, 0, st>>>(c, flags, rows, n, out.data_as<int64_t>(),
                                            out.stride(0), out.stride(1));
  cuda::check_launch(op);
}

}  // namespace

const ops::NonzeroBackend& nonzero_backend() {
  static constexpr ops::NonzeroBackend kNonzero{&nonzero_out};
  return kNonzero;
}

}  // namespace pterun::kernels::cuda_ops
