#pragma once

// The CPU backend's compute, one table per operator family (pterun/ops/*.h
// declares each table's struct), gathered into one OpBackend by
// register.cpp.

#include "pterun/kernels/registry.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/index.h"

namespace pterun::cpu {

const ops::Mover& cpu_mover();                 // shape.cpp
const ops::SoftmaxBackend& softmax_backend();  // softmax.cpp
const ops::NormBackend& norm_backend();        // norm.cpp
// binary.cpp, gathering unary.cpp, compare.cpp and activation.cpp
const ops::ElementwiseBackend& elementwise_backend();
const ops::ReduceBackend& reduce_backend();        // reduce.cpp
const ops::IndexBackend& index_backend();          // index.cpp
const ops::NonzeroBackend& nonzero_backend();      // nonzero.cpp
const ops::QuantBackend& quant_backend();          // quant.cpp (+ quant_nn.cpp, quant_gemm.cpp)
const ops::AttentionBackend& attention_backend();  // attention.cpp

const ops::MatmulBackend& matmul_backend();      // matmul.cpp
const ops::ConvBackend& conv_backend();          // conv.cpp
const ops::PoolBackend& pool_backend();          // pool.cpp (+ pool_max.cpp, pool_resample.cpp)
const ops::CopyBackend& copy_backend();          // copy.cpp
const ops::CreationBackend& creation_backend();  // creation.cpp

// The index table's quantized embeddings (embedding_quant.cpp).
void embedding_quantized(kernels::KernelContext& ctx, const ops::QuantEmbeddingArgs& a);

}  // namespace pterun::cpu
