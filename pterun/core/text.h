#pragma once

#include <string>
#include <string_view>

namespace pterun {

/// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or
/// code points past U+10FFFF), as FlatBuffers requires of its strings.
bool is_valid_utf8(std::string_view text);

/// `text` for an error message: printable UTF-8 as it is, every other byte
/// as `\xNN` (bytes that are not UTF-8, ASCII control characters) and
/// invisible or layout-changing code points (C1 controls, line separators,
/// bidirectional overrides) as `\uNNNN`. The result is always valid,
/// printable UTF-8, so a message quoting bytes of a damaged file can
/// become a Python str. Every message that quotes file content uses it.
std::string printable(std::string_view text);

}  // namespace pterun
