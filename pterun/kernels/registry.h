#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pterun/kernels/kernel.h"

namespace pterun::kernels {

/// Kernels by operator name ("aten::add.out") and device. Filled once, by
/// each backend's register.cpp; read-only afterwards.
class KernelRegistry {
 public:
  /// The process-wide registry with every kernel of this build.
  static const KernelRegistry& global();

  /// Adds a kernel; Error Internal when (name, device) is already present.
  void add(std::string name, Device device, KernelFn fn);

  /// The kernel for `name` on `device`, or nullptr.
  KernelFn find(std::string_view name, Device device) const;

  size_t size() const { return kernels_.size(); }

  /// Names of the operators with a kernel for `device`, sorted.
  std::vector<std::string> names(Device device) const;

 private:
  std::map<std::pair<std::string, Device>, KernelFn, std::less<>> kernels_;
};

}  // namespace pterun::kernels
