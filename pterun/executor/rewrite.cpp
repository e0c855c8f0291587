// Load-time kernel rewrites (rewrite.h); Method::Loader applies those the
// method's device has a kernel for.

#include "pterun/executor/rewrite.h"

#include <algorithm>

#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun {

using format::InstructionKind;

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

std::vector<KernelFusion> find_mul_add_fusions(const format::MethodDesc& d,
                                               const std::vector<bool>& keep,
                                               const std::vector<std::vector<bool>>& idle) {
  std::vector<KernelFusion> found;
  // Straight-line programs only: a jump could enter between the two, and a
  // move could give the product another name.
  for (const auto& chain : d.chains) {
    for (const auto& instr : chain.instructions) {
      if (instr.kind == InstructionKind::JumpFalseCall || instr.kind == InstructionKind::MoveCall) {
        return found;
      }
    }
  }
  const std::vector<int> uses = count_uses(d);
  auto is_kernel = [&](const format::InstructionDesc& instr, const char* name, size_t args) {
    return instr.kind == InstructionKind::KernelCall && instr.args.size() == args &&
           d.operators[instr.index].full_name() == name;
  };
  auto tensor = [&](int32_t v) -> const format::TensorDesc* {
    return d.values[v].kind == ValueKind::Tensor ? d.values[v].tensor.get() : nullptr;
  };
  for (size_t c = 0; c < d.chains.size(); ++c) {
    const auto& instrs = d.chains[c].instructions;
    for (size_t k = 0; k < instrs.size(); ++k) {
      // mul.out(self, other, *, out) -> out
      if (!is_kernel(instrs[k], "aten::mul.out", 4)) continue;
      size_t j = k + 1;
      while (j < instrs.size() && j < idle[c].size() && idle[c][j]) ++j;
      if (j >= instrs.size()) continue;
      // add.out(self, other, *, alpha, out) -> out, and sub.out
      const bool add = is_kernel(instrs[j], "aten::add.out", 5);
      if (!add && !is_kernel(instrs[j], "aten::sub.out", 5)) continue;
      const auto& a = instrs[k].args;
      const auto& b = instrs[j].args;
      const int32_t t = a[2];
      if (b[0] != t || b[1] == t || a[3] != t || keep[t] || uses[t] != 2) continue;
      const ValueKind alpha = d.values[b[2]].kind;
      if (alpha != ValueKind::Int && alpha != ValueKind::Double) continue;
      const format::TensorDesc* tt = tensor(t);
      if (tt == nullptr || !kernels::is_floating(tt->dtype)) continue;
      bool same = true;
      for (int32_t v : {a[0], a[1], b[1], b[3]}) {
        const format::TensorDesc* o = tensor(v);
        same = same && o != nullptr && o->dtype == tt->dtype;
      }
      if (!same || b[4] != b[3]) continue;
      found.push_back({c,
                       k,
                       j,
                       add ? kernels::kMulAddKernel : kernels::kMulSubKernel,
                       {a[0], a[1], b[1], b[2], b[3]},
                       t});
      k = j;  // on after the add
    }
  }
  return found;
}

}  // namespace pterun
