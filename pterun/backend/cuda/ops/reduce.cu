// The generic reduction (sum, mean, prod, amax/amin, any/all): the host
// plan (reduce_util's ReducePlan) arrives as kept dims x reduced dims, and
// one of three kernels walks it:
//  - rows: a warp or a block per output (split over several blocks, with a
//    second pass, when there are few outputs), when the reduced dims are
//    innermost in memory or there are few outputs;
//  - columns: a thread column per output, when a kept dim is innermost, so
//    neighbouring threads read neighbouring elements.
// Accumulates in float (f16/bf16/f32), double (f64), wrapping 64-bit
// integers, int64 (integer extremes) or bool, like the CPU engine.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/nn_device.cuh"
#include "pterun/backend/cuda/device/row_regs.cuh"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/nn_launch.h"

namespace pterun::cuda::nn {
namespace {

template <typename A, RedKind K>
struct DevOp {
  __device__ static A identity() {
    if constexpr (K == RedKind::Prod || K == RedKind::All) {
      return A(1);
    } else if constexpr (K == RedKind::Max || K == RedKind::Min) {
      if constexpr (std::is_floating_point_v<A>) {
        return K == RedKind::Max ? -INFINITY : INFINITY;
      } else {
        return K == RedKind::Max ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
      }
    } else {
      return A(0);
    }
  }
  __device__ static A step(A a, A x) {
    if constexpr (K == RedKind::Sum || K == RedKind::Mean) {
      return A(a + x);
    } else if constexpr (K == RedKind::Prod) {
      return A(a * x);
    } else if constexpr (K == RedKind::Any) {
      return a || x;
    } else if constexpr (K == RedKind::All) {
      return a && x;
    } else {
      // NaN wins (torch's amax/amin).
      bool take = K == RedKind::Max ? x > a : x < a;
      if constexpr (std::is_floating_point_v<A>) take = take || x != x;
      return take ? x : a;
    }
  }
  __device__ static A finish(A a, int64_t count) {
    if constexpr (K == RedKind::Mean) {
      return a / static_cast<A>(count);
    } else {
      return a;
    }
  }
};

template <typename A, RedKind K>
struct StepFn {
  __device__ A operator()(A a, A b) const { return DevOp<A, K>::step(a, b); }
};

/// Folds p[begin, end) (A's own storage, unit stride) by `nthreads` threads
/// from `tid`: the elements before the first 16-byte boundary one by one,
/// then whole packs, four in flight per thread, then the tail.
template <typename A, RedKind K>
__device__ A fold_dense(const A* __restrict__ p, int64_t begin, int64_t end, int tid,
                        int nthreads) {
  using Op = DevOp<A, K>;
  constexpr int V = kPackOf<A>;
  using P = Pack<A, V>;
  const int64_t misalign = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p + begin) % 16) /
                           static_cast<int64_t>(sizeof(A));
  int64_t head = misalign == 0 ? begin : begin + (V - misalign);
  if (head > end) head = end;
  const int64_t packs = (end - head) / V;
  A acc[4][V];
#pragma unroll
  for (int u = 0; u < 4; ++u) {
#pragma unroll
    for (int e = 0; e < V; ++e) acc[u][e] = Op::identity();
  }
  for (int64_t r = begin + tid; r < head; r += nthreads) acc[0][0] = Op::step(acc[0][0], p[r]);
  const P* v = reinterpret_cast<const P*>(p + head);
  int64_t q = tid;
  for (; q + 3 * nthreads < packs; q += 4 * nthreads) {
    P x[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) x[u] = v[q + u * nthreads];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
#pragma unroll
      for (int e = 0; e < V; ++e) acc[u][e] = Op::step(acc[u][e], x[u].v[e]);
    }
  }
  for (; q < packs; q += nthreads) {
    const P x = v[q];
#pragma unroll
    for (int e = 0; e < V; ++e) acc[0][e] = Op::step(acc[0][e], x.v[e]);
  }
  for (int64_t r = head + packs * V + tid; r < end; r += nthreads) {
    acc[1][0] = Op::step(acc[1][0], p[r]);
  }
  A a = Op::identity();
