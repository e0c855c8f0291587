// The CPU's pool table (pterun/ops/pool.h: the front-ends check and shape
// 2-D pooling and resampling on 3-D [C, H, W] or 4-D [N, C, H, W] tensors of
// any dim order): avg_pool2d and _adaptive_avg_pool2d here, max pooling in
// pool_max.cpp, upsampling in pool_resample.cpp; the table below.
//
// Our own loops rather than oneDNN's pooling: torch's flat max indices, its
// avg-pool divisors at ceil-mode edges and divisor_override have no oneDNN
// equivalent, and pooling is memory-bound, so walking each layout in its
// memory order (channels innermost for channels-last) is what matters.

#include <algorithm>
#include <type_traits>

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/backend/cpu/ops/pool_util.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;
using pool::for_each_output;
using pool::offset;
using pool::Planes;
using pool::Window;

void avg_pool(KernelContext& ctx, const ops::AvgPoolArgs& a) {
  const char* op = "aten::avg_pool2d.out";
  const Tensor& in = a.in;
  Tensor& out = a.out;
  const Window& w = a.w;
  const Planes& g = a.g;
  const bool count_include_pad = a.count_include_pad;
  const std::optional<int64_t> divisor = a.divisor;
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

/// Adaptive window o of `out` over `in` positions: [floor(o * in / out),
/// ceil((o + 1) * in / out)).
struct Span {
  int64_t lo, hi;
};
inline Span adaptive_span(int64_t o, int64_t in, int64_t out) {
  return {o * in / out, ((o + 1) * in + out - 1) / out};
}

/// Channels summed side by side in adaptive_avg_pool's channels-last loop.
constexpr int64_t kSumLanes = 16;

/// adaptive_avg_pool over channels-last pixels with contiguous channels:
/// per output pixel, kSumLanes channels at a time with their sums in
/// registers over the window's pixels, in the order of the loop over
/// channels (rows, then columns), so the same sums; one pass over each
/// pixel instead of one per channel (4 x 32 x 32 x 32 to 1 x 1: 103 µs
/// channel by channel).
template <typename T, typename C>
void channels_last_adaptive(KernelContext& ctx, const Planes& g, const T* src, T* dst) {
  const int64_t windows = g.n * g.oh * g.ow;
  const int64_t cost = (g.ih / g.oh + 2) * (g.iw / g.ow + 2) * g.c;
  cpu::parallel_for(ctx, windows, cost, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t ox = i % g.ow, oy = i / g.ow % g.oh, n = i / (g.ow * g.oh);
      const Span ys = adaptive_span(oy, g.ih, g.oh), xs = adaptive_span(ox, g.iw, g.ow);
      const C count = static_cast<C>((ys.hi - ys.lo) * (xs.hi - xs.lo));
      const T* image = src + n * g.in[0];
      auto sums = [&]<int64_t K>(int64_t c) {
        C sum[K] = {};
        for (int64_t y = ys.lo; y < ys.hi; ++y) {
          for (int64_t x = xs.lo; x < xs.hi; ++x) {
            const T* p = image + y * g.in[2] + x * g.in[3] + c;
            for (int64_t k = 0; k < K; ++k) sum[k] += static_cast<C>(p[k]);
          }
        }
        for (int64_t k = 0; k < K; ++k) {
          dst[offset(g.out, n, c + k, oy, ox)] = kernels::convert<T>(sum[k] / count);
        }
      };
      int64_t c = 0;
      for (; c + kSumLanes <= g.c; c += kSumLanes) sums.template operator()<kSumLanes>(c);
      for (; c < g.c; ++c) sums.template operator()<1>(c);
    }
  });
}

// Each output's window is adaptive_span's along each dim.
void adaptive_avg_pool(KernelContext& ctx, const ops::AdaptiveAvgPoolArgs& a) {
  const char* op = "aten::_adaptive_avg_pool2d.out";
  const Tensor& in = a.in;
  Tensor& out = a.out;
  const Planes& g = a.g;
  kernels::visit(in.dtype(), Family::FloatHBF16, op, [&]<typename T>() {
    using C = kernels::ComputeOf<T>;
    if constexpr (std::is_floating_point_v<C>) {
      const T* src = in.data_as<T>();
      T* dst = out.data_as<T>();
      const int64_t cost = (g.ih / g.oh + 2) * (g.iw / g.ow + 2);
      if (g.channels_inner && g.in[1] == 1 && g.c >= kSumLanes) {
        channels_last_adaptive<T, C>(ctx, g, src, dst);
        return;
      }
      for_each_output(
          ctx, g, cost, [&](int64_t in_plane, int64_t n, int64_t c, int64_t oy, int64_t ox) {
            const Span ys = adaptive_span(oy, g.ih, g.oh), xs = adaptive_span(ox, g.iw, g.ow);
            C sum = 0;
            for (int64_t y = ys.lo; y < ys.hi; ++y) {
              for (int64_t x = xs.lo; x < xs.hi; ++x)
                sum += static_cast<C>(src[in_plane + y * g.in[2] + x * g.in[3]]);
            }
            dst[offset(g.out, n, c, oy, ox)] =
                kernels::convert<T>(sum / static_cast<C>((ys.hi - ys.lo) * (xs.hi - xs.lo)));
          });
    }
  });
}

}  // namespace

const ops::PoolBackend& pool_backend() {
  static constexpr ops::PoolBackend kPool{
      &pool::max_pool2d,       &pool::max_pool2d_values, &avg_pool,           &adaptive_avg_pool,
      &pool::upsample_nearest, &pool::upsample_bilinear, &pool::argmax_pool2d};
  return kPool;
}

}  // namespace pterun::cpu
