// Elementwise fusion (rewrite.h, find_elementwise_fusions): trees of
// elementwise instructions found from a method's instructions alone, each
// to run as one fused elementwise program (ops/fused.h).

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pterun/executor/desc_util.h"
#include "pterun/executor/elementwise_steps.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/fused.h"

namespace pterun {
namespace {

using format::InstructionKind;
using fusion::Layout;
using fusion::Node;

/// Whether dims of size above 1 come in increasing order in `order` (the
/// elements lie in row-major order).
bool row_major(const std::vector<int64_t>& sizes, const std::vector<uint8_t>& order) {
  int64_t last = -1;
  for (uint8_t dim : order) {
    if (sizes[dim] == 1) continue;
    if (dim < last) return false;
    last = dim;
  }
  return true;
}

/// How instruction `instr` may write over value `v`: not at all, the value
/// itself (it is an argument of an operator that writes its operands, or
/// returned), or only bytes of a later tenant of v's planned memory. Its
/// returned tensors are written, and every tensor it names when it writes
/// its operands (desc::writes_operands).
enum class Write : uint8_t { None, Value, Overlap };

Write write_kind(const format::MethodDesc& d, const format::InstructionDesc& instr, int32_t v) {
  if (instr.kind != InstructionKind::KernelCall) return Write::Value;
  const format::TensorDesc* tv = desc::tensor_of(d, v);
  Write worst = Write::None;
  auto hit = [&](int64_t w) {
    if (w == v) {
      worst = Write::Value;
      return;
    }
    const format::TensorDesc* tw = desc::tensor_of(d, static_cast<int32_t>(w));
    if (tv != nullptr && tw != nullptr && desc::planned(*tv) && desc::planned(*tw) &&
        desc::overlaps(*tv, *tw) && worst == Write::None) {
      worst = Write::Overlap;
    }
  };
  auto value = [&](int32_t w) {
    const format::ValueDesc& x = d.values[w];
    if (x.kind == ValueKind::TensorList || x.kind == ValueKind::OptionalTensorList) {
      for (int64_t i : x.items) {
        if (i >= 0) hit(i);
      }
    } else if (x.kind == ValueKind::Tensor) {
      hit(w);
    }
  };
  if (instr.args.empty()) return Write::None;
  value(instr.args.back());
  if (desc::writes_operands(d, instr)) {
    for (int32_t a : instr.args) value(a);
  }
  return worst;
}

/// A tree being grown: its instructions (positions in the straight-line
/// order) and the tensors it reads from outside, each with the first
/// position that reads it.
struct Tree {
  std::vector<size_t> members;
  std::vector<std::pair<ElementwiseFusion::Input, size_t>> inputs;
  bool open = true;  // may still join its reader
  // (value, input): values to move to memory of their own (with the inputs
  // they hold) so that the tree may read the inputs late.
  std::vector<std::pair<int32_t, int32_t>> own;
};

void add_input(Tree& t, const ElementwiseFusion::Input& in, size_t at) {
  for (auto& [input, first] : t.inputs) {
    if (input == in) {
      first = std::min(first, at);
      return;
    }
  }
  t.inputs.emplace_back(in, at);
}

using Input = ElementwiseFusion::Input;

/// The largest input given memory of its own so that a tree may read it
/// after its planned lifetime.
constexpr uint64_t kMaxOwnBytes = uint64_t{64} << 20;

/// Value v itself, seen as a view of its own layout.
Input identity_view(const format::TensorDesc& t, int32_t v) {
  return Input{v, true, t.sizes, t.dim_order, false};
}

/// `in` re-indexed by layout instruction `node` (whose out is `out`), or
/// nothing when that is no dense view.
std::optional<Input> apply(const Node& node, Input in, const format::TensorDesc& out) {
  switch (node.layout) {
    case Layout::Same: return in;
    case Layout::Permute: {
      if (in.broadcast) return std::nullopt;
      const std::vector<int64_t>& dims = node.dims;
      if (dims.size() != in.sizes.size()) return std::nullopt;
      std::vector<uint8_t> inverse(dims.size());
      std::vector<int64_t> sizes(dims.size());
      for (size_t i = 0; i < dims.size(); ++i) {
        inverse[dims[i]] = static_cast<uint8_t>(i);
        sizes[i] = in.sizes[dims[i]];
      }
      for (uint8_t& dim : in.dim_order) dim = inverse[dim];
      in.sizes = std::move(sizes);
      return in;
    }
    case Layout::Reshape: {
      if (in.broadcast || !row_major(in.sizes, in.dim_order)) return std::nullopt;
      in.sizes = out.sizes;
      in.dim_order.resize(out.sizes.size());
      for (size_t i = 0; i < in.dim_order.size(); ++i) in.dim_order[i] = static_cast<uint8_t>(i);
      return in;
    }
    case Layout::Expand: {
      if (!kernels::broadcasts_to(in.sizes, out.sizes)) return std::nullopt;
      const size_t lead = out.sizes.size() - in.sizes.size();
      std::vector<int64_t> sizes(lead, 1);
      sizes.insert(sizes.end(), in.sizes.begin(), in.sizes.end());
      std::vector<uint8_t> order;
      for (size_t i = 0; i < lead; ++i) order.push_back(static_cast<uint8_t>(i));
      for (uint8_t dim : in.dim_order) order.push_back(static_cast<uint8_t>(dim + lead));
      in.sizes = std::move(sizes);
      in.dim_order = std::move(order);
      in.broadcast = in.broadcast || in.sizes != out.sizes;
      return in;
    }
    case Layout::None: break;
  }
  return std::nullopt;
}

}  // namespace

std::vector<ElementwiseFusion> find_elementwise_fusions(
    const format::MethodDesc& d, const std::vector<bool>& keep,
    const std::vector<std::vector<bool>>& candidate, const std::vector<std::vector<bool>>& idle,
    bool recompute_broadcasts) {
  std::vector<ElementwiseFusion> found;
  const std::vector<desc::Position> order = desc::straight_line(d);
  if (order.empty()) return found;
  const std::vector<std::vector<size_t>> mentioned = desc::mentions(d, order);
  const std::vector<int> uses = count_uses(d);

  auto flag = [](const std::vector<std::vector<bool>>& m, const desc::Position& p) {
    return p.chain < m.size() && p.index < m[p.chain].size() && m[p.chain][p.index];
  };

  std::vector<std::optional<Node>> nodes(order.size());
  for (size_t p = 0; p < order.size(); ++p) {
    if (flag(candidate, order[p]) && !flag(idle, order[p]))
      nodes[p] = fusion::translate(d, *order[p].instr, recompute_broadcasts);
  }
  std::vector<Tree> trees(order.size());
  std::vector<bool> absorbed(order.size(), false);     // a layout step folded into a later view
  std::vector<int64_t> producer(d.values.size(), -1);  // position of the node writing a value
  // Values a running instruction writes (their returned entries): those
  // may move to memory of their own. Values an idle (folded) instruction
  // wrote hold constants in memory of their own already: nothing
  // overwrites them.
  std::vector<bool> written(d.values.size(), false), folded(d.values.size(), false),
      returned(d.values.size(), false);
  for (const desc::Position& pos : order) {
    const auto& args = pos.instr->args;
    if (pos.instr->kind != InstructionKind::KernelCall || args.empty()) continue;
    std::vector<bool>& mark = flag(idle, pos) ? folded : written;
    const format::ValueDesc& r = d.values[args.back()];
    if (r.kind == ValueKind::Tensor) mark[args.back()] = true;
    if (r.kind == ValueKind::Tensor && !flag(idle, pos)) returned[args.back()] = true;
    if (r.kind == ValueKind::TensorList) {
      for (int64_t i : r.items) {
        if (i >= 0) mark[i] = true;
      }
    }
  }
  // Whether tree t may run at `root`: no step between an input's first
  // reader and the root writes it. An input that only a later tenant of
  // its planned memory overwrites is read from memory of its own instead
  // (added to `own`).
  // `members`: the instructions of the tree t joins, which run nothing.
  auto safe_to_defer = [&](const Tree& t, size_t root, const std::vector<size_t>& members,
                           std::vector<std::pair<int32_t, int32_t>>& own) {
    std::vector<std::pair<int32_t, int32_t>> moved;
    for (const auto& [in, first] : t.inputs) {
      if (folded[in.value] && !written[in.value]) continue;
      bool overwritten = false;
      for (size_t k = first + 1; k < root; ++k) {
        if (flag(idle, order[k]) || std::count(t.members.begin(), t.members.end(), k) ||
            std::count(members.begin(), members.end(), k)) {
          continue;
        }
        // A step a load pass rewrote may write values its instruction does not name.
        if (!flag(candidate, order[k])) return false;
        const Write w = write_kind(d, *order[k].instr, in.value);
        if (w == Write::Value) return false;
        overwritten = overwritten || w == Write::Overlap;
      }
      if (!overwritten) continue;
      // The value to move: the input, or the written value whose planned
      // bytes hold it (a view the exporter resolved by planning), which
      // moves with it.
      int32_t mover = in.value;
      const format::TensorDesc& it = *desc::tensor_of(d, in.value);
      if (!written[mover]) {
        mover = -1;
        for (size_t k = 0; k < first; ++k) {
          const auto& args = order[k].instr->args;
          if (order[k].instr->kind != InstructionKind::KernelCall || args.empty()) continue;
          auto holds = [&](int64_t w) {
            const format::TensorDesc* tw = desc::tensor_of(d, static_cast<int32_t>(w));
            return tw != nullptr && desc::planned(*tw) && desc::planned(it) &&
                   tw->memory_id == it.memory_id && tw->memory_offset <= it.memory_offset &&
                   it.memory_offset + it.nbytes <= tw->memory_offset + tw->nbytes;
          };
          if (d.values[args.back()].kind == ValueKind::Tensor && holds(args.back())) {
            mover = args.back();
          }
        }
      }
      // Only a tensor an instruction returns moves (with the views planned
      // in it); a list item's views are not tracked.
      if (mover < 0 || keep[mover] || !returned[mover] || !desc::planned(it) ||
          desc::tensor_of(d, mover)->nbytes > kMaxOwnBytes) {
        return false;
      }
      moved.emplace_back(mover, in.value);
    }
    for (const auto& m : moved) {
      if (std::count(own.begin(), own.end(), m) == 0) own.push_back(m);
    }
    return true;
  };
  auto close = [&](size_t p) {
    Tree& t = trees[p];
    t.open = false;
    std::vector<size_t> members = t.members;
    std::sort(members.begin(), members.end());
    std::vector<size_t> emitted;
    for (size_t q : members) {
      if (!absorbed[q]) emitted.push_back(q);
    }
    if (members.size() < 2) return;
    const Node& root = *nodes[p];
    const format::TensorDesc& out = *desc::tensor_of(d, root.out);
    // The root's out overlaps each input element for element or not at all
    // (folded inputs have memory of their own); else the out moves to
    // memory of its own.
    bool clash = false;
    for (const auto& [in, first] : t.inputs) {
      const format::TensorDesc& it = *desc::tensor_of(d, in.value);
      if ((folded[in.value] && !written[in.value]) || !desc::planned(it) || !desc::planned(out) ||
          !desc::overlaps(it, out)) {
        continue;
      }
      clash = clash || in.view || it.memory_offset != out.memory_offset || it.sizes != out.sizes ||
              it.dim_order != out.dim_order || it.dtype != out.dtype ||
              it.dynamism != format::ShapeDynamism::Static ||
              out.dynamism != format::ShapeDynamism::Static;
    }
    if (clash && (keep[root.out] || !returned[root.out] || out.nbytes > kMaxOwnBytes)) return;
    ElementwiseFusion f;
    f.chain = order[p].chain;
    f.root = order[p].index;
    f.out = root.out;
    for (const auto& m : t.own) {
      if (std::count(f.own_memory.begin(), f.own_memory.end(), m) == 0) f.own_memory.push_back(m);
    }
    if (clash) f.own_memory.emplace_back(root.out, root.out);
    for (const auto& [in, first] : t.inputs) f.inputs.push_back(in);
    auto input_reg = [&](const Input& in) {
      return static_cast<uint8_t>(std::find(f.inputs.begin(), f.inputs.end(), in) -
                                  f.inputs.begin());
    };
    auto reg = [&](int32_t v) -> uint8_t {
      const auto m = std::find_if(emitted.begin(), emitted.end(),
                                  [&](size_t q) { return nodes[q]->out == v; });
      if (m != emitted.end()) return static_cast<uint8_t>(f.inputs.size() + (m - emitted.begin()));
      return input_reg(Input{v});
    };
    for (size_t q : members) {
      const Node& node = *nodes[q];
      if (q != p) {
        f.idle.push_back(order[q].index);
        f.dropped.emplace_back(node.out, order[q].index);
      }
      if (absorbed[q]) continue;
      ops::FusedStep s = node.step;
      s.a = node.view ? input_reg(*node.view) : reg(node.a);
      s.b = node.b >= 0 ? reg(node.b) : 0;
      double encoded[ops::kFusedStepWidth];
      ops::encode_fused_step(s, encoded);
      f.program.insert(f.program.end(), encoded, encoded + ops::kFusedStepWidth);
    }
    found.push_back(std::move(f));
  };
  // Whether value v, written by node q (or -1), may join its reader at p
  // (unless broadcasts may be recomputed, only a value of the reader's
  // element count: a tree computes each step once per out element).
  auto joinable = [&](int32_t v, int64_t q, size_t p) {
    if (q < 0 || !trees[q].open || order[q].chain != order[p].chain || keep[v] || uses[v] != 2 ||
        mentioned[v].size() != 2 || mentioned[v][1] != p) {
      return false;
    }
    return recompute_broadcasts ||
           desc::tensor_of(d, v)->numel == desc::tensor_of(d, order[p].instr->args.back())->numel;
  };

  for (size_t p = 0; p < order.size(); ++p) {
    if (!nodes[p]) continue;
    Node& node = *nodes[p];
    node.out = order[p].instr->args.back();
    node.step.round = desc::tensor_of(d, node.out)->dtype;
    Tree& t = trees[p];
    t.members.push_back(p);
    if (node.layout != Layout::None) {
      // A layout copy reads a materialised tensor through a view, or
      // composes with the layout copy that wrote its operand.
      const int32_t v = node.a;
      const int64_t q = producer[v];
      const format::TensorDesc& out = *desc::tensor_of(d, node.out);
      std::optional<Input> view;
      if (joinable(v, q, p) && nodes[q]->view && trees[q].members.size() == 1 &&
          safe_to_defer(trees[q], p, t.members, t.own)) {
        view = apply(node, *nodes[q]->view, out);
        if (view) {
          t.members.push_back(static_cast<size_t>(q));
          t.inputs.clear();
          add_input(t, *view, trees[q].inputs.front().second);
          absorbed[q] = true;
          trees[q] = Tree{{}, {}, false};
        }
      }
      if (!view && node.layout == Layout::Same) {
        node.layout = Layout::None;  // a plain copy of its operand, as a cast
      } else if (!view) {
        if (keep[v] || desc::tensor_of(d, v)->dynamism != format::ShapeDynamism::Static) {
          nodes[p].reset();  // its operand's bytes may move: stays a step of its own
          trees[p] = Tree{{}, {}, false};
          continue;
        }
        if (q >= 0 && trees[q].open) close(static_cast<size_t>(q));
        view = apply(node, identity_view(*desc::tensor_of(d, v), v), out);
        if (!view) {
          nodes[p].reset();
          trees[p] = Tree{{}, {}, false};
          continue;
        }
        t.inputs.clear();
        add_input(t, *view, p);
      }
      if (view) {
        node.view = view;
        producer[node.out] = static_cast<int64_t>(p);
        continue;
      }
    }
    const int32_t operands[2] = {node.a, node.b == node.a ? -1 : node.b};
    for (size_t i = 0; i < 2; ++i) {
      const int32_t v = operands[i];
      if (v < 0) continue;
      const size_t later = i == 0 && operands[1] >= 0 ? 1 : 0;  // slots the next operand may take
      const int64_t q = producer[v];
      if (joinable(v, q, p)) {
        Tree merged = t;
        merged.members.insert(merged.members.end(), trees[q].members.begin(),
                              trees[q].members.end());
        for (const auto& [in, first] : trees[q].inputs) add_input(merged, in, first);
        const bool fits = merged.inputs.size() + later <= ops::kFusedMaxInputs &&
                          merged.members.size() <= ops::kFusedMaxSteps;
        merged.own.insert(merged.own.end(), trees[q].own.begin(), trees[q].own.end());
        if (fits && safe_to_defer(trees[q], p, t.members, merged.own)) {
          t = std::move(merged);
          trees[q] = Tree{{}, {}, false};
          continue;
        }
        close(static_cast<size_t>(q));
      }
      add_input(t, Input{v}, p);
    }
    producer[node.out] = static_cast<int64_t>(p);
  }
  for (size_t p = 0; p < order.size(); ++p) {
    if (nodes[p] && trees[p].open) close(p);
  }
  return found;
}

}  // namespace pterun
