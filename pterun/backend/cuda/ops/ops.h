#pragma once

#include "pterun/kernels/registry.h"

// One registration function per CUDA kernel family (ops/<family>.cu),
// called from backend/cuda/register.cpp.
namespace pterun::kernels::cuda_ops {}  // namespace pterun::kernels::cuda_ops
