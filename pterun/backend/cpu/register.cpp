#include "pterun/ops/register.h"
#include "pterun/backend/cpu/ops/ops.h"

namespace pterun::kernels {

// The CPU backend: its table of compute functions, and through it every
// operator of ops/register.cpp whose family it computes.
void register_cpu_kernels(KernelRegistry& r) {
  static const ops::OpBackend kBackend = [] {
    ops::OpBackend b;
    b.shape = &cpu::cpu_mover();
    b.softmax = &cpu::softmax_backend();
    b.norm = &cpu::norm_backend();
    b.elementwise = &cpu::elementwise_backend();
    b.reduce = &cpu::reduce_backend();
    b.index = &cpu::index_backend();
    b.nonzero = &cpu::nonzero_backend();
    return b;
  }();
  ops::register_ops(r, Device::CPU, kBackend);
  cpu::register_matmul_ops(r);
  cpu::register_conv_ops(r);
  cpu::register_pool_ops(r);
  cpu::register_copy_ops(r);
  cpu::register_creation_ops(r);
}

}  // namespace pterun::kernels
