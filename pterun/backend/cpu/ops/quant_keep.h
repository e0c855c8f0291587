#pragma once

// keep_in_place: see below. Shared by the int8 and 4-bit product tiles
// (quant_gemm.cpp, quant_gemm_packed.cpp).

#include "pterun/backend/cpu/engine/x86_intrinsics.h"

namespace pterun::cpu {

#if defined(__AVX512F__)
/// Hands every accumulator through an empty asm that takes and gives it
/// back, after the loop that sums into them: GCC otherwise keeps them in
/// other registers than the code after the loop reads, and copies each of
/// them twice per step of the loop (two register moves per vpdpbusd, and
/// stack spills, in the packed tile on gathered windows).
template <int R, int P>
[[gnu::always_inline]] inline void keep_in_place(__m512i (&acc)[R][P]) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int q = 0; q < P; ++q) asm("" : "+v"(acc[r][q]));
  }
}
#endif

}  // namespace pterun::cpu
