#pragma once

#include <cstddef>
#include <cstdint>

#include "pterun/backend/device.h"
#include "pterun/core/host_buffer.h"
#include "pterun/kernels/kernel.h"

namespace pterun::backend {

/// Memory where a method runs: a HostBuffer for CPU methods, a DeviceBuffer
/// on the method's GPU for CUDA methods. Planned memory, state, private
/// input copies and output buffers all use it, so the executor needs no
/// per-device branches to own memory. Move-only; a single owner.
class Allocation {
 public:
  Allocation() = default;
  /// `bytes` on `device` (GPU `index` for CUDA). Host memory is always
  /// zeroed; device memory when `zeroed` (planned memory and state start at
  /// zero on the CPU, so they do on the GPU too). Errors as HostBuffer /
  /// DeviceBuffer.
  Allocation(Device device, int index, size_t bytes, bool zeroed = true);

  uint8_t* data() const {
    return static_cast<uint8_t*>(on_device_ ? device_.data() : host_.data());
  }
  size_t size() const { return on_device_ ? device_.size() : host_.size(); }
  bool on_device() const { return on_device_; }

 private:
  HostBuffer host_;
  DeviceBuffer device_;
  bool on_device_ = false;
};

}  // namespace pterun::backend
