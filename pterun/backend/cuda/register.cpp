#include "pterun/backend/cuda/ops/ops.h"

namespace pterun::kernels {

// The CUDA kernels of this build, listed explicitly (no self-registration).
void register_cuda_kernels(KernelRegistry& /*r*/) {}

}  // namespace pterun::kernels
