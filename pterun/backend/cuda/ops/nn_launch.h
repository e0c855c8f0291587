#pragma once

// The launch structs of the reduction, softmax, normalisation and pooling
// kernels (*.cu), filled on the host from the front-ends' argument structs
// (pterun/ops/) or, for reductions, by reduce_host.cpp. Plain structs of
// pointers, dtypes and index spaces, passed by value into kernels.

#include <array>
#include <cstdint>

#include "pterun/backend/cuda/device/space.h"
#include "pterun/core/dtype.h"
#include "pterun/core/tensor.h"
#include "pterun/kernels/kernel.h"

namespace pterun::cuda::nn {

static_assert(kDeviceMaxRank == kMaxRank, "device/max_rank.h must match core/tensor.h");

// ---- reductions ------------------------------------------------------------

enum class RedKind : int { Sum, Mean, Prod, Max, Min, Any, All };
/// Accumulator: float, double, wrapping 64-bit integer, int64 (integer
/// extremes), bool.
enum class AccKind : int { F32, F64, U64, I64, Bool };

struct ReduceLaunch {
  const void* in = nullptr;
  DType in_dtype = DType::Float32;
  void* out = nullptr;
  DType out_dtype = DType::Float32;
  Space<2> kept;  // strides: in, out
  Space<1> red;   // strides: in
  int64_t num_out = 1, count = 1;
  RedKind kind = RedKind::Sum;
  AccKind acc = AccKind::F32;
};
void launch_reduce(kernels::KernelContext& ctx, const ReduceLaunch& l, const char* op);

/// Two-pass variance (and mean) in double of every output.
struct VarianceLaunch {
  const void* in = nullptr;
  DType in_dtype = DType::Float32;
  void* var = nullptr;
  DType var_dtype = DType::Float32;
  void* mean = nullptr;  // or null
  DType mean_dtype = DType::Float32;
  Space<3> kept;  // strides: in, var, mean
  Space<1> red;
  int64_t num_out = 1, count = 1;
  double correction = 1.0;
};
void launch_variance(kernels::KernelContext& ctx, const VarianceLaunch& l, const char* op);

/// Extreme and its index along lines: element k of line j sits at
/// other-offset(j) + line-offset(k), k in row-major order over `line`.
struct ArgLaunch {
  const void* in = nullptr;
  DType in_dtype = DType::Float32;
  void* values = nullptr;  // or null; of in_dtype
  int64_t* indices = nullptr;
  Space<3> other;  // strides: in, values, indices
  Space<1> line;   // strides: in
  int64_t len = 1;
  bool is_max = true;
  bool line_inner = true;  // the line is the input's innermost walk: a block per line
};
void launch_arg_reduce(kernels::KernelContext& ctx, const ArgLaunch& l, const char* op);

struct CumsumLaunch {
  const void* in = nullptr;
  DType in_dtype = DType::Float32;
  void* out = nullptr;
  DType out_dtype = DType::Float32;
  Space<2> other;  // strides: in, out
  int64_t len = 1, in_step = 0, out_step = 0;
  AccKind acc = AccKind::F32;
};
void launch_cumsum(kernels::KernelContext& ctx, const CumsumLaunch& l, const char* op);

// ---- softmax and normalisation ------------------------------------------------

struct SoftmaxLaunch {
  const void* in = nullptr;
  void* out = nullptr;
  DType dtype = DType::Float32;
  Space<2> other;  // strides: in, out
  int64_t len = 1, in_step = 0, out_step = 0;
  bool log = false;
  bool safe = false;       // softmax: a line of nothing but -inf gives zeros
  bool line_inner = true;  // a block per line (else a thread per line)
};
void launch_softmax(kernels::KernelContext& ctx, const SoftmaxLaunch& l, const char* op);

struct LayerNormLaunch {
  const void* in = nullptr;
  void* out = nullptr;
  void* mean = nullptr;
  void* rstd = nullptr;
  const void* weight = nullptr;  // or null
  const void* bias = nullptr;    // or null
  DType dtype = DType::Float32;
  Space<4> rows;  // the leading dims; strides: in, out, mean, rstd
  Space<4> row;   // the normalized dims; strides: in, out, weight, bias
  int64_t n = 1;  // elements per row
  double eps = 0;
};
void launch_layer_norm(kernels::KernelContext& ctx, const LayerNormLaunch& l, const char* op);

/// Per-channel parameters of inference batch norm into `table` (scale[c],
/// then shift[c]; float, or double for f64).
struct BatchNormTableLaunch {
  const void* weight = nullptr;  // or null
  const void* bias = nullptr;    // or null
  const void* mean = nullptr;
  const void* var = nullptr;
  int64_t w_stride = 0, b_stride = 0, m_stride = 0, v_stride = 0;
  DType dtype = DType::Float32;
  int64_t channels = 0;
  double eps = 0;
  void* table = nullptr;
};
void launch_batch_norm_table(kernels::KernelContext& ctx, const BatchNormTableLaunch& l,
                             const char* op);

/// Group statistics: mean / rstd outputs and scale/shift per (n, c) into
/// `table` (scale[n * C + c], then shift at + N * C).
struct GroupNormStatsLaunch {
  const void* in = nullptr;
  DType dtype = DType::Float32;
  int64_t batch = 0, channels = 0, groups = 1;
  int64_t in_n = 0, in_c = 0;  // input strides of dims 0 and 1
  Space<1> spatial;            // dims 2.. of the input
  void* mean = nullptr;
  void* rstd = nullptr;
  int64_t mean_s[2] = {}, rstd_s[2] = {};
  const void* weight = nullptr;
  const void* bias = nullptr;
  int64_t w_stride = 0, b_stride = 0;
  double eps = 0;
  void* table = nullptr;
};
void launch_group_norm_stats(kernels::KernelContext& ctx, const GroupNormStatsLaunch& l,
                             const char* op);

/// out = in * scale[i] + shift[i], i = c or n * C + c (per_batch), over the
/// input's dims in memory order; n_pos / c_pos: where dims 0 and 1 sit in
/// `space` (-1 when dropped).
struct ChannelAffineLaunch {
  const void* in = nullptr;
  void* out = nullptr;
  DType dtype = DType::Float32;
  Space<2> space;  // strides: in, out
  int n_pos = -1, c_pos = -1;
  int64_t channels = 0, table_len = 0;
  bool per_batch = false;
  const void* table = nullptr;  // scale[table_len], shift[table_len]
};
void launch_channel_affine(kernels::KernelContext& ctx, const ChannelAffineLaunch& l,
                           const char* op);

// ---- pooling and resampling ------------------------------------------------------

/// (N, C, H, W) geometry and strides of a 2-D pooling op.
struct PoolGeom {
  int64_t n = 1, c = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  int64_t in[4] = {}, out[4] = {}, idx[4] = {};
  bool channels_inner = false;
  int64_t k[2] = {1, 1}, s[2] = {1, 1}, p[2] = {0, 0}, d[2] = {1, 1};
};

enum class PoolKind : int { Max, Avg, AdaptiveAvg, Nearest, Bilinear, ArgMax };

struct PoolLaunch {
  PoolKind kind = PoolKind::Max;
  PoolGeom g;
  const void* in = nullptr;
  void* out = nullptr;
  int64_t* indices = nullptr;  // max pooling (or null: values only); argmax pooling
  bool index_is_int64 = true;  // argmax pooling: else the indices are int32
  DType dtype = DType::Float32;
  // avg_pool2d
  bool count_include_pad = false;
  bool has_divisor = false;
  int64_t divisor = 1;
  // upsampling: scale factors when given (else 0), align_corners
  double scale[2] = {0, 0};
  bool has_scale[2] = {false, false};
  bool align_corners = false;
};
void launch_pool(kernels::KernelContext& ctx, const PoolLaunch& l, const char* op);

}  // namespace pterun::cuda::nn
