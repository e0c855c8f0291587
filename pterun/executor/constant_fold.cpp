// Which instructions constant folding runs once at load (constant_fold.h).

#include "pterun/executor/constant_fold.h"

#include <algorithm>

#include "pterun/kernels/registry.h"

namespace pterun {

namespace {

using format::InstructionKind;

}  // namespace

std::vector<std::pair<size_t, size_t>> find_constant_instructions(const format::MethodDesc& d,
                                                                  const std::vector<bool>& keep,
                                                                  Device device) {
  const auto& registry = kernels::KernelRegistry::global();
  auto foldable = [&](const format::InstructionDesc& instr) {
    const kernels::KernelInfo* info = registry.info(d.operators[instr.index].full_name(), device);
    return info != nullptr && info->foldable;
  };
  // How often each value is written at run time (kernel returns, moves).
  std::vector<int> writes(d.values.size(), 0);
  for (const auto& chain : d.chains) {
    for (const auto& instr : chain.instructions) {
      if (instr.kind == InstructionKind::MoveCall) ++writes[instr.target];
      if ((instr.kind == InstructionKind::KernelCall ||
           instr.kind == InstructionKind::DelegateCall) &&
          !instr.args.empty()) {
        const int32_t ret = instr.args.back();
        ++writes[ret];
        if (d.values[ret].kind == ValueKind::TensorList) {
          for (int64_t item : d.values[ret].items) ++writes[item];
        }
      }
    }
  }
  std::vector<bool> folded(d.values.size(), false);
  auto constant_arg = [&](int32_t a) {
    const auto& v = d.values[a];
    if (keep[a]) return false;
    if (v.kind == ValueKind::Tensor) return v.tensor->is_constant() || folded[a];
    if (writes[a] != 0) return false;
    switch (v.kind) {
      case ValueKind::IntList:
        return std::all_of(v.items.begin(), v.items.end(),
                           [&](int64_t item) { return writes[item] == 0; });
      case ValueKind::TensorList:
      case ValueKind::OptionalTensorList: return false;
      default: return true;
    }
  };
  std::vector<std::pair<size_t, size_t>> found;
  for (size_t c = 0; c < d.chains.size(); ++c) {
    const auto& instrs = d.chains[c].instructions;
    for (size_t k = 0; k < instrs.size(); ++k) {
      const auto& instr = instrs[k];
      if (instr.kind != InstructionKind::KernelCall || instr.args.empty() || !foldable(instr)) {
        continue;
      }
      // The out argument is the returned value itself (instructions list
      // it twice), so it is no input.
      const int32_t ret = instr.args.back();
      const auto& out = d.values[ret];
      if (out.kind != ValueKind::Tensor || writes[ret] != 1 || keep[ret] ||
          out.tensor->is_constant() || out.tensor->dynamism != ShapeDynamism::Static ||
          !std::all_of(instr.args.begin(), instr.args.end() - 1,
                       [&](int32_t a) { return a == ret || constant_arg(a); })) {
        continue;
      }
      folded[ret] = true;
      found.emplace_back(c, k);
    }
  }
  return found;
}

}  // namespace pterun
