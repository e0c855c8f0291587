#pragma once

// What the 2-D pooling and resampling kernels share: argument checks, the
// (N, C, H, W) geometry of 3-D or 4-D tensors of any dim order, and a loop
// over outputs in the input's memory order.

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/core/error.h"
#include "pterun/core/tensor.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/kernels/kernel.h"

namespace pterun::cpu::pool {

using kernels::KernelContext;

/// Input and output of a 2-D pooling op as (N, C, H, W) strides.
struct Planes {
  int64_t n = 1, c = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  std::array<int64_t, 4> in{}, out{};
  bool channels_inner = false;  // channels are the input's innermost dim
};

inline void check_input(const char* op, const Tensor& in) {
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
inline std::array<int64_t, 4> strides4(const Tensor& t) {
  const size_t r = t.dim();
  return {r == 4 ? t.stride(0) : 0, t.stride(r - 3), t.stride(r - 2), t.stride(r - 1)};
}

/// Resizes `out` (and `extra`, if given) to the input's leading dims plus
/// [oh, ow], and returns the loop geometry.
inline Planes make_planes(const char* op, const Tensor& in, Tensor& out, int64_t oh, int64_t ow,
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
    cpu::parallel_for(ctx, g.n * g.oh * g.ow, cost * g.c, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, n = i / (g.ow * g.oh);
        for (int64_t c = 0; c < g.c; ++c) f(n * g.in[0] + c * g.in[1], n, c, oy, ox);
      }
    });
    return;
  }
  cpu::parallel_for(ctx, g.n * g.c, cost * g.oh * g.ow, [&](int64_t b, int64_t e) {
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

inline int64_t at(std::span<const int64_t> list, size_t i) {
  return list[list.size() == 1 ? 0 : i];
}

inline void check_list(const char* op, const char* name, std::span<const int64_t> list,
                       bool allow_empty, int64_t min) {
  PTERUN_CHECK(list.size() == 1 || list.size() == 2 || (allow_empty && list.empty()),
               ErrorCode::InvalidArgument, op, ": ", name, " must have ", allow_empty ? "0, " : "",
               "1 or 2 entries, got ", list.size());
  for (int64_t v : list) {
    PTERUN_CHECK(v >= min, ErrorCode::InvalidArgument, op, ": ", name, " entries must be >= ", min,
                 ", got ", v);
  }
}

inline Window make_window(const char* op, std::span<const int64_t> kernel,
                          std::span<const int64_t> stride, std::span<const int64_t> padding,
                          std::span<const int64_t> dilation) {
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
inline int64_t pooled_size(const char* op, int64_t in, const Window& w, size_t i, bool ceil_mode) {
  const int64_t k = w.k[i], s = w.s[i], p = w.p[i], d = w.d[i];
  const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  // The last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  PTERUN_CHECK(out > 0, ErrorCode::InvalidArgument, op, ": input size ", in,
               " is too small for the window (kernel ", k, ", dilation ", d, ", padding ", p, ")");
  return out;
}

inline void check_same_dtype(const char* op, const Tensor& in, const Tensor& out) {
  PTERUN_CHECK(out.dtype() == in.dtype(), ErrorCode::InvalidArgument, op, ": out ", describe(out),
               " must have the input's dtype ", dtype_name(in.dtype()));
}

/// Output size and scale factors of an upsample .vec op: exactly one of
/// output_size and scale_factors is given; sizes from scales truncate.
struct Resample {
  std::array<int64_t, 2> size{};
  std::array<std::optional<double>, 2> scale;
};

/// Checks an upsample .vec op's input (4-D) and its output_size /
/// scale_factors arguments, and works out the output size.
Resample resample_args(const char* op, const Tensor& in, const Value& size_arg,
                       const Value& scales_arg);

// Kernels registered by register_pool_ops (pool.cpp), defined in
// pool_max.cpp and pool_resample.cpp.
void max_pool2d_with_indices_out(KernelContext& ctx, std::span<Value* const> args);
void max_pool2d_values_out(KernelContext& ctx, std::span<Value* const> args);
void upsample_nearest2d_out(KernelContext& ctx, std::span<Value* const> args);
void upsample_bilinear2d_out(KernelContext& ctx, std::span<Value* const> args);

}  // namespace pterun::cpu::pool
