#pragma once

// The CUDA backend's compute, one table per operator family (pterun/ops/*.h
// declares each table's struct), gathered into one OpBackend by
// backend/cuda/register.cpp.

#include "pterun/kernels/registry.h"
#include "pterun/ops/backend_tables.h"
#include "pterun/ops/index.h"

namespace pterun::kernels::cuda_ops {

PTERUN_DECLARE_OP_TABLES();  // each family's compute file defines its function

// The index table's quantized embeddings (embedding_quant.cu).
void embedding_quantized(KernelContext& ctx, const ops::QuantEmbeddingArgs& a);

}  // namespace pterun::kernels::cuda_ops
