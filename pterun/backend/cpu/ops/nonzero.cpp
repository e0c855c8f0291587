// nonzero on the CPU: int64 [count, rank] coordinates of self's true
// elements in row-major order (the CUDA kernel is backend/cuda/ops/nonzero.cu).

#include <array>

#include "pterun/backend/cpu/ops/index_prepare.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/elementwise.h"
#include "pterun/kernels/common/reduce_util.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::cpu {

namespace indexing {

void check_nonzero(const Tensor& self, const Tensor& out, const char* op) {
  PTERUN_CHECK(out.dtype() == DType::Int64 && out.dim() == 2, ErrorCode::InvalidArgument, op,
               ": out must be a 2-D int64 tensor, got ", describe(out));
  PTERUN_CHECK(kernels::in_family(self.dtype(), kernels::Family::RealHBBF16),
               ErrorCode::InvalidArgument, op, ": dtype ", dtype_name(self.dtype()),
               " is not supported");
}

}  // namespace indexing

namespace {

using kernels::Family;
using kernels::KernelContext;
using kernels::Odometer;

// nonzero.out(self, *, out): int64 [count, rank] coordinates in row-major
// order; out must be able to take the data-dependent count.
void nonzero_out(KernelContext& /*ctx*/, std::span<Value* const> args) {
  const char* op = "aten::nonzero.out";
  const Tensor& self = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  indexing::check_nonzero(self, out, op);
  Odometer<1> walk;
  for (size_t d = 0; d < self.dim(); ++d) walk.push(self.size(d), {self.stride(d)});
  kernels::visit(self.dtype(), Family::RealHBBF16, op, [&]<typename T>() {
    const T* x = self.data_as<const T>();
    auto od = walk;
    od.seek(0);
    int64_t count = 0;
    for (int64_t i = 0; i < self.numel(); ++i, od.next()) {
      count += kernels::convert<bool>(x[od.offset[0]]) ? 1 : 0;
    }
    const std::array<int64_t, 2> shape = {count, static_cast<int64_t>(self.dim())};
    kernels::resize_output(out, shape, op);
    int64_t* o = out.data_as<int64_t>();
    od.seek(0);
    int64_t row = 0;
    for (int64_t i = 0; i < self.numel(); ++i, od.next()) {
      if (!kernels::convert<bool>(x[od.offset[0]])) continue;
      for (size_t d = 0; d < self.dim(); ++d) {
        o[row * out.stride(0) + static_cast<int64_t>(d) * out.stride(1)] = od.coord[d];
      }
      ++row;
    }
  });
}

}  // namespace

void register_nonzero_ops(kernels::KernelRegistry& r) {
  r.add("aten::nonzero.out", Device::CPU, &nonzero_out);
}

}  // namespace pterun::cpu
