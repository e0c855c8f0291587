#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "pterun/program/program.h"

namespace pterun::test {

/// Bounds that keep one fuzz input cheap: a method that would allocate more
/// is not loaded (a huge declared shape is refused, not allocated), and no
/// further method is loaded or run once the time is spent.
struct RunLimits {
  uint64_t max_planned_bytes = uint64_t{64} << 20;  // all planned buffers of one method
  uint64_t max_tensor_bytes = uint64_t{16} << 20;   // any tensor a method allocates or takes
  double max_seconds = 2.0;
};

/// How the inputs of a run are made, from one byte the fuzzer controls:
/// bits 0-1 the fill (zeros, small integers, random bytes, a descending
/// ramp), bits 2-3 the shape of dynamic inputs (the bound, half of it, a
/// zero-sized first dimension, ones), bit 4 whether tensors come in the
/// declared dim order or row-major (then reordered by the method).
struct InputRecipe {
  uint8_t fill = 0;
  uint8_t shape = 0;
  bool declared_order = true;
  static InputRecipe from_byte(uint8_t b) {
    return {static_cast<uint8_t>(b & 3), static_cast<uint8_t>((b >> 2) & 3), (b & 16) == 0};
  }
};

/// Loads every method of `program` that fits `limits` on the CPU and runs
/// each one that loads twice (with cloned outputs, then views) on inputs of
/// its declared shapes and dtypes, reading every byte of every output so
/// that sanitizers see a bad result. pterun::Error anywhere is an expected
/// outcome. Returns a checksum of what was read.
uint64_t load_and_run_methods(const std::shared_ptr<const Program>& program, InputRecipe recipe,
                              const RunLimits& limits = {});

/// When `bytes` are a bundled program (.bpte), loads each method that has
/// test cases and fits `limits`, runs every case and compares its outputs
/// (ExecuTorch's tolerances). Anything else returns 0. Returns a checksum.
uint64_t verify_bundled_cases(std::span<const uint8_t> bytes, const RunLimits& limits = {});

/// One input of the libFuzzer target (tests/fuzz/load_fuzzer.cpp), also
/// replayed by the C++ suite: byte 0 picks what the rest is (bit 0 clear, a
/// .pte program; set, a .ptd data file for the fixture
/// external_weights.pte) and, in bits 1-5, the InputRecipe. The program is
/// loaded, walked (program_walk.h), and its methods loaded and run; a bundled
/// program's test cases are run and verified too.
/// Returns a checksum; throws nothing but std::bad_alloc.
uint64_t run_fuzz_input(std::span<const uint8_t> data);

}  // namespace pterun::test
