#include "pterun/backend/device.h"

#include "pterun/core/error.h"

namespace pterun::backend {

namespace {
[[noreturn]] void no_cuda() {
  throw Error(ErrorCode::InvalidState, "this build of pterun has no CUDA support");
}
}  // namespace

DeviceBuffer::DeviceBuffer(int /*device*/, size_t /*bytes*/) {
  no_cuda();
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(other.data_), size_(other.size_), device_(other.device_) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& /*other*/) noexcept {
  return *this;
}
DeviceBuffer::~DeviceBuffer() = default;

std::shared_ptr<void> make_cuda_method_state(int /*device*/) {
  no_cuda();
}
void copy_host_to_device(const kernels::KernelContext&, void*, const void*, size_t) {
  no_cuda();
}
void copy_device_to_host(const kernels::KernelContext&, void*, const void*, size_t) {
  no_cuda();
}
void copy_device_to_device(const kernels::KernelContext&, void*, const void*, size_t) {
  no_cuda();
}
void synchronize(const kernels::KernelContext&) {
  no_cuda();
}

}  // namespace pterun::backend
