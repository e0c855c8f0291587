// Indexing kernels on CUDA: embedding, index_select, gather, scatter (src,
// value, add), masked_fill, index.Tensor and index_put, computing what the
// front-ends (pterun/ops/index.cpp) checked, resized and planned.
//
// Index values live on the device, so they are range-checked there: an
// index out of range reads as zero (gathers) or writes nothing (scatters)
// instead of raising as the CPU does; reporting it would need a host wait.
// For the same reason boolean mask indices are refused (count_mask): the
// result's shape depends on their values. Elements move as raw units (1,
// 2, 4 or 8 bytes, wider ones as several 8-byte units) except where
// arithmetic is needed (scatter_add, accumulate).

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/index_plan.h"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/backend/cuda/strided_copy.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/ops/index.h"

namespace pterun::kernels::cuda_ops {
namespace {

using cuda::StridedIndexer;

constexpr unsigned kThreads = 256;

#define PTERUN_GRID_STRIDE(i, n)                                            \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

/// Calls f.template operator()<U>(parts): an element of `es` bytes moves as
/// `parts` units of U.
template <typename F>
void visit_unit(size_t es, F&& f) {
  switch (es) {
    case 1: f.template operator()<uint8_t>(1); break;
    case 2: f.template operator()<uint16_t>(1); break;
    case 4: f.template operator()<uint32_t>(1); break;
    case 8: f.template operator()<uint64_t>(1); break;
    default:
      if (es % 8 == 0) {
        f.template operator()<uint64_t>(static_cast<int>(es / 8));
      } else {
        f.template operator()<uint8_t>(static_cast<int>(es));
      }
  }
}

/// Up to 16 bytes of one element, passed by value (a scalar converted on
/// the host).
struct Bits {
  uint64_t words[2] = {0, 0};
};

template <typename U>
__device__ inline void copy_element(U* dst, const U* src, int parts) {
  for (int p = 0; p < parts; ++p) dst[p] = src[p];
}

template <typename U>
__device__ inline void zero_element(U* dst, int parts) {
  for (int p = 0; p < parts; ++p) dst[p] = U(0);
}

__device__ inline int64_t read_index(const void* data, bool is64, int64_t offset) {
  return is64 ? static_cast<const int64_t*>(data)[offset]
              : static_cast<int64_t>(static_cast<const int32_t*>(data)[offset]);
}

int64_t size_at(const Tensor& t, size_t d) {
  return t.dim() == 0 ? 1 : t.size(d);
}
int64_t stride_at(const Tensor& t, size_t d) {
  return t.dim() == 0 ? 0 : t.stride(d);
}

// ---- row gather: embedding and index_select of whole rows ------------------
//
// out row (o, i) = src row (o, index[i]) for row-major operands, o over the
// dims before the indexed one: rows move in the widest unit (up to 16
// bytes) that divides them, a warp per row (8 rows per block) for short
// rows, else the block, four units in flight per thread.

struct RowGather {
  const void* index = nullptr;
  bool is64 = true;
  int64_t index_stride = 0;
  int64_t count = 0;                   // indices (rows) per outer block
  int64_t size = 0;                    // valid index values: [0, size)
  int64_t src_outer = 0, src_row = 0;  // strides in units
  int64_t dst_outer = 0, dst_row = 0;
  int64_t units = 0;  // units per row
};

template <typename U, int kPerRow>
__global__ void __launch_bounds__(kThreads)
    row_gather_kernel(U* __restrict__ out, const U* __restrict__ src, RowGather g, int64_t rows) {
  constexpr int kRowsPerBlock = kThreads / kPerRow;
  const int lane = static_cast<int>(threadIdx.x) % kPerRow;
  for (int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kPerRow; row < rows;
       row += int64_t(gridDim.x) * kRowsPerBlock) {
    const int64_t o = row / g.count, i = row - o * g.count;
    const int64_t v = read_index(g.index, g.is64, i * g.index_stride);
    U* d = out + o * g.dst_outer + i * g.dst_row;
    if (v < 0 || v >= g.size) {
      for (int64_t k = lane; k < g.units; k += kPerRow) d[k] = U{};
      continue;
    }
    cuda::copy_run<kPerRow>(d, 1, src + o * g.src_outer + v * g.src_row, 1, g.units, lane);
  }
}

/// Runs the row gather of `rows` rows of `row_bytes` bytes; `g`'s strides
/// are in bytes here. False (nothing launched) when a row is under 16
/// bytes, which the element kernels move as well.
bool row_gather(cudaStream_t stream, void* out, const void* src, RowGather g, int64_t rows,
                int64_t row_bytes) {
  if (row_bytes < 16) return false;
  int64_t w = 16;
  auto fits = [&](int64_t unit) {
    for (int64_t b : {row_bytes, g.src_outer, g.src_row, g.dst_outer, g.dst_row}) {
      if (b % unit != 0) return false;
    }
    return cuda::aligned(out, static_cast<size_t>(unit)) &&
           cuda::aligned(src, static_cast<size_t>(unit));
  };
  while (w > 1 && !fits(w)) w /= 2;
  g.units = row_bytes / w;
  g.src_outer /= w;
  g.src_row /= w;
  g.dst_outer /= w;
  g.dst_row /= w;
  auto launch = [&]<typename U>() {
    if (g.units >= 4 * kThreads) {
      row_gather_kernel<U, kThreads><<<cuda::blocks_for(rows, 1), kThreads, 0, stream>>>(
          static_cast<U*>(out), static_cast<const U*>(src), g, rows);
    } else {
      row_gather_kernel<U, 32><<<cuda::blocks_for(rows, kThreads / 32), kThreads, 0, stream>>>(
          static_cast<U*>(out), static_cast<const U*>(src), g, rows);
    }
  };
  switch (w) {
    case 16: launch.template operator()<uint4>(); break;
    case 8: launch.template operator()<uint2>(); break;
    case 4: launch.template operator()<uint32_t>(); break;
    case 2: launch.template operator()<uint16_t>(); break;
    default: launch.template operator()<uint8_t>(); break;
  }
  return true;
}

// ---- embedding -------------------------------------------------------------

struct EmbeddingParams {
  StridedIndexer<2> rows;  // over indices' dims: {indices, out}
  const void* indices = nullptr;
  bool is64 = true;
  int64_t dim = 0;         // embedding width
  int64_t num_rows = 0;    // weight.size(0)
  int64_t weight_row = 0;  // weight strides
  int64_t weight_col = 0;
  int64_t out_col = 0;  // out's innermost stride
  int parts = 1;
};

template <typename U>
__global__ void embedding_kernel(U* __restrict__ out, const U* __restrict__ weight,
                                 EmbeddingParams p, int64_t n) {
  PTERUN_GRID_STRIDE(lin, n) {
    const int64_t r = lin / p.dim;
    const int64_t c = lin - r * p.dim;
    int64_t off[2];
    p.rows.offsets(r, off);
    const int64_t v = read_index(p.indices, p.is64, off[0]);
    U* dst = out + (off[1] + c * p.out_col) * p.parts;
    if (v >= 0 && v < p.num_rows) {
      copy_element(dst, weight + (v * p.weight_row + c * p.weight_col) * p.parts, p.parts);
    } else {
      zero_element(dst, p.parts);
    }
  }
}

void embedding_out(KernelContext& ctx, const ops::EmbeddingArgs& a) {
  const char* op = "aten::embedding.out";
  const int64_t n = a.out.numel();
  if (n == 0) return;
  EmbeddingParams p;
  const size_t k = a.indices.dim();
  p.rows.rank = static_cast<int>(k);
  for (size_t d = 0; d < k; ++d) {
    p.rows.sizes[d] = a.indices.size(d);
    p.rows.strides[0][d] = a.indices.stride(d);
    p.rows.strides[1][d] = a.out.stride(d);
  }
  p.indices = a.indices.data();
  p.is64 = a.indices.dtype() == DType::Int64;
  p.dim = a.weight.size(1);
  p.num_rows = a.weight.size(0);
  p.weight_row = a.weight.stride(0);
  p.weight_col = a.weight.stride(1);
  p.out_col = a.out.stride(k);
  cudaStream_t stream = cuda::stream(ctx);
  if (a.weight.is_contiguous_order() && a.out.is_contiguous_order() &&
      a.indices.is_contiguous_order()) {
    const int64_t es = static_cast<int64_t>(a.weight.element_size());
    RowGather g;
    g.index = p.indices;
    g.is64 = p.is64;
    g.index_stride = 1;
    g.count = a.indices.numel();
    g.size = p.num_rows;
    g.src_row = p.weight_row * es;
    g.dst_row = p.dim * es;
    if (row_gather(stream, a.out.data(), a.weight.data(), g, g.count, p.dim * es)) {
      cuda::check_launch(op);
      return;
    }
  }
  visit_unit(a.weight.element_size(), [&]<typename U>(int parts) {
    p.parts = parts;
    embedding_kernel<U><<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(
        static_cast<U*>(a.out.data()), static_cast<const U*>(a.weight.data()), p, n);
  });
  cuda::check_launch(op);
}

// ---- index_select ---------------------------------------------------------------

struct SelectParams {
  StridedIndexer<2> walk;  // over out's dims: {out, self with `dim` zeroed}
  int64_t inner = 1;       // elements of out after `dim` (row-major)
  int64_t count = 1;       // out's size along `dim`
  const void* index = nullptr;
  bool is64 = true;
  int64_t index_stride = 0;
  int64_t size = 1;    // self's size along `dim`
  int64_t stride = 0;  // self's stride along `dim`
  int parts = 1;
};

template <typename U>
__global__ void index_select_kernel(U* __restrict__ out, const U* __restrict__ self, SelectParams p,
                                    int64_t n) {
  PTERUN_GRID_STRIDE(lin, n) {
    int64_t off[2];
    p.walk.offsets(lin, off);
    const int64_t i = (lin / p.inner) % p.count;
    const int64_t v = read_index(p.index, p.is64, i * p.index_stride);
    U* dst = out + off[0] * p.parts;
    if (v >= 0 && v < p.size) {
      copy_element(dst, self + (off[1] + v * p.stride) * p.parts, p.parts);
    } else {
      zero_element(dst, p.parts);
    }
  }
}

void index_select_out(KernelContext& ctx, const ops::IndexSelectArgs& a) {
  const char* op = "aten::index_select.out";
  const int64_t n = a.out.numel();
  if (n == 0) return;
  SelectParams p;
  p.walk.rank = static_cast<int>(a.out.dim());
  for (size_t d = 0; d < a.out.dim(); ++d) {
    p.walk.sizes[d] = a.out.size(d);
    p.walk.strides[0][d] = a.out.stride(d);
    p.walk.strides[1][d] = d == a.dim ? 0 : a.self.stride(d);
    if (d > a.dim) p.inner *= a.out.size(d);
  }
  p.count = size_at(a.out, a.dim);
  p.index = a.index.data();
  p.is64 = a.index.dtype() == DType::Int64;
  p.index_stride = a.index.dim() == 0 ? 0 : a.index.stride(0);
  p.size = size_at(a.self, a.dim);
  p.stride = stride_at(a.self, a.dim);
  cudaStream_t stream = cuda::stream(ctx);
  if (a.self.dim() > 0 && a.self.is_contiguous_order() && a.out.is_contiguous_order()) {
    const int64_t es = static_cast<int64_t>(a.self.element_size());
    RowGather g;
    g.index = p.index;
    g.is64 = p.is64;
    g.index_stride = p.index_stride;
    g.count = p.count;
    g.size = p.size;
    g.src_row = p.inner * es;
    g.src_outer = p.size * p.inner * es;
    g.dst_row = p.inner * es;
    g.dst_outer = p.count * p.inner * es;
    if (row_gather(stream, a.out.data(), a.self.data(), g, n / p.inner, p.inner * es)) {
      cuda::check_launch(op);
      return;
    }
  }
  visit_unit(a.self.element_size(), [&]<typename U>(int parts) {
    p.parts = parts;
    index_select_kernel<U><<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(
        static_cast<U*>(a.out.data()), static_cast<const U*>(a.self.data()), p, n);
  });
  cuda::check_launch(op);
}

// ---- gather / scatter -------------------------------------------------------------

struct GatherParams {
  StridedIndexer<3> walk;  // over index's dims: {index, a with `dim` zeroed, b}
  const void* index = nullptr;
  bool is64 = true;
  int64_t size = 1;  // a's size along `dim`
  int64_t step = 0;  // a's stride along `dim`
  int parts = 1;
};

/// The walk of gather / scatter: index's dims with strides {index, a (dim
/// zeroed), b}, as the CPU's index_walk.
GatherParams gather_params(const Tensor& index, size_t dim, const Tensor& a, const Tensor* b) {
  GatherParams p;
  p.walk.rank = static_cast<int>(index.dim());
  for (size_t d = 0; d < index.dim(); ++d) {
    p.walk.sizes[d] = index.size(d);
    p.walk.strides[0][d] = index.stride(d);
    p.walk.strides[1][d] = d == dim ? 0 : stride_at(a, d);
    p.walk.strides[2][d] = b != nullptr ? stride_at(*b, d) : 0;
  }
  p.index = index.data();
  p.is64 = index.dtype() == DType::Int64;
  p.size = size_at(a, dim);
  p.step = stride_at(a, dim);
  return p;
}

template <typename U>
__global__ void gather_kernel(U* __restrict__ out, const U* __restrict__ self, GatherParams p,
                              int64_t n) {
  PTERUN_GRID_STRIDE(lin, n) {
    int64_t off[3];
    p.walk.offsets(lin, off);
    const int64_t v = read_index(p.index, p.is64, off[0]);
    U* dst = out + off[2] * p.parts;
    if (v >= 0 && v < p.size) {
      copy_element(dst, self + (off[1] + v * p.step) * p.parts, p.parts);
    } else {
      zero_element(dst, p.parts);
    }
  }
}

void gather_out(KernelContext& ctx, const ops::GatherArgs& a) {
  const char* op = "aten::gather.out";
  const int64_t n = a.index.numel();
  if (n == 0) return;
  GatherParams p = gather_params(a.index, a.dim, a.self, &a.out);
  cudaStream_t stream = cuda::stream(ctx);
  visit_unit(a.self.element_size(), [&]<typename U>(int parts) {
    p.parts = parts;
    gather_kernel<U><<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(
        static_cast<U*>(a.out.data()), static_cast<const U*>(a.self.data()), p, n);
  });
  cuda::check_launch(op);
}

/// Writes src elements (or `value` when src is null) into out at the
/// indexed positions. Repeated positions race (any one of them wins).
template <typename U>
__global__ void scatter_kernel(U* __restrict__ out, const U* __restrict__ src, Bits value,
                               GatherParams p, int64_t n) {
  PTERUN_GRID_STRIDE(lin, n) {
    int64_t off[3];
    p.walk.offsets(lin, off);
    const int64_t v = read_index(p.index, p.is64, off[0]);
    if (v < 0 || v >= p.size) continue;
    U* dst = out + (off[1] + v * p.step) * p.parts;
    if (src != nullptr) {
      copy_element(dst, src + off[2] * p.parts, p.parts);
    } else {
      copy_element(dst, reinterpret_cast<const U*>(value.words), p.parts);
    }
  }
}

/// *addr = *addr + v (|| for bool) atomically, computing as the CPU does:
/// in the compute type, rounded back to T.
template <typename T>
__device__ inline T add_values(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else {
    using C = cuda::DeviceComputeOf<T>;
    return cuda::convert<T>(C(cuda::convert<C>(a) + cuda::convert<C>(b)));
  }
}

template <typename T>
__device__ inline void atomic_add(T* addr, T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                std::is_same_v<T, int32_t>) {
    atomicAdd(addr, v);
  } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(v));
  } else if constexpr (sizeof(T) == 4) {
    auto* word = reinterpret_cast<unsigned int*>(addr);
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      T cur;
      memcpy(&cur, &assumed, 4);
      T next = add_values(cur, v);
      unsigned int bits;
      memcpy(&bits, &next, 4);
      old = atomicCAS(word, assumed, bits);
    } while (old != assumed);
  } else {
    // 1- and 2-byte types: compare-and-swap the aligned 32-bit word that
    // holds the element (it never straddles two words).
    static_assert(sizeof(T) == 1 || sizeof(T) == 2);
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    auto* word = reinterpret_cast<unsigned int*>(a & ~uintptr_t{3});
    const unsigned shift = static_cast<unsigned>(a & 3u) * 8u;
    const unsigned mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const unsigned int cur_bits = (assumed & mask) >> shift;
      T cur;
      memcpy(&cur, &cur_bits, sizeof(T));
      T next = add_values(cur, v);
      unsigned int next_bits = 0;
      memcpy(&next_bits, &next, sizeof(T));
      old = atomicCAS(word, assumed, (assumed & ~mask) | ((next_bits << shift) & mask));
    } while (old != assumed);
  }
}

