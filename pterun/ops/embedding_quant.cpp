// Front-ends of the quantized embeddings (index.h, quantized_decomposed::
// embedding_byte / 4bit / 2bit, .out and .dtype_out): every check of
// ExecuTorch's kernels (kernels/quantized/cpu/op_embedding*.cpp), raised
// instead of aborting, then one backend call.

#include <optional>

#include "pterun/core/error.h"
#include "pterun/kernels/common/device_check.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/index.h"

namespace pterun::ops {
namespace {

using kernels::DeviceCheckOp;

bool float_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16;
}

void embedding_quantized(KernelContext& ctx, int bits, const Tensor& weight, const Tensor& scales,
                         const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                         const Tensor& indices, std::optional<int64_t> dtype, Tensor& out,
                         const char* op, DeviceCheckOp check_op) {
  PTERUN_CHECK(weight.dim() == 2, ErrorCode::InvalidArgument, op, ": weight must be 2-D, got ",
               describe(weight));
  if (bits == 8) {
    PTERUN_CHECK(weight.dtype() == DType::UInt8 || weight.dtype() == DType::Int8,
                 ErrorCode::InvalidArgument, op, ": weight must be uint8 or int8, not ",
                 dtype_name(weight.dtype()));
  } else {
    PTERUN_CHECK(weight.dtype() == DType::UInt8, ErrorCode::InvalidArgument, op,
                 ": packed weight must be uint8, not ", dtype_name(weight.dtype()));
  }
  // Rows are read as runs of bytes.
  PTERUN_CHECK(weight.size(1) <= 1 || weight.stride(1) == 1, ErrorCode::NotSupported, op,
               ": weight ", describe(weight), " must have unit-stride rows");
  const int64_t dim = weight.size(1) * (8 / bits);
  PTERUN_CHECK(scales.dim() == 1 || scales.dim() == 2, ErrorCode::InvalidArgument, op,
               ": weight_scales must be 1-D or 2-D, got ", describe(scales));
  PTERUN_CHECK(scales.size(0) == weight.size(0), ErrorCode::InvalidArgument, op, ": weight_scales ",
               describe(scales), " must have one row per weight row (", weight.size(0), ")");
  const int64_t groups = scales.dim() == 2 ? scales.size(1) : 1;
  PTERUN_CHECK(groups > 0 && dim % groups == 0, ErrorCode::InvalidArgument, op, ": ", groups,
               " groups do not divide the embedding width ", dim);
  PTERUN_CHECK(float_dtype(scales.dtype()), ErrorCode::InvalidArgument, op,
               ": weight_scales dtype ", dtype_name(scales.dtype()),
               " is not supported (float32, float16, bfloat16)");
  if (zero_points != nullptr) {
    PTERUN_CHECK(zero_points->dim() == scales.dim(), ErrorCode::InvalidArgument, op,
                 ": weight_zero_points ", describe(*zero_points),
                 " must have the rank of weight_scales ", describe(scales));
    for (size_t d = 0; d < scales.dim(); ++d) {
      PTERUN_CHECK(zero_points->size(d) == scales.size(d), ErrorCode::InvalidArgument, op,
                   ": weight_zero_points ", describe(*zero_points), " differ from weight_scales ",
                   describe(scales), " at dim ", d);
    }
    PTERUN_CHECK(
        float_dtype(zero_points->dtype()) || kernels::is_integral(zero_points->dtype(), false),
        ErrorCode::InvalidArgument, op, ": weight_zero_points dtype ",
        dtype_name(zero_points->dtype()), " is not supported");
  }
  PTERUN_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32,
               ErrorCode::InvalidType, op, ": indices must be int64 or int32, not ",
               dtype_name(indices.dtype()));
  PTERUN_CHECK(quant_min <= quant_max, ErrorCode::InvalidArgument, op, ": weight_quant_min ",
               quant_min, " is greater than weight_quant_max ", quant_max);
  PTERUN_CHECK(float_dtype(out.dtype()), ErrorCode::InvalidArgument, op, ": out dtype ",
               dtype_name(out.dtype()), " is not supported (float32, float16, bfloat16)");
  if (dtype.has_value()) {
    std::optional<DType> d = dtype_from_number(static_cast<int>(*dtype));
    PTERUN_CHECK(d.has_value() && *dtype == static_cast<int>(*dtype), ErrorCode::InvalidArgument,
                 op, ": unknown dtype ", *dtype);
    PTERUN_CHECK(*d == out.dtype(), ErrorCode::InvalidArgument, op, ": dtype ", dtype_name(*d),
                 " differs from out's ", dtype_name(out.dtype()));
  }
  kernels::Shape shape;
  for (int64_t s : indices.sizes()) shape.push_back(s);
  shape.push_back(dim);
  kernels::resize_output(out, shape.span(), op);
  if (indices.numel() == 0) return;
  backend(ctx).index->embedding_quantized(ctx, {weight, bits, dim, groups, scales, zero_points,
                                                indices, static_cast<int32_t>(check_op), out});
}

}  // namespace

void embedding_byte_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales,
                        const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                        const Tensor& indices, Tensor& out) {
  embedding_quantized(ctx, 8, weight, scales, zero_points, quant_min, quant_max, indices,
                      std::nullopt, out, "quantized_decomposed::embedding_byte.out",
                      DeviceCheckOp::EmbeddingByte);
}

void embedding_byte_dtype_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales,
                              const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                              const Tensor& indices, std::optional<int64_t> dtype, Tensor& out) {
  embedding_quantized(ctx, 8, weight, scales, zero_points, quant_min, quant_max, indices, dtype,
                      out, "quantized_decomposed::embedding_byte.dtype_out",
                      DeviceCheckOp::EmbeddingByte);
}

void embedding_4bit_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales,
                        const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                        const Tensor& indices, Tensor& out) {
  embedding_quantized(ctx, 4, weight, scales, zero_points, quant_min, quant_max, indices,
                      std::nullopt, out, "quantized_decomposed::embedding_4bit.out",
                      DeviceCheckOp::Embedding4Bit);
}

void embedding_4bit_dtype_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales,
                              const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                              const Tensor& indices, std::optional<int64_t> dtype, Tensor& out) {
  embedding_quantized(ctx, 4, weight, scales, zero_points, quant_min, quant_max, indices, dtype,
                      out, "quantized_decomposed::embedding_4bit.dtype_out",
                      DeviceCheckOp::Embedding4Bit);
}

void embedding_2bit_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales,
                        const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                        const Tensor& indices, Tensor& out) {
  embedding_quantized(ctx, 2, weight, scales, zero_points, quant_min, quant_max, indices,
                      std::nullopt, out, "quantized_decomposed::embedding_2bit.out",
                      DeviceCheckOp::Embedding2Bit);
}

void embedding_2bit_dtype_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales,
                              const Tensor* zero_points, int64_t quant_min, int64_t quant_max,
                              const Tensor& indices, std::optional<int64_t> dtype, Tensor& out) {
  embedding_quantized(ctx, 2, weight, scales, zero_points, quant_min, quant_max, indices, dtype,
                      out, "quantized_decomposed::embedding_2bit.dtype_out",
                      DeviceCheckOp::Embedding2Bit);
}

}  // namespace pterun::ops
