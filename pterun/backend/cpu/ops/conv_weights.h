#pragma once

// What the CPU's own convolution kernels (conv_f32.cpp, conv_f32_nhwc.cpp)
// remember of the weights they packed (kept_bytes.h).

#include <cstddef>
#include <cstdint>

#include "pterun/backend/cpu/ops/kept_bytes.h"
#include "pterun/ops/conv.h"

namespace pterun::cpu {

/// Elements between the first and the last float weight of `p`, plus one.
inline int64_t weight_span(const ops::ConvProblem& p) {
  const int64_t* ws = p.w_strides;
  const int64_t icg = p.ic / p.groups;
  return 1 + (p.oc - 1) * ws[0] + (icg - 1) * ws[1] + (p.kh - 1) * ws[2] + (p.kw - 1) * ws[3];
}

/// The weight bytes packed weights were made from (KeptBytes).
class WeightSnapshot {
 public:
  /// True when `p`'s weights are the ones taken last (KeptBytes::same).
  bool same(const ops::ConvProblem& p) { return kept_.same(p.weight, bytes(p), p.weight_id); }
  /// Remembers `p`'s weights (after packing them).
  void take(const ops::ConvProblem& p) { kept_.take(p.weight, bytes(p), p.weight_id); }

 private:
  static size_t bytes(const ops::ConvProblem& p) {
    return static_cast<size_t>(weight_span(p)) * sizeof(float);
  }
  KeptBytes kept_;
};

}  // namespace pterun::cpu
