// Normalisation: layer norm (rows of the trailing dims), inference batch
// norm and group norm. Statistics are two-pass (mean, then squared
// deviations) in float for f16/bf16/f32 and double for f64; batch and group
// norm finish with one per-channel scale-and-shift pass over any layout.

#include <cmath>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/reduce.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/kernels/common/reduce_util.h"
#include "pterun/ops/norm.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;

template <typename T>
using StatOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

/// True when dims [from, rank) of `t` are laid out densely in row-major
/// order, so each row of those dims is one contiguous run.
bool rows_dense(const Tensor& t, size_t from) {
  int64_t expect = 1;
  for (size_t d = t.dim(); d-- > from;) {
    if (t.size(d) != 1 && t.stride(d) != expect) return false;
    expect *= t.size(d);
  }
  return true;
}

/// Odometer over dims [from, rank) of `t` in logical order.
kernels::Odometer<1> trailing_odometer(const Tensor& t, size_t from) {
  kernels::Odometer<1> od;
  for (size_t d = from; d < t.dim(); ++d) od.push(t.size(d), {t.stride(d)});
  return od;
}

/// Copies the row-major elements of `t` (any layout) into `dst` as C.
template <typename T, typename C>
void gather_logical(const Tensor& t, size_t from, int64_t base, int64_t n, C* dst) {
  const T* src = t.data_as<const T>() + base;
  if (rows_dense(t, from)) {
    for (int64_t i = 0; i < n; ++i) dst[i] = kernels::convert<C>(src[i]);
    return;
  }
  kernels::Odometer<1> od = trailing_odometer(t, from);
  od.seek(0);
  for (int64_t i = 0; i < n; ++i, od.next()) dst[i] = kernels::convert<C>(src[od.offset[0]]);
}

template <typename T, typename C>
void scatter_logical(Tensor& t, size_t from, int64_t base, int64_t n, const C* src) {
  T* dst = t.data_as<T>() + base;
  if (rows_dense(t, from)) {
    for (int64_t i = 0; i < n; ++i) dst[i] = kernels::convert<T>(src[i]);
    return;
  }
  kernels::Odometer<1> od = trailing_odometer(t, from);
  od.seek(0);
  for (int64_t i = 0; i < n; ++i, od.next()) dst[od.offset[0]] = kernels::convert<T>(src[i]);
}

