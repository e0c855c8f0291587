// 2-D pooling and resampling: max_pool2d_with_indices, avg_pool2d,
// _adaptive_avg_pool2d, upsample_nearest2d and upsample_bilinear2d, on 3-D
// [C, H, W] or 4-D [N, C, H, W] tensors of any dim order.
//
// Our own loops rather than oneDNN's pooling: torch's flat max indices, its
// avg-pool divisors at ceil-mode edges and divisor_override have no oneDNN
// equivalent, and pooling is memory-bound, so walking each layout in its
// memory order (channels innermost for channels-last) is what matters.

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/parallel.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;

/// Input and output of a 2-D pooling op as (N, C, H, W) strides.
struct Planes {
  int64_t n = 1, c = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  std::array<int64_t, 4> in{}, out{};
  bool channels_inner = false;  // channels are the input's innermost dim
};

void check_input(const char* op, const Tensor& in) {
  const size_t r = in.dim();
  PTERUN_CHECK(r == 3 || r == 4, ErrorCode::InvalidArgument, op,
               ": input must be 3-D [C, H, W] or 4-D [N, C, H, W], got ", describe(in));
  for (size_t d = r - 3; d < r; ++d) {
    PTERUN_CHECK(in.size(d) > 0, ErrorCode::InvalidArgument, op,
                 ": input needs non-empty channel and spatial dims, got ", describe(in));
  }
}

/// Offset of (n, c, y, x) under (N, C, H, W) strides `s`.
inline int64_t offset(const std::array<int64_t, 4>& s, int64_t n, int64_t c, int64_t y, int64_t x) {
  return n * s[0] + c * s[1] + y * s[2] + x * s[3];
}

/// Strides of a 3-D or 4-D tensor over (N, C, H, W); N's is 0 for 3-D.
std::array<int64_t, 4> strides4(const Tensor& t) {
  const size_t r = t.dim();
  return {r == 4 ? t.stride(0) : 0, t.stride(r - 3), t.stride(r - 2), t.stride(r - 1)};
}

/// Resizes `out` (and `extra`, if given) to the input's leading dims plus
/// [oh, ow], and returns the loop geometry.
Planes make_planes(const char* op, const Tensor& in, Tensor& out, int64_t oh, int64_t ow,
                   Tensor* extra = nullptr) {
  const size_t r = in.dim();
  std::array<int64_t, 4> sizes{};
  for (size_t d = 0; d + 2 < r; ++d) sizes[d] = in.size(d);
  sizes[r - 2] = oh;
  sizes[r - 1] = ow;
  kernels::resize_output(out, {sizes.data(), r}, op);
  if (extra != nullptr) kernels::resize_output(*extra, {sizes.data(), r}, op);
  Planes g;
  g.n = r == 4 ? in.size(0) : 1;
  g.c = in.size(r - 3);
  g.ih = in.size(r - 2);
  g.iw = in.size(r - 1);
  g.oh = oh;
  g.ow = ow;
  g.in = strides4(in);
  g.out = strides4(out);
  g.channels_inner = g.c > 1 && g.in[1] == 1;
  return g;
}

/// Calls f(in_plane, n, c, oy, ox) for every output element, where in_plane
/// is the offset of the input's (n, c) plane, in the input's memory order:
/// planes outermost for NCHW, channels innermost for channels-last.
template <typename F>
void for_each_output(const KernelContext& ctx, const Planes& g, int64_t cost, F&& f) {
  if (g.channels_inner) {
    kernels::parallel_for(ctx, g.n * g.oh * g.ow, cost * g.c, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, n = i / (g.ow * g.oh);
        for (int64_t c = 0; c < g.c; ++c) f(n * g.in[0] + c * g.in[1], n, c, oy, ox);
      }
    });
    return;
  }
  kernels::parallel_for(ctx, g.n * g.c, cost * g.oh * g.ow, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t n = i / g.c, c = i % g.c;
      const int64_t in_plane = n * g.in[0] + c * g.in[1];
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        for (int64_t ox = 0; ox < g.ow; ++ox) f(in_plane, n, c, oy, ox);
      }
    }
  });
}

