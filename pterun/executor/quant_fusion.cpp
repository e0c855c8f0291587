// Which dequantize -> op -> quantize chains integer kernels compute
// (quant_fusion.h): a pure walk over the method's instructions, backwards
// from each quantize.

#include "pterun/executor/quant_fusion.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>

#include "pterun/executor/desc_util.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/quant_checks.h"

namespace pterun {
namespace {

using format::InstructionDesc;
using format::InstructionKind;
using format::TensorDesc;
using format::ValueDesc;

constexpr std::string_view kQuantize = "quantized_decomposed::quantize_per_tensor.out";
constexpr std::string_view kDequantize = "quantized_decomposed::dequantize_per_tensor.out";
constexpr std::string_view kDequantizeChannel = "quantized_decomposed::dequantize_per_channel.out";

/// A dequantized per-tensor activation: X with (scale, zero point).
struct Activation {
  size_t at;  // the dequantize
  int32_t x, scale, zero_point, quant_min, quant_max;
};

/// A dequantized constant int8 weight.
struct Weight {
  std::vector<size_t> steps;  // the dequantize and any transpose
  std::vector<int32_t> dropped;
  int32_t w;
  FusedArg scales;
};

class Finder {
 public:
  Finder(const format::MethodDesc& d, const std::vector<bool>& keep)
      : d_(d), keep_(keep), uses_(count_uses(d)), writes_(d.values.size(), 0) {
    for (const auto& chain : d.chains) {
      for (const auto& instr : chain.instructions) {
        if (instr.kind != InstructionKind::KernelCall || instr.args.empty()) continue;
        const int32_t ret = instr.args.back();
        ++writes_[ret];
        for (int64_t item : d.values[ret].items) {
          if (item >= 0) ++writes_[item];
        }
      }
    }
  }

  std::vector<QuantFusion> run() {
    std::vector<QuantFusion> found;
    for (const auto& chain : d_.chains) {
      for (const auto& instr : chain.instructions) {
        if (instr.kind == InstructionKind::JumpFalseCall || instr.kind == InstructionKind::MoveCall)
          return found;
      }
    }
    for (size_t c = 0; c < d_.chains.size(); ++c) {
      chain_ = c;
      const auto& instrs = d_.chains[c].instructions;
      for (size_t k = 0; k < instrs.size(); ++k) {
        if (!is(instrs[k], kQuantize, 8)) continue;
        if (auto f = match(k)) found.push_back(std::move(*f));
      }
    }
    return found;
  }

 private:
  const InstructionDesc& instr(size_t k) const { return d_.chains[chain_].instructions[k]; }

  bool is(const InstructionDesc& i, std::string_view name, size_t args) const {
    return i.kind == InstructionKind::KernelCall && i.args.size() == args &&
           d_.operators[i.index].full_name() == name;
  }

  const ValueDesc& value(int32_t v) const { return d_.values[v]; }
  const TensorDesc* tensor(int32_t v) const {
    return value(v).kind == ValueKind::Tensor ? value(v).tensor.get() : nullptr;
  }
  bool kind(int32_t v, ValueKind k) const { return value(v).kind == k; }
  std::optional<double> number(int32_t v) const {
    if (kind(v, ValueKind::Double)) return value(v).double_value;
    if (kind(v, ValueKind::Int)) return static_cast<double>(value(v).int_value);
    return std::nullopt;
  }
  bool is_one(int32_t v) const { return number(v) == 1.0; }

  /// A float32 tensor that one instruction writes and exactly one other
  /// reads, and that the method keeps no hold on.
  bool intermediate(int32_t v) const {
    const TensorDesc* t = tensor(v);
    return t != nullptr && t->dtype == DType::Float32 && !keep_[v] && uses_[v] == 2 &&
           writes_[v] == 1 && !t->is_constant();
  }

  /// The instruction of this chain before `before` that returns v (alone
  /// or in its list of results).
  std::optional<size_t> writer(int32_t v, size_t before) const {
    for (size_t k = before; k-- > 0;) {
      const InstructionDesc& i = instr(k);
      if (i.kind != InstructionKind::KernelCall || i.args.empty()) continue;
      const int32_t ret = i.args.back();
      const auto& items = value(ret).items;
      if (ret == v || (value(ret).kind == ValueKind::TensorList &&
                       std::count(items.begin(), items.end(), v) > 0)) {
        return k;
      }
    }
    return std::nullopt;
  }

