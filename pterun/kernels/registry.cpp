#include "pterun/kernels/registry.h"

#include <set>

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

namespace {

// The executor's former list of pure kernels, for those registered through
// the transitional add() below.
bool legacy_foldable(std::string_view name) {
  static const std::set<std::string, std::less<>> ops = {"aten::permute_copy.out",
                                                         "aten::view_copy.out",
                                                         "aten::t_copy.out",
                                                         "aten::transpose_copy.int_out",
                                                         "aten::expand_copy.out",
                                                         "aten::unsqueeze_copy.out",
                                                         "aten::squeeze_copy.dim_out",
                                                         "aten::squeeze_copy.dims_out",
                                                         "aten::squeeze_copy.out",
                                                         "aten::slice_copy.Tensor_out",
                                                         "aten::select_copy.int_out",
                                                         "aten::_to_copy.out",
                                                         "aten::clone.out",
                                                         "aten::alias_copy.out",
                                                         "dim_order_ops::_clone_dim_order.out",
                                                         "dim_order_ops::_to_dim_order_copy.out",
                                                         "aten::arange.out",
                                                         "aten::arange.start_out",
                                                         "aten::full.out",
                                                         "aten::full_like.out",
                                                         "aten::scalar_tensor.out",
                                                         "aten::zeros.out",
                                                         "aten::ones.out",
                                                         "aten::zeros_like.out",
                                                         "aten::ones_like.out",
                                                         "aten::tril.out",
                                                         "aten::triu.out"};
  return ops.count(name) != 0;
}

}  // namespace

void KernelRegistry::add(std::string name, Device device, KernelFn fn) {
  KernelInfo info;
  info.fn = fn;
  info.foldable = legacy_foldable(name);
  add(std::move(name), device, info);
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
