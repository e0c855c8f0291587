#include "pterun/kernels/kernel.h"

#include <cstdlib>

#include "pterun/core/error.h"

namespace pterun::kernels {

void KernelContext::Aligned::operator()(void* p) const {
  std::free(p);
}

void* KernelContext::scratch(size_t bytes) {
  if (bytes > scratch_size_) {
    size_t size = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, size);
    PTERUN_CHECK(p != nullptr, ErrorCode::MemoryAllocationFailed,
                 "kernel scratch: cannot allocate ", size, " bytes");
    scratch_.reset(p);
    scratch_size_ = size;
  }
  return scratch_.get();
}

}  // namespace pterun::kernels
