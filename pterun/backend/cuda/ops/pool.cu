// The CUDA pool table (pterun/ops/pool.h: the front-ends check and shape):
// 2-D pooling and resampling, one thread per output element, in
// the input's memory order (channels fastest for channels-last input so
// neighbouring threads read neighbouring channels). The window rules are
// the CPU kernels' (pool.cpp, pool_max.cpp, pool_resample.cpp): torch's
// flat H * W max indices (the last NaN of a window wins, ties keep the
// first), avg-pool divisors, adaptive windows, nearest / bilinear source
// indices. Index arithmetic is rounded like the CPU's (no FMA contraction).

#include <cmath>
#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/nn_device.cuh"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/nn_launch.h"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/ops/pool.h"

namespace pterun::cuda::nn {
namespace {

struct Coord {
  int64_t n, c, y, x;
};

__device__ inline Coord coord_of(const PoolGeom& g, int64_t e) {
  Coord r;
  if (g.channels_inner) {
    r.c = e % g.c;
    e /= g.c;
    r.x = e % g.ow;
    e /= g.ow;
    r.y = e % g.oh;
    r.n = e / g.oh;
  } else {
    r.x = e % g.ow;
    e /= g.ow;
    r.y = e % g.oh;
    e /= g.oh;
    r.c = e % g.c;
    r.n = e / g.c;
  }
  return r;
}

__device__ inline int64_t out_off(const int64_t (&s)[4], const Coord& q) {
  return q.n * s[0] + q.c * s[1] + q.y * s[2] + q.x * s[3];
}

/// First in-bounds coordinate of the window starting at o * s - p.
__device__ inline int64_t first_in(int64_t o, int64_t s, int64_t p, int64_t d) {
  int64_t v = o * s - p;
  while (v < 0) v += d;
  return v;
}

template <typename T, typename C>
__device__ void max_pool_one(const PoolLaunch& l, const Coord& q) {
  const PoolGeom& g = l.g;
  const T* src = static_cast<const T*>(l.in);
  const int64_t plane = q.n * g.in[0] + q.c * g.in[1];
  const int64_t y0 = first_in(q.y, g.s[0], g.p[0], g.d[0]);
  const int64_t x0 = first_in(q.x, g.s[1], g.p[1], g.d[1]);
  const int64_t y1 = min(q.y * g.s[0] - g.p[0] + (g.k[0] - 1) * g.d[0] + 1, g.ih);
  const int64_t x1 = min(q.x * g.s[1] - g.p[1] + (g.k[1] - 1) * g.d[1] + 1, g.iw);
  C best;
  if constexpr (std::is_floating_point_v<C>) {
    best = -INFINITY;
  } else {
    best = std::numeric_limits<C>::lowest();
  }
  int64_t index = y0 * g.iw + x0;
  for (int64_t y = y0; y < y1; y += g.d[0]) {
    for (int64_t x = x0; x < x1; x += g.d[1]) {
      const C v = convert<C>(src[plane + y * g.in[2] + x * g.in[3]]);
      bool take = v > best;
      if constexpr (std::is_floating_point_v<C>) take = take || v != v;
      if (take) {
        best = v;
        index = y * g.iw + x;
      }
    }
  }
  static_cast<T*>(l.out)[out_off(g.out, q)] = convert<T>(best);
  if (l.indices != nullptr) l.indices[out_off(g.idx, q)] = index;
}

/// XNNPACK's argmax pooling: windows of stride k from -p, positions outside
/// the input reading the nearest border pixel, visited column by column;
/// the first strictly largest value wins and its index is x * k_h + y.
template <typename T, typename C>
__device__ void argmax_pool_one(const PoolLaunch& l, const Coord& q) {
  const PoolGeom& g = l.g;
  const T* src = static_cast<const T*>(l.in);
  const int64_t plane = q.n * g.in[0] + q.c * g.in[1];
  const int64_t y_start = q.y * g.k[0] - g.p[0], x_start = q.x * g.k[1] - g.p[1];
  C best = C(0);
  int64_t index = 0;
  for (int64_t px = 0; px < g.k[1]; ++px) {
    const int64_t x = min(max(x_start + px, int64_t{0}), g.iw - 1);
    for (int64_t py = 0; py < g.k[0]; ++py) {
      const int64_t y = min(max(y_start + py, int64_t{0}), g.ih - 1);
      const C v = convert<C>(src[plane + y * g.in[2] + x * g.in[3]]);
      const int64_t k = px * g.k[0] + py;
      if (k == 0 || v > best) {
        best = v;
        index = k;
      }
    }
  }
  static_cast<T*>(l.out)[out_off(g.out, q)] = convert<T>(best);
  if (l.index_is_int64) {
    l.indices[out_off(g.idx, q)] = index;
  } else {
    reinterpret_cast<int32_t*>(l.indices)[out_off(g.idx, q)] = static_cast<int32_t>(index);
  }
}

template <typename T, typename C>
__device__ void avg_pool_one(const PoolLaunch& l, const Coord& q) {
  const PoolGeom& g = l.g;
  const T* src = static_cast<const T*>(l.in);
  const int64_t plane = q.n * g.in[0] + q.c * g.in[1];
  int64_t y0 = q.y * g.s[0] - g.p[0], x0 = q.x * g.s[1] - g.p[1];
  int64_t y1 = min(y0 + g.k[0], g.ih + g.p[0]);
  int64_t x1 = min(x0 + g.k[1], g.iw + g.p[1]);
  const int64_t padded_count = (y1 - y0) * (x1 - x0);
  y0 = y0 < 0 ? 0 : y0;
  x0 = x0 < 0 ? 0 : x0;
  y1 = min(y1, g.ih);
  x1 = min(x1, g.iw);
  T& result = static_cast<T*>(l.out)[out_off(g.out, q)];
  if (y0 >= y1 || x0 >= x1) {
    result = convert<T>(C(0));
    return;
  }
  C sum = 0;
  for (int64_t y = y0; y < y1; ++y) {
    for (int64_t x = x0; x < x1; ++x) sum += convert<C>(src[plane + y * g.in[2] + x * g.in[3]]);
  }
  const int64_t count = l.has_divisor         ? l.divisor
                        : l.count_include_pad ? padded_count
                                              : (y1 - y0) * (x1 - x0);
  result = convert<T>(static_cast<C>(sum / static_cast<C>(count)));
}

template <typename T, typename C>
__device__ void adaptive_avg_one(const PoolLaunch& l, const Coord& q) {
  const PoolGeom& g = l.g;
  const T* src = static_cast<const T*>(l.in);
  const int64_t plane = q.n * g.in[0] + q.c * g.in[1];
  const int64_t y0 = q.y * g.ih / g.oh, y1 = ((q.y + 1) * g.ih + g.oh - 1) / g.oh;
  const int64_t x0 = q.x * g.iw / g.ow, x1 = ((q.x + 1) * g.iw + g.ow - 1) / g.ow;
  C sum = 0;
  for (int64_t y = y0; y < y1; ++y) {
    for (int64_t x = x0; x < x1; ++x) sum += convert<C>(src[plane + y * g.in[2] + x * g.in[3]]);
  }
  static_cast<T*>(l.out)[out_off(g.out, q)] =
      convert<T>(sum / static_cast<C>((y1 - y0) * (x1 - x0)));
}

/// torch's compute_scales_value: 1/scale when given, else in/out.
__device__ inline float scale_f(bool has, double scale, int64_t in, int64_t out) {
  return has && scale > 0 ? static_cast<float>(1.0 / scale)
                          : __fdiv_rn(static_cast<float>(in), static_cast<float>(out));
}
__device__ inline double scale_d(bool has, double scale, int64_t in, int64_t out) {
  return has && scale > 0 ? 1.0 / scale
                          : __ddiv_rn(static_cast<double>(in), static_cast<double>(out));
}

__device__ inline int64_t nearest_source(int64_t o, int64_t in, int64_t out, bool has,
                                         double scale) {
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  const float s = scale_f(has, scale, in, out);
  return min(static_cast<int64_t>(floorf(__fmul_rn(static_cast<float>(o), s))), in - 1);
}

template <typename C>
struct Linear1d {
  int64_t i0 = 0, i1 = 0;
  C w0 = 1, w1 = 0;
};

__device__ inline float mul_rn(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ inline double mul_rn(double a, double b) {
  return __dmul_rn(a, b);
}
__device__ inline float add_rn(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ inline double add_rn(double a, double b) {
  return __dadd_rn(a, b);
}
__device__ inline float div_rn(float a, float b) {
  return __fdiv_rn(a, b);
}
__device__ inline double div_rn(double a, double b) {
  return __ddiv_rn(a, b);
}

template <typename C>
__device__ Linear1d<C> linear_source(int64_t o, int64_t in, int64_t out, bool align_corners,
                                     bool has, double scale) {
  Linear1d<C> l;
  if (in == out) {
    l.i0 = l.i1 = o;
    return l;
  }
  C ratio;
  if (align_corners) {
    ratio = out > 1 ? div_rn(static_cast<C>(in - 1), static_cast<C>(out - 1)) : C(0);
  } else if constexpr (std::is_same_v<C, float>) {
    ratio = scale_f(has, scale, in, out);
  } else {
    ratio = scale_d(has, scale, in, out);
  }
  C src = align_corners ? mul_rn(ratio, static_cast<C>(o))
                        : add_rn(mul_rn(ratio, add_rn(static_cast<C>(o), C(0.5))), C(-0.5));
  if (src < 0) src = 0;
  l.i0 = min(static_cast<int64_t>(floor(src)), in - 1);
  l.i1 = l.i0 + (l.i0 < in - 1 ? 1 : 0);
  l.w1 = fmin(fmax(add_rn(src, -static_cast<C>(l.i0)), C(0)), C(1));
  l.w0 = add_rn(C(1), -l.w1);
  return l;
}

template <typename T>
__device__ void nearest_one(const PoolLaunch& l, const Coord& q) {
  const PoolGeom& g = l.g;
  const int64_t y = nearest_source(q.y, g.ih, g.oh, l.has_scale[0], l.scale[0]);
  const int64_t x = nearest_source(q.x, g.iw, g.ow, l.has_scale[1], l.scale[1]);
  static_cast<T*>(l.out)[out_off(g.out, q)] =
      static_cast<const T*>(l.in)[q.n * g.in[0] + q.c * g.in[1] + y * g.in[2] + x * g.in[3]];
}

template <typename T, typename C>
__device__ void bilinear_one(const PoolLaunch& l, const Coord& q) {
  const PoolGeom& g = l.g;
  const T* src = static_cast<const T*>(l.in);
  const int64_t plane = q.n * g.in[0] + q.c * g.in[1];
  const auto ly = linear_source<C>(q.y, g.ih, g.oh, l.align_corners, l.has_scale[0], l.scale[0]);
  const auto lx = linear_source<C>(q.x, g.iw, g.ow, l.align_corners, l.has_scale[1], l.scale[1]);
  auto v = [&](int64_t y, int64_t x) { return convert<C>(src[plane + y * g.in[2] + x * g.in[3]]); };
  const C r = ly.w0 * (lx.w0 * v(ly.i0, lx.i0) + lx.w1 * v(ly.i0, lx.i1)) +
              ly.w1 * (lx.w0 * v(ly.i1, lx.i0) + lx.w1 * v(ly.i1, lx.i1));
  static_cast<T*>(l.out)[out_off(g.out, q)] = convert<T>(r);
}

template <typename T>
__global__ void pool_kernel(PoolLaunch l, int64_t total) {
  using C = DeviceComputeOf<T>;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Coord q = coord_of(l.g, e);
    switch (l.kind) {
      case PoolKind::Max:
        if constexpr (!std::is_same_v<T, bool>) max_pool_one<T, C>(l, q);
        break;
      case PoolKind::ArgMax:
        if constexpr (std::is_floating_point_v<C>) argmax_pool_one<T, C>(l, q);
        break;
      case PoolKind::Avg:
        if constexpr (std::is_floating_point_v<C> || std::is_same_v<C, int64_t>) {
          avg_pool_one<T, C>(l, q);
        }
        break;
      case PoolKind::AdaptiveAvg:
        if constexpr (std::is_floating_point_v<C>) adaptive_avg_one<T, C>(l, q);
        break;
      case PoolKind::Nearest: nearest_one<T>(l, q); break;
      case PoolKind::Bilinear:
        if constexpr (std::is_floating_point_v<C>) bilinear_one<T, C>(l, q);
        break;
    }
  }
}

}  // namespace

void launch_pool(kernels::KernelContext& ctx, const PoolLaunch& l, const char* op) {
  const int64_t total = l.g.n * l.g.c * l.g.oh * l.g.ow;
  if (total == 0) return;
  const unsigned blocks = blocks_for(total, 256);
  visit_dtype(l.dtype, op,
              [&]<typename T>() { pool_kernel<T><<<blocks, 256, 0, stream(ctx)>>>(l, total); });
  check_launch(op);
}

}  // namespace pterun::cuda::nn

namespace pterun::kernels::cuda_ops {
namespace {

using cuda::nn::PoolKind;
using cuda::nn::PoolLaunch;

PoolLaunch launch_of(PoolKind kind, const ops::Planes& g, const Tensor& in, Tensor& out,
                     const ops::Window* w) {
  PoolLaunch l;
  l.kind = kind;
  l.g.n = g.n;
  l.g.c = g.c;
  l.g.ih = g.ih;
  l.g.iw = g.iw;
  l.g.oh = g.oh;
  l.g.ow = g.ow;
  for (int i = 0; i < 4; ++i) {
    l.g.in[i] = g.in[i];
    l.g.out[i] = g.out[i];
  }
  l.g.channels_inner = g.channels_inner;
  if (w != nullptr) {
    for (int i = 0; i < 2; ++i) {
      l.g.k[i] = w->k[i];
      l.g.s[i] = w->s[i];
      l.g.p[i] = w->p[i];
      l.g.d[i] = w->d[i];
    }
  }
  l.in = in.data();
  l.out = out.data();
  l.dtype = in.dtype();
  return l;
}

// Also the values-only form: the indices are written unless they have no
// data.
void max_pool(KernelContext& ctx, const ops::MaxPoolArgs& a) {
  PoolLaunch l = launch_of(PoolKind::Max, a.g, a.in, a.out, &a.w);
  for (int i = 0; i < 4; ++i) l.g.idx[i] = a.is[i];
  l.indices = a.indices.data_as<int64_t>();
  cuda::nn::launch_pool(ctx, l, "aten::max_pool2d_with_indices.out");
}

void argmax_pool(KernelContext& ctx, const ops::ArgMaxPoolArgs& a) {
  PoolLaunch l = launch_of(PoolKind::ArgMax, a.g, a.in, a.out, &a.w);
  for (int i = 0; i < 4; ++i) l.g.idx[i] = a.is[i];
  l.indices = static_cast<int64_t*>(a.indices.data());
  l.index_is_int64 = a.indices.dtype() == DType::Int64;
  cuda::nn::launch_pool(ctx, l, "xnnpack::argmax_pooling2d");
}

void avg_pool(KernelContext& ctx, const ops::AvgPoolArgs& a) {
  PoolLaunch l = launch_of(PoolKind::Avg, a.g, a.in, a.out, &a.w);
  l.count_include_pad = a.count_include_pad;
  l.has_divisor = a.divisor.has_value();
  l.divisor = a.divisor.value_or(1);
  cuda::nn::launch_pool(ctx, l, "aten::avg_pool2d.out");
}

void adaptive_avg_pool(KernelContext& ctx, const ops::AdaptiveAvgPoolArgs& a) {
  cuda::nn::launch_pool(ctx, launch_of(PoolKind::AdaptiveAvg, a.g, a.in, a.out, nullptr),
                        "aten::_adaptive_avg_pool2d.out");
}

PoolLaunch resample_launch(PoolKind kind, const ops::ResampleArgs& a) {
  PoolLaunch l = launch_of(kind, a.g, a.in, a.out, nullptr);
  for (int i = 0; i < 2; ++i) {
    l.has_scale[i] = a.scale[i].has_value();
    l.scale[i] = a.scale[i].value_or(0.0);
  }
  return l;
}

void upsample_nearest(KernelContext& ctx, const ops::ResampleArgs& a) {
  cuda::nn::launch_pool(ctx, resample_launch(PoolKind::Nearest, a),
                        "aten::upsample_nearest2d.vec_out");
}

void upsample_bilinear(KernelContext& ctx, const ops::ResampleArgs& a) {
  PoolLaunch l = resample_launch(PoolKind::Bilinear, a);
  l.align_corners = a.align_corners;
  cuda::nn::launch_pool(ctx, l, "aten::upsample_bilinear2d.vec_out");
}

}  // namespace

const ops::PoolBackend& pool_backend() {
  static constexpr ops::PoolBackend kPool{&max_pool,          &max_pool,         &avg_pool,
                                          &adaptive_avg_pool, &upsample_nearest, &upsample_bilinear,
                                          &argmax_pool};
  return kPool;
}

}  // namespace pterun::kernels::cuda_ops
