// Damaged XNNPACK payloads inside their programs (B22): each damaged copy
// that the reader still accepts (a flipped weight key padding byte, a
// changed dim, kernel size or padding...) is expanded, loaded and run, and
// must end in a pterun::Error or a clean run, never a crash (ASan and UBSan
// in scripts/test) or another exception.

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "pterun/core/error.h"
#include "pterun/format/xnnpack_reader.h"
#include "pterun/program/program.h"
#include "tests/cpp/fuzz_input.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

struct Host {
  std::vector<uint8_t> bytes;
  size_t offset = 0, size = 0, num_args = 0;
  std::shared_ptr<const Program> program;
};

Host host(const std::string& name) {
  Host h;
  h.bytes = test::read_file(test::fixtures_dir() + "/xnnpack/" + name + ".pte");
  h.program = Program::load(format::DataBuffer::copy_of(h.bytes));
  const format::MethodDesc& m = h.program->method("forward");
  const format::DelegateDesc& d = m.delegates.at(0);
  // Where the payload lies in the file (the program read a copy of it).
  auto found = std::search(h.bytes.begin(), h.bytes.end(), d.payload.begin(), d.payload.end());
  EXPECT_NE(found, h.bytes.end());
  h.offset = static_cast<size_t>(found - h.bytes.begin());
  h.size = d.payload.size();
  h.num_args = *format::delegate_call_num_args(m, 0);
  return h;
}

struct Tally {
  size_t reads = 0, runs = 0, rejected_at_load = 0;
};

// Runs `bytes` (the host file with a damaged payload) through loading,
// expansion, method loading and two calls.
void run(const std::vector<uint8_t>& bytes, Tally& tally, const std::string& what) {
  try {
    auto program = Program::load(format::DataBuffer::copy_of(bytes));
    test::RunLimits limits;
    limits.max_seconds = 1.0;
    volatile uint64_t sink = test::load_and_run_methods(program, test::InputRecipe{}, limits);
    (void)sink;
    ++tally.runs;
  } catch (const Error&) {
    ++tally.rejected_at_load;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": unexpected exception: " << e.what();
  }
}

TEST(XnnpackDamage, DamagedPayloadsRunOrFailCleanly) {
  for (const char* name : {"mlp", "ops_pool", "ops_depthwise", "ops_matmul"}) {
    SCOPED_TRACE(name);
    Host h = host(name);
    const format::NamedDataMap named(h.program->desc());
    const std::vector<uint8_t> payload(h.bytes.begin() + h.offset,
                                       h.bytes.begin() + h.offset + h.size);
    Tally tally;
    size_t attempt = 0;
    auto try_one = [&](const std::vector<uint8_t>& damaged, const std::string& what) {
      try {
        format::read_xnnpack_graph(damaged, named, h.num_args);
      } catch (const Error&) {
        return;  // the reader's own sweep checks these (xnnpack_reader_test.cpp)
      }
      ++tally.reads;
      // Every 7th accepted copy runs whole (the sweep stays quick under ASan).
      if (attempt++ % 7 != 0) return;
      std::vector<uint8_t> bytes = h.bytes;
      std::copy(damaged.begin(), damaged.end(), bytes.begin() + static_cast<ptrdiff_t>(h.offset));
      run(bytes, tally, what);
    };
    std::vector<uint8_t> b = payload;
    for (size_t i = 0; i < b.size(); ++i) {
      for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x10}, uint8_t{0x80}}) {
        b[i] ^= mask;
        try_one(b, "byte " + std::to_string(i) + " ^ " + std::to_string(mask));
        b[i] ^= mask;
      }
    }
    for (size_t at = 0; at + 4 <= b.size(); at += 4) {
      const std::vector<uint8_t> saved(b.begin() + at, b.begin() + at + 4);
      for (uint32_t v : {0u, 1u, 3u, 0x7fffffffu, 0xffffffffu}) {
        for (size_t k = 0; k < 4; ++k) b[at + k] = static_cast<uint8_t>(v >> (8 * k));
        try_one(b, "word at " + std::to_string(at) + " = " + std::to_string(v));
      }
      std::copy(saved.begin(), saved.end(), b.begin() + at);
    }
    EXPECT_GT(tally.runs + tally.rejected_at_load, 0u);
    std::cout << "[xnnpack damage run] " << name << ": " << tally.reads
              << " damaged payloads read, " << tally.runs << " ran, " << tally.rejected_at_load
              << " refused when loaded\n";
  }
}

}  // namespace
}  // namespace pterun
