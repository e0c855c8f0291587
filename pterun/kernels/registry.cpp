#include "pterun/kernels/registry.h"

#include "pterun/core/error.h"

namespace pterun::kernels {

// Defined by each backend's register.cpp.
void register_cpu_kernels(KernelRegistry& registry);
void register_cuda_kernels(KernelRegistry& registry);

const char* device_name(Device device) {
  return device == Device::CPU ? "cpu" : "cuda";
}

const KernelRegistry& KernelRegistry::global() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_cpu_kernels(r);
    register_cuda_kernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::add(std::string name, Device device, KernelFn fn) {
  bool inserted = kernels_.emplace(std::make_pair(name, device), fn).second;
  PTERUN_CHECK(inserted, ErrorCode::Internal, "kernel registry: '", name, "' registered twice for ",
               device_name(device));
}

KernelFn KernelRegistry::find(std::string_view name, Device device) const {
  auto it = kernels_.find(std::make_pair(std::string(name), device));
  return it == kernels_.end() ? nullptr : it->second;
}

std::vector<std::string> KernelRegistry::names(Device device) const {
  std::vector<std::string> out;
  for (const auto& [key, fn] : kernels_) {
    if (key.second == device) out.push_back(key.first);
  }
  return out;
}

}  // namespace pterun::kernels