template <typename T>
__global__ void scatter_add_kernel(T* __restrict__ out, const T* __restrict__ src, GatherParams p,
                                   int64_t n) {
  PTERUN_GRID_STRIDE(lin, n) {
    int64_t off[3];
    p.walk.offsets(lin, off);
    const int64_t v = read_index(p.index, p.is64, off[0]);
    if (v < 0 || v >= p.size) continue;
    atomic_add(out + off[1] + v * p.step, src[off[2]]);
  }
}

void scatter_out(KernelContext& ctx, const ops::ScatterArgs& a) {
  const char* op = a.mode == ops::ScatterMode::Src     ? "aten::scatter.src_out"
                   : a.mode == ops::ScatterMode::Value ? "aten::scatter.value_out"
                                                       : "aten::scatter_add.out";
  // The value converted as the CPU kernel converts it.
  Bits value;
  if (a.mode == ops::ScatterMode::Value) {
    kernels::visit(a.self.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
      const Scalar& v = a.value;
      T t = v.is_floating() ? kernels::convert<T>(v.to_double()) : kernels::convert<T>(v.to_int());
      static_assert(sizeof(T) <= sizeof(value.words));
      std::memcpy(value.words, &t, sizeof(T));
    });
  }
  cuda::device_strided_copy(ctx, a.out.data(), a.out.strides(), a.self.data(), a.self.strides(),
                            a.self.sizes(), a.self.element_size());
  const int64_t n = a.index.numel();
  if (n == 0 || a.out.numel() == 0) return;
  GatherParams p = gather_params(a.index, a.dim, a.out, a.src);
  cudaStream_t stream = cuda::stream(ctx);
  if (a.mode == ops::ScatterMode::Add) {
    cuda::visit_dtype(a.self.dtype(), op, [&]<typename T>() {
      scatter_add_kernel<T><<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(
          static_cast<T*>(a.out.data()), static_cast<const T*>(a.src->data()), p, n);
    });
  } else {
    visit_unit(a.self.element_size(), [&]<typename U>(int parts) {
      p.parts = parts;
      scatter_kernel<U><<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(
          static_cast<U*>(a.out.data()),
          a.src != nullptr ? static_cast<const U*>(a.src->data()) : nullptr, value, p, n);
    });
  }
  cuda::check_launch(op);
}

