#include "pterun/delegates/method_builder.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "pterun/core/error.h"

namespace pterun::delegates {

int32_t MethodBuilder::push(format::ValueDesc v) {
  desc_.values.push_back(std::move(v));
  return static_cast<int32_t>(desc_.values.size() - 1);
}

int32_t MethodBuilder::add_tensor(format::TensorDesc t) {
  format::ValueDesc v;
  v.kind = ValueKind::Tensor;
  v.tensor = std::make_shared<const format::TensorDesc>(std::move(t));
  return push(std::move(v));
}

int32_t MethodBuilder::add_constant(DType dtype, std::vector<int64_t> sizes,
                                    std::span<const uint8_t> bytes,
                                    std::vector<uint8_t> dim_order) {
  format::TensorDesc t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  t.dim_order = std::move(dim_order);
  if (t.dim_order.empty()) {
    t.dim_order.resize(t.sizes.size());
    std::iota(t.dim_order.begin(), t.dim_order.end(), uint8_t{0});
  }
  t.storage = format::TensorStorage::Constant;
  t.numel = 1;
  for (int64_t s : t.sizes) t.numel *= static_cast<uint64_t>(s);
  t.nbytes = t.numel * element_size(dtype);
  t.data = bytes;
  return add_tensor(std::move(t));
}

int32_t MethodBuilder::add_none() {
  if (none_ < 0) none_ = push(format::ValueDesc{});
  return none_;
}

int32_t MethodBuilder::add_int(int64_t value) {
  auto it = ints_.find(value);
  if (it != ints_.end()) return it->second;
  format::ValueDesc v;
  v.kind = ValueKind::Int;
  v.int_value = value;
  return ints_[value] = push(std::move(v));
}

int32_t MethodBuilder::add_double(double value) {
  const auto bits = std::bit_cast<uint64_t>(value);
  auto it = doubles_.find(bits);
  if (it != doubles_.end()) return it->second;
  format::ValueDesc v;
  v.kind = ValueKind::Double;
  v.double_value = value;
  return doubles_[bits] = push(std::move(v));
}

int32_t MethodBuilder::add_bool(bool value) {
  int32_t& slot = bools_[value ? 1 : 0];
  if (slot >= 0) return slot;
  format::ValueDesc v;
  v.kind = ValueKind::Bool;
  v.bool_value = value;
  return slot = push(std::move(v));
}

int32_t MethodBuilder::add_int_list(std::span<const int64_t> items) {
  std::vector<int64_t> key(items.begin(), items.end());
  auto it = int_lists_.find(key);
  if (it != int_lists_.end()) return it->second;
  format::ValueDesc v;
  v.kind = ValueKind::IntList;
  for (int64_t item : items) v.items.push_back(add_int(item));
  return int_lists_[std::move(key)] = push(std::move(v));
}

int32_t MethodBuilder::add_tensor_list(std::span<const int32_t> items) {
  format::ValueDesc v;
  v.kind = ValueKind::TensorList;
  v.items.assign(items.begin(), items.end());
  return push(std::move(v));
}

int32_t MethodBuilder::op(std::string_view name) {
  auto it = ops_.find(name);
  if (it != ops_.end()) return it->second;
  format::OperatorDesc d;
  d.name = std::string(name);
  desc_.operators.push_back(std::move(d));
  auto index = static_cast<int32_t>(desc_.operators.size() - 1);
  ops_.emplace(std::string(name), index);
  return index;
}

void FreeBytes::operator()(uint8_t* p) const {
  std::free(p);
}

namespace {

/// `size` bytes (a multiple of `align`) from std::aligned_alloc.
uint8_t* allocate(size_t align, size_t size) {
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(align, size));
  PTERUN_CHECK(p != nullptr, ErrorCode::MemoryAllocationFailed, "load: cannot allocate ", size,
               " bytes for a delegate's constants");
  return p;
}

}  // namespace

std::span<uint8_t> MethodBuilder::own(size_t size) {
  constexpr size_t kSmall = size_t{64} << 10, kHugePage = size_t{2} << 20;
  constexpr size_t kRegion = size_t{32} << 20;
  if (size < kSmall) {
    // Cache-line aligned: kernels read rows of constants as whole vectors.
    const size_t rounded = (std::max<size_t>(size, 1) + 63) / 64 * 64;
    owned_.emplace_back(allocate(64, rounded));
    std::memset(owned_.back().get(), 0, rounded);
    return {owned_.back().get(), size};
  }
  const size_t rounded = (size + 63) / 64 * 64;
  if (region_left_ < rounded) {
    // A new region; the old one's rest stays unused (untouched pages cost
    // no memory).
    const size_t bytes = std::max(kRegion, (rounded + kHugePage - 1) / kHugePage * kHugePage);
    owned_.emplace_back(allocate(kHugePage, bytes));
    region_ = owned_.back().get();
    region_left_ = bytes;
#if defined(MADV_HUGEPAGE)
    // Before the first write, so that the pages are huge from the start;
    // advice the system does not take (no THP) costs nothing.
    ::madvise(region_, bytes, MADV_HUGEPAGE);
#endif
  }
  uint8_t* p = region_;
  region_ += rounded;
  region_left_ -= rounded;
  std::memset(p, 0, size);
  return {p, size};
}

}  // namespace pterun::delegates
