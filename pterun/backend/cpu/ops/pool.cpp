// 2-D pooling and resampling on 3-D [C, H, W] or 4-D [N, C, H, W] tensors of
// any dim order: avg_pool2d and _adaptive_avg_pool2d here, max pooling in
// pool_max.cpp, upsampling in pool_resample.cpp; all registered below.
//
// Our own loops rather than oneDNN's pooling: torch's flat max indices, its
// avg-pool divisors at ceil-mode edges and divisor_override have no oneDNN
// equivalent, and pooling is memory-bound, so walking each layout in its
// memory order (channels innermost for channels-last) is what matters.

#include <algorithm>
#include <array>
#include <optional>
#include <type_traits>

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/backend/cpu/ops/pool_util.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;
using pool::at;
using pool::check_input;
using pool::check_same_dtype;
using pool::for_each_output;
using pool::make_planes;
using pool::make_window;
using pool::offset;
using pool::Planes;
using pool::pooled_size;
using pool::Window;

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

}  // namespace

void register_pool_ops(kernels::KernelRegistry& r) {
  r.add("aten::max_pool2d_with_indices.out", Device::CPU, &pool::max_pool2d_with_indices_out);
  r.add(kernels::kMaxPoolValuesKernel, Device::CPU, &pool::max_pool2d_values_out);
  r.add("aten::avg_pool2d.out", Device::CPU, &avg_pool2d_out);
  r.add("aten::_adaptive_avg_pool2d.out", Device::CPU, &adaptive_avg_pool2d_out);
  r.add("aten::upsample_nearest2d.vec_out", Device::CPU, &pool::upsample_nearest2d_out);
  r.add("aten::upsample_bilinear2d.vec_out", Device::CPU, &pool::upsample_bilinear2d_out);
}

}  // namespace pterun::cpu
