#include "pterun/kernels/registry.h"

#include "pterun/core/error.h"

namespace pterun::kernels {

// Defined by each backend's register.cpp.
void register_cpu_kernels(KernelRegistry& registry);
void register_cuda_kernels(KernelRegistry& registry);

void check_call(const KernelInfo& info, std::string_view name, std::span<const ValueKind> kinds,
                std::string_view context) {
  PTERUN_CHECK(kinds.size() >= info.num_args, ErrorCode::InvalidProgram, context, name,
               " is called with ", kinds.size(), " arguments; it takes ", int{info.num_args});
  for (size_t a = 0; a < info.num_args; ++a) {
    PTERUN_CHECK((info.arg_kinds[a] >> static_cast<unsigned>(kinds[a])) & 1u,
                 ErrorCode::InvalidProgram, context, "argument ", a, " of ", name, " is a ",
                 value_kind_name(kinds[a]), ", which the operator does not take there");
  }
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

void KernelRegistry::add(std::string name, Device device, const KernelInfo& info) {
  PTERUN_CHECK(info.fn != nullptr, ErrorCode::Internal, "kernel registry: '", name,
               "' has no function");
  bool inserted = kernels_.emplace(std::make_pair(name, device), info).second;
  PTERUN_CHECK(inserted, ErrorCode::Internal, "kernel registry: '", name, "' registered twice for ",
               device_name(device));
}

const KernelInfo* KernelRegistry::info(std::string_view name, Device device) const {
  auto it = kernels_.find(std::make_pair(std::string(name), device));
  return it == kernels_.end() ? nullptr : &it->second;
}

KernelFn KernelRegistry::find(std::string_view name, Device device) const {
  const KernelInfo* k = info(name, device);
  return k == nullptr ? nullptr : k->fn;
}

std::vector<std::string> KernelRegistry::names(Device device) const {
  std::vector<std::string> out;
  for (const auto& [key, fn] : kernels_) {
    if (key.second == device) out.push_back(key.first);
  }
  return out;
}

}  // namespace pterun::kernels
