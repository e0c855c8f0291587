// Replays the committed fuzz inputs through the fuzz target's own code
// (fuzz_input.h): every finding of tests/fuzz/load_fuzzer.cpp
// (tests/fuzz/regressions, one file per bug) and the minimised corpus
// (tests/fuzz/corpus-min). Under AddressSanitizer and UBSan in CI, a
// regression crashes or reports here.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tests/cpp/fuzz_input.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename().string()[0] != '.' &&
        e.path().extension() != ".md") {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void replay(const std::string& dir, size_t at_least) {
  auto files = files_in(test::source_dir() + "/" + dir);
  ASSERT_GE(files.size(), at_least) << dir;
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    volatile uint64_t sink = test::run_fuzz_input(test::read_file(f));
    (void)sink;
  }
}

TEST(FuzzReplay, FindingsRunCleanly) {
  replay("tests/fuzz/regressions", 1);
}

TEST(FuzzReplay, MinimisedCorpusRunsCleanly) {
  replay("tests/fuzz/corpus-min", 1);
}

// Every fixture as the fuzzer's seed, with every input recipe: the
// load-and-run path on valid programs (all dtypes of inputs, dynamic
// shapes at their bound, half of it, empty, ones; both memory orders).
TEST(FuzzReplay, FixturesRunWithEveryInputRecipe) {
  for (const auto& path : test::all_program_files()) {
    SCOPED_TRACE(path);
    std::vector<uint8_t> input = test::read_file(path);
    input.insert(input.begin(), 0);
    for (int recipe = 0; recipe < 32; recipe += 3) {
      input[0] = static_cast<uint8_t>(recipe << 1);
      volatile uint64_t sink = test::run_fuzz_input(input);
      (void)sink;
    }
  }
}

// The bundled fixtures through the fuzz target's bundle path: every case
// runs and is compared (bundled_wrong.bpte's failing case included), and a
// program that is not a bundle is left alone.
TEST(FuzzReplay, BundledCasesRunThroughTheFuzzPath) {
  for (const char* name :
       {"bundled_add.bpte", "bundled_multi.bpte", "bundled_scalars.bpte", "bundled_wrong.bpte"}) {
    SCOPED_TRACE(name);
    auto bytes = test::read_file(test::source_dir() + "/tests/fixtures/" + name);
    EXPECT_GT(test::verify_bundled_cases(bytes), 0u);
  }
  auto plain = test::read_file(test::source_dir() + "/tests/fixtures/add.pte");
  EXPECT_EQ(test::verify_bundled_cases(plain), 0u);
}

}  // namespace
}  // namespace pterun
