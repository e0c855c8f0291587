#include "pterun/core/logging.h"

#include <cstdio>
#include <memory>
#include <mutex>

namespace pterun {
namespace {

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}

std::shared_ptr<LogSink>& sink() {
  static std::shared_ptr<LogSink> s;
  return s;
}

}  // namespace

void set_log_sink(LogSink s) {
  std::lock_guard lock(sink_mutex());
  sink() = s ? std::make_shared<LogSink>(std::move(s)) : nullptr;
}

void log(LogLevel level, const std::string& message) {
  std::shared_ptr<LogSink> current;
  {
    std::lock_guard lock(sink_mutex());
    current = sink();
  }
  if (current) {
    (*current)(level, message);
  } else {
    std::fprintf(stderr, "pterun: %s\n", message.c_str());
  }
}

}  // namespace pterun
