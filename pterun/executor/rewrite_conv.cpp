// Load-time fusions around convolutions and torch's decomposed hardswish
// (rewrite.h): the finders read the program's instructions; Method::Loader
// applies what the device has kernels for and memory allows.

#include <algorithm>
#include <optional>

#include "pterun/executor/chain_view.h"
#include "pterun/executor/desc_util.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun {

using desc::straight_line;
using format::InstructionKind;

namespace {

using detail::ChainView;

// torch's hardswish of float32 y from instruction l on: add.out(y, three,
// 1) -> a, clamp.out(a, 0, None) -> b, clamp.out(b, None, 6) -> c,
// mul.out(y, c) -> e (either order), div.out(e, six) -> out, the five
// running one after the other, each result (not kept) read by the next
// alone. The applier checks that `three` and `six` hold 3 and 6.
struct HardswishMatch {
  std::vector<size_t> steps;                        // add, clamp, clamp, mul, div
  std::vector<std::pair<int32_t, size_t>> dropped;  // a, b, c, e and their writers
  std::vector<std::pair<int32_t, double>> scalars;  // three, six
  int32_t out = 0;
};

std::optional<HardswishMatch> match_hardswish(const ChainView& v, int32_t y, size_t l) {
  const auto& instrs = v.instrs();
  if (l >= instrs.size() || !v.is_kernel(l, "aten::add.out", 5) || v.f32(y) == nullptr) {
    return std::nullopt;
  }
  const auto& add = instrs[l].args;
  if (add[0] != y || !v.scalar_tensor(add[1]) || !v.number_is(add[2], 1)) return std::nullopt;
  auto single = [&](int32_t t) { return !v.keep[t] && v.uses[t] == 2 && v.f32(t) != nullptr; };
  if (!single(add[3])) return std::nullopt;
  const size_t l2 = v.next_running(l), l3 = v.next_running(l2);
  if (l3 >= instrs.size() || !v.is_kernel(l2, "aten::clamp.out", 5) ||
      !v.is_kernel(l3, "aten::clamp.out", 5)) {
    return std::nullopt;
  }
  const auto& lo = instrs[l2].args;
  const auto& hi = instrs[l3].args;
  if (lo[0] != add[3] || !v.number_is(lo[1], 0) || v.d.values[lo[2]].kind != ValueKind::None ||
      !single(lo[3]) || hi[0] != lo[3] || v.d.values[hi[1]].kind != ValueKind::None ||
      !v.number_is(hi[2], 6) || !single(hi[3])) {
    return std::nullopt;
  }
  const size_t l4 = v.next_running(l3), l5 = v.next_running(l4);
  if (l5 >= instrs.size() || !v.is_kernel(l4, "aten::mul.out", 4) ||
      !v.is_kernel(l5, "aten::div.out", 4)) {
    return std::nullopt;
  }
  const auto& mul = instrs[l4].args;
  const auto& div = instrs[l5].args;
  const int32_t clamped = hi[3];
  if (!((mul[0] == y && mul[1] == clamped) || (mul[1] == y && mul[0] == clamped)) ||
      !single(mul[2]) || div[0] != mul[2] || !v.scalar_tensor(div[1]) || v.f32(div[2]) == nullptr) {
    return std::nullopt;
  }
  HardswishMatch m;
  m.steps = {l, l2, l3, l4, l5};
  m.dropped = {{add[3], l}, {lo[3], l2}, {hi[3], l3}, {mul[2], l4}};
  m.scalars = {{add[1], 3.0}, {div[1], 6.0}};
  m.out = div[2];
  return m;
}

}  // namespace

