// libFuzzer target for the loader. The first input byte picks what the rest
// is: even, a .pte program; odd, a .ptd data file given to the fixture
// external_weights.pte. Any pterun::Error is an expected outcome; a crash,
// sanitizer report, other exception or hang is a bug.

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "pterun/core/error.h"
#include "pterun/program/program.h"
#include "tests/cpp/program_walk.h"

namespace {

const std::vector<uint8_t>& companion_program() {
  static const std::vector<uint8_t> bytes = [] {
    const char* path = std::getenv("PTERUN_FUZZ_PTE");
    std::ifstream in(path ? path : PTERUN_SOURCE_DIR "/tests/fixtures/external_weights.pte",
                     std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>());
  }();
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::span<const uint8_t> body(data + 1, size - 1);
  try {
    std::shared_ptr<const pterun::Program> program;
    if (data[0] % 2 == 0) {
      program = pterun::Program::load(pterun::format::DataBuffer::copy_of(body));
    } else {
      program = pterun::Program::load(pterun::format::DataBuffer::copy_of(companion_program()),
                                      pterun::format::DataBuffer::copy_of(body));
    }
    volatile uint64_t sink = pterun::test::walk_program(*program);
    (void)sink;
  } catch (const pterun::Error&) {
  }
  return 0;
}
