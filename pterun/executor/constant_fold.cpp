// Which instructions constant folding runs once at load (constant_fold.h).

#include "pterun/executor/constant_fold.h"

#include <algorithm>
#include <set>
#include <string>

namespace pterun {

namespace {

using format::InstructionKind;

// Deterministic kernels without side effects (never random ones).
const std::set<std::string, std::less<>>& foldable_ops() {
  static const std::set<std::string, std::less<>> ops = {
      // Data movement.
      "aten::permute_copy.out", "aten::view_copy.out", "aten::t_copy.out",
      "aten::transpose_copy.int_out", "aten::expand_copy.out", "aten::unsqueeze_copy.out",
      "aten::squeeze_copy.dim_out", "aten::squeeze_copy.dims_out", "aten::squeeze_copy.out",
      "aten::slice_copy.Tensor_out", "aten::select_copy.int_out", "aten::_to_copy.out",
      "aten::clone.out", "aten::alias_copy.out", "dim_order_ops::_clone_dim_order.out",
      "dim_order_ops::_to_dim_order_copy.out",
      // Creation.
      "aten::arange.out", "aten::arange.start_out", "aten::full.out", "aten::full_like.out",
      "aten::scalar_tensor.out", "aten::zeros.out", "aten::ones.out", "aten::zeros_like.out",
      "aten::ones_like.out", "aten::tril.out", "aten::triu.out",
      // Comparisons and logic (attention masks).
      "aten::eq.Scalar_out", "aten::ne.Scalar_out", "aten::le.Scalar_out", "aten::lt.Scalar_out",
      "aten::ge.Scalar_out", "aten::gt.Scalar_out", "aten::eq.Tensor_out", "aten::ne.Tensor_out",
      "aten::le.Tensor_out", "aten::lt.Tensor_out", "aten::ge.Tensor_out", "aten::gt.Tensor_out",
      "aten::logical_and.out", "aten::logical_or.out", "aten::logical_not.out",
      "aten::where.self_out", "aten::any.out", "aten::any.dims_out", "aten::any.all_out",
      "aten::all.out", "aten::all.all_out",
      // Arithmetic (rotary tables, scales).
      "aten::add.out", "aten::sub.out", "aten::mul.out", "aten::div.out", "aten::add.Scalar_out",
      "aten::sub.Scalar_out", "aten::mul.Scalar_out", "aten::div.Scalar_out", "aten::neg.out",
      "aten::pow.Tensor_Scalar_out", "aten::reciprocal.out", "aten::sin.out", "aten::cos.out",
      "aten::exp.out", "aten::sqrt.out", "aten::rsqrt.out"};
  return ops;
}

}  // namespace

std::vector<std::pair<size_t, size_t>> find_constant_instructions(const format::MethodDesc& d,
                                                                  const std::vector<bool>& keep) {
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
      if (instr.kind != InstructionKind::KernelCall || instr.args.empty() ||
          !foldable_ops().count(d.operators[instr.index].full_name())) {
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
