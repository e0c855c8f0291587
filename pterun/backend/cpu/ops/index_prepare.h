#pragma once

// The host-side half of the indexing kernels (index.cpp): argument checks
// and output resizing, shared with the CUDA backend. Range checks of index
// values are not here: they read index data, which the CPU kernels do on
// the host and the CUDA kernels on the device.

#include <cstddef>

#include "pterun/core/tensor.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::kernels {
struct IndexPlan;  // kernels/common/index_util.h
}  // namespace pterun::kernels

namespace pterun::cpu::indexing {

/// Error InvalidType unless `index` is int64 or int32.
void check_index_dtype(const Tensor& index, const char* op);

/// Error InvalidArgument unless `a` (named `what`) has self's dtype.
void check_same_dtype(const Tensor& a, const Tensor& self, const char* what, const char* op);

/// embedding.out: checks, resizes out to indices.shape + [weight.size(1)].
void prepare_embedding(const Tensor& weight, const Tensor& indices, Tensor& out, const char* op);

/// index_select.out: checks, resizes out; returns the wrapped dim.
size_t prepare_index_select(const Tensor& self, int64_t dim, const Tensor& index, Tensor& out,
                            const char* op);

/// gather.out: checks, resizes out to index's shape; returns the wrapped dim.
size_t prepare_gather(const Tensor& self, int64_t dim, const Tensor& index, Tensor& out,
                      const char* op);

/// scatter.src_out / value_out / scatter_add.out (src null for value):
/// checks, resizes out to self's shape; returns the wrapped dim.
size_t prepare_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                       Tensor& out, const char* op);

/// masked_fill.Scalar_out: checks, resizes out to the broadcast shape.
void prepare_masked_fill(const Tensor& self, const Tensor& mask, Tensor& out, const char* op);

/// nonzero.out: errors unless out is a 2-D int64 tensor and self's dtype
/// has a truth value (out is resized once the count is known).
void check_nonzero(const Tensor& self, const Tensor& out, const char* op);

/// index_put.out / index_put_: dtype checks of values and the target, and
/// that accumulate is supported for the dtype.
void check_index_put(const Tensor& self, const Tensor& values, const Tensor& target,
                     bool accumulate, const char* op);

/// values' strides over the dims of plan.result, right-aligned with
/// broadcasting (0 where a value repeats). Error InvalidArgument when they
/// do not broadcast.
kernels::Shape put_value_strides(const kernels::IndexPlan& plan, const Tensor& values,
                                 const char* op);

}  // namespace pterun::cpu::indexing
