// The CUDA strided copy behind every shape kernel: the CPU's copy plan
// (kernels::make_copy_plan: dims in destination order, coalesced), then the
// cheapest of four movers: one cudaMemcpyAsync for a dense copy, a
// shared-memory tiled transpose when the source's contiguous dim is not the
// destination's, a row kernel (a warp or a block per row) for innermost
// runs of 32 units or more (widened to 16-byte units when both sides are
// dense there), and a flat kernel otherwise.

#include <cuda_runtime.h>

#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/strided_copy.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/copy_plan.h"

namespace pterun::cuda {
namespace {

// One more than kMaxRank: an element size the kernels cannot move in one
// access is split into an extra innermost dimension.
constexpr int kMaxCopyRank = static_cast<int>(kMaxRank) + 1;

/// A copy plan over units of the type the kernel moves. While planning the
/// strides are in bytes; the kernels get them in units.
struct Layout {
  int rank = 0;
  int64_t sizes[kMaxCopyRank] = {};
  int64_t dst[kMaxCopyRank] = {};
  int64_t src[kMaxCopyRank] = {};
};

constexpr int kTile = 32;
constexpr int kTileRows = 8;

/// The transpose case: i is the destination's contiguous dim, j the
/// source's; every other dim is a batch dim.
struct TileParams {
  int64_t size_i = 0, size_j = 0;
  int64_t dst_j = 0, src_i = 0;  // strides across the tile (units)
  int batch_rank = 0;
  int64_t batch_sizes[kMaxCopyRank] = {};
  int64_t batch_dst[kMaxCopyRank] = {};
  int64_t batch_src[kMaxCopyRank] = {};
  int64_t tiles_i = 0, tiles_j = 0, total = 0;  // total = batches * tiles_i * tiles_j
};

template <typename T>
__global__ void copy_flat_kernel(T* __restrict__ dst, const T* __restrict__ src, Layout l,
                                 int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, doff = 0, soff = 0;
    for (int d = l.rank - 1; d >= 0; --d) {
      const int64_t q = rem / l.sizes[d];
      const int64_t k = rem - q * l.sizes[d];
      rem = q;
      doff += k * l.dst[d];
      soff += k * l.src[d];
    }
    dst[doff] = src[soff];
  }
}

constexpr int kCopyThreads = 256;

// Rows (all dims but the innermost) of kPerRow threads each: a warp (8
// rows per block) or the block; four units in flight per thread.
template <typename T, int kPerRow>
__global__ void __launch_bounds__(kCopyThreads)
    copy_rows_kernel(T* __restrict__ dst, const T* __restrict__ src, Layout l, int64_t rows) {
  constexpr int kRowsPerBlock = kCopyThreads / kPerRow;
  const int r = l.rank - 1;
  const int64_t inner = l.sizes[r], di = l.dst[r], si = l.src[r];
  const int lane = static_cast<int>(threadIdx.x) % kPerRow;
  for (int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kPerRow; row < rows;
       row += int64_t(gridDim.x) * kRowsPerBlock) {
    int64_t rem = row, doff = 0, soff = 0;
    for (int d = r - 1; d >= 0; --d) {
      const int64_t q = rem / l.sizes[d];
      const int64_t k = rem - q * l.sizes[d];
      rem = q;
      doff += k * l.dst[d];
      soff += k * l.src[d];
    }
    copy_run<kPerRow>(dst + doff, di, src + soff, si, inner, lane);
  }
}

// Block (32, kTileRows): reads a kT x kT tile along the source's
// contiguous dim j, writes it along the destination's contiguous dim i.
template <typename T, int kT>
__global__ void copy_transpose_kernel(T* __restrict__ dst, const T* __restrict__ src,
                                      TileParams p) {
  __shared__ T tile[kT][kT + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t t = blockIdx.x; t < p.total; t += gridDim.x) {
    const int64_t per_batch = p.tiles_i * p.tiles_j;
    int64_t b = t / per_batch;
    const int64_t within = t - b * per_batch;
    const int64_t i0 = (within % p.tiles_i) * kT;
    const int64_t j0 = (within / p.tiles_i) * kT;
    int64_t dbase = 0, sbase = 0;
    for (int d = p.batch_rank - 1; d >= 0; --d) {
      const int64_t q = b / p.batch_sizes[d];
      const int64_t k = b - q * p.batch_sizes[d];
      b = q;
      dbase += k * p.batch_dst[d];
      sbase += k * p.batch_src[d];
    }
#pragma unroll
    for (int c = tx; c < kT; c += kTile) {
      const int64_t j = j0 + c;
#pragma unroll
      for (int k = ty; k < kT; k += kTileRows) {
        const int64_t i = i0 + k;
        if (i < p.size_i && j < p.size_j) tile[k][c] = src[sbase + i * p.src_i + j];
      }
    }
    __syncthreads();
#pragma unroll
    for (int c = tx; c < kT; c += kTile) {
      const int64_t i = i0 + c;
#pragma unroll
      for (int k = ty; k < kT; k += kTileRows) {
        const int64_t jj = j0 + k;
        if (i < p.size_i && jj < p.size_j) dst[dbase + jj * p.dst_j + i] = tile[c][k];
      }
    }
    __syncthreads();
  }
}

/// Launches the kernel that suits `l` (strides in units of T).
template <typename T>
void launch_copy(cudaStream_t stream, void* dst_ptr, const void* src_ptr, const Layout& l) {
  T* dst = static_cast<T*>(dst_ptr);
  const T* src = static_cast<const T*>(src_ptr);
  const char* op = "strided copy";
  int64_t n = 1;
  for (int d = 0; d < l.rank; ++d) n *= l.sizes[d];
  if (n == 0) return;
  const int inner = l.rank - 1;
  if (l.rank >= 2 && l.dst[inner] == 1 && l.src[inner] != 1 && l.sizes[inner] >= 8) {
    int j = -1;
    for (int d = inner - 1; d >= 0; --d) {
      if (l.src[d] == 1 && l.sizes[d] >= 8) {
        j = d;
        break;
      }
    }
    if (j >= 0) {
      TileParams p;
      p.size_i = l.sizes[inner];
      p.size_j = l.sizes[j];
      p.dst_j = l.dst[j];
      p.src_i = l.src[inner];
      int64_t batches = 1;
      for (int d = 0; d < inner; ++d) {
        if (d == j) continue;
        p.batch_sizes[p.batch_rank] = l.sizes[d];
        p.batch_dst[p.batch_rank] = l.dst[d];
        p.batch_src[p.batch_rank] = l.src[d];
        ++p.batch_rank;
        batches *= l.sizes[d];
      }
      // Wide tiles (64 x 64, 16 units in flight per thread) for units of
      // up to 4 bytes on sides long enough to fill them.
      const bool wide = sizeof(T) <= 4 && p.size_i >= 64 && p.size_j >= 64;
      const int64_t t = wide ? 2 * kTile : kTile;
      p.tiles_i = (p.size_i + t - 1) / t;
      p.tiles_j = (p.size_j + t - 1) / t;
      p.total = batches * p.tiles_i * p.tiles_j;
      const unsigned blocks = static_cast<unsigned>(p.total < (1 << 20) ? p.total : (1 << 20));
      if constexpr (sizeof(T) <= 4) {
        if (wide) {
          copy_transpose_kernel<T, 2 * kTile>
              <<<blocks, dim3(kTile, kTileRows), 0, stream>>>(dst, src, p);
        }
      }
      if (!wide) {
        copy_transpose_kernel<T, kTile><<<blocks, dim3(kTile, kTileRows), 0, stream>>>(dst, src, p);
      }
      check_launch(op);
      return;
    }
  }
  if (l.rank >= 1 && l.sizes[inner] >= 32) {
    const int64_t rows = n / l.sizes[inner];
    if (l.sizes[inner] >= 4 * kCopyThreads) {
      copy_rows_kernel<T, kCopyThreads>
          <<<blocks_for(rows, 1), kCopyThreads, 0, stream>>>(dst, src, l, rows);
    } else {
      copy_rows_kernel<T, 32>
          <<<blocks_for(rows, kCopyThreads / 32), kCopyThreads, 0, stream>>>(dst, src, l, rows);
    }
    check_launch(op);
    return;
  }
  copy_flat_kernel<T><<<blocks_for(n, 256), 256, 0, stream>>>(dst, src, l, n);
  check_launch(op);
}

bool aligned_to(const Layout& l, const void* a, const void* b, int64_t w) {
  if (!aligned(a, static_cast<size_t>(w)) || !aligned(b, static_cast<size_t>(w))) return false;
  for (int d = 0; d < l.rank; ++d) {
    if (l.dst[d] % w != 0 || l.src[d] % w != 0) return false;
  }
  return true;
}

}  // namespace

