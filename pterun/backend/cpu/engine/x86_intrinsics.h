#pragma once

// <immintrin.h> for the CPU kernels that use x86 intrinsics, included where
// the build targets any of the instruction sets they use. GCC 12's AVX-512
// headers warn about their own placeholder operands (GCC bug 105593), which
// warnings-as-errors would turn into a failed build: silenced for the
// header only.

#if defined(__F16C__) || defined(__AVX2__) || defined(__AVX512F__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
