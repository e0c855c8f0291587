#include "pterun/core/host_buffer.h"

#include <cstdlib>
#include <cstring>

#include "pterun/core/error.h"
#include "pterun/core/stats.h"

namespace pterun {

void HostBuffer::Free::operator()(void* p) const {
  std::free(p);
}

HostBuffer::HostBuffer(size_t bytes) : size_(bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  PTERUN_CHECK(rounded >= bytes, ErrorCode::MemoryAllocationFailed, "memory: ", bytes,
               " bytes is too large");
  void* p = std::aligned_alloc(64, rounded);
  PTERUN_CHECK(p != nullptr, ErrorCode::MemoryAllocationFailed, "memory: cannot allocate ", bytes,
               " bytes of planned memory");
  std::memset(p, 0, rounded);
  ptr_.reset(p);
  stats::add(stats::Counter::DeviceAllocs);
}

}  // namespace pterun
