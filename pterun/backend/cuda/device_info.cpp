#include "pterun/backend/device_info.h"

#include <cuda_runtime_api.h>

namespace pterun::backend {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return count;
}

std::string cuda_unavailable_reason() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable CUDA device: ") + cudaGetErrorString(err);
  }
  return count > 0 ? std::string() : std::string("no CUDA device found");
}

bool built_with_cuda() {
  return true;
}

}  // namespace pterun::backend
