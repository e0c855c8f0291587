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

}  // namespace pterun
