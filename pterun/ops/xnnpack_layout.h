#pragma once

// How the xnnpack:: front-ends (xnnpack.h) see their tensors: in memory
// order, as XNNPACK does. Internal to ops/.

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>

#include "pterun/core/tensor.h"
#include "pterun/kernels/kernel.h"

namespace pterun::ops::xnn {

/// True when t's dim order is 0..rank-1 (inline: every node asks for
/// every tensor on every call).
inline bool in_memory_order(const Tensor& t) {
  const auto order = t.dim_order();
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != i) return false;
  }
  return true;
}

/// A tensor with its dims in memory order (its sizes permuted by its dim
/// order), contiguous, over the same bytes: the tensor itself when its dim
/// order is already the identity (most are: one per node and call, so
/// making none is worth it), else a view it holds; a 0-d tensor is seen as
/// [1]. Neither copied nor moved: it may point into itself.
template <bool kMutable>
class Ordered {
 public:
  using Ref = std::conditional_t<kMutable, Tensor&, const Tensor&>;

  explicit Ordered(Ref t) : Ordered(t, t.dim() > 0 && in_memory_order(t)) {}
  /// With `in_order`, what the caller found of t (no view then).
  Ordered(Ref t, bool in_order) : p_(&t) {
    if (in_order) return;
    init_view(t);
    p_ = &*view_;
  }
  Ordered(const Ordered&) = delete;
  Ordered& operator=(const Ordered&) = delete;

  Ref operator*() const { return *p_; }
  std::remove_reference_t<Ref>* operator->() const { return p_; }

 private:
  void init_view(const Tensor& t);

  std::optional<Tensor> view_;
  std::remove_reference_t<Ref>* p_;
};

/// An input's memory-order view.
using In = Ordered<false>;
/// An output's memory-order view (resize_memory gives it).
using Out = Ordered<true>;

/// Resizes `t` so that its dims in memory order are `dims` (through the
/// inverse of its dim order) and returns its memory-order view. Error
/// InvalidArgument (naming `op`) for another rank, or a static or bounded
/// tensor that cannot take the shape.
Out resize_memory(Tensor& t, std::span<const int64_t> dims, const char* op);

/// The NHWC memory-order tensor `t` ([N, H, W, C]) as an NCHW tensor in
/// channels-last order over the same bytes.
Tensor nchw(const Tensor& t);

/// Output size of a forward convolution along one dim (input `in`, kernel
/// `k`, padding `pad` on both sides, stride `s`, dilation `d`). Error
/// InvalidArgument when the kernel is larger than the padded input.
int64_t conv_size(const char* op, int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d);

/// check_float's error.
[[noreturn]] void fail_float(const Tensor& t, const char* what, const char* op, const Tensor* like);

/// Error InvalidArgument unless `t` is float32, float16 or bfloat16 and,
/// when `like` is given, of like's dtype.
inline void check_float(const Tensor& t, const char* what, const char* op,
                        const Tensor* like = nullptr) {
  const DType d = t.dtype();
  const bool ok = d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16;
  if (!ok || (like != nullptr && like->dtype() != d)) [[unlikely]] {
    fail_float(t, what, op, like);
  }
}

/// check_float, or int8 (with `like`: like int8 too): a quantized activation
/// of a static int8 graph, which the shape nodes, max pooling and clamps
/// take as it is (their input and output share quantization parameters).
inline void check_value(const Tensor& t, const char* what, const char* op,
                        const Tensor* like = nullptr) {
  if (t.dtype() == DType::Int8 && (like == nullptr || like->dtype() == DType::Int8)) return;
  check_float(t, what, op, like);
}

/// A node's fused output clamp [lo, hi] as the bounds it sets: none for an
/// infinite end.
struct OutputClamp {
  std::optional<double> lo, hi;
};
OutputClamp output_clamp(double lo, double hi);

/// clamp_output's work once a bound is finite.
void clamp_bounded(kernels::KernelContext& ctx, Tensor& out, double lo, double hi, const char* op);

/// Clamps `out` in place to [lo, hi], a node's fused output clamp; nothing
/// when both bounds are infinite (inline: most nodes have no clamp).
inline void clamp_output(kernels::KernelContext& ctx, Tensor& out, double lo, double hi,
                         const char* op) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (lo == -kInf && hi == kInf) return;
  clamp_bounded(ctx, out, lo, hi, op);
}

/// Error InvalidArgument unless `list` has `n` entries, each in min..INT32_MAX
/// (XNNPACK's parameters are 32-bit, and sizes computed from them stay far
/// from overflowing).
void check_list(std::span<const int64_t> list, size_t n, int64_t min, const char* what,
                const char* op);

}  // namespace pterun::ops::xnn
