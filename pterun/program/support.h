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

/// Checks every operator, delegate call and tensor of `method` against this
/// build's kernels for `device`; every delegate call is a missing backend.
SupportReport check_support(const format::MethodDesc& method, Device device);

class Program;

/// The same for method `name` of `program` as it runs
/// (Program::runnable_method): the operators its expanded delegates use
/// count, and the delegates pterun cannot run are the missing backends,
/// each with the reason. Errors as Program::runnable_method.
SupportReport check_support(const Program& program, const std::string& name, Device device);

}  // namespace pterun
