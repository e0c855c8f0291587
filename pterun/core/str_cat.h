#pragma once

#include <sstream>
#include <string>
#include <utility>

namespace pterun {

/// Concatenates anything that can be streamed into one string; used to build
/// error messages without a formatting library.
template <typename... Args>
std::string str_cat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

}  // namespace pterun
