#pragma once

// The CUDA elementwise compute, one function per ops::ElementwiseBackend
// entry, spread over binary.cu, binary_scalar.cu, unary.cu, compare.cu,
// activation.cu and fused.cu; elementwise_backend() (binary.cu) gathers them into the
// table.

#include "pterun/kernels/kernel.h"
#include "pterun/ops/elementwise.h"

namespace pterun::kernels::cuda_ops::elementwise {

void binary(KernelContext& ctx, const ops::BinaryArgs& a);               // binary.cu
void binary_scalar(KernelContext& ctx, const ops::BinaryScalarArgs& a);  // binary_scalar.cu
void unary(KernelContext& ctx, const ops::UnaryArgs& a);                 // unary.cu
void compare(KernelContext& ctx, const ops::CompareArgs& a);             // compare.cu
void logical(KernelContext& ctx, const ops::LogicalArgs& a);             // compare.cu
void where(KernelContext& ctx, const ops::WhereArgs& a);                 // compare.cu
void activation(KernelContext& ctx, const ops::ActivationArgs& a);       // activation.cu
void clamp(KernelContext& ctx, const ops::ClampArgs& a);                 // activation.cu
void clamp_tensor(KernelContext& ctx, const ops::ClampTensorArgs& a);    // activation.cu
void glu(KernelContext& ctx, const ops::GluArgs& a);                     // activation.cu
void rotary(KernelContext& ctx, const ops::RotaryArgs& a);               // activation.cu
void fused(KernelContext& ctx, const ops::FusedArgs& a);                 // fused.cu

/// The fns::PowMode a floating pow op code runs with (binary_scalar.cu).
int pow_mode(ops::ScalarFn fn);

}  // namespace pterun::kernels::cuda_ops::elementwise