#pragma unroll
  for (int u = 0; u < 4; ++u) {
#pragma unroll
    for (int e = 0; e < V; ++e) a = Op::step(a, acc[u][e]);
  }
  return a;
}

/// Folds the reduced elements [begin, end) of the output whose input
/// starts at `base`, by `nthreads` threads from `tid`.
template <typename A, RedKind K, bool kDirect>
__device__ A fold_range(const ReduceLaunch& l, int64_t base, int64_t begin, int64_t end, int tid,
                        int nthreads) {
  using Op = DevOp<A, K>;
  A a0 = Op::identity(), a1 = Op::identity();
  int64_t r = begin + tid;
  if (l.red.rank == 1) {
    const int64_t s = l.red.strides[0][0];
    if constexpr (kDirect) {
      // A dense run of the accumulator's own type: 16-byte packs from the
      // first aligned element, four in flight per thread.
      if (s == 1)
        return fold_dense<A, K>(static_cast<const A*>(l.in) + base, begin, end, tid, nthreads);
    }
    A a2 = Op::identity(), a3 = Op::identity();
    for (; r + 3 * nthreads < end; r += 4 * nthreads) {
      a0 = Op::step(a0, load_acc<A, kDirect>(l.in, l.in_dtype, base + r * s));
      a1 = Op::step(a1, load_acc<A, kDirect>(l.in, l.in_dtype, base + (r + nthreads) * s));
      a2 = Op::step(a2, load_acc<A, kDirect>(l.in, l.in_dtype, base + (r + 2 * nthreads) * s));
      a3 = Op::step(a3, load_acc<A, kDirect>(l.in, l.in_dtype, base + (r + 3 * nthreads) * s));
    }
    for (; r < end; r += nthreads)
      a0 = Op::step(a0, load_acc<A, kDirect>(l.in, l.in_dtype, base + r * s));
    a0 = Op::step(a0, a2);
    a1 = Op::step(a1, a3);
  } else {
    for (; r < end; r += nthreads) {
      a0 = Op::step(a0, load_acc<A, kDirect>(l.in, l.in_dtype, base + space_offset(l.red, r)));
    }
  }
  return Op::step(a0, a1);
}

/// Rows: unit u = (output u / splits, part u % splits). kWarp: a warp per
/// unit (8 per block), else the whole block. With splits > 1 the partial
/// results go to `partial`.
template <typename A, RedKind K, bool kDirect, bool kWarp>
__global__ void reduce_rows(ReduceLaunch l, int64_t splits, A* partial) {
  using Op = DevOp<A, K>;
  const int64_t units = l.num_out * splits;
  const int tid = kWarp ? (threadIdx.x & 31) : threadIdx.x;
  const int nthreads = kWarp ? 32 : kBlock;
  const int64_t per_block = kWarp ? kWarps : 1;
  const int64_t first = blockIdx.x * per_block + (kWarp ? (threadIdx.x >> 5) : 0);
  const int64_t step = static_cast<int64_t>(gridDim.x) * per_block;
  // Every thread of a block runs the same number of iterations (block mode
  // synchronises inside).
  for (int64_t u = first; u < units; u += step) {
    const int64_t o = u / splits, part = u % splits;
    int64_t off[2];
    space_offsets(l.kept, o, off);
    const int64_t begin = l.count * part / splits, end = l.count * (part + 1) / splits;
    A acc = fold_range<A, K, kDirect>(l, off[0], begin, end, tid, nthreads);
    if constexpr (kWarp) {
      acc = warp_reduce(acc, StepFn<A, K>{});
    } else {
      acc = block_reduce(acc, StepFn<A, K>{});
    }
    if (tid == 0) {
      if (splits == 1) {
        store_as(l.out, l.out_dtype, off[1], Op::finish(acc, l.count));
      } else {
        partial[u] = acc;
      }
    }
  }
}

