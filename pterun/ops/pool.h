#pragma once

// The pool family: 2-D max, average and adaptive average pooling and
// nearest / bilinear upsampling, on 3-D [C, H, W] or 4-D [N, C, H, W]
// tensors of any dim order. The front-ends (pool.cpp) check the arguments,
// resize the outputs and work out the (N, C, H, W) geometry; a backend
// computes from these argument structs.

#include <array>
#include <cstdint>
#include <optional>

#include "pterun/core/tensor.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

/// Input and output of a 2-D pooling op as (N, C, H, W) sizes and strides
/// (N's stride is 0 for 3-D tensors).
struct Planes {
  int64_t n = 1, c = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  std::array<int64_t, 4> in{}, out{};
  bool channels_inner = false;  // channels are the input's innermost dim
};

/// Kernel / stride / padding / dilation of a pooling op, per spatial dim.
struct Window {
  std::array<int64_t, 2> k{}, s{}, p{}, d{1, 1};
};

/// Strides of a 3-D or 4-D tensor over (N, C, H, W); N's is 0 for 3-D.
inline std::array<int64_t, 4> strides4(const Tensor& t) {
  const size_t r = t.dim();
  return {r == 4 ? t.stride(0) : 0, t.stride(r - 3), t.stride(r - 2), t.stride(r - 1)};
}

/// Max pooling with torch's flat H * W indices (int64, strides `is` over
/// (N, C, H, W)); out has in's dtype, one of RealHBF16.
struct MaxPoolArgs {
  const Tensor& in;
  Tensor& out;
  Tensor& indices;
  Window w;
  Planes g;
  std::array<int64_t, 4> is;
};

/// XNNPACK's argmax pooling (xnnpack::argmax_pooling2d): windows of w.k at
/// stride w.k from -w.p (w.s is w.k), positions outside the input reading
/// the nearest border pixel, visited column by column (x outer, y inner);
/// out is the first strictly largest value of each window and indices (int32
/// or int64, strides `is` over (N, C, H, W)) its position x * k_h + y. A
/// floating dtype; the input's H and W are not empty.
struct ArgMaxPoolArgs {
  const Tensor& in;
  Tensor& out;
  Tensor& indices;
  Window w;
  Planes g;
  std::array<int64_t, 4> is;
};

/// Average pooling; in's dtype is floating or int64 (which sums and
/// divides as int64). `divisor`, when given, is nonzero.
struct AvgPoolArgs {
  const Tensor& in;
  Tensor& out;
  Window w;
  Planes g;
  bool count_include_pad;
  std::optional<int64_t> divisor;
};

/// Adaptive average pooling: window o covers [floor(o * in / out),
/// ceil((o + 1) * in / out)); a floating dtype, out not empty.
struct AdaptiveAvgPoolArgs {
  const Tensor& in;
  Tensor& out;
  Planes g;
};

/// Nearest (RealHBBF16) or bilinear (floating) resampling of a 4-D input
/// to g's output size; `scale` holds the scale factors when the op was
/// given them (torch's source-index rules use them).
struct ResampleArgs {
  const Tensor& in;
  Tensor& out;
  Planes g;
  std::array<std::optional<double>, 2> scale;
  bool align_corners;  // bilinear only
};

struct PoolBackend {
  void (*max_pool)(KernelContext& ctx, const MaxPoolArgs& a);
  /// max_pool where nothing reads the indices: out must be written, the
  /// indices may be left as they were; an indices tensor without data is
  /// never written.
  void (*max_pool_values)(KernelContext& ctx, const MaxPoolArgs& a);
  void (*avg_pool)(KernelContext& ctx, const AvgPoolArgs& a);
  void (*adaptive_avg_pool)(KernelContext& ctx, const AdaptiveAvgPoolArgs& a);
  void (*upsample_nearest)(KernelContext& ctx, const ResampleArgs& a);
  void (*upsample_bilinear)(KernelContext& ctx, const ResampleArgs& a);
  void (*argmax_pool)(KernelContext& ctx, const ArgMaxPoolArgs& a);
};

// max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[],
//   int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out,
//   Tensor(b!) indices)
void max_pool2d_with_indices_out(KernelContext& ctx, const Tensor& in, IntList kernel_size,
                                 IntList stride, IntList padding, IntList dilation, bool ceil_mode,
                                 Tensor& out, Tensor& indices);
// pterun::max_pool2d_values.out (kernels/internal_ops.h): the same arguments,
// when nothing reads the indices.
void max_pool2d_values_out(KernelContext& ctx, const Tensor& in, IntList kernel_size,
                           IntList stride, IntList padding, IntList dilation, bool ceil_mode,
                           Tensor& out, Tensor& indices);
// avg_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
//   bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None, *,
//   Tensor(a!) out)
void avg_pool2d_out(KernelContext& ctx, const Tensor& in, IntList kernel_size, IntList stride,
                    IntList padding, bool ceil_mode, bool count_include_pad,
                    std::optional<int64_t> divisor_override, Tensor& out);
// _adaptive_avg_pool2d.out(Tensor self, SymInt[2] output_size, *, Tensor(a!) out)
void adaptive_avg_pool2d_out(KernelContext& ctx, const Tensor& in, IntList output_size,
                             Tensor& out);
// upsample_nearest2d.vec_out(Tensor input, SymInt[]? output_size, float[]? scale_factors,
//   *, Tensor(a!) out)
void upsample_nearest2d_out(KernelContext& ctx, const Tensor& in,
                            std::optional<IntList> output_size, const Value& scale_factors,
                            Tensor& out);
// upsample_bilinear2d.vec_out(Tensor input, SymInt[]? output_size, bool align_corners,
//   float[]? scale_factors, *, Tensor(a!) out)
void upsample_bilinear2d_out(KernelContext& ctx, const Tensor& in,
                             std::optional<IntList> output_size, bool align_corners,
                             const Value& scale_factors, Tensor& out);

}  // namespace pterun::ops