/// Kernel / stride / padding / dilation of a pooling op, per spatial dim.
struct Window {
  std::array<int64_t, 2> k{}, s{}, p{}, d{1, 1};
};

int64_t at(std::span<const int64_t> list, size_t i) {
  return list[list.size() == 1 ? 0 : i];
}

void check_list(const char* op, const char* name, std::span<const int64_t> list, bool allow_empty,
                int64_t min) {
  PTERUN_CHECK(list.size() == 1 || list.size() == 2 || (allow_empty && list.empty()),
               ErrorCode::InvalidArgument, op, ": ", name, " must have ", allow_empty ? "0, " : "",
               "1 or 2 entries, got ", list.size());
  for (int64_t v : list) {
    PTERUN_CHECK(v >= min, ErrorCode::InvalidArgument, op, ": ", name, " entries must be >= ", min,
                 ", got ", v);
  }
}

Window make_window(const char* op, std::span<const int64_t> kernel, std::span<const int64_t> stride,
                   std::span<const int64_t> padding, std::span<const int64_t> dilation) {
  check_list(op, "kernel_size", kernel, false, 1);
  check_list(op, "stride", stride, true, 1);
  check_list(op, "padding", padding, false, 0);
  if (!dilation.empty()) check_list(op, "dilation", dilation, false, 1);
  Window w;
  for (size_t i = 0; i < 2; ++i) {
    w.k[i] = at(kernel, i);
    w.s[i] = stride.empty() ? w.k[i] : at(stride, i);
    w.p[i] = at(padding, i);
    w.d[i] = dilation.empty() ? 1 : at(dilation, i);
    PTERUN_CHECK(w.p[i] <= w.k[i] / 2, ErrorCode::InvalidArgument, op,
                 ": padding must be at most half the kernel size, got padding ", w.p[i],
                 " for kernel ", w.k[i]);
  }
  return w;
}

/// torch's pooling_output_shape.
int64_t pooled_size(const char* op, int64_t in, const Window& w, size_t i, bool ceil_mode) {
  const int64_t k = w.k[i], s = w.s[i], p = w.p[i], d = w.d[i];
  const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  // The last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  PTERUN_CHECK(out > 0, ErrorCode::InvalidArgument, op, ": input size ", in,
               " is too small for the window (kernel ", k, ", dilation ", d, ", padding ", p, ")");
  return out;
}

/// Takes v over (best, index) when it is larger or NaN (the last NaN of a
/// window wins, as in torch); branch-free so the loops vectorise.
template <typename C>
inline void take_max(C v, int64_t i, C& best, int64_t& index) {
  bool take = v > best;
  if constexpr (std::is_floating_point_v<C>) take = take || v != v;
  best = take ? v : best;
  index = take ? i : index;
}

