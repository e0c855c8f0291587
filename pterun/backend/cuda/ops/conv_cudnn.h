#pragma once

#include "pterun/kernels/kernel.h"
#include "pterun/ops/conv.h"

namespace pterun::cuda::nn {

/// Runs `q` through cuDNN when cuDNN is loaded and takes it (conv_cudnn.cpp
/// says which problems); false otherwise, having launched nothing.
bool cudnn_conv(kernels::KernelContext& ctx, const ops::ConvProblem& q, const char* op);

}  // namespace pterun::cuda::nn
