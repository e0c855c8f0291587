// Host side of the CUDA pooling and resampling kernels: the CPU kernels'
// argument checks and output geometry (pool_util.h), then pool.cu.

#include <array>
#include <optional>

#include "pterun/backend/cpu/ops/pool_util.h"
#include "pterun/backend/cuda/ops/nn_launch.h"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::kernels::cuda_ops {
namespace {

namespace pool = cpu::pool;
using cuda::nn::PoolKind;
using cuda::nn::PoolLaunch;

PoolLaunch launch_of(PoolKind kind, const pool::Planes& g, const Tensor& in, Tensor& out,
                     const pool::Window* w) {
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

// max_pool2d_with_indices.out(self, kernel_size, stride, padding, dilation,
//                             ceil_mode, *, out, indices)
void max_pool2d_with_indices_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::max_pool2d_with_indices.out";
  const Tensor& in = args[0]->to_tensor();
  const pool::Window w = pool::make_window(op, args[1]->to_int_list(), args[2]->to_int_list(),
                                           args[3]->to_int_list(), args[4]->to_int_list());
  const bool ceil_mode = args[5]->to_bool();
  Tensor& out = args[6]->to_tensor();
  Tensor& indices = args[7]->to_tensor();
  pool::check_input(op, in);
  PTERUN_CHECK(out.dtype() == in.dtype(), ErrorCode::InvalidArgument, op, ": out ", describe(out),
               " must have the input's dtype ", dtype_name(in.dtype()));
  PTERUN_CHECK(indices.dtype() == DType::Int64, ErrorCode::InvalidArgument, op,
               ": indices must be int64, got ", describe(indices));
  const size_t r = in.dim();
  const int64_t oh = pool::pooled_size(op, in.size(r - 2), w, 0, ceil_mode);
  const int64_t ow = pool::pooled_size(op, in.size(r - 1), w, 1, ceil_mode);
  const pool::Planes g = pool::make_planes(op, in, out, oh, ow, &indices);
  PTERUN_CHECK(in_family(in.dtype(), Family::RealHBF16), ErrorCode::InvalidArgument, op, ": dtype ",
               dtype_name(in.dtype()), " is not supported");
  PoolLaunch l = launch_of(PoolKind::Max, g, in, out, &w);
  const std::array<int64_t, 4> is = pool::strides4(indices);
  for (int i = 0; i < 4; ++i) l.g.idx[i] = is[i];
  l.indices = indices.data_as<int64_t>();
  cuda::nn::launch_pool(ctx, l, op);
}

// avg_pool2d.out(self, kernel_size, stride, padding, ceil_mode,
//                count_include_pad, divisor_override, *, out)
void avg_pool2d_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::avg_pool2d.out";
  const Tensor& in = args[0]->to_tensor();
  const pool::Window w = pool::make_window(op, args[1]->to_int_list(), args[2]->to_int_list(),
                                           args[3]->to_int_list(), {});
  const bool ceil_mode = args[4]->to_bool();
  const bool count_include_pad = args[5]->to_bool();
  const std::optional<int64_t> divisor = args[6]->to_optional_int();
  Tensor& out = args[7]->to_tensor();
  pool::check_input(op, in);
  pool::check_same_dtype(op, in, out);
  PTERUN_CHECK(in_family(in.dtype(), Family::FloatHBF16) || in.dtype() == DType::Int64,
               ErrorCode::InvalidArgument, op, ": dtype ", dtype_name(in.dtype()),
               " is not supported");
  PTERUN_CHECK(!divisor.has_value() || *divisor != 0, ErrorCode::InvalidArgument, op,
               ": divisor_override must not be 0");
  const size_t r = in.dim();
  const int64_t oh = pool::pooled_size(op, in.size(r - 2), w, 0, ceil_mode);
  const int64_t ow = pool::pooled_size(op, in.size(r - 1), w, 1, ceil_mode);
  const pool::Planes g = pool::make_planes(op, in, out, oh, ow);
  PoolLaunch l = launch_of(PoolKind::Avg, g, in, out, &w);
  l.count_include_pad = count_include_pad;
  l.has_divisor = divisor.has_value();
  l.divisor = divisor.value_or(1);
  cuda::nn::launch_pool(ctx, l, op);
}