/// Max pooling of one (n, c) plane. K > 0 means K x K windows without
/// dilation: those lying fully inside the plane take an unrolled loop.
template <int K, typename T, typename C>
void max_pool_plane(const Planes& g, const Window& w, const T* src, T* dst, int64_t* idx,
                    const std::array<int64_t, 4>& is, const int64_t* x_first, const int64_t* x_end,
                    C lowest) {
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const int64_t y_start = oy * w.s[0] - w.p[0];
    int64_t y0 = y_start;
    while (y0 < 0) y0 += w.d[0];
    const int64_t y1 = std::min(y_start + (w.k[0] - 1) * w.d[0] + 1, g.ih);
    const bool rows_inside = y_start >= 0 && y_start + K <= g.ih;
    T* out_row = dst + oy * g.out[2];
    int64_t* idx_row = idx + oy * is[2];
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      C best = lowest;
      int64_t index = y0 * g.iw + x_first[ox];
      const int64_t x_start = ox * w.s[1] - w.p[1];
      if (K > 0 && rows_inside && x_start >= 0 && x_start + K <= g.iw) {
        for (int ky = 0; ky < K; ++ky) {
          const T* row = src + (y0 + ky) * g.in[2];
          for (int kx = 0; kx < K; ++kx) {
            take_max(static_cast<C>(row[(x_start + kx) * g.in[3]]), (y0 + ky) * g.iw + x_start + kx,
                     best, index);
          }
        }
      } else {
        for (int64_t y = y0; y < y1; y += w.d[0]) {
          const T* row = src + y * g.in[2];
          for (int64_t x = x_first[ox]; x < x_end[ox]; x += w.d[1]) {
            take_max(static_cast<C>(row[x * g.in[3]]), y * g.iw + x, best, index);
          }
        }
      }
      out_row[ox * g.out[3]] = kernels::convert<T>(best);
      idx_row[ox * is[3]] = index;
    }
  }
}

/// Max pooling with flat H*W indices. Candidates of a window are visited in
/// torch's order (rows, then columns) and ties keep the first. Two loop
/// orders: across output columns of one plane row, or, for channels-last
/// input, across channels of one output pixel.
template <typename T>
void max_pool(KernelContext& ctx, const Planes& g, const Window& w, const T* src, T* dst,
              int64_t* idx, const std::array<int64_t, 4>& is) {
  using C = kernels::ComputeOf<T>;
  constexpr int64_t kBlock = 256;
  const C lowest = std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                        : std::numeric_limits<C>::lowest();
  // First in-bounds input coordinate of window o (the index an all-lowest
  // window reports).
  auto first = [](int64_t o, int64_t s, int64_t p, int64_t d) {
    int64_t v = o * s - p;
    while (v < 0) v += d;
    return v;
  };
  const int64_t cost = w.k[0] * w.k[1];
  if (g.channels_inner) {
    kernels::parallel_for(ctx, g.n * g.oh * g.ow, cost * g.c, [&](int64_t b, int64_t e) {
      alignas(64) C best[kBlock];
      alignas(64) int64_t index[kBlock];
      for (int64_t item = b; item < e; ++item) {
        const int64_t ox = item % g.ow, oy = (item / g.ow) % g.oh, n = item / (g.ow * g.oh);
        const int64_t y0 = first(oy, w.s[0], w.p[0], w.d[0]);
        const int64_t x0 = first(ox, w.s[1], w.p[1], w.d[1]);
        const int64_t y1 = std::min(oy * w.s[0] - w.p[0] + (w.k[0] - 1) * w.d[0] + 1, g.ih);
        const int64_t x1 = std::min(ox * w.s[1] - w.p[1] + (w.k[1] - 1) * w.d[1] + 1, g.iw);
        for (int64_t c0 = 0; c0 < g.c; c0 += kBlock) {
          const int64_t nc = std::min(kBlock, g.c - c0);
          std::fill(best, best + nc, lowest);
          std::fill(index, index + nc, y0 * g.iw + x0);
          for (int64_t y = y0; y < y1; y += w.d[0]) {
            for (int64_t x = x0; x < x1; x += w.d[1]) {
              const T* px = src + n * g.in[0] + c0 + y * g.in[2] + x * g.in[3];
              const int64_t i = y * g.iw + x;
              for (int64_t c = 0; c < nc; ++c)
                take_max(static_cast<C>(px[c]), i, best[c], index[c]);
            }
          }
          for (int64_t c = 0; c < nc; ++c) {
            dst[offset(g.out, n, c0 + c, oy, ox)] = kernels::convert<T>(best[c]);
            idx[offset(is, n, c0 + c, oy, ox)] = index[c];
          }
        }
      }
    });
    return;
  }
  // Window columns of every output column, computed once: [x_first, x_end)
  // in steps of the dilation.
  int64_t* x_first = static_cast<int64_t*>(ctx.scratch(2 * g.ow * sizeof(int64_t)));
  int64_t* x_end = x_first + g.ow;
  for (int64_t ox = 0; ox < g.ow; ++ox) {
    x_first[ox] = first(ox, w.s[1], w.p[1], w.d[1]);
    x_end[ox] = std::min(ox * w.s[1] - w.p[1] + (w.k[1] - 1) * w.d[1] + 1, g.iw);
  }
  auto planes = [&]<int K>() {
    kernels::parallel_for(ctx, g.n * g.c, cost * g.oh * g.ow, [&](int64_t b, int64_t e) {
      for (int64_t plane = b; plane < e; ++plane) {
        const int64_t n = plane / g.c, c = plane % g.c;
        max_pool_plane<K>(g, w, src + n * g.in[0] + c * g.in[1], dst + offset(g.out, n, c, 0, 0),
                          idx + offset(is, n, c, 0, 0), is, x_first, x_end, lowest);
      }
    });
  };
  // Unrolled windows for the usual 2x2 and 3x3 kernels without dilation.
  const bool plain = w.d[0] == 1 && w.d[1] == 1 && w.k[0] == w.k[1];
  if (plain && w.k[0] == 2) {
    planes.template operator()<2>();
  } else if (plain && w.k[0] == 3) {
    planes.template operator()<3>();
  } else {
    planes.template operator()<0>();
  }
}

