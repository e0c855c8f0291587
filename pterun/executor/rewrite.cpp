// Load-time kernel rewrites (rewrite.h); Method::Loader applies those the
// method's device has a kernel for.

#include "pterun/executor/rewrite.h"

#include <algorithm>

#include "pterun/kernels/internal_ops.h"

namespace pterun {

namespace {

using format::InstructionKind;

// How many instructions mention each value (arguments, items of list
// arguments, moves, jump conditions), each instruction counted once.
std::vector<int> count_uses(const format::MethodDesc& d) {
  std::vector<int> uses(d.values.size(), 0);
  std::vector<int64_t> seen;
  for (const auto& chain : d.chains) {
    for (const auto& instr : chain.instructions) {
      seen.clear();
      switch (instr.kind) {
        case InstructionKind::KernelCall:
        case InstructionKind::DelegateCall:
          for (int32_t a : instr.args) {
            seen.push_back(a);
            const auto& v = d.values[a];
            if (v.kind == ValueKind::TensorList || v.kind == ValueKind::OptionalTensorList) {
              seen.insert(seen.end(), v.items.begin(), v.items.end());
            }
          }
          break;
        case InstructionKind::MoveCall:
          seen.push_back(instr.index);
          seen.push_back(instr.target);
          break;
        case InstructionKind::JumpFalseCall:
        case InstructionKind::FreeCall: seen.push_back(instr.index); break;
      }
      std::sort(seen.begin(), seen.end());
      seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
      for (int64_t v : seen) {
        if (v >= 0 && static_cast<size_t>(v) < uses.size()) ++uses[v];
      }
    }
  }
  return uses;
}

}  // namespace

std::vector<KernelRewrite> find_kernel_rewrites(const format::MethodDesc& d,
                                                const std::vector<bool>& keep) {
  std::vector<KernelRewrite> found;
  const std::vector<int> uses = count_uses(d);
  for (size_t c = 0; c < d.chains.size(); ++c) {
    const auto& instrs = d.chains[c].instructions;
    for (size_t k = 0; k < instrs.size(); ++k) {
      const auto& instr = instrs[k];
      if (instr.kind != InstructionKind::KernelCall) continue;
      // max_pool2d_with_indices.out(self, kernel_size, stride, padding,
      // dilation, ceil_mode, *, out, indices) -> (out, indices)
      if (d.operators[instr.index].full_name() == "aten::max_pool2d_with_indices.out" &&
          instr.args.size() == 9) {
        const int32_t indices = instr.args[7];
        if (d.values[indices].kind == ValueKind::Tensor && !keep[indices] && uses[indices] == 1) {
          found.push_back({c, k, kernels::kMaxPoolValuesKernel});
        }
      }
    }
  }
  return found;
}

}  // namespace pterun
