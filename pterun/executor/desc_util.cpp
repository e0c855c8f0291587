#include "pterun/executor/desc_util.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace pterun::desc {

using format::InstructionKind;

std::vector<Position> straight_line(const format::MethodDesc& d) {
  std::vector<Position> order;
  for (size_t c = 0; c < d.chains.size(); ++c) {
    const auto& instrs = d.chains[c].instructions;
    for (size_t k = 0; k < instrs.size(); ++k) {
      const auto kind = instrs[k].kind;
      if (kind == InstructionKind::JumpFalseCall || kind == InstructionKind::MoveCall) return {};
      order.push_back({c, k, &instrs[k]});
    }
  }
  return order;
}

std::vector<std::vector<size_t>> mentions(const format::MethodDesc& d,
                                          const std::vector<Position>& order) {
  std::vector<std::vector<size_t>> at(d.values.size());
  auto note = [&](int64_t v, size_t pos) {
    if (v < 0 || static_cast<size_t>(v) >= at.size()) return;
    if (at[v].empty() || at[v].back() != pos) at[v].push_back(pos);
  };
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const auto& instr = *order[pos].instr;
    if (instr.kind != InstructionKind::KernelCall && instr.kind != InstructionKind::DelegateCall) {
      continue;
    }
    for (int32_t a : instr.args) {
      note(a, pos);
      const auto& v = d.values[a];
      if (v.kind == ValueKind::TensorList || v.kind == ValueKind::OptionalTensorList) {
        for (int64_t item : v.items) note(item, pos);
      }
    }
  }
  return at;
}

bool is_call(const format::MethodDesc& d, const format::InstructionDesc& instr, const char* name,
             size_t args) {
  return instr.kind == InstructionKind::KernelCall && instr.args.size() == args &&
         d.operators[instr.index].full_name() == name;
}

bool writes_operands(const format::MethodDesc& d, const format::InstructionDesc& instr) {
  static constexpr const char* kCacheUpdates[] = {
      "llama::update_cache", "llama::update_cache_with_indices", "llama::sdpa_with_kv_cache"};
  const format::OperatorDesc& op = d.operators[instr.index];
  return op.overload.find("out") == std::string::npos ||
         std::any_of(std::begin(kCacheUpdates), std::end(kCacheUpdates),
                     [&](const char* name) { return op.name == name; });
}

const format::TensorDesc* tensor_of(const format::MethodDesc& d, int32_t v) {
  return d.values[v].kind == ValueKind::Tensor ? d.values[v].tensor.get() : nullptr;
}

bool default_order(const format::TensorDesc& t) {
  for (size_t i = 0; i < t.dim_order.size(); ++i) {
    if (t.dim_order[i] != i) return false;
  }
  return true;
}

bool planned(const format::TensorDesc& t) {
  return t.storage == format::TensorStorage::Planned ||
         t.storage == format::TensorStorage::PlannedWithData ||
         t.storage == format::TensorStorage::ExternalMutable;
}

bool overlaps(const format::TensorDesc& a, const format::TensorDesc& b) {
  return a.memory_id == b.memory_id && a.memory_offset < b.memory_offset + b.nbytes &&
         b.memory_offset < a.memory_offset + a.nbytes && a.nbytes > 0 && b.nbytes > 0;
}

bool same_bytes(const format::TensorDesc& a, const format::TensorDesc& b) {
  return planned(a) && planned(b) && a.memory_id == b.memory_id &&
         a.memory_offset == b.memory_offset && a.nbytes == b.nbytes && a.dtype == b.dtype &&
         default_order(a) && default_order(b);
}

bool overlapped(const format::MethodDesc& d, int32_t v) {
  const format::TensorDesc& t = *d.values[v].tensor;
  for (size_t i = 0; i < d.values.size(); ++i) {
    const format::TensorDesc* o = tensor_of(d, static_cast<int32_t>(i));
    if (static_cast<int32_t>(i) == v || o == nullptr || !planned(*o)) continue;
    if (overlaps(*o, t)) return true;
  }
  return false;
}

}  // namespace pterun::desc