void device_strided_copy(const kernels::KernelContext& ctx, void* dst,
                         std::span<const int64_t> dst_strides, const void* src,
                         std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                         size_t element_size) {
  if (kernels::has_zero_extent(sizes)) return;
  PTERUN_CHECK(element_size > 0, ErrorCode::InvalidArgument, "strided copy: element size 0");
  const kernels::CopyPlan plan =
      kernels::make_copy_plan(dst_strides, src_strides, sizes, element_size);
  cudaStream_t stream = cuda::stream(ctx);
  int64_t unit = static_cast<int64_t>(element_size);
  Layout l;
  l.rank = static_cast<int>(plan.rank);
  for (int d = 0; d < l.rank; ++d) {
    l.sizes[d] = plan.sizes[d];
    l.dst[d] = plan.dst[d];
    l.src[d] = plan.src[d];
  }
  // Dense on both sides: one memcpy.
  if (l.rank == 0 || (l.rank == 1 && l.dst[0] == unit && l.src[0] == unit)) {
    const size_t bytes = static_cast<size_t>(l.rank == 0 ? unit : l.sizes[0] * unit);
    PTERUN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const int inner = l.rank - 1;
  // Rows dense on both sides move in the widest unit that divides them.
  if (l.dst[inner] == unit && l.src[inner] == unit) {
    const int64_t row_bytes = l.sizes[inner] * unit;
    for (int64_t w : {16, 8, 4, 2}) {
      if (w <= unit) break;
      if (row_bytes % w != 0) continue;
      Layout t = l;
      t.sizes[inner] = row_bytes / w;
      t.dst[inner] = w;
      t.src[inner] = w;
      if (!aligned_to(t, dst, src, w)) continue;
      l = t;
      unit = w;
      break;
    }
  }
  // A unit the kernels cannot move in one aligned access (odd sizes,
  // misaligned 16-byte elements) becomes an extra dim of smaller units.
  const bool native = unit == 1 || unit == 2 || unit == 4 || unit == 8 || unit == 16;
  if (!native || !aligned_to(l, dst, src, unit)) {
    int64_t w = 1;
    for (int64_t c : {8, 4, 2}) {
      if (unit % c == 0 && aligned_to(l, dst, src, c)) {
        w = c;
        break;
      }
    }
    PTERUN_CHECK(l.rank < kMaxCopyRank, ErrorCode::NotSupported, "strided copy: too many dims");
    l.sizes[l.rank] = unit / w;
    l.dst[l.rank] = w;
    l.src[l.rank] = w;
    ++l.rank;
    unit = w;
  }
  for (int d = 0; d < l.rank; ++d) {
    l.dst[d] /= unit;
    l.src[d] /= unit;
  }
  switch (unit) {
    case 1: launch_copy<uint8_t>(stream, dst, src, l); break;
    case 2: launch_copy<uint16_t>(stream, dst, src, l); break;
    case 4: launch_copy<uint32_t>(stream, dst, src, l); break;
    case 8: launch_copy<uint64_t>(stream, dst, src, l); break;
    default: launch_copy<uint4>(stream, dst, src, l); break;
  }
}

}  // namespace pterun::cuda
