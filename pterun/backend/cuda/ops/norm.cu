// Normalisation: native_layer_norm (dense rows that fit are read once into
// registers, a warp or a block per row; others a block per row reading
// the row three times: mean, squared deviations, then the normalised row), inference batch norm and
// group norm (per-channel scale / shift tables, then one elementwise pass over any layout).
// Statistics in float for f16/bf16/f32, double for f64, two-pass like the CPU kernels.

#include <algorithm>
#include <array>
#include <cmath>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/nn_device.cuh"
#include "pterun/backend/cuda/device/row_regs.cuh"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/nn_launch.h"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/norm.h"

namespace pterun::cuda::nn {
namespace {

template <typename T, typename C>
__device__ inline C ld(const void* p, int64_t off) {
  return convert<C>(static_cast<const T*>(p)[off]);
}

template <typename T>
__global__ void layer_norm_kernel(LayerNormLaunch l, int64_t num_rows) {
  using C = StatOf<T>;
  for (int64_t r = blockIdx.x; r < num_rows; r += gridDim.x) {
    int64_t ro[4];
    space_offsets(l.rows, r, ro);
    T* mean_out = static_cast<T*>(l.mean);
    T* rstd_out = static_cast<T*>(l.rstd);
    if (l.n == 0) {
      if (threadIdx.x == 0) {
        mean_out[ro[2]] = convert<T>(C(0));
        rstd_out[ro[3]] = convert<T>(C(NAN));
      }
      continue;
    }
    C sum = 0;
    for (int64_t i = threadIdx.x; i < l.n; i += kBlock) {
      int64_t e[4];
      space_offsets(l.row, i, e);
      sum += ld<T, C>(l.in, ro[0] + e[0]);
    }
    const C mean = block_reduce(sum, Add{}) / static_cast<C>(l.n);
    C ss = 0;
    for (int64_t i = threadIdx.x; i < l.n; i += kBlock) {
      int64_t e[4];
      space_offsets(l.row, i, e);
      const C d = ld<T, C>(l.in, ro[0] + e[0]) - mean;
      ss += d * d;
    }
    const C var = block_reduce(ss, Add{}) / static_cast<C>(l.n);
    const C rstd = C(1) / sqrt(var + static_cast<C>(l.eps));
    T* y = static_cast<T*>(l.out);
    for (int64_t i = threadIdx.x; i < l.n; i += kBlock) {
      int64_t e[4];
      space_offsets(l.row, i, e);
      C v = (ld<T, C>(l.in, ro[0] + e[0]) - mean) * rstd;
      if (l.weight != nullptr) v = v * ld<T, C>(l.weight, e[2]);
      if (l.bias != nullptr) v = v + ld<T, C>(l.bias, e[3]);
      y[ro[1] + e[1]] = convert<T>(v);
    }
    if (threadIdx.x == 0) {
      mean_out[ro[2]] = convert<T>(mean);
      rstd_out[ro[3]] = convert<T>(rstd);
    }
  }
}

/// Rows dense in memory (in, out, weight and bias at unit stride, aligned
/// to whole packs), each read into registers once: kThreads threads per
/// row (8 or 32 lanes of a warp, or the block), the statistics and the
/// normalised row from the registers, in the generic kernel's arithmetic.
template <typename T, int kThreads, int kSlots, int V>
__global__ void __launch_bounds__(kBlock) layer_norm_rows(LayerNormLaunch l, int64_t num_rows) {
  using C = StatOf<T>;
  using Row = RowRegs<T, C, kThreads, kSlots, V>;
  const int64_t packs = l.n / V;
  for (RowWalk<kThreads> walk(num_rows); walk.more(); walk.next()) {
    const bool valid = walk.valid();
    int64_t ro[4] = {0, 0, 0, 0};
    if (valid) space_offsets(l.rows, walk.row(), ro);
    Row row;
    row.load(static_cast<const T*>(l.in) + ro[0], valid ? packs : 0);
    const C n = static_cast<C>(l.n);
    const C mean = row_reduce<kThreads>(row.fold(packs, C(0), Add{}), Add{}) / n;
    const C ss = row_reduce<kThreads>(
        row.fold(valid ? packs : 0, C(0), [mean](C a, C x) { return a + (x - mean) * (x - mean); }),
        Add{});
    if (!valid) continue;
    const C rstd = C(1) / sqrt(ss / n + static_cast<C>(l.eps));
    const T* w = static_cast<const T*>(l.weight);
    const T* b = static_cast<const T*>(l.bias);
    // Weight and bias a pack at a time, as the row (dense_rows aligned them).
    row.store_packs(static_cast<T*>(l.out) + ro[1], packs,
                    [&](int64_t p, const C(&x)[V], C(&y)[V]) {
                      Pack<T, V> wp{}, bp{};
                      if (w != nullptr) wp = reinterpret_cast<const Pack<T, V>*>(w)[p];
                      if (b != nullptr) bp = reinterpret_cast<const Pack<T, V>*>(b)[p];
#pragma unroll
                      for (int e = 0; e < V; ++e) {
                        C v = (x[e] - mean) * rstd;
                        if (w != nullptr) v = v * convert<C>(wp.v[e]);
                        if (b != nullptr) v = v + convert<C>(bp.v[e]);
                        y[e] = v;
                      }
                    });
    if (Row::lane() == 0) {
      static_cast<T*>(l.mean)[ro[2]] = convert<T>(mean);
      static_cast<T*>(l.rstd)[ro[3]] = convert<T>(rstd);
    }
  }
}

/// Parameter i of an optional 1-D tensor, `absent` when there is none.
template <typename T, typename C>
__device__ inline C param(const void* p, int64_t stride, int64_t i, C absent) {
  return p == nullptr ? absent : ld<T, C>(p, i * stride);
}

template <typename T>
__global__ void batch_norm_table_kernel(BatchNormTableLaunch l) {
  using C = StatOf<T>;
  C* scale = static_cast<C*>(l.table);
  C* shift = scale + l.channels;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < l.channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const C inv = C(1) / sqrt(param<T, C>(l.var, l.v_stride, c, C(0)) + static_cast<C>(l.eps));
    const C s = param<T, C>(l.weight, l.w_stride, c, C(1)) * inv;
    scale[c] = s;
    shift[c] =
        param<T, C>(l.bias, l.b_stride, c, C(0)) - param<T, C>(l.mean, l.m_stride, c, C(0)) * s;
  }
}

/// A block per (n, g): the group's mean and rstd, and scale / shift of its
/// channels for sample n.
template <typename T>
__global__ void group_norm_stats_kernel(GroupNormStatsLaunch l) {
  using C = StatOf<T>;
  const int64_t per_group = l.channels / l.groups;
  int64_t hxw = 1;
  for (int d = 0; d < l.spatial.rank; ++d) hxw *= l.spatial.sizes[d];
  const int64_t count = per_group * hxw;
  C* scale = static_cast<C*>(l.table);
  C* shift = scale + l.batch * l.channels;
  for (int64_t u = blockIdx.x; u < l.batch * l.groups; u += gridDim.x) {
    const int64_t n = u / l.groups, g = u % l.groups;
    const int64_t base = n * l.in_n + g * per_group * l.in_c;
    C sum = 0;
    for (int64_t i = threadIdx.x; i < count; i += kBlock) {
      const int64_t c = i / hxw, s = i - c * hxw;
      sum += ld<T, C>(l.in, base + c * l.in_c + space_offset(l.spatial, s));
    }
    const C mean = block_reduce(sum, Add{}) / static_cast<C>(count);
    C ss = 0;
    for (int64_t i = threadIdx.x; i < count; i += kBlock) {
      const int64_t c = i / hxw, s = i - c * hxw;
      const C d = ld<T, C>(l.in, base + c * l.in_c + space_offset(l.spatial, s)) - mean;
      ss += d * d;
    }
    const C rstd =
        C(1) / sqrt(block_reduce(ss, Add{}) / static_cast<C>(count) + static_cast<C>(l.eps));
    if (threadIdx.x == 0) {
      static_cast<T*>(l.mean)[n * l.mean_s[0] + g * l.mean_s[1]] = convert<T>(mean);
      static_cast<T*>(l.rstd)[n * l.rstd_s[0] + g * l.rstd_s[1]] = convert<T>(rstd);
    }
    for (int64_t c = g * per_group + threadIdx.x; c < (g + 1) * per_group; c += kBlock) {
      const C s = rstd * param<T, C>(l.weight, l.w_stride, c, C(1));
      scale[n * l.channels + c] = s;
      shift[n * l.channels + c] = param<T, C>(l.bias, l.b_stride, c, C(0)) - mean * s;
    }
  }
}

template <typename T>
__global__ void channel_affine_kernel(ChannelAffineLaunch l, int64_t total) {
  using C = StatOf<T>;
  const C* scale = static_cast<const C*>(l.table);
  const C* shift = scale + l.table_len;
  const T* x = static_cast<const T*>(l.in);
  T* y = static_cast<T*>(l.out);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rem = i, xo = 0, yo = 0, n = 0, c = 0;
    for (int d = l.space.rank - 1; d >= 0; --d) {
      const int64_t size = l.space.sizes[d];
      const int64_t q = rem / size;
      const int64_t coord = rem - q * size;
      rem = q;
      xo += coord * l.space.strides[0][d];
      yo += coord * l.space.strides[1][d];
      if (d == l.n_pos) n = coord;
      if (d == l.c_pos) c = coord;
    }
    const int64_t t = l.per_batch ? n * l.channels + c : c;
    y[yo] = convert<T>(convert<C>(x[xo]) * scale[t] + shift[t]);
  }
}

}  // namespace

