#pragma once

// ChainView: one chain of a method as the pattern finders (rewrite_*.cpp)
// walk it. Internal to executor/.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pterun/executor/desc_util.h"
#include "pterun/executor/rewrite.h"
#include "pterun/format/program_desc.h"

namespace pterun::detail {

using format::InstructionKind;

// One chain of a method as the finders walk it: which instructions still
// run (`idle` marks those folded or fused away), what the caller keeps,
// and how many instructions mention each value (count_uses).
struct ChainView {
  const format::MethodDesc& d;
  size_t c;
  const std::vector<bool>& keep;
  const std::vector<int>& uses;
  const std::vector<bool>& idle;

  const std::vector<format::InstructionDesc>& instrs() const { return d.chains[c].instructions; }
  bool is_kernel(size_t k, const char* name, size_t args) const {
    const auto& instr = instrs()[k];
    return instr.kind == InstructionKind::KernelCall && instr.args.size() == args &&
           d.operators[instr.index].full_name() == name;
  }
  const format::TensorDesc* f32(int32_t v) const {
    const auto& value = d.values[v];
    if (value.kind != ValueKind::Tensor || value.tensor->dtype != DType::Float32) return nullptr;
    return value.tensor.get();
  }
  // Whether instruction k still runs (not folded or fused away).
  bool running(size_t k) const { return k >= idle.size() || !idle[k]; }
  // The next instruction after k that runs.
  size_t next_running(size_t k) const {
    size_t j = k + 1;
    while (j < instrs().size() && !running(j)) ++j;
    return j;
  }
  // The last instruction before k that runs, or instrs().size() if none.
  size_t previous_running(size_t k) const {
    for (size_t j = k; j-- > 0;) {
      if (running(j)) return j;
    }
    return instrs().size();
  }
  // A dtype conversion keeping the default dim order:
  // _to_dim_order_copy.out(self, non_blocking, dim_order None or the
  // identity) or _to_copy.out(self, non_blocking, memory_format None).
  bool cast_step(size_t k) const {
    const bool to_copy = is_kernel(k, "aten::_to_copy.out", 5);
    if (!to_copy && !is_kernel(k, "dim_order_ops::_to_dim_order_copy.out", 5)) return false;
    const format::ValueDesc& order = d.values[instrs()[k].args[2]];
    if (order.kind == ValueKind::None) return true;
    if (to_copy || order.kind != ValueKind::IntList) return false;
    for (size_t i = 0; i < order.items.size(); ++i) {
      const format::ValueDesc& item = d.values[order.items[i]];
      if (item.kind != ValueKind::Int || item.int_value != static_cast<int64_t>(i)) return false;
    }
    return true;
  }
  // A float32 constant of one element, or the result of an instruction
  // folded at load (marked idle).
  bool scalar_tensor(int32_t v) const {
    const format::TensorDesc* t = f32(v);
    if (t == nullptr || t->numel != 1) return false;
    if (t->is_constant()) return true;
    for (size_t i = 0; i < instrs().size(); ++i) {
      if (instrs()[i].kind == InstructionKind::KernelCall && !instrs()[i].args.empty() &&
          instrs()[i].args.back() == v) {
        return i < idle.size() && idle[i];
      }
    }
    return false;
  }
  // The running instruction that returns each value, instrs().size()
  // where none does.
  std::vector<size_t> running_writers() const {
    std::vector<size_t> w(d.values.size(), instrs().size());
    for (size_t k = 0; k < instrs().size(); ++k) {
      if (running(k) && instrs()[k].kind == InstructionKind::KernelCall &&
          !instrs()[k].args.empty()) {
        w[instrs()[k].args.back()] = k;
      }
    }
    return w;
  }
  // The writer of t (from `writers`, running_writers()) when it runs
  // operator `name` of `args` arguments, writing t as its out, and t (not
  // kept) is read by one other instruction alone; else instrs().size().
  size_t sole_step(const std::vector<size_t>& writers, int32_t t, const char* name,
                   size_t args) const {
    const size_t w = t >= 0 ? writers[t] : instrs().size();
    if (w == instrs().size() || keep[t] || uses[t] != 2 || !is_kernel(w, name, args) ||
        instrs()[w].args[args - 2] != t) {
      return instrs().size();
    }
    return w;
  }
  bool number_is(int32_t v, double want) const {
    const auto& value = d.values[v];
    return (value.kind == ValueKind::Int && static_cast<double>(value.int_value) == want) ||
           (value.kind == ValueKind::Double && value.double_value == want);
  }
};

/// Calls f(view) with each chain of a method without jumps or moves, as
/// the pattern finders walk them; nothing for other methods.
template <typename F>
void for_each_chain(const format::MethodDesc& d, const std::vector<bool>& keep,
                    const std::vector<std::vector<bool>>& idle, F&& f) {
  if (desc::straight_line(d).empty()) return;
  const std::vector<int> uses = count_uses(d);
  for (size_t c = 0; c < d.chains.size(); ++c) f(ChainView{d, c, keep, uses, idle[c]});
}

}  // namespace pterun::detail
