// Damaged programs never crash the loader (docs/python-api.md, B22): every truncation, bit flip
// and overwritten header field or flatbuffer word either loads cleanly (the
// damage left a valid program) or throws pterun::Error. Run under
// AddressSanitizer in CI, so an out-of-bounds read fails the test too.

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "pterun/format/header.h"
#include "pterun/program/program.h"
#include "tests/cpp/program_walk.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

using Clock = std::chrono::steady_clock;

struct Tally {
  size_t loaded = 0;
  size_t rejected = 0;
  double slowest_ms = 0;
};

// Loads `program` (and `data`) from exactly these bytes; any exception that
// is not a pterun::Error fails the test.
void try_load(std::span<const uint8_t> program, std::span<const uint8_t> data, Tally& tally,
              const std::string& what) {
  auto start = Clock::now();
  try {
    // Borrowed in place (no copy per load): ASan still sees reads past the
    // end of the caller's allocation.
    auto p = Program::load(format::DataBuffer::borrow(program, nullptr),
                           data.empty() ? nullptr : format::DataBuffer::borrow(data, nullptr));
    volatile uint64_t sink = test::walk_program(*p);
    (void)sink;
    ++tally.loaded;
  } catch (const Error&) {
    ++tally.rejected;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": unexpected exception type: " << e.what();
  }
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  tally.slowest_ms = std::max(tally.slowest_ms, ms);
}

void put_word(std::vector<uint8_t>& b, size_t at, uint64_t v, size_t width) {
  for (size_t i = 0; i < width; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// Every truncation (sampled beyond 8 KiB), three bit-flip patterns on every
// byte of the flatbuffer region (up to 64 KiB), every 32-bit word of the flatbuffer region
// overwritten with hostile values, and every header field set to extremes.
Tally corrupt_all(const std::vector<uint8_t>& original, bool is_data,
                  const std::vector<uint8_t>& companion) {
  Tally tally;
  auto load = [&](const std::vector<uint8_t>& bytes, const std::string& what) {
    if (is_data) {
      try_load(companion, bytes, tally, what);
    } else {
      try_load(bytes, {}, tally, what);
    }
  };
  const size_t n = original.size();
  for (size_t len = 0; len < n; len += (len < 8192 ? 1 : std::max<size_t>(n / 512, 1))) {
    load(std::vector<uint8_t>(original.begin(), original.begin() + len),
         "truncated to " + std::to_string(len));
  }
  size_t fb_end = n;
  if (!is_data && n >= 40 && std::memcmp(&original[8], "eh00", 4) == 0) {
    fb_end = std::min<uint64_t>(format::read_u64le(&original[16]), n);
  }
  fb_end = std::min<size_t>(fb_end, 65536);
  // Bit flips over the flatbuffer region (segments hold payload bytes, where
  // a flip leaves a valid program).
  std::vector<uint8_t> b = original;
  for (size_t i = 0; i < fb_end; ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      b[i] ^= mask;
      load(b, "byte " + std::to_string(i) + " ^ " + std::to_string(mask));
      b[i] ^= mask;
    }
  }
  for (size_t at = 0; at + 4 <= fb_end; at += 4) {
    uint32_t word = format::read_u32le(&original[at]);
    for (uint64_t v : {uint64_t{0}, uint64_t{0xffffffff}, uint64_t{0x7fffffff},
                       uint64_t{0x80000000}, uint64_t{word} + 4, uint64_t{word} - 4, uint64_t{n}}) {
      put_word(b, at, v, 4);
      load(b, "word at " + std::to_string(at) + " = " + std::to_string(v));
    }
    put_word(b, at, word, 4);
  }
  // Header fields: the root offset and the u32/u64 fields of eh00 or FH01.
  std::vector<std::pair<size_t, size_t>> fields = {{0, 4}, {12, 4}, {16, 8}, {24, 8}, {32, 8}};
  if (is_data) fields.push_back({40, 8});
  for (auto [at, width] : fields) {
    if (at + width > n) continue;
    for (uint64_t v :
         {uint64_t{0}, uint64_t{1}, uint64_t{8}, uint64_t{n - 1}, uint64_t{n}, uint64_t{n + 1},
          uint64_t{1} << 31, uint64_t{0xffffffff}, uint64_t{1} << 63, ~uint64_t{0}}) {
      put_word(b, at, v, width);
      load(b, "header field at " + std::to_string(at));
    }
    b = original;
  }
  return tally;
}

TEST(Corruption, EveryProgramFileSurvivesDamage) {
  auto files = test::all_program_files();
  ASSERT_FALSE(files.empty());
  for (const auto& path : files) {
    SCOPED_TRACE(path);
    auto bytes = test::read_file(path);
    Tally t = corrupt_all(bytes, false, {});
    EXPECT_GT(t.rejected, 0u);
    EXPECT_LT(t.slowest_ms, 2000.0) << "a damaged copy took too long to load";
    std::cout << "[corruption] " << std::filesystem::path(path).filename().string() << ": "
              << t.loaded + t.rejected << " damaged copies, " << t.rejected << " rejected, "
              << t.loaded << " loaded, slowest " << t.slowest_ms << " ms\n";
  }
}

TEST(Corruption, DataFileSurvivesDamage) {
  std::string pte = test::fixtures_dir() + "/external_weights.pte";
  std::string ptd = test::fixtures_dir() + "/external_weights.ptd";
  ASSERT_TRUE(std::filesystem::exists(ptd));
  Tally t = corrupt_all(test::read_file(ptd), true, test::read_file(pte));
  EXPECT_GT(t.rejected, 0u);
  EXPECT_LT(t.slowest_ms, 2000.0);
}

}  // namespace
}  // namespace pterun