// max_pool2d_with_indices.out(self, kernel_size, stride, padding, dilation,
//                             ceil_mode, *, out, indices)
void max_pool2d_with_indices_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::max_pool2d_with_indices.out";
  const Tensor& in = args[0]->to_tensor();
  const Window w = make_window(op, args[1]->to_int_list(), args[2]->to_int_list(),
                               args[3]->to_int_list(), args[4]->to_int_list());
  const bool ceil_mode = args[5]->to_bool();
  Tensor& out = args[6]->to_tensor();
  Tensor& indices = args[7]->to_tensor();
  check_input(op, in);
  PTERUN_CHECK(out.dtype() == in.dtype(), ErrorCode::InvalidArgument, op, ": out ", describe(out),
               " must have the input's dtype ", dtype_name(in.dtype()));
  PTERUN_CHECK(indices.dtype() == DType::Int64, ErrorCode::InvalidArgument, op,
               ": indices must be int64, got ", describe(indices));
  const size_t r = in.dim();
  const int64_t oh = pooled_size(op, in.size(r - 2), w, 0, ceil_mode);
  const int64_t ow = pooled_size(op, in.size(r - 1), w, 1, ceil_mode);
  const Planes g = make_planes(op, in, out, oh, ow, &indices);
  const std::array<int64_t, 4> is = strides4(indices);

  kernels::visit(in.dtype(), Family::RealHBF16, op, [&]<typename T>() {
    max_pool<T>(ctx, g, w, in.data_as<T>(), out.data_as<T>(), indices.data_as<int64_t>(), is);
  });
}

void check_same_dtype(const char* op, const Tensor& in, const Tensor& out) {
  PTERUN_CHECK(out.dtype() == in.dtype(), ErrorCode::InvalidArgument, op, ": out ", describe(out),
               " must have the input's dtype ", dtype_name(in.dtype()));
}

