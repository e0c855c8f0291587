#include "pterun/format/named_data_map.h"

namespace pterun::format {

NamedDataMap::NamedDataMap(const ProgramDesc& program, const ExternalData* external) {
  // emplace keeps the first entry of a key, so the .ptd wins a duplicate.
  has_external_ = external != nullptr;
  if (external != nullptr) {
    for (const auto& e : external->entries) entries_.emplace(e.key, e.data);
  }
  for (const auto& n : program.named_data) entries_.emplace(n.key, n.data);
}

std::optional<std::span<const uint8_t>> NamedDataMap::find(std::string_view key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

}  // namespace pterun::format