  /// A per-tensor dequantize of an int8/uint8 tensor producing intermediate v.
  std::optional<Activation> activation(int32_t v, size_t before) const {
    if (!intermediate(v)) return std::nullopt;
    const auto k = writer(v, before);
    if (!k || !is(instr(*k), kDequantize, 9)) return std::nullopt;
    const auto& a = instr(*k).args;
    const TensorDesc* x = tensor(a[0]);
    if (x == nullptr || (x->dtype != DType::Int8 && x->dtype != DType::UInt8)) return std::nullopt;
    if (!kind(a[1], ValueKind::Double) || !kind(a[2], ValueKind::Int) ||
        !kind(a[3], ValueKind::Int) || !kind(a[4], ValueKind::Int) ||
        !kind(a[6], ValueKind::None)) {
      return std::nullopt;
    }
    return Activation{*k, a[0], a[1], a[2], a[3], a[4]};
  }

  /// A constant int8 weight of `rank` dims dequantized per output channel
  /// (axis 0) or per tensor, symmetric, producing intermediate v; with
  /// `transposed`, through permute_copy([1, 0]) or t_copy first.
  std::optional<Weight> weight(int32_t v, size_t before, size_t rank, bool transposed) const {
    Weight w;
    if (transposed) {
      if (!intermediate(v)) return std::nullopt;
      const auto k = writer(v, before);
      if (!k) return std::nullopt;
      const InstructionDesc& t = instr(*k);
      const bool permute =
          is(t, "aten::permute_copy.out", 4) && kind(t.args[1], ValueKind::IntList) &&
          value(t.args[1]).items.size() == 2 && value(value(t.args[1]).items[0]).int_value == 1 &&
          value(value(t.args[1]).items[1]).int_value == 0;
      if (!permute && !is(t, "aten::t_copy.out", 3)) return std::nullopt;
      w.steps.push_back(*k);
      w.dropped.push_back(v);
      v = t.args[0];
      before = *k;
    }
    if (!intermediate(v)) return std::nullopt;
    const auto k = writer(v, before);
    if (!k) return std::nullopt;
    const InstructionDesc& dq = instr(*k);
    const bool channel = is(dq, kDequantizeChannel, 10);
    if (!channel && !is(dq, kDequantize, 9)) return std::nullopt;
    const auto& a = dq.args;
    const TensorDesc* q = tensor(a[0]);
    if (q == nullptr || !q->is_constant() || q->dtype != DType::Int8 || q->sizes.size() != rank ||
        q->sizes[0] <= 0) {
      return std::nullopt;
    }
    const int64_t n = q->sizes[0];
    if (channel) {
      // (in, scales, zero_points?, axis, quant_min, quant_max, dtype, out_dtype, out)
      const TensorDesc* s = tensor(a[1]);
      if (s == nullptr || !s->is_constant() ||
          (s->dtype != DType::Float32 && s->dtype != DType::Float64) ||
          static_cast<int64_t>(s->numel) != n || !kind(a[3], ValueKind::Int) ||
          (value(a[3]).int_value != 0 && value(a[3]).int_value != -static_cast<int64_t>(rank))) {
        return std::nullopt;
      }
      if (!kind(a[2], ValueKind::None)) {
        const TensorDesc* z = tensor(a[2]);
        if (z == nullptr || !z->is_constant() || z->data.size() < z->nbytes ||
            (z->dtype != DType::Int64 && z->dtype != DType::Int32) ||
            !ops::all_zero(z->data.data(), z->dtype, static_cast<int64_t>(z->numel))) {
          return std::nullopt;
        }
      }
      w.scales = FusedArg{FusedArg::Kind::Value, a[1]};
    } else {
      // (in, scale, zero_point, quant_min, quant_max, dtype, out_dtype, out)
      if (!kind(a[1], ValueKind::Double) || !kind(a[2], ValueKind::Int) ||
          value(a[2]).int_value != 0) {
        return std::nullopt;
      }
      w.scales = FusedArg{FusedArg::Kind::Scale, -1, 0, value(a[1]).double_value};
    }
    w.steps.push_back(*k);
    w.dropped.push_back(v);
    w.w = a[0];
    return w;
  }

  /// A float32 bias of n values, or None.
  bool bias(int32_t v, int64_t n) const {
    if (kind(v, ValueKind::None)) return true;
    const TensorDesc* t = tensor(v);
    return t != nullptr && t->dtype == DType::Float32 && t->sizes.size() == 1 && t->sizes[0] == n &&
           t->dynamism == ShapeDynamism::Static;
  }

