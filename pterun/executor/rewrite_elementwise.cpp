// Elementwise fusion (rewrite.h, find_elementwise_fusions): trees of
// elementwise instructions found from a method's instructions alone, each
// to run as one fused elementwise program (ops/fused.h).

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "pterun/executor/desc_util.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/ops/fused.h"

namespace pterun {
namespace {

using format::InstructionKind;
using ops::FusedKind;

/// How a layout instruction (a copy that only moves elements) re-indexes
/// its operand: not at all (clone, an expand to its own shape), a
/// permutation of its dims (`dims`), a reshape of a row-major operand to its
/// out's shape, or a broadcast to its out's shape (expand).
enum class Layout : uint8_t { None, Same, Permute, Reshape, Expand };

/// One instruction as a step: its operation and the values it reads and
/// writes (b -1 when it reads one tensor). A layout instruction reads its
/// operand through `view` (set while the trees grow).
struct Node {
  ops::FusedStep step;
  int32_t a = -1, b = -1;
  int32_t out = -1;
  Layout layout = Layout::None;
  std::vector<int64_t> dims;
  std::optional<ElementwiseFusion::Input> view;
};

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

bool fusable_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16;
}

struct Translator {
  const format::MethodDesc& d;
  bool layouts;  // layout copies take part

  const format::TensorDesc* tensor(int32_t v) const { return desc::tensor_of(d, v); }
  bool float_tensor(int32_t v) const {
    const format::TensorDesc* t = tensor(v);
    return t != nullptr && fusable_dtype(t->dtype);
  }
  DType dtype(int32_t v) const { return tensor(v)->dtype; }
  // An Int or Double value (a Scalar the kernels convert to float).
  std::optional<double> number(int32_t v) const {
    const format::ValueDesc& x = d.values[v];
    if (x.kind == ValueKind::Int) return static_cast<double>(x.int_value);
    if (x.kind == ValueKind::Double) return x.double_value;
    return std::nullopt;
  }

  std::optional<Node> unary(const std::vector<int32_t>& a, FusedKind kind, uint8_t fn,
                            bool same_dtype) const {
    if (!float_tensor(a[0]) || !float_tensor(a.back())) return std::nullopt;
    if (same_dtype && dtype(a[0]) != dtype(a.back())) return std::nullopt;
    Node n;
    n.step.kind = kind;
    n.step.fn = fn;
    n.a = a[0];
    return n;
  }

  std::optional<Node> binary(const std::vector<int32_t>& a, ops::BinaryFn fn,
                             std::optional<double> alpha) const {
    if (!float_tensor(a[0]) || !float_tensor(a[1]) || !float_tensor(a.back())) {
      return std::nullopt;
    }
    const DType x = dtype(a[0]), y = dtype(a[1]);
    const DType common = kernels::promote_types(x, y, "fusion");
    // The compute type is float32, or the operands' own dtype.
    if (common != DType::Float32 && (x != common || y != common)) return std::nullopt;
    Node n;
    n.step.kind = FusedKind::Binary;
    n.step.fn = static_cast<uint8_t>(fn);
    n.a = a[0];
    n.b = a[1];
    if (alpha && static_cast<float>(*alpha) != 1.0f) {
      n.step.fn = static_cast<uint8_t>(fn == ops::BinaryFn::Add ? ops::BinaryFn::AddAlpha
                                                                : ops::BinaryFn::SubAlpha);
      n.step.s0 = *alpha;
    }
    return n;
  }

  std::optional<Node> scalar(const std::vector<int32_t>& a, ops::ScalarFn fn,
                             std::optional<double> s, std::optional<double> alpha) const {
    if (!s || !alpha) return std::nullopt;
    std::optional<Node> n = unary(a, FusedKind::Scalar, static_cast<uint8_t>(fn), true);
    if (n) {
      n->step.s0 = *s;
      n->step.s1 = *alpha;
    }
    return n;
  }

