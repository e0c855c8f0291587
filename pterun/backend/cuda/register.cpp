#include "pterun/backend/cuda/ops/ops.h"

namespace pterun::kernels {

// The CUDA kernels of this build, listed explicitly (no self-registration).
void register_cuda_kernels(KernelRegistry& r) {
  cuda_ops::register_reduce_ops(r);
  cuda_ops::register_softmax_ops(r);
  cuda_ops::register_norm_ops(r);
  cuda_ops::register_matmul_ops(r);
  cuda_ops::register_conv_ops(r);
  cuda_ops::register_pool_ops(r);
  cuda_ops::register_binary_ops(r);
  cuda_ops::register_unary_ops(r);
  cuda_ops::register_compare_ops(r);
  cuda_ops::register_activation_ops(r);
  cuda_ops::register_creation_ops(r);
  cuda_ops::register_copy_ops(r);
  cuda_ops::register_shape_ops(r);
  cuda_ops::register_index_ops(r);
  cuda_ops::register_nonzero_ops(r);
}

}  // namespace pterun::kernels
