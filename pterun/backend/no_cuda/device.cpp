#include "pterun/backend/device.h"

#include "pterun/core/error.h"
#include "pterun/core/str_cat.h"

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

PinnedBuffer::PinnedBuffer(size_t /*bytes*/) {
  no_cuda();
}
PinnedBuffer::PinnedBuffer(PinnedBuffer&& /*other*/) noexcept {}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& /*other*/) noexcept {
  return *this;
}
PinnedBuffer::~PinnedBuffer() = default;

void require_cuda_device(int device) {
  throw Error(ErrorCode::InvalidState,
              str_cat("cannot use cuda:", device, ": this build of pterun has no CUDA support"));
}

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
void activate(const kernels::KernelContext&) {
  no_cuda();
}
void reorder_on_device(const kernels::KernelContext&, void*, std::span<const int64_t>, const void*,
                       std::span<const int64_t>, std::span<const int64_t>, size_t) {
  no_cuda();
}
void begin_capture(const kernels::KernelContext&) {
  no_cuda();
}
GraphExec end_capture(const kernels::KernelContext&) noexcept {
  return nullptr;
}
void launch_graph(const kernels::KernelContext&, const GraphExec&) {
  no_cuda();
}
uint64_t scratch_epoch(const kernels::KernelContext&) {
  return 0;
}
void copy_peer_to_device(const kernels::KernelContext&, void*, int, const void*, size_t) {
  no_cuda();
}
void upload(int, void*, const void*, size_t) {
  no_cuda();
}
void download(int, void*, const void*, size_t) {
  no_cuda();
}
void zero(int, void*, size_t) {
  no_cuda();
}
void synchronize(const kernels::KernelContext&) {
  no_cuda();
}

}  // namespace pterun::backend

// Host waits for the Python layer (docs/python-api.md, B19) and the kernel test hooks.
namespace pterun::backend {

void synchronize_device(int /*device*/) {
  throw Error(ErrorCode::InvalidState, "this build of pterun has no CUDA support");
}
void synchronize_stream(int /*device*/, uintptr_t /*stream*/) {
  throw Error(ErrorCode::InvalidState, "this build of pterun has no CUDA support");
}
void order_after_stream(const kernels::KernelContext& /*context*/, uintptr_t /*stream*/) {
  throw Error(ErrorCode::InvalidState, "this build of pterun has no CUDA support");
}
double time_on_stream(const kernels::KernelContext& /*context*/,
                      const std::function<void()>& /*launch*/) {
  throw Error(ErrorCode::InvalidState, "this build of pterun has no CUDA support");
}

}  // namespace pterun::backend
