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

const ops::MatmulBackend& matmul_backend();      // matmul.cpp
const ops::ConvBackend& conv_backend();          // conv.cpp
const ops::PoolBackend& pool_backend();          // pool.cpp (+ pool_max.cpp, pool_resample.cpp)
const ops::CopyBackend& copy_backend();          // copy.cpp
const ops::CreationBackend& creation_backend();  // creation.cpp

// Families not yet behind the operator front-ends register their own
// kernels.
void register_binary_ops(kernels::KernelRegistry& r);   // add, sub, mul, div, pow, remainder ...
void register_unary_ops(kernels::KernelRegistry& r);    // neg, exp, sqrt, rsqrt, sin ...
void register_compare_ops(kernels::KernelRegistry& r);  // eq, ne, lt, le, gt, ge; logical_*; where
void register_activation_ops(
    kernels::KernelRegistry& r);                        // relu, gelu, sigmoid, hardtanh, clamp ...
void register_reduce_ops(kernels::KernelRegistry& r);   // sum, mean, any, amax, argmax ...
void register_index_ops(kernels::KernelRegistry& r);    // embedding, index, gather, select ...
void register_nonzero_ops(kernels::KernelRegistry& r);  // nonzero

}  // namespace pterun::cpu
