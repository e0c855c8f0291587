#include "pterun/backend/cpu/engine/cpu_features.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace pterun::cpu {

namespace {

bool detect_split_512_bit_fma() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return false;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  if (std::strcmp(vendor, "AuthenticAMD") != 0) return false;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  // Family 0x19 (Zen 3 and Zen 4; only Zen 4 has AVX-512): base family
  // 0xF plus the extended family 0xA.
  const unsigned family = ((a >> 8) & 0xf) + ((a >> 20) & 0xff);
  return family == 0x19;
#else
  return false;
#endif
}

}  // namespace

bool splits_512_bit_fma() {
  // PTERUN_SPLIT_FMA=0 or 1 overrides the CPUID answer (tests take the
  // kernels that depend on it on any CPU).
  static const bool split = [] {
    const char* env = std::getenv("PTERUN_SPLIT_FMA");
    if (env != nullptr && (std::strcmp(env, "0") == 0 || std::strcmp(env, "1") == 0)) {
      return env[0] == '1';
    }
    return detect_split_512_bit_fma();
  }();
  return split;
}

}  // namespace pterun::cpu