// avg_pool2d.out(self, kernel_size, stride, padding, ceil_mode,
//                count_include_pad, divisor_override, *, out)
void avg_pool2d_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::avg_pool2d.out";
  const Tensor& in = args[0]->to_tensor();
  const Window w =
      make_window(op, args[1]->to_int_list(), args[2]->to_int_list(), args[3]->to_int_list(), {});
  const bool ceil_mode = args[4]->to_bool();
  const bool count_include_pad = args[5]->to_bool();
  const std::optional<int64_t> divisor = args[6]->to_optional_int();
  Tensor& out = args[7]->to_tensor();
  check_input(op, in);
  check_same_dtype(op, in, out);
  PTERUN_CHECK(kernels::in_family(in.dtype(), Family::FloatHBF16) || in.dtype() == DType::Int64,
               ErrorCode::InvalidArgument, op, ": dtype ", dtype_name(in.dtype()),
               " is not supported");
  PTERUN_CHECK(!divisor.has_value() || *divisor != 0, ErrorCode::InvalidArgument, op,
               ": divisor_override must not be 0");
  const size_t r = in.dim();
  const int64_t oh = pooled_size(op, in.size(r - 2), w, 0, ceil_mode);
  const int64_t ow = pooled_size(op, in.size(r - 1), w, 1, ceil_mode);
  const Planes g = make_planes(op, in, out, oh, ow);

  kernels::visit(in.dtype(), Family::RealHBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;  // int64 sums and divides as int64, like torch
    if constexpr (std::is_floating_point_v<C> || std::is_same_v<C, int64_t>) {
      const T* src = in.data_as<T>();
      T* dst = out.data_as<T>();
      for_each_output(ctx, g, w.k[0] * w.k[1],
                      [&](int64_t in_plane, int64_t n, int64_t c, int64_t oy, int64_t ox) {
                        int64_t y0 = oy * w.s[0] - w.p[0], x0 = ox * w.s[1] - w.p[1];
                        int64_t y1 = std::min(y0 + w.k[0], g.ih + w.p[0]);
                        int64_t x1 = std::min(x0 + w.k[1], g.iw + w.p[1]);
                        const int64_t padded_count = (y1 - y0) * (x1 - x0);
                        y0 = std::max<int64_t>(y0, 0);
                        x0 = std::max<int64_t>(x0, 0);
                        y1 = std::min(y1, g.ih);
                        x1 = std::min(x1, g.iw);
                        T& result = dst[offset(g.out, n, c, oy, ox)];
                        if (y0 >= y1 || x0 >= x1) {
                          result = kernels::convert<T>(C(0));
                          return;
                        }
                        C sum = 0;
                        for (int64_t y = y0; y < y1; ++y) {
                          for (int64_t x = x0; x < x1; ++x)
                            sum += static_cast<C>(src[in_plane + y * g.in[2] + x * g.in[3]]);
                        }
                        const int64_t count = divisor.has_value() ? *divisor
                                              : count_include_pad ? padded_count
                                                                  : (y1 - y0) * (x1 - x0);
                        result = kernels::convert<T>(static_cast<C>(sum / static_cast<C>(count)));
                      });
    }
  });
}

/// An output size list of 1 or 2 entries, each >= 0.
std::array<int64_t, 2> output_hw(const char* op, std::span<const int64_t> size) {
  PTERUN_CHECK(size.size() == 1 || size.size() == 2, ErrorCode::InvalidArgument, op,
               ": output_size must have 1 or 2 entries, got ", size.size());
  std::array<int64_t, 2> hw{at(size, 0), at(size, 1)};
  PTERUN_CHECK(hw[0] >= 0 && hw[1] >= 0, ErrorCode::InvalidArgument, op,
               ": output_size entries must be >= 0, got [", hw[0], ", ", hw[1], "]");
  return hw;
}

