// Quantized embeddings on the CPU (ops/index.h, QuantEmbeddingArgs): rows of
// an 8-, 4- or 2-bit table dequantized into float32, float16 or bfloat16.
// Every index is checked before anything is written.

#include <cstring>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/error.h"
#include "pterun/core/half.h"
#include "pterun/kernels/common/device_check.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/index_util.h"
#include "pterun/kernels/common/quant_math.h"
#include "pterun/ops/index.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;

/// Element `offset` of a floating or integral tensor as a float.
float read_as_float(const Tensor& t, int64_t offset) {
  float v = 0;
  kernels::visit(t.dtype(), kernels::Family::RealHBBF16, "embedding qparams",
                 [&]<typename T>() { v = static_cast<float>(t.data_as<T>()[offset]); });
  return v;
}

template <typename O>
void dequantize_row(const ops::QuantEmbeddingArgs& a, int64_t index, O* out, int64_t out_stride,
                    float* scale, float* zero) {
  const int64_t group = a.dim / a.groups;
  for (int64_t g = 0; g < a.groups; ++g) {
    const int64_t s_off =
        index * a.scales.stride(0) + (a.scales.dim() == 2 ? g * a.scales.stride(1) : 0);
    scale[g] = read_as_float(a.scales, s_off);
    if (a.zero_points != nullptr) {
      const Tensor& z = *a.zero_points;
      const int64_t z_off = index * z.stride(0) + (z.dim() == 2 ? g * z.stride(1) : 0);
      zero[g] = read_as_float(z, z_off);
    } else {
      zero[g] = 0.0f;
    }
  }
  const auto* row = static_cast<const uint8_t*>(a.weight.data()) + index * a.weight.stride(0);
  for (int64_t j = 0; j < a.dim; ++j) {
    const int64_t g = j / group;
    float w;
    if (a.bits == 8) {
      w = a.weight.dtype() == DType::Int8 ? static_cast<float>(static_cast<int8_t>(row[j]))
                                          : static_cast<float>(row[j]);
    } else {
      w = kernels::packed_field(row, j, a.bits);
    }
    out[j * out_stride] = static_cast<O>((w - zero[g]) * scale[g]);
  }
}

}  // namespace

void embedding_quantized(KernelContext& ctx, const ops::QuantEmbeddingArgs& a) {
  const Tensor& idx = a.indices;
  const int64_t rows = a.weight.size(0), n = idx.numel();
  const auto op = static_cast<kernels::DeviceCheckOp>(a.check_op);
  // Offsets of each index and of its output row, in index order.
  kernels::Odometer<2> od;
  for (size_t d = 0; d < idx.dim(); ++d) od.push(idx.size(d), {idx.stride(d), a.out.stride(d)});
  od.seek(0);
  for (int64_t i = 0; i < n; ++i, od.next()) {
    const int64_t v = kernels::read_index(idx, od.offset[0]);
    if (v < 0 || v >= rows) {
      kernels::throw_device_check(kernels::DeviceCheckKind::EmbeddingRow, op, v, rows);
    }
  }
  const int64_t out_stride = a.out.stride(a.out.dim() - 1);
  float* params =
      static_cast<float*>(ctx.scratch(static_cast<size_t>(2 * a.groups) * sizeof(float)));
  od.seek(0);
  for (int64_t i = 0; i < n; ++i, od.next()) {
    const int64_t v = kernels::read_index(idx, od.offset[0]);
    const int64_t at = od.offset[1];
    switch (a.out.dtype()) {
      case DType::Float32:
        dequantize_row(a, v, a.out.data_as<float>() + at, out_stride, params, params + a.groups);
        break;
      case DType::Float16:
        dequantize_row(a, v, a.out.data_as<Half>() + at, out_stride, params, params + a.groups);
        break;
      case DType::BFloat16:
        dequantize_row(a, v, a.out.data_as<BFloat16>() + at, out_stride, params, params + a.groups);
        break;
      default:
        throw_error(ErrorCode::InvalidArgument,
                    str_cat(kernels::device_check_op_name(op), ": out dtype ",
                            dtype_name(a.out.dtype()), " is not supported"));
    }
  }
}

}  // namespace pterun::cpu