std::vector<ConvFusion> find_conv_fusions(const format::MethodDesc& d,
                                          const std::vector<bool>& keep,
                                          const std::vector<std::vector<bool>>& idle) {
  std::vector<ConvFusion> found;
  if (straight_line(d).empty()) return found;
  const std::vector<int> uses = count_uses(d);
  auto is_kernel = [&](const format::InstructionDesc& instr, const char* name, size_t args) {
    return instr.kind == InstructionKind::KernelCall && instr.args.size() == args &&
           d.operators[instr.index].full_name() == name;
  };
  auto f32 = [&](int32_t v) -> const format::TensorDesc* {
    const auto& value = d.values[v];
    if (value.kind != ValueKind::Tensor || value.tensor->dtype != DType::Float32) return nullptr;
    return value.tensor.get();
  };
  // A float32 constant [n] vector, or None (-1) when `none_ok`.
  auto constant_vector = [&](int32_t v, int64_t n, bool none_ok, int32_t& index) {
    if (d.values[v].kind == ValueKind::None) {
      index = -1;
      return none_ok;
    }
    const format::TensorDesc* t = f32(v);
    index = v;
    return t != nullptr && t->is_constant() && t->sizes.size() == 1 && t->sizes[0] == n;
  };
  auto unread = [&](int32_t v) { return !keep[v]; };
  for (size_t c = 0; c < d.chains.size(); ++c) {
    const auto& instrs = d.chains[c].instructions;
    const ChainView view{d, c, keep, uses, idle[c]};
    auto next_running = [&](size_t k) { return view.next_running(k); };
    auto number_is = [&](int32_t v, double want) { return view.number_is(v, want); };
    // torch's hardswish of y from instruction l on (match_hardswish).
    auto hardswish = [&](ConvFusion& f, int32_t y, size_t after, size_t l) {
      const auto m = match_hardswish(view, y, l);
      if (!m) return;
      f.kernel = kernels::kConvHardswishKernel;
      f.idle.insert(f.idle.end(), m->steps.begin(), m->steps.end());
      f.dropped.emplace_back(y, after);
      f.dropped.insert(f.dropped.end(), m->dropped.begin(), m->dropped.end());
      f.scalars = m->scalars;
      f.out = m->out;
    };
    // A residual connection: add.out(y, other, 1) (or other + y) -> sum,
    // where other is a float32 tensor of y's shape and layout, then
    // optionally relu.out(sum) -> out that alone reads the sum.
    auto residual = [&](ConvFusion& f, int32_t y, size_t after, size_t l) {
      const auto& add = instrs[l].args;
      if (!is_kernel(instrs[l], "aten::add.out", 5) || !number_is(add[2], 1) ||
          (add[0] == y) == (add[1] == y) || f32(add[3]) == nullptr) {
        return;
      }
      const int32_t other = add[0] == y ? add[1] : add[0];
      const format::TensorDesc* o = f32(other);
      const format::TensorDesc* yt = f32(y);
      if (o == nullptr || o->sizes != yt->sizes || o->dim_order != yt->dim_order) return;
      f.kernel = kernels::kConvAddKernel;
      f.idle.push_back(l);
      f.dropped.emplace_back(y, after);
      f.args.push_back(other);
      f.residual = other;
      f.out = add[3];
      const size_t l2 = next_running(l);
      if (l2 < instrs.size() && is_kernel(instrs[l2], "aten::relu.out", 3) &&
          instrs[l2].args[0] == add[3] && !keep[add[3]] && uses[add[3]] == 2 &&
          f32(instrs[l2].args[1]) != nullptr) {
        f.kernel = kernels::kConvAddReluKernel;
        f.idle.push_back(l2);
        f.dropped.emplace_back(add[3], l);
        f.out = instrs[l2].args[1];
      }
    };
    for (size_t k = 0; k < instrs.size(); ++k) {
      if (k < idle[c].size() && idle[c][k]) continue;
      // convolution.out(input, weight, bias, stride, padding, dilation,
      //   transposed, output_padding, groups, *, out) -> out
      if (!is_kernel(instrs[k], "aten::convolution.out", 11)) continue;
      const auto& a = instrs[k].args;
      const int32_t t = a[9];
      const auto& transposed = d.values[a[6]];
      const format::TensorDesc* w = f32(a[1]);
      const format::TensorDesc* out = f32(t);
      if (transposed.kind != ValueKind::Bool || transposed.bool_value || w == nullptr ||
          !w->is_constant() || w->sizes.size() < 3 || uses[a[1]] != 1 || keep[a[1]] ||
          out == nullptr || a[10] != t || keep[t] || f32(a[0]) == nullptr) {
        continue;
      }
      const int64_t oc = w->sizes[0];
      ConvFusion f;
      f.chain = c;
      f.conv = k;
      f.weight = a[1];
      if (!constant_vector(a[2], oc, true, f.conv_bias)) continue;
      // _native_batch_norm_legit_no_training.out(input, weight, bias,
      //   running_mean, running_var, momentum, eps, *, out0, out1, out2)
      f.input = a[0];
      // y, the value an activation may follow: the batch norm's result
      // (written at `after`), or the convolution's when no batch norm
      // follows it.
      int32_t y = t;
      size_t after = k;
      const size_t j = next_running(k);
      if (j < instrs.size() &&
          is_kernel(instrs[j], "aten::_native_batch_norm_legit_no_training.out", 11)) {
        const auto& b = instrs[j].args;
        if (b[0] != t || uses[t] != 2 || !constant_vector(b[1], oc, true, f.bn_weight) ||
            !constant_vector(b[2], oc, true, f.bn_bias) ||
            !constant_vector(b[3], oc, false, f.mean) || !constant_vector(b[4], oc, false, f.var) ||
            uses[f.mean] != 1 || keep[f.mean] || d.values[b[6]].kind != ValueKind::Double) {
          continue;
        }
        f.eps = d.values[b[6]].double_value;
        y = b[7];
        if (f32(y) == nullptr || !unread(b[8]) || !unread(b[9]) || uses[b[8]] != 1 ||
            uses[b[9]] != 1 || f.eps < 0) {
          continue;
        }
        f.idle.push_back(j);
        f.dropped.emplace_back(t, k);
        f.args = {a[0], a[1], f.mean, a[3], a[4], a[5], a[6], a[7], a[8]};
        after = j;
      } else {
        f.mean = -1;  // nothing to fold: the convolution's own bias
        f.args = {a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]};
      }
      f.out = y;
      // relu.out(self, *, out) or hardtanh.out(self, min_val, max_val, *, out)
      const size_t l = next_running(after);
      if (l < instrs.size() && !keep[y]) {
        const auto& r = instrs[l].args;
        auto number = [&](int32_t v, double& x) {
          const auto& value = d.values[v];
          if (value.kind == ValueKind::Double) x = value.double_value;
          if (value.kind == ValueKind::Int) x = static_cast<double>(value.int_value);
          return value.kind == ValueKind::Double || value.kind == ValueKind::Int;
        };
        double lo = 0, hi = 0;
        const bool alone = uses[y] == 2;
        if (alone && is_kernel(instrs[l], "aten::relu.out", 3) && r[0] == y &&
            f32(r[1]) != nullptr) {
          f.kernel = kernels::kConvReluKernel;
          f.out = r[1];
        } else if (alone && is_kernel(instrs[l], "aten::hardtanh.out", 5) && r[0] == y &&
                   f32(r[3]) != nullptr && number(r[1], lo) && number(r[2], hi) && lo <= hi) {
          f.kernel = kernels::kConvHardtanhKernel;
          f.args.push_back(r[1]);
          f.args.push_back(r[2]);
          f.out = r[3];
        }
        if (f.kernel != nullptr) {
          f.idle.push_back(l);
          f.dropped.emplace_back(y, after);
        } else if (uses[y] == 3) {
          hardswish(f, y, after, l);
        } else if (alone) {
          residual(f, y, after, l);
        }
      }
      if (f.idle.empty()) continue;  // a convolution alone
      f.args.push_back(f.out);
      k = f.idle.back();  // on after the fused instructions
      found.push_back(std::move(f));
    }
  }
  return found;
}

}  // namespace pterun

namespace pterun {

std::vector<PatternFusion> find_hardswish_fusions(const format::MethodDesc& d,
                                                  const std::vector<bool>& keep,
                                                  const std::vector<std::vector<bool>>& idle) {
  std::vector<PatternFusion> found;
  detail::for_each_chain(d, keep, idle, [&](const ChainView& view) {
    const size_t c = view.c;
    for (size_t l = 0; l < view.instrs().size(); ++l) {
      if ((l < idle[c].size() && idle[c][l]) || !view.is_kernel(l, "aten::add.out", 5)) continue;
      const int32_t y = view.instrs()[l].args[0];
      const format::TensorDesc* yt = view.f32(y);
      const auto m = match_hardswish(view, y, l);
      if (!m || yt->sizes != view.f32(m->out)->sizes) continue;
      PatternFusion f;
      f.chain = c;
      f.idle.assign(m->steps.begin() + 1, m->steps.end());
      f.replacement = {c, l, "aten::hardswish.out", {y, m->out, m->out}};
      f.input = y;
      f.out = m->out;
      f.dropped = m->dropped;
      f.scalars = m->scalars;
      found.push_back(std::move(f));
      l = m->steps.back();
    }
  });
  return found;
}

}  // namespace pterun