/// Second pass of split reductions: a warp per output folds its `splits`
/// partial results (a single thread walking 2048 of them in order was most
/// of a whole-tensor sum).
template <typename A, RedKind K>
__global__ void reduce_finish(ReduceLaunch l, int64_t splits, const A* partial) {
  using Op = DevOp<A, K>;
  const int lane = threadIdx.x & 31;
  for (int64_t o = blockIdx.x * int64_t(kWarps) + (threadIdx.x >> 5); o < l.num_out;
       o += int64_t(gridDim.x) * kWarps) {
    A acc = Op::identity();
    for (int64_t s = lane; s < splits; s += 32) acc = Op::step(acc, partial[o * splits + s]);
    acc = warp_reduce(acc, StepFn<A, K>{});
    if (lane == 0) {
      int64_t off[2];
      space_offsets(l.kept, o, off);
      store_as(l.out, l.out_dtype, off[1], Op::finish(acc, l.count));
    }
  }
}

constexpr int kColX = 32, kColY = 8;

/// Columns: block (32, 8); threadIdx.x picks one of 32 neighbouring
/// outputs, threadIdx.y a share of its reduced elements. With splits > 1
/// (gridDim.y) each block row folds part blockIdx.y of the reduced
/// elements into `partial` (output-major), for reduce_finish.
template <typename A, RedKind K, bool kDirect>
__global__ void reduce_cols(ReduceLaunch l, int64_t splits, A* partial) {
  using Op = DevOp<A, K>;
  __shared__ A part[kColY][kColX];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t split = blockIdx.y;
  const int64_t begin = l.count * split / splits, end = l.count * (split + 1) / splits;
  for (int64_t o0 = blockIdx.x * static_cast<int64_t>(kColX); o0 < l.num_out;
       o0 += static_cast<int64_t>(gridDim.x) * kColX) {
    const int64_t o = o0 + tx;
    int64_t off[2] = {0, 0};
    A acc = Op::identity();
    if (o < l.num_out) {
      space_offsets(l.kept, o, off);
      acc = fold_range<A, K, kDirect>(l, off[0], begin, end, ty, kColY);
    }
    __syncthreads();  // part may still be read by the previous iteration
    part[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && o < l.num_out) {
      for (int y = 1; y < kColY; ++y) acc = Op::step(acc, part[y][tx]);
      if (splits == 1) {
        store_as(l.out, l.out_dtype, off[1], Op::finish(acc, l.count));
      } else {
        partial[o * splits + split] = acc;
      }
    }
  }
}