// ---- masked_fill --------------------------------------------------------------------

template <typename U>
__global__ void masked_fill_kernel(U* __restrict__ out, const U* __restrict__ self,
                                   const bool* __restrict__ mask, Bits value, StridedIndexer<3> ix,
                                   int parts, int64_t n) {
  PTERUN_GRID_STRIDE(lin, n) {
    int64_t off[3];
    ix.offsets(lin, off);
    if (mask[off[2]]) {
      copy_element(out + off[0] * parts, reinterpret_cast<const U*>(value.words), parts);
    } else {
      copy_element(out + off[0] * parts, self + off[1] * parts, parts);
    }
  }
}

void masked_fill_out(KernelContext& ctx, const ops::MaskedFillArgs& a) {
  const char* op = "aten::masked_fill.Scalar_out";
  const Scalar& value = a.value;
  // The value as the CPU kernel stores it: through the compute type.
  Bits bits;
  kernels::visit(a.self.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    const C v = value.is_floating() ? kernels::convert<C>(value.to_double())
                                    : kernels::convert<C>(value.to_int());
    const T t = kernels::convert<T>(v);
    static_assert(sizeof(T) <= sizeof(bits.words));
    std::memcpy(bits.words, &t, sizeof(T));
  });
  const int64_t n = a.out.numel();
  StridedIndexer<3> ix = cuda::make_indexer<3>(a.out, {&a.self, &a.mask}, op);
  if (n == 0) return;
  cudaStream_t stream = cuda::stream(ctx);
  visit_unit(a.self.element_size(), [&]<typename U>(int parts) {
    masked_fill_kernel<U><<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(
        static_cast<U*>(a.out.data()), static_cast<const U*>(a.self.data()),
        static_cast<const bool*>(a.mask.data()), bits, ix, parts, n);
  });
  cuda::check_launch(op);
}

