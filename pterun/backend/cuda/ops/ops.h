#pragma once

// The CUDA backend's compute, one table per operator family (pterun/ops/*.h
// declares each table's struct), gathered into one OpBackend by
// backend/cuda/register.cpp.

#include "pterun/kernels/registry.h"
#include "pterun/ops/backend_tables.h"
#include "pterun/ops/index.h"
#include "pterun/ops/norm.h"

namespace pterun::kernels::cuda_ops {

PTERUN_DECLARE_OP_TABLES();  // each family's compute file defines its function

// The index table's quantized embeddings (embedding_quant.cu).
void embedding_quantized(KernelContext& ctx, const ops::QuantEmbeddingArgs& a);

// The norm table's RMS norm (rms_norm.cu).
void rms_norm_out(KernelContext& ctx, const ops::RmsNormArgs& a);

}  // namespace pterun::kernels::cuda_ops