/// Columns of the accumulator's own type with the outputs side by side in
/// memory (kept stride 1, packs aligned): reduce_cols with each thread
/// folding a 16-byte pack of neighbouring outputs, so a warp reads 512
/// contiguous bytes per reduced element instead of 128.
template <typename A, RedKind K>
__global__ void reduce_cols_packed(ReduceLaunch l, int64_t splits, A* partial) {
  using Op = DevOp<A, K>;
  constexpr int V = kPackOf<A>;
  using P = Pack<A, V>;
  __shared__ A part[kColY][kColX * V];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t split = blockIdx.y;
  const int64_t begin = l.count * split / splits, end = l.count * (split + 1) / splits;
  const int64_t s = l.red.strides[0][0];
  const int64_t packs = l.num_out / V;
  for (int64_t p0 = blockIdx.x * static_cast<int64_t>(kColX); p0 < packs;
       p0 += static_cast<int64_t>(gridDim.x) * kColX) {
    const int64_t p = p0 + tx;
    A acc[V];
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = Op::identity();
    if (p < packs) {
      const A* base = static_cast<const A*>(l.in) + p * V;
      int64_t r = begin + ty;
      for (; r + 3 * kColY < end; r += 4 * kColY) {
        P x[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) x[u] = *reinterpret_cast<const P*>(base + (r + u * kColY) * s);
#pragma unroll
        for (int u = 0; u < 4; ++u) {
#pragma unroll
          for (int e = 0; e < V; ++e) acc[e] = Op::step(acc[e], x[u].v[e]);
        }
      }
      for (; r < end; r += kColY) {
        const P x = *reinterpret_cast<const P*>(base + r * s);
#pragma unroll
        for (int e = 0; e < V; ++e) acc[e] = Op::step(acc[e], x.v[e]);
      }
    }
    __syncthreads();  // part may still be read by the previous iteration
#pragma unroll
    for (int e = 0; e < V; ++e) part[ty][tx * V + e] = acc[e];
    __syncthreads();
    if (ty == 0 && p < packs) {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        A a = acc[e];
        for (int y = 1; y < kColY; ++y) a = Op::step(a, part[y][tx * V + e]);
        const int64_t o = p * V + e;
        if (splits == 1) {
          store_as(l.out, l.out_dtype, o * l.kept.strides[1][0], Op::finish(a, l.count));
        } else {
          partial[o * splits + split] = a;
        }
      }
    }
  }
}

/// Whether the columns of `l` suit reduce_cols_packed (A is the input's
/// own type): one kept dim of unit input stride, whole aligned packs.
template <typename A>
bool packed_columns(const ReduceLaunch& l) {
  constexpr int V = kPackOf<A>;
  return l.kept.rank == 1 && l.kept.strides[0][0] == 1 && l.red.rank == 1 && l.num_out % V == 0 &&
         l.red.strides[0][0] % V == 0 && aligned(l.in, 16);
}

/// Scratch for `splits` partial results of every output.
template <typename A>
A* partials(kernels::KernelContext& ctx, const ReduceLaunch& l, int64_t splits) {
  return static_cast<A*>(scratch(ctx, sizeof(A) * static_cast<size_t>(l.num_out * splits)));
}

/// The second pass of a split reduction.
template <typename A, RedKind K>
void finish(cudaStream_t st, const ReduceLaunch& l, int64_t splits, const A* partial,
            const char* op) {
  reduce_finish<A, K><<<blocks_for(l.num_out, kWarps), kBlock, 0, st>>>(l, splits, partial);
  check_launch(op);
}

