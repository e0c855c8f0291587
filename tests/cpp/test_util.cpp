#include "tests/cpp/test_util.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace pterun::test {

std::string source_dir() {
  return PTERUN_SOURCE_DIR;
}
std::string fixtures_dir() {
  return source_dir() + "/tests/fixtures";
}
std::string vectors_dir() {
  return std::string(PTERUN_SHARED_DIR) + "/reference/vectors";
}

bool have_vectors() {
  return std::filesystem::is_directory(vectors_dir());
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("test: cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const nlohmann::json& manifest() {
  static const nlohmann::json m = [] {
    std::ifstream in(fixtures_dir() + "/manifest.json");
    if (!in) throw std::runtime_error("test: tests/fixtures/manifest.json is missing");
    return nlohmann::json::parse(in);
  }();
  return m;
}

std::vector<std::string> all_program_files() {
  std::vector<std::string> out;
  for (const auto& dir : {fixtures_dir(), vectors_dir()}) {
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".pte") out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<ErrorCode> error_code_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

}  // namespace pterun::test
