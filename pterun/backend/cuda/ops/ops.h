#pragma once

// The CUDA backend's compute, one table per operator family (pterun/ops/*.h
// declares each table's struct), gathered into one OpBackend by
// backend/cuda/register.cpp.

#include "pterun/kernels/registry.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/index.h"

namespace pterun::kernels::cuda_ops {

const ops::Mover& cuda_mover();                // shape.cu
const ops::SoftmaxBackend& softmax_backend();  // softmax.cu
const ops::NormBackend& norm_backend();        // norm.cu
// binary.cu, gathering binary_scalar.cu, unary.cu, compare.cu and activation.cu
const ops::ElementwiseBackend& elementwise_backend();
const ops::ReduceBackend& reduce_backend();        // reduce_host.cpp
const ops::IndexBackend& index_backend();          // index.cu
const ops::NonzeroBackend& nonzero_backend();      // nonzero.cu
const ops::QuantBackend& quant_backend();          // quant.cu (+ quant_gemm.cu)
const ops::AttentionBackend& attention_backend();  // attention.cu

const ops::MatmulBackend& matmul_backend();      // matmul.cu
const ops::ConvBackend& conv_backend();          // conv.cu (+ conv_gemm.cu)
const ops::PoolBackend& pool_backend();          // pool.cu
const ops::CopyBackend& copy_backend();          // copy.cu
const ops::CreationBackend& creation_backend();  // creation.cu

// The index table's quantized embeddings (embedding_quant.cu).
void embedding_quantized(KernelContext& ctx, const ops::QuantEmbeddingArgs& a);

}  // namespace pterun::kernels::cuda_ops
