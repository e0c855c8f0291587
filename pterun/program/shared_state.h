#pragma once

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "pterun/backend/allocation.h"
#include "pterun/kernels/kernel.h"

namespace pterun {

/// State buffers (memory id 2 and above) shared by every method of one
/// program on one device (docs/python-api.md, B15a), created by the first method that needs
/// them and initialised once. On a GPU the buffers are device memory.
class SharedState {
 public:
  SharedState(Device device, int device_index) : device_(device), device_index_(device_index) {}

  /// The buffer for memory id `memory_id` with at least `bytes`; `created`
  /// is set when this call allocated it (so the caller initialises it).
  uint8_t* buffer(uint32_t memory_id, size_t bytes, bool& created);

  std::mutex& mutex() { return mutex_; }

  /// True when `p` points into one of the buffers.
  bool contains(const void* p);

 private:
  Device device_;
  int device_index_;
  std::mutex mutex_;
  std::vector<std::pair<uint32_t, backend::Allocation>> buffers_;
};

}  // namespace pterun
