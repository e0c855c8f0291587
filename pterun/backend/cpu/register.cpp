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
    b.quant = &cpu::quant_backend();
    b.matmul = &cpu::matmul_backend();
    b.conv = &cpu::conv_backend();
    b.pool = &cpu::pool_backend();
    b.copy = &cpu::copy_backend();
    b.creation = &cpu::creation_backend();
    b.attention = &cpu::attention_backend();
    return b;
  }();
  ops::register_ops(r, Device::CPU, kBackend);
}

}  // namespace pterun::kernels
