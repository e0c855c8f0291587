// Quantized embeddings on CUDA (ops/index.h, QuantEmbeddingArgs): rows of an
// 8-, 4- or 2-bit table dequantized into float32, float16 or bfloat16, one
// thread per output element. A row index out of range is recorded in the
// method's device-check word (raised at the next wait) and its row reads as
// zeros.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/device_check.h"
#include "pterun/kernels/common/quant_math.h"
#include "pterun/ops/index.h"

namespace pterun::kernels::cuda_ops {
namespace {

struct QuantEmbeddingParams {
  cuda::StridedIndexer<2> rows;  // over the indices' dims: {indices, out}
  const void* indices;
  bool is64;
  const uint8_t* weight;
  bool signed8;
  int bits;
  int64_t num_rows, weight_row, dim, group, out_col;
  const void* scales;
  DType scales_dtype;
  int64_t scales_row, scales_group;  // strides (group stride 0 for 1-D scales)
  const void* zeros;                 // or null
  DType zeros_dtype;
  int64_t zeros_row, zeros_group;
  DeviceCheck* check;
  int32_t check_op;
};

__device__ inline float packed_value(const uint8_t* row, int64_t j, int bits, bool signed8) {
  if (bits == 8) {
    return signed8 ? static_cast<float>(static_cast<int8_t>(row[j])) : static_cast<float>(row[j]);
  }
  return kernels::packed_field(row, j, bits);
}

template <typename O>
__global__ void embedding_quant_kernel(O* out, QuantEmbeddingParams p, int64_t n) {
  for (int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; x < n;
       x += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = x / p.dim, j = x - r * p.dim;
    int64_t off[2];
    p.rows.offsets(r, off);
    const int64_t v = p.is64 ? static_cast<const int64_t*>(p.indices)[off[0]]
                             : static_cast<int64_t>(static_cast<const int32_t*>(p.indices)[off[0]]);
    O* dst = out + off[1] + j * p.out_col;
    if (v < 0 || v >= p.num_rows) {
      if (j == 0 && atomicCAS(reinterpret_cast<int*>(&p.check->failed), 0, 1) == 0) {
        p.check->kind = static_cast<int32_t>(DeviceCheckKind::EmbeddingRow);
        p.check->op = p.check_op;
        p.check->value = v;
        p.check->limit = p.num_rows;
        p.check->extra = 0;
      }
      *dst = cuda::convert<O>(0.0f);
      continue;
    }
    const int64_t g = j / p.group;
    const float scale =
        cuda::load_as<float>(p.scales, p.scales_dtype, v * p.scales_row + g * p.scales_group);
    const float zero =
        p.zeros == nullptr
            ? 0.0f
            : cuda::load_as<float>(p.zeros, p.zeros_dtype, v * p.zeros_row + g * p.zeros_group);
    const float w = packed_value(p.weight + v * p.weight_row, j, p.bits, p.signed8);
    *dst = cuda::convert<O>((w - zero) * scale);
  }
}

}  // namespace

void embedding_quantized(KernelContext& ctx, const ops::QuantEmbeddingArgs& a) {
  const char* op = kernels::device_check_op_name(static_cast<DeviceCheckOp>(a.check_op));
  const Tensor& idx = a.indices;
  QuantEmbeddingParams p{};
  const size_t k = idx.dim();
  p.rows.rank = static_cast<int>(k);
  for (size_t d = 0; d < k; ++d) {
    p.rows.sizes[d] = idx.size(d);
    p.rows.strides[0][d] = idx.stride(d);
    p.rows.strides[1][d] = a.out.stride(d);
  }
  p.indices = idx.data();
  p.is64 = idx.dtype() == DType::Int64;
  p.weight = static_cast<const uint8_t*>(a.weight.data());
  p.signed8 = a.weight.dtype() == DType::Int8;
  p.bits = a.bits;
  p.num_rows = a.weight.size(0);
  p.weight_row = a.weight.stride(0);
  p.dim = a.dim;
  p.group = a.dim / a.groups;
  p.out_col = a.out.stride(k);
  p.scales = a.scales.data();
  p.scales_dtype = a.scales.dtype();
  p.scales_row = a.scales.stride(0);
  p.scales_group = a.scales.dim() == 2 ? a.scales.stride(1) : 0;
  if (a.zero_points != nullptr) {
    p.zeros = a.zero_points->data();
    p.zeros_dtype = a.zero_points->dtype();
    p.zeros_row = a.zero_points->stride(0);
    p.zeros_group = a.zero_points->dim() == 2 ? a.zero_points->stride(1) : 0;
  }
  p.check = cuda::device_check(ctx);
  p.check_op = a.check_op;
  const int64_t n = a.out.numel();
  if (n == 0) return;
  const unsigned blocks = cuda::blocks_for(n, 256);
  cudaStream_t stream = cuda::stream(ctx);
  switch (a.out.dtype()) {
    case DType::Float32:
      embedding_quant_kernel<float><<<blocks, 256, 0, stream>>>(a.out.data_as<float>(), p, n);
      break;
    case DType::Float16:
      embedding_quant_kernel<__half>
          <<<blocks, 256, 0, stream>>>(static_cast<__half*>(a.out.data()), p, n);
      break;
    case DType::BFloat16:
      embedding_quant_kernel<__nv_bfloat16>
          <<<blocks, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(a.out.data()), p, n);
      break;
    default:
      throw_error(ErrorCode::NotSupported,
                  str_cat(op, ": out dtype ", dtype_name(a.out.dtype()), " is not supported"));
  }
  cuda::check_launch(op);
}

}  // namespace pterun::kernels::cuda_ops