  std::optional<Node> translate(const format::InstructionDesc& instr) const {
    if (instr.kind != InstructionKind::KernelCall || instr.args.size() < 3) return std::nullopt;
    const std::vector<int32_t>& a = instr.args;
    // out, then the returned value: the same tensor.
    if (a[a.size() - 2] != a.back()) return std::nullopt;
    const std::string name = d.operators[instr.index].full_name();
    const size_t n = a.size();
    if (std::optional<Node> node = layouts ? layout_op(name, a) : std::nullopt) return node;
    using U = ops::UnaryFn;
    using B = ops::BinaryFn;
    using S = ops::ScalarFn;
    using Act = ops::ActivationFn;
    static constexpr std::pair<std::string_view, U> kUnary[] = {
        {"aten::exp.out", U::Exp},
        {"aten::expm1.out", U::Expm1},
        {"aten::log.out", U::Log},
        {"aten::log1p.out", U::Log1p},
        {"aten::log2.out", U::Log2},
        {"aten::log10.out", U::Log10},
        {"aten::sqrt.out", U::Sqrt},
        {"aten::rsqrt.out", U::Rsqrt},
        {"aten::reciprocal.out", U::Reciprocal},
        {"aten::sin.out", U::Sin},
        {"aten::cos.out", U::Cos},
        {"aten::tan.out", U::Tan},
        {"aten::tanh.out", U::Tanh},
        {"aten::erf.out", U::Erf},
        {"aten::sigmoid.out", U::Sigmoid},
        {"aten::neg.out", U::Neg},
        {"aten::abs.out", U::Abs},
    };
    static constexpr std::pair<std::string_view, Act> kActivation[] = {
        {"aten::relu.out", Act::Relu},
        {"aten::silu.out", Act::Silu},
        {"aten::hardsigmoid.out", Act::Hardsigmoid},
        {"aten::hardswish.out", Act::Hardswish},
    };
    static constexpr std::pair<std::string_view, B> kBinary[] = {
        {"aten::mul.out", B::Mul},
        {"aten::div.out", B::Div},
        {"aten::maximum.out", B::Maximum},
        {"aten::minimum.out", B::Minimum},
        {"aten::pow.Tensor_Tensor_out", B::Pow},
    };
    if (n == 3) {
      for (auto [op, fn] : kUnary) {
        // Neg and Abs keep the dtype; the floating functions compute in float.
        if (name == op) return unary(a, FusedKind::Unary, static_cast<uint8_t>(fn), true);
      }
      for (auto [op, fn] : kActivation) {
        if (name == op) return unary(a, FusedKind::Activation, static_cast<uint8_t>(fn), true);
      }
      return std::nullopt;
    }
    if (n == 4) {
      for (auto [op, fn] : kBinary) {
        if (name == op) return binary(a, fn, std::nullopt);
      }
      if (name == "aten::mul.Scalar_out") return scalar(a, S::Mul, number(a[1]), 1.0);
      if (name == "aten::div.Scalar_out") return scalar(a, S::Div, number(a[1]), 1.0);
      if (name == "aten::pow.Tensor_Scalar_out") {
        const std::optional<double> e = number(a[1]);
        if (!e) return std::nullopt;
        const float f = static_cast<float>(*e);
        const S fn = f == 2     ? S::PowSquare
                     : f == 3   ? S::PowCube
                     : f == 1   ? S::PowIdentity
                     : f == 0.5 ? S::PowSqrt
                     : f == -1  ? S::PowReciprocal
                                : S::Pow;
        return scalar(a, fn, e, 1.0);
      }
      if (name == "aten::gelu.out") {
        const format::ValueDesc& approx = d.values[a[1]];
        if (approx.kind != ValueKind::String) return std::nullopt;
        const Act fn = approx.string_value == "tanh"   ? Act::GeluTanh
                       : approx.string_value == "none" ? Act::Gelu
                                                       : Act::Relu;
        if (fn == Act::Relu) return std::nullopt;
        return unary(a, FusedKind::Activation, static_cast<uint8_t>(fn), true);
      }
      if (name == "aten::clone.out") return cast(a);
      return std::nullopt;
    }
    if (n != 5) return std::nullopt;
    if (name == "aten::add.out") return binary(a, B::Add, number(a[2]));
    if (name == "aten::sub.out") return binary(a, B::Sub, number(a[2]));
    if (name == "aten::add.Scalar_out") return scalar(a, S::Add, number(a[1]), number(a[2]));
    if (name == "aten::sub.Scalar_out") return scalar(a, S::Sub, number(a[1]), number(a[2]));
    if (name == "aten::rsub.Scalar_out") return scalar(a, S::Rsub, number(a[1]), number(a[2]));
    if (name == "aten::hardtanh.out" || name == "aten::clamp.out") {
      const bool optional = name == "aten::clamp.out";
      constexpr double kInf = std::numeric_limits<double>::infinity();
      auto bound = [&](int32_t v, double absent) -> std::optional<double> {
        if (optional && d.values[v].kind == ValueKind::None) return absent;
        return number(v);
      };
      const std::optional<double> lo = bound(a[1], -kInf), hi = bound(a[2], kInf);
      if (!lo || !hi) return std::nullopt;
      std::optional<Node> node = unary(a, FusedKind::Clamp, 0, true);
      if (node) {
        node->step.s0 = *lo;
        node->step.s1 = *hi;
      }
      return node;
    }
    if (name == "aten::_to_copy.out" || name == "dim_order_ops::_to_dim_order_copy.out" ||
        name == "dim_order_ops::_clone_dim_order.out") {
      return cast(a);
    }
    return std::nullopt;
  }

