#pragma once

// The launch structs of the CUDA quantization kernels (quant.cu,
// quant_gemm.cu; quant_dynamic.cu keeps its own), filled on the host from the front-ends' argument
// structs (ops/quant.h): plain pointers, dtypes and sizes, passed by value.

#include <cstdint>

#include "pterun/core/dtype.h"
#include "pterun/kernels/kernel.h"
#include "pterun/ops/quant.h"

namespace pterun::cuda::quant {

/// ops::QParams on the device: entry c of a host number or a device tensor.
struct QParamsLaunch {
  double scale = 1.0;
  int64_t zero_point = 0;
  const void* scales = nullptr;
  DType scale_dtype = DType::Float64;
  const void* zero_points = nullptr;
  DType zp_dtype = DType::Int64;
  int64_t channels = 1;
  int64_t inner = 1;
};

struct QuantizeLaunch {
  const void* in;
  void* out;
  int64_t n;
  QParamsLaunch q;
  int64_t quant_min;
  int64_t quant_max;
  bool zero_point_first;
  bool wide;
};

struct DequantizeLaunch {
  const void* in;
  void* out;
  int64_t n;
  QParamsLaunch q;
  bool wide;
  DType round_to;
};

struct ChooseLaunch {
  const float* in;
  int64_t rows;
  int64_t row_size;
  int64_t quant_min;
  int64_t quant_max;
  double* scale;
  int64_t* zero_point;
};

struct AddLaunch {
  const void* a;
  const void* b;
  void* out;
  int64_t n;
  ops::QTensorParams a_q;
  ops::QTensorParams b_q;
  ops::QTensorParams out_q;
  int32_t out_min;
  int32_t out_max;
};

struct MeanLaunch {
  const void* in;
  void* out;
  int64_t outer;
  int64_t reduce;
  int64_t inner;
  ops::QTensorParams in_q;
  ops::QTensorParams out_q;
  int32_t out_min;
  int32_t out_max;
};

}  // namespace pterun::cuda::quant

namespace pterun::kernels::cuda_ops {

// The integer matrix products (quant_gemm.cu), in the table of quant.cu.
void quantized_linear(KernelContext& ctx, const ops::QLinearArgs& a);
void quantized_conv2d(KernelContext& ctx, const ops::QConv2dArgs& a);
// XNNPACK's dynamically quantized fully connected layer (quant_dynamic.cu).
void dynamic_linear(KernelContext& ctx, const ops::QDynLinearArgs& a);

}  // namespace pterun::kernels::cuda_ops
