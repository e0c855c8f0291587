#include "pterun/kernels/registry.h"

namespace pterun::kernels {

// The CUDA kernels of this build, listed explicitly (no self-registration).
void register_cuda_kernels(KernelRegistry& /*registry*/) {}

}  // namespace pterun::kernels
