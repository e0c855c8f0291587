#include "pterun/program/shared_state.h"

#include "pterun/core/error.h"

namespace pterun {

uint8_t* SharedState::buffer(uint32_t memory_id, size_t bytes, bool& created) {
  created = false;
  for (auto& [id, buf] : buffers_) {
    if (id == memory_id) {
      PTERUN_CHECK(buf.size() >= bytes, ErrorCode::InvalidProgram,
                   "shared state: methods disagree "
                   "on the size of shared buffer ",
                   memory_id, " (", buf.size(), " vs ", bytes, " bytes)");
      return buf.data();
    }
  }
  created = true;
  buffers_.emplace_back(memory_id, backend::Allocation(device_, device_index_, bytes));
  return buffers_.back().second.data();
}

bool SharedState::contains(const void* p) {
  std::lock_guard lock(mutex_);
  const auto* q = static_cast<const uint8_t*>(p);
  for (const auto& [id, a] : buffers_) {
    if (a.size() > 0 && q >= a.data() && q < a.data() + a.size()) return true;
  }
  return false;
}

}  // namespace pterun
