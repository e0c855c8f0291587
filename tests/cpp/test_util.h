#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pterun/core/error.h"

namespace pterun::test {

std::string source_dir();
std::string fixtures_dir();
std::string vectors_dir();

/// True when the outside reference vectors (shared/reference/vectors, beside
/// the checkout or copied into it) are present; a fresh clone has none.
bool have_vectors();

/// Skips the calling test when the reference vectors are absent, saying so.
#define SKIP_WITHOUT_VECTORS()                                                                     \
  if (!::pterun::test::have_vectors()) {                                                           \
    GTEST_SKIP() << "the outside reference vectors are missing (" << ::pterun::test::vectors_dir() \
                 << "): put the project's shared/ folder beside the checkout to run this test";    \
  }

/// Whole file as bytes; fails the test (throws) when unreadable.
std::vector<uint8_t> read_file(const std::string& path);

/// tests/fixtures/manifest.json.
const nlohmann::json& manifest();

/// Every .pte under tests/fixtures and shared/reference/vectors.
std::vector<std::string> all_program_files();

/// Runs `fn`; returns the code of the pterun::Error it threw, or nullopt if
/// it returned normally. Any other exception propagates (a test failure).
std::optional<ErrorCode> error_code_of(const std::function<void()>& fn);

}  // namespace pterun::test
