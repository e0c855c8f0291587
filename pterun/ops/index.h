#pragma once

// The index family: embedding, index_select, gather, scatter (src / value /
// add), masked_fill and advanced indexing (index.Tensor, index_put). The
// front-ends (index.cpp) check dtypes and shapes, resize the outputs and
// plan advanced indexing; a backend computes from these argument structs.
//
// Index values are data, so they are range-checked by the backend that
// reads them: the CPU raises IndexOutOfRange before writing anything; CUDA
// checks on the device, where an index out of range reads as zero (gathers)
// or writes nothing (scatters), since reporting it would need a host wait.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/ops/types.h"

namespace pterun::kernels {
struct IndexPlan;  // kernels/common/index_util.h
}  // namespace pterun::kernels

namespace pterun::ops {

/// out[i..., :] = weight[indices[i...], :]. weight is 2-D, indices int64 or
/// int32 (checked), out resized to indices.shape + [weight.size(1)].
struct EmbeddingArgs {
  const Tensor& weight;
  const Tensor& indices;
  Tensor& out;
};

/// out = self's slices along `dim` at the positions of the 0-D or 1-D
/// int64/int32 `index`; out resized (self's shape, index.numel() at dim).
struct IndexSelectArgs {
  const Tensor& self;
  size_t dim;
  const Tensor& index;
  Tensor& out;
};

/// out[i] = self[i with dim replaced by index[i]]; index int64/int32 of
/// self's rank, no larger than self off `dim` (checked); out resized to
/// index's shape.
struct GatherArgs {
  const Tensor& self;
  size_t dim;
  const Tensor& index;
  Tensor& out;
};

enum class ScatterMode : uint8_t { Src, Value, Add };

/// out = self with src's elements (Src), `value` (Value) or their sums
/// (Add) at out[i with dim replaced by index[i]]; repeated positions apply
/// in index order on the CPU. out resized to self; dtype in RealHBBF16
/// (checked).
struct ScatterArgs {
  const Tensor& self;
  size_t dim;
  const Tensor& index;
  const Tensor* src;  // Src and Add; nullptr for Value
  Scalar value;       // Value
  ScatterMode mode;
  Tensor& out;
};

/// out = self where the bool mask (broadcast) is false, else value; out
/// resized to the broadcast shape; dtype in RealHBBF16 (checked).
struct MaskedFillArgs {
  const Tensor& self;
  const Tensor& mask;
  Scalar value;
  Tensor& out;
};

/// out = self[indices] as `plan` (kernels/common/index_util.h) describes
/// it; out resized to plan.result.
struct IndexTensorArgs {
  const Tensor& self;
  const kernels::IndexPlan& plan;
  Tensor& out;
};

/// target = self (unless in place, where target is self) with `values`
/// written (or added, with accumulate) at self[indices] as `plan` describes
/// it. value_strides: values' strides over plan.result's dims (0 where
/// they broadcast). target resized to self.
struct IndexPutArgs {
  const Tensor& self;
  const kernels::IndexPlan& plan;
  const Tensor& values;
  IntList value_strides;
  bool accumulate;
  bool in_place;
  Tensor& target;
};

/// Rows of a quantized embedding table, dequantized:
/// out[i..., j] = (w(idx, j) - zp[idx, g]) * scale[idx, g], g = j / (D / groups),
/// computed in float and rounded to out's dtype. w(idx, j) is weight[idx, j]
/// (bits 8: int8 or uint8 as stored), or the j-th packed field of row idx
/// (bits 4: the high nibble for even j, the low one for odd j, minus 8;
/// bits 2: bits 2 (j % 4) upwards of byte j / 4, minus 2). scales and
/// zero_points (optional) are [V] or [V, groups] of a floating dtype; out
/// (float32, float16 or bfloat16) is resized to indices.shape + [D]. Index
/// values are checked by the backend (DeviceCheckKind::EmbeddingRow naming
/// `check_op`).
struct QuantEmbeddingArgs {
  const Tensor& weight;  // [V, D * bits / 8]
  int bits;              // 8, 4 or 2
  int64_t dim;           // D
  int64_t groups;
  const Tensor& scales;
  const Tensor* zero_points;
  const Tensor& indices;  // int64 or int32
  int32_t check_op;       // kernels::DeviceCheckOp
  Tensor& out;
};

struct IndexBackend {
  void (*embedding)(KernelContext& ctx, const EmbeddingArgs& a);
  void (*embedding_quantized)(KernelContext& ctx, const QuantEmbeddingArgs& a);
  void (*index_select)(KernelContext& ctx, const IndexSelectArgs& a);
  void (*gather)(KernelContext& ctx, const GatherArgs& a);
  void (*scatter)(KernelContext& ctx, const ScatterArgs& a);
  void (*masked_fill)(KernelContext& ctx, const MaskedFillArgs& a);
  /// The number of true elements of a bool/uint8 mask index, which decides
  /// the shape of an advanced-indexing result (called while planning). A
  /// backend whose masks cannot be read on the host refuses them here.
  int64_t (*count_mask)(const Tensor& mask, const char* op);
  void (*index_tensor)(KernelContext& ctx, const IndexTensorArgs& a);
  void (*index_put)(KernelContext& ctx, const IndexPutArgs& a);
};

/// An IndexBackend of the compute functions named like the front-ends
/// (embedding_out, embedding_quantized, index_select_out, gather_out,
/// scatter_out, masked_fill_out, count_mask, index_tensor_out, index_put),
/// found where the macro is used: both backends name them so.
#define PTERUN_INDEX_BACKEND()                                                                     \
  ::pterun::ops::IndexBackend {                                                                    \
    .embedding = &embedding_out, .embedding_quantized = &embedding_quantized,                      \
    .index_select = &index_select_out, .gather = &gather_out, .scatter = &scatter_out,             \
    .masked_fill = &masked_fill_out, .count_mask = &count_mask, .index_tensor = &index_tensor_out, \
    .index_put = &index_put,                                                                       \
  }

// embedding.out(Tensor weight, Tensor indices, SymInt padding_idx=-1,
//   bool scale_grad_by_freq=False, bool sparse=False, *, Tensor(a!) out)
void embedding_out(KernelContext& ctx, const Tensor& weight, const Tensor& indices,
                   const Value& /*padding_idx*/, const Value& /*scale_grad_by_freq*/,
                   const Value& /*sparse*/, Tensor& out);
// index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out)
void index_select_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                      Tensor& out);
// gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False, Tensor(a!) out)
void gather_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                const Value& /*sparse_grad*/, Tensor& out);
// scatter.src_out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out)
void scatter_src_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                     const Tensor& src, Tensor& out);
// scatter.value_out(Tensor self, int dim, Tensor index, Scalar value, *, Tensor(a!) out)
void scatter_value_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                       Scalar value, Tensor& out);
// scatter_add.out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out)
void scatter_add_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                     const Tensor& src, Tensor& out);
// masked_fill.Scalar_out(Tensor self, Tensor mask, Scalar value, *, Tensor(a!) out)
void masked_fill_out(KernelContext& ctx, const Tensor& self, const Tensor& mask, Scalar value,
                     Tensor& out);
