#include "pterun/kernels/registry.h"

namespace pterun::kernels {

// The CPU kernels of this build, listed explicitly (no self-registration).
void register_cpu_kernels(KernelRegistry& /*registry*/) {}

}  // namespace pterun::kernels