namespace {

/// Whether the rows of `l` suit layer_norm_rows with packs of V elements of
/// `bytes` bytes: every operand at unit stride within a row, each row and
/// the parameters starting on a whole pack.
bool dense_rows(const LayerNormLaunch& l, int v, size_t bytes) {
  if (l.n == 0 || l.n % v != 0 || l.row.rank != 1) return false;
  if (l.row.strides[0][0] != 1 || l.row.strides[1][0] != 1) return false;
  if (l.weight != nullptr && l.row.strides[2][0] != 1) return false;
  if (l.bias != nullptr && l.row.strides[3][0] != 1) return false;
  for (const void* p : {l.in, static_cast<const void*>(l.out), l.weight, l.bias}) {
    if (!aligned(p, static_cast<size_t>(v) * bytes)) return false;
  }
  return steps_by_packs(l.rows, 2, v);
}

/// Launches layer_norm_rows when a row fits in registers with packs of V.
template <typename T, int V>
bool launch_rows(kernels::KernelContext& ctx, const LayerNormLaunch& l, int64_t rows) {
  if (!dense_rows(l, V, sizeof(T))) return false;
  return for_row_shape<V>(l.n / V, [&]<int kThreads, int kSlots>() {
    layer_norm_rows<T, kThreads, kSlots, V>
        <<<blocks_for(rows, kBlock / kThreads), kBlock, 0, stream(ctx)>>>(l, rows);
  });
}

}  // namespace

