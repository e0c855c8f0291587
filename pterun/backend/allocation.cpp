#include "pterun/backend/allocation.h"

namespace pterun::backend {

Allocation::Allocation(Device device, int index, size_t bytes, bool zeroed) {
  if (device == Device::CPU) {
    host_ = HostBuffer(bytes);
    return;
  }
  device_ = DeviceBuffer(index, bytes);
  on_device_ = true;
  if (zeroed) zero(index, device_.data(), bytes);
}

}  // namespace pterun::backend
