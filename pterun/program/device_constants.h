#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

#include "pterun/backend/device.h"

namespace pterun {

/// A program's constant tensors (weights, .ptd entries) uploaded to one GPU:
/// each host region is uploaded once, on first use, and shared by every
/// method of the program on that GPU. Thread-safe.
class DeviceConstants {
 public:
  explicit DeviceConstants(int device) : device_(device) {}

  /// The device copy of the `bytes` bytes at `host` (nullptr for 0 bytes).
  /// The pointer stays valid while this object lives. Errors as
  /// backend::DeviceBuffer and backend::upload.
  void* get(const void* host, size_t bytes);

  int device() const { return device_; }

 private:
  int device_;
  std::mutex mutex_;
  // Keyed by host address and size: two tensors over the same bytes share
  // one upload.
  std::map<std::pair<const void*, size_t>, backend::DeviceBuffer> buffers_;
};

}  // namespace pterun
