// nonzero on the CPU: int64 [count, rank] coordinates of self's true
// elements in row-major order, counted, then written (the front-end is
// pterun/ops/nonzero.cpp, the CUDA kernel backend/cuda/ops/nonzero.cu).

#include <array>

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/kernels/common/elementwise.h"
#include "pterun/kernels/common/reduce_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/nonzero.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;
using kernels::Odometer;

void nonzero_out(KernelContext& /*ctx*/, const ops::NonzeroArgs& a) {
  const char* op = "aten::nonzero.out";
  const Tensor& self = a.self;
  Tensor& out = a.out;
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

const ops::NonzeroBackend& nonzero_backend() {
  static constexpr ops::NonzeroBackend kNonzero{&nonzero_out};
  return kNonzero;
}

}  // namespace pterun::cpu
