#pragma once

// The CUDA backend's compute, one table per operator family (pterun/ops/*.h
// declares each table's struct), gathered into one OpBackend by
// backend/cuda/register.cpp.

#include "pterun/kernels/registry.h"
#include "pterun/ops/backend.h"

namespace pterun::kernels::cuda_ops {

const ops::Mover& cuda_mover();                // shape.cu
const ops::SoftmaxBackend& softmax_backend();  // softmax.cu
const ops::NormBackend& norm_backend();        // norm.cu

const ops::MatmulBackend& matmul_backend();      // matmul.cu
const ops::ConvBackend& conv_backend();          // conv.cu (+ conv_gemm.cu)
const ops::PoolBackend& pool_backend();          // pool.cu
const ops::CopyBackend& copy_backend();          // copy.cu
const ops::CreationBackend& creation_backend();  // creation.cu

// Families not yet behind the operator front-ends register their own
// kernels.
void register_reduce_ops(KernelRegistry& r);      // reduce_host.cpp
void register_binary_ops(KernelRegistry& r);      // binary.cu (+ binary_ext.cu)
void register_unary_ops(KernelRegistry& r);       // unary.cu
void register_compare_ops(KernelRegistry& r);     // compare.cu
void register_activation_ops(KernelRegistry& r);  // activation.cu
void register_index_ops(KernelRegistry& r);    // index.cu (embedding, gather, scatter, index ...)
void register_nonzero_ops(KernelRegistry& r);  // nonzero.cu

}  // namespace pterun::kernels::cuda_ops