void launch_layer_norm(kernels::KernelContext& ctx, const LayerNormLaunch& l, const char* op) {
  const int64_t rows = l.rows.count();
  if (rows == 0) return;
  kernels::visit_floating<DeviceTypes>(l.dtype, op, [&]<typename T>() {
    if (!launch_rows<T, kPackOf<T>>(ctx, l, rows) && !launch_rows<T, 1>(ctx, l, rows)) {
      layer_norm_kernel<T><<<blocks_for(rows, 1), kBlock, 0, stream(ctx)>>>(l, rows);
    }
  });
  check_launch(op);
}

void launch_batch_norm_table(kernels::KernelContext& ctx, const BatchNormTableLaunch& l,
                             const char* op) {
  if (l.channels == 0) return;
  kernels::visit_floating<DeviceTypes>(l.dtype, op, [&]<typename T>() {
    batch_norm_table_kernel<T><<<blocks_for(l.channels, 128), 128, 0, stream(ctx)>>>(l);
  });
  check_launch(op);
}

void launch_group_norm_stats(kernels::KernelContext& ctx, const GroupNormStatsLaunch& l,
                             const char* op) {
  if (l.batch * l.groups == 0) return;
  kernels::visit_floating<DeviceTypes>(l.dtype, op, [&]<typename T>() {
    group_norm_stats_kernel<T><<<blocks_for(l.batch * l.groups, 1), kBlock, 0, stream(ctx)>>>(l);
  });
  check_launch(op);
}

