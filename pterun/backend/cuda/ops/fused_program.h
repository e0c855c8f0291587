#pragma once

// A fused elementwise program (ops/fused.h) as the CUDA kernels take it:
// the scalars already in float, as the unfused kernels convert them, and
// which results a later step other than the next reads. Both kernels read
// it: the program interpreter (fused.cu) and the generated kernels
// (jit/fused_jit.cpp).

#include <cstddef>
#include <cstdint>
#include <span>

#include "pterun/ops/fused.h"

namespace pterun::kernels::cuda_ops {

struct DeviceStep {
  ops::FusedKind kind;
  uint8_t fn;
  uint8_t a;
  uint8_t b;
  DType round;
  bool nan;         // Clamp: a NaN bound
  int8_t pow_mode;  // Scalar pow: an fns::PowMode
  bool spill;       // a step other than the next reads the result
  float s0;
  float s1;
};

struct DeviceProgram {
  int count;
  DeviceStep steps[ops::kFusedMaxSteps];
};

DeviceProgram device_program(std::span<const ops::FusedStep> steps, size_t num_inputs);

}  // namespace pterun::kernels::cuda_ops
