// The attention family on the CPU (pterun/ops/attention.h): attention over
// a KV cache, cache writes at positions held in tensors, and the slice at a
// position held in a tensor.
//
// Attention is computed flash style: each work item takes one batch row,
// one key/value head and a block of queries, with all the query heads that
// share that key/value head (grouped-query attention), so every key and
// value row is read once per item. Keys go by in blocks; each query row
// keeps a running maximum, a running sum and an accumulator, rescaled when
// the maximum grows (online softmax), so scores never take more than a
// block of memory. In float, a row's scores are taken eight keys at a time
// (each load of the query serving eight keys, eight rows of the cache on
// their way from memory at once: a decode step finds the cache there) and
// the value rows weighed into 64 columns of the accumulator held in
// registers. f16/bf16 rows are converted to float a block at a time; f64
// computes in double.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/strided_copy.h"
#include "pterun/backend/cpu/engine/vec_convert.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/device_check.h"
#include "pterun/kernels/common/index_util.h"
#include "pterun/ops/attention.h"

namespace pterun::cpu {
namespace {

using kernels::DeviceCheckKind;
using kernels::DeviceCheckOp;
using kernels::KernelContext;

constexpr int64_t kKeyBlock = 64;    // keys per block
constexpr int64_t kQueryBlock = 16;  // query positions per work item (prefill)

/// The single element of a position tensor (int64 or int32, checked by the
/// front-end).
int64_t read_position(const Tensor& t) {
  return t.dtype() == DType::Int64 ? *t.data_as<int64_t>()
                                   : static_cast<int64_t>(*t.data_as<int32_t>());
}

// ---- small vector helpers in the compute type ------------------------------

inline float dot_c(const float* a, const float* b, int64_t n) {
  return vec::dot(a, b, n);
}
inline double dot_c(const double* a, const double* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}
inline void scale_add_c(float* y, float c, float p, const float* x, int64_t n) {
  vec::scale_add(y, c, p, x, n);
}
inline void scale_add_c(double* y, double c, double p, const double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] * c + p * x[i];
}

/// x[i] = exp(x[i] - m) for i < n; returns their sum.
inline float exp_sum(float* x, float m, int64_t n) {
  using V = Simd<float>::V;
  int64_t i = 0;
  V s{};
  for (; i + 8 <= n; i += 8) {
    V e = fast_exp(load_vec<V>(x + i) - m);
    store_vec(x + i, e);
    s += e;
  }
  float sum = vec::hsum(s);
  for (; i < n; ++i) {
    x[i] = fast_exp(x[i] - m);
    sum += x[i];
  }
  return sum;
}
inline double exp_sum(double* x, double m, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  return sum;
}

template <typename T, typename C>
void load_row(const T* src, C* dst, int64_t n) {
  if constexpr (std::is_same_v<C, double>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<double>(src[i]);
  } else {
    vec::to_float(src, dst, n);
  }
}

template <typename T, typename C>
void store_row(const C* src, T* dst, int64_t n) {
  if constexpr (std::is_same_v<C, double>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
  } else {
    vec::from_float(src, dst, n);
  }
}

// ---- float rows of a key block, eight keys at a time ------------------------------

using vec::F8;

/// The vector of the sums of eight vectors' lanes (lane j: the lanes of
/// s[j] added), in three rounds of pairwise adds.
inline F8 lane_sums(const F8 (&s)[8]) {
  F8 u[4], w[2];
  for (int p = 0; p < 4; ++p) {
    u[p] = __builtin_shufflevector(s[2 * p], s[2 * p + 1], 0, 8, 2, 10, 4, 12, 6, 14) +
           __builtin_shufflevector(s[2 * p], s[2 * p + 1], 1, 9, 3, 11, 5, 13, 7, 15);
  }
  for (int p = 0; p < 2; ++p) {
    w[p] = __builtin_shufflevector(u[2 * p], u[2 * p + 1], 0, 1, 8, 9, 4, 5, 12, 13) +
           __builtin_shufflevector(u[2 * p], u[2 * p + 1], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  return __builtin_shufflevector(w[0], w[1], 0, 1, 2, 3, 8, 9, 10, 11) +
         __builtin_shufflevector(w[0], w[1], 4, 5, 6, 7, 12, 13, 14, 15);
}

/// score[j] = dot(q, krow[j]) * scale for the first n keys of a block (d a
/// multiple of 8): eight keys at a time, each load of q serving all eight.
inline void scores_f32(const float* q, const float* const* krow, int64_t n, int64_t d, float scale,
                       float* score) {
  for (int64_t j0 = 0; j0 < n; j0 += 8) {
    const float* kr[8];
    for (int64_t j = 0; j < 8; ++j) kr[j] = krow[std::min(j0 + j, n - 1)];
    F8 acc[8] = {};
    for (int64_t e = 0; e < d; e += 8) {
      const F8 qv = load_vec<F8>(q + e);
      for (int j = 0; j < 8; ++j) acc[j] += qv * load_vec<F8>(kr[j] + e);
    }
    float out[8];
    store_vec(out, lane_sums(acc) * scale);
    std::memcpy(score + j0, out, static_cast<size_t>(std::min<int64_t>(8, n - j0)) * sizeof(float));
  }
}

/// acc = acc * correction + sum_j score[j] * vrow[j] over the first n keys
/// of a block (d a multiple of 64): 64 columns at a time held in registers.
inline void accumulate_f32(float* acc, float correction, const float* score,
                           const float* const* vrow, int64_t n, int64_t d) {
  for (int64_t e0 = 0; e0 < d; e0 += 64) {
    F8 r[8];
    for (int t = 0; t < 8; ++t) r[t] = load_vec<F8>(acc + e0 + 8 * t) * correction;
    for (int64_t j = 0; j < n; ++j) {
      const float p = score[j];
      for (int t = 0; t < 8; ++t) r[t] += p * load_vec<F8>(vrow[j] + e0 + 8 * t);
    }
    for (int t = 0; t < 8; ++t) store_vec(acc + e0 + 8 * t, r[t]);
  }
}

// ---- attention ---------------------------------------------------------------

struct Geometry {
  int64_t batch, tokens, heads, kv_heads, dim, reps, start, keys;
  int64_t qs[3], ks[3], vs[3], os[3];  // batch, sequence, head strides (elements)
  int64_t ms[2];                       // mask strides
};

/// Per-thread scratch of one work item, in the compute type.
template <typename C>
struct ItemScratch {
  C* q;      // rows x dim
  C* acc;    // rows x dim
  C* max;    // rows
  C* sum;    // rows
  C* score;  // kKeyBlock
  C* k;      // kKeyBlock x dim (converted keys; unused when T is C)
  C* v;      // kKeyBlock x dim

  static int64_t elements(int64_t rows, int64_t dim) {
    return 2 * rows * dim + 2 * rows + kKeyBlock + 2 * kKeyBlock * dim + 64;
  }
  ItemScratch(C* base, int64_t rows, int64_t dim) {
    q = base;
    acc = q + rows * dim;
    max = acc + rows * dim;
    sum = max + rows;
    score = sum + rows;
    k = score + kKeyBlock;
    v = k + kKeyBlock * dim;
  }
};

template <typename T, typename C>
void sdpa_item(const ops::SdpaArgs& a, const Geometry& g, int64_t item, int64_t query_block,
               ItemScratch<C>& s) {
  const int64_t blocks = (g.tokens + query_block - 1) / query_block;
  const int64_t b = item / (g.kv_heads * blocks);
  const int64_t hk = (item / blocks) % g.kv_heads;
  const int64_t i0 = (item % blocks) * query_block;
  const int64_t i1 = std::min(g.tokens, i0 + query_block);
  const int64_t rows = (i1 - i0) * g.reps, d = g.dim;
  const T* q = a.q.data_as<T>();
  const T* k = a.k.data_as<T>();
  const T* v = a.v.data_as<T>();
  T* out = a.out.data_as<T>();
  const C scale = static_cast<C>(a.scale);
  const C neg_inf = -std::numeric_limits<C>::infinity();

  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t r = 0; r < g.reps; ++r) {
      const int64_t row = (i - i0) * g.reps + r, h = hk * g.reps + r;
      load_row(q + b * g.qs[0] + i * g.qs[1] + h * g.qs[2], s.q + row * d, d);
    }
  }
  std::fill(s.acc, s.acc + rows * d, C(0));
  std::fill(s.max, s.max + rows, neg_inf);
  std::fill(s.sum, s.sum + rows, C(0));

  // Keys this block of queries may use.
  const int64_t key_end = a.causal ? g.start + i1 : g.keys;
  const T* k_head = k + b * g.ks[0] + hk * g.ks[2];
  const T* v_head = v + b * g.vs[0] + hk * g.vs[2];
  for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
    const int64_t j1 = std::min(key_end, j0 + kKeyBlock);
    const C* krow[kKeyBlock];
    const C* vrow[kKeyBlock];
    for (int64_t j = j0; j < j1; ++j) {
      if constexpr (std::is_same_v<T, C>) {
        krow[j - j0] = k_head + j * g.ks[1];
        vrow[j - j0] = v_head + j * g.vs[1];
      } else {
        load_row(k_head + j * g.ks[1], s.k + (j - j0) * d, d);
        load_row(v_head + j * g.vs[1], s.v + (j - j0) * d, d);
        krow[j - j0] = s.k + (j - j0) * d;
        vrow[j - j0] = s.v + (j - j0) * d;
      }
    }
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t i = i0 + row / g.reps;
      const int64_t limit = a.causal ? std::min(j1, g.start + i + 1) : j1;
      if (limit <= j0) continue;
      const int64_t n = limit - j0;
      const C* qrow = s.q + row * d;
      bool fast = false;
      if constexpr (std::is_same_v<C, float>) {
        fast = d % 8 == 0;
        if (fast) scores_f32(qrow, krow, n, d, scale, s.score);
      }
      if (!fast) {
        for (int64_t j = 0; j < n; ++j) s.score[j] = dot_c(qrow, krow[j], d) * scale;
      }
      C block_max = neg_inf;
      for (int64_t j = 0; j < n; ++j) {
        if (a.mask != nullptr) {
          const int64_t off = i * g.ms[0] + (j0 + j) * g.ms[1];
          s.score[j] += a.mask->dtype() == DType::Float32
                            ? static_cast<C>(a.mask->data_as<float>()[off])
                            : static_cast<C>(a.mask->data_as<T>()[off]);
        }
        block_max = std::max(block_max, s.score[j]);
      }
      const C m_new = std::max(s.max[row], block_max);
      // While the row has seen nothing above -inf, exponentials are taken
      // against 0: exp(-inf - 0) = 0 where exp(-inf - -inf) would be NaN.
      const C ref = m_new == neg_inf ? C(0) : m_new;
      const C correction = std::exp(s.max[row] - ref);
      const C block_sum = exp_sum(s.score, ref, n);
      s.sum[row] = s.sum[row] * correction + block_sum;
      s.max[row] = m_new;
      C* acc = s.acc + row * d;
      if constexpr (std::is_same_v<C, float>) {
        if (d % 64 == 0) {
          accumulate_f32(acc, correction, s.score, vrow, n, d);
          continue;
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        scale_add_c(acc, j == 0 ? correction : C(1), s.score[j], vrow[j], d);
      }
    }
  }
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t r = 0; r < g.reps; ++r) {
      const int64_t row = (i - i0) * g.reps + r, h = hk * g.reps + r;
      C* acc = s.acc + row * d;
      // acc is 0 in a row whose every key scored -inf: zeros or NaN.
      const C inv = s.max[row] != neg_inf ? C(1) / s.sum[row]
                    : a.empty_rows_zero   ? C(0)
                                          : std::numeric_limits<C>::quiet_NaN();
      for (int64_t e = 0; e < d; ++e) acc[e] *= inv;
      store_row(acc, out + b * g.os[0] + i * g.os[1] + h * g.os[2], d);
    }
  }
}

