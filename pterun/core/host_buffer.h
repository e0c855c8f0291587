#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace pterun {

/// A zero-initialised, 64-byte-aligned host allocation with one owner.
class HostBuffer {
 public:
  HostBuffer() = default;
  /// Error MemoryAllocationFailed when the allocation fails.
  explicit HostBuffer(size_t bytes);
  HostBuffer(HostBuffer&&) noexcept = default;
  HostBuffer& operator=(HostBuffer&&) noexcept = default;

  uint8_t* data() const { return static_cast<uint8_t*>(ptr_.get()); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> ptr_;
  size_t size_ = 0;
};

}  // namespace pterun
