#pragma once

// The CPU elementwise compute, one function per ops::ElementwiseBackend
// entry, spread over binary.cpp, unary.cpp, compare.cpp, activation.cpp and
// fused.cpp;
// elementwise_backend() (binary.cpp) gathers them into the table.

#include "pterun/kernels/kernel.h"
#include "pterun/ops/elementwise.h"

namespace pterun::cpu::elementwise {

using kernels::KernelContext;

void binary(KernelContext& ctx, const ops::BinaryArgs& a);               // binary.cpp
void binary_scalar(KernelContext& ctx, const ops::BinaryScalarArgs& a);  // binary.cpp
void unary(KernelContext& ctx, const ops::UnaryArgs& a);                 // unary.cpp
void compare(KernelContext& ctx, const ops::CompareArgs& a);             // compare.cpp
void logical(KernelContext& ctx, const ops::LogicalArgs& a);             // compare.cpp
void where(KernelContext& ctx, const ops::WhereArgs& a);                 // compare.cpp
void activation(KernelContext& ctx, const ops::ActivationArgs& a);       // activation.cpp
void clamp(KernelContext& ctx, const ops::ClampArgs& a);                 // activation.cpp
void clamp_tensor(KernelContext& ctx, const ops::ClampTensorArgs& a);    // activation.cpp
void glu(KernelContext& ctx, const ops::GluArgs& a);                     // activation.cpp
void rotary(KernelContext& ctx, const ops::RotaryArgs& a);               // rotary.cpp
void fused(KernelContext& ctx, const ops::FusedArgs& a);                 // fused.cpp

}  // namespace pterun::cpu::elementwise
