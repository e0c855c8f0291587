#include "pterun/backend/device.h"

#include <cstring>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/cuda_state.h"
#include "pterun/backend/cuda/event_pair.h"
#include "pterun/backend/cuda/strided_copy.h"
#include "pterun/backend/device_info.h"
#include "pterun/core/stats.h"
#include "pterun/core/str_cat.h"
#include "pterun/kernels/common/device_check.h"

namespace pterun::backend {

void require_cuda_device(int device) {
  const int count = cuda_device_count();
  if (count == 0) {
    throw Error(ErrorCode::InvalidState,
                str_cat("cannot use cuda:", device, ": ", cuda_unavailable_reason()));
  }
  PTERUN_CHECK(device >= 0 && device < count, ErrorCode::InvalidArgument, "no device cuda:", device,
               " (this machine has ", count, " CUDA device", count == 1 ? "" : "s", ")");
}

namespace {
void require_device(int device) {
  require_cuda_device(device);
}
}  // namespace

DeviceBuffer::DeviceBuffer(int device, size_t bytes) : size_(bytes), device_(device) {
  require_device(device);
  PTERUN_CUDA_CHECK(cudaSetDevice(device));
  if (bytes == 0) return;
  cudaError_t status = cudaMalloc(&data_, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    data_ = nullptr;
    throw Error(ErrorCode::MemoryAllocationFailed,
                str_cat("cannot allocate ", bytes, " bytes on cuda:", device, ": ",
                        cudaGetErrorString(status)));
  }
  stats::add(stats::Counter::DeviceAllocs);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(other.data_), size_(other.size_), device_(other.device_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer old(std::move(*this));
    data_ = other.data_;
    size_ = other.size_;
    device_ = other.device_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) {
    int current = 0;
    cudaGetDevice(&current);
    cudaSetDevice(device_);
    cudaFree(data_);
    cudaSetDevice(current);
  }
}

PinnedBuffer::PinnedBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  // Portable: every GPU's copies from it are DMA transfers, not only the
  // current device's.
  cudaError_t status = cudaHostAlloc(&data_, bytes, cudaHostAllocPortable);
  if (status != cudaSuccess) {
    cudaGetLastError();
    data_ = nullptr;
    size_ = 0;
    throw Error(ErrorCode::MemoryAllocationFailed,
                str_cat("cannot allocate ", bytes,
                        " bytes of pinned host memory: ", cudaGetErrorString(status)));
  }
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    PinnedBuffer old(std::move(*this));
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) cudaFreeHost(data_);
}

std::shared_ptr<void> make_cuda_method_state(int device) {
  require_device(device);
  auto s = std::make_shared<cuda::MethodState>();
  s->device = device;
  PTERUN_CUDA_CHECK(cudaSetDevice(device));
  PTERUN_CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
  return s;
}

namespace {
void copy(const kernels::KernelContext& context, void* dst, const void* src, size_t bytes,
          cudaMemcpyKind kind, stats::Counter counter) {
  if (bytes == 0) return;
  const cuda::MethodState& s = cuda::state(context);
  PTERUN_CUDA_CHECK(cudaSetDevice(s.device));
  PTERUN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s.stream));
  stats::add(counter);
}
}  // namespace

void copy_host_to_device(const kernels::KernelContext& context, void* dst, const void* src,
                         size_t bytes) {
  copy(context, dst, src, bytes, cudaMemcpyHostToDevice, stats::Counter::HostToDeviceCopies);
}

void copy_device_to_host(const kernels::KernelContext& context, void* dst, const void* src,
                         size_t bytes) {
  copy(context, dst, src, bytes, cudaMemcpyDeviceToHost, stats::Counter::DeviceToHostCopies);
}

void copy_device_to_device(const kernels::KernelContext& context, void* dst, const void* src,
                           size_t bytes) {
  copy(context, dst, src, bytes, cudaMemcpyDeviceToDevice, stats::Counter::DeviceToDeviceCopies);
}

void activate(const kernels::KernelContext& context) {
  PTERUN_CUDA_CHECK(cudaSetDevice(cuda::state(context).device));
}

void reorder_on_device(const kernels::KernelContext& context, void* dst,
                       std::span<const int64_t> dst_strides, const void* src,
                       std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                       size_t element_size) {
  const cuda::MethodState& s = cuda::state(context);
  PTERUN_CUDA_CHECK(cudaSetDevice(s.device));
  cuda::device_strided_copy(context, dst, dst_strides, src, src_strides, sizes, element_size);
  stats::add(stats::Counter::DeviceToDeviceCopies);
}

void copy_peer_to_device(const kernels::KernelContext& context, void* dst, int src_device,
                         const void* src, size_t bytes) {
  if (bytes == 0) return;
  const cuda::MethodState& s = cuda::state(context);
  if (src_device == s.device) {
    copy_device_to_device(context, dst, src, bytes);
    return;
  }
  PTERUN_CUDA_CHECK(cudaSetDevice(s.device));
  PTERUN_CUDA_CHECK(cudaMemcpyPeerAsync(dst, s.device, src, src_device, bytes, s.stream));
  stats::add(stats::Counter::DeviceToDeviceCopies);
}

