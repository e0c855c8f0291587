// Front-end of the nonzero family (nonzero.h).

#include "pterun/ops/nonzero.h"

#include <array>

#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"

namespace pterun::ops {

void nonzero_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  const char* op = "aten::nonzero.out";
  PTERUN_CHECK(out.dtype() == DType::Int64 && out.dim() == 2, ErrorCode::InvalidArgument, op,
               ": out must be a 2-D int64 tensor, got ", describe(out));
  PTERUN_CHECK(kernels::in_family(self.dtype(), kernels::Family::RealHBBF16),
               ErrorCode::InvalidArgument, op, ": dtype ", dtype_name(self.dtype()),
               " is not supported");
  if (self.numel() == 0) {
    const std::array<int64_t, 2> shape = {0, static_cast<int64_t>(self.dim())};
    kernels::resize_output(out, shape, op);
    return;
  }
  backend(ctx).nonzero->nonzero(ctx, {self, out});
}

}  // namespace pterun::ops
