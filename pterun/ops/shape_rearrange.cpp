// Ops that rearrange or pad elements: repeat, flip, roll, tril/triu,
// constant_pad_nd, pixel_shuffle/unshuffle. Each is a few strided copies
// over a view of its input, plus fills for the padded or masked parts.

#include <algorithm>

#include "pterun/core/checked_math.h"
#include "pterun/core/error.h"
#include "pterun/core/value.h"
#include "pterun/ops/shape.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::ops {
namespace {

using kernels::Shape;
using kernels::wrap_dim;

}  // namespace

// repeat.out(Tensor self, SymInt[] repeats, *, Tensor(a!) out): tiles the input.
// Output dimension i is viewed as (repeat r_i, size s_i), so the whole op is
// one copy from the input broadcast over the repeat dimensions.
void repeat_out(KernelContext& ctx, const Tensor& in, IntList repeats, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::repeat.out";
  check_same_dtype(out, in, "out", op);
  PTERUN_CHECK(repeats.size() >= in.dim(), ErrorCode::InvalidArgument, op, ": ", repeats.size(),
               " repeats for ", describe(in), "; need at least one per dimension");
  const size_t lead = repeats.size() - in.dim();
  Shape size;
  for (size_t d = 0; d < repeats.size(); ++d) {
    int64_t s = d < lead ? 1 : in.size(d - lead);
    PTERUN_CHECK(repeats[d] >= 0, ErrorCode::InvalidArgument, op, ": negative repeat ", repeats[d]);
    auto n = checked_mul(uint64_t(repeats[d]), uint64_t(s));
    PTERUN_CHECK(n && *n <= uint64_t(INT64_MAX), ErrorCode::InvalidArgument, op,
                 ": output size overflows");
    size.push_back(int64_t(*n));
  }
  kernels::resize_output(out, size.span(), op);
  if (out.numel() == 0) return;
  Shape sizes, dst, src;
  for (size_t d = 0; d < repeats.size(); ++d) {
    int64_t s = d < lead ? 1 : in.size(d - lead);
    if (repeats[d] > 1) {
      PTERUN_CHECK(sizes.rank < kMaxRank, ErrorCode::NotSupported, op,
                   ": too many repeated dimensions");
      sizes.push_back(repeats[d]);
      dst.push_back(s * out.stride(d));
      src.push_back(0);
    }
    if (s > 1) {
      PTERUN_CHECK(sizes.rank < kMaxRank, ErrorCode::NotSupported, op,
                   ": too many repeated dimensions");
      sizes.push_back(s);
      dst.push_back(out.stride(d));
      src.push_back(in.stride(d - lead));
    }
  }
  m.copy(ctx, out.data(), dst.span(), in.data(), src.span(), sizes.span(), in.element_size());
}

// flip.out(Tensor self, int[] dims, *, Tensor(a!) out): reverses the listed dims.
void flip_out(KernelContext& ctx, const Tensor& in, IntList dims, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::flip.out";
  View v = view_of(in);
  uint32_t seen = 0;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, int64_t(in.dim()), op);
    if (in.dim() == 0) continue;
    PTERUN_CHECK(!(seen & (1u << w)), ErrorCode::InvalidArgument, op, ": dimension ", w,
                 " repeats in dims");
    seen |= 1u << w;
    if (in.size(w) > 0) v.offset += (in.size(w) - 1) * in.stride(w);
    v.strides.dims[w] = -in.stride(w);
  }
  copy_view_into(ctx, out, in, v, op, m);
}

