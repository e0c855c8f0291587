#pragma once

#include <string>
#include <vector>

#include "pterun/format/program_desc.h"
#include "pterun/kernels/kernel.h"

namespace pterun {

/// What keeps a method from running on a device in this build.
struct SupportReport {
  std::vector<std::string> missing_operators;  // "aten::foo.out", each once
  std::vector<std::string> missing_backends;   // delegate ids, each once
  std::vector<std::string> other;              // unbound shapes, devices ...

  bool ok() const { return missing_operators.empty() && missing_backends.empty() && other.empty(); }
  /// One line listing everything, for NotImplemented errors and `inspect`.
  std::string describe(const std::string& method, Device device) const;
};

/// Checks every operator, delegate and tensor of `method` against this
/// build's kernels for `device`.
SupportReport check_support(const format::MethodDesc& method, Device device);

}  // namespace pterun
