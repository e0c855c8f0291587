#pragma once

// The nonzero family: the coordinates of a tensor's true elements, whose
// count (so out's shape) only the backend that reads the data knows.

#include "pterun/core/tensor.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

/// out = the int64 [count, rank] coordinates of self's true elements in
/// row-major order. self is non-empty with a dtype in RealHBBF16 and out a
/// 2-D int64 tensor (checked); the backend counts, then resizes out.
struct NonzeroArgs {
  const Tensor& self;
  Tensor& out;
};

struct NonzeroBackend {
  void (*nonzero)(KernelContext& ctx, const NonzeroArgs& a);
};

// nonzero.out(Tensor self, *, Tensor(a!) out)
void nonzero_out(KernelContext& ctx, const Tensor& self, Tensor& out);

}  // namespace pterun::ops