namespace {

/// roll over the flattened tensor: element i of the logical order moves to
/// (i + shift) mod numel.
void roll_flat(const Mover& m, KernelContext& ctx, Tensor& out, const Tensor& in, int64_t shift) {
  const int64_t n = in.numel();
  const size_t es = in.element_size();
  const int64_t s = ((shift % n) + n) % n;
  const bool in_rm = is_row_major(in), out_rm = is_row_major(out);
  char* buf = static_cast<char*>(m.scratch(ctx, 2 * size_t(n) * es));
  const char* src = static_cast<const char*>(in.data());
  if (!in_rm) {
    Shape rm = contiguous_strides(in.sizes());
    m.copy(ctx, buf, rm.span(), in.data(), in.strides(), in.sizes(), es);
    src = buf;
  }
  char* dst = out_rm ? static_cast<char*>(out.data()) : buf + size_t(n) * es;
  // Two dense runs; empty ones copy nothing.
  copy_dense(m, ctx, dst + size_t(s) * es, src, n - s, es);
  copy_dense(m, ctx, dst, src + size_t(n - s) * es, s, es);
  if (!out_rm) {
    Shape rm = contiguous_strides(out.sizes());
    m.copy(ctx, out.data(), out.strides(), dst, rm.span(), out.sizes(), es);
  }
}

}  // namespace

// roll.out(Tensor self, SymInt[1] shifts, int[1] dims=[], *, Tensor(a!) out). Each rolled
// dimension splits into two runs, so the op is 2^k strided copies.
void roll_out(KernelContext& ctx, const Tensor& in, IntList shifts, IntList dims, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::roll.out";
  check_same_dtype(out, in, "out", op);
  if (dims.empty()) {
    PTERUN_CHECK(shifts.size() == 1, ErrorCode::InvalidArgument, op,
                 ": without dims, expects one shift, got ", shifts.size());
  } else {
    PTERUN_CHECK(shifts.size() == dims.size(), ErrorCode::InvalidArgument, op, ": ", shifts.size(),
                 " shifts for ", dims.size(), " dims");
  }
  kernels::resize_output(out, in.sizes(), op);
  if (in.numel() == 0) return;
  if (dims.empty()) {
    roll_flat(m, ctx, out, in, shifts[0]);
    return;
  }
  // Net shift per dimension, in [0, size).
  std::array<int64_t, kMaxRank> shift{};
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], int64_t(in.dim()), op);
    if (in.dim() == 0) continue;
    int64_t n = in.size(d);
    shift[d] = (shift[d] + ((shifts[i] % n) + n) % n) % n;
  }
  std::array<size_t, kMaxRank> rolled{};
  size_t k = 0;
  for (size_t d = 0; d < in.dim(); ++d) {
    if (shift[d] != 0) rolled[k++] = d;
  }
  const size_t es = in.element_size();
  for (uint32_t mask = 0; mask < (1u << k); ++mask) {
    Shape sizes;
    for (size_t d = 0; d < in.dim(); ++d) sizes.push_back(in.size(d));
    int64_t src_off = 0, dst_off = 0;
    for (size_t j = 0; j < k; ++j) {
      size_t d = rolled[j];
      int64_t n = in.size(d), s = shift[d];
      if (mask & (1u << j)) {  // the tail [n - s, n) moves to the front
        sizes.dims[d] = s;
        src_off += (n - s) * in.stride(d);
      } else {  // the head [0, n - s) moves back by s
        sizes.dims[d] = n - s;
        dst_off += s * out.stride(d);
      }
    }
    m.copy(ctx, element_at(out, dst_off), out.strides(),
           static_cast<const char*>(in.data()) + src_off * int64_t(es), in.strides(), sizes.span(),
           es);
  }
}

namespace {

// tril.out / triu.out (Tensor self, int diagonal=0, *, Tensor(a!) out): keeps the elements on
// and below (tril) or above (triu) the diagonal of the last two dimensions, zeroes the rest.
template <bool kUpper>
void triangle_out(KernelContext& ctx, const Tensor& in, int64_t diagonal, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = kUpper ? "aten::triu.out" : "aten::tril.out";
  PTERUN_CHECK(in.dim() >= 2, ErrorCode::InvalidArgument, op, ": expects rank >= 2, got ",
               describe(in));
  copy_view_into(ctx, out, in, view_of(in), op, m);
  if (out.numel() == 0) return;
  const size_t r = out.dim();
  const int64_t rows = out.size(r - 2), cols = out.size(r - 1);
  m.zero_triangle(ctx, out, std::clamp(diagonal, -rows - 1, cols + 1), kUpper);
}

}  // namespace

