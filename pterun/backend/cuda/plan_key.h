#pragma once

// Keys of the per-problem caches (cuBLASLt algorithms, cuDNN plans): plain
// structs without padding, zeroed before they are filled, compared and
// hashed by their bytes.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace pterun::cuda {

template <typename Key>
struct BytesHash {
  static_assert(std::has_unique_object_representations_v<Key>, "a key must have no padding");
  size_t operator()(const Key& k) const {
    // FNV-1a over the key's bytes.
    const auto* p = reinterpret_cast<const unsigned char*>(&k);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof(Key); ++i) {
      h ^= p[i];
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
};

template <typename Key>
struct BytesEqual {
  bool operator()(const Key& a, const Key& b) const {
    return std::memcmp(&a, &b, sizeof(Key)) == 0;
  }
};

/// The largest power of two, up to 256, dividing the address: what
/// cuBLASLt and cuDNN choose kernels by.
inline uint32_t address_alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

}  // namespace pterun::cuda