namespace {
// A copy on the device's default stream, waited for: a plain cudaMemcpy may
// return before a pageable upload reaches the GPU, and methods' streams are
// non-blocking (not ordered after the default stream), so wait explicitly.
void copy_now(int device, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return;
  require_device(device);
  PTERUN_CUDA_CHECK(cudaSetDevice(device));
  PTERUN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, cudaStreamLegacy));
  PTERUN_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}
}  // namespace

void upload(int device, void* dst, const void* src, size_t bytes) {
  copy_now(device, dst, src, bytes, cudaMemcpyHostToDevice);
  if (bytes > 0) stats::add(stats::Counter::HostToDeviceCopies);
}

void download(int device, void* dst, const void* src, size_t bytes) {
  copy_now(device, dst, src, bytes, cudaMemcpyDeviceToHost);
  if (bytes > 0) {
    stats::add(stats::Counter::DeviceToHostCopies);
    stats::add(stats::Counter::DeviceSyncs);
  }
}

void zero(int device, void* dst, size_t bytes) {
  if (bytes == 0) return;
  require_device(device);
  PTERUN_CUDA_CHECK(cudaSetDevice(device));
  PTERUN_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, cudaStreamLegacy));
  PTERUN_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

void synchronize(const kernels::KernelContext& context) {
  cuda::MethodState& s = cuda::state(context);
  PTERUN_CUDA_CHECK(cudaSetDevice(s.device));
  constexpr size_t kWord = sizeof(kernels::DeviceCheck);
  // The device-check word comes back with the wait, in stream order.
  if (s.check.data() != nullptr) {
    PTERUN_CUDA_CHECK(cudaMemcpyAsync(s.check_host.data(), s.check.data(), kWord,
                                      cudaMemcpyDeviceToHost, s.stream));
  }
  PTERUN_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  stats::add(stats::Counter::DeviceSyncs);
  if (s.check.data() != nullptr) {
    kernels::DeviceCheck found;
    std::memcpy(&found, s.check_host.data(), kWord);
    if (found.failed != 0) {
      std::memset(s.check_host.data(), 0, kWord);
      PTERUN_CUDA_CHECK(cudaMemsetAsync(s.check.data(), 0, kWord, s.stream));
      PTERUN_CUDA_CHECK(cudaStreamSynchronize(s.stream));
      kernels::throw_device_check(found);
    }
  }
}

}  // namespace pterun::backend

// Host waits for the Python layer (docs/python-api.md, B19) and the kernel test hooks.
namespace pterun::backend {

void synchronize_device(int device) {
  require_device(device);
  PTERUN_CUDA_CHECK(cudaSetDevice(device));
  PTERUN_CUDA_CHECK(cudaDeviceSynchronize());
  stats::add(stats::Counter::DeviceSyncs);
}

void synchronize_stream(int device, uintptr_t stream) {
  require_device(device);
  PTERUN_CUDA_CHECK(cudaSetDevice(device));
  PTERUN_CUDA_CHECK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)));
  stats::add(stats::Counter::DeviceSyncs);
}

void order_after_stream(const kernels::KernelContext& context, uintptr_t stream) {
  cuda::MethodState& s = cuda::state(context);
  auto producer = reinterpret_cast<cudaStream_t>(stream);
  if (producer == s.stream) return;
  PTERUN_CUDA_CHECK(cudaSetDevice(s.device));
  if (s.producer_done == nullptr) {
    PTERUN_CUDA_CHECK(cudaEventCreateWithFlags(&s.producer_done, cudaEventDisableTiming));
  }
  // The wait takes the event's state when it is queued: one event serves
  // every producer in turn.
  PTERUN_CUDA_CHECK(cudaEventRecord(s.producer_done, producer));
  PTERUN_CUDA_CHECK(cudaStreamWaitEvent(s.stream, s.producer_done, 0));
}

double time_on_stream(const kernels::KernelContext& context, const std::function<void()>& launch) {
  const cuda::MethodState& s = cuda::state(context);
  PTERUN_CUDA_CHECK(cudaSetDevice(s.device));
  cuda::EventPair e;  // destroyed on every path, a failed launch included
  PTERUN_CUDA_CHECK(e.create());
  PTERUN_CUDA_CHECK(cudaEventRecord(e.start, s.stream));
  launch();
  PTERUN_CUDA_CHECK(cudaEventRecord(e.stop, s.stream));
  PTERUN_CUDA_CHECK(cudaEventSynchronize(e.stop));
  stats::add(stats::Counter::DeviceSyncs);
  float ms = 0;
  PTERUN_CUDA_CHECK(cudaEventElapsedTime(&ms, e.start, e.stop));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace pterun::backend
