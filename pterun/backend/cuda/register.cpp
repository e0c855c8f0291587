#include "pterun/ops/register.h"
#include "pterun/backend/cuda/ops/ops.h"

namespace pterun::kernels {

// The CUDA backend: its table of compute functions, and through it every
// operator of ops/register.cpp whose family it computes.
void register_cuda_kernels(KernelRegistry& r) {
  static const ops::OpBackend kBackend = PTERUN_GATHER_OP_TABLES(cuda_ops);
  ops::register_ops(r, Device::CUDA, kBackend);
}

}  // namespace pterun::kernels
