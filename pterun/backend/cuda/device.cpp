#include "pterun/backend/device.h"

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/cuda_state.h"
#include "pterun/backend/device_info.h"
#include "pterun/core/stats.h"
#include "pterun/core/str_cat.h"

namespace pterun::backend {

namespace {
void require_device(int device) {
  const int count = cuda_device_count();
  if (count == 0) {
    throw Error(ErrorCode::InvalidState, str_cat("cannot use cuda:", device, ": ",
                                                 cuda_unavailable_reason()));
  }
  PTERUN_CHECK(device >= 0 && device < count, ErrorCode::InvalidArgument, "no device cuda:",
               device, " (this machine has ", count, " CUDA device", count == 1 ? "" : "s", ")");
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

void synchronize(const kernels::KernelContext& context) {
  const cuda::MethodState& s = cuda::state(context);
  PTERUN_CUDA_CHECK(cudaSetDevice(s.device));
  PTERUN_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  stats::add(stats::Counter::DeviceSyncs);
}

}  // namespace pterun::backend
