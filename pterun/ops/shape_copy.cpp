#include "pterun/ops/shape_copy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::ops {
namespace {

using kernels::Shape;

/// Strides that read `src` broadcast to `sizes` (0 where it repeats);
/// check_broadcasts_to has passed.
Shape broadcast_strides(const Tensor& src, std::span<const int64_t> sizes, const char* op) {
  check_broadcasts_to(src, sizes, op);
  Shape strides;
  const size_t lead = sizes.size() - src.dim();
  for (size_t d = 0; d < sizes.size(); ++d) {
    strides.push_back(d < lead || src.size(d - lead) == 1 ? 0 : src.stride(d - lead));
  }
  return strides;
}

/// True when an integer output type T can hold `s` (ATen's overflow rule:
/// negative values may wrap into unsigned types). Floating outputs round.
template <typename T>
bool scalar_fits(const Scalar& s) {
  if constexpr (std::is_same_v<T, bool> || !std::is_integral_v<T>) {
    return true;
  } else {
    if (s.is_bool()) return true;
    const auto hi = std::numeric_limits<T>::max();
    if (s.is_floating()) {
      double v = s.to_double();
      double lo = std::is_signed_v<T> ? static_cast<double>(std::numeric_limits<T>::lowest())
                                      : -static_cast<double>(hi);
      return std::isfinite(v) && v >= lo && v <= static_cast<double>(hi);
    }
    int64_t v = s.to_int();
    if constexpr (std::is_signed_v<T>) {
      return v >= std::numeric_limits<T>::lowest() && v <= hi;
    } else if constexpr (sizeof(T) == 8) {
      return true;
    } else {
      return v <= static_cast<int64_t>(hi) && v >= -static_cast<int64_t>(hi);
    }
  }
}

template <typename T>
T scalar_as(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool: return kernels::convert<T>(s.to_int() != 0);
    case Scalar::Kind::Int: return kernels::convert<T>(s.to_int());
    case Scalar::Kind::Double: return kernels::convert<T>(s.to_double());
  }
  return T{};
}

}  // namespace

void check_broadcasts_to(const Tensor& src, std::span<const int64_t> sizes, const char* op) {
  PTERUN_CHECK(src.dim() <= sizes.size(), ErrorCode::InvalidArgument, op, ": ", describe(src),
               " has more dimensions than the target shape");
  const size_t lead = sizes.size() - src.dim();
  for (size_t d = lead; d < sizes.size(); ++d) {
    const int64_t s = src.size(d - lead);
    PTERUN_CHECK(s == sizes[d] || s == 1, ErrorCode::InvalidArgument, op, ": ", describe(src),
                 " does not broadcast to size ", sizes[d], " in dimension ", d);
  }
}

void copy_dense(const Mover& m, const KernelContext& ctx, void* dst, const void* src, int64_t n,
                size_t element_size) {
  // Explicit spans: GCC 12 does not convert arrays to spans in calls
  // through a function pointer.
  const int64_t size[1] = {n}, unit[1] = {1};
  m.copy(ctx, dst, std::span<const int64_t>(unit), src, std::span<const int64_t>(unit),
         std::span<const int64_t>(size), element_size);
}

View view_of(const Tensor& t) {
  View v;
  for (size_t d = 0; d < t.dim(); ++d) v.push_back(t.size(d), t.stride(d));
  return v;
}

void copy_view_into(const KernelContext& ctx, Tensor& out, const Tensor& in, const View& view,
                    const char* op, const Mover& m) {
  check_same_dtype(out, in, "out", op);
  kernels::resize_output(out, view.sizes.span(), op);
  if (out.numel() == 0) return;
  const char* src = static_cast<const char*>(in.data()) + view.offset * int64_t(in.element_size());
  m.copy(ctx, out.data(), out.strides(), src, view.strides.span(), out.sizes(), out.element_size());
}

