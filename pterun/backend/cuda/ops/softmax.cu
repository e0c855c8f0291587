// _softmax / _log_softmax along one dim: lines dense in memory that fit are
// read once into registers (a warp or a block per line); otherwise a block
// per line when the dim is the input's fastest walk (or lines are few),
// else a thread per line so that neighbouring threads read neighbouring
// lines. Numerically stable
// (max, then sum of exp(x - max)); float for f16/bf16/f32, double for f64.

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/nn_device.cuh"
#include "pterun/backend/cuda/device/row_regs.cuh"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/nn_launch.h"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/softmax.h"

namespace pterun::cuda::nn {
namespace {

/// max where NaN wins, like the CPU's ExtremeOp.
struct MaxNaN {
  template <typename C>
  __device__ C operator()(C a, C x) const {
    return (x > a || x != x) ? x : a;
  }
};

/// A safe softmax's line of nothing but -inf (max -inf): its max is taken
/// as 0, so that its exps are all 0, and its scale as 0.
template <typename C>
__device__ inline bool dead_line(const SoftmaxLaunch& l, C& m) {
  const bool dead = l.safe && m == C(-INFINITY);
  if (dead) m = C(0);
  return dead;
}

template <typename T, typename C>
__device__ inline C ld(const SoftmaxLaunch& l, int64_t off) {
  return convert<C>(static_cast<const T*>(l.in)[off]);
}

template <typename T, typename C>
__global__ void softmax_block(SoftmaxLaunch l, int64_t lines) {
  for (int64_t j = blockIdx.x; j < lines; j += gridDim.x) {
    int64_t off[2];
    space_offsets(l.other, j, off);
    C m = -INFINITY;
    for (int64_t k = threadIdx.x; k < l.len; k += kBlock) {
      m = MaxNaN{}(m, ld<T, C>(l, off[0] + k * l.in_step));
    }
    m = block_reduce(m, MaxNaN{});
    const bool dead = dead_line(l, m);
    C s = 0;
    for (int64_t k = threadIdx.x; k < l.len; k += kBlock)
      s += exp(ld<T, C>(l, off[0] + k * l.in_step) - m);
    s = block_reduce(s, Add{});
    T* y = static_cast<T*>(l.out);
    if (l.log) {
      const C shift = m + log(s);
      for (int64_t k = threadIdx.x; k < l.len; k += kBlock) {
        y[off[1] + k * l.out_step] = convert<T>(ld<T, C>(l, off[0] + k * l.in_step) - shift);
      }
    } else {
      const C inv = dead ? C(0) : C(1) / s;
      for (int64_t k = threadIdx.x; k < l.len; k += kBlock) {
        y[off[1] + k * l.out_step] = convert<T>(exp(ld<T, C>(l, off[0] + k * l.in_step) - m) * inv);
      }
    }
  }
}

/// Lines dense in memory and aligned to whole packs, each read into
/// registers once (kThreads threads per line: 8 or 32 lanes of a warp, or
/// the block), with softmax_block's arithmetic.
template <typename T, typename C, int kThreads, int kSlots, int V>
__global__ void __launch_bounds__(kBlock) softmax_rows(SoftmaxLaunch l, int64_t lines) {
  const int64_t packs = l.len / V;
  for (RowWalk<kThreads> walk(lines); walk.more(); walk.next()) {
    const bool valid = walk.valid();
    int64_t off[2] = {0, 0};
    if (valid) space_offsets(l.other, walk.row(), off);
    RowRegs<T, C, kThreads, kSlots, V> row;
    const int64_t held = valid ? packs : 0;
    row.load(static_cast<const T*>(l.in) + off[0], held);
    C m = row_reduce<kThreads>(row.fold(held, C(-INFINITY), MaxNaN{}), MaxNaN{});
    const bool dead = dead_line(l, m);
    T* y = static_cast<T*>(l.out) + off[1];
    if (l.log) {
      const C s = row_reduce<kThreads>(
          row.fold(held, C(0), [m](C a, C x) { return a + exp(x - m); }), Add{});
      const C shift = m + log(s);
      row.store(y, held, [shift](C x, int64_t) { return x - shift; });
    } else {
#pragma unroll
      for (int q = 0; q < kSlots; ++q) {
#pragma unroll
        for (int e = 0; e < V; ++e) row.x[q][e] = exp(row.x[q][e] - m);
      }
      const C sum = row_reduce<kThreads>(row.fold(held, C(0), Add{}), Add{});
      const C inv = dead ? C(0) : C(1) / sum;
      row.store(y, held, [inv](C x, int64_t) { return x * inv; });
    }
  }
}

template <typename T, typename C>
__global__ void softmax_thread(SoftmaxLaunch l, int64_t lines) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < lines;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[2];
    space_offsets(l.other, j, off);
    C m = -INFINITY;
    for (int64_t k = 0; k < l.len; ++k) m = MaxNaN{}(m, ld<T, C>(l, off[0] + k * l.in_step));
    const bool dead = dead_line(l, m);
    C s = 0;
    for (int64_t k = 0; k < l.len; ++k) s += exp(ld<T, C>(l, off[0] + k * l.in_step) - m);
    T* y = static_cast<T*>(l.out);
    if (l.log) {
      const C shift = m + log(s);
      for (int64_t k = 0; k < l.len; ++k) {
        y[off[1] + k * l.out_step] = convert<T>(ld<T, C>(l, off[0] + k * l.in_step) - shift);
      }
    } else {
      const C inv = dead ? C(0) : C(1) / s;
      for (int64_t k = 0; k < l.len; ++k) {
        y[off[1] + k * l.out_step] = convert<T>(exp(ld<T, C>(l, off[0] + k * l.in_step) - m) * inv);
      }
    }
  }
}