// ---- advanced indexing ------------------------------------------------------------

/// Offsets of result element `lin` into the self-shaped target and the
/// other operand; false when an index is out of range.
__device__ inline bool advanced_offsets(const AdvancedParams& p, int64_t lin, int64_t& target,
                                        int64_t& other) {
  int64_t coord[kMaxRank];
  int64_t rem = lin;
  target = 0;
  other = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t q = rem / p.sizes[d];
    const int64_t c = rem - q * p.sizes[d];
    rem = q;
    target += c * p.target[d];
    other += c * p.other[d];
    if (p.index_dim[d] >= 0) coord[p.index_dim[d]] = c;
  }
  for (int k = 0; k < p.num_sources; ++k) {
    int64_t off = 0;
    for (int i = 0; i < p.index_rank; ++i) off += coord[i] * p.source_strides[k][i];
    int64_t v = read_index(p.data[k], p.is64[k], off);
    if (v < 0) v += p.size[k];
    if (v < 0 || v >= p.size[k]) return false;
    target += v * p.stride[k];
  }
  return true;
}

template <typename U>
__global__ void index_gather_kernel(U* __restrict__ out, const U* __restrict__ self,
                                    AdvancedParams p, int64_t n) {
  PTERUN_GRID_STRIDE(lin, n) {
    int64_t target, other;
    if (advanced_offsets(p, lin, target, other)) {
      copy_element(out + other * p.parts, self + target * p.parts, p.parts);
    } else {
      zero_element(out + other * p.parts, p.parts);
    }
  }
}

