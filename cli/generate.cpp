// `pterun generate`: handed to Python (`python -m pterun.llm`), because the
// tokenizers it reads (HF tokenizer.json, tiktoken, SentencePiece) are Python
// packages; the loop itself runs over the same library through the module.

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace pterun::cli {

namespace {

namespace fs = std::filesystem;

bool is_executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// The interpreter of the environment this command is installed in: pip puts
// the command in <env>/bin beside python3, and auditwheel moves it to
// <env>/lib/pythonX.Y/site-packages/pterun.scripts/, five levels below.
std::string find_python() {
  if (const char* env = std::getenv("PTERUN_PYTHON"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path dir = exe.parent_path();
    if (is_executable(dir / "python3")) return (dir / "python3").string();
    for (int level = 0; level < 5 && dir.has_relative_path(); ++level, dir = dir.parent_path()) {
      if (is_executable(dir / "bin" / "python3")) return (dir / "bin" / "python3").string();
    }
  }
  return "python3";  // from PATH
}

}  // namespace

int run_generate(int argc, char** argv) {
  const std::string python = find_python();
  std::vector<std::string> args = {python, "-m", "pterun.llm"};
  for (int i = 2; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<char*> c_args;
  for (auto& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  ::execvp(python.c_str(), c_args.data());  // returns only on failure
  std::cerr << "pterun: error: generate runs in Python (python -m pterun.llm), and starting '"
            << python << "' failed: " << std::strerror(errno)
            << "; set PTERUN_PYTHON to the interpreter that has pterun[llm] installed\n";
  return 1;
}

}  // namespace pterun::cli
