#include "pterun/backend/cpu/ops/ops.h"

namespace pterun::kernels {

// The CPU kernels of this build, listed explicitly (no self-registration).
void register_cpu_kernels(KernelRegistry& r) {
  cpu::register_binary_ops(r);
  cpu::register_unary_ops(r);
  cpu::register_compare_ops(r);
  cpu::register_activation_ops(r);
  cpu::register_reduce_ops(r);
  cpu::register_softmax_ops(r);
  cpu::register_norm_ops(r);
  cpu::register_matmul_ops(r);
  cpu::register_conv_ops(r);
  cpu::register_pool_ops(r);
  cpu::register_shape_ops(r);
  cpu::register_copy_ops(r);
  cpu::register_index_ops(r);
  cpu::register_nonzero_ops(r);
  cpu::register_creation_ops(r);
  cpu::register_prim_ops(r);
}

}  // namespace pterun::kernels
