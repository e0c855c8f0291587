#pragma once

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "pterun/core/host_buffer.h"

namespace pterun {

/// State buffers (memory id 2 and above) shared by every method of one
/// program on one device (B15a), created by the first method that needs
/// them and initialised once.
class SharedState {
 public:
  /// The buffer for memory id `memory_id` with at least `bytes`; `created`
  /// is set when this call allocated it (so the caller initialises it).
  uint8_t* buffer(uint32_t memory_id, size_t bytes, bool& created);

  std::mutex& mutex() { return mutex_; }

 private:
  std::mutex mutex_;
  std::vector<std::pair<uint32_t, HostBuffer>> buffers_;
};

}  // namespace pterun
