#include "pterun/core/threads.h"

#include <atomic>
#include <cstdlib>
#include <thread>

#include "pterun/core/error.h"

namespace pterun {
namespace {

int initial_threads() {
  if (const char* env = std::getenv("PTERUN_NUM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1 && n <= 4096) return static_cast<int>(n);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

std::atomic<int>& threads() {
  static std::atomic<int> n{initial_threads()};
  return n;
}

}  // namespace

int get_num_threads() {
  return threads().load(std::memory_order_relaxed);
}

void set_num_threads(int n) {
  PTERUN_CHECK(n >= 1, ErrorCode::InvalidArgument, "set_num_threads: n must be at least 1, got ",
               n);
  threads().store(n, std::memory_order_relaxed);
}

}  // namespace pterun