/// y = (x - mean) * rstd [* w] [+ b] over one row.
template <typename C>
void normalize_row(const C* x, C* y, int64_t n, C mean, C rstd, const C* w, const C* b) {
  if (w != nullptr && b != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * w[i] + b[i];
  } else if (w != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * w[i];
  } else if (b != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd + b[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd;
  }
}

// ---- layer norm ----------------------------------------------------------

template <typename T>
void layer_norm(KernelContext& ctx, const Tensor& in, size_t lead, const Tensor* weight,
                const Tensor* bias, double eps, Tensor& out, Tensor& mean_out, Tensor& rstd_out) {
  using C = StatOf<T>;
  kernels::Odometer<4> rows;
  for (size_t d = 0; d < lead; ++d) {
    rows.push(in.size(d), {in.stride(d), out.stride(d), mean_out.stride(d), rstd_out.stride(d)});
  }
  const int64_t num_rows = rows.count();
  int64_t n = 1;
  for (size_t d = lead; d < in.dim(); ++d) n *= in.size(d);
  if (num_rows == 0) return;
  T* mean_data = mean_out.data_as<T>();
  T* rstd_data = rstd_out.data_as<T>();
  if (n == 0) {
    rows.seek(0);
    for (int64_t r = 0; r < num_rows; ++r, rows.next()) {
      mean_data[rows.offset[2]] = T(0);
      rstd_data[rows.offset[3]] = kernels::convert<T>(std::numeric_limits<C>::quiet_NaN());
    }
    return;
  }

  const bool in_dense = std::is_same_v<T, C> && rows_dense(in, lead);
  const bool out_dense = std::is_same_v<T, C> && rows_dense(out, lead);
  auto direct_param = [&](const Tensor* p) {
    return p != nullptr && std::is_same_v<T, C> && rows_dense(*p, 0);
  };
  const bool w_direct = direct_param(weight);
  const bool b_direct = direct_param(bias);
  const int threads = std::max(1, ctx.num_threads);
  const bool need_row_buf = !in_dense || !out_dense;
  const size_t scratch_elems =
      static_cast<size_t>(n) *
      ((weight && !w_direct ? 1 : 0) + (bias && !b_direct ? 1 : 0) + (need_row_buf ? threads : 0));
  C* scratch = scratch_elems ? static_cast<C*>(ctx.scratch(scratch_elems * sizeof(C))) : nullptr;
  const C* w = nullptr;
  const C* b = nullptr;
  C* next = scratch;
  if (weight != nullptr) {
    if (w_direct) {
      w = weight->data_as<const C>();
    } else {
      gather_logical<T, C>(*weight, 0, 0, n, next);
      w = next;
      next += n;
    }
  }
  if (bias != nullptr) {
    if (b_direct) {
      b = bias->data_as<const C>();
    } else {
      gather_logical<T, C>(*bias, 0, 0, n, next);
      b = next;
      next += n;
    }
  }
  C* row_bufs = next;
  const T* x = in.data_as<const T>();
  T* y = out.data_as<T>();
  const C ceps = static_cast<C>(eps);

  cpu::parallel_for(ctx, num_rows, n * 6, [&](int64_t begin, int64_t end) {
    C* buf = need_row_buf ? row_bufs + n * cpu::parallel_thread_index() : nullptr;
    auto od = rows;
    od.seek(begin);
    for (int64_t r = begin; r < end; ++r, od.next()) {
      const C* xr = buf;
      if (in_dense) {
        if constexpr (std::is_same_v<T, C>) xr = x + od.offset[0];
      } else {
        gather_logical<T, C>(in, lead, od.offset[0], n, buf);
        xr = buf;
      }
      C mean = cpu::detail::fold(cpu::SumOp<C>{}, C(0), xr, n) / static_cast<C>(n);
      cpu::SquaredDeviationOp<C> sq;
      sq.mean = mean;
      C var = cpu::detail::fold(sq, C(0), xr, n) / static_cast<C>(n);
      C rstd = C(1) / std::sqrt(var + ceps);
      C* yr = buf;
      if (out_dense) {
        if constexpr (std::is_same_v<T, C>) yr = y + od.offset[1];
      }
      normalize_row<C>(xr, yr, n, mean, rstd, w, b);
      if (!out_dense) scatter_logical<T, C>(out, lead, od.offset[1], n, buf);
      mean_data[od.offset[2]] = kernels::convert<T>(mean);
      rstd_data[od.offset[3]] = kernels::convert<T>(rstd);
    }
  });
}

void layer_norm_out(KernelContext& ctx, const ops::LayerNormArgs& a) {
  kernels::visit(a.in.dtype(), kernels::Family::FloatHBF16, "aten::native_layer_norm.out",
                 [&]<typename T>() {
                   layer_norm<T>(ctx, a.in, a.lead, a.weight, a.bias, a.eps, a.out, a.mean, a.rstd);
                 });
}

// ---- per-channel scale and shift -----------------------------------------

/// out = in * scale[i] + shift[i] with i = c (or n * C + c when
/// `per_batch`), for input dims (N, C, ...) in any layout. Walks the input
/// in memory order; dims other than N and C are merged where both layouts
/// allow, so NCHW runs over H*W with a fixed channel and NHWC runs over C.
template <typename T, typename C>
void channel_affine(KernelContext& ctx, const Tensor& in, Tensor& out, const C* scale,
                    const C* shift, bool per_batch) {
  const size_t rank = in.dim();
  const int64_t channels = in.size(1);
  std::array<size_t, kMaxRank> order{};
  for (size_t d = 0; d < rank; ++d) order[d] = d;
  kernels::sort_dims_by_stride(order.data(), rank, [&](size_t d) { return in.stride(d); });
  // Dims in memory order: strides {in, out, table index}.
  kernels::Odometer<3> od;
  std::array<int, kMaxRank> kind{};  // 0 other, 1 batch, 2 channel
  for (size_t i = 0; i < rank; ++i) {
    size_t d = order[i];
    if (in.size(d) == 1) continue;
    int64_t table = d == 1 ? 1 : (d == 0 && per_batch ? channels : 0);
    int k = d == 0 ? 1 : d == 1 ? 2 : 0;
    if (k == 0 && od.rank > 0 && kind[od.rank - 1] == 0) {
      size_t q = od.rank - 1;
      if (od.strides[0][q] == in.stride(d) * in.size(d) &&
          od.strides[1][q] == out.stride(d) * in.size(d)) {
        od.sizes[q] *= in.size(d);
        od.strides[0][q] = in.stride(d);
        od.strides[1][q] = out.stride(d);
        continue;
      }
    }
    kind[od.rank] = k;
    od.push(in.size(d), {in.stride(d), out.stride(d), table});
  }
  int64_t inner = 1, in_s = 1, out_s = 1, tab_s = 0;
  if (od.rank > 0) {
    size_t q = od.rank - 1;
    inner = od.sizes[q];
    in_s = od.strides[0][q];
    out_s = od.strides[1][q];
    tab_s = od.strides[2][q];
    od.rank = q;
  }
  const T* x = in.data_as<const T>();
  T* y = out.data_as<T>();
  cpu::parallel_for(ctx, od.count(), inner * 2, [&](int64_t begin, int64_t end) {
    auto rows = od;
    rows.seek(begin);
    for (int64_t r = begin; r < end; ++r, rows.next()) {
      const T* xr = x + rows.offset[0];
      T* yr = y + rows.offset[1];
      const C* sc = scale + rows.offset[2];
      const C* sh = shift + rows.offset[2];
      if (tab_s == 0 && in_s == 1 && out_s == 1) {
        const C a = sc[0], c = sh[0];
        for (int64_t j = 0; j < inner; ++j) {
          yr[j] = kernels::convert<T>(kernels::convert<C>(xr[j]) * a + c);
        }
      } else if (tab_s == 1 && in_s == 1 && out_s == 1) {
        for (int64_t j = 0; j < inner; ++j) {
          yr[j] = kernels::convert<T>(kernels::convert<C>(xr[j]) * sc[j] + sh[j]);
        }
      } else {
        for (int64_t j = 0; j < inner; ++j) {
          yr[j * out_s] = kernels::convert<T>(kernels::convert<C>(xr[j * in_s]) * sc[j * tab_s] +
                                              sh[j * tab_s]);
        }
      }
    }
  });
}

/// Element i of a 1-D parameter tensor as C (1 / 0 when absent).
template <typename T, typename C>
C param(const Tensor* t, int64_t i, C absent) {
  return t == nullptr ? absent : kernels::convert<C>(t->data_as<const T>()[i * t->stride(0)]);
}

// ---- batch norm (inference) ----------------------------------------------

void batch_norm_out(KernelContext& ctx, const ops::BatchNormArgs& a) {
  const char* op = "aten::_native_batch_norm_legit_no_training.out";
  const Tensor& in = a.in;
  const int64_t channels = in.size(1);
  kernels::visit(in.dtype(), kernels::Family::FloatHBF16, op, [&]<typename T>() {
    using C = StatOf<T>;
    C* table = static_cast<C*>(ctx.scratch(sizeof(C) * 2 * static_cast<size_t>(channels)));
    C* scale = table;
    C* shift = table + channels;
    for (int64_t c = 0; c < channels; ++c) {
      C inv = C(1) / std::sqrt(param<T, C>(&a.running_var, c, C(0)) + static_cast<C>(a.eps));
      scale[c] = param<T, C>(a.weight, c, C(1)) * inv;
      shift[c] = param<T, C>(a.bias, c, C(0)) - param<T, C>(&a.running_mean, c, C(0)) * scale[c];
    }
    if (in.numel() > 0) channel_affine<T, C>(ctx, in, a.out, scale, shift, false);
  });
}

// ---- group norm ----------------------------------------------------------

void group_norm_out(KernelContext& ctx, const ops::GroupNormArgs& a) {
  const char* op = "aten::native_group_norm.out";
  const Tensor& in = a.in;
  const Tensor* weight = a.weight;
  const Tensor* bias = a.bias;
  const int64_t batch = a.batch, channels = a.channels, groups = a.groups;
  Tensor& out = a.out;
  Tensor& mean_out = a.mean;
  Tensor& rstd_out = a.rstd;
  const int64_t per_group = channels / groups;

  // The elements of one (n, g) pair: channels of the group x spatial dims,
  // planned like a reduction so runs follow memory order.
  kernels::ReducePlan plan;
  {
    std::array<size_t, kMaxRank> order{};
    size_t m = 0;
    for (size_t d = 1; d < in.dim(); ++d) order[m++] = d;
    kernels::sort_dims_by_stride(order.data(), m, [&](size_t d) { return in.stride(d); });
    for (size_t i = 0; i < m; ++i) {
      size_t d = order[i];
      int64_t size = d == 1 ? per_group : in.size(d);
      plan.count *= size;
      if (size == 1) continue;
      auto& r = plan.reduced;
      if (r.rank > 0 && r.strides[0][r.rank - 1] == in.stride(d) * size) {
        r.sizes[r.rank - 1] *= size;
        r.strides[0][r.rank - 1] = in.stride(d);
      } else {
        r.push(size, {in.stride(d)});
      }
    }
  }

  kernels::visit(in.dtype(), kernels::Family::FloatHBF16, op, [&]<typename T>() {
    using C = StatOf<T>;
    const size_t nc = static_cast<size_t>(batch * channels);
    C* table = static_cast<C*>(ctx.scratch(sizeof(C) * 2 * nc));
    C* scale = table;
    C* shift = table + nc;
    T* mean_data = mean_out.data_as<T>();
    T* rstd_data = rstd_out.data_as<T>();
    const C ceps = static_cast<C>(a.eps);
    cpu::parallel_for(ctx, batch * groups, plan.count * 2, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t n = i / groups, g = i % groups;
        const int64_t base = n * in.stride(0) + g * per_group * in.stride(1);
        C sum = cpu::detail::fold_reduced(cpu::SumOp<C>{}, C(0), in, plan, base, 0, plan.count);
        C mean = sum / static_cast<C>(plan.count);
        cpu::SquaredDeviationOp<C> sq;
        sq.mean = mean;
        C ss = cpu::detail::fold_reduced(sq, C(0), in, plan, base, 0, plan.count);
        C rstd = C(1) / std::sqrt(ss / static_cast<C>(plan.count) + ceps);
        mean_data[n * mean_out.stride(0) + g * mean_out.stride(1)] = kernels::convert<T>(mean);
        rstd_data[n * rstd_out.stride(0) + g * rstd_out.stride(1)] = kernels::convert<T>(rstd);
        for (int64_t c = g * per_group; c < (g + 1) * per_group; ++c) {
          C s = rstd * param<T, C>(weight, c, C(1));
          scale[n * channels + c] = s;
          shift[n * channels + c] = param<T, C>(bias, c, C(0)) - mean * s;
        }
      }
    });
    if (in.numel() > 0) channel_affine<T, C>(ctx, in, out, scale, shift, true);
  });
}

}  // namespace

const ops::NormBackend& norm_backend() {
  static constexpr ops::NormBackend kNorm{&layer_norm_out, &batch_norm_out, &group_norm_out,
                                          &rms_norm_out};
  return kNorm;
}

}  // namespace pterun::cpu