  // A layout instruction over a float tensor, both of static shape.
  std::optional<Node> layout(const std::vector<int32_t>& a, Layout how,
                             std::vector<int64_t> dims = {}) const {
    std::optional<Node> node = unary(a, FusedKind::Cast, 0, true);
    if (!node) return node;
    const format::TensorDesc& in = *tensor(a[0]);
    const format::TensorDesc& out = *tensor(a.back());
    if (in.dynamism != format::ShapeDynamism::Static ||
        out.dynamism != format::ShapeDynamism::Static || in.numel != out.numel) {
      return how == Layout::Expand && in.sizes == out.sizes ? node : std::nullopt;
    }
    if (how == Layout::Expand && in.sizes == out.sizes) how = Layout::Same;
    node->layout = how;
    node->dims = std::move(dims);
    return node;
  }

  std::optional<Node> layout_op(const std::string& name, const std::vector<int32_t>& a) const {
    const size_t n = a.size();
    auto int_of = [&](int32_t v, int64_t& out) {
      if (d.values[v].kind != ValueKind::Int) return false;
      out = d.values[v].int_value;
      return true;
    };
    const format::TensorDesc* in = tensor(a[0]);
    if (in == nullptr) return std::nullopt;
    const auto rank = static_cast<int64_t>(in->sizes.size());
    auto wrap = [&](int64_t dim) { return dim < 0 ? dim + rank : dim; };
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) perm[i] = i;
    if (name == "aten::permute_copy.out" && n == 4) {
      const format::ValueDesc& dims = d.values[a[1]];
      if (dims.kind != ValueKind::IntList || static_cast<int64_t>(dims.items.size()) != rank) {
        return std::nullopt;
      }
      std::vector<bool> seen(perm.size(), false);
      for (size_t i = 0; i < perm.size(); ++i) {
        int64_t dim = 0;
        if (dims.items[i] < 0 || !int_of(static_cast<int32_t>(dims.items[i]), dim)) {
          return std::nullopt;
        }
        dim = wrap(dim);
        if (dim < 0 || dim >= rank || seen[dim]) return std::nullopt;
        seen[dim] = true;
        perm[i] = dim;
      }
      return layout(a, Layout::Permute, perm);
    }
    if ((name == "aten::transpose_copy.int_out" && n == 5) ||
        (name == "aten::t_copy.out" && n == 3)) {
      int64_t d0 = 0, d1 = rank > 1 ? 1 : 0;
      if (n == 5 && (!int_of(a[1], d0) || !int_of(a[2], d1))) return std::nullopt;
      d0 = wrap(d0);
      d1 = wrap(d1);
      if (rank == 0 || d0 < 0 || d0 >= rank || d1 < 0 || d1 >= rank) return std::nullopt;
      std::swap(perm[d0], perm[d1]);
      return layout(a, Layout::Permute, perm);
    }
    if ((name == "aten::view_copy.out" && n == 4) ||
        (name == "aten::unsqueeze_copy.out" && n == 4) ||
        (name == "aten::squeeze_copy.dim_out" && n == 4) ||
        (name == "aten::squeeze_copy.dims_out" && n == 4) ||
        (name == "aten::squeeze_copy.out" && n == 3) ||
        (name == "aten::alias_copy.out" && n == 3)) {
      return layout(a, Layout::Reshape);
    }
    if (name == "aten::expand_copy.out" && n == 5) return layout(a, Layout::Expand);
    return std::nullopt;
  }

  // A copy of a float tensor into a float tensor of the same shape, any
  // layout.
  std::optional<Node> cast(const std::vector<int32_t>& a) const {
    std::optional<Node> node = unary(a, FusedKind::Cast, 0, false);
    if (node && tensor(a[0])->sizes != tensor(a.back())->sizes) return std::nullopt;
    return node;
  }
};

/// How instruction `instr` may write over value `v`: not at all, the value
/// itself (it is an argument of an operator that writes its operands, or
/// returned), or only bytes of a later tenant of v's planned memory. Its
/// returned tensors are written, and every tensor it names when its
/// operator is not an out variant (copy_, index_put_, update_cache ...).
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
  const std::string& overload = d.operators[instr.index].overload;
  if (overload.find("out") == std::string::npos) {
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
      if (in.sizes.size() > out.sizes.size()) return std::nullopt;
      const size_t lead = out.sizes.size() - in.sizes.size();
      std::vector<int64_t> sizes(lead, 1);
      sizes.insert(sizes.end(), in.sizes.begin(), in.sizes.end());
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] != 1 && sizes[i] != out.sizes[i]) return std::nullopt;
      }
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
  const Translator tr{d, recompute_broadcasts};
  auto flag = [](const std::vector<std::vector<bool>>& m, const desc::Position& p) {
    return p.chain < m.size() && p.index < m[p.chain].size() && m[p.chain][p.index];
  };

  std::vector<std::optional<Node>> nodes(order.size());
  for (size_t p = 0; p < order.size(); ++p) {
    if (flag(candidate, order[p]) && !flag(idle, order[p]))
      nodes[p] = tr.translate(*order[p].instr);
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
    node.step.round = tr.dtype(node.out);
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
