#include "pterun/core/host_buffer.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#include "pterun/core/error.h"
#include "pterun/core/stats.h"

namespace pterun {
namespace {

/// Bytes of physical memory, 0 when unknown.
size_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

}  // namespace

void HostBuffer::Free::operator()(void* p) const {
  std::free(p);
}

HostBuffer::HostBuffer(size_t bytes) : size_(bytes) {
  constexpr size_t kAlign = 64;
  const size_t total = bytes + kAlign;
  PTERUN_CHECK(total > bytes, ErrorCode::MemoryAllocationFailed, "memory: ", bytes,
               " bytes is too large");
  // More than the machine's memory cannot succeed: refuse it without asking
  // the allocator, which may abort instead of failing (sanitizers) or
  // overcommit.
  static const size_t kPhysical = physical_memory();
  PTERUN_CHECK(kPhysical == 0 || bytes <= kPhysical, ErrorCode::MemoryAllocationFailed,
               "memory: cannot allocate ", bytes, " bytes of planned memory (the machine has ",
               kPhysical, ")");
  void* p = std::calloc(total, 1);
  PTERUN_CHECK(p != nullptr, ErrorCode::MemoryAllocationFailed, "memory: cannot allocate ", bytes,
               " bytes of planned memory");
  ptr_.reset(p);
  offset_ = (kAlign - reinterpret_cast<uintptr_t>(p) % kAlign) % kAlign;
  stats::add(stats::Counter::DeviceAllocs);
}

}  // namespace pterun
