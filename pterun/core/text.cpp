#include "pterun/core/text.h"

#include <cstdint>
#include <optional>

namespace pterun {
namespace {

struct Decoded {
  char32_t code_point;
  size_t length;
};

// The well-formed UTF-8 sequence at the start of `s`, or nullopt (Unicode
// 15, table 3-7).
std::optional<Decoded> decode_one(std::string_view s) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) return Decoded{b0, 1};
  size_t length = 0;
  char32_t cp = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return std::nullopt;
  }
  if (s.size() < length) return std::nullopt;
  for (size_t i = 1; i < length; ++i) {
    const uint8_t b = byte(i);
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) return std::nullopt;
    cp = cp << 6 | (b & 0x3F);
  }
  return Decoded{cp, length};
}

// Code points a reader cannot see, or that rearrange the text around them.
bool invisible(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F || cp == 0x2028 ||
         cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) ||
         cp == 0xFEFF;
}

void append_hex(std::string& out, const char* prefix, uint32_t value, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += prefix;
  for (int d = digits - 1; d >= 0; --d) out += kHex[(value >> (4 * d)) & 0xF];
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  while (!text.empty()) {
    auto d = decode_one(text);
    if (!d) return false;
    text.remove_prefix(d->length);
  }
  return true;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    auto d = decode_one(text);
    if (!d) {
      append_hex(out, "\\x", static_cast<uint8_t>(text[0]), 2);
      text.remove_prefix(1);
      continue;
    }
    if (d->code_point < 0x20 || d->code_point == 0x7F) {
      append_hex(out, "\\x", d->code_point, 2);
    } else if (invisible(d->code_point)) {
      append_hex(out, "\\u", d->code_point, 4);
    } else {
      out.append(text.data(), d->length);
    }
    text.remove_prefix(d->length);
  }
  return out;
}

}  // namespace pterun