// _adaptive_avg_pool2d.out(self, output_size, *, out): window o covers
// [floor(o * in / out), ceil((o + 1) * in / out)).
void adaptive_avg_pool2d_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::_adaptive_avg_pool2d.out";
  const Tensor& in = args[0]->to_tensor();
  const auto hw = output_hw(op, args[1]->to_int_list());
  Tensor& out = args[2]->to_tensor();
  check_input(op, in);
  check_same_dtype(op, in, out);
  const Planes g = make_planes(op, in, out, hw[0], hw[1]);
  if (out.numel() == 0) return;
  kernels::visit(in.dtype(), Family::FloatHBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    if constexpr (std::is_floating_point_v<C>) {
      const T* src = in.data_as<T>();
      T* dst = out.data_as<T>();
      const int64_t cost = (g.ih / g.oh + 2) * (g.iw / g.ow + 2);
      for_each_output(
          ctx, g, cost, [&](int64_t in_plane, int64_t n, int64_t c, int64_t oy, int64_t ox) {
            const int64_t y0 = oy * g.ih / g.oh, y1 = ((oy + 1) * g.ih + g.oh - 1) / g.oh;
            const int64_t x0 = ox * g.iw / g.ow, x1 = ((ox + 1) * g.iw + g.ow - 1) / g.ow;
            C sum = 0;
            for (int64_t y = y0; y < y1; ++y) {
              for (int64_t x = x0; x < x1; ++x)
                sum += static_cast<C>(src[in_plane + y * g.in[2] + x * g.in[3]]);
            }
            dst[offset(g.out, n, c, oy, ox)] =
                kernels::convert<T>(sum / static_cast<C>((y1 - y0) * (x1 - x0)));
          });
    }
  });
}

/// Output size and scale factors of an upsample .vec op: exactly one of
/// output_size and scale_factors is given; sizes from scales truncate.
struct Resample {
  std::array<int64_t, 2> size{};
  std::array<std::optional<double>, 2> scale;
};

Resample resample_args(const char* op, const Tensor& in, const Value& size_arg,
                       const Value& scales_arg) {
  PTERUN_CHECK(in.dim() == 4, ErrorCode::InvalidArgument, op, ": input must be 4-D, got ",
               describe(in));
  check_input(op, in);
  const auto size = size_arg.to_optional_int_list();
  const bool has_scales = !scales_arg.is_none();
  PTERUN_CHECK(size.has_value() != has_scales, ErrorCode::InvalidArgument, op,
               ": give exactly one of output_size and scale_factors");
  Resample r;
  if (size.has_value()) {
    PTERUN_CHECK(size->size() == 2, ErrorCode::InvalidArgument, op,
                 ": output_size must have 2 entries, got ", size->size());
    r.size = {(*size)[0], (*size)[1]};
  } else {
    const auto scales = scales_arg.to_double_list();
    PTERUN_CHECK(scales.size() == 2, ErrorCode::InvalidArgument, op,
                 ": scale_factors must have 2 entries, got ", scales.size());
    for (size_t i = 0; i < 2; ++i) {
      r.size[i] = static_cast<int64_t>(static_cast<double>(in.size(2 + i)) * scales[i]);
      r.scale[i] = scales[i];
    }
  }
  PTERUN_CHECK(r.size[0] > 0 && r.size[1] > 0, ErrorCode::InvalidArgument, op, ": output size [",
               r.size[0], ", ", r.size[1], "] must be positive");
  return r;
}

/// torch's compute_scales_value: 1/scale when given, else in/out.
template <typename C>
C scale_value(const std::optional<double>& scale, int64_t in, int64_t out) {
  return scale.has_value() && *scale > 0 ? static_cast<C>(1.0 / *scale)
                                         : static_cast<C>(in) / static_cast<C>(out);
}

int64_t nearest_source(int64_t o, int64_t in, int64_t out, const std::optional<double>& scale) {
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  const float s = scale_value<float>(scale, in, out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
}

// upsample_nearest2d.vec_out(input, output_size?, scale_factors?, *, out)
void upsample_nearest2d_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::upsample_nearest2d.vec_out";
  const Tensor& in = args[0]->to_tensor();
  const Resample rs = resample_args(op, in, *args[1], *args[2]);
  Tensor& out = args[3]->to_tensor();
  check_same_dtype(op, in, out);
  const Planes g = make_planes(op, in, out, rs.size[0], rs.size[1]);
  kernels::visit(in.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
    const T* src = in.data_as<T>();
    T* dst = out.data_as<T>();
    for_each_output(ctx, g, 1, [&](int64_t in_plane, int64_t n, int64_t c, int64_t oy, int64_t ox) {
      const int64_t y = nearest_source(oy, g.ih, g.oh, rs.scale[0]);
      const int64_t x = nearest_source(ox, g.iw, g.ow, rs.scale[1]);
      dst[offset(g.out, n, c, oy, ox)] = src[in_plane + y * g.in[2] + x * g.in[3]];
    });
  });
}