template <typename A, RedKind K, bool kDirect>
void run(kernels::KernelContext& ctx, const ReduceLaunch& l, const char* op) {
  cudaStream_t st = stream(ctx);
  const int kr = l.kept.rank, rr = l.red.rank;
  const int64_t kept_inner = kr > 0 ? l.kept.strides[0][kr - 1] : 0;
  const int64_t red_inner = rr > 0 ? l.red.strides[0][rr - 1] : 0;
  const bool columns = rr > 0 && kr > 0 && l.count > 1 && l.num_out >= 64 &&
                       std::llabs(kept_inner) < std::llabs(red_inner);
  if (columns) {
    bool packed = false;
    if constexpr (kDirect) packed = packed_columns<A>(l);
    const unsigned blocks = blocks_for(packed ? l.num_out / kPackOf<A> : l.num_out, kColX);
    // Split the reduced elements over more block rows until about 16
    // blocks per SM (132 SMs) are busy, each thread still folding 16 or more.
    int64_t splits = 1;
    if (blocks < 2048) {
      splits = std::min<int64_t>((2048 + blocks - 1) / blocks, l.count / (kColY * 16));
      splits = std::max<int64_t>(1, std::min<int64_t>(splits, 65535));
    }
    A* partial = splits > 1 ? partials<A>(ctx, l, splits) : nullptr;
    auto* kernel = &reduce_cols<A, K, kDirect>;
    if constexpr (kDirect) {
      if (packed) kernel = &reduce_cols_packed<A, K>;
    }
    kernel<<<dim3(blocks, static_cast<unsigned>(splits)), dim3(kColX, kColY), 0, st>>>(l, splits,
                                                                                       partial);
    check_launch(op);
    if (splits > 1) finish<A, K>(st, l, splits, partial, op);
    return;
  }
  if (l.count < 4096) {
    // A warp per output.
    reduce_rows<A, K, kDirect, true>
        <<<blocks_for(l.num_out, kWarps), kBlock, 0, st>>>(l, 1, nullptr);
    check_launch(op);
    return;
  }
  // A block per output, split further when there are too few outputs to
  // fill the GPU (about 8 blocks per SM on 132 SMs).
  int64_t splits = 1;
  if (l.num_out < 1024) {
    splits = std::min<int64_t>((l.count + 8191) / 8192, (2048 + l.num_out - 1) / l.num_out);
    if (splits < 1) splits = 1;
  }
  if (splits == 1) {
    reduce_rows<A, K, kDirect, false><<<blocks_for(l.num_out, 1), kBlock, 0, st>>>(l, 1, nullptr);
    check_launch(op);
    return;
  }
  A* partial = partials<A>(ctx, l, splits);
  reduce_rows<A, K, kDirect, false>
      <<<blocks_for(l.num_out * splits, 1), kBlock, 0, st>>>(l, splits, partial);
  check_launch(op);
  finish<A, K>(st, l, splits, partial, op);
}

template <typename A, RedKind K>
void run_any_load(kernels::KernelContext& ctx, const ReduceLaunch& l, const char* op) {
  // Direct loads (no per-element dtype switch) only for the common sums and
  // means, to keep the number of instantiations down.
  bool direct = false;
  if constexpr (std::is_same_v<A, float>) direct = l.in_dtype == DType::Float32;
  if constexpr (std::is_same_v<A, double>) direct = l.in_dtype == DType::Float64;
  if constexpr (std::is_floating_point_v<A> && (K == RedKind::Sum || K == RedKind::Mean)) {
    if (direct) {
      run<A, K, true>(ctx, l, op);
      return;
    }
  }
  run<A, K, false>(ctx, l, op);
}

template <RedKind K>
void run_numeric(kernels::KernelContext& ctx, const ReduceLaunch& l, const char* op) {
  switch (l.acc) {
    case AccKind::F32: return run_any_load<float, K>(ctx, l, op);
    case AccKind::F64: return run_any_load<double, K>(ctx, l, op);
    case AccKind::U64:
      if constexpr (K == RedKind::Sum || K == RedKind::Prod)
        return run<uint64_t, K, false>(ctx, l, op);
      break;
    case AccKind::I64:
      if constexpr (K == RedKind::Max || K == RedKind::Min)
        return run<int64_t, K, false>(ctx, l, op);
      break;
    default: break;
  }
  throw_error(ErrorCode::Internal, str_cat(op, ": unsupported accumulator for this reduction"));
}

}  // namespace

void launch_reduce(kernels::KernelContext& ctx, const ReduceLaunch& l, const char* op) {
  if (l.num_out == 0) return;
  switch (l.kind) {
    case RedKind::Sum: return run_numeric<RedKind::Sum>(ctx, l, op);
    case RedKind::Mean: return run_numeric<RedKind::Mean>(ctx, l, op);
    case RedKind::Prod: return run_numeric<RedKind::Prod>(ctx, l, op);
    case RedKind::Max: return run_numeric<RedKind::Max>(ctx, l, op);
    case RedKind::Min: return run_numeric<RedKind::Min>(ctx, l, op);
    case RedKind::Any: return run<bool, RedKind::Any, false>(ctx, l, op);
    case RedKind::All: return run<bool, RedKind::All, false>(ctx, l, op);
  }
}

}  // namespace pterun::cuda::nn
