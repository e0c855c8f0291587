#pragma once

#include "pterun/kernels/registry.h"

// One registration function per op family; register.cpp calls them all.
namespace pterun::cpu {

void register_binary_ops(kernels::KernelRegistry& r);   // add, sub, mul, div, pow, remainder ...
void register_unary_ops(kernels::KernelRegistry& r);    // neg, exp, sqrt, rsqrt, sin ...
void register_compare_ops(kernels::KernelRegistry& r);  // eq, ne, lt, le, gt, ge; logical_*; where
void register_activation_ops(
    kernels::KernelRegistry& r);                         // relu, gelu, sigmoid, hardtanh, clamp ...
void register_reduce_ops(kernels::KernelRegistry& r);    // sum, mean, any, amax, argmax ...
void register_softmax_ops(kernels::KernelRegistry& r);   // _softmax, _log_softmax
void register_norm_ops(kernels::KernelRegistry& r);      // layer norm, batch norm, group norm
void register_matmul_ops(kernels::KernelRegistry& r);    // mm, addmm, bmm, linear
void register_conv_ops(kernels::KernelRegistry& r);      // convolution
void register_pool_ops(kernels::KernelRegistry& r);      // max/avg/adaptive pooling
void register_shape_ops(kernels::KernelRegistry& r);     // view/permute/expand/slice/cat/split ...
void register_copy_ops(kernels::KernelRegistry& r);      // copy_, clone, dim-order copies, casts
void register_index_ops(kernels::KernelRegistry& r);     // embedding, index, gather, select ...
void register_nonzero_ops(kernels::KernelRegistry& r);   // nonzero
void register_creation_ops(kernels::KernelRegistry& r);  // full, arange, scalar_tensor, zeros ...
void register_prim_ops(kernels::KernelRegistry& r);      // sym_size, et_view, executorch_prim::*

}  // namespace pterun::cpu
