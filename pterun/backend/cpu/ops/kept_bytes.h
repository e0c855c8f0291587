#pragma once

// What a kernel that keeps something derived from weights (packed panels,
// reordered filters) remembers of them: their address and a copy of their
// bytes, so that constant weights are derived once and changed ones again.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace pterun::cpu {

class KeptBytes {
 public:
  /// True when the `n` bytes at `p` are the ones taken last, at the same
  /// address: known without reading them when they are the constant
  /// (nonzero Tensor::constant_id `id`) last found there, else compared.
  bool same(const void* p, size_t n, uint64_t id) {
    if (at_ != p || bytes_.size() != n) return false;
    if (id != 0 && id == id_) return true;
    if (std::memcmp(bytes_.data(), p, n) != 0) return false;
    id_ = id;
    return true;
  }
  /// Remembers the `n` bytes at `p` (after deriving from them).
  void take(const void* p, size_t n, uint64_t id) {
    const auto* b = static_cast<const char*>(p);
    bytes_.assign(b, b + n);
    at_ = p;
    id_ = id;
  }
  /// Before what was derived changes: matches nothing until take().
  void forget() {
    bytes_.clear();
    at_ = nullptr;
    id_ = 0;
  }

 private:
  std::vector<char> bytes_;
  const void* at_ = nullptr;
  uint64_t id_ = 0;
};

}  // namespace pterun::cpu
