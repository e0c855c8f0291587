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

#include <cmath>
#include <cstdlib>
#include <limits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/nn_device.cuh"
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
    for (; r + nthreads < end; r += 2 * nthreads) {
      a0 = Op::step(a0, load_acc<A, kDirect>(l.in, l.in_dtype, base + r * s));
      a1 = Op::step(a1, load_acc<A, kDirect>(l.in, l.in_dtype, base + (r + nthreads) * s));
    }
    if (r < end) a0 = Op::step(a0, load_acc<A, kDirect>(l.in, l.in_dtype, base + r * s));
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

/// Second pass of split rows: one thread per output.
template <typename A, RedKind K>
__global__ void reduce_finish(ReduceLaunch l, int64_t splits, const A* partial) {
  using Op = DevOp<A, K>;
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < l.num_out;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    A acc = Op::identity();
    for (int64_t s = 0; s < splits; ++s) acc = Op::step(acc, partial[o * splits + s]);
    int64_t off[2];
    space_offsets(l.kept, o, off);
    store_as(l.out, l.out_dtype, off[1], Op::finish(acc, l.count));
  }
}

constexpr int kColX = 32, kColY = 8;

/// Columns: block (32, 8); threadIdx.x picks one of 32 neighbouring
/// outputs, threadIdx.y a share of its reduced elements.
template <typename A, RedKind K, bool kDirect>
__global__ void reduce_cols(ReduceLaunch l) {
  using Op = DevOp<A, K>;
  __shared__ A part[kColY][kColX];
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t o0 = blockIdx.x * static_cast<int64_t>(kColX); o0 < l.num_out;
       o0 += static_cast<int64_t>(gridDim.x) * kColX) {
    const int64_t o = o0 + tx;
    int64_t off[2] = {0, 0};
    A acc = Op::identity();
    if (o < l.num_out) {
      space_offsets(l.kept, o, off);
      acc = fold_range<A, K, kDirect>(l, off[0], 0, l.count, ty, kColY);
    }
    __syncthreads();  // part may still be read by the previous iteration
    part[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && o < l.num_out) {
      for (int y = 1; y < kColY; ++y) acc = Op::step(acc, part[y][tx]);
      store_as(l.out, l.out_dtype, off[1], Op::finish(acc, l.count));
    }
  }
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
    const unsigned blocks = blocks_for(l.num_out, kColX);
    reduce_cols<A, K, kDirect><<<blocks, dim3(kColX, kColY), 0, st>>>(l);
    check_launch(op);
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
  A* partial = static_cast<A*>(scratch(ctx, sizeof(A) * static_cast<size_t>(l.num_out * splits)));
  reduce_rows<A, K, kDirect, false>
      <<<blocks_for(l.num_out * splits, 1), kBlock, 0, st>>>(l, splits, partial);
  check_launch(op);
  reduce_finish<A, K><<<blocks_for(l.num_out, 128), 128, 0, st>>>(l, splits, partial);
  check_launch(op);
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