void tril_out(KernelContext& ctx, const Tensor& in, int64_t diagonal, Tensor& out) {
  triangle_out<false>(ctx, in, diagonal, out);
}

void triu_out(KernelContext& ctx, const Tensor& in, int64_t diagonal, Tensor& out) {
  triangle_out<true>(ctx, in, diagonal, out);
}

// constant_pad_nd.out(Tensor self, SymInt[] pad, Scalar value=0, *, Tensor(a!) out): pad
// pairs (before, after) apply from the last dimension backwards; negative pads crop.
void constant_pad_nd_out(KernelContext& ctx, const Tensor& in, IntList pad, Scalar value,
                         Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::constant_pad_nd.out";
  check_same_dtype(out, in, "out", op);
  PTERUN_CHECK(pad.size() % 2 == 0 && pad.size() / 2 <= in.dim(), ErrorCode::InvalidArgument, op,
               ": padding of length ", pad.size(), " for ", describe(in));
  const size_t rank = in.dim();
  std::array<int64_t, kMaxRank> before{}, after{};
  Shape size;
  for (size_t d = 0; d < rank; ++d) size.push_back(in.size(d));
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    size_t d = rank - 1 - k;
    before[d] = pad[2 * k];
    after[d] = pad[2 * k + 1];
    int64_t n = 0;
    bool overflow = __builtin_add_overflow(in.size(d), before[d], &n) ||
                    __builtin_add_overflow(n, after[d], &n);
    PTERUN_CHECK(!overflow && n >= 0, ErrorCode::InvalidArgument, op, ": padding ", before[d], ", ",
                 after[d], " gives an invalid size in dimension ", d);
    size.dims[d] = n;
  }
  kernels::resize_output(out, size.span(), op);
  fill_scalar(ctx, out, value, op, m);
  // The input part that survives cropping, and where it lands.
  Shape sizes;
  int64_t src_off = 0, dst_off = 0;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t n = in.size(d);
    if (before[d] <= -n || after[d] <= -n) return;  // cropped away
    const int64_t crop_before = std::max<int64_t>(0, -before[d]);
    const int64_t kept = n - crop_before - std::max<int64_t>(0, -after[d]);
    if (kept <= 0) return;
    sizes.push_back(kept);
    src_off += crop_before * in.stride(d);
    dst_off += std::max<int64_t>(0, before[d]) * out.stride(d);
  }
  if (in.numel() == 0 || out.numel() == 0) return;
  m.copy(ctx, element_at(out, dst_off), out.strides(),
         static_cast<const char*>(in.data()) + src_off * int64_t(in.element_size()), in.strides(),
         sizes.span(), in.element_size());
}

namespace {

/// Shared checks of pixel_shuffle / pixel_unshuffle; returns the factor.
int64_t pixel_factor(const Tensor& in, int64_t factor, const char* op) {
  PTERUN_CHECK(in.dim() >= 3, ErrorCode::InvalidArgument, op, ": expects rank >= 3, got ",
               describe(in));
  PTERUN_CHECK(factor > 0 && factor <= (int64_t{1} << 31), ErrorCode::InvalidArgument, op,
               ": invalid factor ", factor);
  return factor;
}

}  // namespace