template <typename T, typename C>
void sdpa_typed(KernelContext& ctx, const ops::SdpaArgs& a, const Geometry& g) {
  const int64_t query_block = g.tokens == 1 ? 1 : kQueryBlock;
  const int64_t blocks = (g.tokens + query_block - 1) / query_block;
  const int64_t items = g.batch * g.kv_heads * blocks;
  const int64_t rows = query_block * g.reps;
  const int64_t per_thread = ItemScratch<C>::elements(rows, g.dim);
  const int threads = std::max(1, ctx.num_threads);
  C* base = static_cast<C*>(ctx.scratch(static_cast<size_t>(per_thread * threads) * sizeof(C)));
  const int64_t cost = rows * std::max<int64_t>(1, g.keys) * g.dim * 2;
  cpu::parallel_for(ctx, items, cost, [&](int64_t begin, int64_t end) {
    const int t = std::min(cpu::parallel_thread_index(), threads - 1);
    ItemScratch<C> s(base + per_thread * t, rows, g.dim);
    for (int64_t item = begin; item < end; ++item) sdpa_item<T, C>(a, g, item, query_block, s);
  });
}

void sdpa(KernelContext& ctx, const ops::SdpaArgs& a) {
  Geometry g{};
  g.batch = a.q.size(0);
  g.tokens = a.q.size(1);
  g.heads = a.q.size(2);
  g.kv_heads = a.k.size(2);
  g.dim = a.q.size(3);
  g.reps = g.kv_heads == 0 ? 1 : g.heads / g.kv_heads;
  g.start = a.start_pos;
  if (a.start_pos_at != nullptr) {
    g.start = read_position(*a.start_pos_at);
    if (g.start < 0 || g.start > a.k.size(1) || g.tokens > a.k.size(1) - g.start) {
      kernels::throw_device_check(DeviceCheckKind::CachePositions,
                                  static_cast<DeviceCheckOp>(a.check_op), g.start, a.k.size(1),
                                  g.tokens);
    }
  }
  g.keys = g.start + g.tokens;
  ops::copy_sdpa_strides(a, g);
  switch (a.q.dtype()) {
    case DType::Float32: sdpa_typed<float, float>(ctx, a, g); break;
    case DType::Float64: sdpa_typed<double, double>(ctx, a, g); break;
    case DType::Float16: sdpa_typed<Half, float>(ctx, a, g); break;
    case DType::BFloat16: sdpa_typed<BFloat16, float>(ctx, a, g); break;
    default:
      throw_error(ErrorCode::InvalidArgument,
                  str_cat(kernels::device_check_op_name(static_cast<DeviceCheckOp>(a.check_op)),
                          ": dtype ", dtype_name(a.q.dtype()), " is not supported"));
  }
}

