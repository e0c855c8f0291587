#include "pterun/ops/register.h"
#include "pterun/backend/cuda/ops/ops.h"

namespace pterun::kernels {

// The CUDA backend: its table of compute functions, and through it every
// operator of ops/register.cpp whose family it computes.
void register_cuda_kernels(KernelRegistry& r) {
  static const ops::OpBackend kBackend = [] {
    ops::OpBackend b;
    b.shape = &cuda_ops::cuda_mover();
    b.softmax = &cuda_ops::softmax_backend();
    b.norm = &cuda_ops::norm_backend();
    b.elementwise = &cuda_ops::elementwise_backend();
    b.reduce = &cuda_ops::reduce_backend();
    b.index = &cuda_ops::index_backend();
    b.nonzero = &cuda_ops::nonzero_backend();
    b.quant = &cuda_ops::quant_backend();
    b.matmul = &cuda_ops::matmul_backend();
    b.conv = &cuda_ops::conv_backend();
    b.pool = &cuda_ops::pool_backend();
    b.copy = &cuda_ops::copy_backend();
    b.creation = &cuda_ops::creation_backend();
    b.attention = &cuda_ops::attention_backend();
    return b;
  }();
  ops::register_ops(r, Device::CUDA, kBackend);
}

}  // namespace pterun::kernels