template <typename U>
__global__ void index_put_kernel(U* __restrict__ target_data, const U* __restrict__ values,
                                 AdvancedParams p, int64_t n) {
  PTERUN_GRID_STRIDE(lin, n) {
    int64_t target, other;
    if (advanced_offsets(p, lin, target, other)) {
      copy_element(target_data + target * p.parts, values + other * p.parts, p.parts);
    }
  }
}

template <typename T>
__global__ void index_put_add_kernel(T* __restrict__ target_data, const T* __restrict__ values,
                                     AdvancedParams p, int64_t n) {
  PTERUN_GRID_STRIDE(lin, n) {
    int64_t target, other;
    if (advanced_offsets(p, lin, target, other)) atomic_add(target_data + target, values[other]);
  }
}

/// Error NotSupported: a mask's result shape depends on its values, which
/// would need a host wait.
int64_t count_mask(const Tensor& /*mask*/, const char* op) {
  throw_error(ErrorCode::NotSupported,
              str_cat(op,
                      ": boolean mask indices are not supported on CUDA (the result shape depends "
                      "on the data)"));
}

void index_tensor_out(KernelContext& ctx, const ops::IndexTensorArgs& a) {
  const char* op = "aten::index.Tensor_out";
  AdvancedParams p = advanced_params(a.plan, a.self, a.self.strides(), a.out.strides());
  const int64_t n = a.out.numel();
  if (n == 0) return;
  cudaStream_t stream = cuda::stream(ctx);
  visit_unit(a.self.element_size(), [&]<typename U>(int parts) {
    p.parts = parts;
    index_gather_kernel<U><<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(
        static_cast<U*>(a.out.data()), static_cast<const U*>(a.self.data()), p, n);
  });
  cuda::check_launch(op);
}

