#include "pterun/ops/xnnpack_layout.h"

#include <array>
#include <climits>
#include <cmath>
#include <optional>

#include "pterun/core/error.h"
#include "pterun/core/str_cat.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/elementwise.h"

namespace pterun::ops::xnn {

template <bool kMutable>
void Ordered<kMutable>::init_view(const Tensor& t) {
  std::array<int64_t, kMaxRank> dims{};
  size_t rank = t.dim();
  if (rank == 0) {
    dims[0] = 1;
    rank = 1;
  } else {
    for (size_t j = 0; j < rank; ++j) dims[j] = t.size(t.dim_order()[j]);
  }
  view_.emplace(t.dtype(), std::span<const int64_t>(dims.data(), rank));
  view_->set_data(t.data(), t.capacity());
}

template class Ordered<false>;
template class Ordered<true>;

Out resize_memory(Tensor& t, std::span<const int64_t> dims, const char* op) {
  if (t.dim() == 0) {
    PTERUN_CHECK(dims.size() == 1 && dims[0] == 1, ErrorCode::InvalidArgument, op,
                 ": the 0-d output cannot hold a result of shape ", shape_text(dims));
    return Out(t);
  }
  PTERUN_CHECK(dims.size() == t.dim(), ErrorCode::InvalidArgument, op, ": the result has ",
               dims.size(), " dims but the output ", describe(t), " has ", t.dim());
  const bool in_order = in_memory_order(t);
  if (in_order) {
    kernels::resize_output(t, dims, op);
  } else {
    std::array<int64_t, kMaxRank> sizes{};
    for (size_t j = 0; j < dims.size(); ++j) sizes[t.dim_order()[j]] = dims[j];
    kernels::resize_output(t, {sizes.data(), dims.size()}, op);
  }
  return Out(t, in_order);
}

void fail_float(const Tensor& t, const char* what, const char* op, const Tensor* like) {
  const DType d = t.dtype();
  PTERUN_CHECK(d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16,
               ErrorCode::InvalidArgument, op, ": ", what,
               " must be float32, float16 or bfloat16, got ", describe(t));
  throw_error(ErrorCode::InvalidArgument,
              str_cat(op, ": ", what, " ", describe(t), " must have the input's dtype ",
                      dtype_name(like->dtype())));
}

int64_t conv_size(const char* op, int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d) {
  const int64_t span = in + 2 * pad - d * (k - 1) - 1;
  PTERUN_CHECK(span >= 0, ErrorCode::InvalidArgument, op, ": the kernel (size ", k, ", dilation ",
               d, ") is larger than the padded input (", in + 2 * pad, ")");
  return span / s + 1;
}

Tensor nchw(const Tensor& t) {
  static constexpr std::array<uint8_t, 4> kChannelsLast{0, 2, 3, 1};
  const std::array<int64_t, 4> sizes{t.size(0), t.size(3), t.size(1), t.size(2)};
  Tensor v(t.dtype(), sizes, kChannelsLast);
  v.set_data(t.data(), t.capacity());
  return v;
}

OutputClamp output_clamp(double lo, double hi) {
  OutputClamp c;
  if (!(std::isinf(lo) && lo < 0)) c.lo = lo;
  if (!(std::isinf(hi) && hi > 0)) c.hi = hi;
  return c;
}

void clamp_bounded(kernels::KernelContext& ctx, Tensor& out, double lo, double hi, const char* op) {
  const OutputClamp c = output_clamp(lo, hi);
  if ((!c.lo && !c.hi) || out.numel() == 0) return;
  std::optional<Scalar> min, max;
  if (c.lo) min = Scalar::from_double(*c.lo);
  if (c.hi) max = Scalar::from_double(*c.hi);
  backend(ctx).elementwise->clamp(ctx, {out, min, max, out.dtype(), out, op});
}

void check_list(std::span<const int64_t> list, size_t n, int64_t min, const char* what,
                const char* op) {
  PTERUN_CHECK(list.size() == n, ErrorCode::InvalidArgument, op, ": ", what, " must have ", n,
               " entries, got ", list.size());
  for (int64_t v : list) {
    PTERUN_CHECK(v >= min && v <= INT32_MAX, ErrorCode::InvalidArgument, op, ": ", what,
                 " entries must be in ", min, "..", INT32_MAX, ", got ", v);
  }
}

}  // namespace pterun::ops::xnn
