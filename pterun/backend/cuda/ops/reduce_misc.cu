// The reductions that are not a plain fold: two-pass variance (a block per
// output, in double), arg-reductions / max.dim (extreme and first index),
// and cumsum (a thread per line).

#include <cmath>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/nn_device.cuh"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/nn_launch.h"

namespace pterun::cuda::nn {
namespace {

struct AddD {
  __device__ double operator()(double a, double b) const { return a + b; }
};

__global__ void variance_kernel(VarianceLaunch l) {
  const double denom = fmax(0.0, static_cast<double>(l.count) - l.correction);
  for (int64_t o = blockIdx.x; o < l.num_out; o += gridDim.x) {
    int64_t off[3];
    space_offsets(l.kept, o, off);
    double sum = 0;
    for (int64_t r = threadIdx.x; r < l.count; r += kBlock) {
      sum += load_as<double>(l.in, l.in_dtype, off[0] + space_offset(l.red, r));
    }
    sum = block_reduce(sum, AddD{});
    const double mean = sum / static_cast<double>(l.count);
    double ss = 0;
    for (int64_t r = threadIdx.x; r < l.count; r += kBlock) {
      const double d = load_as<double>(l.in, l.in_dtype, off[0] + space_offset(l.red, r)) - mean;
      ss += d * d;
    }
    ss = block_reduce(ss, AddD{});
    if (threadIdx.x == 0) {
      store_as(l.var, l.var_dtype, off[1], ss / denom);
      if (l.mean != nullptr) store_as(l.mean, l.mean_dtype, off[2], mean);
    }
  }
}

/// (value, index) of an arg-reduction; index -1 is "nothing yet".
template <typename C>
struct Best {
  C v;
  int64_t i;
};

/// True when candidate b beats a: NaN beats everything (the first NaN
/// wins), then the larger (smaller) value, then the smaller index.
template <typename C>
__device__ inline bool beats(const Best<C>& b, const Best<C>& a, bool is_max) {
  if (b.i < 0) return false;
  if (a.i < 0) return true;
  const bool an = a.v != a.v, bn = b.v != b.v;
  if (an || bn) return an && bn ? b.i < a.i : bn;
  if (b.v == a.v) return b.i < a.i;
  return is_max ? b.v > a.v : b.v < a.v;
}

template <typename C>
__device__ inline void store_best(const ArgLaunch& l, const int64_t (&off)[3], const Best<C>& b) {
  if (l.values != nullptr) store_as(l.values, l.in_dtype, off[1], b.v);
  l.indices[off[2]] = b.i;
}

/// A block per line.
template <typename C>
__global__ void arg_block_kernel(ArgLaunch l, int64_t lines) {
  __shared__ C sv[kBlock];
  __shared__ int64_t si[kBlock];
  for (int64_t j = blockIdx.x; j < lines; j += gridDim.x) {
    int64_t off[3];
    space_offsets(l.other, j, off);
    Best<C> best{C(0), -1};
    for (int64_t k = threadIdx.x; k < l.len; k += kBlock) {
      Best<C> c{load_as<C>(l.in, l.in_dtype, off[0] + space_offset(l.line, k)), k};
      if (beats(c, best, l.is_max)) best = c;
    }
    __syncthreads();  // sv / si may still be read by the previous line
    sv[threadIdx.x] = best.v;
    si[threadIdx.x] = best.i;
    __syncthreads();
    for (int half = kBlock / 2; half > 0; half >>= 1) {
      if (threadIdx.x < half) {
        Best<C> a{sv[threadIdx.x], si[threadIdx.x]};
        Best<C> b{sv[threadIdx.x + half], si[threadIdx.x + half]};
        if (beats(b, a, l.is_max)) {
          sv[threadIdx.x] = b.v;
          si[threadIdx.x] = b.i;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) store_best(l, off, Best<C>{sv[0], si[0]});
  }
}

/// A thread per line (lines neighbouring in memory: coalesced loads).
template <typename C>
__global__ void arg_thread_kernel(ArgLaunch l, int64_t lines) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < lines;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[3];
    space_offsets(l.other, j, off);
    Best<C> best{C(0), -1};
    for (int64_t k = 0; k < l.len; ++k) {
      Best<C> c{load_as<C>(l.in, l.in_dtype, off[0] + space_offset(l.line, k)), k};
      if (beats(c, best, l.is_max)) best = c;
    }
    store_best(l, off, best);
  }
}

template <typename C>
void run_arg(kernels::KernelContext& ctx, const ArgLaunch& l, const char* op) {
  const int64_t lines = l.other.count();
  if (lines == 0 || l.len == 0) return;
  if (l.line_inner) {
    arg_block_kernel<C><<<blocks_for(lines, 1), kBlock, 0, stream(ctx)>>>(l, lines);
  } else {
    arg_thread_kernel<C><<<blocks_for(lines, 128), 128, 0, stream(ctx)>>>(l, lines);
  }
  check_launch(op);
}

template <typename A>
__global__ void cumsum_kernel(CumsumLaunch l, int64_t lines) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < lines;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[2];
    space_offsets(l.other, j, off);
    A run = A(0);
    for (int64_t k = 0; k < l.len; ++k) {
      run = A(run + load_as<A>(l.in, l.in_dtype, off[0] + k * l.in_step));
      store_as(l.out, l.out_dtype, off[1] + k * l.out_step, run);
    }
  }
}

}  // namespace

void launch_variance(kernels::KernelContext& ctx, const VarianceLaunch& l, const char* op) {
  if (l.num_out == 0) return;
  variance_kernel<<<blocks_for(l.num_out, 1), kBlock, 0, stream(ctx)>>>(l);
  check_launch(op);
}

void launch_arg_reduce(kernels::KernelContext& ctx, const ArgLaunch& l, const char* op) {
  switch (l.in_dtype) {
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32: return run_arg<float>(ctx, l, op);
    case DType::Float64: return run_arg<double>(ctx, l, op);
    default: return run_arg<int64_t>(ctx, l, op);
  }
}

void launch_cumsum(kernels::KernelContext& ctx, const CumsumLaunch& l, const char* op) {
  const int64_t lines = l.other.count();
  if (lines == 0 || l.len == 0) return;
  const unsigned blocks = blocks_for(lines, 128);
  switch (l.acc) {
    case AccKind::F64: cumsum_kernel<double><<<blocks, 128, 0, stream(ctx)>>>(l, lines); break;
    case AccKind::F32: cumsum_kernel<float><<<blocks, 128, 0, stream(ctx)>>>(l, lines); break;
    default: cumsum_kernel<uint64_t><<<blocks, 128, 0, stream(ctx)>>>(l, lines); break;
  }
  check_launch(op);
}

}  // namespace pterun::cuda::nn
