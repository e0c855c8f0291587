// The CPU's copy table (pterun/ops/copy.h): converting copies are the
// shared convert_copy over the CPU Mover (same-dtype copies are strided byte
// copies; dtype changes go through the elementwise engine, float -> int
// truncating via int64).

#include "pterun/ops/copy.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::cpu {
namespace {

void convert_copy(const kernels::KernelContext& ctx, Tensor& out, const Tensor& src,
                  const char* op) {
  ops::convert_copy(ctx, out, src, op, mover());
}

}  // namespace

const ops::CopyBackend& copy_backend() {
  static constexpr ops::CopyBackend kCopy{&convert_copy};
  return kCopy;
}

}  // namespace pterun::cpu