// _adaptive_avg_pool2d.out(self, output_size, *, out)
void adaptive_avg_pool2d_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::_adaptive_avg_pool2d.out";
  const Tensor& in = args[0]->to_tensor();
  const auto size = args[1]->to_int_list();
  Tensor& out = args[2]->to_tensor();
  PTERUN_CHECK(size.size() == 1 || size.size() == 2, ErrorCode::InvalidArgument, op,
               ": output_size must have 1 or 2 entries, got ", size.size());
  const std::array<int64_t, 2> hw{pool::at(size, 0), pool::at(size, 1)};
  PTERUN_CHECK(hw[0] >= 0 && hw[1] >= 0, ErrorCode::InvalidArgument, op,
               ": output_size entries must be >= 0, got [", hw[0], ", ", hw[1], "]");
  pool::check_input(op, in);
  pool::check_same_dtype(op, in, out);
  const pool::Planes g = pool::make_planes(op, in, out, hw[0], hw[1]);
  if (out.numel() == 0) return;
  PTERUN_CHECK(in_family(in.dtype(), Family::FloatHBF16), ErrorCode::InvalidArgument, op,
               ": dtype ", dtype_name(in.dtype()), " is not supported");
  cuda::nn::launch_pool(ctx, launch_of(PoolKind::AdaptiveAvg, g, in, out, nullptr), op);
}

PoolLaunch resample_launch(PoolKind kind, const pool::Resample& rs, const pool::Planes& g,
                           const Tensor& in, Tensor& out) {
  PoolLaunch l = launch_of(kind, g, in, out, nullptr);
  for (int i = 0; i < 2; ++i) {
    l.has_scale[i] = rs.scale[i].has_value();
    l.scale[i] = rs.scale[i].value_or(0.0);
  }
  return l;
}

// upsample_nearest2d.vec_out(input, output_size?, scale_factors?, *, out)
void upsample_nearest2d_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::upsample_nearest2d.vec_out";
  const Tensor& in = args[0]->to_tensor();
  const pool::Resample rs = pool::resample_args(op, in, *args[1], *args[2]);
  Tensor& out = args[3]->to_tensor();
  pool::check_same_dtype(op, in, out);
  const pool::Planes g = pool::make_planes(op, in, out, rs.size[0], rs.size[1]);
  PTERUN_CHECK(in_family(in.dtype(), Family::RealHBBF16), ErrorCode::InvalidArgument, op,
               ": dtype ", dtype_name(in.dtype()), " is not supported");
  cuda::nn::launch_pool(ctx, resample_launch(PoolKind::Nearest, rs, g, in, out), op);
}

// upsample_bilinear2d.vec_out(input, output_size?, align_corners,
//                             scale_factors?, *, out)
void upsample_bilinear2d_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::upsample_bilinear2d.vec_out";
  const Tensor& in = args[0]->to_tensor();
  const bool align_corners = args[2]->to_bool();
  const pool::Resample rs = pool::resample_args(op, in, *args[1], *args[3]);
  Tensor& out = args[4]->to_tensor();
  pool::check_same_dtype(op, in, out);
  const pool::Planes g = pool::make_planes(op, in, out, rs.size[0], rs.size[1]);
  PTERUN_CHECK(in_family(in.dtype(), Family::FloatHBF16), ErrorCode::InvalidArgument, op,
               ": dtype ", dtype_name(in.dtype()), " is not supported");
  PoolLaunch l = resample_launch(PoolKind::Bilinear, rs, g, in, out);
  l.align_corners = align_corners;
  cuda::nn::launch_pool(ctx, l, op);
}

}  // namespace

void register_pool_ops(KernelRegistry& r) {
  r.add("aten::max_pool2d_with_indices.out", Device::CUDA, &max_pool2d_with_indices_out);
  r.add("aten::avg_pool2d.out", Device::CUDA, &avg_pool2d_out);
  r.add("aten::_adaptive_avg_pool2d.out", Device::CUDA, &adaptive_avg_pool2d_out);
  r.add("aten::upsample_nearest2d.vec_out", Device::CUDA, &upsample_nearest2d_out);
  r.add("aten::upsample_bilinear2d.vec_out", Device::CUDA, &upsample_bilinear2d_out);
}

}  // namespace pterun::kernels::cuda_ops
