// The CPU's matmul table (pterun/ops/matmul.h): the batched GEMM of
// matmul_gemm.cpp, which reads operands in place through their strides,
// and the host strided copy.

#include "pterun/backend/cpu/engine/strided_copy.h"
#include "pterun/backend/cpu/ops/matmul_gemm.h"
#include "pterun/backend/cpu/ops/ops.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;

void cpu_copy(KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides, const void* src,
              std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
              size_t element_size) {
  cpu::strided_copy(ctx, dst, dst_strides, src, src_strides, sizes, element_size);
}

}  // namespace

const ops::MatmulBackend& matmul_backend() {
  static constexpr ops::MatmulBackend kMatmul{&gemm, &cpu_copy, true};
  return kMatmul;
}

}  // namespace pterun::cpu
