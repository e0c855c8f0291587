#pragma once

// The softmax family: softmax and log_softmax along one dim, any layout.

#include <cstddef>
#include <cstdint>

#include "pterun/core/tensor.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

/// out = softmax (or log_softmax) of `in` along `dim`; one floating dtype,
/// out resized to in, at least one element.
struct SoftmaxArgs {
  const Tensor& in;
  size_t dim;
  bool log;
  Tensor& out;
  // Softmax only: a line whose every element is -inf gives zeros (torch's
  // decomposed scaled dot-product attention writes that with a where),
  // where plain softmax gives NaN.
  bool safe = false;
};

struct SoftmaxBackend {
  void (*softmax)(KernelContext& ctx, const SoftmaxArgs& a);
};

// _softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
void softmax_out(KernelContext& ctx, const Tensor& in, int64_t dim, bool half_to_float,
                 Tensor& out);
// pterun::safe_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
// (kernels/internal_ops.h): softmax with SoftmaxArgs::safe.
void safe_softmax_out(KernelContext& ctx, const Tensor& in, int64_t dim, bool half_to_float,
                      Tensor& out);
// _log_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
void log_softmax_out(KernelContext& ctx, const Tensor& in, int64_t dim, bool half_to_float,
                     Tensor& out);

}  // namespace pterun::ops
