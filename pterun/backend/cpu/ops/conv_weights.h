#pragma once

// What the CPU's own convolution kernels (conv_f32.cpp, conv_f32_nhwc.cpp)
// remember of the weights they packed: the bytes they packed them from, so
// that constant weights are packed once and changed ones again.

#include <cstdint>
#include <cstring>
#include <vector>

#include "pterun/ops/conv.h"

namespace pterun::cpu {

/// Elements between the first and the last float weight of `p`, plus one.
inline int64_t weight_span(const ops::ConvProblem& p) {
  const int64_t* ws = p.w_strides;
  const int64_t icg = p.ic / p.groups;
  return 1 + (p.oc - 1) * ws[0] + (icg - 1) * ws[1] + (p.kh - 1) * ws[2] + (p.kw - 1) * ws[3];
}

/// A copy of the weight bytes packed weights were made from (a memcmp per
/// call against the problem's weights).
class WeightSnapshot {
 public:
  /// True when `p`'s weights are at the same address with the same bytes:
  /// known without reading them when they are the constant (nonzero
  /// ConvProblem::weight_id) last found there.
  bool same(const ops::ConvProblem& p) {
    const size_t bytes = static_cast<size_t>(weight_span(p)) * sizeof(float);
    if (at_ != p.weight || bytes_.size() != bytes) return false;
    if (p.weight_id != 0 && p.weight_id == id_) return true;
    if (std::memcmp(bytes_.data(), p.weight, bytes) != 0) return false;
    id_ = p.weight_id;
    return true;
  }
  /// Remembers `p`'s weights (after packing them).
  void take(const ops::ConvProblem& p) {
    const size_t bytes = static_cast<size_t>(weight_span(p)) * sizeof(float);
    bytes_.resize(bytes);
    std::memcpy(bytes_.data(), p.weight, bytes);
    at_ = p.weight;
    id_ = p.weight_id;
  }

 private:
  std::vector<char> bytes_;
  const void* at_ = nullptr;
  uint64_t id_ = 0;
};

}  // namespace pterun::cpu
