#include "pterun/kernels/registry.h"

namespace pterun::kernels {

// The CUDA kernels of a build without CUDA: none, listed explicitly (no self-registration).
void register_cuda_kernels(KernelRegistry& /*registry*/) {}

}  // namespace pterun::kernels
