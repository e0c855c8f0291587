#include "pterun/ops/register.h"
#include "pterun/backend/cpu/ops/ops.h"

namespace pterun::kernels {

// The CPU backend: its table of compute functions, and through it every
// operator of ops/register.cpp whose family it computes.
void register_cpu_kernels(KernelRegistry& r) {
  static const ops::OpBackend kBackend = PTERUN_GATHER_OP_TABLES(cpu);
  ops::register_ops(r, Device::CPU, kBackend);
}

}  // namespace pterun::kernels