// index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out)
void index_tensor_out(KernelContext& ctx, const Tensor& self, OptionalTensorList indices,
                      Tensor& out);
// index_put.out(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False, *,
//   Tensor(a!) out)
void index_put_out(KernelContext& ctx, const Tensor& self, OptionalTensorList indices,
                   const Tensor& values, bool accumulate, Tensor& out);
// index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False)
void index_put_(KernelContext& ctx, Tensor& self, OptionalTensorList indices, const Tensor& values,
                bool accumulate);

// ---- quantized embeddings (quantized_decomposed::; embedding_quant.cpp) ----
// weight_quant_min / max are metadata (ExecuTorch's kernels only check min <= max).

// embedding_byte.out(Tensor weight, Tensor weight_scales, Tensor? weight_zero_points,
//   int weight_quant_min, int weight_quant_max, Tensor indices, *, Tensor(a!) out)
void embedding_byte_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales,
                        const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                        const Tensor& indices, Tensor& out);
// embedding_byte.dtype_out(..., Tensor indices, *, ScalarType? dtype=None, Tensor(a!) out)
void embedding_byte_dtype_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales,
                              const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                              const Tensor& indices, std::optional<int64_t> dtype, Tensor& out);
// embedding_4bit.out / .dtype_out: the same arguments; weight uint8 [V, D / 2].
void embedding_4bit_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales,
                        const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                        const Tensor& indices, Tensor& out);
void embedding_4bit_dtype_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales,
                              const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                              const Tensor& indices, std::optional<int64_t> dtype, Tensor& out);
// embedding_2bit.out / .dtype_out: the same arguments; weight uint8 [V, D / 4].
void embedding_2bit_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales,
                        const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                        const Tensor& indices, Tensor& out);
void embedding_2bit_dtype_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales,
                              const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                              const Tensor& indices, std::optional<int64_t> dtype, Tensor& out);

}  // namespace pterun::ops
