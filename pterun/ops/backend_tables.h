#pragma once

// How a backend hands its compute over: one function per operator family,
// each defined in that family's compute file and returning the family's
// table (pterun/ops/<family>.h). The list is written here once; a backend
// declares it in its own namespace and gathers it in its register.cpp.

#include "pterun/ops/backend.h"

/// Declares, in the namespace where it stands, the function of each family
/// through which a backend returns that family's table.
#define PTERUN_DECLARE_OP_TABLES()                                \
  const ::pterun::ops::Mover& mover();                            \
  const ::pterun::ops::CopyBackend& copy_backend();               \
  const ::pterun::ops::CreationBackend& creation_backend();       \
  const ::pterun::ops::ElementwiseBackend& elementwise_backend(); \
  const ::pterun::ops::ReduceBackend& reduce_backend();           \
  const ::pterun::ops::SoftmaxBackend& softmax_backend();         \
  const ::pterun::ops::NormBackend& norm_backend();               \
  const ::pterun::ops::MatmulBackend& matmul_backend();           \
  const ::pterun::ops::ConvBackend& conv_backend();               \
  const ::pterun::ops::PoolBackend& pool_backend();               \
  const ::pterun::ops::IndexBackend& index_backend();             \
  const ::pterun::ops::NonzeroBackend& nonzero_backend();         \
  const ::pterun::ops::QuantBackend& quant_backend();             \
  const ::pterun::ops::AttentionBackend& attention_backend()

/// The OpBackend of the functions PTERUN_DECLARE_OP_TABLES declared in
/// namespace NS: every family's table.
#define PTERUN_GATHER_OP_TABLES(NS)                                                            \
  ::pterun::ops::OpBackend {                                                                   \
    .shape = &NS::mover(), .copy = &NS::copy_backend(), .creation = &NS::creation_backend(),   \
    .elementwise = &NS::elementwise_backend(), .reduce = &NS::reduce_backend(),                \
    .softmax = &NS::softmax_backend(), .norm = &NS::norm_backend(),                            \
    .matmul = &NS::matmul_backend(), .conv = &NS::conv_backend(), .pool = &NS::pool_backend(), \
    .index = &NS::index_backend(), .nonzero = &NS::nonzero_backend(),                          \
    .quant = &NS::quant_backend(), .attention = &NS::attention_backend()                       \
  }