// ---- cache writes ------------------------------------------------------------

void write_cache(KernelContext& ctx, const ops::CacheWriteArgs& a) {
  const Tensor& value = a.value;
  Tensor& cache = a.cache;
  const int64_t batch = value.size(0), tokens = value.size(1), capacity = cache.size(1);
  const auto op = static_cast<DeviceCheckOp>(a.check_op);
  const size_t es = value.element_size();
  // One token of one batch row: [heads, head_dim].
  const int64_t token_sizes[2] = {value.size(2), value.size(3)};
  const int64_t value_strides[2] = {value.stride(2), value.stride(3)};
  const int64_t cache_strides[2] = {cache.stride(2), cache.stride(3)};
  auto copy_token = [&](int64_t b, int64_t s, int64_t position) {
    const char* src = static_cast<const char*>(value.data()) +
                      (b * value.stride(0) + s * value.stride(1)) * static_cast<int64_t>(es);
    char* dst = static_cast<char*>(cache.data()) +
                (b * cache.stride(0) + position * cache.stride(1)) * static_cast<int64_t>(es);
    cpu::strided_copy(dst, cache_strides, src, value_strides, token_sizes, es);
  };
  if (!a.per_token) {
    const int64_t start = read_position(a.positions);
    if (start < 0 || start > capacity || tokens > capacity - start) {
      kernels::throw_device_check(DeviceCheckKind::CachePositions, op, start, capacity, tokens);
    }
    const int64_t sizes[4] = {batch, tokens, value.size(2), value.size(3)};
    char* dst =
        static_cast<char*>(cache.data()) + start * cache.stride(1) * static_cast<int64_t>(es);
    cpu::strided_copy(ctx, dst, cache.strides(), value.data(), value.strides(), sizes, es);
    return;
  }
  // Every index first, so that a bad one leaves the cache as it was.
  const Tensor& idx = a.positions;
  auto index_at = [&](int64_t b, int64_t s) {
    return kernels::read_index(idx, b * idx.stride(0) + s * idx.stride(1));
  };
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < tokens; ++s) {
      const int64_t p = index_at(b, s);
      if (p < 0 || p >= capacity) {
        kernels::throw_device_check(DeviceCheckKind::CacheIndex, op, p, capacity);
      }
    }
  }
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < tokens; ++s) copy_token(b, s, index_at(b, s));
  }
}

// ---- slice at a position -------------------------------------------------------

void narrow_at(KernelContext& ctx, const ops::NarrowAtArgs& a) {
  const int64_t size = a.self.size(a.dim), length = a.out.size(a.dim);
  const int64_t start = read_position(a.start_at);
  if (start < 0 || start > size - length) {
    kernels::throw_device_check(DeviceCheckKind::SliceStart, DeviceCheckOp::Slice, start, size,
                                length);
  }
  if (a.out.numel() == 0) return;
  const char* src = static_cast<const char*>(a.self.data()) +
                    start * a.self.stride(a.dim) * static_cast<int64_t>(a.self.element_size());
  cpu::strided_copy(ctx, a.out.data(), a.out.strides(), src, a.self.strides(), a.out.sizes(),
                    a.self.element_size());
}

}  // namespace

const ops::AttentionBackend& attention_backend() {
  static constexpr ops::AttentionBackend kAttention{&sdpa, &write_cache, &narrow_at};
  return kAttention;
}

}  // namespace pterun::cpu
