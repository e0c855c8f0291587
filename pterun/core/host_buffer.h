#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace pterun {

/// A zero-initialised, 64-byte-aligned host allocation with one owner.
/// Zeroing is calloc's: large blocks come as fresh zero pages, so memory
/// that is never used is never touched (a damaged program that plans a
/// huge buffer costs address space, not RAM).
class HostBuffer {
 public:
  HostBuffer() = default;
  /// Error MemoryAllocationFailed when the allocation fails.
  explicit HostBuffer(size_t bytes);
  HostBuffer(HostBuffer&&) noexcept = default;
  HostBuffer& operator=(HostBuffer&&) noexcept = default;

  uint8_t* data() const { return ptr_ ? static_cast<uint8_t*>(ptr_.get()) + offset_ : nullptr; }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> ptr_;  // as calloc returned it
  size_t offset_ = 0;                // to the first 64-byte boundary
  size_t size_ = 0;
};

}  // namespace pterun