void launch_channel_affine(kernels::KernelContext& ctx, const ChannelAffineLaunch& l,
                           const char* op) {
  const int64_t total = l.space.count();
  if (total == 0) return;
  kernels::visit_floating<DeviceTypes>(l.dtype, op, [&]<typename T>() {
    channel_affine_kernel<T><<<blocks_for(total, 256), 256, 0, stream(ctx)>>>(l, total);
  });
  check_launch(op);
}

}  // namespace pterun::cuda::nn

namespace pterun::kernels::cuda_ops {
namespace {

size_t stat_size(DType d) {
  return d == DType::Float64 ? sizeof(double) : sizeof(float);
}

/// out = in * scale[i] + shift[i] over the input's dims in memory order.
void channel_affine(KernelContext& ctx, const Tensor& in, Tensor& out, const void* table,
                    int64_t table_len, bool per_batch, const char* op) {
  cuda::nn::ChannelAffineLaunch l;
  l.in = in.data();
  l.out = out.data();
  l.dtype = in.dtype();
  l.channels = in.size(1);
  l.table_len = table_len;
  l.per_batch = per_batch;
  l.table = table;
  std::array<size_t, kMaxRank> order{};
  for (size_t d = 0; d < in.dim(); ++d) order[d] = d;
  sort_dims_by_stride(order.data(), in.dim(), [&](size_t d) { return in.stride(d); });
  for (size_t i = 0; i < in.dim(); ++i) {
    const size_t d = order[i];
    if (in.size(d) == 1) continue;
    if (d == 0) l.n_pos = l.space.rank;
    if (d == 1) l.c_pos = l.space.rank;
    l.space.push(in.size(d), {in.stride(d), out.stride(d)});
  }
  cuda::nn::launch_channel_affine(ctx, l, op);
}

void layer_norm_out(KernelContext& ctx, const ops::LayerNormArgs& a) {
  const char* op = "aten::native_layer_norm.out";
  const Tensor& in = a.in;
  const Tensor* weight = a.weight;
  const Tensor* bias = a.bias;
  Tensor& out = a.out;
  Tensor& mean_out = a.mean;
  Tensor& rstd_out = a.rstd;
  const size_t lead = a.lead;
  cuda::nn::LayerNormLaunch l;
  l.in = in.data();
  l.out = out.data();
  l.mean = mean_out.data();
  l.rstd = rstd_out.data();
  l.weight = weight != nullptr ? weight->data() : nullptr;
  l.bias = bias != nullptr ? bias->data() : nullptr;
  l.dtype = in.dtype();
  l.eps = a.eps;
  for (size_t d = 0; d < lead; ++d) {
    l.rows.push(in.size(d), {in.stride(d), out.stride(d), mean_out.stride(d), rstd_out.stride(d)});
  }
  // The normalised dims, logical order, merged where all four operands
  // continue the previous dim (so dense rows become one unit-stride run).
  l.n = 1;
  for (size_t d = lead; d < in.dim(); ++d) {
    const int64_t size = in.size(d);
    l.n *= size;
    if (size == 1) continue;
    const std::array<int64_t, 4> s = {in.stride(d), out.stride(d),
                                      weight != nullptr ? weight->stride(d - lead) : 0,
                                      bias != nullptr ? bias->stride(d - lead) : 0};
    auto& r = l.row;
    if (r.rank > 0) {
      bool merge = true;
      for (int q = 0; q < 4; ++q) merge = merge && r.strides[q][r.rank - 1] == s[q] * size;
      if (merge) {
        r.sizes[r.rank - 1] *= size;
        for (int q = 0; q < 4; ++q) r.strides[q][r.rank - 1] = s[q];
        continue;
      }
    }
    r.push(size, s);
  }
  cuda::nn::launch_layer_norm(ctx, l, op);
}

void batch_norm_out(KernelContext& ctx, const ops::BatchNormArgs& a) {
  const char* op = "aten::_native_batch_norm_legit_no_training.out";
  const Tensor& in = a.in;
  const Tensor* weight = a.weight;
  const Tensor* bias = a.bias;
  const Tensor& running_mean = a.running_mean;
  const Tensor& running_var = a.running_var;
  const int64_t channels = in.size(1);
  if (channels == 0) return;
  cuda::nn::BatchNormTableLaunch t;
  t.weight = weight != nullptr ? weight->data() : nullptr;
  t.bias = bias != nullptr ? bias->data() : nullptr;
  t.mean = running_mean.data();
  t.var = running_var.data();
  t.w_stride = weight != nullptr ? weight->stride(0) : 0;
  t.b_stride = bias != nullptr ? bias->stride(0) : 0;
  t.m_stride = running_mean.stride(0);
  t.v_stride = running_var.stride(0);
  t.dtype = in.dtype();
  t.channels = channels;
  t.eps = a.eps;
  t.table = cuda::scratch(ctx, stat_size(in.dtype()) * 2 * static_cast<size_t>(channels));
  cuda::nn::launch_batch_norm_table(ctx, t, op);
  if (in.numel() > 0) channel_affine(ctx, in, a.out, t.table, channels, false, op);
}

void group_norm_out(KernelContext& ctx, const ops::GroupNormArgs& a) {
  const char* op = "aten::native_group_norm.out";
  cuda::nn::GroupNormStatsLaunch l;
  l.in = a.in.data();
  l.dtype = a.in.dtype();
  l.batch = a.batch;
  l.channels = a.channels;
  l.groups = a.groups;
  l.in_n = a.in.stride(0);
  l.in_c = a.in.stride(1);
  for (size_t d = 2; d < a.in.dim(); ++d) l.spatial.push(a.in.size(d), {a.in.stride(d)});
  l.mean = a.mean.data();
  l.rstd = a.rstd.data();
  l.mean_s[0] = a.mean.stride(0);
  l.mean_s[1] = a.mean.stride(1);
  l.rstd_s[0] = a.rstd.stride(0);
  l.rstd_s[1] = a.rstd.stride(1);
  l.weight = a.weight != nullptr ? a.weight->data() : nullptr;
  l.bias = a.bias != nullptr ? a.bias->data() : nullptr;
  l.w_stride = a.weight != nullptr ? a.weight->stride(0) : 0;
  l.b_stride = a.bias != nullptr ? a.bias->stride(0) : 0;
  l.eps = a.eps;
  const size_t nc = static_cast<size_t>(a.batch * a.channels);
  l.table = cuda::scratch(ctx, stat_size(a.in.dtype()) * 2 * nc);
  cuda::nn::launch_group_norm_stats(ctx, l, op);
  if (a.in.numel() > 0) {
    channel_affine(ctx, a.in, a.out, l.table, static_cast<int64_t>(nc), true, op);
  }
}

}  // namespace

const ops::NormBackend& norm_backend() {
  static constexpr ops::NormBackend kNorm{&layer_norm_out, &batch_norm_out, &group_norm_out,
                                          &rms_norm_out};
  return kNorm;
}

}  // namespace pterun::kernels::cuda_ops