void index_put(KernelContext& ctx, const ops::IndexPutArgs& a) {
  const char* op = a.in_place ? "aten::index_put_" : "aten::index_put.out";
  AdvancedParams p = advanced_params(a.plan, a.self, a.target.strides(), a.value_strides);
  if (!a.in_place) {
    cuda::device_strided_copy(ctx, a.target.data(), a.target.strides(), a.self.data(),
                              a.self.strides(), a.self.sizes(), a.self.element_size());
  }
  const int64_t n = p.numel;
  if (n == 0) return;
  cudaStream_t stream = cuda::stream(ctx);
  if (a.accumulate) {
    cuda::visit_dtype(a.self.dtype(), op, [&]<typename T>() {
      index_put_add_kernel<T><<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(
          static_cast<T*>(a.target.data()), static_cast<const T*>(a.values.data()), p, n);
    });
  } else {
    visit_unit(a.self.element_size(), [&]<typename U>(int parts) {
      p.parts = parts;
      index_put_kernel<U><<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(
          static_cast<U*>(a.target.data()), static_cast<const U*>(a.values.data()), p, n);
    });
  }
  cuda::check_launch(op);
}

}  // namespace

const ops::IndexBackend& index_backend() {
  static constexpr ops::IndexBackend kIndex = PTERUN_INDEX_BACKEND();
  return kIndex;
}

}  // namespace pterun::kernels::cuda_ops