/// Launches softmax_rows when the lines are dense, aligned to packs of V
/// and fit in registers.
template <typename T, typename C, int V>
bool launch_rows(kernels::KernelContext& ctx, const SoftmaxLaunch& l, int64_t lines) {
  if (l.len == 0 || l.len % V != 0 || l.in_step != 1 || l.out_step != 1) return false;
  if (!aligned(l.in, sizeof(T) * V) || !aligned(l.out, sizeof(T) * V) ||
      !steps_by_packs(l.other, 2, V)) {
    return false;
  }
  return for_row_shape<V>(l.len / V, [&]<int kThreads, int kSlots>() {
    softmax_rows<T, C, kThreads, kSlots, V>
        <<<blocks_for(lines, kBlock / kThreads), kBlock, 0, stream(ctx)>>>(l, lines);
  });
}

template <typename T>
void run(kernels::KernelContext& ctx, const SoftmaxLaunch& l, const char* op) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t lines = l.other.count();
  if (launch_rows<T, C, kPackOf<T>>(ctx, l, lines) || launch_rows<T, C, 1>(ctx, l, lines)) {
    check_launch(op);
    return;
  }
  if (l.line_inner) {
    softmax_block<T, C><<<blocks_for(lines, 1), kBlock, 0, stream(ctx)>>>(l, lines);
  } else {
    softmax_thread<T, C><<<blocks_for(lines, 128), 128, 0, stream(ctx)>>>(l, lines);
  }
  check_launch(op);
}

}  // namespace

void launch_softmax(kernels::KernelContext& ctx, const SoftmaxLaunch& l, const char* op) {
  switch (l.dtype) {
    case DType::Float16: return run<__half>(ctx, l, op);
    case DType::BFloat16: return run<__nv_bfloat16>(ctx, l, op);
    case DType::Float64: return run<double>(ctx, l, op);
    default: return run<float>(ctx, l, op);
  }
}

}  // namespace pterun::cuda::nn

namespace pterun::kernels::cuda_ops {
namespace {

void softmax_out(KernelContext& ctx, const ops::SoftmaxArgs& a) {
  const char* op = a.log    ? "aten::_log_softmax.out"
                   : a.safe ? kernels::kSafeSoftmaxKernel
                            : "aten::_softmax.out";
  const Tensor& in = a.in;
  Tensor& out = a.out;
  const size_t d = a.dim;
  cuda::nn::SoftmaxLaunch l;
  l.in = in.data();
  l.out = out.data();
  l.dtype = in.dtype();
  l.log = a.log;
  l.safe = a.safe;
  int64_t min_other = INT64_MAX;
  for (size_t k = 0; k < in.dim(); ++k) {
    if (k == d || in.size(k) == 1) continue;
    l.other.push(in.size(k), {in.stride(k), out.stride(k)});
    min_other = std::min<int64_t>(min_other, std::llabs(in.stride(k)));
  }
  if (in.dim() > 0) {
    l.len = in.size(d);
    l.in_step = in.stride(d);
    l.out_step = out.stride(d);
  }
  l.line_inner = std::llabs(l.in_step) <= min_other || l.other.count() < 2048;
  cuda::nn::launch_softmax(ctx, l, op);
}

}  // namespace

const ops::SoftmaxBackend& softmax_backend() {
  static constexpr ops::SoftmaxBackend kSoftmax{&softmax_out};
  return kSoftmax;
}

}  // namespace pterun::kernels::cuda_ops