/// Source indices and weights of one output coordinate of bilinear
/// resampling (torch's area_pixel_compute_source_index and guards).
template <typename C>
struct Linear1d {
  int64_t i0 = 0, i1 = 0;
  C w0 = 1, w1 = 0;
};

template <typename C>
Linear1d<C> linear_source(int64_t o, int64_t in, int64_t out, bool align_corners,
                          const std::optional<double>& scale) {
  Linear1d<C> l;
  if (in == out) {
    l.i0 = l.i1 = o;
    return l;
  }
  const C ratio = align_corners
                      ? (out > 1 ? static_cast<C>(in - 1) / static_cast<C>(out - 1) : C(0))
                      : scale_value<C>(scale, in, out);
  C src = align_corners ? ratio * static_cast<C>(o) : ratio * (static_cast<C>(o) + C(0.5)) - C(0.5);
  if (src < 0) src = 0;
  l.i0 = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
  l.i1 = l.i0 + (l.i0 < in - 1 ? 1 : 0);
  l.w1 = std::min(std::max(src - static_cast<C>(l.i0), C(0)), C(1));
  l.w0 = C(1) - l.w1;
  return l;
}

// upsample_bilinear2d.vec_out(input, output_size?, align_corners,
//                             scale_factors?, *, out)
void upsample_bilinear2d_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::upsample_bilinear2d.vec_out";
  const Tensor& in = args[0]->to_tensor();
  const bool align_corners = args[2]->to_bool();
  const Resample rs = resample_args(op, in, *args[1], *args[3]);
  Tensor& out = args[4]->to_tensor();
  check_same_dtype(op, in, out);
  const Planes g = make_planes(op, in, out, rs.size[0], rs.size[1]);
  kernels::visit(in.dtype(), Family::FloatHBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    if constexpr (std::is_floating_point_v<C>) {
      const T* src = in.data_as<T>();
      T* dst = out.data_as<T>();
      for_each_output(
          ctx, g, 4, [&](int64_t in_plane, int64_t n, int64_t c, int64_t oy, int64_t ox) {
            const auto ly = linear_source<C>(oy, g.ih, g.oh, align_corners, rs.scale[0]);
            const auto lx = linear_source<C>(ox, g.iw, g.ow, align_corners, rs.scale[1]);
            auto v = [&](int64_t y, int64_t x) {
              return static_cast<C>(src[in_plane + y * g.in[2] + x * g.in[3]]);
            };
            const C r = ly.w0 * (lx.w0 * v(ly.i0, lx.i0) + lx.w1 * v(ly.i0, lx.i1)) +
                        ly.w1 * (lx.w0 * v(ly.i1, lx.i0) + lx.w1 * v(ly.i1, lx.i1));
            dst[offset(g.out, n, c, oy, ox)] = kernels::convert<T>(r);
          });
    }
  });
}

}  // namespace

void register_pool_ops(kernels::KernelRegistry& r) {
  using kernels::Device;
  r.add("aten::max_pool2d_with_indices.out", Device::CPU, &max_pool2d_with_indices_out);
  r.add("aten::avg_pool2d.out", Device::CPU, &avg_pool2d_out);
  r.add("aten::_adaptive_avg_pool2d.out", Device::CPU, &adaptive_avg_pool2d_out);
  r.add("aten::upsample_nearest2d.vec_out", Device::CPU, &upsample_nearest2d_out);
  r.add("aten::upsample_bilinear2d.vec_out", Device::CPU, &upsample_bilinear2d_out);
}

}  // namespace pterun::cpu
