// Instructions as steps of fused elementwise programs
// (elementwise_steps.h): each operator the fusion takes, its arguments
// checked and turned into a step's op code and scalars.

#include "pterun/executor/elementwise_steps.h"

#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "pterun/executor/desc_util.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::fusion {
namespace {

using format::InstructionKind;
using ops::FusedKind;

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
    if (std::optional<Node> node = xnnpack(name, a)) return node;
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

  // XNNPACK's elementwise nodes as a delegate's lowering emits them
  // (ops/xnnpack.h): binary ones without an output clamp, and the unary
  // ones aten has, over tensors in their default dim order (their sizes
  // are then the memory-order dims XNNPACK broadcasts over).
  std::optional<Node> xnnpack(const std::string& name, const std::vector<int32_t>& a) const {
    if (name.rfind("xnnpack::", 0) != 0) return std::nullopt;
    for (size_t i = 0; i < a.size(); ++i) {
      const format::TensorDesc* t = tensor(a[i]);
      if (t != nullptr && !desc::default_order(*t)) return std::nullopt;
    }
    using B = ops::BinaryFn;
    using U = ops::UnaryFn;
    static constexpr std::pair<std::string_view, B> kBinary[] = {
        {"xnnpack::add", B::Add},         {"xnnpack::subtract", B::Sub},
        {"xnnpack::multiply", B::Mul},    {"xnnpack::divide", B::Div},
        {"xnnpack::minimum", B::Minimum}, {"xnnpack::maximum", B::Maximum},
    };
    static constexpr std::pair<std::string_view, U> kUnary[] = {
        {"xnnpack::sigmoid", U::Sigmoid},  {"xnnpack::tanh", U::Tanh},
        {"xnnpack::exp", U::Exp},          {"xnnpack::log", U::Log},
        {"xnnpack::square_root", U::Sqrt}, {"xnnpack::reciprocal_square_root", U::Rsqrt},
        {"xnnpack::abs", U::Abs},          {"xnnpack::negate", U::Neg},
        {"xnnpack::sin", U::Sin},          {"xnnpack::cos", U::Cos},
    };
    if (a.size() == 6) {  // a, b, out_min, out_max, out, out
      constexpr double kInf = std::numeric_limits<double>::infinity();
      const std::optional<double> lo = number(a[2]), hi = number(a[3]);
      if (!lo || !hi || *lo != -kInf || *hi != kInf) return std::nullopt;
      for (auto [op, fn] : kBinary) {
        if (name == op) return binary(a, fn, std::nullopt);
      }
      return std::nullopt;
    }
    if (a.size() == 3) {  // in, out, out
      for (auto [op, fn] : kUnary) {
        if (name == op) return unary(a, FusedKind::Unary, static_cast<uint8_t>(fn), true);
      }
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

}  // namespace

std::optional<Node> translate(const format::MethodDesc& d, const format::InstructionDesc& instr,
                              bool layouts) {
  return Translator{d, layouts}.translate(instr);
}

}  // namespace pterun::fusion
