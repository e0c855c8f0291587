#pragma once

#include <charconv>
#include <concepts>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace pterun {

namespace detail {

template <typename T>
concept Streamable = requires(std::ostream& os, const T& v) {
  os << v;
};

template <typename T>
void str_append(std::string& out, const T& value) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out += std::string_view(value);
  } else if constexpr (std::same_as<T, char>) {
    out += value;
  } else if constexpr (std::same_as<T, bool>) {
    out += value ? '1' : '0';  // what a default std::ostream prints
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, signed char> &&
                       !std::is_same_v<T, unsigned char>) {
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
    out.append(digits, end);
  } else if constexpr (std::is_floating_point_v<T>) {
    // What a default std::ostream prints (%g, 6 significant digits), without
    // a stream: number formatting through iostreams has crashed inside some
    // Python processes (an H200 host's image), so the library never uses it.
    char digits[32];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, static_cast<double>(value),
                                   std::chars_format::general, 6);
    out.append(digits, end);
  } else if constexpr (std::is_enum_v<T> && !Streamable<T>) {
    str_append(out, static_cast<std::underlying_type_t<T>>(value));
  } else {
    std::ostringstream s;  // anything else with operator<<
    s << value;
    out += s.str();
  }
}

}  // namespace detail

/// Concatenates strings, numbers and anything else that can be streamed into
/// one string; used to build error messages without a formatting library.
/// Strings and integers are appended directly (no stream, no locale).
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::string out;
  (detail::str_append(out, args), ...);
  return out;
}

}  // namespace pterun