void copy_into_region(KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides,
                      DType dst_dtype, const Tensor& src, const char* op, const Mover& m) {
  if (src.numel() == 0) return;
  if (src.dtype() == dst_dtype) {
    m.copy(ctx, dst, dst_strides, src.data(), src.strides(), src.sizes(), src.element_size());
    return;
  }
  // Convert into scratch laid out like src, then place the bytes.
  Tensor converted(dst_dtype, src.sizes(), src.dim_order());
  converted.set_data(m.scratch(ctx, converted.nbytes()), converted.nbytes());
  convert_copy(ctx, converted, src, op, m);
  m.copy(ctx, dst, dst_strides, converted.data(), converted.strides(), src.sizes(),
         converted.element_size());
}

void convert_copy(const KernelContext& ctx, Tensor& out, const Tensor& src, const char* op,
                  const Mover& m) {
  if (out.numel() == 0) return;
  if (src.dtype() == out.dtype()) {
    Shape strides = broadcast_strides(src, out.sizes(), op);
    m.copy(ctx, out.data(), out.strides(), src.data(), strides.span(), out.sizes(),
           out.element_size());
    return;
  }
  m.convert(ctx, out, src, op);
}

bool is_row_major(const Tensor& t) {
  Shape c = contiguous_strides(t.sizes());
  for (size_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) != 1 && t.stride(d) != c.dims[d]) return false;
  }
  return true;
}

void reshape_copy(KernelContext& ctx, Tensor& out, const Tensor& in, const Mover& m) {
  const int64_t n = in.numel();
  if (n == 0) return;
  const size_t es = in.element_size();
  const bool in_rm = is_row_major(in);
  const bool out_rm = is_row_major(out);
  if (in_rm && out_rm) {
    copy_dense(m, ctx, out.data(), in.data(), n, es);
  } else if (in_rm) {
    Shape src = contiguous_strides(out.sizes());
    m.copy(ctx, out.data(), out.strides(), in.data(), src.span(), out.sizes(), es);
  } else if (out_rm) {
    Shape dst = contiguous_strides(in.sizes());
    m.copy(ctx, out.data(), dst.span(), in.data(), in.strides(), in.sizes(), es);
  } else {
    // Neither side is row-major: gather the input in order through scratch.
    void* tmp = m.scratch(ctx, static_cast<size_t>(n) * es);
    Shape rm_in = contiguous_strides(in.sizes());
    Shape rm_out = contiguous_strides(out.sizes());
    m.copy(ctx, tmp, rm_in.span(), in.data(), in.strides(), in.sizes(), es);
    m.copy(ctx, out.data(), out.strides(), tmp, rm_out.span(), out.sizes(), es);
  }
}

void fill_scalar(const KernelContext& ctx, Tensor& out, const Scalar& value, const char* op,
                 const Mover& m) {
  kernels::visit(out.dtype(), kernels::Family::All, op, [&]<typename T>() {
    PTERUN_CHECK(scalar_fits<T>(value), ErrorCode::InvalidArgument, op, ": value ",
                 value.to_double(), " cannot be converted to ", dtype_name(out.dtype()),
                 " without overflow");
    T v = scalar_as<T>(value);
    m.fill(ctx, out, &v);
  });
}

void check_memory_format(std::optional<int64_t> memory_format, const Tensor& out, const char* op) {
  if (!memory_format) return;
  switch (*memory_format) {
    case 0:  // contiguous_format
    case 1:  // preserve_format
      return;
    case 2:
    case 3:
      PTERUN_CHECK(out.is_channels_last_order() && out.dim() == size_t(*memory_format + 2),
                   ErrorCode::InvalidArgument, op, ": memory format ", *memory_format,
                   " (channels last) needs a channels-last output, got ", describe(out));
      return;
    default:
      throw_error(ErrorCode::InvalidArgument,
                  str_cat(op, ": unknown memory format ", *memory_format));
  }
}

void check_dim_order_arg(std::optional<std::span<const int64_t>> dim_order, const Tensor& out,
                         const char* op) {
  if (!dim_order) return;
  bool same = dim_order->size() == out.dim();
  for (size_t i = 0; same && i < out.dim(); ++i) same = (*dim_order)[i] == out.dim_order()[i];
  PTERUN_CHECK(same, ErrorCode::InvalidArgument, op,
               ": the dim_order argument does not match the output ", describe(out));
}

}  // namespace pterun::ops