// pixel_shuffle.out(Tensor self, int upscale_factor, *, Tensor(a!) out):
// [..., C*r*r, H, W] -> [..., C, H*r, W*r], out[c, h*r+i, w*r+j] = in[c*r*r + i*r + j, h, w].
void pixel_shuffle_out(KernelContext& ctx, const Tensor& in, int64_t upscale_factor, Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::pixel_shuffle.out";
  const int64_t r = pixel_factor(in, upscale_factor, op);
  const size_t n = in.dim();
  const int64_t c = in.size(n - 3), h = in.size(n - 2), w = in.size(n - 1);
  PTERUN_CHECK(c % (r * r) == 0, ErrorCode::InvalidArgument, op, ": channels ", c,
               " are not divisible by ", r * r);
  Shape size;
  for (size_t d = 0; d + 3 < n; ++d) size.push_back(in.size(d));
  size.push_back(c / (r * r));
  size.push_back(h * r);
  size.push_back(w * r);
  check_same_dtype(out, in, "out", op);
  kernels::resize_output(out, size.span(), op);
  if (out.numel() == 0) return;
  // Iterate (lead..., c, h, i, w, j).
  View v;
  Shape dst;
  for (size_t d = 0; d + 3 < n; ++d) {
    v.push_back(in.size(d), in.stride(d));
    dst.push_back(out.stride(d));
  }
  const int64_t ic = in.stride(n - 3), ih = in.stride(n - 2), iw = in.stride(n - 1);
  const int64_t oc = out.stride(n - 3), oh = out.stride(n - 2), ow = out.stride(n - 1);
  v.push_back(c / (r * r), ic * r * r), dst.push_back(oc);
  v.push_back(h, ih), dst.push_back(oh * r);
  v.push_back(r, ic * r), dst.push_back(oh);
  v.push_back(w, iw), dst.push_back(ow * r);
  v.push_back(r, ic), dst.push_back(ow);
  m.copy(ctx, out.data(), dst.span(), in.data(), v.strides.span(), v.sizes.span(),
         in.element_size());
}

// pixel_unshuffle.out(Tensor self, int downscale_factor, *, Tensor(a!) out):
// [..., C, H*r, W*r] -> [..., C*r*r, H, W], the inverse of pixel_shuffle.
void pixel_unshuffle_out(KernelContext& ctx, const Tensor& in, int64_t downscale_factor,
                         Tensor& out) {
  const Mover& m = mover(ctx);
  const char* op = "aten::pixel_unshuffle.out";
  const int64_t r = pixel_factor(in, downscale_factor, op);
  const size_t n = in.dim();
  const int64_t c = in.size(n - 3), h = in.size(n - 2), w = in.size(n - 1);
  PTERUN_CHECK(h % r == 0 && w % r == 0, ErrorCode::InvalidArgument, op, ": spatial size ", h, "x",
               w, " is not divisible by ", r);
  auto channels = checked_mul(uint64_t(c), uint64_t(r * r));
  PTERUN_CHECK(channels && *channels <= uint64_t(INT64_MAX), ErrorCode::InvalidArgument, op,
               ": output channels overflow");
  Shape size;
  for (size_t d = 0; d + 3 < n; ++d) size.push_back(in.size(d));
  size.push_back(int64_t(*channels));
  size.push_back(h / r);
  size.push_back(w / r);
  check_same_dtype(out, in, "out", op);
  kernels::resize_output(out, size.span(), op);
  if (out.numel() == 0) return;
  // Iterate (lead..., c, i, j, h, w).
  View v;
  Shape dst;
  for (size_t d = 0; d + 3 < n; ++d) {
    v.push_back(in.size(d), in.stride(d));
    dst.push_back(out.stride(d));
  }
  const int64_t ic = in.stride(n - 3), ih = in.stride(n - 2), iw = in.stride(n - 1);
  const int64_t oc = out.stride(n - 3), oh = out.stride(n - 2), ow = out.stride(n - 1);
  v.push_back(c, ic), dst.push_back(oc * r * r);
  v.push_back(r, ih), dst.push_back(oc * r);
  v.push_back(r, iw), dst.push_back(oc);
  v.push_back(h / r, ih * r), dst.push_back(oh);
  v.push_back(w / r, iw * r), dst.push_back(ow);
  m.copy(ctx, out.data(), dst.span(), in.data(), v.strides.span(), v.sizes.span(),
         in.element_size());
}

}  // namespace pterun::ops
