#pragma once

// The rules quantization parameters must follow, shared by the
// quantization front-ends (at each call), the CPU backend (for parameters
// held in tensors) and the loader (for constant parameters, at load:
// executor/quant_check.h). Each raises Error InvalidArgument with a message
// that starts with the operator's name.

#include <cstdint>

#include "pterun/core/dtype.h"

namespace pterun::ops {

/// The quantized integer dtype of ScalarType number `number`: uint8, int8,
/// int16, uint16 (or Bits16) or int32; unless it is one of those.
DType quant_dtype(int64_t number, const char* what, const char* op);

/// The floating dtype of ScalarType number `number` (float16, bfloat16,
/// float32, float64); unless it is one of those.
DType float_dtype(int64_t number, const char* what, const char* op);

/// [lowest, highest] of integer dtype `d`.
int64_t dtype_lowest(DType d);
int64_t dtype_highest(DType d);

/// Unless quant_min <= quant_max and both lie in `dtype`'s range.
void check_quant_range(int64_t quant_min, int64_t quant_max, DType dtype, const char* op);

/// True for a scale the kernels can use: finite and positive, as float32
/// too, with a finite float32 reciprocal.
bool valid_scale(double scale);

/// Unless valid_scale(scale); `what` names it ("scale", "scales[3]" ...).
void check_scale(double scale, const char* what, const char* op);

/// Unless quant_min <= zero_point <= quant_max.
void check_zero_point(int64_t zero_point, int64_t quant_min, int64_t quant_max, const char* what,
                      const char* op);

/// Every one of `n` scales at `data` (host memory, dtype `dtype`: float64,
/// float32, float16 or bfloat16) valid.
void check_scales(const void* data, DType dtype, int64_t n, const char* op);

/// Every one of `n` zero points at `data` (host memory, int64 or int32) in
/// [quant_min, quant_max].
void check_zero_points(const void* data, DType dtype, int64_t n, int64_t quant_min,
                       int64_t quant_max, const char* op);

/// True when all `n` zero points at `data` (int64 or int32) are 0.
bool all_zero(const void* data, DType dtype, int64_t n);

}  // namespace pterun::ops
