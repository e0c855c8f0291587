#include "pterun/program/device_constants.h"

namespace pterun {

void* DeviceConstants::get(const void* host, size_t bytes) {
  if (bytes == 0) return nullptr;
  std::lock_guard lock(mutex_);
  auto key = std::make_pair(host, bytes);
  auto it = buffers_.find(key);
  if (it != buffers_.end()) return it->second.data();
  backend::DeviceBuffer buffer(device_, bytes);
  backend::upload(device_, buffer.data(), host, bytes);
  return buffers_.emplace(key, std::move(buffer)).first->second.data();
}

}  // namespace pterun
