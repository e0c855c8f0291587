#pragma once

#include <functional>
#include <string>

namespace pterun {

/// Severity, numbered as Python's logging levels.
enum class LogLevel : int { Debug = 10, Info = 20, Warning = 30, Error = 40 };

/// Where runtime messages go. The default writes to stderr; the Python
/// module installs one that forwards to the "pterun" logger (docs/python-api.md, B24).
using LogSink = std::function<void(LogLevel, const std::string&)>;

void set_log_sink(LogSink sink);

/// Sends one message to the current sink.
void log(LogLevel level, const std::string& message);

}  // namespace pterun
