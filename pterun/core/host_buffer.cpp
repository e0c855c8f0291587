#include "pterun/core/host_buffer.h"

#include <cstdint>
#include <cstdlib>

#include "pterun/core/error.h"
#include "pterun/core/stats.h"

namespace pterun {

void HostBuffer::Free::operator()(void* p) const {
  std::free(p);
}

HostBuffer::HostBuffer(size_t bytes) : size_(bytes) {
  constexpr size_t kAlign = 64;
  const size_t total = bytes + kAlign;
  PTERUN_CHECK(total > bytes, ErrorCode::MemoryAllocationFailed, "memory: ", bytes,
               " bytes is too large");
  void* p = std::calloc(total, 1);
  PTERUN_CHECK(p != nullptr, ErrorCode::MemoryAllocationFailed, "memory: cannot allocate ", bytes,
               " bytes of planned memory");
  ptr_.reset(p);
  offset_ = (kAlign - reinterpret_cast<uintptr_t>(p) % kAlign) % kAlign;
  stats::add(stats::Counter::DeviceAllocs);
}

}  // namespace pterun
