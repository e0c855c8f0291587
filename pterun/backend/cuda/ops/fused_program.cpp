// device_program (fused_program.h): a checked fused program's steps with
// their scalars converted to float as the unfused CUDA kernels convert
// them.

#include "pterun/backend/cuda/ops/fused_program.h"

#include <cmath>

#include "pterun/backend/cuda/ops/elementwise_compute.h"

namespace pterun::kernels::cuda_ops {

using ops::FusedKind;
using ops::ScalarFn;

DeviceProgram device_program(std::span<const ops::FusedStep> steps, size_t num_inputs) {
  DeviceProgram p{};
  p.count = static_cast<int>(steps.size());
  for (size_t j = 0; j < steps.size(); ++j) {
    const ops::FusedStep& s = steps[j];
    DeviceStep& d = p.steps[j];
    d.kind = s.kind;
    d.fn = s.fn;
    d.a = s.a;
    d.b = s.b;
    d.round = s.round;
    d.s0 = static_cast<float>(s.s0);
    d.s1 = static_cast<float>(s.s1);
    if (s.kind == FusedKind::Scalar) {
      switch (static_cast<ScalarFn>(s.fn)) {
        // alpha * s in float, as binary_scalar.cu forms it.
        case ScalarFn::Add:
        case ScalarFn::Sub: d.s0 = static_cast<float>(s.s1) * static_cast<float>(s.s0); break;
        default:
          d.pow_mode = static_cast<int8_t>(elementwise::pow_mode(static_cast<ScalarFn>(s.fn)));
      }
    }
    if (s.kind == FusedKind::Clamp) d.nan = std::isnan(d.s0) || std::isnan(d.s1);
  }
  // A result goes to the register file unless only the next step reads it
  // (the kernel keeps the last result in registers).
  const size_t n = steps.size();
  for (size_t j = 0; j < n; ++j) {
    const auto reg = static_cast<uint8_t>(num_inputs + j);
    for (size_t k = j + 2; k < n; ++k) {
      const bool binary = steps[k].kind == FusedKind::Binary;
      p.steps[j].spill = p.steps[j].spill || steps[k].a == reg || (binary && steps[k].b == reg);
    }
  }
  return p;
}

}  // namespace pterun::kernels::cuda_ops
