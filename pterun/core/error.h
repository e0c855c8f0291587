#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "pterun/core/str_cat.h"

namespace pterun {

/// Error categories. The numbers follow ExecuTorch's runtime `Error` where a
/// category exists there (docs/format.md, "Error codes"); `FileNotFound` and
/// `IndexOutOfRange` are ours.
enum class ErrorCode : uint32_t {
  Internal = 0x01,
  InvalidState = 0x02,
  NotSupported = 0x10,
  NotImplemented = 0x11,
  InvalidArgument = 0x12,
  InvalidType = 0x13,
  OperatorMissing = 0x14,
  NotFound = 0x20,
  MemoryAllocationFailed = 0x21,
  AccessFailed = 0x22,
  InvalidProgram = 0x23,
  InvalidExternalData = 0x24,
  OutOfResources = 0x25,
  FileNotFound = 0x100,
  IndexOutOfRange = 0x101,
};

/// Short stable name of an error code ("InvalidProgram").
std::string_view error_code_name(ErrorCode code);

/// The one exception type of the library. The message starts with the
/// component and says what was expected and what came.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message)
      : std::runtime_error(std::move(message)), code_(code) {}

  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

/// Throws `Error(code, message)`; marked cold so checks stay cheap.
[[noreturn]] void throw_error(ErrorCode code, std::string message);

}  // namespace pterun

/// Throws an Error with `code` and the streamed message when `cond` is false.
#define PTERUN_CHECK(cond, code, ...)                                \
  do {                                                               \
    if (!(cond)) [[unlikely]]                                        \
      ::pterun::throw_error((code), ::pterun::str_cat(__VA_ARGS__)); \
  } while (0)
