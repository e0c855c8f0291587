// pterun::rms_norm.out on CUDA (ops/norm.h, RmsNormArgs): rows read once
// into registers where they are dense and aligned (8 or 32 lanes of a
// warp, or the block, per row: device/row_regs.cuh), else a block per row
// reading the row twice. Each step rounds to the steps' dtype as the
// unfused instructions do; products take __fmul_rn so that no square is
// contracted into the sum that takes it. The sum's order is the kernel's
// own (within its rounding of the unfused mean's).

#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/nn_device.cuh"
#include "pterun/backend/cuda/device/row_regs.cuh"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/norm.h"

namespace pterun::cuda::nn {
namespace {

struct RmsNormLaunch {
  const void* in = nullptr;
  void* out = nullptr;
  const void* weight = nullptr;  // or null
  const void* eps = nullptr;     // one element of the steps' dtype, on the device
  Space<2> rows;                 // the leading dims; strides: in, out
  int64_t n = 1;                 // elements per row
  int64_t in_step = 1, out_step = 1, w_step = 1;
};

template <typename C>
__device__ inline C mul_rn(C a, C b) {
  if constexpr (std::is_same_v<C, double>) {
    return __dmul_rn(a, b);
  } else {
    return __fmul_rn(a, b);
  }
}

/// v rounded to T and back.
template <typename T, typename C>
__device__ inline C round_to(C v) {
  return convert<C>(convert<T>(v));
}

/// x * x rounded to S (pow's or mul's result).
template <typename S, typename C>
__device__ inline C square(C x) {
  return round_to<S>(mul_rn(x, x));
}

/// rsqrt(mean + eps) from the row's sum of squares, each step rounded to S.
template <typename S, typename C>
__device__ inline C rstd_of(C sum, int64_t n, const void* eps) {
  const C mean = round_to<S>(sum / static_cast<C>(n));
  const C a = round_to<S>(mean + convert<C>(*static_cast<const S*>(eps)));
  return round_to<S>(C(1) / sqrt(a));
}

/// One output element: x * rstd rounded to S, then to O, then times the
/// weight (in C, rounded to O by the store).
template <typename S, typename O, typename C>
__device__ inline C normed(C x, C rstd) {
  return round_to<O>(round_to<S>(mul_rn(x, rstd)));
}

template <typename X, typename S, typename O>
__global__ void rms_norm_block(RmsNormLaunch l, int64_t num_rows) {
  using C = StatOf<S>;
  const X* in = static_cast<const X*>(l.in);
  const O* w = static_cast<const O*>(l.weight);
  for (int64_t r = blockIdx.x; r < num_rows; r += gridDim.x) {
    int64_t ro[2];
    space_offsets(l.rows, r, ro);
    C sum = 0;
    for (int64_t i = threadIdx.x; i < l.n; i += kBlock) {
      sum += square<S>(convert<C>(in[ro[0] + i * l.in_step]));
    }
    const C rstd = rstd_of<S>(block_reduce(sum, Add{}), l.n, l.eps);
    O* y = static_cast<O*>(l.out) + ro[1];
    for (int64_t i = threadIdx.x; i < l.n; i += kBlock) {
      C v = normed<S, O>(convert<C>(in[ro[0] + i * l.in_step]), rstd);
      if (w != nullptr) v = mul_rn(v, convert<C>(w[i * l.w_step]));
      y[i * l.out_step] = convert<O>(v);
    }
  }
}

/// Rows dense in memory and aligned to whole packs (x and out of one
/// element size), read once into registers: kThreads threads per row.
template <typename X, typename S, typename O, int kThreads, int kSlots, int V>
__global__ void __launch_bounds__(kBlock) rms_norm_rows(RmsNormLaunch l, int64_t num_rows) {
  using C = StatOf<S>;
  using Row = RowRegs<X, C, kThreads, kSlots, V>;
  static_assert(sizeof(X) == sizeof(O), "packs of x and out hold the same elements");
  const int64_t packs = l.n / V;
  const O* w = static_cast<const O*>(l.weight);
  for (RowWalk<kThreads> walk(num_rows); walk.more(); walk.next()) {
    const bool valid = walk.valid();
    int64_t ro[2] = {0, 0};
    if (valid) space_offsets(l.rows, walk.row(), ro);
    Row row;
    const int64_t held = valid ? packs : 0;
    row.load(static_cast<const X*>(l.in) + ro[0], held);
    const C sum = row_reduce<kThreads>(
        row.fold(held, C(0), [](C a, C x) { return a + square<S>(x); }), Add{});
    if (!valid) continue;
    const C rstd = rstd_of<S>(sum, l.n, l.eps);
    // The store writes X-sized elements: O's bits (X and O match in size,
    // and equal each other unless S is float32 with O = X half-precision).
    O* y = static_cast<O*>(l.out) + ro[1];
#pragma unroll
    for (int j = 0; j < kSlots; ++j) {
      const int64_t p = Row::pack(j);
      if (p >= held) continue;
      Pack<O, V> wp{}, out;
      if (w != nullptr) wp = reinterpret_cast<const Pack<O, V>*>(w)[p];
#pragma unroll
      for (int e = 0; e < V; ++e) {
        C v = normed<S, O>(row.x[j][e], rstd);
        if (w != nullptr) v = mul_rn(v, convert<C>(wp.v[e]));
        out.v[e] = convert<O>(v);
      }
      reinterpret_cast<Pack<O, V>*>(y)[p] = out;
    }
  }
}

/// Whether rows of `l` suit rms_norm_rows with packs of V elements of
/// `bytes` bytes.
bool dense_rows(const RmsNormLaunch& l, int v, size_t bytes) {
  if (l.n % v != 0 || l.in_step != 1 || l.out_step != 1) return false;
  if (l.weight != nullptr && l.w_step != 1) return false;
  for (const void* p : {l.in, static_cast<const void*>(l.out), l.weight}) {
    if (p != nullptr && !aligned(p, static_cast<size_t>(v) * bytes)) return false;
  }
  return steps_by_packs(l.rows, 2, v);
}

template <typename X, typename S, typename O>
void launch(kernels::KernelContext& ctx, const RmsNormLaunch& l, int64_t rows) {
  if constexpr (sizeof(X) == sizeof(O)) {
    constexpr int V = kPackOf<X>;
    if (dense_rows(l, V, sizeof(X)) && for_row_shape<V>(l.n / V, [&]<int kThreads, int kSlots>() {
          rms_norm_rows<X, S, O, kThreads, kSlots, V>
              <<<blocks_for(rows, kBlock / kThreads), kBlock, 0, stream(ctx)>>>(l, rows);
        })) {
      return;
    }
  }
  rms_norm_block<X, S, O><<<blocks_for(rows, 1), kBlock, 0, stream(ctx)>>>(l, rows);
}

}  // namespace
}  // namespace pterun::cuda::nn

