// libFuzzer target: loading, method loading and running (tests/cpp/fuzz_input.h
// says what an input is). Any pterun::Error is an expected outcome; a crash,
// sanitizer report, other exception, an allocation past -malloc_limit_mb or
// a hang is a bug.

#include <cstddef>
#include <cstdint>
#include <span>

#include "pterun/core/threads.h"
#include "tests/cpp/fuzz_input.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  pterun::set_num_threads(1);  // one core per fuzzing process, deterministic runs
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  volatile uint64_t sink = pterun::test::run_fuzz_input(std::span<const uint8_t>(data, size));
  (void)sink;
  return 0;
}
