// upsample_nearest2d and upsample_bilinear2d (.vec overloads), with torch's
// source-index rules (scale factors, align_corners).

#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>

#include "pterun/backend/cpu/ops/pool_util.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::cpu::pool {

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

// upsample_nearest2d.vec_out(input, output_size?, scale_factors?, *, out)
void upsample_nearest2d_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::upsample_nearest2d.vec_out";
  const Tensor& in = args[0]->to_tensor();
  const Resample rs = resample_args(op, in, *args[1], *args[2]);
  Tensor& out = args[3]->to_tensor();
  check_same_dtype(op, in, out);
  const Planes g = make_planes(op, in, out, rs.size[0], rs.size[1]);
  kernels::visit(in.dtype(), kernels::Family::RealHBBF16, op, [&]<typename T>() {
    const T* src = in.data_as<T>();
    T* dst = out.data_as<T>();
    for_each_output(ctx, g, 1, [&](int64_t in_plane, int64_t n, int64_t c, int64_t oy, int64_t ox) {
      const int64_t y = nearest_source(oy, g.ih, g.oh, rs.scale[0]);
      const int64_t x = nearest_source(ox, g.iw, g.ow, rs.scale[1]);
      dst[offset(g.out, n, c, oy, ox)] = src[in_plane + y * g.in[2] + x * g.in[3]];
    });
  });
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
  kernels::visit(in.dtype(), kernels::Family::FloatHBF16, op, [&]<typename T>() {
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

}  // namespace pterun::cpu::pool
