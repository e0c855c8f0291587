#include "pterun/core/error.h"

#include <ios>

namespace pterun {

namespace {
// GCC 13 moved the set-up of the standard streams and of the classic locale
// into libstdc++ itself. A process that loads an older libstdc++ before us
// (some Python environments do) then never runs it, and the first
// std::ostringstream crashes. Asking for it explicitly, as objects built
// with older headers did, is harmless with any libstdc++.
const std::ios_base::Init g_stream_init;
}  // namespace

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::Internal: return "Internal";
    case ErrorCode::InvalidState: return "InvalidState";
    case ErrorCode::NotSupported: return "NotSupported";
    case ErrorCode::NotImplemented: return "NotImplemented";
    case ErrorCode::InvalidArgument: return "InvalidArgument";
    case ErrorCode::InvalidType: return "InvalidType";
    case ErrorCode::OperatorMissing: return "OperatorMissing";
    case ErrorCode::NotFound: return "NotFound";
    case ErrorCode::MemoryAllocationFailed: return "MemoryAllocationFailed";
    case ErrorCode::AccessFailed: return "AccessFailed";
    case ErrorCode::InvalidProgram: return "InvalidProgram";
    case ErrorCode::InvalidExternalData: return "InvalidExternalData";
    case ErrorCode::OutOfResources: return "OutOfResources";
    case ErrorCode::FileNotFound: return "FileNotFound";
    case ErrorCode::IndexOutOfRange: return "IndexOutOfRange";
  }
  return "Unknown";
}

void throw_error(ErrorCode code, std::string message) {
  throw Error(code, std::move(message));
}

}  // namespace pterun
