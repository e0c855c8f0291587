#pragma once

// Eight and sixteen floats as GCC/Clang vector types, for the register-
// blocked matmul and convolution kernels: one AVX / AVX-512 register each
// (or pairs of narrower ones). Sixteen-wide blocks are used only where the
// build targets AVX-512 (kWide: 32 vector registers).

#include <cstring>

namespace pterun::cpu::vec {

typedef float V8 __attribute__((vector_size(32)));
typedef float V16 __attribute__((vector_size(64)));
#if defined(__AVX512F__)
constexpr bool kWide = true;
#else
constexpr bool kWide = false;
#endif

/// A vector from unaligned memory.
template <typename V>
inline V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// A vector to unaligned memory.
template <typename V>
inline void store(float* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace pterun::cpu::vec