  /// Quantizes `value` as ExecuTorch does, for the output clamp.
  static int64_t quantize(double value, double scale, int64_t zero_point, int64_t lo, int64_t hi) {
    const float inv = 1.0f / static_cast<float>(scale);
    const float s =
        static_cast<float>(zero_point) + std::nearbyint(inv * static_cast<float>(value));
    if (!(s >= static_cast<float>(lo))) return lo;
    if (s > static_cast<float>(hi)) return hi;
    return static_cast<int64_t>(s);
  }

  std::optional<QuantFusion> match(size_t at) const {
    const auto& q = instr(at).args;  // (in, scale, zero_point, quant_min, quant_max, dtype, out)
    const TensorDesc* out = tensor(q[6]);
    if (out == nullptr || (out->dtype != DType::Int8 && out->dtype != DType::UInt8) ||
        !kind(q[1], ValueKind::Double) || !kind(q[2], ValueKind::Int) ||
        !kind(q[3], ValueKind::Int) || !kind(q[4], ValueKind::Int) ||
        !ops::valid_scale(value(q[1]).double_value)) {
      return std::nullopt;
    }
    QuantFusion f;
    f.chain = chain_;
    f.at = at;
    f.out = q[6];
    const double scale = value(q[1]).double_value;
    const int64_t zp = value(q[2]).int_value;
    int64_t lo = value(q[3]).int_value, hi = value(q[4]).int_value;
    if (lo > hi || zp < lo || zp > hi) return std::nullopt;
    int32_t y = q[0];
    if (!intermediate(y)) return std::nullopt;
    auto k = writer(y, at);
    if (!k) return std::nullopt;
    // An activation folds into the output clamp.
    const InstructionDesc* act = &instr(*k);
    auto bound = [&](int32_t v, int64_t fallback) {
      const auto x = number(v);
      return x ? quantize(*x, scale, zp, value(q[3]).int_value, value(q[4]).int_value) : fallback;
    };
    bool activation_found = true;
    if (is(*act, "aten::relu.out", 3)) {
      lo = std::max(lo, zp);
    } else if (is(*act, "aten::hardtanh.out", 5) || is(*act, "aten::clamp.out", 5)) {
      const bool clamp = is(*act, "aten::clamp.out", 5);
      if (!clamp && (!number(act->args[1]) || !number(act->args[2]))) return std::nullopt;
      if (clamp && ((!number(act->args[1]) && !kind(act->args[1], ValueKind::None)) ||
                    (!number(act->args[2]) && !kind(act->args[2], ValueKind::None)))) {
        return std::nullopt;
      }
      lo = std::max(lo, bound(act->args[1], lo));
      hi = std::min(hi, bound(act->args[2], hi));
      if (lo > hi) return std::nullopt;
    } else {
      activation_found = false;
    }
    if (activation_found) {
      f.idle.push_back(*k);
      f.dropped.push_back(y);
      y = act->args[0];
      if (!intermediate(y)) return std::nullopt;
      k = writer(y, *k);
      if (!k) return std::nullopt;
    }
    f.idle.push_back(*k);
    f.dropped.push_back(y);
    const InstructionDesc& opi = instr(*k);
    const FusedArg out_scale{FusedArg::Kind::Value, q[1]}, out_zp{FusedArg::Kind::Value, q[2]};
    const FusedArg out_min{FusedArg::Kind::Int, -1, lo}, out_max{FusedArg::Kind::Int, -1, hi};
    const FusedArg out_arg{FusedArg::Kind::Value, q[6]};
    auto val = [](int32_t v) { return FusedArg{FusedArg::Kind::Value, v}; };
    auto take = [&](const Activation& x) {
      f.idle.push_back(x.at);
      f.reads.emplace_back(x.x, x.at);
    };
    auto take_weight = [&](const Weight& w) {
      f.idle.insert(f.idle.end(), w.steps.begin(), w.steps.end());
      f.dropped.insert(f.dropped.end(), w.dropped.begin(), w.dropped.end());
    };
    // Operands are dropped when their dequantize idles.
    auto drop = [&](int32_t v) { f.dropped.push_back(v); };

    if (is(opi, "aten::convolution.out", 11)) {
      // (in, weight, bias, stride, padding, dilation, transposed, output_padding, groups, out)
      const auto& a = opi.args;
      const auto x = activation(a[0], *k);
      const auto w = weight(a[1], *k, 4, false);
      if (!x || !w || tensor(a[0])->sizes.size() != 4) return std::nullopt;
      const TensorDesc& xt = *tensor(a[0]);
      const TensorDesc& wt = *tensor(w->w);
      const int64_t n = wt.sizes[0];
      if (!(desc::default_order(xt) || channels_last(xt)) ||
          !(desc::default_order(wt) || channels_last(wt)) || value(a[8]).kind != ValueKind::Int ||
          value(a[8]).int_value < 1 || wt.sizes[1] * value(a[8]).int_value != xt.sizes[1]) {
        return std::nullopt;
      }
      for (int i : {3, 4, 5}) {
        if (!kind(a[i], ValueKind::IntList) || value(a[i]).items.size() != 2) return std::nullopt;
      }
      if (!kind(a[6], ValueKind::Bool) || value(a[6]).bool_value || !kind(a[8], ValueKind::Int) ||
          !bias(a[2], n)) {
        return std::nullopt;
      }
      take(*x);
      take_weight(*w);
      drop(a[0]);
      f.kernel = kernels::kQuantizedConv2dKernel;
      // The kernel reads a [OC, KH, KW, C] weight in runs of input
      // channels: a contiguous one is copied so once, at load.
      const bool relayout = desc::default_order(wt) && wt.sizes[2] * wt.sizes[3] > 1;
      const FusedArg weight_arg =
          relayout ? FusedArg{FusedArg::Kind::WeightChannelsLast, w->w} : val(w->w);
      f.args = {val(x->x),  val(x->scale), val(x->zero_point),
                weight_arg, w->scales,     FusedArg{FusedArg::Kind::WeightSums, w->w},
                val(a[2]),  val(a[3]),     val(a[4]),
                val(a[5]),  val(a[8]),     out_scale,
                out_zp,     out_min,       out_max,
                out_arg};
      return f;
    }
    const bool linear = is(opi, "aten::linear.out", 5);
    const bool addmm = is(opi, "aten::addmm.out", 7);
    const bool mm = is(opi, "aten::mm.out", 4);
    if (linear || addmm || mm) {
      // linear(in, weight, bias?, out); addmm(self, mat1, mat2, beta, alpha, out); mm(self, mat2,
      // out)
      const auto& a = opi.args;
      const int32_t in = addmm ? a[1] : a[0];
      const int32_t wv = linear ? a[1] : (addmm ? a[2] : a[1]);
      const auto x = activation(in, *k);
      const auto w = weight(wv, *k, 2, !linear);
      if (!x || !w) return std::nullopt;
      const int64_t n = tensor(w->w)->sizes[0];
      const TensorDesc* xt = tensor(in);
      const TensorDesc* wt = tensor(w->w);
      if (xt->sizes.empty() || !desc::default_order(*xt) || !desc::default_order(*wt) ||
          xt->sizes.back() != wt->sizes[1]) {
        return std::nullopt;
      }
      int32_t b = -1;
      if (linear) {
        if (!bias(a[2], n)) return std::nullopt;
        b = a[2];
      } else if (addmm) {
        if (kind(a[0], ValueKind::None) || !bias(a[0], n) || !is_one(a[3]) || !is_one(a[4])) {
          return std::nullopt;
        }
        b = a[0];
      }
      take(*x);
      take_weight(*w);
      drop(in);
      f.kernel = kernels::kQuantizedLinearKernel;
      // mm has no bias: the dequantize's out_dtype (None) stands in for it.
      const int32_t none = instr(x->at).args[6];
      f.args = {val(x->x),
                val(x->scale),
                val(x->zero_point),
                val(w->w),
                w->scales,
                FusedArg{FusedArg::Kind::WeightSums, w->w},
                val(b >= 0 ? b : none),
                out_scale,
                out_zp,
                out_min,
                out_max,
                out_arg};
      return f;
    }
    if (is(opi, "aten::add.out", 5)) {
      // (self, other, alpha, out)
      const auto& a = opi.args;
      const auto xa = activation(a[0], *k);
      const auto xb = activation(a[1], *k);
      if (!xa || !xb || !is_one(a[2])) return std::nullopt;
      const TensorDesc* ta = tensor(xa->x);
      const TensorDesc* tb = tensor(xb->x);
      if (ta->dtype != out->dtype || tb->dtype != out->dtype || ta->sizes != tb->sizes ||
          ta->dim_order != tb->dim_order || ta->sizes != out->sizes ||
          ta->dim_order != out->dim_order || ta->dynamism != ShapeDynamism::Static ||
          tb->dynamism != ShapeDynamism::Static) {
        return std::nullopt;
      }
      take(*xa);
      take(*xb);
      drop(a[0]);
      drop(a[1]);
      f.kernel = "quantized_decomposed::add.out";
      f.args = {val(xa->x),
                val(xa->scale),
                val(xa->zero_point),
                val(xa->quant_min),
                val(xa->quant_max),
                val(xb->x),
                val(xb->scale),
                val(xb->zero_point),
                val(xb->quant_min),
                val(xb->quant_max),
                out_scale,
                out_zp,
                out_min,
                out_max,
                out_arg};
      return f;
    }
    if (is(opi, "aten::mean.out", 6)) {
      // (in, dims?, keepdim, dtype?, out)
      const auto& a = opi.args;
      const auto x = activation(a[0], *k);
      if (!x || !kind(a[1], ValueKind::IntList) || value(a[1]).items.empty() ||
          !kind(a[2], ValueKind::Bool) || !value(a[2]).bool_value || !kind(a[3], ValueKind::None) ||
          !reduced_run(*tensor(x->x), value(a[1]).items) ||
          tensor(x->x)->dim_order != out->dim_order) {
        return std::nullopt;
      }
      take(*x);
      drop(a[0]);
      f.kernel = kernels::kQuantizedMeanKernel;
      f.args = {val(x->x), val(x->scale), val(x->zero_point), val(a[1]), out_scale, out_zp, out_min,
                out_max,   out_arg};
      return f;
    }
    if (is(opi, "aten::max_pool2d_with_indices.out", 9)) {
      // (in, kernel, stride, padding, dilation, ceil_mode, out, indices)
      const auto& a = opi.args;
      const auto x = activation(a[0], *k);
      if (!x || keep_[a[7]] || uses_[a[7]] != 1 || tensor(a[7]) == nullptr) return std::nullopt;
      // Max pooling commutes with the dequantize only into the same
      // parameters, and no activation may clamp it.
      if (value(x->scale).double_value != scale || value(x->zero_point).int_value != zp ||
          value(x->quant_min).int_value != value(q[3]).int_value ||
          value(x->quant_max).int_value != value(q[4]).int_value || activation_found ||
          tensor(x->x)->dtype != out->dtype) {
        return std::nullopt;
      }
      take(*x);
      drop(a[0]);
      f.kernel = "aten::max_pool2d_with_indices.out";
      f.scratch_out = a[7];
      f.args = {val(x->x), val(a[1]), val(a[2]), val(a[3]),
                val(a[4]), val(a[5]), out_arg,   val(a[7])};
      return f;
    }
    return std::nullopt;
  }

