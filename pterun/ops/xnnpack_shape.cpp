// The data-movement xnnpack:: operators (xnnpack.h): transpose, reshape,
// slice, constant pad, concatenate, copy and convert, as strided copies of
// memory-order views through the device's Mover.

#include <array>

#include "pterun/core/error.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/shape.h"
#include "pterun/ops/shape_copy.h"
#include "pterun/ops/xnnpack.h"
#include "pterun/ops/xnnpack_layout.h"

namespace pterun::ops {
namespace {

using xnn::check_float;
using xnn::In;
using xnn::Out;
using xnn::resize_memory;

/// Checks in and out: any one float dtype, or int8.
void check_io(const char* op, const Tensor& in, const Tensor& out) {
  xnn::check_value(in, "input", op);
  xnn::check_value(out, "out", op, &in);
}

void check_rank_list(const char* op, const char* what, IntList list, size_t rank) {
  PTERUN_CHECK(list.size() == rank, ErrorCode::InvalidArgument, op, ": ", what, " has ",
               list.size(), " entries for a ", rank, "-d input");
}

}  // namespace

void xnn_static_transpose(KernelContext& ctx, const Tensor& in, IntList perm, Tensor& out) {
  const char* op = "xnnpack::static_transpose";
  check_io(op, in, out);
  const In i_vi(in);
  const Tensor& vi = *i_vi;
  const size_t r = vi.dim();
  check_rank_list(op, "perm", perm, r);
  std::array<bool, kMaxRank> seen{};
  kernels::Shape dims, src_strides;
  for (int64_t p : perm) {
    PTERUN_CHECK(p >= 0 && static_cast<size_t>(p) < r && !seen[p], ErrorCode::InvalidArgument, op,
                 ": perm is not a permutation of 0..", r - 1);
    seen[p] = true;
    dims.push_back(vi.size(p));
    src_strides.push_back(vi.stride(p));
  }
  const Out o_vo = resize_memory(out, dims.span(), op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0) return;
  mover(ctx).copy(ctx, vo.data(), vo.strides(), vi.data(), src_strides.span(), vo.sizes(),
                  vo.element_size());
}

void xnn_static_reshape(KernelContext& ctx, const Tensor& in, IntList new_shape, Tensor& out) {
  const char* op = "xnnpack::static_reshape";
  check_io(op, in, out);
  const In i_vi(in);
  const Tensor& vi = *i_vi;
  PTERUN_CHECK(new_shape.size() <= kMaxRank, ErrorCode::InvalidArgument, op, ": new_shape has ",
               new_shape.size(), " dims");
  kernels::Shape dims;
  int64_t known = 1;
  int inferred = -1;
  for (size_t d = 0; d < new_shape.size(); ++d) {
    const int64_t s = new_shape[d];
    PTERUN_CHECK(s >= 0 && s <= INT32_MAX, ErrorCode::InvalidArgument, op, ": new_shape entry ", s,
                 " is out of range");
    if (s == 0) {
      PTERUN_CHECK(inferred < 0, ErrorCode::InvalidArgument, op,
                   ": new_shape infers more than one dim (0 entries)");
      inferred = static_cast<int>(d);
    } else {
      PTERUN_CHECK(!__builtin_mul_overflow(known, s, &known), ErrorCode::InvalidArgument, op,
                   ": new_shape ", shape_text(new_shape), " overflows");
    }
    dims.push_back(s);
  }
  if (inferred >= 0) {
    PTERUN_CHECK(known > 0 && vi.numel() % known == 0, ErrorCode::InvalidArgument, op,
                 ": cannot infer a dim of new_shape ", shape_text(new_shape), " for ",
                 describe(vi));
    dims.dims[inferred] = vi.numel() / known;
  } else {
    PTERUN_CHECK(known == vi.numel(), ErrorCode::InvalidArgument, op, ": new_shape ",
                 shape_text(new_shape), " does not hold the ", vi.numel(), " elements of ",
                 describe(vi));
  }
  const Out o_vo = resize_memory(out, dims.span(), op);
  Tensor& vo = *o_vo;
  // Internal reshapes share their input's bytes (delegates/xnnpack_lowering.cpp).
  if (vo.numel() == 0 || vo.data() == vi.data()) return;
  copy_dense(mover(ctx), ctx, vo.data(), vi.data(), vi.numel(), vi.element_size());
}

void xnn_static_slice(KernelContext& ctx, const Tensor& in, IntList offsets, IntList sizes,
                      Tensor& out) {
  const char* op = "xnnpack::static_slice";
  check_io(op, in, out);
  const In i_vi(in);
  const Tensor& vi = *i_vi;
  const size_t r = vi.dim();
  check_rank_list(op, "offsets", offsets, r);
  check_rank_list(op, "sizes", sizes, r);
  kernels::Shape dims;
  int64_t start = 0;
  for (size_t d = 0; d < r; ++d) {
    const int64_t off = offsets[d], size = sizes[d] == 0 ? vi.size(d) - off : sizes[d];
    PTERUN_CHECK(off >= 0 && sizes[d] >= 0 && off <= vi.size(d) && size <= vi.size(d) - off,
                 ErrorCode::InvalidArgument, op, ": offset ", off, " and size ", sizes[d],
                 " do not fit dim ", d, " of ", describe(vi));
    dims.push_back(size);
    start += off * vi.stride(d);
  }
  const Out o_vo = resize_memory(out, dims.span(), op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0) return;
  mover(ctx).copy(ctx, vo.data(), vo.strides(), element_at(vi, start), vi.strides(), vo.sizes(),
                  vo.element_size());
}

void xnn_static_constant_pad(KernelContext& ctx, const Tensor& in, IntList pre, IntList post,
                             double padding_value, Tensor& out) {
  const char* op = "xnnpack::static_constant_pad";
  check_io(op, in, out);
  const In i_vi(in);
  const Tensor& vi = *i_vi;
  const size_t r = vi.dim();
  check_rank_list(op, "pre_paddings", pre, r);
  check_rank_list(op, "post_paddings", post, r);
  kernels::Shape dims;
  for (size_t d = 0; d < r; ++d) {
    PTERUN_CHECK(pre[d] >= 0 && post[d] >= 0 && pre[d] <= INT32_MAX && post[d] <= INT32_MAX,
                 ErrorCode::InvalidArgument, op, ": paddings of dim ", d, " (", pre[d], ", ",
                 post[d], ") are out of range");
    dims.push_back(vi.size(d) + pre[d] + post[d]);
  }
  const Out o_vo = resize_memory(out, dims.span(), op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0) return;
  const Mover& m = mover(ctx);
  fill_scalar(ctx, vo, Scalar::from_double(padding_value), op, m);
  if (vi.numel() == 0) return;
  int64_t start = 0;
  for (size_t d = 0; d < r; ++d) start += pre[d] * vo.stride(d);
  m.copy(ctx, element_at(vo, start), vo.strides(), vi.data(), vi.strides(), vi.sizes(),
         vi.element_size());
}

void xnn_concatenate(KernelContext& ctx, TensorList inputs, int64_t axis, Tensor& out) {
  const char* op = "xnnpack::concatenate";
  PTERUN_CHECK(!inputs.empty() && inputs[0] != nullptr, ErrorCode::InvalidArgument, op,
               ": no inputs");
  check_io(op, *inputs[0], out);
  const In i_first(*inputs[0]);
  const Tensor& first = *i_first;
  const size_t r = first.dim();
  PTERUN_CHECK(axis >= 0 && static_cast<size_t>(axis) < r, ErrorCode::InvalidArgument, op,
               ": axis ", axis, " is not a dim of the ", r, "-d inputs");
  const auto ax = static_cast<size_t>(axis);
  kernels::Shape dims;
  for (size_t d = 0; d < r; ++d) dims.push_back(d == ax ? 0 : first.size(d));
  for (const Tensor* t : inputs) {
    PTERUN_CHECK(t != nullptr, ErrorCode::InvalidArgument, op, ": an input is missing");
    xnn::check_value(*t, "input", op, inputs[0]);
    const In i_v(*t);
    const Tensor& v = *i_v;
    PTERUN_CHECK(v.dim() == r, ErrorCode::InvalidArgument, op, ": inputs ", describe(first),
                 " and ", describe(v), " differ in rank");
    for (size_t d = 0; d < r; ++d) {
      PTERUN_CHECK(d == ax || v.size(d) == first.size(d), ErrorCode::InvalidArgument, op,
                   ": inputs ", describe(first), " and ", describe(v), " differ in dim ", d);
    }
    dims.dims[ax] += v.size(ax);
  }
  const Out o_vo = resize_memory(out, dims.span(), op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0) return;
  const Mover& m = mover(ctx);
  int64_t at = 0;
  for (const Tensor* t : inputs) {
    const In i_v(*t);
    const Tensor& v = *i_v;
    if (v.numel() > 0) {
      PTERUN_CHECK(v.data() != vo.data(), ErrorCode::InvalidArgument, op,
                   ": an input is the output");
      m.copy(ctx, element_at(vo, at * vo.stride(ax)), vo.strides(), v.data(), v.strides(),
             v.sizes(), v.element_size());
    }
    at += v.size(ax);
  }
}

void xnn_copy(KernelContext& ctx, const Tensor& in, Tensor& out) {
  const char* op = "xnnpack::copy";
  check_io(op, in, out);
  const In i_vi(in);
  const Tensor& vi = *i_vi;
  const Out o_vo = resize_memory(out, vi.sizes(), op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0 || vo.data() == vi.data()) return;
  copy_dense(mover(ctx), ctx, vo.data(), vi.data(), vi.numel(), vi.element_size());
}

void xnn_convert(KernelContext& ctx, const Tensor& in, Tensor& out) {
  const char* op = "xnnpack::convert";
  check_float(in, "input", op);
  check_float(out, "out", op);
  const In i_vi(in);
  const Tensor& vi = *i_vi;
  const Out o_vo = resize_memory(out, vi.sizes(), op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0) return;
  convert_copy(ctx, vo, vi, op, mover(ctx));
}

}  // namespace pterun::ops
