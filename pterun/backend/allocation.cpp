#include "pterun/backend/allocation.h"

namespace pterun::backend {

Allocation::Allocation(kernels::Device device, int index, size_t bytes, bool zeroed) {
  if (device == kernels::Device::CPU) {
    host_ = HostBuffer(bytes);
    return;
  }
  device_ = DeviceBuffer(index, bytes);
  on_device_ = true;
  if (zeroed) zero(index, device_.data(), bytes);
}

}  // namespace pterun::backend
