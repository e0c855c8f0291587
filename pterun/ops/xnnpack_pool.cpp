// The pooling and resizing xnnpack:: operators (xnnpack.h): an NHWC
// activation is handed to the pool family as the NCHW tensor with
// channels-last dim order over the same bytes. XNNPACK's padding may be
// asymmetric (ceil-mode max pooling pads the bottom and right): the window
// starts at the top / left padding and the output size counts both sides;
// the pool kernels clip windows to the input.

#include <array>

#include "pterun/core/error.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/pool.h"
#include "pterun/ops/reduce.h"
#include "pterun/ops/xnnpack.h"
#include "pterun/ops/xnnpack_layout.h"

namespace pterun::ops {
namespace {

using xnn::check_float;
using xnn::check_list;
using xnn::In;
using xnn::Out;
using xnn::resize_memory;

const PoolBackend& pool(const KernelContext& ctx) {
  return *backend(ctx).pool;
}

/// The NHWC input's memory-order view, checked: 4-D, float (or, with
/// `int8_ok`, int8), with out of its dtype.
Tensor nhwc_input(const char* op, const Tensor& in, const Tensor& out, bool int8_ok = false) {
  if (int8_ok) {
    xnn::check_value(in, "input", op);
    xnn::check_value(out, "out", op, &in);
  } else {
    check_float(in, "input", op);
    check_float(out, "out", op, &in);
  }
  const In i_v(in);
  const Tensor& v = *i_v;
  PTERUN_CHECK(v.dim() == 4, ErrorCode::InvalidArgument, op, ": input must be 4-D (NHWC), got ",
               describe(v));
  return v;
}

/// Output size along one dim of a window of `k` (dilation d) at stride `s`
/// over `in` padded by `before` and `after`.
int64_t pooled(const char* op, int64_t in, int64_t before, int64_t after, int64_t k, int64_t s,
               int64_t d) {
  const int64_t span = in + before + after - d * (k - 1) - 1;
  PTERUN_CHECK(in > 0 && span >= 0, ErrorCode::InvalidArgument, op, ": input size ", in,
               " (padding ", before, " and ", after, ") is too small for the window (size ", k,
               ", dilation ", d, ")");
  return span / s + 1;
}

/// Planes of an NCHW-viewed input and output.
Planes planes(const Tensor& in, const Tensor& out) {
  Planes g;
  g.n = in.size(0);
  g.c = in.size(1);
  g.ih = in.size(2);
  g.iw = in.size(3);
  g.oh = out.size(2);
  g.ow = out.size(3);
  g.in = strides4(in);
  g.out = strides4(out);
  g.channels_inner = g.c > 1 && g.in[1] == 1;
  return g;
}

}  // namespace

void xnn_avg_pooling2d(KernelContext& ctx, const Tensor& in, IntList padding, IntList pooling,
                       IntList stride, double out_min, double out_max, Tensor& out) {
  const char* op = "xnnpack::avg_pooling2d";
  const Tensor vi = nhwc_input(op, in, out);
  check_list(padding, 4, 0, "padding", op);
  check_list(pooling, 2, 1, "pooling", op);
  check_list(stride, 2, 1, "stride", op);
  const std::array<int64_t, 4> dims{
      vi.size(0), pooled(op, vi.size(1), padding[0], padding[2], pooling[0], stride[0], 1),
      pooled(op, vi.size(2), padding[3], padding[1], pooling[1], stride[1], 1), vi.size(3)};
  const Out o_vo = resize_memory(out, dims, op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0) return;
  const Tensor a = xnn::nchw(vi);
  Tensor b = xnn::nchw(vo);
  Window w;
  w.k = {pooling[0], pooling[1]};
  w.s = {stride[0], stride[1]};
  w.p = {padding[0], padding[3]};
  // XNNPACK never counts padding in an average.
  pool(ctx).avg_pool(ctx, {a, b, w, planes(a, b), false, std::nullopt});
  xnn::clamp_output(ctx, vo, out_min, out_max, op);
}

void xnn_max_pooling2d(KernelContext& ctx, const Tensor& in, IntList padding, IntList pooling,
                       IntList stride, IntList dilation, double out_min, double out_max,
                       Tensor& out) {
  const char* op = "xnnpack::max_pooling2d";
  const Tensor vi = nhwc_input(op, in, out, /*int8_ok=*/true);
  check_list(padding, 4, 0, "padding", op);
  check_list(pooling, 2, 1, "pooling", op);
  check_list(stride, 2, 1, "stride", op);
  check_list(dilation, 2, 1, "dilation", op);
  const std::array<int64_t, 4> dims{
      vi.size(0),
      pooled(op, vi.size(1), padding[0], padding[2], pooling[0], stride[0], dilation[0]),
      pooled(op, vi.size(2), padding[3], padding[1], pooling[1], stride[1], dilation[1]),
      vi.size(3)};
  const Out o_vo = resize_memory(out, dims, op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0) return;
  const Tensor a = xnn::nchw(vi);
  Tensor b = xnn::nchw(vo);
  Window w;
  w.k = {pooling[0], pooling[1]};
  w.s = {stride[0], stride[1]};
  w.p = {padding[0], padding[3]};
  w.d = {dilation[0], dilation[1]};
  Tensor no_indices(DType::Int64, b.sizes());  // no data: the values-only kernel stores none
  pool(ctx).max_pool_values(ctx, {a, b, no_indices, w, planes(a, b), {0, 0, 0, 0}});
  xnn::clamp_output(ctx, vo, out_min, out_max, op);
}

void xnn_argmax_pooling2d(KernelContext& ctx, const Tensor& in, IntList padding, IntList pooling,
                          Tensor& out, Tensor& indices) {
  const char* op = "xnnpack::argmax_pooling2d";
  const Tensor vi = nhwc_input(op, in, out);
  check_list(padding, 4, 0, "padding", op);
  check_list(pooling, 2, 1, "pooling", op);
  PTERUN_CHECK(indices.dtype() == DType::Int32 || indices.dtype() == DType::Int64,
               ErrorCode::InvalidArgument, op, ": indices must be int32 or int64, got ",
               describe(indices));
  const std::array<int64_t, 4> dims{
      vi.size(0), pooled(op, vi.size(1), padding[0], padding[2], pooling[0], pooling[0], 1),
      pooled(op, vi.size(2), padding[3], padding[1], pooling[1], pooling[1], 1), vi.size(3)};
  const Out o_vo = resize_memory(out, dims, op);
  Tensor& vo = *o_vo;
  const Out o_vx = resize_memory(indices, dims, op);
  Tensor& vx = *o_vx;
  if (vo.numel() == 0) return;
  const Tensor a = xnn::nchw(vi);
  Tensor b = xnn::nchw(vo);
  Tensor c = xnn::nchw(vx);
  Window w;
  w.k = {pooling[0], pooling[1]};
  w.s = w.k;
  w.p = {padding[0], padding[3]};
  pool(ctx).argmax_pool(ctx, {a, b, c, w, planes(a, b), strides4(c)});
}

void xnn_global_avg_pooling2d(KernelContext& ctx, const Tensor& in, bool keep_dims, double out_min,
                              double out_max, Tensor& out) {
  const char* op = "xnnpack::global_avg_pooling2d";
  const Tensor vi = nhwc_input(op, in, out);
  const int64_t n = vi.size(0), c = vi.size(3);
  PTERUN_CHECK(vi.size(1) > 0 && vi.size(2) > 0, ErrorCode::InvalidArgument, op, ": input ",
               describe(vi), " has no pixels to average");
  const std::array<int64_t, 4> kept{n, 1, 1, c};
  const std::array<int64_t, 2> flat{n, c};
  const Out o_vo = keep_dims ? resize_memory(out, kept, op) : resize_memory(out, flat, op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0) return;
  // The mean over the pixels as a reduction, which reads the NHWC input
  // once in memory order (a pool per channel would walk all of it once per
  // channel: 25x slower for 32 channels of 32x32).
  const std::array<int64_t, 2> pixels{1, 2};
  mean_dim_out(ctx, vi, IntList(pixels), keep_dims, std::nullopt, vo);
  xnn::clamp_output(ctx, vo, out_min, out_max, op);
}

void xnn_static_resize_bilinear2d(KernelContext& ctx, const Tensor& in, int64_t new_height,
                                  int64_t new_width, bool align_corners, Tensor& out) {
  const char* op = "xnnpack::static_resize_bilinear2d";
  const Tensor vi = nhwc_input(op, in, out);
  PTERUN_CHECK(new_height > 0 && new_width > 0 && new_height < (int64_t{1} << 24) &&
                   new_width < (int64_t{1} << 24),
               ErrorCode::InvalidArgument, op, ": new size [", new_height, ", ", new_width,
               "] must be positive and below 2^24");
  PTERUN_CHECK(vi.size(1) > 0 && vi.size(2) > 0, ErrorCode::InvalidArgument, op, ": input ",
               describe(vi), " has no pixels");
  const std::array<int64_t, 4> dims{vi.size(0), new_height, new_width, vi.size(3)};
  const Out o_vo = resize_memory(out, dims, op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0) return;
  const Tensor a = xnn::nchw(vi);
  Tensor b = xnn::nchw(vo);
  pool(ctx).upsample_bilinear(ctx, {a, b, planes(a, b), {}, align_corners});
}

}  // namespace pterun::ops
