// The CPU's upsample_nearest2d and upsample_bilinear2d (.vec overloads),
// with torch's source-index rules (scale factors, align_corners).

#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>

#include "pterun/backend/cpu/ops/pool_util.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::cpu::pool {

namespace {

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

}  // namespace

void upsample_nearest(KernelContext& ctx, const ops::ResampleArgs& a) {
  const char* op = "aten::upsample_nearest2d.vec_out";
  const Tensor& in = a.in;
  Tensor& out = a.out;
  const Planes& g = a.g;
  const auto& scale = a.scale;
  kernels::visit(in.dtype(), kernels::Family::RealHBBF16, op, [&]<typename T>() {
    const T* src = in.data_as<T>();
    T* dst = out.data_as<T>();
    for_each_output(ctx, g, 1, [&](int64_t in_plane, int64_t n, int64_t c, int64_t oy, int64_t ox) {
      const int64_t y = nearest_source(oy, g.ih, g.oh, scale[0]);
      const int64_t x = nearest_source(ox, g.iw, g.ow, scale[1]);
      dst[offset(g.out, n, c, oy, ox)] = src[in_plane + y * g.in[2] + x * g.in[3]];
    });
  });
}

void upsample_bilinear(KernelContext& ctx, const ops::ResampleArgs& a) {
  const char* op = "aten::upsample_bilinear2d.vec_out";
  const Tensor& in = a.in;
  Tensor& out = a.out;
  const Planes& g = a.g;
  const auto& scale = a.scale;
  const bool align_corners = a.align_corners;
  kernels::visit(in.dtype(), kernels::Family::FloatHBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    if constexpr (std::is_floating_point_v<C>) {
      const T* src = in.data_as<T>();
      T* dst = out.data_as<T>();
      for_each_output(ctx, g, 4,
                      [&](int64_t in_plane, int64_t n, int64_t c, int64_t oy, int64_t ox) {
                        const auto ly = linear_source<C>(oy, g.ih, g.oh, align_corners, scale[0]);
                        const auto lx = linear_source<C>(ox, g.iw, g.ow, align_corners, scale[1]);
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

}  // namespace pterun::cpu::pool
