#include "pterun/kernels/registry.h"

#include <set>

#include "pterun/core/error.h"

namespace pterun::kernels {

// Defined by each backend's register.cpp.
void register_cpu_kernels(KernelRegistry& registry);
void register_cuda_kernels(KernelRegistry& registry);

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
                                                         "aten::alias_copy.out",
                                                         "aten::tril.out",
                                                         "aten::triu.out",
                                                         "aten::eq.Scalar_out",
                                                         "aten::ne.Scalar_out",
                                                         "aten::le.Scalar_out",
                                                         "aten::lt.Scalar_out",
                                                         "aten::ge.Scalar_out",
                                                         "aten::gt.Scalar_out",
                                                         "aten::eq.Tensor_out",
                                                         "aten::ne.Tensor_out",
                                                         "aten::le.Tensor_out",
                                                         "aten::lt.Tensor_out",
                                                         "aten::ge.Tensor_out",
                                                         "aten::gt.Tensor_out",
                                                         "aten::logical_and.out",
                                                         "aten::logical_or.out",
                                                         "aten::logical_not.out",
                                                         "aten::where.self_out",
                                                         "aten::any.out",
                                                         "aten::any.dims_out",
                                                         "aten::any.all_out",
                                                         "aten::all.out",
                                                         "aten::all.all_out",
                                                         "aten::add.out",
                                                         "aten::sub.out",
                                                         "aten::mul.out",
                                                         "aten::div.out",
                                                         "aten::add.Scalar_out",
                                                         "aten::sub.Scalar_out",
                                                         "aten::mul.Scalar_out",
                                                         "aten::div.Scalar_out",
                                                         "aten::neg.out",
                                                         "aten::pow.Tensor_Scalar_out",
                                                         "aten::reciprocal.out",
                                                         "aten::sin.out",
                                                         "aten::cos.out",
                                                         "aten::exp.out",
                                                         "aten::sqrt.out",
                                                         "aten::rsqrt.out"};
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

}  // namespace pterun::kernels
