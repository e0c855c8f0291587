#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>

#include "pterun/format/program_desc.h"

namespace pterun::format {

/// The named data a delegate reads by key: the .ptd file's entries merged
/// with the program's own `named_data`, the .ptd first, as ExecuTorch hands
/// them to a backend's init (docs/format.md, "Named data"). Holds views only: the
/// ProgramDesc and ExternalData it was built from must outlive it.
class NamedDataMap {
 public:
  explicit NamedDataMap(const ProgramDesc& program, const ExternalData* external = nullptr);

  /// The bytes stored under `key`, or nullopt when no entry has that key.
  std::optional<std::span<const uint8_t>> find(std::string_view key) const;

  size_t size() const { return entries_.size(); }

  /// True when a .ptd file's entries were merged in.
  bool has_external_data() const { return has_external_; }

 private:
  bool has_external_ = false;
  std::unordered_map<std::string_view, std::span<const uint8_t>> entries_;
};

}  // namespace pterun::format