namespace pterun::kernels::cuda_ops {

void rms_norm_out(KernelContext& ctx, const ops::RmsNormArgs& a) {
  const char* op = kernels::kRmsNormKernel;
  const Tensor& x = a.in;
  Tensor& out = a.out;
  const size_t rank = x.dim();
  cuda::nn::RmsNormLaunch l;
  l.in = x.data();
  l.out = out.data();
  l.weight = a.weight != nullptr ? a.weight->data() : nullptr;
  l.eps = a.eps.data();
  l.n = x.size(rank - 1);
  l.in_step = x.stride(rank - 1);
  l.out_step = out.stride(rank - 1);
  l.w_step = a.weight != nullptr ? a.weight->stride(0) : 0;
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (x.size(d) != 1) l.rows.push(x.size(d), {x.stride(d), out.stride(d)});
  }
  const int64_t rows = l.rows.count();
  if (rows == 0 || l.n == 0) return;
  kernels::visit_floating<cuda::DeviceTypes>(a.eps.dtype(), op, [&]<typename S>() {
    kernels::visit_floating<cuda::DeviceTypes>(x.dtype(), op, [&]<typename X>() {
      kernels::visit_floating<cuda::DeviceTypes>(out.dtype(), op, [&]<typename O>() {
        // The front-end allows x and out other than the steps' dtype only
        // beside float32 steps.
        if constexpr (ops::kRmsNormTypes<X, S, O>) {
          cuda::nn::launch<X, S, O>(ctx, l, rows);
        } else {
          throw_error(ErrorCode::InvalidArgument,
                      str_cat(op, ": x ", describe(x), " and out ", describe(out),
                              " do not go with steps in ", dtype_name(a.eps.dtype())));
        }
      });
    });
  });
  cuda::check_launch(op);
}

}  // namespace pterun::kernels::cuda_ops
