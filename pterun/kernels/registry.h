#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pterun/core/dtype.h"
#include "pterun/core/value_kind.h"
#include "pterun/kernels/kernel.h"

namespace pterun::kernels {

/// A registered kernel and what the loader checks before it lets a program
/// call it.
struct KernelInfo {
  KernelFn fn = nullptr;
  /// How many leading arguments the kernel reads. An instruction passing
  /// fewer is refused at load (instructions also pass the returned value
  /// last, so they usually pass one more).
  uint8_t num_args = 0;
  /// For each of those arguments, the value kinds it accepts, as bits
  /// `1 << ValueKind` (an Int where a Double is read, None where an
  /// optional is, ...).
  const uint16_t* arg_kinds = nullptr;
  /// Deterministic and free of side effects: constant folding may run it
  /// once at load on constant inputs.
  bool foldable = false;
  /// The dtypes of the first tensor argument this device's backend
  /// computes; a method whose instruction passes another is refused at
  /// load, naming the operator.
  DTypeSet dtypes = DTypeSet::all();
};

/// Error InvalidProgram, starting with `context` ("method 'forward': "),
/// unless arguments of the given kinds, in order, give kernel `name` every
/// argument it reads, each of a kind it takes there.
void check_call(const KernelInfo& info, std::string_view name, std::span<const ValueKind> kinds,
                std::string_view context);

/// Kernels by operator name ("aten::add.out") and device. Filled once, from
/// the operator list (ops/register.cpp) for each backend of the build;
/// read-only afterwards.
class KernelRegistry {
 public:
  /// The process-wide registry with every kernel of this build.
  static const KernelRegistry& global();

  /// Adds a kernel; Error Internal when (name, device) is already present.
  void add(std::string name, Device device, const KernelInfo& info);

  /// Transitional, for families not yet behind ops/: a kernel with no
  /// argument checks at load, foldable when it was on the executor's list.
  void add(std::string name, Device device, KernelFn fn);

  /// The kernel for `name` on `device`, or nullptr.
  KernelFn find(std::string_view name, Device device) const;

  /// The kernel for `name` on `device` with what the loader checks, or
  /// nullptr.
  const KernelInfo* info(std::string_view name, Device device) const;

  size_t size() const { return kernels_.size(); }

  /// Names of the operators with a kernel for `device`, sorted.
  std::vector<std::string> names(Device device) const;

 private:
  std::map<std::pair<std::string, Device>, KernelInfo, std::less<>> kernels_;
};

}  // namespace pterun::kernels
