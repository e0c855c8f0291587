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
// binary.cu, gathering binary_scalar.cu, unary.cu, compare.cu and activation.cu
const ops::ElementwiseBackend& elementwise_backend();
const ops::ReduceBackend& reduce_backend();    // reduce_host.cpp
const ops::IndexBackend& index_backend();      // index.cu
const ops::NonzeroBackend& nonzero_backend();  // nonzero.cu

// Families not yet behind the operator front-ends register their own
// kernels.
void register_matmul_ops(KernelRegistry& r);    // matmul.cu
void register_conv_ops(KernelRegistry& r);      // conv.cu
void register_pool_ops(KernelRegistry& r);      // pool_host.cpp
void register_creation_ops(KernelRegistry& r);  // creation.cu
void register_copy_ops(KernelRegistry& r);      // copy.cu

}  // namespace pterun::kernels::cuda_ops
