#pragma once

// The CPU backend's compute, one table per operator family (pterun/ops/*.h
// declares each table's struct), gathered into one OpBackend by
// register.cpp.

#include "pterun/kernels/registry.h"
#include "pterun/ops/backend.h"

namespace pterun::cpu {

const ops::Mover& cpu_mover();                 // shape.cpp
const ops::SoftmaxBackend& softmax_backend();  // softmax.cpp
const ops::NormBackend& norm_backend();        // norm.cpp
// binary.cpp, gathering unary.cpp, compare.cpp and activation.cpp
const ops::ElementwiseBackend& elementwise_backend();
const ops::ReduceBackend& reduce_backend();    // reduce.cpp
const ops::IndexBackend& index_backend();      // index.cpp
const ops::NonzeroBackend& nonzero_backend();  // nonzero.cpp

// Families not yet behind the operator front-ends register their own
// kernels.
void register_matmul_ops(kernels::KernelRegistry& r);    // mm, addmm, bmm, linear
void register_conv_ops(kernels::KernelRegistry& r);      // convolution
void register_pool_ops(kernels::KernelRegistry& r);      // max/avg/adaptive pooling
void register_copy_ops(kernels::KernelRegistry& r);      // copy_, clone, dim-order copies, casts
void register_creation_ops(kernels::KernelRegistry& r);  // full, arange, scalar_tensor, zeros ...

}  // namespace pterun::cpu
