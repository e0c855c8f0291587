#pragma once

// What the CPU the process runs on does that a build flag cannot say.

namespace pterun::cpu {

/// Whether the CPU runs each 512-bit multiply-add as two 256-bit halves
/// (AMD Zen 4: two 256-bit FMA pipes), so that three 256-bit vectors cost
/// what one and a half 512-bit ones do. False elsewhere (Intel's 512-bit
/// pipes, Zen 5's full-width ones) and without x86 CPUID. The environment
/// variable PTERUN_SPLIT_FMA=0 or 1, read once, overrides it.
bool splits_512_bit_fma();

}  // namespace pterun::cpu
