#pragma once

#include "pterun/kernels/registry.h"

// One registration function per CUDA kernel family (ops/<family>.cu),
// called from backend/cuda/register.cpp.
namespace pterun::kernels::cuda_ops {

void register_reduce_ops(KernelRegistry& r);      // reduce_host.cpp
void register_softmax_ops(KernelRegistry& r);     // softmax.cu
void register_norm_ops(KernelRegistry& r);        // norm.cu
void register_matmul_ops(KernelRegistry& r);      // matmul.cu
void register_conv_ops(KernelRegistry& r);        // conv.cu
void register_pool_ops(KernelRegistry& r);        // pool_host.cpp
void register_binary_ops(KernelRegistry& r);      // binary.cu (+ binary_ext.cu)
void register_unary_ops(KernelRegistry& r);       // unary.cu
void register_compare_ops(KernelRegistry& r);     // compare.cu
void register_activation_ops(KernelRegistry& r);  // activation.cu
void register_creation_ops(KernelRegistry& r);    // creation.cu
void register_copy_ops(KernelRegistry& r);        // copy.cu

void register_shape_ops(KernelRegistry& r);    // shape.cu (views, cat/split, repeat/pad ...)
void register_index_ops(KernelRegistry& r);    // index.cu (embedding, gather, scatter, index ...)
void register_nonzero_ops(KernelRegistry& r);  // nonzero.cu

}  // namespace pterun::kernels::cuda_ops