  /// True when dims `items` (value indices of Ints) of `t` are one run of
  /// its memory order.
  bool reduced_run(const TensorDesc& t, const std::vector<int64_t>& items) const {
    const auto rank = static_cast<int64_t>(t.sizes.size());
    std::vector<bool> reduced(t.sizes.size(), false);
    for (int64_t item : items) {
      if (!kind(static_cast<int32_t>(item), ValueKind::Int)) return false;
      int64_t dim = value(static_cast<int32_t>(item)).int_value;
      if (dim < 0) dim += rank;
      if (dim < 0 || dim >= rank || reduced[dim]) return false;
      reduced[dim] = true;
    }
    int state = 0;
    for (uint8_t dim : t.dim_order) {
      if (dim >= reduced.size()) return false;
      if (reduced[dim]) {
        if (state == 2) return false;
        state = 1;
      } else if (state == 1) {
        state = 2;
      }
    }
    return true;
  }

  static bool channels_last(const TensorDesc& t) {
    return t.dim_order == std::vector<uint8_t>{0, 2, 3, 1};
  }

  const format::MethodDesc& d_;
  const std::vector<bool>& keep_;
  std::vector<int> uses_;
  std::vector<int> writes_;
  size_t chain_ = 0;
};

}  // namespace

std::vector<QuantFusion> find_quant_fusions(const format::MethodDesc& d,
                                            const std::vector<bool>& keep) {
  return Finder(d, keep).run();
}

}  // namespace pterun
